/*
 * books.c - the model's books checked against its blocks: wsp_model_check
 * adds up the live set and compares every running total the model keeps
 * with the sum (model.h says what each counts). Any build may call it (the
 * unit tests do); the checked build and the fuzz target call it as they
 * apply events (model.c, WSP_ASSERT), often enough to catch a broken rule
 * near the event that broke it and seldom enough to cost O(1) an event.
 */
#include "model_internal.h"

#include <stdio.h>
#include <stdlib.h>

static _Thread_local char why[320];

#define BROKEN(...) (snprintf(why, sizeof why, __VA_ARGS__), why)

struct sums {
	uint64_t bytes, blocks, collectable, site_bytes, site_blocks;
};

/* The range set a range kind's blocks live in (model.c, ranges_of). */
static int range_set_of(unsigned kind)
{
	switch (kind) {
	case WSPROF_KIND_MMAP: return 0;
	case WSPROF_KIND_CUDA_VMM_MAPPED: return 1;
	case WSPROF_KIND_CUDA_VMM_RESERVED: return 2;
	case WSPROF_KIND_MMAP_RESERVED: return 3;
	default: return -1;
	}
}

/* The hash table and the dense array name each other, every key is found
 * where a probe looks for it, and the freed places are the empty ones. */
static const char *check_heap_table(const struct wsp_model *m)
{
	size_t used = 0;
	for (size_t i = 0; i < m->heap_cap; i++) {
		if (!m->heap_keys[i])
			continue;
		used++;
		uint32_t at = m->heap_block[i];
		if (at >= m->nblocks)
			return BROKEN("heap slot %zu names block %u of %zu", i, at, m->nblocks);
		if (m->blocks[at].addr != m->heap_keys[i] || m->block_slot[at] != i)
			return BROKEN("heap slot %zu and block %u do not name each other", i, at);
		if (model_heap_find((struct wsp_model *)m, m->heap_keys[i]) != &m->blocks[at])
			return BROKEN("heap key %#llx in slot %zu is not where a probe finds it",
				      (unsigned long long)m->heap_keys[i], i);
	}
	if (used != m->heap_used)
		return BROKEN("heap table holds %zu keys, heap_used says %zu", used, m->heap_used);
	if (m->nblocks - m->nfree_blocks != m->heap_used)
		return BROKEN("%zu blocks less %zu freed places is not heap_used %zu", m->nblocks, m->nfree_blocks,
			      m->heap_used);
	for (size_t j = 0; j < m->nfree_blocks; j++)
		if (m->free_blocks[j] >= m->nblocks || m->blocks[m->free_blocks[j]].addr)
			return BROKEN("freed place %u is not an empty block", m->free_blocks[j]);
	return NULL;
}

/* Each range set holds its kinds' ranges, sorted by address, apart. */
static const char *check_ranges(const struct wsp_model *m)
{
	for (int r = 0; r < 4; r++) {
		const struct range_set *rs = &m->ranges[r];
		for (size_t i = 0; i < rs->n; i++) {
			const struct wsp_block *b = &rs->v[i];
			if (range_set_of(b->kind) != r)
				return BROKEN("a range of kind %u in range set %d", b->kind, r);
			if (!b->size)
				return BROKEN("an empty range at %#llx in range set %d", (unsigned long long)b->addr, r);
			if (i && (rs->v[i - 1].addr + rs->v[i - 1].size < rs->v[i - 1].addr ||
				  rs->v[i - 1].addr + rs->v[i - 1].size > b->addr))
				return BROKEN("ranges %#llx+%llu and %#llx+%llu of set %d overlap or are out of order",
					      (unsigned long long)rs->v[i - 1].addr, (unsigned long long)rs->v[i - 1].size,
					      (unsigned long long)b->addr, (unsigned long long)b->size, r);
		}
	}
	return NULL;
}

static int mapping_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] != y[1] ? (x[1] < y[1] ? -1 : 1) : 0;
}

/* The mappings a range set's counted pieces belong to: each (origin,
 * origin_size) once. @return the count, or SIZE_MAX without memory. */
static size_t count_mappings(const struct range_set *rs, unsigned kind)
{
	uint64_t(*o)[2] = malloc((rs->n ? rs->n : 1) * sizeof *o);
	if (!o)
		return SIZE_MAX;
	size_t n = 0, distinct = 0;
	for (size_t i = 0; i < rs->n; i++)
		if (rs->v[i].kind == kind && !rs->v[i].excluded) {
			o[n][0] = rs->v[i].origin;
			o[n++][1] = rs->v[i].origin_size;
		}
	qsort(o, n, sizeof *o, mapping_cmp);
	for (size_t i = 0; i < n; i++)
		distinct += !i || mapping_cmp(o[i - 1], o[i]);
	free(o);
	return distinct;
}

static void add_block(const struct wsp_model *m, const struct wsp_block *b, struct sums *s)
{
	if (b->excluded || b->kind >= WSPROF_KIND_COUNT)
		return;
	uint64_t bytes = wsp_model_block_bytes(m, b);
	s[b->kind].bytes += bytes;
	if (range_set_of(b->kind) < 0)
		s[b->kind].blocks += wsp_model_block_count(m, b);
	const struct ann *a = b->has_ann ? model_ann_find(m, b->addr) : NULL;
	if (a && a->st.collectable)
		s[b->kind].collectable += bytes;
}

