/*
 * timeline.c - the figures of `wsprof report timeline`: the kinds worth a
 * chart, each series of the model (series.h) as step lines in seconds
 * (allocated, in use, working set, resident set, device free), and a
 * job's processes each as a line of its own on the job's clock. What
 * text/timelinetext.c prints and draw/timeline.c draws; nothing here does.
 *
 * Each point is the highest value in its slice of time, so a peak is
 * never lost between points.
 */
#include "timeline.h"

#include "job.h"

#include <stdio.h>
#include <stdlib.h>

struct job_timeline {
	unsigned kind;
};

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


void wsp_line_free(struct wsp_line *ln)
{
	free(ln->x);
	free(ln->y);
	*ln = (struct wsp_line){ 0 };
}

int wsp_line_of_series(const struct wsp_series *s, enum wsp_line_pick pick, uint64_t end_ns, struct wsp_line *ln)
{
	*ln = (struct wsp_line){ 0 };
	if (!s || !s->n)
		return 0;
	ln->x = malloc((s->n + 1) * sizeof *ln->x);
	ln->y = malloc((s->n + 1) * sizeof *ln->y);
	if (!ln->x || !ln->y) {
		wsp_line_free(ln);
		return -1;
	}
	/* A device is known from its first sample on: no line before it. */
	size_t first = 0;
	while (pick == WSP_PICK_B_MINUS_HI && first < s->n && !s->p[first].set)
		first++;
	for (size_t i = first; i < s->n; i++) {
		const struct wsp_series_point *p = &s->p[i];
		double v = pick == WSP_PICK_HI ? (double)p->hi
			   : pick == WSP_PICK_HI_B ? (double)p->hi_b
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

double wsp_line_max(const struct wsp_line *ln)
{
	double m = 0;
	for (size_t i = 0; i < ln->n; i++)
		if (ln->y[i] > m)
			m = ln->y[i];
	return m;
}


void wsp_kind_lines_free(struct wsp_kind_lines *kl)
{
	wsp_line_free(&kl->allocated);
	wsp_line_free(&kl->in_use);
	wsp_line_free(&kl->wss);
	wsp_line_free(&kl->rss);
	wsp_line_free(&kl->device_free);
}

bool wsp_is_cpu_kind(unsigned k)
{
	return k == WSPROF_KIND_HEAP || k == WSPROF_KIND_MMAP;
}

/* The kind the resident set is drawn with: the heap, else mmap. */
unsigned wsp_rss_kind(const struct wsp_loaded *l)
{
	return wsp_model_kind(l->model, WSPROF_KIND_HEAP)->seen ? WSPROF_KIND_HEAP : WSPROF_KIND_MMAP;
}

int wsp_kind_lines(const struct wsp_loaded *l, unsigned k, struct wsp_kind_lines *kl)
{
	*kl = (struct wsp_kind_lines){ .device = -1 };
	uint64_t end = wsp_model_last_time(l->model);
	const struct wsp_series *s = wsp_model_live_series(l->model, k);
	if (wsp_line_of_series(s, WSP_PICK_HI, end, &kl->allocated) || wsp_line_of_series(s, WSP_PICK_HI_B, end, &kl->in_use))
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
	if (wsp_is_cpu_kind(k) && k == wsp_rss_kind(l)) {
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
			if (wsp_line_of_series(wsp_model_device_series(l->model, 0), WSP_PICK_B_MINUS_HI, end, &kl->device_free))
				return -1;
		}
	}
	return 0;
}



static int job_visit(struct wsp_job_proc *p, struct wsp_loaded *l, void *ctx)
{
	const struct job_timeline *jt = ctx;
	struct wsp_job_line *jl = calloc(1, sizeof *jl);
	if (!jl || wsp_line_of_series(wsp_model_live_series(l->model, jt->kind), WSP_PICK_HI, wsp_model_last_time(l->model),
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

void wsp_job_line_free(void *extra)
{
	struct wsp_job_line *jl = extra;
	wsp_line_free(&jl->live);
	free(jl);
}

/* The processes drawn: read, and holding memory of the kind. */
bool wsp_job_line_drawn(const struct wsp_job_proc *p)
{
	return !p->failed && p->extra && ((const struct wsp_job_line *)p->extra)->peak;
}

uint64_t wsp_job_start(const struct wsp_job *job)
{
	uint64_t start = UINT64_MAX;
	for (size_t i = 0; i < job->n; i++)
		if (!job->procs[i].failed && job->procs[i].start_realtime_ns < start)
			start = job->procs[i].start_realtime_ns;
	return start;
}

/* Where a process's clock starts on the job's, in seconds. */
double wsp_job_offset_s(const struct wsp_job_proc *p, uint64_t start)
{
	return (double)(p->start_realtime_ns - start) / 1e9;
}

int wsp_timeline_job_load(char *const *paths, size_t n, unsigned kind, struct wsp_job *job)
{
	struct job_timeline jt = { kind };
	struct wsp_model_options mo = { 0 };
	return wsp_job_load(paths, n, &mo, false, job_visit, &jt, job);
}
