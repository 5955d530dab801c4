/*
 * cuda_work.c - the workload the CUDA route programs share (cuda_work.h).
 *
 * Each group of calls keeps its kind's books right next to the calls, so
 * that a figure wsprof gets wrong points at the lines that made it.
 */
#include "cuda_work.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static const struct cuda_api *api;
static struct cuda_books *books;

void cuda_check(CUresult got, CUresult want, const char *call)
{
	if (got == want)
		return;
	complain("%s returned %d, expected %d", call, (int)got, (int)want);
	_exit(3);
}

static size_t device_free_bytes(void)
{
	size_t free_bytes, total;
	cuda_check(api->cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS, "cuMemGetInfo_v2");
	return free_bytes;
}

/* A failed allocation leaves its output alone. */
static void check_untouched(CUdeviceptr p, const char *call)
{
	if (p != 0xdeadbeef) {
		complain("%s failed, yet wrote %#llx to its output", call, p);
		_exit(3);
	}
}

static CUdeviceptr device(size_t size)
{
	CUdeviceptr p;
	cuda_check(api->cuMemAlloc_v2(&p, size), CUDA_SUCCESS, "cuMemAlloc_v2");
	account_alloc(&books->device, size);
	return p;
}

static void device_free(CUdeviceptr p, size_t size)
{
	cuda_check(api->cuMemFree_v2(p), CUDA_SUCCESS, "cuMemFree_v2");
	account_free(&books->device, size);
}

static void device_memory(void)
{
	CUdeviceptr a = device(1 * MiB);
	CUdeviceptr b = device(3 * MiB);

	/* 1000-byte rows are padded to a 1024-byte pitch: 100 rows take 100 KiB. */
	CUdeviceptr rows;
	size_t pitch = 0;
	cuda_check(api->cuMemAllocPitch_v2(&rows, &pitch, 1000, 100, 4), CUDA_SUCCESS, "cuMemAllocPitch_v2");
	if (pitch != 1024) {
		complain("cuMemAllocPitch_v2 gave a pitch of %zu for 1000-byte rows, expected 1024", pitch);
		_exit(3);
	}
	account_alloc(&books->device, pitch * 100);

	device_free(a, 1 * MiB);
	cuda_check(api->cuMemFree_v2(0), CUDA_SUCCESS, "cuMemFree_v2(0)"); /* not a free */
	device_free(rows, pitch * 100);
	(void)b; /* leaked */

	CUdeviceptr p = 0xdeadbeef;
	cuda_check(api->cuMemAlloc_v2(&p, 0), CUDA_ERROR_INVALID_VALUE, "cuMemAlloc_v2 of 0 bytes");
	account_fail(&books->device);
	cuda_check(api->cuMemAlloc_v2(&p, device_free_bytes() + 1), CUDA_ERROR_OUT_OF_MEMORY,
		   "cuMemAlloc_v2 of more than is free");
	account_fail(&books->device);
	check_untouched(p, "cuMemAlloc_v2");
}

