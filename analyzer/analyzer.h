/*
 * analyzer.h - what every layer of the `wsprof` command shares: a trace
 * loaded into a model (struct wsp_loaded), the passes over a trace that
 * pages follow, and the spans of time it recorded.
 *
 * Pipeline: a command (cmd/) parses its options and loads the trace ->
 * the reader (src/) streams events -> the model (model/) keeps the live
 * set and figures -> compute (compute/) turns them into plain results ->
 * a renderer (text/, draw/) prints or draws them. Each layer has its own
 * headers: cmd/commands.h, compute/compute.h, text/text.h, draw/views.h.
 */
#ifndef WSP_ANALYZER_H
#define WSP_ANALYZER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "model.h"
#include "symbols.h"
#include "units.h" /* sizes and counts in words, wsp_cmp_u64: the model uses them too */
#include "wsprof/trace.h"

/* A trace read to its end into a model. */
struct wsp_loaded {
	const char *path;
	wsprof_trace *trace;
	struct wsp_model *model;
	struct wsp_syms *syms;     /* with symbols */
	wsprof_trace_status status;
	bool borrowed;             /* trace and syms are another wsp_loaded's: only the model is this one's */
};

/* Something that follows a pass over a trace, event by event: a page of
 * the full report that needs the events themselves (a heatmap's grid, the
 * state at a moment), so that one pass serves them all. */
struct wsp_follower {
	/* Each event, in order. @return 0 to go on, 1 when it needs no more,
	 * or a negative error, which ends the pass. */
	int (*event)(void *arg, wsprof_trace *t, const wsprof_event *ev);
	/* Once, after its last event (the trace's end, or it returned 1). */
	int (*end)(void *arg, wsprof_trace *t);
	void *arg;
};

/* Read the whole trace at path, binding stacks to modules for
 * symbolization when `symbols`. Prints a one-line error and returns
 * nonzero when nothing could be read; warns (once) when the trace is
 * truncated or damaged but partly readable. */
int wsp_load(const char *path, const struct wsp_model_options *opt, bool symbols, struct wsp_loaded *out);
/* Loads from now on draw no progress bar and name frames without warnings
 * (the readers of a job's traces, side by side). */
void wsp_load_set_quiet(bool quiet);
/* The one-line warning of a trace read only in part (truncated, damaged),
 * as a load gives it; nothing for a whole one. */
void wsp_load_warn(const char *path, const wsprof_trace_status *status);
/* Which frames the stacks of loads show from now on (symbols.h): set once
 * by the command line (cmd/main.c: --stacks, WSPROF_STACKS), before any
 * load; the default until then. */
void wsp_load_set_stacks(enum wsp_stack_view view);
enum wsp_stack_view wsp_load_stacks(void);
void wsp_loaded_free(struct wsp_loaded *l);
/* One event read from l->trace into its model, its stack bound to the
 * modules loaded now when l has symbols. @return 0 or a negative error. */
int wsp_loaded_apply(struct wsp_loaded *l, const wsprof_event *ev);
/* The same, stopping after the event numbered stop_seq, or before the
 * first event later than stop_time_ns (UINT64_MAX: no stop). */
int wsp_load_until(const char *path, const struct wsp_model_options *opt, bool symbols, uint64_t stop_seq,
		   uint64_t stop_time_ns, struct wsp_loaded *out);
/* wsp_load, with followers fed every event after the model. */
int wsp_load_following(const char *path, const struct wsp_model_options *opt, bool symbols,
		       const struct wsp_follower *f, size_t nf, struct wsp_loaded *out);
/* Another pass over a trace (already loaded once: no warnings again), for
 * followers alone. Its reader keeps no stacks: followers find them in the
 * load they borrow. @return 0, or 1 after a one-line error. */
int wsp_follow(const char *path, const struct wsp_follower *f, size_t nf);

/* The spans of time recorded, from the trace's RECORDING events (model.h):
 * [start_ns, end_ns) each; a run recorded whole has one, from 0 to the
 * end. @return how many (at most cap), and *attached when the trace
 * began with wsprof attach. */
struct wsp_span {
	uint64_t start_ns, end_ns;
};
size_t wsp_recorded_spans(const struct wsp_loaded *l, struct wsp_span *spans, size_t cap, bool *attached);
#endif
