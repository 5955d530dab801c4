/*
 * cuda_launch - kernel launches whose parameters point into device memory,
 * for the recorder's "may be touched" inference: which live device and
 * managed blocks each launch was given.
 *
 * usage: cuda_launch EXPECT [linked|dlsym|procaddr]
 *
 * The four launch entry points (cuLaunchKernel, cuLaunchKernelEx and their
 * _ptsz variants) come by the route named: the program's own imports
 * (linked, the default), dlsym of the versioned names, or
 * cuGetProcAddress_v2 by base name and version as cudart asks for them
 * (flag 2 for the _ptsz variants). Everything else is linked. Kernels are
 * the test driver's (fakecuda.c): a function's name spells its parameters.
 *
 * Each launch is named by a wsprof snapshot just before it (wsprof.h:
 * nothing happens without wsprof), so a test can tell which launch a
 * record follows. The expect file has
 *   "cuda_device", "cuda_managed", "cuda_host"  the books (account.h);
 *   "blocks"    {"a": {"start": S, "size": N}, ...}: the blocks launches name;
 *   "launches"  {"<snapshot label>": "a b", ...}, in launch order: the
 *               blocks a parameter word of the launch points into, start
 *               or interior; "" for none (scalars only, a freed block,
 *               pinned host memory, parameters packed in `extra`, an
 *               unaligned word, a failed launch). A scalar that equals a
 *               device address names its block: that false positive is
 *               what "may be touched" means.
 *   "handle_reused"  1 if the last launch's function got the handle of
 *               one launched before with another layout (after unloading
 *               its module), so a recorder must not trust what it learnt
 *               of that handle.
 * Any unexpected driver result ends the program with status 3.
 */
#include "account.h"
#include "cuda_min.h"
#include "wsprof.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define KiB ((size_t)1 << 10)
#define TWELVE 12

static struct account device, managed, host;

static struct {
	__typeof__(cuLaunchKernel) *lk, *lk_ptsz;
	__typeof__(cuLaunchKernelEx) *ex, *ex_ptsz;
} api;

static void check(CUresult got, CUresult want, const char *call)
{
	if (got != want) {
		complain("cuda_launch: %s returned %d, expected %d", call, (int)got, (int)want);
		_exit(3);
	}
}

static void fail(const char *why)
{
	complain("cuda_launch: %s", why);
	_exit(3);
}

/* ---- the route to the launch entry points ---- */

static void *by_dlsym(void *driver, const char *name)
{
	void *f = dlsym(driver, name);
	if (!f)
		fail(dlerror());
	return f;
}

static void *by_version(const char *base, int version, cuuint64_t flags)
{
	void *f = NULL;
	CUdriverProcAddressQueryResult status;
	check(cuGetProcAddress_v2(base, &f, version, flags, &status), CUDA_SUCCESS, base);
	if (!f || status != CU_GET_PROC_ADDRESS_SUCCESS)
		fail("cuGetProcAddress_v2 found no function");
	return f;
}

