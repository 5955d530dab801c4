/*
 * runtime.cu - every allocation entry point of the CUDA runtime, counted.
 *
 * usage: runtime BOOKS
 *
 * cudaMalloc/cudaFree of several sizes, one cudaMalloc that fails (1 TiB),
 * cudaMallocPitch, cudaMallocManaged, cudaMallocHost/cudaFreeHost,
 * cudaHostAlloc, cudaHostRegister/Unregister of a malloc'd buffer,
 * cudaMallocAsync/cudaFreeAsync on a stream, kernels writing device and
 * managed memory, and a few blocks of each kind left allocated at exit.
 * run.sh builds it twice: with the static cudart (nvcc's default, where
 * cudaMalloc is inside the program) and with -cudart shared.
 */
#include <cuda_runtime.h>

#include "books.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

static struct book device = BOOK("cuda_device");
static struct book managed = BOOK("cuda_managed");
static struct book host = BOOK("cuda_host");

__global__ void fill(unsigned *p, size_t n, unsigned v)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = v + (unsigned)i;
}

static void *dev_alloc(size_t size)
{
	void *p = NULL;
	RT_CHECK(cudaMalloc(&p, size));
	books_alloc(&device, size);
	return p;
}

static void dev_free(void *p, size_t size)
{
	RT_CHECK(cudaFree(p));
	books_free(&device, size);
}

static void device_memory(void)
{
	void *a = dev_alloc(1 * MiB);
	void *b = dev_alloc(4099);                      /* an odd size: requested bytes, not rounded */
	unsigned *c = (unsigned *)dev_alloc(64 * MiB);
	void *d = dev_alloc(256 * MiB);
	fill<<<256, 256>>>(c, 64 * MiB / sizeof *c, 7);
	RT_CHECK(cudaGetLastError());
	RT_CHECK(cudaDeviceSynchronize());
	unsigned probe = 0;
	RT_CHECK(cudaMemcpy(&probe, c + 5, sizeof probe, cudaMemcpyDeviceToHost));
	if (probe != 12)
		DIE("kernel wrote %u, expected 12", probe);
	dev_free(a, 1 * MiB);
	dev_free(b, 4099);
	dev_free(d, 256 * MiB);

	/* A request the device cannot meet fails and counts as failed. */
	void *none = NULL;
	cudaError_t err = cudaMalloc(&none, 1ull << 40);
	if (err == cudaSuccess)
		DIE("cudaMalloc(1 TiB) succeeded");
	(void)cudaGetLastError();
	books_fail(&device);

	/* Pitched: the summary counts pitch x height. */
	void *pitched = NULL;
	size_t pitch = 0, width = 1000, height = 300;
	RT_CHECK(cudaMallocPitch(&pitched, &pitch, width, height));
	books_alloc(&device, (uint64_t)pitch * height);
	RT_CHECK(cudaMemset2D(pitched, pitch, 0, width, height));
	RT_CHECK(cudaDeviceSynchronize());
	RT_CHECK(cudaFree(pitched));
	books_free(&device, (uint64_t)pitch * height);

	/* c (64 MiB) stays allocated: a leak. */
	void *small = dev_alloc(12 * KiB);              /* and another one */
	(void)small;
}

/* Managed memory, or a note where the platform has none (a failed call,
 * counted as failed). */
static void *managed_alloc(size_t size)
{
	void *p = NULL;
	cudaError_t err = cudaMallocManaged(&p, size);
	if (err != cudaSuccess) {
		(void)cudaGetLastError();
		books_fail(&managed);
		books_note("cudaMallocManaged(%zu) failed here (%s): counted as failed", size, cudaGetErrorName(err));
		return NULL;
	}
	books_alloc(&managed, size);
	return p;
}

static void managed_memory(void)
{
	size_t n = 8 * MiB / sizeof(unsigned);
	unsigned *m = (unsigned *)managed_alloc(n * sizeof *m);
	if (m) {
		fill<<<128, 256>>>(m, n, 3);
		RT_CHECK(cudaGetLastError());
		RT_CHECK(cudaDeviceSynchronize());
		if (m[100] != 103)
			DIE("managed memory holds %u, expected 103", m[100]);
		RT_CHECK(cudaFree(m));
		books_free(&managed, n * sizeof *m);
	}
	managed_alloc(2 * MiB);                         /* leaked */
}

