/*
 * hooks_cuda.c - CUDA memory, recorded at the driver level.
 *
 * Every route to the driver ends in the same wrapper functions, exported
 * under the driver's versioned names (cuMemAlloc_v2, cuMemAllocAsync_ptsz,
 * ...), so each allocation is counted once:
 *   - programs linked with libcuda call them directly (we come first);
 *   - dlsym of those names (both glibc versions of dlsym bind here) returns
 *     the wrapper and remembers the real function;
 *   - cuGetProcAddress and cuGetProcAddress_v2 do the same by base name and
 *     version, and hand out wrappers of themselves, which is how cudart
 *     (static or shared), PyTorch and Realm reach the driver;
 *   - cudart's own entry points (shared cudart) only add the failures that
 *     never reached the driver.
 * A wrapper whose real function is unknown (libcuda not loaded) returns
 * CUDA_ERROR_NOT_INITIALIZED, as the driver does before cuInit.
 *
 * Kernel launches (cuLaunchKernel, cuLaunchKernelEx and their _ptsz
 * variants, wrapped by the same routes; `<<<>>>` reaches cuLaunchKernel
 * through cudart's cuGetProcAddress) add "may be touched" samples: the
 * live device and managed blocks a launch's parameters point into (see
 * "kernel launches" below).
 *
 * Reentrancy: wrappers call the real function first and record with the
 * guard held, like the libc hooks. Calls made inside wsprof (the guard is
 * set) are not recorded. A failed allocation is written out at once, with
 * a sample of the device's free memory, so a program that aborts right
 * after its out-of-memory error leaves the whole history up to it. A
 * launch reads the live blocks and its function's layout under their
 * sequence counts, without a lock (waiting for the live blocks' lock only
 * when a writer stays in the way 16 times); allocations and frees (the
 * live blocks), a function's first launch (its layout) and a kernel with
 * more than 64 words of possible pointers (a scratch buffer) take
 * mutexes, each for a short search or copy, never across a driver call.
 */

#include "hooks.h"
#include "core.h"
#include "cuda_abi.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "wsprof/trace.h"

/* ---- the real dlsym --------------------------------------------------- */

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn real_dlsym_ptr;

static inline dlsym_fn real_dlsym(void)
{
	if (__builtin_expect(!real_dlsym_ptr, 0)) {
		dlsym_fn f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
		if (!f)
			f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
		real_dlsym_ptr = f;
	}
	return real_dlsym_ptr;
}

/* ---- hooked entry points ---------------------------------------------- */

enum fn {
	F_MEM_ALLOC, F_MEM_ALLOC_PITCH, F_MEM_FREE, F_MEM_ALLOC_MANAGED, F_MEM_ALLOC_HOST,
	F_MEM_HOST_ALLOC, F_MEM_FREE_HOST, F_MEM_HOST_REGISTER, F_MEM_HOST_UNREGISTER,
	F_MEM_ALLOC_ASYNC, F_MEM_ALLOC_ASYNC_PTSZ, F_MEM_ALLOC_POOL_ASYNC, F_MEM_ALLOC_POOL_ASYNC_PTSZ,
	F_MEM_FREE_ASYNC, F_MEM_FREE_ASYNC_PTSZ, F_MEM_CREATE, F_MEM_RELEASE, F_MEM_MAP, F_MEM_UNMAP,
	F_MEM_ADDRESS_RESERVE, F_MEM_ADDRESS_FREE,
	F_LAUNCH_KERNEL, F_LAUNCH_KERNEL_PTSZ, F_LAUNCH_KERNEL_EX, F_LAUNCH_KERNEL_EX_PTSZ,
	F_GET_PROC, F_GET_PROC_V2, F_COUNT
};

struct slot {
	const char *symbol;   /* the versioned name the driver exports */
	const char *base;     /* the name cuGetProcAddress is asked for */
	int min_version;      /* older versions of `base` have another signature: not wrapped */
	int max_version;      /* 0: no upper bound */
	bool ptsz;            /* the per-thread-default-stream variant */
	void *wrapper;
	void *_Atomic real;
};

