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

#include "core.h"
#include "base.h"
#include "format.h"

#include <pthread.h>
#include <stdatomic.h>
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

/* The thread's last interned stack, from the root: a new stack shares
 * its outer frames with the last one most of the time (main, the event
 * loop, a Python program's outer frames), whose nodes need no lookup in
 * the shared tree (a cache miss a frame in a tree of millions). */
#define PATH_DEPTH 512 /* past the deepest stack interned: stack_depth + slack + Python frames */

struct wsp_stack_path {
	unsigned generation;
	int n;
	uint32_t node[PATH_DEPTH];
	uint64_t ip[PATH_DEPTH];
};

/* An odd constant for each place in a stack: a stack's hash is the sum of
 * its frames times their places' constants, whose multiplies do not wait
 * for each other (a chain of mixes a frame cost most of a deep stack's
 * interning), mixed once at the end. Made once, by the first stack. */
static uint64_t place[2][PATH_DEPTH];
static pthread_once_t place_once = PTHREAD_ONCE_INIT;

static inline uint64_t mix(uint64_t h);

static void make_places(void)
{
	for (uint64_t i = 0; i < PATH_DEPTH; i++) {
		place[0][i] = mix(0x9e3779b97f4a7c15ull * (2 * i + 1)) | 1;
		place[1][i] = mix(0x9e3779b97f4a7c15ull * (2 * i + 2)) | 1;
	}
}

void wsp_stacks_init(void)
{
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

uintptr_t wsp_unwinder_address(void)
{
	return (uintptr_t)&unw_backtrace;
}

/* ---- capture, and the unwind memo ------------------------------------
 *
 * A program allocates from the same few paths over and over, and
 * unwinding (about 10 ns a frame with unw_backtrace) is most of what a
 * recorded allocation costs. So each thread remembers its last few unwinds
 * together with where on its stack each return address was found. When
 * wsp_stack_capture runs again from the same frame address, and every one
 * of those stack slots still holds the same return address, the stack is
 * the same: unwinding is a function of the instruction pointer and the
 * stack pointer of each frame, and a matching slot gives the next frame
 * both (its return address, and its stack pointer, the slot's address
 * plus 8). Checking is a read per frame, innermost first, each slot
 * inside a frame already shown to be live, so no read leaves the live
 * stack. The memo also keeps the stack's id, saving its interning.
 *
 * Slots are found by looking up the stack, from this function's frame,
 * for each return address in turn, within the thread's stack (its bounds
 * from pthread_getattr_np, read once); an unwind whose addresses are not
 * all found that way (a signal frame) is not remembered. Only the thread's
 * own stack is trusted: on any other (a coroutine's), nothing is
 * remembered or checked.
 */

#define MEMO_WAYS 32
#define MEMO_DEPTH 80 /* the default depth and wsprof's own frames */

struct memo {
	uintptr_t frame;            /* wsp_stack_capture's frame address; 0: empty */
	int n, first;               /* raw frames; the first one with a slot */
	uint32_t id;                /* the interned stack, or 0 */
	unsigned generation;        /* of the id */
	uint32_t serial;            /* this entry's unwind, among the thread's (never 0) */
	uintptr_t ip[MEMO_DEPTH];
	const uintptr_t *slot[MEMO_DEPTH];
};

struct wsp_unwind_memo {
	uintptr_t stack_lo, stack_hi; /* the thread's stack; hi 0: unknown, do not remember */
	unsigned next, last;        /* the entry to replace next; the one the last capture used */
	bool last_known;            /* the last capture's is that entry's stack */
	uint32_t serial;            /* the last entry made */
	int last_skip;              /* its frames of wsprof's own */
	struct memo m[MEMO_WAYS];
};

static struct wsp_unwind_memo *memo_of(struct wsp_thread *t)
{
	if (t->memo)
		return t->memo;
	if (wsp_tls.no_stack_query)
		return NULL; /* a lock pthread_getattr_np or its realloc takes may be held: ask later */
	struct wsp_unwind_memo *u = wsp_pages_alloc(sizeof *u); /* zeroed: its pages are touched as ways fill */
	if (!u)
		return NULL;
	/* The guard is held (the hook's), so what glibc allocates inside passes
	 * through; never from inside the program's own call (above). */
	pthread_attr_t attr;
	void *lo;
	size_t len;
	if (wsp_real.pthread_getattr_np && wsp_real.pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &lo, &len) == 0) {
			u->stack_lo = (uintptr_t)lo;
			u->stack_hi = (uintptr_t)lo + len;
		}
		pthread_attr_destroy(&attr);
	}
	return t->memo = u;
}

