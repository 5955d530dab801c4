/*
 * dlopen.c - allocations made by libraries loaded with dlopen
 * (tests/progs/alloc_dlopen with libtestalloc.so and libtestinit.so).
 *
 * `--caller` picks modules by file name: the program alone, the library
 * alone, or both, and each choice must match the program's per-module
 * books, including the library's blocks freed by the program and the
 * program's block freed by the library. dlopen's and the loader's own
 * bookkeeping count for neither. A library's constructor allocates before
 * dlopen returns; that block still belongs to the library. A block that
 * outlives its library (dlclosed before the end) is still named by it.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(dlopen, .fini = wt_cleanup, .timeout = 60);

static void check(const struct wt_recording *rec, const char *const callers[], const char *books_path,
		  const char *who)
{
	struct wt_json *s = wt_summary(rec->trace, callers);
	const struct wt_json *books = books_path ? wt_json_get(rec->expect, books_path) : rec->expect;
	cr_assert(books, "alloc_dlopen's expect file has no %s", books_path);
	wt_assert_counted(s, books, who);
	wt_json_free(s);
}

static void record_dlopen(struct wt_recording *rec, bool with_init)
{
	char *testalloc = wt_prog("libtestalloc.so"), *testinit = wt_prog("libtestinit.so");
	wt_record(rec, NULL, "alloc_dlopen", (const char *[]){ testalloc, with_init ? testinit : NULL, NULL });
	wt_assert_status(&rec->run, 0, "wsprof record alloc_dlopen");
	cr_assert(rec->expect, "alloc_dlopen wrote no expect file");
	free(testalloc);
	free(testinit);
}

Test(dlopen, program_and_library_counted_apart_and_together)
{
	struct wt_recording rec;
	record_dlopen(&rec, false);
	check(&rec, (const char *[]){ "alloc_dlopen", "libtestalloc.so", NULL }, NULL, "alloc_dlopen + libtestalloc.so");
	check(&rec, (const char *[]){ "alloc_dlopen", NULL }, "prog", "alloc_dlopen alone");
	check(&rec, (const char *[]){ "libtestalloc.so", NULL }, "lib", "libtestalloc.so alone");

	/* A full path names the same module. */
	char *full = wt_prog("libtestalloc.so");
	check(&rec, (const char *[]){ full, NULL }, "lib", "libtestalloc.so by full path");
	free(full);

	struct wt_json *s = wt_summary(rec.trace, (const char *[]){ "alloc_dlopen", NULL });
	cr_expect_eq(wt_u64(s, "threads"), wt_u64(rec.expect, "threads"), "alloc_dlopen runs on one thread");
	bool complete = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "the trace is complete");
	wt_json_free(s);
	wt_recording_free(&rec);
}

Test(dlopen, a_constructor_allocation_belongs_to_its_library)
{
	struct wt_recording rec;
	record_dlopen(&rec, true);
	check(&rec, (const char *[]){ "libtestinit.so", NULL }, "init", "libtestinit.so");
	check(&rec, (const char *[]){ "alloc_dlopen", NULL }, "prog", "alloc_dlopen alone");
	wt_recording_free(&rec);
}

/* The library is gone by the end, yet its leaked block is named by it:
 * the report symbolizes from the module map, which kept the library's
 * mapping for the time it was loaded. */