/* The wrappers, defined below. */
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemAllocPitch_v2(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemAllocManaged(CUdeviceptr *, size_t, unsigned);
CUresult cuMemAllocHost_v2(void **, size_t);
CUresult cuMemHostAlloc(void **, size_t, unsigned);
CUresult cuMemFreeHost(void *);
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
CUresult cuMemHostUnregister(void *);
CUresult cuMemAllocAsync(CUdeviceptr *, size_t, CUstream);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *, size_t, CUstream);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
CUresult cuMemFreeAsync(CUdeviceptr, CUstream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
CUresult cuMemCreate(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
CUresult cuMemRelease(CUmemGenericAllocationHandle);
CUresult cuMemMap(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
CUresult cuMemUnmap(CUdeviceptr, size_t);
CUresult cuMemAddressReserve(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
CUresult cuMemAddressFree(CUdeviceptr, size_t);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
			void **, void **);
CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			     CUstream, void **, void **);
CUresult cuLaunchKernelEx(const CUlaunchConfig *, CUfunction, void **, void **);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *, CUfunction, void **, void **);
CUresult cuGetProcAddress(const char *, void **, int, cuuint64_t);
CUresult cuGetProcAddress_v2(const char *, void **, int, cuuint64_t, int *);

#define SLOT(fn, sym, base, lo, hi, ptsz) [fn] = { #sym, base, lo, hi, ptsz, (void *)sym, NULL }
static struct slot slots[F_COUNT] = {
	SLOT(F_MEM_ALLOC, cuMemAlloc_v2, "cuMemAlloc", 3020, 0, false),
	SLOT(F_MEM_ALLOC_PITCH, cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, 0, false),
	SLOT(F_MEM_FREE, cuMemFree_v2, "cuMemFree", 3020, 0, false),
	SLOT(F_MEM_ALLOC_MANAGED, cuMemAllocManaged, "cuMemAllocManaged", 6000, 0, false),
	SLOT(F_MEM_ALLOC_HOST, cuMemAllocHost_v2, "cuMemAllocHost", 3020, 0, false),
	SLOT(F_MEM_HOST_ALLOC, cuMemHostAlloc, "cuMemHostAlloc", 2020, 0, false),
	SLOT(F_MEM_FREE_HOST, cuMemFreeHost, "cuMemFreeHost", 2000, 0, false),
	SLOT(F_MEM_HOST_REGISTER, cuMemHostRegister_v2, "cuMemHostRegister", 6050, 0, false),
	SLOT(F_MEM_HOST_UNREGISTER, cuMemHostUnregister, "cuMemHostUnregister", 4000, 0, false),
	SLOT(F_MEM_ALLOC_ASYNC, cuMemAllocAsync, "cuMemAllocAsync", 11020, 0, false),
	SLOT(F_MEM_ALLOC_ASYNC_PTSZ, cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, 0, true),
	SLOT(F_MEM_ALLOC_POOL_ASYNC, cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, 0, false),
	SLOT(F_MEM_ALLOC_POOL_ASYNC_PTSZ, cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, 0, true),
	SLOT(F_MEM_FREE_ASYNC, cuMemFreeAsync, "cuMemFreeAsync", 11020, 0, false),
	SLOT(F_MEM_FREE_ASYNC_PTSZ, cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, 0, true),
	SLOT(F_MEM_CREATE, cuMemCreate, "cuMemCreate", 10020, 0, false),
	SLOT(F_MEM_RELEASE, cuMemRelease, "cuMemRelease", 10020, 0, false),
	SLOT(F_MEM_MAP, cuMemMap, "cuMemMap", 10020, 0, false),
	SLOT(F_MEM_UNMAP, cuMemUnmap, "cuMemUnmap", 10020, 0, false),
	SLOT(F_MEM_ADDRESS_RESERVE, cuMemAddressReserve, "cuMemAddressReserve", 10020, 0, false),
	SLOT(F_MEM_ADDRESS_FREE, cuMemAddressFree, "cuMemAddressFree", 10020, 0, false),
	SLOT(F_LAUNCH_KERNEL, cuLaunchKernel, "cuLaunchKernel", 4000, 0, false),
	SLOT(F_LAUNCH_KERNEL_PTSZ, cuLaunchKernel_ptsz, "cuLaunchKernel", 4000, 0, true),
	SLOT(F_LAUNCH_KERNEL_EX, cuLaunchKernelEx, "cuLaunchKernelEx", 11060, 0, false),
	SLOT(F_LAUNCH_KERNEL_EX_PTSZ, cuLaunchKernelEx_ptsz, "cuLaunchKernelEx", 11060, 0, true),
	SLOT(F_GET_PROC, cuGetProcAddress, "cuGetProcAddress", 11030, 11999, false),
	SLOT(F_GET_PROC_V2, cuGetProcAddress_v2, "cuGetProcAddress", 12000, 0, false),
};

/* The real function behind a slot: remembered from dlsym/cuGetProcAddress,
 * or looked up next to us for a program linked with libcuda. */
static void *real_of(enum fn f)
{
	void *p = atomic_load_explicit(&slots[f].real, memory_order_acquire);
	if (__builtin_expect(p != NULL, 1))
		return p;
	wsp_tls.guard++;
	p = real_dlsym()(RTLD_NEXT, slots[f].symbol);
	wsp_tls.guard--;
	if (p && p != slots[f].wrapper)
		atomic_store_explicit(&slots[f].real, p, memory_order_release);
	return p == slots[f].wrapper ? NULL : p;
}

static void remember(enum fn f, void *real)
{
	void *none = NULL;
	if (real && real != slots[f].wrapper)
		atomic_compare_exchange_strong(&slots[f].real, &none, real);
}

/* ---- driver functions wsprof calls itself ------------------------------ */

static struct {
	pthread_once_t once;
	CUresult (*ctx_get_device)(CUdevice *);
	CUresult (*ctx_get_current)(CUcontext *);
	CUresult (*ctx_set_current)(CUcontext);
	CUresult (*mem_get_info)(size_t *, size_t *);
	CUresult (*launch_host_func)(CUstream, CUhostFn, void *);
	CUresult (*launch_host_func_ptsz)(CUstream, CUhostFn, void *);
	CUresult (*func_get_param_info)(CUfunction, size_t, size_t *, size_t *); /* CUDA 12.4+ */
} drv = { .once = PTHREAD_ONCE_INIT };

static void *driver_handle_of;

/* Once, from the first CUDA hook that needs the driver, holding no wsprof
 * lock: dladdr, dlopen RTLD_NOLOAD (no constructor runs: the driver is
 * loaded) and dlsym take only the loader's recursive lock. */
static void drv_resolve(void)
{
	Dl_info info;
	if (!driver_handle_of || !dladdr(driver_handle_of, &info) || !info.dli_fname)
		return;
	void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return;
	dlsym_fn sym = real_dlsym();
	drv.ctx_get_device = (CUresult(*)(CUdevice *))sym(h, "cuCtxGetDevice");
	drv.ctx_get_current = (CUresult(*)(CUcontext *))sym(h, "cuCtxGetCurrent");
	drv.ctx_set_current = (CUresult(*)(CUcontext))sym(h, "cuCtxSetCurrent");
	drv.mem_get_info = (CUresult(*)(size_t *, size_t *))sym(h, "cuMemGetInfo_v2");
	drv.launch_host_func = (CUresult(*)(CUstream, CUhostFn, void *))sym(h, "cuLaunchHostFunc");
	drv.launch_host_func_ptsz = (CUresult(*)(CUstream, CUhostFn, void *))sym(h, "cuLaunchHostFunc_ptsz");
	drv.func_get_param_info = (CUresult(*)(CUfunction, size_t, size_t *, size_t *))sym(h, "cuFuncGetParamInfo");
	dlclose(h);
}

/* Called with the guard held, from a wrapper whose real function is `real`. */
static bool drv_ready(void *real)
{
	if (!driver_handle_of)
		driver_handle_of = real;
	pthread_once(&drv.once, drv_resolve);
	return drv.ctx_get_device != NULL;
}

/* ---- devices and their free memory ------------------------------------- */

#define MAX_DEVICES 64
static CUcontext _Atomic device_ctx[MAX_DEVICES]; /* a context of the program's on each device */

static int current_device(void)
{
	CUdevice d;
	if (!drv.ctx_get_device || drv.ctx_get_device(&d) != CUDA_SUCCESS || d < 0 || d >= MAX_DEVICES)
		return -1;
	if (drv.ctx_get_current && !atomic_load(&device_ctx[d])) {
		CUcontext c = NULL;
		if (drv.ctx_get_current(&c) == CUDA_SUCCESS && c)
			atomic_store(&device_ctx[d], c);
	}
	return d;
}

static void sample_current(int device)
{
	size_t free_bytes, total;
	if (device >= 0 && drv.mem_get_info && drv.mem_get_info(&free_bytes, &total) == CUDA_SUCCESS)
		wsp_record_device_memory(device, free_bytes, total);
}

void wsp_cuda_sample(void)
{
	if (!drv.ctx_set_current || !drv.mem_get_info || atomic_load(&wsp_state) != WSP_ACTIVE)
		return;
	/* Borrow the program's own context on this thread; never create one. */
	for (int d = 0; d < MAX_DEVICES; d++) {
		CUcontext c = atomic_load(&device_ctx[d]);
		if (c && drv.ctx_set_current(c) == CUDA_SUCCESS)
			sample_current(d);
	}
	drv.ctx_set_current(NULL);
}

/* When the stream reaches an async allocation or free (WSPROF_CUDA_STREAM_TIMES=1). */
struct reached {
	struct reached *next;
	unsigned kind, op;
	uint64_t addr, stream;
};
static pthread_mutex_t reached_lock = PTHREAD_MUTEX_INITIALIZER;
static struct reached *reached_free;

static void on_reached(void *arg)
{
	struct reached *r = arg;
	wsp_tls.guard++;
	if (wsp_ready())
		wsp_record_stream_reached(r->kind, r->op, r->addr, r->stream);
	pthread_mutex_lock(&reached_lock);
	r->next = reached_free;
	reached_free = r;
	pthread_mutex_unlock(&reached_lock);
	wsp_tls.guard--;
}

static void watch_stream(unsigned kind, unsigned op, uint64_t addr, CUstream stream, bool ptsz)
{
	CUresult (*launch)(CUstream, CUhostFn, void *) = ptsz ? drv.launch_host_func_ptsz : drv.launch_host_func;
	if (!wsp_cfg.cuda_stream_times || !launch)
		return;
	pthread_mutex_lock(&reached_lock);
	struct reached *r = reached_free;
	if (r)
		reached_free = r->next;
	pthread_mutex_unlock(&reached_lock);
	if (!r && !(r = wsp_mem_alloc(sizeof *r)))
		return;
	*r = (struct reached){ NULL, kind, op, addr, (uint64_t)(uintptr_t)stream };
	if (launch(stream, on_reached, r) != CUDA_SUCCESS)
		on_reached(r);
}

/* ---- live device and managed blocks --------------------------------------
 * What a kernel's parameters are looked up in: every cuda_device and
 * cuda_managed block the program holds, as the driver handed it out
 * (a cuMemAllocFromPoolAsync block is one block; nothing is known of a
 * program's own sub-allocations in it). A sorted array of wsprof's own
 * pages, searched by binary search; at most LIVE_MAX blocks are kept,
 * later ones are not looked up (one warning).
 *
 * Launches only read it, and take no lock for that: the allocations and
 * frees that change it take a mutex among themselves and make the
 * sequence count odd while they do (a seqlock); a reader that saw the
 * count change, or odd, reads again. An array the table outgrew stays
 * mapped (a reader may still be in it): at most as much again. */

struct live_block {
	uint64_t start, end;
};

struct live_array {
	struct live_array *outgrown; /* kept for readers still in it */
	size_t cap;
	struct live_block v[];
};

#define LIVE_MIN 1024
#define LIVE_MAX (1u << 20) /* 16 MiB of table */

static struct {
	pthread_mutex_t lock;             /* writers among themselves */
	_Atomic unsigned seq;             /* odd while a writer changes the blocks */
	struct live_array *_Atomic a;
	_Atomic size_t n;
	bool full;                        /* LIVE_MAX was reached once */
} live = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t load_u64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* The first of the n blocks of a that ends above addr: the one holding
 * addr, if any. */
static size_t live_first_above(const struct live_array *a, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (load_u64(&a->v[mid].end) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Writers: the lock held, the count odd, between write_begin and write_end. */
static void write_begin(void)
{
	pthread_mutex_lock(&live.lock);
	wsp_seq_write_begin(&live.seq);
}

static void write_end(void)
{
	wsp_seq_write_end(&live.seq);
	pthread_mutex_unlock(&live.lock);
}

static struct live_array *live_grow_locked(struct live_array *a)
{
	size_t cap = a ? a->cap * 2 : LIVE_MIN;
	struct live_array *b = cap <= LIVE_MAX ? wsp_pages_alloc(sizeof *b + cap * sizeof b->v[0]) : NULL;
	if (!b)
		return NULL;
	b->cap = cap;
	b->outgrown = a;
	size_t n = atomic_load_explicit(&live.n, memory_order_relaxed);
	if (n)
		memcpy(b->v, a->v, n * sizeof b->v[0]);
	atomic_store_explicit(&live.a, b, memory_order_release);
	return b;
}

/* A block the driver handed out. Blocks it overlaps were freed without
 * our knowing (a destroyed context takes its memory along): they go. */
static void live_insert(uint64_t start, uint64_t size)
{
	uint64_t end = start + size;
	if (!size || end < start)
		return;
	write_begin();
	struct live_array *a = atomic_load_explicit(&live.a, memory_order_relaxed);
	size_t n = atomic_load_explicit(&live.n, memory_order_relaxed);
	size_t i = a ? live_first_above(a, n, start) : 0, j = i;
	while (j < n && a->v[j].start < end)
		j++;
	if (j == i && (!a || n == a->cap))
		a = live_grow_locked(a);
	bool room = a != NULL;
	if (room) {
		memmove(&a->v[i + 1], &a->v[j], (n - j) * sizeof a->v[0]);
		a->v[i] = (struct live_block){ start, end };
		atomic_store_explicit(&live.n, n + 1 - (j - i), memory_order_relaxed);
	}
	bool warn = !room && !live.full;
	live.full |= !room;
	write_end();
	if (warn)
		wsp_warn("more than %u live CUDA device blocks: kernel launches will not name the newer ones", LIVE_MAX);
}

/* Take the block starting at `start` out before the program frees it, so
 * that an address the driver hands out again at once is never dropped by
 * a late removal; live_put_back() returns it if the free fails.
 * @return the block, or an empty one. */
static struct live_block live_take(uint64_t start)
{
	struct live_block b = { 0, 0 };
	if (!atomic_load_explicit(&live.n, memory_order_relaxed))
		return b; /* nothing to take: no writer's lock for it */
	write_begin();
	struct live_array *a = atomic_load_explicit(&live.a, memory_order_relaxed);
	size_t n = atomic_load_explicit(&live.n, memory_order_relaxed);
	size_t i = a ? live_first_above(a, n, start) : 0;
	if (i < n && a->v[i].start == start) {
		b = a->v[i];
		memmove(&a->v[i], &a->v[i + 1], (n - i - 1) * sizeof a->v[0]);
		atomic_store_explicit(&live.n, n - 1, memory_order_relaxed);
	}
	write_end();
	return b;
}

static void live_put_back(struct live_block b, CUresult freed)
{
	if (freed != CUDA_SUCCESS && b.end)
		live_insert(b.start, b.end - b.start);
}

static bool live_empty(void)
{
	return atomic_load_explicit(&live.n, memory_order_relaxed) == 0;
}

/* An allocation call returned `r`: record the block, or the failure. */
static void note_alloc(void *real, unsigned kind, unsigned op, CUresult r, uint64_t addr, size_t size,
		       CUstream stream, int device, uint64_t handle)
{
	int e = errno;
	if (!wsp_enter())
		return;
	wsp_tls.cuda_recorded = true;
	bool have_drv = drv_ready(real);
	struct wsp_cuda_tag tag = { device, (uint64_t)(uintptr_t)stream, handle };
	if (tag.device < 0 && have_drv)
		tag.device = current_device();
	if (r == CUDA_SUCCESS) {
		wsp_record_cuda_alloc(kind, op, addr, size, &tag);
		if (wsp_cfg.access && (kind == WSPROF_KIND_CUDA_DEVICE || kind == WSPROF_KIND_CUDA_MANAGED))
			live_insert(addr, size);
	} else {
		wsp_record_cuda_fail(kind, op, size, &tag);
		sample_current(tag.device);
		wsp_writer_flush(); /* the program may abort right after this */
	}
	wsp_leave(e);
}

static void note_free(unsigned kind, unsigned op, uint64_t addr, CUstream stream)
{
	int e = errno;
	if (!addr || !wsp_enter())
		return;
	struct wsp_cuda_tag tag = { current_device(), (uint64_t)(uintptr_t)stream, 0 };
	wsp_record_cuda_free(kind, op, addr, &tag);
	wsp_leave(e);
}

static void note_range(unsigned kind, unsigned op, uint64_t addr, size_t size)
{
	int e = errno;
	if (!wsp_enter())
		return;
	wsp_record_range_release(kind, op, addr, size);
	wsp_leave(e);
}

#define REAL(f, type) __typeof__(type) real = (__typeof__(type))real_of(f); if (!real) return CUDA_ERROR_NOT_INITIALIZED

/* ---- the wrappers -------------------------------------------------------- */

WSPROF_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
	REAL(F_MEM_ALLOC, CUresult(*)(CUdeviceptr *, size_t));
	CUresult r = real(dptr, size);
	note_alloc(real, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC, r, r ? 0 : *dptr, size, NULL, -1, 0);
	return r;
}

WSPROF_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
					  unsigned elem)
{
	REAL(F_MEM_ALLOC_PITCH, CUresult(*)(CUdeviceptr *, size_t *, size_t, size_t, unsigned));
	CUresult r = real(dptr, pitch, width, height, elem);
	note_alloc(real, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC_PITCH, r, r ? 0 : *dptr,
		   r ? width * height : *pitch * height, NULL, -1, 0);
	return r;
}

WSPROF_EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	REAL(F_MEM_FREE, CUresult(*)(CUdeviceptr));
	note_free(WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_FREE, p, NULL);
	struct live_block was = live_take(p);
	CUresult r = real(p);
	live_put_back(was, r);
	return r;
}

