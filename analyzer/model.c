/*
 * model.c - the live set and per-kind figures of a trace (see model.h).
 *
 * Heap blocks live in an open-addressing hash table keyed by address;
 * mmap ranges in a sorted array, because munmap may cut any part of them.
 * The pieces of one mapping keep its identity (origin): a mapping is one
 * live block, and one free when its last piece goes.
 * A MOVE (realloc/mremap in flight) parks the old block per thread until
 * the same thread's ALLOC (success) or FAIL (old block restored).
 * Memory grows with live blocks, distinct stacks and threads, never with
 * the length of the trace.
 */
#include "model.h"

#include "grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct stash {
	uint32_t tid;
	bool used;
	uint64_t blocks_gone; /* counted mappings whose last piece was parked */
	struct wsp_block *blocks;
	size_t n, cap;
};

struct caller_slot {
	uint64_t stack;  /* 0: empty */
	int8_t ok;
};

struct wsp_model {
	struct wsp_kind_stats kinds[WSPROF_KIND_COUNT];
	uint64_t untracked_frees, last_time;

	struct wsp_block *heap;      /* hash table, addr 0 = empty */
	size_t heap_cap, heap_used;

	struct wsp_block *ranges;    /* sorted by addr, non-overlapping */
	size_t nranges, ranges_cap;

	struct stash *stashes;
	size_t nstashes;

	const char *const *callers;
	struct caller_slot *ccache;
	size_t ccache_cap, ccache_used;

	uint32_t *children;
	size_t nchildren, children_cap;
	char *exec_path;
};


static inline size_t hash64(uint64_t x, size_t cap)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	return (size_t)x & (cap - 1);
}

struct wsp_model *wsp_model_new(const struct wsp_model_options *opt)
{
	struct wsp_model *m = calloc(1, sizeof *m);
	if (m && opt)
		m->callers = opt->callers;
	return m;
}

void wsp_model_free(struct wsp_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nstashes; i++)
		free(m->stashes[i].blocks);
	free(m->stashes);
	free(m->heap);
	free(m->ranges);
	free(m->ccache);
	free(m->children);
	free(m->exec_path);
	free(m);
}

/* ---- figures -------------------------------------------------------- */

static void add_live(struct wsp_model *m, const struct wsp_block *b, uint64_t bytes, uint64_t blocks,
		     uint64_t time)
{
	if (b->excluded)
		return;
	struct wsp_kind_stats *k = &m->kinds[b->kind];
	k->live_bytes += bytes;
	k->live_blocks += blocks;
	if (k->live_bytes > k->peak_bytes) {
		k->peak_bytes = k->live_bytes;
		k->peak_time_ns = time;
	}
}

static void sub_live(struct wsp_model *m, const struct wsp_block *b, uint64_t bytes, uint64_t blocks)
{
	if (b->excluded)
		return;
	struct wsp_kind_stats *k = &m->kinds[b->kind];
	k->live_bytes -= bytes;
	k->live_blocks -= blocks;
}

static void gain(struct wsp_model *m, const struct wsp_block *b, uint64_t time)
{
	add_live(m, b, b->size, 1, time);
}

static void lose(struct wsp_model *m, const struct wsp_block *b)
{
	sub_live(m, b, b->size, 1);
}

/* ---- heap blocks ------------------------------------------------------ */

static struct wsp_block *heap_find(struct wsp_model *m, uint64_t addr)
{
	if (!m->heap_cap)
		return NULL;
	for (size_t i = hash64(addr, m->heap_cap); m->heap[i].addr; i = (i + 1) & (m->heap_cap - 1))
		if (m->heap[i].addr == addr)
			return &m->heap[i];
	return NULL;
}

static int heap_insert(struct wsp_model *m, const struct wsp_block *b)
{
	if ((m->heap_used + 1) * 4 > m->heap_cap * 3) {
		size_t cap = m->heap_cap ? m->heap_cap * 2 : 1024;
		struct wsp_block *t = calloc(cap, sizeof *t);
		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < m->heap_cap; i++) {
			if (!m->heap[i].addr)
				continue;
			size_t j = hash64(m->heap[i].addr, cap);
			while (t[j].addr)
				j = (j + 1) & (cap - 1);
			t[j] = m->heap[i];
		}
		free(m->heap);
		m->heap = t;
		m->heap_cap = cap;
	}
	size_t j = hash64(b->addr, m->heap_cap);
	while (m->heap[j].addr)
		j = (j + 1) & (m->heap_cap - 1);
	m->heap[j] = *b;
	m->heap_used++;
	return 0;
}

/* Remove a found slot, shifting later members of its probe run back. */
static void heap_remove(struct wsp_model *m, struct wsp_block *slot)
{
	size_t mask = m->heap_cap - 1, i = (size_t)(slot - m->heap);
	for (size_t j = (i + 1) & mask; m->heap[j].addr; j = (j + 1) & mask) {
		size_t home = hash64(m->heap[j].addr, m->heap_cap);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->heap[i] = m->heap[j];
			i = j;
		}
	}
	m->heap[i].addr = 0;
	m->heap_used--;
}

