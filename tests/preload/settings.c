/*
 * settings.c - how wsprof takes its settings, and what it does when they
 * are wrong: the traced program never notices.
 *
 * A malformed WSPROF_* value gets one warning line and the default; an
 * output path that cannot be created gets one warning line and no trace,
 * while the program runs to the same result; the trace's descriptor stays
 * out of the program's way; `wsprof record` finds its preload library in
 * an installed layout, and the reports that draw their module, and
 * WSPROF_PRELOAD must name a real file. Sampling heap allocations lowers
 * the access sampler's default budget, which an explicit one overrides.
 */
#include "harness.h"

#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(settings, .fini = wt_cleanup, .timeout = 60);

static bool contains(const char *s, const char *part)
{
	return s && strstr(s, part) != NULL;
}

Test(settings, a_malformed_value_warns_once_and_uses_the_default)
{
	const char *dir = wt_test_dir();
	char *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json");
	char *prog = wt_prog("alloc_basic");
	struct wt_result r;
	wt_run(&r, (const char *[]){ "/usr/bin/env", "WSPROF_STACK_DEPTH=lots", "WSPROF_FLUSH_MS=-5",
				     "WSPROF_SAMPLE_BYTES=half", wt_wsprof(), "record", "-o", trace, "--", prog, expect,
				     NULL });
	wt_assert_status(&r, 0, "wsprof record with malformed settings");
	cr_expect(contains(r.err, "wsprof: ignoring WSPROF_STACK_DEPTH=lots") && contains(r.err, "using 64"),
		  "no warning about WSPROF_STACK_DEPTH:\n%s", r.err);
	cr_expect(contains(r.err, "wsprof: ignoring WSPROF_FLUSH_MS=-5") && contains(r.err, "using 200"),
		  "no warning about WSPROF_FLUSH_MS:\n%s", r.err);
	cr_expect(contains(r.err, "wsprof: ignoring WSPROF_SAMPLE_BYTES=half") && contains(r.err, "using 0"),
		  "no warning about WSPROF_SAMPLE_BYTES:\n%s", r.err);

	struct wt_json *books = wt_json_load(expect);
	struct wt_json *s = wt_summary(trace, (const char *[]){ "alloc_basic", NULL });
	cr_expect_eq(wt_u64(s, "recorder.stack_depth"), 64);
	cr_expect_eq(wt_u64(s, "recorder.flush_ms"), 200);
	cr_expect_null(wt_json_get(s, "recorder.sample_bytes"), "a malformed sampling rate records everything");
	wt_assert_counted(s, books, "alloc_basic with malformed settings");
	wt_json_free(s);
	wt_json_free(books);
	wt_result_free(&r);
	free(prog);
	free(expect);
	free(trace);
}

Test(settings, an_unwritable_output_leaves_the_program_running)
{
	const char *dir = wt_test_dir();
	char *expect = wt_path(dir, "expect.json"), *plain = wt_path(dir, "plain.json");
	char *prog = wt_prog("alloc_basic");
	char preload[4200];
	snprintf(preload, sizeof preload, "LD_PRELOAD=%s", getenv("WSPROF_PRELOAD"));

	struct wt_result base, r;
	wt_run(&base, (const char *[]){ prog, plain, NULL });
	wt_assert_status(&base, 0, "alloc_basic on its own");
	wt_run(&r, (const char *[]){ "/usr/bin/env", preload, "WSPROF_OUTPUT=/nonexistent-dir/t.wsp", prog, expect,
				     NULL });
	wt_assert_status(&r, 0, "alloc_basic preloaded with an unwritable output");
	cr_expect_eq(wt_count_lines(r.err), 1, "one warning line, not:\n%s", r.err);
	cr_expect(contains(r.err, "cannot create trace /nonexistent-dir/t.wsp"), "the warning:\n%s", r.err);
	cr_expect_str_eq(r.out, base.out, "the program's output changed");
	char *a = wt_read_file(plain, NULL), *b = wt_read_file(expect, NULL);
	cr_expect(a && b && strcmp(a, b) == 0, "the program's own books differ:\n%s\n%s", a, b);
	free(a);
	free(b);
	wt_result_free(&r);
	wt_result_free(&base);
	free(prog);
	free(plain);
	free(expect);
}