WSPROF_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned flags)
{
	REAL(F_MEM_ALLOC_MANAGED, CUresult(*)(CUdeviceptr *, size_t, unsigned));
	CUresult r = real(dptr, size, flags);
	note_alloc(real, WSPROF_KIND_CUDA_MANAGED, WSPROF_OP_CU_MEM_ALLOC_MANAGED, r, r ? 0 : *dptr, size, NULL, -1, 0);
	return r;
}

WSPROF_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t size)
{
	REAL(F_MEM_ALLOC_HOST, CUresult(*)(void **, size_t));
	CUresult r = real(pp, size);
	note_alloc(real, WSPROF_KIND_CUDA_HOST, WSPROF_OP_CU_MEM_ALLOC_HOST, r, r ? 0 : (uintptr_t)*pp, size, NULL, -1, 0);
	return r;
}

WSPROF_EXPORT CUresult cuMemHostAlloc(void **pp, size_t size, unsigned flags)
{
	REAL(F_MEM_HOST_ALLOC, CUresult(*)(void **, size_t, unsigned));
	CUresult r = real(pp, size, flags);
	note_alloc(real, WSPROF_KIND_CUDA_HOST, WSPROF_OP_CU_MEM_HOST_ALLOC, r, r ? 0 : (uintptr_t)*pp, size, NULL, -1, 0);
	return r;
}

