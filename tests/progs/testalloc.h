/*
 * testalloc.h - libtestalloc.so, a library that allocates on its callers'
 * behalf, loaded by alloc_dlopen with dlopen (never linked), so that its
 * allocations are made from code that was not there when the program
 * started. alloc_dlopen looks the functions up with dlsym by these names.
 */
#ifndef PROGS_TESTALLOC_H
#define PROGS_TESTALLOC_H

#include <stddef.h>

/* malloc(size), made inside the library. */
typedef void *testalloc_make_fn(size_t size);
/* realloc(p, size), inside the library. */
typedef void *testalloc_resize_fn(void *p, size_t size);
/* free(p), inside the library. */
typedef void testalloc_release_fn(void *p);

/* libtestinit.so's constructor allocates a block its destructor frees.
 * @return that block's size. */
typedef size_t testinit_block_size_fn(void);

#endif
