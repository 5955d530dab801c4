/*
 * access.c - the model's access samples: each window of written pages or
 * DAMON regions, each kernel launch's blocks and each wsprof_touch given
 * to the blocks live then, for the working set, the per-block and
 * per-site accessed bytes and the idle times (model.h).
 */
#include "model_internal.h"

#include "grow.h"
#include "wss.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- access samples --------------------------------------------------- */

/* One region's walk of the memory blocks, in address order. */
struct overlap {
	struct wsp_model *m;
	uint64_t addr, end;
	void (*fn)(struct wsp_model *, struct wsp_block *, uint64_t, void *);
	void *arg;
};

/* Nodes ahead in the walk whose blocks are asked for early. */
#define PREFETCH_AHEAD 8

static void overlap_node(uint32_t node, void *p)
{
	struct overlap *o = p;
	const struct treap *t = &o->m->by_addr[0];
	/* Laid out in key order (model_treap_lay_out), the node a few steps on
	 * is most likely the walk's a few steps on: its block, anywhere in
	 * the array, is on its way while this one is looked at. */
	if (node + PREFETCH_AHEAD <= t->pool.n) {
		const struct wsp_block *next = &o->m->blocks[t->place[node + PREFETCH_AHEAD - 1]];
		__builtin_prefetch(&next->addr, 1);
		__builtin_prefetch(&next->accessed_bytes, 1);
	}
	struct wsp_block *b = &o->m->blocks[t->place[node - 1]]; /* where it lies: no probe */
	if (b->addr + b->size <= o->addr)
		return;
	uint64_t lo = b->addr > o->addr ? b->addr : o->addr, hi = b->addr + b->size < o->end ? b->addr + b->size : o->end;
	o->fn(o->m, b, hi - lo, o->arg);
}

/* Call fn for each live block (memory name space, and mmap ranges) that
 * overlaps [addr, addr+len), with the bytes of the overlap. The blocks are
 * walked in order through the treap (one descent, then a step per block),
 * from the last one starting at or before addr. */
static int each_overlap(struct wsp_model *m, uint64_t addr, uint64_t len,
			void (*fn)(struct wsp_model *, struct wsp_block *, uint64_t, void *), void *arg)
{
	if (wsp_key_space(addr) != WSP_SPACE_MEMORY || !len)
		return 0;
	if (model_order_new(m) || model_treap_lay_out(&m->by_addr[0]))
		return -ENOMEM;
	uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
	/* Keys of other name spaces lie above every memory key. */
	uint64_t below = end < wsp_key_in(WSP_SPACE_REGISTERED, 0) ? end : wsp_key_in(WSP_SPACE_REGISTERED, 0);
	uint64_t k = model_treap_floor(&m->by_addr[0], addr);
	uint64_t from = k && wsp_key_space(k) == WSP_SPACE_MEMORY ? k : addr;
	struct overlap o = { m, addr, end, fn, arg };
	wsp_treap_each(&m->by_addr[0].pool, m->by_addr[0].root, from, below, overlap_node, &o);
	struct range_set *rs = &m->ranges[0];
	for (size_t i = model_range_first_after(rs, addr); i < rs->n && rs->v[i].addr < end; i++) {
		struct wsp_block *b = &rs->v[i];
		uint64_t lo = b->addr > addr ? b->addr : addr, hi = b->addr + b->size < end ? b->addr + b->size : end;
		fn(m, b, hi - lo, arg);
	}
	return 0;
}

/* One region of a sample being matched. */
struct noting {
	uint64_t time_ns, addr, end;
};

/* One region of a sample overlaps b by `bytes`: regions come in address
 * order, so the regions of one sample that overlap a block follow each
 * other, and their bytes add up (note_block, reset for each sample). */
static void note_access(struct wsp_model *m, struct wsp_block *b, uint64_t bytes, void *arg)
{
	const struct noting *n = arg;
	m->note_bytes = m->note_block == b ? m->note_bytes + bytes : bytes;
	m->note_block = b;
	b->last_access_ns = n->time_ns;
	if (m->note_bytes > b->accessed_bytes)
		b->accessed_bytes = m->note_bytes;
	if (m->observe)
		m->observe(b, b->addr > n->addr ? b->addr : n->addr, b->addr + b->size < n->end ? b->addr + b->size : n->end,
			   m->observe_arg);
}

struct each_pool {
	struct wsp_model *m;
	const struct treap *t;
	uint64_t addr, end;
	wsp_model_overlap_fn fn;
	void *arg;
};

