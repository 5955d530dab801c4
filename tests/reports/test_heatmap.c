/*
 * test_heatmap.c - `wsprof report heatmap`: memory over time by address,
 * by allocation site and by named buffer, as text, JSON and pictures.
 *
 * The golden traces give exact figures: server.wsp has no access samples,
 * so its heatmaps show live bytes (a 16 KiB mmap cut to 12 KiB, heap
 * blocks at 0x1000..0x7000, 126 TiB below it); story.wsp has 100 ms
 * windows of written pages and kernel launches, a 32 MiB "grad-accum"
 * written whole in every window until 9.7 s, "host-weights" written 4 MiB
 * a window until 1.8 s, and an unnamed 48 MiB index written once and then
 * left cold (tests/golden/make_golden.c tells the whole story). A fresh
 * recording of tests/access/hot_idle (a hot and an idle 64 MiB buffer)
 * checks the same against the recorder's own samples, where the kernel
 * lets it watch written pages. wsp_heatmap_draw, which the full report
 * calls, is called here directly too.
 */
#include "harness.h"
#include "views.h" /* wsp_heatmap_draw */
#include "plot.h"
#include "pictures.h"

#include <cairo.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wsprof/trace.h"

TestSuite(heatmap, .fini = wt_cleanup, .timeout = 120);

#define MiB (1024ull * 1024ull)

static struct wt_json *heatmap_json(const char *const args[])
{
	const char *argv[16] = { "report", "heatmap", "--json" };
	size_t n = 3;
	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	char *out = wt_wsprof_ok(argv, 0), err[256];
	struct wt_json *j = wt_json_parse(out, err, sizeof err);
	cr_assert(j, "not JSON (%s):\n%s", err, out);
	free(out);
	return j;
}

/* The row with that label, or NULL. */
static const struct wt_json *row_labelled(const struct wt_json *j, const char *label)
{
	const struct wt_json *rows = wt_json_get(j, "rows");
	for (size_t i = 0; rows && i < rows->count; i++)
		if (!strcmp(wt_json_str(&rows->items[i], "label"), label))
			return &rows->items[i];
	return NULL;
}

static uint64_t cell(const struct wt_json *row, const char *array, size_t c)
{
	char path[64];
	snprintf(path, sizeof path, "%s.%zu", array, c);
	uint64_t v;
	cr_assert(wt_json_u64(row, path, &v), "no %s in row %s", path, wt_json_str(row, "label"));
	return v;
}

/* Column c's start and end in ns, from time_edges_s ("0.100000000"). */
static uint64_t edge_ns(const struct wt_json *j, size_t c)
{
	char path[32];
	snprintf(path, sizeof path, "time_edges_s.%zu", c);
	const struct wt_json *e = wt_json_get(j, path);
	cr_assert(e && e->text, "no %s", path);
	unsigned long long s = 0, ns = 0;
	cr_assert_eq(sscanf(e->text, "%llu.%9llu", &s, &ns), 2, "%s is %s", path, e->text);
	return s * 1000000000ull + ns;
}

static size_t columns(const struct wt_json *j)
{
	const struct wt_json *edges = wt_json_get(j, "time_edges_s");
	cr_assert(edges && edges->count >= 2, "no time edges");
	return edges->count - 1;
}

/* Pixels of a PNG within 1 of a colour (0..255). */
static size_t pixels_of(const char *path, int r, int g, int b)
{
	cairo_surface_t *s = cairo_image_surface_create_from_png(path);
	cr_assert_eq(cairo_surface_status(s), CAIRO_STATUS_SUCCESS, "%s is not a PNG", path);
	int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
	int stride = cairo_image_surface_get_stride(s);
	const unsigned char *data = cairo_image_surface_get_data(s);
	size_t n = 0;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			uint32_t p = ((const uint32_t *)(data + (size_t)y * (size_t)stride))[x];
			int pr = (int)(p >> 16 & 0xff), pg = (int)(p >> 8 & 0xff), pb = (int)(p & 0xff);
			n += abs(pr - r) <= 1 && abs(pg - g) <= 1 && abs(pb - b) <= 1;
		}
	cairo_surface_destroy(s);
	return n;
}

