/*
 * timeline.c - `wsprof report timeline`: memory over time, kind by kind.
 *
 * Each kind gets a chart of what was allocated, what was truly in use
 * (allocated minus what the program said could be given back), the
 * working set (bytes of the kind accessed per window), and, where they
 * belong, the process's resident set (with the heap) and the device's
 * free memory (with device memory: the breathing room). Phases are shaded
 * and named, failed allocations marked, the peak labelled. The same
 * figures as text (a few dozen moments) and as JSON (every point).
 *
 * The lines come from the model's bounded series (series.h): each point
 * is the highest value in its slice of time, so a peak is never lost
 * between points.
 */
#include "views.h"
#include "text.h"
#include "cli.h"
#include "commands.h"

#include "job.h"
#include "json.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHARTS_PER_PAGE 2

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

/* Kinds worth a chart: every kind that allocated, but the address space
 * CUDA VMM reserves (no memory behind it). */
size_t wsp_timeline_kinds(const struct wsp_loaded *l, int kind, unsigned *kinds)
{
	size_t n = 0;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		const struct wsp_kind_stats *s = wsp_model_kind(l->model, k);
		if ((kind >= 0 && k != (unsigned)kind) || !s->seen || wsp_kind_is_reservation(k))
			continue;
		kinds[n++] = k;
	}
	return n;
}

/* The points of a series as step lines: x in seconds; value: hi (or
 * hi_b; or hi_b - hi: the least free of a device). The last point is
 * carried to the end of the trace. */
struct line {
	double *x, *y;
	size_t n;
};

static void line_free(struct line *ln)
{
	free(ln->x);
	free(ln->y);
	*ln = (struct line){ 0 };
}

enum pick { PICK_HI, PICK_HI_B, PICK_B_MINUS_HI };

static int line_of_series(const struct wsp_series *s, enum pick pick, uint64_t end_ns, struct line *ln)
{
	*ln = (struct line){ 0 };
	if (!s || !s->n)
		return 0;
	ln->x = malloc((s->n + 1) * sizeof *ln->x);
	ln->y = malloc((s->n + 1) * sizeof *ln->y);
	if (!ln->x || !ln->y) {
		line_free(ln);
		return -1;
	}
	/* A device is known from its first sample on: no line before it. */
	size_t first = 0;
	while (pick == PICK_B_MINUS_HI && first < s->n && !s->p[first].set)
		first++;
	for (size_t i = first; i < s->n; i++) {
		const struct wsp_series_point *p = &s->p[i];
		double v = pick == PICK_HI ? (double)p->hi
			   : pick == PICK_HI_B ? (double)p->hi_b
					       : (double)(p->hi_b > p->hi ? p->hi_b - p->hi : 0);
		ln->x[ln->n] = (double)(i * s->width_ns) / 1e9;
		ln->y[ln->n++] = v;
	}
	double end = (double)end_ns / 1e9;
	if (ln->n && end > ln->x[ln->n - 1]) {
		ln->x[ln->n] = end;
		ln->y[ln->n] = ln->y[ln->n - 1];
		ln->n++;
	}
	return 0;
}

static double line_max(const struct line *ln)
{
	double m = 0;
	for (size_t i = 0; i < ln->n; i++)
		if (ln->y[i] > m)
			m = ln->y[i];
	return m;
}

/* Everything one kind's chart shows. */
struct kind_lines {
	struct line allocated, in_use, wss, rss, device_free;
	bool has_in_use;  /* the program said some of it could be given back */
	int device;       /* of device_free */
};

static void kind_lines_free(struct kind_lines *kl)
{
	line_free(&kl->allocated);
	line_free(&kl->in_use);
	line_free(&kl->wss);
	line_free(&kl->rss);
	line_free(&kl->device_free);
}

static bool is_cpu_kind(unsigned k)
{
	return k == WSPROF_KIND_HEAP || k == WSPROF_KIND_MMAP;
}

/* The kind the resident set is drawn with: the heap, else mmap. */
static unsigned rss_kind(const struct wsp_loaded *l)
{
	return wsp_model_kind(l->model, WSPROF_KIND_HEAP)->seen ? WSPROF_KIND_HEAP : WSPROF_KIND_MMAP;
}

