/*
 * cuda_work.h - one workload of device, managed and pinned host memory,
 * run by the programs that each reach the driver by another route.
 *
 * A program fills a struct cuda_api, one function pointer per entry point
 * the workload calls, the way its route does it (linked, dlsym of the
 * versioned names, cuGetProcAddress by base name), and hands it to
 * cuda_work_run, which allocates, frees, leaks and fails on purpose while
 * keeping books by wsprof's rules (account.h):
 *   cuda_device   cuMemAlloc_v2, cuMemAllocPitch_v2 (pitch x height),
 *                 cuMemAllocAsync(_ptsz), cuMemAllocFromPoolAsync(_ptsz);
 *                 freed by cuMemFree_v2, cuMemFreeAsync(_ptsz) at the call
 *   cuda_managed  cuMemAllocManaged, freed by cuMemFree_v2
 *   cuda_host     cuMemAllocHost_v2 and cuMemHostAlloc, freed by
 *                 cuMemFreeHost; cuMemHostRegister_v2 (its bytesize),
 *                 released by cuMemHostUnregister
 * A call that returns an error is one failed call of its kind and nothing
 * else; freeing 0 is not a free. The workload needs about 12 MiB of device
 * memory; its out-of-memory calls ask for more than cuMemGetInfo says is
 * free, whatever the capacity.
 *
 * Any other result than the one the workload expects ends the program
 * with status 3 and a line naming the call, so a test that sees the
 * program fail knows it was the route, not the books.
 */
#ifndef TESTS_CUDA_WORK_H
#define TESTS_CUDA_WORK_H

#include "account.h"
#include "cuda_min.h"

/*
 * The entry points, with what a cuGetProcAddress caller asks for: the base
 * name, the version (the one that introduced the versioned symbol, as
 * cudart asks), and the flags (2 for the per-thread-default-stream
 * variant). X(symbol, base, version, flags).
 */
#define CUDA_WORK_ENTRIES(X)                                                                      \
	X(cuInit, "cuInit", 2000, 0)                                                              \
	X(cuDeviceGet, "cuDeviceGet", 2000, 0)                                                    \
	X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000, 0)                          \
	X(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease", 11000, 0)                    \
	X(cuCtxSetCurrent, "cuCtxSetCurrent", 4000, 0)                                            \
	X(cuStreamCreate, "cuStreamCreate", 2000, 0)                                              \
	X(cuStreamSynchronize, "cuStreamSynchronize", 2000, 0)                                    \
	X(cuStreamDestroy_v2, "cuStreamDestroy", 4000, 0)                                         \
	X(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", 11020, 0)                       \
	X(cuMemGetInfo_v2, "cuMemGetInfo", 3020, 0)                                               \
	X(cuMemAlloc_v2, "cuMemAlloc", 3020, 0)                                                   \
	X(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, 0)                                         \
	X(cuMemFree_v2, "cuMemFree", 3020, 0)                                                     \
	X(cuMemAllocManaged, "cuMemAllocManaged", 6000, 0)                                        \
	X(cuMemAllocHost_v2, "cuMemAllocHost", 3020, 0)                                           \
	X(cuMemHostAlloc, "cuMemHostAlloc", 2020, 0)                                              \
	X(cuMemFreeHost, "cuMemFreeHost", 2000, 0)                                                \
	X(cuMemHostRegister_v2, "cuMemHostRegister", 6050, 0)                                     \
	X(cuMemHostUnregister, "cuMemHostUnregister", 4000, 0)                                    \
	X(cuMemAllocAsync, "cuMemAllocAsync", 11020, 0)                                           \
	X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) \
	X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, 0)                           \
	X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020,                        \
	  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)                                          \
	X(cuMemFreeAsync, "cuMemFreeAsync", 11020, 0)                                             \
	X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)

/* Members are named after the symbols: api->cuMemAlloc_v2(&p, n). */
struct cuda_api {
#define CUDA_WORK_MEMBER(symbol, base, version, flags) __typeof__(symbol) *symbol;
	CUDA_WORK_ENTRIES(CUDA_WORK_MEMBER)
#undef CUDA_WORK_MEMBER
};

struct cuda_books {
	struct account device, managed, host;
};

/* Run the workload through `api` (every member set) and keep the books. */
void cuda_work_run(const struct cuda_api *api, struct cuda_books *books);

/* Add the books to an expect file: "cuda_device", "cuda_managed", "cuda_host". */
void cuda_work_expect(struct expect *e, const struct cuda_books *books);

/* End the program with status 3 unless `got` is `want`, naming the call. */
void cuda_check(CUresult got, CUresult want, const char *call);

#endif