/* The pale grey of memory live but not accessed (plot.c's wsp_heat(0)). */
#define COLD_GREY 240, 240, 240

static void expect_words(const char *text, const char *const words[])
{
	for (size_t i = 0; words[i]; i++)
		cr_expect(strstr(text, words[i]), "no \"%s\" in:\n%s", words[i], text);
}

/* ---- no access samples: live bytes --------------------------------------- */

Test(heatmap, without_access_samples_the_sites_show_their_live_bytes)
{
	char *trace = wt_golden("server");
	struct wt_json *j = heatmap_json((const char *[]){ "--by", "callsite", trace, NULL });
	cr_expect_str_eq(wt_json_str(j, "colour"), "live_bytes");
	cr_expect_str_eq(wt_json_str(j, "unit"), "bytes");
	cr_expect_eq(wt_json_get(j, "sources")->count, 0);
	size_t n = columns(j);
	cr_expect_eq(n, 300, "a trace without windows gets the full %d columns", 300);
	cr_expect_eq(edge_ns(j, n), 30000000, "the time axis ends with the trace, at 30 ms");
	/* Largest live bytes over time first; the sites read module+offset. */
	static const struct {
		const char *label;
		uint64_t peak;
	} want[] = { { "server+0x1234", 16384 }, { "server+0x1800", 1536 }, { "server+0x1400", 2048 },
		     { "server+0x1900", 100 }, { "libgolden.so+0x2010", 64 } };
	cr_assert_eq(wt_json_get(j, "rows")->count, 5);
	for (size_t i = 0; i < 5; i++) {
		const struct wt_json *row = &wt_json_get(j, "rows")->items[i];
		cr_expect_str_eq(wt_json_str(row, "label"), want[i].label, "row %zu", i);
		cr_expect_eq(wt_u64(row, "peak"), want[i].peak, "%s", want[i].label);
		cr_expect_eq(wt_u64(row, "accessed_bytes"), 0);
	}
	/* The mmap: 16 KiB from 16 ms, 4 KiB of it unmapped later, 12 KiB leaked. */
	const struct wt_json *mmap = row_labelled(j, "server+0x1234");
	cr_expect_eq(cell(mmap, "values", 0), 0, "nothing live at the start");
	cr_expect_eq(cell(mmap, "values", n - 1), 12288, "12 KiB left at the end");
	cr_expect_eq(wt_u64(j, "max"), 16384);
	wt_json_free(j);
	free(trace);
}

