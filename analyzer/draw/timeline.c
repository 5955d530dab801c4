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
	snprintf(title, sizeof title, "%s: peak %s%s at %s", wsprof_kind_name(k), wsp_est(l, k),
		 wsp_unit_format(peak, sizeof peak, (double)ks->peak_bytes, WSP_UNIT_BYTES),
		 wsp_unit_format(when, sizeof when, (double)ks->peak_time_ns / 1e9, WSP_UNIT_SECONDS));
	if (ks->failed)
		snprintf(title + strlen(title), sizeof title - strlen(title), ", %llu failed allocation%s",
			 (unsigned long long)ks->failed, ks->failed == 1 ? "" : "s");

	size_t nph = wsp_view_phases(&c, l);
	wsp_chart_axes(&c, title, "time since the program started", "bytes");

	struct wsp_legend_item legend[6];
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
	bool est = wsp_model_estimated(l->model, k);
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
		const char *est = wsp_est(l, k);
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
		wsp_json_estimated(&j, l, kinds[i]);
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

static void usage(FILE *out)
{
	fputs("usage: wsprof report timeline [-o OUT.pdf|OUT.svg|OUT.png] [--kind KIND] [--json] TRACE\n"
	      "  memory over time, per kind: allocated, truly in use, working set, resident set,\n"
	      "  device free memory; phases shaded, failed allocations marked\n"
	      "  -o FILE       draw it (two kinds a page; SVG and PNG: FILE-1.svg, ... when more)\n"
	      "  --kind KIND   one kind only (heap, mmap, cuda_device, ...)\n"
	      "  --json        every point of every series\n", out);
}

int wsp_cmd_timeline(int argc, char **argv)
{
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_OUTPUT | WSP_CLI_KIND | WSP_CLI_JSON, NULL, NULL, NULL, usage, &cli);
	if (rc >= 0)
		return rc;
	const char *out = cli.out, *trace = cli.trace;
	bool json = cli.json;
	enum wsp_doc_format format;
	if (out && wsp_doc_format_of(out, &format))
		return 2;
	struct wsp_loaded l;
	struct wsp_model_options mo = { 0 };
	if (wsp_load(trace, &mo, false, &l))
		return 1;
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
	return status;
}