static void each_pool_node(uint32_t node, void *arg)
{
	const struct each_pool *ep = arg;
	const struct wsp_block *b = &ep->m->blocks[ep->t->place[node - 1]];
	uint64_t lo = wsp_block_addr(b), hi = lo + b->size;
	if (hi > ep->addr && lo < ep->end)
		ep->fn(b, lo > ep->addr ? lo : ep->addr, hi < ep->end ? hi : ep->end, ep->arg);
}

/* The blocks each_overlap does not walk: pool sub-allocations (their own
 * treap, keyed in the pool space) and CUDA VMM mappings. */
static int each_inside(struct wsp_model *m, uint64_t addr, uint64_t end, wsp_model_overlap_fn fn, void *arg)
{
	const struct treap *t = &m->by_addr[1];
	if (model_order_new(m))
		return -ENOMEM;
	if (t->root) {
		uint64_t lo = wsp_key_in(WSP_SPACE_POOL, addr), hi = wsp_key_in(WSP_SPACE_POOL, end - 1);
		uint64_t k = model_treap_floor(t, lo);
		struct each_pool ep = { m, t, addr, end, fn, arg };
		wsp_treap_each(&t->pool, t->root, k && wsp_key_space(k) == WSP_SPACE_POOL ? k : lo, hi + 1, each_pool_node, &ep);
	}
	struct range_set *rs = &m->ranges[1];
	for (size_t i = model_range_first_after(rs, addr); i < rs->n && rs->v[i].addr < end; i++) {
		const struct wsp_block *b = &rs->v[i];
		fn(b, b->addr > addr ? b->addr : addr, b->addr + b->size < end ? b->addr + b->size : end, arg);
	}
	return 0;
}

/* wsp_model_each_in's walk of memory blocks and mmap ranges. */
struct each_in {
	uint64_t addr, end;
	wsp_model_overlap_fn fn;
	void *arg;
};

static void each_in_block(struct wsp_model *m, struct wsp_block *b, uint64_t bytes, void *arg)
{
	(void)m;
	(void)bytes;
	const struct each_in *e = arg;
	e->fn(b, b->addr > e->addr ? b->addr : e->addr, b->addr + b->size < e->end ? b->addr + b->size : e->end, e->arg);
}

int wsp_model_each_in(struct wsp_model *m, uint64_t addr, uint64_t len, wsp_model_overlap_fn fn, void *arg)
{
	if (m->totals_only || wsp_key_space(addr) != WSP_SPACE_MEMORY || !len)
		return 0;
	struct each_in e = { addr, addr + len < addr ? UINT64_MAX : addr + len, fn, arg };
	int err = each_overlap(m, addr, len, each_in_block, &e);
	return err ? err : each_inside(m, e.addr, e.end, fn, arg);
}

void wsp_model_observe_access(struct wsp_model *m, wsp_model_overlap_fn fn, void *arg)
{
	m->observe = fn;
	m->observe_arg = arg;
}

