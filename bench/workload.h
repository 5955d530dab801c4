/*
 * workload.h - what the benchmark programs of compare.py share: their
 * command line (THREADS and a count of iterations a thread), a fast
 * per-thread random number generator, and the line that reports what the
 * program did, so that bytes and seconds can be divided by events.
 *
 * Every program prints exactly one line on stdout:
 *   events N allocations A frees F calls C
 * N = A + F: the allocations and frees the program made itself (a realloc
 * counts as one free and one allocation, a failed one as nothing); C is
 * every call a recorder is asked to note, N plus annotations or kernel
 * launches. The random sequences are seeded by the thread's index, so a
 * run does the same work every time.
 */
#ifndef WSP_BENCH_WORKLOAD_H
#define WSP_BENCH_WORKLOAD_H

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A worker's tally, added up by workload_run. */
struct workload_counts {
	uint64_t allocations, frees, other_calls;
};

/* What a thread runs: thread index, iterations, its tally. */
typedef void (*workload_fn)(unsigned index, uint64_t iterations, struct workload_counts *counts);

struct workload_thread {
	pthread_t thread;
	unsigned index;
	uint64_t iterations;
	workload_fn fn;
	struct workload_counts counts;
};

/* xorshift64*: a few cycles a number, so the generator does not weigh on
 * the allocation rate being measured. */
static inline uint64_t workload_rand(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static inline uint64_t workload_seed(unsigned index)
{
	return 0x9E3779B97F4A7C15ull * (index + 1);
}

/* THREADS and ITERATIONS from argv, with these defaults; exits with
 * status 2 and the usage line on anything else. */
static inline void workload_args(int argc, char **argv, const char *usage, unsigned *threads,
				 uint64_t *iterations)
{
	if (argc > 3) {
		fprintf(stderr, "usage: %s\n", usage);
		exit(2);
	}
	char *end = NULL;
	if (argc > 1) {
		unsigned long t = strtoul(argv[1], &end, 10);
		if (*end || t < 1 || t > 64) {
			fprintf(stderr, "usage: %s (THREADS is 1..64)\n", usage);
			exit(2);
		}
		*threads = (unsigned)t;
	}
	if (argc > 2) {
		unsigned long long n = strtoull(argv[2], &end, 10);
		if (*end || n < 1) {
			fprintf(stderr, "usage: %s (ITERATIONS is at least 1)\n", usage);
			exit(2);
		}
		*iterations = n;
	}
}

static inline void *workload_thread_main(void *arg)
{
	struct workload_thread *t = arg;
	t->fn(t->index, t->iterations, &t->counts);
	return NULL;
}

/* Run fn on `threads` threads at once and add their tallies into total. */
static inline void workload_run(unsigned threads, uint64_t iterations, workload_fn fn,
				struct workload_counts *total)
{
	struct workload_thread t[64];
	for (unsigned i = 0; i < threads; i++) {
		t[i] = (struct workload_thread){ .index = i, .iterations = iterations, .fn = fn };
		if (pthread_create(&t[i].thread, NULL, workload_thread_main, &t[i]) != 0) {
			fprintf(stderr, "cannot start thread %u\n", i);
			exit(1);
		}
	}
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(t[i].thread, NULL);
		total->allocations += t[i].counts.allocations;
		total->frees += t[i].counts.frees;
		total->other_calls += t[i].counts.other_calls;
	}
}

static inline void workload_report(const struct workload_counts *c)
{
	uint64_t events = c->allocations + c->frees;
	printf("events %" PRIu64 " allocations %" PRIu64 " frees %" PRIu64 " calls %" PRIu64 "\n", events,
	       c->allocations, c->frees, events + c->other_calls);
}

#endif
