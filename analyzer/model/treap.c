/*
 * treap.c - ordered sets of 64-bit keys (treap.h), by split and merge: a
 * random priority per node keeps them balanced in expectation, whatever
 * the order keys come in (addresses often come in increasing order).
 */
#include "treap.h"

#include "grow.h"

#include <errno.h>
#include <stdlib.h>

#define N(i) (p->v[(i) - 1])

/* Split t into the nodes with keys below key (*l) and the others (*r). */
static void split(struct wsp_tpool *p, uint32_t t, uint64_t key, uint32_t *l, uint32_t *r)
{
	if (!t) {
		*l = *r = 0;
	} else if (N(t).key < key) {
		split(p, N(t).right, key, &N(t).right, r);
		*l = t;
	} else {
		split(p, N(t).left, key, l, &N(t).left);
		*r = t;
	}
}

/* Join l and r, every key of l below those of r. */
static uint32_t merge(struct wsp_tpool *p, uint32_t l, uint32_t r)
{
	if (!l || !r)
		return l ? l : r;
	if (N(l).prio > N(r).prio) {
		N(l).right = merge(p, N(l).right, r);
		return l;
	}
	N(r).left = merge(p, l, N(r).left);
	return r;
}

uint32_t wsp_treap_remove(struct wsp_tpool *p, uint32_t *root, uint64_t key)
{
	uint32_t l, mid, r;
	split(p, *root, key, &l, &r);
	if (key == UINT64_MAX) {
		mid = r;
		r = 0;
	} else {
		split(p, r, key + 1, &mid, &r);
	}
	if (mid) { /* one node: keys are unique in a tree */
		N(mid).left = p->free_list;
		p->free_list = mid;
	}
	*root = merge(p, l, r);
	return mid;
}

uint32_t wsp_treap_insert(struct wsp_tpool *p, uint32_t *root, uint64_t key)
{
	wsp_treap_remove(p, root, key);
	uint32_t node = p->free_list;
	if (node) {
		p->free_list = N(node).left;
	} else {
		if (p->n >= UINT32_MAX - 1 || wsp_grow(&p->v, &p->cap, p->n + 1, sizeof *p->v))
			return 0;
		node = (uint32_t)++p->n;
	}
	p->seed = p->seed * 1664525u + 1013904223u;
	N(node) = (struct wsp_tnode){ .key = key, .prio = p->seed };
	uint32_t l, r;
	split(p, *root, key, &l, &r);
	*root = merge(p, merge(p, l, node), r);
	return node;
}

uint32_t wsp_treap_floor(const struct wsp_tpool *p, uint32_t root, uint64_t key)
{
	uint32_t best = 0;
	for (uint32_t t = root; t;) {
		if (N(t).key <= key) {
			best = t;
			t = N(t).right;
		} else {
			t = N(t).left;
		}
	}
	return best;
}

uint32_t wsp_treap_ceil(const struct wsp_tpool *p, uint32_t root, uint64_t key)
{
	uint32_t best = 0;
	for (uint32_t t = root; t;) {
		if (N(t).key >= key) {
			best = t;
			t = N(t).left;
		} else {
			t = N(t).right;
		}
	}
	return best;
}

void wsp_treap_each(const struct wsp_tpool *p, uint32_t t, uint64_t from, uint64_t below,
		    void (*fn)(uint32_t node, void *arg), void *arg)
{
	if (!t)
		return;
	if (N(t).key > from)
		wsp_treap_each(p, N(t).left, from, below, fn, arg);
	if (N(t).key >= from && N(t).key < below)
		fn(t, arg);
	if (N(t).key < below)
		wsp_treap_each(p, N(t).right, from, below, fn, arg);
}

/* The subtree of nodes[lo, hi) (their keys in order), rooted at the middle:
 * the deeper, the lower the priority, so the heap order holds. */
static uint32_t build(struct wsp_tpool *p, const uint32_t *nodes, size_t lo, size_t hi, uint32_t prio)
{
	if (lo >= hi)
		return 0;
	size_t mid = lo + (hi - lo) / 2;
	uint32_t t = nodes[mid];
	N(t).prio = prio;
	N(t).left = build(p, nodes, lo, mid, prio - 1);
	N(t).right = build(p, nodes, mid + 1, hi, prio - 1);
	return t;
}

int wsp_treap_build(struct wsp_tpool *p, uint32_t *root, const uint64_t *keys, size_t n, uint32_t *node)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t t = p->free_list;
		if (t) {
			p->free_list = N(t).left;
		} else {
			if (p->n >= UINT32_MAX - 1 || wsp_grow(&p->v, &p->cap, p->n + 1, sizeof *p->v))
				return -ENOMEM;
			t = (uint32_t)++p->n;
		}
		N(t) = (struct wsp_tnode){ .key = keys[i] };
		node[i] = t;
	}
	*root = build(p, node, 0, n, UINT32_MAX);
	return 0;
}

void wsp_tpool_free(struct wsp_tpool *p)
{
	free(p->v);
	*p = (struct wsp_tpool){ 0 };
}
