/*
 * testinit.c - libtestinit.so: a library whose constructor allocates,
 * while dlopen is still loading it, and whose destructor frees that block
 * during dlclose. Its first allocation happens before dlopen returns, the
 * hardest moment for a profiler to know the library is there.
 */
#include "testalloc.h"

#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))
#define BLOCK_SIZE 4321

static void *block;

__attribute__((constructor)) static void made(void)
{
	block = malloc(BLOCK_SIZE);
	__asm__ volatile("" : : "r"(block) : "memory");
}

__attribute__((destructor)) static void unmade(void)
{
	free(block);
	__asm__ volatile("" ::: "memory");
}

EXPORT size_t testinit_block_size(void)
{
	return block ? BLOCK_SIZE : 0;
}
