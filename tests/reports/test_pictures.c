/*
 * test_pictures.c - the whole report, memory over time and the working set
 * as pictures: the golden server trace (tests/golden/server.wsp: heap and
 * mmap, a failed allocation of 1 TiB at 22 ms, a heap peak of 3 KiB + 100 B
 * at 20 ms) drawn as PDF, SVG and PNG, and a fresh recording of the
 * bundled example (examples/taskrt: phases, pools, access samples).
 */
#include "harness.h"
#include "pictures.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(pictures, .fini = wt_cleanup, .timeout = 60);

static void expect_words(const char *text, const char *const words[])
{
	for (size_t i = 0; words[i]; i++)
		cr_expect(strstr(text, words[i]), "no \"%s\" in the PDF's text:\n%s", words[i], text);
}

Test(pictures, the_timeline_of_the_golden_trace_has_its_peaks_and_failure)
{
	char *trace = wt_golden("server"), *pdf = wt_path(wt_test_dir(), "t.pdf");
	free(wt_wsprof_ok((const char *[]){ "report", "timeline", trace, "-o", pdf, NULL }, 0));
	cr_expect_eq(wt_pdf_pages(pdf), 1, "heap and mmap fit one page");
	char *text = wt_pdf_text(pdf);
	expect_words(text, (const char *[]){ "Memory over time", "/opt/golden/bin/server", "heap: peak 3.1 KiB at 20 ms",
					     "1 failed allocation", "failed: 1 TiB", "mmap: peak 16 KiB at 16 ms",
					     "allocated", "time since the program started", NULL });
	free(text);
	free(pdf);
	free(trace);
}

Test(pictures, the_timeline_as_svg_and_png)
{
	const char *dir = wt_test_dir();
	char *trace = wt_golden("server"), *svg = wt_path(dir, "t.svg"), *png = wt_path(dir, "t.png");
	free(wt_wsprof_ok((const char *[]){ "report", "timeline", trace, "-o", svg, NULL }, 0));
	wt_assert_svg(svg);
	free(wt_wsprof_ok((const char *[]){ "report", "timeline", trace, "-o", png, NULL }, 0));
	wt_assert_png(png, 1263, 892, 16);
	free(svg);
	free(png);
	free(trace);
}

Test(pictures, the_timeline_as_text_and_json)
{
	char *trace = wt_golden("server");
	char *text = wt_wsprof_ok((const char *[]){ "report", "timeline", trace, NULL }, 0);
	cr_expect(strstr(text, "heap: peak 3.10 KiB at 0.020 s"), "%s", text);
	cr_expect(strstr(text, "failed    0.022 s  1.00 TiB of heap"), "%s", text);
	free(text);
	char *json = wt_wsprof_ok((const char *[]){ "report", "timeline", "--json", trace, NULL }, 0);
	char err[256];
	struct wt_json *j = wt_json_parse(json, err, sizeof err);
	cr_assert(j, "not JSON (%s):\n%s", err, json);
	cr_expect_str_eq(wt_json_str(j, "kinds.0.kind"), "heap");
	cr_expect_eq(wt_u64(j, "kinds.0.peak_bytes"), 3172);
	const struct wt_json *pts = wt_json_get(j, "kinds.0.points");
	cr_assert(pts && pts->count > 0, "no heap points");
	uint64_t most = 0;
	for (size_t i = 0; i < pts->count; i++) {
		uint64_t v = wt_u64(&pts->items[i], "allocated");
		most = v > most ? v : most;
	}
	cr_expect_eq(most, 3172, "the highest point is %llu bytes, not the peak", (unsigned long long)most);
	cr_expect_eq(wt_u64(j, "failures.0.size"), 1ull << 40);
	wt_json_free(j);
	free(json);
	free(trace);
}

Test(pictures, a_bad_output_name_is_refused_in_one_line)
{
	char *trace = wt_golden("server");
	const char *argv[] = { wt_wsprof(), "report", "timeline", trace, "-o", "/tmp/x.jpeg", NULL };
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0);
	cr_expect_eq(r.status, 2);
	cr_expect_str_eq(r.err, "wsprof: cannot tell the format of '/tmp/x.jpeg': name the output .pdf, .svg or .png\n");
	wt_result_free(&r);
	const char *nodir[] = { wt_wsprof(), "report", trace, "-o", "/nonexistent/dir/r.pdf", NULL };
	cr_assert_eq(wt_run(&r, nodir), 0);
	cr_expect_eq(r.status, 1);
	cr_expect_str_eq(r.err, "wsprof: cannot write /nonexistent/dir/r.pdf: No such file or directory\n");
	wt_result_free(&r);
	const char *noout[] = { wt_wsprof(), "report", trace, NULL };
	cr_assert_eq(wt_run(&r, noout), 0);
	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.err, "-o report.pdf"), "%s", r.err);
	wt_result_free(&r);
	free(trace);
}

/* The bundled example, recorded fresh: phases and access samples. */
static char *record_taskrt(const char *dir)
{
	char *prog = wt_path(getenv("WSPROF_EXAMPLES"), "taskrt"), *trace = wt_path(dir, "taskrt.wsp");
	free(wt_wsprof_ok((const char *[]){ "record", "-o", trace, "--", prog, NULL }, 0));
	free(prog);
	return trace;
}

Test(pictures, the_whole_report_of_the_example)
{
	const char *dir = wt_test_dir();
	char *trace = record_taskrt(dir), *pdf = wt_path(dir, "r.pdf");
	free(wt_wsprof_ok((const char *[]){ "report", trace, "-o", pdf, NULL }, 0));
	unsigned pages = wt_pdf_pages(pdf);
	cr_expect_geq(pages, 4, "%u pages: summary, timeline, working set and sites at least", pages);
	char *text = wt_pdf_text(pdf);
	expect_words(text, (const char *[]){ "wsprof report", "taskrt", "access sources", "Memory over time", "heap: peak",
					     "warm-up", "Working set: memory actually accessed",
					     "Top allocation sites: heap", "copy_create", NULL });
	free(text);

	char *png = wt_path(dir, "r.png");
	char *err = wt_wsprof_ok((const char *[]){ "report", trace, "-o", png, NULL }, 0);
	free(err);
	for (unsigned i = 1; i <= pages; i++) {
		char *page = wt_path(dir, "r-%u.png", i);
		wt_assert_png(page, 1263, 892, 8);
		free(page);
	}
	char *past = wt_path(dir, "r-%u.png", pages + 1);
	cr_expect(!wt_file_exists(past), "more PNG pages than PDF pages");
	free(past);
	free(png);
	free(pdf);
	free(trace);
}

Test(pictures, the_working_set_plot_has_its_distribution)
{
	const char *dir = wt_test_dir();
	char *trace = record_taskrt(dir), *pdf = wt_path(dir, "w.pdf");
	free(wt_wsprof_ok((const char *[]){ "report", "wss", trace, "--plot", pdf, NULL }, 0));
	cr_expect_eq(wt_pdf_pages(pdf), 1);
	char *text = wt_pdf_text(pdf);
	expect_words(text, (const char *[]){ "Bytes accessed per window", "Distribution over", "p50", "mean", NULL });
	free(text);
	free(pdf);
	free(trace);
}
