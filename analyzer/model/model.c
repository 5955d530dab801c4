/*
 * model.c - the live set and per-kind figures of a trace (see model.h).
 *
 * Heap blocks live in a dense array, found through an open-addressing
 * hash table of their addresses; mmap ranges in a sorted array, because
 * munmap may cut any part of them.
 * The pieces of one mapping keep its identity (origin): a mapping is one
 * live block, and one free when its last piece goes.
 * A MOVE (realloc/mremap in flight) parks the old block per thread until
 * the same thread's ALLOC (success) or FAIL (old block restored).
 * Memory grows with live blocks, distinct stacks and threads, never with
 * the length of the trace.
 *
 * In a sampled trace, every figure a heap block adds to, it adds to with
 * its weight (sampled traces, below): live and peak bytes, counts,
 * per-stack figures, collectable bytes, accessed bytes.
 *
 * Per-stack figures (per_stack) include the bytes each stack held at the
 * moment its kind peaked, without a second pass: every peak starts a new
 * epoch, and a stack's live bytes are copied to its snapshot the first
 * time they change in a new epoch - until then they are still what they
 * were at the peak.
 */
#include "model.h"

#include "departed.h"
#include "grow.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct stash {
	uint32_t tid;
	bool used;
	uint64_t moved;       /* the key a heap MOVE released */
	uint64_t blocks_gone; /* counted mappings whose last piece was parked */
	struct wsp_block *blocks;
	size_t n, cap;
};

struct ann {
	uint64_t key;                /* the block's key; 0: empty slot */
	struct wsp_ann_state st;
	char *name;
};

/* A treap of block keys: the block containing an interior pointer is the
 * one with the greatest key not above it. */
struct treap_node {
	uint64_t key;
	uint32_t left, right, prio; /* children are indexes + 1; 0: none */
};
struct treap {
	struct treap_node *v;
	size_t n, cap;
	uint32_t root, free_list, seed;
};

/* Address ranges of one kind, sorted by addr, non-overlapping. */
struct range_set {
	struct wsp_block *v;
	size_t n, cap;
};

struct caller_slot {
	uint64_t stack;  /* 0: empty */
	int8_t ok;
};

struct site {
	uint64_t stack;
	uint8_t kind;
	uint64_t allocations, bytes, failed, temporary;
	uint64_t accessed, coldest;  /* of its freed blocks (live ones are added at the end) */
	uint64_t live, live_blocks, snap;
	uint32_t snap_epoch;
};

struct serial_slot {
	uint32_t tid;    /* 0: empty */
	uint64_t serial; /* allocations made by the thread so far */
};

struct wsp_model {
	struct wsp_kind_stats kinds[WSPROF_KIND_COUNT];
	uint64_t untracked_frees, last_time;
	uint64_t seq;                /* of the event being applied */

	/* Heap blocks: a hash table of their keys (0: empty), each slot naming
	 * a block of a dense array whose freed places are taken again first.
	 * A probe reads a few cache lines of keys, a removal moves slots of
	 * 12 bytes, and a block keeps its place while it lives. The table's
	 * slot order is the order blocks are visited in. */
	uint64_t *heap_keys;
	uint32_t *heap_block;        /* slot -> block */
	size_t heap_cap, heap_used;
	struct wsp_block *blocks;
	uint32_t *block_slot;        /* block -> slot */
	size_t nblocks, blocks_cap;
	uint32_t *free_blocks;       /* places freed, taken again last in first out */
	size_t nfree_blocks;

	struct range_set ranges[4];  /* mmap, CUDA VMM mappings, CUDA VMM reservations, mmap reservations */

	struct wsp_device_stats *devices;
	struct wsp_series *device_used; /* by index of devices */
	size_t ndevices, devices_cap, device_used_cap;
	struct wsp_series live[WSPROF_KIND_COUNT];
	struct wsp_failure *failures;
	size_t nfailures, failures_cap;

	struct ann *anns;            /* annotation states by block key (0: empty) */
	size_t ann_cap, ann_used;
	bool ordered;                /* the treaps below are kept (interior pointers seen) */
	struct treap by_addr[2];     /* memory blocks, pool blocks: for interior pointers */
	uint64_t unknown_annotations;
	struct wsp_phase *phases;
	size_t nphases, phases_cap;
	struct wsp_snapshot *snapshots;
	size_t nsnapshots, snapshots_cap;

	uint64_t wss_bucket_ns, window_ns;
	struct wsp_wss *wss;
	/* Blocks freed while a window that may have seen them is open
	 * (departed.h); without totals only. windowed_end: the end of the last
	 * window of written pages or DAMON regions. */
	struct wsp_departed *departed;
	uint64_t windowed_end;
	/* The block an access sample's last region overlapped, and the bytes
	 * of the sample in it so far: a block spanning several regions is
	 * accessed by all of them. */
	const struct wsp_block *note_block;
	uint64_t note_bytes;
	struct wsp_rss_point *rss;
	size_t nrss, rss_cap;

	struct stash *stashes;
	size_t nstashes;

	const char *const *callers;
	struct caller_slot *ccache;
	size_t ccache_cap, ccache_used;

	bool per_stack;
	bool totals_only;
	struct site *sites;
	size_t nsites, sites_cap;
	uint32_t *site_index;        /* hash of (kind, stack) -> sites index + 1 */
	size_t site_index_cap;
	uint32_t epoch[WSPROF_KIND_COUNT]; /* bumped at every new peak of the kind */

	struct serial_slot *serials;
	size_t serials_cap, serials_used;

	uint32_t *children;
	size_t nchildren, children_cap;
	char *exec_path;

	uint64_t sample_bytes;       /* the trace's WSPROF_SAMPLE_BYTES; 0: all recorded */
};


/* Up to this many slots (384 KiB) the heap table is kept sparse. */
#define HEAP_SPARSE_SLOTS (1u << 15)

static inline size_t hash64(uint64_t x, size_t cap)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	return (size_t)x & (cap - 1);
}

struct wsp_model *wsp_model_new(const struct wsp_model_options *opt)
{
	struct wsp_model *m = calloc(1, sizeof *m);
	if (m && opt) {
		m->callers = opt->callers;
		m->per_stack = opt->per_stack;
		m->wss_bucket_ns = opt->wss_bucket_ns;
		m->totals_only = opt->totals_only;
		m->sample_bytes = opt->sample_bytes;
	}
	return m;
}

/* ---- sampled traces ------------------------------------------------------ */

/* A heap block of s bytes was sampled with probability p = 1 - exp(-s/N)
 * (preload/sampling.c); weighing it by 1/p (its bytes s/p, its count 1/p)
 * makes every sum over sampled blocks an unbiased estimate of the sum
 * over all blocks (Horvitz-Thompson). */
double wsp_sample_probability(uint64_t sample_bytes, uint64_t size)
{
	if (sample_bytes <= 1)
		return 1;
	return -expm1(-(double)(size ? size : 1) / (double)sample_bytes);
}

/* Inline: weigh and block_count ask it for every event. */
static inline bool estimated(const struct wsp_model *m, unsigned kind)
{
	return m->sample_bytes > 1 && kind == WSPROF_KIND_HEAP;
}

bool wsp_model_estimated(const struct wsp_model *m, unsigned kind)
{
	return estimated(m, kind);
}

/* x bytes of block b, as an estimate: x / p. */
static inline uint64_t weigh(const struct wsp_model *m, const struct wsp_block *b, uint64_t x)
{
	if (!estimated(m, b->kind))
		return x;
	return (uint64_t)llround((double)x / wsp_sample_probability(m->sample_bytes, b->size));
}

uint64_t wsp_model_block_bytes(const struct wsp_model *m, const struct wsp_block *b)
{
	return weigh(m, b, b->size);
}

/* The allocations a block stands for: 1/p, rounded down or up at random
 * with the odds that keep its expectation 1/p, so that counts stay whole
 * and unbiased. The draw comes from the block's thread and allocation
 * number: the same at its allocation and at its free. */
static inline uint64_t block_count(const struct wsp_model *m, const struct wsp_block *b)
{
	if (!estimated(m, b->kind))
		return 1;
	double w = 1 / wsp_sample_probability(m->sample_bytes, b->size), whole = floor(w);
	uint64_t h = b->serial * 0x9e3779b97f4a7c15ull ^ (uint64_t)b->tid << 32;
	h = (h ^ h >> 31) * 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return (uint64_t)whole + ((double)(h >> 11) * 0x1p-53 < w - whole);
}

