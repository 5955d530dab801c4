/*
 * alloc_sampled - a known pattern of heap allocations, for recording with
 * WSPROF_SAMPLE_BYTES.
 *
 * usage: alloc_sampled EXPECT [ROUNDS]   (default 250000)
 *
 * Two threads, each ROUNDS times: a small block (16 B .. 1 KiB) from
 * small_site and, one round in eight, a large one (16 .. 64 KiB) from
 * large_site; one small block in 32 is then grown by realloc (in grow).
 * Blocks wait in a ring of RING slots per thread and are freed when their
 * slot comes round again; one in four goes through a slot shared by both
 * threads instead, and is freed by whichever thread takes that slot next.
 * What is in the rings and shared slots at the end leaks. Every call and
 * its booking happen under one lock, so the books see the calls in the
 * order the trace does (the peak included).
 *
 * Besides the exact books ("heap", "sites"), the expect file gives the
 * standard deviation each figure has when estimated from a trace sampled
 * at WSPROF_SAMPLE_BYTES = N ("sd", "sites.*.*_sd"): a block of s bytes
 * is sampled with p = 1 - exp(-max(s, 1) / N), independently of all
 * others, and weighed by 1/p, so a sum of x over blocks is estimated with
 * variance sum x^2 (1 - p) / p; counts add the analyzer's rounding of 1/p
 * to a whole number (at most 1/4 per sampled block, p of them on average).
 */
#include "account.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define RING 64
#define SHARED 16

struct block {
	void *p;
	size_t size;
};

/* A sum over blocks and the variance of its estimate from a sampled trace. */
struct estimate {
	uint64_t count, bytes;
	double count_var, bytes_var;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct account heap;
static struct estimate allocated, freed, small, large;
static struct block shared[SHARED];
static struct block rings[2][RING];
static double sample_bytes; /* 0: not sampled */
static unsigned rounds = 250000;

static void estimate_add(struct estimate *e, size_t size)
{
	e->count++;
	e->bytes += size;
	if (!sample_bytes)
		return;
	double s = size ? (double)size : 1, p = -expm1(-s / sample_bytes);
	e->count_var += (1 - p) / p + p / 4;
	e->bytes_var += (double)size * (double)size * (1 - p) / p;
}

static uint64_t sd(double var)
{
	return (uint64_t)ceil(sqrt(var));
}

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Callers hold the lock. */
static void release(struct block b)
{
	if (!b.p)
		return;
	free(b.p);
	account_free(&heap, b.size);
	estimate_add(&freed, b.size);
}

static struct block booked(void *p, size_t size, struct estimate *site)
{
	if (!p)
		abort();
	account_keep(p);
	account_alloc(&heap, size);
	estimate_add(&allocated, size);
	estimate_add(site, size);
	return (struct block){ p, size };
}

__attribute__((noipa)) static struct block small_site(size_t size)
{
	return booked(malloc(size), size, &small);
}

__attribute__((noipa)) static struct block large_site(size_t size)
{
	return booked(malloc(size), size, &large);
}

__attribute__((noipa)) static struct block grow(struct block b, size_t size)
{
	void *p = realloc(b.p, size);
	if (!p)
		abort();
	account_keep(p);
	account_resize(&heap, b.size, size);
	estimate_add(&freed, b.size);
	estimate_add(&allocated, size);
	return (struct block){ p, size };
}

/* Into the thread's ring slot, or one time in four the shared one; what
 * was there is freed. */
static void keep(unsigned self, uint64_t r, unsigned i, struct block b)
{
	struct block *slot = (r >> 40) % 4 == 0 ? &shared[(r >> 44) % SHARED] : &rings[self][i % RING];
	release(*slot);
	*slot = b;
}

static void *worker(void *arg)
{
	unsigned self = (unsigned)(uintptr_t)arg;
	uint64_t x = 0x9e3779b97f4a7c15ull * (self + 1);
	for (unsigned i = 0; i < rounds; i++) {
		uint64_t r = next(&x);
		pthread_mutex_lock(&lock);
		struct block b = small_site(16 + (r >> 8) % 1009);
		if ((r >> 20) % 32 == 0)
			b = grow(b, b.size + 1024 + (r >> 24) % 4096);
		keep(self, r, i, b);
		if ((r >> 32) % 8 == 0)
			keep(self, next(&x), i + RING / 2, large_site(16384 + (r >> 35) % 49153));
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: alloc_sampled EXPECT [ROUNDS]");
		return 2;
	}
	if (argc > 2)
		rounds = (unsigned)strtoul(argv[2], NULL, 10);
	const char *n = getenv("WSPROF_SAMPLE_BYTES");
	sample_bytes = n && strtoul(n, NULL, 10) > 1 ? (double)strtoul(n, NULL, 10) : 0;
	pthread_t tids[2];
	for (unsigned t = 0; t < 2; t++)
		pthread_create(&tids[t], NULL, worker, (void *)(uintptr_t)t);
	for (unsigned t = 0; t < 2; t++)
		pthread_join(tids[t], NULL);

	struct estimate leaked = { 0 };
	for (unsigned t = 0; t < 2; t++)
		for (unsigned i = 0; i < RING; i++)
			if (rings[t][i].p)
				estimate_add(&leaked, rings[t][i].size);
	for (unsigned i = 0; i < SHARED; i++)
		if (shared[i].p)
			estimate_add(&leaked, shared[i].size);

	struct expect e;
	expect_init(&e);
	expect_account(&e, "heap", &heap);
	expect_uint(&e, "events", heap.allocations + heap.frees);
	expect_open(&e, "sd");
	expect_uint(&e, "allocations", sd(allocated.count_var));
	expect_uint(&e, "total_bytes", sd(allocated.bytes_var));
	expect_uint(&e, "frees", sd(freed.count_var));
	expect_uint(&e, "leaked_blocks", sd(leaked.count_var));
	expect_uint(&e, "leaked_bytes", sd(leaked.bytes_var));
	expect_close(&e);
	expect_open(&e, "sites");
	const struct estimate *sites[] = { &small, &large };
	const char *names[] = { "small_site", "large_site" };
	for (unsigned i = 0; i < 2; i++) {
		expect_open(&e, names[i]);
		expect_uint(&e, "allocations", sites[i]->count);
		expect_uint(&e, "bytes", sites[i]->bytes);
		expect_uint(&e, "allocations_sd", sd(sites[i]->count_var));
		expect_uint(&e, "bytes_sd", sd(sites[i]->bytes_var));
		expect_close(&e);
	}
	expect_close(&e);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
