/*
 * export.c - `wsprof export --perfetto` written: a trace as Chrome
 * trace-event JSON, the format ui.perfetto.dev and chrome://tracing open.
 * (--pprof, one kind's memory by call stack as a profile.proto, is
 * pprof.c; the command is cmd/export.c.)
 *
 * The Perfetto export holds:
 *
 *   - counter tracks ("ph":"C", one value "bytes" each) per kind:
 *     "KIND allocated" (live bytes), "KIND in use" (live minus
 *     collectable; only for a kind where the two ever differ), "KIND
 *     working set" (bytes of it accessed per window), and "working set"
 *     (all memory accessed, in blocks or not), "RSS", "device N free";
 *   - phases as complete slices ("ph":"X") on the thread that pushed them;
 *   - failed allocations as instant events ("ph":"i") with size, kind and
 *     call site, on a track of their own;
 *   - process and thread names ("ph":"M").
 *
 * Times are whole microseconds since the program started, the format's
 * unit. The model's series have a bounded number of buckets (series.h):
 * each bucket shows its highest value from its start and the value it
 * ended with from its middle, so a peak is never averaged away. Working
 * set and RSS, kept per sample, are brought down to as many points the
 * same way (the highest of the samples a point stands for), and phases
 * are capped like failures: however long the trace, the file stays small
 * enough for a browser.
 */
#include "analyzer.h"
#include "text.h"
#include "config.h"
#include "json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define POINTS_MAX WSP_SERIES_CAP
#define PHASES_MAX 100000
/* Failed allocations' track: a thread id above Linux's largest pid_max
 * (2^22), so never a real thread's. */
#define FAILURES_TID 2147483647u

struct exporter {
	struct wsp_json j;
	const struct wsp_loaded *l;
	uint32_t pid;
};

/* A counter track; a value equal to the last one is not written again. */
struct track {
	char name[64];
	uint64_t last;
	bool any;
};

static uint64_t us(uint64_t ns)
{
	return (ns + 500) / 1000;
}

static bool shown_kind(const struct wsp_kind_stats *s, unsigned k)
{
	/* VMM address ranges are shown with cuda_vmm, as in the summary. */
	return s->seen && !wsp_kind_is_address_space(k);
}

static void event_open(struct exporter *e, const char *ph, const char *name, uint32_t tid)
{
	wsp_json_begin_object(&e->j, NULL);
	wsp_json_string(&e->j, "ph", ph);
	wsp_json_string(&e->j, "name", name);
	wsp_json_uint(&e->j, "pid", e->pid);
	wsp_json_uint(&e->j, "tid", tid);
}

static void counter(struct exporter *e, struct track *t, uint64_t ns, uint64_t bytes)
{
	if (t->any && bytes == t->last)
		return;
	t->any = true;
	t->last = bytes;
	event_open(e, "C", t->name, e->pid);
	wsp_json_uint(&e->j, "ts", us(ns));
	wsp_json_begin_object(&e->j, "args");
	wsp_json_uint(&e->j, "bytes", bytes);
	wsp_json_end_object(&e->j);
	wsp_json_end_object(&e->j);
}

static void metadata(struct exporter *e, const char *what, uint32_t tid, const char *name)
{
	event_open(e, "M", what, tid);
	wsp_json_begin_object(&e->j, "args");
	wsp_json_string(&e->j, "name", name);
	wsp_json_end_object(&e->j);
	wsp_json_end_object(&e->j);
}

/* ---- the model's series -------------------------------------------------- */

enum pick { LIVE, IN_USE, DEVICE_FREE };

/* The value a series point stands for: its highest, or its last. */
static uint64_t pick(const struct wsp_series_point *p, enum pick what, bool last)
{
	uint64_t a = last ? p->last : p->hi, b = last ? p->last_b : p->hi_b;
	switch (what) {
	case LIVE: return a;
	case IN_USE: return b;
	case DEVICE_FREE: return b > a ? b - a : 0; /* total minus the most used */
	}
	return 0;
}

/* Buckets before the first value say nothing (a device's total is not
 * known before its first sample), so the track starts at that one. */