void wsp_model_free(struct wsp_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nstashes; i++)
		free(m->stashes[i].blocks);
	free(m->stashes);
	free(m->heap_keys);
	free(m->heap_block);
	free(m->blocks);
	free(m->block_slot);
	free(m->free_blocks);
	for (size_t i = 0; i < sizeof m->ranges / sizeof *m->ranges; i++)
		free(m->ranges[i].v);
	free(m->devices);
	for (size_t i = 0; i < m->ann_cap; i++)
		if (m->anns[i].key)
			free(m->anns[i].name);
	free(m->anns);
	free(m->by_addr[0].v);
	free(m->by_addr[1].v);
	for (size_t i = 0; i < m->nphases; i++)
		free(m->phases[i].name);
	free(m->phases);
	for (size_t i = 0; i < m->nsnapshots; i++)
		free(m->snapshots[i].label);
	free(m->snapshots);
	wsp_wss_free(m->wss);
	wsp_departed_free(m->departed);
	free(m->rss);
	free(m->ccache);
	free(m->sites);
	free(m->site_index);
	free(m->serials);
	free(m->children);
	free(m->exec_path);
	for (size_t i = 0; i < m->ndevices; i++)
		wsp_series_free(&m->device_used[i]);
	free(m->device_used);
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		wsp_series_free(&m->live[k]);
	free(m->failures);
	free(m);
}

/* ---- figures -------------------------------------------------------- */

static void note_in_use(struct wsp_kind_stats *k, uint64_t time)
{
	uint64_t in_use = k->live_bytes - k->collectable_bytes;
	if (in_use > k->in_use_peak_bytes) {
		k->in_use_peak_bytes = in_use;
		k->in_use_peak_time_ns = time;
	}
}

/* Bring a stack's peak snapshot up to date before its live bytes change. */
static struct site *site_touch(struct wsp_model *m, const struct wsp_block *b)
{
	if (!m->per_stack)
		return NULL;
	struct site *s = &m->sites[b->site];
	if (s->snap_epoch != m->epoch[b->kind]) {
		s->snap = s->live;
		s->snap_epoch = m->epoch[b->kind];
	}
	return s;
}

static void add_live(struct wsp_model *m, const struct wsp_block *b, uint64_t bytes, uint64_t blocks,
		     uint64_t time)
{
	if (b->excluded)
		return;
	struct site *s = site_touch(m, b);
	if (s) {
		s->live += bytes;
		s->live_blocks += blocks;
	}
	struct wsp_kind_stats *k = &m->kinds[b->kind];
	k->live_bytes += bytes;
	k->live_blocks += blocks;
	note_in_use(k, time);
	if (k->live_bytes > k->peak_bytes) {
		k->peak_bytes = k->live_bytes;
		k->peak_time_ns = time;
		k->peak_seq = m->seq;
		k->collectable_at_peak = k->collectable_bytes;
		m->epoch[b->kind]++;
		if (s) { /* every other stack is still as it is at this peak */
			s->snap = s->live;
			s->snap_epoch = m->epoch[b->kind];
		}
	}
}

static void sub_live(struct wsp_model *m, const struct wsp_block *b, uint64_t bytes, uint64_t blocks)
{
	if (b->excluded)
		return;
	struct site *s = site_touch(m, b);
	if (s) {
		s->live -= bytes;
		s->live_blocks -= blocks;
	}
	struct wsp_kind_stats *k = &m->kinds[b->kind];
	k->live_bytes -= bytes;
	k->live_blocks -= blocks;
}

static void gain(struct wsp_model *m, const struct wsp_block *b, uint64_t time)
{
	add_live(m, b, weigh(m, b, b->size), block_count(m, b), time);
}

static void lose(struct wsp_model *m, const struct wsp_block *b)
{
	sub_live(m, b, weigh(m, b, b->size), block_count(m, b));
}

/* ---- per-stack figures and threads ------------------------------------ */

/* The figures of (kind, stack), made on first use. @return index or -ENOMEM. */
static int64_t site_of(struct wsp_model *m, unsigned kind, uint64_t stack)
{
	uint64_t key = stack * WSPROF_KIND_COUNT + kind + 1;
	if ((m->nsites + 1) * 2 > m->site_index_cap) {
		size_t cap = m->site_index_cap ? m->site_index_cap * 2 : 1024;
		uint32_t *idx = calloc(cap, sizeof *idx);
		if (!idx)
			return -ENOMEM;
		for (size_t i = 0; i < m->nsites; i++) {
			const struct site *s = &m->sites[i];
			size_t j = hash64(s->stack * WSPROF_KIND_COUNT + s->kind + 1, cap);
			while (idx[j])
				j = (j + 1) & (cap - 1);
			idx[j] = (uint32_t)i + 1;
		}
		free(m->site_index);
		m->site_index = idx;
		m->site_index_cap = cap;
	}
	size_t j = hash64(key, m->site_index_cap);
	for (; m->site_index[j]; j = (j + 1) & (m->site_index_cap - 1)) {
		const struct site *s = &m->sites[m->site_index[j] - 1];
		if (s->stack == stack && s->kind == kind)
			return m->site_index[j] - 1;
	}
	if (wsp_grow(&m->sites, &m->sites_cap, m->nsites + 1, sizeof *m->sites))
		return -ENOMEM;
	struct site *s = &m->sites[m->nsites];
	memset(s, 0, sizeof *s);
	s->stack = stack;
	s->kind = (uint8_t)kind;
	s->snap_epoch = m->epoch[kind];
	m->site_index[j] = (uint32_t)++m->nsites;
	return (int64_t)m->nsites - 1;
}

/* The allocation count of a thread; created at 0. NULL without memory. */
static uint64_t *serial_of(struct wsp_model *m, uint32_t tid)
{
	if ((m->serials_used + 1) * 2 > m->serials_cap) {
		size_t cap = m->serials_cap ? m->serials_cap * 2 : 64;
		struct serial_slot *t = calloc(cap, sizeof *t);
		if (!t)
			return NULL;
		for (size_t i = 0; i < m->serials_cap; i++) {
			if (!m->serials[i].tid)
				continue;
			size_t j = hash64(m->serials[i].tid, cap);
			while (t[j].tid)
				j = (j + 1) & (cap - 1);
			t[j] = m->serials[i];
		}
		free(m->serials);
		m->serials = t;
		m->serials_cap = cap;
	}
	size_t j = hash64(tid, m->serials_cap);
	for (; m->serials[j].tid; j = (j + 1) & (m->serials_cap - 1))
		if (m->serials[j].tid == tid)
			return &m->serials[j].serial;
	m->serials[j].tid = tid;
	m->serials_used++;
	return &m->serials[j].serial;
}

/* A counted block is freed: a free of its kind, and a temporary
 * allocation of its stack if its thread has not allocated since. */
/* How long a block went without an access before its end (free or the
 * trace's end); since its allocation if it was never accessed. */
static uint64_t idle_before(const struct wsp_block *b, uint64_t end)
{
	uint64_t seen = b->last_access_ns > b->time_ns ? b->last_access_ns : b->time_ns;
	return end > seen ? end - seen : 0;
}

/* A freed block's access figures, into its site's. */
static void settle_access(struct wsp_model *m, const struct wsp_block *b, uint64_t end)
{
	if (!m->per_stack || b->site >= m->nsites)
		return;
	struct site *s = &m->sites[b->site];
	s->accessed += weigh(m, b, b->accessed_bytes < b->size ? b->accessed_bytes : b->size);
	uint64_t idle = idle_before(b, end);
	if (idle > s->coldest)
		s->coldest = idle;
}

static void settle_departed(struct wsp_departed_block *d, void *arg)
{
	settle_access(arg, &d->b, d->end_ns);
}

/* Blocks at addresses memory is accessed at (not pool sub-allocations,
 * registered ranges, VMM handles or reservations). */
static bool has_memory(const struct wsp_block *b)
{
	return !(b->addr >> 62) && !wsp_kind_is_address_space(b->kind);
}

/* A block that ends is kept (departed.h) until no open window can have
 * seen it: one that ended before the current bucket began, or before the
 * last window of written pages ended, cannot (less a quarter window: the
 * next window's start is measured by another clock than the events'
 * times). Its access figures reach its site when it is let go. */
static void depart(struct wsp_model *m, const struct wsp_block *b)
{
	if (m->totals_only || !has_memory(b) ||
	    (!m->departed && !(m->departed = wsp_departed_new(settle_departed, m)))) {
		settle_access(m, b, m->last_time);
		return;
	}
	if (wsp_departed_add(m->departed, b, m->last_time))
		return;
	uint64_t slack = (m->window_ns ? m->window_ns : 100000000u) / 4;
	uint64_t open = m->wss ? wsp_wss_open_start(m->wss) : UINT64_MAX;
	uint64_t seen = m->windowed_end ? m->windowed_end : m->last_time;
	uint64_t before = open < seen ? open : seen;
	wsp_departed_prune(m->departed, before > slack ? before - slack : 0, slack);
}

/* In a sampled trace the allocations between two sampled ones are not
 * known: temporary is not counted (doc/reports.md). */
