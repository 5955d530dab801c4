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
 * Reentrancy: wrappers call the real function first and record with the
 * guard held, like the libc hooks. Calls made inside wsprof (the guard is
 * set) are not recorded. A failed allocation is written out at once, with
 * a sample of the device's free memory, so a program that aborts right
 * after its out-of-memory error leaves the whole history up to it.
 */
#include "wsp.h"

#include "cuda_api.h"

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
	F_MEM_ADDRESS_RESERVE, F_MEM_ADDRESS_FREE, F_GET_PROC, F_GET_PROC_V2, F_COUNT
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
} drv = { .once = PTHREAD_ONCE_INIT };

static void *driver_handle_of;

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
	return real(p);
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
	CUresult r = real(p, stream);
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
	if (__builtin_expect(name[0] == 'c' && name[1] == 'u' && (name[2] == 'M' || name[2] == 'G'), 0))
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