static int kind_lines(const struct wsp_loaded *l, unsigned k, struct kind_lines *kl)
{
	*kl = (struct kind_lines){ .device = -1 };
	uint64_t end = wsp_model_last_time(l->model);
	const struct wsp_series *s = wsp_model_live_series(l->model, k);
	if (line_of_series(s, PICK_HI, end, &kl->allocated) || line_of_series(s, PICK_HI_B, end, &kl->in_use))
		return -1;
	for (size_t i = 0; i < kl->in_use.n; i++)
		kl->has_in_use |= kl->in_use.y[i] != kl->allocated.y[i];

	const struct wsp_wss *w = wsp_model_wss(l->model);
	const struct wsp_wss_point *pts = NULL;
	size_t n = w ? wsp_wss_points(w, &pts) : 0;
	if (n) {
		kl->wss.x = malloc(2 * n * sizeof(double));
		kl->wss.y = malloc(2 * n * sizeof(double));
		if (!kl->wss.x || !kl->wss.y)
			return -1;
		for (size_t i = 0; i < n; i++) { /* each window drawn across its span */
			kl->wss.x[kl->wss.n] = (double)pts[i].start_ns / 1e9;
			kl->wss.y[kl->wss.n++] = (double)pts[i].kind_bytes[k];
			kl->wss.x[kl->wss.n] = (double)pts[i].end_ns / 1e9;
			kl->wss.y[kl->wss.n++] = (double)pts[i].kind_bytes[k];
		}
	}
	if (is_cpu_kind(k) && k == rss_kind(l)) {
		const struct wsp_rss_point *r;
		size_t nr = wsp_model_rss(l->model, &r);
		if (nr) {
			kl->rss.x = malloc(nr * sizeof(double));
			kl->rss.y = malloc(nr * sizeof(double));
			if (!kl->rss.x || !kl->rss.y)
				return -1;
			for (size_t i = 0; i < nr; i++) {
				kl->rss.x[i] = (double)r[i].time_ns / 1e9;
				kl->rss.y[i] = (double)r[i].bytes;
			}
			kl->rss.n = nr;
		}
	}
	if (k == WSPROF_KIND_CUDA_DEVICE || k == WSPROF_KIND_CUDA_VMM_MAPPED || k == WSPROF_KIND_CUDA_MANAGED) {
		const struct wsp_device_stats *d;
		size_t nd = wsp_model_devices(l->model, &d);
		if (nd) { /* the first device; the JSON has every one */
			kl->device = d[0].device;
			if (line_of_series(wsp_model_device_series(l->model, 0), PICK_B_MINUS_HI, end, &kl->device_free))
				return -1;
		}
	}
	return 0;
}

