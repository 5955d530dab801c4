/*
 * test_diff.c - `wsprof diff` and `wsprof check` on two builds of one
 * program (tests/progs/diff_build.c, built as diff_base and diff_new, its
 * table of what each site allocates in each build): every figure of the
 * diff exact, its sites paired although their lines moved, the sites of
 * one run only, the differential flame graph (SVG, PDF, PNG); check's
 * exit status and messages for each budget, sizes and bad input. Each
 * build is copied to .../base/app and .../new/app and recorded there, as
 * two builds of one program would be.
 */
#include "harness.h"
#include "pictures.h"
#include "wsprof/trace.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(diff, .fini = wt_cleanup, .timeout = 120);

#define MiB (1024ull * 1024)

/* diff_build.c's table, summed: the heap peaks with everything but the
 * churn live. */
#define BASE_PEAK (10 * 1000 + 1 * MiB + 4 * 65536 + 300000 + 4 * MiB)
#define NEW_PEAK (10 * 1000 + 2 * MiB + 1 * 65536 + 500000 + 3 * MiB)
#define BASE_LEAKED (10 * 1000 + 1 * MiB + 4 * 65536 + 300000)
#define NEW_LEAKED (10 * 1000 + 2 * MiB + 1 * 65536 + 500000)

/* Copy the test program `prog` to DIR/name/exe and record it into DIR/name.wsp. @return the trace (malloc'd). */
static char *record_as(const char *prog, const char *name, const char *exe, const char *const opts[])
{
	const char *dir = wt_test_dir();
	char *sub = wt_path(dir, "%s", name), *app = wt_path(sub, "%s", exe), *trace = wt_path(dir, "%s.wsp", name);
	cr_assert(mkdir(sub, 0755) == 0 || errno == EEXIST);
	char *from = wt_prog(prog);
	size_t len;
	char *bytes = wt_read_file(from, &len);
	cr_assert(bytes, "no %s", from);
	cr_assert_eq(wt_write_file(app, bytes, len), 0);
	cr_assert_eq(chmod(app, 0755), 0);
	const char *argv[16] = { wt_wsprof(), "record" };
	size_t n = 2;
	for (size_t i = 0; opts && opts[i]; i++)
		argv[n++] = opts[i];
	argv[n++] = "-o";
	argv[n++] = trace;
	argv[n++] = "--";
	argv[n++] = app;
	argv[n] = NULL;
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0);
	wt_assert_status(&r, 0, "wsprof record");
	wt_result_free(&r);
	free(bytes), free(from), free(sub), free(app);
	return trace;
}

/* A build recorded as DIR/name/app, as every build of the program is. */
static char *record_build(const char *prog, const char *name, const char *const opts[])
{
	return record_as(prog, name, "app", opts);
}

static int64_t i64(const struct wt_json *j, const char *path)
{
	const struct wt_json *v = wt_json_get(j, path);
	cr_assert(v && v->type == WT_JSON_NUMBER, "no number at %s", path);
	return strtoll(v->text, NULL, 10);
}

/* The change of the site whose function is fn. */
static const struct wt_json *site(const struct wt_json *diff, const char *fn)
{
	const struct wt_json *changes = wt_json_get(diff, "sites.changes");
	cr_assert(changes && changes->type == WT_JSON_ARRAY);
	for (size_t i = 0; i < changes->count; i++) {
		const char *f = wt_json_str(&changes->items[i], "function");
		if (f && !strcmp(f, fn))
			return &changes->items[i];
	}
	cr_assert_fail("no changed site %s", fn);
	return NULL;
}