Test(heatmap, by_address_empty_ranges_collapse_and_the_hottest_span_is_shown)
{
	char *trace = wt_golden("server");
	/* By default the mmap's span: the most bytes allocated. */
	struct wt_json *j = heatmap_json((const char *[]){ trace, NULL });
	cr_expect_str_eq(wt_json_str(j, "by"), "address");
	cr_expect_eq(wt_u64(j, "spans"), 2, "the heap blocks and, 126 TiB above, the mmap");
	cr_expect_eq(wt_u64(j, "span_shown"), 1);
	cr_expect_eq(wt_u64(j, "view_lo"), 0x7e0000000000ull);
	cr_expect_eq(wt_u64(j, "view_hi"), 0x7e0000004000ull);
	cr_expect_eq(wt_u64(j, "band_bytes"), 4096);
	const struct wt_json *rows = wt_json_get(j, "rows");
	cr_assert_eq(rows->count, 4, "16 KiB in bands of 4 KiB");
	for (size_t i = 0; i < 4; i++) {
		cr_expect_eq(wt_u64(&rows->items[i], "lo"), 0x7e0000000000ull + 4096 * i, "lowest address first");
		cr_expect_eq(wt_u64(&rows->items[i], "peak"), 4096);
	}
	cr_expect_eq(wt_json_get(j, "gaps")->count, 0);
	wt_json_free(j);

	/* Everything: one gap, collapsed and measured. */
	j = heatmap_json((const char *[]){ "--range", "all", trace, NULL });
	rows = wt_json_get(j, "rows");
	cr_assert_eq(rows->count, 10, "6 heap bands, 4 mmap bands");
	cr_expect_eq(wt_u64(&rows->items[0], "lo"), 0x1000);
	cr_expect_eq(wt_u64(&rows->items[0], "peak"), 1024);
	cr_expect_eq(wt_u64(&rows->items[6], "lo"), 0x7e0000000000ull);
	cr_assert_eq(wt_json_get(j, "gaps")->count, 1);
	cr_expect_eq(wt_u64(j, "gaps.0.above_row"), 5);
	cr_expect_eq(wt_u64(j, "gaps.0.bytes"), 0x7e0000000000ull - 0x6200, "from the end of the last heap block");
	wt_json_free(j);

	/* A range asked for: its bands only. */
	j = heatmap_json((const char *[]){ "--range", "0x4000-0x6000", trace, NULL });
	rows = wt_json_get(j, "rows");
	cr_assert_eq(rows->count, 2);
	cr_expect_eq(wt_u64(&rows->items[0], "lo"), 0x4000);
	cr_expect_eq(wt_u64(&rows->items[0], "peak"), 2048);
	cr_expect_eq(wt_u64(&rows->items[1], "hi"), 0x6000);
	cr_expect_eq(wt_u64(&rows->items[1], "peak"), 100);
	wt_json_free(j);
	free(trace);
}

Test(heatmap, text_and_pictures_of_the_live_bytes)
{
	const char *dir = wt_test_dir();
	char *trace = wt_golden("server"), *pdf = wt_path(dir, "h.pdf"), *svg = wt_path(dir, "h.svg"),
	     *png = wt_path(dir, "h.png");
	char *text = wt_wsprof_ok((const char *[]){ "report", "heatmap", "--by", "callsite", trace, NULL }, 0);
	expect_words(text, (const char *[]){ "wsprof heatmap of", "/opt/golden/bin/server --port 8080",
					     "live memory by allocation site", "5 of 5 allocation sites",
					     "server+0x1234", "16.0 KiB", "libgolden.so+0x2010", NULL });
	free(text);
	free(wt_wsprof_ok((const char *[]){ "report", "heatmap", "--by", "callsite", trace, "-o", pdf, NULL }, 0));
	cr_expect_eq(wt_pdf_pages(pdf), 1);
	text = wt_pdf_text(pdf);
	expect_words(text, (const char *[]){ "Heatmap: live memory by allocation site, over time", "/opt/golden/bin/server",
					     "server+0x1234", "16.0 KiB", "live bytes", "time since the program started",
					     "not live", NULL });
	free(text);
	free(wt_wsprof_ok((const char *[]){ "report", "heatmap", "--range", "all", trace, "-o", pdf, NULL }, 0));
	text = wt_pdf_text(pdf);
	expect_words(text, (const char *[]){ "Heatmap: live memory by address", "126 TiB empty", "0x7e0000000000",
					     "0x1000", "rows of 4.00 KiB", NULL });
	free(text);
	free(wt_wsprof_ok((const char *[]){ "report", "heatmap", "--range", "all", trace, "-o", svg, NULL }, 0));
	wt_assert_svg(svg);
	free(wt_wsprof_ok((const char *[]){ "report", "heatmap", "--range", "all", trace, "-o", png, NULL }, 0));
	wt_assert_png(png, 1263, 892, 16);
	free(trace), free(pdf), free(svg), free(png);
}

/* ---- access samples: the story ------------------------------------------- */

