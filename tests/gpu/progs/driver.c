/*
 * driver.c - the CUDA driver API called directly, by every route a
 * program can take to it, counted.
 *
 * usage: driver BOOKS
 *
 * Plain C (a .cu file would bring cudart in to register its kernels),
 * built with -cudart none -lcuda: no runtime, so nothing but this code
 * calls the driver. Calls cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged,
 * cuMemHostAlloc, cuMemAllocHost and cuMemHostRegister through the linked
 * symbols, then cuMemAlloc/cuMemFree through dlsym("cuMemAlloc_v2") and
 * through cuGetProcAddress("cuMemAlloc"): each allocation counts once,
 * whatever the route. One cuMemAlloc fails; some blocks are left live.
 * The primary context is never released, so the driver frees nothing on
 * the program's behalf before exit.
 */
#define _GNU_SOURCE /* posix_memalign, dlopen under -std=c11 */
#include <cuda.h>
#include <dlfcn.h>

#include "books.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

static struct book device = BOOK("cuda_device");
static struct book managed = BOOK("cuda_managed");
static struct book host = BOOK("cuda_host");

typedef CUresult (*mem_alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*mem_free_fn)(CUdeviceptr);

static CUdeviceptr dev_alloc(size_t size)
{
	CUdeviceptr p = 0;
	CU_CHECK(cuMemAlloc(&p, size));
	books_alloc(&device, size);
	return p;
}

static void linked_calls(void)
{
	CUdeviceptr a = dev_alloc(1 * MiB);
	CUdeviceptr b = dev_alloc(16 * MiB);         /* leaked */
	CU_CHECK(cuMemsetD8(b, 0x5a, 16 * MiB));
	CU_CHECK(cuMemFree(a));
	books_free(&device, 1 * MiB);

	CUdeviceptr none = 0;
	CUresult r = cuMemAlloc(&none, 1ull << 40);
	if (r == CUDA_SUCCESS)
		DIE("cuMemAlloc(1 TiB) succeeded");
	books_fail(&device);

	CUdeviceptr pitched = 0;
	size_t pitch = 0, width = 1000, height = 100;
	CU_CHECK(cuMemAllocPitch(&pitched, &pitch, width, height, 4));
	books_alloc(&device, (uint64_t)pitch * height);
	CU_CHECK(cuMemsetD2D8(pitched, pitch, 1, width, height));
	CU_CHECK(cuMemFree(pitched));
	books_free(&device, (uint64_t)pitch * height);

	CUdeviceptr m = 0;
	CU_CHECK(cuMemAllocManaged(&m, 4 * MiB, CU_MEM_ATTACH_GLOBAL));
	books_alloc(&managed, 4 * MiB);
	CU_CHECK(cuMemsetD32(m, 7, 4 * MiB / 4));
	CU_CHECK(cuCtxSynchronize());
	if (((unsigned *)(uintptr_t)m)[1000] != 7)
		DIE("managed memory does not hold what cuMemsetD32 wrote");
	CU_CHECK(cuMemFree(m));
	books_free(&managed, 4 * MiB);
	CUdeviceptr m2 = 0;                          /* leaked */
	CU_CHECK(cuMemAllocManaged(&m2, 6 * MiB + 1, CU_MEM_ATTACH_GLOBAL));
	books_alloc(&managed, 6 * MiB + 1);

	void *h1 = NULL, *h2 = NULL;
	CU_CHECK(cuMemHostAlloc(&h1, 2 * MiB, 0));
	books_alloc(&host, 2 * MiB);
	CU_CHECK(cuMemAllocHost(&h2, 1 * MiB));      /* leaked */
	books_alloc(&host, 1 * MiB);
	CU_CHECK(cuMemcpyDtoH(h1, b, 2 * MiB));
	if (((unsigned char *)h1)[12345] != 0x5a)
		DIE("pinned copy does not hold what was copied");
	CU_CHECK(cuMemFreeHost(h1));
	books_free(&host, 2 * MiB);

	void *buffer = NULL;
	if (posix_memalign(&buffer, 4096, 3 * MiB) != 0)
		DIE("posix_memalign failed");
	memset(buffer, 0, 3 * MiB);
	r = cuMemHostRegister(buffer, 3 * MiB, 0);
	if (r == CUDA_SUCCESS) {
		books_alloc(&host, 3 * MiB);
		CU_CHECK(cuMemcpyDtoH(buffer, b, 3 * MiB));
		CU_CHECK(cuMemHostUnregister(buffer));
		books_free(&host, 3 * MiB);
	} else {
		/* Some sandboxes cannot pin memory they did not allocate. */
		books_fail(&host);
		books_note("cuMemHostRegister failed here (%s): counted as failed", cu_error_name(r));
	}
	free(buffer);
}

