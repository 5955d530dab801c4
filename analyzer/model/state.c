/*
 * state.c - the memory state at one moment of a trace (state.h): the
 * moment found in the whole trace's figures (the peak, the end, the first
 * failed allocation, a time, a snapshot label), the model there restored
 * from the trace's index (timeindex.h: the checkpoint before it, and the
 * events from there), and every block live then collected with what the
 * program said about it.
 * Printing it is statetext.c's, drawing it statemap.c's.
 */
#include "state.h"

#include "timeindex.h"

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

/* When a block was last used: its last annotation, else its allocation. */
uint64_t wsp_state_last_use(const struct wsp_state_block *r)
{
	return r->ann ? r->ann->last_use_ns : r->b->time_ns;
}

static int least_recently_used(const void *a, const void *b)
{
	uint64_t x = wsp_state_last_use(a), y = wsp_state_last_use(b);
	if (x != y)
		return x < y ? -1 : 1;
	return wsp_state_block_cmp(a, b);
}

size_t wsp_state_collectable(const struct wsp_state *st, struct wsp_state_block **out)
{
	size_t n = 0;
	for (size_t i = 0; i < st->n; i++)
		n += st->v[i].ann && st->v[i].ann->collectable;
	*out = n ? malloc(n * sizeof **out) : NULL;
	if (!*out)
		return 0;
	n = 0;
	for (size_t i = 0; i < st->n; i++)
		if (st->v[i].ann && st->v[i].ann->collectable)
			(*out)[n++] = st->v[i];
	qsort(*out, n, sizeof **out, least_recently_used);
	return n;
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
	st->names = whole->syms;
	return 0;
}

int wsp_state_replay(struct wsp_tindex *ix, struct wsp_state *st)
{
	/* Names from the load's symbols, where it has them: every stack is noted there. */
	st->syms_borrowed = st->names != NULL;
	if (st->syms_borrowed ? wsp_tindex_replay_named(ix, st->stop_seq, st->stop_time_ns, st->names, &st->l)
			      : wsp_tindex_replay(ix, st->stop_seq, st->stop_time_ns, true, &st->l))
		return 1;
	struct collector c = { .st = st };
	wsp_model_each_live(st->l.model, collect, &c);
	if (c.err) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	if (st->n)
		qsort(st->v, st->n, sizeof *st->v, wsp_state_block_cmp);
	return 0;
}

int wsp_state_at(struct wsp_tindex *ix, const struct wsp_loaded *whole, const char *at, int kind,
		 struct wsp_state *st)
{
	int rc = wsp_state_plan(whole, at, kind, st);
	return rc ? rc : wsp_state_replay(ix, st);
}

int wsp_state_open(const char *path, const char *at, int kind, struct wsp_state *st)
{
	/* The moment is found in the whole trace's figures and reached from
	 * the checkpoint nearest before it (timeindex.h), not from the start. */
	struct wsp_tindex *ix;
	if (wsp_tindex_open(path, &ix))
		return 1;
	int rc = wsp_state_at(ix, wsp_tindex_whole(ix), at, kind, st);
	st->ix = ix;
	if (rc)
		wsp_state_free(st);
	return rc;
}

void wsp_state_free(struct wsp_state *st)
{
	free(st->v);
	st->v = NULL;
	st->n = 0;
	if (st->syms_borrowed)
		st->l.syms = NULL;
	wsp_loaded_free(&st->l);
	wsp_tindex_close(st->ix);
	st->ix = NULL;
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

