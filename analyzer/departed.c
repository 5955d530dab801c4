/*
 * departed.c - see departed.h.
 *
 * The blocks are kept in order of departure in one array (pruned from the
 * front, compacted when the front is past its middle). Looking them up by
 * address uses an index built for one window at a time: the blocks live
 * in it, sorted by start, each with the furthest end among itself and
 * those before it, so a walk back from the last block starting before a
 * region stops where nothing earlier can reach into the region. Blocks
 * kept overlap when an address was reused within a window; each one is
 * visited.
 */
#include "departed.h"

#include "grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	uint64_t lo, hi, reach; /* reach: the furthest hi of this entry and all before it */
	uint32_t at;            /* index into v */
};

struct wsp_departed {
	struct wsp_departed_block *v;
	size_t head, n, cap;    /* live entries are v[head .. n) */
	struct entry *index;
	size_t nindex, index_cap;
	bool index_valid;
	uint64_t index_start, index_end;
};

struct wsp_departed *wsp_departed_new(void)
{
	return calloc(1, sizeof(struct wsp_departed));
}

void wsp_departed_free(struct wsp_departed *d)
{
	if (!d)
		return;
	free(d->v);
	free(d->index);
	free(d);
}

int wsp_departed_add(struct wsp_departed *d, const struct wsp_block *b, uint64_t end_ns)
{
	if (d->head && d->head >= d->n / 2) {
		memmove(d->v, d->v + d->head, (d->n - d->head) * sizeof *d->v);
		d->n -= d->head;
		d->head = 0;
	}
	if (wsp_grow(&d->v, &d->cap, d->n + 1, sizeof *d->v))
		return -ENOMEM;
	d->v[d->n++] = (struct wsp_departed_block){ *b, end_ns };
	d->index_valid = false;
	return 0;
}

void wsp_departed_prune(struct wsp_departed *d, uint64_t before,
			void (*fn)(struct wsp_departed_block *, void *), void *arg)
{
	/* Departures come in trace order, whose times may step back a tick
	 * between threads: a block is let go once it and all before it ended. */
	size_t h = d->head;
	for (; h < d->n && d->v[h].end_ns < before; h++)
		if (fn)
			fn(&d->v[h], arg);
	if (h != d->head)
		d->index_valid = false;
	d->head = h;
	if (d->head == d->n)
		d->head = d->n = 0;
}

size_t wsp_departed_all(const struct wsp_departed *d, struct wsp_departed_block **v)
{
	*v = d->v + d->head;
	return d->n - d->head;
}

static int by_lo(const void *a, const void *b)
{
	uint64_t x = ((const struct entry *)a)->lo, y = ((const struct entry *)b)->lo;
	return x < y ? -1 : x > y;
}

static int index_build(struct wsp_departed *d, uint64_t start_ns, uint64_t end_ns)
{
	d->nindex = 0;
	for (size_t i = d->head; i < d->n; i++) {
		const struct wsp_departed_block *x = &d->v[i];
		if (x->end_ns < start_ns || x->b.time_ns > end_ns || !x->b.size)
			continue;
		if (wsp_grow(&d->index, &d->index_cap, d->nindex + 1, sizeof *d->index))
			return -ENOMEM;
		uint64_t hi = x->b.addr + x->b.size < x->b.addr ? UINT64_MAX : x->b.addr + x->b.size;
		d->index[d->nindex++] = (struct entry){ x->b.addr, hi, hi, (uint32_t)i };
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
	if (d->head == d->n || !len)
		return 0;
	if (!d->index_valid || d->index_start != start_ns || d->index_end != end_ns) {
		int err = index_build(d, start_ns, end_ns);
		if (err)
			return err;
	}
	uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
	/* The entries starting before end: [0, k). */
	size_t lo = 0, hi = d->nindex;
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
		if (e->hi <= addr)
			continue;
		fn(&d->v[e->at], e->lo > addr ? e->lo : addr, e->hi < end ? e->hi : end, arg);
	}
	return 0;
}
