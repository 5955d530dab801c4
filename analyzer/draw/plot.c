/*
 * plot.c - documents, text and charts on cairo (plot.h).
 *
 * One drawing path for every format: a view draws on the cairo context of
 * a page, whatever surface is behind it. PDF keeps one surface for all
 * pages; SVG and PNG get a surface, and a file, per page.
 */
#include "plot.h"

#include "units.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PNG_SCALE 1.5
#define FONT "DejaVu Sans"

struct wsp_doc {
	enum wsp_doc_format format;
	bool multi;
	char *path;
	cairo_surface_t *surface;
	cairo_t *cr;
	size_t pages;
	char **files;
	size_t nfiles;
	bool failed;
	/* Pages held (wsp_doc_hold): drawn now into recordings, put in later. */
	bool holding;
	cairo_surface_t **held;
	size_t nheld;
	cairo_t *held_cr;     /* the held page being drawn */
};

const struct wsp_rgb WSP_C_ALLOCATED = { 0.16, 0.38, 0.71 }, WSP_C_IN_USE = { 0.10, 0.60, 0.33 },
		     WSP_C_WSS = { 0.89, 0.45, 0.05 }, WSP_C_RSS = { 0.50, 0.50, 0.50 },
		     WSP_C_DEVICE_FREE = { 0.58, 0.25, 0.68 }, WSP_C_FAIL = { 0.84, 0.10, 0.11 },
		     WSP_C_PHASE = { 0.55, 0.67, 0.85 }, WSP_C_TEXT = { 0.12, 0.12, 0.12 },
		     WSP_C_GRID = { 0.86, 0.86, 0.86 }, WSP_C_COLLECTABLE = { 0.96, 0.70, 0.26 },
		     WSP_C_POOL = { 0.62, 0.78, 0.93 }, WSP_C_HOLE = { 0.97, 0.97, 0.97 },
		     WSP_C_ACCENT = { 0.20, 0.20, 0.55 };

struct wsp_rgb wsp_colour_cycle(size_t i)
{
	static const struct wsp_rgb cycle[] = {
		{ 0.16, 0.38, 0.71 }, { 0.89, 0.45, 0.05 }, { 0.10, 0.60, 0.33 }, { 0.84, 0.15, 0.16 },
		{ 0.58, 0.40, 0.74 }, { 0.55, 0.34, 0.29 }, { 0.89, 0.47, 0.76 }, { 0.50, 0.50, 0.50 },
		{ 0.74, 0.74, 0.13 }, { 0.09, 0.75, 0.81 },
	};
	return cycle[i % (sizeof cycle / sizeof *cycle)];
}

struct wsp_rgb wsp_heat(double t)
{
	/* Stops of a viridis-like ramp, after a pale "nothing" below the first. */
	static const struct wsp_rgb stops[] = {
		{ 0.27, 0.00, 0.33 }, { 0.23, 0.32, 0.55 }, { 0.13, 0.57, 0.55 }, { 0.37, 0.79, 0.38 }, { 0.99, 0.91, 0.15 },
	};
	if (!(t > 0))
		return (struct wsp_rgb){ 0.94, 0.94, 0.94 };
	if (t >= 1)
		return stops[4];
	double pos = t * 4;
	int i = (int)pos;
	double f = pos - i;
	return (struct wsp_rgb){ stops[i].r + f * (stops[i + 1].r - stops[i].r),
				 stops[i].g + f * (stops[i + 1].g - stops[i].g),
				 stops[i].b + f * (stops[i + 1].b - stops[i].b) };
}

void wsp_set_colour(cairo_t *cr, struct wsp_rgb c, double alpha)
{
	cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha);
}

/* ---- documents -------------------------------------------------------- */

int wsp_doc_format_of(const char *path, enum wsp_doc_format *format)
{
	const char *dot = strrchr(path, '.');
	if (dot && !strcasecmp(dot, ".pdf"))
		*format = WSP_DOC_PDF;
	else if (dot && !strcasecmp(dot, ".svg"))
		*format = WSP_DOC_SVG;
	else if (dot && !strcasecmp(dot, ".png"))
		*format = WSP_DOC_PNG;
	else {
		fprintf(stderr, "wsprof: cannot tell the format of '%s': name the output .pdf, .svg or .png\n", path);
		return -1;
	}
	return 0;
}

