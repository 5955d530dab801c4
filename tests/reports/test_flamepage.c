/*
 * test_flamepage.c - the flame graph as a page of a document
 * (wsp_flame_draw_page, wsp_flame_draw; `wsprof report flame -o F.pdf|.png`).
 *
 * Read back with poppler's pdftotext and cairo: the title names the kind,
 * the metric and its total; every frame's name is on the page, in its box
 * or, when the box is too narrow, in the list below the graph with its
 * value and share; the PNG's root box has the SVG's colour for it; names
 * that are not UTF-8 or hold control characters are drawn (cairo would
 * stop drawing at the first bad string); stacks too deep for the page are
 * cut with a line that says so; an empty tree says there is nothing to
 * show; and the page does not depend on the order stacks were added in.
 */
#include "flame.h"
#include "harness.h"
#include "pictures.h"
#include "plot.h"

#include <cairo.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(flamepage, .fini = wt_cleanup, .timeout = 60);

#define STACK(...) ((const char *const[]){ __VA_ARGS__ }), (sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(char *))

/* The page of f, as a PDF or PNG at path. */
static void draw(const struct wsp_flame *f, const struct wsp_flame_svg_options *opt, const char *path)
{
	struct wsp_doc *doc = wsp_doc_open(path, false);
	cr_assert_not_null(doc);
	cairo_t *cr = wsp_doc_page(doc);
	cr_assert_eq(wsp_flame_draw_page(f, opt, cr), 0);
	cr_expect_eq(cairo_status(cr), CAIRO_STATUS_SUCCESS, "cairo stopped drawing: %s",
		     cairo_status_to_string(cairo_status(cr)));
	cr_assert_eq(wsp_doc_close(doc), 0);
	wsp_doc_free(doc);
}

static char *page_text(const struct wsp_flame *f, const struct wsp_flame_svg_options *opt)
{
	char *pdf = wt_path(wt_test_dir(), "p%u.pdf", (unsigned)rand());
	draw(f, opt, pdf);
	cr_expect_eq(wt_pdf_pages(pdf), 1);
	char *text = wt_pdf_text(pdf);
	free(pdf);
	return text;
}

Test(flamepage, narrow_boxes_are_listed_with_their_values)
{
	struct wsp_flame *f = wsp_flame_new();
	cr_assert_eq(wsp_flame_add(f, STACK("main", "parse_everything"), 1000), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "tiny_function_name"), 1), 0);
	struct wsp_flame_svg_options opt = { .title = "heap by call stack: allocations made (1,001 in all)",
					     .subtitle = "a test", .unit = "allocations" };
	char *text = page_text(f, &opt);
	cr_expect(strstr(text, "heap by call stack: allocations made (1,001 in all)"), "%s", text);
	cr_expect(strstr(text, "parse_everything"), "the wide box is labelled:\n%s", text);
	cr_expect(strstr(text, "Boxes too narrow for their names, widest first"), "%s", text);
	/* 770 pt for 1001 allocations: the tiny box is 0.77 pt wide. */
	const char *listed = strstr(text, "1 allocation, 0.1%");
	cr_expect(listed && strstr(listed, "tiny_function_name"), "the narrow box is listed:\n%s", text);
	free(text);
	wsp_flame_free(f);
}

Test(flamepage, bad_names_are_drawn_and_drawing_goes_on)
{
	struct wsp_flame *f = wsp_flame_new();
	cr_assert_eq(wsp_flame_add(f, STACK("main", "bad\xff\x01name", "callee_after_it"), 10), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "sibling"), 10), 0);
	char *text = page_text(f, NULL);
	cr_expect(strstr(text, "bad\xef\xbf\xbd name"), "a byte that is not UTF-8 is U+FFFD, a control a space:\n%s", text);
	cr_expect(strstr(text, "callee_after_it") && strstr(text, "sibling"), "drawing went on:\n%s", text);
	cr_expect(strstr(text, "Flame graph"), "the default title:\n%s", text);
	cr_expect(!strstr(text, "Boxes too narrow"), "every name fits its box, cleaned:\n%s", text);
	free(text);
	wsp_flame_free(f);
}