Test(diff, two_builds_compare_exactly)
{
	char *base = record_build("diff_base", "base", NULL), *now = record_build("diff_new", "new", NULL);
	struct wt_json *d = wt_json_text(wt_wsprof_ok((const char *[]){ "diff", "--json", "--top", "0", base, now, NULL }, 0));
	cr_expect_eq(wt_json_get(d, "warnings")->count, 0, "the same program: no warning");
	cr_expect_eq(i64(d, "kinds.heap.peak_bytes.base"), BASE_PEAK);
	cr_expect_eq(i64(d, "kinds.heap.peak_bytes.new"), NEW_PEAK);
	cr_expect_eq(i64(d, "kinds.heap.peak_bytes.change"), (int64_t)NEW_PEAK - (int64_t)BASE_PEAK);
	cr_expect_eq(i64(d, "kinds.heap.leaked_bytes.change"), (int64_t)NEW_LEAKED - (int64_t)BASE_LEAKED);
	cr_expect_eq(i64(d, "kinds.heap.allocations.base"), 1000 + 10 + 1 + 4 + 1 + 4);
	cr_expect_eq(i64(d, "kinds.heap.allocations.new"), 3000 + 10 + 2 + 1 + 1 + 3);
	cr_expect_eq(i64(d, "kinds.heap.total_bytes.change"), 2000 * 100 + (int64_t)NEW_PEAK - (int64_t)BASE_PEAK);
	cr_expect_eq(i64(d, "kinds.heap.failed.change"), 0);
	/* Six sites each: five paired although every line moved, one new, one gone. */
	cr_expect_eq(i64(d, "sites.base"), 6);
	cr_expect_eq(i64(d, "sites.new"), 6);
	cr_expect_eq(i64(d, "sites.matched"), 5);
	cr_expect_eq(i64(d, "sites.moved"), 5);
	cr_expect_eq(i64(d, "sites.only_new"), 1);
	cr_expect_eq(i64(d, "sites.only_base"), 1);
	cr_expect_eq(i64(d, "sites.unmatched_without_names"), 0);
	cr_expect_eq(i64(d, "sites.changed"), 6, "steady did not change");

	const struct wt_json *g = site(d, "grows");
	cr_expect_str_eq(wt_json_str(g, "state"), "moved");
	cr_expect_eq(i64(g, "line"), i64(g, "base_line") + 20, "the new build's lines are 20 further down");
	cr_expect_eq(i64(g, "change.peak_bytes"), (int64_t)MiB);
	cr_expect_eq(i64(g, "change.leaked_bytes"), (int64_t)MiB);
	cr_expect_eq(i64(g, "change.allocations"), 1);
	cr_expect_eq(i64(g, "base.peak_bytes"), (int64_t)MiB);
	cr_expect_eq(i64(g, "new.peak_bytes"), (int64_t)(2 * MiB));
	const struct wt_json *h = site(d, "hold");
	cr_expect_eq(i64(h, "change.peak_bytes"), -(int64_t)MiB);
	cr_expect_eq(i64(h, "change.leaked_bytes"), 0);
	cr_expect_eq(i64(site(d, "shrinks"), "change.peak_bytes"), -3 * 65536);
	const struct wt_json *c = site(d, "churn");
	cr_expect_eq(i64(c, "change.allocations"), 2000);
	cr_expect_eq(i64(c, "change.peak_bytes"), 0);
	const struct wt_json *a = site(d, "added");
	cr_expect_str_eq(wt_json_str(a, "state"), "new");
	cr_expect_eq(wt_json_get(a, "base")->type, WT_JSON_NULL);
	cr_expect_eq(i64(a, "new.leaked_bytes"), 500000);
	const struct wt_json *r = site(d, "removed");
	cr_expect_str_eq(wt_json_str(r, "state"), "gone");
	cr_expect_eq(i64(r, "change.peak_bytes"), -300000);
	/* In the order of the change of the peak, largest first. */
	cr_expect_str_eq(wt_json_str(d, "sites.changes.0.function"), "grows");
	cr_expect_str_eq(wt_json_str(d, "sites.changes.1.function"), "hold");
	cr_expect_str_eq(wt_json_str(d, "sites.changes.2.function"), "added");
	wt_json_free(d);

	/* --sort allocations puts the churn first. */
	d = wt_json_text(wt_wsprof_ok((const char *[]){ "diff", "--json", "--sort", "allocations", base, now, NULL }, 0));
	cr_expect_str_eq(wt_json_str(d, "sites.changes.0.function"), "churn");
	wt_json_free(d);
	free(base), free(now);
}