/* ---- mmap ranges ------------------------------------------------------ */

static size_t range_first_after(const struct wsp_model *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nranges;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->ranges[mid].addr + m->ranges[mid].size <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo; /* first range ending after addr */
}

static int range_insert_at(struct wsp_model *m, size_t i, const struct wsp_block *b)
{
	if (wsp_grow(&m->ranges, &m->ranges_cap, m->nranges + 1, sizeof *m->ranges))
		return -ENOMEM;
	memmove(m->ranges + i + 1, m->ranges + i, (m->nranges - i) * sizeof *m->ranges);
	m->ranges[i] = *b;
	m->nranges++;
	return 0;
}

static int stash_add(struct stash *s, const struct wsp_block *b)
{
	if (wsp_grow(&s->blocks, &s->cap, s->n + 1, sizeof *s->blocks))
		return -ENOMEM;
	s->blocks[s->n++] = *b;
	return 0;
}

/* Is any piece of r's mapping still live? */
static bool origin_alive(const struct wsp_model *m, const struct wsp_block *r)
{
	for (size_t i = range_first_after(m, r->origin);
	     i < m->nranges && m->ranges[i].addr < r->origin + r->origin_size; i++)
		if (m->ranges[i].origin == r->origin)
			return true;
	return false;
}

/* Release [addr, addr+len) from the mmap ranges. Pieces go to `into` when
 * given (a MOVE); otherwise a mapping whose last piece goes counts as one
 * free. */
static int range_cut(struct wsp_model *m, uint64_t addr, uint64_t len, struct stash *into)
{
	uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
	size_t i = range_first_after(m, addr);
	while (i < m->nranges && m->ranges[i].addr < end) {
		struct wsp_block r = m->ranges[i];
		uint64_t lo = r.addr > addr ? r.addr : addr;
		uint64_t hi = r.addr + r.size < end ? r.addr + r.size : end;
		struct wsp_block piece = r, left = r, right = r;
		piece.addr = lo;
		piece.size = hi - lo;
		left.size = lo - r.addr;
		right.addr = hi;
		right.size = r.addr + r.size - hi;
		sub_live(m, &r, piece.size, 0);
		memmove(m->ranges + i, m->ranges + i + 1, (m->nranges - i - 1) * sizeof *m->ranges);
		m->nranges--;
		/* What is left of r on either side stays live, as part of r's mapping. */
		if (left.size && range_insert_at(m, i++, &left))
			return -ENOMEM;
		if (right.size && range_insert_at(m, i++, &right))
			return -ENOMEM;
		if (into && stash_add(into, &piece))
			return -ENOMEM;
		if (!origin_alive(m, &r)) {
			sub_live(m, &r, 0, 1);
			if (into)
				into->blocks_gone += !r.excluded;
			else if (!r.excluded)
				m->kinds[r.kind].frees++;
		}
	}
	return 0;
}

static int range_add(struct wsp_model *m, const struct wsp_block *b)
{
	int err = range_cut(m, b->addr, b->size, NULL); /* MAP_FIXED over old maps */
	return err ? err : range_insert_at(m, range_first_after(m, b->addr), b);
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
	free_slot->blocks_gone = 0;
	return free_slot;
}

/* @return whether anything counted (not excluded) was parked. */
static bool stash_any_counted(const struct stash *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (!s->blocks[i].excluded)
			return true;
	return false;
}

/* ---- caller filter ---------------------------------------------------- */

static bool module_matches(const char *path, const char *want)
{
	if (strchr(want, '/'))
		return strcmp(path, want) == 0;
	const char *base = strrchr(path, '/');
	return strcmp(base ? base + 1 : path, want) == 0;
}

static bool is_cxx_runtime(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, "libstdc++.so", 12) == 0 || strncmp(base, "libc++.so", 9) == 0;
}

static bool caller_check(struct wsp_model *m, wsprof_trace *t, uint64_t stack)
{
	uint64_t ips[64];
	size_t depth = wsprof_trace_stack(t, stack, ips, 64);
	if (depth > 64)
		depth = 64;
	for (size_t i = 0; i < depth; i++) {
		/* Return addresses point after the call: look up the call itself. */
		const char *mod = wsprof_trace_module_at(t, i ? ips[i] - 1 : ips[i], NULL);
		if (!mod)
			return false;
		if (is_cxx_runtime(mod))
			continue;
		for (const char *const *c = m->callers; *c; c++)
			if (module_matches(mod, *c))
				return true;
		return false;
	}
	return false;
}

