/*
 * test_statemap.c - `wsprof report state`: each memory's layout (holes,
 * the largest, fragmentation, breaks, pools, the failed request against
 * the largest hole) in text and JSON, and the memory map drawn as PDF, SVG
 * and PNG (-o).
 *
 * Traces: the golden server (tests/golden/server.wsp: heap blocks at
 * 0x1000 (1 KiB), 0x4000 (2 KiB), 0x5000 (100 B) at the heap peak; a
 * 1 TiB malloc failing at 22 ms after 0x4000 was freed), the golden story
 * (a 2 GiB cuMemAlloc failing on device 0 at 7.510 s), and one built here
 * whose every figure is known by construction (built_trace below).
 */
#include "harness.h"
#include "pictures.h"
#include "trace_builder.h"

#include "wsprof/trace.h"

#include <cairo.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(statemap, .fini = wt_cleanup, .timeout = 60);

#define MS 1000000ull
#define MiB (1ull << 20)
#define GiB (1ull << 30)

/* This test's directory: wt_test_dir makes a new one at each call; each
 * test runs in a process of its own. */
static const char *here(void)
{
	static const char *dir;
	return dir ? dir : (dir = wt_test_dir());
}

static void expect_words(const char *text, const char *const words[])
{
	for (size_t i = 0; words[i]; i++)
		cr_expect(strstr(text, words[i]), "no \"%s\" in:\n%s", words[i], text);
}

static struct wt_json *json_of(const char *const args[])
{
	char *out = wt_wsprof_ok(args, 0), err[256];
	struct wt_json *j = wt_json_parse(out, err, sizeof err);
	cr_assert(j, "not JSON (%s):\n%s", err, out);
	free(out);
	return j;
}

/* A number's literal text, for the doubles (fragmentation). */
static const char *number(const struct wt_json *j, const char *path)
{
	const struct wt_json *v = wt_json_get(j, path);
	cr_assert(v && v->type == WT_JSON_NUMBER, "no number at %s", path);
	return v->text;
}

/* ---- a trace built here: heap with a pool, a break and slack; two devices ---- */

enum {
	SLAB = 0x10000,    /* 4 KiB, a pool: sub-allocations at +0x100 (1 KiB) and +0x600 (512 B, collectable) */
	CACHE = 0x12000,   /* 8 KiB, released: collectable. A 4 KiB hole before it */
	TABLE = 0x16000,   /* 2 KiB. An 8 KiB hole before it: the largest */
	TINY = 0x16810,    /* 1000 B, 16 B after TABLE: slack, no hole */
};
#define BIG 0x7f0000000000ull /* 64 KiB, far away: a break */
#define DEV0 0x7e0000000000ull
#define DEV1 0x7e1000000000ull /* 1 GiB, a 512 MiB hole, 1 GiB, a 512 MiB hole, 512 MiB */

struct built {
	struct trace_builder b;
	uint64_t seq;
};

static uint64_t at(struct built *t)
{
	return ++t->seq * MS;
}

static void heap(struct built *t, uint64_t addr, uint64_t size, const char *name)
{
	uint64_t when = at(t);
	tb_ev_alloc(&t->b, t->seq, when, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, addr, size, 0);
	if (name)
		tb_ev_annotate(&t->b, ++t->seq, when, WSPROF_ANN_NAME, addr, 0, 0, name);
}

static void device(struct built *t, int dev, uint64_t addr, uint64_t size, const char *name)
{
	const struct tb_cuda_tag tag = { dev, 0, 0 };
	uint64_t when = at(t);
	tb_ev_cuda_alloc(&t->b, t->seq, when, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC, addr, size, 0, &tag);
	tb_ev_annotate(&t->b, ++t->seq, when, WSPROF_ANN_NAME, addr, 0, 0, name);
}

static void released(struct built *t, uint64_t addr)
{
	tb_ev_annotate(&t->b, ++t->seq, at(t), WSPROF_ANN_ACQUIRE, addr, 0, 0, NULL);
	tb_ev_annotate(&t->b, ++t->seq, at(t), WSPROF_ANN_RELEASE, addr, 0, 0, NULL);
}

