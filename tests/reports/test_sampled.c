/*
 * test_sampled.c - recording with --sample-bytes (WSPROF_SAMPLE_BYTES),
 * and the reports of a sampled trace (tests/progs/alloc_sampled).
 *
 * The program's books give each figure and the standard deviation its
 * estimate has at the rate used (alloc_sampled.c says how): the summary's
 * and the call sites' heap figures must fall within five of them, plus
 * the rounding to whole bytes (half a byte per recorded block). Five
 * standard deviations leave a false alarm about once in two million
 * runs per figure; the seed is fixed besides, so a run differs from the
 * last only by which thread drew its first gap first. Pinned as well: the
 * trace holds a small part of the program's events, no free of a block
 * that was not sampled (none is untracked), failures exact; at 1 byte
 * every figure is exact; every report, in text, JSON, PDF, SVG and the
 * Perfetto export, says its heap figures are estimates.
 */
#include "harness.h"
#include "pictures.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(sampled, .fini = wt_cleanup, .timeout = 120);

#define RATE "65536"
#define LABEL "sampled: 1 in 65,536 bytes; heap figures are estimates"

static void record(struct wt_recording *rec, const char *rate, const char *rounds)
{
	char *prog = wt_prog("alloc_sampled");
	wt_record_with(rec, (const char *[]){ "WSPROF_SAMPLE_SEED=20261129", NULL },
		       (const char *[]){ "--sample-bytes", rate, NULL }, prog, (const char *[]){ rounds, NULL });
	free(prog);
	wt_assert_status(&rec->run, 0, "wsprof record --sample-bytes alloc_sampled");
	cr_assert(rec->expect, "alloc_sampled wrote no expect file");
}

static void expect_near(const char *what, uint64_t got, uint64_t want, uint64_t sd, uint64_t slack)
{
	uint64_t off = got > want ? got - want : want - got;
	cr_expect_leq(off, 5 * sd + slack, "%s: estimated %llu, the program counted %llu (sd %llu): %.1f sd off", what,
		      (unsigned long long)got, (unsigned long long)want, (unsigned long long)sd,
		      sd ? (double)off / (double)sd : 0.0);
}

/* The call site row whose function is `function`. */
static const struct wt_json *site(const struct wt_json *callsites, const char *function)
{
	const struct wt_json *sites = wt_json_get(callsites, "sites");
	cr_assert(sites, "callsites --json has no sites");
	for (size_t i = 0; i < sites->count; i++) {
		const char *f = wt_json_str(&sites->items[i], "function");
		if (f && !strcmp(f, function))
			return &sites->items[i];
	}
	cr_assert_fail("no call site %s", function);
	return NULL;
}

Test(sampled, estimates_are_within_five_standard_deviations_of_the_books)
{
	struct wt_recording rec;
	record(&rec, RATE, "500000"); /* a million small blocks, an eighth as many large */
	struct wt_json *sum = wt_summary(rec.trace, (const char *[]){ "alloc_sampled", NULL });
	bool sampled = false, estimated = false;
	cr_expect(wt_json_bool(sum, "sampled", &sampled) && sampled);
	cr_expect(wt_json_bool(sum, "kinds.heap.estimated", &estimated) && estimated);
	cr_expect_eq(wt_u64(sum, "recorder.sample_bytes"), 65536);
	uint64_t events = wt_u64(sum, "events"), made = wt_u64(rec.expect, "events");
	cr_expect_lt(events * 10, made, "the trace holds %llu events of the program's %llu", (unsigned long long)events,
		     (unsigned long long)made);
	static const char *const figures[] = { "allocations", "frees", "total_bytes", "leaked_bytes", "leaked_blocks" };
	for (size_t i = 0; i < sizeof figures / sizeof *figures; i++) {
		char path[64], sd[64];
		snprintf(path, sizeof path, "heap.%s", figures[i]);
		snprintf(sd, sizeof sd, "sd.%s", figures[i]);
		char got[64];
		snprintf(got, sizeof got, "kinds.heap.%s", figures[i]);
		expect_near(figures[i], wt_u64(sum, got), wt_u64(rec.expect, path), wt_u64(rec.expect, sd), events);
	}
	cr_expect_eq(wt_u64(sum, "kinds.heap.failed"), 0);
	wt_json_free(sum);

	struct wt_json *all = wt_summary(rec.trace, NULL);
	cr_expect_eq(wt_u64(all, "untracked_frees"), 0, "a free was recorded for a block that was not sampled");
	wt_json_free(all);

	char *text = wt_wsprof_ok((const char *[]){ "report", "callsites", "--json", "--top", "0", rec.trace, NULL }, 0);
	char why[256];
	struct wt_json *cs = wt_json_parse(text, why, sizeof why);
	cr_assert(cs, "callsites --json: %s", why);
	static const char *const sites[] = { "small_site", "large_site" };
	for (size_t i = 0; i < 2; i++) {
		const struct wt_json *row = site(cs, sites[i]);
		char want[96], sd[96];
		snprintf(want, sizeof want, "sites.%s.allocations", sites[i]);
		snprintf(sd, sizeof sd, "sites.%s.allocations_sd", sites[i]);
		expect_near(sites[i], wt_u64(row, "allocations"), wt_u64(rec.expect, want), wt_u64(rec.expect, sd), 0);
		snprintf(want, sizeof want, "sites.%s.bytes", sites[i]);
		snprintf(sd, sizeof sd, "sites.%s.bytes_sd", sites[i]);
		expect_near(sites[i], wt_u64(row, "bytes"), wt_u64(rec.expect, want), wt_u64(rec.expect, sd), events);
		cr_expect_eq(wt_json_get(row, "temporary")->type, WT_JSON_NULL, "temporary is not known when sampled");
	}
	wt_json_free(cs);
	free(text);
	wt_recording_free(&rec);
}

