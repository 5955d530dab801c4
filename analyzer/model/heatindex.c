/*
 * heatindex.c - the heatmaps' index of live blocks (heatgrid.h): a treap
 * per layer of blocks that never overlap one another, followed event by
 * event during the grid's second pass and built again from the model when
 * a change is too intricate to heat_follow, so that each access sample's
 * regions are split among the blocks (and their rows) live then.
 */
#include "heatgrid.h"

#include "grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- the index of live blocks ---------------------------------------------- */

static uint32_t node_new(struct index *x, uint64_t lo, uint64_t hi)
{
	uint32_t i = x->free;
	if (i) {
		x->free = x->v[i - 1].left;
	} else {
		if (x->n >= UINT32_MAX - 1 || wsp_grow(&x->v, &x->cap, x->n + 1, sizeof *x->v))
			return 0;
		i = (uint32_t)++x->n;
	}
	x->seed = x->seed * 1664525u + 1013904223u;
	x->v[i - 1] = (struct node){ .lo = lo, .hi = hi, .prio = x->seed, .weight = 1 };
	return i;
}

#define N(i) (x->v[(i) - 1])

/* Split t into the nodes starting before key (*l) and the others (*r). */
static void treap_split(struct index *x, uint32_t t, uint64_t key, uint32_t *l, uint32_t *r)
{
	if (!t) {
		*l = *r = 0;
	} else if (N(t).lo < key) {
		treap_split(x, N(t).right, key, &N(t).right, r);
		*l = t;
	} else {
		treap_split(x, N(t).left, key, l, &N(t).left);
		*r = t;
	}
}

/* Join l and r, every node of l starting before those of r. */
static uint32_t treap_merge(struct index *x, uint32_t l, uint32_t r)
{
	if (!l || !r)
		return l ? l : r;
	if (N(l).prio > N(r).prio) {
		N(l).right = treap_merge(x, N(l).right, r);
		return l;
	}
	N(r).left = treap_merge(x, l, N(r).left);
	return r;
}

/* Take out the node starting at lo, if any: back to the free ones. */
static void index_remove(struct index *x, enum layer layer, uint64_t lo)
{
	uint32_t l, mid, r;
	treap_split(x, x->root[layer], lo, &l, &r);
	treap_split(x, r, lo + 1, &mid, &r);
	if (mid) { /* one node: starts are distinct in a layer */
		N(mid).left = x->free;
		x->free = mid;
	}
	x->root[layer] = treap_merge(x, l, r);
}

/* Add a block, in place of one starting at the same address. @return its node, 0 without memory. */
static uint32_t index_insert(struct index *x, enum layer layer, uint64_t lo, uint64_t hi)
{
	index_remove(x, layer, lo);
	uint32_t i = node_new(x, lo, hi), l, r;
	if (!i)
		return 0;
	treap_split(x, x->root[layer], lo, &l, &r);
	x->root[layer] = treap_merge(x, treap_merge(x, l, i), r);
	return i;
}

/* The node starting last at or before addr, 0 if none. */
static uint32_t index_floor(const struct index *x, enum layer layer, uint64_t addr)
{
	uint32_t best = 0;
	for (uint32_t t = x->root[layer]; t;) {
		if (N(t).lo <= addr) {
			best = t;
			t = N(t).right;
		} else {
			t = N(t).left;
		}
	}
	return best;
}

static enum layer layer_of_block(const struct wsp_block *b)
{
	if (b->kind == WSPROF_KIND_POOL)
		return LAYER_POOL;
	if (wsp_block_space(b) == WSP_SPACE_REGISTERED)
		return LAYER_REGISTERED;
	return b->kind == WSPROF_KIND_CUDA_VMM_MAPPED ? LAYER_MAPPED : LAYER_MEMORY;
}

static enum layer layer_of_event(const wsprof_event *ev)
{
	if (ev->kind == WSPROF_KIND_POOL)
		return LAYER_POOL;
	if (ev->kind == WSPROF_KIND_CUDA_HOST &&
	    (ev->op == WSPROF_OP_CU_MEM_HOST_REGISTER || ev->op == WSPROF_OP_CU_MEM_HOST_UNREGISTER))
		return LAYER_REGISTERED;
	return ev->kind == WSPROF_KIND_CUDA_VMM_MAPPED ? LAYER_MAPPED : LAYER_MEMORY;
}

