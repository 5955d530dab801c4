/*
 * signals.c - a program that dies of a signal keeps its whole trace
 * (preload/life/signals.c), and never sees wsprof's handler.
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
#include <stdio.h>
#include <stdlib.h>
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

/* A file size limit (RLIMIT_FSIZE) the trace runs into stops recording,
 * with one warning, and never the program: the kernel would end a program
 * with SIGXFSZ for a write past the limit, a file it never wrote itself. */
Test(signals, a_file_size_limit_stops_recording_not_the_program)
{
	const char *dir = wt_test_dir();
	char *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json"), *prog = wt_prog("alloc_signal");
	char script[4096];
	/* 2 blocks of 512 bytes in dash: the header fits, the first chunk not. */
	snprintf(script, sizeof script, "ulimit -f 2 && exec \"$0\" record -o \"$1\" -- \"$2\" \"$3\" own");
	const char *argv[] = { "/bin/sh", "-c", script, wt_wsprof(), trace, prog, expect, NULL };
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0);
	wt_assert_status(&r, 0, "alloc_signal own under a file size limit");
	cr_expect(wt_file_exists(expect), "the program did not finish its work");
	cr_expect(strstr(r.err, "File too large; recording stopped, the program goes on"), "%s", r.err);
	const char *report[] = { wt_wsprof(), "report", "summary", trace, NULL };
	struct wt_result s;
	cr_assert_eq(wt_run(&s, report), 0);
	wt_assert_status(&s, 0, "wsprof report summary of the cut trace");
	cr_expect(strstr(s.err, "truncated"), "no word that the trace is cut short:\n%s", s.err);
	wt_result_free(&s);
	wt_result_free(&r);
	free(trace), free(expect), free(prog);
}