Test(settings, the_trace_descriptor_stays_out_of_the_programs_way)
{
	const char *dir = wt_test_dir();
	char *plain = wt_path(dir, "plain.json"), *prog = wt_prog("fd_probe");
	struct wt_result base;
	wt_run(&base, (const char *[]){ prog, plain, NULL });
	wt_assert_status(&base, 0, "fd_probe on its own");
	struct wt_json *alone = wt_json_load(plain);

	struct wt_recording rec;
	wt_record(&rec, NULL, "fd_probe", NULL);
	wt_assert_status(&rec.run, 0, "wsprof record fd_probe");
	cr_assert(rec.expect, "fd_probe wrote nothing");
	cr_expect_eq(wt_u64(rec.expect, "first_fd"), wt_u64(alone, "first_fd"),
		     "open() under wsprof got another descriptor than in a plain run");
	cr_expect_eq(wt_u64(rec.expect, "low_fds"), wt_u64(alone, "low_fds"),
		     "wsprof holds a descriptor below 100, in the program's way");
	wt_json_free(alone);
	wt_recording_free(&rec);
	wt_result_free(&base);
	free(prog);
	free(plain);
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	char *data = wt_read_file(from, &len);
	cr_assert(data, "cannot read %s", from);
	cr_assert_eq(wt_write_file(to, data, len), 0, "cannot write %s", to);
	cr_assert_eq(chmod(to, 0755), 0);
	free(data);
}

static void make_dirs(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		mkdir(buf, 0755);
		*p = '/';
	}
	mkdir(buf, 0755);
}

/* The access budget a recording with these settings wrote in its header. */
static uint64_t recorded_wp_pages(const char *const env[])
{
	const char *dir = wt_test_dir();
	char *trace = wt_path(dir, "wp.wsp"), *expect = wt_path(dir, "wp.json"), *prog = wt_prog("alloc_basic");
	const char *argv[16];
	size_t n = 0;
	argv[n++] = "/usr/bin/env";
	for (; *env; env++)
		argv[n++] = *env;
	const char *tail[] = { wt_wsprof(), "record", "-o", trace, "--", prog, expect, NULL };
	for (size_t i = 0; i < sizeof tail / sizeof *tail; i++)
		argv[n++] = tail[i];
	struct wt_result r;
	wt_run(&r, argv);
	wt_assert_status(&r, 0, "wsprof record alloc_basic");
	struct wt_json *s = wt_summary(trace, NULL);
	uint64_t pages = wt_u64(s, "access.wp_pages");
	wt_json_free(s);
	wt_result_free(&r);
	remove(trace);
	free(prog);
	free(expect);
	free(trace);
	return pages;
}

Test(settings, sampling_heap_allocations_lowers_the_access_budget)
{
	cr_expect_eq(recorded_wp_pages((const char *[]){ "WSPROF_WINDOW_MS=200", NULL }), 3072,
		     "1536 pages per 100 ms of window by default");
	cr_expect_eq(recorded_wp_pages((const char *[]){ "WSPROF_WINDOW_MS=200", "WSPROF_SAMPLE_BYTES=4096", NULL }), 512,
		     "256 pages per 100 ms of window when sampling");
	cr_expect_eq(recorded_wp_pages((const char *[]){ "WSPROF_SAMPLE_BYTES=4096", "WSPROF_WP_PAGES=2000", NULL }), 2000,
		     "an explicit budget stays as given");
}

