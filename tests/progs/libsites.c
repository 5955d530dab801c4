/*
 * libsites.so - a library loaded with dlopen by alloc_sites, so that a
 * call site in a run-time loaded module must be named.
 */
#include <stdlib.h>

__attribute__((visibility("default"), noinline)) void *sites_lib_alloc(size_t n)
{
	void *volatile p = malloc(n); /* SITE:lib */
	return p; /* through a volatile: no tail call to malloc */
}
