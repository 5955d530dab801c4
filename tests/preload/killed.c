/*
 * killed.c - a program killed with SIGKILL while recorded
 * (tests/progs/alloc_killed).
 *
 * No exit handler runs, so the trace has no footer. `wsprof record` must
 * exit with 128 + 9, like a shell, and the trace must still be readable:
 * a warning, "complete": false, exit status 0, and every allocation that
 * was flushed before the kill (all of them: the program waits several
 * flush intervals before it says it is ready).
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

TestSuite(killed, .fini = wt_cleanup, .timeout = 60);

/* Poll for a file for up to `seconds`. */
static bool wait_for(const char *path, int seconds)
{
	for (int i = 0; i < seconds * 100; i++) {
		if (wt_file_exists(path))
			return true;
		struct timespec tick = { 0, 10 * 1000 * 1000 };
		nanosleep(&tick, NULL);
	}
	return false;
}

Test(killed, sigkill_leaves_a_readable_truncated_trace)
{
	const char *dir = wt_test_dir();
	char *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json");
	char *prog = wt_prog("alloc_killed");
	struct wt_proc proc;
	int err = wt_spawn(&proc, (const char *[]){ wt_wsprof(), "record", "--flush-ms", "50", "-o", trace, "--",
						    prog, expect, "1000", NULL });
	cr_assert_eq(err, 0, "cannot start wsprof record: %s", strerror(-err));

	bool ready = wait_for(expect, 20);
	if (!ready)
		kill(proc.pid, SIGKILL);
	cr_assert(ready, "alloc_killed never said it was ready");
	struct wt_json *books = wt_json_load(expect);
	pid_t pid = (pid_t)wt_u64(books, "pid");
	cr_assert_eq(kill(pid, SIGKILL), 0, "cannot kill alloc_killed (pid %d)", (int)pid);
	struct wt_result run;
	cr_assert_eq(wt_wait(&proc, &run), 0, "lost wsprof record's output");
	wt_assert_status(&run, 128 + SIGKILL, "wsprof record of a program killed by SIGKILL");

	const char *argv[] = { wt_wsprof(), "report", "summary", "--json", "--caller", "alloc_killed", trace, NULL };
	struct wt_result report;
	wt_run(&report, argv);
	wt_assert_status(&report, 0, "wsprof report summary of a truncated trace");
	cr_expect(strstr(report.err, "truncated") != NULL, "no warning that the trace is truncated; stderr:\n%s",
		  report.err);
	cr_expect_eq(wt_count_lines(report.err), 1, "the warning is one line, not:\n%s", report.err);
	struct wt_json *s = wt_summary(trace, (const char *[]){ "alloc_killed", NULL });
	bool complete = true;
	cr_expect(wt_json_bool(s, "complete", &complete) && !complete, "a trace without a footer is not complete");
	wt_assert_counted(s, books, "alloc_killed");
	cr_expect_eq(wt_u64(s, "threads"), wt_u64(books, "threads"), "alloc_killed runs on one thread");

	wt_json_free(s);
	wt_result_free(&report);
	wt_result_free(&run);
	wt_json_free(books);
	free(prog);
	free(expect);
	free(trace);
}
