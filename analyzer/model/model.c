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
#include "model_internal.h"

#include "check.h"
#include "departed.h"
#include "grow.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Up to this many slots (384 KiB) the heap table is kept sparse. */
#define HEAP_SPARSE_SLOTS (1u << 15)


struct wsp_model *wsp_model_new(const struct wsp_model_options *opt)
{
	static const struct wsp_model_options everything = { 0 };
	struct wsp_model *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	if (!opt)
		opt = &everything;
	m->callers = opt->callers;
	m->per_stack = opt->per_stack;
	m->wss_bucket_ns = opt->wss_bucket_ns;
	m->totals_only = opt->totals_only;
	m->unmatched_access = opt->unmatched_access || opt->no_access_figures;
	m->keep_departed = !opt->totals_only && !opt->no_access_figures;
	m->sample_bytes = opt->sample_bytes;
	m->child = opt->child;
	return m;
}

/* ---- sampled traces ------------------------------------------------------ */

/* A heap block of s bytes was sampled with probability p = 1 - exp(-s/N)
 * (preload/hooks/sampling.c); weighing it by 1/p (its bytes s/p, its count 1/p)
 * makes every sum over sampled blocks an unbiased estimate of the sum
 * over all blocks (Horvitz-Thompson). */
double wsp_sample_probability(uint64_t sample_bytes, uint64_t size)
{
	if (sample_bytes <= 1)
		return 1;
	return -expm1(-(double)(size ? size : 1) / (double)sample_bytes);
}

/* Inline: model_weigh and block_count ask it for every event. */
bool model_estimated(const struct wsp_model *m, unsigned kind)
{
	return m->sample_bytes > 1 && kind == WSPROF_KIND_HEAP;
}

bool wsp_model_estimated(const struct wsp_model *m, unsigned kind)
{
	return model_estimated(m, kind);
}

/* Bytes asked for per usable byte given, over every allocation so far. */
static double totals_share(const wsprof_heap_totals *h)
{
	return h->given && h->requested < h->given ? (double)h->requested / (double)h->given : 1.0;
}

bool wsp_model_heap_counted(const struct wsp_model *m, double *share)
{
	if (share)
		*share = totals_share(&m->totals);
	return m->heap_counted;
}

const struct wsp_kind_stats *wsp_model_heap_estimates(const struct wsp_model *m)
{
	return m->heap_counted ? &m->heap_estimates : NULL;
}

bool wsp_model_totals_estimated(const struct wsp_model *m, unsigned kind)
{
	return model_estimated(m, kind) && !(kind == WSPROF_KIND_HEAP && m->heap_counted);
}

static uint64_t scaled(uint64_t given, double share)
{
	return (uint64_t)llround((double)given * share);
}

/* The live bytes a record counts, in bytes asked for. */
static uint64_t totals_live(const wsprof_heap_totals *h)
{
	return h->given > h->given_back ? scaled(h->given - h->given_back, totals_share(h)) : 0;
}

/* A HEAP_TOTALS record: the heap's live bytes at its time and the most
 * they were since the last one, in bytes asked for. */
static int apply_totals(struct wsp_model *m, const wsprof_event *ev)
{
	const wsprof_heap_totals *h = ev->heap_totals;
	if (!h)
		return 0;
	m->totals = *h;
	m->has_totals = true;
	m->estimated_at_totals = m->kinds[WSPROF_KIND_HEAP];
	uint64_t live = totals_live(h), peak = scaled(h->peak, totals_share(h));
	if (peak < live)
		peak = live;
	/* The peak came after the last record (its clock is finer than the
	 * stamps': it may read a little later than the record). */
	uint64_t at = h->peak_ns < m->totals_last_ns ? m->totals_last_ns : h->peak_ns > ev->time_ns ? ev->time_ns : h->peak_ns;
	if (peak > m->totals_peak) {
		m->totals_peak = peak;
		m->totals_peak_ns = at;
		m->totals_peak_seq = ev->seq;
	}
	m->totals_last_ns = ev->time_ns;
	if (m->totals_only)
		return 0;
	/* The peak is a moment: what follows it until the record is not known,
	 * and the record's live bytes stand for it. */
	uint64_t collectable = m->kinds[WSPROF_KIND_HEAP].collectable_bytes;
	uint64_t live_in_use = live > collectable ? live - collectable : 0;
	if (wsp_series_note(&m->totals_live, at, peak, peak > collectable ? peak - collectable : 0) ||
	    wsp_series_note(&m->totals_live, at, live, live_in_use))
		return -ENOMEM;
	return wsp_series_note(&m->totals_live, ev->time_ns, live, live_in_use);
}

