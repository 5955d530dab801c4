/*
 * layout.c - one memory's address layout at a moment (layout.h): its
 * blocks by address, the holes between them, the largest hole, the
 * breaks between areas, fragmentation; and the words both renderers say
 * them with (`wsprof report state` as text, text/statetext.c, and its
 * map, draw/statemap.c). Nothing here prints or draws.
 */
#include "layout.h"
#include "units.h"

#include "grow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A gap of 64 median blocks, and at least 1 MiB, is no hole: it separates
 * areas of the address space. */
#define BREAK_MEDIANS 64
#define BREAK_MIN (1ull << 20)

bool wsp_memory_kind(unsigned kind)
{
	return kind == WSPROF_KIND_HEAP || kind == WSPROF_KIND_MMAP || kind == WSPROF_KIND_CUDA_DEVICE ||
	       kind == WSPROF_KIND_CUDA_MANAGED || kind == WSPROF_KIND_CUDA_HOST;
}

/* Gaps under this are the allocator's own, not room for anything. */
static uint64_t slack_of(unsigned kind)
{
	switch (kind) {
	case WSPROF_KIND_HEAP: return 32;            /* malloc's chunk header and 16-byte rounding */
	case WSPROF_KIND_CUDA_DEVICE:
	case WSPROF_KIND_CUDA_MANAGED: return 512;   /* cuMemAlloc's alignment */
	default: return 4096;                        /* mappings and pinned memory come in pages */
	}
}

const char *wsp_counted(char *buf, size_t cap, uint64_t n, const char *noun)
{
	char digits[32];
	snprintf(buf, cap, "%s %s%s", wsp_group_digits(digits, sizeof digits, n), noun, n == 1 ? "" : "s");
	return buf;
}

const char *wsp_memory_fragmentation(const struct wsp_memory *m, char *buf, size_t cap)
{
	double pct = m->fragmentation * 100;
	/* Below 1 whenever there is a hole: rounding must not make it 100 %. */
	snprintf(buf, cap, "%.1f %%", pct > 99.9 && m->fragmentation < 1 ? 99.9 : pct);
	return buf;
}

const char *wsp_memory_name(const struct wsp_memory *m, char *buf, size_t cap)
{
	if (m->device >= 0)
		snprintf(buf, cap, "device %d", m->device);
	else
		snprintf(buf, cap, "%s", wsprof_kind_name(m->kind));
	return buf;
}

bool wsp_memory_failed(const struct wsp_state *st, const struct wsp_memory *m)
{
	return st->failed && st->failure.kind == m->kind && st->failure.device == m->device;
}

const char *wsp_memory_verdict(const struct wsp_memory *m, uint64_t request)
{
	if (request <= m->largest_hole)
		return "it fits the largest hole: the allocator refused it for another reason";
	if (request <= m->free_bytes)
		return "the holes add up to enough, but none is large enough: fragmentation";
	return "more than all the holes together: memory is short, not fragmented";
}

static uint64_t end_of(const struct wsp_state_block *r)
{
	return wsp_block_addr(r->b) + r->b->size;
}

uint64_t wsp_memory_gap_before(const struct wsp_memory *m, size_t i, uint64_t *reach)
{
	uint64_t at = wsp_block_addr(m->blocks[i]->b), gap = i && at > *reach ? at - *reach : 0;
	if (!i || end_of(m->blocks[i]) > *reach)
		*reach = end_of(m->blocks[i]);
	return gap;
}

/* The figures of statemap.h from the blocks, in one pass by address. */
static int measure(const struct wsp_state *st, struct wsp_memory *m)
{
	m->estimated = wsp_model_estimated(st->l.model, m->kind);
	m->slack = slack_of(m->kind);
	if (!m->n)
		return 0;
	uint64_t *sizes = malloc(m->n * sizeof *sizes);
	if (!sizes)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++)
		sizes[i] = m->blocks[i]->b->size;
	qsort(sizes, m->n, sizeof *sizes, wsp_cmp_u64);
	uint64_t median = sizes[m->n / 2];
	free(sizes);
	m->break_bytes = median > UINT64_MAX / BREAK_MEDIANS ? UINT64_MAX
			 : median > BREAK_MIN / BREAK_MEDIANS ? median * BREAK_MEDIANS : BREAK_MIN;
	m->lo = wsp_block_addr(m->blocks[0]->b);
	uint64_t reach = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct wsp_state_block *r = m->blocks[i];
		uint64_t gap = wsp_memory_gap_before(m, i, &reach);
		uint64_t bytes = wsp_model_block_bytes(st->l.model, r->b);
		m->live_bytes += bytes;
		m->collectable_bytes += r->ann && r->ann->collectable ? bytes : 0;
		if (gap >= m->break_bytes) {
			m->breaks++;
			m->break_total += gap;
		} else if (gap >= m->slack) {
			m->holes++;
			m->free_bytes += gap;
			if (gap > m->largest_hole) {
				m->largest_hole = gap;
				m->largest_hole_addr = wsp_block_addr(r->b) - gap;
			}
		}
	}
	m->hi = reach;
	m->fragmentation = m->free_bytes ? 1 - (double)m->largest_hole / (double)m->free_bytes : 0;
	for (size_t i = 0, s = 0; i < m->n; i++) {
		uint64_t lo = wsp_block_addr(m->blocks[i]->b), hi = end_of(m->blocks[i]);
		bool pool = false;
		for (; s < m->nsubs && wsp_block_addr(m->subs[s]->b) < hi; s++) {
			if (wsp_block_addr(m->subs[s]->b) >= lo) {
				pool = true;
				m->pooled_bytes += m->subs[s]->b->size;
			}
		}
		m->pools += pool;
	}
	return 0;
}

