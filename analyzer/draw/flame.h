/*
 * flame.h - flame graphs of allocation stacks: stacks of frame labels with
 * a value each (bytes or a count) merged into one tree, written as folded
 * text (flamegraph.pl, speedscope) or as a self-contained SVG, or drawn on
 * a page of a document (plot.h: PDF, PNG) with the same boxes and colours.
 * wsp_flame_draw, last, builds the tree of a loaded trace's call stacks
 * and draws it: the flame page of the reports.
 *
 * Guarantees: stacks sharing outer frames share their boxes, each box's
 * value is the sum of the stacks through it; output depends only on what
 * was added, never on the order it was added in, so it can be compared
 * byte for byte. Memory is linear in the number of distinct frames of the
 * tree (nodes) and distinct labels. The model decides what a value means;
 * this module only sums and draws.
 */
#ifndef WSP_FLAME_H
#define WSP_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cairo.h>

/* A tree of frames with summed values. */
struct wsp_flame;

/* @return an empty tree, or NULL when out of memory. */
struct wsp_flame *wsp_flame_new(void);
void wsp_flame_free(struct wsp_flame *f);

/* Add one stack: frames[0] outermost ... frames[n-1] innermost (the
 * allocation's caller), with its value; a value of 0 is ignored. Labels are
 * copied as they are; each writer replaces what its format cannot carry.
 * @return 0, -EINVAL for an empty stack or a NULL label, or -ENOMEM (the
 * values are then unchanged). */
int wsp_flame_add(struct wsp_flame *f, const char *const *frames, size_t n, uint64_t value);

/* The sum of the values added. */
uint64_t wsp_flame_total(const struct wsp_flame *f);

/* A differential flame graph: the same stacks of a base run, with their
 * values, added after or before the drawn ones. Boxes stay as wide as the
 * drawn values (a stack only in the base has no width); the writers then
 * colour each box by its change (red grew, blue shrank) and name both
 * figures in its tooltip and in the page's list. Same rules as
 * wsp_flame_add. */
int wsp_flame_add_base(struct wsp_flame *f, const char *const *frames, size_t n, uint64_t value);
/* The sum of the base values added. */
uint64_t wsp_flame_base_total(const struct wsp_flame *f);

/* The folded-stack text flamegraph.pl and speedscope read: one line per
 * distinct stack, "frame1;frame2;...;frameN VALUE\n", outermost first.
 * In labels ';' becomes ':' and control characters become ' '; stacks that
 * become the same text are written once, summed. Lines are sorted frame by
 * frame (a stack before the stacks that extend it); stacks with value 0
 * are omitted. @return 0 or -errno. */
int wsp_flame_write_folded(const struct wsp_flame *f, FILE *out);

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

/* ---- The flame graph of a trace ------------------------------------- */

/* What a box's width shows, from the model's per-stack figures. */
enum wsp_flame_metric {
	WSP_FLAME_PEAK,        /* bytes live when the kind peaked */
	WSP_FLAME_LEAKED,      /* bytes still live at the end */
	WSP_FLAME_ALLOCATIONS, /* allocations made */
	WSP_FLAME_BYTES,       /* bytes allocated in all */
};

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

/* Add one kind's call stacks of a loaded trace to f, each frame a box
 * (a native frame its function, a Python frame its line), valued by the
 * metric: as drawn values, or as the base of a differential graph.
 * @return 0 or -ENOMEM. */
int wsp_flame_add_trace(struct wsp_flame *f, const struct wsp_loaded *l, unsigned kind, enum wsp_flame_metric metric,
			bool base);

#endif