Test(sampled, one_byte_records_every_block_and_the_figures_are_exact)
{
	struct wt_recording rec;
	record(&rec, "1", "20000");
	struct wt_json *sum = wt_summary(rec.trace, (const char *[]){ "alloc_sampled", NULL });
	wt_assert_counted(sum, rec.expect, "alloc_sampled at 1 byte");
	cr_expect_eq(wt_u64(sum, "recorder.sample_bytes"), 1);
	cr_expect_null(wt_json_get(sum, "kinds.heap.estimated"), "exact figures are not called estimates");
	wt_json_free(sum);
	wt_recording_free(&rec);
}

static void expect_label(const char *text, const char *what)
{
	cr_expect(strstr(text, LABEL), "%s does not say its heap figures are estimates:\n%s", what, text);
}

Test(sampled, every_report_says_its_heap_figures_are_estimates)
{
	struct wt_recording rec;
	record(&rec, RATE, "40000");
	const char *t = rec.trace;
	char *text = wt_wsprof_ok((const char *[]){ "report", "summary", t, NULL }, 0);
	expect_label(text, "report summary");
	const char *row = strstr(text, "\n  heap ");
	cr_expect(row && strchr(row + 1, '~') && strchr(row + 1, '~') < strchr(row + 1, '\n'),
		  "the heap row's figures carry '~':\n%s", text);
	free(text);
	static const char *const views[] = { "callsites", "leaks", "timeline", "state", "heatmap" };
	for (size_t i = 0; i < sizeof views / sizeof *views; i++) {
		text = wt_wsprof_ok((const char *[]){ "report", views[i], t, NULL }, 0);
		expect_label(text, views[i]);
		free(text);
		text = wt_wsprof_ok((const char *[]){ "report", views[i], "--json", t, NULL }, 0);
		char why[256];
		struct wt_json *j = wt_json_parse(text, why, sizeof why);
		cr_assert(j, "report %s --json: %s", views[i], why);
		bool sampled = false;
		cr_expect(wt_json_bool(j, "sampled", &sampled) && sampled, "report %s --json: no \"sampled\": true", views[i]);
		cr_expect_eq(wt_u64(j, "sample_bytes"), 65536, "report %s --json", views[i]);
		wt_json_free(j);
		free(text);
	}
	char *pdf = wt_path(rec.dir, "report.pdf"), *svg = wt_path(rec.dir, "flame.svg"), *json = wt_path(rec.dir, "p.json");
	free(wt_wsprof_ok((const char *[]){ "report", t, "-o", pdf, NULL }, 0));
	text = wt_pdf_text(pdf);
	expect_label(text, "the PDF report");
	free(text);
	free(wt_wsprof_ok((const char *[]){ "report", "flame", t, "-o", svg, NULL }, 0));
	text = wt_read_file(svg, NULL);
	expect_label(text, "the flame graph SVG");
	free(text);
	free(wt_wsprof_ok((const char *[]){ "export", "--perfetto", "-o", json, t, NULL }, 0));
	text = wt_read_file(json, NULL);
	cr_expect(strstr(text, "\"heap allocated (estimated)\"") && strstr(text, "\"sample_bytes\":65536"),
		  "the Perfetto export names the heap track an estimate");
	free(text);
	free(pdf), free(svg), free(json);
	wt_recording_free(&rec);
}
