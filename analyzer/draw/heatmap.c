/*
 * heatmap.c - the heatmap pages (heatmap.h): the grid heatgrid.c computed,
 * drawn a view a page; and the heatmaps following the full report's load
 * (wsp_heat_*).
 */
#include "heatwords.h"

#include "views.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- drawing ---------------------------------------------------------------- */

#define GRID_TOP_GAP 20.0
#define SEP_H 11.0
#define MIN_SPAN_H 10.0 /* points: the least a span of addresses gets */

struct frame {
	double x0, x1, y0, y1; /* the grid */
};

/* The colour step of a cell: -1 none (white), 0 live but not accessed, 1..LEVELS heat. */
static int cell_level(const struct view *v, const struct hrow *r, size_t c)
{
	if (r->value[c] > 0) {
		int lv = (int)ceil(r->value[c] / v->scale * LEVELS);
		return lv < 1 ? 1 : lv > LEVELS ? LEVELS : lv;
	}
	return r->live[c] > 0 ? 0 : -1;
}

static double col_x(const struct heat *h, const struct frame *f, size_t c)
{
	return f->x0 + (f->x1 - f->x0) * (double)c / (double)h->ncols;
}

/* The cells of a row between y and y + rh, batched by colour so a run of
 * equal cells is one rectangle. */
static void draw_cells(cairo_t *cr, const struct heat *h, const struct view *v, const struct frame *f, const double *ys,
		       const double *hs)
{
	cairo_save(cr);
	cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE); /* no seams between cells */
	for (int lv = 0; lv <= LEVELS; lv++) {
		bool any = false;
		for (size_t i = 0; i < v->nrows; i++) {
			for (size_t c = 0; c < h->ncols;) {
				if (cell_level(v, &v->rows[i], c) != lv) {
					c++;
					continue;
				}
				size_t e = c + 1;
				while (e < h->ncols && cell_level(v, &v->rows[i], e) == lv)
					e++;
				cairo_rectangle(cr, col_x(h, f, c), ys[i], col_x(h, f, e) - col_x(h, f, c), hs[i]);
				any = true;
				c = e;
			}
		}
		if (any) {
			wsp_set_colour(cr, wsp_heat((double)lv / LEVELS), 1);
			cairo_fill(cr);
		}
	}
	cairo_restore(cr);
}

static void draw_time_axis(cairo_t *cr, const struct heat *h, const struct frame *f)
{
	double end = (double)h->end_ns / 1e9, step = wsp_tick_step(end, WSP_UNIT_SECONDS, 8);
	char text[32];
	cairo_save(cr);
	cairo_set_line_width(cr, 0.6);
	for (double t = 0; t <= end * (1 + 1e-9); t += step) {
		double x = f->x0 + (f->x1 - f->x0) * t / end;
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		cairo_move_to(cr, x, f->y1);
		cairo_line_to(cr, x, f->y1 + 3);
		cairo_stroke(cr);
		wsp_text(cr, x, f->y1 + 11, 7.5, false, WSP_CENTER, wsp_unit_format(text, sizeof text, t, WSP_UNIT_SECONDS));
	}
	wsp_text(cr, (f->x0 + f->x1) / 2, f->y1 + 22, 8, false, WSP_CENTER, "time since the program started");
	cairo_restore(cr);
}

/* The program's phases (outermost only) in a strip above the grid. */
static void draw_phases(cairo_t *cr, const struct heat *h, const struct frame *f, double y)
{
	const struct wsp_phase *ph;
	size_t n = wsp_model_phases(h->l.model, &ph);
	double end = (double)h->end_ns;
	cairo_save(cr);
	for (size_t i = 0, shown = 0; i < n; i++) {
		if (ph[i].depth)
			continue;
		uint64_t stop = ph[i].end_ns ? ph[i].end_ns : h->end_ns;
		double a = f->x0 + (f->x1 - f->x0) * (double)ph[i].start_ns / end;
		double b = f->x0 + (f->x1 - f->x0) * (double)stop / end;
		b = b < a + 0.8 ? a + 0.8 : b;
		wsp_set_colour(cr, WSP_C_PHASE, 0.35 + 0.2 * (double)(shown++ % 2));
		cairo_rectangle(cr, a, y, b - a, 11);
		cairo_fill(cr);
		char fit[128];
		wsp_text_fit(cr, 7, false, ph[i].name, b - a - 3, fit, sizeof fit);
		if (fit[0] && (!strcmp(fit, ph[i].name) || strlen(fit) >= 8)) {
			cairo_set_source_rgb(cr, 0.15, 0.22, 0.40);
			wsp_text(cr, a + 2, y + 8.3, 7, false, WSP_LEFT, fit);
		}
	}
	cairo_restore(cr);
}

