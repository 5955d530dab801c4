/*
 * stacks.c - call stacks: capture with libunwind, intern into a prefix tree.
 *
 * Capture uses unw_backtrace, libunwind's fast path, with per-thread
 * caching of unwind information. Interning has two levels: a per-thread
 * cache from a 128-bit hash of the whole stack to its node id (no lock,
 * the common case), and on a miss the process-wide prefix tree, a hash
 * table keyed by (parent node, ip) under one mutex. New nodes are written
 * as STACK records into the calling thread's buffer before the event that
 * uses them, and before any other thread can find them, which is what the
 * format's "defined no later than the SYNC covering its first use" needs.
 *
 * Reentrancy: called inside wsp_event_begin (thread lock held, guard set).
 * The mutex is only taken here and in fork handling.
 */
#include "wsp.h"

#include "format.h"

#include <pthread.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

struct node_slot {
	uint64_t ip;
	uint32_t parent, id; /* id 0: empty slot */
};

static pthread_mutex_t tree_lock = PTHREAD_MUTEX_INITIALIZER;
static struct node_slot *tree;
static size_t tree_cap, tree_used;
static uint32_t tree_next_id;
static _Atomic unsigned generation = 1; /* bumped when every cache must be forgotten */

struct cache_slot {
	uint64_t h1, h2;
	uint32_t id, pad;
};

struct wsp_stack_cache {
	size_t cap, used, bytes;
	unsigned generation;
	struct cache_slot slot[];
};

#define CACHE_MIN 256
#define CACHE_MAX (1u << 20)

void wsp_stacks_init(void)
{
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

int wsp_stack_capture(uintptr_t *ips, int max)
{
	void *raw[256 + 16];
	int n = unw_backtrace(raw, max + 16);
	int skip = 0;
	while (skip < n && wsp_addr_in_self((uintptr_t)raw[skip]))
		skip++;
	int depth = n - skip < max ? n - skip : max;
	for (int i = 0; i < depth; i++)
		ips[i] = (uintptr_t)raw[skip + i];
	return depth;
}

static inline uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

/* ---- the shared prefix tree ------------------------------------------ */

static size_t slot_of(uint32_t parent, uint64_t ip, size_t cap)
{
	return (size_t)mix(ip ^ ((uint64_t)parent << 40) ^ parent) & (cap - 1);
}

static bool tree_grow(void)
{
	size_t cap = tree_cap ? tree_cap * 2 : 4096;
	struct node_slot *t = wsp_pages_alloc(cap * sizeof *t);
	if (!t)
		return false;
	for (size_t i = 0; i < tree_cap; i++) {
		if (!tree[i].id)
			continue;
		size_t j = slot_of(tree[i].parent, tree[i].ip, cap);
		while (t[j].id)
			j = (j + 1) & (cap - 1);
		t[j] = tree[i];
	}
	wsp_pages_free(tree, tree_cap * sizeof *tree);
	tree = t;
	tree_cap = cap;
	return true;
}

/* @return the node for ip called from parent, made (and recorded at *p) if new; 0 on failure. */
static uint32_t tree_node(uint32_t parent, uint64_t ip, uint8_t **p)
{
	if ((tree_used + 1) * 2 > tree_cap && !tree_grow())
		return 0;
	size_t j = slot_of(parent, ip, tree_cap);
	for (; tree[j].id; j = (j + 1) & (tree_cap - 1))
		if (tree[j].parent == parent && tree[j].ip == ip)
			return tree[j].id;
	if (tree_next_id == UINT32_MAX)
		return 0;
	uint32_t id = ++tree_next_id;
	tree[j] = (struct node_slot){ ip, parent, id };
	tree_used++;
	struct wsp_record_mark m;
	uint8_t *q = wsp_record_open(*p, WSP_REC_STACK, WSP_STACK_RECORD_MAX - 2, &m);
	q = wsp_put_varint(q, id);
	q = wsp_put_varint(q, parent);
	q = wsp_put_varint(q, ip);
	*p = wsp_record_close(q, &m);
	return id;
}

/* ---- the per-thread cache ------------------------------------------- */

static struct wsp_stack_cache *cache_make(size_t cap)
{
	size_t bytes = sizeof(struct wsp_stack_cache) + cap * sizeof(struct cache_slot);
	struct wsp_stack_cache *c = wsp_pages_alloc(bytes);
	if (c) {
		c->cap = cap;
		c->bytes = bytes;
		c->generation = atomic_load(&generation);
	}
	return c;
}

void wsp_stack_cache_free(struct wsp_stack_cache *c)
{
	if (c)
		wsp_pages_free(c, c->bytes);
}

static void cache_put(struct wsp_stack_cache *c, uint64_t h1, uint64_t h2, uint32_t id)
{
	size_t j = (size_t)h1 & (c->cap - 1);
	while (c->slot[j].id)
		j = (j + 1) & (c->cap - 1);
	c->slot[j] = (struct cache_slot){ h1, h2, id, 0 };
	c->used++;
}

/* Make room for one more entry: grow, or start over at the size limit. */
static struct wsp_stack_cache *cache_room(struct wsp_stack_cache *c)
{
	unsigned gen = atomic_load(&generation);
	if (c && c->generation == gen && (c->used + 1) * 2 <= c->cap)
		return c;
	size_t cap = !c ? CACHE_MIN : c->generation != gen || c->cap >= CACHE_MAX ? c->cap : c->cap * 2;
	struct wsp_stack_cache *n = cache_make(cap);
	if (n && c && c->generation == gen && cap > c->cap)
		for (size_t i = 0; i < c->cap; i++)
			if (c->slot[i].id)
				cache_put(n, c->slot[i].h1, c->slot[i].h2, c->slot[i].id);
	wsp_stack_cache_free(c);
	return n;
}

uint64_t wsp_stack_intern(struct wsp_thread *t, const uintptr_t *ips, int depth, uint8_t **p)
{
	if (depth <= 0)
		return 0;
	uint64_t h1 = 0x9e3779b97f4a7c15ull, h2 = (uint64_t)depth;
	for (int i = 0; i < depth; i++) {
		h1 = mix(h1 ^ ips[i]);
		h2 = mix(h2 + ips[i] * 0x2545f4914f6cdd1dull);
	}
	struct wsp_stack_cache *c = t->cache;
	if (c && c->generation == atomic_load(&generation)) {
		for (size_t j = (size_t)h1 & (c->cap - 1); c->slot[j].id; j = (j + 1) & (c->cap - 1))
			if (c->slot[j].h1 == h1 && c->slot[j].h2 == h2)
				return c->slot[j].id;
	}
	uint32_t node = 0;
	int i;
	pthread_mutex_lock(&tree_lock);
	for (i = depth - 1; i >= 0; i--) {
		uint32_t next = tree_node(node, ips[i], p);
		if (!next)
			break;
		node = next;
	}
	pthread_mutex_unlock(&tree_lock);
	/* A partial path (out of memory) is not cached, so it is retried. */
	if (i < 0 && (t->cache = cache_room(t->cache)))
		cache_put(t->cache, h1, h2, node);
	return node;
}

void wsp_stacks_lock(void)
{
	pthread_mutex_lock(&tree_lock);
}

void wsp_stacks_unlock(void)
{
	pthread_mutex_unlock(&tree_lock);
}

/* A forked child writes a new trace, which must define its nodes again. */
void wsp_stacks_reset_after_fork(void)
{
	pthread_mutex_init(&tree_lock, NULL);
	if (tree)
		memset(tree, 0, tree_cap * sizeof *tree);
	tree_used = 0;
	tree_next_id = 0;
	atomic_fetch_add(&generation, 1);
}
