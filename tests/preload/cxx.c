/*
 * cxx.c - C++ new/delete, reached through libstdc++ (tests/progs/alloc_cxx).
 *
 * operator new calls malloc from inside libstdc++; `--caller alloc_cxx`
 * looks through libstdc++ to the program's own frame, so the summary must
 * count exactly the program's new, new[], aligned new, vector growth and
 * string, and none of libstdc++'s own start-up allocations.
 */
#include "harness.h"

#include <criterion/criterion.h>

TestSuite(cxx, .fini = wt_cleanup, .timeout = 60);

Test(cxx, new_and_delete_count_for_the_program)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_cxx", NULL);
	wt_assert_status(&rec.run, 0, "wsprof record alloc_cxx");
	cr_assert(rec.expect, "alloc_cxx wrote no expect file");

	struct wt_json *mine = wt_summary(rec.trace, (const char *[]){ "alloc_cxx", NULL });
	wt_assert_counted(mine, rec.expect, "alloc_cxx");
	cr_expect_eq(wt_u64(mine, "threads"), wt_u64(rec.expect, "threads"), "alloc_cxx runs on one thread");

	/* Unfiltered, libstdc++'s own allocations come on top. */
	struct wt_json *all = wt_summary(rec.trace, NULL);
	wt_assert_within(mine, all);
	wt_json_free(all);
	wt_json_free(mine);
	wt_recording_free(&rec);
}
