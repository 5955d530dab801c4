/*
 * service.c - a service-like program: on a timer it allocates and keeps
 * a block in tick() (and frees the oldest once it holds 8), then prints
 * how many ticks it made. What `wsprof top` follows and `wsprof attach`
 * attaches to in the tests.
 *
 * usage: service EXPECT [TICKS [INTERVAL_MS [named]]]   (EXPECT: ignored; default 40 ticks of 50 ms)
 *
 * named: each block is named "tick block" with wsprof_name (include/wsprof.h)
 * as it is made, from the first tick on: an attach comes after the first
 * call found no wsprof.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wsprof.h"

#define BLOCK (64 << 10)

static void *held[8];
static int named;

__attribute__((noinline)) static void tick(long i)
{
	free(held[i % 8]);
	held[i % 8] = malloc(BLOCK);
	if (held[i % 8])
		memset(held[i % 8], (int)i, BLOCK);
	if (named)
		wsprof_name(held[i % 8], "tick block");
}

int main(int argc, char **argv)
{
	long ticks = argc > 2 ? strtol(argv[2], NULL, 10) : 40, ms = argc > 3 ? strtol(argv[3], NULL, 10) : 50;
	named = argc > 4 && !strcmp(argv[4], "named");
	struct timespec pause = { ms / 1000, (ms % 1000) * 1000000 };
	long i = 0;
	for (; i < ticks; i++) {
		tick(i);
		nanosleep(&pause, NULL);
	}
	printf("ticks %ld\n", i);
	return 0;
}
