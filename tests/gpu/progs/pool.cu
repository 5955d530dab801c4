/*
 * pool.cu - stream-ordered allocation from memory pools, counted.
 *
 * usage: pool BOOKS
 *
 * A pool made with cudaMemPoolCreate serves cudaMallocFromPoolAsync, the
 * device's default pool serves cudaMallocAsync; cudaFreeAsync returns to
 * either. The pools take memory from the driver in chunks of their own
 * and hand the same addresses out again after a free: the summary counts
 * the program's calls (cuMemAllocFromPoolAsync, cuMemAllocAsync,
 * cuMemFreeAsync), never the pools' reservations. A few allocations stay
 * live at exit; the pools are never destroyed or trimmed.
 */
#include <cuda_runtime.h>

#include "books.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

static struct book device = BOOK("cuda_device");

__global__ void fill(unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = v;
}

static void *from_pool(cudaMemPool_t pool, size_t size, cudaStream_t s)
{
	void *p = NULL;
	RT_CHECK(cudaMallocFromPoolAsync(&p, size, pool, s));
	books_alloc(&device, size);
	fill<<<64, 256, 0, s>>>((unsigned char *)p, size, 1);
	RT_CHECK(cudaGetLastError());
	return p;
}

static void *from_default(size_t size, cudaStream_t s)
{
	void *p = NULL;
	RT_CHECK(cudaMallocAsync(&p, size, s));
	books_alloc(&device, size);
	fill<<<64, 256, 0, s>>>((unsigned char *)p, size, 2);
	RT_CHECK(cudaGetLastError());
	return p;
}

static void release(void *p, size_t size, cudaStream_t s)
{
	RT_CHECK(cudaFreeAsync(p, s));
	books_free(&device, size);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s BOOKS\n", argv[0]);
		return 2;
	}
	RT_CHECK(cudaSetDevice(0));
	cudaStream_t s;
	RT_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

	cudaMemPoolProps props;
	memset(&props, 0, sizeof props);
	props.allocType = cudaMemAllocationTypePinned;
	props.handleTypes = cudaMemHandleTypeNone;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	cudaMemPool_t pool;
	RT_CHECK(cudaMemPoolCreate(&pool, &props));
	/* Keep what is freed in the pool, so later calls reuse it. */
	uint64_t keep = UINT64_MAX;
	RT_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));

	void *a = from_pool(pool, 8 * MiB, s);
	void *b = from_pool(pool, 24 * MiB, s);
	void *c = from_pool(pool, 1 * MiB + 7, s);
	release(b, 24 * MiB, s);
	void *d = from_pool(pool, 20 * MiB, s);        /* out of b's memory, most likely */
	release(a, 8 * MiB, s);
	release(d, 20 * MiB, s);
	for (int i = 0; i < 10; i++)                   /* the same block, ten times over */
		release(from_pool(pool, 2 * MiB, s), 2 * MiB, s);

	void *e = from_default(16 * MiB, s);
	void *f = from_default(3 * KiB, s);
	release(e, 16 * MiB, s);
	void *g = from_default(40 * MiB, s);
	release(g, 40 * MiB, s);

	RT_CHECK(cudaStreamSynchronize(s));
	(void)c;                                       /* c and f stay live: leaks */
	(void)f;

	struct book *books[] = { &device };
	if (books_write(argv[1], books, 1, NULL) != 0)
		return 2;
	printf("pool: %llu allocations, %llu frees, peak %llu, leaked %llu\n",
	       (unsigned long long)device.allocations, (unsigned long long)device.frees,
	       (unsigned long long)device.peak_bytes, (unsigned long long)device.live_bytes);
	return 0;
}
