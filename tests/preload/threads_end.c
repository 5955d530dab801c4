/*
 * threads_end.c - a program whose last thread ends with pthread_exit
 * (tests/progs/alloc_pthread_exit) exits with status 0 under wsprof, as
 * without it, though wsprof's threads outlive the program's: and its
 * trace is complete, with every block the last thread made. Python's
 * os.fork() from a thread gives a child that ends so (CPython's
 * test_threading hung under wsprof on it).
 */
#include "harness.h"

#include <criterion/criterion.h>

TestSuite(threads_end, .fini = wt_cleanup, .timeout = 60);

Test(threads_end, the_last_thread_ending_with_pthread_exit_ends_the_process)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_pthread_exit", NULL);
	wt_assert_status(&rec.run, 0, "wsprof record alloc_pthread_exit");
	cr_assert(rec.expect, "alloc_pthread_exit wrote no expect file");
	struct wt_json *sum = wt_summary(rec.trace, NULL);
	bool complete = false;
	cr_expect(wt_json_bool(sum, "complete", &complete) && complete, "the trace is complete");
	cr_expect_geq(wt_u64(sum, "kinds.heap.allocations"), wt_u64(rec.expect, "blocks"),
		      "the last thread's blocks are in it");
	wt_json_free(sum);
	wt_recording_free(&rec);
}