void wsp_unwind_memo_free(struct wsp_unwind_memo *u)
{
	if (u)
		wsp_pages_free(u, sizeof *u);
}

/* Remember an unwind made from frame, if every return address is found.
 * raw is the array the unwind was written to, which lies on the same
 * stack above frame (the caller's): its copies of the return addresses
 * are not where they live, so the search steps over it. The search reads
 * the stack word by word, whatever the frames hold there (so ASan, in the
 * checked build, is told not to look). */
__attribute__((no_sanitize("address"))) static void memo_put(struct wsp_unwind_memo *u, uintptr_t frame, uintptr_t ret, void *const *raw, int n, size_t cap)
{
	const uintptr_t *skip_lo = (const uintptr_t *)raw, *skip_hi = skip_lo + cap;
	if (n > MEMO_DEPTH)
		return;
	int first = 0;
	while (first < n && (uintptr_t)raw[first] != ret)
		first++;
	if (first == n)
		return;
	struct memo *m = &u->m[u->next];
	const uintptr_t *at = (const uintptr_t *)(frame + sizeof(uintptr_t)), *end = (const uintptr_t *)u->stack_hi;
	for (int i = first; i < n; i++, at++) {
		while (at < end && (*at != (uintptr_t)raw[i] || (at >= skip_lo && at < skip_hi)))
			at++;
		if (at >= end)
			return;
		m->slot[i] = at;
	}
	for (int i = 0; i < n; i++)
		m->ip[i] = (uintptr_t)raw[i];
	m->frame = frame;
	m->n = n;
	m->first = first;
	m->id = 0;
	m->serial = ++u->serial ? u->serial : ++u->serial;
	u->last = u->next;
	u->last_known = true;
	u->next = (u->next + 1) % MEMO_WAYS;
}

static int own_frames(const uintptr_t *raw, int n)
{
	int skip = 0;
	while (skip < n && wsp_addr_in_self(raw[skip]))
		skip++;
	return skip;
}

__attribute__((noinline)) int wsp_stack_capture(struct wsp_thread *t, uintptr_t *ips, int max, uint32_t *id)
{
	uintptr_t frame = (uintptr_t)__builtin_frame_address(0);
	*id = 0;
	if (WSP_FLOOR_NO_STACKS)
		return 0; /* bench/floors.py's recorder without stacks (meson.build) */
	struct wsp_unwind_memo *u = t ? memo_of(t) : NULL;
	bool own_stack = u && frame >= u->stack_lo && frame < u->stack_hi;
	for (unsigned w = 0; own_stack && w < MEMO_WAYS; w++) {
		struct memo *m = &u->m[w];
		if (m->frame != frame)
			continue;
		int i = m->first;
		while (i < m->n && *m->slot[i] == m->ip[i])
			i++;
		if (i < m->n)
			continue;
		int skip = own_frames(m->ip, m->n);
		int depth = m->n - skip < max ? m->n - skip : max;
		memcpy(ips, m->ip + skip, (size_t)depth * sizeof *ips);
		if (m->id && m->generation == atomic_load(&generation))
			*id = m->id;
		u->last = w;
		u->last_known = skip >= m->first;
		u->last_skip = skip;
		return depth;
	}
	/* Straight into the caller's array, wsprof's own frames dropped after:
	 * no second copy on a stack that may be a coroutine's. */
	int n = unw_backtrace((void **)ips, max + WSP_STACK_SLACK);
	int skip = own_frames(ips, n);
	if (u)
		u->last_known = false;
	if (own_stack) {
		memo_put(u, frame, (uintptr_t)__builtin_return_address(0), (void *const *)ips, n,
			 (size_t)max + WSP_STACK_SLACK);
		u->last_known = u->last_known && skip >= u->m[u->last].first;
		u->last_skip = skip;
	}
	int depth = n - skip < max ? n - skip : max;
	memmove(ips, ips + skip, (size_t)depth * sizeof *ips);
	return depth;
}

