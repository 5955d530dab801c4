/*
 * taskrt.c - a small task runtime in the style of Parla's memory manager,
 * annotated for wsprof.
 *
 * Two "devices" (host memory standing in for GPUs, each with a byte budget)
 * hold copies of a grid of tiles, at most one copy of a tile per device. The
 * scheduler maps each task to a device, brings the tile there - into the
 * stale copy left on that device when there is one, else into a new buffer -
 * and hands the task to one of two worker threads. A task acquires the copies
 * it reads and writes and releases them when it is done. Writing a tile on
 * one device makes its copy on the other stale; the runtime keeps that copy
 * as cache and evicts stale, unreferenced copies, least recently used first,
 * only when a device goes over its budget. So the memory allocated climbs to
 * the budgets while the memory truly in use (current copies, and copies that
 * running tasks hold) stays flat: the annotations of include/wsprof.h are
 * what let wsprof tell the two apart. Without wsprof each costs a load and a
 * branch.
 *
 * Deterministic: every placement and eviction is decided by the scheduler
 * (main) thread, and only stale copies are evicted, which no running task can
 * hold (a copy goes stale only when a later iteration writes its tile
 * elsewhere), so the summary line depends on the arguments alone.
 *
 * usage: taskrt [ITERATIONS [TILES]]     (a grid of TILES x TILES tiles)
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wsprof.h"

#define NDEV 2
#define NWORKERS 2
#define TILE_N 128 /* a tile is TILE_N x TILE_N floats, 64 KiB */
#define TILE_BYTES (TILE_N * TILE_N * sizeof(float))
#define WEIGHTS_BYTES (TILE_N * sizeof(float))
#define MOVE_ONE_IN 8 /* one task in 8 runs on the device its tile is not on */
#define WARMUP_ITERATIONS 2
#define SLAB_BYTES (16u << 10)
#define MIB(n) ((double)(n) / (1 << 20))

struct object;

/* One device's copy of a data object. */
struct copy {
	struct object *obj;
	float *data;
	int dev;
	bool valid; /* holds the current data */
	int refs;   /* tasks holding it; workers drop theirs, so atomic */
	struct copy *lru_prev, *lru_next;
};

struct object {
	size_t bytes;
	char label[32];
	struct copy *copy[NDEV];
};

struct device {
	size_t budget, used;
	struct copy lru; /* sentinel: lru.lru_next is the least recently used */
};

struct task {
	struct copy *tile, *weights;
};

struct worker {
	pthread_t thread;
	char *slab; /* small per-task scratch buffers are carved from here */
	size_t slab_top;
};

static struct device devices[NDEV];
static size_t copy_bytes, copy_bytes_peak;
static unsigned long transfers, cache_reuses, evictions, over_budget;

/* The ready queue: the scheduler fills it each iteration, workers drain it. */
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_ready = PTHREAD_COND_INITIALIZER;
static pthread_cond_t queue_idle = PTHREAD_COND_INITIALIZER;
static struct task **queue;
static size_t queued, taken, finished;
static bool shutting_down;

/* Allocations are made where they are written, so that wsprof's call sites
 * name the code that holds the memory; this only checks the result. */
static void *checked(void *p)
{
	if (!p) {
		fprintf(stderr, "taskrt: out of memory\n");
		exit(1);
	}
	return p;
}

static uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	return x ^ (x >> 16);
}

static void acquire(struct copy *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
	wsprof_acquire(c->data);
}

static void release(struct copy *c)
{
	wsprof_release(c->data);
	__atomic_sub_fetch(&c->refs, 1, __ATOMIC_RELEASE);
}

static void lru_unlink(struct copy *c)
{
	c->lru_prev->lru_next = c->lru_next;
	c->lru_next->lru_prev = c->lru_prev;
}

/* Make c the most recently used copy of its device. */
static void lru_touch(struct copy *c)
{
	struct copy *head = &devices[c->dev].lru;
	if (c->lru_next)
		lru_unlink(c);
	c->lru_prev = head->lru_prev;
	c->lru_next = head;
	head->lru_prev->lru_next = c;
	head->lru_prev = c;
}

