/*
 * follow.c - `wsprof record --follow PATTERN` (WSPROF_FOLLOW_PATTERN):
 * only processes whose program matches write a trace.
 *
 * A shell script runs two test programs; with --follow naming one, only
 * that one is traced, with its books exact, and the shell (the root) has
 * no trace, which wsprof record says in its last lines. The programs of a
 * process that does not match are still followed (a shell under a shell),
 * a forked child of a matching program is traced as ever, patterns may
 * name a path and may be given twice, and a pattern matching nothing
 * leaves no file and one line. A process that does not match costs
 * nothing a program could see: fd_probe finds the same descriptors and
 * one thread, as in a plain run.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(follow, .fini = wt_cleanup, .timeout = 60);

/* Runs `sh -c '"$1" "$2"; "$3" "$4"'` with alloc_basic and alloc_mmap: a
 * script running two programs, each with its expect file in dir. */
static const char two_programs[] = "\"$1\" \"$2\" && \"$3\" \"$4\"";
/* The same, the second program run by a shell the first shell runs. */
static const char nested[] = "\"$1\" \"$2\" && /bin/sh -c '\"$1\" \"$2\"' sh \"$3\" \"$4\"";

/* wsprof record OPTS -o DIR/t.wsp -- /bin/sh -c SCRIPT sh alloc_basic
 * DIR/basic.json alloc_mmap DIR/mmap.json, with `env` (NAME=VALUE) set. */
static struct wt_result record_script(const char *dir, const char *const env[], const char *const opts[],
				      const char *script)
{
	char *out = wt_path(dir, "t.wsp"), *basic = wt_prog("alloc_basic"), *mmap = wt_prog("alloc_mmap");
	char *basic_json = wt_path(dir, "basic.json"), *mmap_json = wt_path(dir, "mmap.json");
	const char *argv[48];
	size_t n = 0;
	argv[n++] = "/usr/bin/env";
	for (size_t i = 0; env && env[i]; i++)
		argv[n++] = env[i];
	argv[n++] = wt_wsprof();
	argv[n++] = "record";
	for (size_t i = 0; opts && opts[i]; i++)
		argv[n++] = opts[i];
	const char *rest[] = { "-o", out, "--", "/bin/sh", "-c", script, "sh", basic, basic_json, mmap, mmap_json, NULL };
	for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
		argv[n++] = rest[i];
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0);
	cr_expect(wt_file_exists(basic_json) && wt_file_exists(mmap_json), "a program of the script did not run:\n%s",
		  r.err);
	free(mmap_json);
	free(basic_json);
	free(mmap);
	free(basic);
	free(out);
	return r;
}

/* The traces in dir (t.wsp and t.wsp.*): how many, and the one path if
 * there is exactly one (malloc'd). */
static size_t traces_in(const char *dir, char **only)
{
	DIR *d = opendir(dir);
	cr_assert(d, "cannot list %s", dir);
	size_t n = 0;
	*only = NULL;
	for (struct dirent *de; (de = readdir(d));) {
		if (strncmp(de->d_name, "t.wsp", 5) != 0 || strstr(de->d_name, ".symbols"))
			continue;
		if (n++ == 0)
			*only = wt_path(dir, "%s", de->d_name);
	}
	closedir(d);
	if (n != 1) {
		free(*only);
		*only = NULL;
	}
	return n;
}

/* The one trace in dir is `prog`'s, counting exactly its books (dir/json). */
static void expect_only_trace_of(const char *dir, const char *prog, const char *json, const struct wt_result *r)
{
	char *trace;
	size_t n = traces_in(dir, &trace);
	cr_assert_eq(n, 1, "%zu traces in %s, not one of %s; wsprof said:\n%s", n, dir, prog, r->err);
	struct wt_json *s = wt_summary(trace, NULL);
	const char *exe = wt_json_str(s, "process.exe");
	const char *base = exe ? strrchr(exe, '/') : NULL;
	cr_expect(base && strcmp(base + 1, prog) == 0, "the trace is of %s, not %s", exe ? exe : "nothing", prog);
	char *books_path = wt_path(dir, "%s", json);
	struct wt_json *books = wt_json_load(books_path);
	wt_assert_counted(s, books, prog);
	bool complete = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "%s's trace is not complete", prog);
	wt_json_free(books);
	wt_json_free(s);
	free(books_path);
	free(trace);
}

Test(follow, only_the_matching_program_of_a_script_is_traced)
{
	const char *dir = wt_test_dir();
	struct wt_result r = record_script(dir, NULL, (const char *[]){ "--follow", "alloc_basic", NULL }, two_programs);
	wt_assert_status(&r, 0, "wsprof record --follow alloc_basic -- sh -c SCRIPT");
	expect_only_trace_of(dir, "alloc_basic", "basic.json", &r);
	cr_expect(strstr(r.err, "did not match --follow alloc_basic, so it has no trace; 1 process did\n"),
		  "wsprof record does not say that the script has no trace:\n%s", r.err);
	cr_expect(!strstr(r.err, "trace of the program"), "a trace of the program is named:\n%s", r.err);
	wt_result_free(&r);
}

Test(follow, programs_of_a_process_that_does_not_match_are_followed)
{
	const char *dir = wt_test_dir();
	struct wt_result r = record_script(dir, NULL, (const char *[]){ "--follow", "alloc_mmap", NULL }, nested);
	wt_assert_status(&r, 0, "wsprof record --follow alloc_mmap -- sh -c 'sh -c alloc_mmap'");
	expect_only_trace_of(dir, "alloc_mmap", "mmap.json", &r);
	wt_result_free(&r);
}

