/*
 * hostile.c - a program that undoes its surroundings while recorded
 * (tests/progs/alloc_hostile).
 *
 * Closing every descriptor above stderr - a close() loop to the limit,
 * closefrom, close_range - leaves wsprof's own alone: the trace goes on to
 * its footer, nothing is said on stderr, and the program still gets 3
 * from its next open(). Removing LD_PRELOAD from its environment ends
 * nothing either; the program it then starts is not traced. A program
 * that changes directory and then forks has every trace land where the
 * output name pointed when recording began: a relative -o, the default
 * name, or a relative WSPROF_OUTPUT with the library preloaded by hand.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(hostile, .fini = wt_cleanup, .timeout = 60);

/* Every line wsprof record printed is one of its closing lines. */
static void expect_no_warning(const char *err)
{
	for (const char *line = err; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line))
		cr_expect(strncmp(line, "wsprof: trace of ", 17) == 0 || strncmp(line, "wsprof: see it with: ", 21) == 0,
			  "wsprof said more than where the trace is:\n%s", err);
}

static void check_trace(const char *trace, const struct wt_json *books, const char *who)
{
	struct wt_json *s = wt_summary(trace, (const char *[]){ "alloc_hostile", NULL });
	wt_assert_counted(s, books, who);
	bool complete = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "%s: trace %s is not complete", who, trace);
	wt_json_free(s);
}

static size_t count_files(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	for (struct dirent *de; d && (de = readdir(d));)
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static void closes_everything(const char *mode)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_hostile", (const char *[]){ mode, NULL });
	wt_assert_status(&rec.run, 0, "wsprof record alloc_hostile");
	cr_assert(rec.expect, "alloc_hostile %s wrote no expect file", mode);
	expect_no_warning(rec.run.err);
	check_trace(rec.trace, rec.expect, mode);
	cr_expect_eq(wt_u64(rec.expect, "first_fd"), 3, "%s: open() after closing everything gave %llu, not 3", mode,
		     (unsigned long long)wt_u64(rec.expect, "first_fd"));
	wt_recording_free(&rec);
}

Test(hostile, a_close_loop_over_every_descriptor)
{
	closes_everything("close-loop");
}

Test(hostile, closefrom)
{
	closes_everything("closefrom");
}

Test(hostile, close_range)
{
	closes_everything("close-range");
}

Test(hostile, unsetting_ld_preload)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_hostile", (const char *[]){ "unsetenv", NULL });
	wt_assert_status(&rec.run, 0, "wsprof record alloc_hostile unsetenv");
	cr_assert(rec.expect, "alloc_hostile unsetenv wrote no expect file");
	expect_no_warning(rec.run.err);
	check_trace(rec.trace, rec.expect, "unsetenv");
	/* t.wsp and expect.json: /bin/true, started without LD_PRELOAD, wrote none. */
	cr_expect_eq(count_files(rec.dir), 2, "a program started without LD_PRELOAD was traced");
	wt_recording_free(&rec);
}

/* Run alloc_hostile chdir from DIR/start into DIR/elsewhere with `pre`
 * (NULL-terminated) before the program; every trace must be in start. */
static void moves_away(const char *const pre[], const char *first_trace)
{
	const char *dir = wt_test_dir();
	char *start = wt_path(dir, "start"), *elsewhere = wt_path(dir, "elsewhere");
	char *expect = wt_path(dir, "expect.json"), *prog = wt_prog("alloc_hostile");
	cr_assert_eq(mkdir(start, 0755), 0);
	cr_assert_eq(mkdir(elsewhere, 0755), 0);
	const char *argv[32];
	size_t n = 0;
	argv[n++] = "/usr/bin/env";
	argv[n++] = "-C";
	argv[n++] = start;
	for (size_t i = 0; pre[i]; i++)
		argv[n++] = pre[i];
	argv[n++] = prog;
	argv[n++] = expect;
	argv[n++] = "chdir";
	argv[n++] = elsewhere;
	argv[n] = NULL;
	struct wt_result r;
	wt_run(&r, argv);
	wt_assert_status(&r, 0, "alloc_hostile chdir");
	struct wt_json *books = wt_json_load(expect);

	char *name = strstr(first_trace, "%llu") ? NULL : strdup(first_trace);
	if (!name && asprintf(&name, first_trace, (unsigned long long)wt_u64(books, "pid")) < 0)
		name = NULL;
	char *parent = wt_path(start, "%s", name);
	cr_expect_eq(count_files(elsewhere), 0, "a trace was written in the directory the program moved to");
	cr_assert(wt_file_exists(parent), "the program's trace %s is missing", parent);
	check_trace(parent, books, "alloc_hostile chdir");
	char *child = strstr(first_trace, "%llu")
		? wt_path(start, first_trace, (unsigned long long)wt_u64(books, "child_pid"))
		: wt_path(start, "%s.%llu", name, (unsigned long long)wt_u64(books, "child_pid"));
	cr_assert(wt_file_exists(child), "the child's trace %s is missing", child);
	check_trace(child, wt_json_get(books, "child"), "alloc_hostile's child after chdir");
	free(child);
	free(parent);
	free(name);
	wt_json_free(books);
	wt_result_free(&r);
	free(prog);
	free(expect);
	free(elsewhere);
	free(start);
}

Test(hostile, chdir_then_fork_with_a_relative_output)
{
	moves_away((const char *[]){ wt_wsprof(), "record", "-o", "t.wsp", "--", NULL }, "t.wsp");
}

Test(hostile, chdir_then_fork_with_the_default_name)
{
	moves_away((const char *[]){ wt_wsprof(), "record", "--", NULL }, "wsprof.alloc_hostile.%llu.wsp");
}

Test(hostile, chdir_then_fork_preloaded_by_hand_with_a_relative_output)
{
	char preload[4200];
	snprintf(preload, sizeof preload, "LD_PRELOAD=%s", getenv("WSPROF_PRELOAD"));
	moves_away((const char *[]){ preload, "WSPROF_OUTPUT=t.wsp", NULL }, "t.wsp");
}