/* The colour bar, and under it the white of nothing live. */
static void draw_legend(cairo_t *cr, const struct view *v, const struct frame *f)
{
	double x = f->x1 + 72, y = f->y0, hgt = (f->y1 - f->y0) - 30;
	wsp_colour_bar(cr, x, y, 10, hgt, v->scale, v->access ? WSP_UNIT_BYTES_PER_S : WSP_UNIT_BYTES,
		       v->access ? "accessed bytes/s" : "live bytes");
	cairo_save(cr);
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_rectangle(cr, x, y + hgt + 17, 10, 8);
	cairo_fill_preserve(cr);
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	cairo_set_line_width(cr, 0.5);
	cairo_stroke(cr);
	wsp_text(cr, x + 13, y + hgt + 24, 7.5, false, WSP_LEFT, "not live");
	cairo_restore(cr);
}

/* Rows top to bottom, sites and names: labels on the left, peaks on the right. */
static void layout_key_rows(cairo_t *cr, const struct heat *h, const struct view *v, const struct frame *f, double *ys,
			    double *hs)
{
	(void)h;
	double rh = (f->y1 - f->y0) / (double)v->nrows;
	double size = rh < 10 ? rh * 0.78 : 8;
	char fit[512], peak[32];
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	wsp_text(cr, f->x1 + 54, f->y0 - 4, 7.5, true, WSP_RIGHT, "peak");
	for (size_t i = 0; i < v->nrows; i++) {
		const struct hrow *r = &v->rows[i];
		ys[i] = f->y0 + rh * (double)i;
		hs[i] = rh;
		double base = ys[i] + rh / 2 + size * 0.35;
		if (r->what == ROW_KEY)
			wsp_set_colour(cr, WSP_C_TEXT, 1);
		else
			cairo_set_source_rgb(cr, 0.42, 0.42, 0.42);
		wsp_text(cr, f->x0 - 5, base, size, false, WSP_RIGHT,
			 wsp_text_fit(cr, size, false, r->label, f->x0 - WSP_MARGIN - 5, fit, sizeof fit));
		wsp_text(cr, f->x1 + 54, base, size, false, WSP_RIGHT, heat_figure(peak, sizeof peak, r->peak, v->access));
	}
}

static void address_label(cairo_t *cr, const struct frame *f, double y, uint64_t addr)
{
	char text[32];
	snprintf(text, sizeof text, "0x%llx", (unsigned long long)addr);
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	cairo_set_line_width(cr, 0.6);
	cairo_move_to(cr, f->x0 - 3, y);
	cairo_line_to(cr, f->x0, y);
	cairo_stroke(cr);
	wsp_text(cr, f->x0 - 5, y + 2.5, 7, false, WSP_RIGHT, text);
}

/* The rows of span g (between gaps g-1 and g): first and last. */
static void span_rows(const struct view *v, size_t g, size_t *first, size_t *last)
{
	*first = g ? v->gaps[g - 1].below + 1 : 0;
	*last = g < v->ngaps ? v->gaps[g].below : v->nrows - 1;
}

/* Bands bottom (low addresses) to top, with a separator for each gap. A
 * span gets MIN_SPAN_H points at least, so a small one stays readable
 * beside a large one: its rows are taller, their bytes the same. */
