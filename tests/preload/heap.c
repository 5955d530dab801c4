/*
 * heap.c - the malloc family under `wsprof record` (tests/progs/alloc_basic).
 *
 * The summary, counting only alloc_basic's own calls (--caller), must
 * equal the program's books figure for figure: allocations, frees,
 * failures, peak, leaks, bytes requested. One test per group of calls
 * says which entry point is miscounted; one runs them all together.
 */
#include "harness.h"

#include <criterion/criterion.h>

TestSuite(heap, .fini = wt_cleanup, .timeout = 60);

/* Record alloc_basic with the given groups (NULL: all) and compare. */
static void check_groups(const char *const groups[])
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_basic", groups);
	wt_assert_status(&rec.run, 0, "wsprof record alloc_basic");
	cr_assert(rec.expect, "alloc_basic wrote no expect file");

	struct wt_json *mine = wt_summary(rec.trace, (const char *[]){ "alloc_basic", NULL });
	wt_assert_counted(mine, rec.expect, "alloc_basic");
	bool complete = false;
	cr_expect(wt_json_bool(mine, "complete", &complete) && complete, "the trace of a program that exited is complete");
	cr_expect_eq(wt_u64(mine, "threads"), wt_u64(rec.expect, "threads"), "alloc_basic runs on one thread");

	struct wt_json *all = wt_summary(rec.trace, NULL);
	wt_assert_within(mine, all);
	uint64_t untracked = wt_u64(all, "untracked_frees");
	cr_expect_eq(untracked, 0, "%llu frees matched no allocation, yet all were made while tracing",
		     (unsigned long long)untracked);

	wt_json_free(all);
	wt_json_free(mine);
	wt_recording_free(&rec);
}

Test(heap, malloc_calloc_free)
{
	check_groups((const char *[]){ "plain", NULL });
}

Test(heap, realloc_counts_a_free_and_an_allocation)
{
	check_groups((const char *[]){ "realloc", NULL });
}

Test(heap, reallocarray_counts_like_realloc)
{
	check_groups((const char *[]){ "reallocarray", NULL });
}

Test(heap, reallocarray_to_zero_elements_is_a_free)
{
	check_groups((const char *[]){ "reallocarray_zero", NULL });
}

Test(heap, aligned_variants_count_the_requested_size)
{
	check_groups((const char *[]){ "aligned", NULL });
}

Test(heap, failed_calls_count_as_failed_and_keep_the_old_block)
{
	check_groups((const char *[]){ "failures", NULL });
}

Test(heap, blocks_never_freed_are_leaked)
{
	check_groups((const char *[]){ "leaks", NULL });
}

Test(heap, everything_together)
{
	check_groups(NULL);
}