WSPROF_EXPORT CUresult cuMemFreeHost(void *p)
{
	REAL(F_MEM_FREE_HOST, CUresult(*)(void *));
	note_free(WSPROF_KIND_CUDA_HOST, WSPROF_OP_CU_MEM_FREE_HOST, (uintptr_t)p, NULL);
	return real(p);
}

WSPROF_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned flags)
{
	REAL(F_MEM_HOST_REGISTER, CUresult(*)(void *, size_t, unsigned));
	CUresult r = real(p, size, flags);
	note_alloc(real, WSPROF_KIND_CUDA_HOST, WSPROF_OP_CU_MEM_HOST_REGISTER, r, (uintptr_t)p, size, NULL, -1, 0);
	return r;
}

WSPROF_EXPORT CUresult cuMemHostUnregister(void *p)
{
	REAL(F_MEM_HOST_UNREGISTER, CUresult(*)(void *));
	note_free(WSPROF_KIND_CUDA_HOST, WSPROF_OP_CU_MEM_HOST_UNREGISTER, (uintptr_t)p, NULL);
	return real(p);
}

static CUresult alloc_async(enum fn f, CUdeviceptr *dptr, size_t size, CUstream stream)
{
	REAL(f, CUresult(*)(CUdeviceptr *, size_t, CUstream));
	CUresult r = real(dptr, size, stream);
	note_alloc(real, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC_ASYNC, r, r ? 0 : *dptr, size, stream, -1, 0);
	if (r == CUDA_SUCCESS)
		watch_stream(WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC_ASYNC, *dptr, stream, slots[f].ptsz);
	return r;
}

WSPROF_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream stream)
{
	return alloc_async(F_MEM_ALLOC_ASYNC, dptr, size, stream);
}

WSPROF_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream stream)
{
	return alloc_async(F_MEM_ALLOC_ASYNC_PTSZ, dptr, size, stream);
}

static CUresult alloc_pool_async(enum fn f, CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream stream)
{
	REAL(f, CUresult(*)(CUdeviceptr *, size_t, CUmemoryPool, CUstream));
	CUresult r = real(dptr, size, pool, stream);
	note_alloc(real, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC_FROM_POOL_ASYNC, r, r ? 0 : *dptr, size,
		   stream, -1, 0);
	if (r == CUDA_SUCCESS)
		watch_stream(WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC_FROM_POOL_ASYNC, *dptr, stream, slots[f].ptsz);
	return r;
}

WSPROF_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream stream)
{
	return alloc_pool_async(F_MEM_ALLOC_POOL_ASYNC, dptr, size, pool, stream);
}

WSPROF_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
						    CUstream stream)
{
	return alloc_pool_async(F_MEM_ALLOC_POOL_ASYNC_PTSZ, dptr, size, pool, stream);
}

static CUresult free_async(enum fn f, CUdeviceptr p, CUstream stream)
{
	REAL(f, CUresult(*)(CUdeviceptr, CUstream));
	/* Recorded at call time: the stream may get there later (see watch_stream). */
	note_free(WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_FREE_ASYNC, p, stream);
	struct live_block was = live_take(p);
	CUresult r = real(p, stream);
	live_put_back(was, r);
	if (r == CUDA_SUCCESS && p)
		watch_stream(WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_FREE_ASYNC, p, stream, slots[f].ptsz);
	return r;
}

