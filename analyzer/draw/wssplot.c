/*
 * wssplot.c - the working set as a picture (`wsprof report wss --plot`,
 * and a page of the report): bytes accessed per window over time, one line
 * per access source, beside what was allocated; and below, how the
 * windows distribute, with the percentiles damo prints (0, 25, 50, 75,
 * 100) and the mean marked.
 */
#include "views.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HIST_BINS 40

/* Over time: one line per source that saw anything (or the kind's bytes). */
static void draw_series(cairo_t *cr, const struct wsp_loaded *l, const struct wsp_wss_point *pts, size_t n, int kind,
			double top, double height)
{
	double *x = malloc(2 * n * sizeof *x), *y = malloc(2 * n * sizeof *y);
	if (!x || !y) {
		free(x);
		free(y);
		return;
	}
	double ymax = 0;
	for (size_t i = 0; i < n; i++) {
		double v = (double)wsp_wss_point_bytes(&pts[i], -1, kind);
		for (int s = 0; s < WSPROF_ACCESS_SOURCE_COUNT; s++)
			if ((double)pts[i].bytes[s] > v)
				v = (double)pts[i].bytes[s];
		if (v > ymax)
			ymax = v;
	}
	struct wsp_chart c;
	double end = (double)wsp_model_last_time(l->model) / 1e9;
	wsp_chart_init(&c, cr, WSP_MARGIN + 62, top + 18, WSP_PAGE_W - 2 * WSP_MARGIN - 70, height - 50, 0, end,
		       WSP_UNIT_SECONDS, 0, ymax, WSP_UNIT_BYTES);
	wsp_view_phases(&c, l);
	char title[128];
	snprintf(title, sizeof title, "Bytes accessed per window%s%s", kind >= 0 ? ", " : "",
		 kind >= 0 ? wsprof_kind_name((unsigned)kind) : "");
	wsp_chart_axes(&c, title, "time since the program started", "bytes accessed");
	struct wsp_legend_item legend[WSPROF_ACCESS_SOURCE_COUNT + 1];
	size_t nl = 0;
	/* Each window is drawn across its span. */
	for (int s = -1; s < WSPROF_ACCESS_SOURCE_COUNT; s++) {
		size_t m = 0;
		uint64_t any = 0;
		for (size_t i = 0; i < n; i++) {
			uint64_t v = s < 0 ? wsp_wss_point_bytes(&pts[i], -1, kind) : pts[i].bytes[s];
			any |= v;
			x[m] = (double)pts[i].start_ns / 1e9;
			y[m++] = (double)v;
			x[m] = (double)pts[i].end_ns / 1e9;
			y[m++] = (double)v;
		}
		if (!any || (s >= 0 && kind >= 0))
			continue;
		struct wsp_rgb colour = s < 0 ? WSP_C_WSS : wsp_colour_cycle((size_t)s + 1);
		if (s < 0)
			wsp_chart_area(&c, x, y, m, colour, 0.15);
		wsp_chart_line(&c, x, y, m, colour, s < 0 ? 1.8 : 1.0, s >= 0, false);
		legend[nl++] = (struct wsp_legend_item){ s < 0 ? (kind >= 0 ? "accessed (every source)" : "accessed (every source, every kind)")
							       : wsp_access_source((unsigned)s)->word,
							 colour, s >= 0, false };
	}
	wsp_chart_legend(&c, legend, nl);
	free(x);
	free(y);
}

