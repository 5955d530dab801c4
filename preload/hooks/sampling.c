/*
 * sampling.c - WSPROF_SAMPLE_BYTES: record one heap allocation in so many
 * bytes allocated, as tcmalloc and jemalloc sample, instead of every one.
 *
 * Each thread counts down the bytes its heap allocations ask for (an
 * allocation of 0 bytes counts as 1), from a gap drawn from an exponential
 * distribution of mean N; the allocation that takes the countdown to zero
 * or below is sampled - recorded with its stack - and a new gap drawn. The
 * gaps are memoryless, so an allocation of s bytes is sampled with
 * probability p(s) = 1 - exp(-s/N) whatever came before it, independently
 * of every other one: the analyzer weighs each sampled block by 1/p (its
 * bytes s/p, its count 1/p), which makes every heap figure an unbiased
 * estimate. N = 1 samples every allocation (p = 1: the figures are exact).
 * The others cost the countdown and nothing else: no unwind, no record, no
 * sequence number.
 *
 * A free is recorded only for a sampled block, and blocks are often freed
 * by another thread than the one that made them, so the addresses of the
 * sampled blocks still live are kept in one set for all threads: 64
 * stripes, each an open-addressing table (linear probing, removal by
 * shifting back) in wsprof's own pages. Writers take the stripe's spin
 * lock; the free of an unsampled block - the common case - only reads,
 * without the lock, under the stripe's sequence count (a seqlock: a
 * removal shifts entries, and a reader that saw one move tries again). A
 * stripe's table doubles when three quarters full, up to STRIPE_MAX slots;
 * the tables it outgrew stay mapped (a reader may still be in one), at
 * most as much again. When a stripe is full the set cannot remember a new
 * sampled block: from then on every free is recorded (a warning says so),
 * so the figures stay right at the cost of speed; frees of unsampled
 * blocks then show as untracked frees.
 *
 * In front of the set, a filter answers most frees with one load: a
 * counter per hash bucket of addresses (FILTER_SLOTS of them, 16 KiB,
 * which stay in cache) of the live sampled blocks in it. A free whose
 * bucket counts none was not sampled; only the others probe a stripe's
 * table, whose slot is a cache miss in a large one. A counter that
 * reaches 255 stays there (the bucket then always probes).
 *
 * Reentrancy: called from the hooks with the guard held, so a signal
 * handler that frees while a stripe's lock is held passes through
 * untraced, as all its calls do. Fork takes every stripe's lock, so a
 * child gets the set whole, with the parent's sampled blocks in it: their
 * frees are the child's untracked frees, as without sampling.
 */

#include "hooks.h"
#include <math.h>
#include <time.h>
#include <unistd.h>

WSP_TLS int64_t wsp_sample_left;
static WSP_TLS uint64_t rng; /* 0: this thread has not drawn its first gap */
static _Atomic uint64_t threads_seeded;

#define STRIPES 64
#define STRIPE_MIN 512         /* slots of a stripe's first table */
#define STRIPE_MAX (1u << 18)  /* slots of its largest: 64 x 2^18 x 3/4, 12 M live sampled blocks */

struct table {
	struct table *outgrown; /* the table before this one, kept for readers still in it */
	size_t mask;            /* slots - 1 */
	_Atomic uint64_t slot[]; /* addresses; 0: empty */
};

struct stripe {
	_Atomic unsigned seq;   /* odd while entries move */
	atomic_flag lock;
	_Atomic(struct table *) table;
	_Atomic size_t used;   /* changed under the lock, read without it */
} __attribute__((aligned(64)));

static struct stripe stripes[STRIPES];
#define FILTER_SLOTS (1u << 14)
static _Atomic uint8_t filter[FILTER_SLOTS];
static _Atomic bool all_frees; /* the set overflowed: every free is recorded */