WSPROF_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream stream)
{
	return free_async(F_MEM_FREE_ASYNC, p, stream);
}

WSPROF_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream stream)
{
	return free_async(F_MEM_FREE_ASYNC_PTSZ, p, stream);
}

/* The virtual memory API: physical allocations are cuda_vmm blocks keyed by
 * their handle; mappings and reservations are address ranges of their own. */
WSPROF_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
				   unsigned long long flags)
{
	REAL(F_MEM_CREATE, CUresult(*)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long));
	CUresult r = real(handle, size, prop, flags);
	int device = prop ? prop->location.id : -1;
	note_alloc(real, WSPROF_KIND_CUDA_VMM, WSPROF_OP_CU_MEM_CREATE, r, r ? 0 : *handle, size, NULL, device, 0);
	return r;
}

WSPROF_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	REAL(F_MEM_RELEASE, CUresult(*)(CUmemGenericAllocationHandle));
	note_free(WSPROF_KIND_CUDA_VMM, WSPROF_OP_CU_MEM_RELEASE, handle, NULL);
	return real(handle);
}

WSPROF_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
				unsigned long long flags)
{
	REAL(F_MEM_MAP, CUresult(*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long));
	CUresult r = real(ptr, size, offset, handle, flags);
	if (r == CUDA_SUCCESS)
		note_alloc(real, WSPROF_KIND_CUDA_VMM_MAPPED, WSPROF_OP_CU_MEM_MAP, r, ptr, size, NULL, -1, handle);
	return r;
}

WSPROF_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	REAL(F_MEM_UNMAP, CUresult(*)(CUdeviceptr, size_t));
	note_range(WSPROF_KIND_CUDA_VMM_MAPPED, WSPROF_OP_CU_MEM_UNMAP, ptr, size);
	return real(ptr, size);
}

WSPROF_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
					   unsigned long long flags)
{
	REAL(F_MEM_ADDRESS_RESERVE, CUresult(*)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long));
	CUresult r = real(ptr, size, align, addr, flags);
	if (r == CUDA_SUCCESS)
		note_alloc(real, WSPROF_KIND_CUDA_VMM_RESERVED, WSPROF_OP_CU_MEM_ADDRESS_RESERVE, r, *ptr, size, NULL, -1, 0);
	return r;
}

WSPROF_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	REAL(F_MEM_ADDRESS_FREE, CUresult(*)(CUdeviceptr, size_t));
	note_range(WSPROF_KIND_CUDA_VMM_RESERVED, WSPROF_OP_CU_MEM_ADDRESS_FREE, ptr, size);
	return real(ptr, size);
}

/* ---- kernel launches: device memory that may be touched -----------------
 * A launch does not say what its kernel reads or writes, only what it was
 * given. So after a successful launch every 8-byte-aligned 8-byte word of
 * its parameters is taken for a possible pointer, and each live device or
 * managed block one points into (interior pointers included) becomes part
 * of one ACCESS record of source WSPROF_ACCESS_INFERRED, window 0, at the
 * launch: the whole blocks, sorted, touching ones merged.
 *
 * These are "may be touched" samples, not observed accesses: a scalar
 * that happens to hold a device address is a false positive, memory
 * reached through pointers kept in device memory is missed, a hit inside
 * a pool slab names the whole slab, and a launch into a stream being
 * captured into a graph is sampled when captured, not when it runs.
 *
 * The parameter layout comes from cuFuncGetParamInfo (CUDA 12.4+). Without
 * it nothing is inferred: parameters passed packed through `extra` (or a
 * driver without cuFuncGetParamInfo) leave no record, rather than a guess
 * at a layout we cannot know. */

/* Where a kernel's possible pointers are: for each parameter with at
 * least one aligned word, `words` words from byte `at` of its value. */
struct span {
	uint16_t param, at, words;
};

#define LAYOUT_SPANS 62
#define LAYOUT_OVERFLOW UINT32_MAX /* more spans than fit: read each launch */
#define PARAMS_MAX 32764           /* the driver's limit on parameter bytes */
#define WORDS_MAX (PARAMS_MAX / 8)

struct layout {
	CUfunction f;                     /* NULL: an empty slot */
	uint32_t nparams;
	uint32_t last_offset, last_size;  /* of the last parameter */
	uint32_t nspans;                  /* or LAYOUT_OVERFLOW */
	uint32_t words;                   /* in all spans */
	struct span span[LAYOUT_SPANS];
};

/* Layouts of the functions launched, one slot per hash (a collision
 * replaces the older function): a fixed 200 KiB of wsprof's pages. A
 * launch copies its slot without a lock, under the slot's sequence
 * count; a copy that a writer got in the way of counts as a miss (the
 * layout is read from the driver, as for a function not remembered).
 * Writers take the lock. */
#define LAYOUT_SLOTS 512
struct layout_slot {
	_Atomic unsigned seq;
	struct layout l;
};
static struct layout_slot *_Atomic layout_slots;
static struct {
	pthread_mutex_t lock; /* writers of the slots */
	bool failed;          /* no pages for them */
} layouts = { .lock = PTHREAD_MUTEX_INITIALIZER };

static size_t layout_hash(CUfunction f)
{
	return (size_t)(((uintptr_t)f * 0x9E3779B97F4A7C15ull) >> 32) & (LAYOUT_SLOTS - 1);
}

/* The aligned words of a parameter at `offset` of `size` bytes. */
static struct span param_span(uint32_t param, size_t offset, size_t size)
{
	size_t first = (offset + 7) & ~(size_t)7;
	if (first + 8 > offset + size)
		return (struct span){ (uint16_t)param, 0, 0 };
	return (struct span){ (uint16_t)param, (uint16_t)(first - offset), (uint16_t)((offset + size - first) / 8) };
}

/* Read f's layout from the driver. @return false if it makes no sense. */
static bool layout_read(CUfunction f, struct layout *l)
{
	*l = (struct layout){ .f = f };
	size_t offset, size;
	for (uint32_t i = 0; drv.func_get_param_info(f, i, &offset, &size) == CUDA_SUCCESS; i++) {
		if (i >= PARAMS_MAX || offset + size > PARAMS_MAX)
			return false;
		struct span s = param_span(i, offset, size);
		if (s.words && l->nspans == LAYOUT_SPANS)
			l->nspans = LAYOUT_OVERFLOW;
		else if (s.words && l->nspans != LAYOUT_OVERFLOW)
			l->span[l->nspans++] = s;
		l->words += s.words;
		l->nparams = i + 1;
		l->last_offset = (uint32_t)offset;
		l->last_size = (uint32_t)size;
	}
	return true;
}