Test(dlopen, a_block_that_outlives_its_library_is_named_by_it)
{
	struct wt_recording rec;
	record_dlopen(&rec, false);
	struct wt_result r;
	wt_run(&r, (const char *[]){ wt_wsprof(), "report", "leaks", "--json", rec.trace, NULL });
	wt_assert_status(&r, 0, "wsprof report leaks");
	char why[256];
	struct wt_json *leaks = wt_json_parse(r.out, why, sizeof why);
	cr_assert(leaks, "wsprof report leaks --json printed no JSON (%s):\n%s", why, r.out);
	const struct wt_json *stacks = wt_json_get(leaks, "stacks");
	cr_assert(stacks && stacks->type == WT_JSON_ARRAY, "the leaks report has no stacks");
	bool found = false;
	for (size_t i = 0; i < stacks->count && !found; i++) {
		const struct wt_json *st = &stacks->items[i];
		uint64_t bytes = 0;
		const char *fn = wt_json_str(st, "stack.0.function"), *module = wt_json_str(st, "stack.0.module");
		const char *file = wt_json_str(st, "stack.0.file");
		if (!wt_json_u64(st, "leaked_bytes", &bytes) || bytes != 77)
			continue;
		found = true;
		cr_expect(fn && strcmp(fn, "testalloc_make") == 0, "the 77-byte leak is named %s, not testalloc_make",
			  fn ? fn : "(nothing)");
		cr_expect(module && strcmp(module, "libtestalloc.so") == 0, "the 77-byte leak is in %s",
			  module ? module : "(no module)");
		cr_expect(file && strstr(file, "testalloc.c"), "the 77-byte leak's file is %s", file ? file : "(none)");
	}
	cr_expect(found, "no leak of the 77 bytes libtestalloc.so allocated:\n%s", r.out);
	wt_json_free(leaks);
	wt_result_free(&r);
	wt_recording_free(&rec);
}

/* alloc_dlopen run from `dir`, into which libtestalloc.so is copied, opening
 * it as "./libtestalloc.so". @return the trace (free it); *lib gets the
 * copy's path (free it). */
static char *record_relative(const char *dir, char **lib)
{
	char *from = wt_prog("libtestalloc.so");
	*lib = wt_path(dir, "libtestalloc.so");
	size_t len = 0;
	char *bytes = wt_read_file(from, &len);
	cr_assert(bytes && wt_write_file(*lib, bytes, len) == 0, "cannot copy %s", from);
	free(bytes);
	char *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json"), *prog = wt_prog("alloc_dlopen");
	struct wt_result run;
	wt_run(&run, (const char *[]){ "/usr/bin/env", "-C", dir, wt_wsprof(), "record", "-o", trace, "--", prog, expect,
				       "./libtestalloc.so", NULL });
	wt_assert_status(&run, 0, "alloc_dlopen ./libtestalloc.so");
	wt_result_free(&run);
	free(expect), free(prog), free(from);
	return trace;
}

/* dlopen("./libtestalloc.so") from the directory it is in: the trace
 * keeps the library's whole path, so a report run anywhere names its
 * functions (the loader itself keeps the relative path it was given). */
Test(dlopen, a_library_opened_by_a_relative_path_is_named_anywhere)
{
	char *lib, *trace = record_relative(wt_test_dir(), &lib);
	/* From another directory: the test's own. */
	struct wt_result r;
	wt_run(&r, (const char *[]){ wt_wsprof(), "report", "leaks", trace, NULL });
	wt_assert_status(&r, 0, "wsprof report leaks");
	cr_expect(strstr(r.out, "testalloc_make (testalloc.c:"), "the library's function is not named:\n%s", r.out);
	wt_result_free(&r);
	free(trace), free(lib);
}

/* Names are kept beside the trace (TRACE.symbols) by the first report
 * that finds them: a later report names the library's frames even once
 * the library is gone, and without the cache (WSPROF_SYMBOL_CACHE=0) it
 * cannot. The cache is keyed by the module's build-id, so a library
 * rebuilt under the same name is never given another build's names. */
