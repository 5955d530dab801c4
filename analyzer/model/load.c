/*
 * load.c - read a trace into a model, with the analyzer's error policy:
 * nothing readable -> one-line error and exit status 1; partly readable ->
 * a warning and the report of what was read. A trace that takes more than
 * a second to read shows a progress bar on stderr, if stderr is a
 * terminal (progress.h).
 */
#include "analyzer.h"
#include "json.h"
#include "progress.h"

#include <errno.h>
#include <stdatomic.h>
#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* The symbol reader (libdw, the C++ demangler) lives in wsprof-reports.so
 * with the reports that name functions; the `wsprof` program itself links
 * none of it, so that a summary does not load what it never uses (8 ms
 * of every run, BENCHMARKS.md). There these are null and nothing asks
 * for symbols. */
#pragma weak wsp_syms_new
#pragma weak wsp_syms_free
#pragma weak wsp_syms_note_stack
#pragma weak wsp_syms_cache
#pragma weak wsp_syms_noted_all

/* Events between two looks at the clock: reading stays as fast as it was,
 * and even a slow reader looks several times a second. */
#define PROGRESS_EVERY 1024

/* A job's readers (job.c) run side by side: no bar each, no warnings of
 * each one's symbols. */
static atomic_bool quiet;

void wsp_load_set_quiet(bool q)
{
	atomic_store(&quiet, q);
}

/* The view stacks are named for, as the command line chose it. */
static enum wsp_stack_view stacks_view;

void wsp_load_set_stacks(enum wsp_stack_view view)
{
	stacks_view = view;
}

enum wsp_stack_view wsp_load_stacks(void)
{
	return stacks_view;
}

static int load(const char *path, const struct wsp_model_options *opt, bool symbols, uint64_t stop_seq,
		uint64_t stop_time_ns, const struct wsp_follower *f, size_t nf, struct wsp_loaded *out);

int wsp_load(const char *path, const struct wsp_model_options *opt, bool symbols, struct wsp_loaded *out)
{
	return wsp_load_until(path, opt, symbols, UINT64_MAX, UINT64_MAX, out);
}

/* Followers still following, one bit each. */
struct following {
	const struct wsp_follower *f;
	size_t n;
	bool *done;
	size_t left;
};

static int following_start(struct following *fl, const struct wsp_follower *f, size_t n)
{
	*fl = (struct following){ f, n, n ? calloc(n, sizeof *fl->done) : NULL, n };
	return n && !fl->done ? -ENOMEM : 0;
}

static int follow_event(struct following *fl, wsprof_trace *t, const wsprof_event *ev)
{
	for (size_t i = 0; i < fl->n; i++) {
		if (fl->done[i])
			continue;
		int r = fl->f[i].event(fl->f[i].arg, t, ev);
		if (r < 0)
			return r;
		if (r > 0) {
			fl->done[i] = true;
			fl->left--;
			if (fl->f[i].end && (r = fl->f[i].end(fl->f[i].arg, t)) < 0)
				return r;
		}
	}
	return 0;
}

static int following_end(struct following *fl, wsprof_trace *t, int err)
{
	for (size_t i = 0; i < fl->n && err >= 0; i++)
		if (!fl->done[i] && fl->f[i].end)
			err = fl->f[i].end(fl->f[i].arg, t);
	free(fl->done);
	fl->done = NULL;
	return err;
}

int wsp_follow(const char *path, const struct wsp_follower *f, size_t nf)
{
	wsprof_trace *t;
	int err = wsprof_trace_open(path, &t);
	if (err < 0) {
		fprintf(stderr, "wsprof: %s: %s\n", path, wsprof_strerror(err));
		return 1;
	}
	/* Followers name stacks through the reader of a load they borrow, or
	 * not at all (a heatmap's first pass): this one keeps none. */
	wsprof_trace_forget_stacks(t);
	struct following fl;
	err = following_start(&fl, f, nf);
	wsprof_event ev;
	while (!err && fl.left && (err = wsprof_trace_next(t, &ev)) > 0)
		err = follow_event(&fl, t, &ev);
	err = following_end(&fl, t, err);
	wsprof_trace_close(t);
	if (err < 0) {
		fprintf(stderr, "wsprof: %s: %s while reading\n", path, wsprof_strerror(err));
		return 1;
	}
	return 0;
}

