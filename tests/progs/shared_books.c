/*
 * shared_books.c - exact counts and a bounded peak for books that several
 * threads keep at once (see shared_books.h). Lock-free: atomics only.
 */
#include "shared_books.h"

#include <stdio.h>

static void raise_max(_Atomic int64_t *max, int64_t v)
{
	int64_t old = atomic_load(max);
	while (v > old && !atomic_compare_exchange_weak(max, &old, v))
		;
}

void shared_will_alloc(struct shared_books *b, uint64_t size)
{
	raise_max(&b->reserved_max, atomic_fetch_add(&b->reserved, (int64_t)size) + (int64_t)size);
}

void shared_did_alloc(struct shared_books *b, uint64_t size)
{
	raise_max(&b->committed_max, atomic_fetch_add(&b->committed, (int64_t)size) + (int64_t)size);
	atomic_fetch_add(&b->allocations, 1);
	atomic_fetch_add(&b->total_bytes, size);
	atomic_fetch_add(&b->live_blocks, 1);
}

void shared_will_free(struct shared_books *b, uint64_t size)
{
	atomic_fetch_sub(&b->committed, (int64_t)size);
	atomic_fetch_add(&b->frees, 1);
	atomic_fetch_sub(&b->live_blocks, 1);
}

void shared_did_free(struct shared_books *b, uint64_t size)
{
	atomic_fetch_sub(&b->reserved, (int64_t)size);
}

void expect_shared(struct expect *e, const char *kind, struct shared_books *b)
{
	expect_open(e, kind);
	expect_uint(e, "allocations", atomic_load(&b->allocations));
	expect_uint(e, "frees", atomic_load(&b->frees));
	expect_uint(e, "failed", 0);
	expect_uint(e, "leaked_bytes", (uint64_t)atomic_load(&b->committed));
	expect_uint(e, "leaked_blocks", atomic_load(&b->live_blocks));
	expect_uint(e, "total_bytes", atomic_load(&b->total_bytes));
	expect_close(e);
	char name[64];
	snprintf(name, sizeof name, "%s_peak", kind);
	expect_open(e, name);
	expect_uint(e, "min", (uint64_t)atomic_load(&b->committed_max));
	expect_uint(e, "max", (uint64_t)atomic_load(&b->reserved_max));
	expect_close(e);
}