/* ---- the countdown ------------------------------------------------------ */

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* xorshift64*: fast, and plenty for choosing gaps. */
static uint64_t next_random(void)
{
	uint64_t x = rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* WSPROF_SAMPLE_SEED makes the gaps of the n-th thread to allocate the
 * same in every run (tests); without it they differ from run to run. */
static void seed_thread(void)
{
	uint64_t base = wsp_cfg.sample_seed;
	if (!base) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		base = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 40 ^ (uintptr_t)&rng;
	}
	uint64_t n = atomic_fetch_add_explicit(&threads_seeded, 1, memory_order_relaxed);
	rng = splitmix64(base ^ splitmix64(n)) | 1; /* xorshift needs a state other than 0 */
}

/* The bytes to the next sample: exponential with mean N, rounded up, so
 * that a countdown of c meets an allocation of s bytes (c - s <= 0)
 * exactly when the real-valued gap is at most s. */
static int64_t draw_gap(void)
{
	double u = (double)((next_random() >> 11) + 1) * 0x1p-53; /* (0, 1] */
	return (int64_t)ceil(-log(u) * (double)wsp_cfg.sample_bytes);
}

/* ---- the set of live sampled blocks --------------------------------------- */

static uint64_t mix(uint64_t a)
{
	return (a >> 4) * 0x9e3779b97f4a7c15ull;
}

static struct stripe *stripe_of(uint64_t h)
{
	return &stripes[h >> 58];
}

static _Atomic uint8_t *filter_of(uint64_t h)
{
	return &filter[(h >> 20) & (FILTER_SLOTS - 1)];
}

/* Counted up and down under the stripe's lock (fork takes them all), but
 * two stripes' addresses may share a bucket: atomically. */
static void filter_add(uint64_t h, int d)
{
	_Atomic uint8_t *c = filter_of(h);
	uint8_t v = atomic_load_explicit(c, memory_order_relaxed);
	while (v != UINT8_MAX && (d > 0 || v) &&
	       !atomic_compare_exchange_weak_explicit(c, &v, (uint8_t)(v + d), memory_order_relaxed, memory_order_relaxed))
		;
}

static struct table *table_new(size_t slots)
{
	struct table *t = wsp_pages_alloc(sizeof *t + slots * sizeof t->slot[0]);
	if (t)
		t->mask = slots - 1;
	return t;
}

static void lock(struct stripe *s)
{
	while (atomic_flag_test_and_set_explicit(&s->lock, memory_order_acquire))
		;
}

static void unlock(struct stripe *s)
{
	atomic_flag_clear_explicit(&s->lock, memory_order_release);
}

static void put(struct table *t, uint64_t a, uint64_t h)
{
	size_t i = (size_t)(h >> 16) & t->mask;
	while (atomic_load_explicit(&t->slot[i], memory_order_relaxed))
		i = (i + 1) & t->mask;
	atomic_store_explicit(&t->slot[i], a, memory_order_relaxed);
}

/* A table with room for one more (lock held). Readers need no sequence
 * count for this: the new table is complete when published, and the old
 * one keeps every entry it had. @return NULL when the stripe is full. */
static struct table *room(struct stripe *s)
{
	struct table *t = atomic_load_explicit(&s->table, memory_order_relaxed);
	size_t slots = t ? t->mask + 1 : 0;
	if (t && (s->used + 1) * 4 <= slots * 3)
		return t;
	if (slots >= STRIPE_MAX)
		return NULL;
	struct table *n = table_new(t ? slots * 2 : STRIPE_MIN);
	if (!n)
		return NULL;
	for (size_t i = 0; t && i <= t->mask; i++) {
		uint64_t a = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
		if (a)
			put(n, a, mix(a));
	}
	n->outgrown = t;
	atomic_store_explicit(&s->table, n, memory_order_release);
	return n;
}

static bool remember(uint64_t a)
{
	uint64_t h = mix(a);
	struct stripe *s = stripe_of(h);
	lock(s);
	struct table *t = room(s);
	if (t) {
		put(t, a, h);
		filter_add(h, 1);
		atomic_store_explicit(&s->used, atomic_load_explicit(&s->used, memory_order_relaxed) + 1,
				      memory_order_relaxed);
	}
	unlock(s);
	return t != NULL;
}

/* Is a in the set? Without the lock: a removal shifting entries meanwhile
 * makes the sequence count differ, and the probe is made again. */