/* A remembered layout still fits the function: a module unloaded and
 * another loaded may hand out the same CUfunction for another kernel, and
 * reading past the end of its kernelParams would crash the program. Two
 * queries (the count, the last parameter) instead of one per parameter. */
static bool layout_current(const struct layout *l)
{
	size_t offset, size;
	if (drv.func_get_param_info(l->f, l->nparams, &offset, &size) == CUDA_SUCCESS)
		return false;
	return !l->nparams || (drv.func_get_param_info(l->f, l->nparams - 1, &offset, &size) == CUDA_SUCCESS &&
			       offset == l->last_offset && size == l->last_size);
}

/* Remember l in slot h. */
static void layout_keep(size_t h, const struct layout *l)
{
	pthread_mutex_lock(&layouts.lock);
	struct layout_slot *slots = atomic_load_explicit(&layout_slots, memory_order_relaxed);
	if (!slots && !layouts.failed) {
		slots = wsp_pages_alloc(LAYOUT_SLOTS * sizeof *slots);
		layouts.failed = !slots;
		atomic_store_explicit(&layout_slots, slots, memory_order_release);
	}
	if (slots) {
		wsp_seq_write_begin(&slots[h].seq);
		slots[h].l = *l;
		wsp_seq_write_end(&slots[h].seq);
	}
	pthread_mutex_unlock(&layouts.lock);
}

/* Copy f's remembered layout from slot h. @return false on a miss. */
static bool layout_recall(CUfunction f, size_t h, struct layout *l)
{
	struct layout_slot *slots = atomic_load_explicit(&layout_slots, memory_order_acquire);
	if (!slots)
		return false;
	unsigned q = wsp_seq_read_begin(&slots[h].seq);
	if (q & 1)
		return false;
	*l = slots[h].l;
	return wsp_seq_read_ok(&slots[h].seq, q) && l->f == f;
}

static bool layout_get(CUfunction f, struct layout *l)
{
	size_t h = layout_hash(f);
	if (layout_recall(f, h, l) && layout_current(l))
		return true;
	if (!layout_read(f, l))
		return false;
	layout_keep(h, l);
	return true;
}

/* Look up the words of one span of param values in the count blocks of
 * a; append each block hit to r (n so far, room for cap). @return the
 * new n. */
static size_t span_lookup(const unsigned char *value, struct span s, const struct live_array *a, size_t count,
			  struct wsp_range *r, size_t n, size_t cap)
{
	for (unsigned k = 0; a && count && k < s.words && n < cap; k++) {
		uint64_t w;
		memcpy(&w, value + s.at + 8 * k, sizeof w);
		if (w < load_u64(&a->v[0].start) || w >= load_u64(&a->v[count - 1].end))
			continue;
		size_t i = live_first_above(a, count, w);
		if (i == count)
			continue;
		uint64_t start = load_u64(&a->v[i].start), end = load_u64(&a->v[i].end);
		if (start > w || (n && r[n - 1].start == start))
			continue;
		r[n++] = (struct wsp_range){ start, end - start };
	}
	return n;
}

/* The blocks one span of param values points into, appended to r (see
 * span_lookup). Without a lock: a writer changing the blocks meanwhile
 * makes the sequence count differ, and the words are looked up again.
 * A writer may be descheduled while it holds the count odd, so after a
 * few tries the lookup waits for the writers' lock instead of spinning. */
#define SEQ_TRIES 16
static size_t span_hits(void **params, struct span s, struct wsp_range *r, size_t n, size_t cap)
{
	const unsigned char *value = params[s.param];
	for (unsigned tries = 0; tries < SEQ_TRIES; tries++) {
		unsigned q = wsp_seq_read_begin(&live.seq);
		if (q & 1)
			continue;
		const struct live_array *a = atomic_load_explicit(&live.a, memory_order_acquire);
		size_t count = atomic_load_explicit(&live.n, memory_order_relaxed);
		if (a && count > a->cap)
			count = a->cap; /* a newer count than the array: the check below fails */
		size_t m = span_lookup(value, s, a, count, r, n, cap);
		if (wsp_seq_read_ok(&live.seq, q))
			return m;
	}
	pthread_mutex_lock(&live.lock);
	n = span_lookup(value, s, atomic_load_explicit(&live.a, memory_order_relaxed),
			atomic_load_explicit(&live.n, memory_order_relaxed), r, n, cap);
	pthread_mutex_unlock(&live.lock);
	return n;
}

/* The blocks l's parameters point into, unsorted, into r (room for cap). */
static size_t launch_hits(CUfunction f, const struct layout *l, void **params, struct wsp_range *r, size_t cap)
{
	size_t n = 0;
	if (l->nspans != LAYOUT_OVERFLOW) {
		for (uint32_t i = 0; i < l->nspans; i++)
			n = span_hits(params, l->span[i], r, n, cap);
		return n;
	}
	size_t offset, size;
	for (uint32_t i = 0; i < l->nparams && drv.func_get_param_info(f, i, &offset, &size) == CUDA_SUCCESS; i++) {
		struct span s = param_span(i, offset, size);
		if (s.words)
			n = span_hits(params, s, r, n, cap);
	}
	return n;
}

/* Sort by address, drop repeats, merge touching blocks; then, while there
 * are more than `limit`, merge the two neighbours with the smallest gap
 * (the format's bound, WSPROF_MAX_REGIONS). @return the count. */
static size_t ranges_squeeze(struct wsp_range *r, size_t n, size_t limit)
{
	for (size_t i = 1; i < n; i++) {
		struct wsp_range x = r[i];
		size_t j = i;
		for (; j > 0 && r[j - 1].start > x.start; j--)
			r[j] = r[j - 1];
		r[j] = x;
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && r[i].start <= r[m - 1].start + r[m - 1].len) {
			uint64_t end = r[i].start + r[i].len;
			if (end > r[m - 1].start + r[m - 1].len)
				r[m - 1].len = end - r[m - 1].start;
		} else {
			r[m++] = r[i];
		}
	}
	while (m > limit && m > 1) {
		size_t best = 0;
		uint64_t gap = UINT64_MAX;
		for (size_t i = 0; i + 1 < m; i++) {
			uint64_t g = r[i + 1].start - (r[i].start + r[i].len);
			if (g < gap) {
				gap = g;
				best = i;
			}
		}
		r[best].len = r[best + 1].start + r[best + 1].len - r[best].start;
		memmove(&r[best + 1], &r[best + 2], (m - best - 2) * sizeof *r);
		m--;
	}
	return m;
}

/* Room for one launch's hits: on the program's stack for up to
 * HITS_ON_STACK words of possible pointers (1 KiB), the usual case;
 * more (up to WORDS_MAX ranges, 64 KiB) is too much for a program's
 * stack, so kept on a free list, one per thread launching such a kernel
 * at the same time, under a lock of its own. */
