/*
 * churn - a malloc storm with frees in random order: each thread keeps a
 * table of 1,024 blocks and, at every step, replaces one chosen at random
 * (its free, then a malloc of 16 B to 4 KiB, uniformly), from one of four
 * call paths about ten frames deep. Unlike deep's ring (frees nearly in
 * allocation order), no order helps the allocator or the recorder.
 *
 * usage: churn [THREADS [STEPS]]   (default 2 threads, 1,000,000 steps each)
 *
 * Prints the line of workload.h.
 */
#include "workload.h"

#include <string.h>

#define TABLE 1024
#define DEPTH 8 /* chain levels; with step, the path, the thread entry and start: about ten frames */

struct worker {
	uint64_t rng;
	void *table[TABLE];
	struct workload_counts *counts;
};

__attribute__((noinline)) static void replace(struct worker *w)
{
	uint64_t r = workload_rand(&w->rng);
	void **slot = &w->table[r % TABLE];
	if (*slot) {
		free(*slot);
		w->counts->frees++;
	}
	size_t size = 16 + (r >> 20) % 4081;
	*slot = malloc(size);
	if (!*slot)
		abort();
	memset(*slot, (int)r, 16);
	w->counts->allocations++;
}

/* Four paths down DEPTH levels: the path's number picks the function at
 * two of them. The empty asm keeps each call a call. */
__attribute__((noinline)) static void level(struct worker *w, unsigned depth, unsigned path);
__attribute__((noinline)) static void level_alt(struct worker *w, unsigned depth, unsigned path);

__attribute__((noinline)) static void level(struct worker *w, unsigned depth, unsigned path)
{
	if (!depth)
		replace(w);
	else if (depth <= 2 && (path >> (depth - 1)) & 1)
		level_alt(w, depth - 1, path);
	else
		level(w, depth - 1, path);
	__asm__ volatile("");
}

__attribute__((noinline)) static void level_alt(struct worker *w, unsigned depth, unsigned path)
{
	if (!depth)
		replace(w);
	else
		level(w, depth - 1, path);
	__asm__ volatile("");
}

static void work(unsigned index, uint64_t steps, struct workload_counts *counts)
{
	struct worker *w = calloc(1, sizeof *w);
	if (!w)
		abort();
	w->rng = workload_seed(index);
	w->counts = counts;
	for (uint64_t i = 0; i < steps; i++)
		level(w, DEPTH, (unsigned)(i & 3));
	for (size_t i = 0; i < TABLE; i++)
		if (w->table[i]) {
			free(w->table[i]);
			counts->frees++;
		}
	free(w);
}

int main(int argc, char **argv)
{
	unsigned threads = 2;
	uint64_t steps = 1000000;
	workload_args(argc, argv, "churn [THREADS [STEPS]]", &threads, &steps);
	struct workload_counts total = { 0 };
	workload_run(threads, steps, work, &total);
	workload_report(&total);
	return 0;
}
