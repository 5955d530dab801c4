/*
 * cuda_stream_times - stream-ordered allocations on streams that also run
 * the program's own host functions, for WSPROF_CUDA_STREAM_TIMES=1.
 *
 * usage: cuda_stream_times EXPECT
 *
 * With that setting the recorder adds host functions of its own behind
 * each stream-ordered call (cuLaunchHostFunc) to learn when the stream
 * reached it. Whatever it does, the program's calls must count the same,
 * at the call, and the program's own host functions must still run, each
 * once: the expect file says how many ran ("host_func_calls").
 *
 * Uses a created stream, the legacy default stream (NULL) and the
 * per-thread default stream through the _ptsz entry points. Linked with
 * libcuda.so.1.
 */
#include "account.h"
#include "cuda_min.h"

#include <stdatomic.h>
#include <unistd.h>

#define KiB ((size_t)1 << 10)

static struct account device;
static atomic_uint host_func_calls;

static void check(CUresult got, const char *call)
{
	if (got != CUDA_SUCCESS) {
		complain("cuda_stream_times: %s returned %d", call, (int)got);
		_exit(3);
	}
}

static void count_call(void *arg)
{
	(void)arg;
	host_func_calls++;
}

static CUdeviceptr alloc_on(CUstream s, size_t size, bool ptsz)
{
	CUdeviceptr p;
	check(ptsz ? cuMemAllocAsync_ptsz(&p, size, s) : cuMemAllocAsync(&p, size, s), "cuMemAllocAsync");
	account_alloc(&device, size);
	return p;
}

static void free_on(CUstream s, CUdeviceptr p, size_t size, bool ptsz)
{
	check(ptsz ? cuMemFreeAsync_ptsz(p, s) : cuMemFreeAsync(p, s), "cuMemFreeAsync");
	account_free(&device, size);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		complain("usage: cuda_stream_times EXPECT");
		return 2;
	}
	CUcontext ctx;
	CUstream s;
	check(cuInit(0), "cuInit");
	check(cuDevicePrimaryCtxRetain(&ctx, 0), "cuDevicePrimaryCtxRetain");
	check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	check(cuStreamCreate(&s, 0), "cuStreamCreate");

	CUdeviceptr a = alloc_on(s, 64 * KiB, false);
	CUdeviceptr b = alloc_on(s, 256 * KiB, false);
	check(cuLaunchHostFunc(s, count_call, NULL), "cuLaunchHostFunc");
	free_on(s, a, 64 * KiB, false);
	CUdeviceptr c = alloc_on(NULL, 32 * KiB, false);
	CUdeviceptr d = alloc_on(CU_STREAM_PER_THREAD, 128 * KiB, true);
	check(cuLaunchHostFunc_ptsz(CU_STREAM_PER_THREAD, count_call, NULL), "cuLaunchHostFunc_ptsz");
	free_on(s, b, 256 * KiB, false);
	free_on(CU_STREAM_PER_THREAD, d, 128 * KiB, true);
	CUdeviceptr e = alloc_on(s, 16 * KiB, false);
	check(cuLaunchHostFunc(s, count_call, NULL), "cuLaunchHostFunc");
	free_on(NULL, c, 32 * KiB, false);
	(void)e; /* leaked */

	check(cuStreamSynchronize(s), "cuStreamSynchronize");
	check(cuStreamSynchronize(CU_STREAM_PER_THREAD), "cuStreamSynchronize");
	check(cuCtxSynchronize(), "cuCtxSynchronize");
	check(cuStreamDestroy_v2(s), "cuStreamDestroy_v2");

	struct expect x;
	expect_init(&x);
	expect_account(&x, "cuda_device", &device);
	expect_uint(&x, "host_func_calls", host_func_calls);
	return expect_write(&x, argv[1]) < 0 ? 2 : 0;
}
