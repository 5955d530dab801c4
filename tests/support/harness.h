/*
 * harness.h - what the tests in tests/preload share: run a test program
 * (tests/progs) under `wsprof record`, read `wsprof report summary --json`,
 * and compare the summary with the books the program kept.
 *
 * Paths come from the environment meson sets for every test
 * (tests/meson.build): WSPROF, WSPROF_TEST_PROGS. Each recording gets a
 * private directory; wt_cleanup, a criterion .fini, removes them all when
 * the test ends, passed or failed (WSPROF_TEST_KEEP=1 keeps them).
 *
 * Failures are criterion assertions with messages that name the program
 * and the figure, so a failing test says what wsprof got wrong.
 */
#ifndef WT_HARNESS_H
#define WT_HARNESS_H

#include <stdint.h>

#include "json.h"
#include "run.h"

/* $WSPROF, the wsprof command. */
const char *wt_wsprof(void);
/* $WSPROF_TEST_PROGS/name, a test program or library; malloc'd. */
char *wt_prog(const char *name);

/* A private directory for this test, removed by wt_cleanup. */
const char *wt_test_dir(void);
void wt_cleanup(void);

struct wt_recording {
	const char *dir;        /* where the trace and expect files are */
	char *trace;            /* dir/t.wsp: the root process's trace */
	char *expect_path;      /* dir/expect.json, the program's first argument */
	struct wt_result run;   /* wsprof record's exit status and output */
	struct wt_json *expect; /* the program's books, NULL if it wrote none */
};

/* Run `wsprof record OPTS... -o DIR/t.wsp -- PROGS/prog DIR/expect.json ARGS...`
 * in a fresh directory and read the expect file if there is one. opts and
 * args are NULL-terminated lists, or NULL. The exit status is the test's to
 * check (wt_assert_status). */
void wt_record(struct wt_recording *r, const char *const opts[], const char *prog, const char *const args[]);
/* The same for a program given by its path, run with `env` (NAME=VALUE
 * strings, NULL-terminated, or NULL) added to the environment. */
void wt_record_with(struct wt_recording *r, const char *const env[], const char *const opts[], const char *prog_path,
		    const char *const args[]);
void wt_recording_free(struct wt_recording *r);

/* Assert that a command exited with `status`, showing its stderr if not. */
void wt_assert_status(const struct wt_result *r, int status, const char *what);

/* `wsprof report summary --json [--caller C]... TRACE`: asserts it exits 0
 * and prints one JSON object, and returns it (wt_json_free it). callers
 * is NULL-terminated, or NULL for no filter. */
struct wt_json *wt_summary(const char *trace, const char *const callers[]);

/* `wsprof ARGS...` (args NULL-terminated, without the program; a report
 * with --json among them): asserts it exits 0 and prints one JSON object,
 * and returns it (wt_json_free it). */
struct wt_json *wt_wsprof_json(const char *const args[]);

/* `wsprof attach --duration SECONDS -o TRACE PID`, asserting it exits 0.
 * @return false where this machine does not let a process ptrace another
 * (PID is killed then, and the test should skip). */
bool wt_attach(pid_t pid, const char *seconds, const char *trace);

/* A JSON document from a file, asserting that it parses. */
struct wt_json *wt_json_load(const char *path);

/* A counter that must be there. */
uint64_t wt_u64(const struct wt_json *j, const char *path);

/* The line of the file at path that holds `marker` (a test program's
 * SITE:... comments), asserting there is one. */
uint64_t wt_line_of(const char *path, const char *marker);

/* The summary counts exactly what the program counted: for every kind in
 * `books` ({"heap": {...}, "mmap": {...}}), every figure equals
 * summary.kinds.<kind>.<figure>; kinds the program never used have no
 * allocations and no failures. `who` names the program in messages. */
void wt_assert_counted(const struct wt_json *summary, const struct wt_json *books, const char *who);

/* Every figure of every kind of `narrow` (a --caller summary) is at most
 * the same figure in `wide` (the unfiltered summary of the same trace). */
void wt_assert_within(const struct wt_json *narrow, const struct wt_json *wide);

#endif
