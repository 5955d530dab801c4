/*
 * report.c - `wsprof report TRACE -o report.pdf`: the whole story in one
 * document.
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
#include "cli.h"
#include "compute.h"
#include "commands.h"

#include "flame.h"
#include "heatmap.h"
#include "statemap.h"
#include "timeindex.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOP_SITES 18
#define STATE_PAGES_MAX 4 /* the peak and the first failed allocations */

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

static void draw_summary(struct wsp_doc *doc, const struct wsp_loaded *l)
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

static void draw_sites(struct wsp_doc *doc, struct wsp_loaded *l, unsigned kind)
{
	struct wsp_site_row *rows = NULL;
	size_t n = 0;
	if (wsp_callsites_rows(l, kind, "peak", &rows, &n))
		return;
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
	free(rows);
}

/* The memory states drawn: at the peak and at the first failed
 * allocations, each found in the loaded model (planned before it goes)
 * and replayed from the trace's index (built as the report's load is
 * read, unless one is kept). */
struct states {
	struct wsp_state v[STATE_PAGES_MAX];
	int kind[STATE_PAGES_MAX];
	size_t n;
};

static int plan_states(struct states *s, const struct wsp_loaded *l)
{
	s->n = 0;
	const struct wsp_failure *f;
	size_t nf = wsp_model_failures(l->model, &f);
	for (size_t i = 0; i <= nf && i < STATE_PAGES_MAX; i++) {
		char at[32];
		int kind = i ? (int)f[i - 1].kind : -1;
		if (i == 0)
			snprintf(at, sizeof at, "peak");
		else if (i == 1)
			snprintf(at, sizeof at, "oom");
		else
			snprintf(at, sizeof at, "%.9f", (double)f[i - 1].time_ns / 1e9);
		s->kind[s->n] = kind;
		if (wsp_state_plan(l, at, kind, &s->v[s->n])) {
			wsp_state_free(&s->v[s->n]);
			return 1;
		}
		s->n++;
	}
	return 0;
}

static int draw_states(struct wsp_doc *doc, struct states *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (wsp_statemap_draw_memories(doc, &s->v[i], s->kind[i]))
			return 1;
	return 0;
}

static void states_free(struct states *s)
{
	for (size_t i = 0; i < s->n; i++)
		wsp_state_free(&s->v[i]);
	s->n = 0;
}

/* The kind the report looks at closest: the biggest at its peak. */
static unsigned main_kind(const struct wsp_loaded *l)
{
	unsigned best = WSPROF_KIND_HEAP;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		if (!wsp_kind_is_reservation(k) &&
		    wsp_model_kind(l->model, k)->peak_bytes > wsp_model_kind(l->model, best)->peak_bytes)
			best = k;
	return best;
}

static void usage(FILE *out)
{
	fputs("usage: wsprof report TRACE -o OUT.pdf|OUT.svg|OUT.png\n"
	      "  the whole story in one document: summary, memory over time, working set,\n"
	      "  heatmaps, memory state at the peak and at failed allocations, top allocation\n"
	      "  sites and a flame graph (with .svg or .png: OUT-1.svg, OUT-2.svg, ... a page each)\n"
	      "  'wsprof report REPORT --help' for the single views.\n", out);
}

int wsp_cmd_report(int argc, char **argv)
{
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_OUTPUT, NULL, NULL, NULL, usage, &cli);
	if (rc >= 0)
		return rc;
	const char *out = cli.out, *trace = cli.trace;
	if (!out) {
		fprintf(stderr, "wsprof: say where the report goes: wsprof report %s -o report.pdf (or .svg, .png)\n", trace);
		return 2;
	}
	enum wsp_doc_format format;
	if (wsp_doc_format_of(out, &format))
		return 2;
	/* One pass over the trace: the load, which the heatmaps' grid and the
	 * index's builder follow (the grid told by the load's model of the
	 * blocks each access sample touches, as the model matches it); each
	 * memory state is replayed from the index. */
	struct wsp_heatmap_options heat_opt = { .views = 1u << WSP_HEAT_BY_ADDRESS | 1u << WSP_HEAT_BY_CALLSITE |
							 1u << WSP_HEAT_BY_NAME,
						.kind = -1 };
	struct wsp_loaded l;
	struct wsp_heat *heat = wsp_heat_new(trace, &heat_opt, &l);
	if (!heat) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	/* The output first: one that cannot be written is told before the
	 * trace is read (and its frames named). */
	struct wsp_doc *doc = wsp_doc_open(out, true);
	if (!doc) {
		wsp_heat_free(heat);
		return 1;
	}
	struct wsp_model_options mo = { .per_stack = true };
	struct wsp_follower grid = wsp_heat_follower(heat);
	struct wsp_tindex *ix;
	if (wsp_load_indexed(trace, &mo, true, &grid, 1, &l, &ix)) {
		wsp_doc_finish(doc, false);
		wsp_heat_free(heat);
		return 1;
	}
	struct states states = { .n = 0 };
	int status = plan_states(&states, &l);
	if (status) {
		wsp_doc_finish(doc, false);
		states_free(&states);
		wsp_heat_free(heat);
		wsp_tindex_close(ix);
		wsp_loaded_free(&l);
		return 1;
	}
	/* The sites and the flame graph held, to come last as ever; the
	 * heatmaps borrow the load's model, which goes with them, before the
	 * states' pages replay models of their own. */
	unsigned kind = main_kind(&l);
	draw_summary(doc, &l);
	wsp_timeline_draw(doc, &l, -1);
	wsp_wss_draw(doc, &l, -1);
	wsp_doc_hold(doc, true);
	draw_sites(doc, &l, kind);
	wsp_flame_draw(doc, &l, kind, WSP_FLAME_PEAK);
	wsp_doc_hold(doc, false);
	wsp_heat_pages(doc, heat);
	wsp_heat_free(heat);
	wsp_model_free(l.model);
	l.model = NULL;
	for (size_t i = 0; i < states.n && !status; i++)
		status = wsp_state_replay(ix, &states.v[i]);
	if (!status)
		status = draw_states(doc, &states);
	wsp_doc_release(doc);
	status = wsp_doc_finish(doc, !status);
	states_free(&states);
	wsp_tindex_close(ix);
	wsp_loaded_free(&l);
	return status;
}
