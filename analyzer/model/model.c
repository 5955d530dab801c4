/*
 * model.c - the live set and per-kind figures of a trace (see model.h):
 * its making and freeing, and the events applied to it.
 *
 * The files of the model share model_internal.h: heap.c (blocks by key),
 * ranges.c (address ranges), figures.c (what blocks add to), estimates.c
 * (a sampled trace's weights and counted totals), callers.c (the
 * --caller filter, asked before a block is taken), access.c,
 * annotations.c, books.c (the checks), query.c (what views read).
 * A MOVE (realloc/mremap in flight) parks the old block per thread until
 * the same thread's ALLOC (success) or FAIL (old block restored).
 * Memory grows with live blocks, distinct stacks and threads, never with
 * the length of the trace.
 */
#include "model_internal.h"

#include "check.h"
#include "grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct wsp_model *wsp_model_new(const struct wsp_model_options *opt)
{
	static const struct wsp_model_options everything = { 0 };
	struct wsp_model *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	if (!opt)
		opt = &everything;
	m->callers = opt->callers;
	m->per_stack = opt->per_stack;
	m->wss_bucket_ns = opt->wss_bucket_ns;
	m->totals_only = opt->totals_only;
	m->unmatched_access = opt->unmatched_access || opt->no_access_figures;
	m->keep_departed = !opt->totals_only && !opt->no_access_figures;
	m->sample_bytes = opt->sample_bytes;
	m->child = opt->child;
	return m;
}

void wsp_model_free(struct wsp_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nstashes; i++)
		free(m->stashes[i].blocks);
	free(m->stashes);
	free(m->heap_keys);
	free(m->heap_block);
	free(m->blocks);
	free(m->block_slot);
	free(m->free_blocks);
	for (size_t i = 0; i < sizeof m->ranges / sizeof *m->ranges; i++)
		free(m->ranges[i].v);
	free(m->devices);
	for (size_t i = 0; i < m->ann_cap; i++)
		if (m->anns[i].key)
			free(m->anns[i].name);
	free(m->anns);
	for (size_t i = 0; i < 2; i++) {
		wsp_tpool_free(&m->by_addr[i].pool);
		free(m->by_addr[i].place);
	}
	free(m->unordered);
	for (size_t i = 0; i < m->nphases; i++)
		free(m->phases[i].name);
	free(m->phases);
	for (size_t i = 0; i < m->nsnapshots; i++)
		free(m->snapshots[i].label);
	free(m->snapshots);
	free(m->switches);
	wsp_wss_free(m->wss);
	wsp_departed_free(m->departed);
	free(m->rss);
	free(m->ccache);
	free(m->sites);
	free(m->site_index);
	free(m->serials);
	free(m->children);
	free(m->exec_path);
	for (size_t i = 0; i < m->ndevices; i++)
		wsp_series_free(&m->device_used[i]);
	free(m->device_used);
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		wsp_series_free(&m->live[k]);
	wsp_series_free(&m->totals_live);
	free(m->failures);
	free(m);
}

/* ---- realloc/mremap in flight ----------------------------------------- */

static struct stash *stash_of(struct wsp_model *m, uint32_t tid, bool create)
{
	struct stash *free_slot = NULL;
	for (size_t i = 0; i < m->nstashes; i++) {
		if (m->stashes[i].used && m->stashes[i].tid == tid)
			return &m->stashes[i];
		if (!m->stashes[i].used && !free_slot)
			free_slot = &m->stashes[i];
	}
	if (!create)
		return NULL;
	if (!free_slot) {
		size_t cap = m->nstashes;
		if (wsp_grow(&m->stashes, &cap, m->nstashes + 1, sizeof *m->stashes))
			return NULL;
		free_slot = &m->stashes[m->nstashes++];
		memset(free_slot, 0, sizeof *free_slot);
	}
	free_slot->used = true;
	free_slot->tid = tid;
	free_slot->n = 0;
	free_slot->moved = 0;
	free_slot->blocks_gone = 0;
	return free_slot;
}

int model_stash_add(struct stash *s, const struct wsp_block *b)
{
	if (wsp_grow(&s->blocks, &s->cap, s->n + 1, sizeof *s->blocks))
		return -ENOMEM;
	s->blocks[s->n++] = *b;
	return 0;
}

/* A realloc/mremap ended without its old block coming back: one free. */
static void move_done(struct wsp_model *m, struct stash *s)
{
	for (size_t i = 0; i < s->n; i++) {
		if (!s->blocks[i].excluded) {
			model_count_free(m, &s->blocks[i]);
			break;
		}
	}
	s->used = false;
}

/* In a sampled trace, a realloc whose new block was not sampled ends its
 * MOVE with a FREE of the same address, by the same thread (which a block
 * allocated there meanwhile by another thread must not take). */