const uintptr_t *const *wsp_stack_slots(struct wsp_thread *t, uintptr_t *hi)
{
	struct wsp_unwind_memo *u = t->memo;
	if (!u || !u->last_known)
		return NULL;
	*hi = u->stack_hi;
	return u->m[u->last].slot + u->last_skip;
}

uint32_t wsp_stack_serial(struct wsp_thread *t)
{
	struct wsp_unwind_memo *u = t->memo;
	return u && u->last_known ? u->m[u->last].serial : 0;
}

void wsp_stack_remember_id(struct wsp_thread *t, uint32_t id)
{
	struct wsp_unwind_memo *u = t->memo;
	if (!u || !id)
		return;
	u->m[u->last].id = id;
	u->m[u->last].generation = atomic_load(&generation);
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
	bool py = WSPROF_IS_PYFRAME(ip);
	uint8_t *q = wsp_record_open(*p, py ? WSP_REC_PYFRAME : WSP_REC_STACK, WSP_STACK_RECORD_MAX - 2, &m);
	q = wsp_put_varint(q, id);
	q = wsp_put_varint(q, parent);
	if (py) {
		q = wsp_put_varint(q, WSPROF_PYFRAME_CODE(ip));
		q = wsp_put_varint(q, WSPROF_PYFRAME_INSTR(ip));
	} else {
		q = wsp_put_varint(q, ip);
	}
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

static struct wsp_stack_path *path_of(struct wsp_thread *t)
{
	if (!t->path && (t->path = wsp_pages_alloc(sizeof *t->path)))
		t->path->generation = 0;
	return t->path;
}

void wsp_stack_path_free(struct wsp_stack_path *p)
{
	if (p)
		wsp_pages_free(p, sizeof *p);
}

uint64_t wsp_stack_intern(struct wsp_thread *t, const uintptr_t *ips, int depth, uint8_t **p)
{
	if (depth <= 0)
		return 0;
	if (depth > PATH_DEPTH)
		depth = PATH_DEPTH; /* never: callers keep below it */
	pthread_once(&place_once, make_places);
	uint64_t h1 = (uint64_t)depth, h2 = ~(uint64_t)depth;
	for (int i = 0; i < depth; i++) {
		h1 += ips[i] * place[0][i];
		h2 += (ips[i] ^ ips[i] >> 29) * place[1][i];
	}
	h1 = mix(h1);
	h2 = mix(h2);
	struct wsp_stack_cache *c = t->cache;
	if (c && c->generation == atomic_load(&generation)) {
		for (size_t j = (size_t)h1 & (c->cap - 1); c->slot[j].id; j = (j + 1) & (c->cap - 1))
			if (c->slot[j].h1 == h1 && c->slot[j].h2 == h2)
				return c->slot[j].id;
	}
	uint32_t node = 0;
	unsigned gen = atomic_load(&generation);
	struct wsp_stack_path *pa = path_of(t);
	int k = 0; /* frames from the root shared with the last stack */
	if (pa && pa->generation == gen) {
		while (k < pa->n && k < depth && pa->ip[k] == ips[depth - 1 - k])
			k++;
		node = k ? pa->node[k - 1] : 0;
	} else if (pa) {
		pa->generation = gen;
		pa->n = 0;
	}
	int i;
	pthread_mutex_lock(&tree_lock);
	for (i = depth - 1 - k; i >= 0; i--) {
		uint32_t next = tree_node(node, ips[i], p);
		if (!next)
			break;
		node = next;
		if (pa) {
			pa->ip[depth - 1 - i] = ips[i];
			pa->node[depth - 1 - i] = node;
		}
	}
	pthread_mutex_unlock(&tree_lock);
	if (pa)
		pa->n = depth - 1 - i;
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
