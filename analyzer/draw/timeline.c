/*
 * timeline.c - `wsprof report timeline` drawn: memory over time, kind by kind.
 *
 * Each kind gets a chart of what was allocated, what was truly in use
 * (allocated minus what the program said could be given back), the
 * working set (bytes of the kind accessed per window), and, where they
 * belong, the process's resident set (with the heap) and the device's
 * free memory (with device memory: the breathing room). Phases are shaded
 * and named, failed allocations marked, the peak labelled. The lines are
 * compute/timeline.c's; the command cmd/timeline.c; the same figures as
 * text and JSON text/timelinetext.c.
 */
#include "views.h"
#include "text.h"
#include "timeline.h"

#include "job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void wsp_view_subtitle(const struct wsp_loaded *l, char *buf, size_t cap)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	double secs = (double)wsp_model_last_time(l->model) / 1e9;
	char sampled[128]; /* first: a long command line may not fit */
	wsp_sampled_text(l, sampled, sizeof sampled);
	snprintf(buf, cap, "%s%s%s (pid %u)  -  %s  -  %.2f s%s", sampled, sampled[0] ? "  -  " : "",
		 p->cmdline[0] ? p->cmdline : p->exe, p->pid, l->path, secs,
		 l->status.complete ? "" : "  -  trace cut short: this covers what was read");
	for (char *c = buf; *c; c++) /* a command line's newlines and tabs (python3 -c '...') */
		if ((unsigned char)*c < ' ')
			*c = ' ';
}

size_t wsp_view_phases(const struct wsp_chart *c, const struct wsp_loaded *l)
{
	const struct wsp_phase *ph;
	size_t nph = wsp_model_phases(l->model, &ph);
	uint64_t end = wsp_model_last_time(l->model);
	for (size_t i = 0; i < nph; i++)
		wsp_chart_span(c, (double)ph[i].start_ns / 1e9, (double)(ph[i].end_ns ? ph[i].end_ns : end) / 1e9,
			       WSP_C_PHASE, ph[i].name, (int)ph[i].depth);
	return nph;
}

/* The times nothing was recorded (before a paused start's wsprof_start,
 * between spans, before an attach), shaded grey. @return how many. */
static size_t view_unrecorded(const struct wsp_chart *c, const struct wsp_loaded *l)
{
	struct wsp_span spans[256];
	bool attached;
	const struct wsp_recording_switch *sw;
	if (!wsp_model_recording(l->model, &sw))
		return 0;
	size_t n = wsp_recorded_spans(l, spans, 256, &attached), shaded = 0;
	uint64_t from = 0, end = wsp_model_last_time(l->model);
	for (size_t i = 0; i <= n; i++) {
		uint64_t to = i < n ? spans[i].start_ns : end;
		if (to > from) {
			wsp_chart_span(c, (double)from / 1e9, (double)to / 1e9, WSP_C_GRID, shaded ? NULL : "not recorded", 0);
			shaded++;
		}
		if (i < n)
			from = spans[i].end_ns;
	}
	return shaded;
}