static void series_track(struct exporter *e, const char *name, const struct wsp_series *s, enum pick what)
{
	struct track t = { 0 };
	snprintf(t.name, sizeof t.name, "%s", name);
	size_t first = 0;
	while (first < s->n && !s->p[first].set)
		first++;
	for (size_t i = first; i < s->n; i++) {
		uint64_t start = i * s->width_ns;
		counter(e, &t, start, pick(&s->p[i], what, false));
		counter(e, &t, start + s->width_ns / 2, pick(&s->p[i], what, true));
	}
}

/* In use is worth a track only where something was collectable. */
static bool in_use_differs(const struct wsp_series *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->p[i].hi != s->p[i].hi_b || s->p[i].last != s->p[i].last_b)
			return true;
	return false;
}

/* ---- samples, brought down to POINTS_MAX ---------------------------------- */

static size_t group_size(size_t n)
{
	return n > POINTS_MAX ? (n + POINTS_MAX - 1) / POINTS_MAX : 1;
}

/* Each group of windows shows its highest from its first window's start
 * and falls to 0 where no window follows. */
static void wss_track(struct exporter *e, const char *name, const struct wsp_wss_point *pts, size_t n, int kind)
{
	struct track t = { 0 };
	snprintf(t.name, sizeof t.name, "%s", name);
	size_t g = group_size(n);
	for (size_t i = 0; i < n; i += g) {
		size_t end = i + g < n ? i + g : n;
		uint64_t most = 0;
		for (size_t k = i; k < end; k++)
			most = wsp_wss_point_bytes(&pts[k], -1, kind) > most ? wsp_wss_point_bytes(&pts[k], -1, kind) : most;
		counter(e, &t, pts[i].start_ns, most);
		if (end == n || us(pts[end].start_ns) > us(pts[end - 1].end_ns))
			counter(e, &t, pts[end - 1].end_ns, 0);
	}
}

static void wss_tracks(struct exporter *e)
{
	const struct wsp_wss *w = wsp_model_wss(e->l->model);
	const struct wsp_wss_point *pts;
	size_t n = w ? wsp_wss_points(w, &pts) : 0;
	if (!n)
		return;
	wss_track(e, "working set", pts, n, -1);
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		bool any = false;
		for (size_t i = 0; i < n && !any; i++)
			any = pts[i].kind_bytes[k] != 0;
		if (any) {
			char name[64];
			snprintf(name, sizeof name, "%s working set%s", wsprof_kind_name(k),
				 wsp_model_estimated(e->l->model, k) ? " (estimated)" : "");
			wss_track(e, name, pts, n, (int)k);
		}
	}
}

static void rss_track(struct exporter *e)
{
	const struct wsp_rss_point *pts;
	size_t n = wsp_model_rss(e->l->model, &pts), g = group_size(n);
	struct track t = { .name = "RSS" };
	for (size_t i = 0; i < n; i += g) {
		uint64_t most = 0;
		for (size_t k = i; k < n && k < i + g; k++)
			most = pts[k].bytes > most ? pts[k].bytes : most;
		counter(e, &t, pts[i].time_ns, most);
	}
}

static void counter_tracks(struct exporter *e)
{
	char name[64];
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		if (!shown_kind(wsp_model_kind(e->l->model, k), k))
			continue;
		const struct wsp_series *s = wsp_model_live_series(e->l->model, k);
		const char *est = wsp_model_totals_estimated(e->l->model, k) ? " (estimated)" : "";
		snprintf(name, sizeof name, "%s allocated%s", wsprof_kind_name(k), est);
		series_track(e, name, s, LIVE);
		if (in_use_differs(s)) {
			snprintf(name, sizeof name, "%s in use%s", wsprof_kind_name(k), est);
			series_track(e, name, s, IN_USE);
		}
	}
	wss_tracks(e);
	rss_track(e);
	const struct wsp_device_stats *dev;
	size_t ndev = wsp_model_devices(e->l->model, &dev);
	for (size_t i = 0; i < ndev; i++) {
		snprintf(name, sizeof name, "device %d free", dev[i].device);
		series_track(e, name, wsp_model_device_series(e->l->model, i), DEVICE_FREE);
	}
}

