/*
 * departed.c - see departed.h.
 *
 * The blocks live in a dense array, found by address through an
 * open-addressing table of their places (4 bytes a slot, half full at
 * most): a slot for every block of 96 bytes would cost twice the array
 * again, and a report replays the trace in two or three models at once.
 * Pruning compacts the array and makes the table again. Looking them up
 * by address uses an index built for one window at a time: the blocks
 * live in it, sorted by start, each with the furthest end among itself
 * and those before it, so a walk back from the last block starting before
 * a region stops where nothing earlier can reach into it. Blocks of
 * different addresses may still overlap (a big block freed, then a small
 * one inside its old range): each one is visited.
 */
#include "departed.h"

#include "grow.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	uint64_t lo, hi, reach; /* reach: the furthest hi of this entry and all before it */
	struct wsp_departed_block *at;
};

struct wsp_departed {
	void (*let_go)(struct wsp_departed_block *, void *);
	void *arg;
	struct wsp_departed_block *v; /* the blocks kept */
	size_t n, vcap;
	uint32_t *table;        /* by address: place in v + 1; 0: empty */
	size_t cap;             /* slots of table: a power of two, or 0 */
	uint64_t swept;         /* `before` at the last sweep */
	struct entry *index;
	size_t nindex, index_cap;
	bool index_valid;
	uint64_t index_start, index_end;
};

static size_t slot_of(uint64_t addr, size_t cap)
{
	addr ^= addr >> 31;
	addr *= 0x7fb5d329728ea185ull;
	addr ^= addr >> 27;
	return (size_t)addr & (cap - 1);
}

struct wsp_departed *wsp_departed_new(void (*let_go)(struct wsp_departed_block *, void *), void *arg)
{
	struct wsp_departed *d = calloc(1, sizeof *d);
	if (d) {
		d->let_go = let_go;
		d->arg = arg;
	}
	return d;
}

void wsp_departed_free(struct wsp_departed *d)
{
	if (!d)
		return;
	free(d->v);
	free(d->table);
	free(d->index);
	free(d);
}

/* The slot holding addr, or the empty one where it would go. */
static size_t probe(const struct wsp_departed *d, uint64_t addr)
{
	size_t i = slot_of(addr, d->cap);
	while (d->table[i] && d->v[d->table[i] - 1].b.addr != addr)
		i = (i + 1) & (d->cap - 1);
	return i;
}

/* The table made again for the blocks of v, with cap slots if that much
 * memory is to be had (else in the one it has, which is large enough
 * when it only shrinks). @return 0 or -ENOMEM. */
static int retable(struct wsp_departed *d, size_t cap)
{
	uint32_t *t = cap != d->cap ? calloc(cap, sizeof *t) : NULL;
	if (t) {
		free(d->table);
		d->table = t;
		d->cap = cap;
	} else if (cap > d->cap) {
		return -ENOMEM;
	} else {
		memset(d->table, 0, d->cap * sizeof *d->table);
	}
	for (size_t k = 0; k < d->n; k++)
		d->table[probe(d, d->v[k].b.addr)] = (uint32_t)k + 1;
	d->index_valid = false;
	return 0;
}

int wsp_departed_add(struct wsp_departed *d, const struct wsp_block *b, uint64_t end_ns)
{
	struct wsp_departed_block x = { *b, end_ns };
	if (((d->n + 1) * 2 > d->cap && retable(d, d->cap ? d->cap * 2 : 1024)) || d->n >= UINT32_MAX - 1) {
		d->let_go(&x, d->arg);
		return -ENOMEM;
	}
	size_t i = probe(d, b->addr);
	d->index_valid = false;
	if (d->table[i]) { /* one block per address: the one before goes */
		d->let_go(&d->v[d->table[i] - 1], d->arg);
		d->v[d->table[i] - 1] = x;
		return 0;
	}
	if (wsp_grow(&d->v, &d->vcap, d->n + 1, sizeof *d->v)) {
		d->let_go(&x, d->arg);
		return -ENOMEM;
	}
	d->v[d->n++] = x;
	d->table[i] = (uint32_t)d->n;
	return 0;
}

void wsp_departed_prune(struct wsp_departed *d, uint64_t before, uint64_t every)
{
	if (!d->n || before < d->swept + every)
		return;
	d->swept = before;
	size_t kept = 0;
	for (size_t k = 0; k < d->n; k++) {
		if (d->v[k].end_ns < before)
			d->let_go(&d->v[k], d->arg);
		else
			d->v[kept++] = d->v[k];
	}
	d->n = kept;
	/* Shrinks when an eighth full; the array when a quarter. */
	size_t cap = d->cap;
	while (cap > 1024 && d->n * 8 < cap)
		cap /= 2;
	if (d->vcap > 1024 && d->n * 4 < d->vcap) {
		struct wsp_departed_block *v = realloc(d->v, d->vcap / 2 * sizeof *v);
		if (v) {
			d->v = v;
			d->vcap /= 2;
		}
	}
	retable(d, cap); /* cannot fail: it only keeps or shrinks */
}

void wsp_departed_each(struct wsp_departed *d, void (*fn)(struct wsp_departed_block *, void *), void *arg)
{
	for (size_t k = 0; k < d->n; k++)
		if (d->v[k].b.size)
			fn(&d->v[k], arg);
}

static int by_lo(const void *a, const void *b)
{
	uint64_t x = ((const struct entry *)a)->lo, y = ((const struct entry *)b)->lo;
	return x < y ? -1 : x > y;
}

static int index_build(struct wsp_departed *d, uint64_t start_ns, uint64_t end_ns)
{
	d->nindex = 0;
	for (size_t k = 0; k < d->n; k++) {
		struct wsp_departed_block *x = &d->v[k];
		if (x->end_ns < start_ns || x->b.time_ns > end_ns || !x->b.size)
			continue;
		if (wsp_grow(&d->index, &d->index_cap, d->nindex + 1, sizeof *d->index))
			return -ENOMEM;
		uint64_t hi = x->b.addr + x->b.size < x->b.addr ? UINT64_MAX : x->b.addr + x->b.size;
		d->index[d->nindex++] = (struct entry){ x->b.addr, hi, hi, x };
	}
	if (d->nindex)
		qsort(d->index, d->nindex, sizeof *d->index, by_lo);
	for (size_t i = 1; i < d->nindex; i++)
		if (d->index[i - 1].reach > d->index[i].reach)
			d->index[i].reach = d->index[i - 1].reach;
	d->index_valid = true;
	d->index_start = start_ns;
	d->index_end = end_ns;
	return 0;
}

int wsp_departed_each_overlap(struct wsp_departed *d, uint64_t start_ns, uint64_t end_ns, uint64_t addr,
			      uint64_t len, void (*fn)(struct wsp_departed_block *, uint64_t lo, uint64_t hi, void *),
			      void *arg)
{
	if (!d->n || !len)
		return 0;
	if (!d->index_valid || d->index_start != start_ns || d->index_end != end_ns) {
		int err = index_build(d, start_ns, end_ns);
		if (err)
			return err;
	}
	uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
	size_t lo = 0, hi = d->nindex; /* the entries starting before end: [0, lo) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->index[mid].lo < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t first = lo;
	while (first > 0 && d->index[first - 1].reach > addr)
		first--;
	for (size_t i = first; i < lo; i++) {
		const struct entry *e = &d->index[i];
		if (e->hi > addr)
			fn(e->at, e->lo > addr ? e->lo : addr, e->hi < end ? e->hi : end, arg);
	}
	return 0;
}