static bool move_ended_by_free(struct wsp_model *m, uint32_t tid, uint64_t key)
{
	struct stash *s = stash_of(m, tid, false);
	if (!s || s->moved != key)
		return false;
	move_done(m, s);
	return true;
}

/* ---- events ----------------------------------------------------------- */

/* counts: the --caller filter's word on the block (callers.c); one that
 * does not count is kept, excluded from every figure. */
static int apply_alloc(struct wsp_model *m, const wsprof_event *ev, bool counts)
{
	struct wsp_kind_stats *k = &m->kinds[ev->kind];
	struct wsp_block b = { .addr = ev->addr, .size = ev->size, .stack = ev->stack, .origin = ev->addr,
			       .origin_size = ev->size, .tid = ev->tid, .time_ns = ev->time_ns,
			       .kind = (uint8_t)ev->kind, .device = (int16_t)(ev->device >= 0 && ev->device < INT16_MAX ? ev->device : -1),
			       .excluded = !counts };
	if (ev->kind == WSPROF_KIND_POOL)
		b.origin = ev->handle; /* the pool it was carved from */
	/* An empty mapping or one past the end of the address space, or a
	 * block at address 0 (the key of an empty slot): no kernel or
	 * allocator makes them, a damaged trace may. */
	struct range_set *rs = model_ranges_of(m, ev->kind);
	if (rs ? !ev->size || ev->addr + ev->size < ev->addr : !model_block_key(ev->kind, ev->op, ev->addr))
		return 0;
	struct stash *s = stash_of(m, ev->tid, false);
	if (s) /* the old block of a realloc/mremap */
		move_done(m, s);
	if (m->per_stack || m->sample_bytes) { /* what allocation numbers are for */
		uint64_t *serial = model_serial_of(m, ev->tid);
		if (!serial)
			return -ENOMEM;
		b.serial = ++*serial;
	}
	uint64_t count = wsp_model_block_count(m, &b), bytes = model_weigh(m, &b, ev->size);
	if (m->per_stack && !b.excluded) {
		int64_t site = model_site_of(m, ev->kind, ev->stack);
		if (site < 0)
			return (int)site;
		b.site = (uint32_t)site;
		m->sites[site].allocations += count;
		m->sites[site].bytes += bytes;
	}
	int err;
	if (rs) {
		err = model_range_add(m, rs, &b);
	} else {
		b.addr = model_block_key(ev->kind, ev->op, ev->addr);
		size_t j = m->heap_cap ? model_heap_probe(m, b.addr) : SIZE_MAX;
		struct wsp_block *old = j != SIZE_MAX ? model_heap_at(m, j) : NULL;
		if (old) { /* its free was not seen: it is gone all the same */
			model_lose(m, old);
			model_heap_remove(m, old);
			j = SIZE_MAX; /* the run has changed */
		}
		err = model_heap_insert_at(m, &b, j);
	}
	if (err)
		return err;
	if (!b.excluded) {
		k->allocations += count;
		k->total_bytes += bytes;
	}
	model_gain(m, &b, ev->time_ns);
	return 0;
}

/* mprotect: the part of the range on the other side (reserved, for a
 * commit; committed, for PROT_NONE) changes sides, one allocation of the
 * event's kind per piece; the rest of the range is left as it was (a JIT
 * switching committed code between writable and executable allocates
 * nothing). */
static int apply_protect(struct wsp_model *m, const wsprof_event *ev, bool counts)
{
	struct range_set *from = model_ranges_beside(m, ev->kind);
	if (!from)
		return 0;
	uint64_t addr = ev->addr, end = ev->addr + ev->size < ev->addr ? UINT64_MAX : ev->addr + ev->size;
	for (;;) {
		size_t i = model_range_first_after(from, addr);
		if (i >= from->n || from->v[i].addr >= end)
			return 0;
		wsprof_event piece = *ev;
		piece.addr = from->v[i].addr > addr ? from->v[i].addr : addr;
		uint64_t hi = from->v[i].addr + from->v[i].size < end ? from->v[i].addr + from->v[i].size : end;
		piece.size = hi - piece.addr;
		m->kinds[ev->kind].seen = true;
		int err = apply_alloc(m, &piece, counts); /* cuts the piece from the other side */
		if (err)
			return err;
		addr = hi;
	}
}

static void apply_free(struct wsp_model *m, const wsprof_event *ev, struct stash *into)
{
	uint64_t key = model_block_key(ev->kind, ev->op, ev->addr);
	if (into)
		into->moved = key;
	else if (m->sample_bytes && move_ended_by_free(m, ev->tid, key))
		return;
	struct wsp_block *b = model_heap_find(m, key);
	if (!b) {
		if (!into)
			m->untracked_frees++;
		return;
	}
	model_lose(m, b);
	if (into)
		model_stash_add(into, b);
	else if (!b->excluded)
		model_count_free(m, b);
	model_heap_remove(m, b);
}