/* ---- phases and failures ------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The threads that pushed phases, named once each. @return -ENOMEM or 0. */
static int thread_names(struct exporter *e, const struct wsp_phase *ph, size_t n)
{
	uint32_t *tids = malloc((n ? n : 1) * sizeof *tids);
	if (!tids)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		tids[i] = ph[i].tid;
	qsort(tids, n, sizeof *tids, cmp_u32);
	for (size_t i = 0; i < n; i++) {
		if (i && tids[i] == tids[i - 1])
			continue;
		char name[48];
		if (tids[i] == e->pid)
			snprintf(name, sizeof name, "main thread");
		else
			snprintf(name, sizeof name, "thread %u", tids[i]);
		metadata(e, "thread_name", tids[i], name);
	}
	free(tids);
	return 0;
}

static int phases(struct exporter *e)
{
	const struct wsp_phase *ph;
	size_t n = wsp_model_phases(e->l->model, &ph);
	if (n > PHASES_MAX) {
		fprintf(stderr, "wsprof: warning: %s has %zu phases; the first %d are exported\n", e->l->path, n,
			PHASES_MAX);
		n = PHASES_MAX;
	}
	uint64_t end_of_trace = wsp_model_last_time(e->l->model);
	for (size_t i = 0; i < n; i++) {
		/* A phase still open when the trace ends lasts to its end. */
		uint64_t end = ph[i].end_ns ? ph[i].end_ns : end_of_trace > ph[i].start_ns ? end_of_trace : ph[i].start_ns;
		event_open(e, "X", ph[i].name, ph[i].tid);
		wsp_json_string(&e->j, "cat", "phase");
		wsp_json_uint(&e->j, "ts", us(ph[i].start_ns));
		wsp_json_uint(&e->j, "dur", us(end) - us(ph[i].start_ns));
		wsp_json_begin_object(&e->j, "args");
		wsp_json_uint(&e->j, "depth", ph[i].depth);
		if (!ph[i].end_ns)
			wsp_json_bool(&e->j, "open_at_end", true);
		wsp_json_end_object(&e->j);
		wsp_json_end_object(&e->j);
	}
	return thread_names(e, ph, n);
}

static void failures(struct exporter *e)
{
	const struct wsp_failure *f;
	size_t n = wsp_model_failures(e->l->model, &f);
	if (!n)
		return;
	metadata(e, "thread_name", FAILURES_TID, "failed allocations");
	for (size_t i = 0; i < n; i++) {
		const struct wsp_frame *frames;
		char site[1024] = "(no stack recorded)";
		size_t nf = wsp_syms_stack(e->l->syms, e->l->trace, f[i].stack, &frames);
		if (nf)
			wsp_frame_label(&frames[wsp_syms_site_at(e->l->syms, frames, nf)], site, sizeof site);
		event_open(e, "i", "allocation failed", FAILURES_TID);
		wsp_json_string(&e->j, "cat", "failure");
		wsp_json_string(&e->j, "s", "t");
		wsp_json_uint(&e->j, "ts", us(f[i].time_ns));
		wsp_json_begin_object(&e->j, "args");
		wsp_json_uint(&e->j, "size", f[i].size);
		wsp_json_string(&e->j, "kind", wsprof_kind_name(f[i].kind));
		wsp_json_string(&e->j, "call_site", site);
		wsp_json_uint(&e->j, "seq", f[i].seq);
		wsp_json_end_object(&e->j);
		wsp_json_end_object(&e->j);
	}
}

/* ---- the document --------------------------------------------------------- */

int wsp_perfetto_write(const struct wsp_loaded *l, FILE *out)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	const char *program = p->cmdline[0] ? p->cmdline : p->exe;
	struct exporter e = { .l = l, .pid = p->pid };
	wsp_json_init(&e.j, out);
	wsp_json_begin_object(&e.j, NULL);
	wsp_json_begin_array(&e.j, "traceEvents");
	metadata(&e, "process_name", p->pid, program);
	counter_tracks(&e);
	int err = phases(&e);
	failures(&e);
	wsp_json_end_array(&e.j);
	wsp_json_begin_object(&e.j, "otherData");
	wsp_json_string(&e.j, "exported_by", "wsprof " WSPROF_VERSION);
	wsp_json_string(&e.j, "trace", l->path);
	wsp_json_string(&e.j, "program", program);
	wsp_json_bool(&e.j, "complete", l->status.complete);
	wsp_json_sampled(&e.j, l);
	wsp_json_string(&e.j, "units", "counters in bytes, times in microseconds since the program started");
	wsp_json_end_object(&e.j);
	wsp_json_end_object(&e.j);
	return err;
}
