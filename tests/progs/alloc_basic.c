/*
 * alloc_basic - every heap entry point, with the outcome counted.
 *
 * usage: alloc_basic EXPECT [--exit STATUS] [GROUP...]
 *
 * GROUPs (all of them, in this order, when none is named):
 *   plain              malloc/free, calloc, malloc(0), a block big enough
 *                      for glibc to mmap it
 *   realloc            a realloc chain: from NULL, growing, shrinking, to
 *                      size 0; a big block grown (glibc mremaps it)
 *   reallocarray       the same through reallocarray
 *   reallocarray_zero  reallocarray(p, 0, n), which frees p
 *   aligned            posix_memalign, aligned_alloc, memalign, valloc, pvalloc
 *   failures           one failed call of each kind; a failed realloc or
 *                      reallocarray leaves its block live
 *   leaks              three blocks never freed
 * Writes its own figures to EXPECT, prints one line with them on stdout
 * (so a test can compare its output with and without wsprof) and exits
 * with STATUS (default 0).
 */
#include "account.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct account heap;

/* Sizes the compiler must not see: it would warn about, or fold, calls
 * that are meant to fail. */
static volatile size_t huge = SIZE_MAX;
static volatile size_t half = SIZE_MAX / 2 + 1;

static void *counted(void *p, size_t size)
{
	if (p) {
		account_keep(p);
		account_alloc(&heap, size);
	} else {
		account_fail(&heap);
	}
	return p;
}

static void release(void *p, size_t size)
{
	account_keep(p);
	free(p);
	account_free(&heap, size);
}

static void plain_calls(void)
{
	release(counted(malloc(100), 100), 100);
	release(counted(calloc(10, 24), 240), 240);
	/* malloc(0) returns a unique block of zero requested bytes. */
	release(counted(malloc(0), 0), 0);
	/* glibc serves big blocks with mmap of its own: still heap, not mmap. */
	release(counted(malloc(1 << 20), 1 << 20), 1 << 20);
}

static void realloc_chain(void)
{
	char *p = counted(realloc(NULL, 50), 50);
	memset(p, 1, 50);
	p = realloc(p, 5000);        /* grows: one free, one allocation */
	account_resize(&heap, 50, 5000);
	p = realloc(p, 20);          /* shrinks, likely in place: still both */
	account_resize(&heap, 5000, 20);
	account_keep(p);
	p = realloc(p, 0);           /* frees and returns NULL */
	account_free(&heap, 20);
	account_keep(p);

	/* Big blocks glibc moves with mremap of its own: still heap. */
	p = counted(malloc(1 << 20), 1 << 20);
	p = realloc(p, 4 << 20);
	account_resize(&heap, 1 << 20, 4 << 20);
	account_keep(p);
	release(p, 4 << 20);
}

static void reallocarray_chain(void)
{
	int *q = counted(reallocarray(NULL, 4, sizeof(int)), 4 * sizeof(int));
	q = reallocarray(q, 16, sizeof(int));
	account_resize(&heap, 4 * sizeof(int), 16 * sizeof(int));
	account_keep(q);
	release(q, 16 * sizeof(int));
}

/* glibc's reallocarray(p, 0, n) is realloc(p, 0): it frees p and returns
 * NULL, which is no failure. */
static void reallocarray_to_zero(void)
{
	void *p = counted(malloc(100), 100);
	void *q = reallocarray(p, 0, 8);
	account_keep(q);
	if (q)
		account_resize(&heap, 100, 0);
	else
		account_free(&heap, 100);
	free(q);
	if (q)
		account_free(&heap, 0);
}

static void aligned_calls(void)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, 1000) == 0)
		account_alloc(&heap, 1000);
	release(p, 1000);
	release(counted(aligned_alloc(256, 512), 512), 512);
	release(counted(memalign(128, 300), 300), 300);
	release(counted(valloc(4000), 4000), 4000);
	/* The requested size is counted, not the page it is rounded up to. */
	release(counted(pvalloc(5000), 5000), 5000);
}

/* What a caller of a failing realloc does: keep the old block. */
static void *keep_on_failure(void *old, void *moved)
{
	if (moved) {
		complain("alloc_basic: a realloc meant to fail succeeded");
		exit(2);
	}
	account_fail(&heap);
	return old;
}

static void failures(void)
{
	counted(malloc(huge), huge);
	counted(calloc(half, 4), 0);          /* n * size overflows */
	void *p = NULL;
	if (posix_memalign(&p, 3, 64) == EINVAL) /* 3 is no power of two */
		account_fail(&heap);
	counted(aligned_alloc(64, huge), huge);

	/* A failed realloc leaves the old block live, and so does a failed
	 * reallocarray: one failure each, no free. */
	char *keep = counted(malloc(64), 64);
	keep = keep_on_failure(keep, realloc(keep, huge));
	keep = keep_on_failure(keep, reallocarray(keep, half, 4));
	release(keep, 64);
}

/* Blocks never freed, to be reported as leaked. */
static void leaks(void)
{
	counted(malloc(111), 111);
	counted(calloc(2, 111), 222);
	void *p = counted(malloc(10), 10);
	p = realloc(p, 333);
	account_resize(&heap, 10, 333);
	account_keep(p);
}

static const struct group {
	const char *name;
	void (*run)(void);
} groups[] = {
	{ "plain", plain_calls },
	{ "realloc", realloc_chain },
	{ "reallocarray", reallocarray_chain },
	{ "reallocarray_zero", reallocarray_to_zero },
	{ "aligned", aligned_calls },
	{ "failures", failures },
	{ "leaks", leaks },
};
#define NGROUPS (sizeof groups / sizeof *groups)

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: alloc_basic EXPECT [--exit STATUS] [GROUP...]");
		return 2;
	}
	int status = 0, first_group = 2;
	if (argc > 3 && strcmp(argv[2], "--exit") == 0) {
		status = atoi(argv[3]);
		first_group = 4;
	}
	for (int i = first_group; i < argc; i++) {
		size_t g = 0;
		while (g < NGROUPS && strcmp(argv[i], groups[g].name) != 0)
			g++;
		if (g == NGROUPS) {
			complain("alloc_basic: no group named %s", argv[i]);
			return 2;
		}
		groups[g].run();
	}
	if (first_group == argc)
		for (size_t g = 0; g < NGROUPS; g++)
			groups[g].run();

	struct expect e;
	expect_init(&e);
	expect_account(&e, "heap", &heap);
	expect_uint(&e, "threads", 1);
	if (expect_write(&e, argv[1]) < 0)
		return 2;
	say("alloc_basic: %llu allocations, %llu frees, %llu failed, peak %llu bytes, %llu bytes leaked",
	    (unsigned long long)heap.allocations, (unsigned long long)heap.frees,
	    (unsigned long long)heap.failed, (unsigned long long)heap.peak_bytes,
	    (unsigned long long)heap.live_bytes);
	return status;
}
