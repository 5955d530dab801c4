/*
 * annotated - a program that talks to wsprof far more than it allocates:
 * the cost of include/wsprof.h calls under the recorder.
 *
 * usage: annotated [THREADS [STEPS]]   (default 2 threads, 500,000 steps each)
 *
 * Each thread keeps BUFFERS named heap blocks (a cache of tensors, say)
 * and a slab it carves itself. Each step takes a block, acquires it,
 * touches part of it and releases it, and sub-allocates a slice of the
 * slab (wsprof_pool_alloc) that the next step frees again; every eighth
 * step replaces a block (free, malloc, wsprof_name, then wsprof_valid or
 * wsprof_invalid); every 64 steps are one phase (push, pop) and every
 * 4096 a snapshot. About 5 annotation calls per step for a quarter of an
 * allocation event. Without wsprof every call is one load and one branch.
 * Prints the line of workload.h; annotation calls count in `calls`.
 */
#include "workload.h"
#include "wsprof.h"

#include <string.h>

#define BUFFERS 256
#define BUFFER_MAX (16u << 10)
#define SLAB (64u << 10)
#define SLICE 256

static const char *const names[] = { "weights", "activations", "kv-cache", "scratch" };

struct annotator {
	uint64_t rng;
	struct workload_counts *counts;
	char *buf[BUFFERS];
	size_t size[BUFFERS];
	char *slab;
};

static void *must(void *p)
{
	if (!p)
		abort();
	return p;
}

__attribute__((noinline)) static void replace(struct annotator *a, size_t k, uint64_t r)
{
	if (a->buf[k]) {
		free(a->buf[k]);
		a->counts->frees++;
	}
	a->size[k] = 64 + (r >> 20) % (BUFFER_MAX - 64);
	a->buf[k] = must(malloc(a->size[k]));
	memset(a->buf[k], 0, 64);
	a->counts->allocations++;
	wsprof_name(a->buf[k], names[r % 4]);
	if ((r >> 8) & 1)
		wsprof_valid(a->buf[k]);
	else
		wsprof_invalid(a->buf[k]);
	a->counts->other_calls += 2;
}

__attribute__((noinline)) static void use(struct annotator *a, size_t k, uint64_t r)
{
	size_t off = (r >> 24) % a->size[k], len = a->size[k] - off < 4096 ? a->size[k] - off : 4096;
	wsprof_acquire(a->buf[k] + off);
	a->buf[k][off] ^= 1;
	wsprof_touch(a->buf[k] + off, len);
	wsprof_release(a->buf[k]);
	a->counts->other_calls += 3;
}

static void work(unsigned index, uint64_t steps, struct workload_counts *counts)
{
	struct annotator a = { .rng = workload_seed(index), .counts = counts };
	a.slab = must(malloc(SLAB));
	counts->allocations++;
	for (size_t k = 0; k < BUFFERS; k++)
		replace(&a, k, workload_rand(&a.rng));
	char *slice = NULL;
	for (uint64_t i = 0; i < steps; i++) {
		uint64_t r = workload_rand(&a.rng);
		if (i % 64 == 0) {
			wsprof_phase_push("batch");
			counts->other_calls++;
		}
		if (i % 4096 == 0) {
			wsprof_snapshot("checkpoint");
			counts->other_calls++;
		}
		if (slice)
			wsprof_pool_free(a.slab, slice);
		slice = a.slab + ((r >> 32) % (SLAB / SLICE)) * SLICE;
		wsprof_pool_alloc(a.slab, slice, SLICE);
		counts->other_calls += 2;
		use(&a, r % BUFFERS, r);
		if (i % 8 == 7)
			replace(&a, (r >> 12) % BUFFERS, r);
		if (i % 64 == 63) {
			wsprof_phase_pop();
			counts->other_calls++;
		}
	}
	if (slice) {
		wsprof_pool_free(a.slab, slice);
		counts->other_calls++;
	}
	if (steps % 64) {
		wsprof_phase_pop();
		counts->other_calls++;
	}
	for (size_t k = 0; k < BUFFERS; k++)
		free(a.buf[k]);
	free(a.slab);
	counts->frees += BUFFERS + 1;
}

int main(int argc, char **argv)
{
	unsigned threads = 2;
	uint64_t steps = 500000;
	workload_args(argc, argv, "annotated [THREADS [STEPS]]", &threads, &steps);
	struct workload_counts total = { 0 };
	workload_run(threads, steps, work, &total);
	workload_report(&total);
	return 0;
}
