/*
 * annotation_cost.c - what an annotation call of include/wsprof.h costs a
 * program that runs without wsprof.
 *
 * The goal is at most 2 ns a call. In this one process, which must not run
 * under wsprof, it times loops of N iterations (200 M by default) of:
 * nothing (the baseline), wsprof_acquire(p), wsprof_touch(p, n), and the
 * same two calls compiled with WSPROF_DISABLE (annotation_cost_disabled.c).
 * Every loop body ends in an empty asm with a memory clobber (BENCH_BARRIER),
 * so the compiler keeps the loop and reloads the header's table pointer on
 * every call, as it would in a real program. Each figure is the best of
 * three runs, from CLOCK_MONOTONIC. A loop meets the goal when a whole
 * iteration, loop overhead included, takes 2 ns or less. The first call,
 * which looks wsprof up through dlsym once per source file, is timed apart.
 *
 * usage: annotation_cost [--json] [--iterations N]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wsprof.h"

#include "annotation_cost.h"

#define GOAL_NS 2.0
#define REPEATS 3

__attribute__((noinline)) static void bench_empty(const void *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		BENCH_BARRIER(p);
}

__attribute__((noinline)) static void bench_acquire(const void *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		wsprof_acquire(p);
		BENCH_BARRIER(p);
	}
}

__attribute__((noinline)) static void bench_touch(const void *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		wsprof_touch(p, 4096);
		BENCH_BARRIER(p);
	}
}

static const struct loop {
	const char *name, *key;
	void (*run)(const void *p, uint64_t n);
} loops[] = {
	{ "empty loop (baseline)", "empty", bench_empty },
	{ "wsprof_acquire(p)", "acquire", bench_acquire },
	{ "wsprof_touch(p, n)", "touch", bench_touch },
	{ "wsprof_acquire(p), WSPROF_DISABLE", "acquire_disabled", bench_acquire_disabled },
	{ "wsprof_touch(p, n), WSPROF_DISABLE", "touch_disabled", bench_touch_disabled },
};
#define NLOOPS (sizeof loops / sizeof loops[0])

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Nanoseconds per iteration of one loop: the best of REPEATS runs. */
static double time_loop(const struct loop *l, const void *p, uint64_t n)
{
	double best = 0;
	for (int r = 0; r < REPEATS; r++) {
		double t0 = now_ns();
		l->run(p, n);
		double ns = (now_ns() - t0) / (double)n;
		if (r == 0 || ns < best)
			best = ns;
	}
	return best;
}

static void print_table(uint64_t n, double first_call_ns, const double *ns)
{
	printf("annotation_cost: wsprof absent, %llu iterations a loop, best of %d runs, goal %.0f ns a call\n\n",
	       (unsigned long long)n, REPEATS, GOAL_NS);
	printf("  %-36s %14s %16s %10s\n", "loop", "ns/iteration", "ns over empty", "<= 2 ns");
	for (size_t i = 0; i < NLOOPS; i++) {
		if (i == 0)
			printf("  %-36s %14.3f %16s %10s\n", loops[i].name, ns[i], "-", "-");
		else
			printf("  %-36s %14.3f %16.3f %10s\n", loops[i].name, ns[i], ns[i] - ns[0],
			       ns[i] <= GOAL_NS ? "yes" : "NO");
	}
	printf("\n  first call (finds wsprof absent through dlsym, once per source file): %.0f ns\n", first_call_ns);
}

static void print_json(uint64_t n, double first_call_ns, const double *ns)
{
	bool all = true;
	printf("{\"benchmark\":\"annotation_cost\",\"wsprof_present\":false,\"iterations\":%llu,\"repeats\":%d,"
	       "\"goal_ns\":%.1f,\"first_call_ns\":%.0f,\"loops\":[",
	       (unsigned long long)n, REPEATS, GOAL_NS, first_call_ns);
	for (size_t i = 0; i < NLOOPS; i++) {
		printf("%s{\"name\":\"%s\",\"ns_per_iteration\":%.4f", i ? "," : "", loops[i].key, ns[i]);
		if (i > 0) {
			printf(",\"ns_over_empty\":%.4f,\"meets_goal\":%s", ns[i] - ns[0], ns[i] <= GOAL_NS ? "true" : "false");
			all = all && ns[i] <= GOAL_NS;
		}
		printf("}");
	}
	printf("],\"all_meet_goal\":%s}\n", all ? "true" : "false");
}

int main(int argc, char **argv)
{
	bool json = false;
	uint64_t n = 200000000;
	for (int i = 1; i < argc; i++) {
		bool ok = true;
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
			const char *arg = argv[++i];
			char *end;
			n = strtoull(arg, &end, 10);
			ok = arg[0] >= '0' && arg[0] <= '9' && *end == '\0' && n > 0;
		} else {
			ok = false;
		}
		if (!ok) {
			fprintf(stderr, "usage: annotation_cost [--json] [--iterations N]\n");
			return 2;
		}
	}

	static char block[4096];
	now_ns(); /* the clock's own first call is not the header's cost */
	double t0 = now_ns();
	wsprof_acquire(block);
	double first_call_ns = now_ns() - t0;
	if (dlsym(RTLD_DEFAULT, WSPROF_ANNOTATION_ENTRY)) {
		fprintf(stderr, "annotation_cost: wsprof is loaded in this process; this benchmark measures the calls "
				"without it: run it directly, not under `wsprof record` or LD_PRELOAD\n");
		return 2;
	}

	double ns[NLOOPS];
	for (size_t i = 0; i < NLOOPS; i++)
		ns[i] = time_loop(&loops[i], block, n);
	if (json)
		print_json(n, first_call_ns, ns);
	else
		print_table(n, first_call_ns, ns);
	return 0;
}
