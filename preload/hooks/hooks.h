/*
 * hooks.h - the hooks' shared pieces: untraced calls, heap sampling, CUDA samples, annotations.
 * wsp.h has what every file shares and the rule every hook follows.
 */
#ifndef WSP_HOOKS_H
#define WSP_HOOKS_H

#include "wsp.h"
#include "access.h" /* the layer below */

/* ---- sampling.c ----------------------------------------------------- */

/* Bytes the calling thread may still allocate before its next sample. */
extern WSP_TLS int64_t wsp_sample_left;
/* The countdown reached zero (or the thread starts). @return sampled. */
bool wsp_sample_crossed(uint64_t size);

/* Is a heap allocation of `size` bytes recorded? Always without
 * WSPROF_SAMPLE_BYTES; with it, counts the bytes down and says whether
 * this one is sampled (a new gap is then drawn). Touches nothing but the
 * thread's countdown: safe with or without the guard. */
static inline bool wsp_sample_take(size_t size)
{
	if (__builtin_expect(!wsp_cfg.sample_bytes, 1))
		return true;
	int64_t s = size > (size_t)INT64_MAX ? INT64_MAX : size ? (int64_t)size : 1;
	int64_t left = wsp_sample_left - s;
	if (left > 0) {
		wsp_sample_left = left;
		return false;
	}
	return wsp_sample_crossed((uint64_t)s);
}

/* A sampled block now lives at p: its free is to be recorded. Call with
 * the guard held (the set's locks must not meet a handler that frees). */
void wsp_sample_remember(const void *p);
/* Forget p if it is a sampled block. @return whether its free is
 * recorded. Call with the guard held. */
bool wsp_sample_forget(const void *p);
/* Without taking a lock, safe anywhere: may p be a live sampled block
 * (or is every free recorded)? false: its free is not recorded. */
bool wsp_sample_maybe_live(const void *p);

/* Is the free (or realloc) of the heap block at p recorded? Always
 * without sampling; with it, when p is a live sampled block, which it
 * then no longer is. Call with the guard held. */
static inline bool wsp_sample_release(const void *p)
{
	return __builtin_expect(!wsp_cfg.sample_bytes, 1) || wsp_sample_forget(p);
}

/* Around fork: the set is consistent in the child (it keeps the parent's
 * sampled blocks, whose frees are then untracked frees, as unsampled). */
void wsp_sample_lock_all(void);
void wsp_sample_unlock_all(void);

/* ---- tally.c: a sampled trace's heap totals, counted whole ---------- */

enum wsp_tally_field {
	WSP_TALLY_ALLOCATIONS, WSP_TALLY_FREES,
	WSP_TALLY_REQUESTED,                  /* bytes the allocations asked for */
	WSP_TALLY_GIVEN, WSP_TALLY_GIVEN_BACK, /* usable bytes of the blocks allocated, of those freed */
	WSP_TALLY_FIELDS
};

/* A thread's counts, on a cache line of its own (tally.c says how they
 * are summed). Written by its thread alone: relaxed loads and stores. */
struct wsp_tally {
	_Atomic uint64_t n[WSP_TALLY_FIELDS]; /* enum wsp_tally_field; HEAP_TOTALS's first values, in order */
	int64_t pending;      /* live bytes changed since they were added to the shared level */
	bool shared;          /* the threads that ended: counted atomically, by any thread */
	bool vacant;          /* its thread ended: a new thread may take it */
	struct wsp_tally *next;
} __attribute__((aligned(64)));

#define WSP_TALLY_STEP (16 * 1024) /* live bytes a thread changes before the shared level hears */

extern WSP_TLS struct wsp_tally *wsp_tally_mine;
extern bool wsp_tally_glibc; /* malloc is glibc's (found on first use): sizes read from the headers */
size_t wsp_usable_size_slow(const void *p);

/* Are heap calls counted? With WSPROF_SAMPLE_BYTES above 1, outside wsprof. */
static inline bool wsp_tally_on(void)
{
	return __builtin_expect(wsp_cfg.sample_bytes > 1, 0) && !wsp_tls.guard;
}

/* The slow ways: a thread's first call, an ended thread's, a step. */
void wsp_tally_alloc_slow(const void *p, size_t requested);
void wsp_tally_freed_slow(size_t given);
void wsp_tally_step(struct wsp_tally *t, int64_t pending);