/* Whether the address view splits accesses by block (a kind asked for)
 * rather than taking every accessed byte. */
static bool address_by_block(const struct heat *h)
{
	return h->views[WSP_HEAT_BY_ADDRESS].wanted && h->opt->kind >= 0;
}

/* Whether accesses are split by block at all. */
bool heat_needs_index(const struct heat *h)
{
	return h->views[WSP_HEAT_BY_CALLSITE].wanted || h->views[WSP_HEAT_BY_NAME].wanted || address_by_block(h);
}

void heat_unnamed_row(struct heat *h, uint32_t *row)
{
	struct view *v = &h->views[WSP_HEAT_BY_NAME];
	if (v->unnamed < 0 && (v->unnamed = heat_row_new(h, v, "(unnamed memory)", ROW_UNNAMED)) < 0)
		h->err = -ENOMEM;
	*row = (uint32_t)v->unnamed;
}

static void index_block(const struct wsp_block *b, void *arg)
{
	struct heat *h = arg;
	if (h->err || b->excluded || !kind_wanted(h->opt->kind, b->kind) || !b->size)
		return;
	uint64_t lo = wsp_block_addr(b);
	uint32_t i = index_insert(&h->index, layer_of_block(b), lo, lo + b->size);
	if (!i) {
		h->err = -ENOMEM;
		return;
	}
	struct node *nd = &h->index.v[i - 1];
	nd->weight = (float)((double)wsp_model_block_bytes(h->l.model, b) / (double)b->size);
	if (h->views[WSP_HEAT_BY_CALLSITE].wanted) {
		long r = heat_row_of_stack(h, b->stack);
		h->err = r < 0 ? -ENOMEM : h->err;
		nd->row[WSP_HEAT_BY_CALLSITE] = (uint32_t)r;
	}
	if (h->views[WSP_HEAT_BY_NAME].wanted) {
		long r = heat_row_of_name(h, b);
		h->err = r < 0 ? -ENOMEM : h->err;
		nd->row[WSP_HEAT_BY_NAME] = (uint32_t)r;
	}
}

/* The live blocks as the model has them now, when the index fell behind. */
int heat_index_rebuild(struct heat *h)
{
	if (!h->stale)
		return 0;
	struct index *x = &h->index;
	x->n = 0;
	x->free = 0;
	memset(x->root, 0, sizeof x->root);
	wsp_model_each_live(h->l.model, index_block, h);
	h->stale = false;
	return h->err;
}

/* A block allocated: into the index, with its site's row. */
static void index_alloc(struct heat *h, const wsprof_event *ev)
{
	uint64_t hi = ev->addr + ev->size < ev->addr ? UINT64_MAX : ev->addr + ev->size;
	uint32_t i = index_insert(&h->index, layer_of_event(ev), ev->addr, hi);
	if (!i) {
		h->err = -ENOMEM;
		return;
	}
	uint32_t *row = h->index.v[i - 1].row;
	if (wsp_model_estimated(h->l.model, ev->kind))
		h->index.v[i - 1].weight =
			(float)(1 / wsp_sample_probability(wsprof_trace_process(h->l.trace)->sample_bytes, ev->size));
	if (h->views[WSP_HEAT_BY_CALLSITE].wanted) {
		long r = heat_row_of_stack(h, ev->stack);
		h->err = r < 0 ? -ENOMEM : h->err;
		row[WSP_HEAT_BY_CALLSITE] = (uint32_t)r;
	}
	if (h->views[WSP_HEAT_BY_NAME].wanted)
		heat_unnamed_row(h, &row[WSP_HEAT_BY_NAME]); /* new memory has no name yet */
}

/* A name given to the block at addr: a pool sub-allocation there first,
 * else the block around it, as the model names blocks. */
static void index_rename(struct heat *h, const wsprof_event *ev)
{
	static const enum layer order[] = { LAYER_POOL, LAYER_MEMORY, LAYER_REGISTERED, LAYER_MAPPED };
	struct index *x = &h->index;
	for (size_t k = 0; k < LAYERS; k++) {
		uint32_t t = index_floor(x, order[k], ev->addr);
		if (!t || N(t).hi <= ev->addr)
			continue;
		if (ev->text && ev->text[0]) {
			long r = heat_row_of_key(h, &h->views[WSP_HEAT_BY_NAME], ev->text, NULL);
			h->err = r < 0 ? -ENOMEM : h->err;
			N(t).row[WSP_HEAT_BY_NAME] = (uint32_t)r;
		} else {
			heat_unnamed_row(h, &N(t).row[WSP_HEAT_BY_NAME]);
		}
		return;
	}
}