struct wsp_doc *wsp_doc_open(const char *path, bool multi)
{
	enum wsp_doc_format format;
	if (wsp_doc_format_of(path, &format))
		return NULL;
	/* Say so now, not after drawing every page. */
	const char *slash = strrchr(path, '/');
	char dir[4096];
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
	if (access(dir, W_OK) != 0) {
		fprintf(stderr, "wsprof: cannot write %s: %s\n", path, strerror(errno));
		return NULL;
	}
	struct wsp_doc *d = calloc(1, sizeof *d);
	if (!d || !(d->path = strdup(path))) {
		free(d);
		fprintf(stderr, "wsprof: out of memory\n");
		return NULL;
	}
	d->format = format;
	d->multi = multi && format != WSP_DOC_PDF;
	return d;
}

/* The file of page n (from 1). */
static char *page_file(const struct wsp_doc *d, size_t n)
{
	if (!d->multi)
		return strdup(d->path);
	const char *dot = strrchr(d->path, '.');
	size_t stem = (size_t)(dot - d->path);
	size_t len = strlen(d->path) + 24;
	char *name = malloc(len);
	if (name)
		snprintf(name, len, "%.*s-%zu%s", (int)stem, d->path, n, dot);
	return name;
}

static bool surface_ok(struct wsp_doc *d, const char *file)
{
	cairo_status_t st = cairo_surface_status(d->surface);
	if (st == CAIRO_STATUS_SUCCESS)
		return true;
	if (!d->failed)
		fprintf(stderr, "wsprof: cannot write %s: %s\n", file,
			st == CAIRO_STATUS_WRITE_ERROR ? strerror(errno ? errno : EIO) : cairo_status_to_string(st));
	d->failed = true;
	return false;
}

/* Finish the page being drawn: for SVG and PNG, its file. */
static void end_page(struct wsp_doc *d)
{
	if (!d->cr)
		return;
	const char *file = d->nfiles ? d->files[d->nfiles - 1] : d->path;
	if (d->format == WSP_DOC_PDF) {
		cairo_show_page(d->cr);
		return;
	}
	cairo_destroy(d->cr);
	d->cr = NULL;
	if (d->format == WSP_DOC_PNG && !d->failed) {
		cairo_status_t st = cairo_surface_write_to_png(d->surface, file);
		if (st != CAIRO_STATUS_SUCCESS) {
			fprintf(stderr, "wsprof: cannot write %s: %s\n", file,
				st == CAIRO_STATUS_WRITE_ERROR ? strerror(errno ? errno : EIO) : cairo_status_to_string(st));
			d->failed = true;
		}
	}
	cairo_surface_finish(d->surface);
	surface_ok(d, file);
	cairo_surface_destroy(d->surface);
	d->surface = NULL;
}

/* A white page in points, its font chosen. */
static void page_start(cairo_t *cr)
{
	cairo_save(cr);
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	cairo_restore(cr);
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
}

static void held_page_done(struct wsp_doc *d)
{
	if (d->held_cr)
		cairo_destroy(d->held_cr);
	d->held_cr = NULL;
}

/* The next page, held: a recording of what is drawn on it. */
static cairo_t *held_page(struct wsp_doc *d)
{
	held_page_done(d);
	/* In the document's own units: a PNG page's pixels, so that text is
	 * measured and placed as it is on the pages drawn straight. */
	double k = d->format == WSP_DOC_PNG ? PNG_SCALE : 1;
	cairo_surface_t *rec = cairo_recording_surface_create(CAIRO_CONTENT_COLOR_ALPHA,
							      &(cairo_rectangle_t){ 0, 0, WSP_PAGE_W * k, WSP_PAGE_H * k });
	cairo_surface_t **held = realloc(d->held, (d->nheld + 1) * sizeof *held);
	if (!held) {
		d->failed = true;
		fprintf(stderr, "wsprof: out of memory\n");
	} else {
		d->held = held;
		d->held[d->nheld++] = cairo_surface_reference(rec);
	}
	d->held_cr = cairo_create(rec); /* drawn on, and discarded when it could not be kept */
	cairo_surface_destroy(rec);
	if (d->surface) { /* text measured as the document's own pages measure it (hinting, metrics) */
		cairo_font_options_t *fo = cairo_font_options_create();
		cairo_surface_get_font_options(d->surface, fo);
		cairo_set_font_options(d->held_cr, fo);
		cairo_font_options_destroy(fo);
	}
	cairo_scale(d->held_cr, k, k);
	page_start(d->held_cr);
	return d->held_cr;
}

