/*
 * locks.c - a hook never waits on a lock the program (or the library it
 * is inside) holds (tests/progs/alloc_locked).
 *
 * glibc's pthread_getattr_np reallocs holding the thread's lock, which
 * wsprof's first stack capture on a thread used to take again: a new
 * thread whose first allocation came from inside it hung for ever, as did
 * every Rust program. The program must run to its end under wsprof
 * record, its trace complete, its own allocations all counted.
 */
#include "harness.h"

#include <criterion/criterion.h>

TestSuite(locks, .fini = wt_cleanup, .timeout = 60);

Test(locks, a_first_allocation_inside_pthread_getattr_np_does_not_hang)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_locked", NULL);
	wt_assert_status(&rec.run, 0, "wsprof record alloc_locked");
	cr_assert(rec.expect, "alloc_locked wrote no expect file");
	struct wt_json *s = wt_summary(rec.trace, (const char *[]){ "alloc_locked", NULL });
	wt_assert_counted(s, rec.expect, "alloc_locked");
	bool complete = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "the trace is not complete");
	wt_json_free(s);
	wt_recording_free(&rec);
}