static void layout_bands(cairo_t *cr, const struct view *v, const struct frame *f, double *ys, double *hs)
{
	double room = (f->y1 - f->y0) - SEP_H * (double)v->ngaps, rows = (double)v->nrows;
	bool small[MAX_SEPARATORS + 1] = { false };
	/* Spans too small for their share get the minimum; the rest share what is left. */
	for (bool again = true; again;) {
		again = false;
		for (size_t g = 0, first, last; g <= v->ngaps; g++) {
			span_rows(v, g, &first, &last);
			double n = (double)(last - first + 1);
			if (!small[g] && n * room / rows < MIN_SPAN_H) {
				small[g] = again = true;
				room -= MIN_SPAN_H;
				rows -= n;
			}
		}
	}
	double y = f->y1;
	for (size_t g = 0, first, last; g <= v->ngaps; g++) {
		span_rows(v, g, &first, &last);
		double h = small[g] ? MIN_SPAN_H / (double)(last - first + 1) : room / rows;
		for (size_t i = first; i <= last; i++) {
			y -= h;
			ys[i] = y;
			hs[i] = h;
		}
		y -= SEP_H;
	}
	/* Addresses at band edges: each span's ends, and round ones between
	 * them at least 30 points apart. */
	for (size_t g = 0, first, last; g <= v->ngaps; g++) {
		span_rows(v, g, &first, &last);
		uint64_t step = 1;
		while ((double)step * hs[first] < 30)
			step *= 2;
		double bottom = ys[first] + hs[first], top = ys[last];
		address_label(cr, f, bottom, v->rows[first].lo);
		if (bottom - top >= 24)
			address_label(cr, f, top, v->rows[last].hi);
		for (size_t i = first + 1; i <= last; i++) {
			double y = ys[i] + hs[i];
			if (v->rows[i].lo % (v->band * step) == 0 && bottom - y >= 14 && y - top >= 14)
				address_label(cr, f, y, v->rows[i].lo);
		}
	}
}

static void draw_gaps(cairo_t *cr, const struct view *v, const struct frame *f, const double *ys)
{
	char text[96], size[32];
	cairo_save(cr);
	for (size_t g = 0; g < v->ngaps; g++) {
		double top = ys[v->gaps[g].below] - SEP_H;
		cairo_set_source_rgb(cr, 1, 1, 1);
		cairo_rectangle(cr, f->x0 - 2, top, f->x1 - f->x0 + 4, SEP_H);
		cairo_fill(cr);
		wsp_set_colour(cr, WSP_C_RSS, 1);
		cairo_set_line_width(cr, 0.5);
		double dash[] = { 2, 2 };
		cairo_set_dash(cr, dash, 2, 0);
		for (int k = 0; k < 2; k++) {
			cairo_move_to(cr, f->x0, top + 1.5 + k * (SEP_H - 3));
			cairo_line_to(cr, f->x1, top + 1.5 + k * (SEP_H - 3));
		}
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		snprintf(text, sizeof text, "\u2026 %s empty \u2026", wsp_human_bytes(size, sizeof size, v->gaps[g].bytes));
		double w = wsp_text_width(cr, 7, false, text);
		cairo_set_source_rgb(cr, 1, 1, 1);
		cairo_rectangle(cr, (f->x0 + f->x1 - w) / 2 - 4, top + 1, w + 8, SEP_H - 2);
		cairo_fill(cr);
		cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
		wsp_text(cr, (f->x0 + f->x1) / 2, top + SEP_H - 3, 7, false, WSP_CENTER, text);
	}
	cairo_restore(cr);
}

