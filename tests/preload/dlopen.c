/*
 * dlopen.c - allocations made by libraries loaded with dlopen
 * (tests/progs/alloc_dlopen with libtestalloc.so and libtestinit.so).
 *
 * `--caller` picks modules by file name: the program alone, the library
 * alone, or both, and each choice must match the program's per-module
 * books, including the library's blocks freed by the program and the
 * program's block freed by the library. dlopen's and the loader's own
 * bookkeeping count for neither. A library's constructor allocates before
 * dlopen returns; that block still belongs to the library.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdlib.h>

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