Test(heatmap, by_name_the_story_shows_what_was_accessed_when)
{
	char *trace = wt_golden("story");
	struct wt_json *j = heatmap_json((const char *[]){ "--by", "name", trace, NULL });
	cr_expect_str_eq(wt_json_str(j, "colour"), "accessed_bytes_per_s");
	cr_expect_str_eq(wt_json_str(j, "unit"), "bytes/s");
	cr_expect_str_eq(wt_json_str(j, "sources.0"), "writes");
	cr_expect_str_eq(wt_json_str(j, "sources.1"), "inferred");
	size_t n = columns(j);
	cr_assert_eq(n, 100, "a column a window: 10 s of 100 ms windows");
	/* 12 kernel launches touch the 6 GiB of weights: the most accessed. */
	cr_expect_str_eq(wt_json_str(j, "rows.0.label"), "weights");
	cr_expect_eq(wt_u64(j, "rows.0.accessed_bytes"), 12 * 6 * 1024 * MiB);
	/* 32 MiB written in every 100 ms window from 0.2 to 9.7 s. */
	const struct wt_json *grad = row_labelled(j, "grad-accum"), *staging = row_labelled(j, "host-weights");
	cr_assert(grad && staging, "no grad-accum or host-weights row");
	size_t hot = 0;
	for (size_t c = 0; c < n; c++) {
		uint64_t a = edge_ns(j, c), b = edge_ns(j, c + 1);
		if (a >= 200000000 && b <= 9700000000) {
			cr_expect_eq(cell(grad, "values", c), 320 * MiB, "grad-accum at %.1f s", a / 1e9);
			hot++;
		}
		/* 4 MiB a window until 1.8 s, then live and never accessed. */
		if (a >= 300000000 && b <= 1800000000)
			cr_expect_eq(cell(staging, "values", c), 40 * MiB, "host-weights at %.1f s", a / 1e9);
		if (a >= 1900000000) {
			cr_expect_eq(cell(staging, "values", c), 0, "host-weights at %.1f s", a / 1e9);
			cr_expect_eq(cell(staging, "live_bytes", c), 64 * MiB, "host-weights at %.1f s", a / 1e9);
		}
	}
	cr_expect_eq(hot, 95);
	const struct wt_json *rows = wt_json_get(j, "rows");
	cr_expect_str_eq(wt_json_str(&rows->items[rows->count - 1], "label"), "(unnamed memory)", "unnamed last");
	cr_expect_str_eq(wt_json_str(&rows->items[rows->count - 1], "row"), "unnamed");
	wt_json_free(j);

	/* Device memory only: the host buffers are gone. */
	j = heatmap_json((const char *[]){ "--by", "name", "--kind", "cuda_device", trace, NULL });
	cr_expect_str_eq(wt_json_str(j, "kind"), "cuda_device");
	cr_expect_str_eq(wt_json_str(j, "rows.0.label"), "weights");
	cr_expect(!row_labelled(j, "grad-accum") && !row_labelled(j, "host-weights"), "host memory in a device heatmap");
	cr_expect(row_labelled(j, "kv-cache-4"), "no kv-cache-4 row");
	wt_json_free(j);
	free(trace);
}