static char *built_trace(void)
{
	struct built t = { .seq = 0 };
	tb_init(&t.b);
	struct tb_process p = tb_process_default();
	p.exe = "/opt/built/bin/mapper";
	p.cmdline = "/opt/built/bin/mapper";
	p.cmdline_len = sizeof "/opt/built/bin/mapper";
	tb_header(&t.b, &p);
	tb_segment(&t.b, 1, 0, 0);
	heap(&t, SLAB, 4096, "slab");
	const struct tb_cuda_tag pool = { -1, 0, SLAB };
	tb_ev_cuda_alloc(&t.b, ++t.seq, at(&t), WSPROF_KIND_POOL, WSPROF_OP_POOL_ALLOC, SLAB + 0x100, 1024, 0, &pool);
	tb_ev_cuda_alloc(&t.b, ++t.seq, at(&t), WSPROF_KIND_POOL, WSPROF_OP_POOL_ALLOC, SLAB + 0x600, 512, 0, &pool);
	released(&t, SLAB + 0x600);
	heap(&t, CACHE, 8192, "cache");
	released(&t, CACHE);
	heap(&t, TABLE, 2048, "table");
	heap(&t, TINY, 1000, NULL);
	heap(&t, BIG, 65536, "big");
	device(&t, 0, DEV0, 1 * GiB, "weights0");
	device(&t, 1, DEV1, 1 * GiB, "a");
	device(&t, 1, DEV1 + 1536 * MiB, 1 * GiB, "b");
	device(&t, 1, DEV1 + 3 * GiB, 512 * MiB, "c");
	tb_ev_device_memory(&t.b, ++t.seq, at(&t), 1, 1280 * MiB, 4 * GiB);
	const struct tb_cuda_tag dev1 = { 1, 0, 0 };
	tb_ev_cuda_fail(&t.b, ++t.seq, at(&t), WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC, 768 * MiB, 0, &dev1);
	tb_sync(&t.b, t.seq + 1, t.seq * MS);
	tb_chunk(&t.b);
	tb_footer(&t.b, (t.seq + 1) * MS);
	char *path = wt_path(here(), "built.wsp");
	cr_assert_eq(tb_save(&t.b, path), 0, "cannot write %s", path);
	tb_fini(&t.b);
	return path;
}

/* ---- the figures ---------------------------------------------------------- */

Test(statemap, the_heap_at_its_peak_in_text)
{
	char *trace = wt_golden("server");
	char *text = wt_wsprof_ok((const char *[]){ "report", "state", "--at", "peak", "--kind", "heap", trace, NULL }, 0);
	expect_words(text, (const char *[]){
		"  heap         3.10 KiB live in 3 blocks: 3.10 KiB in use, 0 B collectable\n"
		"               0x1000-0x5064: 13.0 KiB free in 2 holes, largest hole 11.0 KiB at 0x1400, fragmentation 15.4 %\n",
		NULL });
	cr_expect(!strstr(text, "failed "), "a failure at the peak:\n%s", text);
	free(text);
	free(trace);
}

Test(statemap, the_heap_at_its_peak_in_json)
{
	char *trace = wt_golden("server");
	struct wt_json *j = json_of((const char *[]){ "report", "state", "--kind", "heap", "--json", trace, NULL });
	cr_expect_str_eq(wt_json_str(j, "memories.0.kind"), "heap");
	cr_expect_eq(wt_json_get(j, "memories.0.device")->type, WT_JSON_NULL);
	cr_expect_eq(wt_u64(j, "memories.0.span_start"), 0x1000);
	cr_expect_eq(wt_u64(j, "memories.0.span_end"), 0x5064);
	cr_expect_eq(wt_u64(j, "memories.0.live_bytes"), 3172);
	cr_expect_eq(wt_u64(j, "memories.0.blocks"), 3);
	cr_expect_eq(wt_u64(j, "memories.0.holes"), 2);
	cr_expect_eq(wt_u64(j, "memories.0.free_bytes"), 11264 + 2048);
	cr_expect_eq(wt_u64(j, "memories.0.largest_hole_bytes"), 11264);
	cr_expect_eq(wt_u64(j, "memories.0.largest_hole_address"), 0x1400);
	cr_expect_str_eq(number(j, "memories.0.fragmentation"), "0.153846154"); /* 1 - 11264 / 13312 */
	cr_expect_eq(wt_u64(j, "memories.0.breaks"), 0);
	cr_expect_null(wt_json_get(j, "memories.1"), "--kind heap lays out the heap alone");
	cr_expect_eq(wt_json_get(j, "failed_request")->type, WT_JSON_NULL);
	cr_expect_eq(wt_json_get(j, "blocks")->count, 3);
	wt_json_free(j);
	free(trace);
}