void wsp_doc_hold(struct wsp_doc *d, bool on)
{
	d->holding = on;
	if (!on)
		held_page_done(d);
}

void wsp_doc_release(struct wsp_doc *d)
{
	held_page_done(d);
	size_t n = d->nheld;
	d->nheld = 0;
	bool holding = d->holding;
	d->holding = false;
	for (size_t i = 0; i < n; i++) {
		cairo_t *cr = wsp_doc_page(d);
		cairo_save(cr);
		cairo_identity_matrix(cr); /* the recording is in the page's own units */
		cairo_set_source_surface(cr, d->held[i], 0, 0);
		cairo_paint(cr);
		cairo_restore(cr);
		cairo_surface_destroy(d->held[i]);
	}
	d->holding = holding;
}

cairo_t *wsp_doc_page(struct wsp_doc *d)
{
	if (d->holding)
		return held_page(d);
	if (d->format == WSP_DOC_PDF && d->surface)
		cairo_show_page(d->cr); /* the page drawn so far is done */
	if (d->format != WSP_DOC_PDF || !d->surface) {
		end_page(d);
		char *file = page_file(d, d->pages + 1);
		char **files = file ? realloc(d->files, (d->nfiles + 1) * sizeof *files) : NULL;
		if (!files) {
			free(file);
			d->failed = true;
			fprintf(stderr, "wsprof: out of memory\n");
			d->surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1); /* drawn on, discarded */
			d->cr = cairo_create(d->surface);
			return d->cr;
		}
		d->files = files;
		d->files[d->nfiles++] = file;
		errno = 0;
		if (d->format == WSP_DOC_PDF)
			d->surface = cairo_pdf_surface_create(file, WSP_PAGE_W, WSP_PAGE_H);
		else if (d->format == WSP_DOC_SVG)
			d->surface = cairo_svg_surface_create(file, WSP_PAGE_W, WSP_PAGE_H);
		else
			d->surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)(WSP_PAGE_W * PNG_SCALE),
								(int)(WSP_PAGE_H * PNG_SCALE));
		surface_ok(d, file);
		if (d->format == WSP_DOC_SVG)
			cairo_svg_surface_restrict_to_version(d->surface, CAIRO_SVG_VERSION_1_1);
		d->cr = cairo_create(d->surface);
		if (d->format == WSP_DOC_PNG)
			cairo_scale(d->cr, PNG_SCALE, PNG_SCALE);
	}
	d->pages++;
	page_start(d->cr);
	return d->cr;
}

int wsp_doc_close(struct wsp_doc *d)
{
	if (d->format == WSP_DOC_PDF && d->cr) {
		cairo_show_page(d->cr);
		cairo_destroy(d->cr);
		d->cr = NULL;
		cairo_surface_finish(d->surface);
		surface_ok(d, d->path);
		cairo_surface_destroy(d->surface);
		d->surface = NULL;
	} else {
		end_page(d);
	}
	return d->failed ? -1 : 0;
}

int wsp_doc_finish(struct wsp_doc *d, bool drawn)
{
	if (!d)
		return 1;
	int status = wsp_doc_close(d) || !drawn ? 1 : 0;
	for (size_t i = 0; !status && i < d->nfiles; i++)
		fprintf(stderr, "wsprof: wrote %s\n", d->files[i]);
	wsp_doc_free(d);
	return status;
}