Test(heatmap, by_site_cold_memory_is_live_and_grey_not_missing)
{
	char *trace = wt_golden("story");
	struct wt_json *j = heatmap_json((const char *[]){ "--by", "callsite", trace, NULL });
	/* The unnamed 48 MiB index: written once, in the window ending 0.2 s. */
	const struct wt_json *index = row_labelled(j, "trainer+0x2310");
	cr_assert(index, "no row for the index's site");
	cr_expect_eq(cell(index, "values", 1), 480 * MiB, "48 MiB in the 100 ms window ending 0.2 s");
	for (size_t c = 2; c < columns(j); c++) {
		cr_expect_eq(cell(index, "values", c), 0, "the index accessed at %.1f s", c / 10.0);
		cr_expect_eq(cell(index, "live_bytes", c), 48 * MiB, "the index not live at %.1f s", c / 10.0);
	}
	wt_json_free(j);

	const char *dir = wt_test_dir();
	char *png = wt_path(dir, "sites.png"), *pdf = wt_path(dir, "sites.pdf");
	free(wt_wsprof_ok((const char *[]){ "report", "heatmap", "--by", "callsite", trace, "-o", png, NULL }, 0));
	wt_assert_png(png, 1263, 892, 32);
	cr_expect_gt(pixels_of(png, COLD_GREY), 20000, "no pale grey: cold memory must show, never as black");
	cr_expect_eq(pixels_of(png, 0, 0, 0), 0, "black in the picture: cold drawn as missing?");
	free(wt_wsprof_ok((const char *[]){ "report", "heatmap", "--by", "name", trace, "-o", pdf, NULL }, 0));
	char *text = wt_pdf_text(pdf);
	expect_words(text, (const char *[]){ "Heatmap: memory accessed by named buffer, over time", "/opt/golden/bin/trainer",
					     "weights", "kv-cache-1", "grad-accum", "(unnamed memory)", "accessed bytes/s",
					     "60.0 GiB/s", "train", NULL });
	free(text);
	free(trace), free(png), free(pdf);
}

Test(heatmap, by_address_the_story_shows_its_device_memory_first)
{
	char *trace = wt_golden("story");
	struct wt_json *all = heatmap_json((const char *[]){ "--range", "all", trace, NULL });
	struct wt_json *hot = heatmap_json((const char *[]){ trace, NULL });
	cr_expect_eq(wt_u64(all, "spans"), wt_u64(hot, "spans"));
	cr_expect_gt(wt_u64(all, "spans"), 1, "host and device memory lie far apart");
	cr_expect_eq(wt_json_get(all, "gaps")->count, wt_u64(all, "spans") - 1, "a separator for each gap");
	/* The hottest: the device blocks the kernel launches touch, from 0x7e0000000000. */
	cr_expect_eq(wt_u64(hot, "view_lo"), 0x7e0000000000ull);
	cr_expect_eq(wt_u64(hot, "rows.0.lo"), 0x7e0000000000ull);
	cr_expect_leq(wt_json_get(hot, "rows")->count, 160);
	cr_expect_str_eq(wt_json_str(hot, "colour"), "accessed_bytes_per_s");
	wt_json_free(all);
	wt_json_free(hot);
	char *svg = wt_path(wt_test_dir(), "a.svg");
	free(wt_wsprof_ok((const char *[]){ "report", "heatmap", trace, "-o", svg, NULL }, 0));
	wt_assert_svg(svg);
	free(svg);
	free(trace);
}

/* ---- bad input ------------------------------------------------------------ */

static void expect_refused(const char *const args[], int status, const char *says)
{
	const char *argv[16] = { wt_wsprof(), "report", "heatmap" };
	size_t n = 3;
	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0);
	cr_expect_eq(r.status, status, "exit %d, not %d, for %s:\n%s", r.status, status, args[0], r.err);
	cr_expect(r.err && strstr(r.err, says), "stderr does not say \"%s\":\n%s", says, r.err);
	cr_expect(!r.out || !r.out[0], "output on refusal:\n%s", r.out);
	wt_result_free(&r);
}