Test(statemap, the_failed_request_against_the_largest_hole)
{
	char *trace = wt_golden("server");
	char *text = wt_wsprof_ok((const char *[]){ "report", "state", "--at", "oom", trace, NULL }, 0);
	expect_words(text, (const char *[]){
		"  heap         1.10 KiB live in 2 blocks: 1.10 KiB in use, 0 B collectable\n"
		"               0x1000-0x5064: 15.0 KiB free in 1 hole, largest hole 15.0 KiB at 0x1400, fragmentation 0.0 %\n",
		"  mmap         16.0 KiB live in 1 block: 16.0 KiB in use, 0 B collectable\n"
		"               0x7e0000000000-0x7e0000004000: no holes between its blocks\n",
		"  failed       malloc of 1.00 TiB (heap): requested 1.00 TiB, largest hole 15.0 KiB; more than all the holes "
		"together: memory is short, not fragmented\n",
		NULL });
	free(text);
	struct wt_json *j = json_of((const char *[]){ "report", "state", "--at", "oom", "--json", trace, NULL });
	cr_expect_str_eq(wt_json_str(j, "memories.0.kind"), "heap", "the memory that failed comes first");
	cr_expect_str_eq(wt_json_str(j, "memories.1.kind"), "mmap");
	cr_expect_str_eq(wt_json_str(j, "failed_request.kind"), "heap");
	cr_expect_str_eq(wt_json_str(j, "failed_request.op"), "malloc");
	cr_expect_eq(wt_u64(j, "failed_request.size"), 1ull << 40);
	cr_expect_eq(wt_u64(j, "failed_request.largest_hole_bytes"), 0x5000 - 0x1400);
	cr_expect_eq(wt_u64(j, "failed_request.free_bytes"), 0x5000 - 0x1400);
	bool fits = true;
	cr_expect(wt_json_bool(j, "failed_request.fits_largest_hole", &fits) && !fits);
	wt_json_free(j);
	free(trace);
}