static bool caller_ok(struct wsp_model *m, wsprof_trace *t, uint64_t stack)
{
	if (!m->callers)
		return true;
	if (!stack)
		return false;
	if ((m->ccache_used + 1) * 2 > m->ccache_cap) {
		size_t cap = m->ccache_cap ? m->ccache_cap * 2 : 256;
		struct caller_slot *c = calloc(cap, sizeof *c);
		if (!c)
			return caller_check(m, t, stack);
		for (size_t i = 0; i < m->ccache_cap; i++) {
			if (!m->ccache[i].stack)
				continue;
			size_t j = hash64(m->ccache[i].stack, cap);
			while (c[j].stack)
				j = (j + 1) & (cap - 1);
			c[j] = m->ccache[i];
		}
		free(m->ccache);
		m->ccache = c;
		m->ccache_cap = cap;
	}
	size_t j = hash64(stack, m->ccache_cap);
	for (; m->ccache[j].stack; j = (j + 1) & (m->ccache_cap - 1))
		if (m->ccache[j].stack == stack)
			return m->ccache[j].ok;
	m->ccache[j].stack = stack;
	m->ccache[j].ok = caller_check(m, t, stack);
	m->ccache_used++;
	return m->ccache[j].ok;
}

/* ---- events ----------------------------------------------------------- */

static int apply_alloc(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev)
{
	struct wsp_kind_stats *k = &m->kinds[ev->kind];
	struct wsp_block b = { ev->addr, ev->size, ev->stack, ev->addr, ev->size, (uint8_t)ev->kind,
			       !caller_ok(m, t, ev->stack) };
	struct stash *s = stash_of(m, ev->tid, false);
	if (s) {
		if (stash_any_counted(s))
			m->kinds[s->blocks[0].kind].frees++;
		s->used = false;
	}
	int err;
	if (ev->kind == WSPROF_KIND_MMAP) {
		err = range_add(m, &b);
	} else {
		struct wsp_block *old = heap_find(m, ev->addr);
		if (old) { /* its free was not seen: it is gone all the same */
			lose(m, old);
			heap_remove(m, old);
		}
		err = heap_insert(m, &b);
	}
	if (err)
		return err;
	if (!b.excluded) {
		k->allocations++;
		k->total_bytes += ev->size;
	}
	gain(m, &b, ev->time_ns);
	return 0;
}

static void apply_free(struct wsp_model *m, const wsprof_event *ev, struct stash *into)
{
	struct wsp_block *b = heap_find(m, ev->addr);
	if (!b) {
		if (!into)
			m->untracked_frees++;
		return;
	}
	lose(m, b);
	if (into)
		stash_add(into, b);
	else if (!b->excluded)
		m->kinds[b->kind].frees++;
	heap_remove(m, b);
}

static int apply_fail(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev)
{
	struct stash *s = stash_of(m, ev->tid, false);
	if (s) {
		for (size_t i = 0; i < s->n; i++) {
			const struct wsp_block *b = &s->blocks[i];
			bool piece = b->kind == WSPROF_KIND_MMAP;
			int err = piece ? range_add(m, b) : heap_insert(m, b);
			if (err)
				return err;
			add_live(m, b, b->size, !piece, ev->time_ns);
		}
		if (s->n)
			m->kinds[s->blocks[0].kind].live_blocks += s->blocks_gone;
		s->used = false;
	}
	if (caller_ok(m, t, ev->stack))
		m->kinds[ev->kind].failed++;
	return 0;
}

int wsp_model_apply(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev)
{
	if (ev->time_ns > m->last_time)
		m->last_time = ev->time_ns;
	/* A kind shows up once something was allocated (or failed to be). */
	if (ev->type == WSPROF_EV_ALLOC || ev->type == WSPROF_EV_FAIL)
		m->kinds[ev->kind].seen = true;
	switch (ev->type) {
	case WSPROF_EV_ALLOC:
		return apply_alloc(m, t, ev);
	case WSPROF_EV_FREE:
		apply_free(m, ev, NULL);
		return 0;
	case WSPROF_EV_MOVE: {
		struct stash *s = stash_of(m, ev->tid, true);
		if (!s)
			return -ENOMEM;
		if (ev->kind == WSPROF_KIND_MMAP)
			return range_cut(m, ev->addr, ev->size, s);
		apply_free(m, ev, s);
		return 0;
	}
	case WSPROF_EV_FAIL:
		return apply_fail(m, t, ev);
	case WSPROF_EV_UNMAP:
		return range_cut(m, ev->addr, ev->size, NULL);
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

const struct wsp_kind_stats *wsp_model_kind(const struct wsp_model *m, unsigned kind)
{
	return kind < WSPROF_KIND_COUNT ? &m->kinds[kind] : NULL;
}

uint64_t wsp_model_untracked_frees(const struct wsp_model *m)
{
	return m->untracked_frees;
}

uint64_t wsp_model_last_time(const struct wsp_model *m)
{
	return m->last_time;
}

size_t wsp_model_children(const struct wsp_model *m, const uint32_t **pids)
{
	*pids = m->children;
	return m->nchildren;
}

const char *wsp_model_exec(const struct wsp_model *m)
{
	return m->exec_path;
}

void wsp_model_each_live(const struct wsp_model *m, void (*fn)(const struct wsp_block *, void *), void *arg)
{
	for (size_t i = 0; i < m->heap_cap; i++)
		if (m->heap[i].addr)
			fn(&m->heap[i], arg);
	for (size_t i = 0; i < m->nranges; i++)
		fn(&m->ranges[i], arg);
}
