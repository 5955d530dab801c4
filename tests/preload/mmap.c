/*
 * mmap.c - the program's own mappings, kind `mmap` (tests/progs/alloc_mmap).
 *
 * Whole and partial munmap, mremap, MAP_FIXED over a mapping and a failed
 * mmap must add up exactly as the program counted them; and a mapping cut
 * in two by a hole, then unmapped with one call, is still one mapping made
 * and one released. Address space reserved and not committed is reported
 * apart (mmap_reserved), and what is committed inside it is mmap.
 */
#include "harness.h"

#include <criterion/criterion.h>

TestSuite(mmap, .fini = wt_cleanup, .timeout = 60);

static void check(const char *const args[])
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_mmap", args);
	wt_assert_status(&rec.run, 0, "wsprof record alloc_mmap");
	cr_assert(rec.expect, "alloc_mmap wrote no expect file");

	struct wt_json *mine = wt_summary(rec.trace, (const char *[]){ "alloc_mmap", NULL });
	wt_assert_counted(mine, rec.expect, "alloc_mmap");
	cr_expect_eq(wt_u64(mine, "threads"), wt_u64(rec.expect, "threads"), "alloc_mmap runs on one thread");
	struct wt_json *all = wt_summary(rec.trace, NULL);
	wt_assert_within(mine, all);
	wt_json_free(all);
	wt_json_free(mine);
	wt_recording_free(&rec);
}

Test(mmap, map_trim_remap_map_over_fail_and_leak)
{
	check(NULL);
}

Test(mmap, a_mapping_with_a_hole_is_still_one_mapping)
{
	check((const char *[]){ "hole", NULL });
}

Test(mmap, reserved_address_space_is_not_memory_until_committed)
{
	check((const char *[]){ "reserve", NULL });
}