static inline void wsp_tally_add(_Atomic uint64_t *field, uint64_t n)
{
	atomic_store_explicit(field, atomic_load_explicit(field, memory_order_relaxed) + n, memory_order_relaxed);
}

static inline void wsp_tally_live(struct wsp_tally *t, int64_t change)
{
	int64_t p = t->pending + change;
	if (__builtin_expect(p >= WSP_TALLY_STEP || p <= -WSP_TALLY_STEP, 0))
		wsp_tally_step(t, p);
	else
		t->pending = p;
}

/* What malloc_usable_size says of glibc's block at p, read from the
 * chunk's size word before it (the mmapped bit: a 16-byte header, else 8;
 * the low three bits are flags), without a call or a look at the next
 * chunk. */
static inline size_t wsp_glibc_usable_size(const void *p)
{
	size_t h = ((const size_t *)p)[-1];
	return (h & ~(size_t)7) - (h & 2 ? 16 : 8);
}

/* The usable size of the live block at p (0 when it cannot be known):
 * glibc's read in place, else the allocator's malloc_usable_size; which
 * of them is found on the first call. */
static inline size_t wsp_usable_size(const void *p)
{
	if (__builtin_expect(wsp_tally_glibc, 1))
		return wsp_glibc_usable_size(p);
	return wsp_usable_size_slow(p);
}

/* A heap block of `requested` bytes now lives at p. */
static inline void wsp_tally_alloc(const void *p, size_t requested)
{
	struct wsp_tally *t = wsp_tally_mine;
	if (__builtin_expect(!t || t->shared, 0)) {
		wsp_tally_alloc_slow(p, requested);
		return;
	}
	size_t given = wsp_usable_size(p);
	wsp_tally_add(&t->n[WSP_TALLY_ALLOCATIONS], 1);
	wsp_tally_add(&t->n[WSP_TALLY_REQUESTED], requested);
	wsp_tally_add(&t->n[WSP_TALLY_GIVEN], given);
	wsp_tally_live(t, (int64_t)given);
}

/* A block of that usable size was freed. */
static inline void wsp_tally_freed(size_t given)
{
	struct wsp_tally *t = wsp_tally_mine;
	if (__builtin_expect(!t || t->shared, 0)) {
		wsp_tally_freed_slow(given);
		return;
	}
	wsp_tally_add(&t->n[WSP_TALLY_FREES], 1);
	wsp_tally_add(&t->n[WSP_TALLY_GIVEN_BACK], given);
	wsp_tally_live(t, -(int64_t)given);
}

/* Write the sum of the tallies (HEAP_TOTALS) if it changed: the writer. */
void wsp_tally_record(void);
/* Around fork. */
void wsp_tally_lock(void);
void wsp_tally_unlock(bool child);

/* ---- hooks_cuda.c ---------------------------------------------------- */

/* Record the free memory of every device the program allocated on, from
 * the writer thread, borrowing the program's context (never creating one). */
void wsp_cuda_sample(void);

/* An attached process holds the driver's functions already (cudart's
 * table, a GOT): the real functions wsprof wraps, as the loaded driver
 * gives them (dlsym of their names, and cuGetProcAddress by base name),
 * each with its wrapper, into out (at most cap), and remembered as the
 * wrappers' real functions; the driver's path into driver. Guard held.
 * @return how many; 0 when no libcuda is loaded. */
struct wsp_cuda_pair {
	void *real, *wrapper;
};
size_t wsp_cuda_real_functions(struct wsp_cuda_pair *out, size_t cap, char *driver, size_t driver_cap);

/* ---- annotate.c ------------------------------------------------------ */

/* Record what the program says (enum wsprof_annotation). Safe to call from
 * anywhere: enters wsprof itself; dropped when called inside wsprof. */
void wsp_annotate(unsigned ann, uint64_t addr, uint64_t size, uint64_t pool, const char *text);
/* A sub-allocation of `pool` (any id the program uses: the slab's address,
 * an NVTX heap handle), of kind `pool`. */
void wsp_pool_alloc(uint64_t pool, uint64_t addr, uint64_t size);
void wsp_pool_free(uint64_t pool, uint64_t addr);

#endif
