/*
 * grow.h - the growable arrays of the reader and the analyzer.
 *
 * wsp_grow(&array, &capacity, need, sizeof *array) makes room for `need`
 * items, doubling. @return 0 or -ENOMEM (the array is left as it was).
 *
 * wsp_grow_huge does the same in memory of its own, in 2 MiB pages where
 * the kernel lends them (transparent huge pages, asked for with madvise),
 * for the reader's large buffers that are reused all along, where fresh
 * pages cost the most (BENCHMARKS.md, Profiles).
 * Such an array is freed with wsp_free_huge, never free().
 */
#ifndef WSP_GROW_H
#define WSP_GROW_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static inline int wsp_grow(void *array, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 16;
	while (n < need)
		n *= 2;
	void *p = realloc(*(void **)array, n * elem);
	if (!p)
		return -ENOMEM;
	*(void **)array = p;
	*cap = n;
	return 0;
}

/* Room for one more slot in an open-addressing table kept at most half
 * full: when it would be fuller, a table twice as large (min_cap the
 * first time) gets every occupied slot, each at the first free one from
 * its hash (mask applied here). slot size `size`; occupied and hash read a
 * slot (ctx passed along). @return 0 or -ENOMEM (the table as it was). */
static inline int wsp_table_room(void *slots, size_t *cap, size_t used, size_t size, size_t min_cap,
				 bool (*occupied)(const void *slot), size_t (*hash)(const void *slot, void *ctx),
				 void *ctx)
{
	if ((used + 1) * 2 <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : min_cap;
	unsigned char *t = calloc(n, size), *old = *(unsigned char **)slots;
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < *cap; i++) {
		const unsigned char *s = old + i * size;
		if (!occupied(s))
			continue;
		size_t j = hash(s, ctx) & (n - 1);
		while (occupied(t + j * size))
			j = (j + 1) & (n - 1);
		memcpy(t + j * size, s, size);
	}
	free(old);
	*(unsigned char **)slots = t;
	*cap = n;
	return 0;
}

/* An index of the items of an array by hash: a table of item numbers + 1
 * (0: empty slot) at most half full. When `need` items would make it
 * fuller, a table of at least 2 * need slots (a power of two, min_cap at
 * least) is built from the items [first, n) that keep accepts (NULL: all),
 * each at the first free slot from hash(i, ctx) (mask applied here).
 * @return 0 or -ENOMEM (the index as it was). */
static inline int wsp_index_fit(uint32_t **index, size_t *cap, size_t need, size_t min_cap, size_t first, size_t n,
				size_t (*hash)(size_t i, void *ctx), bool (*keep)(size_t i, void *ctx), void *ctx)
{
	if (need * 2 <= *cap)
		return 0;
	size_t c = *cap > min_cap ? *cap : min_cap;
	while (c < need * 2)
		c *= 2;
	uint32_t *t = calloc(c, sizeof *t);
	if (!t)
		return -ENOMEM;
	for (size_t i = first; i < n; i++) {
		if (keep && !keep(i, ctx))
			continue;
		size_t j = hash(i, ctx) & (c - 1);
		while (t[j])
			j = (j + 1) & (c - 1);
		t[j] = (uint32_t)i + 1;
	}
	free(*index);
	*index = t;
	*cap = c;
	return 0;
}

#if defined(__SANITIZE_ADDRESS__)
#define WSP_GROW_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WSP_GROW_CHECKED 1
#endif
#endif

#define WSP_HUGE_PAGE ((size_t)2 << 20)

/* The bytes a huge array of cap items takes: whole 2 MiB pages. */
static inline size_t wsp_huge_bytes(size_t cap, size_t elem)
{
	return (cap * elem + WSP_HUGE_PAGE - 1) & ~(WSP_HUGE_PAGE - 1);
}

/* bytes (a multiple of 2 MiB) of fresh memory on a 2 MiB boundary. */
static inline void *wsp_huge_map(size_t bytes)
{
	size_t span = bytes + WSP_HUGE_PAGE;
	uint8_t *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uint8_t *a = (uint8_t *)(((uintptr_t)p + WSP_HUGE_PAGE - 1) & ~(uintptr_t)(WSP_HUGE_PAGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + bytes, (size_t)(p + span - (a + bytes)));
	madvise(a, bytes, MADV_HUGEPAGE); /* a wish: without it, pages of 4 KiB */
	return a;
}

/* A checked build (AddressSanitizer) keeps them on the heap, where every
 * access past an end is caught. */
static inline void wsp_free_huge(void *array, size_t cap, size_t elem)
{
#ifdef WSP_GROW_CHECKED
	(void)cap, (void)elem;
	free(array);
#else
	if (array)
		munmap(array, wsp_huge_bytes(cap, elem));
#endif
}

/* One object of n bytes in huge pages (freed with wsp_free_huge(p, 1, n)). */
static inline void *wsp_alloc_huge(size_t n)
{
#ifdef WSP_GROW_CHECKED
	return malloc(n);
#else
	return wsp_huge_map(wsp_huge_bytes(1, n));
#endif
}

static inline int wsp_grow_huge(void *array, size_t *cap, size_t need, size_t elem)
{
#ifdef WSP_GROW_CHECKED
	return wsp_grow(array, cap, need, elem);
#else
	if (need <= *cap)
		return 0;
	if (need > SIZE_MAX / elem / 2 - WSP_HUGE_PAGE)
		return -ENOMEM;
	size_t bytes = wsp_huge_bytes(need, elem), twice = 2 * wsp_huge_bytes(*cap, elem);
	if (bytes < twice)
		bytes = twice;
	void *p = wsp_huge_map(bytes);
	if (!p)
		return -ENOMEM;
	void *old = *(void **)array;
	if (old) {
		memcpy(p, old, *cap * elem);
		wsp_free_huge(old, *cap, elem);
	}
	*(void **)array = p;
	*cap = bytes / elem;
	return 0;
#endif
}

#endif
