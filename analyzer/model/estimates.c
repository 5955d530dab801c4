/*
 * estimates.c - the figures of a sampled trace (model.h, sampled traces).
 *
 * A heap block of s bytes was sampled with probability p = 1 - exp(-s/N)
 * (preload/hooks/sampling.c); every figure a sampled block adds to, it
 * adds to with its weight, so that the sums are unbiased estimates: live
 * and peak bytes, counts, per-stack figures, collectable and accessed
 * bytes. Where the trace holds a whole process, its HEAP_TOTALS records
 * (the heap counted whole by the recorder) replace the estimates' heap
 * figures at the finish; what the sampled blocks changed after the last
 * record is added as they estimate it.
 */
#include "model_internal.h"

#include <errno.h>
#include <math.h>

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
int model_apply_totals(struct wsp_model *m, const wsprof_event *ev)
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
void model_count_heap(struct wsp_model *m)
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
uint64_t wsp_model_block_count(const struct wsp_model *m, const struct wsp_block *b)
{
	if (!model_estimated(m, b->kind))
		return 1;
	double w = 1 / wsp_sample_probability(m->sample_bytes, b->size), whole = floor(w);
	uint64_t h = b->serial * 0x9e3779b97f4a7c15ull ^ (uint64_t)b->tid << 32;
	h = (h ^ h >> 31) * 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return (uint64_t)whole + ((double)(h >> 11) * 0x1p-53 < w - whole);
}
