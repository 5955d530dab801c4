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
#include <unistd.h>

TestSuite(sampled, .fini = wt_cleanup, .timeout = 120);

#define RATE "65536"
#define LABEL "sampled: 1 in 65,536 bytes; heap totals counted, heap call sites estimated"

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

static void expect_within(const char *what, uint64_t got, uint64_t want, uint64_t slack)
{
	uint64_t off = got > want ? got - want : want - got;
	cr_expect_leq(off, slack, "%s: counted %llu, the program's books say %llu (%llu off, %llu allowed)", what,
		      (unsigned long long)got, (unsigned long long)want, (unsigned long long)off,
		      (unsigned long long)slack);
}

/* The whole process's totals (no --caller) are counted, not estimated:
 * the program's books plus the few blocks libc and the threads take
 * (stdio's buffer, each thread's). Live and peak bytes are the
 * allocator's usable bytes scaled by what allocations asked of it, the
 * peak seen within 16 KiB per thread. */
static void expect_counted_whole(const char *preload)
{
	struct wt_recording rec;
	char *prog = wt_prog("alloc_sampled"), env[4200];
	snprintf(env, sizeof env, "LD_PRELOAD=%s", preload ? preload : "");
	wt_record_with(&rec, (const char *[]){ "WSPROF_SAMPLE_SEED=20261129", preload ? env : NULL, NULL },
		       (const char *[]){ "--sample-bytes", RATE, NULL }, prog, (const char *[]){ "200000", NULL });
	free(prog);
	wt_assert_status(&rec.run, 0, "wsprof record --sample-bytes alloc_sampled");
	cr_assert(rec.expect, "alloc_sampled wrote no expect file");
	struct wt_json *sum = wt_summary(rec.trace, NULL);
	if (preload)
		cr_expect(strstr(wt_json_str(sum, "recorder.allocator") ? wt_json_str(sum, "recorder.allocator") : "", "jemalloc"),
			  "jemalloc did not serve malloc");
	bool counted = false;
	cr_expect(wt_json_bool(sum, "kinds.heap.counted", &counted) && counted, "the heap's totals are not counted");
	cr_expect_null(wt_json_get(sum, "kinds.heap.estimated"), "counted totals are called estimates");
	static const char *const counts[] = { "allocations", "frees", "leaked_blocks" };
	for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
		char got[64], want[64];
		snprintf(got, sizeof got, "kinds.heap.%s", counts[i]);
		snprintf(want, sizeof want, "heap.%s", counts[i]);
		uint64_t g = wt_u64(sum, got), w = wt_u64(rec.expect, want);
		cr_expect(g >= w && g <= w + 16, "%s: counted %llu, the program's books say %llu (and libc's few)", counts[i],
			  (unsigned long long)g, (unsigned long long)w);
	}
	uint64_t total = wt_u64(sum, "kinds.heap.total_bytes"), books = wt_u64(rec.expect, "heap.total_bytes");
	cr_expect(total >= books && total <= books + 65536, "total_bytes: counted %llu, the books say %llu",
		  (unsigned long long)total, (unsigned long long)books);
	uint64_t leaked = wt_u64(rec.expect, "heap.leaked_bytes"), peak = wt_u64(rec.expect, "heap.peak_bytes");
	expect_within("leaked_bytes", wt_u64(sum, "kinds.heap.leaked_bytes"), leaked, leaked / 100 + 16384);
	expect_within("peak_bytes", wt_u64(sum, "kinds.heap.peak_bytes"), peak, peak / 50 + 3 * 16384);
	const struct wt_json *share = wt_json_get(sum, "kinds.heap.usable_share");
	double s = share && share->type == WT_JSON_NUMBER ? strtod(share->text, NULL) : 0;
	cr_expect(s > 0.8 && s <= 1, "usable_share %f: the sizes asked for are most of the usable sizes", s);
	wt_json_free(sum);
	char *text = wt_wsprof_ok((const char *[]){ "report", "summary", rec.trace, NULL }, 0);
	cr_expect(strstr(text, "counted whole while sampling"), "the summary does not say how the heap was counted:\n%s", text);
	free(text);
	wt_recording_free(&rec);
}

Test(sampled, the_heap_totals_are_counted_whole)
{
	expect_counted_whole(NULL); /* glibc: the sizes read from the blocks' headers */
}

Test(sampled, the_heap_totals_are_counted_whole_on_jemalloc)
{
	const char *so = getenv("WSPROF_TEST_JEMALLOC");
	if (!so || !*so || access(so, R_OK) != 0)
		cr_skip_test("no libjemalloc.so.2: install libjemalloc-dev (./dev.sh does)");
	expect_counted_whole(so); /* its malloc_usable_size, asked */
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

Test(sampled, every_report_says_it_was_sampled_and_what_is_estimated)
{
	struct wt_recording rec;
	record(&rec, RATE, "40000");
	const char *t = rec.trace;
	char *text = wt_wsprof_ok((const char *[]){ "report", "summary", t, NULL }, 0);
	expect_label(text, "report summary");
	const char *row = strstr(text, "\n  heap ");
	cr_expect(row && (!strchr(row + 1, '~') || strchr(row + 1, '~') > strchr(row + 1, '\n')),
		  "the heap row's counted figures carry '~':\n%s", text);
	free(text);
	text = wt_wsprof_ok((const char *[]){ "report", "callsites", t, NULL }, 0);
	cr_expect(strstr(text, "~"), "the call sites' estimated figures carry no '~':\n%s", text);
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
	cr_expect(strstr(text, "\"heap allocated\"") && strstr(text, "\"sample_bytes\":65536"),
		  "the Perfetto export's heap track is counted, and says the trace was sampled");
	free(text);
	free(pdf), free(svg), free(json);
	wt_recording_free(&rec);
}