void wsp_doc_free(struct wsp_doc *d)
{
	if (!d)
		return;
	if (d->cr)
		cairo_destroy(d->cr);
	if (d->surface)
		cairo_surface_destroy(d->surface);
	held_page_done(d);
	for (size_t i = 0; i < d->nheld; i++)
		cairo_surface_destroy(d->held[i]);
	free(d->held);
	for (size_t i = 0; i < d->nfiles; i++)
		free(d->files[i]);
	free(d->files);
	free(d->path);
	free(d);
}

/* ---- text ------------------------------------------------------------- */

static void font(cairo_t *cr, double size, bool bold)
{
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, size);
}

double wsp_text_width(cairo_t *cr, double size, bool bold, const char *s)
{
	cairo_text_extents_t e;
	font(cr, size, bold);
	cairo_text_extents(cr, s, &e);
	return e.x_advance;
}

void wsp_text(cairo_t *cr, double x, double y, double size, bool bold, enum wsp_align align, const char *s)
{
	double w = align == WSP_LEFT ? 0 : wsp_text_width(cr, size, bold, s);
	font(cr, size, bold);
	cairo_move_to(cr, align == WSP_CENTER ? x - w / 2 : align == WSP_RIGHT ? x - w : x, y);
	cairo_show_text(cr, s);
	cairo_new_path(cr);
}

const char *wsp_text_fit(cairo_t *cr, double size, bool bold, const char *s, double width, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s", s);
	if (wsp_text_width(cr, size, bold, buf) <= width)
		return buf;
	size_t n = strlen(buf);
	while (n > 0) {
		n--;
		while (n > 0 && ((unsigned char)buf[n] & 0xc0) == 0x80) /* whole UTF-8 characters */
			n--;
		if (n + 4 > cap)
			continue;
		memcpy(buf + n, "...", 4);
		if (wsp_text_width(cr, size, bold, buf) <= width)
			return buf;
	}
	buf[0] = 0;
	return buf;
}

double wsp_page_heading(cairo_t *cr, const char *title, const char *subtitle)
{
	char fit[512];
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	wsp_text(cr, WSP_MARGIN, WSP_MARGIN + 8, 17, true, WSP_LEFT,
		 wsp_text_fit(cr, 17, true, title, WSP_PAGE_W - 2 * WSP_MARGIN, fit, sizeof fit));
	if (subtitle) {
		cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
		wsp_text(cr, WSP_MARGIN, WSP_MARGIN + 25, 9.5, false, WSP_LEFT,
			 wsp_text_fit(cr, 9.5, false, subtitle, WSP_PAGE_W - 2 * WSP_MARGIN, fit, sizeof fit));
	}
	wsp_set_colour(cr, WSP_C_GRID, 1);
	cairo_set_line_width(cr, 0.8);
	cairo_move_to(cr, WSP_MARGIN, WSP_MARGIN + 32);
	cairo_line_to(cr, WSP_PAGE_W - WSP_MARGIN, WSP_MARGIN + 32);
	cairo_stroke(cr);
	return WSP_MARGIN + 44;
}

/* ---- units and ticks ---------------------------------------------------- */

/* A tick step of about range/target: 1, 2 or 5 times a power of ten, or,
 * for bytes, times a power of 1024 (so ticks read 256 MiB, 512 MiB). */
double wsp_tick_step(double range, enum wsp_unit u, int target)
{
	if (!(range > 0))
		return 1;
	double raw = range / target;
	double base = 1;
	if (u == WSP_UNIT_BYTES || u == WSP_UNIT_BYTES_PER_S) {
		while (base * 1024 <= raw)
			base *= 1024;
		static const double mult[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 };
		for (size_t i = 0; i < sizeof mult / sizeof *mult; i++)
			if (base * mult[i] >= raw)
				return base * mult[i];
		return base * 1024;
	}
	double p = pow(10, floor(log10(raw)));
	static const double mult[] = { 1, 2, 5, 10 };
	for (size_t i = 0; i < 4; i++)
		if (p * mult[i] >= raw)
			return p * mult[i];
	return p * 10;
}

/* ---- charts ----------------------------------------------------------- */

