/*
 * testalloc.c - libtestalloc.so (see testalloc.h): allocations made by a
 * dlopen'ed library, each a plain call so that the library is the first
 * frame above malloc.
 */
#include "testalloc.h"

#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT void *testalloc_make(size_t size)
{
	void *p = malloc(size);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

EXPORT void *testalloc_resize(void *p, size_t size)
{
	void *q = realloc(p, size);
	__asm__ volatile("" : : "r"(q) : "memory");
	return q;
}

EXPORT void testalloc_release(void *p)
{
	free(p);
	__asm__ volatile("" ::: "memory");
}