/* counted + (now - then), at least 0. */
static uint64_t plus(uint64_t counted, uint64_t now, uint64_t then)
{
	int64_t v = (int64_t)counted + ((int64_t)now - (int64_t)then);
	return v > 0 ? (uint64_t)v : 0;
}

/* The heap's figures with its totals counted, from the estimates' (*k)
 * and the last HEAP_TOTALS. What the sampled blocks changed after that
 * record is added as they estimate it: a trace that ended without its
 * last record (exit_group, SIGKILL: finished by wsprof record) keeps its
 * last moments. @return false where the totals do not apply. */
static bool counted(const struct wsp_model *m, struct wsp_kind_stats *k)
{
	if (!m->has_totals || m->sample_bytes <= 1 || m->nswitches || m->child || m->callers)
		return false; /* --caller counts only some allocations: the totals hold all */
	const wsprof_heap_totals *h = &m->totals;
	const struct wsp_kind_stats *then = &m->estimated_at_totals;
	uint64_t estimated_peak = k->peak_bytes;
	uint64_t live = totals_live(h);
	uint64_t blocks = h->allocations > h->frees ? h->allocations - h->frees : 0;
	k->live_bytes = plus(live, k->live_bytes, then->live_bytes);
	k->live_blocks = plus(blocks, k->live_blocks, then->live_blocks);
	k->allocations = plus(h->allocations, k->allocations, then->allocations);
	k->frees = plus(h->frees, k->frees, then->frees);
	k->total_bytes = plus(h->requested, k->total_bytes, then->total_bytes);
	bool peak_at_end = k->live_bytes > m->totals_peak; /* the after-record's blocks made a new one */
	k->peak_bytes = peak_at_end ? k->live_bytes : m->totals_peak;
	uint64_t peak_ns = peak_at_end ? m->last_time : m->totals_peak_ns;
	/* Truly in use: the estimates' own, which never exceeds the peak; when
	 * nothing could be given back at the estimates' peak, the peak's. */
	if (k->in_use_peak_bytes == estimated_peak) {
		k->in_use_peak_bytes = k->peak_bytes;
		k->in_use_peak_time_ns = peak_ns;
	} else if (k->in_use_peak_bytes > k->peak_bytes) {
		k->in_use_peak_bytes = k->peak_bytes;
	}
	if (k->collectable_at_peak > k->peak_bytes)
		k->collectable_at_peak = k->peak_bytes;
	k->peak_time_ns = peak_ns;
	k->peak_seq = peak_at_end ? m->seq : m->totals_peak_seq;
	k->seen = k->seen || h->allocations;
	return true;
}

/* At the finish: a sampled trace of a whole process (recorded from its
 * start, never paused, not a forked child's), all of whose allocations
 * are counted (no --caller), takes its heap totals from the last
 * HEAP_TOTALS rather than from the sampled blocks, and its live series. */
static void count_heap(struct wsp_model *m)
{
	struct wsp_kind_stats k = m->kinds[WSPROF_KIND_HEAP];
	if (!counted(m, &k))
		return;
	m->heap_estimates = m->kinds[WSPROF_KIND_HEAP];
	m->kinds[WSPROF_KIND_HEAP] = k;
	if (!m->totals_only) {
		uint64_t c = k.collectable_bytes < k.live_bytes ? k.collectable_bytes : k.live_bytes;
		if (wsp_series_note(&m->totals_live, m->last_time, k.live_bytes, k.live_bytes - c))
			return; /* out of memory: the estimates' series stays */
		struct wsp_series estimated = m->live[WSPROF_KIND_HEAP];
		m->live[WSPROF_KIND_HEAP] = m->totals_live;
		m->totals_live = estimated;
	}
	m->heap_counted = true;
}