/* Follow a change of the live set in the index, or mark it stale. */
void heat_follow(struct heat *h, const wsprof_event *ev)
{
	if (h->stale || !heat_needs_index(h))
		return;
	switch (ev->type) {
	case WSPROF_EV_ALLOC:
	case WSPROF_EV_FREE:
	case WSPROF_EV_MOVE: /* realloc: the old block leaves */
		if (!kind_wanted(h->opt->kind, ev->kind))
			return;
		/* Ranges are cut and joined, stream-ordered calls take effect later, and in
		 * a sampled trace a realloc's FREE ends its MOVE: ask the model. */
		if (ev->kind == WSPROF_KIND_MMAP || ev->kind == WSPROF_KIND_CUDA_VMM_MAPPED || ev->stream ||
		    (ev->type == WSPROF_EV_FREE && wsprof_trace_process(h->l.trace)->sample_bytes &&
		     (ev->op == WSPROF_OP_REALLOC || ev->op == WSPROF_OP_REALLOCARRAY)))
			h->stale = true;
		else if (ev->type == WSPROF_EV_ALLOC)
			index_alloc(h, ev);
		else
			index_remove(&h->index, layer_of_event(ev), ev->addr);
		break;
	case WSPROF_EV_FAIL: /* a failed realloc or mremap puts the old block back */
		h->stale |= ev->op == WSPROF_OP_REALLOC || ev->op == WSPROF_OP_REALLOCARRAY || ev->op == WSPROF_OP_MREMAP;
		break;
	case WSPROF_EV_UNMAP:
	case WSPROF_EV_STREAM_REACHED:
	case WSPROF_EV_EXEC:
		h->stale = true;
		break;
	case WSPROF_EV_ANNOTATE:
		if (ev->op == WSPROF_ANN_POOL_RESET)
			h->stale = true;
		else if (ev->op == WSPROF_ANN_NAME && h->views[WSP_HEAT_BY_NAME].wanted)
			index_rename(h, ev);
		break;
	}
}

/* The bytes of [lo, hi) in node t's block, to its rows. */

static void split_block(struct heat *h, const struct node *nd, uint64_t lo, uint64_t hi, int *err)
{
	uint64_t p = nd->lo > lo ? nd->lo : lo, q = nd->hi < hi ? nd->hi : hi;
	if (q <= p)
		return;
	if (address_by_block(h))
		heat_bands_add(&h->views[WSP_HEAT_BY_ADDRESS], p, q, err);
	for (int by = WSP_HEAT_BY_CALLSITE; by <= WSP_HEAT_BY_NAME; by++)
		if (h->views[by].wanted)
			heat_touch_row(&h->views[by], (long)nd->row[by], (double)(q - p) * nd->weight, err);
}

/* The blocks of subtree t starting in [from, hi), in order. */
static void split_subtree(struct heat *h, uint32_t t, uint64_t from, uint64_t lo, uint64_t hi, int *err)
{
	struct index *x = &h->index;
	if (!t)
		return;
	if (N(t).lo > from)
		split_subtree(h, N(t).left, from, lo, hi, err);
	if (N(t).lo >= from && N(t).lo < hi)
		split_block(h, &N(t), lo, hi, err);
	if (N(t).lo < hi)
		split_subtree(h, N(t).right, from, lo, hi, err);
}

/* One region of an access sample, into the pending bytes of the rows. */
void heat_split_region(struct heat *h, uint64_t lo, uint64_t hi, int *err)
{
	struct view *va = &h->views[WSP_HEAT_BY_ADDRESS];
	if (va->wanted && !address_by_block(h))
		heat_bands_add(va, lo, hi, err);
	if (!heat_needs_index(h))
		return;
	for (int layer = 0; layer < LAYERS; layer++) {
		/* Blocks never overlap within a layer: only the one starting last before lo can reach into it. */
		uint32_t first = index_floor(&h->index, (enum layer)layer, lo);
		uint64_t from = first ? h->index.v[first - 1].lo : 0;
		split_subtree(h, h->index.root[layer], from, lo, hi, err);
	}
}

#undef N