/* The index of the block that holds addr, or -1. */
static ptrdiff_t holder(const struct wsp_memory *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (wsp_block_addr(m->blocks[mid]->b) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < end_of(m->blocks[lo - 1]) ? (ptrdiff_t)lo - 1 : -1;
}

/* The blocks of one memory, and the pool sub-allocations inside them. */
static int fill(const struct wsp_state *st, struct wsp_memory *m)
{
	size_t bcap = 0, scap = 0;
	for (size_t i = 0; i < st->n; i++) {
		const struct wsp_state_block *r = &st->v[i];
		if (r->b->kind == m->kind && r->device == m->device) {
			if (wsp_grow(&m->blocks, &bcap, m->n + 1, sizeof *m->blocks))
				return -ENOMEM;
			m->blocks[m->n++] = r;
		}
	}
	for (size_t i = 0; i < st->n; i++) {
		const struct wsp_state_block *r = &st->v[i];
		if (r->b->kind == WSPROF_KIND_POOL && holder(m, wsp_block_addr(r->b)) >= 0) {
			if (wsp_grow(&m->subs, &scap, m->nsubs + 1, sizeof *m->subs))
				return -ENOMEM;
			m->subs[m->nsubs++] = r;
		}
	}
	const struct wsp_device_stats *d;
	size_t nd = m->kind == WSPROF_KIND_CUDA_DEVICE ? wsp_model_devices(st->l.model, &d) : 0;
	for (size_t i = 0; i < nd; i++) {
		if (d[i].device == m->device && d[i].samples) {
			m->sampled = true;
			m->device_free = d[i].free_last;
			m->device_total = d[i].total;
		}
	}
	return measure(st, m);
}

/* The memory of the moment: the one that failed, else the kind that peaked. */
static bool of_the_moment(const struct wsp_state *st, const struct wsp_memory *m)
{
	return st->failed ? wsp_memory_failed(st, m) : st->moment_kind == (int)m->kind;
}

static int by_kind_and_device(const void *a, const void *b)
{
	const struct wsp_memory *x = a, *y = b;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return (x->device > y->device) - (x->device < y->device);
}

/* By kind and device, the moment's memory first. @return 0 or -ENOMEM. */
static int order(const struct wsp_state *st, struct wsp_memory *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof *v, by_kind_and_device);
	struct wsp_memory *t = malloc(n * sizeof *t);
	if (!t)
		return -ENOMEM;
	size_t k = 0;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++)
			if (of_the_moment(st, &v[i]) == !pass)
				t[k++] = v[i];
	memcpy(v, t, n * sizeof *v);
	free(t);
	return 0;
}

static bool known(const struct wsp_memory *v, size_t n, unsigned kind, int device)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].kind == kind && v[i].device == device)
			return true;
	return false;
}

int wsp_memories(const struct wsp_state *st, int kind, struct wsp_memory **out, size_t *n)
{
	struct wsp_memory *v = NULL;
	size_t nv = 0, cap = 0;
	*out = NULL;
	*n = 0;
	for (size_t i = 0; i <= st->n; i++) {
		unsigned k;
		int device;
		if (i < st->n) {
			k = st->v[i].b->kind;
			device = st->v[i].device;
		} else if (st->failed) { /* the memory asked for, even with nothing in it */
			k = st->failure.kind;
			device = st->failure.device;
		} else {
			break;
		}
		if (!wsp_memory_kind(k) || (kind >= 0 && k != (unsigned)kind) || known(v, nv, k, device))
			continue;
		if (wsp_grow(&v, &cap, nv + 1, sizeof *v)) {
			wsp_memories_free(v, nv);
			return -ENOMEM;
		}
		v[nv++] = (struct wsp_memory){ .kind = k, .device = device };
	}
	for (size_t i = 0; i < nv; i++) {
		if (fill(st, &v[i])) {
			wsp_memories_free(v, nv);
			return -ENOMEM;
		}
	}
	if (order(st, v, nv)) {
		wsp_memories_free(v, nv);
		return -ENOMEM;
	}
	*out = v;
	*n = nv;
	return 0;
}

void wsp_memories_free(struct wsp_memory *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].blocks);
		free(m[i].subs);
	}
	free(m);
}
