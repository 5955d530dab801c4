/*
 * ranges.c - address ranges (mmap, CUDA VMM mappings and reservations,
 * mmap reservations): sorted arrays of blocks, apart and never empty,
 * because munmap, MAP_FIXED and mremap may cut any part of them.
 * The pieces of one mapping keep its identity (origin): a mapping is one
 * live block, and one free when its last piece goes.
 */
#include "model_internal.h"

#include "grow.h"

#include <errno.h>
#include <string.h>

struct range_set *model_ranges_of(struct wsp_model *m, unsigned kind)
{
	switch (kind) {
	case WSPROF_KIND_MMAP: return &m->ranges[0];
	case WSPROF_KIND_CUDA_VMM_MAPPED: return &m->ranges[1];
	case WSPROF_KIND_CUDA_VMM_RESERVED: return &m->ranges[2];
	case WSPROF_KIND_MMAP_RESERVED: return &m->ranges[3];
	default: return NULL;
	}
}

size_t model_range_first_after(const struct range_set *rs, uint64_t addr)
{
	size_t lo = 0, hi = rs->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (rs->v[mid].addr + rs->v[mid].size <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo; /* first range ending after addr */
}

/* [lo, hi) into the span where ranges changed. */
static void range_changed(struct wsp_model *m, uint64_t lo, uint64_t hi)
{
	if (m->changed_lo >= m->changed_hi) {
		m->changed_lo = lo;
		m->changed_hi = hi;
		return;
	}
	m->changed_lo = lo < m->changed_lo ? lo : m->changed_lo;
	m->changed_hi = hi > m->changed_hi ? hi : m->changed_hi;
}

static uint64_t range_end(const struct wsp_block *b)
{
	return b->addr + b->size < b->addr ? UINT64_MAX : b->addr + b->size;
}

bool wsp_model_ranges_changed(struct wsp_model *m, uint64_t *lo, uint64_t *hi)
{
	*lo = m->changed_lo;
	*hi = m->changed_hi;
	m->changed_lo = m->changed_hi = 0;
	return *lo < *hi;
}

void wsp_model_each_range_in(const struct wsp_model *m, uint64_t lo, uint64_t hi,
			     void (*fn)(const struct wsp_block *, void *), void *arg)
{
	for (size_t r = 0; r < sizeof m->ranges / sizeof *m->ranges; r++) {
		const struct range_set *rs = &m->ranges[r];
		for (size_t i = model_range_first_after(rs, lo); i < rs->n && rs->v[i].addr < hi; i++)
			fn(&rs->v[i], arg);
	}
}

static int range_insert_at(struct wsp_model *m, struct range_set *rs, size_t i, const struct wsp_block *b)
{
	range_changed(m, b->addr, range_end(b));
	if (wsp_grow(&rs->v, &rs->cap, rs->n + 1, sizeof *rs->v))
		return -ENOMEM;
	memmove(rs->v + i + 1, rs->v + i, (rs->n - i) * sizeof *rs->v);
	rs->v[i] = *b;
	rs->n++;
	return 0;
}

/* Is any piece of r's mapping still live? A mapping is its origin and
 * its size: a new one may start where an old one began, in the hole its
 * first pieces left, while the old one's last pieces live on. */
static bool origin_alive(const struct range_set *rs, const struct wsp_block *r)
{
	for (size_t i = model_range_first_after(rs, r->origin); i < rs->n && rs->v[i].addr < r->origin + r->origin_size; i++)
		if (rs->v[i].origin == r->origin && rs->v[i].origin_size == r->origin_size)
			return true;
	return false;
}

/* Release [addr, addr+len) from a range set. Pieces go to `into` when
 * given (a MOVE); otherwise a mapping whose last piece goes counts as one
 * free. */
static int range_cut(struct wsp_model *m, struct range_set *rs, uint64_t addr, uint64_t len, struct stash *into)
{
	uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
	size_t i = model_range_first_after(rs, addr);
	while (i < rs->n && rs->v[i].addr < end) {
		struct wsp_block r = rs->v[i];
		uint64_t lo = r.addr > addr ? r.addr : addr;
		uint64_t hi = r.addr + r.size < end ? r.addr + r.size : end;
		struct wsp_block piece = r, left = r, right = r;
		piece.addr = lo;
		piece.size = hi - lo;
		left.size = lo - r.addr;
		right.addr = hi;
		right.size = r.addr + r.size - hi;
		model_sub_live(m, &r, piece.size, 0);
		range_changed(m, r.addr, range_end(&r));
		memmove(rs->v + i, rs->v + i + 1, (rs->n - i - 1) * sizeof *rs->v);
		rs->n--;
		/* What is left of r on either side stays live, as part of r's mapping. */
		if (left.size && range_insert_at(m, rs, i++, &left))
			return -ENOMEM;
		if (right.size && range_insert_at(m, rs, i++, &right))
			return -ENOMEM;
		if (into && model_stash_add(into, &piece))
			return -ENOMEM;
		if (!origin_alive(rs, &r)) {
			model_sub_live(m, &r, 0, 1);
			if (into)
				into->blocks_gone += !r.excluded;
			else if (!r.excluded)
				model_count_free(m, &r);
		}
	}
	return 0;
}

/* The other half of the mmap address space: committed and reserved
 * mappings share it, and MAP_FIXED, munmap and mremap act on both. */
struct range_set *model_ranges_beside(struct wsp_model *m, unsigned kind)
{
	return kind == WSPROF_KIND_MMAP ? &m->ranges[3] : kind == WSPROF_KIND_MMAP_RESERVED ? &m->ranges[0] : NULL;
}

/* Bytes of [addr, addr+len) a range set holds. */
static uint64_t range_overlap(const struct range_set *rs, uint64_t addr, uint64_t len)
{
	uint64_t end = addr + len < addr ? UINT64_MAX : addr + len, bytes = 0;
	for (size_t i = model_range_first_after(rs, addr); i < rs->n && rs->v[i].addr < end; i++) {
		uint64_t lo = rs->v[i].addr > addr ? rs->v[i].addr : addr;
		uint64_t hi = rs->v[i].addr + rs->v[i].size < end ? rs->v[i].addr + rs->v[i].size : end;
		bytes += hi - lo;
	}
	return bytes;
}

/* Release [addr, addr+len) from a kind's ranges and those beside them. */
int model_ranges_cut(struct wsp_model *m, unsigned kind, uint64_t addr, uint64_t len, struct stash *into)
{
	struct range_set *rs = model_ranges_of(m, kind), *beside = model_ranges_beside(m, kind);
	int err = rs ? range_cut(m, rs, addr, len, into) : 0;
	return err || !beside ? err : range_cut(m, beside, addr, len, into);
}

int model_range_add(struct wsp_model *m, struct range_set *rs, struct wsp_block *b)
{
	struct range_set *beside = model_ranges_beside(m, b->kind);
	/* Committed where address space was reserved: a runtime's heap. */
	if (b->kind == WSPROF_KIND_MMAP && beside && range_overlap(beside, b->addr, b->size))
		b->in_reservation = true;
	int err = model_ranges_cut(m, b->kind, b->addr, b->size, NULL); /* MAP_FIXED over old maps */
	return err ? err : range_insert_at(m, rs, model_range_first_after(rs, b->addr), b);
}

uint64_t wsp_model_mmap_in_reservations(const struct wsp_model *m)
{
	uint64_t bytes = 0;
	for (size_t i = 0; i < m->ranges[0].n; i++) {
		const struct wsp_block *b = &m->ranges[0].v[i];
		bytes += b->in_reservation && !b->excluded ? b->size : 0;
	}
	return bytes;
}
