/*
 * treap.h - ordered sets of 64-bit keys: treaps whose nodes live in a
 * pool that several trees may share. A node is a number (1-based, 0 for
 * none) that stays its own while the key is in its tree, so a caller can
 * keep data of its own beside each node (an array indexed by it). Keys
 * are unique within a tree: an insert replaces a node of the same key.
 *
 * The model finds the block an interior pointer points into with them
 * (annotations.c), and the blocks an access sample touches (access.c),
 * which the heatmaps are told of as it matches them.
 */
#ifndef WSP_TREAP_H
#define WSP_TREAP_H

#include <stddef.h>
#include <stdint.h>

struct wsp_tnode {
	uint64_t key;
	uint32_t left, right, prio; /* children: nodes; a free node's left chains the free ones */
};

struct wsp_tpool {
	struct wsp_tnode *v;
	size_t n, cap;
	uint32_t free_list, seed;
};

/* Add key to the tree at *root, in place of a node of the same key.
 * @return its node, 0 without memory. */
uint32_t wsp_treap_insert(struct wsp_tpool *p, uint32_t *root, uint64_t key);
/* Take key out of the tree. @return the node it had (now free), 0 if none. */
uint32_t wsp_treap_remove(struct wsp_tpool *p, uint32_t *root, uint64_t key);
/* The node of the greatest key not above key / the least not below it; 0 if none. */
uint32_t wsp_treap_floor(const struct wsp_tpool *p, uint32_t root, uint64_t key);
uint32_t wsp_treap_ceil(const struct wsp_tpool *p, uint32_t root, uint64_t key);
/* fn for every node whose key is in [from, below), in key order. */
void wsp_treap_each(const struct wsp_tpool *p, uint32_t root, uint64_t from, uint64_t below,
		    void (*fn)(uint32_t node, void *arg), void *arg);
/* A tree made at once from keys sorted ascending and unique (balanced,
 * each node's priority above its children's), put at *root, which must
 * be empty; node[i] gets keys[i]'s node. @return 0 or -ENOMEM. */
int wsp_treap_build(struct wsp_tpool *p, uint32_t *root, const uint64_t *keys, size_t n, uint32_t *node);
void wsp_tpool_free(struct wsp_tpool *p);

static inline uint64_t wsp_treap_key(const struct wsp_tpool *p, uint32_t node)
{
	return p->v[node - 1].key;
}

#endif