static void draw_view(struct wsp_doc *doc, const struct heat *h, const struct view *v)
{
	char title[128], sub[1024], note[512], words[512];
	cairo_t *cr = wsp_doc_page(doc);
	wsp_view_subtitle(&h->l, sub, sizeof sub);
	double top = wsp_page_heading(cr, heat_view_title(v, title, sizeof title), sub);
	cairo_set_source_rgb(cr, 0.30, 0.30, 0.30);
	wsp_text(cr, WSP_MARGIN, top + 2, 8.5, false, WSP_LEFT, heat_view_note(h, v, note, sizeof note));
	const struct wsp_phase *ph;
	bool phases = wsp_model_phases(h->l.model, &ph) > 0;
	struct frame f = { v->by == WSP_HEAT_BY_ADDRESS ? WSP_MARGIN + 74 : WSP_MARGIN + 232, WSP_PAGE_W - WSP_MARGIN - 120,
			   top + (phases ? 26 : 12), WSP_PAGE_H - WSP_MARGIN - 22 };
	if (phases)
		draw_phases(cr, h, &f, top + 9);
	double *ys = calloc(v->nrows ? v->nrows : 1, sizeof *ys), *hs = calloc(v->nrows ? v->nrows : 1, sizeof *hs);
	if (!v->nrows || !ys || !hs) {
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		wsp_text(cr, (f.x0 + f.x1) / 2, (f.y0 + f.y1) / 2, 11, false, WSP_CENTER,
			 v->by == WSP_HEAT_BY_NAME && !h->names ? "No block was named." : "Nothing to show.");
		free(ys);
		free(hs);
		return;
	}
	if (v->by == WSP_HEAT_BY_ADDRESS)
		layout_bands(cr, v, &f, ys, hs);
	else
		layout_key_rows(cr, h, v, &f, ys, hs);
	double bottom = ys[0] + hs[0];
	for (size_t i = 0; i < v->nrows; i++)
		bottom = ys[i] + hs[i] > bottom ? ys[i] + hs[i] : bottom;
	f.y1 = bottom;
	draw_cells(cr, h, v, &f, ys, hs);
	if (v->by != WSP_HEAT_BY_ADDRESS && hs[0] >= 6) { /* rows told apart */
		cairo_save(cr);
		cairo_set_source_rgb(cr, 1, 1, 1);
		cairo_set_line_width(cr, 0.7);
		for (size_t i = 1; i < v->nrows; i++) {
			cairo_move_to(cr, f.x0, ys[i]);
			cairo_line_to(cr, f.x1, ys[i]);
		}
		cairo_stroke(cr);
		cairo_restore(cr);
	}
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	cairo_set_line_width(cr, 0.6);
	cairo_rectangle(cr, f.x0, f.y0, f.x1 - f.x0, f.y1 - f.y0);
	cairo_stroke(cr);
	if (v->by == WSP_HEAT_BY_ADDRESS)
		draw_gaps(cr, v, &f, ys);
	draw_time_axis(cr, h, &f);
	struct frame full = f;
	full.y1 = WSP_PAGE_H - WSP_MARGIN - 22;
	draw_legend(cr, v, &full);
	cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
	wsp_text(cr, WSP_MARGIN, WSP_PAGE_H - 14, 7.5, false, WSP_LEFT, heat_colour_words(v, words, sizeof words));
	free(ys);
	free(hs);
}

static int draw_pages(struct wsp_doc *doc, struct heat *h)
{
	int pages = 0;
	bool several = (h->opt->views & (h->opt->views - 1)) != 0;
	for (int by = 0; by < WSP_HEAT_BY_COUNT; by++) {
		if (!h->views[by].wanted || (several && by == WSP_HEAT_BY_NAME && !h->names))
			continue;
		draw_view(doc, h, &h->views[by]);
		pages++;
	}
	return pages;
}

int wsp_heatmap_draw(struct wsp_doc *doc, const char *trace_path, const struct wsp_heatmap_options *opt)
{
	struct heat h;
	if (heat_compute(&h, trace_path, opt))
		return -1;
	int pages = draw_pages(doc, &h);
	heat_free(&h);
	return pages;
}

/* struct wsp_heat is struct heat, computed following another's load. */
struct wsp_heat {
	struct heat h;
};

struct wsp_heat *wsp_heat_new(const char *trace_path, const struct wsp_heatmap_options *opt,
			      const struct wsp_loaded *l)
{
	struct wsp_heat *w = malloc(sizeof *w);
	if (w)
		heat_init(&w->h, trace_path, opt, l);
	return w;
}

struct wsp_follower wsp_heat_follower(struct wsp_heat *w)
{
	return (struct wsp_follower){ heat_event, heat_end, &w->h };
}

int wsp_heat_pages(struct wsp_doc *doc, struct wsp_heat *w)
{
	w->h.l.status = w->h.load->status; /* set once the load ended */
	return draw_pages(doc, &w->h);
}

void wsp_heat_free(struct wsp_heat *w)
{
	if (w) {
		heat_free(&w->h);
		free(w);
	}
}

