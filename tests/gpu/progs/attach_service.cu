/*
 * attach_service.cu - a CUDA program that is running before wsprof
 * attaches to it: cudart is set up by a first cudaMalloc, then on a timer
 * tick() allocates a device block with cudaMalloc and frees the oldest
 * once it holds 8; at the end it prints how many ticks it made and how
 * many of its own calls failed.
 *
 * usage: attach_service TICKS INTERVAL_MS
 *
 * run.sh builds it twice (static cudart, nvcc's default, and -cudart
 * shared) and attaches to it for a while: the trace must hold the
 * attached span's device allocations, made in tick.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BLOCK (4u << 20)

static void *held[8];
static long failures;

__attribute__((noinline)) static void tick(long i)
{
	if (held[i % 8] && cudaFree(held[i % 8]) != cudaSuccess)
		failures++;
	held[i % 8] = NULL;
	if (cudaMalloc(&held[i % 8], BLOCK) != cudaSuccess) {
		held[i % 8] = NULL;
		failures++;
	}
}

int main(int argc, char **argv)
{
	long ticks = argc > 1 ? strtol(argv[1], NULL, 10) : 100, ms = argc > 2 ? strtol(argv[2], NULL, 10) : 50;
	void *first = NULL;
	if (cudaMalloc(&first, 1) != cudaSuccess) { /* cudart and the driver set up */
		fprintf(stderr, "attach_service: no CUDA device\n");
		return 2;
	}
	cudaFree(first);
	printf("ready\n");
	fflush(stdout);
	struct timespec pause = { ms / 1000, (ms % 1000) * 1000000L };
	long i = 0;
	for (; i < ticks; i++) {
		tick(i);
		nanosleep(&pause, NULL);
	}
	printf("ticks %ld failures %ld\n", i, failures);
	return 0;
}