Test(flamepage, stacks_deeper_than_the_page_are_cut_and_it_says_so)
{
	enum { DEPTH = 400 };
	static char names[DEPTH][16];
	const char *frames[DEPTH];
	for (int i = 0; i < DEPTH; i++) {
		snprintf(names[i], sizeof names[i], "recurse_%d", i);
		frames[i] = names[i];
	}
	struct wsp_flame *f = wsp_flame_new();
	cr_assert_eq(wsp_flame_add(f, frames, DEPTH, 4096), 0);
	char *text = page_text(f, NULL);
	/* Below the heading (80 pt), the note (12) and the key line (18), 449 pt of
	 * the 559 hold 179 rows of 2.5 pt: the root and 178 frames. */
	cr_expect(strstr(text, "Stacks are 400 frames deep; the 178 frames nearest the root are shown."), "%s", text);
	free(text);
	wsp_flame_free(f);
}

Test(flamepage, an_empty_tree_says_so)
{
	struct wsp_flame *f = wsp_flame_new();
	char *text = page_text(f, NULL);
	cr_expect(strstr(text, "Nothing to show: no stack has a nonzero value."), "%s", text);
	free(text);
	wsp_flame_free(f);
}

static struct wsp_flame *some_stacks(bool reversed)
{
	static const char *const stacks[][4] = {
		{ "main", "load", "read_config", NULL }, { "main", "load", "parse", "tokenize" },
		{ "main", "train", "step", NULL },      { "main", "train", "step", "grow" },
		{ "worker", "next_batch", NULL, NULL },
	};
	struct wsp_flame *f = wsp_flame_new();
	for (size_t k = 0; k < 5; k++) {
		size_t i = reversed ? 4 - k : k, n = 0;
		while (n < 4 && stacks[i][n])
			n++;
		cr_assert_eq(wsp_flame_add(f, stacks[i], n, 1000 * (i + 1)), 0);
	}
	return f;
}

Test(flamepage, the_page_does_not_depend_on_the_order_of_stacks)
{
	char *a = wt_path(wt_test_dir(), "a.png"), *b = wt_path(wt_test_dir(), "b.png");
	struct wsp_flame *fa = some_stacks(false), *fb = some_stacks(true);
	draw(fa, NULL, a);
	draw(fb, NULL, b);
	size_t la, lb;
	char *da = wt_read_file(a, &la), *db = wt_read_file(b, &lb);
	cr_assert(da && db);
	cr_expect(la == lb && !memcmp(da, db, la), "the two PNGs differ");
	free(da);
	free(db);
	wsp_flame_free(fa);
	wsp_flame_free(fb);
	free(a);
	free(b);
}

/* ---- `wsprof report flame -o F.pdf|.png` of the golden story ----------- */

/* The folded stacks, split: frames (outermost first) and a value per line. */
struct folded {
	char frames[64][16][64];
	size_t depth[64];
	uint64_t value[64];
	size_t n;
};

static void folded_parse(const char *text, struct folded *f)
{
	f->n = 0;
	for (const char *p = text; *p && f->n < 64; f->n++) {
		size_t d = 0;
		for (;;) {
			size_t len = strcspn(p, "; ");
			if (d < 16)
				snprintf(f->frames[f->n][d++], 64, "%.*s", (int)len, p);
			p += len;
			if (*p++ == ' ')
				break;
		}
		f->depth[f->n] = d;
		f->value[f->n] = strtoull(p, (char **)&p, 10);
		p += *p == '\n';
	}
}

/* The value of the box of frame d of line i: every line through the same frames. */
static uint64_t box_value(const struct folded *f, size_t i, size_t d)
{
	uint64_t sum = 0;
	for (size_t j = 0; j < f->n; j++) {
		bool same = f->depth[j] > d;
		for (size_t k = 0; same && k <= d; k++)
			same = !strcmp(f->frames[i][k], f->frames[j][k]);
		sum += same ? f->value[j] : 0;
	}
	return sum;
}

