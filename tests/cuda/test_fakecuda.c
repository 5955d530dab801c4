/*
 * test_fakecuda.c - the test driver (fakecuda.c) on its own, without
 * wsprof: the CUDA tests are only as good as its books.
 *
 * Its capacity and out-of-memory answers, which memory counts against the
 * capacity, frees of what it did not hand out, pinned registrations,
 * stream-ordered calls, physical allocations and mappings, host
 * functions, kernels whose names spell their parameters and launches that
 * check them, and cuGetProcAddress by base name, version and flags, which
 * must return the very functions dlsym finds under the versioned names.
 * Last, every CUDA test program runs to the end on it with no recorder.
 *
 * Criterion runs each test in a process of its own, so each starts with a
 * fresh driver of the capacity the suite sets before the first call.
 */
#include "cuda_harness.h"
#include "cuda_min.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static void small_device(void)
{
	setenv("FAKECUDA_CAPACITY", "16777216", 1);
}

TestSuite(fakecuda, .init = small_device, .timeout = 30);

static size_t free_bytes(void)
{
	size_t free, total;
	cr_assert_eq(cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
	cr_assert_eq(total, 16 * MiB, "the capacity is FAKECUDA_CAPACITY");
	return free;
}

static CUdeviceptr device(size_t size)
{
	CUdeviceptr p = 0;
	cr_assert_eq(cuMemAlloc_v2(&p, size), CUDA_SUCCESS, "cuMemAlloc_v2 of %zu bytes", size);
	cr_assert(p);
	return p;
}

Test(fakecuda, device_memory_counts_against_the_capacity)
{
	cr_assert_eq(free_bytes(), 16 * MiB);
	CUdeviceptr a = device(10 * MiB);
	cr_expect_eq(free_bytes(), 6 * MiB);

	CUdeviceptr p = 0xdeadbeef;
	CUmemGenericAllocationHandle h = 0;
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
	cr_expect_eq(cuMemAlloc_v2(&p, 6 * MiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
	cr_expect_eq(cuMemAllocManaged(&p, 7 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_OUT_OF_MEMORY);
	cr_expect_eq(cuMemAllocAsync(&p, 7 * MiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
	cr_expect_eq(cuMemCreate(&h, 7 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
	cr_expect_eq(p, 0xdeadbeef, "a failed allocation leaves its output alone");
	cr_expect_eq(h, 0);

	/* Pinned host memory is not device memory. */
	void *host;
	cr_assert_eq(cuMemAllocHost_v2(&host, 32 * MiB), CUDA_SUCCESS);
	memset(host, 1, 32 * MiB);
	cr_expect_eq(free_bytes(), 6 * MiB);

	CUdeviceptr m;
	cr_assert_eq(cuMemAllocManaged(&m, 2 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
	cr_expect_eq(free_bytes(), 4 * MiB);
	cr_assert_eq(cuMemFree_v2(m), CUDA_SUCCESS);
	cr_assert_eq(cuMemFree_v2(a), CUDA_SUCCESS);
	cr_assert_eq(cuMemFreeHost(host), CUDA_SUCCESS);
	cr_expect_eq(free_bytes(), 16 * MiB, "frees give the memory back");
	cr_assert_eq(cuMemFree_v2(device(16 * MiB)), CUDA_SUCCESS, "all of it");
}

Test(fakecuda, device_memory_is_not_the_programs_heap)
{
	struct mallinfo2 before = mallinfo2();
	CUdeviceptr p = device(8 * MiB);
	void *host;
	cr_assert_eq(cuMemHostAlloc(&host, 8 * MiB, 0), CUDA_SUCCESS);
	struct mallinfo2 after = mallinfo2();
	cr_expect_eq(after.uordblks, before.uordblks, "the driver allocated with malloc");
	cr_expect_eq(after.hblkhd, before.hblkhd, "the driver allocated with malloc");
	memset(host, 3, 8 * MiB);
	cr_expect_eq(cuMemFree_v2(p), CUDA_SUCCESS);
}

Test(fakecuda, allocations_do_not_overlap)
{
	CUdeviceptr a = device(100), b = device(100), c;
	cr_assert_eq(cuMemAllocManaged(&c, 4 * KiB, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
	cr_expect(a + 100 <= b || b + 100 <= a);
	cr_expect(c + 4 * KiB <= a || a + 100 <= c);
	cr_expect_eq(a % 512, 0, "device memory is aligned like the real driver's");
	cr_assert_eq(cuMemFree_v2(b), CUDA_SUCCESS);
	cr_expect_eq(device(100), b, "first fit reuses the gap");
}

Test(fakecuda, frees_of_what_it_did_not_hand_out_are_refused)
{
	CUdeviceptr a = device(4 * KiB);
	void *host, *heap = malloc(64);
	cr_assert_eq(cuMemAllocHost_v2(&host, 4 * KiB), CUDA_SUCCESS);

	cr_expect_eq(cuMemFree_v2(0), CUDA_SUCCESS, "freeing 0 does nothing");
	cr_expect_eq(cuMemFree_v2(a + 8), CUDA_ERROR_INVALID_VALUE, "an interior pointer");
	cr_expect_eq(cuMemFree_v2((CUdeviceptr)(uintptr_t)host), CUDA_ERROR_INVALID_VALUE, "host memory");
	cr_expect_eq(cuMemFreeHost((void *)(uintptr_t)a), CUDA_ERROR_INVALID_VALUE, "device memory");
	cr_expect_eq(cuMemFreeHost(heap), CUDA_ERROR_INVALID_VALUE, "the program's heap");
	cr_expect_eq(cuMemFree_v2(a), CUDA_SUCCESS);
	cr_expect_eq(cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE, "a second free");
	cr_expect_eq(cuMemFreeHost(host), CUDA_SUCCESS);
	cr_expect_eq(cuMemAlloc_v2(&a, 0), CUDA_ERROR_INVALID_VALUE, "no memory of 0 bytes");
	free(heap);
}

Test(fakecuda, pitch_is_the_row_rounded_up_to_512)
{
	static const struct { size_t width, pitch; } rows[] = { { 1, 512 }, { 512, 512 }, { 513, 1024 }, { 1000, 1024 } };
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		CUdeviceptr p;
		size_t pitch = 0, before = free_bytes();
		cr_assert_eq(cuMemAllocPitch_v2(&p, &pitch, rows[i].width, 10, 4), CUDA_SUCCESS);
		cr_expect_eq(pitch, rows[i].pitch, "width %zu", rows[i].width);
		cr_expect_eq(before - free_bytes(), pitch * 10, "pitch x height is what it takes");
		cr_expect_eq(cuMemFree_v2(p), CUDA_SUCCESS);
	}
	CUdeviceptr p;
	size_t pitch;
	cr_expect_eq(cuMemAllocPitch_v2(&p, &pitch, 100, 10, 3), CUDA_ERROR_INVALID_VALUE, "elements of 4, 8 or 16");
}

Test(fakecuda, host_registrations)
{
	char *buf = malloc(64 * KiB);
	cr_assert_eq(cuMemHostRegister_v2(buf, 64 * KiB, 0), CUDA_SUCCESS);
	cr_expect_eq(cuMemHostRegister_v2(buf + 60 * KiB, 8 * KiB, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	cr_expect_eq(free_bytes(), 16 * MiB, "registered memory is not device memory");
	cr_expect_eq(cuMemHostUnregister(buf + 4 * KiB), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "not its start");
	cr_expect_eq(cuMemHostUnregister(buf), CUDA_SUCCESS);
	cr_expect_eq(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "twice");
	free(buf);
}

Test(fakecuda, stream_ordered_calls)
{
	CUstream s;
	CUmemoryPool pool;
	CUdeviceptr a, b, c;
	cr_assert_eq(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	cr_assert_eq(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
	cr_expect_eq(cuMemAllocAsync(&a, 1 * MiB, s), CUDA_SUCCESS);
	cr_expect_eq(cuMemAllocAsync_ptsz(&b, 1 * MiB, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
	cr_expect_eq(cuMemAllocFromPoolAsync_ptsz(&c, 1 * MiB, pool, NULL), CUDA_SUCCESS);
	cr_expect_eq(free_bytes(), 13 * MiB);
	cr_expect_eq(cuMemAllocFromPoolAsync(&c, 1 * MiB, NULL, s), CUDA_ERROR_INVALID_VALUE, "no pool");
	cr_expect_eq(cuMemAllocAsync(&c, 1 * MiB, (CUstream)&pool), CUDA_ERROR_INVALID_HANDLE, "not a stream");
	cr_expect_eq(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	cr_expect_eq(cuMemFreeAsync_ptsz(b, CU_STREAM_LEGACY), CUDA_SUCCESS);
	cr_expect_eq(cuMemFree_v2(c), CUDA_SUCCESS, "stream-ordered memory may be freed at once");
	cr_expect_eq(free_bytes(), 16 * MiB, "stream-ordered frees give the memory back at the call");
	cr_expect_eq(cuStreamSynchronize(s), CUDA_SUCCESS);
	cr_expect_eq(cuStreamDestroy_v2(s), CUDA_SUCCESS);
	cr_expect_eq(cuMemAllocAsync(&a, 1 * MiB, s), CUDA_ERROR_INVALID_HANDLE, "a destroyed stream");
}

Test(fakecuda, physical_memory_lasts_until_released_and_unmapped)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
	CUmemGenericAllocationHandle h;
	CUdeviceptr va;
	cr_assert_eq(cuMemCreate(&h, 4 * MiB, &prop, 0), CUDA_SUCCESS);
	cr_expect_neq(h, 0);
	cr_expect_eq(free_bytes(), 12 * MiB);
	cr_assert_eq(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0), CUDA_SUCCESS);
	cr_expect_eq(free_bytes(), 12 * MiB, "address space is not memory");

	cr_expect_eq(cuMemMap(va, 4 * MiB, 0, h, 0), CUDA_SUCCESS);
	cr_expect_eq(cuMemMap(va + 4 * MiB, 2 * MiB, 2 * MiB, h, 0), CUDA_SUCCESS, "part of it, again");
	cr_expect_eq(cuMemMap(va + 6 * MiB, 2 * MiB, 3 * MiB, h, 0), CUDA_ERROR_INVALID_VALUE, "past its end");
	cr_expect_eq(cuMemMap(va + 2 * MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE, "over a mapping");
	cr_expect_eq(cuMemMap(va + 7 * MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE, "beyond the reservation");
	cr_expect_eq(cuMemAddressFree(va, 8 * MiB), CUDA_ERROR_INVALID_VALUE, "still mapped");
	cr_expect_eq(cuMemUnmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE, "half a mapping");

	cr_expect_eq(cuMemRelease(h), CUDA_SUCCESS);
	cr_expect_eq(free_bytes(), 12 * MiB, "mapped memory outlives its handle");
	cr_expect_eq(cuMemMap(va + 6 * MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE, "a released handle");
	cr_expect_eq(cuMemUnmap(va, 6 * MiB), CUDA_SUCCESS, "two whole mappings at once");
	cr_expect_eq(free_bytes(), 16 * MiB, "and goes when the last mapping does");
	cr_expect_eq(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE, "twice");
	cr_expect_eq(cuMemAddressFree(va, 4 * MiB), CUDA_ERROR_INVALID_VALUE, "part of a reservation");
	cr_expect_eq(cuMemAddressFree(va, 8 * MiB), CUDA_SUCCESS);
}

static pthread_t host_fn_thread;
static int host_fn_calls;

static void host_fn(void *arg)
{
	host_fn_thread = pthread_self();
	host_fn_calls += *(int *)arg;
}

Test(fakecuda, host_functions_run_before_the_launch_returns)
{
	int one = 1;
	cr_assert_eq(cuLaunchHostFunc(NULL, host_fn, &one), CUDA_SUCCESS);
	cr_expect_eq(host_fn_calls, 1);
	cr_expect(!pthread_equal(host_fn_thread, pthread_self()), "on a thread of the driver's, like the real one");
	cr_assert_eq(cuLaunchHostFunc_ptsz(CU_STREAM_PER_THREAD, host_fn, &one), CUDA_SUCCESS);
	cr_expect_eq(host_fn_calls, 2);
}

static void *churn(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	CUdeviceptr live[16] = { 0 };
	for (int i = 0; i < 4000; i++) {
		unsigned slot = rand_r(&seed) % 16;
		if (live[slot]) {
			if (cuMemFree_v2(live[slot]) != CUDA_SUCCESS)
				return "a free failed";
			live[slot] = 0;
		} else if (cuMemAlloc_v2(&live[slot], 1 + rand_r(&seed) % (64 * KiB)) != CUDA_SUCCESS) {
			return "an allocation failed";
		}
	}
	for (unsigned slot = 0; slot < 16; slot++)
		if (cuMemFree_v2(live[slot]) != CUDA_SUCCESS)
			return "a free failed";
	return NULL;
}

Test(fakecuda, threads_share_one_set_of_books)
{
	pthread_t t[4];
	for (uintptr_t i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, churn, (void *)(i + 1));
	for (int i = 0; i < 4; i++) {
		void *why;
		pthread_join(t[i], &why);
		cr_expect_null(why, "thread %d: %s", i, (const char *)why);
	}
	cr_expect_eq(free_bytes(), 16 * MiB, "everything came back");
}

static void expect_params(CUfunction f, size_t n, const size_t offsets[], const size_t sizes[], const char *name)
{
	for (size_t i = 0; i < n; i++) {
		size_t offset = 99, size = 99;
		cr_expect_eq(cuFuncGetParamInfo(f, i, &offset, &size), CUDA_SUCCESS, "%s: parameter %zu", name, i);
		cr_expect(offset == offsets[i] && size == sizes[i], "%s: parameter %zu at %zu, %zu bytes; expected %zu, %zu",
			  name, i, offset, size, offsets[i], sizes[i]);
	}
	size_t offset, size;
	cr_expect_eq(cuFuncGetParamInfo(f, n, &offset, &size), CUDA_ERROR_INVALID_VALUE, "%s has %zu parameters", name, n);
}

Test(fakecuda, function_names_spell_parameter_layouts)
{
	CUmodule m, other;
	CUfunction f, g;
	cr_assert_eq(cuModuleLoadData(&m, "any image"), CUDA_SUCCESS);
	cr_assert_eq(cuModuleGetFunction(&f, m, "k_char_ptr_int"), CUDA_SUCCESS);
	expect_params(f, 3, (size_t[]){ 0, 8, 16 }, (size_t[]){ 1, 8, 4 }, "k_char_ptr_int");
	cr_assert_eq(cuModuleGetFunction(&g, m, "k_char_ptr_int"), CUDA_SUCCESS);
	cr_expect_eq(g, f, "the same name is the same function");
	cr_assert_eq(cuModuleGetFunction(&g, m, "k_int_s24_long"), CUDA_SUCCESS);
	expect_params(g, 3, (size_t[]){ 0, 8, 32 }, (size_t[]){ 4, 24, 8 }, "k_int_s24_long");
	cr_assert_eq(cuModuleGetFunction(&g, m, "k_char_i12"), CUDA_SUCCESS);
	expect_params(g, 2, (size_t[]){ 0, 4 }, (size_t[]){ 1, 12 }, "k_char_i12");
	cr_assert_eq(cuModuleGetFunction(&g, m, "k"), CUDA_SUCCESS);
	expect_params(g, 0, NULL, NULL, "k");
	static const char *const bad[] = { "f_ptr", "k_float", "k_ptr_", "k__ptr", "k_i3", "k_s0", "k_s2000", "kptr" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		cr_expect_eq(cuModuleGetFunction(&g, m, bad[i]), CUDA_ERROR_NOT_FOUND, "\"%s\" is no kernel", bad[i]);
	cr_expect_eq(cuModuleLoadData(&other, NULL), CUDA_ERROR_INVALID_VALUE, "no image");

	cr_assert_eq(cuModuleUnload(m), CUDA_SUCCESS);
	size_t offset, size;
	cr_expect_eq(cuFuncGetParamInfo(f, 0, &offset, &size), CUDA_ERROR_INVALID_HANDLE, "unloaded with its module");
	cr_expect_eq(cuModuleGetFunction(&g, m, "k_ptr"), CUDA_ERROR_INVALID_HANDLE, "an unloaded module");
	cr_expect_eq(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE, "twice");
	cr_assert_eq(cuModuleLoadData(&other, "another image"), CUDA_SUCCESS);
	cr_assert_eq(cuModuleGetFunction(&g, other, "k_long"), CUDA_SUCCESS);
	cr_expect_eq(g, f, "the first free handle again");
	expect_params(g, 1, (size_t[]){ 0 }, (size_t[]){ 8 }, "k_long at an old handle");
	cr_expect_eq(cuModuleUnload(other), CUDA_SUCCESS);
}

Test(fakecuda, launches_check_their_arguments)
{
	CUmodule m;
	CUfunction f, none;
	CUstream s;
	cr_assert_eq(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	cr_assert_eq(cuModuleLoadData(&m, "any image"), CUDA_SUCCESS);
	cr_assert_eq(cuModuleGetFunction(&f, m, "k_ptr_int"), CUDA_SUCCESS);
	cr_assert_eq(cuModuleGetFunction(&none, m, "k"), CUDA_SUCCESS);
	CUdeviceptr p = device(4 * KiB);
	int n = 5;
	void *params[] = { &p, &n };
	CUlaunchConfig config = { 1, 1, 1, 64, 1, 1, 0, s, NULL, 0 };
	cr_expect_eq(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, params, NULL), CUDA_SUCCESS);
	cr_expect_eq(cuLaunchKernel_ptsz(f, 1, 1, 1, 64, 1, 1, 0, CU_STREAM_PER_THREAD, params, NULL), CUDA_SUCCESS);
	cr_expect_eq(cuLaunchKernelEx(&config, f, params, NULL), CUDA_SUCCESS);
	config.hStream = CU_STREAM_PER_THREAD;
	cr_expect_eq(cuLaunchKernelEx_ptsz(&config, f, params, NULL), CUDA_SUCCESS);
	cr_expect_eq(cuLaunchKernel(none, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS, "nothing to pass");

	struct { CUdeviceptr p; int n; } packed = { p, 5 };
	size_t bytes = 12, wrong = sizeof packed;
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes, CU_LAUNCH_PARAM_END };
	cr_expect_eq(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, NULL, extra), CUDA_SUCCESS, "packed in extra");
	extra[3] = &wrong;
	cr_expect_eq(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, NULL, extra), CUDA_ERROR_INVALID_VALUE, "the wrong size");
	cr_expect_eq(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, params, extra), CUDA_ERROR_INVALID_VALUE, "both");
	cr_expect_eq(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, NULL, NULL), CUDA_ERROR_INVALID_VALUE, "no parameters");
	cr_expect_eq(cuLaunchKernel(f, 0, 1, 1, 64, 1, 1, 0, s, params, NULL), CUDA_ERROR_INVALID_VALUE, "an empty grid");
	cr_expect_eq(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, (CUstream)&m, params, NULL), CUDA_ERROR_INVALID_HANDLE,
		     "not a stream");
	cr_expect_eq(cuLaunchKernelEx(NULL, f, params, NULL), CUDA_ERROR_INVALID_VALUE, "no configuration");
	cr_expect_eq(cuLaunchKernel((CUfunction)&m, 1, 1, 1, 64, 1, 1, 0, s, params, NULL), CUDA_ERROR_INVALID_HANDLE,
		     "not a function");
	cr_assert_eq(cuModuleUnload(m), CUDA_SUCCESS);
	cr_expect_eq(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, params, NULL), CUDA_ERROR_INVALID_HANDLE,
		     "a function of an unloaded module");
	cr_expect_eq(cuMemFree_v2(p), CUDA_SUCCESS);
	cr_expect_eq(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

Test(fakecuda, error_strings)
{
	const char *s = NULL;
	cr_expect_eq(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
	cr_expect_str_eq(s, "out of memory");
	cr_expect_eq(cuGetErrorString((CUresult)9999, &s), CUDA_ERROR_INVALID_VALUE);
	cr_expect_null(s);
}

/* What cuGetProcAddress must return, by the versioned name dlsym knows. */
static const struct lookup {
	const char *base;
	int version;
	cuuint64_t flags;
	const char *symbol;
} lookups[] = {
	{ "cuInit", 2000, 0, "cuInit" },
	{ "cuMemAlloc", 3020, 0, "cuMemAlloc_v2" },
	{ "cuMemAlloc", 12000, 0, "cuMemAlloc_v2" },
	{ "cuMemAlloc", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemAlloc_v2" },
	{ "cuMemAllocPitch", 3020, 0, "cuMemAllocPitch_v2" },
	{ "cuMemFree", 3020, 0, "cuMemFree_v2" },
	{ "cuMemAllocHost", 3020, 0, "cuMemAllocHost_v2" },
	{ "cuMemGetInfo", 3020, 0, "cuMemGetInfo_v2" },
	{ "cuCtxCreate", 3020, 0, "cuCtxCreate_v2" },
	{ "cuCtxDestroy", 4000, 0, "cuCtxDestroy_v2" },
	{ "cuStreamDestroy", 4000, 0, "cuStreamDestroy_v2" },
	{ "cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2" },
	{ "cuMemHostRegister", 6050, 0, "cuMemHostRegister_v2" },
	{ "cuMemAllocManaged", 6000, 0, "cuMemAllocManaged" },
	{ "cuMemHostAlloc", 2020, 0, "cuMemHostAlloc" },
	{ "cuMemAllocAsync", 11020, 0, "cuMemAllocAsync" },
	{ "cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemAllocAsync" },
	{ "cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemAllocAsync_ptsz" },
	{ "cuMemFreeAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemFreeAsync_ptsz" },
	{ "cuMemAllocFromPoolAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
	  "cuMemAllocFromPoolAsync_ptsz" },
	{ "cuLaunchHostFunc", 10000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuLaunchHostFunc_ptsz" },
	{ "cuMemCreate", 10020, 0, "cuMemCreate" },
	{ "cuMemMap", 12000, 0, "cuMemMap" },
	{ "cuModuleLoadData", 2000, 0, "cuModuleLoadData" },
	{ "cuModuleGetFunction", 2000, 0, "cuModuleGetFunction" },
	{ "cuModuleUnload", 2000, 0, "cuModuleUnload" },
	{ "cuFuncGetParamInfo", 12040, 0, "cuFuncGetParamInfo" },
	{ "cuLaunchKernel", 4000, 0, "cuLaunchKernel" },
	{ "cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuLaunchKernel_ptsz" },
	{ "cuLaunchKernelEx", 11060, 0, "cuLaunchKernelEx" },
	{ "cuLaunchKernelEx", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuLaunchKernelEx_ptsz" },
	{ "cuGetProcAddress", 11030, 0, "cuGetProcAddress" },
	{ "cuGetProcAddress", 11080, 0, "cuGetProcAddress" },
	{ "cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2" },
	{ "cuGetProcAddress", 13000, 0, "cuGetProcAddress_v2" },
};

Test(fakecuda, cuGetProcAddress_returns_the_versioned_functions)
{
	void *driver = dlopen("libcuda.so.1", RTLD_NOW);
	cr_assert(driver, "%s", dlerror());
	for (size_t i = 0; i < sizeof lookups / sizeof *lookups; i++) {
		const struct lookup *l = &lookups[i];
		void *want = dlsym(driver, l->symbol), *got = NULL, *got_v1 = NULL;
		CUdriverProcAddressQueryResult status = -1;
		cr_assert(want, "libcuda.so.1 exports no %s", l->symbol);
		cr_expect_eq(cuGetProcAddress_v2(l->base, &got, l->version, l->flags, &status), CUDA_SUCCESS,
			     "\"%s\" at %d", l->base, l->version);
		cr_expect_eq(status, CU_GET_PROC_ADDRESS_SUCCESS);
		cr_expect_eq(got, want, "\"%s\" at %d, flags %llu is not %s", l->base, l->version,
			     (unsigned long long)l->flags, l->symbol);
		cr_expect_eq(cuGetProcAddress(l->base, &got_v1, l->version, l->flags), CUDA_SUCCESS);
		cr_expect_eq(got_v1, want, "the four-argument form: \"%s\" at %d is not %s", l->base, l->version,
			     l->symbol);
	}
	cr_expect_neq(dlsym(driver, "cuMemAllocAsync"), dlsym(driver, "cuMemAllocAsync_ptsz"),
		      "the _ptsz variant is a function of its own");
	dlclose(driver);
}

Test(fakecuda, cuGetProcAddress_refusals)
{
	static const struct {
		const char *base;
		int version;
		CUdriverProcAddressQueryResult status;
	} refused[] = {
		{ "cuNoSuchEntryPoint", 12000, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND },
		{ "cuMemAlloc_v2", 12000, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND }, /* base names only */
		{ "cuMemAlloc", 3010, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
		{ "cuMemAllocAsync", 11010, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
		{ "cuGetProcAddress", 11020, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
		{ "cuFuncGetParamInfo", 12030, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
		{ "cuLaunchKernelEx", 11050, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
	};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		void *f = &f;
		CUdriverProcAddressQueryResult status = -1;
		cr_expect_eq(cuGetProcAddress_v2(refused[i].base, &f, refused[i].version, 0, &status),
			     CUDA_ERROR_NOT_FOUND, "\"%s\" at %d", refused[i].base, refused[i].version);
		cr_expect_eq(status, refused[i].status, "\"%s\" at %d", refused[i].base, refused[i].version);
		cr_expect_null(f);
		f = &f;
		cr_expect_eq(cuGetProcAddress(refused[i].base, &f, refused[i].version, 0), CUDA_ERROR_NOT_FOUND);
		cr_expect_null(f);
	}
	void *f;
	cr_expect_eq(cuGetProcAddress_v2("cuMemAlloc", &f, 13010, 0, NULL), CUDA_ERROR_INVALID_VALUE,
		     "a version newer than the driver");
	cr_expect_eq(cuGetProcAddress_v2(NULL, &f, 12000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
}

/* The programs, on the test driver alone: if one fails under wsprof, it is
 * not the program. */
TestSuite(fakecuda_programs, .fini = wt_cleanup, .timeout = 30);

static void run_alone(const char *prog, const char *const kinds[], const char *arg)
{
	const char *dir = wt_test_dir();
	char *path = wt_path(FAKECUDA_DIR, "%s", prog), *expect = wt_path(dir, "expect.json");
	struct wt_result r;
	wt_run(&r, (const char *[]){ "/usr/bin/env", "LD_LIBRARY_PATH=" FAKECUDA_DIR, "FAKECUDA_CAPACITY=" CT_CAPACITY,
				     path, expect, arg, NULL });
	wt_assert_status(&r, 0, prog);
	struct wt_json *books = wt_json_load(expect);
	for (size_t k = 0; kinds[k]; k++) {
		char figure[128];
		snprintf(figure, sizeof figure, "%s.allocations", kinds[k]);
		cr_expect_gt(wt_u64(books, figure), 0, "%s allocated no %s memory", prog, kinds[k]);
	}
	wt_json_free(books);
	wt_result_free(&r);
	free(expect);
	free(path);
}

static const char *const work_kinds[] = { "cuda_device", "cuda_managed", "cuda_host", NULL };

Test(fakecuda_programs, every_route_runs_to_the_end)
{
	run_alone("cuda_direct", work_kinds, NULL);
	run_alone("cuda_dlsym", work_kinds, NULL);
	run_alone("cuda_procaddr", work_kinds, NULL);
	run_alone("cuda_procaddr_v1", work_kinds, NULL);
}

Test(fakecuda_programs, vmm_streams_and_threads_run_to_the_end)
{
	run_alone("cuda_vmm", (const char *[]){ "cuda_vmm", NULL }, NULL);
	run_alone("cuda_vmm", (const char *[]){ "cuda_vmm", NULL }, "procaddr");
	run_alone("cuda_stream_times", (const char *[]){ "cuda_device", NULL }, NULL);
	run_alone("cuda_threads", (const char *[]){ "cuda_device", NULL }, NULL);
}

Test(fakecuda_programs, launches_run_to_the_end_by_every_route)
{
	static const char *const kinds[] = { "cuda_device", "cuda_managed", "cuda_host", NULL };
	run_alone("cuda_launch", kinds, "linked");
	run_alone("cuda_launch", kinds, "dlsym");
	run_alone("cuda_launch", kinds, "procaddr");
}
