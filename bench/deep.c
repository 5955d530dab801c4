/*
 * deep - malloc/free pairs at the bottom of a deep call chain, on several
 * threads: the recorder's worst steady case (every event unwinds about
 * twelve frames) and the workload of the performance targets.
 *
 * usage: deep [THREADS [PAIRS]]   (default 2 threads, 1,000,000 pairs each)
 *
 * Each pair is one trip down a chain of CHAIN + 1 noinline functions, built
 * with -fno-inline, -fno-omit-frame-pointer and no sibling calls (see
 * meson.build), so every frame is really there. At each level the chain
 * goes through one of two functions, chosen by a bit of the iteration:
 * 2^PATH_BITS distinct call stacks, as a program with a few hot call
 * sites has. At the bottom the thread allocates a block and frees
 * an older one: sizes from 16 B to 64 KiB, mostly small; one block in
 * eight goes through a slot shared by all threads, so it is freed by
 * whichever thread takes the slot next, often not the one that allocated
 * it. Prints the line of workload.h.
 */
#include "workload.h"

#include <stdatomic.h>
#include <string.h>

#define CHAIN 8           /* levels 8..0, 9 frames; with leaf, work and the thread entry: 12 */
#define PATH_BITS 4
#define RING 256          /* blocks each thread keeps live */
#define SHARED 64         /* slots through which blocks change threads */

static _Atomic(void *) shared[SHARED];

struct worker {
	uint64_t rng;
	void *ring[RING];
	struct workload_counts *counts;
};

/* 16 B .. 256 B three times in four, then up to 4 KiB, rarely 64 KiB. */
static size_t pick_size(uint64_t r)
{
	unsigned cls = r & 15;
	if (cls < 12)
		return 16 + (r >> 8) % 241;
	if (cls < 15)
		return 256 + (r >> 8) % 3841;
	return 4096 + (r >> 8) % 61441;
}

__attribute__((noinline)) static void leaf(struct worker *w, uint64_t i)
{
	uint64_t r = workload_rand(&w->rng);
	void *p = malloc(pick_size(r));
	if (!p)
		abort();
	memset(p, (int)i, 16); /* a block the program uses, not one the compiler may drop */
	w->counts->allocations++;
	void *old;
	if ((r >> 32) % 8 == 0)
		old = atomic_exchange_explicit(&shared[(r >> 40) % SHARED], p, memory_order_acq_rel);
	else {
		old = w->ring[i % RING];
		w->ring[i % RING] = p;
	}
	if (old) {
		free(old);
		w->counts->frees++;
	}
}

static void chain_a(struct worker *w, uint64_t i, unsigned level);
static void chain_b(struct worker *w, uint64_t i, unsigned level);

/* One level down: through chain_a or chain_b as bit `level` of i says.
 * The empty asm after the call keeps it from becoming a jump. */
#define CHAIN_STEP(w, i, level)                                                            \
	do {                                                                               \
		if ((level) == 0)                                                          \
			leaf(w, i);                                                        \
		else if ((level) <= PATH_BITS && ((i) >> ((level) - 1)) & 1)              \
			chain_a(w, i, (level) - 1);                                        \
		else                                                                       \
			chain_b(w, i, (level) - 1);                                        \
		__asm__ volatile("" ::: "memory");                                         \
	} while (0)

__attribute__((noinline)) static void chain_a(struct worker *w, uint64_t i, unsigned level)
{
	CHAIN_STEP(w, i, level);
}

__attribute__((noinline)) static void chain_b(struct worker *w, uint64_t i, unsigned level)
{
	CHAIN_STEP(w, i, level);
}

static void work(unsigned index, uint64_t pairs, struct workload_counts *counts)
{
	struct worker w = { .rng = workload_seed(index), .counts = counts };
	for (uint64_t i = 0; i < pairs; i++)
		chain_b(&w, i, CHAIN);
	for (size_t k = 0; k < RING; k++) {
		if (w.ring[k]) {
			free(w.ring[k]);
			counts->frees++;
		}
	}
}

int main(int argc, char **argv)
{
	unsigned threads = 2;
	uint64_t pairs = 1000000;
	workload_args(argc, argv, "deep [THREADS [PAIRS]]", &threads, &pairs);
	struct workload_counts total = { 0 };
	workload_run(threads, pairs, work, &total);
	for (size_t k = 0; k < SHARED; k++) {
		void *p = atomic_exchange(&shared[k], NULL);
		if (p) {
			free(p);
			total.frees++;
		}
	}
	workload_report(&total);
	return 0;
}