int wsp_load_until(const char *path, const struct wsp_model_options *opt, bool symbols, uint64_t stop_seq,
		   uint64_t stop_time_ns, struct wsp_loaded *out)
{
	return load(path, opt, symbols, stop_seq, stop_time_ns, NULL, 0, out);
}

int wsp_load_following(const char *path, const struct wsp_model_options *opt, bool symbols,
		       const struct wsp_follower *f, size_t nf, struct wsp_loaded *out)
{
	return load(path, opt, symbols, UINT64_MAX, UINT64_MAX, f, nf, out);
}

static int load(const char *path, const struct wsp_model_options *opt, bool symbols, uint64_t stop_seq,
		uint64_t stop_time_ns, const struct wsp_follower *f, size_t nf, struct wsp_loaded *out)
{
	memset(out, 0, sizeof *out);
	out->path = path;
	int err = wsprof_trace_open(path, &out->trace);
	if (err < 0) {
		fprintf(stderr, "wsprof: %s: %s\n", path, wsprof_strerror(err));
		return 1;
	}
	struct wsp_model_options o = opt ? *opt : (struct wsp_model_options){ 0 };
	o.sample_bytes = wsprof_trace_process(out->trace)->sample_bytes; /* heap blocks weigh 1/p */
	o.child = wsprof_trace_process(out->trace)->parent_traced_pid != 0;
	out->model = wsp_model_new(&o);
	if (symbols && wsp_syms_new) {
		out->syms = wsp_syms_new(atomic_load(&quiet) ? NULL : stderr, stacks_view);
		if (out->syms)
			wsp_syms_cache(out->syms, path); /* names a report found before */
	}
	if (!out->model || (symbols && !out->syms)) {
		fprintf(stderr, "wsprof: out of memory\n");
		wsp_loaded_free(out);
		return 1;
	}
	unsigned columns;
	FILE *tty = atomic_load(&quiet) ? NULL : wsp_progress_tty(&columns);
	const char *name = strrchr(path, '/');
	char label[256];
	snprintf(label, sizeof label, "reading %s", name ? name + 1 : path);
	struct wsp_progress bar;
	wsp_progress_start(&bar, tty, columns, label, tty ? wsp_progress_now() : 0);
	wsprof_event ev;
	uint64_t n = 0;
	struct following fl;
	if ((err = following_start(&fl, f, nf)) < 0) {
		fprintf(stderr, "wsprof: out of memory\n");
		wsp_loaded_free(out);
		return 1;
	}
	while ((err = wsprof_trace_next(out->trace, &ev)) > 0) {
		if (tty && ++n % PROGRESS_EVERY == 0) {
			uint64_t done, total;
			wsprof_trace_position(out->trace, &done, &total);
			wsp_progress_update(&bar, wsp_progress_now(), done, total);
		}
		if (ev.time_ns > stop_time_ns)
			break;
		err = wsp_loaded_apply(out, &ev);
		if (!err && fl.left)
			err = follow_event(&fl, out->trace, &ev);
		if (err < 0 || ev.seq == stop_seq)
			break;
	}
	wsp_progress_end(&bar);
	if (err >= 0)
		err = wsp_model_finish(out->model);
	/* Followers end with the reader's stack table still whole (the index
	 * keeps it); then, the symbols having what they need of the stacks
	 * (symbols.h), that table, most of the reader's memory, can go. */
	err = following_end(&fl, out->trace, err);
	if (out->syms) {
		wsp_syms_noted_all(out->syms);
		wsprof_trace_forget_stacks(out->trace);
	}
	if (err < 0) {
		fprintf(stderr, "wsprof: %s: %s while reading\n", path, wsprof_strerror(err));
		wsp_loaded_free(out);
		return 1;
	}
	wsprof_trace_get_status(out->trace, &out->status);
	if (out->status.error == WSPROF_E_TRUNCATED)
		fprintf(stderr, "wsprof: warning: %s is truncated (no footer: the program was killed or is still running); "
			"this report covers the %llu events of its %llu complete chunks\n",
			path, (unsigned long long)out->status.events, (unsigned long long)out->status.chunks);
	else if (out->status.error)
		fprintf(stderr, "wsprof: warning: %s: %s after %llu chunks; this report covers what came before\n",
			path, wsprof_strerror(out->status.error), (unsigned long long)out->status.chunks);
	return 0;
}

