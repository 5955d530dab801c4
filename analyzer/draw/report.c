/*
 * report.c - the pages of `wsprof report TRACE -o report.pdf` that are its
 * own: the summary and the top allocation sites. The command, the load
 * and the order of the pages are cmd/report.c; it puts these pages and
 * the other views in one document:
 *
 *   1. the summary: program, duration, peaks per kind, leaks, failed
 *      allocations, the access sources there were;
 *   2. memory over time, kind by kind (timeline.c);
 *   3. the working set over time and its distribution (wssplot.c);
 *   4. heatmaps: time by address, time by call site (heatmap.c);
 *   5. memory state at the peak and at each failed allocation (statemap.c);
 *   6. the top allocation sites and a flame graph (flame.c).
 *
 * A PDF holds every page; with .svg or .png each page is its own file
 * (NAME-1.svg, NAME-2.svg, ...), listed on stderr.
 */
#include "views.h"
#include "text.h"
#include "compute.h"

#include <stdio.h>
#include <string.h>

#define TOP_SITES 18

/* ---- the summary page --------------------------------------------------- */

static double row(cairo_t *cr, double y, const char *key, const char *value)
{
	char fit[512];
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	wsp_text(cr, WSP_MARGIN, y, 9.5, true, WSP_LEFT, key);
	wsp_text(cr, WSP_MARGIN + 110, y, 9.5, false, WSP_LEFT,
		 wsp_text_fit(cr, 9.5, false, value, WSP_PAGE_W - 2 * WSP_MARGIN - 110, fit, sizeof fit));
	return y + 15;
}

static void sources_text(const wsprof_process *p, char *buf, size_t cap)
{
	if (!*wsp_access_sources_text(p->access_sources, buf, cap))
		snprintf(buf, cap, "none");
	if (p->access_note && p->access_note[0] && strlen(buf) + 1 < cap)
		snprintf(buf + strlen(buf), cap - strlen(buf), "  (missing: %s)", p->access_note);
}

void wsp_report_draw_summary(struct wsp_doc *doc, const struct wsp_loaded *l)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	char sub[1024], text[1024], a[32], b[32], c[32], d[32], e[32];
	wsp_view_subtitle(l, sub, sizeof sub);
	cairo_t *cr = wsp_doc_page(doc);
	double y = wsp_page_heading(cr, "wsprof report", sub) + 6;
	y = row(cr, y, "program", p->cmdline[0] ? p->cmdline : p->exe);
	snprintf(text, sizeof text, "%u (parent %u)", p->pid, p->ppid);
	y = row(cr, y, "process", text);
	snprintf(text, sizeof text, "%.3f s%s", (double)wsp_model_last_time(l->model) / 1e9,
		 l->status.complete ? "" : ", trace cut short: this covers what was read");
	y = row(cr, y, "duration", text);
	if (*wsp_ending_text(l, text, sizeof text))
		y = row(cr, y, "ended", text);
	sources_text(p, text, sizeof text);
	y = row(cr, y, "access sources", text);
	const struct wsp_phase *ph;
	size_t nph = wsp_model_phases(l->model, &ph);
	const struct wsp_failure *f;
	size_t nf = wsp_model_failures(l->model, &f);
	snprintf(text, sizeof text, "%zu phases, %zu failed allocations, %llu frees of memory allocated before tracing",
		 nph, nf, (unsigned long long)wsp_model_untracked_frees(l->model));
	y = row(cr, y, "events", text);
	const struct wsp_device_stats *dev;
	size_t nd = wsp_model_devices(l->model, &dev);
	for (size_t i = 0; i < nd; i++) {
		snprintf(text, sizeof text, "device %d: %s total, least free %s at %.3f s", dev[i].device,
			 wsp_unit_format(a, sizeof a, (double)dev[i].total, WSP_UNIT_BYTES),
			 wsp_unit_format(b, sizeof b, (double)dev[i].free_min, WSP_UNIT_BYTES),
			 (double)dev[i].free_min_time_ns / 1e9);
		y = row(cr, y, i ? "" : "GPU memory", text);
	}

	/* One line per kind. */
	y += 14;
	static const char *const head[] = { "kind", "allocations", "failed", "peak", "at", "in use at peak", "leaked" };
	static const double col[] = { 0, 120, 210, 280, 370, 450, 560 };
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	for (size_t i = 0; i < 7; i++)
		wsp_text(cr, WSP_MARGIN + col[i] + (i ? 70 : 0), y, 9, true, i ? WSP_RIGHT : WSP_LEFT, head[i]);
	y += 5;
	wsp_set_colour(cr, WSP_C_GRID, 1);
	cairo_set_line_width(cr, 0.6);
	cairo_move_to(cr, WSP_MARGIN, y);
	cairo_line_to(cr, WSP_MARGIN + 640, y);
	cairo_stroke(cr);
	y += 13;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		const struct wsp_kind_stats *s = wsp_model_kind(l->model, k);
		if (!s->seen || wsp_kind_is_reservation(k)) /* address space, not memory (the summary tells it) */
			continue;
		char n1[32], n2[32];
		const char *est = wsp_est_total(l, k); /* failures are always recorded */
		const char *cells[7] = {
			wsprof_kind_name(k),
			wsp_estimate_text(n1, sizeof n1, est, wsp_group_digits(n1, sizeof n1, s->allocations)),
			wsp_group_digits(n2, sizeof n2, s->failed),
			wsp_estimate_text(a, sizeof a, est, wsp_unit_format(a, sizeof a, (double)s->peak_bytes, WSP_UNIT_BYTES)),
			wsp_unit_format(b, sizeof b, (double)s->peak_time_ns / 1e9, WSP_UNIT_SECONDS),
			wsp_estimate_text(c, sizeof c, est,
					  wsp_unit_format(c, sizeof c, (double)(s->peak_bytes - s->collectable_at_peak), WSP_UNIT_BYTES)),
			wsp_estimate_text(d, sizeof d, est, wsp_unit_format(d, sizeof d, (double)s->live_bytes, WSP_UNIT_BYTES)),
		};
		wsp_set_colour(cr, s->failed ? WSP_C_FAIL : WSP_C_TEXT, 1);
		for (size_t i = 0; i < 7; i++)
			wsp_text(cr, WSP_MARGIN + col[i] + (i ? 70 : 0), y, 9, false, i ? WSP_RIGHT : WSP_LEFT, cells[i]);
		y += 14;
	}
	(void)e;
	y += 10;
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	for (size_t i = 0; i < nf && i < 5; i++) {
		snprintf(text, sizeof text, "failed at %.3f s: %s of %s", (double)f[i].time_ns / 1e9,
			 wsp_unit_format(a, sizeof a, (double)f[i].size, WSP_UNIT_BYTES), wsprof_kind_name(f[i].kind));
		wsp_set_colour(cr, WSP_C_FAIL, 1);
		wsp_text(cr, WSP_MARGIN, y, 9.5, false, WSP_LEFT, text);
		y += 14;
	}
	cairo_set_source_rgb(cr, 0.4, 0.4, 0.4);
	wsp_text(cr, WSP_MARGIN, WSP_PAGE_H - WSP_MARGIN, 8, false, WSP_LEFT,
		 "leaked: live when the trace ended. in use: allocated minus what the program said could be given back "
		 "(doc/reports.md defines every figure).");
}