Test(flamepage, the_story_as_a_pdf_names_every_frame)
{
	char *trace = wt_golden("story"), *pdf = wt_path(wt_test_dir(), "f.pdf");
	free(wt_wsprof_ok((const char *[]){ "report", "flame", trace, "-o", pdf, NULL }, 0));
	cr_expect_eq(wt_pdf_pages(pdf), 1);
	char *text = wt_pdf_text(pdf);
	/* The heap peaks at 156 MiB + 1 KiB (make_golden.c). */
	cr_expect(strstr(text, "heap by call stack: bytes live when the kind peaked (156 MiB in all)"), "%s", text);
	cr_expect(strstr(text, "/opt/golden/bin/trainer --steps 4 (pid 5151)"), "%s", text);
	/* Every box of 0.1 pt or more, out of 770, is named, in its box or in the list. */
	char *folded = wt_wsprof_ok((const char *[]){ "report", "flame", "--format", "folded", trace, NULL }, 0);
	static struct folded f;
	folded_parse(folded, &f);
	uint64_t total = 0;
	for (size_t i = 0; i < f.n; i++)
		total += f.value[i];
	size_t named = 0;
	for (size_t i = 0; i < f.n; i++)
		for (size_t d = 0; d < f.depth[i]; d++) {
			if ((double)box_value(&f, i, d) * 770 / (double)total < 0.1)
				continue;
			cr_expect(strstr(text, f.frames[i][d]), "frame %s is nowhere on the page:\n%s", f.frames[i][d], text);
			named++;
		}
	cr_expect_geq(named, 8, "%zu boxes in:\n%s", named, folded);
	free(folded);
	free(text);
	free(pdf);
	free(trace);
}

/* The fill of the SVG's box labelled `label` ("rgb(r,g,b)"), as 0xRRGGBB. */
static uint32_t svg_fill(const char *svg, const char *label)
{
	char title[128];
	snprintf(title, sizeof title, "<title>%s \xe2\x80\x94", label);
	const char *at = strstr(svg, title);
	cr_assert(at, "no box %s in the SVG", label);
	unsigned r, g, b;
	const char *fill = strstr(at, "fill=\"rgb(");
	cr_assert(fill && sscanf(fill, "fill=\"rgb(%u,%u,%u)", &r, &g, &b) == 3);
	return r << 16 | g << 8 | b;
}

Test(flamepage, the_story_as_a_png_has_the_svg_colours)
{
	char *trace = wt_golden("story"), *png = wt_path(wt_test_dir(), "f.png");
	free(wt_wsprof_ok((const char *[]){ "report", "flame", trace, "-o", png, NULL }, 0));
	wt_assert_png(png, 1263, 892, 8);
	char *svg = wt_wsprof_ok((const char *[]){ "report", "flame", trace, "-o", "-", NULL }, 0);
	uint32_t root = svg_fill(svg, "all");

	/* Up from the bottom of the page, on the right edge of the graph (past
	 * the key line's and the list's text), the first thing is the root box. */
	cairo_surface_t *s = cairo_image_surface_create_from_png(png);
	cr_assert_eq(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
	cairo_surface_flush(s);
	const unsigned char *data = cairo_image_surface_get_data(s);
	int stride = cairo_image_surface_get_stride(s), x = 1200;
	int y = cairo_image_surface_get_height(s) - 1;
	while (y > 0 && (*(const uint32_t *)(data + (size_t)y * stride + 4 * x) & 0xffffff) == 0xffffff)
		y--;
	y -= 4; /* past the box's edge, blended with the white below */
	cr_assert_gt(y, 0, "nothing drawn at x = %d", x);
	uint32_t found = *(const uint32_t *)(data + (size_t)y * stride + 4 * x) & 0xffffff;
	cr_expect_eq(found, root, "root box 0x%06x, the SVG's 0x%06x", found, root);
	cairo_surface_destroy(s);
	free(svg);
	free(png);
	free(trace);
}

Test(flamepage, an_unwritable_page_is_one_line)
{
	char *trace = wt_golden("server");
	struct wt_result r;
	cr_assert_eq(wt_run(&r, (const char *[]){ wt_wsprof(), "report", "flame", trace, "-o", "/nonexistent/f.pdf",
						  NULL }), 0);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "wsprof: cannot write /nonexistent/f.pdf: "), "%s", r.err);
	cr_expect(!strstr(r.err, "wrote"), "%s", r.err);
	wt_result_free(&r);
	free(trace);
}
