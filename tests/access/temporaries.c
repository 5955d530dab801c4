/*
 * temporaries - one block kept hot, and temporaries written and freed
 * within every window: memory a window scan alone never sees.
 *
 * usage: temporaries EXPECT TEMP_BYTES written|unwritten|mapped MS
 *
 * An 8 MiB block (hot_site) is written one word per page over and
 * over. Every 10 ms a temporary of TEMP_BYTES is malloc'd (temp_site),
 * written whole with memset (or, unwritten, only allocated) and freed at
 * once, for MS milliseconds (phase "steady"). glibc serves a 48 MiB
 * temporary with mmap and unmaps it at free; a 4 MiB one too at first,
 * then, once that free raised its mmap threshold, from the brk heap, where
 * the same pages serve the next one. Mapped: every 100 ms instead, a new
 * private anonymous mapping of TEMP_BYTES (mmap_site) is made, written
 * whole and kept, so each window sees memory that appeared in it. The
 * expect file:
 *   {"pid": P, "page_size": S, "hot": A, "hot_size": N, "temp_size": T, "temps": K}
 */
#include "account.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "wsprof.h"

#define HOT_SIZE (8u << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void __attribute__((noinline)) temp_site(size_t size, int write)
{
	char *t = malloc(size); /* SITE:temp_site */
	if (!t)
		return;
	if (write)
		memset(t, 1, size);
	account_keep(t);
	free(t);
}

static void __attribute__((noinline)) mmap_site(size_t size)
{
	char *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* SITE:mmap_site */
	if (m != MAP_FAILED)
		memset(m, 1, size);
}

static char *__attribute__((noinline)) hot_site(void)
{
	char *hot = malloc(HOT_SIZE); /* SITE:hot_site */
	if (hot)
		memset(hot, 1, HOT_SIZE);
	return hot;
}

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[3], "written") && strcmp(argv[3], "unwritten") && strcmp(argv[3], "mapped"))) {
		complain("usage: temporaries EXPECT TEMP_BYTES written|unwritten|mapped MS");
		return 2;
	}
	size_t temp = strtoull(argv[2], NULL, 10), page = (size_t)sysconf(_SC_PAGESIZE);
	int write = strcmp(argv[3], "written") == 0, mapped = strcmp(argv[3], "mapped") == 0;
	uint64_t ms = strtoull(argv[4], NULL, 10);
	volatile char *hot = hot_site();
	if (!hot)
		return 2;

	wsprof_phase_push("steady");
	uint64_t start = now_ns(), next = start, temps = 0;
	for (unsigned round = 1; now_ns() - start < ms * 1000000u; round++) {
		for (size_t off = 0; off < HOT_SIZE; off += page)
			hot[off] = (char)round;
		if (now_ns() >= next) {
			if (mapped)
				mmap_site(temp);
			else
				temp_site(temp, write);
			temps++;
			next += mapped ? 100000000u : 10000000u;
		}
	}
	wsprof_phase_pop();

	struct expect e;
	expect_init(&e);
	expect_uint(&e, "pid", (uint64_t)getpid());
	expect_uint(&e, "page_size", page);
	expect_uint(&e, "hot", (uintptr_t)hot);
	expect_uint(&e, "hot_size", HOT_SIZE);
	expect_uint(&e, "temp_size", temp);
	expect_uint(&e, "temps", temps);
	free((char *)hot);
	return expect_write(&e, argv[1]) == 0 ? 0 : 2;
}