int wsp_loaded_apply(struct wsp_loaded *l, const wsprof_event *ev)
{
	int err = wsp_model_apply(l->model, l->trace, ev);
	/* Bind addresses to the modules loaded now: a library may be gone at the end. */
	if (!err && l->syms && (ev->type == WSPROF_EV_ALLOC || ev->type == WSPROF_EV_FAIL))
		err = wsp_syms_note_stack(l->syms, l->trace, ev->stack);
	return err;
}

void wsp_loaded_free(struct wsp_loaded *l)
{
	if (l->syms && !l->borrowed)
		wsp_syms_free(l->syms);
	l->syms = NULL;
	wsp_model_free(l->model);
	if (!l->borrowed)
		wsprof_trace_close(l->trace);
	l->model = NULL;
	l->trace = NULL;
}

const char *wsp_trace_operand(int argc, char **argv, void (*usage)(FILE *))
{
	if (optind == argc - 1)
		return argv[optind];
	/* argv[0] is a report's name, export or symbolize */
	bool report = strcmp(argv[0], "export") && strcmp(argv[0], "symbolize") && strcmp(argv[0], "check");
	fprintf(stderr, "wsprof: %s%s needs exactly one trace file\n", report ? "report " : "", argv[0]);
	usage(stderr);
	return NULL;
}

void wsp_print_heading(const struct wsp_loaded *l, const char *what)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	printf("wsprof %s of %s\n", what, l->path);
	printf("  program   %s (pid %u)\n", p->cmdline[0] ? p->cmdline : p->exe, p->pid);
	if (!l->status.complete)
		printf("  trace     %s: this covers what was read\n",
		       l->status.error == WSPROF_E_TRUNCATED ? "truncated" : "damaged");
	char sampled[128], spans[256];
	if (*wsp_sampled_text(l, sampled, sizeof sampled))
		printf("  %s\n", sampled);
	struct wsp_span first;
	bool attached;
	wsp_recorded_spans(l, &first, 1, &attached);
	if (attached)
		printf("  attached  at %.3f s: memory allocated before is not attributed\n", (double)first.start_ns / 1e9);
	if (*wsp_spans_text(l, spans, sizeof spans))
		printf("  spans     %s\n", spans);
	printf("\n");
}

/* ---- sampled traces ------------------------------------------------------ */

const char *wsp_sampled_text(const struct wsp_loaded *l, char *buf, size_t cap)
{
	uint64_t n = wsprof_trace_process(l->trace)->sample_bytes;
	char digits[32];
	if (!n)
		buf[0] = 0;
	else if (n == 1)
		snprintf(buf, cap, "sampled: 1 in 1 byte, so every heap allocation was recorded; figures are exact");
	else if (wsp_model_heap_counted(l->model, NULL))
		snprintf(buf, cap, "sampled: 1 in %s bytes; heap totals counted, heap call sites estimated",
			 wsp_group_digits(digits, sizeof digits, n));
	else
		snprintf(buf, cap, "sampled: 1 in %s bytes; heap figures are estimates", wsp_group_digits(digits, sizeof digits, n));
	return buf;
}

const char *wsp_est(const struct wsp_loaded *l, unsigned kind)
{
	return wsp_model_estimated(l->model, kind) ? "~" : "";
}

const char *wsp_est_total(const struct wsp_loaded *l, unsigned kind)
{
	return wsp_model_totals_estimated(l->model, kind) ? "~" : "";
}