/* Bytes of sorted regions r[0..n) inside [lo, hi). */
static uint64_t regions_inside(const wsprof_region *r, size_t n, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = n;
	while (a < b) { /* the first region ending after lo */
		size_t mid = a + (b - a) / 2;
		if (r[mid].addr + r[mid].len <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	uint64_t bytes = 0;
	for (size_t i = a; i < n && r[i].addr < hi; i++) {
		uint64_t p = r[i].addr > lo ? r[i].addr : lo, end = r[i].addr + r[i].len, q = end < hi ? end : hi;
		bytes += q > p ? q - p : 0;
	}
	return bytes;
}

/* A window [start, end] of written pages or DAMON regions, to the blocks
 * freed during it: what they held of it, they may have been accessed by
 * (the memory can have been reused since: an upper bound). */
struct departed_window {
	const wsprof_event *ev;
	uint64_t start;
};

static void note_departed(struct wsp_departed_block *d, void *arg)
{
	const struct departed_window *w = arg;
	struct wsp_block *b = &d->b;
	if (d->end_ns < w->start || b->time_ns > w->ev->time_ns)
		return;
	uint64_t hi = b->addr + b->size < b->addr ? UINT64_MAX : b->addr + b->size;
	uint64_t bytes = regions_inside(w->ev->regions, w->ev->nregions, b->addr, hi);
	if (!bytes)
		return;
	b->last_access_ns = d->end_ns;
	if (bytes > b->accessed_bytes)
		b->accessed_bytes = bytes;
}

static void note_departed_access(struct wsp_model *m, const wsprof_event *ev, uint64_t start)
{
	struct departed_window w = { ev, start };
	if (m->departed && ev->nregions)
		wsp_departed_each(m->departed, note_departed, &w);
}

/* Blocks freed during a bucket, for its bytes that no live block holds:
 * the live blocks' parts of the region (allocated by the bucket's end), in
 * the order each_overlap gives them, and how far the departed blocks,
 * visited in order of start, have counted. */
struct departed_walk {
	uint64_t end_ns;
	wsprof_region *live;
	size_t nlive, live_cap;
	size_t at;            /* the first live part that may still reach a departed block */
	bool oom;
	uint64_t cursor;
	void (*fn)(const struct wsp_block *, uint64_t bytes, void *);
	void *arg;
};

static void note_live(struct wsp_model *m, struct wsp_block *b, uint64_t bytes, void *arg)
{
	(void)m;
	(void)bytes;
	struct departed_walk *w = arg;
	if (b->time_ns > w->end_ns)
		return;
	if (wsp_grow(&w->live, &w->live_cap, w->nlive + 1, sizeof *w->live)) {
		w->oom = true;
		return;
	}
	w->live[w->nlive++] = (wsprof_region){ b->addr, b->size };
}

/* Bytes of [lo, hi) that no live block of the region holds. The live
 * parts are sorted and disjoint (live_union), and the departed blocks come
 * in order of start, so the parts before lo are never looked at again. */
static uint64_t outside_live(struct departed_walk *w, uint64_t lo, uint64_t hi)
{
	while (w->at < w->nlive && w->live[w->at].addr + w->live[w->at].len <= lo)
		w->at++;
	uint64_t bytes = hi - lo;
	for (size_t i = w->at; i < w->nlive && w->live[i].addr < hi; i++) {
		uint64_t p = w->live[i].addr > lo ? w->live[i].addr : lo;
		uint64_t e = w->live[i].addr + w->live[i].len, q = e < hi ? e : hi;
		bytes -= q > p ? q - p : 0;
	}
	return bytes;
}

static int by_start(const void *a, const void *b)
{
	uint64_t x = ((const wsprof_region *)a)->addr, y = ((const wsprof_region *)b)->addr;
	return x < y ? -1 : x > y;
}

/* The live parts as a sorted union: heap blocks come before mmap ranges,
 * which may hold them (an allocator's own mappings). */
static void live_union(struct departed_walk *w)
{
	bool sorted = true;
	for (size_t i = 1; i < w->nlive && sorted; i++)
		sorted = w->live[i - 1].addr + w->live[i - 1].len <= w->live[i].addr;
	if (sorted)
		return;
	qsort(w->live, w->nlive, sizeof *w->live, by_start);
	size_t n = 0;
	for (size_t i = 0; i < w->nlive; i++) {
		uint64_t end = w->live[i].addr + w->live[i].len;
		if (n && w->live[i].addr <= w->live[n - 1].addr + w->live[n - 1].len) {
			if (end > w->live[n - 1].addr + w->live[n - 1].len)
				w->live[n - 1].len = end - w->live[n - 1].addr;
		} else {
			w->live[n++] = w->live[i];
		}
	}
	w->nlive = n;
}

/* Each byte once: what lies below the cursor was counted. */
static void walk_departed(struct wsp_departed_block *d, uint64_t lo, uint64_t hi, void *arg)
{
	struct departed_walk *w = arg;
	lo = lo > w->cursor ? lo : w->cursor;
	if (hi <= lo)
		return;
	w->cursor = hi;
	uint64_t bytes = outside_live(w, lo, hi);
	if (bytes)
		w->fn(&d->b, bytes, w->arg);
}

int wsp_model_each_departed(struct wsp_model *m, uint64_t start_ns, uint64_t end_ns, uint64_t addr, uint64_t len,
			    void (*fn)(const struct wsp_block *, uint64_t bytes, void *), void *arg)
{
	if (!m->departed || !len)
		return 0;
	struct departed_walk w = { .end_ns = end_ns, .cursor = addr, .fn = fn, .arg = arg };
	int err = each_overlap(m, addr, len, note_live, &w);
	if (!err && w.oom)
		err = -ENOMEM;
	if (!err)
		live_union(&w);
	if (!err)
		err = wsp_departed_each_overlap(m->departed, start_ns, end_ns, addr, len, walk_departed, &w);
	free(w.live);
	return err;
}

struct attribution {
	struct wsp_model *m;
	uint64_t *kind_bytes, attributed;
	uint64_t estimated;  /* a sampled trace's heap bytes, weighed */
	uint64_t end_ns;     /* blocks allocated after the bucket ended are not its */
};

static void add_bytes(struct attribution *a, const struct wsp_block *b, uint64_t bytes)
{
	if (model_estimated(a->m, b->kind)) {
		a->estimated += model_weigh(a->m, b, bytes);
		return;
	}
	a->kind_bytes[b->kind] += bytes;
	a->attributed += bytes;
}

static void add_to_kind(struct wsp_model *m, struct wsp_block *b, uint64_t bytes, void *arg)
{
	(void)m;
	struct attribution *a = arg;
	if (b->time_ns <= a->end_ns)
		add_bytes(a, b, bytes);
}

static void add_departed(const struct wsp_block *b, uint64_t bytes, void *arg)
{
	add_bytes(arg, b, bytes);
}

/* The bytes of a bucket's region go to the kinds of the blocks live in
 * it: live when the bucket closes (and allocated by its end), else freed
 * during it (departed.h). A sampled heap gets its estimate, at most the
 * bytes no other kind's block holds: the kinds never add up to more than
 * was accessed. */
static uint64_t attribute(void *ctx, uint64_t start_ns, uint64_t end_ns, uint64_t addr, uint64_t len,
			  uint64_t *kind_bytes)
{
	struct wsp_model *m = ctx;
	struct attribution a = { .m = m, .kind_bytes = kind_bytes, .end_ns = end_ns };
	each_overlap(m, addr, len, add_to_kind, &a);
	if (a.attributed < len)
		wsp_model_each_departed(m, start_ns, end_ns, addr, len, add_departed, &a);
	uint64_t rest = len > a.attributed ? len - a.attributed : 0;
	uint64_t heap = a.estimated < rest ? a.estimated : rest;
	kind_bytes[WSPROF_KIND_HEAP] += heap;
	return rest - heap;
}

/* With totals only (or unmatched access), nothing of a window is matched to blocks. */
static uint64_t attribute_nothing(void *ctx, uint64_t start_ns, uint64_t end_ns, uint64_t addr, uint64_t len,
				  uint64_t *kind_bytes)
{
	(void)ctx;
	(void)start_ns;
	(void)end_ns;
	(void)addr;
	(void)kind_bytes;
	return len;
}

int model_ensure_wss(struct wsp_model *m, wsprof_trace *t)
{
	if (m->wss)
		return 0;
	if (t)
		m->window_ns = (uint64_t)wsprof_trace_process(t)->window_ms * 1000000u;
	uint64_t bucket = m->wss_bucket_ns ? m->wss_bucket_ns : m->window_ns ? m->window_ns : 100000000u;
	m->wss = wsp_wss_new(bucket, m->totals_only ? NULL : m->unmatched_access ? attribute_nothing : attribute, m);
	return m->wss ? 0 : -ENOMEM;
}

int model_apply_access(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev)
{
	int e = model_ensure_wss(m, t);
	if (e)
		return e;
	m->note_block = NULL;
	bool match = !m->totals_only && !m->unmatched_access;
	for (size_t i = 0; match && i < ev->nregions; i++) {
		uint64_t addr = ev->regions[i].addr, len = ev->regions[i].len;
		struct noting n = { ev->time_ns, addr, addr + len < addr ? UINT64_MAX : addr + len };
		int err = each_overlap(m, addr, len, note_access, &n);
		if (!err && m->observe && len && wsp_key_space(addr) == WSP_SPACE_MEMORY)
			err = each_inside(m, n.addr, n.end, m->observe, m->observe_arg);
		if (err)
			return err;
	}
	/* A window (not a moment: a launch, a block read as it was freed) may
	 * have seen blocks freed before it was recorded. */
	if (wsp_access_is_window(ev->op, ev->size)) {
		uint64_t start = ev->time_ns > ev->size ? ev->time_ns - ev->size : 0;
		if (match)
			note_departed_access(m, ev, start);
		if (ev->time_ns > m->windowed_end)
			m->windowed_end = ev->time_ns;
	}
	return wsp_wss_add(m->wss, ev->op, ev->time_ns, ev->size, ev->regions, ev->nregions);
}