/* Every annotation belongs to a live heap block that knows it has one. */
static const char *check_anns(const struct wsp_model *m)
{
	size_t used = 0;
	for (size_t i = 0; i < m->ann_cap; i++) {
		if (!m->anns[i].key)
			continue;
		used++;
		const struct wsp_block *b = model_heap_find((struct wsp_model *)m, m->anns[i].key);
		if (!b || !b->has_ann)
			return BROKEN("an annotation of %#llx, which is not a live annotated block",
				      (unsigned long long)m->anns[i].key);
	}
	return used == m->ann_used ? NULL : BROKEN("%zu annotations, ann_used says %zu", used, m->ann_used);
}

/* A kind's running totals against the sums over its live blocks. */
static const char *check_kind(const struct wsp_model *m, unsigned kind, const struct sums *s, uint64_t pending)
{
	const struct wsp_kind_stats *k = &m->kinds[kind];
	if (k->peak_bytes < k->live_bytes)
		return BROKEN("kind %u: peak %llu below live %llu", kind, (unsigned long long)k->peak_bytes,
			      (unsigned long long)k->live_bytes);
	if (kind == WSPROF_KIND_HEAP && m->heap_counted)
		return NULL; /* its totals are the counted ones now (count_heap), not the blocks' */
	if (k->live_bytes != s->bytes)
		return BROKEN("kind %u: live bytes %llu, its live blocks hold %llu", kind,
			      (unsigned long long)k->live_bytes, (unsigned long long)s->bytes);
	if (k->live_blocks != s->blocks)
		return BROKEN("kind %u: live blocks %llu, counted %llu", kind, (unsigned long long)k->live_blocks,
			      (unsigned long long)s->blocks);
	if (k->collectable_bytes != s->collectable)
		return BROKEN("kind %u: collectable bytes %llu, its collectable blocks hold %llu", kind,
			      (unsigned long long)k->collectable_bytes, (unsigned long long)s->collectable);
	if (k->in_use_peak_bytes < k->live_bytes - k->collectable_bytes)
		return BROKEN("kind %u: in-use peak %llu below in use now %llu", kind,
			      (unsigned long long)k->in_use_peak_bytes,
			      (unsigned long long)(k->live_bytes - k->collectable_bytes));
	if (m->per_stack && (s->site_bytes != k->live_bytes || s->site_blocks != k->live_blocks))
		return BROKEN("kind %u: its sites hold %llu bytes in %llu blocks, the kind %llu in %llu", kind,
			      (unsigned long long)s->site_bytes, (unsigned long long)s->site_blocks,
			      (unsigned long long)k->live_bytes, (unsigned long long)k->live_blocks);
	/* Each allocation is freed once at most: what was allocated covers
	 * what was freed, what lives and what a realloc has in flight. */
	if (range_set_of(kind) < 0 && k->allocations < k->frees + k->live_blocks + pending)
		return BROKEN("kind %u: %llu allocations, but %llu frees, %llu live and %llu in flight", kind,
			      (unsigned long long)k->allocations, (unsigned long long)k->frees,
			      (unsigned long long)k->live_blocks, (unsigned long long)pending);
	return NULL;
}

const char *wsp_model_check(const struct wsp_model *m)
{
	const char *broken = check_heap_table(m);
	if (!broken)
		broken = check_ranges(m);
	if (!broken)
		broken = check_anns(m);
	if (broken)
		return broken;
	struct sums s[WSPROF_KIND_COUNT] = { 0 };
	uint64_t pending[WSPROF_KIND_COUNT] = { 0 };
	for (size_t i = 0; i < m->nblocks; i++) {
		const struct wsp_block *b = &m->blocks[i];
		if (!b->addr)
			continue;
		if (range_set_of(b->kind) >= 0)
			return BROKEN("a range of kind %u among the heap blocks", b->kind);
		add_block(m, b, s);
	}
	for (int r = 0; r < 4; r++)
		for (size_t i = 0; i < m->ranges[r].n; i++)
			add_block(m, &m->ranges[r].v[i], s);
	for (unsigned kind = 0; kind < WSPROF_KIND_COUNT; kind++) {
		int r = range_set_of(kind);
		if (r < 0)
			continue;
		size_t n = count_mappings(&m->ranges[r], kind);
		if (n == SIZE_MAX)
			return NULL; /* out of memory: nothing checked */
		s[kind].blocks = n;
	}
	for (size_t i = 0; i < m->nstashes; i++) {
		const struct stash *st = &m->stashes[i];
		if (!st->used)
			continue;
		for (size_t j = 0; j < i; j++)
			if (m->stashes[j].used && m->stashes[j].tid == st->tid)
				return BROKEN("thread %u has two reallocs in flight", st->tid);
		for (size_t j = 0; j < st->n; j++)
			if (!st->blocks[j].excluded && st->blocks[j].kind < WSPROF_KIND_COUNT) {
				pending[st->blocks[j].kind] += wsp_model_block_count(m, &st->blocks[j]);
				break; /* move_done counts one free for the whole stash */
			}
	}
	for (size_t i = 0; m->per_stack && i < m->nsites; i++) {
		const struct site *st = &m->sites[i];
		if (st->kind < WSPROF_KIND_COUNT) {
			s[st->kind].site_bytes += st->live;
			s[st->kind].site_blocks += st->live_blocks;
		}
	}
	for (unsigned kind = 0; kind < WSPROF_KIND_COUNT; kind++)
		if ((broken = check_kind(m, kind, &s[kind], pending[kind])))
			return broken;
	return NULL;
}