void wsp_chart_init(struct wsp_chart *c, cairo_t *cr, double x, double y, double w, double h, double x0, double x1,
		    enum wsp_unit xu, double y0, double y1, enum wsp_unit yu)
{
	if (!(x1 > x0))
		x1 = x0 + 1;
	if (!(y1 > y0))
		y1 = y0 + (yu == WSP_UNIT_BYTES ? 1024 : 1);
	double step = wsp_tick_step(y1 - y0, yu, 5);
	y1 = y0 + ceil((y1 - y0) / step - 1e-9) * step;
	*c = (struct wsp_chart){ cr, x, y, w, h, x0, x1, y0, y1, xu, yu };
}

double wsp_chart_px(const struct wsp_chart *c, double v)
{
	return c->x + (v - c->x0) / (c->x1 - c->x0) * c->w;
}

double wsp_chart_py(const struct wsp_chart *c, double v)
{
	return c->y + c->h - (v - c->y0) / (c->y1 - c->y0) * c->h;
}

void wsp_chart_axes(const struct wsp_chart *c, const char *title, const char *xlabel, const char *ylabel)
{
	cairo_t *cr = c->cr;
	char label[64];
	cairo_save(cr);
	cairo_set_line_width(cr, 0.5);
	double ystep = wsp_tick_step(c->y1 - c->y0, c->yu, 5);
	for (double v = c->y0; v <= c->y1 + ystep * 1e-6; v += ystep) {
		double py = wsp_chart_py(c, v);
		wsp_set_colour(cr, WSP_C_GRID, 1);
		cairo_move_to(cr, c->x, py);
		cairo_line_to(cr, c->x + c->w, py);
		cairo_stroke(cr);
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		wsp_text(cr, c->x - 4, py + 3, 8, false, WSP_RIGHT, wsp_unit_format(label, sizeof label, v, c->yu));
	}
	double xstep = wsp_tick_step(c->x1 - c->x0, c->xu, 8);
	for (double v = ceil(c->x0 / xstep) * xstep; v <= c->x1 + xstep * 1e-6; v += xstep) {
		double px = wsp_chart_px(c, v);
		wsp_set_colour(cr, WSP_C_GRID, 1);
		cairo_move_to(cr, px, c->y);
		cairo_line_to(cr, px, c->y + c->h);
		cairo_stroke(cr);
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		wsp_text(cr, px, c->y + c->h + 11, 8, false, WSP_CENTER, wsp_unit_format(label, sizeof label, v, c->xu));
	}
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	cairo_set_line_width(cr, 0.8);
	cairo_rectangle(cr, c->x, c->y, c->w, c->h);
	cairo_stroke(cr);
	if (title)
		wsp_text(cr, c->x, c->y - 6, 10.5, true, WSP_LEFT, title);
	if (xlabel)
		wsp_text(cr, c->x + c->w / 2, c->y + c->h + 23, 8.5, false, WSP_CENTER, xlabel);
	if (ylabel) {
		cairo_save(cr);
		cairo_translate(cr, c->x - 52, c->y + c->h / 2);
		cairo_rotate(cr, -M_PI / 2);
		wsp_text(cr, 0, 0, 8.5, false, WSP_CENTER, ylabel);
		cairo_restore(cr);
	}
	cairo_restore(cr);
}