#define HITS_ON_STACK 64
struct hit_buf {
	struct hit_buf *next;
	struct wsp_range r[WORDS_MAX];
};
static pthread_mutex_t hit_bufs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hit_buf *hit_bufs_free;

static struct hit_buf *hit_buf_get(void)
{
	pthread_mutex_lock(&hit_bufs_lock);
	struct hit_buf *b = hit_bufs_free;
	if (b)
		hit_bufs_free = b->next;
	pthread_mutex_unlock(&hit_bufs_lock);
	return b ? b : wsp_pages_alloc(sizeof *b);
}

static void hit_buf_put(struct hit_buf *b)
{
	pthread_mutex_lock(&hit_bufs_lock);
	b->next = hit_bufs_free;
	hit_bufs_free = b;
	pthread_mutex_unlock(&hit_bufs_lock);
}

static void record_hits(CUfunction f, const struct layout *l, void **params, struct wsp_range *r, size_t cap)
{
	size_t limit = wsp_cfg.max_regions ? wsp_cfg.max_regions : WORDS_MAX;
	size_t n = ranges_squeeze(r, launch_hits(f, l, params, r, cap), limit);
	if (n)
		wsp_record_access(WSPROF_ACCESS_INFERRED, 0, r, n);
}

/* A launch of f by the driver function `real` succeeded. */
static void note_launch(void *real, CUfunction f, void **params)
{
	int e = errno;
	if (!params || !wsp_enter())
		return;
	/* drv_ready resolves cuFuncGetParamInfo; before CUDA 12.4 it is not
	 * there, and nothing is inferred. */
	drv_ready(real);
	struct layout l;
	if (wsp_cfg.access && drv.func_get_param_info && !live_empty() && layout_get(f, &l)) {
		if (l.nspans != LAYOUT_OVERFLOW && l.words <= HITS_ON_STACK) {
			struct wsp_range r[HITS_ON_STACK];
			record_hits(f, &l, params, r, HITS_ON_STACK);
		} else {
			struct hit_buf *b = hit_buf_get();
			if (b) {
				record_hits(f, &l, params, b->r, WORDS_MAX);
				hit_buf_put(b);
			}
		}
	}
	wsp_leave(e);
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			      CUstream, void **, void **);

static CUresult launch_kernel(enum fn fn, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			      unsigned by, unsigned bz, unsigned shared, CUstream stream, void **params, void **extra)
{
	REAL(fn, launch_fn);
	CUresult r = real(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
	if (r == CUDA_SUCCESS)
		note_launch((void *)real, f, params);
	return r;
}

WSPROF_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
				      unsigned bz, unsigned shared, CUstream stream, void **params, void **extra)
{
	return launch_kernel(F_LAUNCH_KERNEL, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

WSPROF_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
					   unsigned by, unsigned bz, unsigned shared, CUstream stream, void **params,
					   void **extra)
{
	return launch_kernel(F_LAUNCH_KERNEL_PTSZ, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

/* The stream is in config->hStream; the record does not need it. */
static CUresult launch_kernel_ex(enum fn fn, const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
	REAL(fn, CUresult(*)(const CUlaunchConfig *, CUfunction, void **, void **));
	CUresult r = real(config, f, params, extra);
	if (r == CUDA_SUCCESS)
		note_launch((void *)real, f, params);
	return r;
}

WSPROF_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
	return launch_kernel_ex(F_LAUNCH_KERNEL_EX, config, f, params, extra);
}

WSPROF_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
	return launch_kernel_ex(F_LAUNCH_KERNEL_EX_PTSZ, config, f, params, extra);
}

/* ---- lookups: dlsym and cuGetProcAddress -------------------------------- */

static int slot_by_symbol(const char *name)
{
	for (int f = 0; f < F_COUNT; f++)
		if (strcmp(slots[f].symbol, name) == 0)
			return f;
	return -1;
}

/* What the driver returned for (base name, version, flags): our wrapper in
 * its place when it is one of ours, with the real function remembered. */
static void *wrap_proc(const char *name, void *real, int version, cuuint64_t flags)
{
	bool ptsz = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	for (int f = 0; f < F_COUNT; f++) {
		const struct slot *s = &slots[f];
		if (strcmp(s->base, name) != 0 || version < s->min_version || (s->max_version && version > s->max_version))
			continue;
		/* A function without a per-thread variant has only the default slot. */
		bool has_ptsz = f + 1 < F_COUNT && slots[f + 1].ptsz && !strcmp(slots[f + 1].base, name);
		if (s->ptsz != (ptsz && (s->ptsz || has_ptsz)))
			continue;
		remember((enum fn)f, real);
		return s->wrapper;
	}
	return real;
}

/* ---- an attached process ------------------------------------------------ */

struct find_driver {
	char path[4096];
};

static int find_driver_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct find_driver *d = arg;
	const char *n = info->dlpi_name ? info->dlpi_name : "";
	const char *base = strrchr(n, '/');
	base = base ? base + 1 : n;
	if (strncmp(base, "libcuda.so", 10) != 0)
		return 0;
	snprintf(d->path, sizeof d->path, "%s", n);
	return 1;
}

static size_t add_pair(struct wsp_cuda_pair *out, size_t n, size_t cap, void *real, enum fn f)
{
	if (!real || real == slots[f].wrapper || n == cap)
		return n;
	for (size_t i = 0; i < n; i++)
		if (out[i].real == real)
			return n;
	remember(f, real);
	if (!driver_handle_of)
		driver_handle_of = real;
	out[n] = (struct wsp_cuda_pair){ real, slots[f].wrapper };
	return n + 1;
}