Test(heatmap, bad_input_is_refused_in_one_line)
{
	char *trace = wt_golden("server"), *missing = wt_path(wt_test_dir(), "none.wsp");
	char *txt = wt_path(wt_test_dir(), "heat.txt");
	expect_refused((const char *[]){ "--by", "colour", trace, NULL }, 2, "--by takes address, callsite or name");
	expect_refused((const char *[]){ "--range", "0x6000-0x4000", trace, NULL }, 2, "--range takes hot, all or LO-HI");
	expect_refused((const char *[]){ "--range", "lots", trace, NULL }, 2, "--range takes hot, all or LO-HI");
	expect_refused((const char *[]){ "--top", "0", trace, NULL }, 2, "--top wants 1 to 45 rows");
	expect_refused((const char *[]){ "--kind", "cuda_vmm", trace, NULL }, 2, "use --kind cuda_vmm_mapped");
	expect_refused((const char *[]){ "--kind", "ram", trace, NULL }, 2, "unknown kind 'ram'");
	expect_refused((const char *[]){ "-o", txt, trace, NULL }, 2, "name the output .pdf, .svg or .png");
	expect_refused((const char *[]){ missing, NULL }, 1, "none.wsp");
	expect_refused((const char *[]){ NULL }, 2, "needs exactly one trace file");
	cr_expect(!wt_file_exists(txt), "a file was written for a refused command");
	free(trace), free(missing), free(txt);
}

/* ---- a recording: hot and idle ---------------------------------------------- */

/* The line of a marker in hot_idle.c. */
static uint64_t source_line(const char *marker)
{
	char *path = wt_path(getenv("WSPROF_SOURCE_ROOT"), "tests/access/hot_idle.c");
	char *text = wt_read_file(path, NULL);
	cr_assert(text && strstr(text, marker), "no %s in %s", marker, path);
	uint64_t line = 1;
	for (const char *p = text; p < strstr(text, marker); p++)
		line += *p == '\n';
	free(text);
	free(path);
	return line;
}

struct written {
	uint64_t all;       /* bytes of the written-pages regions */
	uint64_t hot, idle; /* of them, in each buffer while it was allocated */
};

static uint64_t overlap(const wsprof_region *r, uint64_t lo, uint64_t hi)
{
	uint64_t a = r->addr > lo ? r->addr : lo, b = r->addr + r->len < hi ? r->addr + r->len : hi;
	return b > a ? b - a : 0;
}

/* What the recorder saw written, read from the trace itself; skips the
 * test unless it could watch written pages, as the trace header says.
 * A buffer's bytes count from the sample after its malloc to the one
 * before its free: the heatmap splits a sample among the blocks live
 * when it is taken (pages of the range may be written while it is
 * someone else's, the loader's before, the allocator's after). */
static struct written read_written(const char *trace, uint64_t hot, uint64_t idle, uint64_t size)
{
	wsprof_trace *t;
	cr_assert_eq(wsprof_trace_open(trace, &t), 0, "cannot open %s", trace);
	const wsprof_process *p = wsprof_trace_process(t);
	if (!(p->access_sources & WSPROF_SOURCE_WRITES))
		cr_skip_test("no written pages in the recording (%s): it takes Linux >= 6.7 and userfaultfd allowed",
			     p->access_note ? p->access_note : "");
	struct written w = { 0 };
	bool hot_live = false, idle_live = false;
	wsprof_event ev;
	while (wsprof_trace_next(t, &ev) > 0) {
		if ((ev.type == WSPROF_EV_ALLOC || ev.type == WSPROF_EV_FREE) && ev.kind == WSPROF_KIND_HEAP) {
			hot_live = ev.addr == hot ? ev.type == WSPROF_EV_ALLOC : hot_live;
			idle_live = ev.addr == idle ? ev.type == WSPROF_EV_ALLOC : idle_live;
		}
		for (size_t i = 0; ev.type == WSPROF_EV_ACCESS && ev.op == WSPROF_ACCESS_WRITES && i < ev.nregions; i++) {
			w.all += ev.regions[i].len;
			w.hot += hot_live ? overlap(&ev.regions[i], hot, hot + size) : 0;
			w.idle += idle_live ? overlap(&ev.regions[i], idle, idle + size) : 0;
		}
	}
	wsprof_trace_close(t);
	return w;
}

