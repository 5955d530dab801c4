/*
 * annotation_cost_disabled.c - annotation_cost's loops with WSPROF_DISABLE
 * defined, so that include/wsprof.h compiles the calls away: what is left
 * should time like the empty loop. A translation unit of its own because
 * the macro decides how the whole file sees the header.
 */
#define WSPROF_DISABLE 1
#include "wsprof.h"

#include "annotation_cost.h"

__attribute__((noinline)) void bench_acquire_disabled(const void *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		wsprof_acquire(p);
		BENCH_BARRIER(p);
	}
}

__attribute__((noinline)) void bench_touch_disabled(const void *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		wsprof_touch(p, 4096);
		BENCH_BARRIER(p);
	}
}
