/*
 * report.c - `wsprof report TRACE -o report.pdf`: the whole story in one
 * document. Parses, loads the trace once (the heatmaps' grid and the
 * index following), finds the states and the sites, and hands the pages,
 * in this order, to draw/ (report.c draws the summary and the sites):
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

#define STATE_PAGES_MAX 4 /* the peak and the first failed allocations */

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
	wsp_report_draw_summary(doc, &l);
	wsp_timeline_draw(doc, &l, -1);
	wsp_wss_draw(doc, &l, -1);
	wsp_doc_hold(doc, true);
	struct wsp_site_row *rows = NULL;
	size_t nrows = 0;
	if (!wsp_callsites_rows(&l, kind, "peak", &rows, &nrows))
		wsp_report_draw_sites(doc, &l, kind, rows, nrows);
	free(rows);
	wsp_flame_draw(doc, &l, kind, WSP_FLAME_PEAK);
	wsp_doc_hold(doc, false);
	wsp_heat_pages(doc, heat);
	wsp_heat_free(heat);
	wsp_model_free(l.model);
	l.model = NULL;
	for (size_t i = 0; i < states.n && !status; i++)
		status = wsp_state_replay(ix, &states.v[i]);
	for (size_t i = 0; i < states.n && !status; i++)
		status = wsp_statemap_draw_memories(doc, &states.v[i], states.kind[i]) ? 1 : 0;
	wsp_doc_release(doc);
	status = wsp_doc_finish(doc, !status);
	states_free(&states);
	wsp_tindex_close(ix);
	wsp_loaded_free(&l);
	return status;
}