static void draw_kind(cairo_t *cr, const struct wsp_loaded *l, unsigned k, double top, double height)
{
	struct kind_lines kl;
	if (kind_lines(l, k, &kl)) {
		kind_lines_free(&kl);
		return;
	}
	const struct wsp_kind_stats *ks = wsp_model_kind(l->model, k);
	double end = (double)wsp_model_last_time(l->model) / 1e9;
	double ymax = line_max(&kl.allocated);
	double others[] = { line_max(&kl.wss), line_max(&kl.rss), line_max(&kl.device_free) };
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
	if (kl.wss.n && line_max(&kl.wss) > 0) {
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
	kind_lines_free(&kl);
}

size_t wsp_timeline_draw(struct wsp_doc *doc, const struct wsp_loaded *l, int kind)
{
	unsigned kinds[WSPROF_KIND_COUNT];
	size_t n = wsp_timeline_kinds(l, kind, kinds), pages = 0;
	char sub[1024];
	wsp_view_subtitle(l, sub, sizeof sub);
	for (size_t i = 0; i < n; i += CHARTS_PER_PAGE) {
		cairo_t *cr = wsp_doc_page(doc);
		double top = wsp_page_heading(cr, "Memory over time", sub);
		size_t here = n - i < CHARTS_PER_PAGE ? n - i : CHARTS_PER_PAGE;
		double h = (WSP_PAGE_H - WSP_MARGIN - top) / CHARTS_PER_PAGE;
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

/* ---- text and JSON ------------------------------------------------------- */

/* The value of a series at t: the highest in the bucket holding t. */
static uint64_t at(const struct wsp_series *s, uint64_t t, bool b)
{
	if (!s->n)
		return 0;
	size_t i = (size_t)(t / s->width_ns);
	if (i >= s->n)
		i = s->n - 1;
	return b ? s->p[i].hi_b : s->p[i].hi;
}

static void print_text(const struct wsp_loaded *l, int kind)
{
	wsp_print_heading(l, "memory over time");
	unsigned kinds[WSPROF_KIND_COUNT];
	size_t n = wsp_timeline_kinds(l, kind, kinds);
	uint64_t end = wsp_model_last_time(l->model);
	if (!n)
		printf("  no allocations recorded\n");
	const struct wsp_phase *ph;
	size_t nph = wsp_model_phases(l->model, &ph);
	for (size_t i = 0; i < nph && i < 40; i++)
		printf("  phase  %8.3f s to %8.3f s  %s%s\n", (double)ph[i].start_ns / 1e9,
		       (double)(ph[i].end_ns ? ph[i].end_ns : end) / 1e9, ph[i].name, ph[i].end_ns ? "" : " (still open)");
	if (nph > 40)
		printf("  ... %zu phases in all (--json lists them)\n", nph);
	const struct wsp_failure *f;
	size_t nf = wsp_model_failures(l->model, &f);
	for (size_t i = 0; i < nf && i < 20; i++) {
		char b[32];
		printf("  failed %8.3f s  %s of %s\n", (double)f[i].time_ns / 1e9, wsp_human_bytes(b, sizeof b, f[i].size),
		       wsprof_kind_name(f[i].kind));
	}
	if (nph || nf)
		printf("\n");
	for (size_t i = 0; i < n; i++) {
		unsigned k = kinds[i];
		const struct wsp_kind_stats *ks = wsp_model_kind(l->model, k);
		const struct wsp_series *s = wsp_model_live_series(l->model, k);
		char a[32], b[32];
		const char *est = wsp_est_total(l, k);
		printf("  %s: peak %s%s at %.3f s\n", wsprof_kind_name(k), est, wsp_human_bytes(a, sizeof a, ks->peak_bytes),
		       (double)ks->peak_time_ns / 1e9);
		printf("  %10s %12s %12s\n", "time", "allocated", "in use");
		for (int row = 0; row <= 20; row++) {
			uint64_t t = end / 20 * (uint64_t)row;
			printf("  %8.3f s %12s %12s\n", (double)t / 1e9,
			       wsp_estimate_text(a, sizeof a, est, wsp_human_bytes(a, sizeof a, at(s, t, false))),
			       wsp_estimate_text(b, sizeof b, est, wsp_human_bytes(b, sizeof b, at(s, t, true))));
		}
		printf("\n");
	}
	const struct wsp_device_stats *d;
	size_t nd = wsp_model_devices(l->model, &d);
	for (size_t i = 0; i < nd; i++) {
		char a[32], b[32];
		printf("  device %d: %s total, least free %s at %.3f s\n", d[i].device,
		       wsp_human_bytes(a, sizeof a, d[i].total), wsp_human_bytes(b, sizeof b, d[i].free_min),
		       (double)d[i].free_min_time_ns / 1e9);
	}
	printf("  (every point: --json; the picture: -o timeline.pdf|svg|png)\n");
}

static void json_series(struct wsp_json *j, const char *key, const struct wsp_series *s, const char *a,
			const char *b)
{
	wsp_json_begin_array(j, key);
	for (size_t i = 0; s && i < s->n; i++) {
		wsp_json_begin_object(j, NULL);
		wsp_json_seconds(j, "t_s", i * s->width_ns);
		wsp_json_uint(j, a, s->p[i].hi);
		wsp_json_uint(j, b, s->p[i].hi_b);
		wsp_json_end_object(j);
	}
	wsp_json_end_array(j);
}

static void print_json(const struct wsp_loaded *l, int kind)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	struct wsp_json j;
	wsp_json_init(&j, stdout);
	wsp_json_begin_object(&j, NULL);
	wsp_json_string(&j, "report", "timeline");
	wsp_json_string(&j, "trace", l->path);
	wsp_json_string(&j, "program", p->cmdline[0] ? p->cmdline : p->exe);
	wsp_json_seconds(&j, "duration_s", wsp_model_last_time(l->model));
	wsp_json_sampled(&j, l);
	wsp_json_begin_array(&j, "kinds");
	unsigned kinds[WSPROF_KIND_COUNT];
	size_t n = wsp_timeline_kinds(l, kind, kinds);
	for (size_t i = 0; i < n; i++) {
		const struct wsp_kind_stats *ks = wsp_model_kind(l->model, kinds[i]);
		const struct wsp_series *s = wsp_model_live_series(l->model, kinds[i]);
		wsp_json_begin_object(&j, NULL);
		wsp_json_string(&j, "kind", wsprof_kind_name(kinds[i]));
		wsp_json_total_estimated(&j, l, kinds[i]);
		wsp_json_uint(&j, "peak_bytes", ks->peak_bytes);
		wsp_json_seconds(&j, "peak_s", ks->peak_time_ns);
		wsp_json_seconds(&j, "bucket_s", s->width_ns);
		json_series(&j, "points", s, "allocated", "in_use");
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	const struct wsp_wss *w = wsp_model_wss(l->model);
	const struct wsp_wss_point *pts = NULL;
	size_t nw = w ? wsp_wss_points(w, &pts) : 0;
	wsp_json_begin_array(&j, "working_set");
	for (size_t i = 0; i < nw; i++) {
		wsp_json_begin_object(&j, NULL);
		wsp_json_seconds(&j, "start_s", pts[i].start_ns);
		wsp_json_seconds(&j, "end_s", pts[i].end_ns);
		for (size_t k = 0; k < n; k++)
			wsp_json_uint(&j, wsprof_kind_name(kinds[k]), pts[i].kind_bytes[kinds[k]]);
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	const struct wsp_rss_point *r;
	size_t nr = wsp_model_rss(l->model, &r);
	wsp_json_begin_array(&j, "rss");
	for (size_t i = 0; i < nr; i++) {
		wsp_json_begin_object(&j, NULL);
		wsp_json_seconds(&j, "t_s", r[i].time_ns);
		wsp_json_uint(&j, "bytes", r[i].bytes);
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	const struct wsp_device_stats *d;
	size_t nd = wsp_model_devices(l->model, &d);
	wsp_json_begin_array(&j, "devices");
	for (size_t i = 0; i < nd; i++) {
		wsp_json_begin_object(&j, NULL);
		wsp_json_int(&j, "device", d[i].device);
		wsp_json_uint(&j, "total", d[i].total);
		json_series(&j, "points", wsp_model_device_series(l->model, i), "used", "total");
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	const struct wsp_phase *ph;
	size_t nph = wsp_model_phases(l->model, &ph);
	wsp_json_begin_array(&j, "phases");
	for (size_t i = 0; i < nph; i++) {
		wsp_json_begin_object(&j, NULL);
		wsp_json_string(&j, "name", ph[i].name);
		wsp_json_uint(&j, "tid", ph[i].tid);
		wsp_json_uint(&j, "depth", ph[i].depth);
		wsp_json_seconds(&j, "start_s", ph[i].start_ns);
		if (ph[i].end_ns)
			wsp_json_seconds(&j, "end_s", ph[i].end_ns);
		else
			wsp_json_null(&j, "end_s");
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	const struct wsp_failure *f;
	size_t nf = wsp_model_failures(l->model, &f);
	wsp_json_begin_array(&j, "failures");
	for (size_t i = 0; i < nf; i++) {
		wsp_json_begin_object(&j, NULL);
		wsp_json_seconds(&j, "t_s", f[i].time_ns);
		wsp_json_string(&j, "kind", wsprof_kind_name(f[i].kind));
		wsp_json_uint(&j, "size", f[i].size);
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	wsp_json_end_object(&j);
}

/* ---- A job: one line per process on the common clock ------------------ */

#define JOB_LEGEND_MAX 12

struct job_line {
	struct line live;          /* x: seconds since the process started */
	uint64_t peak, peak_ns;
};

struct job_timeline {
	unsigned kind;
};

static int job_visit(struct wsp_job_proc *p, struct wsp_loaded *l, void *ctx)
{
	const struct job_timeline *jt = ctx;
	struct job_line *jl = calloc(1, sizeof *jl);
	if (!jl || line_of_series(wsp_model_live_series(l->model, jt->kind), PICK_HI, wsp_model_last_time(l->model),
				  &jl->live)) {
		free(jl);
		fprintf(stderr, "wsprof: out of memory\n");
		return -1;
	}
	const struct wsp_kind_stats *ks = wsp_model_kind(l->model, jt->kind);
	jl->peak = ks->peak_bytes;
	jl->peak_ns = ks->peak_time_ns;
	p->extra = jl;
	return 0;
}

static void job_line_free(void *extra)
{
	struct job_line *jl = extra;
	line_free(&jl->live);
	free(jl);
}

/* The processes drawn: read, and holding memory of the kind. */
static bool job_drawn(const struct wsp_job_proc *p)
{
	return !p->failed && p->extra && ((const struct job_line *)p->extra)->peak;
}

static uint64_t job_start(const struct wsp_job *job)
{
	uint64_t start = UINT64_MAX;
	for (size_t i = 0; i < job->n; i++)
		if (!job->procs[i].failed && job->procs[i].start_realtime_ns < start)
			start = job->procs[i].start_realtime_ns;
	return start;
}

/* Where a process's clock starts on the job's, in seconds. */
static double job_offset_s(const struct wsp_job_proc *p, uint64_t start)
{
	return (double)(p->start_realtime_ns - start) / 1e9;
}

static void job_draw(struct wsp_doc *doc, const struct wsp_job *job, unsigned kind, const char *first, size_t ntraces)
{
	cairo_t *cr = wsp_doc_page(doc);
	char sub[512];
	size_t drawn = 0;
	for (size_t i = 0; i < job->n; i++)
		drawn += job_drawn(&job->procs[i]);
	snprintf(sub, sizeof sub, "%s of a job: %zu of its %zu traces hold %s memory  -  %s%s", wsprof_kind_name(kind), drawn,
		 job->n - job->unread, wsprof_kind_name(kind), first, ntraces > 1 ? " ..." : "");
	double top = wsp_page_heading(cr, "Memory over time, by process", sub);
	uint64_t start = job_start(job);
	double end = 0, ymax = 0;
	for (size_t i = 0; i < job->n; i++) {
		const struct wsp_job_proc *p = &job->procs[i];
		if (!job_drawn(p))
			continue;
		const struct job_line *jl = p->extra;
		double off = job_offset_s(p, start), e = off + (double)p->duration_ns / 1e9;
		end = e > end ? e : end;
		ymax = (double)jl->peak > ymax ? (double)jl->peak : ymax;
		ymax = line_max(&jl->live) > ymax ? line_max(&jl->live) : ymax;
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
		if (!job_drawn(p))
			continue;
		const struct job_line *jl = p->extra;
		double off = job_offset_s(p, start);
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

static void job_json(const struct wsp_job *job, unsigned kind)
{
	uint64_t start = job_start(job);
	struct wsp_json j;
	wsp_json_init(&j, stdout);
	wsp_json_begin_object(&j, NULL);
	wsp_json_string(&j, "report", "timeline");
	wsp_json_bool(&j, "job", true);
	wsp_json_string(&j, "kind", wsprof_kind_name(kind));
	wsp_json_seconds(&j, "start_unix_s", start);
	wsp_json_begin_array(&j, "processes");
	for (size_t i = 0; i < job->n; i++) {
		const struct wsp_job_proc *p = &job->procs[i];
		if (p->failed || !p->extra)
			continue;
		const struct job_line *jl = p->extra;
		uint64_t off = p->start_realtime_ns - start;
		wsp_json_begin_object(&j, NULL);
		wsp_json_string(&j, "trace", p->path);
		wsp_json_uint(&j, "pid", p->pid);
		p->rank >= 0 ? wsp_json_int(&j, "rank", p->rank) : wsp_json_null(&j, "rank");
		wsp_json_seconds(&j, "start_s", off);
		wsp_json_seconds(&j, "end_s", off + p->duration_ns);
		wsp_json_uint(&j, "peak_bytes", jl->peak);
		wsp_json_seconds(&j, "peak_s", off + jl->peak_ns);
		wsp_json_begin_array(&j, "allocated");
		for (size_t k = 0; k < jl->live.n; k++) {
			wsp_json_begin_object(&j, NULL);
			wsp_json_double(&j, "t_s", (double)off / 1e9 + jl->live.x[k]);
			wsp_json_uint(&j, "bytes", (uint64_t)jl->live.y[k]);
			wsp_json_end_object(&j);
		}
		wsp_json_end_array(&j);
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	wsp_json_end_object(&j);
}

static void job_text(const struct wsp_job *job, unsigned kind)
{
	uint64_t start = job_start(job);
	printf("wsprof memory over time of a job: %zu traces, %s\n\n", job->n - job->unread, wsprof_kind_name(kind));
	printf("  %-10s %8s %-28s %10s %10s %12s %10s\n", "process", "pid", "program", "start", "end", "peak", "peak at");
	for (size_t i = 0; i < job->n; i++) {
		const struct wsp_job_proc *p = &job->procs[i];
		if (p->failed || !p->extra)
			continue;
		const struct job_line *jl = p->extra;
		uint64_t off = p->start_realtime_ns - start;
		char who[32], a[32];
		printf("  %-10s %8u %-28.28s %8.3f s %8.3f s %12s %8.3f s\n", wsp_job_proc_name(p, who, sizeof who), p->pid,
		       p->cmdline[0] ? p->cmdline : p->exe, (double)off / 1e9, (double)(off + p->duration_ns) / 1e9,
		       wsp_human_bytes(a, sizeof a, jl->peak), (double)(off + jl->peak_ns) / 1e9);
	}
	printf("\n  (times since the job's first process started; a line per process: -o timeline.pdf)\n");
}

static int timeline_job(const struct wsp_cli *cli, const char *out)
{
	struct job_timeline jt = { cli->kind >= 0 ? (unsigned)cli->kind : WSPROF_KIND_HEAP };
	struct wsp_model_options mo = { 0 };
	struct wsp_job job;
	if (wsp_job_load(cli->job, cli->njob, &mo, false, job_visit, &jt, &job))
		return 1;
	int status = 0;
	if (out) {
		struct wsp_doc *doc = wsp_doc_open(out, false);
		if (doc)
			job_draw(doc, &job, jt.kind, cli->job[0], cli->njob);
		status = wsp_doc_finish(doc, true);
	} else if (cli->json) {
		job_json(&job, jt.kind);
	} else {
		job_text(&job, jt.kind);
	}
	wsp_job_free(&job, job_line_free);
	return status;
}

static void usage(FILE *out)
{
	fputs("usage: wsprof report timeline [-o OUT.pdf|OUT.svg|OUT.png] [--kind KIND] [--json] [--process P] TRACE...|DIR\n"
	      "  several traces or a directory: the kind (default heap) of each process, a line each,\n"
	      "  on the job's clock\n"
	      "  memory over time, per kind: allocated, truly in use, working set, resident set,\n"
	      "  device free memory; phases shaded, failed allocations marked\n"
	      "  -o FILE       draw it (two kinds a page; SVG and PNG: FILE-1.svg, ... when more)\n"
	      "  --kind KIND   one kind only (heap, mmap, cuda_device, ...)\n"
	      "  --json        every point of every series\n", out);
}

int wsp_cmd_timeline(int argc, char **argv)
{
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_OUTPUT | WSP_CLI_KIND | WSP_CLI_JSON | WSP_CLI_MANY, NULL, NULL, NULL, usage,
			       &cli);
	if (rc >= 0)
		return rc;
	const char *out = cli.out, *trace = cli.trace;
	bool json = cli.json;
	enum wsp_doc_format format;
	if (out && wsp_doc_format_of(out, &format)) {
		wsp_cli_free(&cli);
		return 2;
	}
	if (cli.job) {
		rc = timeline_job(&cli, out);
		wsp_cli_free(&cli);
		return rc;
	}
	struct wsp_loaded l;
	struct wsp_model_options mo = { 0 };
	if (wsp_load(trace, &mo, false, &l)) {
		wsp_cli_free(&cli);
		return 1;
	}
	int k = cli.kind;
	int status = 0;
	if (out) {
		unsigned kinds[WSPROF_KIND_COUNT];
		size_t n = wsp_timeline_kinds(&l, k, kinds);
		struct wsp_doc *doc = wsp_doc_open(out, n > CHARTS_PER_PAGE);
		if (doc)
			wsp_timeline_draw(doc, &l, k);
		status = wsp_doc_finish(doc, true);
	} else if (json) {
		print_json(&l, k);
	} else {
		print_text(&l, k);
	}
	wsp_loaded_free(&l);
	wsp_cli_free(&cli);
	return status;
}