Test(statemap, pools_slack_breaks_and_devices_of_a_built_trace)
{
	char *trace = built_trace();
	char *text = wt_wsprof_ok((const char *[]){ "report", "state", "--at", "oom", trace, NULL }, 0);
	char heap_line[256];
	snprintf(heap_line, sizeof heap_line,
		 "               0x10000-0x7f0000010000: 12.0 KiB free in 2 holes, largest hole 8.00 KiB at 0x14000, "
		 "fragmentation 33.3 %%; 127 TiB apart in 1 break\n");
	expect_words(text, (const char *[]){
		"  heap         79.0 KiB live in 5 blocks: 71.0 KiB in use, 8.00 KiB collectable\n",
		heap_line,
		"  cuda_device  3.50 GiB live in 4 blocks: 3.50 GiB in use, 0 B collectable\n"
		"  device 0     0x7e0000000000-0x7e0040000000: no holes between its blocks\n"
		"  device 1     0x7e1000000000-0x7e10e0000000: 1.00 GiB free in 2 holes, largest hole 512 MiB at "
		"0x7e1040000000, fragmentation 50.0 %; 1.25 GiB of 4.00 GiB free on the device at the last sample\n",
		"  pool         1.50 KiB live in 2 blocks: 1.00 KiB in use, 512 B collectable\n",
		"  failed       cuMemAlloc of 768 MiB (cuda_device on device 1): requested 768 MiB, largest hole 512 MiB; "
		"the holes add up to enough, but none is large enough: fragmentation\n",
		NULL });
	free(text);

	struct wt_json *j = json_of((const char *[]){ "report", "state", "--at", "oom", "--json", trace, NULL });
	/* device 1 failed: first; then by kind and device */
	cr_expect_str_eq(wt_json_str(j, "memories.0.kind"), "cuda_device");
	cr_expect_eq(wt_u64(j, "memories.0.device"), 1);
	cr_expect_str_eq(wt_json_str(j, "memories.1.kind"), "heap");
	cr_expect_str_eq(wt_json_str(j, "memories.2.kind"), "cuda_device");
	cr_expect_eq(wt_u64(j, "memories.2.device"), 0);
	cr_expect_null(wt_json_get(j, "memories.3"), "pool sub-allocations are no memory of their own");

	cr_expect_eq(wt_u64(j, "memories.0.live_bytes"), 2 * GiB + 512 * MiB);
	cr_expect_eq(wt_u64(j, "memories.0.holes"), 2);
	cr_expect_eq(wt_u64(j, "memories.0.free_bytes"), 1 * GiB);
	cr_expect_eq(wt_u64(j, "memories.0.largest_hole_bytes"), 512 * MiB);
	cr_expect_eq(wt_u64(j, "memories.0.largest_hole_address"), DEV1 + 1 * GiB);
	cr_expect_str_eq(number(j, "memories.0.fragmentation"), "0.5");
	cr_expect_eq(wt_u64(j, "memories.0.slack_bytes"), 512);
	cr_expect_eq(wt_u64(j, "memories.0.break_bytes"), 64 * GiB, "64 times the median block, 1 GiB");
	cr_expect_eq(wt_u64(j, "memories.0.device_free_bytes"), 1280 * MiB);
	cr_expect_eq(wt_u64(j, "memories.0.device_total_bytes"), 4 * GiB);

	cr_expect_eq(wt_u64(j, "memories.1.span_start"), SLAB);
	cr_expect_eq(wt_u64(j, "memories.1.span_end"), BIG + 65536);
	cr_expect_eq(wt_u64(j, "memories.1.live_bytes"), 4096 + 8192 + 2048 + 1000 + 65536);
	cr_expect_eq(wt_u64(j, "memories.1.blocks"), 5);
	cr_expect_eq(wt_u64(j, "memories.1.collectable_bytes"), 8192);
	cr_expect_eq(wt_u64(j, "memories.1.holes"), 2, "the 16 B after the table is slack, not a hole");
	cr_expect_eq(wt_u64(j, "memories.1.free_bytes"), 4096 + 8192);
	cr_expect_eq(wt_u64(j, "memories.1.largest_hole_bytes"), 8192);
	cr_expect_eq(wt_u64(j, "memories.1.largest_hole_address"), 0x14000);
	cr_expect_str_eq(number(j, "memories.1.fragmentation"), "0.333333333");
	cr_expect_eq(wt_u64(j, "memories.1.slack_bytes"), 32);
	cr_expect_eq(wt_u64(j, "memories.1.break_bytes"), 1 * MiB, "64 median blocks are 256 KiB: 1 MiB at least");
	cr_expect_eq(wt_u64(j, "memories.1.breaks"), 1);
	cr_expect_eq(wt_u64(j, "memories.1.break_total_bytes"), BIG - (TINY + 1000));
	cr_expect_eq(wt_u64(j, "memories.1.pools"), 1);
	cr_expect_eq(wt_u64(j, "memories.1.pooled_bytes"), 1536);
	cr_expect_null(wt_json_get(j, "memories.1.device_free_bytes"), "the heap has no device");

	cr_expect_eq(wt_u64(j, "memories.2.holes"), 0);
	cr_expect_str_eq(number(j, "memories.2.fragmentation"), "0");
	cr_expect_null(wt_json_get(j, "memories.2.device_free_bytes"), "device 0 was never sampled");

	cr_expect_str_eq(wt_json_str(j, "failed_request.kind"), "cuda_device");
	cr_expect_eq(wt_u64(j, "failed_request.device"), 1);
	cr_expect_eq(wt_u64(j, "failed_request.size"), 768 * MiB);
	cr_expect_eq(wt_u64(j, "failed_request.largest_hole_bytes"), 512 * MiB);
	cr_expect_eq(wt_u64(j, "failed_request.free_bytes"), 1 * GiB);
	wt_json_free(j);

	/* The map: a page per memory, the one that failed first. */
	char *pdf = wt_path(here(), "built.pdf");
	free(wt_wsprof_ok((const char *[]){ "report", "state", "--at", "oom", trace, "-o", pdf, NULL }, 0));
	cr_expect_eq(wt_pdf_pages(pdf), 3);
	char *words = wt_pdf_text(pdf);
	const char *d1 = strstr(words, "Memory map: device 1 at the first failed cuda_device allocation");
	const char *h = strstr(words, "Memory map: heap at"), *d0 = strstr(words, "Memory map: device 0 at");
	cr_expect(d1 && h && d0 && d1 < h && h < d0, "pages not device 1, heap, device 0:\n%s", words);
	expect_words(words, (const char *[]){ "requested 768 MiB, largest hole 512 MiB",
					      "the holes add up to enough, but none is large enough: fragmentation",
					      "free on the device", "1.25 GiB", "largest hole 512 MiB", "33.3 %", "50.0 %",
					      "slab", "cache", "8.00 KiB", "table", "big", "gap", "127 TiB", "weights0",
					      "pool (its sub-allocations inside)", "break: a gap left out",
					      "1.50 KiB", "1 pool", "0x7e1000000000", NULL });
	free(words);
	free(pdf);
	free(trace);
}

