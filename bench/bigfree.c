/*
 * bigfree - a workload that frees many large blocks, for the cost of
 * reading released memory (preload/access/sampler.c, "memory given back").
 *
 * usage: bigfree [THREADS [BLOCKS [TOUCH]]]   (default 2 threads, 4000 blocks each, touch 1)
 *
 * Each thread mallocs BLOCKS blocks of 64 KiB to 8 MiB (sizes drawn
 * log-uniformly from a fixed seed), writes one word in every TOUCH-th page
 * of each (0: none, only the allocation), and frees it at once: glibc
 * serves the biggest with mmap and unmaps them at free, the others from
 * its arenas. Every free of 64 KiB or more is read by the free hook under
 * wsprof. Prints the seconds the threads took.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned blocks = 4000, touch = 1;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *run(void *arg)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (uintptr_t)arg + 1;
	for (unsigned i = 0; i < blocks; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t size = (size_t)64 << 10 << (x % 8); /* 64 KiB .. 8 MiB */
		size += (x >> 8) % size;
		if (size > (8u << 20))
			size = 8u << 20;
		volatile char *p = malloc(size);
		if (!p)
			return NULL;
		for (size_t off = 0; touch && off < size; off += 4096 * (size_t)touch)
			p[off] = (char)i;
		free((void *)p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned threads = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 2;
	if (argc > 2)
		blocks = (unsigned)strtoul(argv[2], NULL, 10);
	if (argc > 3)
		touch = (unsigned)strtoul(argv[3], NULL, 10);
	if (threads < 1 || threads > 64 || !blocks) {
		fprintf(stderr, "usage: bigfree [THREADS [BLOCKS [TOUCH]]]\n");
		return 2;
	}
	pthread_t th[64];
	double t0 = now();
	for (unsigned i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, run, (void *)(uintptr_t)(i + 1)) != 0)
			return 1;
	for (unsigned i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("%.3f\n", now() - t0);
	return 0;
}
