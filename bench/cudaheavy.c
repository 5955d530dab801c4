/*
 * cudaheavy - device allocations and kernel launches as fast as the CUDA
 * driver takes them: the recorder's cost on the CUDA path, measured
 * against the test driver (tests/cuda/fakecuda.c), so it runs anywhere.
 *
 * usage: cudaheavy [THREADS [STEPS]]   (default 1 thread, 200,000 steps each)
 *        with libcuda.so.1 on the library path (build/tests/cuda)
 *
 * The driver is reached as the CUDA runtime reaches it: dlopen of
 * libcuda.so.1, dlsym of cuGetProcAddress_v2 alone, and every other entry
 * point through it by base name and version. Each step allocates a device
 * block of 512 B to 1 MiB (cuMemAlloc, or cuMemAllocAsync on the thread's
 * stream one step in four), launches a kernel whose parameters are two
 * live blocks and a scalar, and frees the oldest of RING live blocks
 * (cuMemFree, or cuMemFreeAsync for a stream-ordered one). Prints the
 * line of workload.h; launches count in `calls`. Any driver error ends
 * the program with status 3.
 */
#include "cuda_min.h"
#include "workload.h"

#include <dlfcn.h>

#define RING 32

static struct {
	__typeof__(cuInit) *init;
	__typeof__(cuDevicePrimaryCtxRetain) *ctx_retain;
	__typeof__(cuCtxSetCurrent) *ctx_set;
	__typeof__(cuStreamCreate) *stream_create;
	__typeof__(cuStreamSynchronize) *stream_sync;
	__typeof__(cuStreamDestroy_v2) *stream_destroy;
	__typeof__(cuModuleLoadData) *module_load;
	__typeof__(cuModuleGetFunction) *get_function;
	__typeof__(cuMemAlloc_v2) *alloc;
	__typeof__(cuMemFree_v2) *free;
	__typeof__(cuMemAllocAsync) *alloc_async;
	__typeof__(cuMemFreeAsync) *free_async;
	__typeof__(cuLaunchKernel) *launch;
} cu;

static CUcontext context;
static CUfunction kernel;

static void check(CUresult r, const char *call)
{
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "cudaheavy: %s returned %d\n", call, (int)r);
		exit(3);
	}
}

static void *entry(__typeof__(cuGetProcAddress_v2) *get, const char *name, int version)
{
	void *fn = NULL;
	CUdriverProcAddressQueryResult status;
	check(get(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status), name);
	if (!fn || status != CU_GET_PROC_ADDRESS_SUCCESS) {
		fprintf(stderr, "cudaheavy: the driver has no %s\n", name);
		exit(3);
	}
	return fn;
}

static void resolve(void)
{
	void *driver = dlopen("libcuda.so.1", RTLD_NOW);
	if (!driver) {
		fprintf(stderr, "cudaheavy: %s (put the test driver on LD_LIBRARY_PATH)\n", dlerror());
		exit(3);
	}
	__typeof__(cuGetProcAddress_v2) *get = NULL;
	*(void **)&get = dlsym(driver, "cuGetProcAddress_v2");
	if (!get) {
		fprintf(stderr, "cudaheavy: %s\n", dlerror());
		exit(3);
	}
	const int v = 12000;
	*(void **)&cu.init = entry(get, "cuInit", v);
	*(void **)&cu.ctx_retain = entry(get, "cuDevicePrimaryCtxRetain", v);
	*(void **)&cu.ctx_set = entry(get, "cuCtxSetCurrent", v);
	*(void **)&cu.stream_create = entry(get, "cuStreamCreate", v);
	*(void **)&cu.stream_sync = entry(get, "cuStreamSynchronize", v);
	*(void **)&cu.stream_destroy = entry(get, "cuStreamDestroy", v);
	*(void **)&cu.module_load = entry(get, "cuModuleLoadData", v);
	*(void **)&cu.get_function = entry(get, "cuModuleGetFunction", v);
	*(void **)&cu.alloc = entry(get, "cuMemAlloc", v);
	*(void **)&cu.free = entry(get, "cuMemFree", v);
	*(void **)&cu.alloc_async = entry(get, "cuMemAllocAsync", v);
	*(void **)&cu.free_async = entry(get, "cuMemFreeAsync", v);
	*(void **)&cu.launch = entry(get, "cuLaunchKernel", v);
}

struct device_block {
	CUdeviceptr ptr;
	int async; /* freed with cuMemFreeAsync */
};

static void release(struct device_block *b, CUstream stream, struct workload_counts *counts)
{
	if (!b->ptr)
		return;
	check(b->async ? cu.free_async(b->ptr, stream) : cu.free(b->ptr), "cuMemFree");
	b->ptr = 0;
	counts->frees++;
}

static void work(unsigned index, uint64_t steps, struct workload_counts *counts)
{
	uint64_t rng = workload_seed(index);
	struct device_block ring[RING] = { { 0 } };
	CUstream stream;
	check(cu.ctx_set(context), "cuCtxSetCurrent");
	check(cu.stream_create(&stream, 0), "cuStreamCreate");
	for (uint64_t i = 0; i < steps; i++) {
		uint64_t r = workload_rand(&rng);
		struct device_block *b = &ring[i % RING];
		release(b, stream, counts);
		size_t size = (size_t)512 << ((r >> 8) % 12); /* 512 B .. 1 MiB: RING of them fit the test device */
		b->async = (r & 3) == 0;
		check(b->async ? cu.alloc_async(&b->ptr, size, stream) : cu.alloc(&b->ptr, size), "cuMemAlloc");
		counts->allocations++;
		CUdeviceptr in = ring[(i + RING - 1) % RING].ptr ? ring[(i + RING - 1) % RING].ptr : b->ptr;
		int n = (int)(size / 4);
		void *params[] = { &in, &b->ptr, &n };
		check(cu.launch(kernel, 64, 1, 1, 128, 1, 1, 0, stream, params, NULL), "cuLaunchKernel");
		counts->other_calls++;
		if (i % 16 == 15)
			check(cu.stream_sync(stream), "cuStreamSynchronize");
	}
	for (size_t k = 0; k < RING; k++)
		release(&ring[k], stream, counts);
	check(cu.stream_sync(stream), "cuStreamSynchronize");
	check(cu.stream_destroy(stream), "cuStreamDestroy");
}

int main(int argc, char **argv)
{
	unsigned threads = 1;
	uint64_t steps = 200000;
	workload_args(argc, argv, "cudaheavy [THREADS [STEPS]]", &threads, &steps);
	resolve();
	check(cu.init(0), "cuInit");
	check(cu.ctx_retain(&context, 0), "cuDevicePrimaryCtxRetain");
	check(cu.ctx_set(context), "cuCtxSetCurrent");
	CUmodule module;
	static const char image[] = "kernels";
	check(cu.module_load(&module, image), "cuModuleLoadData");
	check(cu.get_function(&kernel, module, "k_ptr_ptr_int"), "cuModuleGetFunction");
	struct workload_counts total = { 0 };
	workload_run(threads, steps, work, &total);
	workload_report(&total);
	return 0;
}