/* The way a loader shim or a JIT reaches the driver: dlsym of the
 * versioned name. */
static void dlsym_calls(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		DIE("dlopen libcuda.so.1: %s", dlerror());
	mem_alloc_fn alloc = (mem_alloc_fn)dlsym(lib, "cuMemAlloc_v2");
	mem_free_fn release = (mem_free_fn)dlsym(lib, "cuMemFree_v2");
	if (!alloc || !release)
		DIE("dlsym cuMemAlloc_v2/cuMemFree_v2: %s", dlerror());
	CUdeviceptr p = 0, q = 0;
	CU_CHECK(alloc(&p, 3 * MiB));
	books_alloc(&device, 3 * MiB);
	CU_CHECK(alloc(&q, 7 * KiB));                /* leaked */
	books_alloc(&device, 7 * KiB);
	CU_CHECK(release(p));
	books_free(&device, 3 * MiB);
	(void)q;
}

/* The way cudart and PyTorch reach it: cuGetProcAddress by base name and
 * version. */
static void proc_address_calls(void)
{
	void *a = NULL, *f = NULL;
	CUdriverProcAddressQueryResult found;
	CU_CHECK(cuGetProcAddress("cuMemAlloc", &a, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found));
	if (found != CU_GET_PROC_ADDRESS_SUCCESS || !a)
		DIE("cuGetProcAddress(cuMemAlloc) found nothing (%d)", (int)found);
	CU_CHECK(cuGetProcAddress("cuMemFree", &f, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found));
	if (found != CU_GET_PROC_ADDRESS_SUCCESS || !f)
		DIE("cuGetProcAddress(cuMemFree) found nothing (%d)", (int)found);
	mem_alloc_fn alloc = (mem_alloc_fn)a;
	mem_free_fn release = (mem_free_fn)f;
	CUdeviceptr p = 0, q = 0;
	CU_CHECK(alloc(&p, 5 * MiB));
	books_alloc(&device, 5 * MiB);
	CU_CHECK(alloc(&q, 9 * MiB));                /* leaked */
	books_alloc(&device, 9 * MiB);
	CU_CHECK(cuMemsetD8(p, 0, 5 * MiB));
	CU_CHECK(release(p));
	books_free(&device, 5 * MiB);
	(void)q;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s BOOKS\n", argv[0]);
		return 2;
	}
	CUdevice dev;
	CUcontext ctx;
	CU_CHECK(cuInit(0));
	CU_CHECK(cuDeviceGet(&dev, 0));
	CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU_CHECK(cuCtxSetCurrent(ctx));

	linked_calls();
	dlsym_calls();
	proc_address_calls();
	CU_CHECK(cuCtxSynchronize());

	struct book *books[] = { &device, &managed, &host };
	if (books_write(argv[1], books, 3, NULL) != 0)
		return 2;
	printf("driver: device %llu allocations, peak %llu; managed %llu; host %llu\n",
	       (unsigned long long)device.allocations, (unsigned long long)device.peak_bytes,
	       (unsigned long long)managed.allocations, (unsigned long long)host.allocations);
	return 0;
}