Test(dlopen, names_are_kept_beside_the_trace_for_later_reports)
{
	const char *dir = wt_test_dir();
	char *lib, *trace = record_relative(dir, &lib), *cache = wt_path(dir, "t.wsp.symbols");
	struct wt_result first, later, uncached;
	wt_run(&first, (const char *[]){ wt_wsprof(), "report", "leaks", trace, NULL });
	wt_assert_status(&first, 0, "the first report");
	cr_expect(wt_file_exists(cache), "no %s after the first report", cache);
	cr_assert_eq(unlink(lib), 0, "cannot remove the library");
	wt_run(&later, (const char *[]){ wt_wsprof(), "report", "leaks", trace, NULL });
	wt_assert_status(&later, 0, "a report with the library gone");
	cr_expect(strstr(later.out, "testalloc_make (testalloc.c:"), "the cache did not name the library's frames:\n%s",
		  later.out);
	wt_run(&uncached, (const char *[]){ "/usr/bin/env", "WSPROF_SYMBOL_CACHE=0", wt_wsprof(), "report", "leaks", trace,
					    NULL });
	cr_expect(!strstr(uncached.out, "testalloc_make"), "without the cache the gone library was still named");
	wt_result_free(&uncached);
	wt_result_free(&later);
	wt_result_free(&first);
	free(cache), free(trace), free(lib);
}

/* A trace read on another machine: `wsprof symbolize` names every frame
 * where the modules are and keeps the names in TRACE.symbols; the trace
 * and that file copied elsewhere, with the library gone, report its
 * functions. Without the file the report shows module+offset and says
 * what to run where the trace was recorded. */
Test(dlopen, a_symbolized_trace_is_named_where_its_modules_are_not)
{
	const char *dir = wt_test_dir();
	char *lib, *trace = record_relative(dir, &lib), *cache = wt_path(dir, "t.wsp.symbols");
	struct wt_result r;
	wt_run(&r, (const char *[]){ wt_wsprof(), "symbolize", trace, NULL });
	wt_assert_status(&r, 0, "wsprof symbolize");
	cr_expect(strstr(r.out, "kept in ") && strstr(r.out, "t.wsp.symbols"), "symbolize does not say where:\n%s", r.out);
	cr_expect(wt_file_exists(cache), "no %s after symbolize", cache);
	wt_result_free(&r);

	/* "Another machine": the trace and its names copied, the library gone. */
	char *laptop = wt_path(dir, "laptop");
	cr_assert_eq(mkdir(laptop, 0755), 0);
	char *moved = wt_path(laptop, "t.wsp"), *moved_cache = wt_path(laptop, "t.wsp.symbols");
	const char *from[] = { trace, cache }, *to[] = { moved, moved_cache };
	for (size_t i = 0; i < 2; i++) {
		size_t len = 0;
		char *bytes = wt_read_file(from[i], &len);
		cr_assert(bytes && wt_write_file(to[i], bytes, len) == 0, "cannot copy %s", from[i]);
		free(bytes);
	}
	cr_assert_eq(unlink(lib), 0, "cannot remove the library");
	wt_run(&r, (const char *[]){ wt_wsprof(), "report", "leaks", moved, NULL });
	wt_assert_status(&r, 0, "a report of the copied trace");
	cr_expect(strstr(r.out, "testalloc_make (testalloc.c:"), "the copied names did not name the library:\n%s", r.out);
	cr_expect(!strstr(r.err, "wsprof symbolize"), "advice where every frame was named:\n%s", r.err);
	wt_result_free(&r);

	cr_assert_eq(unlink(moved_cache), 0);
	wt_run(&r, (const char *[]){ wt_wsprof(), "report", "leaks", moved, NULL });
	wt_assert_status(&r, 0, "a report of the copied trace without its names");
	cr_expect(!strstr(r.out, "testalloc_make"), "named without the names or the library:\n%s", r.out);
	cr_expect(strstr(r.out, "libtestalloc.so+0x"), "the library's frames are not module+offset:\n%s", r.out);
	char advice[4200];
	snprintf(advice, sizeof advice, "run 'wsprof symbolize %s' and copy %s.symbols beside the trace", moved, moved);
	cr_expect(strstr(r.err, advice), "no advice on what to run where it was recorded:\n%s", r.err);
	wt_result_free(&r);
	free(moved), free(moved_cache), free(laptop), free(cache), free(trace), free(lib);
}