static void resolve(const char *route)
{
	if (strcmp(route, "linked") == 0) {
		api.lk = cuLaunchKernel;
		api.lk_ptsz = cuLaunchKernel_ptsz;
		api.ex = cuLaunchKernelEx;
		api.ex_ptsz = cuLaunchKernelEx_ptsz;
	} else if (strcmp(route, "dlsym") == 0) {
		void *driver = dlopen("libcuda.so.1", RTLD_NOW);
		if (!driver)
			fail(dlerror());
		api.lk = by_dlsym(driver, "cuLaunchKernel");
		api.lk_ptsz = by_dlsym(driver, "cuLaunchKernel_ptsz");
		api.ex = by_dlsym(driver, "cuLaunchKernelEx");
		api.ex_ptsz = by_dlsym(driver, "cuLaunchKernelEx_ptsz");
	} else if (strcmp(route, "procaddr") == 0) {
		api.lk = by_version("cuLaunchKernel", 4000, 0);
		api.lk_ptsz = by_version("cuLaunchKernel", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
		api.ex = by_version("cuLaunchKernelEx", 11060, 0);
		api.ex_ptsz = by_version("cuLaunchKernelEx", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
	} else {
		fail("the route is linked, dlsym or procaddr");
	}
}

/* ---- blocks, by name ---- */

struct block {
	char name[8];
	CUdeviceptr start;
	size_t size;
	bool live;
};
static struct block blocks[64];
static size_t nblocks;

static CUdeviceptr keep(const char *name, CUdeviceptr start, size_t size)
{
	struct block *b = &blocks[nblocks++];
	strncpy(b->name, name, sizeof b->name - 1);
	b->start = start;
	b->size = size;
	b->live = true;
	return start;
}

static CUdeviceptr device_block(const char *name, size_t size)
{
	CUdeviceptr p;
	check(cuMemAlloc_v2(&p, size), CUDA_SUCCESS, "cuMemAlloc_v2");
	account_alloc(&device, size);
	return keep(name, p, size);
}

/* Live, never passed: keeps the blocks around it apart, so that they are
 * not merged into one region. */
static void spacer(void)
{
	device_block("gap", 512);
}

static struct block *block_at(CUdeviceptr p)
{
	for (size_t i = 0; i < nblocks; i++)
		if (blocks[i].start == p)
			return &blocks[i];
	return NULL;
}

/* A scalar passed as one must not point into a live block, or the launch
 * would name it after all. */
static uint64_t not_an_address(uint64_t v)
{
	for (size_t i = 0; i < nblocks; i++)
		if (blocks[i].live && v - blocks[i].start < blocks[i].size)
			fail("a scalar of the test falls inside a device block");
	return v;
}

/* ---- launches ---- */

enum entry { LK, LK_PTSZ, EX, EX_PTSZ };

#define MAX_LAUNCHES 32
static struct {
	const char *label, *names;
} launches[MAX_LAUNCHES];
static size_t nlaunches;
static CUstream stream;

static void launch_as(const char *label, const char *names, enum entry how, CUfunction f, void **params,
		      void **extra, CUstream s, CUresult want)
{
	wsprof_snapshot(label);
	CUlaunchConfig config = { 2, 1, 1, 32, 1, 1, 0, s, NULL, 0 };
	CUresult r;
	switch (how) {
	case LK:
		r = api.lk(f, 2, 1, 1, 32, 1, 1, 0, s, params, extra);
		break;
	case LK_PTSZ:
		r = api.lk_ptsz(f, 2, 1, 1, 32, 1, 1, 0, s, params, extra);
		break;
	case EX:
		r = api.ex(&config, f, params, extra);
		break;
	default:
		r = api.ex_ptsz(&config, f, params, extra);
		break;
	}
	check(r, want, label);
	if (nlaunches == MAX_LAUNCHES)
		fail("too many launches");
	launches[nlaunches].label = label;
	launches[nlaunches++].names = names;
}

static void launch(const char *label, const char *names, enum entry how, CUfunction f, void **params)
{
	CUstream s = how == LK_PTSZ || how == EX_PTSZ ? CU_STREAM_PER_THREAD : stream;
	launch_as(label, names, how, f, params, NULL, s, CUDA_SUCCESS);
}

static CUfunction function(CUmodule m, const char *name)
{
	CUfunction f;
	check(cuModuleGetFunction(&f, m, name), CUDA_SUCCESS, name);
	return f;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		complain("usage: cuda_launch EXPECT [linked|dlsym|procaddr]");
		return 2;
	}
	CUcontext ctx;
	CUmemoryPool pool;
	CUmodule mod;
	check(cuInit(0), CUDA_SUCCESS, "cuInit");
	check(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS, "cuDevicePrimaryCtxRetain");
	check(cuCtxSetCurrent(ctx), CUDA_SUCCESS, "cuCtxSetCurrent");
	check(cuStreamCreate(&stream, 0), CUDA_SUCCESS, "cuStreamCreate");
	check(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS, "cuDeviceGetDefaultMemPool");
	resolve(argc == 3 ? argv[2] : "linked");

	/* The blocks, apart but for adj1 and adj2. Everything is allocated
	 * before g is freed, so that no later block takes g's place. */
	CUdeviceptr a = device_block("a", 4 * KiB), b, c, d, e;
	spacer();
	b = device_block("b", 64 * KiB);
	spacer();
	check(cuMemAllocManaged(&c, 8 * KiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS, "cuMemAllocManaged");
	account_alloc(&managed, 8 * KiB);
	keep("c", c, 8 * KiB);
	spacer();
	check(cuMemAllocAsync(&d, 16 * KiB, stream), CUDA_SUCCESS, "cuMemAllocAsync");
	account_alloc(&device, 16 * KiB);
	keep("d", d, 16 * KiB);
	spacer();
	check(cuMemAllocFromPoolAsync(&e, 32 * KiB, pool, stream), CUDA_SUCCESS, "cuMemAllocFromPoolAsync");
	account_alloc(&device, 32 * KiB);
	keep("e", e, 32 * KiB);
	spacer();
	CUdeviceptr adj1 = device_block("adj1", 512), adj2 = device_block("adj2", 512);
	if (adj2 != adj1 + 512)
		fail("the test driver no longer hands out blocks first-fit: adj1 and adj2 are not adjacent");
	spacer();
	CUdeviceptr x[TWELVE];
	for (int i = 0; i < TWELVE; i++) {
		char name[8];
		snprintf(name, sizeof name, "x%d", i);
		x[i] = device_block(name, 512);
		spacer();
	}
	CUdeviceptr g = device_block("g", 2 * KiB);
	void *h;
	check(cuMemAllocHost_v2(&h, 4 * KiB), CUDA_SUCCESS, "cuMemAllocHost_v2");
	account_alloc(&host, 4 * KiB);
	check(cuMemFree_v2(g), CUDA_SUCCESS, "cuMemFree_v2");
	account_free(&device, 2 * KiB);
	block_at(g)->live = false;

	check(cuModuleLoadData(&mod, "a fake image"), CUDA_SUCCESS, "cuModuleLoadData");
	CUfunction ptr_ptr_int = function(mod, "k_ptr_ptr_int");

	/* Each launch: its label, the blocks it names, how, and its parameters. */
	int seven = 7;
	launch("two_pointers_and_an_int", "a b", LK, ptr_ptr_int,
	       (void *[]){ &a, &(CUdeviceptr){ b + 100 }, &seven });

	uint64_t scalar = not_an_address(0x5eed5eed5eedull);
	launch("interior_scalar_and_freed", "c", LK_PTSZ, function(mod, "k_ptr_long_ptr"),
	       (void *[]){ &(CUdeviceptr){ c + 8 }, &scalar, &g });

	launch("reverse_order_and_repeats", "a b", EX, function(mod, "k_ptr_ptr_ptr"),
	       (void *[]){ &(CUdeviceptr){ b + 64 * KiB - 1 }, &(CUdeviceptr){ a + 4 * KiB - 1 }, &b });

	int three = 3;
	struct { CUdeviceptr first; uint64_t count; CUdeviceptr last; } by_value = { d + 16, 42, e + 1000 };
	launch("struct_by_value", "d e", EX_PTSZ, function(mod, "k_int_s24"), (void *[]){ &three, &by_value });

	CUdeviceptr host_ptr = (CUdeviceptr)(uintptr_t)h;
	launch("pool_slab_and_pinned_host", "e", LK, function(mod, "k_ptr_ptr"),
	       (void *[]){ &host_ptr, &(CUdeviceptr){ e + 4 * KiB } });

	uint64_t looks_like_a = a;
	launch("scalar_equal_to_an_address", "a", LK, function(mod, "k_long"), (void *[]){ &looks_like_a });

	/* "k_char_i12": the ints at offset 4. a at their bytes 0..7 is not an
	 * aligned word; the aligned word at offset 8 holds a's high half. */
	char ch = 'x';
	unsigned char ints[12] = { 0 };
	memcpy(ints, &a, sizeof a);
	uint64_t aligned_word;
	memcpy(&aligned_word, ints + 4, sizeof aligned_word);
	not_an_address(aligned_word);
	launch("unaligned_pointer_ignored", "", EX, function(mod, "k_char_i12"), (void *[]){ &ch, ints });

	launch("adjacent_blocks", "adj1 adj2", LK_PTSZ, function(mod, "k_ptr_ptr"),
	       (void *[]){ &adj2, &(CUdeviceptr){ adj1 + 10 } });

	CUdeviceptr reversed[TWELVE];
	for (int i = 0; i < TWELVE; i++)
		reversed[i] = x[TWELVE - 1 - i];
	launch("twelve_blocks", "x0 x1 x2 x3 x4 x5 x6 x7 x8 x9 x10 x11", EX, function(mod, "k_s96"),
	       (void *[]){ reversed });

	/* 128 words, more than the recorder looks up on the stack: the
	 * scratch-buffer route, three blocks among zeros and a scalar. */
	uint64_t wide[128] = { 0 };
	wide[3] = x[11];
	wide[64] = x[0] + 8;
	wide[100] = not_an_address(0x5eed5eed5eedull);
	wide[127] = x[5];
	launch("wide_struct", "x0 x5 x11", LK, function(mod, "k_s1024"), (void *[]){ wide });

	int one = 1, two = 2;
	launch("scalars_only", "", LK, function(mod, "k_int_int"), (void *[]){ &one, &two });

	launch("no_parameters", "", LK, function(mod, "k"), (void *[]){ NULL });

	CUfunction k_ptr = function(mod, "k_ptr");
	size_t packed_size = sizeof a;
	launch_as("packed_in_extra", "", LK, k_ptr, NULL,
		  (void *[]){ CU_LAUNCH_PARAM_BUFFER_POINTER, &a, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size,
			      CU_LAUNCH_PARAM_END },
		  stream, CUDA_SUCCESS);

	static struct CUstream_st *not_a_stream = (CUstream)&not_a_stream;
	launch_as("failed_launch", "", LK, k_ptr, (void *[]){ &a }, NULL, not_a_stream, CUDA_ERROR_INVALID_HANDLE);

	/* Another module's function at ptr_ptr_int's old handle: three
	 * parameters again, laid out otherwise. */
	check(cuModuleUnload(mod), CUDA_SUCCESS, "cuModuleUnload");
	check(cuModuleLoadData(&mod, "another fake image"), CUDA_SUCCESS, "cuModuleLoadData");
	CUfunction int_int_ptr = function(mod, "k_int_int_ptr");
	launch("reloaded_handle", "b", EX_PTSZ, int_int_ptr, (void *[]){ &one, &two, &(CUdeviceptr){ b + 8 } });

	check(cuModuleUnload(mod), CUDA_SUCCESS, "cuModuleUnload");
	check(cuStreamSynchronize(stream), CUDA_SUCCESS, "cuStreamSynchronize");
	check(cuMemFree_v2(a), CUDA_SUCCESS, "cuMemFree_v2");
	account_free(&device, 4 * KiB);
	check(cuMemFreeAsync(d, stream), CUDA_SUCCESS, "cuMemFreeAsync");
	account_free(&device, 16 * KiB);
	check(cuMemFree_v2(c), CUDA_SUCCESS, "cuMemFree_v2");
	account_free(&managed, 8 * KiB);
	check(cuMemFreeHost(h), CUDA_SUCCESS, "cuMemFreeHost");
	account_free(&host, 4 * KiB);
	check(cuStreamDestroy_v2(stream), CUDA_SUCCESS, "cuStreamDestroy_v2");

	struct expect out;
	expect_init(&out);
	expect_account(&out, "cuda_device", &device);
	expect_account(&out, "cuda_managed", &managed);
	expect_account(&out, "cuda_host", &host);
	expect_open(&out, "blocks");
	for (size_t i = 0; i < nblocks; i++) {
		if (strcmp(blocks[i].name, "gap") == 0)
			continue;
		expect_open(&out, blocks[i].name);
		expect_uint(&out, "start", blocks[i].start);
		expect_uint(&out, "size", blocks[i].size);
		expect_close(&out);
	}
	expect_close(&out);
	expect_open(&out, "launches");
	for (size_t i = 0; i < nlaunches; i++)
		expect_string(&out, launches[i].label, launches[i].names);
	expect_close(&out);
	expect_uint(&out, "handle_reused", int_int_ptr == ptr_ptr_int);
	return expect_write(&out, argv[1]) < 0 ? 2 : 0;
}