size_t wsp_cuda_real_functions(struct wsp_cuda_pair *out, size_t cap, char *driver, size_t driver_cap)
{
	struct find_driver d = { "" };
	dl_iterate_phdr(find_driver_module, &d);
	if (!d.path[0])
		return 0;
	void *h = dlopen(d.path, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return 0;
	snprintf(driver, driver_cap, "%s", d.path);
	dlsym_fn sym = real_dlsym();
	size_t n = 0;
	for (unsigned f = 0; f < F_COUNT; f++)
		n = add_pair(out, n, cap, sym(h, slots[f].symbol), (enum fn)f);
	/* What cudart holds came from cuGetProcAddress, by base name, version
	 * and flags: asked as it asks (each entry point's first version) and
	 * at the driver's own. */
	CUresult (*lookup)(const char *, void **, int, cuuint64_t, int *) =
		(CUresult(*)(const char *, void **, int, cuuint64_t, int *))sym(h, "cuGetProcAddress_v2");
	CUresult (*version_of)(int *) = (CUresult(*)(int *))sym(h, "cuDriverGetVersion");
	int version = 0;
	if (lookup && version_of && version_of(&version) == CUDA_SUCCESS) {
		for (unsigned f = 0; f < F_COUNT; f++) {
			const int versions[2] = { slots[f].min_version, slots[f].max_version ? slots[f].max_version : version };
			for (int v = 0; v < 2; v++) {
				void *p = NULL;
				int status = 0;
				if (versions[v] >= slots[f].min_version &&
				    lookup(slots[f].base, &p, versions[v], slots[f].ptsz ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0,
					   &status) == CUDA_SUCCESS)
					n = add_pair(out, n, cap, p, (enum fn)f);
			}
		}
	}
	dlclose(h);
	return n;
}

static void *cuda_dlsym(void *handle, const char *name)
{
	void *p = real_dlsym()(handle, name);
	int f = p ? slot_by_symbol(name) : -1;
	if (f < 0)
		return p;
	remember((enum fn)f, p);
	return slots[f].wrapper;
}

/* Both glibc versions of dlsym (GLIBC_2.2.5, GLIBC_2.34) bind to this one.
 * Anything but a CUDA name is a tail call, so the real dlsym still sees
 * the program as its caller (RTLD_NEXT depends on it). */
WSPROF_EXPORT void *dlsym(void *handle, const char *name)
{
	if (__builtin_expect(name[0] == 'c' && name[1] == 'u' && (name[2] == 'M' || name[2] == 'G' || name[2] == 'L'), 0))
		return cuda_dlsym(handle, name);
	return real_dlsym()(handle, name);
}

WSPROF_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	REAL(F_GET_PROC, CUresult(*)(const char *, void **, int, cuuint64_t));
	CUresult r = real(symbol, pfn, version, flags);
	if (r == CUDA_SUCCESS && symbol && pfn && *pfn)
		*pfn = wrap_proc(symbol, *pfn, version, flags);
	return r;
}

WSPROF_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags, int *status)
{
	REAL(F_GET_PROC_V2, CUresult(*)(const char *, void **, int, cuuint64_t, int *));
	CUresult r = real(symbol, pfn, version, flags, status);
	if (r == CUDA_SUCCESS && symbol && pfn && *pfn)
		*pfn = wrap_proc(symbol, *pfn, version, flags);
	return r;
}

/* ---- the CUDA runtime (shared libcudart) --------------------------------
 * cudart reaches the driver through the wrappers above, which count its
 * allocations. These only add a failure that never got to the driver
 * (no driver, no device, a bad argument caught by cudart). */

static void note_runtime_failure(unsigned kind, unsigned op, cudaError_t r, size_t size, bool reached)
{
	int e = errno;
	if (r == 0 || reached || !wsp_enter())
		return;
	struct wsp_cuda_tag tag = { -1, 0, 0 };
	wsp_record_cuda_fail(kind, op, size, &tag);
	wsp_writer_flush();
	wsp_leave(e);
}

#define RUNTIME_CALL(name, kind, op, size, sig, ...)                                  \
	static __typeof__(sig) real;                                                  \
	if (!real)                                                                    \
		real = (__typeof__(sig))real_dlsym()(RTLD_NEXT, name);                \
	if (!real)                                                                    \
		return 35; /* cudaErrorInsufficientDriver */                          \
	bool outer = !wsp_tls.cuda_depth++;                                           \
	if (outer)                                                                    \
		wsp_tls.cuda_recorded = false;                                        \
	cudaError_t r = real(__VA_ARGS__);                                            \
	wsp_tls.cuda_depth--;                                                         \
	if (outer)                                                                    \
		note_runtime_failure(kind, op, r, size, wsp_tls.cuda_recorded);       \
	return r

WSPROF_EXPORT cudaError_t cudaMalloc(void **p, size_t size)
{
	RUNTIME_CALL("cudaMalloc", WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CUDA_MALLOC, size,
		     cudaError_t(*)(void **, size_t), p, size);
}

WSPROF_EXPORT cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
	RUNTIME_CALL("cudaMallocPitch", WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CUDA_MALLOC_PITCH, width * height,
		     cudaError_t(*)(void **, size_t *, size_t, size_t), p, pitch, width, height);
}

WSPROF_EXPORT cudaError_t cudaMallocManaged(void **p, size_t size, unsigned flags)
{
	RUNTIME_CALL("cudaMallocManaged", WSPROF_KIND_CUDA_MANAGED, WSPROF_OP_CUDA_MALLOC_MANAGED, size,
		     cudaError_t(*)(void **, size_t, unsigned), p, size, flags);
}

WSPROF_EXPORT cudaError_t cudaMallocHost(void **p, size_t size)
{
	RUNTIME_CALL("cudaMallocHost", WSPROF_KIND_CUDA_HOST, WSPROF_OP_CUDA_MALLOC_HOST, size,
		     cudaError_t(*)(void **, size_t), p, size);
}

WSPROF_EXPORT cudaError_t cudaHostAlloc(void **p, size_t size, unsigned flags)
{
	RUNTIME_CALL("cudaHostAlloc", WSPROF_KIND_CUDA_HOST, WSPROF_OP_CUDA_HOST_ALLOC, size,
		     cudaError_t(*)(void **, size_t, unsigned), p, size, flags);
}

WSPROF_EXPORT cudaError_t cudaHostRegister(void *p, size_t size, unsigned flags)
{
	RUNTIME_CALL("cudaHostRegister", WSPROF_KIND_CUDA_HOST, WSPROF_OP_CUDA_HOST_REGISTER, size,
		     cudaError_t(*)(void *, size_t, unsigned), p, size, flags);
}

WSPROF_EXPORT cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t stream)
{
	RUNTIME_CALL("cudaMallocAsync", WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CUDA_MALLOC_ASYNC, size,
		     cudaError_t(*)(void **, size_t, cudaStream_t), p, size, stream);
}

WSPROF_EXPORT cudaError_t cudaMallocAsync_ptsz(void **p, size_t size, cudaStream_t stream)
{
	RUNTIME_CALL("cudaMallocAsync_ptsz", WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CUDA_MALLOC_ASYNC, size,
		     cudaError_t(*)(void **, size_t, cudaStream_t), p, size, stream);
}

WSPROF_EXPORT cudaError_t cudaMallocFromPoolAsync(void **p, size_t size, cudaMemPool_t pool, cudaStream_t stream)
{
	RUNTIME_CALL("cudaMallocFromPoolAsync", WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CUDA_MALLOC_FROM_POOL_ASYNC, size,
		     cudaError_t(*)(void **, size_t, cudaMemPool_t, cudaStream_t), p, size, pool, stream);
}

WSPROF_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void **p, size_t size, cudaMemPool_t pool,
						       cudaStream_t stream)
{
	RUNTIME_CALL("cudaMallocFromPoolAsync_ptsz", WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CUDA_MALLOC_FROM_POOL_ASYNC,
		     size, cudaError_t(*)(void **, size_t, cudaMemPool_t, cudaStream_t), p, size, pool, stream);
}
