/*
 * pictures.h - what the tests of the pictures share: look at a PDF, an SVG
 * or a PNG the way a user's tools would.
 *
 * PDFs are read with poppler's pdfinfo (page count) and pdftotext (the
 * words on the pages, which is how the tests find labels: cairo draws an
 * SVG's text as glyph outlines, so an SVG holds no words). SVGs are
 * parsed by Python's XML parser. PNGs are loaded with cairo, measured and
 * looked at pixel by pixel.
 */
#ifndef WT_PICTURES_H
#define WT_PICTURES_H

#include <stdbool.h>
#include <stddef.h>

#include "run.h"
#include "json.h"

/* Pages of a PDF (pdfinfo); asserts it is one. */
unsigned wt_pdf_pages(const char *path);
/* The text of a PDF, all pages (pdftotext -layout); malloc'd. */
char *wt_pdf_text(const char *path);
/* Assert that an SVG file parses as XML with an <svg> root. */
void wt_assert_svg(const char *path);
/* Assert a PNG's size and that it is not blank: at least `colours`
 * distinct colours, and no one colour on more than 99% of its pixels...
 * unless it is white background with drawing on it. Returns the number of
 * distinct colours seen (counted up to 4096). */
size_t wt_assert_png(const char *path, int width, int height, size_t colours);
/* Run `wsprof ARGS...`, asserting it exits with status; the result's
 * stdout (malloc'd, may be empty) is returned. */
char *wt_wsprof_ok(const char *const args[], int status);
/* Run `wsprof ARGS...` and return what it did, whatever its status. */
struct wt_result wt_wsprof_run(const char *const args[]);
/* Parse text (taken: freed here) as one JSON document, asserting it is one. */
struct wt_json *wt_json_text(char *text);
/* Run `wsprof COMMAND ARGS...`, asserting it exits with status, says
 * `words` on stderr (in one line when one_line) and nothing on stdout. */
void wt_expect_failure(const char *command, const char *const args[], int status, const char *words, bool one_line);
/* A trace built with trace_builder, saved as NAME in this test's directory
 * (asserting it is), b freed. @return its path, malloc'd. */
struct trace_builder;
char *wt_built_trace(struct trace_builder *b, const char *name);
/* The committed golden trace of that name (tests/golden/NAME.wsp); malloc'd. */
char *wt_golden(const char *name);

#endif