Test(follow, patterns_may_name_a_path_and_be_given_twice)
{
	const char *dir = wt_test_dir();
	char pattern[4200];
	snprintf(pattern, sizeof pattern, "*/progs/alloc_m?ap");
	struct wt_result r = record_script(
		dir, NULL, (const char *[]){ "--follow", "no-such-program", "--follow", pattern, NULL }, two_programs);
	wt_assert_status(&r, 0, "wsprof record --follow no-such-program --follow '*/progs/alloc_m?ap'");
	expect_only_trace_of(dir, "alloc_mmap", "mmap.json", &r);
	wt_result_free(&r);
}

Test(follow, the_environment_variable_alone_chooses_without_wsprof_record)
{
	const char *dir = wt_test_dir();
	char *out = wt_path(dir, "t.wsp"), *basic = wt_prog("alloc_basic"), *mmap = wt_prog("alloc_mmap");
	char *basic_json = wt_path(dir, "basic.json"), *mmap_json = wt_path(dir, "mmap.json");
	char preload[4200], output[4200];
	snprintf(preload, sizeof preload, "LD_PRELOAD=%s", getenv("WSPROF_PRELOAD"));
	snprintf(output, sizeof output, "WSPROF_OUTPUT=%s", out);
	struct wt_result r;
	wt_run(&r, (const char *[]){ "/usr/bin/env", preload, output, "WSPROF_FOLLOW_PATTERN=sh*:alloc_b*", "/bin/sh",
				     "-c", two_programs, "sh", basic, basic_json, mmap, mmap_json, NULL });
	wt_assert_status(&r, 0, "WSPROF_FOLLOW_PATTERN=sh*:alloc_b* sh -c SCRIPT");
	/* sh (its path's name, though the executable is dash) and alloc_basic */
	char *only;
	cr_expect_eq(traces_in(dir, &only), 2, "not two traces (sh's and alloc_basic's) in %s", dir);
	char *sh_trace = wt_path(dir, "t.wsp");
	struct wt_json *s = wt_summary(sh_trace, NULL);
	const char *cmdline = wt_json_str(s, "process.cmdline");
	cr_expect(cmdline && strncmp(cmdline, "/bin/sh", 7) == 0, "t.wsp is not the shell's: %s", cmdline);
	wt_json_free(s);
	free(sh_trace);
	free(only);
	wt_result_free(&r);
	free(mmap_json);
	free(basic_json);
	free(mmap);
	free(basic);
	free(out);
}

Test(follow, a_pattern_matching_nothing_writes_nothing_and_says_so_once)
{
	const char *dir = wt_test_dir();
	struct wt_result r =
		record_script(dir, NULL, (const char *[]){ "--follow", "no-such-program", NULL }, two_programs);
	wt_assert_status(&r, 0, "wsprof record --follow no-such-program");
	char *only;
	cr_expect_eq(traces_in(dir, &only), 0, "a trace was written");
	free(only);
	cr_expect_str_eq(r.err, "wsprof: no process's program matched --follow no-such-program, so no trace was written\n",
			 "not one line saying so");
	wt_result_free(&r);
}

Test(follow, a_forked_child_of_a_matching_program_is_traced)
{
	struct wt_recording rec;
	wt_record(&rec, (const char *[]){ "--follow", "alloc_fork", NULL }, "alloc_fork", NULL);
	wt_assert_status(&rec.run, 0, "wsprof record --follow alloc_fork -- alloc_fork");
	cr_assert(rec.expect, "alloc_fork wrote no books");
	char *child = wt_path(rec.dir, "t.wsp.%llu", (unsigned long long)wt_u64(rec.expect, "child_pid"));
	cr_expect(wt_file_exists(rec.trace) && wt_file_exists(child), "not both the parent's and the child's trace");
	cr_expect(strstr(rec.run.err, "trace of the program"), "the root's trace is not named:\n%s", rec.run.err);
	free(child);
	wt_recording_free(&rec);
}

Test(follow, a_process_that_does_not_match_opens_nothing_and_starts_no_thread)
{
	const char *dir = wt_test_dir();
	char *plain_json = wt_path(dir, "plain.json"), *prog = wt_prog("fd_probe");
	struct wt_result plain;
	wt_run(&plain, (const char *[]){ prog, plain_json, NULL });
	wt_assert_status(&plain, 0, "fd_probe on its own");
	struct wt_recording rec;
	wt_record(&rec, (const char *[]){ "--follow", "no-such-program", NULL }, "fd_probe", NULL);
	wt_assert_status(&rec.run, 0, "wsprof record --follow no-such-program -- fd_probe");
	cr_assert(rec.expect, "fd_probe wrote nothing");
	struct wt_json *want = wt_json_load(plain_json);
	static const char *const figures[] = { "first_fd", "low_fds", "fds", "threads" };
	for (size_t i = 0; i < sizeof figures / sizeof *figures; i++)
		cr_expect_eq(wt_u64(rec.expect, figures[i]), wt_u64(want, figures[i]),
			     "%s: %llu in a process wsprof does not record, %llu in a plain run", figures[i],
			     (unsigned long long)wt_u64(rec.expect, figures[i]), (unsigned long long)wt_u64(want, figures[i]));
	cr_expect_eq(wt_u64(rec.expect, "threads"), 1, "fd_probe runs on one thread");
	cr_expect(!wt_file_exists(rec.trace), "a trace was written");
	wt_json_free(want);
	wt_recording_free(&rec);
	wt_result_free(&plain);
	free(prog);
	free(plain_json);
}