static void count_free(struct wsp_model *m, const struct wsp_block *b)
{
	m->kinds[b->kind].frees += block_count(m, b);
	depart(m, b);
	if (!m->per_stack)
		return;
	uint64_t *serial = serial_of(m, b->tid);
	if (serial && *serial == b->serial && !estimated(m, b->kind))
		m->sites[b->site].temporary++;
}

/* ---- blocks by address order (interior pointers) ------------------------ */

static uint32_t treap_rand(struct treap *t)
{
	t->seed = t->seed * 1103515245u + 12345u;
	return t->seed >> 1;
}

static uint32_t treap_rotate_insert(struct treap *t, uint32_t at, uint32_t node)
{
	if (!at)
		return node;
	struct treap_node *a = &t->v[at - 1];
	if (t->v[node - 1].key < a->key) {
		a->left = treap_rotate_insert(t, a->left, node);
		if (t->v[a->left - 1].prio > a->prio) {
			uint32_t l = a->left;
			a->left = t->v[l - 1].right;
			t->v[l - 1].right = at;
			return l;
		}
	} else {
		a->right = treap_rotate_insert(t, a->right, node);
		if (t->v[a->right - 1].prio > a->prio) {
			uint32_t r = a->right;
			a->right = t->v[r - 1].left;
			t->v[r - 1].left = at;
			return r;
		}
	}
	return at;
}

static int treap_insert(struct treap *t, uint64_t key)
{
	uint32_t node = t->free_list;
	if (node) {
		t->free_list = t->v[node - 1].left;
	} else {
		if (wsp_grow(&t->v, &t->cap, t->n + 1, sizeof *t->v))
			return -ENOMEM;
		node = (uint32_t)++t->n;
	}
	t->v[node - 1] = (struct treap_node){ key, 0, 0, treap_rand(t) };
	t->root = treap_rotate_insert(t, t->root, node);
	return 0;
}

static uint32_t treap_join(struct treap *t, uint32_t a, uint32_t b)
{
	if (!a || !b)
		return a ? a : b;
	if (t->v[a - 1].prio > t->v[b - 1].prio) {
		t->v[a - 1].right = treap_join(t, t->v[a - 1].right, b);
		return a;
	}
	t->v[b - 1].left = treap_join(t, a, t->v[b - 1].left);
	return b;
}

static uint32_t treap_erase(struct treap *t, uint32_t at, uint64_t key)
{
	if (!at)
		return 0;
	struct treap_node *a = &t->v[at - 1];
	if (key < a->key) {
		a->left = treap_erase(t, a->left, key);
	} else if (key > a->key) {
		a->right = treap_erase(t, a->right, key);
	} else {
		uint32_t joined = treap_join(t, a->left, a->right);
		a->left = t->free_list;
		t->free_list = at;
		return joined;
	}
	return at;
}

/* The least key not below x, or 0. */
static uint64_t treap_ceil(const struct treap *t, uint64_t x)
{
	uint64_t best = 0;
	for (uint32_t at = t->root; at;) {
		const struct treap_node *a = &t->v[at - 1];
		if (a->key >= x) {
			best = a->key;
			at = a->left;
		} else {
			at = a->right;
		}
	}
	return best;
}

/* The greatest key not above x, or 0. */
static uint64_t treap_floor(const struct treap *t, uint64_t x)
{
	uint64_t best = 0;
	for (uint32_t at = t->root; at;) {
		const struct treap_node *a = &t->v[at - 1];
		if (a->key <= x) {
			best = a->key;
			at = a->right;
		} else {
			at = a->left;
		}
	}
	return best;
}

/* Memory blocks and pool blocks each have a treap; other name spaces none. */
static struct treap *treap_of(struct wsp_model *m, uint64_t key)
{
	if (!m->ordered)
		return NULL;
	unsigned space = (unsigned)(key >> 62);
	return space == 0 ? &m->by_addr[0] : space == 3 ? &m->by_addr[1] : NULL;
}

/* ---- heap blocks ------------------------------------------------------ */

/* The slot of addr's block, or the empty slot that ends its probe run. */
static size_t heap_probe(const struct wsp_model *m, uint64_t addr)
{
	size_t i = hash64(addr, m->heap_cap);
	while (m->heap_keys[i] && m->heap_keys[i] != addr)
		i = (i + 1) & (m->heap_cap - 1);
	return i;
}

/* The live block in slot i of the table, or NULL. */
static struct wsp_block *heap_at(const struct wsp_model *m, size_t i)
{
	return m->heap_keys[i] ? &m->blocks[m->heap_block[i]] : NULL;
}

static struct wsp_block *heap_find(struct wsp_model *m, uint64_t addr)
{
	return m->heap_cap ? heap_at(m, heap_probe(m, addr)) : NULL;
}