/* ---- the top allocation sites ------------------------------------------- */

void wsp_report_draw_sites(struct wsp_doc *doc, const struct wsp_loaded *l, unsigned kind, const struct wsp_site_row *rows,
			   size_t n)
{
	char sub[1024], title[128], fit[512], label[512], a[32], b[32], c[32], d[32], e[32];
	wsp_view_subtitle(l, sub, sizeof sub);
	snprintf(title, sizeof title, "Top allocation sites: %s, by bytes held at the peak", wsprof_kind_name(kind));
	cairo_t *cr = wsp_doc_page(doc);
	double y = wsp_page_heading(cr, title, sub) + 4;
	static const char *const head[] = { "site", "at peak", "allocations", "leaked", "accessed", "coldest idle" };
	static const double col[] = { 0, 470, 540, 610, 680, 770 };
	const struct wsp_kind_stats *ks = wsp_model_kind(l->model, kind);
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	for (size_t i = 0; i < 6; i++)
		wsp_text(cr, WSP_MARGIN + col[i], y, 8.5, true, i ? WSP_RIGHT : WSP_LEFT, head[i]);
	y += 14;
	double bar_w = 150;
	for (size_t i = 0; i < n && i < TOP_SITES; i++) {
		const struct wsp_site_stats *s = &rows[i].sum;
		double share = ks->peak_bytes ? (double)s->peak_bytes / (double)ks->peak_bytes : 0;
		wsp_set_colour(cr, WSP_C_ALLOCATED, 0.25);
		cairo_rectangle(cr, WSP_MARGIN + col[1] - bar_w, y - 9, bar_w * share, 12);
		cairo_fill(cr);
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		wsp_frame_label(&rows[i].site, label, sizeof label);
		wsp_text(cr, WSP_MARGIN, y, 8.5, false, WSP_LEFT, wsp_text_fit(cr, 8.5, false, label, col[1] - bar_w - 60, fit, sizeof fit));
		const char *est = wsp_est(l, kind);
		const char *cells[5] = {
			wsp_estimate_text(a, sizeof a, est, wsp_unit_format(a, sizeof a, (double)s->peak_bytes, WSP_UNIT_BYTES)),
			wsp_estimate_text(b, sizeof b, est, wsp_group_digits(b, sizeof b, s->allocations)),
			wsp_estimate_text(c, sizeof c, est, wsp_unit_format(c, sizeof c, (double)s->leaked_bytes, WSP_UNIT_BYTES)),
			wsp_estimate_text(d, sizeof d, est, wsp_unit_format(d, sizeof d, (double)s->accessed_bytes, WSP_UNIT_BYTES)),
			wsp_unit_format(e, sizeof e, (double)s->coldest_idle_ns / 1e9, WSP_UNIT_SECONDS),
		};
		for (size_t k = 0; k < 5; k++)
			wsp_text(cr, WSP_MARGIN + col[k + 1], y, 8.5, false, WSP_RIGHT, cells[k]);
		y += 15.5;
	}
	if (!n)
		wsp_text(cr, WSP_MARGIN, y, 10, false, WSP_LEFT, "No allocations of this kind.");
	cairo_set_source_rgb(cr, 0.4, 0.4, 0.4);
	wsp_text(cr, WSP_MARGIN, WSP_PAGE_H - WSP_MARGIN, 8, false, WSP_LEFT,
		 "accessed: the most of its blocks seen accessed in one window; coldest idle: the longest one of its "
		 "blocks went untouched.  wsprof report callsites has them all.");
}

