/*
 * stack.c - what recording takes of the program's stack
 * (tests/progs/stack_probe).
 *
 * Each recorded allocation unwinds and encodes on the stack of the thread
 * that allocates, which may be a coroutine's or a fiber's, a few KiB
 * deep. The probe measures one allocation's use (the painted bytes it
 * changed) and allocates on a 16 KiB coroutine stack; the bound here is
 * the one doc/hacking.md states: 8 KiB at the default depth of 64 frames,
 * 10 KiB at the deepest, 256.
 */
#include "harness.h"

#include <criterion/criterion.h>

TestSuite(stack, .fini = wt_cleanup, .timeout = 60);

static void within(const char *const opts[], uint64_t bound)
{
	struct wt_recording rec;
	wt_record(&rec, opts, "stack_probe", NULL);
	wt_assert_status(&rec.run, 0, "wsprof record stack_probe");
	cr_assert(rec.expect, "stack_probe wrote no expect file");
	uint64_t used = wt_u64(rec.expect, "stack_bytes");
	cr_expect_leq(used, bound, "one recorded allocation took %llu bytes of the program's stack, more than %llu",
		      (unsigned long long)used, (unsigned long long)bound);
	struct wt_json *s = wt_summary(rec.trace, (const char *[]){ "stack_probe", NULL });
	wt_assert_counted(s, rec.expect, "stack_probe");
	wt_json_free(s);
	wt_recording_free(&rec);
}

Test(stack, a_recorded_allocation_takes_at_most_8_KiB_of_stack)
{
	within(NULL, 8192);
}

Test(stack, at_the_deepest_stacks_at_most_10_KiB)
{
	within((const char *[]){ "--stack-depth", "256", NULL }, 10240);
}
