/*
 * instances.c - Legion-style physical instances, annotated for wsprof.
 *
 * A runtime keeps each logical region's data in instances: allocations in
 * one of a few memories, each holding a copy of one region. Every step runs
 * one task per region on a processor the mapper picks; the task maps the
 * region in that processor's memory, into the valid instance there if one
 * exists, else into a new instance filled from a valid one. A task that
 * writes the region leaves its instance the only valid one: the others now
 * hold stale data. Stale instances are not reused and not destroyed at once:
 * the runtime collects them lazily, every COLLECT_EVERY steps or when the
 * instances outgrow a threshold, so between collections memory grows with
 * instances nobody will read again. wsprof_valid/wsprof_invalid tell wsprof
 * which those are, wsprof_acquire/release which instances tasks have mapped.
 *
 * Single-threaded and deterministic: the summary line depends on the
 * arguments alone, with wsprof or without it.
 *
 * usage: instances [STEPS [REGIONS [COLLECT_EVERY]]]
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wsprof.h"

#define NMEM 3
#define THRESHOLD_PERCENT 300 /* collect early past 3x the regions' data */
#define MIB(n) ((double)(n) / (1 << 20))

static const char *const memory_names[NMEM] = { "sysmem", "zcmem", "fbmem" };

struct instance {
	unsigned id, region;
	int mem;
	bool valid;
	unsigned refs; /* tasks that have it mapped */
	double *data;
	struct instance *next; /* the region's instances, newest first */
};

struct region {
	size_t count; /* doubles */
	struct instance *instances;
	int last_mem; /* where it was last written */
};

struct runtime {
	struct region *regions;
	unsigned nregions;
	size_t region_bytes; /* all regions' data, once */
	size_t bytes, valid_bytes;
	size_t peak_bytes, valid_at_peak;
	size_t threshold;
	unsigned next_id;
	unsigned long created, destroyed, scheduled_collections, threshold_collections;
	double checksum;
};

static uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	return x ^ (x >> 16);
}

static size_t instance_bytes(const struct runtime *rt, const struct instance *in)
{
	return rt->regions[in->region].count * sizeof(double);
}

static void mark_valid(struct runtime *rt, struct instance *in)
{
	if (in->valid)
		return;
	in->valid = true;
	rt->valid_bytes += instance_bytes(rt, in);
	wsprof_valid(in->data);
}

static void mark_invalid(struct runtime *rt, struct instance *in)
{
	if (!in->valid)
		return;
	in->valid = false;
	rt->valid_bytes -= instance_bytes(rt, in);
	wsprof_invalid(in->data);
}

static void note_peak(struct runtime *rt)
{
	if (rt->bytes > rt->peak_bytes) {
		rt->peak_bytes = rt->bytes;
		rt->valid_at_peak = rt->valid_bytes;
	}
}

static void map(struct instance *in)
{
	in->refs++;
	wsprof_acquire(in->data);
}

static void unmap(struct instance *in)
{
	wsprof_release(in->data);
	in->refs--;
}

/* Destroy every stale instance no task has mapped. */
static void collect(struct runtime *rt)
{
	wsprof_phase_push("collect");
	for (unsigned r = 0; r < rt->nregions; r++) {
		for (struct instance **link = &rt->regions[r].instances; *link;) {
			struct instance *in = *link;
			if (in->valid || in->refs) {
				link = &in->next;
				continue;
			}
			*link = in->next;
			rt->bytes -= instance_bytes(rt, in);
			rt->destroyed++;
			free(in->data);
			free(in);
		}
	}
	wsprof_phase_pop();
}

static struct instance *instance_create(struct runtime *rt, unsigned r, int mem)
{
	size_t bytes = rt->regions[r].count * sizeof(double);
	if (rt->bytes + bytes > rt->threshold) {
		rt->threshold_collections++;
		collect(rt);
	}
	struct instance *in = malloc(sizeof *in);
	double *data = malloc(bytes);
	if (!in || !data) {
		fprintf(stderr, "instances: out of memory\n");
		exit(1);
	}
	*in = (struct instance){ .id = rt->next_id++, .region = r, .mem = mem, .data = data,
				 .next = rt->regions[r].instances };
	rt->regions[r].instances = in;
	char name[48];
	snprintf(name, sizeof name, "region %u instance %u @%s", r, in->id, memory_names[mem]);
	wsprof_name(data, name);
	rt->bytes += bytes;
	rt->created++;
	return in;
}

static struct instance *valid_instance(struct runtime *rt, unsigned r, int mem)
{
	for (struct instance *in = rt->regions[r].instances; in; in = in->next)
		if (in->valid && (mem < 0 || in->mem == mem))
			return in;
	return NULL;
}

/* The instance of region r a task in memory mem maps: the valid one there,
 * or a new one filled from a valid instance elsewhere. */