static int heap_grow(struct wsp_model *m)
{
	size_t cap = m->heap_cap ? m->heap_cap * 2 : 1024;
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

/* Insert b at slot j, the empty end of its probe run (SIZE_MAX: find it). */
static int heap_insert_at(struct wsp_model *m, const struct wsp_block *b, size_t j)
{
	/* At most an eighth full while the table is small, half beyond: a
	 * probe loop whose trip count varies costs a mispredicted branch, and
	 * on the deep benchmark (580 live blocks) an eighth full took an
	 * event 19 ns against 28 at a quarter (BENCHMARKS.md, Profiles). */
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
		j = heap_probe(m, b->addr);
	m->blocks[at] = *b;
	m->heap_keys[j] = b->addr;
	m->heap_block[j] = (uint32_t)at;
	m->block_slot[at] = (uint32_t)j;
	m->heap_used++;
	struct treap *t = treap_of(m, b->addr);
	return t ? treap_insert(t, b->addr) : 0;
}

static int heap_insert(struct wsp_model *m, const struct wsp_block *b)
{
	return heap_insert_at(m, b, SIZE_MAX);
}

/* Remove a found block, shifting later members of its probe run back. */
static void ann_drop(struct wsp_model *m, const struct wsp_block *b);

static void heap_remove(struct wsp_model *m, struct wsp_block *b)
{
	if (b->has_ann)
		ann_drop(m, b);
	struct treap *t = treap_of(m, b->addr);
	if (t)
		t->root = treap_erase(t, t->root, b->addr);
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

/* ---- annotations: names, holders, validity -------------------------------- */

static struct ann *ann_find(const struct wsp_model *m, uint64_t key)
{
	if (!m->ann_cap)
		return NULL;
	for (size_t i = hash64(key, m->ann_cap); m->anns[i].key; i = (i + 1) & (m->ann_cap - 1))
		if (m->anns[i].key == key)
			return &m->anns[i];
	return NULL;
}

static struct ann *ann_make(struct wsp_model *m, struct wsp_block *b)
{
	struct ann *a = ann_find(m, b->addr);
	if (a)
		return a;
	if ((m->ann_used + 1) * 2 > m->ann_cap) {
		size_t cap = m->ann_cap ? m->ann_cap * 2 : 256;
		struct ann *t = calloc(cap, sizeof *t);
		if (!t)
			return NULL;
		for (size_t i = 0; i < m->ann_cap; i++) {
			if (!m->anns[i].key)
				continue;
			size_t j = hash64(m->anns[i].key, cap);
			while (t[j].key)
				j = (j + 1) & (cap - 1);
			t[j] = m->anns[i];
			t[j].st.name = t[j].name;
		}
		free(m->anns);
		m->anns = t;
		m->ann_cap = cap;
	}
	size_t j = hash64(b->addr, m->ann_cap);
	while (m->anns[j].key)
		j = (j + 1) & (m->ann_cap - 1);
	a = &m->anns[j];
	*a = (struct ann){ .key = b->addr, .st.last_use_ns = b->time_ns };
	m->ann_used++;
	b->has_ann = true;
	return a;
}

/* The block is going: what it held as collectable goes with it. */
static void ann_drop(struct wsp_model *m, const struct wsp_block *b)
{
	struct ann *a = ann_find(m, b->addr);
	if (!a)
		return;
	if (a->st.collectable && !b->excluded)
		m->kinds[b->kind].collectable_bytes -= weigh(m, b, b->size);
	free(a->name);
	size_t mask = m->ann_cap - 1, i = (size_t)(a - m->anns);
	for (size_t j = (i + 1) & mask; m->anns[j].key; j = (j + 1) & mask) {
		size_t home = hash64(m->anns[j].key, m->ann_cap);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->anns[i] = m->anns[j];
			m->anns[i].st.name = m->anns[i].name;
			i = j;
		}
	}
	m->anns[i].key = 0;
	m->ann_used--;
}

/* In use: held, valid, or never said otherwise. */
static void ann_settle(struct wsp_model *m, const struct wsp_block *b, struct ann *a, uint64_t time)
{
	bool collectable = a->st.annotated && a->st.refs <= 0 && a->st.validity != WSP_VALIDITY_VALID;
	if (collectable == a->st.collectable)
		return;
	a->st.collectable = collectable;
	if (b->excluded)
		return;
	struct wsp_kind_stats *k = &m->kinds[b->kind];
	if (collectable) {
		k->collectable_bytes += weigh(m, b, b->size);
	} else {
		k->collectable_bytes -= weigh(m, b, b->size);
		note_in_use(k, time);
	}
}

static int build_ordered(struct wsp_model *m)
{
	m->ordered = true;
	m->by_addr[0].seed = m->by_addr[1].seed = 0x2545f491u;
	for (size_t i = 0; i < m->heap_cap; i++) {
		struct treap *t = m->heap_keys[i] ? treap_of(m, m->heap_keys[i]) : NULL;
		if (t && treap_insert(t, m->heap_keys[i]))
			return -ENOMEM;
	}
	return 0;
}

/* The block an address points into: a pool sub-allocation first, then
 * memory; exact addresses first, interior ones through the treaps (kept
 * from the first interior pointer on). */
static struct wsp_block *block_at(struct wsp_model *m, uint64_t addr)
{
	uint64_t pool_key = addr ^ 3ull << 62;
	struct wsp_block *b = heap_find(m, pool_key);
	if (!b)
		b = heap_find(m, addr);
	if (b || addr >> 62)
		return b;
	if (!m->ordered && build_ordered(m))
		return NULL;
	const uint64_t keys[2] = { pool_key, addr };
	const struct treap *t[2] = { &m->by_addr[1], &m->by_addr[0] };
	for (int i = 0; i < 2; i++) {
		uint64_t k = treap_floor(t[i], keys[i]);
		b = k && (k >> 62) == (keys[i] >> 62) ? heap_find(m, k) : NULL;
		if (b && keys[i] - k < b->size)
			return b;
	}
	return NULL;
}

static int phase_push(struct wsp_model *m, const wsprof_event *ev)
{
	unsigned depth = 0;
	for (size_t i = 0; i < m->nphases; i++)
		depth += m->phases[i].tid == ev->tid && !m->phases[i].end_ns;
	if (wsp_grow(&m->phases, &m->phases_cap, m->nphases + 1, sizeof *m->phases))
		return -ENOMEM;
	char *name = strdup(ev->text ? ev->text : "");
	if (!name)
		return -ENOMEM;
	m->phases[m->nphases++] = (struct wsp_phase){ name, ev->tid, depth, ev->time_ns, 0 };
	return 0;
}

static void phase_pop(struct wsp_model *m, const wsprof_event *ev)
{
	for (size_t i = m->nphases; i-- > 0;) {
		if (m->phases[i].tid == ev->tid && !m->phases[i].end_ns) {
			m->phases[i].end_ns = ev->time_ns > m->phases[i].start_ns ? ev->time_ns : m->phases[i].start_ns + 1;
			return;
		}
	}
}

/* Every sub-allocation of a pool is freed (NVTX heap reset). */
static int pool_reset(struct wsp_model *m, uint64_t pool)
{
	uint64_t *keys = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < m->heap_cap; i++) {
		const struct wsp_block *b = heap_at(m, i);
		if (b && b->kind == WSPROF_KIND_POOL && b->origin == pool) {
			if (wsp_grow(&keys, &cap, n + 1, sizeof *keys)) {
				free(keys);
				return -ENOMEM;
			}
			keys[n++] = b->addr;
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct wsp_block *b = heap_find(m, keys[i]);
		lose(m, b);
		if (!b->excluded)
			count_free(m, b);
		heap_remove(m, b);
	}
	free(keys);
	return 0;
}

static int ensure_wss(struct wsp_model *m, wsprof_trace *t);

static int touch_access(struct wsp_model *m, const wsprof_event *ev, struct wsp_block *b)
{
	int err = ensure_wss(m, NULL);
	if (err)
		return err;
	uint64_t start = ev->addr, len = ev->size ? ev->size : 1;
	if (len > b->addr + b->size - start && start >= b->addr)
		len = b->addr + b->size - start;
	b->last_access_ns = ev->time_ns;
	if (len > b->accessed_bytes)
		b->accessed_bytes = len;
	const wsprof_region r = { start, len };
	return wsp_wss_add(m->wss, WSPROF_ACCESS_ANNOTATED, ev->time_ns, 0, &r, 1);
}

static int apply_annotation(struct wsp_model *m, const wsprof_event *ev)
{
	switch (ev->op) {
	case WSPROF_ANN_PHASE_PUSH:
		return phase_push(m, ev);
	case WSPROF_ANN_PHASE_POP:
		phase_pop(m, ev);
		return 0;
	case WSPROF_ANN_SNAPSHOT: {
		char *label = strdup(ev->text ? ev->text : "");
		if (!label || wsp_grow(&m->snapshots, &m->snapshots_cap, m->nsnapshots + 1, sizeof *m->snapshots)) {
			free(label);
			return -ENOMEM;
		}
		m->snapshots[m->nsnapshots++] = (struct wsp_snapshot){ label, ev->time_ns, ev->seq };
		return 0;
	}
	case WSPROF_ANN_POOL_RESET:
		return pool_reset(m, ev->handle);
	}
	struct wsp_block *b = block_at(m, ev->addr);
	if (!b) {
		m->unknown_annotations++;
		return 0;
	}
	struct ann *a = ann_make(m, b);
	if (!a)
		return -ENOMEM;
	switch (ev->op) {
	case WSPROF_ANN_NAME: {
		char *name = strdup(ev->text ? ev->text : "");
		if (!name)
			return -ENOMEM;
		free(a->name);
		a->name = name;
		a->st.name = name;
		return 0;
	}
	case WSPROF_ANN_ACQUIRE: a->st.refs++; a->st.annotated = true; break;
	case WSPROF_ANN_RELEASE: a->st.refs--; a->st.annotated = true; break;
	case WSPROF_ANN_VALID: a->st.validity = WSP_VALIDITY_VALID; a->st.annotated = true; break;
	case WSPROF_ANN_INVALID: a->st.validity = WSP_VALIDITY_INVALID; a->st.annotated = true; break;
	case WSPROF_ANN_TOUCH: {
		/* An access the program reports: the source for memory wsprof cannot watch. */
		int err = touch_access(m, ev, b);
		if (err)
			return err;
		break;
	}
	default: return 0; /* an annotation of a later version */
	}
	a->st.last_use_ns = ev->time_ns;
	ann_settle(m, b, a, ev->time_ns);
	return 0;
}

/* ---- address ranges (mmap, CUDA VMM) ------------------------------------ */

static struct range_set *ranges_of(struct wsp_model *m, unsigned kind)
{
	switch (kind) {
	case WSPROF_KIND_MMAP: return &m->ranges[0];
	case WSPROF_KIND_CUDA_VMM_MAPPED: return &m->ranges[1];
	case WSPROF_KIND_CUDA_VMM_RESERVED: return &m->ranges[2];
	case WSPROF_KIND_MMAP_RESERVED: return &m->ranges[3];
	default: return NULL;
	}
}

/* Blocks found by address share one table, in four name spaces (the top
 * two bits of the key): memory (heap, device, managed, pinned host),
 * registered host ranges (a malloc'd buffer may also be registered), VMM
 * handles (opaque numbers) and pool sub-allocations (inside other blocks). */
static uint64_t block_key(unsigned kind, unsigned op, uint64_t addr)
{
	uint64_t space = 0;
	if (kind == WSPROF_KIND_POOL)
		space = 3;
	else if (kind == WSPROF_KIND_CUDA_VMM)
		space = 2;
	else if (kind == WSPROF_KIND_CUDA_HOST &&
		 (op == WSPROF_OP_CU_MEM_HOST_REGISTER || op == WSPROF_OP_CU_MEM_HOST_UNREGISTER))
		space = 1;
	return addr ^ space << 62;
}

static size_t range_first_after(const struct range_set *rs, uint64_t addr)
{
	size_t lo = 0, hi = rs->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (rs->v[mid].addr + rs->v[mid].size <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo; /* first range ending after addr */
}

static int range_insert_at(struct range_set *rs, size_t i, const struct wsp_block *b)
{
	if (wsp_grow(&rs->v, &rs->cap, rs->n + 1, sizeof *rs->v))
		return -ENOMEM;
	memmove(rs->v + i + 1, rs->v + i, (rs->n - i) * sizeof *rs->v);
	rs->v[i] = *b;
	rs->n++;
	return 0;
}

static int stash_add(struct stash *s, const struct wsp_block *b)
{
	if (wsp_grow(&s->blocks, &s->cap, s->n + 1, sizeof *s->blocks))
		return -ENOMEM;
	s->blocks[s->n++] = *b;
	return 0;
}

/* Is any piece of r's mapping still live? */
static bool origin_alive(const struct range_set *rs, const struct wsp_block *r)
{
	for (size_t i = range_first_after(rs, r->origin); i < rs->n && rs->v[i].addr < r->origin + r->origin_size; i++)
		if (rs->v[i].origin == r->origin)
			return true;
	return false;
}

/* Release [addr, addr+len) from a range set. Pieces go to `into` when
 * given (a MOVE); otherwise a mapping whose last piece goes counts as one
 * free. */
static int range_cut(struct wsp_model *m, struct range_set *rs, uint64_t addr, uint64_t len, struct stash *into)
{
	uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
	size_t i = range_first_after(rs, addr);
	while (i < rs->n && rs->v[i].addr < end) {
		struct wsp_block r = rs->v[i];
		uint64_t lo = r.addr > addr ? r.addr : addr;
		uint64_t hi = r.addr + r.size < end ? r.addr + r.size : end;
		struct wsp_block piece = r, left = r, right = r;
		piece.addr = lo;
		piece.size = hi - lo;
		left.size = lo - r.addr;
		right.addr = hi;
		right.size = r.addr + r.size - hi;
		sub_live(m, &r, piece.size, 0);
		memmove(rs->v + i, rs->v + i + 1, (rs->n - i - 1) * sizeof *rs->v);
		rs->n--;
		/* What is left of r on either side stays live, as part of r's mapping. */
		if (left.size && range_insert_at(rs, i++, &left))
			return -ENOMEM;
		if (right.size && range_insert_at(rs, i++, &right))
			return -ENOMEM;
		if (into && stash_add(into, &piece))
			return -ENOMEM;
		if (!origin_alive(rs, &r)) {
			sub_live(m, &r, 0, 1);
			if (into)
				into->blocks_gone += !r.excluded;
			else if (!r.excluded)
				count_free(m, &r);
		}
	}
	return 0;
}

/* The other half of the mmap address space: committed and reserved
 * mappings share it, and MAP_FIXED, munmap and mremap act on both. */
static struct range_set *ranges_beside(struct wsp_model *m, unsigned kind)
{
	return kind == WSPROF_KIND_MMAP ? &m->ranges[3] : kind == WSPROF_KIND_MMAP_RESERVED ? &m->ranges[0] : NULL;
}

/* Bytes of [addr, addr+len) a range set holds. */
static uint64_t range_overlap(const struct range_set *rs, uint64_t addr, uint64_t len)
{
	uint64_t end = addr + len < addr ? UINT64_MAX : addr + len, bytes = 0;
	for (size_t i = range_first_after(rs, addr); i < rs->n && rs->v[i].addr < end; i++) {
		uint64_t lo = rs->v[i].addr > addr ? rs->v[i].addr : addr;
		uint64_t hi = rs->v[i].addr + rs->v[i].size < end ? rs->v[i].addr + rs->v[i].size : end;
		bytes += hi - lo;
	}
	return bytes;
}

/* Release [addr, addr+len) from a kind's ranges and those beside them. */
static int ranges_cut(struct wsp_model *m, unsigned kind, uint64_t addr, uint64_t len, struct stash *into)
{
	struct range_set *rs = ranges_of(m, kind), *beside = ranges_beside(m, kind);
	int err = rs ? range_cut(m, rs, addr, len, into) : 0;
	return err || !beside ? err : range_cut(m, beside, addr, len, into);
}

static int range_add(struct wsp_model *m, struct range_set *rs, struct wsp_block *b)
{
	struct range_set *beside = ranges_beside(m, b->kind);
	/* Committed where address space was reserved: a runtime's heap. */
	if (b->kind == WSPROF_KIND_MMAP && beside && range_overlap(beside, b->addr, b->size))
		b->in_reservation = true;
	int err = ranges_cut(m, b->kind, b->addr, b->size, NULL); /* MAP_FIXED over old maps */
	return err ? err : range_insert_at(rs, range_first_after(rs, b->addr), b);
}

/* ---- access samples --------------------------------------------------- */

/* Call fn for each live block (memory name space, and mmap ranges) that
 * overlaps [addr, addr+len), with the bytes of the overlap. */
static int each_overlap(struct wsp_model *m, uint64_t addr, uint64_t len,
			void (*fn)(struct wsp_model *, struct wsp_block *, uint64_t, void *), void *arg)
{
	if (addr >> 62 || !len)
		return 0;
	if (!m->ordered && build_ordered(m))
		return -ENOMEM;
	uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
	uint64_t k = treap_floor(&m->by_addr[0], addr);
	if (!k || (k >> 62))
		k = treap_ceil(&m->by_addr[0], addr);
	for (; k && k < end && !(k >> 62); k = treap_ceil(&m->by_addr[0], k + 1)) {
		struct wsp_block *b = heap_find(m, k);
		if (!b || b->addr + b->size <= addr)
			continue;
		uint64_t lo = b->addr > addr ? b->addr : addr, hi = b->addr + b->size < end ? b->addr + b->size : end;
		fn(m, b, hi - lo, arg);
	}
	struct range_set *rs = &m->ranges[0];
	for (size_t i = range_first_after(rs, addr); i < rs->n && rs->v[i].addr < end; i++) {
		struct wsp_block *b = &rs->v[i];
		uint64_t lo = b->addr > addr ? b->addr : addr, hi = b->addr + b->size < end ? b->addr + b->size : end;
		fn(m, b, hi - lo, arg);
	}
	return 0;
}

/* One region of a sample overlaps b by `bytes`: regions come in address
 * order, so the regions of one sample that overlap a block follow each
 * other, and their bytes add up (note_block, reset for each sample). */
static void note_access(struct wsp_model *m, struct wsp_block *b, uint64_t bytes, void *arg)
{
	m->note_bytes = m->note_block == b ? m->note_bytes + bytes : bytes;
	m->note_block = b;
	b->last_access_ns = *(const uint64_t *)arg;
	if (m->note_bytes > b->accessed_bytes)
		b->accessed_bytes = m->note_bytes;
}

/* Bytes of sorted regions r[0..n) inside [lo, hi). */
static uint64_t regions_inside(const wsprof_region *r, size_t n, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = n;
	while (a < b) { /* the first region ending after lo */
		size_t mid = a + (b - a) / 2;
		if (r[mid].addr + r[mid].len <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	uint64_t bytes = 0;
	for (size_t i = a; i < n && r[i].addr < hi; i++) {
		uint64_t p = r[i].addr > lo ? r[i].addr : lo, end = r[i].addr + r[i].len, q = end < hi ? end : hi;
		bytes += q > p ? q - p : 0;
	}
	return bytes;
}

/* A window [start, end] of written pages or DAMON regions, to the blocks
 * freed during it: what they held of it, they may have been accessed by
 * (the memory can have been reused since: an upper bound). */
struct departed_window {
	const wsprof_event *ev;
	uint64_t start;
};

static void note_departed(struct wsp_departed_block *d, void *arg)
{
	const struct departed_window *w = arg;
	struct wsp_block *b = &d->b;
	if (d->end_ns < w->start || b->time_ns > w->ev->time_ns)
		return;
	uint64_t hi = b->addr + b->size < b->addr ? UINT64_MAX : b->addr + b->size;
	uint64_t bytes = regions_inside(w->ev->regions, w->ev->nregions, b->addr, hi);
	if (!bytes)
		return;
	b->last_access_ns = d->end_ns;
	if (bytes > b->accessed_bytes)
		b->accessed_bytes = bytes;
}

static void note_departed_access(struct wsp_model *m, const wsprof_event *ev, uint64_t start)
{
	struct departed_window w = { ev, start };
	if (m->departed && ev->nregions)
		wsp_departed_each(m->departed, note_departed, &w);
}

/* Blocks freed during a bucket, for its bytes that no live block holds:
 * the live blocks' parts of the region (allocated by the bucket's end), in
 * the order each_overlap gives them, and how far the departed blocks,
 * visited in order of start, have counted. */
struct departed_walk {
	uint64_t end_ns;
	wsprof_region *live;
	size_t nlive, live_cap;
	bool oom;
	uint64_t cursor;
	void (*fn)(const struct wsp_block *, uint64_t bytes, void *);
	void *arg;
};

static void note_live(struct wsp_model *m, struct wsp_block *b, uint64_t bytes, void *arg)
{
	(void)m;
	(void)bytes;
	struct departed_walk *w = arg;
	if (b->time_ns > w->end_ns)
		return;
	if (wsp_grow(&w->live, &w->live_cap, w->nlive + 1, sizeof *w->live)) {
		w->oom = true;
		return;
	}
	w->live[w->nlive++] = (wsprof_region){ b->addr, b->size };
}

/* Bytes of [lo, hi) that no live block of the region holds. */
static uint64_t outside_live(const struct departed_walk *w, uint64_t lo, uint64_t hi)
{
	uint64_t bytes = hi - lo;
	for (size_t i = 0; i < w->nlive; i++) {
		uint64_t p = w->live[i].addr > lo ? w->live[i].addr : lo;
		uint64_t e = w->live[i].addr + w->live[i].len, q = e < hi ? e : hi;
		bytes -= q > p ? q - p : 0;
	}
	return bytes;
}

/* Each byte once: what lies below the cursor was counted. */
static void walk_departed(struct wsp_departed_block *d, uint64_t lo, uint64_t hi, void *arg)
{
	struct departed_walk *w = arg;
	lo = lo > w->cursor ? lo : w->cursor;
	if (hi <= lo)
		return;
	w->cursor = hi;
	uint64_t bytes = outside_live(w, lo, hi);
	if (bytes)
		w->fn(&d->b, bytes, w->arg);
}

int wsp_model_each_departed(struct wsp_model *m, uint64_t start_ns, uint64_t end_ns, uint64_t addr, uint64_t len,
			    void (*fn)(const struct wsp_block *, uint64_t bytes, void *), void *arg)
{
	if (!m->departed || !len)
		return 0;
	struct departed_walk w = { .end_ns = end_ns, .cursor = addr, .fn = fn, .arg = arg };
	int err = each_overlap(m, addr, len, note_live, &w);
	if (!err && w.oom)
		err = -ENOMEM;
	if (!err)
		err = wsp_departed_each_overlap(m->departed, start_ns, end_ns, addr, len, walk_departed, &w);
	free(w.live);
	return err;
}

struct attribution {
	struct wsp_model *m;
	uint64_t *kind_bytes, attributed;
	uint64_t estimated;  /* a sampled trace's heap bytes, weighed */
	uint64_t end_ns;     /* blocks allocated after the bucket ended are not its */
};

static void add_bytes(struct attribution *a, const struct wsp_block *b, uint64_t bytes)
{
	if (estimated(a->m, b->kind)) {
		a->estimated += weigh(a->m, b, bytes);
		return;
	}
	a->kind_bytes[b->kind] += bytes;
	a->attributed += bytes;
}

static void add_to_kind(struct wsp_model *m, struct wsp_block *b, uint64_t bytes, void *arg)
{
	(void)m;
	struct attribution *a = arg;
	if (b->time_ns <= a->end_ns)
		add_bytes(a, b, bytes);
}

static void add_departed(const struct wsp_block *b, uint64_t bytes, void *arg)
{
	add_bytes(arg, b, bytes);
}

/* The bytes of a bucket's region go to the kinds of the blocks live in
 * it: live when the bucket closes (and allocated by its end), else freed
 * during it (departed.h). A sampled heap gets its estimate, at most the
 * bytes no other kind's block holds: the kinds never add up to more than
 * was accessed. */
static uint64_t attribute(void *ctx, uint64_t start_ns, uint64_t end_ns, uint64_t addr, uint64_t len,
			  uint64_t *kind_bytes)
{
	struct wsp_model *m = ctx;
	struct attribution a = { .m = m, .kind_bytes = kind_bytes, .end_ns = end_ns };
	each_overlap(m, addr, len, add_to_kind, &a);
	if (a.attributed < len)
		wsp_model_each_departed(m, start_ns, end_ns, addr, len, add_departed, &a);
	uint64_t rest = len > a.attributed ? len - a.attributed : 0;
	uint64_t heap = a.estimated < rest ? a.estimated : rest;
	kind_bytes[WSPROF_KIND_HEAP] += heap;
	return rest - heap;
}

/* With totals only, nothing of a window is matched to blocks. */
static uint64_t attribute_nothing(void *ctx, uint64_t start_ns, uint64_t end_ns, uint64_t addr, uint64_t len,
				  uint64_t *kind_bytes)
{
	(void)ctx;
	(void)start_ns;
	(void)end_ns;
	(void)addr;
	(void)kind_bytes;
	return len;
}

static int ensure_wss(struct wsp_model *m, wsprof_trace *t)
{
	if (m->wss)
		return 0;
	if (t)
		m->window_ns = (uint64_t)wsprof_trace_process(t)->window_ms * 1000000u;
	uint64_t bucket = m->wss_bucket_ns ? m->wss_bucket_ns : m->window_ns ? m->window_ns : 100000000u;
	m->wss = wsp_wss_new(bucket, m->totals_only ? attribute_nothing : attribute, m);
	return m->wss ? 0 : -ENOMEM;
}

static int apply_access(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev)
{
	int e = ensure_wss(m, t);
	if (e)
		return e;
	m->note_block = NULL;
	for (size_t i = 0; !m->totals_only && i < ev->nregions; i++) {
		int err = each_overlap(m, ev->regions[i].addr, ev->regions[i].len, note_access, (void *)&ev->time_ns);
		if (err)
			return err;
	}
	/* A window (not a moment: a launch, a block read as it was freed) may
	 * have seen blocks freed before it was recorded. */
	if (wsp_access_is_window(ev->op, ev->size)) {
		uint64_t start = ev->time_ns > ev->size ? ev->time_ns - ev->size : 0;
		if (!m->totals_only)
			note_departed_access(m, ev, start);
		if (ev->time_ns > m->windowed_end)
			m->windowed_end = ev->time_ns;
	}
	return wsp_wss_add(m->wss, ev->op, ev->time_ns, ev->size, ev->regions, ev->nregions);
}

/* ---- realloc/mremap in flight ----------------------------------------- */

static struct stash *stash_of(struct wsp_model *m, uint32_t tid, bool create)
{
	struct stash *free_slot = NULL;
	for (size_t i = 0; i < m->nstashes; i++) {
		if (m->stashes[i].used && m->stashes[i].tid == tid)
			return &m->stashes[i];
		if (!m->stashes[i].used && !free_slot)
			free_slot = &m->stashes[i];
	}
	if (!create)
		return NULL;
	if (!free_slot) {
		size_t cap = m->nstashes;
		if (wsp_grow(&m->stashes, &cap, m->nstashes + 1, sizeof *m->stashes))
			return NULL;
		free_slot = &m->stashes[m->nstashes++];
		memset(free_slot, 0, sizeof *free_slot);
	}
	free_slot->used = true;
	free_slot->tid = tid;
	free_slot->n = 0;
	free_slot->moved = 0;
	free_slot->blocks_gone = 0;
	return free_slot;
}

/* A realloc/mremap ended without its old block coming back: one free. */
static void move_done(struct wsp_model *m, struct stash *s)
{
	for (size_t i = 0; i < s->n; i++) {
		if (!s->blocks[i].excluded) {
			count_free(m, &s->blocks[i]);
			break;
		}
	}
	s->used = false;
}

/* In a sampled trace, a realloc whose new block was not sampled ends its
 * MOVE with a FREE of the same address, by the same thread (which a block
 * allocated there meanwhile by another thread must not take). */
static bool move_ended_by_free(struct wsp_model *m, uint32_t tid, uint64_t key)
{
	struct stash *s = stash_of(m, tid, false);
	if (!s || s->moved != key)
		return false;
	move_done(m, s);
	return true;
}


/* ---- caller filter ---------------------------------------------------- */

static bool module_matches(const char *path, const char *want)
{
	if (strchr(want, '/'))
		return strcmp(path, want) == 0;
	const char *base = strrchr(path, '/');
	return strcmp(base ? base + 1 : path, want) == 0;
}

static bool is_cxx_runtime(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, "libstdc++.so", 12) == 0 || strncmp(base, "libc++.so", 9) == 0;
}

static bool caller_check(struct wsp_model *m, wsprof_trace *t, uint64_t stack)
{
	uint64_t ips[64];
	size_t depth = wsprof_trace_stack(t, stack, ips, 64);
	if (depth > 64)
		depth = 64;
	for (size_t i = 0; i < depth; i++) {
		/* Return addresses point after the call: look up the call itself. */
		const char *mod = wsprof_trace_module_at(t, i ? ips[i] - 1 : ips[i], NULL);
		if (!mod)
			return false;
		if (is_cxx_runtime(mod))
			continue;
		for (const char *const *c = m->callers; *c; c++)
			if (module_matches(mod, *c))
				return true;
		return false;
	}
	return false;
}

static bool caller_ok(struct wsp_model *m, wsprof_trace *t, uint64_t stack)
{
	if (!m->callers)
		return true;
	if (!stack)
		return false;
	if ((m->ccache_used + 1) * 2 > m->ccache_cap) {
		size_t cap = m->ccache_cap ? m->ccache_cap * 2 : 256;
		struct caller_slot *c = calloc(cap, sizeof *c);
		if (!c)
			return caller_check(m, t, stack);
		for (size_t i = 0; i < m->ccache_cap; i++) {
			if (!m->ccache[i].stack)
				continue;
			size_t j = hash64(m->ccache[i].stack, cap);
			while (c[j].stack)
				j = (j + 1) & (cap - 1);
			c[j] = m->ccache[i];
		}
		free(m->ccache);
		m->ccache = c;
		m->ccache_cap = cap;
	}
	size_t j = hash64(stack, m->ccache_cap);
	for (; m->ccache[j].stack; j = (j + 1) & (m->ccache_cap - 1))
		if (m->ccache[j].stack == stack)
			return m->ccache[j].ok;
	m->ccache[j].stack = stack;
	m->ccache[j].ok = caller_check(m, t, stack);
	m->ccache_used++;
	return m->ccache[j].ok;
}

/* ---- events ----------------------------------------------------------- */

static int apply_alloc(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev)
{
	struct wsp_kind_stats *k = &m->kinds[ev->kind];
	struct wsp_block b = { .addr = ev->addr, .size = ev->size, .stack = ev->stack, .origin = ev->addr,
			       .origin_size = ev->size, .tid = ev->tid, .time_ns = ev->time_ns,
			       .kind = (uint8_t)ev->kind, .device = (int16_t)(ev->device >= 0 && ev->device < INT16_MAX ? ev->device : -1),
			       .excluded = !caller_ok(m, t, ev->stack) };
	if (ev->kind == WSPROF_KIND_POOL)
		b.origin = ev->handle; /* the pool it was carved from */
	struct stash *s = stash_of(m, ev->tid, false);
	if (s) /* the old block of a realloc/mremap */
		move_done(m, s);
	if (m->per_stack || m->sample_bytes) { /* what allocation numbers are for */
		uint64_t *serial = serial_of(m, ev->tid);
		if (!serial)
			return -ENOMEM;
		b.serial = ++*serial;
	}
	uint64_t count = block_count(m, &b), bytes = weigh(m, &b, ev->size);
	if (m->per_stack && !b.excluded) {
		int64_t site = site_of(m, ev->kind, ev->stack);
		if (site < 0)
			return (int)site;
		b.site = (uint32_t)site;
		m->sites[site].allocations += count;
		m->sites[site].bytes += bytes;
	}
	int err;
	struct range_set *rs = ranges_of(m, ev->kind);
	if (rs) {
		err = range_add(m, rs, &b);
	} else {
		b.addr = block_key(ev->kind, ev->op, ev->addr);
		size_t j = m->heap_cap ? heap_probe(m, b.addr) : SIZE_MAX;
		struct wsp_block *old = j != SIZE_MAX ? heap_at(m, j) : NULL;
		if (old) { /* its free was not seen: it is gone all the same */
			lose(m, old);
			heap_remove(m, old);
			j = SIZE_MAX; /* the run has changed */
		}
		err = heap_insert_at(m, &b, j);
	}
	if (err)
		return err;
	if (!b.excluded) {
		k->allocations += count;
		k->total_bytes += bytes;
	}
	gain(m, &b, ev->time_ns);
	return 0;
}

/* mprotect: the part of the range on the other side (reserved, for a
 * commit; committed, for PROT_NONE) changes sides, one allocation of the
 * event's kind per piece; the rest of the range is left as it was (a JIT
 * switching committed code between writable and executable allocates
 * nothing). */
static int apply_protect(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev)
{
	struct range_set *from = ranges_beside(m, ev->kind);
	if (!from)
		return 0;
	uint64_t addr = ev->addr, end = ev->addr + ev->size < ev->addr ? UINT64_MAX : ev->addr + ev->size;
	for (;;) {
		size_t i = range_first_after(from, addr);
		if (i >= from->n || from->v[i].addr >= end)
			return 0;
		wsprof_event piece = *ev;
		piece.addr = from->v[i].addr > addr ? from->v[i].addr : addr;
		uint64_t hi = from->v[i].addr + from->v[i].size < end ? from->v[i].addr + from->v[i].size : end;
		piece.size = hi - piece.addr;
		m->kinds[ev->kind].seen = true;
		int err = apply_alloc(m, t, &piece); /* cuts the piece from the other side */
		if (err)
			return err;
		addr = hi;
	}
}

static void apply_free(struct wsp_model *m, const wsprof_event *ev, struct stash *into)
{
	uint64_t key = block_key(ev->kind, ev->op, ev->addr);
	if (into)
		into->moved = key;
	else if (m->sample_bytes && move_ended_by_free(m, ev->tid, key))
		return;
	struct wsp_block *b = heap_find(m, key);
	if (!b) {
		if (!into)
			m->untracked_frees++;
		return;
	}
	lose(m, b);
	if (into)
		stash_add(into, b);
	else if (!b->excluded)
		count_free(m, b);
	heap_remove(m, b);
}

static int apply_fail(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev)
{
	struct stash *s = stash_of(m, ev->tid, false);
	if (s) {
		for (size_t i = 0; i < s->n; i++) {
			struct wsp_block *b = &s->blocks[i];
			struct range_set *rs = ranges_of(m, b->kind);
			int err = rs ? range_add(m, rs, b) : heap_insert(m, b);
			if (err)
				return err;
			add_live(m, b, weigh(m, b, b->size), rs ? 0 : block_count(m, b), ev->time_ns);
		}
		if (s->n)
			m->kinds[s->blocks[0].kind].live_blocks += s->blocks_gone;
		s->used = false;
	}
	if (!caller_ok(m, t, ev->stack))
		return 0;
	if (m->nfailures < WSP_MODEL_FAILURES_MAX) {
		if (wsp_grow(&m->failures, &m->failures_cap, m->nfailures + 1, sizeof *m->failures))
			return -ENOMEM;
		m->failures[m->nfailures++] =
			(struct wsp_failure){ .time_ns = ev->time_ns, .seq = ev->seq, .size = ev->size, .stack = ev->stack,
					      .kind = ev->kind, .op = ev->op, .device = ev->device };
	}
	if (!m->kinds[ev->kind].failed++) {
		m->kinds[ev->kind].first_fail_seq = ev->seq;
		m->kinds[ev->kind].first_fail_time_ns = ev->time_ns;
	}
	if (m->per_stack) {
		int64_t site = site_of(m, ev->kind, ev->stack);
		if (site < 0)
			return (int)site;
		m->sites[site].failed++;
	}
	return 0;
}

/* A sample of a device's free memory. */
static int note_device(struct wsp_model *m, const wsprof_event *ev)
{
	struct wsp_device_stats *d = NULL;
	for (size_t i = 0; i < m->ndevices && !d; i++)
		if (m->devices[i].device == ev->device)
			d = &m->devices[i];
	if (!d) {
		if (wsp_grow(&m->devices, &m->devices_cap, m->ndevices + 1, sizeof *m->devices) ||
		    wsp_grow(&m->device_used, &m->device_used_cap, m->ndevices + 1, sizeof *m->device_used))
			return -ENOMEM;
		m->device_used[m->ndevices] = (struct wsp_series){ 0 };
		d = &m->devices[m->ndevices++];
		*d = (struct wsp_device_stats){ .device = ev->device, .free_min = UINT64_MAX };
	}
	uint64_t used = ev->device_total > ev->device_free ? ev->device_total - ev->device_free : 0;
	if (wsp_series_note(&m->device_used[d - m->devices], ev->time_ns, used, ev->device_total))
		return -ENOMEM;
	d->samples++;
	d->total = ev->device_total;
	d->free_last = ev->device_free;
	if (ev->device_free < d->free_min) {
		d->free_min = ev->device_free;
		d->free_min_time_ns = ev->time_ns;
	}
	return 0;
}

static int apply_event(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev);

/* Where a kind's live or in-use bytes may have changed, the series notes
 * them (unless totals only). */
int wsp_model_apply(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev)
{
	int err = apply_event(m, t, ev);
	if (err || m->totals_only)
		return err;
	switch (ev->type) {
	case WSPROF_EV_ALLOC:
	case WSPROF_EV_FREE:
	case WSPROF_EV_MOVE:
	case WSPROF_EV_UNMAP:
	case WSPROF_EV_FAIL:
		if (ev->kind < WSPROF_KIND_COUNT) {
			const struct wsp_kind_stats *k = &m->kinds[ev->kind];
			return wsp_series_note(&m->live[ev->kind], ev->time_ns, k->live_bytes,
					       k->live_bytes - k->collectable_bytes);
		}
		return 0;
	case WSPROF_EV_ANNOTATE: /* which kind's in-use bytes changed is the block's */
		for (unsigned kind = 0; kind < WSPROF_KIND_COUNT; kind++) {
			const struct wsp_kind_stats *k = &m->kinds[kind];
			if (k->seen && wsp_series_note(&m->live[kind], ev->time_ns, k->live_bytes,
						       k->live_bytes - k->collectable_bytes))
				return -ENOMEM;
		}
		return 0;
	default:
		return 0;
	}
}

const struct wsp_series *wsp_model_live_series(const struct wsp_model *m, unsigned kind)
{
	return kind < WSPROF_KIND_COUNT ? &m->live[kind] : NULL;
}

const struct wsp_series *wsp_model_device_series(const struct wsp_model *m, size_t device_index)
{
	return device_index < m->ndevices ? &m->device_used[device_index] : NULL;
}

size_t wsp_model_failures(const struct wsp_model *m, const struct wsp_failure **failures)
{
	*failures = m->failures;
	return m->nfailures;
}

static int apply_event(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev)
{
	if (!m->window_ns && t)
		m->window_ns = (uint64_t)wsprof_trace_process(t)->window_ms * 1000000u;
	if (ev->time_ns > m->last_time)
		m->last_time = ev->time_ns;
	m->seq = ev->seq;
	/* A kind shows up once something was allocated (or failed to be). */
	if ((ev->type == WSPROF_EV_ALLOC && ev->op != WSPROF_OP_MPROTECT) || ev->type == WSPROF_EV_FAIL)
		m->kinds[ev->kind].seen = true;
	switch (ev->type) {
	case WSPROF_EV_ALLOC:
		return ev->op == WSPROF_OP_MPROTECT ? apply_protect(m, t, ev) : apply_alloc(m, t, ev);
	case WSPROF_EV_FREE:
		apply_free(m, ev, NULL);
		return 0;
	case WSPROF_EV_MOVE: {
		struct stash *s = stash_of(m, ev->tid, true);
		if (!s)
			return -ENOMEM;
		if (ranges_of(m, ev->kind))
			return ranges_cut(m, ev->kind, ev->addr, ev->size, s);
		apply_free(m, ev, s);
		return 0;
	}
	case WSPROF_EV_FAIL:
		return apply_fail(m, t, ev);
	case WSPROF_EV_UNMAP:
		return ranges_cut(m, ev->kind, ev->addr, ev->size, NULL);
	case WSPROF_EV_DEVICE_MEMORY:
		return note_device(m, ev);
	case WSPROF_EV_ANNOTATE:
		return apply_annotation(m, ev);
	case WSPROF_EV_ACCESS:
		return apply_access(m, t, ev);
	case WSPROF_EV_RSS:
		if (wsp_grow(&m->rss, &m->rss_cap, m->nrss + 1, sizeof *m->rss))
			return -ENOMEM;
		m->rss[m->nrss++] = (struct wsp_rss_point){ ev->time_ns, ev->size };
		return 0;
	case WSPROF_EV_FORK:
		if (wsp_grow(&m->children, &m->children_cap, m->nchildren + 1, sizeof *m->children))
			return -ENOMEM;
		m->children[m->nchildren++] = ev->child_pid;
		return 0;
	case WSPROF_EV_EXEC:
		free(m->exec_path);
		m->exec_path = strdup(ev->path ? ev->path : "");
		return m->exec_path ? 0 : -ENOMEM;
	default:
		return 0;
	}
}

const struct wsp_kind_stats *wsp_model_kind(const struct wsp_model *m, unsigned kind)
{
	return kind < WSPROF_KIND_COUNT ? &m->kinds[kind] : NULL;
}

uint64_t wsp_model_mmap_in_reservations(const struct wsp_model *m)
{
	uint64_t bytes = 0;
	for (size_t i = 0; i < m->ranges[0].n; i++) {
		const struct wsp_block *b = &m->ranges[0].v[i];
		bytes += b->in_reservation && !b->excluded ? b->size : 0;
	}
	return bytes;
}

uint64_t wsp_model_untracked_frees(const struct wsp_model *m)
{
	return m->untracked_frees;
}

uint64_t wsp_model_last_time(const struct wsp_model *m)
{
	return m->last_time;
}

size_t wsp_model_children(const struct wsp_model *m, const uint32_t **pids)
{
	*pids = m->children;
	return m->nchildren;
}

const struct wsp_ann_state *wsp_model_ann(const struct wsp_model *m, const struct wsp_block *b)
{
	const struct ann *a = b->has_ann ? ann_find(m, b->addr) : NULL;
	return a ? &a->st : NULL;
}

uint64_t wsp_block_addr(const struct wsp_block *b)
{
	return b->addr & ~(3ull << 62);
}

uint64_t wsp_model_unknown_annotations(const struct wsp_model *m)
{
	return m->unknown_annotations;
}

size_t wsp_model_phases(const struct wsp_model *m, const struct wsp_phase **phases)
{
	*phases = m->phases;
	return m->nphases;
}

size_t wsp_model_snapshots(const struct wsp_model *m, const struct wsp_snapshot **snapshots)
{
	*snapshots = m->snapshots;
	return m->nsnapshots;
}

const struct wsp_wss *wsp_model_wss(const struct wsp_model *m)
{
	return m->wss;
}

size_t wsp_model_rss(const struct wsp_model *m, const struct wsp_rss_point **points)
{
	*points = m->rss;
	return m->nrss;
}

int wsp_model_finish(struct wsp_model *m)
{
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		if (wsp_series_extend(&m->live[k], m->last_time))
			return -ENOMEM;
	for (size_t i = 0; i < m->ndevices; i++)
		if (wsp_series_extend(&m->device_used[i], m->last_time))
			return -ENOMEM;
	return m->wss ? wsp_wss_finish(m->wss) : 0;
}

size_t wsp_model_devices(const struct wsp_model *m, const struct wsp_device_stats **devices)
{
	*devices = m->devices;
	return m->ndevices;
}

const char *wsp_model_exec(const struct wsp_model *m)
{
	return m->exec_path;
}

struct site_access {
	uint64_t accessed, coldest;
};

/* A block not in its site's figures yet: live, or freed and kept. */
static void block_access(const struct wsp_model *m, const struct wsp_block *b, uint64_t end,
			 struct site_access *acc)
{
	if (b->excluded || b->site >= m->nsites)
		return;
	uint64_t idle = idle_before(b, end);
	acc[b->site].accessed += weigh(m, b, b->accessed_bytes < b->size ? b->accessed_bytes : b->size);
	if (idle > acc[b->site].coldest)
		acc[b->site].coldest = idle;
}

static void live_access(const struct wsp_model *m, const struct wsp_block *b, struct site_access *acc)
{
	block_access(m, b, m->last_time, acc);
}

struct gone_access {
	const struct wsp_model *m;
	struct site_access *acc;
};

static void gone_access(struct wsp_departed_block *d, void *arg)
{
	struct gone_access *g = arg;
	block_access(g->m, &d->b, d->end_ns, g->acc);
}

void wsp_model_each_site(const struct wsp_model *m, void (*fn)(const struct wsp_site_stats *, void *), void *arg)
{
	struct site_access *acc = calloc(m->nsites ? m->nsites : 1, sizeof *acc);
	for (size_t i = 0; acc && i < m->heap_cap; i++) {
		const struct wsp_block *b = heap_at(m, i);
		if (b)
			live_access(m, b, acc);
	}
	for (size_t r = 0; acc && r < sizeof m->ranges / sizeof *m->ranges; r++)
		for (size_t i = 0; i < m->ranges[r].n; i++)
			live_access(m, &m->ranges[r].v[i], acc);
	struct gone_access ga = { m, acc };
	if (acc && m->departed)
		wsp_departed_each(m->departed, gone_access, &ga);
	for (size_t i = 0; i < m->nsites; i++) {
		const struct site *s = &m->sites[i];
		struct wsp_site_stats st = {
			.stack = s->stack,
			.kind = s->kind,
			.allocations = s->allocations,
			.bytes = s->bytes,
			.failed = s->failed,
			.temporary = s->temporary,
			.peak_bytes = s->snap_epoch == m->epoch[s->kind] ? s->snap : s->live,
			.leaked_bytes = s->live,
			.leaked_blocks = s->live_blocks,
			.accessed_bytes = s->accessed + (acc ? acc[i].accessed : 0),
			.coldest_idle_ns = acc && acc[i].coldest > s->coldest ? acc[i].coldest : s->coldest,
		};
		fn(&st, arg);
	}
	free(acc);
}

void wsp_model_each_live(const struct wsp_model *m, void (*fn)(const struct wsp_block *, void *), void *arg)
{
	for (size_t i = 0; i < m->heap_cap; i++) {
		const struct wsp_block *b = heap_at(m, i);
		if (b)
			fn(b, arg);
	}
	for (size_t r = 0; r < sizeof m->ranges / sizeof *m->ranges; r++)
		for (size_t i = 0; i < m->ranges[r].n; i++)
			fn(&m->ranges[r].v[i], arg);
}
