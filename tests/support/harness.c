/*
 * harness.c - recording test programs and comparing summaries (harness.h).
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIRS 16

static char *dirs[MAX_DIRS];
static size_t ndirs;

static const char *env_path(const char *name)
{
	const char *v = getenv(name);
	cr_assert(v && *v, "%s is not set: run the tests with `meson test`", name);
	return v;
}

const char *wt_wsprof(void)
{
	return env_path("WSPROF");
}

char *wt_prog(const char *name)
{
	return wt_path(env_path("WSPROF_TEST_PROGS"), "%s", name);
}

const char *wt_test_dir(void)
{
	cr_assert(ndirs < MAX_DIRS, "too many directories for one test");
	char *dir = wt_tmpdir();
	cr_assert(dir, "cannot make a temporary directory");
	return dirs[ndirs++] = dir;
}

void wt_cleanup(void)
{
	while (ndirs)
		wt_tmpdir_remove(dirs[--ndirs]);
}

static size_t count(const char *const list[])
{
	size_t n = 0;
	while (list && list[n])
		n++;
	return n;
}

void wt_record_with(struct wt_recording *r, const char *const env[], const char *const opts[], const char *prog_path,
		    const char *const args[])
{
	memset(r, 0, sizeof *r);
	r->dir = wt_test_dir();
	r->trace = wt_path(r->dir, "t.wsp");
	r->expect_path = wt_path(r->dir, "expect.json");

	size_t nenv = count(env), nopts = count(opts), nargs = count(args), n = 0;
	const char **argv = calloc(nenv + nopts + nargs + 10, sizeof *argv);
	if (nenv)
		argv[n++] = "/usr/bin/env";
	for (size_t i = 0; i < nenv; i++)
		argv[n++] = env[i];
	argv[n++] = wt_wsprof();
	argv[n++] = "record";
	for (size_t i = 0; i < nopts; i++)
		argv[n++] = opts[i];
	argv[n++] = "-o";
	argv[n++] = r->trace;
	argv[n++] = "--";
	argv[n++] = prog_path;
	argv[n++] = r->expect_path;
	for (size_t i = 0; i < nargs; i++)
		argv[n++] = args[i];
	int err = wt_run(&r->run, argv);
	cr_assert(err == 0, "cannot run %s record: %s", wt_wsprof(), strerror(-err));
	free(argv);

	char *text = wt_read_file(r->expect_path, NULL);
	if (text) {
		char why[256];
		r->expect = wt_json_parse(text, why, sizeof why);
		cr_assert(r->expect, "%s wrote an expect file that is not JSON (%s):\n%s", prog_path, why, text);
		free(text);
	}
}

void wt_record(struct wt_recording *r, const char *const opts[], const char *prog, const char *const args[])
{
	char *prog_path = wt_prog(prog);
	wt_record_with(r, NULL, opts, prog_path, args);
	free(prog_path);
}

void wt_recording_free(struct wt_recording *r)
{
	free(r->trace);
	free(r->expect_path);
	wt_result_free(&r->run);
	wt_json_free(r->expect);
	memset(r, 0, sizeof *r);
}

void wt_assert_status(const struct wt_result *r, int status, const char *what)
{
	cr_assert_eq(r->status, status, "%s exited with status %d, not %d; its stderr:\n%s", what, r->status,
		     status, r->err ? r->err : "");
}

/* argv (wsprof first) run to its end: exit 0 and one JSON object. */
static struct wt_json *run_json(const char *const argv[], const char *what)
{
	struct wt_result r;
	wt_run(&r, argv);
	wt_assert_status(&r, 0, what);
	char why[256];
	struct wt_json *j = wt_json_parse(r.out, why, sizeof why);
	cr_assert(j && j->type == WT_JSON_OBJECT, "%s printed no JSON object (%s):\n%s", what,
		  j ? "not an object" : why, r.out);
	wt_result_free(&r);
	return j;
}

struct wt_json *wt_wsprof_json(const char *const args[])
{
	size_t n = count(args);
	const char **argv = calloc(n + 2, sizeof *argv);
	argv[0] = wt_wsprof();
	memcpy(argv + 1, args, n * sizeof *args);
	char what[128];
	snprintf(what, sizeof what, "wsprof %s %s", n ? args[0] : "", n > 1 ? args[1] : "");
	struct wt_json *j = run_json(argv, what);
	free(argv);
	return j;
}