static void draw_kind(cairo_t *cr, const struct wsp_loaded *l, unsigned k, double top, double height)
{
	struct wsp_kind_lines kl;
	if (wsp_kind_lines(l, k, &kl)) {
		wsp_kind_lines_free(&kl);
		return;
	}
	const struct wsp_kind_stats *ks = wsp_model_kind(l->model, k);
	double end = (double)wsp_model_last_time(l->model) / 1e9;
	double ymax = wsp_line_max(&kl.allocated);
	double others[] = { wsp_line_max(&kl.wss), wsp_line_max(&kl.rss), wsp_line_max(&kl.device_free) };
	for (size_t i = 0; i < 3; i++)
		if (others[i] > ymax)
			ymax = others[i];

	struct wsp_chart c;
	wsp_chart_init(&c, cr, WSP_MARGIN + 62, top + 18, WSP_PAGE_W - 2 * WSP_MARGIN - 70, height - 50, 0, end,
		       WSP_UNIT_SECONDS, 0, ymax, WSP_UNIT_BYTES);
	char title[160], peak[32], when[32];
	snprintf(title, sizeof title, "%s: peak %s%s at %s", wsprof_kind_name(k), wsp_est_total(l, k),
		 wsp_unit_format(peak, sizeof peak, (double)ks->peak_bytes, WSP_UNIT_BYTES),
		 wsp_unit_format(when, sizeof when, (double)ks->peak_time_ns / 1e9, WSP_UNIT_SECONDS));
	if (ks->failed)
		snprintf(title + strlen(title), sizeof title - strlen(title), ", %llu failed allocation%s",
			 (unsigned long long)ks->failed, ks->failed == 1 ? "" : "s");

	size_t nph = wsp_view_phases(&c, l);
	bool unrecorded = view_unrecorded(&c, l) > 0;
	wsp_chart_axes(&c, title, "time since the program started", "bytes");

	struct wsp_legend_item legend[7];
	size_t nl = 0;
	if (kl.rss.n) {
		wsp_chart_line(&c, kl.rss.x, kl.rss.y, kl.rss.n, WSP_C_RSS, 1.2, true, false);
		legend[nl++] = (struct wsp_legend_item){ "resident set (whole process)", WSP_C_RSS, true, false };
	}
	if (kl.device_free.n) {
		wsp_chart_line(&c, kl.device_free.x, kl.device_free.y, kl.device_free.n, WSP_C_DEVICE_FREE, 1.4, true, true);
		legend[nl++] = (struct wsp_legend_item){ "device free memory", WSP_C_DEVICE_FREE, true, false };
	}
	wsp_chart_area(&c, kl.allocated.x, kl.allocated.y, kl.allocated.n, WSP_C_ALLOCATED, 0.12);
	wsp_chart_line(&c, kl.allocated.x, kl.allocated.y, kl.allocated.n, WSP_C_ALLOCATED, 1.6, false, true);
	bool est = wsp_model_totals_estimated(l->model, k);
	legend[nl++] = (struct wsp_legend_item){ est ? "allocated (estimated)" : "allocated", WSP_C_ALLOCATED, false, false };
	if (kl.has_in_use) {
		wsp_chart_line(&c, kl.in_use.x, kl.in_use.y, kl.in_use.n, WSP_C_IN_USE, 1.4, false, true);
		legend[nl++] = (struct wsp_legend_item){ est ? "truly in use (estimated)" : "truly in use", WSP_C_IN_USE, false,
							 false };
	}
	if (kl.wss.n && wsp_line_max(&kl.wss) > 0) {
		wsp_chart_line(&c, kl.wss.x, kl.wss.y, kl.wss.n, WSP_C_WSS, 1.2, false, false);
		legend[nl++] = (struct wsp_legend_item){ "working set (accessed per window)", WSP_C_WSS, false, false };
	}
	if (nph)
		legend[nl++] = (struct wsp_legend_item){ "phases", WSP_C_PHASE, false, true };
	if (unrecorded && nl < sizeof legend / sizeof *legend)
		legend[nl++] = (struct wsp_legend_item){ "not recorded", WSP_C_GRID, false, true };

	/* The failed allocations of this kind; the first few named. */
	const struct wsp_failure *f;
	size_t nf = wsp_model_failures(l->model, &f), shown = 0;
	for (size_t i = 0; i < nf; i++) {
		if (f[i].kind != k)
			continue;
		char size[32], label[64];
		snprintf(label, sizeof label, "failed: %s", wsp_unit_format(size, sizeof size, (double)f[i].size, WSP_UNIT_BYTES));
		wsp_chart_mark(&c, (double)f[i].time_ns / 1e9, WSP_C_FAIL, shown++ < 3 ? label : NULL);
	}
	/* The peak, dotted. */
	double px = wsp_chart_px(&c, (double)ks->peak_time_ns / 1e9), py = wsp_chart_py(&c, (double)ks->peak_bytes);
	wsp_set_colour(cr, WSP_C_ALLOCATED, 1);
	cairo_arc(cr, px, py, 3, 0, 2 * M_PI);
	cairo_fill(cr);
	wsp_chart_legend(&c, legend, nl);
	wsp_kind_lines_free(&kl);
}