/* ---- the pictures --------------------------------------------------------- */

Test(statemap, the_map_of_the_heap_as_pdf)
{
	char *trace = wt_golden("server"), *pdf = wt_path(here(), "heap.pdf");
	free(wt_wsprof_ok((const char *[]){ "report", "state", "--kind", "heap", trace, "-o", pdf, NULL }, 0));
	cr_expect_eq(wt_pdf_pages(pdf), 1, "one memory, one page");
	char *text = wt_pdf_text(pdf);
	expect_words(text, (const char *[]){ "Memory map: heap at the heap peak (0.020 s)", "/opt/golden/bin/server",
					     "0.020 s of 0.025 s", "address span", "16.1 KiB", "0x1000 - 0x5064",
					     "3.10 KiB", "in 3 blocks", "free in holes", "13.0 KiB", "in 2 holes",
					     "largest hole 11.0 KiB", "at 0x1400", "fragmentation", "15.4 %",
					     "collectable", "server+0x1800", "1.00 KiB", "server+0x1400", "2.00 KiB",
					     "one row: 3.5 KiB", "0x1000", "0x5064", NULL });
	cr_expect(!strstr(text, "requested"), "no failed request at the peak:\n%s", text);
	free(text);
	free(pdf);
	free(trace);
}

Test(statemap, the_failed_request_in_the_pdf)
{
	char *trace = wt_golden("server"), *pdf = wt_path(here(), "oom.pdf");
	free(wt_wsprof_ok((const char *[]){ "report", "state", "--at", "oom", trace, "-o", pdf, NULL }, 0));
	cr_expect_eq(wt_pdf_pages(pdf), 2, "heap and mmap");
	char *text = wt_pdf_text(pdf);
	const char *heap = strstr(text, "Memory map: heap at the first failed heap allocation (0.022 s)");
	const char *mmap = strstr(text, "Memory map: mmap at the first failed heap allocation (0.022 s)");
	cr_expect(heap && mmap && heap < mmap, "the heap, which failed, is not the first page:\n%s", text);
	const char *req = strstr(text, "requested 1.00 TiB, largest hole 15.0 KiB");
	cr_expect(req && req < mmap, "the request is not on the heap's page:\n%s", text);
	cr_expect(mmap && !strstr(mmap, "requested"), "the request is drawn on the mmap page too:\n%s", text);
	expect_words(text, (const char *[]){ "malloc at 0.022 s", "more than all the holes together",
					     "the failed request", "the bars to one scale", NULL });
	free(text);
	free(pdf);
	free(trace);
}

