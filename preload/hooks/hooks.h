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

/* ---- hooks_cuda.c ---------------------------------------------------- */

/* Record the free memory of every device the program allocated on, from
 * the writer thread, borrowing the program's context (never creating one). */
void wsp_cuda_sample(void);

/* ---- annotate.c ------------------------------------------------------ */

/* Record what the program says (enum wsprof_annotation). Safe to call from
 * anywhere: enters wsprof itself; dropped when called inside wsprof. */
void wsp_annotate(unsigned ann, uint64_t addr, uint64_t size, uint64_t pool, const char *text);
/* A sub-allocation of `pool` (any id the program uses: the slab's address,
 * an NVTX heap handle), of kind `pool`. */
void wsp_pool_alloc(uint64_t pool, uint64_t addr, uint64_t size);
void wsp_pool_free(uint64_t pool, uint64_t addr);

#endif