bool wt_attach(pid_t pid, const char *seconds, const char *trace)
{
	char spid[16];
	snprintf(spid, sizeof spid, "%d", (int)pid);
	struct wt_result r;
	wt_run(&r, (const char *[]){ wt_wsprof(), "attach", "--duration", seconds, "-o", trace, spid, NULL });
	bool no_ptrace = r.status == 1 && strstr(r.err, "cannot ptrace");
	if (!no_ptrace)
		wt_assert_status(&r, 0, "wsprof attach");
	wt_result_free(&r);
	if (no_ptrace)
		kill(pid, SIGKILL);
	return !no_ptrace;
}

struct wt_json *wt_summary(const char *trace, const char *const callers[])
{
	size_t ncallers = count(callers), n = 0;
	const char **argv = calloc(2 * ncallers + 8, sizeof *argv);
	argv[n++] = wt_wsprof();
	argv[n++] = "report";
	argv[n++] = "summary";
	argv[n++] = "--json";
	for (size_t i = 0; i < ncallers; i++) {
		argv[n++] = "--caller";
		argv[n++] = callers[i];
	}
	argv[n++] = trace;
	struct wt_json *j = run_json(argv, "wsprof report summary --json");
	free(argv);
	return j;
}

struct wt_json *wt_json_load(const char *path)
{
	char *text = wt_read_file(path, NULL);
	cr_assert(text, "cannot read %s", path);
	char why[256];
	struct wt_json *j = wt_json_parse(text, why, sizeof why);
	cr_assert(j, "%s is not JSON (%s):\n%s", path, why, text);
	free(text);
	return j;
}

uint64_t wt_u64(const struct wt_json *j, const char *path)
{
	uint64_t v;
	cr_assert(wt_json_u64(j, path, &v), "no whole number at %s", path);
	return v;
}

uint64_t wt_line_of(const char *path, const char *marker)
{
	char *text = wt_read_file(path, NULL);
	cr_assert(text, "cannot read %s", path);
	const char *at = strstr(text, marker);
	cr_assert(at, "%s has no %s", path, marker);
	uint64_t line = 1;
	for (const char *p = text; p < at; p++)
		line += *p == '\n';
	free(text);
	return line;
}

static const char *const kinds[] = { "heap", "mmap" };
static const char *const nonzero_if_used[] = { "allocations", "failed" };

void wt_assert_counted(const struct wt_json *summary, const struct wt_json *books, const char *who)
{
	for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
		const struct wt_json *mine = wt_json_get(books, kinds[k]);
		char path[256];
		if (!mine) {
			for (size_t f = 0; f < sizeof nonzero_if_used / sizeof *nonzero_if_used; f++) {
				snprintf(path, sizeof path, "kinds.%s.%s", kinds[k], nonzero_if_used[f]);
				uint64_t got = 0;
				wt_json_u64(summary, path, &got);
				cr_expect_eq(got, 0, "%s uses no %s memory, yet wsprof counted %s = %llu", who, kinds[k],
					     path, (unsigned long long)got);
			}
			continue;
		}
		cr_assert(wt_json_get(summary, "kinds") && wt_json_get(wt_json_get(summary, "kinds"), kinds[k]),
			  "%s used %s memory, yet the summary has no kinds.%s", who, kinds[k], kinds[k]);
		for (size_t f = 0; f < mine->count; f++) {
			const char *figure = mine->items[f].key;
			uint64_t want, got;
			snprintf(path, sizeof path, "%s.%s", kinds[k], figure);
			cr_assert(wt_json_u64(books, path, &want), "%s's books have no number at %s", who, path);
			snprintf(path, sizeof path, "kinds.%s.%s", kinds[k], figure);
			cr_assert(wt_json_u64(summary, path, &got), "the summary has no number at %s", path);
			cr_expect_eq(got, want, "%s %s.%s: the program counted %llu, wsprof %llu", who, kinds[k], figure,
				     (unsigned long long)want, (unsigned long long)got);
		}
	}
}

void wt_assert_within(const struct wt_json *narrow, const struct wt_json *wide)
{
	static const char *const figures[] = { "allocations", "frees", "failed", "peak_bytes",
					       "leaked_bytes", "leaked_blocks", "total_bytes" };
	for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
		for (size_t f = 0; f < sizeof figures / sizeof *figures; f++) {
			char path[256];
			snprintf(path, sizeof path, "kinds.%s.%s", kinds[k], figures[f]);
			uint64_t n = 0, w = 0;
			if (!wt_json_u64(narrow, path, &n))
				continue;
			wt_json_u64(wide, path, &w);
			cr_expect_leq(n, w, "%s: %llu counted with --caller, only %llu without", path,
				      (unsigned long long)n, (unsigned long long)w);
		}
	}
}
