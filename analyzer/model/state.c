/*
 * state.c - the memory state at one moment of a trace (state.h): the
 * moment found in a loaded trace (the peak, the end, the first failed
 * allocation, a time, a snapshot label), then the events up to it
 * replayed into a model of its own, by a follower of a pass (the full
 * report replays all its moments and its heatmaps in one), and every
 * block live then collected with what the program said about it.
 * Printing it is statetext.c's, drawing it statemap.c's.
 */
#include "state.h"

#include "grow.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_memory_kind(unsigned k)
{
	return !wsp_kind_is_address_space(k);
}

struct collector {
	struct wsp_state *st;
	size_t cap;
	int err;
};

static void collect(const struct wsp_block *b, void *arg)
{
	struct collector *c = arg;
	struct wsp_state *st = c->st;
	if (c->err || b->excluded || !is_memory_kind(b->kind))
		return;
	if (wsp_grow(&st->v, &c->cap, st->n + 1, sizeof *st->v)) {
		c->err = -ENOMEM;
		return;
	}
	st->v[st->n++] = (struct wsp_state_block){ b, wsp_model_ann(st->l.model, b),
						   b->kind == WSPROF_KIND_CUDA_DEVICE ? b->device : -1 };
}

int wsp_state_block_cmp(const void *a, const void *b)
{
	const struct wsp_block *x = ((const struct wsp_state_block *)a)->b, *y = ((const struct wsp_state_block *)b)->b;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	uint64_t p = wsp_block_addr(x), q = wsp_block_addr(y);
	return p < q ? -1 : p > q;
}

/* ---- the moment ---------------------------------------------------------- */

/* Where the replay stops: after seq, or before the first event later than
 * time (UINT64_MAX: no stop). */
struct stop {
	uint64_t seq, time_ns;
};

/* The kind with the largest peak: the memory that matters most here. */
static unsigned biggest_kind(const struct wsp_model *m)
{
	unsigned best = WSPROF_KIND_HEAP;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		if (is_memory_kind(k) && wsp_model_kind(m, k)->peak_bytes > wsp_model_kind(m, best)->peak_bytes)
			best = k;
	return best;
}

/* @return 0, or an exit status after saying why there is no such moment. */
static int find_moment(const struct wsp_loaded *l, const char *at, struct wsp_state *st, struct stop *stop)
{
	*stop = (struct stop){ UINT64_MAX, UINT64_MAX };
	const struct wsp_model *m = l->model;
	int kind = st->kind;
	if (!strcmp(at, "end")) {
		st->time_ns = wsp_model_last_time(m);
		snprintf(st->what, sizeof st->what, "the end");
	} else if (!strcmp(at, "peak")) {
		unsigned k = kind >= 0 ? (unsigned)kind : biggest_kind(m);
		const struct wsp_kind_stats *s = wsp_model_kind(m, k);
		stop->seq = s->peak_seq;
		st->time_ns = s->peak_time_ns;
		st->moment_kind = (int)k;
		snprintf(st->what, sizeof st->what, "the %s peak (%.3f s)", wsprof_kind_name(k), (double)s->peak_time_ns / 1e9);
	} else if (!strcmp(at, "oom")) {
		int which = -1;
		for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
			const struct wsp_kind_stats *s = wsp_model_kind(m, k);
			if (s->failed && (kind < 0 || (unsigned)kind == k) &&
			    (which < 0 || s->first_fail_seq < wsp_model_kind(m, (unsigned)which)->first_fail_seq))
				which = (int)k;
		}
		if (which < 0) {
			fprintf(stderr, "wsprof: %s has no failed %s%sallocation: use --at peak, end, SECONDS or a snapshot label\n",
				l->path, kind >= 0 ? wsprof_kind_name((unsigned)kind) : "", kind >= 0 ? " " : "");
			return 1;
		}
		const struct wsp_kind_stats *s = wsp_model_kind(m, (unsigned)which);
		stop->seq = s->first_fail_seq;
		st->time_ns = s->first_fail_time_ns;
		st->moment_kind = which;
		st->failed = true;
		st->failure = (struct wsp_state_failure){ .time_ns = s->first_fail_time_ns, .kind = (unsigned)which,
							  .op = WSPROF_OP_COUNT, .device = -1 };
		const struct wsp_failure *f;
		size_t nf = wsp_model_failures(m, &f);
		for (size_t i = 0; i < nf; i++)
			if (f[i].seq == s->first_fail_seq) {
				st->failure.size = f[i].size;
				st->failure.op = f[i].op;
				st->failure.device = f[i].kind == WSPROF_KIND_CUDA_DEVICE ? f[i].device : -1;
			}
		snprintf(st->what, sizeof st->what, "the first failed %s allocation (%.3f s)", wsprof_kind_name((unsigned)which),
			 (double)s->first_fail_time_ns / 1e9);
	} else {
		char *end;
		double seconds = strtod(at, &end);
		if (end != at && !*end && seconds >= 0 && seconds < 1e9) {
			stop->time_ns = st->time_ns = (uint64_t)(seconds * 1e9);
			snprintf(st->what, sizeof st->what, "%.3f s", seconds);
			return 0;
		}
		const struct wsp_snapshot *snaps;
		size_t n = wsp_model_snapshots(m, &snaps);
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(snaps[i].label, at)) {
				stop->seq = snaps[i].seq;
				st->time_ns = snaps[i].time_ns;
				snprintf(st->what, sizeof st->what, "snapshot \"%s\" (%.3f s)", at, (double)snaps[i].time_ns / 1e9);
				return 0;
			}
		}
		fprintf(stderr, "wsprof: --at %s is not peak, end, oom, a number of seconds or a snapshot label of %s\n", at,
			l->path);
		return 2;
	}
	return 0;
}

