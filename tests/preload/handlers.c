/*
 * handlers.c - signal handlers that allocate (tests/progs/alloc_handlers).
 *
 * A handler run by raise() allocates outside any allocator call: all of
 * it is recorded, and the books match exactly. A handler run by a timer
 * may land while the thread is inside wsprof's mmap hook; wsprof then lets
 * that whole call of the handler through unrecorded rather than deadlock
 * or corrupt the thread's buffer. So its calls are recorded whole or not
 * at all: the summary has m more allocations and frees of exactly
 * async_size bytes each, for some 0 < m <= the calls the program counted,
 * and nothing else moves - no stray frees, nothing leaked, the peak the
 * program predicts. The mmap calls the timer interrupts are all counted.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

TestSuite(handlers, .fini = wt_cleanup, .timeout = 60);

Test(handlers, allocations_in_signal_handlers_are_recorded_whole)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_handlers", (const char *[]){ "300", NULL });
	wt_assert_status(&rec.run, 0, "wsprof record alloc_handlers");
	cr_assert(rec.expect, "alloc_handlers wrote no expect file");
	struct wt_json *s = wt_summary(rec.trace, (const char *[]){ "alloc_handlers", NULL });
	bool complete = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "the trace is complete");
	cr_expect_eq(wt_u64(s, "threads"), wt_u64(rec.expect, "threads"), "alloc_handlers runs on one thread");
	cr_expect_eq(wt_u64(s, "untracked_frees"), 0, "a handler's free was recorded without its malloc");

	/* mmap: exact. heap: exact once the timer handler's m calls are out. */
	uint64_t calls = wt_u64(rec.expect, "async_calls"), size = wt_u64(rec.expect, "async_size");
	uint64_t m = wt_u64(s, "kinds.heap.allocations") - wt_u64(rec.expect, "heap.allocations");
	cr_expect(m > 0 && m <= calls, "%llu of the timer handler's %llu calls recorded", (unsigned long long)m,
		  (unsigned long long)calls);
	const struct wt_json *books = rec.expect;
	cr_expect_eq(wt_u64(s, "kinds.heap.frees"), wt_u64(books, "heap.frees") + m, "heap frees");
	cr_expect_eq(wt_u64(s, "kinds.heap.total_bytes"), wt_u64(books, "heap.total_bytes") + m * size,
		     "heap bytes");
	cr_expect_eq(wt_u64(s, "kinds.heap.failed"), 0);
	cr_expect_eq(wt_u64(s, "kinds.heap.leaked_bytes"), wt_u64(books, "heap.leaked_bytes"), "heap leaked");
	cr_expect_eq(wt_u64(s, "kinds.heap.leaked_blocks"), wt_u64(books, "heap.leaked_blocks"),
		     "heap leaked blocks");
	cr_expect_eq(wt_u64(s, "kinds.heap.peak_bytes"), wt_u64(books, "async_peak_bytes"), "heap peak");
	const struct wt_json *maps = wt_json_get(books, "mmap");
	cr_assert(maps, "alloc_handlers kept no mmap books");
	for (size_t i = 0; i < maps->count; i++) {
		char path[128];
		snprintf(path, sizeof path, "kinds.mmap.%s", maps->items[i].key);
		cr_expect_eq(wt_u64(s, path), wt_u64(maps, maps->items[i].key), "%s: the program counted %s", path,
			     maps->items[i].text);
	}
	wt_json_free(s);
	wt_recording_free(&rec);
}