/* Bytes the heatmap spread over its columns add up to the bytes sampled. */
static void expect_bytes(uint64_t got, uint64_t want, const char *what)
{
	uint64_t d = got > want ? got - want : want - got;
	cr_expect_leq(d, 64 + want / 1000000, "%s: %llu bytes accessed in the heatmap, %llu in the trace", what,
		      (unsigned long long)got, (unsigned long long)want);
}

Test(heatmap, a_recording_shows_the_hot_buffer_hot_and_the_idle_one_grey)
{
	struct wt_recording rec;
	wt_record_with(&rec, (const char *const[]){ "WSPROF_WINDOW_MS=250", "WSPROF_WP_PAGES=8192", NULL }, NULL, HOT_IDLE,
		       (const char *[]){ "plain", "3000", NULL });
	wt_assert_status(&rec.run, 0, "wsprof record hot_idle");
	cr_assert(rec.expect, "hot_idle wrote no expect file");
	uint64_t size = wt_u64(rec.expect, "size"), idle = wt_u64(rec.expect, "idle"), hot = wt_u64(rec.expect, "hot");
	struct written w = read_written(rec.trace, hot, idle, size);

	struct wt_json *j = heatmap_json((const char *[]){ "--by", "callsite", rec.trace, NULL });
	cr_expect_str_eq(wt_json_str(j, "colour"), "accessed_bytes_per_s");
	char hot_label[64], idle_label[64];
	snprintf(hot_label, sizeof hot_label, "run (hot_idle.c:%llu)", (unsigned long long)source_line("SITE:hot"));
	snprintf(idle_label, sizeof idle_label, "run (hot_idle.c:%llu)", (unsigned long long)source_line("SITE:idle"));
	const struct wt_json *hot_row = row_labelled(j, hot_label), *idle_row = row_labelled(j, idle_label);
	cr_assert(hot_row && idle_row, "no rows \"%s\" and \"%s\"", hot_label, idle_label);
	cr_expect_str_eq(wt_json_str(j, "rows.0.label"), hot_label, "the hot buffer's site first");
	expect_bytes(wt_u64(hot_row, "accessed_bytes"), w.hot, "the hot buffer");
	expect_bytes(wt_u64(idle_row, "accessed_bytes"), w.idle, "the idle buffer");
	cr_expect_gt(w.hot, w.idle);
	/* Inside the steady phase, once the sampler has settled (its budget
	 * goes round the 32768 pages of both buffers in ceil(36864 / 8192)
	 * windows; test_access.c), and a window more for a column's edges. */
	const struct wt_json *steady = NULL, *phases = wt_json_get(j, "phases");
	for (size_t i = 0; phases && i < phases->count; i++)
		if (!strcmp(wt_json_str(&phases->items[i], "name"), "steady"))
			steady = &phases->items[i];
	cr_assert(steady, "no steady phase in the JSON");
	double from = strtod(wt_json_get(steady, "start_s")->text, NULL) + 7 * 0.25;
	double until = strtod(wt_json_get(steady, "end_s")->text, NULL);
	size_t seen = 0;
	for (size_t c = 0; c < columns(j); c++) {
		double a = edge_ns(j, c) / 1e9, b = edge_ns(j, c + 1) / 1e9;
		if (a < from || b > until)
			continue;
		seen++;
		cr_expect_gt(cell(hot_row, "values", c), 0, "the hot buffer not accessed %.2f-%.2f s", a, b);
		cr_expect_eq(cell(idle_row, "values", c), 0, "the idle buffer accessed %.2f-%.2f s", a, b);
		cr_expect_eq(cell(idle_row, "live_bytes", c), size, "the idle buffer not live %.2f-%.2f s", a, b);
	}
	cr_assert_geq(seen, 2, "only %zu columns in the settled steady phase (%.2f-%.2f s)", seen, from, until);
	wt_json_free(j);

	/* By address: bands wholly inside the idle buffer stay cold, those of the hot one are accessed. */
	j = heatmap_json((const char *[]){ "--range", "all", rec.trace, NULL });
	const struct wt_json *rows = wt_json_get(j, "rows");
	size_t idle_bands = 0, hot_bands = 0;
	uint64_t all = 0;
	for (size_t i = 0; rows && i < rows->count; i++) {
		const struct wt_json *row = &rows->items[i];
		all += wt_u64(row, "accessed_bytes");
		uint64_t lo = wt_u64(row, "lo"), hi = wt_u64(row, "hi");
		bool in_idle = lo >= idle && hi <= idle + size, in_hot = lo >= hot && hi <= hot + size;
		for (size_t c = 0; (in_idle || in_hot) && c < columns(j); c++) {
			double a = edge_ns(j, c) / 1e9, b = edge_ns(j, c + 1) / 1e9;
			if (a < from || b > until)
				continue;
			if (in_idle)
				cr_expect_eq(cell(row, "values", c), 0, "idle band %s accessed %.2f-%.2f s", wt_json_str(row, "label"),
					     a, b);
			else
				hot_bands += cell(row, "values", c) > 0;
		}
		idle_bands += in_idle;
	}
	expect_bytes(all, w.all, "every band");
	cr_expect_gt(idle_bands, 16, "the idle buffer in %zu bands", idle_bands);
	cr_expect_gt(hot_bands, 0, "no band of the hot buffer accessed");
	wt_json_free(j);

	char *png = wt_path(rec.dir, "h.png"), *svg = wt_path(rec.dir, "h.svg");
	free(wt_wsprof_ok((const char *[]){ "report", "heatmap", "--by", "callsite", rec.trace, "-o", png, NULL }, 0));
	wt_assert_png(png, 1263, 892, 16);
	cr_expect_gt(pixels_of(png, COLD_GREY), 50000, "the idle buffer's row is not pale grey");
	free(wt_wsprof_ok((const char *[]){ "report", "heatmap", "--by", "callsite", rec.trace, "-o", svg, NULL }, 0));
	wt_assert_svg(svg);
	free(png), free(svg);
	wt_recording_free(&rec);
}

