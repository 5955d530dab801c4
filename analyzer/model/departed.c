/*
 * departed.c - see departed.h.
 *
 * The blocks live in an open-addressing table keyed by address (half full
 * at most), swept to prune, rebuilt when it grows. Looking them up by
 * address uses an index built for one window at a time: the blocks live
 * in it, sorted by start, each with the furthest end among itself and
 * those before it, so a walk back from the last block starting before a
 * region stops where nothing earlier can reach into it. Blocks of
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
	struct wsp_departed_block *slots; /* b.size == 0 and end_ns == 0: empty */
	bool *used;
	size_t cap, n;
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
	free(d->slots);
	free(d->used);
	free(d->index);
	free(d);
}

/* The slot holding addr, or the empty one where it would go. */
static size_t probe(const struct wsp_departed *d, uint64_t addr)
{
	size_t i = slot_of(addr, d->cap);
	while (d->used[i] && d->slots[i].b.addr != addr)
		i = (i + 1) & (d->cap - 1);
	return i;
}

/* A table of cap slots holding the blocks kept that ended at `before` or
 * later (all of them with before 0), the others let go. */
static int rebuild(struct wsp_departed *d, size_t cap, uint64_t before)
{
	struct wsp_departed_block *slots = malloc(cap * sizeof *slots);
	bool *used = calloc(cap, sizeof *used);
	if (!slots || !used) {
		free(slots);
		free(used);
		return -ENOMEM;
	}
	struct wsp_departed old = *d;
	d->slots = slots;
	d->used = used;
	d->cap = cap;
	d->n = 0;
	for (size_t i = 0; i < old.cap; i++) {
		if (!old.used[i])
			continue;
		if (old.slots[i].end_ns < before) {
			d->let_go(&old.slots[i], d->arg);
			continue;
		}
		size_t j = probe(d, old.slots[i].b.addr);
		d->slots[j] = old.slots[i];
		d->used[j] = true;
		d->n++;
	}
	free(old.slots);
	free(old.used);
	d->index_valid = false;
	return 0;
}

int wsp_departed_add(struct wsp_departed *d, const struct wsp_block *b, uint64_t end_ns)
{
	if ((d->n + 1) * 2 > d->cap && rebuild(d, d->cap ? d->cap * 2 : 1024, 0)) {
		struct wsp_departed_block x = { *b, end_ns };
		d->let_go(&x, d->arg);
		return -ENOMEM;
	}
	size_t i = probe(d, b->addr);
	if (d->used[i])
		d->let_go(&d->slots[i], d->arg);
	else
		d->n++;
	d->slots[i] = (struct wsp_departed_block){ *b, end_ns };
	d->used[i] = true;
	d->index_valid = false;
	return 0;
}

void wsp_departed_prune(struct wsp_departed *d, uint64_t before, uint64_t every)
{
	if (!d->n || before < d->swept + every)
		return;
	d->swept = before;
	/* In place when nothing needs letting go would be no cheaper: a sweep
	 * reads every slot either way. Shrinks when a quarter full. */
	size_t cap = d->cap;
	while (cap > 1024 && d->n * 8 < cap)
		cap /= 2;
	if (rebuild(d, cap, before)) {
		/* No memory for a new table: let go in place, and rehash the rest. */
		for (size_t i = 0; i < d->cap; i++)
			if (d->used[i] && d->slots[i].end_ns < before) {
				d->let_go(&d->slots[i], d->arg);
				d->slots[i].end_ns = UINT64_MAX; /* kept, as a block nothing can see */
				d->slots[i].b.size = 0;
			}
	}
}

void wsp_departed_each(struct wsp_departed *d, void (*fn)(struct wsp_departed_block *, void *), void *arg)
{
	for (size_t i = 0; i < d->cap; i++)
		if (d->used[i] && d->slots[i].b.size)
			fn(&d->slots[i], arg);
}

static int by_lo(const void *a, const void *b)
{
	uint64_t x = ((const struct entry *)a)->lo, y = ((const struct entry *)b)->lo;
	return x < y ? -1 : x > y;
}

static int index_build(struct wsp_departed *d, uint64_t start_ns, uint64_t end_ns)
{
	d->nindex = 0;
	for (size_t i = 0; i < d->cap; i++) {
		struct wsp_departed_block *x = &d->slots[i];
		if (!d->used[i] || x->end_ns < start_ns || x->b.time_ns > end_ns || !x->b.size)
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
