/*
 * spawn.c - children started by vfork and posix_spawn
 * (tests/progs/alloc_spawn starting alloc_basic).
 *
 * A vfork child shares its parent's memory until it execs: nothing it
 * does may touch the parent's recorder, and the parent's books stay
 * exact. Following children (the default), each started alloc_basic writes
 * a complete trace of its own (t.wsp.PID) counting exactly its books, and
 * the vfork child that only calls _exit writes none; with --no-follow no
 * child is traced and each still runs to the same result.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

TestSuite(spawn, .fini = wt_cleanup, .timeout = 60);

static const char *const started[] = { "vfork", "spawn", "spawnp" };

static void record_spawn(struct wt_recording *rec, const char *const opts[], const char **dir)
{
	char *basic = wt_prog("alloc_basic");
	*dir = wt_test_dir();
	wt_record(rec, opts, "alloc_spawn", (const char *[]){ basic, *dir, NULL });
	wt_assert_status(&rec->run, 0, "wsprof record alloc_spawn");
	cr_assert(rec->expect, "alloc_spawn wrote no expect file");
	free(basic);

	struct wt_json *s = wt_summary(rec->trace, (const char *[]){ "alloc_spawn", NULL });
	wt_assert_counted(s, rec->expect, "alloc_spawn");
	bool complete = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "the parent's trace is complete");
	cr_expect_eq(wt_u64(s, "threads"), 1, "the parent runs on one thread");
	cr_expect_eq(wt_u64(s, "untracked_frees"), 0, "the parent frees only its own blocks");
	wt_json_free(s);
}

Test(spawn, each_started_program_gets_its_own_trace)
{
	struct wt_recording rec;
	const char *dir;
	record_spawn(&rec, NULL, &dir);
	for (size_t i = 0; i < sizeof started / sizeof *started; i++) {
		char pid_path[64];
		snprintf(pid_path, sizeof pid_path, "pids.%s", started[i]);
		unsigned long long pid = (unsigned long long)wt_u64(rec.expect, pid_path);
		char *trace = wt_path(rec.dir, "t.wsp.%llu", pid);
		char *books_path = wt_path(dir, "%s.json", started[i]);
		cr_assert(wt_file_exists(trace), "the program started by %s (pid %llu) wrote no trace %s", started[i],
			  pid, trace);
		struct wt_json *books = wt_json_load(books_path);
		struct wt_json *s = wt_summary(trace, (const char *[]){ "alloc_basic", NULL });
		wt_assert_counted(s, books, started[i]);
		bool complete = false;
		cr_expect(wt_json_bool(s, "complete", &complete) && complete, "%s's trace is complete", started[i]);
		cr_expect_eq(wt_u64(s, "process.pid"), pid, "%s's trace is of the pid it started", started[i]);
		wt_json_free(s);
		wt_json_free(books);
		free(books_path);
		free(trace);
	}
	char *exit_only = wt_path(rec.dir, "t.wsp.%llu", (unsigned long long)wt_u64(rec.expect, "pids.vfork_exit"));
	cr_expect(!wt_file_exists(exit_only), "a vfork child that only called _exit wrote %s", exit_only);
	free(exit_only);
	wt_recording_free(&rec);
}

Test(spawn, no_follow_leaves_every_child_untraced)
{
	struct wt_recording rec;
	const char *dir;
	record_spawn(&rec, (const char *[]){ "--no-follow", NULL }, &dir);
	for (size_t i = 0; i < sizeof started / sizeof *started; i++) {
		char pid_path[64];
		snprintf(pid_path, sizeof pid_path, "pids.%s", started[i]);
		char *trace = wt_path(rec.dir, "t.wsp.%llu", (unsigned long long)wt_u64(rec.expect, pid_path));
		char *books = wt_path(dir, "%s.json", started[i]);
		cr_expect(!wt_file_exists(trace), "--no-follow, yet the program started by %s wrote %s", started[i],
			  trace);
		cr_expect(wt_file_exists(books), "the program started by %s did not run to its end", started[i]);
		free(books);
		free(trace);
	}
	wt_recording_free(&rec);
}
