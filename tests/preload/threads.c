/*
 * threads.c - a malloc-heavy program on several threads, with deep stacks
 * (tests/progs/alloc_threads).
 *
 * Blocks are freed on another thread than the one that allocated them,
 * and the summary must still match the program's books exactly. The
 * stacks are read back with the trace reader (wsprof/trace.h): every
 * allocation made through the program's recursion must carry all of its
 * frames, each found in the program's own module.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <string.h>

#include "wsprof/trace.h"

TestSuite(threads, .fini = wt_cleanup, .timeout = 90);

static void check_counts(const char *const args[])
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_threads", args);
	wt_assert_status(&rec.run, 0, "wsprof record alloc_threads");
	cr_assert(rec.expect, "alloc_threads wrote no expect file");

	struct wt_json *mine = wt_summary(rec.trace, (const char *[]){ "alloc_threads", NULL });
	wt_assert_counted(mine, rec.expect, "alloc_threads");
	bool complete = false;
	cr_expect(wt_json_bool(mine, "complete", &complete) && complete, "the trace is complete");
	cr_expect_eq(wt_u64(mine, "threads"), wt_u64(rec.expect, "threads"),
		     "threads: the workers and the main thread");
	struct wt_json *all = wt_summary(rec.trace, NULL);
	wt_assert_within(mine, all);
	wt_json_free(all);
	wt_json_free(mine);
	wt_recording_free(&rec);
}

Test(threads, two_threads_freeing_each_others_blocks)
{
	check_counts(NULL);
}

Test(threads, four_threads)
{
	check_counts((const char *[]){ "4", "3", "1000", NULL });
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

Test(threads, allocations_carry_the_whole_recursion)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_threads", (const char *[]){ "2", "2", "500", NULL });
	wt_assert_status(&rec.run, 0, "wsprof record alloc_threads");
	cr_assert(rec.expect, "alloc_threads wrote no expect file");
	uint64_t lo = wt_u64(rec.expect, "descend_lo"), hi = wt_u64(rec.expect, "descend_hi");
	uint64_t want_depth = wt_u64(rec.expect, "descend_depth");
	uint64_t want_allocations = wt_u64(rec.expect, "descend_allocations");

	wsprof_trace *t;
	int err = wsprof_trace_open(rec.trace, &t);
	cr_assert_eq(err, 0, "cannot open %s: %s", rec.trace, wsprof_strerror(err));
	wsprof_event ev;
	uint64_t through_recursion = 0;
	while ((err = wsprof_trace_next(t, &ev)) > 0) {
		if (ev.type != WSPROF_EV_ALLOC)
			continue;
		uint64_t ips[256];
		size_t depth = wsprof_trace_stack(t, ev.stack, ips, 256);
		cr_assert_gt(depth, 0, "allocation #%llu has no stack", (unsigned long long)ev.seq);
		if (depth > 256)
			depth = 256;
		/* Return addresses point after the call: look up the call (ip - 1). */
		size_t in_recursion = 0;
		for (size_t i = 0; i < depth; i++) {
			uint64_t call = i ? ips[i] - 1 : ips[i];
			if (call < lo || call >= hi)
				continue;
			in_recursion++;
			const char *module = wsprof_trace_module_at(t, call, NULL);
			cr_assert(module && ends_with(module, "/alloc_threads"),
				  "frame %zu of allocation #%llu, in the recursion, is placed in %s", i,
				  (unsigned long long)ev.seq, module ? module : "no module");
		}
		if (!in_recursion)
			continue;
		through_recursion++;
		cr_assert_geq(depth, 12, "allocation #%llu has a stack of %zu frames", (unsigned long long)ev.seq,
			      depth);
		cr_assert_eq(in_recursion, want_depth,
			     "allocation #%llu has %zu frames of the recursion, not %llu: frames are missing",
			     (unsigned long long)ev.seq, in_recursion, (unsigned long long)want_depth);
		uint64_t innermost = ips[0];
		cr_assert(innermost >= lo && innermost < hi,
			  "the innermost frame of allocation #%llu is not where the recursion calls malloc",
			  (unsigned long long)ev.seq);
	}
	cr_assert_eq(err, 0, "reading %s failed: %s", rec.trace, wsprof_strerror(err));
	cr_expect_eq(through_recursion, want_allocations,
		     "%llu allocations were made through the recursion, %llu recorded with it",
		     (unsigned long long)want_allocations, (unsigned long long)through_recursion);
	wsprof_trace_close(t);
	wt_recording_free(&rec);
}