static int apply_fail(struct wsp_model *m, const wsprof_event *ev, bool counts)
{
	struct stash *s = stash_of(m, ev->tid, false);
	if (s) {
		for (size_t i = 0; i < s->n; i++) {
			struct wsp_block *b = &s->blocks[i];
			struct range_set *rs = model_ranges_of(m, b->kind);
			int err = rs ? model_range_add(m, rs, b) : model_heap_add(m, b);
			if (err)
				return err;
			model_add_live(m, b, model_weigh(m, b, b->size), rs ? 0 : wsp_model_block_count(m, b), ev->time_ns);
		}
		if (s->n)
			m->kinds[s->blocks[0].kind].live_blocks += s->blocks_gone;
		s->used = false;
	}
	if (!counts)
		return 0;
	if (m->nfailures < WSP_MODEL_FAILURES_MAX) {
		if (wsp_grow(&m->failures, &m->failures_cap, m->nfailures + 1, sizeof *m->failures))
			return -ENOMEM;
		m->failures[m->nfailures++] =
			(struct wsp_failure){ .time_ns = ev->time_ns, .seq = ev->seq, .size = ev->size, .stack = ev->stack,
					      .kind = ev->kind, .op = ev->op, .device = ev->device };
	}
	if (!m->kinds[ev->kind].failed++) {
		m->kinds[ev->kind].first_fail_seq = ev->seq;
		m->kinds[ev->kind].first_fail_time_ns = ev->time_ns;
	}
	if (m->per_stack) {
		int64_t site = model_site_of(m, ev->kind, ev->stack);
		if (site < 0)
			return (int)site;
		m->sites[site].failed++;
	}
	return 0;
}

/* A sample of a device's free memory. */
static int note_device(struct wsp_model *m, const wsprof_event *ev)
{
	struct wsp_device_stats *d = NULL;
	for (size_t i = 0; i < m->ndevices && !d; i++)
		if (m->devices[i].device == ev->device)
			d = &m->devices[i];
	if (!d) {
		if (wsp_grow(&m->devices, &m->devices_cap, m->ndevices + 1, sizeof *m->devices) ||
		    wsp_grow(&m->device_used, &m->device_used_cap, m->ndevices + 1, sizeof *m->device_used))
			return -ENOMEM;
		m->device_used[m->ndevices] = (struct wsp_series){ 0 };
		d = &m->devices[m->ndevices++];
		*d = (struct wsp_device_stats){ .device = ev->device, .free_min = UINT64_MAX };
	}
	uint64_t used = ev->device_total > ev->device_free ? ev->device_total - ev->device_free : 0;
	if (wsp_series_note(&m->device_used[d - m->devices], ev->time_ns, used, ev->device_total))
		return -ENOMEM;
	d->samples++;
	d->total = ev->device_total;
	d->free_last = ev->device_free;
	if (ev->device_free < d->free_min) {
		d->free_min = ev->device_free;
		d->free_min_time_ns = ev->time_ns;
	}
	return 0;
}

/* The checked build's books (books.c): the event's kind at once, the
 * whole model once as many events went by as it holds blocks, so that
 * checking costs O(1) an event. */
static void check_books(struct wsp_model *m, const wsprof_event *ev)
{
	if (ev->kind < WSPROF_KIND_COUNT) {
		const struct wsp_kind_stats *k = &m->kinds[ev->kind];
		WSP_ASSERT(k->peak_bytes >= k->live_bytes);
		WSP_ASSERT(k->collectable_bytes <= k->live_bytes || (ev->kind == WSPROF_KIND_HEAP && m->heap_counted));
	}
	if (m->check_due-- > 0)
		return;
	const char *broken = wsp_model_check(m);
	WSP_ASSERT_MSG(!broken, "after event seq %llu (type %d, kind %u): %s", (unsigned long long)ev->seq, ev->type,
		       ev->kind, broken);
	m->check_due = m->heap_used + m->ranges[0].n + m->ranges[1].n + m->ranges[2].n + m->ranges[3].n;
}