Test(settings, an_installed_wsprof_finds_its_preload_library)
{
	const char *dir = wt_test_dir();
	char *bin = wt_path(dir, "prefix/bin"), *exe = wt_path(dir, "prefix/bin/wsprof");
	char *libdir = wt_path(bin, "%s", WSPROF_PRELOAD_FROM_BINDIR);
	char *lib = wt_path(libdir, "%s", WSPROF_PRELOAD_NAME);
	make_dirs(bin);
	make_dirs(libdir);
	copy_file(wt_wsprof(), exe);
	copy_file(getenv("WSPROF_PRELOAD"), lib);

	char *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json");
	char *prog = wt_prog("alloc_basic");
	struct wt_result r;
	wt_run(&r, (const char *[]){ "/usr/bin/env", "-u", "WSPROF_PRELOAD", exe, "record", "-o", trace, "--", prog,
				     expect, NULL });
	wt_assert_status(&r, 0, "an installed wsprof record");
	struct wt_json *books = wt_json_load(expect);
	struct wt_json *s = wt_summary(trace, (const char *[]){ "alloc_basic", NULL });
	wt_assert_counted(s, books, "alloc_basic recorded by an installed wsprof");
	wt_json_free(s);
	wt_json_free(books);
	wt_result_free(&r);

	/* The reports that draw or name functions are a module beside the
	 * preload library; without it, one line that says what to do. */
	wt_run(&r, (const char *[]){ exe, "report", "leaks", trace, NULL });
	wt_assert_status(&r, 1, "an installed wsprof report leaks without its module");
	cr_expect(contains(r.err, WSPROF_REPORTS_NAME) && contains(r.err, "reinstall wsprof") && wt_count_lines(r.err) == 1,
		  "the error should name the module and say to reinstall:\n%s", r.err);
	wt_result_free(&r);
	char *built = strdup(wt_wsprof()), *module = wt_path(libdir, "%s", WSPROF_REPORTS_NAME);
	*strrchr(built, '/') = 0;
	char *from = wt_path(built, "%s", WSPROF_REPORTS_NAME);
	copy_file(from, module);
	wt_run(&r, (const char *[]){ exe, "report", "leaks", trace, NULL });
	wt_assert_status(&r, 0, "an installed wsprof report leaks");
	cr_expect(contains(r.out, "leaks"), "the leaks report:\n%s", r.out);
	wt_result_free(&r);
	free(from);
	free(module);
	free(built);
	free(prog);
	free(expect);
	free(trace);
	free(lib);
	free(libdir);
	free(exe);
	free(bin);
}

Test(settings, wsprof_preload_must_name_a_file)
{
	const char *dir = wt_test_dir();
	char *trace = wt_path(dir, "t.wsp"), *prog = wt_prog("alloc_basic");
	struct wt_result r;
	wt_run(&r, (const char *[]){ "/usr/bin/env", "WSPROF_PRELOAD=/nonexistent/libwsprof.so", wt_wsprof(),
				     "record", "-o", trace, "--", prog, NULL });
	wt_assert_status(&r, 1, "wsprof record with a WSPROF_PRELOAD that does not exist");
	cr_expect_eq(wt_count_lines(r.err), 1, "one line says why, not:\n%s", r.err);
	cr_expect(contains(r.err, "WSPROF_PRELOAD"), "the error does not name the setting:\n%s", r.err);
	cr_expect(!wt_file_exists(trace), "a trace was written without a preload library");
	wt_result_free(&r);
	free(prog);
	free(trace);
}

Test(settings, a_bad_flag_is_refused_before_running)
{
	const char *dir = wt_test_dir();
	char *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json");
	char *prog = wt_prog("alloc_basic");
	struct wt_result r;
	wt_run(&r, (const char *[]){ wt_wsprof(), "record", "--stack-depth", "0", "-o", trace, "--", prog, expect,
				     NULL });
	wt_assert_status(&r, 2, "wsprof record --stack-depth 0");
	cr_expect(contains(r.err, "--stack-depth must be a whole number from 1 to 256"), "the error:\n%s", r.err);
	cr_expect(!wt_file_exists(expect), "the program ran despite the bad flag");
	wt_result_free(&r);
	free(prog);
	free(expect);
	free(trace);
}
