/*
 * oom.cu - cudaMalloc until the device is full, counted.
 *
 * usage: oom BOOKS [free|abort|kill]
 *
 * Allocates 1 GiB blocks with cudaMalloc until one fails (at most 300:
 * more than any device has), writing into each, and stops at the first
 * failure: the books hold the successes and exactly one failure. Then:
 *   free   frees every block and exits 0 (the default);
 *   abort  writes its books and exits 1 at once, every block still live;
 *   kill   writes its books and kills itself with SIGKILL at once, so
 *          nothing at exit can write what the recorder still holds: the
 *          trace must already show the failure and every success (the
 *          recorder flushes at once when an allocation fails; run.sh
 *          records this run with the longest flush interval, so nothing
 *          else would have written them).
 */
#include <cuda_runtime.h>
#include <signal.h>
#include <unistd.h>

#include "books.h"

#define GiB (1ull << 30)
#define MAX_BLOCKS 300

static struct book device = BOOK("cuda_device");

static int finish(const char *path)
{
	struct book *books[] = { &device };
	return books_write(path, books, 1, NULL);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "free";
	if (argc < 2 || argc > 3 || (strcmp(mode, "free") && strcmp(mode, "abort") && strcmp(mode, "kill"))) {
		fprintf(stderr, "usage: %s BOOKS [free|abort|kill]\n", argv[0]);
		return 2;
	}
	RT_CHECK(cudaSetDevice(0));

	static void *blocks[MAX_BLOCKS];
	int n = 0;
	cudaError_t err = cudaSuccess;
	while (n < MAX_BLOCKS) {
		err = cudaMalloc(&blocks[n], GiB);
		if (err != cudaSuccess)
			break;
		books_alloc(&device, GiB);
		RT_CHECK(cudaMemsetAsync(blocks[n], n & 0xff, 4096, 0));
		n++;
	}
	if (err == cudaSuccess)
		DIE("%d blocks of 1 GiB and no failure", n);
	if (err != cudaErrorMemoryAllocation)
		DIE("cudaMalloc failed with %s, not out of memory", cudaGetErrorName(err));
	books_fail(&device);
	(void)cudaGetLastError();

	if (!strcmp(mode, "abort")) {
		if (finish(argv[1]) != 0)
			return 2;
		printf("oom: %d GiB allocated, then out of memory; exiting 1 with all of it live\n", n);
		fflush(stdout);
		exit(1);
	}
	if (!strcmp(mode, "kill")) {
		if (finish(argv[1]) != 0)
			return 2;
		printf("oom: %d GiB allocated, then out of memory; killing myself\n", n);
		fflush(stdout);
		/* Time for a flush the failure started on another thread; far
		 * less than the flush interval run.sh records with. */
		usleep(100 * 1000);
		raise(SIGKILL);
	}

	RT_CHECK(cudaDeviceSynchronize());
	for (int i = 0; i < n; i++) {
		RT_CHECK(cudaFree(blocks[i]));
		books_free(&device, GiB);
	}
	if (finish(argv[1]) != 0)
		return 2;
	printf("oom: %d GiB allocated, then out of memory; all freed\n", n);
	return 0;
}
