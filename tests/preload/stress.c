/*
 * stress.c - threads allocating at random while others free their blocks,
 * short-lived threads coming and going, forks from the middle of it
 * (tests/progs/alloc_stress).
 *
 * Every count of the summary must equal the program's own: allocations,
 * frees, bytes, what is left, the threads that allocated. The peak
 * depends on how wsprof ordered the calls of different threads, which the
 * program cannot see; it must lie within the bounds the program kept
 * (tests/progs/shared_books.h). A fork while other threads are inside
 * wsprof must neither deadlock nor break either side: each child, traced
 * or not as configured, counts exactly its own books.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

TestSuite(stress, .fini = wt_cleanup, .timeout = 90);

static void check_parent(const struct wt_recording *rec)
{
	struct wt_json *s = wt_summary(rec->trace, (const char *[]){ "alloc_stress", NULL });
	wt_assert_counted(s, rec->expect, "alloc_stress");
	uint64_t peak = wt_u64(s, "kinds.heap.peak_bytes");
	uint64_t lo = wt_u64(rec->expect, "heap_peak.min"), hi = wt_u64(rec->expect, "heap_peak.max");
	cr_expect(lo <= peak && peak <= hi, "heap peak %llu, outside the program's bounds [%llu, %llu]",
		  (unsigned long long)peak, (unsigned long long)lo, (unsigned long long)hi);
	bool complete = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "the trace is complete");
	cr_expect_eq(wt_u64(s, "threads"), wt_u64(rec->expect, "threads"),
		     "threads: main, workers, spawner and every short-lived one");
	cr_expect_eq(wt_u64(s, "untracked_frees"), 0, "every block freed was seen allocated");
	const struct wt_json *children = wt_json_get(s, "children");
	cr_expect(children && children->count == wt_u64(rec->expect, "forks"),
		  "the summary lists %zu children, the program forked %llu times", children ? children->count : 0,
		  (unsigned long long)wt_u64(rec->expect, "forks"));
	wt_json_free(s);
}

static void run_stress(const char *threads, const char *ms, const char *forks, bool follow)
{
	struct wt_recording rec;
	const char *const no_follow[] = { "--no-follow", NULL };
	wt_record(&rec, follow ? NULL : no_follow, "alloc_stress", (const char *[]){ threads, ms, forks, NULL });
	wt_assert_status(&rec.run, 0, "wsprof record alloc_stress");
	cr_assert(rec.expect, "alloc_stress wrote no expect file");
	check_parent(&rec);

	uint64_t forked = wt_u64(rec.expect, "forks");
	for (uint64_t f = 1; f <= forked; f++) {
		char key[64];
		snprintf(key, sizeof key, "children.%llu.pid", (unsigned long long)f);
		unsigned long long pid = (unsigned long long)wt_u64(rec.expect, key);
		char *trace = wt_path(rec.dir, "t.wsp.%llu", pid);
		if (!follow) {
			cr_expect(!wt_file_exists(trace), "--no-follow, yet child %llu wrote %s", pid, trace);
			free(trace);
			continue;
		}
		cr_assert(wt_file_exists(trace), "child %llu wrote no trace %s", pid, trace);
		snprintf(key, sizeof key, "children.%llu.child", (unsigned long long)f);
		struct wt_json *s = wt_summary(trace, (const char *[]){ "alloc_stress", NULL });
		wt_assert_counted(s, wt_json_get(rec.expect, key), "a child of alloc_stress");
		bool complete = false;
		cr_expect(wt_json_bool(s, "complete", &complete) && complete, "child %llu's trace is complete", pid);
		cr_expect_eq(wt_u64(s, "threads"), 1, "a forked child has only the forking thread");
		wt_json_free(s);
		free(trace);
	}
	wt_recording_free(&rec);
}

Test(stress, two_threads)
{
	run_stress("2", "1500", "0", true);
}

Test(stress, eight_threads)
{
	run_stress("8", "1500", "0", true);
}

Test(stress, forks_while_four_threads_allocate)
{
	run_stress("4", "1500", "4", true);
}

Test(stress, forks_while_four_threads_allocate_no_follow)
{
	run_stress("4", "1000", "3", false);
}
