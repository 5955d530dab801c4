/*
 * killed.c - a program killed with SIGKILL while recorded
 * (tests/progs/alloc_killed).
 *
 * No exit handler runs, so the process writes no footer: `wsprof record`
 * must exit with 128 + 9, like a shell, and finish the trace itself from
 * the process's buffers (src/rescue.h): complete, no warning, every
 * allocation, and an end that says SIGKILL. tests/preload/vanish.c kills
 * programs with most of their events still unwritten, and reads the trace
 * of one preloaded by hand, which nobody can finish.
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

Test(killed, sigkill_leaves_a_trace_wsprof_record_finishes)
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
	wt_assert_status(&report, 0, "wsprof report summary of the killed program's trace");
	cr_expect_eq(wt_count_lines(report.err), 0, "a warning about a trace wsprof record finished:\n%s", report.err);
	cr_expect(strstr(run.err, "killed by signal 9 (KILL) without finishing its trace"), "%s", run.err);
	struct wt_json *s = wt_summary(trace, (const char *[]){ "alloc_killed", NULL });
	bool complete = false, by_record = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "wsprof record did not finish the trace");
	cr_expect(wt_json_bool(s, "ended.finished_by_wsprof_record", &by_record) && by_record);
	const char *name = wt_json_str(s, "ended.signal_name");
	cr_expect(name && strcmp(name, "SIGKILL") == 0, "ended.signal_name: %s", name ? name : "(none)");
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
