/*
 * timelinetext.c - `wsprof report timeline` as text (a few dozen moments
 * of each kind) and JSON (every point of every series), of a trace or of
 * a job (compute/timeline.c's lines). The charts are draw/timeline.c's.
 */
#include "text.h"
#include "timeline.h"

#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void wsp_timeline_print_text(const struct wsp_loaded *l, int kind)
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

void wsp_timeline_print_json(const struct wsp_loaded *l, int kind)
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

void wsp_timeline_job_json(const struct wsp_job *job, unsigned kind)
{
	uint64_t start = wsp_job_start(job);
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
		const struct wsp_job_line *jl = p->extra;
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

void wsp_timeline_job_text(const struct wsp_job *job, unsigned kind)
{
	uint64_t start = wsp_job_start(job);
	printf("wsprof memory over time of a job: %zu traces, %s\n\n", job->n - job->unread, wsprof_kind_name(kind));
	printf("  %-10s %8s %-28s %10s %10s %12s %10s\n", "process", "pid", "program", "start", "end", "peak", "peak at");
	for (size_t i = 0; i < job->n; i++) {
		const struct wsp_job_proc *p = &job->procs[i];
		if (p->failed || !p->extra)
			continue;
		const struct wsp_job_line *jl = p->extra;
		uint64_t off = p->start_realtime_ns - start;
		char who[32], a[32];
		printf("  %-10s %8u %-28.28s %8.3f s %8.3f s %12s %8.3f s\n", wsp_job_proc_name(p, who, sizeof who), p->pid,
		       p->cmdline[0] ? p->cmdline : p->exe, (double)off / 1e9, (double)(off + p->duration_ns) / 1e9,
		       wsp_human_bytes(a, sizeof a, jl->peak), (double)(off + jl->peak_ns) / 1e9);
	}
	printf("\n  (times since the job's first process started; a line per process: -o timeline.pdf)\n");
}
