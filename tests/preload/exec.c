/*
 * exec.c - a traced program that execs another (tests/progs/alloc_exec
 * running alloc_basic).
 *
 * The first image's trace ends at the exec: complete, with "exec" naming
 * the new program and what was live at that moment counted as leaked. The
 * new image, same pid, writes its own trace (t.wsp.<pid>) and counts its
 * own books. With --no-follow, the new image is not traced at all. An exec
 * that fails ends nothing: the trace goes on, and does not claim an exec.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

TestSuite(exec, .fini = wt_cleanup, .timeout = 60);

/* Record alloc_exec running alloc_basic, which writes its books to
 * DIR/execd.json; *execd_expect gets that path. alloc_basic runs the
 * groups of calls heap.c finds counted right on their own, so that this
 * test is about exec, not about one entry point. */
static void record_exec(struct wt_recording *rec, const char *const opts[], char **execd_expect)
{
	char *basic = wt_prog("alloc_basic");
	const char *dir = wt_test_dir();
	*execd_expect = wt_path(dir, "execd.json");
	wt_record(rec, opts, "alloc_exec",
		  (const char *[]){ basic, *execd_expect, "plain", "realloc", "failures", "leaks", NULL });
	wt_assert_status(&rec->run, 0, "wsprof record alloc_exec (running alloc_basic)");
	cr_assert(rec->expect, "alloc_exec wrote no expect file");
	free(basic);
}

static void check_first_image(const struct wt_recording *rec)
{
	struct wt_json *first = wt_summary(rec->trace, (const char *[]){ "alloc_exec", NULL });
	wt_assert_counted(first, rec->expect, "alloc_exec");
	bool complete = false;
	cr_expect(wt_json_bool(first, "complete", &complete) && complete, "a trace ended by exec is complete");
	const char *exec = wt_json_str(first, "exec");
	const char *want = wt_json_str(rec->expect, "exec");
	cr_expect(exec && want && strcmp(exec, want) == 0, "the trace says it ended by exec of %s, not %s",
		  exec ? exec : "(nothing)", want);
	wt_json_free(first);
}

Test(exec, each_image_gets_its_own_trace)
{
	struct wt_recording rec;
	char *execd_expect;
	record_exec(&rec, NULL, &execd_expect);
	check_first_image(&rec);

	char *second_trace = wt_path(rec.dir, "t.wsp.%llu", (unsigned long long)wt_u64(rec.expect, "pid"));
	cr_assert(wt_file_exists(second_trace), "the exec'd program's trace %s was not written", second_trace);
	struct wt_json *books = wt_json_load(execd_expect);
	struct wt_json *second = wt_summary(second_trace, (const char *[]){ "alloc_basic", NULL });
	wt_assert_counted(second, books, "alloc_basic (exec'd)");
	cr_expect_eq(wt_u64(second, "process.pid"), wt_u64(rec.expect, "pid"), "exec keeps the pid");
	const char *exe = wt_json_str(second, "process.exe");
	cr_expect(exe && strstr(exe, "/alloc_basic"), "the second trace is alloc_basic's, not %s", exe ? exe : "?");
	bool complete = false;
	cr_expect(wt_json_bool(second, "complete", &complete) && complete, "the exec'd program's trace is complete");
	wt_json_free(second);
	wt_json_free(books);
	free(second_trace);
	free(execd_expect);
	wt_recording_free(&rec);
}

Test(exec, no_follow_leaves_the_new_image_untraced)
{
	struct wt_recording rec;
	char *execd_expect;
	record_exec(&rec, (const char *[]){ "--no-follow", NULL }, &execd_expect);
	check_first_image(&rec);
	cr_expect(wt_file_exists(execd_expect), "the exec'd program did not run");
	char *second_trace = wt_path(rec.dir, "t.wsp.%llu", (unsigned long long)wt_u64(rec.expect, "pid"));
	cr_expect(!wt_file_exists(second_trace), "--no-follow, yet the exec'd program wrote %s", second_trace);
	free(second_trace);
	free(execd_expect);
	wt_recording_free(&rec);
}

Test(exec, a_failed_exec_ends_nothing)
{
	const char *dir = wt_test_dir();
	char *missing = wt_path(dir, "no-such-program");
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_exec", (const char *[]){ missing, NULL });
	wt_assert_status(&rec.run, 0, "wsprof record alloc_exec (exec failing)");
	cr_assert(rec.expect, "alloc_exec wrote no expect file");
	cr_assert(wt_json_get(rec.expect, "exec_failed"), "the exec of %s did not fail", missing);

	struct wt_json *s = wt_summary(rec.trace, (const char *[]){ "alloc_exec", NULL });
	wt_assert_counted(s, rec.expect, "alloc_exec (after a failed exec)");
	bool complete = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "the trace is complete");
	const struct wt_json *exec = wt_json_get(s, "exec");
	cr_expect(exec && exec->type == WT_JSON_NULL, "the trace claims an exec of %s, which failed",
		  exec && exec->text ? exec->text : "?");
	wt_json_free(s);
	wt_recording_free(&rec);
	free(missing);
}
