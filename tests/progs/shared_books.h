/*
 * shared_books.h - books kept by threads that allocate and free at the
 * same time (alloc_stress).
 *
 * Counts (allocations, frees, bytes, what is left) are exact whatever the
 * interleaving. The peak is not: wsprof orders the calls of all threads by
 * one counter taken inside each hook, which the program cannot see. It
 * can bound it, though. Around every call it keeps two running totals:
 *   reserved  grows before an allocation is asked for, shrinks after a
 *             free has returned: it never misses a block wsprof holds live;
 *   committed grows after an allocation has returned, shrinks before a
 *             free is called: it never counts a block wsprof does not.
 * wsprof records an allocation inside the call, after the allocator
 * returned, and a free inside the call, before the block is given back,
 * so at every moment committed <= what wsprof has live <= reserved, and
 * max(committed) <= wsprof's peak <= max(reserved). A realloc is a free of
 * the old block and an allocation of the new one, as wsprof counts it.
 */
#ifndef PROGS_SHARED_BOOKS_H
#define PROGS_SHARED_BOOKS_H

#include <stdatomic.h>
#include <stdint.h>

#include "account.h"

struct shared_books {
	_Atomic uint64_t allocations, frees, total_bytes, live_blocks;
	_Atomic int64_t reserved, committed;
	_Atomic int64_t reserved_max, committed_max;
};

/* Before malloc(size) or realloc(..., size) with size > 0. */
void shared_will_alloc(struct shared_books *b, uint64_t size);
/* After it returned a block. */
void shared_did_alloc(struct shared_books *b, uint64_t size);
/* Before free() or realloc() of a block of `size` bytes. */
void shared_will_free(struct shared_books *b, uint64_t size);
/* After that call returned. */
void shared_did_free(struct shared_books *b, uint64_t size);

/* "kind": {allocations, frees, failed, leaked_bytes, leaked_blocks,
 * total_bytes} (every figure but the peak, exact) and
 * "kind_peak": {"min": ..., "max": ...}. Call once every thread is done. */
void expect_shared(struct expect *e, const char *kind, struct shared_books *b);

#endif