bool wsp_model_heap_counted_now(const struct wsp_model *m, struct wsp_kind_stats *out)
{
	*out = m->kinds[WSPROF_KIND_HEAP];
	return m->heap_counted || counted(m, out);
}

/* x bytes of block b, as an estimate: x / p. */
uint64_t model_weigh(const struct wsp_model *m, const struct wsp_block *b, uint64_t x)
{
	if (!model_estimated(m, b->kind))
		return x;
	return (uint64_t)llround((double)x / wsp_sample_probability(m->sample_bytes, b->size));
}

uint64_t wsp_model_block_bytes(const struct wsp_model *m, const struct wsp_block *b)
{
	return model_weigh(m, b, b->size);
}

/* The allocations a block stands for: 1/p, rounded down or up at random
 * with the odds that keep its expectation 1/p, so that counts stay whole
 * and unbiased. The draw comes from the block's thread and allocation
 * number: the same at its allocation and at its free. */
static inline uint64_t block_count(const struct wsp_model *m, const struct wsp_block *b)
{
	if (!model_estimated(m, b->kind))
		return 1;
	double w = 1 / wsp_sample_probability(m->sample_bytes, b->size), whole = floor(w);
	uint64_t h = b->serial * 0x9e3779b97f4a7c15ull ^ (uint64_t)b->tid << 32;
	h = (h ^ h >> 31) * 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return (uint64_t)whole + ((double)(h >> 11) * 0x1p-53 < w - whole);
}

uint64_t wsp_model_block_count(const struct wsp_model *m, const struct wsp_block *b)
{
	return block_count(m, b);
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
	for (size_t i = 0; i < 2; i++) {
		wsp_tpool_free(&m->by_addr[i].pool);
		free(m->by_addr[i].place);
	}
	free(m->unordered);
	for (size_t i = 0; i < m->nphases; i++)
		free(m->phases[i].name);
	free(m->phases);
	for (size_t i = 0; i < m->nsnapshots; i++)
		free(m->snapshots[i].label);
	free(m->snapshots);
	free(m->switches);
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
	wsp_series_free(&m->totals_live);
	free(m->failures);
	free(m);
}

/* ---- figures -------------------------------------------------------- */

void model_note_in_use(struct wsp_kind_stats *k, uint64_t time)
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
	model_note_in_use(k, time);
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
	add_live(m, b, model_weigh(m, b, b->size), block_count(m, b), time);
}

void model_lose(struct wsp_model *m, const struct wsp_block *b)
{
	sub_live(m, b, model_weigh(m, b, b->size), block_count(m, b));
}

/* ---- per-stack figures and threads ------------------------------------ */

static size_t site_key_hash(size_t i, void *ctx)
{
	const struct site *s = &((const struct wsp_model *)ctx)->sites[i];
	return hash64(s->stack * WSPROF_KIND_COUNT + s->kind + 1, 0); /* unmasked */
}