static void copy_destroy(struct copy *c)
{
	struct device *d = &devices[c->dev];
	lru_unlink(c);
	c->obj->copy[c->dev] = NULL;
	d->used -= c->obj->bytes;
	copy_bytes -= c->obj->bytes;
	free(c->data);
	free(c);
}

/* Evict stale, unreferenced copies, oldest first, until `bytes` more fit. A
 * current copy is never evicted: it may be the only one. */
static void make_room(int dev, size_t bytes)
{
	struct device *d = &devices[dev];
	struct copy *c = d->lru.lru_next;
	while (d->used + bytes > d->budget && c != &d->lru) {
		struct copy *next = c->lru_next;
		if (!c->valid && __atomic_load_n(&c->refs, __ATOMIC_ACQUIRE) == 0) {
			copy_destroy(c);
			evictions++;
		}
		c = next;
	}
	if (d->used + bytes > d->budget)
		over_budget++;
}

static struct copy *copy_create(struct object *o, int dev)
{
	make_room(dev, o->bytes);
	struct copy *c = checked(malloc(sizeof *c));
	*c = (struct copy){ .obj = o, .data = checked(malloc(o->bytes)), .dev = dev };
	char name[48];
	snprintf(name, sizeof name, "%s @dev%d", o->label, dev);
	wsprof_name(c->data, name);
	o->copy[dev] = c;
	devices[dev].used += o->bytes;
	copy_bytes += o->bytes;
	if (copy_bytes > copy_bytes_peak)
		copy_bytes_peak = copy_bytes;
	lru_touch(c);
	return c;
}

static void copy_validate(struct copy *c)
{
	c->valid = true;
	wsprof_valid(c->data);
}

static int current_device(const struct object *o)
{
	for (int d = 0; d < NDEV; d++)
		if (o->copy[d] && o->copy[d]->valid)
			return d;
	return -1;
}

/* A current copy of o on dev: the one there, or a transfer from the device
 * holding one, into the stale copy kept on dev if any. */
static struct copy *bring(struct object *o, int dev)
{
	struct copy *c = o->copy[dev];
	if (!c || !c->valid) {
		struct copy *src = o->copy[current_device(o)];
		if (c)
			cache_reuses++;
		else
			c = copy_create(o, dev);
		acquire(src);
		memcpy(c->data, src->data, o->bytes);
		wsprof_touch(src->data, o->bytes);
		wsprof_touch(c->data, o->bytes);
		release(src);
		copy_validate(c);
		transfers++;
	}
	lru_touch(c);
	return c;
}

/* A task on dev writes o: the copies elsewhere go stale, kept as cache. */
static void written_on(struct object *o, int dev)
{
	for (int d = 0; d < NDEV; d++) {
		struct copy *c = o->copy[d];
		if (d != dev && c && c->valid) {
			c->valid = false;
			wsprof_invalid(c->data);
		}
	}
}

static void *scratch_alloc(struct worker *w, size_t n)
{
	n = (n + 63) & ~(size_t)63;
	if (w->slab_top + n > SLAB_BYTES) {
		fprintf(stderr, "taskrt: scratch slab exhausted\n");
		abort();
	}
	void *p = w->slab + w->slab_top;
	w->slab_top += n;
	wsprof_pool_alloc(w->slab, p, n);
	return p;
}

/* Scratch buffers are freed in the reverse order of their allocation. */
static void scratch_free(struct worker *w, void *p)
{
	wsprof_pool_free(w->slab, p);
	w->slab_top = (size_t)((char *)p - w->slab);
}

/* The task body: a few passes of a five-point smoothing of the tile, in
 * place, keeping the rows it still needs in two scratch line buffers. */
