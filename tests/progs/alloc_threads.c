/*
 * alloc_threads - a malloc-heavy multi-threaded program with deep stacks.
 *
 * usage: alloc_threads EXPECT [THREADS [ROUNDS [BLOCKS]]]   (default 2 5 2000)
 *
 * Each worker leaks one block, then, for every round, allocates BLOCKS
 * blocks through a recursion DEPTH calls deep and, after a barrier, frees
 * the blocks its neighbour allocated: every block is freed by another
 * thread than the one that made it (when there are two or more). The
 * barriers make the peak deterministic: the live set is largest when all
 * workers have finished allocating a round, whatever the interleaving.
 *
 * The recursion lives in its own section, so the expect file can give
 * its address range ("descend_lo", "descend_hi") for a test that reads the
 * recorded stacks, along with how many allocations were made through it
 * ("descend_allocations") and how deep ("descend_depth").
 */
#include "account.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH 12
#define MAX_THREADS 64

static unsigned nthreads = 2, rounds = 5, blocks = 2000;
static void ***slots;          /* slots[thread][block] */
static pthread_barrier_t barrier;
static pthread_mutex_t books_lock = PTHREAD_MUTEX_INITIALIZER;
static struct account heap;    /* every thread's calls, in one book */
static _Atomic uint64_t descend_allocations;

/* Both phases add or remove only, so books kept under a lock, in any
 * order within a phase, reach the same peak as the program itself. */
static void book_alloc(size_t size)
{
	pthread_mutex_lock(&books_lock);
	account_alloc(&heap, size);
	pthread_mutex_unlock(&books_lock);
}

static void book_free(size_t size)
{
	pthread_mutex_lock(&books_lock);
	account_free(&heap, size);
	pthread_mutex_unlock(&books_lock);
}

static size_t block_size(unsigned thread, unsigned i)
{
	return 16 + 8 * ((thread * 31 + i) % 64);
}

extern const char __start_wsprof_descend[], __stop_wsprof_descend[];

/* noipa: no inlining, cloning or tail-call merging, so each level is a
 * real frame; the barrier after the call keeps it from being a tail call. */
__attribute__((noipa, section("wsprof_descend"))) static void *descend(unsigned depth, size_t size)
{
	if (depth == 0) {
		void *p = malloc(size);
		__asm__ volatile("" : : "r"(p) : "memory");
		return p;
	}
	void *p = descend(depth - 1, size);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static void *worker(void *arg)
{
	unsigned self = (unsigned)(uintptr_t)arg, neighbour = (self + 1) % nthreads;
	account_keep(malloc(1000 + self));
	book_alloc(1000 + self);
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < blocks; i++) {
			size_t size = block_size(self, i);
			slots[self][i] = descend(DEPTH, size);
			book_alloc(size);
			descend_allocations++;
		}
		pthread_barrier_wait(&barrier);
		for (unsigned i = 0; i < blocks; i++) {
			free(slots[neighbour][i]);
			book_free(block_size(neighbour, i));
		}
		pthread_barrier_wait(&barrier);
	}
	return NULL;
}

static unsigned arg_or(int argc, char **argv, int i, unsigned def)
{
	return argc > i ? (unsigned)strtoul(argv[i], NULL, 10) : def;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: alloc_threads EXPECT [THREADS [ROUNDS [BLOCKS]]]");
		return 2;
	}
	nthreads = arg_or(argc, argv, 2, nthreads);
	rounds = arg_or(argc, argv, 3, rounds);
	blocks = arg_or(argc, argv, 4, blocks);
	if (nthreads < 1 || nthreads > MAX_THREADS || blocks < 1) {
		complain("alloc_threads: 1 to %d threads of at least one block", MAX_THREADS);
		return 2;
	}
	/* The shared table, allocated by the main thread. */
	slots = calloc(nthreads, sizeof *slots);
	book_alloc(nthreads * sizeof *slots);
	for (unsigned t = 0; t < nthreads; t++) {
		slots[t] = malloc(blocks * sizeof **slots);
		book_alloc(blocks * sizeof **slots);
	}
	pthread_barrier_init(&barrier, NULL, nthreads);
	pthread_t tids[MAX_THREADS];
	for (unsigned t = 0; t < nthreads; t++)
		pthread_create(&tids[t], NULL, worker, (void *)(uintptr_t)t);
	for (unsigned t = 0; t < nthreads; t++)
		pthread_join(tids[t], NULL);
	for (unsigned t = 0; t < nthreads; t++) {
		free(slots[t]);
		book_free(blocks * sizeof **slots);
	}
	free(slots);
	book_free(nthreads * sizeof *slots);

	struct expect e;
	expect_init(&e);
	expect_account(&e, "heap", &heap);
	expect_uint(&e, "threads", nthreads + 1);
	expect_uint(&e, "descend_lo", (uintptr_t)__start_wsprof_descend);
	expect_uint(&e, "descend_hi", (uintptr_t)__stop_wsprof_descend);
	expect_uint(&e, "descend_allocations", descend_allocations);
	expect_uint(&e, "descend_depth", DEPTH + 1);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