static double clamp(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void wsp_chart_line(const struct wsp_chart *c, const double *xs, const double *ys, size_t n, struct wsp_rgb colour,
		    double width, bool dashed, bool step)
{
	if (!n)
		return;
	cairo_t *cr = c->cr;
	cairo_save(cr);
	cairo_rectangle(cr, c->x, c->y - 1, c->w, c->h + 2);
	cairo_clip(cr);
	for (size_t i = 0; i < n; i++) {
		double px = wsp_chart_px(c, xs[i]), py = clamp(wsp_chart_py(c, ys[i]), c->y - 1, c->y + c->h + 1);
		if (!i)
			cairo_move_to(cr, px, py);
		else if (step) {
			double prev = clamp(wsp_chart_py(c, ys[i - 1]), c->y - 1, c->y + c->h + 1);
			cairo_line_to(cr, px, prev);
			cairo_line_to(cr, px, py);
		} else
			cairo_line_to(cr, px, py);
	}
	wsp_set_colour(cr, colour, 1);
	cairo_set_line_width(cr, width);
	cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
	if (dashed) {
		double dash[] = { 4, 2.5 };
		cairo_set_dash(cr, dash, 2, 0);
	}
	cairo_stroke(cr);
	cairo_restore(cr);
}

void wsp_chart_area(const struct wsp_chart *c, const double *xs, const double *ys, size_t n, struct wsp_rgb colour,
		    double alpha)
{
	if (!n)
		return;
	cairo_t *cr = c->cr;
	cairo_save(cr);
	cairo_rectangle(cr, c->x, c->y, c->w, c->h);
	cairo_clip(cr);
	double base = wsp_chart_py(c, c->y0);
	cairo_move_to(cr, wsp_chart_px(c, xs[0]), base);
	for (size_t i = 0; i < n; i++) {
		double py = wsp_chart_py(c, ys[i]);
		if (i)
			cairo_line_to(cr, wsp_chart_px(c, xs[i]), wsp_chart_py(c, ys[i - 1]));
		cairo_line_to(cr, wsp_chart_px(c, xs[i]), py);
	}
	cairo_line_to(cr, wsp_chart_px(c, xs[n - 1]), base);
	cairo_close_path(cr);
	wsp_set_colour(cr, colour, alpha);
	cairo_fill(cr);
	cairo_restore(cr);
}

void wsp_chart_span(const struct wsp_chart *c, double x0, double x1, struct wsp_rgb colour, const char *label,
		    int row)
{
	cairo_t *cr = c->cr;
	double a = clamp(wsp_chart_px(c, x0), c->x, c->x + c->w), b = clamp(wsp_chart_px(c, x1), c->x, c->x + c->w);
	if (b < a + 0.6)
		b = a + 0.6; /* a short phase still shows */
	cairo_save(cr);
	wsp_set_colour(cr, colour, 0.16 + 0.08 * (row % 2));
	cairo_rectangle(cr, a, c->y, b - a, c->h);
	cairo_fill(cr);
	if (label && *label) {
		char fit[128];
		double size = 7.5;
		wsp_text_fit(cr, size, false, label, b - a - 3, fit, sizeof fit);
		/* A label cut to a stub says nothing: only whole words or more. */
		size_t kept = strlen(fit);
		if (kept && (strcmp(fit, label) == 0 || kept >= 8)) {
			cairo_set_source_rgb(cr, 0.20, 0.28, 0.45);
			/* Along the bottom edge: the legend has the top-left corner. */
			wsp_text(cr, a + 2, c->y + c->h - 4 - 9 * (row % 4), size, false, WSP_LEFT, fit);
		}
	}
	cairo_restore(cr);
}

void wsp_chart_mark(const struct wsp_chart *c, double x, struct wsp_rgb colour, const char *label)
{
	cairo_t *cr = c->cr;
	double px = wsp_chart_px(c, x);
	if (px < c->x - 0.5 || px > c->x + c->w + 0.5)
		return;
	cairo_save(cr);
	wsp_set_colour(cr, colour, 0.9);
	cairo_set_line_width(cr, 1);
	double dash[] = { 2, 2 };
	cairo_set_dash(cr, dash, 2, 0);
	cairo_move_to(cr, px, c->y);
	cairo_line_to(cr, px, c->y + c->h);
	cairo_stroke(cr);
	cairo_set_dash(cr, NULL, 0, 0);
	/* A downward triangle on the top edge. */
	cairo_move_to(cr, px - 4, c->y - 1);
	cairo_line_to(cr, px + 4, c->y - 1);
	cairo_line_to(cr, px, c->y + 6);
	cairo_close_path(cr);
	cairo_fill(cr);
	if (label)
		wsp_text(cr, px > c->x + c->w - 80 ? px - 5 : px + 5, c->y + 14, 7.5, true,
			 px > c->x + c->w - 80 ? WSP_RIGHT : WSP_LEFT, label);
	cairo_restore(cr);
}

void wsp_chart_bars(const struct wsp_chart *c, const double *xs, const double *ys, size_t n, double width,
		    struct wsp_rgb colour)
{
	cairo_t *cr = c->cr;
	cairo_save(cr);
	cairo_rectangle(cr, c->x, c->y, c->w, c->h);
	cairo_clip(cr);
	for (size_t i = 0; i < n; i++) {
		double a = wsp_chart_px(c, xs[i]), b = wsp_chart_px(c, xs[i] + width);
		double top = wsp_chart_py(c, ys[i]), base = wsp_chart_py(c, c->y0);
		cairo_rectangle(cr, a + 0.5, top, b - a - 1 > 0.5 ? b - a - 1 : 0.5, base - top);
	}
	wsp_set_colour(cr, colour, 0.85);
	cairo_fill(cr);
	cairo_restore(cr);
}

void wsp_chart_legend(const struct wsp_chart *c, const struct wsp_legend_item *items, size_t n)
{
	cairo_t *cr = c->cr;
	double w = 0;
	for (size_t i = 0; i < n; i++) {
		double tw = wsp_text_width(cr, 8, false, items[i].label);
		if (tw > w)
			w = tw;
	}
	double x = c->x + 8, y = c->y + 8, h = 12 * (double)n + 6;
	cairo_save(cr);
	cairo_set_source_rgba(cr, 1, 1, 1, 0.88);
	cairo_rectangle(cr, x, y, w + 34, h);
	cairo_fill_preserve(cr);
	wsp_set_colour(cr, WSP_C_GRID, 1);
	cairo_set_line_width(cr, 0.5);
	cairo_stroke(cr);
	for (size_t i = 0; i < n; i++) {
		double ly = y + 10 + 12 * (double)i;
		wsp_set_colour(cr, items[i].colour, 1);
		if (items[i].box) {
			cairo_rectangle(cr, x + 5, ly - 6, 16, 7);
			cairo_fill(cr);
		} else {
			cairo_set_line_width(cr, 1.8);
			if (items[i].dashed) {
				double dash[] = { 4, 2.5 };
				cairo_set_dash(cr, dash, 2, 0);
			}
			cairo_move_to(cr, x + 5, ly - 3);
			cairo_line_to(cr, x + 21, ly - 3);
			cairo_stroke(cr);
			cairo_set_dash(cr, NULL, 0, 0);
		}
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		wsp_text(cr, x + 26, ly, 8, false, WSP_LEFT, items[i].label);
	}
	cairo_restore(cr);
}

void wsp_colour_bar(cairo_t *cr, double x, double y, double w, double h, double max, enum wsp_unit u,
		    const char *label)
{
	cairo_save(cr);
	int steps = 64;
	for (int i = 0; i < steps; i++) {
		double t = (i + 0.5) / steps;
		wsp_set_colour(cr, wsp_heat(t), 1);
		cairo_rectangle(cr, x, y + h - (i + 1) * h / steps, w, h / steps + 0.3);
		cairo_fill(cr);
	}
	wsp_set_colour(cr, wsp_heat(0), 1);
	cairo_rectangle(cr, x, y + h + 4, w, 8);
	cairo_fill(cr);
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	cairo_set_line_width(cr, 0.5);
	cairo_rectangle(cr, x, y, w, h);
	cairo_stroke(cr);
	char text[64];
	wsp_text(cr, x + w + 3, y + 7, 7.5, false, WSP_LEFT, wsp_unit_format(text, sizeof text, max, u));
	wsp_text(cr, x + w + 3, y + h / 2 + 3, 7.5, false, WSP_LEFT, wsp_unit_format(text, sizeof text, max / 2, u));
	wsp_text(cr, x + w + 3, y + h + 11, 7.5, false, WSP_LEFT, "none");
	if (label) {
		cairo_save(cr);
		cairo_translate(cr, x - 4, y + h / 2);
		cairo_rotate(cr, -M_PI / 2);
		wsp_text(cr, 0, 0, 8, false, WSP_CENTER, label);
		cairo_restore(cr);
	}
	cairo_restore(cr);
}
