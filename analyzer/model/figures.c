/*
 * figures.c - the figures blocks add to as they come and go: each kind's
 * live, peak and in-use bytes, each stack's (site's) figures, threads'
 * allocation numbers, and freed blocks' access figures (model.h).
 *
 * Per-stack figures (per_stack) include the bytes each stack held at the
 * moment its kind peaked, without a second pass: every peak starts a new
 * epoch, and a stack's live bytes are copied to its snapshot the first
 * time they change in a new epoch - until then they are still what they
 * were at the peak. Excluded blocks (--caller) add to nothing.
 */
#include "model_internal.h"

#include "departed.h"
#include "grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

void model_add_live(struct wsp_model *m, const struct wsp_block *b, uint64_t bytes, uint64_t blocks,
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

void model_sub_live(struct wsp_model *m, const struct wsp_block *b, uint64_t bytes, uint64_t blocks)
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

void model_gain(struct wsp_model *m, const struct wsp_block *b, uint64_t time)
{
	model_add_live(m, b, model_weigh(m, b, b->size), wsp_model_block_count(m, b), time);
}

void model_lose(struct wsp_model *m, const struct wsp_block *b)
{
	model_sub_live(m, b, model_weigh(m, b, b->size), wsp_model_block_count(m, b));
}

/* ---- per-stack figures and threads ------------------------------------ */

static size_t site_key_hash(size_t i, void *ctx)
{
	const struct site *s = &((const struct wsp_model *)ctx)->sites[i];
	return hash64(s->stack * WSPROF_KIND_COUNT + s->kind + 1, 0); /* unmasked */
}

/* The figures of (kind, stack), made on first use. @return index or -ENOMEM. */
int64_t model_site_of(struct wsp_model *m, unsigned kind, uint64_t stack)
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
	m->kinds[b->kind].frees += wsp_model_block_count(m, b);
	depart(m, b);
	if (!m->per_stack)
		return;
	uint64_t *serial = model_serial_of(m, b->tid);
	if (serial && *serial == b->serial && !model_estimated(m, b->kind))
		m->sites[b->site].temporary++;
}

/* ---- the figures views ask for ---------------------------------------- */

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