static void managed_memory(void)
{
	CUdeviceptr m1, m2;
	cuda_check(api->cuMemAllocManaged(&m1, 2 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS, "cuMemAllocManaged");
	account_alloc(&books->managed, 2 * MiB);
	cuda_check(api->cuMemAllocManaged(&m2, 512 * KiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS, "cuMemAllocManaged");
	account_alloc(&books->managed, 512 * KiB);
	cuda_check(api->cuMemFree_v2(m1), CUDA_SUCCESS, "cuMemFree_v2 of managed memory");
	account_free(&books->managed, 2 * MiB);
	(void)m2; /* leaked */

	CUdeviceptr p = 0xdeadbeef;
	cuda_check(api->cuMemAllocManaged(&p, device_free_bytes() + 1, CU_MEM_ATTACH_GLOBAL),
		   CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocManaged of more than is free");
	account_fail(&books->managed);
	check_untouched(p, "cuMemAllocManaged");
}

static void host_memory(void)
{
	void *h1, *h2, *h3;
	cuda_check(api->cuMemAllocHost_v2(&h1, 64 * KiB), CUDA_SUCCESS, "cuMemAllocHost_v2");
	account_alloc(&books->host, 64 * KiB);
	cuda_check(api->cuMemHostAlloc(&h2, 128 * KiB, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS, "cuMemHostAlloc");
	account_alloc(&books->host, 128 * KiB);
	cuda_check(api->cuMemHostAlloc(&h3, 8 * KiB, 0), CUDA_SUCCESS, "cuMemHostAlloc");
	account_alloc(&books->host, 8 * KiB);
	memset(h2, 2, 128 * KiB);
	cuda_check(api->cuMemFreeHost(h1), CUDA_SUCCESS, "cuMemFreeHost");
	account_free(&books->host, 64 * KiB);
	cuda_check(api->cuMemFreeHost(h2), CUDA_SUCCESS, "cuMemFreeHost");
	account_free(&books->host, 128 * KiB);
	account_keep(h3); /* leaked */

	/* Registered memory is the program's own (heap) memory, pinned. */
	char *buf = malloc(256 * KiB), *kept = malloc(64 * KiB);
	if (!buf || !kept)
		_exit(2);
	cuda_check(api->cuMemHostRegister_v2(buf, 256 * KiB, 0), CUDA_SUCCESS, "cuMemHostRegister_v2");
	account_alloc(&books->host, 256 * KiB);
	cuda_check(api->cuMemHostRegister_v2(buf + 4 * KiB, 4 * KiB, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
		   "cuMemHostRegister_v2 inside a registered range");
	account_fail(&books->host);
	cuda_check(api->cuMemHostRegister_v2(kept, 64 * KiB, CU_MEMHOSTREGISTER_PORTABLE), CUDA_SUCCESS,
		   "cuMemHostRegister_v2");
	account_alloc(&books->host, 64 * KiB); /* never unregistered: leaked */
	cuda_check(api->cuMemHostUnregister(buf), CUDA_SUCCESS, "cuMemHostUnregister");
	account_free(&books->host, 256 * KiB);
	free(buf);
	account_keep(kept);
}

/* Stream-ordered calls count when they are made, not when the stream
 * reaches them. */
static void stream_ordered_memory(CUdevice dev)
{
	CUstream s;
	CUmemoryPool pool;
	cuda_check(api->cuStreamCreate(&s, 0), CUDA_SUCCESS, "cuStreamCreate");
	cuda_check(api->cuDeviceGetDefaultMemPool(&pool, dev), CUDA_SUCCESS, "cuDeviceGetDefaultMemPool");

	CUdeviceptr d1, d2, d3, d4;
	cuda_check(api->cuMemAllocAsync(&d1, 2 * MiB, s), CUDA_SUCCESS, "cuMemAllocAsync");
	account_alloc(&books->device, 2 * MiB);
	cuda_check(api->cuMemAllocAsync_ptsz(&d2, 1 * MiB, s), CUDA_SUCCESS, "cuMemAllocAsync_ptsz");
	account_alloc(&books->device, 1 * MiB);
	cuda_check(api->cuMemAllocFromPoolAsync(&d3, 4 * MiB, pool, s), CUDA_SUCCESS, "cuMemAllocFromPoolAsync");
	account_alloc(&books->device, 4 * MiB);
	cuda_check(api->cuMemAllocFromPoolAsync_ptsz(&d4, 512 * KiB, pool, CU_STREAM_PER_THREAD), CUDA_SUCCESS,
		   "cuMemAllocFromPoolAsync_ptsz");
	account_alloc(&books->device, 512 * KiB);

	cuda_check(api->cuMemFreeAsync(d1, s), CUDA_SUCCESS, "cuMemFreeAsync");
	account_free(&books->device, 2 * MiB);
	cuda_check(api->cuMemFreeAsync_ptsz(d2, CU_STREAM_PER_THREAD), CUDA_SUCCESS, "cuMemFreeAsync_ptsz");
	account_free(&books->device, 1 * MiB);
	cuda_check(api->cuMemFreeAsync(d3, s), CUDA_SUCCESS, "cuMemFreeAsync");
	account_free(&books->device, 4 * MiB);
	(void)d4; /* leaked */

	CUdeviceptr p = 0xdeadbeef;
	cuda_check(api->cuMemAllocAsync(&p, device_free_bytes() + 1, s), CUDA_ERROR_OUT_OF_MEMORY,
		   "cuMemAllocAsync of more than is free");
	account_fail(&books->device);
	check_untouched(p, "cuMemAllocAsync");

	cuda_check(api->cuStreamSynchronize(s), CUDA_SUCCESS, "cuStreamSynchronize");
	cuda_check(api->cuStreamDestroy_v2(s), CUDA_SUCCESS, "cuStreamDestroy_v2");
}

void cuda_work_run(const struct cuda_api *a, struct cuda_books *b)
{
	api = a;
	books = b;
	CUdevice dev;
	CUcontext ctx;
	cuda_check(api->cuInit(0), CUDA_SUCCESS, "cuInit");
	cuda_check(api->cuDeviceGet(&dev, 0), CUDA_SUCCESS, "cuDeviceGet");
	cuda_check(api->cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS, "cuDevicePrimaryCtxRetain");
	cuda_check(api->cuCtxSetCurrent(ctx), CUDA_SUCCESS, "cuCtxSetCurrent");

	device_memory();
	managed_memory();
	host_memory();
	stream_ordered_memory(dev);

	cuda_check(api->cuDevicePrimaryCtxRelease_v2(dev), CUDA_SUCCESS, "cuDevicePrimaryCtxRelease_v2");
}

void cuda_work_expect(struct expect *e, const struct cuda_books *b)
{
	expect_account(e, "cuda_device", &b->device);
	expect_account(e, "cuda_managed", &b->managed);
	expect_account(e, "cuda_host", &b->host);
}