static void task_run(struct worker *w, const struct task *t)
{
	float *x = t->tile->data;
	const float *wt = t->weights->data;
	wsprof_touch(x, TILE_BYTES);
	wsprof_touch(wt, WEIGHTS_BYTES);
	float *line_a = scratch_alloc(w, TILE_N * sizeof(float));
	float *line_b = scratch_alloc(w, TILE_N * sizeof(float));
	for (int pass = 0; pass < 3; pass++) {
		float *up = line_a, *mid = line_b;
		memcpy(up, x, TILE_N * sizeof(float));
		for (int i = 0; i < TILE_N; i++) {
			float *r = x + (size_t)i * TILE_N;
			const float *down = i + 1 < TILE_N ? r + TILE_N : mid;
			memcpy(mid, r, TILE_N * sizeof(float));
			for (int j = 0; j < TILE_N; j++) {
				float left = mid[j ? j - 1 : j], right = mid[j + 1 < TILE_N ? j + 1 : j];
				r[j] = 0.196f * (up[j] + left + mid[j] + right + down[j]) + wt[j];
			}
			float *was_up = up;
			up = mid;
			mid = was_up;
		}
	}
	scratch_free(w, line_b);
	scratch_free(w, line_a);
	release(t->tile);
	release(t->weights);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	pthread_mutex_lock(&queue_lock);
	for (;;) {
		while (taken == queued && !shutting_down)
			pthread_cond_wait(&queue_ready, &queue_lock);
		if (taken == queued)
			break;
		struct task *t = queue[taken++];
		pthread_mutex_unlock(&queue_lock);
		task_run(w, t);
		pthread_mutex_lock(&queue_lock);
		if (++finished == queued)
			pthread_cond_signal(&queue_idle);
	}
	pthread_mutex_unlock(&queue_lock);
	return NULL;
}

static void submit(struct task *t)
{
	pthread_mutex_lock(&queue_lock);
	queue[queued++] = t;
	pthread_cond_signal(&queue_ready);
	pthread_mutex_unlock(&queue_lock);
}

static void wait_idle(void)
{
	pthread_mutex_lock(&queue_lock);
	while (finished < queued)
		pthread_cond_wait(&queue_idle, &queue_lock);
	queued = taken = finished = 0;
	pthread_mutex_unlock(&queue_lock);
}

/* One iteration: each tile gets a task, on its tile's device unless the
 * scheduler sends it to the other one to balance load. */
static void iterate(unsigned it, struct object *tiles, size_t ntiles, struct object *weights, struct task *tasks)
{
	char phase[32];
	snprintf(phase, sizeof phase, "iteration %u", it);
	wsprof_phase_push(phase);
	for (size_t i = 0; i < ntiles; i++) {
		int dev = current_device(&tiles[i]);
		if (mix(it * 2654435761u + (uint32_t)i) % MOVE_ONE_IN == 0)
			dev = (dev + 1) % NDEV;
		struct task *t = &tasks[i];
		t->tile = bring(&tiles[i], dev);
		t->weights = bring(weights, dev);
		acquire(t->tile);
		acquire(t->weights);
		written_on(&tiles[i], dev);
		submit(t);
	}
	wait_idle();
	wsprof_phase_pop();
}

/* Each tile starts on one device, in a checkerboard; the weights are read
 * everywhere and current on every device. */
static void place(struct object *tiles, unsigned side, struct object *weights)
{
	for (unsigned i = 0; i < side; i++) {
		for (unsigned j = 0; j < side; j++) {
			struct object *o = &tiles[i * side + j];
			*o = (struct object){ .bytes = TILE_BYTES };
			snprintf(o->label, sizeof o->label, "tile %u,%u", i, j);
			struct copy *c = copy_create(o, (int)((i + j) % NDEV));
			for (size_t k = 0; k < TILE_N * TILE_N; k++)
				c->data[k] = (float)(mix((uint32_t)(i * side + j) * 40503u + (uint32_t)k) % 1000) / 1000.0f;
			copy_validate(c);
		}
	}
	*weights = (struct object){ .bytes = WEIGHTS_BYTES, .label = "weights" };
	for (int d = 0; d < NDEV; d++) {
		struct copy *c = copy_create(weights, d);
		for (int k = 0; k < TILE_N; k++)
			c->data[k] = (float)(k % 7) / 700.0f;
		copy_validate(c);
	}
}

