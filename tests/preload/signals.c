/*
 * signals.c - a program that dies of a signal keeps its whole trace
 * (preload/signals.c), and never sees wsprof's handler.
 *
 * tests/progs/alloc_signal allocates, writes its books, and dies of
 * SIGSEGV, SIGABRT, SIGTERM or SIGPIPE. It is recorded with a flush
 * interval of a minute, so nothing would be on disk without the handler:
 * the trace must be complete (footer and all), count exactly what the
 * program counted, and `wsprof record` must exit as the program died
 * (128 + the signal). A program that handles SIGTERM itself must see its
 * own handler run, and SIG_DFL reported for what it never set.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>

TestSuite(signals, .fini = wt_cleanup, .timeout = 60);

static const char *const slow_flush[] = { "--flush-ms", "60000", NULL };

static void dies_with_its_trace(const char *mode, int sig)
{
	struct wt_recording rec;
	wt_record(&rec, slow_flush, "alloc_signal", (const char *[]){ mode, NULL });
	wt_assert_status(&rec.run, 128 + sig, mode);
	cr_assert(rec.expect, "alloc_signal wrote no books");
	struct wt_json *s = wt_summary(rec.trace, (const char *[]){ "alloc_signal", NULL });
	bool complete = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "%s: the trace is not complete", mode);
	wt_assert_counted(s, rec.expect, mode);
	wt_json_free(s);
	wt_recording_free(&rec);
}

Test(signals, a_segfault_keeps_the_whole_trace)
{
	dies_with_its_trace("segv", SIGSEGV);
}

Test(signals, abort_keeps_the_whole_trace)
{
	dies_with_its_trace("abort", SIGABRT);
}

Test(signals, sigterm_keeps_the_whole_trace)
{
	dies_with_its_trace("term", SIGTERM);
}

Test(signals, sigpipe_keeps_the_whole_trace)
{
	dies_with_its_trace("pipe", SIGPIPE);
}

Test(signals, the_program_sees_only_its_own_handlers)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_signal", (const char *[]){ "own", NULL });
	wt_assert_status(&rec.run, 0, "alloc_signal own");
	wt_recording_free(&rec);
}