static int apply_event(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev)
{
	if (!m->window_ns && t)
		m->window_ns = (uint64_t)wsprof_trace_process(t)->window_ms * 1000000u;
	if (ev->time_ns > m->last_time)
		m->last_time = ev->time_ns;
	m->seq = ev->seq;
	/* A kind shows up once something was allocated (or failed to be). */
	if ((ev->type == WSPROF_EV_ALLOC && ev->op != WSPROF_OP_MPROTECT) || ev->type == WSPROF_EV_FAIL)
		m->kinds[ev->kind].seen = true;
	/* Whether an allocation counts is the --caller filter's to say, before
	 * the model takes it. */
	bool counts = (ev->type == WSPROF_EV_ALLOC || ev->type == WSPROF_EV_FAIL) && model_caller_counts(m, t, ev->stack);
	switch (ev->type) {
	case WSPROF_EV_ALLOC:
		return ev->op == WSPROF_OP_MPROTECT ? apply_protect(m, ev, counts) : apply_alloc(m, ev, counts);
	case WSPROF_EV_FREE:
		apply_free(m, ev, NULL);
		return 0;
	case WSPROF_EV_MOVE: {
		struct stash *s = stash_of(m, ev->tid, true);
		if (!s)
			return -ENOMEM;
		if (model_ranges_of(m, ev->kind))
			return model_ranges_cut(m, ev->kind, ev->addr, ev->size, s);
		apply_free(m, ev, s);
		return 0;
	}
	case WSPROF_EV_FAIL:
		return apply_fail(m, ev, counts);
	case WSPROF_EV_UNMAP:
		return model_ranges_cut(m, ev->kind, ev->addr, ev->size, NULL);
	case WSPROF_EV_DEVICE_MEMORY:
		return note_device(m, ev);
	case WSPROF_EV_ANNOTATE:
		return model_apply_annotation(m, ev);
	case WSPROF_EV_ACCESS:
		return model_apply_access(m, t, ev);
	case WSPROF_EV_RECORDING:
		if (wsp_grow(&m->switches, &m->switches_cap, m->nswitches + 1, sizeof *m->switches))
			return -ENOMEM;
		m->switches[m->nswitches++] = (struct wsp_recording_switch){ ev->time_ns, ev->seq, ev->size != 0, ev->op };
		return 0;
	case WSPROF_EV_HEAP_TOTALS:
		return model_apply_totals(m, ev);
	case WSPROF_EV_RSS:
		if (wsp_grow(&m->rss, &m->rss_cap, m->nrss + 1, sizeof *m->rss))
			return -ENOMEM;
		m->rss[m->nrss++] = (struct wsp_rss_point){ ev->time_ns, ev->size };
		return 0;
	case WSPROF_EV_FORK:
		if (wsp_grow(&m->children, &m->children_cap, m->nchildren + 1, sizeof *m->children))
			return -ENOMEM;
		m->children[m->nchildren++] = ev->child_pid;
		return 0;
	case WSPROF_EV_EXEC:
		free(m->exec_path);
		m->exec_path = strdup(ev->path ? ev->path : "");
		return m->exec_path ? 0 : -ENOMEM;
	default:
		return 0;
	}
}

/* Where a kind's live or in-use bytes may have changed, the series notes
 * them (unless totals only). */
int wsp_model_apply(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev)
{
	int err = apply_event(m, t, ev);
	if (WSP_CHECKED && !err)
		check_books(m, ev);
	if (err || m->totals_only)
		return err;
	switch (ev->type) {
	case WSPROF_EV_ALLOC:
	case WSPROF_EV_FREE:
	case WSPROF_EV_MOVE:
	case WSPROF_EV_UNMAP:
	case WSPROF_EV_FAIL:
		if (ev->kind < WSPROF_KIND_COUNT) {
			const struct wsp_kind_stats *k = &m->kinds[ev->kind];
			return wsp_series_note(&m->live[ev->kind], ev->time_ns, k->live_bytes,
					       k->live_bytes - k->collectable_bytes);
		}
		return 0;
	case WSPROF_EV_ANNOTATE: /* which kind's in-use bytes changed is the block's */
		for (unsigned kind = 0; kind < WSPROF_KIND_COUNT; kind++) {
			const struct wsp_kind_stats *k = &m->kinds[kind];
			if (k->seen && wsp_series_note(&m->live[kind], ev->time_ns, k->live_bytes,
						       k->live_bytes - k->collectable_bytes))
				return -ENOMEM;
		}
		return 0;
	default:
		return 0;
	}
}

int wsp_model_finish(struct wsp_model *m)
{
	if (WSP_CHECKED) {
		const char *broken = wsp_model_check(m);
		WSP_ASSERT_MSG(!broken, "at the finish: %s", broken);
	}
	if (!m->heap_counted)
		model_count_heap(m);
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		if (wsp_series_extend(&m->live[k], m->last_time))
			return -ENOMEM;
	for (size_t i = 0; i < m->ndevices; i++)
		if (wsp_series_extend(&m->device_used[i], m->last_time))
			return -ENOMEM;
	return m->wss ? wsp_wss_finish(m->wss) : 0;
}