int main(int argc, char **argv)
{
	long iterations = argc > 1 ? atol(argv[1]) : 30;
	long side = argc > 2 ? atol(argv[2]) : 16;
	if (argc > 3 || iterations < 1 || iterations > 100000 || side < 1 || side > 64) {
		fprintf(stderr, "usage: taskrt [ITERATIONS 1..100000 [TILES 1..64]]\n");
		return 2;
	}
	size_t ntiles = (size_t)side * (size_t)side;
	for (int d = 0; d < NDEV; d++) {
		/* Room for four fifths of the grid: both devices together hold
		 * every tile once and a good part of it twice. */
		devices[d].budget = ntiles * TILE_BYTES * 4 / 5 + WEIGHTS_BYTES;
		devices[d].lru.lru_prev = devices[d].lru.lru_next = &devices[d].lru;
	}
	struct object *tiles = checked(malloc(ntiles * sizeof *tiles));
	struct object weights;
	struct task *tasks = checked(malloc(ntiles * sizeof *tasks));
	queue = checked(malloc(ntiles * sizeof *queue));

	struct worker workers[NWORKERS];
	for (int i = 0; i < NWORKERS; i++) {
		workers[i] = (struct worker){ .slab = checked(malloc(SLAB_BYTES)) };
		char name[32];
		snprintf(name, sizeof name, "scratch slab worker %d", i);
		wsprof_name(workers[i].slab, name);
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0) {
			fprintf(stderr, "taskrt: cannot start a worker thread\n");
			return 1;
		}
	}

	unsigned warmup = iterations < WARMUP_ITERATIONS ? (unsigned)iterations : WARMUP_ITERATIONS;
	wsprof_phase_push("warm-up");
	place(tiles, (unsigned)side, &weights);
	for (unsigned it = 1; it <= (unsigned)iterations; it++) {
		iterate(it, tiles, ntiles, &weights, tasks);
		if (it == warmup) {
			wsprof_phase_pop();
			wsprof_snapshot("after warm-up");
		}
	}

	pthread_mutex_lock(&queue_lock);
	shutting_down = true;
	pthread_cond_broadcast(&queue_ready);
	pthread_mutex_unlock(&queue_lock);
	for (int i = 0; i < NWORKERS; i++) {
		pthread_join(workers[i].thread, NULL);
		free(workers[i].slab);
	}

	double checksum = 0;
	for (size_t i = 0; i < ntiles; i++) {
		const float *x = tiles[i].copy[current_device(&tiles[i])]->data;
		for (size_t k = 0; k < TILE_N * TILE_N; k++)
			checksum += x[k];
	}
	size_t end_bytes = copy_bytes, current_bytes = ntiles * TILE_BYTES + NDEV * WEIGHTS_BYTES;
	printf("taskrt: %ld iterations x %zu tiles of %zu KiB on %d devices (budget %.1f MiB each), %d workers: "
	       "%lu transfers (%lu into cached copies), %lu evictions, %lu over budget, "
	       "copies %.1f MiB at peak, %.1f MiB at the end of which %.1f MiB current, checksum %.6f\n",
	       iterations, ntiles, TILE_BYTES >> 10, NDEV, MIB(devices[0].budget), NWORKERS,
	       transfers, cache_reuses, evictions, over_budget,
	       MIB(copy_bytes_peak), MIB(end_bytes), MIB(current_bytes), checksum);

	for (size_t i = 0; i < ntiles; i++)
		for (int d = 0; d < NDEV; d++)
			if (tiles[i].copy[d])
				copy_destroy(tiles[i].copy[d]);
	for (int d = 0; d < NDEV; d++)
		copy_destroy(weights.copy[d]);
	free(queue);
	free(tasks);
	free(tiles);
	return 0;
}