/* The figures of (kind, stack), made on first use. @return index or -ENOMEM. */
static int64_t site_of(struct wsp_model *m, unsigned kind, uint64_t stack)
{
	uint64_t key = stack * WSPROF_KIND_COUNT + kind + 1;
	if (wsp_index_fit(&m->site_index, &m->site_index_cap, m->nsites + 1, 1024, 0, m->nsites, site_key_hash, NULL, m))
		return -ENOMEM;
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

static bool serial_used(const void *slot)
{
	return ((const struct serial_slot *)slot)->tid != 0;
}

static size_t serial_hash(const void *slot, void *ctx)
{
	(void)ctx;
	return hash64(((const struct serial_slot *)slot)->tid, 0); /* unmasked */
}

/* The allocation count of a thread; created at 0. NULL without memory. */
uint64_t *model_serial_of(struct wsp_model *m, uint32_t tid)
{
	if (wsp_table_room(&m->serials, &m->serials_cap, m->serials_used, sizeof *m->serials, 64, serial_used,
			   serial_hash, NULL))
		return NULL;
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
	s->accessed += model_weigh(m, b, b->accessed_bytes < b->size ? b->accessed_bytes : b->size);
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
	return wsp_block_space(b) == WSP_SPACE_MEMORY && !wsp_kind_is_address_space(b->kind);
}

/* A block that ends is kept (departed.h) until no open window can have
 * seen it: one that ended before the current bucket began, or before the
 * last window of written pages ended, cannot (less a quarter window: the
 * next window's start is measured by another clock than the events'
 * times). Its access figures reach its site when it is let go. */
static void depart(struct wsp_model *m, const struct wsp_block *b)
{
	if (!m->keep_departed || !has_memory(b) ||
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
void model_count_free(struct wsp_model *m, const struct wsp_block *b)
{
	m->kinds[b->kind].frees += block_count(m, b);
	depart(m, b);
	if (!m->per_stack)
		return;
	uint64_t *serial = model_serial_of(m, b->tid);
	if (serial && *serial == b->serial && !model_estimated(m, b->kind))
		m->sites[b->site].temporary++;
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
struct wsp_block *model_heap_at(const struct wsp_model *m, size_t i)
{
	return m->heap_keys[i] ? &m->blocks[m->heap_block[i]] : NULL;
}

struct wsp_block *model_heap_find(struct wsp_model *m, uint64_t addr)
{
	return m->heap_cap ? model_heap_at(m, heap_probe(m, addr)) : NULL;
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
		j = heap_probe(m, b->addr);
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

static int heap_insert(struct wsp_model *m, const struct wsp_block *b)
{
	return heap_insert_at(m, b, SIZE_MAX);
}

int model_heap_add(struct wsp_model *m, const struct wsp_block *b)
{
	return heap_insert(m, b);
}

/* Remove a found block, shifting later members of its probe run back. */
void model_ann_drop(struct wsp_model *m, const struct wsp_block *b);

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

size_t model_range_first_after(const struct range_set *rs, uint64_t addr)
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

/* [lo, hi) into the span where ranges changed. */
static void range_changed(struct wsp_model *m, uint64_t lo, uint64_t hi)
{
	if (m->changed_lo >= m->changed_hi) {
		m->changed_lo = lo;
		m->changed_hi = hi;
		return;
	}
	m->changed_lo = lo < m->changed_lo ? lo : m->changed_lo;
	m->changed_hi = hi > m->changed_hi ? hi : m->changed_hi;
}

static uint64_t range_end(const struct wsp_block *b)
{
	return b->addr + b->size < b->addr ? UINT64_MAX : b->addr + b->size;
}

size_t wsp_model_place(const struct wsp_model *m, const struct wsp_block *b)
{
	return b >= m->blocks && b < m->blocks + m->nblocks ? (size_t)(b - m->blocks) : SIZE_MAX;
}

bool wsp_model_ranges_changed(struct wsp_model *m, uint64_t *lo, uint64_t *hi)
{
	*lo = m->changed_lo;
	*hi = m->changed_hi;
	m->changed_lo = m->changed_hi = 0;
	return *lo < *hi;
}

void wsp_model_each_range_in(const struct wsp_model *m, uint64_t lo, uint64_t hi,
			     void (*fn)(const struct wsp_block *, void *), void *arg)
{
	for (size_t r = 0; r < sizeof m->ranges / sizeof *m->ranges; r++) {
		const struct range_set *rs = &m->ranges[r];
		for (size_t i = model_range_first_after(rs, lo); i < rs->n && rs->v[i].addr < hi; i++)
			fn(&rs->v[i], arg);
	}
}

static int range_insert_at(struct wsp_model *m, struct range_set *rs, size_t i, const struct wsp_block *b)
{
	range_changed(m, b->addr, range_end(b));
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

/* Is any piece of r's mapping still live? A mapping is its origin and
 * its size: a new one may start where an old one began, in the hole its
 * first pieces left, while the old one's last pieces live on. */
static bool origin_alive(const struct range_set *rs, const struct wsp_block *r)
{
	for (size_t i = model_range_first_after(rs, r->origin); i < rs->n && rs->v[i].addr < r->origin + r->origin_size; i++)
		if (rs->v[i].origin == r->origin && rs->v[i].origin_size == r->origin_size)
			return true;
	return false;
}

/* Release [addr, addr+len) from a range set. Pieces go to `into` when
 * given (a MOVE); otherwise a mapping whose last piece goes counts as one
 * free. */
static int range_cut(struct wsp_model *m, struct range_set *rs, uint64_t addr, uint64_t len, struct stash *into)
{
	uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
	size_t i = model_range_first_after(rs, addr);
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
		range_changed(m, r.addr, range_end(&r));
		memmove(rs->v + i, rs->v + i + 1, (rs->n - i - 1) * sizeof *rs->v);
		rs->n--;
		/* What is left of r on either side stays live, as part of r's mapping. */
		if (left.size && range_insert_at(m, rs, i++, &left))
			return -ENOMEM;
		if (right.size && range_insert_at(m, rs, i++, &right))
			return -ENOMEM;
		if (into && stash_add(into, &piece))
			return -ENOMEM;
		if (!origin_alive(rs, &r)) {
			sub_live(m, &r, 0, 1);
			if (into)
				into->blocks_gone += !r.excluded;
			else if (!r.excluded)
				model_count_free(m, &r);
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
	for (size_t i = model_range_first_after(rs, addr); i < rs->n && rs->v[i].addr < end; i++) {
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
	return err ? err : range_insert_at(m, rs, model_range_first_after(rs, b->addr), b);
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
			model_count_free(m, &s->blocks[i]);
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

static bool caller_used(const void *slot)
{
	return ((const struct caller_slot *)slot)->stack != 0;
}

static size_t caller_hash(const void *slot, void *ctx)
{
	(void)ctx;
	return hash64(((const struct caller_slot *)slot)->stack, 0); /* unmasked */
}

static bool caller_ok(struct wsp_model *m, wsprof_trace *t, uint64_t stack)
{
	if (!m->callers)
		return true;
	if (!stack)
		return false;
	if (wsp_table_room(&m->ccache, &m->ccache_cap, m->ccache_used, sizeof *m->ccache, 256, caller_used,
			   caller_hash, NULL))
		return caller_check(m, t, stack);
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
	/* An empty mapping, or a block at address 0 (the key of an empty slot):
	 * no kernel or allocator makes them, a damaged trace may. */
	struct range_set *rs = ranges_of(m, ev->kind);
	if (rs ? !ev->size : !block_key(ev->kind, ev->op, ev->addr))
		return 0;
	struct stash *s = stash_of(m, ev->tid, false);
	if (s) /* the old block of a realloc/mremap */
		move_done(m, s);
	if (m->per_stack || m->sample_bytes) { /* what allocation numbers are for */
		uint64_t *serial = model_serial_of(m, ev->tid);
		if (!serial)
			return -ENOMEM;
		b.serial = ++*serial;
	}
	uint64_t count = block_count(m, &b), bytes = model_weigh(m, &b, ev->size);
	if (m->per_stack && !b.excluded) {
		int64_t site = site_of(m, ev->kind, ev->stack);
		if (site < 0)
			return (int)site;
		b.site = (uint32_t)site;
		m->sites[site].allocations += count;
		m->sites[site].bytes += bytes;
	}
	int err;
	if (rs) {
		err = range_add(m, rs, &b);
	} else {
		b.addr = block_key(ev->kind, ev->op, ev->addr);
		size_t j = m->heap_cap ? heap_probe(m, b.addr) : SIZE_MAX;
		struct wsp_block *old = j != SIZE_MAX ? model_heap_at(m, j) : NULL;
		if (old) { /* its free was not seen: it is gone all the same */
			model_lose(m, old);
			model_heap_remove(m, old);
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
		size_t i = model_range_first_after(from, addr);
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
	struct wsp_block *b = model_heap_find(m, key);
	if (!b) {
		if (!into)
			m->untracked_frees++;
		return;
	}
	model_lose(m, b);
	if (into)
		stash_add(into, b);
	else if (!b->excluded)
		model_count_free(m, b);
	model_heap_remove(m, b);
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
			add_live(m, b, model_weigh(m, b, b->size), rs ? 0 : block_count(m, b), ev->time_ns);
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

/* The checked build's books (books.c): the event's kind at once, the
 * whole model once as many events went by as it holds blocks, so that
 * checking costs O(1) an event. */
static void check_books(struct wsp_model *m, const wsprof_event *ev)
{
	if (ev->kind < WSPROF_KIND_COUNT) {
		const struct wsp_kind_stats *k = &m->kinds[ev->kind];
		WSP_ASSERT(k->peak_bytes >= k->live_bytes);
		WSP_ASSERT(k->collectable_bytes <= k->live_bytes || (ev->kind == WSPROF_KIND_HEAP && m->heap_counted));
	}
	if (m->check_due-- > 0)
		return;
	const char *broken = wsp_model_check(m);
	WSP_ASSERT_MSG(!broken, "after event seq %llu (type %d, kind %u): %s", (unsigned long long)ev->seq, ev->type,
		       ev->kind, broken);
	m->check_due = m->heap_used + m->ranges[0].n + m->ranges[1].n + m->ranges[2].n + m->ranges[3].n;
}

/* Where a kind's live or in-use bytes may have changed, the series notes
 * them (unless totals only). */
int wsp_model_apply(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev)
{
	int err = apply_event(m, t, ev);
	if (WSP_CHECKED && !err)
		check_books(m, ev);
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
		return model_apply_annotation(m, ev);
	case WSPROF_EV_ACCESS:
		return model_apply_access(m, t, ev);
	case WSPROF_EV_RECORDING:
		if (wsp_grow(&m->switches, &m->switches_cap, m->nswitches + 1, sizeof *m->switches))
			return -ENOMEM;
		m->switches[m->nswitches++] = (struct wsp_recording_switch){ ev->time_ns, ev->seq, ev->size != 0, ev->op };
		return 0;
	case WSPROF_EV_HEAP_TOTALS:
		return apply_totals(m, ev);
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
	const struct ann *a = b->has_ann ? model_ann_find(m, b->addr) : NULL;
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

size_t wsp_model_recording(const struct wsp_model *m, const struct wsp_recording_switch **switches)
{
	*switches = m->switches;
	return m->nswitches;
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
	if (WSP_CHECKED) {
		const char *broken = wsp_model_check(m);
		WSP_ASSERT_MSG(!broken, "at the finish: %s", broken);
	}
	if (!m->heap_counted)
		count_heap(m);
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
	acc[b->site].accessed += model_weigh(m, b, b->accessed_bytes < b->size ? b->accessed_bytes : b->size);
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
		const struct wsp_block *b = model_heap_at(m, i);
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
	/* The dense array in order, not the table's slots: a heatmap reads every
	 * live block 300 times, and reading them where they lie is several
	 * times faster than hopping from slot to block. Places freed have addr 0
	 * (no live key is 0: it marks an empty slot). */
	for (size_t i = 0; i < m->nblocks; i++)
		if (m->blocks[i].addr)
			fn(&m->blocks[i], arg);
	for (size_t r = 0; r < sizeof m->ranges / sizeof *m->ranges; r++)
		for (size_t i = 0; i < m->ranges[r].n; i++)
			fn(&m->ranges[r].v[i], arg);
}