size_t wsp_timeline_draw(struct wsp_doc *doc, const struct wsp_loaded *l, int kind)
{
	unsigned kinds[WSPROF_KIND_COUNT];
	size_t n = wsp_timeline_kinds(l, kind, kinds), pages = 0;
	char sub[1024];
	wsp_view_subtitle(l, sub, sizeof sub);
	for (size_t i = 0; i < n; i += WSP_TIMELINE_CHARTS_PER_PAGE) {
		cairo_t *cr = wsp_doc_page(doc);
		double top = wsp_page_heading(cr, "Memory over time", sub);
		size_t here = n - i < WSP_TIMELINE_CHARTS_PER_PAGE ? n - i : WSP_TIMELINE_CHARTS_PER_PAGE;
		double h = (WSP_PAGE_H - WSP_MARGIN - top) / WSP_TIMELINE_CHARTS_PER_PAGE;
		for (size_t j = 0; j < here; j++)
			draw_kind(cr, l, kinds[i + j], top + j * h, here == 1 ? 2 * h : h);
		pages++;
	}
	if (!n) {
		cairo_t *cr = wsp_doc_page(doc);
		double top = wsp_page_heading(cr, "Memory over time", sub);
		wsp_text(cr, WSP_MARGIN, top + 20, 11, false, WSP_LEFT, "No allocations were recorded.");
		pages++;
	}
	return pages;
}

/* ---- A job: one line per process on the common clock ------------------ */

#define JOB_LEGEND_MAX 12

void wsp_timeline_job_draw(struct wsp_doc *doc, const struct wsp_job *job, unsigned kind, const char *first, size_t ntraces)
{
	cairo_t *cr = wsp_doc_page(doc);
	char sub[512];
	size_t drawn = 0;
	for (size_t i = 0; i < job->n; i++)
		drawn += wsp_job_line_drawn(&job->procs[i]);
	snprintf(sub, sizeof sub, "%s of a job: %zu of its %zu traces hold %s memory  -  %s%s", wsprof_kind_name(kind), drawn,
		 job->n - job->unread, wsprof_kind_name(kind), first, ntraces > 1 ? " ..." : "");
	double top = wsp_page_heading(cr, "Memory over time, by process", sub);
	uint64_t start = wsp_job_start(job);
	double end = 0, ymax = 0;
	for (size_t i = 0; i < job->n; i++) {
		const struct wsp_job_proc *p = &job->procs[i];
		if (!wsp_job_line_drawn(p))
			continue;
		const struct wsp_job_line *jl = p->extra;
		double off = wsp_job_offset_s(p, start), e = off + (double)p->duration_ns / 1e9;
		end = e > end ? e : end;
		ymax = (double)jl->peak > ymax ? (double)jl->peak : ymax;
		ymax = wsp_line_max(&jl->live) > ymax ? wsp_line_max(&jl->live) : ymax;
	}
	struct wsp_chart c;
	wsp_chart_init(&c, cr, WSP_MARGIN + 62, top + 18, WSP_PAGE_W - 2 * WSP_MARGIN - 70, WSP_PAGE_H - WSP_MARGIN - top - 50,
		       0, end > 0 ? end : 1, WSP_UNIT_SECONDS, 0, ymax > 0 ? ymax : 1, WSP_UNIT_BYTES);
	char title[128];
	snprintf(title, sizeof title, "%s allocated, each process on the job's clock", wsprof_kind_name(kind));
	wsp_chart_axes(&c, title, "time since the job's first process started", "bytes");
	struct wsp_legend_item legend[JOB_LEGEND_MAX + 1];
	char names[JOB_LEGEND_MAX][64], more[64];
	size_t nl = 0, k = 0;
	for (size_t i = 0; i < job->n; i++) {
		const struct wsp_job_proc *p = &job->procs[i];
		if (!wsp_job_line_drawn(p))
			continue;
		const struct wsp_job_line *jl = p->extra;
		double off = wsp_job_offset_s(p, start);
		double *xs = malloc((jl->live.n ? jl->live.n : 1) * sizeof *xs);
		if (!xs)
			break;
		for (size_t j = 0; j < jl->live.n; j++)
			xs[j] = jl->live.x[j] + off;
		struct wsp_rgb colour = wsp_colour_cycle(k);
		wsp_chart_line(&c, xs, jl->live.y, jl->live.n, colour, 1.3, false, true);
		free(xs);
		if (nl < JOB_LEGEND_MAX) {
			char who[32];
			const char *prog = strrchr(p->exe, '/');
			snprintf(names[nl], sizeof names[nl], "%s: %s", wsp_job_proc_name(p, who, sizeof who), prog ? prog + 1 : p->exe);
			legend[nl] = (struct wsp_legend_item){ names[nl], colour, false, false };
			nl++;
		}
		k++;
	}
	size_t shown = nl;
	if (k > shown) {
		snprintf(more, sizeof more, "and %zu more processes", k - shown);
		legend[nl++] = (struct wsp_legend_item){ more, WSP_C_TEXT, true, false };
	}
	wsp_chart_legend(&c, legend, nl);
}