Test(statemap, svg_and_png_a_file_per_page)
{
	char *trace = wt_golden("server"), *svg = wt_path(here(), "m.svg"), *png = wt_path(here(), "m.png");
	char *pdf = wt_path(here(), "m.pdf");
	free(wt_wsprof_ok((const char *[]){ "report", "state", "--at", "oom", trace, "-o", svg, NULL }, 0));
	free(wt_wsprof_ok((const char *[]){ "report", "state", "--at", "oom", trace, "-o", png, NULL }, 0));
	free(wt_wsprof_ok((const char *[]){ "report", "state", "--at", "oom", "--kind", "heap", trace, "-o", pdf, NULL },
			  0));
	size_t letters = 0; /* what the heap's page writes, without spaces */
	char *text = wt_pdf_text(pdf);
	for (const char *c = text; *c; c++)
		letters += *c != ' ' && *c != '\n' && *c != '\f';
	free(text);
	for (int page = 1; page <= 2; page++) {
		char *s = wt_path(here(), "m-%d.svg", page), *p = wt_path(here(), "m-%d.png", page);
		wt_assert_svg(s);
		wt_assert_png(p, 1263, 892, 16);
		if (page == 1) {
			/* cairo writes an SVG's text as glyphs: one <use> per letter drawn. */
			char *body = wt_read_file(s, NULL);
			size_t uses = 0;
			for (const char *u = body; (u = strstr(u, "xlink:href=\"#glyph")); u++)
				uses++;
			cr_expect_geq(uses, letters, "the SVG draws %zu glyphs, the PDF of the same page %zu letters", uses,
				      letters);
			free(body);
		}
		free(s);
		free(p);
	}
	char *third = wt_path(here(), "m-3.svg"), *single = wt_path(here(), "m.svg");
	cr_expect(!wt_file_exists(third) && !wt_file_exists(single), "more SVG files than memories");
	free(third);
	free(single);
	char *one = wt_path(here(), "one.png");
	free(wt_wsprof_ok((const char *[]){ "report", "state", "--kind", "heap", trace, "-o", one, NULL }, 0));
	wt_assert_png(one, 1263, 892, 16);
	free(one);
	free(pdf);
	free(png);
	free(svg);
	free(trace);
}

Test(statemap, the_device_oom_of_the_story)
{
	char *trace = wt_golden("story");
	struct wt_json *j = json_of((const char *[]){ "report", "state", "--at", "oom", "--json", trace, NULL });
	cr_expect_str_eq(wt_json_str(j, "memories.0.kind"), "cuda_device");
	cr_expect_eq(wt_u64(j, "memories.0.device"), 0);
	cr_expect_eq(wt_u64(j, "memories.0.blocks"), 7);
	cr_expect_eq(wt_u64(j, "memories.0.live_bytes"), 14 * GiB);
	cr_expect_eq(wt_u64(j, "memories.0.collectable_bytes"), 2 * GiB, "kv-cache-1 and -2");
	cr_expect_eq(wt_u64(j, "memories.0.device_total_bytes"), 16 * GiB);
	cr_expect_str_eq(wt_json_str(j, "failed_request.op"), "cuMemAlloc");
	cr_expect_eq(wt_u64(j, "failed_request.device"), 0);
	cr_expect_eq(wt_u64(j, "failed_request.size"), 2 * GiB);
	uint64_t largest = wt_u64(j, "memories.0.largest_hole_bytes"), free_b = wt_u64(j, "memories.0.free_bytes");
	cr_expect_eq(wt_u64(j, "failed_request.largest_hole_bytes"), largest);
	cr_expect_leq(largest, free_b);
	double frag = strtod(number(j, "memories.0.fragmentation"), NULL);
	cr_expect(fabs(frag - (free_b ? 1 - (double)largest / (double)free_b : 0)) < 1e-8, "fragmentation %g", frag);
	wt_json_free(j);

	char *pdf = wt_path(here(), "story.pdf");
	free(wt_wsprof_ok((const char *[]){ "report", "state", "--at", "oom", trace, "-o", pdf, NULL }, 0));
	cr_expect_eq(wt_pdf_pages(pdf), 2, "device 0 and the heap");
	char *text = wt_pdf_text(pdf);
	expect_words(text, (const char *[]){ "Memory map: device 0 at the first failed cuda_device allocation (7.510 s)",
					     "weights", "optimizer", "kv-cache-1", "kv-cache-4", "activations",
					     "requested 2.00 GiB, largest hole", "cuMemAlloc at 7.510 s",
					     "free on the device", "Memory map: heap at", "grad-accum", "host-weights",
					     "gap", NULL });
	free(text);
	free(pdf);
	free(trace);
}

