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

#define N(i) (x->v[(i) - 1])

/* Take out the node starting at lo, if any. */
static void index_remove(struct index *x, enum layer layer, uint64_t lo)
{
	wsp_treap_remove(&x->pool, &x->root[layer], lo);
}

/* Add a block, in place of one starting at the same address. @return its node, 0 without memory. */
static uint32_t index_insert(struct index *x, enum layer layer, uint64_t lo, uint64_t hi)
{
	uint32_t i = wsp_treap_insert(&x->pool, &x->root[layer], lo);
	if (!i || wsp_grow(&x->v, &x->cap, i, sizeof *x->v))
		return 0;
	N(i) = (struct node){ .lo = lo, .hi = hi, .weight = 1 };
	return i;
}

/* The node starting last at or before addr, 0 if none. */
static uint32_t index_floor(const struct index *x, enum layer layer, uint64_t addr)
{
	return wsp_treap_floor(&x->pool, x->root[layer], addr);
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

/* A block of the live set, for the index being built again. */
struct pending {
	enum layer layer;
	size_t seq;           /* the order blocks came in: the last of one start wins */
	struct node node;
};

struct rebuilding {
	struct heat *h;
	struct pending *v;
	size_t n, cap;
};

/* Whether a live block of the model belongs in the index. */
static bool indexed(const struct heat *h, const struct wsp_block *b)
{
	return !h->err && !b->excluded && kind_wanted(h->opt->kind, b->kind) && b->size;
}

/* A live block of the model as a node of the index. */
static struct node node_of_block(struct heat *h, const struct wsp_block *b)
{
	uint64_t lo = wsp_block_addr(b);
	struct node nd = { .lo = lo, .hi = lo + b->size, .range = wsp_kind_is_range(b->kind) };
	nd.weight = (float)((double)wsp_model_block_bytes(h->l.model, b) / (double)b->size);
	if (h->views[WSP_HEAT_BY_CALLSITE].wanted) {
		long r = heat_row_of_stack(h, b->stack);
		h->err = r < 0 ? -ENOMEM : h->err;
		nd.row[WSP_HEAT_BY_CALLSITE] = (uint32_t)r;
	}
	if (h->views[WSP_HEAT_BY_NAME].wanted) {
		long r = heat_row_of_name(h, b);
		h->err = r < 0 ? -ENOMEM : h->err;
		nd.row[WSP_HEAT_BY_NAME] = (uint32_t)r;
	}
	return nd;
}

static void index_block(const struct wsp_block *b, void *arg)
{
	struct rebuilding *rb = arg;
	struct heat *h = rb->h;
	if (!indexed(h, b))
		return;
	if (wsp_grow(&rb->v, &rb->cap, rb->n + 1, sizeof *rb->v)) {
		h->err = -ENOMEM;
		return;
	}
	rb->v[rb->n] = (struct pending){ layer_of_block(b), rb->n, node_of_block(h, b) };
	rb->n++;
}

static int by_layer_start(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;
	if (x->layer != y->layer)
		return x->layer < y->layer ? -1 : 1;
	if (x->node.lo != y->node.lo)
		return x->node.lo < y->node.lo ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The live blocks as the model has them now, when the index fell behind:
 * gathered, sorted, and each layer's tree made at once (inserting them
 * one by one was most of a long report's time). */
int heat_index_rebuild(struct heat *h)
{
	if (!h->stale)
		return 0;
	struct index *x = &h->index;
	wsp_tpool_free(&x->pool); /* every node is the model's again */
	memset(x->root, 0, sizeof x->root);
	struct rebuilding rb = { h, NULL, 0, 0 };
	wsp_model_each_live(h->l.model, index_block, &rb);
	if (!h->err && rb.n)
		qsort(rb.v, rb.n, sizeof *rb.v, by_layer_start);
	/* One block per start in a layer, the last that came (as inserting them would). */
	size_t n = 0;
	for (size_t i = 0; i < rb.n; i++) {
		if (n && rb.v[n - 1].layer == rb.v[i].layer && rb.v[n - 1].node.lo == rb.v[i].node.lo)
			n--;
		rb.v[n++] = rb.v[i];
	}
	uint64_t *keys = n ? malloc(n * sizeof *keys) : NULL;
	uint32_t *nodes = n ? malloc(n * sizeof *nodes) : NULL;
	if (n && (!keys || !nodes))
		h->err = -ENOMEM;
	for (size_t i = 0; i < n; i++)
		keys[i] = rb.v[i].node.lo;
	for (size_t a = 0, b; !h->err && a < n; a = b) {
		for (b = a; b < n && rb.v[b].layer == rb.v[a].layer; b++)
			;
		if (wsp_treap_build(&x->pool, &x->root[rb.v[a].layer], keys + a, b - a, nodes + a) ||
		    wsp_grow(&x->v, &x->cap, x->pool.n, sizeof *x->v)) {
			h->err = -ENOMEM;
			break;
		}
		for (size_t i = a; i < b; i++)
			x->v[nodes[i] - 1] = rb.v[i].node;
	}
	free(keys);
	free(nodes);
	free(rb.v);
	h->stale = false;
	uint64_t lo, hi; /* the ranges as they are now are in it */
	wsp_model_ranges_changed(h->l.model, &lo, &hi);
	return h->err;
}

/* ---- ranges followed in their span ------------------------------------------ */

struct resync {
	struct heat *h;
	uint64_t lo;          /* the span's start */
	uint64_t *keys;       /* range nodes of a layer overlapping the span, to take out */
	size_t n, cap;
};

static void gather_range_node(uint32_t node, void *arg)
{
	struct resync *rs = arg;
	const struct node *nd = &rs->h->index.v[node - 1];
	if (!nd->range || nd->hi <= rs->lo)
		return;
	if (wsp_grow(&rs->keys, &rs->cap, rs->n + 1, sizeof *rs->keys))
		rs->h->err = -ENOMEM;
	else
		rs->keys[rs->n++] = nd->lo;
}

static void put_range(const struct wsp_block *b, void *arg)
{
	struct heat *h = ((struct resync *)arg)->h;
	if (!indexed(h, b))
		return;
	struct node nd = node_of_block(h, b);
	uint32_t i = index_insert(&h->index, layer_of_block(b), nd.lo, nd.hi);
	if (!i)
		h->err = -ENOMEM;
	else
		h->index.v[i - 1] = nd;
}

/* The model's ranges changed in a span (an mmap, munmap, mremap, mprotect,
 * a CUDA VMM map): the index's range nodes there are taken out and the
 * model's ranges there put in, instead of building the whole index again
 * (a program mapping memory now and then made that most of a report). */
static void index_resync_ranges(struct heat *h)
{
	uint64_t lo, hi;
	if (!wsp_model_ranges_changed(h->l.model, &lo, &hi))
		return;
	struct resync rs = { .h = h, .lo = lo };
	static const enum layer layers[] = { LAYER_MEMORY, LAYER_MAPPED };
	for (size_t k = 0; k < sizeof layers / sizeof *layers && !h->err; k++) {
		struct index *x = &h->index;
		uint32_t first = index_floor(x, layers[k], lo);
		rs.n = 0;
		wsp_treap_each(&x->pool, x->root[layers[k]], first ? N(first).lo : 0, hi, gather_range_node, &rs);
		for (size_t i = 0; i < rs.n; i++)
			index_remove(x, layers[k], rs.keys[i]);
	}
	free(rs.keys);
	if (!h->err)
		wsp_model_each_range_in(h->l.model, lo, hi, put_range, &rs);
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
	/* Ranges are cut and joined (by any kind's mapping): their span, from the model. */
	index_resync_ranges(h);
	switch (ev->type) {
	case WSPROF_EV_ALLOC:
	case WSPROF_EV_FREE:
	case WSPROF_EV_MOVE: /* realloc: the old block leaves */
		if (!kind_wanted(h->opt->kind, ev->kind) || wsp_kind_is_range(ev->kind))
			return;
		/* Stream-ordered calls take effect later, and in a sampled trace a
		 * realloc's FREE ends its MOVE: ask the model. */
		if (ev->stream || (ev->type == WSPROF_EV_FREE && wsprof_trace_process(h->l.trace)->sample_bytes &&
				   (ev->op == WSPROF_OP_REALLOC || ev->op == WSPROF_OP_REALLOCARRAY)))
			h->stale = true;
		else if (ev->type == WSPROF_EV_ALLOC)
			index_alloc(h, ev);
		else
			index_remove(&h->index, layer_of_event(ev), ev->addr);
		break;
	case WSPROF_EV_FAIL: /* a failed realloc puts the old block back (a failed mremap's is a range) */
		h->stale |= ev->op == WSPROF_OP_REALLOC || ev->op == WSPROF_OP_REALLOCARRAY;
		break;
	case WSPROF_EV_UNMAP: /* ranges only: followed above */
		break;
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

/* One block of the region being split. */
struct splitting {
	struct heat *h;
	uint64_t lo, hi;
	int *err;
};

static void split_node(uint32_t node, void *arg)
{
	struct splitting *sp = arg;
	split_block(sp->h, &sp->h->index.v[node - 1], sp->lo, sp->hi, sp->err);
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
		struct splitting sp = { h, lo, hi, err };
		wsp_treap_each(&h->index.pool, h->index.root[layer], from, hi, split_node, &sp);
	}
}

#undef N

