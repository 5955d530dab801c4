/*
 * load.c - read a trace into a model, with the analyzer's error policy:
 * nothing readable -> one-line error and exit status 1; partly readable ->
 * a warning and the report of what was read. A trace that takes more than
 * a second to read shows a progress bar on stderr, if stderr is a
 * terminal (progress.h).
 */
#include "analyzer.h"
#include "progress.h"

#include <errno.h>
#include <stdatomic.h>
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
	wsp_load_warn(path, &out->status);
	return 0;
}

void wsp_load_warn(const char *path, const wsprof_trace_status *s)
{
	if (s->error == WSPROF_E_TRUNCATED)
		fprintf(stderr, "wsprof: warning: %s is truncated (no footer: the program was killed or is still running); "
			"this report covers the %llu events of its %llu complete chunks\n",
			path, (unsigned long long)s->events, (unsigned long long)s->chunks);
	else if (s->error)
		fprintf(stderr, "wsprof: warning: %s: %s after %llu chunks; this report covers what came before\n", path,
			wsprof_strerror(s->error), (unsigned long long)s->chunks);
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