/* The distribution: a histogram of the windows, percentiles marked. */
static void draw_distribution(cairo_t *cr, const struct wsp_wss_point *pts, size_t n, int kind, double top,
			      double height)
{
	uint64_t *v = malloc(n * sizeof *v);
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = wsp_wss_point_bytes(&pts[i], -1, kind);
	qsort(v, n, sizeof *v, wsp_cmp_u64);
	unsigned __int128 sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	double mean = (double)(sum / n), hi = (double)v[n - 1];
	double width = hi > 0 ? hi / HIST_BINS : 1;
	double xs[HIST_BINS + 1], ys[HIST_BINS + 1] = { 0 };
	for (int b = 0; b <= HIST_BINS; b++)
		xs[b] = b * width;
	for (size_t i = 0; i < n; i++) {
		int b = (int)((double)v[i] / width);
		ys[b > HIST_BINS ? HIST_BINS : b] += 1;
	}
	double ymax = 0;
	for (int b = 0; b <= HIST_BINS; b++)
		if (ys[b] > ymax)
			ymax = ys[b];
	struct wsp_chart c;
	wsp_chart_init(&c, cr, WSP_MARGIN + 62, top + 18, WSP_PAGE_W - 2 * WSP_MARGIN - 70, height - 50, 0,
		       hi + width, WSP_UNIT_BYTES, 0, ymax, WSP_UNIT_COUNT);
	char title[256], a[32], b[32], m[32], d[32], e[32], f[32];
	static const unsigned pct[5] = { 0, 25, 50, 75, 100 };
	uint64_t p[5];
	for (int i = 0; i < 5; i++)
		p[i] = v[(size_t)((pct[i] * (n - 1) + 50) / 100)];
	snprintf(title, sizeof title, "Distribution over %zu windows: p0 %s, p25 %s, p50 %s, p75 %s, p100 %s, mean %s", n,
		 wsp_unit_format(a, sizeof a, (double)p[0], WSP_UNIT_BYTES), wsp_unit_format(b, sizeof b, (double)p[1], WSP_UNIT_BYTES),
		 wsp_unit_format(m, sizeof m, (double)p[2], WSP_UNIT_BYTES), wsp_unit_format(d, sizeof d, (double)p[3], WSP_UNIT_BYTES),
		 wsp_unit_format(e, sizeof e, (double)p[4], WSP_UNIT_BYTES), wsp_unit_format(f, sizeof f, mean, WSP_UNIT_BYTES));
	wsp_chart_axes(&c, title, "bytes accessed in a window", "windows");
	wsp_chart_bars(&c, xs, ys, HIST_BINS + 1, width, WSP_C_WSS);
	static const char *const names[5] = { "p0", "p25", "p50", "p75", "p100" };
	for (int i = 0; i < 5; i++)
		wsp_chart_mark(&c, (double)p[i] + width / 2, WSP_C_ACCENT, NULL);
	/* Each label on the first row where it clears the labels already
	 * placed: percentiles often coincide (p25 = p50 on a steady run). */
	double placed_x[5];
	int placed_row[5], nplaced = 0;
	for (int i = 0; i < 5; i++) {
		double px = wsp_chart_px(&c, (double)p[i] + width / 2);
		int row = 0;
		for (bool clash = true; clash && row < 5; row += clash) {
			clash = false;
			for (int k = 0; k < nplaced && !clash; k++)
				clash = placed_row[k] == row && fabs(placed_x[k] - px) < 22;
		}
		placed_x[nplaced] = px;
		placed_row[nplaced++] = row;
		wsp_set_colour(cr, WSP_C_ACCENT, 1);
		wsp_text(cr, px, c.y + 16 + 9 * row, 7.5, true, WSP_CENTER, names[i]);
	}
	wsp_chart_mark(&c, mean + width / 2, WSP_C_FAIL, "mean");
	free(v);
}

size_t wsp_wss_draw(struct wsp_doc *doc, const struct wsp_loaded *l, int kind)
{
	const struct wsp_wss *w = wsp_model_wss(l->model);
	const struct wsp_wss_point *pts = NULL;
	size_t n = w ? wsp_wss_points(w, &pts) : 0;
	char sub[1024];
	wsp_view_subtitle(l, sub, sizeof sub);
	cairo_t *cr = wsp_doc_page(doc);
	double top = wsp_page_heading(cr, "Working set: memory actually accessed", sub);
	if (!n) {
		const wsprof_process *p = wsprof_trace_process(l->trace);
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		wsp_text(cr, WSP_MARGIN, top + 20, 11, false, WSP_LEFT, "This trace has no access samples.");
		if (p->access_note[0])
			wsp_text(cr, WSP_MARGIN, top + 38, 9.5, false, WSP_LEFT, p->access_note);
		return 1;
	}
	double h = (WSP_PAGE_H - WSP_MARGIN - top) / 2;
	draw_series(cr, l, pts, n, kind, top, h);
	draw_distribution(cr, pts, n, kind, top + h, h);
	return 1;
}
