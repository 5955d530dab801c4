/*
 * mix - a realistic allocation mix: many sizes, blocks short-, medium- and
 * long-lived, growing buffers resized with realloc, calloc'd tables.
 *
 * usage: mix [THREADS [STEPS]]   (default 2 threads, 500,000 steps each)
 *
 * Each step does one of these, drawn at random (weights in percent):
 *   55  a short-lived block: malloc, write, freed a few steps later
 *       (a FIFO of SHORT blocks), 8 B to 4 KiB, mostly under 128 B
 *   20  a medium-lived block: replaces a random one of MEDIUM blocks,
 *       up to 64 KiB
 *   10  grow one of GROWING buffers by half with realloc, or free it once
 *       it passed 64 KiB (a vector that is built, then dropped)
 *    8  calloc a table of 16..1024 entries of 8 bytes, short-lived
 *    5  a long-lived block kept to the end (at most LONG a thread, then
 *       one of them is freed at random)
 *    2  a large block, 128 KiB to 1 MiB (past glibc's first mmap threshold),
 *       freed at once
 * The calls come from a handful of functions, so the program has a dozen
 * call sites with stacks of a few frames. Prints the line of workload.h.
 */
#include "workload.h"

#include <string.h>

#define SHORT 16
#define MEDIUM 1024
#define GROWING 16
#define LONG 4096

struct mixer {
	uint64_t rng;
	struct workload_counts *counts;
	void *fifo[SHORT];
	void *medium[MEDIUM];
	void *grow[GROWING];
	size_t grow_size[GROWING];
	void *keep[LONG];
	size_t kept;
	uint64_t step;
};

static void *must(void *p)
{
	if (!p)
		abort();
	return p;
}

static void drop(struct mixer *m, void *p)
{
	if (p) {
		free(p);
		m->counts->frees++;
	}
}

/* 8 B up to 2^max_shift, mostly under 128 B as object-heavy programs
 * are: each power of two half as likely as the one below. */
static size_t small_size(uint64_t r, unsigned max_shift)
{
	unsigned shift = 3 + (unsigned)__builtin_ctzll((r >> 16) | (1ull << 40)) % (max_shift - 3);
	return ((size_t)1 << shift) + (r & (((size_t)1 << shift) - 1));
}

__attribute__((noinline)) static void short_lived(struct mixer *m, uint64_t r)
{
	size_t n = small_size(r, 12);
	char *p = must(malloc(n));
	memset(p, 0, n < 64 ? n : 64);
	m->counts->allocations++;
	size_t slot = m->step % SHORT;
	drop(m, m->fifo[slot]);
	m->fifo[slot] = p;
}

__attribute__((noinline)) static void medium_lived(struct mixer *m, uint64_t r)
{
	size_t n = small_size(r, 16);
	char *p = must(malloc(n));
	memset(p, 1, n < 256 ? n : 256);
	m->counts->allocations++;
	size_t slot = (r >> 40) % MEDIUM;
	drop(m, m->medium[slot]);
	m->medium[slot] = p;
}

__attribute__((noinline)) static void grow(struct mixer *m, uint64_t r)
{
	size_t k = (r >> 40) % GROWING;
	if (m->grow_size[k] > (64u << 10)) {
		drop(m, m->grow[k]);
		m->grow[k] = NULL;
		m->grow_size[k] = 0;
		return;
	}
	size_t n = m->grow_size[k] ? m->grow_size[k] + m->grow_size[k] / 2 : 64;
	char *p = must(realloc(m->grow[k], n));
	if (m->grow[k])
		m->counts->frees++;
	m->counts->allocations++;
	memset(p + m->grow_size[k], 2, n - m->grow_size[k] < 64 ? n - m->grow_size[k] : 64);
	m->grow[k] = p;
	m->grow_size[k] = n;
}

__attribute__((noinline)) static void table(struct mixer *m, uint64_t r)
{
	size_t entries = 16 + (r >> 20) % 1009;
	uint64_t *t = must(calloc(entries, sizeof *t));
	t[entries - 1] = r;
	m->counts->allocations++;
	drop(m, t);
}

__attribute__((noinline)) static void long_lived(struct mixer *m, uint64_t r)
{
	char *p = must(malloc(small_size(r, 14)));
	p[0] = 3;
	m->counts->allocations++;
	if (m->kept < LONG) {
		m->keep[m->kept++] = p;
		return;
	}
	size_t slot = (r >> 40) % LONG;
	drop(m, m->keep[slot]);
	m->keep[slot] = p;
}

__attribute__((noinline)) static void large(struct mixer *m, uint64_t r)
{
	size_t n = (128u << 10) + (r >> 20) % (896u << 10);
	char *p = must(malloc(n));
	p[n - 1] = 4;
	m->counts->allocations++;
	drop(m, p);
}

static void work(unsigned index, uint64_t steps, struct workload_counts *counts)
{
	struct mixer *m = must(calloc(1, sizeof *m)); /* the tables are big: not on the thread's stack */
	m->rng = workload_seed(index);
	m->counts = counts;
	for (m->step = 0; m->step < steps; m->step++) {
		uint64_t r = workload_rand(&m->rng);
		unsigned pick = (unsigned)(r >> 56) % 100;
		if (pick < 55)
			short_lived(m, r);
		else if (pick < 75)
			medium_lived(m, r);
		else if (pick < 85)
			grow(m, r);
		else if (pick < 93)
			table(m, r);
		else if (pick < 98)
			long_lived(m, r);
		else
			large(m, r);
	}
	for (size_t k = 0; k < SHORT; k++)
		drop(m, m->fifo[k]);
	for (size_t k = 0; k < MEDIUM; k++)
		drop(m, m->medium[k]);
	for (size_t k = 0; k < GROWING; k++)
		drop(m, m->grow[k]);
	for (size_t k = 0; k < m->kept; k++)
		drop(m, m->keep[k]);
	free(m); /* the bookkeeping itself is not counted */
}

int main(int argc, char **argv)
{
	unsigned threads = 2;
	uint64_t steps = 500000;
	workload_args(argc, argv, "mix [THREADS [STEPS]]", &threads, &steps);
	struct workload_counts total = { 0 };
	workload_run(threads, steps, work, &total);
	workload_report(&total);
	return 0;
}
