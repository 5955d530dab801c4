/*
 * allocators.c - programs on allocators of their own: alloc_threads
 * linked with jemalloc, tcmalloc, tcmalloc_minimal and mimalloc
 * (tests/progs), and the plain alloc_threads with jemalloc preloaded in
 * front.
 *
 * wsprof's interposed functions must reach the program's allocator, and
 * must never wait on its locks: jemalloc maps memory while it holds an
 * arena's lock (and while it initialises), tcmalloc while it unwinds with
 * libunwind. Each program must run to its end under wsprof record, its
 * trace complete and its own allocations all counted, from two threads,
 * and the summary must name the library that served them (glibc's too).
 * The programs are built where their allocator's development package is
 * installed (./dev.sh installs them); a test skips, saying so, where it
 * is not.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(allocators, .fini = wt_cleanup, .timeout = 60);

static void expect_counted(const char *prog, const char *const env[], const char *caller, const char *allocator)
{
	char *path = wt_prog(prog);
	if (access(path, X_OK) != 0)
		cr_skip_test("%s was not built: install libjemalloc-dev, libgoogle-perftools-dev and libmimalloc-dev "
			     "(./dev.sh does)", prog);
	struct wt_recording rec;
	wt_record_with(&rec, env, NULL, path, (const char *[]){ "2", "3", "500", NULL });
	free(path);
	wt_assert_status(&rec.run, 0, "wsprof record");
	cr_assert(rec.expect, "%s wrote no expect file", prog);
	struct wt_json *s = wt_summary(rec.trace, (const char *[]){ caller, NULL });
	wt_assert_counted(s, rec.expect, prog);
	const char *served = wt_json_str(s, "recorder.allocator");
	const char *base = served && strrchr(served, '/') ? strrchr(served, '/') + 1 : served;
	cr_expect(base && strcmp(base, allocator) == 0, "%s: the summary says %s served malloc, not %s", prog,
		  served ? served : "nothing", allocator);
	bool complete = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "%s: the trace is not complete", prog);
	wt_json_free(s);
	wt_recording_free(&rec);
}

Test(allocators, linked_with_jemalloc)
{
	expect_counted("alloc_threads_jemalloc", NULL, "alloc_threads_jemalloc", "libjemalloc.so.2");
}

Test(allocators, linked_with_tcmalloc)
{
	expect_counted("alloc_threads_tcmalloc", NULL, "alloc_threads_tcmalloc", "libtcmalloc.so.4");
}

Test(allocators, linked_with_tcmalloc_minimal)
{
	expect_counted("alloc_threads_tcmalloc_minimal", NULL, "alloc_threads_tcmalloc_minimal", "libtcmalloc_minimal.so.4");
}

Test(allocators, linked_with_mimalloc)
{
	expect_counted("alloc_threads_mimalloc", NULL, "alloc_threads_mimalloc", "libmimalloc.so.2");
}

Test(allocators, jemalloc_preloaded_in_front)
{
	const char *so = getenv("WSPROF_TEST_JEMALLOC");
	if (!so || !*so || access(so, R_OK) != 0)
		cr_skip_test("no libjemalloc.so.2: install libjemalloc-dev (./dev.sh does)");
	char env[4200];
	snprintf(env, sizeof env, "LD_PRELOAD=%s", so);
	expect_counted("alloc_threads", (const char *[]){ env, NULL }, "alloc_threads", "libjemalloc.so.2");
}

Test(allocators, glibc_is_named_when_it_serves)
{
	expect_counted("alloc_threads", NULL, "alloc_threads", "libc.so.6");
}