/* ---- the pages the full report draws ------------------------------------------- */

Test(heatmap, the_report_draws_a_page_per_view_and_leaves_out_names_nobody_gave)
{
	const char *dir = wt_test_dir();
	char *story = wt_golden("story"), *server = wt_golden("server");
	char *pdf = wt_path(dir, "views.pdf");
	struct wsp_heatmap_options o = { .views = 1u << WSP_HEAT_BY_ADDRESS | 1u << WSP_HEAT_BY_CALLSITE |
						  1u << WSP_HEAT_BY_NAME,
					 .kind = -1 };
	struct wsp_doc *doc = wsp_doc_open(pdf, true);
	cr_assert(doc);
	cr_expect_eq(wsp_heatmap_draw(doc, story, &o), 3, "address, call site and name");
	cr_expect_eq(wsp_heatmap_draw(doc, server, &o), 2, "server.wsp names no block: no page for names");
	cr_assert_eq(wsp_doc_close(doc), 0);
	wsp_doc_free(doc);
	cr_expect_eq(wt_pdf_pages(pdf), 5);
	char *text = wt_pdf_text(pdf);
	expect_words(text, (const char *[]){ "memory accessed by address", "memory accessed by allocation site",
					     "memory accessed by named buffer", "live memory by address",
					     "live memory by allocation site", NULL });
	cr_expect(!strstr(text, "No block was named"), "a page for names nobody gave");
	free(text);
	char *missing = wt_path(dir, "none.wsp");
	doc = wsp_doc_open(pdf, true);
	cr_expect_eq(wsp_heatmap_draw(doc, missing, &o), -1, "a trace that is not there");
	wsp_doc_free(doc);
	free(story), free(server), free(pdf), free(missing);
}