/* Thousands of blocks still make one readable page, and the figures add
 * up to the blocks listed. */
Test(statemap, a_recorded_heap)
{
	char *prog = wt_path(getenv("WSPROF_EXAMPLES"), "taskrt"), *trace = wt_path(here(), "taskrt.wsp");
	free(wt_wsprof_ok((const char *[]){ "record", "-o", trace, "--", prog, NULL }, 0));
	struct wt_json *j = json_of((const char *[]){ "report", "state", "--kind", "heap", "--json", trace, NULL });
	const struct wt_json *blocks = wt_json_get(j, "blocks");
	cr_assert(blocks && blocks->count > 100, "a few hundred heap blocks at the peak");
	uint64_t live = 0, collectable = 0;
	for (size_t i = 0; i < blocks->count; i++) {
		bool c = false;
		live += wt_u64(&blocks->items[i], "size");
		if (wt_json_bool(&blocks->items[i], "collectable", &c) && c)
			collectable += wt_u64(&blocks->items[i], "size");
	}
	cr_expect_eq(wt_u64(j, "memories.0.blocks"), blocks->count);
	cr_expect_eq(wt_u64(j, "memories.0.live_bytes"), live);
	cr_expect_eq(wt_u64(j, "memories.0.collectable_bytes"), collectable);
	cr_expect_gt(collectable, 0, "stale copies are collectable");
	wt_json_free(j);
	char *png = wt_path(here(), "taskrt.png");
	free(wt_wsprof_ok((const char *[]){ "report", "state", "--kind", "heap", trace, "-o", png, NULL }, 0));
	wt_assert_png(png, 1263, 892, 16);
	free(png);
	free(trace);
	free(prog);
}

/* 20,000 heap blocks of 64 B, `gap` bytes apart: far too many to draw one
 * by one, so the map shows them by density. */
static char *dense_trace(const char *name, uint64_t gap)
{
	struct trace_builder b;
	tb_init(&b);
	struct tb_process p = tb_process_default();
	tb_header(&b, &p);
	tb_segment(&b, 1, 0, 0);
	uint64_t seq = 0;
	for (uint64_t i = 0; i < 20000; i++, seq++)
		tb_ev_alloc(&b, seq + 1, (seq + 1) * 1000, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x100000 + i * (64 + gap), 64, 0);
	tb_sync(&b, seq + 1, seq * 1000);
	tb_chunk(&b);
	tb_footer(&b, (seq + 1) * 1000);
	char *path = wt_path(here(), "%s.wsp", name);
	cr_assert_eq(tb_save(&b, path), 0, "cannot write %s", path);
	tb_fini(&b);
	return path;
}

/* The mean of the red channel over the first row of the map, from 0 to 1:
 * in-use green has little red, holes are near white. */
static double first_row_red(const char *png)
{
	cairo_surface_t *s = cairo_image_surface_create_from_png(png);
	cr_assert_eq(cairo_surface_status(s), CAIRO_STATUS_SUCCESS, "%s is not a PNG", png);
	const unsigned char *data = cairo_image_surface_get_data(s);
	int stride = cairo_image_surface_get_stride(s);
	double sum = 0;
	size_t n = 0;
	/* the first row: 144 to 174 pt down, 110 to 806 pt across; 1.5 pixels a point */
	for (int y = 222; y < 255; y++)
		for (int x = 170; x < 1200; x++, n++)
			sum += (((const uint32_t *)(data + (size_t)y * (size_t)stride))[x] >> 16 & 0xff) / 255.0;
	cairo_surface_destroy(s);
	return sum / (double)n;
}