int wsp_state_plan(const struct wsp_loaded *whole, const char *at, int kind, struct wsp_state *st)
{
	*st = (struct wsp_state){ .kind = kind, .moment_kind = -1 };
	struct stop stop;
	int rc = find_moment(whole, at, st, &stop);
	if (rc)
		return rc;
	st->stop_seq = stop.seq;
	st->stop_time_ns = stop.time_ns;
	st->end_ns = wsp_model_last_time(whole->model);
	/* The heading describes the trace, not where the replay stops; names
	 * come from the whole trace's stacks and symbols. */
	st->l = (struct wsp_loaded){ .path = whole->path, .trace = whole->trace, .syms = whole->syms,
				     .status = whole->status, .borrowed = true };
	/* The live blocks, their names and states are all a state shows: its
	 * model keeps no series and matches no access to blocks. */
	st->l.model = wsp_model_new(&(struct wsp_model_options){
		.sample_bytes = wsprof_trace_process(whole->trace)->sample_bytes, .totals_only = true });
	if (!st->l.model) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	return 0;
}

/* The replay: every event up to the moment, into the state's own model. */
static int state_event(void *arg, wsprof_trace *t, const wsprof_event *ev)
{
	struct wsp_state *st = arg;
	if (ev->time_ns > st->stop_time_ns)
		return 1;
	int err = wsp_model_apply(st->l.model, t, ev);
	return err < 0 ? err : ev->seq == st->stop_seq;
}

static int state_end(void *arg, wsprof_trace *t)
{
	(void)t;
	struct wsp_state *st = arg;
	int err = wsp_model_finish(st->l.model);
	if (err < 0)
		return err;
	struct collector c = { .st = st };
	wsp_model_each_live(st->l.model, collect, &c);
	if (c.err)
		return c.err;
	if (st->n)
		qsort(st->v, st->n, sizeof *st->v, wsp_state_block_cmp);
	return 0;
}

struct wsp_follower wsp_state_follower(struct wsp_state *st)
{
	return (struct wsp_follower){ state_event, state_end, st };
}

int wsp_state_open(const char *path, const char *at, int kind, struct wsp_state *st)
{
	/* The whole trace only says where the moment is (peaks, failures,
	 * snapshots, the end): its totals, no series nor access matching. */
	struct wsp_loaded whole;
	if (wsp_load(path, &(struct wsp_model_options){ .totals_only = true }, true, &whole))
		return 1;
	int rc = wsp_state_plan(&whole, at, kind, st);
	st->whole = whole; /* st->l borrows its trace and symbols */
	if (rc) {
		wsp_state_free(st);
		return rc;
	}
	struct wsp_follower f = wsp_state_follower(st);
	if (wsp_follow(path, &f, 1)) {
		wsp_state_free(st);
		return 1;
	}
	return 0;
}

void wsp_state_free(struct wsp_state *st)
{
	free(st->v);
	st->v = NULL;
	st->n = 0;
	wsp_loaded_free(&st->l);
	if (st->whole.trace)
		wsp_loaded_free(&st->whole);
}

const char *wsp_state_failed_call(const struct wsp_state_failure *f)
{
	const char *name = wsprof_op_name(f->op);
	return name ? name : "an allocation";
}

const char *wsp_state_block_name(struct wsp_state *st, const struct wsp_state_block *r, char *buf, size_t cap)
{
	if (r->ann && r->ann->name) {
		snprintf(buf, cap, "%s", r->ann->name);
		return buf;
	}
	const struct wsp_frame *frames;
	size_t n = wsp_syms_stack(st->l.syms, st->l.trace, r->b->stack, &frames);
	const struct wsp_frame *site = n ? &frames[wsp_syms_site_at(st->l.syms, frames, n)] : NULL;
	if (site && site->function && !site->python)
		snprintf(buf, cap, "%s", site->function);
	else if (site)
		wsp_frame_label(site, buf, cap);
	else
		snprintf(buf, cap, "(no stack)");
	return buf;
}

