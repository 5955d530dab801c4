/*
 * vanish.c - nothing lost however a process ends (tests/progs/alloc_vanish).
 *
 * The program allocates on four threads and ends within one flush
 * interval, by SIGKILL or the raw exit_group system call: no exit handler
 * runs and most events are still in its buffers. Under wsprof record the
 * trace is finished from the buffers it shared with the launcher: complete,
 * every allocation and free counted, and the summary says how the process
 * ended and that wsprof record wrote the end. Run by hand with LD_PRELOAD,
 * the same trace is readable up to what was written and says it was cut.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

TestSuite(vanish, .fini = wt_cleanup, .timeout = 90);

static void expect_ended(const struct wt_json *s, const char *how, const char *figure, uint64_t value, bool by_record)
{
	const char *got = wt_json_str(s, "ended.how");
	cr_expect(got && strcmp(got, how) == 0, "ended.how is %s, not %s", got ? got : "(none)", how);
	if (figure)
		cr_expect_eq(wt_u64(s, figure), value, "%s", figure);
	bool finished = !by_record;
	cr_expect(wt_json_bool(s, "ended.finished_by_wsprof_record", &finished) && finished == by_record,
		  "finished_by_wsprof_record should be %d", by_record);
	bool complete = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "the trace is complete");
}

/* Record alloc_vanish HOW; its exit status must be `status`. */
static void vanish(const char *how, int status, const char *figure, uint64_t value, bool by_record)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_vanish", (const char *[]){ how, NULL });
	wt_assert_status(&rec.run, status, how);
	cr_assert(rec.expect, "alloc_vanish wrote no expect file");
	if (by_record)
		cr_expect(strstr(rec.run.err, "wsprof finished it from the process's buffers"),
			  "wsprof record does not say it finished the trace:\n%s", rec.run.err);
	struct wt_json *s = wt_summary(rec.trace, (const char *[]){ "alloc_vanish", NULL });
	wt_assert_counted(s, rec.expect, how);
	cr_expect_eq(wt_u64(s, "threads"), wt_u64(rec.expect, "threads"), "the four workers and the main thread");
	expect_ended(s, strcmp(how, "kill") == 0 ? "signal" : "exit", figure, value, by_record);
	wt_json_free(s);
	wt_recording_free(&rec);
}

Test(vanish, sigkill_loses_nothing)
{
	vanish("kill", 128 + SIGKILL, "ended.signal", SIGKILL, true);
}

Test(vanish, exit_group_loses_nothing)
{
	vanish("exit_group", 3, "ended.exit_status", 3, true);
}

Test(vanish, exit_is_finished_by_the_process)
{
	vanish("exit", 5, "ended.exit_status", 5, false);
}

Test(vanish, _exit_on_another_thread_is_finished_by_the_process)
{
	vanish("thread_exit", 6, "ended.exit_status", 6, false);
}

/* A forked child killed while its parent lives on: the launcher finishes
 * the child's trace when the child is gone (how is then not known). */
Test(vanish, a_killed_child_loses_nothing)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_vanish", (const char *[]){ "child_kill", NULL });
	wt_assert_status(&rec.run, 0, "alloc_vanish child_kill");
	cr_assert(rec.expect, "alloc_vanish's child wrote no expect file");
	char *child = wt_path(rec.dir, "t.wsp.%llu", (unsigned long long)wt_u64(rec.expect, "pid"));
	cr_assert(wt_file_exists(child), "no trace of the child: %s", child);
	struct wt_json *s = wt_summary(child, (const char *[]){ "alloc_vanish", NULL });
	wt_assert_counted(s, rec.expect, "the killed child");
	expect_ended(s, "unknown", NULL, 0, true);
	wt_json_free(s);
	free(child);
	wt_recording_free(&rec);
}

/* Killed at moments of the test's choosing while four threads allocate
 * and the writer writes: each trace is complete (the footer's counts are
 * what was read), and no event was given twice (a free given twice would
 * be a free of a block not live). */
