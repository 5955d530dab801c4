/*
 * heap.c - the heap table: the blocks found by their key (every kind but
 * the address ranges of ranges.c), in a dense array found through an
 * open-addressing hash table of their keys (model_internal.h). A block
 * keeps its place in the array while it lives; places freed are taken
 * again first; no live key is 0, which marks an empty slot.
 */
#include "model_internal.h"

#include "grow.h"

#include <errno.h>
#include <stdlib.h>

/* Up to this many slots (384 KiB) the heap table is kept sparse. */
#define HEAP_SPARSE_SLOTS (1u << 15)

/* The slot of addr's block, or the empty slot that ends its probe run. */
size_t model_heap_probe(const struct wsp_model *m, uint64_t addr)
{
	size_t i = hash64(addr, m->heap_cap);
	while (m->heap_keys[i] && m->heap_keys[i] != addr)
		i = (i + 1) & (m->heap_cap - 1);
	return i;
}

/* The live block in slot i of the table, or NULL. */
struct wsp_block *model_heap_at(const struct wsp_model *m, size_t i)
{
	return m->heap_keys[i] ? &m->blocks[m->heap_block[i]] : NULL;
}

struct wsp_block *model_heap_find(struct wsp_model *m, uint64_t addr)
{
	return m->heap_cap ? model_heap_at(m, model_heap_probe(m, addr)) : NULL;
}

/* The table at cap slots (a power of two, room for every key). */
static int heap_resize(struct wsp_model *m, size_t cap)
{
	uint64_t *keys = calloc(cap, sizeof *keys);
	uint32_t *block = calloc(cap, sizeof *block);
	if (!keys || !block) {
		free(keys);
		free(block);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->heap_cap; i++) {
		if (!m->heap_keys[i])
			continue;
		size_t j = hash64(m->heap_keys[i], cap);
		while (keys[j])
			j = (j + 1) & (cap - 1);
		keys[j] = m->heap_keys[i];
		block[j] = m->heap_block[i];
		m->block_slot[block[j]] = (uint32_t)j;
	}
	free(m->heap_keys);
	free(m->heap_block);
	m->heap_keys = keys;
	m->heap_block = block;
	m->heap_cap = cap;
	return 0;
}

static int heap_grow(struct wsp_model *m)
{
	return heap_resize(m, m->heap_cap ? m->heap_cap * 2 : 1024);
}

int model_heap_reserve(struct wsp_model *m, size_t n)
{
	size_t cap = m->heap_cap ? m->heap_cap : 1024;
	while ((n + 1) * (cap <= HEAP_SPARSE_SLOTS ? 8 : 2) > cap)
		cap *= 2;
	size_t c1 = m->blocks_cap, c2 = m->blocks_cap;
	if (wsp_grow(&m->blocks, &c1, n, sizeof *m->blocks) || wsp_grow(&m->block_slot, &c2, n, sizeof *m->block_slot) ||
	    wsp_grow(&m->free_blocks, &m->blocks_cap, n, sizeof *m->free_blocks))
		return -ENOMEM;
	return cap > m->heap_cap ? heap_resize(m, cap) : 0;
}

/* Insert b at slot j, the empty end of its probe run (SIZE_MAX: find it). */
int model_heap_insert_at(struct wsp_model *m, const struct wsp_block *b, size_t j)
{
	/* At most an eighth full while the table is small, half beyond: short
	 * probe runs (BENCHMARKS.md, Profiles, "the measurements behind the
	 * defaults"). */
	size_t fill = m->heap_cap <= HEAP_SPARSE_SLOTS ? 8 : 2;
	if ((m->heap_used + 1) * fill > m->heap_cap) {
		if (heap_grow(m))
			return -ENOMEM;
		j = SIZE_MAX;
	}
	size_t at;
	if (m->nfree_blocks) {
		at = m->free_blocks[--m->nfree_blocks];
	} else {
		/* The three grow alike: the stack of freed places has room for them all. */
		size_t c1 = m->blocks_cap, c2 = m->blocks_cap, need = m->nblocks + 1;
		if (m->nblocks >= UINT32_MAX || wsp_grow(&m->blocks, &c1, need, sizeof *m->blocks) ||
		    wsp_grow(&m->block_slot, &c2, need, sizeof *m->block_slot) ||
		    wsp_grow(&m->free_blocks, &m->blocks_cap, need, sizeof *m->free_blocks))
			return -ENOMEM;
		at = m->nblocks++;
	}
	if (j == SIZE_MAX)
		j = model_heap_probe(m, b->addr);
	m->blocks[at] = *b;
	m->blocks[at].ordered = false;
	m->heap_keys[j] = b->addr;
	m->heap_block[j] = (uint32_t)at;
	m->block_slot[at] = (uint32_t)j;
	m->heap_used++;
	if (!model_treap_of(m, b->addr))
		return 0;
	/* A trace whose treaps are asked seldom lists no more than the blocks live. */
	if (m->nunordered >= (m->heap_used > 65536 ? m->heap_used : 65536) && model_order_new(m))
		return -ENOMEM;
	if (wsp_grow(&m->unordered, &m->unordered_cap, m->nunordered + 1, sizeof *m->unordered))
		return -ENOMEM;
	m->unordered[m->nunordered++] = (uint32_t)at;
	return 0;
}

int model_heap_add(struct wsp_model *m, const struct wsp_block *b)
{
	return model_heap_insert_at(m, b, SIZE_MAX);
}

/* Remove a found block, shifting later members of its probe run back. */
void model_heap_remove(struct wsp_model *m, struct wsp_block *b)
{
	if (b->has_ann)
		model_ann_drop(m, b);
	struct treap *t = b->ordered ? model_treap_of(m, b->addr) : NULL;
	if (t)
		model_treap_remove(t, b->addr);
	size_t at = (size_t)(b - m->blocks), mask = m->heap_cap - 1, i = m->block_slot[at];
	for (size_t j = (i + 1) & mask; m->heap_keys[j]; j = (j + 1) & mask) {
		size_t home = hash64(m->heap_keys[j], m->heap_cap);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->heap_keys[i] = m->heap_keys[j];
			m->heap_block[i] = m->heap_block[j];
			m->block_slot[m->heap_block[i]] = (uint32_t)i;
			i = j;
		}
	}
	m->heap_keys[i] = 0;
	m->heap_used--;
	b->addr = 0;
	m->free_blocks[m->nfree_blocks++] = (uint32_t)at;
}

/* Blocks found by address share one table, in four name spaces (the top
 * two bits of the key): memory (heap, device, managed, pinned host),
 * registered host ranges (a malloc'd buffer may also be registered), VMM
 * handles (opaque numbers) and pool sub-allocations (inside other blocks). */
uint64_t model_block_key(unsigned kind, unsigned op, uint64_t addr)
{
	enum wsp_key_space space = WSP_SPACE_MEMORY;
	if (kind == WSPROF_KIND_POOL)
		space = WSP_SPACE_POOL;
	else if (kind == WSPROF_KIND_CUDA_VMM)
		space = WSP_SPACE_HANDLE;
	else if (kind == WSPROF_KIND_CUDA_HOST &&
		 (op == WSPROF_OP_CU_MEM_HOST_REGISTER || op == WSPROF_OP_CU_MEM_HOST_UNREGISTER))
		space = WSP_SPACE_REGISTERED;
	return wsp_key_in(space, addr);
}

size_t wsp_model_place(const struct wsp_model *m, const struct wsp_block *b)
{
	return b >= m->blocks && b < m->blocks + m->nblocks ? (size_t)(b - m->blocks) : SIZE_MAX;
}