static void host_memory(void)
{
	void *pinned = NULL;
	RT_CHECK(cudaMallocHost(&pinned, 1 * MiB));
	books_alloc(&host, 1 * MiB);

	void *portable = NULL;
	RT_CHECK(cudaHostAlloc(&portable, 3 * MiB, cudaHostAllocPortable));
	books_alloc(&host, 3 * MiB);

	/* Registering memory the program allocated itself pins it: a cuda_host
	 * block until it is unregistered. */
	size_t reg_size = 4 * MiB;
	void *buffer = NULL;
	if (posix_memalign(&buffer, 4096, reg_size) != 0)
		DIE("posix_memalign failed");
	memset(buffer, 1, reg_size);
	void *dev = dev_alloc(reg_size);
	cudaError_t err = cudaHostRegister(buffer, reg_size, cudaHostRegisterDefault);
	if (err == cudaSuccess) {
		books_alloc(&host, reg_size);
		RT_CHECK(cudaMemcpy(dev, buffer, reg_size, cudaMemcpyHostToDevice));
		RT_CHECK(cudaHostUnregister(buffer));
		books_free(&host, reg_size);
	} else {
		/* Some sandboxes cannot pin memory they did not allocate. */
		(void)cudaGetLastError();
		books_fail(&host);
		books_note("cudaHostRegister failed here (%s): counted as failed", cudaGetErrorName(err));
		RT_CHECK(cudaMemcpy(dev, buffer, reg_size, cudaMemcpyHostToDevice));
	}
	RT_CHECK(cudaMemcpy(pinned, dev, 1 * MiB, cudaMemcpyDeviceToHost));
	if (((unsigned char *)pinned)[4242] != 1)
		DIE("pinned copy does not hold what was copied");
	dev_free(dev, reg_size);
	free(buffer);
	RT_CHECK(cudaFreeHost(pinned));
	books_free(&host, 1 * MiB);

	void *kept = NULL;                              /* leaked, with `portable` */
	RT_CHECK(cudaHostAlloc(&kept, 64 * KiB, cudaHostAllocDefault));
	books_alloc(&host, 64 * KiB);
	(void)portable;
}

static void stream_ordered(void)
{
	cudaStream_t s;
	RT_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	unsigned *a = NULL, *b = NULL, *c = NULL;
	RT_CHECK(cudaMallocAsync((void **)&a, 32 * MiB, s));
	books_alloc(&device, 32 * MiB);
	RT_CHECK(cudaMallocAsync((void **)&b, 5 * MiB + 3, s));
	books_alloc(&device, 5 * MiB + 3);
	fill<<<64, 256, 0, s>>>(a, 32 * MiB / sizeof *a, 1);
	RT_CHECK(cudaGetLastError());
	RT_CHECK(cudaFreeAsync(a, s));
	books_free(&device, 32 * MiB);
	/* Likely served from what the pool just got back: still one call. */
	RT_CHECK(cudaMallocAsync((void **)&c, 16 * MiB, s));
	books_alloc(&device, 16 * MiB);
	fill<<<64, 256, 0, s>>>(c, 16 * MiB / sizeof *c, 2);
	RT_CHECK(cudaGetLastError());
	RT_CHECK(cudaFreeAsync(c, s));
	books_free(&device, 16 * MiB);
	RT_CHECK(cudaStreamSynchronize(s));
	(void)b;                                        /* leaked */
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s BOOKS\n", argv[0]);
		return 2;
	}
	RT_CHECK(cudaSetDevice(0));
	device_memory();
	managed_memory();
	host_memory();
	stream_ordered();
	RT_CHECK(cudaDeviceSynchronize());

	struct book *books[] = { &device, &managed, &host };
	if (books_write(argv[1], books, 3, NULL) != 0)
		return 2;
	printf("runtime: device %llu allocations, peak %llu; managed %llu; host %llu\n",
	       (unsigned long long)device.allocations, (unsigned long long)device.peak_bytes,
	       (unsigned long long)managed.allocations, (unsigned long long)host.allocations);
	return 0;
}
