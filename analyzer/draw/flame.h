/*
 * flame.h - flame graphs drawn: the stack tree (compute/flametree.h)
 * as a self-contained SVG, or on a page of a document (plot.h: PDF, PNG)
 * with the same boxes and colours. wsp_flame_draw, last, builds the tree
 * of a loaded trace's call stacks and draws it: the flame page of the
 * reports. Output depends only on what was added to the tree, never on
 * the order it was added in, so it can be compared byte for byte.
 */
#ifndef WSP_FLAME_H
#define WSP_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cairo.h>

#include "flametree.h" /* the tree these draw */

struct wsp_flame_svg_options {
	const char *title;    /* "Peak heap by call stack: ./app (app.wsp)"; NULL: "Flame graph" */
	const char *subtitle; /* "metric: bytes live at the peak (12.3 MiB total)"; may be NULL */
	/* "bytes" or NULL: values as sizes with 3 significant digits
	 * ("1.50 MiB"); anything else names a count: "12,345 allocations". */
	const char *unit;
	unsigned width;       /* pixels; 0: 1200; less than 200: 200 */
};

/* A self-contained SVG flame graph, root ("all") at the bottom as
 * flamegraph.pl draws it: no script, no external resource. Each frame is a
 * <g> with a <title> (full label, value, share of the total), a <rect> as
 * wide as its value and a <text> label cut to fit the box; boxes narrower
 * than 0.1 px are left out (their value still counts in their parents).
 * opt may be NULL. @return 0 or -errno. */
int wsp_flame_write_svg(const struct wsp_flame *f, const struct wsp_flame_svg_options *opt, FILE *out);

/* The same graph on the page just started on cr (wsp_doc_page): opt's
 * title and subtitle as the page's heading (its width is the SVG's only),
 * then the boxes across the page's width, root at the bottom, in the
 * SVG's colours, names cut to fit (wsp_text_fit) in rows high enough to
 * hold them; boxes narrower than 0.1 pt are left out. Rows shrink to fit
 * the page down to 2.5 pt; stacks deeper than that are cut, and a line
 * says so. A page has no tooltips: the room left below the graph lists
 * the boxes whose names did not fit, widest first, with their values in
 * opt's unit. opt may be NULL. @return 0 or -ENOMEM. */
int wsp_flame_draw_page(const struct wsp_flame *f, const struct wsp_flame_svg_options *opt, cairo_t *cr);

struct wsp_doc;
struct wsp_loaded;

/* A page of doc with the flame graph of one kind's call stacks, from a
 * trace loaded with per_stack and symbols (analyzer.h): titled with the
 * kind and the metric, the program and trace below.
 * @return 0, or -1 after a one-line error (out of memory). */
int wsp_flame_draw(struct wsp_doc *doc, const struct wsp_loaded *l, unsigned kind, enum wsp_flame_metric metric);

/* Write a built graph to output (- or NULL: stdout): folded text when
 * folded, else a PDF or PNG page for FILE.pdf or FILE.png, else the SVG;
 * "wsprof: wrote FILE" or a one-line error on stderr. @return the exit
 * status. */
int wsp_flame_write(const struct wsp_flame *f, const struct wsp_flame_svg_options *opt, const char *output,
		    bool folded);
/* Whether output names a page (FILE.pdf, FILE.png) rather than an SVG. */
bool wsp_flame_page_output(const char *path);
/* wsp_flame_write with the titles of a trace's graph: the kind, the
 * program, the metric and its total. @return the exit status. */
int wsp_flame_write_trace(const struct wsp_flame *f, const struct wsp_loaded *l, unsigned kind,
			  enum wsp_flame_metric metric, const char *output, bool folded);
/* The same for a job's graph: nread of its npaths traces read.
 * @return the exit status. */
int wsp_flame_write_job(const struct wsp_flame *f, size_t nread, char *const *paths, size_t npaths, unsigned kind,
			enum wsp_flame_metric metric, bool estimated, const char *output, bool folded);

struct wsp_diff;
/* `wsprof diff -o`: a differential graph (built with the base added as
 * wsp_flame_add_trace's base) titled with the change of d's sort figure
 * and written as wsp_flame_write does. @return the exit status. */
int wsp_flame_write_diff(const struct wsp_flame *f, const struct wsp_diff *d, const char *output);

#endif
