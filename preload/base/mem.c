/*
 * mem.c - wsprof's own memory, straight from the kernel.
 *
 * The recorder never calls the traced program's malloc: that would recurse
 * into the hooks and show wsprof's memory as the program's. Large objects
 * (buffers, tables) get their own pages; small long-lived objects (thread
 * entries) are carved from 64 KiB blocks and never returned. mmap goes
 * through the raw syscall so the mmap hook never sees wsprof's own maps.
 * Async-signal-safe except wsp_mem_alloc (a spin lock).
 */

#include "base.h"
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

void *wsp_pages_alloc(size_t size)
{
	long r = syscall(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return r < 0 && r > -4096 ? NULL : (void *)r;
}

void wsp_pages_free(void *p, size_t size)
{
	if (p)
		syscall(SYS_munmap, p, size);
}

#define BLOCK (64 * 1024)

/* size bytes at a multiple of align (a power of two up to 64), the size
 * rounded up to one too. */
static void *mem_alloc(size_t size, size_t align)
{
	static atomic_flag lock = ATOMIC_FLAG_INIT;
	static unsigned char *block;
	static size_t used = BLOCK;

	size = (size + align - 1) & ~(align - 1);
	if (size > BLOCK / 4)
		return wsp_pages_alloc(size);
	while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
		;
	void *p = NULL;
	used = (used + align - 1) & ~(align - 1); /* blocks are pages: aligned */
	if (used + size > BLOCK) {
		unsigned char *b = wsp_pages_alloc(BLOCK);
		if (b) {
			block = b;
			used = 0;
		}
	}
	if (used + size <= BLOCK) {
		p = block + used;
		used += size;
	}
	atomic_flag_clear_explicit(&lock, memory_order_release);
	return p;
}

void *wsp_mem_alloc(size_t size)
{
	return mem_alloc(size, 16);
}

void *wsp_mem_alloc_lines(size_t size)
{
	return mem_alloc(size, 64);
}