Test(diff, the_text_names_each_change)
{
	char *base = record_build("diff_base", "base", NULL), *now = record_build("diff_new", "new", NULL);
	char *text = wt_wsprof_ok((const char *[]){ "diff", base, now, NULL }, 0);
	cr_expect(strstr(text, "peak                       5.55 MiB       5.55 MiB      +3.31 KiB (+0.1%)"), "%s", text);
	cr_expect(strstr(text, "5 matched (5 of them after their lines moved), 1 only in the new run, 1 only in the base"));
	cr_expect(strstr(text, "    1.00 MiB     2.00 MiB    +1.00 MiB    +1.00 MiB           +1  grows (diff_build.c:"));
	cr_expect(strstr(text, ") [moved]\n"));
	cr_expect(strstr(text, "added (diff_build.c:"));
	cr_expect(strstr(text, ") [new]\n"));
	cr_expect(strstr(text, "removed (diff_build.c:"));
	cr_expect(strstr(text, ") [gone]\n"));
	free(text);
	free(base), free(now);
}

Test(diff, a_differential_flame_graph)
{
	char *base = record_build("diff_base", "base", NULL), *now = record_build("diff_new", "new", NULL);
	char *svg = wt_path(wt_test_dir(), "d.svg"), *pdf = wt_path(wt_test_dir(), "d.pdf"), *png = wt_path(wt_test_dir(), "d.png");
	free(wt_wsprof_ok((const char *[]){ "diff", "-o", svg, base, now, NULL }, 0));
	wt_assert_svg(svg);
	char *doc = wt_read_file(svg, NULL);
	cr_expect(strstr(doc, "<title>grows \xe2\x80\x94 2.00 MiB, 36.0% (base 1.00 MiB, +1.00 MiB)</title>"), "%s", doc);
	cr_expect(strstr(doc, "<title>hold \xe2\x80\x94 3.00 MiB, 54.1% (base 4.00 MiB, -1.00 MiB)</title>"));
	cr_expect(strstr(doc, "<title>added \xe2\x80\x94 488 KiB, 8.6% (base 0 B, +488 KiB)</title>"));
	cr_expect_null(strstr(doc, "<title>removed"), "only in the base: no width");
	cr_expect(strstr(doc, "red: grew, blue: shrank"));
	free(doc);
	free(wt_wsprof_ok((const char *[]){ "diff", "-o", pdf, base, now, NULL }, 0));
	cr_expect_eq(wt_pdf_pages(pdf), 1);
	char *text = wt_pdf_text(pdf);
	cr_expect(strstr(text, "heap, change in bytes live at the peak"), "%s", text);
	cr_expect(strstr(text, "grows"));
	free(text);
	free(wt_wsprof_ok((const char *[]){ "diff", "-o", png, base, now, NULL }, 0));
	wt_assert_png(png, 1263, 892, 8);
	free(svg), free(pdf), free(png), free(base), free(now);
}

Test(diff, other_programs_and_estimates_compare_with_a_warning)
{
	char *base = record_build("diff_base", "base", NULL);
	char *other = record_as("diff_base", "other", "server", NULL); /* the same code, another program's name */
	struct wt_result r = wt_wsprof_run((const char *[]){ "diff", "--json", base, other, NULL });
	wt_assert_status(&r, 0, "wsprof diff");
	cr_expect(strstr(r.err, "different programs"), "%s", r.err);
	struct wt_json *d = wt_json_text(r.out);
	r.out = NULL;
	cr_expect(strstr(wt_json_str(d, "warnings.0"), "different programs"));
	wt_json_free(d);
	wt_result_free(&r);

	char *sampled = record_build("diff_new", "sampled", (const char *[]){ "--sample-bytes", "65536", NULL });
	r = wt_wsprof_run((const char *[]){ "diff", base, sampled, NULL });
	wt_assert_status(&r, 0, "wsprof diff");
	cr_expect(strstr(r.err, "the new run was recorded with --sample-bytes: its heap figures are estimates"), "%s", r.err);
	cr_expect(strstr(r.out, "sampled: 1 in 65,536 bytes"), "%s", r.out);
	cr_expect(strstr(r.out, "~"), "estimates are marked");
	wt_result_free(&r);
	free(base), free(other), free(sampled);
}