Test(vanish, killed_at_any_moment_the_trace_is_whole)
{
	const char *dir = wt_test_dir();
	char *prog = wt_prog("alloc_vanish");
	for (int round = 0; round < 6; round++) {
		char *trace = wt_path(dir, "t%d.wsp", round), *expect = wt_path(dir, "e%d.json", round);
		struct wt_proc proc;
		cr_assert_eq(wt_spawn(&proc, (const char *[]){ wt_wsprof(), "record", "--flush-ms", "20", "-o", trace,
							      "--", prog, expect, "forever", NULL }), 0);
		struct timespec t = { 0, (40 + 37 * round) * 1000 * 1000L };
		nanosleep(&t, NULL);
		/* The program is wsprof record's child. */
		char cmd[256];
		snprintf(cmd, sizeof cmd, "pkill -KILL -P %d", (int)proc.pid);
		cr_assert_eq(system(cmd), 0, "cannot kill the program");
		struct wt_result run;
		cr_assert_eq(wt_wait(&proc, &run), 0);
		wt_assert_status(&run, 128 + SIGKILL, "alloc_vanish forever, killed");
		struct wt_json *s = wt_summary(trace, NULL);
		bool complete = false;
		cr_expect(wt_json_bool(s, "complete", &complete) && complete, "round %d: the trace is not complete", round);
		cr_expect_eq(wt_u64(s, "untracked_frees"), 0, "round %d: frees of blocks not live", round);
		cr_expect_gt(wt_u64(s, "kinds.heap.allocations"), 0, "round %d: nothing recorded", round);
		wt_json_free(s);
		wt_result_free(&run);
		free(trace);
		free(expect);
	}
	free(prog);
}

/* Preloaded by hand, _exit on another thread still ends with the whole
 * trace: the recorder's writer thread finishes it. */
/* alloc_vanish preloaded by hand (no wsprof record): WSPROF_OUTPUT=trace,
 * `env` (one NAME=VALUE or NULL) and the program's arguments after EXPECT
 * (NULL-terminated). */
static void run_preloaded(struct wt_result *r, const char *trace, const char *expect, const char *env,
			  const char *const args[])
{
	char preload[4200], output[4200];
	snprintf(preload, sizeof preload, "LD_PRELOAD=%s", getenv("WSPROF_PRELOAD"));
	snprintf(output, sizeof output, "WSPROF_OUTPUT=%s", trace);
	char *prog = wt_prog("alloc_vanish");
	const char *argv[16] = { "/usr/bin/env", preload, output };
	size_t n = 3;
	if (env)
		argv[n++] = env;
	argv[n++] = prog;
	argv[n++] = expect;
	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	wt_run(r, argv);
	free(prog);
}

Test(vanish, preloaded_by_hand_exit_on_a_thread_keeps_everything)
{
	const char *dir = wt_test_dir();
	char *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json");
	struct wt_result r;
	run_preloaded(&r, trace, expect, NULL, (const char *[]){ "thread_exit", NULL });
	wt_assert_status(&r, 6, "alloc_vanish thread_exit, preloaded by hand");
	struct wt_json *books = wt_json_load(expect);
	struct wt_json *s = wt_summary(trace, (const char *[]){ "alloc_vanish", NULL });
	wt_assert_counted(s, books, "alloc_vanish thread_exit");
	expect_ended(s, "exit", "ended.exit_status", 6, false);
	wt_json_free(s);
	wt_json_free(books);
	wt_result_free(&r);
	free(trace), free(expect);
}

/* Without wsprof record nobody can finish the trace: it is read up to its
 * last complete chunk and says so. */
Test(vanish, preloaded_by_hand_a_killed_trace_is_cut_but_readable)
{
	const char *dir = wt_test_dir();
	char *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json");
	struct wt_result r;
	run_preloaded(&r, trace, expect, "WSPROF_FLUSH_MS=10", (const char *[]){ "kill", "2", "2000", NULL });
	wt_assert_status(&r, 128 + SIGKILL, "alloc_vanish kill, preloaded by hand");
	struct wt_result report;
	wt_run(&report, (const char *[]){ wt_wsprof(), "report", "summary", "--json", trace, NULL });
	wt_assert_status(&report, 0, "wsprof report summary of a cut trace");
	cr_expect(strstr(report.err, "truncated"), "no word that the trace is cut:\n%s", report.err);
	struct wt_json *s = wt_summary(trace, NULL);
	const char *how = wt_json_str(s, "ended.how");
	cr_expect(how && strcmp(how, "cut") == 0, "ended.how is %s, not cut", how ? how : "(none)");
	wt_json_free(s);
	wt_result_free(&report);
	wt_result_free(&r);
	free(trace), free(expect);
}