Test(statemap, a_dense_map_shows_its_holes_by_shade)
{
	char *packed = dense_trace("packed", 16), *holey = dense_trace("holey", 64);
	char *text = wt_wsprof_ok((const char *[]){ "report", "state", packed, NULL }, 0);
	expect_words(text, (const char *[]){ "no holes between its blocks", NULL });
	free(text);
	text = wt_wsprof_ok((const char *[]){ "report", "state", holey, NULL }, 0);
	expect_words(text, (const char *[]){ "1.22 MiB free in 19,999 holes, largest hole 64 B at 0x100040, "
					     "fragmentation 99.9 %", NULL });
	free(text);
	char *a = wt_path(here(), "packed.png"), *b = wt_path(here(), "holey.png");
	free(wt_wsprof_ok((const char *[]){ "report", "state", packed, "-o", a, NULL }, 0));
	free(wt_wsprof_ok((const char *[]){ "report", "state", holey, "-o", b, NULL }, 0));
	double red_packed = first_row_red(a), red_holey = first_row_red(b);
	/* green is 0.10 red, a hole 0.97: 64 B of 80 in blocks, and 64 of 128 */
	cr_expect(red_packed < 0.2, "the packed heap is not green: red %.2f", red_packed);
	cr_expect(red_holey > 0.45 && red_holey < 0.65, "half the bytes are holes, yet red %.2f", red_holey);
	free(a);
	free(b);
	free(packed);
	free(holey);
}

/* ---- misuse ------------------------------------------------------------- */

static void expect_refused(const char *const args[], int status, const char *message)
{
	const char *argv[16] = { wt_wsprof() };
	size_t n = 1;
	for (size_t i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0);
	cr_expect_eq(r.status, status, "exit %d:\n%s", r.status, r.err);
	cr_expect(strstr(r.err, message), "no \"%s\" in:\n%s", message, r.err);
	cr_expect_eq(wt_count_lines(r.err), 1, "not one line:\n%s", r.err);
	wt_result_free(&r);
}

Test(statemap, what_cannot_be_drawn_is_refused_in_one_line)
{
	char *trace = wt_golden("server"), *out = wt_path(here(), "x.svg");
	expect_refused((const char *[]){ "report", "state", "--kind", "pool", trace, "-o", out, NULL }, 2,
		       "wsprof: pool sub-allocations are drawn inside the blocks they are carved from");
	expect_refused((const char *[]){ "report", "state", "--kind", "cuda_vmm", trace, "-o", out, NULL }, 2,
		       "wsprof: --kind cuda_vmm has no addresses to draw");
	expect_refused((const char *[]){ "report", "state", "--json", trace, "-o", out, NULL }, 2,
		       "wsprof: --json and -o both name the output: use one of them");
	expect_refused((const char *[]){ "report", "state", trace, "-o", "/tmp/x.jpeg", NULL }, 2,
		       "wsprof: cannot tell the format of '/tmp/x.jpeg': name the output .pdf, .svg or .png");
	expect_refused((const char *[]){ "report", "state", "--at", "oom", "--kind", "mmap", trace, "-o", out, NULL }, 1,
		       "has no failed mmap allocation");
	cr_expect(!wt_file_exists(out), "a picture was written anyway");
	/* The trace is read before the picture is written: its modules are
	 * warned about first, the write fails in one line of its own. */
	struct wt_result r;
	const char *nodir[] = { wt_wsprof(), "report", "state", trace, "-o", "/nonexistent/dir/x.pdf", NULL };
	cr_assert_eq(wt_run(&r, nodir), 0);
	cr_expect_eq(r.status, 1);
	const char *at = strstr(r.err, "wsprof: cannot write /nonexistent/dir/x.pdf");
	cr_expect(at && !strstr(at + 1, "wsprof:"), "%s", r.err);
	wt_result_free(&r);
	free(out);
	free(trace);
}