Test(diff, bad_input)
{
	char *base = record_build("diff_base", "base", NULL);
	struct wt_result r = wt_wsprof_run((const char *[]){ "diff", base, NULL });
	wt_assert_status(&r, 2, "wsprof diff with one trace");
	cr_expect(strstr(r.err, "needs two trace files"), "%s", r.err);
	wt_result_free(&r);
	r = wt_wsprof_run((const char *[]){ "diff", base, "/nonexistent.wsp", NULL });
	wt_assert_status(&r, 1, "wsprof diff of a missing trace");
	cr_expect(strstr(r.err, "/nonexistent.wsp"), "%s", r.err);
	cr_expect_eq(wt_count_lines(r.err), 1, "one line: %s", r.err);
	wt_result_free(&r);
	/* A trace of a newer format (the next major version) is refused. */
	size_t len;
	char *bytes = wt_read_file(base, &len);
	bytes[16] = WSPROF_FORMAT_MAJOR + 1;
	char *newer = wt_path(wt_test_dir(), "newer.wsp");
	cr_assert_eq(wt_write_file(newer, bytes, len), 0);
	r = wt_wsprof_run((const char *[]){ "diff", base, newer, NULL });
	wt_assert_status(&r, 1, "wsprof diff of a newer trace");
	cr_expect(strstr(r.err, "newer"), "%s", r.err);
	wt_result_free(&r);
	r = wt_wsprof_run((const char *[]){ "diff", "--sort", "nope", base, base, NULL });
	wt_assert_status(&r, 2, "wsprof diff --sort nope");
	wt_result_free(&r);
	free(bytes), free(newer), free(base);
}

/* ---- wsprof check ---------------------------------------------------------- */

Test(diff, check_passes_within_every_budget)
{
	char *now = record_build("diff_new", "new", NULL);
	char peak[32], leaked[32];
	snprintf(peak, sizeof peak, "heap=%llu", (unsigned long long)NEW_PEAK); /* at the budget is within it */
	snprintf(leaked, sizeof leaked, "%llu", (unsigned long long)NEW_LEAKED);
	struct wt_result r = wt_wsprof_run((const char *[]){ "check", "--max-peak", peak, "--max-leaked", leaked, "--max-in-use",
							  "heap=1.5G", now, NULL });
	wt_assert_status(&r, 0, "wsprof check within budgets");
	cr_expect(strstr(r.out, "  ok        heap peak 5.55 MiB, within the budget of 5.55 MiB\n"), "%s", r.out);
	cr_expect(strstr(r.out, "passed: 0 of 3 budgets exceeded"));
	wt_result_free(&r);
	free(now);
}