static struct instance *instance_for(struct runtime *rt, unsigned r, int mem)
{
	struct instance *in = valid_instance(rt, r, mem);
	if (in)
		return in;
	struct instance *src = valid_instance(rt, r, -1);
	in = instance_create(rt, r, mem);
	map(src);
	memcpy(in->data, src->data, instance_bytes(rt, in));
	wsprof_touch(src->data, instance_bytes(rt, in));
	unmap(src);
	mark_valid(rt, in);
	note_peak(rt);
	return in;
}

static void task_write(struct runtime *rt, unsigned r, struct instance *in, unsigned step)
{
	for (struct instance *other = rt->regions[r].instances; other; other = other->next)
		if (other != in)
			mark_invalid(rt, other);
	size_t n = rt->regions[r].count;
	wsprof_touch(in->data, n * sizeof(double));
	for (size_t k = 0; k < n; k++)
		in->data[k] = 0.5 * in->data[k] + (double)((step + k) % 17) / 16.0;
	rt->regions[r].last_mem = in->mem;
}

static void task_read(struct runtime *rt, unsigned r, const struct instance *in)
{
	size_t n = rt->regions[r].count;
	double sum = 0;
	wsprof_touch(in->data, n * sizeof(double));
	for (size_t k = 0; k < n; k++)
		sum += in->data[k];
	rt->checksum += sum / (double)n;
}

/* One step: a task per region, three writing for one reading, most of them
 * in the memory the region was last written in. */
static void step(struct runtime *rt, unsigned s)
{
	char phase[32];
	snprintf(phase, sizeof phase, "step %u", s);
	wsprof_phase_push(phase);
	for (unsigned r = 0; r < rt->nregions; r++) {
		uint32_t h = mix(s * 2654435761u ^ r * 40503u);
		int mem = h % 8 < 5 ? rt->regions[r].last_mem : (int)((h >> 3) % NMEM);
		struct instance *in = instance_for(rt, r, mem);
		map(in);
		if ((h >> 8) % 4 == 0)
			task_read(rt, r, in);
		else
			task_write(rt, r, in, s);
		unmap(in);
	}
	wsprof_phase_pop();
}

int main(int argc, char **argv)
{
	long steps = argc > 1 ? atol(argv[1]) : 300;
	long nregions = argc > 2 ? atol(argv[2]) : 64;
	long collect_every = argc > 3 ? atol(argv[3]) : 8;
	if (argc > 4 || steps < 1 || steps > 1000000 || nregions < 1 || nregions > 100000 || collect_every < 1) {
		fprintf(stderr, "usage: instances [STEPS 1..1000000 [REGIONS 1..100000 [COLLECT_EVERY 1..]]]\n");
		return 2;
	}
	struct runtime rt = { .nregions = (unsigned)nregions };
	rt.regions = calloc((size_t)nregions, sizeof *rt.regions);
	if (!rt.regions) {
		fprintf(stderr, "instances: out of memory\n");
		return 1;
	}
	for (unsigned r = 0; r < rt.nregions; r++) {
		rt.regions[r].count = 2048 * (1 + mix(r) % 7); /* 16 to 112 KiB */
		rt.region_bytes += rt.regions[r].count * sizeof(double);
	}
	rt.threshold = rt.region_bytes * THRESHOLD_PERCENT / 100;

	wsprof_phase_push("initial instances");
	for (unsigned r = 0; r < rt.nregions; r++) {
		int mem = (int)(r % NMEM);
		struct instance *in = instance_create(&rt, r, mem);
		for (size_t k = 0; k < rt.regions[r].count; k++)
			in->data[k] = (double)(mix(r * 7919u + (uint32_t)k) % 1000) / 1000.0;
		mark_valid(&rt, in);
		note_peak(&rt);
		rt.regions[r].last_mem = mem;
	}
	wsprof_phase_pop();

	for (unsigned s = 1; s <= (unsigned)steps; s++) {
		step(&rt, s);
		if (s % (unsigned long)collect_every == 0) {
			rt.scheduled_collections++;
			collect(&rt);
		}
	}

	for (unsigned r = 0; r < rt.nregions; r++) {
		const struct instance *in = valid_instance(&rt, r, -1);
		task_read(&rt, r, in);
	}
	printf("instances: %ld steps x %u regions (%.2f MiB) in %d memories, collecting every %ld steps or past %.2f MiB: "
	       "%lu instances created, %lu destroyed in %lu collections (%lu at the threshold), "
	       "instances %.2f MiB at peak of which %.2f MiB valid, checksum %.6f\n",
	       steps, rt.nregions, MIB(rt.region_bytes), NMEM, collect_every, MIB(rt.threshold),
	       rt.created, rt.destroyed, rt.scheduled_collections + rt.threshold_collections,
	       rt.threshold_collections, MIB(rt.peak_bytes), MIB(rt.valid_at_peak), rt.checksum);

	for (unsigned r = 0; r < rt.nregions; r++) {
		for (struct instance *in = rt.regions[r].instances, *next; in; in = next) {
			next = in->next;
			free(in->data);
			free(in);
		}
	}
	free(rt.regions);
	return 0;
}
