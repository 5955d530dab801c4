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

/* Split t into the nodes with keys below key (*l) and the others (*r),
 * down one path. */
static void split(struct wsp_tpool *p, uint32_t t, uint64_t key, uint32_t *l, uint32_t *r)
{
	while (t) {
		if (N(t).key < key) {
			*l = t;
			l = &N(t).right;
			t = N(t).right;
		} else {
			*r = t;
			r = &N(t).left;
			t = N(t).left;
		}
	}
	*l = *r = 0;
}

/* Join l and r, every key of l below those of r. */
static uint32_t merge(struct wsp_tpool *p, uint32_t l, uint32_t r)
{
	uint32_t root = 0, *link = &root;
	while (l && r) {
		if (N(l).prio > N(r).prio) {
			*link = l;
			link = &N(l).right;
			l = N(l).right;
		} else {
			*link = r;
			link = &N(r).left;
			r = N(r).left;
		}
	}
	*link = l ? l : r;
	return root;
}

/* One descent each: a node is taken out by joining its two subtrees in its
 * place, and put in where its priority belongs, by splitting what was
 * there (splitting and joining the whole tree for each took five). */
uint32_t wsp_treap_remove(struct wsp_tpool *p, uint32_t *root, uint64_t key)
{
	uint32_t *link = root;
	while (*link && N(*link).key != key)
		link = key < N(*link).key ? &N(*link).left : &N(*link).right;
	uint32_t t = *link;
	if (!t)
		return 0;
	*link = merge(p, N(t).left, N(t).right);
	N(t).left = p->free_list;
	p->free_list = t;
	return t;
}

uint32_t wsp_treap_insert(struct wsp_tpool *p, uint32_t *root, uint64_t key)
{
	for (uint32_t t = *root; t; t = key < N(t).key ? N(t).left : N(t).right)
		if (N(t).key == key)
			return t; /* in place of itself: its node, for the caller's data anew */
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
	uint32_t *link = root; /* taken after the pool may have moved */
	while (*link && N(*link).prio > N(node).prio)
		link = key < N(*link).key ? &N(*link).left : &N(*link).right;
	split(p, *link, key, &N(node).left, &N(node).right);
	*link = node;
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