static bool contains(uint64_t a)
{
	uint64_t h = mix(a);
	struct stripe *s = stripe_of(h);
	for (;;) {
		unsigned q = wsp_seq_read_begin(&s->seq);
		if (q & 1)
			continue;
		struct table *t = atomic_load_explicit(&s->table, memory_order_acquire);
		bool found = false;
		size_t i = t ? (size_t)(h >> 16) & t->mask : 0;
		for (size_t n = 0; t && n <= t->mask; n++, i = (i + 1) & t->mask) {
			uint64_t v = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
			if (v == a)
				found = true;
			if (v == a || !v)
				break;
		}
		if (wsp_seq_read_ok(&s->seq, q))
			return found;
	}
}

/* Remove a. @return whether it was there. */
static bool forget(uint64_t a)
{
	uint64_t h = mix(a);
	struct stripe *s = stripe_of(h);
	lock(s);
	struct table *t = atomic_load_explicit(&s->table, memory_order_relaxed);
	size_t i = t ? (size_t)(h >> 16) & t->mask : 0;
	uint64_t v = 0;
	while (t && (v = atomic_load_explicit(&t->slot[i], memory_order_relaxed)) && v != a)
		i = (i + 1) & t->mask;
	if (!t || v != a) {
		unlock(s);
		return false;
	}
	wsp_seq_write_begin(&s->seq);
	/* Shift back the later members of the probe run that may sit at i. */
	for (size_t j = (i + 1) & t->mask;; j = (j + 1) & t->mask) {
		uint64_t w = atomic_load_explicit(&t->slot[j], memory_order_relaxed);
		if (!w)
			break;
		size_t home = (size_t)(mix(w) >> 16) & t->mask;
		if (((j - home) & t->mask) >= ((j - i) & t->mask)) {
			atomic_store_explicit(&t->slot[i], w, memory_order_relaxed);
			i = j;
		}
	}
	atomic_store_explicit(&t->slot[i], 0, memory_order_relaxed);
	atomic_store_explicit(&s->used, atomic_load_explicit(&s->used, memory_order_relaxed) - 1, memory_order_relaxed);
	wsp_seq_write_end(&s->seq);
	filter_add(h, -1);
	unlock(s);
	return true;
}

/* ---- what the hooks ask ----------------------------------------------------- */

bool wsp_sample_crossed(uint64_t size)
{
	if (wsp_cfg.sample_bytes == 1)
		return true;
	if (!rng) { /* the thread's first allocation: its countdown starts here */
		seed_thread();
		int64_t left = draw_gap() - (int64_t)size;
		if (left > 0) {
			wsp_sample_left = left;
			return false;
		}
	}
	wsp_sample_left = draw_gap();
	return true;
}

void wsp_sample_remember(const void *p)
{
	if (!remember((uint64_t)(uintptr_t)p) && !atomic_exchange(&all_frees, true))
		wsp_warn("too many sampled blocks live at once (about %u million): recording every free from now on, "
			 "which is slower (raise WSPROF_SAMPLE_BYTES)", STRIPES * STRIPE_MAX / 4 * 3 / 1000000);
}

bool wsp_sample_forget(const void *p)
{
	uint64_t a = (uint64_t)(uintptr_t)p;
	return (contains(a) && forget(a)) || atomic_load_explicit(&all_frees, memory_order_relaxed);
}

/* Most buckets of the filter hold no live sampled block at all. One
 * holding p has not counted none since p was remembered: that happened
 * before the program could hand p to free. */
bool wsp_sample_maybe_live(const void *p)
{
	uint64_t a = (uint64_t)(uintptr_t)p, h = mix(a);
	return (atomic_load_explicit(filter_of(h), memory_order_relaxed) && contains(a)) ||
	       atomic_load_explicit(&all_frees, memory_order_relaxed);
}

void wsp_sample_lock_all(void)
{
	for (size_t i = 0; i < STRIPES; i++)
		lock(&stripes[i]);
}

void wsp_sample_unlock_all(void)
{
	for (size_t i = 0; i < STRIPES; i++)
		unlock(&stripes[i]);
}
