/*
 * pictures.c - see pictures.h.
 */
#include "pictures.h"

#include "harness.h"
#include "trace_builder.h"

#include <cairo.h>
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned wt_pdf_pages(const char *path)
{
	const char *argv[] = { "/usr/bin/pdfinfo", path, NULL };
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0, "cannot run pdfinfo");
	cr_assert_eq(r.status, 0, "pdfinfo %s failed: %s", path, r.err);
	const char *p = strstr(r.out, "Pages:");
	cr_assert(p, "pdfinfo shows no page count for %s:\n%s", path, r.out);
	unsigned pages = (unsigned)strtoul(p + 6, NULL, 10);
	wt_result_free(&r);
	return pages;
}

char *wt_pdf_text(const char *path)
{
	const char *argv[] = { "/usr/bin/pdftotext", "-layout", path, "-", NULL };
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0, "cannot run pdftotext");
	cr_assert_eq(r.status, 0, "pdftotext %s failed: %s", path, r.err);
	char *text = r.out;
	r.out = NULL;
	wt_result_free(&r);
	return text;
}

void wt_assert_svg(const char *path)
{
	const char *argv[] = { "/usr/bin/python3", "-c",
			       "import sys, xml.dom.minidom as m\n"
			       "d = m.parse(sys.argv[1])\n"
			       "sys.exit(0 if d.documentElement.tagName == 'svg' else 3)\n",
			       path, NULL };
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0, "cannot run python3");
	cr_assert_eq(r.status, 0, "%s is not a well-formed SVG document: %s", path, r.err);
	wt_result_free(&r);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

size_t wt_assert_png(const char *path, int width, int height, size_t colours)
{
	cairo_surface_t *s = cairo_image_surface_create_from_png(path);
	cr_assert_eq(cairo_surface_status(s), CAIRO_STATUS_SUCCESS, "%s is not a PNG: %s", path,
		     cairo_status_to_string(cairo_surface_status(s)));
	int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
	cr_expect_eq(w, width, "%s is %d pixels wide, not %d", path, w, width);
	cr_expect_eq(h, height, "%s is %d pixels high, not %d", path, h, height);
	const unsigned char *data = cairo_image_surface_get_data(s);
	int stride = cairo_image_surface_get_stride(s);
	size_t n = (size_t)w * (size_t)h, k = 0;
	uint32_t *px = malloc(n * sizeof *px);
	cr_assert(px);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			px[k++] = ((const uint32_t *)(data + (size_t)y * (size_t)stride))[x] & 0xffffff;
	qsort(px, n, sizeof *px, cmp_u32);
	size_t distinct = n ? 1 : 0, run = 1, longest = 1;
	for (size_t i = 1; i < n; i++) {
		if (px[i] != px[i - 1]) {
			distinct++;
			run = 1;
		} else if (++run > longest) {
			longest = run;
		}
	}
	free(px);
	cairo_surface_destroy(s);
	cr_expect_geq(distinct, colours, "%s has %zu colours, fewer than %zu: a blank picture?", path, distinct, colours);
	cr_expect_lt(longest, n / 100 * 99, "%s is one colour on more than 99%% of its pixels", path);
	return distinct;
}

struct wt_result wt_wsprof_run(const char *const args[])
{
	const char *argv[32] = { wt_wsprof() };
	size_t n = 1;
	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0, "cannot run wsprof");
	return r;
}

struct wt_json *wt_json_text(char *text)
{
	char err[256];
	struct wt_json *j = wt_json_parse(text, err, sizeof err);
	cr_assert(j, "not JSON (%s):\n%s", err, text);
	free(text);
	return j;
}

char *wt_wsprof_ok(const char *const args[], int status)
{
	struct wt_result r = wt_wsprof_run(args);
	wt_assert_status(&r, status, args[0]);
	char *out = r.out ? r.out : strdup("");
	r.out = NULL;
	wt_result_free(&r);
	return out;
}

void wt_expect_failure(const char *command, const char *const args[], int status, const char *words, bool one_line)
{
	const char *argv[32] = { wt_wsprof(), command };
	size_t n = 2;
	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0, "cannot run wsprof");
	cr_expect_eq(r.status, status, "wsprof %s: exit %d, not %d:\n%s", command, r.status, status, r.err);
	cr_expect(strstr(r.err, words), "no \"%s\" in:\n%s", words, r.err);
	if (one_line)
		cr_expect_eq(wt_count_lines(r.err), 1, "more than one line:\n%s", r.err);
	cr_expect_str_eq(r.out, "");
	wt_result_free(&r);
}

char *wt_built_trace(struct trace_builder *b, const char *name)
{
	char *path = wt_path(wt_test_dir(), "%s", name);
	cr_assert_eq(tb_save(b, path), 0, "cannot write %s", path);
	tb_fini(b);
	return path;
}

char *wt_golden(const char *name)
{
	char *dir = wt_path(getenv("WSPROF_SOURCE_ROOT"), "tests/golden");
	char *path = wt_path(dir, "%s.wsp", name);
	free(dir);
	cr_assert(wt_file_exists(path), "no golden trace %s", path);
	return path;
}
