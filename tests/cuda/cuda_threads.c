/*
 * cuda_threads - device memory allocated and freed by two threads at once.
 *
 * usage: cuda_threads EXPECT [ROUNDS [BLOCKS]]   (default 20 16)
 *
 * Each worker first allocates one block it never frees, then, every
 * round, allocates BLOCKS blocks (cuMemAlloc_v2 and cuMemAllocAsync on its
 * own stream, alternately) and, after a barrier, frees the blocks its
 * neighbour allocated (cuMemFree_v2 and cuMemFreeAsync on its own stream):
 * every block is freed by the other thread. The barriers make the peak
 * deterministic: device memory in use is largest when both workers have
 * finished allocating a round, whatever the interleaving.
 *
 * Linked with libcuda.so.1.
 */
#include "account.h"
#include "cuda_min.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS 2
#define MAX_BLOCKS 256

static unsigned rounds = 20, blocks = 16;
static CUdeviceptr slots[THREADS][MAX_BLOCKS];
static pthread_barrier_t barrier;
static pthread_mutex_t books_lock = PTHREAD_MUTEX_INITIALIZER;
static struct account device;  /* both threads' calls, in one book */
static CUcontext ctx;

static void check(CUresult got, const char *call)
{
	if (got != CUDA_SUCCESS) {
		complain("cuda_threads: %s returned %d", call, (int)got);
		_exit(3);
	}
}

/* Each phase only adds or only removes, so books kept under a lock, in
 * any order within a phase, reach the same peak as the program. */
static void book(bool alloc, size_t size)
{
	pthread_mutex_lock(&books_lock);
	if (alloc)
		account_alloc(&device, size);
	else
		account_free(&device, size);
	pthread_mutex_unlock(&books_lock);
}

static size_t block_size(unsigned thread, unsigned i)
{
	return 4096 * (1 + (thread * 7 + i) % 16);
}

static void *worker(void *arg)
{
	unsigned self = (unsigned)(uintptr_t)arg, neighbour = (self + 1) % THREADS;
	CUstream s;
	check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	check(cuStreamCreate(&s, 0), "cuStreamCreate");
	CUdeviceptr kept;
	check(cuMemAlloc_v2(&kept, 1000 + self), "cuMemAlloc_v2");
	book(true, 1000 + self);

	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < blocks; i++) {
			size_t size = block_size(self, i);
			if (i % 2)
				check(cuMemAllocAsync(&slots[self][i], size, s), "cuMemAllocAsync");
			else
				check(cuMemAlloc_v2(&slots[self][i], size), "cuMemAlloc_v2");
			book(true, size);
		}
		pthread_barrier_wait(&barrier);
		for (unsigned i = 0; i < blocks; i++) {
			if (i % 2)
				check(cuMemFreeAsync(slots[neighbour][i], s), "cuMemFreeAsync");
			else
				check(cuMemFree_v2(slots[neighbour][i]), "cuMemFree_v2");
			book(false, block_size(neighbour, i));
		}
		pthread_barrier_wait(&barrier);
	}
	check(cuStreamSynchronize(s), "cuStreamSynchronize");
	check(cuStreamDestroy_v2(s), "cuStreamDestroy_v2");
	return NULL;
}

static unsigned arg_or(int argc, char **argv, int i, unsigned def)
{
	return argc > i ? (unsigned)strtoul(argv[i], NULL, 10) : def;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: cuda_threads EXPECT [ROUNDS [BLOCKS]]");
		return 2;
	}
	rounds = arg_or(argc, argv, 2, rounds);
	blocks = arg_or(argc, argv, 3, blocks);
	if (blocks < 1 || blocks > MAX_BLOCKS) {
		complain("cuda_threads: 1 to %d blocks", MAX_BLOCKS);
		return 2;
	}
	check(cuInit(0), "cuInit");
	check(cuDevicePrimaryCtxRetain(&ctx, 0), "cuDevicePrimaryCtxRetain");
	pthread_barrier_init(&barrier, NULL, THREADS);
	pthread_t tids[THREADS];
	for (unsigned t = 0; t < THREADS; t++)
		pthread_create(&tids[t], NULL, worker, (void *)(uintptr_t)t);
	for (unsigned t = 0; t < THREADS; t++)
		pthread_join(tids[t], NULL);

	struct expect e;
	expect_init(&e);
	expect_account(&e, "cuda_device", &device);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