Test(diff, check_fails_a_budget_with_its_sites)
{
	char *now = record_build("diff_new", "new", NULL);
	char peak[32];
	snprintf(peak, sizeof peak, "heap=%llu", (unsigned long long)NEW_PEAK - 1);
	struct wt_result r = wt_wsprof_run((const char *[]){ "check", "--max-peak", peak, "--max-leaked", "heap=2MiB", now, NULL });
	wt_assert_status(&r, 1, "wsprof check over budget");
	cr_expect(strstr(r.out, "  EXCEEDED  heap peak 5.55 MiB, over the budget of 5.55 MiB by 1 B\n"), "%s", r.out);
	cr_expect(strstr(r.out, "live at the peak     3.00 MiB  hold (diff_build.c:"));
	cr_expect(strstr(r.out, "  EXCEEDED  heap leaked 2.55 MiB, over the budget of 2.00 MiB by 562 KiB\n"));
	cr_expect(strstr(r.out, "leaked by            2.00 MiB  grows (diff_build.c:"));
	cr_expect(strstr(r.out, "FAILED: 2 of 2 budgets exceeded"));
	wt_result_free(&r);

	struct wt_json *j;
	r = wt_wsprof_run((const char *[]){ "check", "--json", "--max-leaked", "heap=2MiB", now, NULL });
	wt_assert_status(&r, 1, "wsprof check --json over budget");
	j = wt_json_text(r.out);
	r.out = NULL;
	bool passed = true;
	cr_expect(wt_json_bool(j, "passed", &passed) && !passed);
	cr_expect_eq(i64(j, "budgets.0.bytes"), NEW_LEAKED);
	cr_expect_eq(i64(j, "budgets.0.limit_bytes"), 2 * MiB);
	cr_expect(!strncmp(wt_json_str(j, "budgets.0.sites.0.label"), "grows (diff_build.c:", 20));
	cr_expect_eq(i64(j, "budgets.0.sites.0.bytes"), 2 * MiB);
	wt_json_free(j);
	wt_result_free(&r);
	free(now);
}

Test(diff, check_growth_against_a_baseline)
{
	char *base = record_build("diff_base", "base", NULL), *now = record_build("diff_new", "new", NULL);
	/* The peak grew by 3,392 bytes of 5,815,024: 0.0583%. */
	struct wt_result r = wt_wsprof_run((const char *[]){ "check", "--baseline", base, "--max-growth", "heap=0.05%", now, NULL });
	wt_assert_status(&r, 1, "wsprof check --max-growth 0.05%");
	cr_expect(strstr(r.out, "EXCEEDED  heap peak growth +0.1% (5.55 MiB to 5.55 MiB) against"), "%s", r.out);
	cr_expect(strstr(r.out, "grew most           +1.00 MiB  grows (diff_build.c:"));
	cr_expect(strstr(r.out, "+488 KiB  added (diff_build.c:"));
	cr_expect(strstr(r.out, ") [new]\n"));
	wt_result_free(&r);
	r = wt_wsprof_run((const char *[]){ "check", "--baseline", base, "--max-growth", "0.06", now, NULL });
	wt_assert_status(&r, 0, "wsprof check --max-growth 0.06");
	wt_result_free(&r);
	free(base), free(now);
}

Test(diff, check_bad_input)
{
	char *now = record_build("diff_new", "new", NULL);
	static const struct {
		const char *args[6];
		const char *says;
	} cases[] = {
		{ { "check", "--max-peak", "heap=12XB" }, "'12XB' is not a size: write it as 4096, 512MiB, 1.5G or 64K" },
		{ { "check", "--max-peak", "-5" }, "'-5' is not a size" },
		{ { "check", "--max-leaked", "nokind=1M" }, "unknown kind 'nokind'" },
		{ { "check", "--max-growth", "heap=ten" }, "'ten' is not a percentage" },
		{ { "check", "--max-growth", "heap=10" }, "--max-growth needs --baseline BASE" },
		{ { "check" }, "check needs a budget" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *args[8] = { 0 };
		size_t n = 0;
		while (cases[i].args[n])
			args[n] = cases[i].args[n], n++;
		args[n] = now;
		struct wt_result r = wt_wsprof_run(args);
		wt_assert_status(&r, 2, cases[i].says);
		cr_expect(strstr(r.err, cases[i].says), "%s: %s", cases[i].says, r.err);
		wt_result_free(&r);
	}
	struct wt_result r = wt_wsprof_run((const char *[]){ "check", "--max-peak", "1G", "/nonexistent.wsp", NULL });
	wt_assert_status(&r, 2, "wsprof check of a missing trace");
	wt_result_free(&r);
	r = wt_wsprof_run((const char *[]){ "check", "--max-peak", "1G", "--baseline", "/nonexistent.wsp", "--max-growth", "5", now,
					 NULL });
	wt_assert_status(&r, 2, "wsprof check with a missing baseline");
	wt_result_free(&r);
	free(now);
}