const char *wsp_estimate_text(char *buf, size_t cap, const char *est, const char *text)
{
	size_t e = strlen(est), n = strlen(text);
	if (e + n >= cap)
		return text;
	memmove(buf + e, text, n + 1);
	memcpy(buf, est, e);
	return buf;
}

void wsp_json_sampled(struct wsp_json *j, const struct wsp_loaded *l)
{
	uint64_t n = wsprof_trace_process(l->trace)->sample_bytes;
	if (!n)
		return;
	wsp_json_bool(j, "sampled", true);
	wsp_json_uint(j, "sample_bytes", n);
}

void wsp_json_estimated(struct wsp_json *j, const struct wsp_loaded *l, unsigned kind)
{
	if (wsp_model_estimated(l->model, kind))
		wsp_json_bool(j, "estimated", true);
}

void wsp_json_total_estimated(struct wsp_json *j, const struct wsp_loaded *l, unsigned kind)
{
	double share;
	if (kind == WSPROF_KIND_HEAP && wsp_model_heap_counted(l->model, &share)) {
		wsp_json_bool(j, "counted", true);
		wsp_json_double(j, "usable_share", share);
		const struct wsp_kind_stats *e = wsp_model_heap_estimates(l->model);
		wsp_json_begin_object(j, "estimated_from_samples");
		wsp_json_uint(j, "allocations", e->allocations);
		wsp_json_uint(j, "frees", e->frees);
		wsp_json_uint(j, "peak_bytes", e->peak_bytes);
		wsp_json_uint(j, "leaked_bytes", e->live_bytes);
		wsp_json_uint(j, "leaked_blocks", e->live_blocks);
		wsp_json_uint(j, "total_bytes", e->total_bytes);
		wsp_json_end_object(j);
	} else {
		wsp_json_estimated(j, l, kind);
	}
}

/* ---- recorded spans ----------------------------------------------------- */

size_t wsp_recorded_spans(const struct wsp_loaded *l, struct wsp_span *spans, size_t cap, bool *attached)
{
	const struct wsp_recording_switch *sw;
	size_t n = wsp_model_recording(l->model, &sw), k = 0;
	uint64_t end = l->status.end_time_ns > wsp_model_last_time(l->model) ? l->status.end_time_ns
									   : wsp_model_last_time(l->model);
	*attached = n && sw[0].cause == WSPROF_REC_ATTACH;
	bool on = !n || sw[0].cause != WSPROF_REC_START || sw[0].on; /* a paused start says so first */
	uint64_t from = *attached ? sw[0].time_ns : 0;
	for (size_t i = 0; i < n; i++) {
		if (sw[i].on == on)
			continue;
		if (on && k < cap && sw[i].time_ns > from)
			spans[k++] = (struct wsp_span){ from, sw[i].time_ns };
		on = sw[i].on;
		from = sw[i].time_ns;
	}
	if (on && k < cap && (end > from || !k))
		spans[k++] = (struct wsp_span){ from, end };
	return k;
}

const char *wsp_spans_text(const struct wsp_loaded *l, char *buf, size_t cap)
{
	struct wsp_span spans[8];
	bool attached;
	size_t n = wsp_recorded_spans(l, spans, 8, &attached);
	const struct wsp_recording_switch *sw;
	size_t total = wsp_model_recording(l->model, &sw);
	buf[0] = 0;
	if (!total)
		return buf;
	size_t o = 0;
	o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, "recorded ");
	for (size_t i = 0; i < n && i < 4; i++)
		o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, "%s%.3f s to %.3f s", i ? ", " : "",
				      (double)spans[i].start_ns / 1e9, (double)spans[i].end_ns / 1e9);
	if (!n)
		o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, "nothing (recording was never on)");
	else if (n > 4)
		o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, ", ...");
	snprintf(buf + o, o < cap ? cap - o : 0, " (%zu span%s%s)", n, n == 1 ? "" : "s",
		 n == 8 ? " or more" : "");
	return buf;
}
