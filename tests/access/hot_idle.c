/*
 * hot_idle - one 64 MiB buffer written over and over, another left idle.
 *
 * usage: hot_idle EXPECT MODE STEADY_MS [THEN_MS]
 *   plain    write the hot buffer for STEADY_MS (phase "steady")
 *   realloc  the same, then move the hot buffer with realloc (glibc
 *            moves a large block with mremap) and write it at its new
 *            address for THEN_MS more (phase "moved"; default STEADY_MS)
 *   cool     as plain, then for THEN_MS write only the first half of the
 *            hot buffer (phase "cooled"): its second half has gone cold
 *   sparse   as plain, but only every other page of the hot buffer is
 *            written: 8192 separate regions per window
 *   fork     fork first; the child does what plain does and writes the
 *            expect file, the parent only waits for it
 *   damon    as plain, but first play the kernel's part in a DAMON sysfs
 *            tree of plain files ($WSPROF_DAMON_SYSFS, made by the test):
 *            its regions say the hot buffer is accessed, the idle one not
 *
 * Both buffers are malloc'd (glibc maps blocks this big with mmap) and
 * written whole once at the start, so both are resident. The hot buffer
 * is then written one word per page, sweep after sweep. The phases are
 * marked with wsprof.h so the test can pick the windows inside them from
 * the trace itself. The expect file names the buffers:
 *   {"pid": P, "page_size": S, "size": N, "hot": A, "idle": B, "moved": C}
 */
#include "account.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wsprof.h"

#define SIZE (64u << 20)
#define GROWN (SIZE + (4u << 20)) /* bigger, so realloc cannot stay in place */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Write one word in every `stride` bytes of the first len until ms pass. */
static void keep_writing(volatile char *p, size_t len, uint64_t ms, size_t stride)
{
	uint64_t until = now_ms() + ms;
	for (unsigned round = 1; now_ms() < until; round++)
		for (size_t off = 0; off < len; off += stride)
			p[off] = (char)round;
}

/* What a kdamond would answer: each buffer one region, page-aligned. */
static int damon_regions(const char *hot, const char *idle, size_t page)
{
	const char *root = getenv("WSPROF_DAMON_SYSFS");
	const char *buf[2] = { hot, idle };
	for (int i = 0; root && i < 2; i++) {
		uintptr_t lo = (uintptr_t)buf[i] & ~(uintptr_t)(page - 1);
		uintptr_t hi = ((uintptr_t)buf[i] + SIZE + page - 1) & ~(uintptr_t)(page - 1);
		const char *names[3] = { "start", "end", "nr_accesses" };
		uintptr_t values[3] = { lo, hi, i == 0 ? 20 : 0 };
		for (int k = 0; k < 3; k++) {
			char path[1024];
			snprintf(path, sizeof path, "%s/kdamonds/0/contexts/0/schemes/0/tried_regions/%d/%s", root, i,
				 names[k]);
			FILE *f = fopen(path, "w");
			if (!f || fprintf(f, "%lu\n", (unsigned long)values[k]) < 0 || fclose(f) != 0) {
				complain("cannot write %s", path);
				return 2;
			}
		}
	}
	return root ? 0 : 2;
}

static int run(const char *expect_path, const char *mode, uint64_t steady_ms, uint64_t then_ms)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *idle = malloc(SIZE); /* SITE:idle */
	char *hot = malloc(SIZE);  /* SITE:hot */
	if (!idle || !hot)
		return 2;
	memset(idle, 1, SIZE);
	memset(hot, 1, SIZE);
	account_keep(idle);

	if (strcmp(mode, "damon") == 0 && damon_regions(hot, idle, page) != 0)
		return 2;
	wsprof_phase_push("steady");
	keep_writing(hot, SIZE, steady_ms, strcmp(mode, "sparse") == 0 ? 2 * page : page);
	wsprof_phase_pop();

	struct expect e;
	expect_init(&e);
	expect_uint(&e, "pid", (uint64_t)getpid());
	expect_uint(&e, "page_size", page);
	expect_uint(&e, "size", SIZE);
	expect_uint(&e, "hot", (uintptr_t)hot);
	expect_uint(&e, "idle", (uintptr_t)idle);
	if (strcmp(mode, "realloc") == 0) {
		char *moved = realloc(hot, GROWN);
		if (!moved)
			return 2;
		wsprof_phase_push("moved");
		keep_writing(moved, SIZE, then_ms, page);
		wsprof_phase_pop();
		expect_uint(&e, "moved", (uintptr_t)moved);
		hot = moved;
	} else if (strcmp(mode, "cool") == 0) {
		wsprof_phase_push("cooled");
		keep_writing(hot, SIZE / 2, then_ms, page);
		wsprof_phase_pop();
	}
	free(hot);
	free(idle);
	return expect_write(&e, expect_path) == 0 ? 0 : 2;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		complain("usage: hot_idle EXPECT plain|realloc|sparse|fork|cool|damon STEADY_MS [THEN_MS]");
		return 2;
	}
	uint64_t steady_ms = strtoull(argv[3], NULL, 10);
	uint64_t then_ms = argc > 4 ? strtoull(argv[4], NULL, 10) : steady_ms;
	if (strcmp(argv[2], "fork") != 0)
		return run(argv[1], argv[2], steady_ms, then_ms);
	pid_t child = fork();
	if (child < 0)
		return 2;
	if (child == 0)
		_exit(run(argv[1], "plain", steady_ms, then_ms));
	int status;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return 2;
	return WEXITSTATUS(status);
}
