/*
 * plot.h - the pictures' one drawing path: documents, pages, text, charts
 * with axes in human units, heat colours, on cairo.
 *
 * A document's format comes from the output's extension: .pdf (one file,
 * a page per view), .svg and .png (one file per page: NAME.EXT when the
 * document has one page, NAME-1.EXT, NAME-2.EXT... when it may have more).
 * Every page is A4 landscape, drawn in points; a PNG is rendered at 1.5x
 * (1263 x 893 pixels) to stay readable on a screen.
 */
#ifndef WSP_PLOT_H
#define WSP_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cairo.h>

#include "units.h" /* enum wsp_unit, wsp_unit_format */

#define WSP_PAGE_W 842.0
#define WSP_PAGE_H 595.0
#define WSP_MARGIN 36.0

enum wsp_doc_format { WSP_DOC_PDF, WSP_DOC_SVG, WSP_DOC_PNG };

struct wsp_doc;

/* The format named by path's extension. @return 0, or -1 after a one-line
 * error saying which extensions work. */
int wsp_doc_format_of(const char *path, enum wsp_doc_format *format);
/* A document at path; multi: it may have several pages (numbered files for
 * SVG and PNG). NULL after a one-line error. */
struct wsp_doc *wsp_doc_open(const char *path, bool multi);
/* Start the next page (white, in points); the context stays the doc's. */
cairo_t *wsp_doc_page(struct wsp_doc *d);
/* Hold the pages started from now on (on) or no longer (off): they are
 * drawn into recordings, which wsp_doc_release puts in the document, in
 * the order drawn, as its next pages (vector pages stay vector). A report
 * draws the pages of a model it then frees, before pages that need more
 * memory, and keeps the order of its pages. */
void wsp_doc_hold(struct wsp_doc *d, bool on);
void wsp_doc_release(struct wsp_doc *d);
/* Finish and write everything. @return 0, or -1 after a one-line error. */
int wsp_doc_close(struct wsp_doc *d);
void wsp_doc_free(struct wsp_doc *d);
/* What every command that draws does last: close (d may be NULL: its open
 * failed), list the files written on stderr when drawn went well too, and
 * free. @return 0, or 1 (an exit status) when anything failed. */
int wsp_doc_finish(struct wsp_doc *d, bool drawn);

struct wsp_rgb {
	double r, g, b;
};

/* The palette: one colour per line of the charts, the same everywhere. */
extern const struct wsp_rgb WSP_C_ALLOCATED, WSP_C_IN_USE, WSP_C_WSS, WSP_C_RSS, WSP_C_DEVICE_FREE, WSP_C_FAIL,
	WSP_C_PHASE, WSP_C_TEXT, WSP_C_GRID, WSP_C_COLLECTABLE, WSP_C_POOL, WSP_C_HOLE, WSP_C_ACCENT;
/* The i-th of a few colours told apart easily (series, kinds, sites). */
struct wsp_rgb wsp_colour_cycle(size_t i);
/* Heat: t in [0, 1] from "none" (a pale grey, never black: a cold range
 * must not look like a missing one) through blue and green to yellow. */
struct wsp_rgb wsp_heat(double t);
void wsp_set_colour(cairo_t *cr, struct wsp_rgb c, double alpha);

enum wsp_align { WSP_LEFT, WSP_CENTER, WSP_RIGHT };
/* Text with its baseline at y, in DejaVu Sans. */
void wsp_text(cairo_t *cr, double x, double y, double size, bool bold, enum wsp_align align, const char *s);
double wsp_text_width(cairo_t *cr, double size, bool bold, const char *s);
/* Text cut to fit width (ending in "..."), into buf. @return buf. */
const char *wsp_text_fit(cairo_t *cr, double size, bool bold, const char *s, double width, char *buf, size_t cap);
/* The heading of a page: title, and a line naming program and trace.
 * @return the y below it where the page's content starts. */
double wsp_page_heading(cairo_t *cr, const char *title, const char *subtitle);

/* A tick step of about range/target: 1, 2 or 5 times a power of ten, or,
 * for bytes, times a power of 1024 (so ticks read 256 MiB, 512 MiB); 1 for
 * an empty range. */
double wsp_tick_step(double range, enum wsp_unit u, int target);

/* A chart: its area on the page, and the values its edges stand for. */
struct wsp_chart {
	cairo_t *cr;
	double x, y, w, h;     /* the plotting area, in points */
	double x0, x1, y0, y1; /* values at the left, right, bottom, top */
	enum wsp_unit xu, yu;
};

/* y1 is rounded up to a tick. */
void wsp_chart_init(struct wsp_chart *c, cairo_t *cr, double x, double y, double w, double h, double x0, double x1,
		    enum wsp_unit xu, double y0, double y1, enum wsp_unit yu);
/* Grid, ticks, frame, a title above and the axis labels. */
void wsp_chart_axes(const struct wsp_chart *c, const char *title, const char *xlabel, const char *ylabel);
double wsp_chart_px(const struct wsp_chart *c, double v);
double wsp_chart_py(const struct wsp_chart *c, double v);
/* A line through the points; step: hold each value until the next x. */
void wsp_chart_line(const struct wsp_chart *c, const double *xs, const double *ys, size_t n, struct wsp_rgb colour,
		    double width, bool dashed, bool step);
/* The area under a step line, filled. */
void wsp_chart_area(const struct wsp_chart *c, const double *xs, const double *ys, size_t n, struct wsp_rgb colour,
		    double alpha);
/* A shaded span of x (a phase), labelled along the bottom in row `row`. */
void wsp_chart_span(const struct wsp_chart *c, double x0, double x1, struct wsp_rgb colour, const char *label,
		    int row);
/* A vertical mark at x (a failed allocation), labelled when label. */
void wsp_chart_mark(const struct wsp_chart *c, double x, struct wsp_rgb colour, const char *label);
/* Bars from y0, one per x, each width wide in x units. */
void wsp_chart_bars(const struct wsp_chart *c, const double *xs, const double *ys, size_t n, double width,
		    struct wsp_rgb colour);

struct wsp_legend_item {
	const char *label;
	struct wsp_rgb colour;
	bool dashed, box; /* box: a filled square instead of a line */
};
/* Legend in the top-left corner of the chart, inside it. */
void wsp_chart_legend(const struct wsp_chart *c, const struct wsp_legend_item *items, size_t n);

/* A vertical colour bar for wsp_heat from 0 to max, labelled. */
void wsp_colour_bar(cairo_t *cr, double x, double y, double w, double h, double max, enum wsp_unit u,
		    const char *label);

#endif
