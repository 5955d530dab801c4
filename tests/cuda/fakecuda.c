/*
 * fakecuda.c - a test driver that stands in for libcuda.so.1, so that the
 * CUDA tests run on machines without a GPU.
 *
 * It exports the driver's real versioned entry points (cuda_min.h) and
 * keeps "device" memory in host memory, with exact books: a device of
 * FAKECUDA_CAPACITY bytes (default 256 MiB) whose allocations fail with
 * CUDA_ERROR_OUT_OF_MEMORY, leaving the output untouched, once the sizes
 * asked for would exceed it. Device, managed and cuMemCreate memory count
 * against the capacity; pinned host memory does not.
 *
 * What it guarantees to the tests:
 *   - None of its memory comes from the program's malloc or mmap, which
 *     wsprof traces: one arena is taken with a raw mmap system call and
 *     handed out first-fit, and the rest of its state is static.
 *   - Its entry points never call each other through exported names, and
 *     cuGetProcAddress answers from a static table of its own functions:
 *     a preloaded library that interposes on a driver symbol sees each of
 *     the program's calls exactly once, and a lookup returns this
 *     library's function even when another one exports the same name.
 *   - cuGetProcAddress resolves base names by version and flags as the
 *     real driver does ("cuMemAlloc" from 3020 is cuMemAlloc_v2; flag 2
 *     picks the _ptsz variant). Versions older than the entry points kept
 *     here are refused as not sufficient, where the real driver would
 *     return a legacy function this library does not have; versions newer
 *     than the driver's (13000) are invalid, as the driver documents. An
 *     unknown name gets CUDA_ERROR_NOT_FOUND and a NULL pointer; cuda.h
 *     documents CUDA_SUCCESS with a NULL pointer for _v2, so a recorder
 *     must pass either through unchanged.
 *   - Thread-safe: one mutex guards the books. cuLaunchHostFunc runs the
 *     function on a helper thread, as the real driver does, and returns
 *     once it has run; the function must not call the driver.
 *
 *   - Kernels have parameter layouts spelled by their names and no code
 *     (see "Modules, functions and launches"): enough for a recorder to
 *     read a launch's parameters through cuFuncGetParamInfo.
 *
 * What it leaves out: running kernels, copies, real contexts (one current context
 * for the whole process, never checked), and memory behind cuMemMap'd
 * addresses (reserved address space stays inaccessible).
 */
#include "cuda_min.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DRIVER_VERSION 13000
#define DEFAULT_CAPACITY (256ull << 20)
/* Pinned host memory comes from the same arena, beyond the device's. */
#define HOST_ROOM (1ull << 30)
#define ADDRESS_SPACE (4ull << 30)   /* for cuMemAddressReserve */
#define DEVICE_ALIGN 512
#define HOST_ALIGN 4096
#define RESERVE_ALIGN (2ull << 20)   /* the real driver's granularity */
#define PITCH_ALIGN 512

#define MAX_BLOCKS 4096
#define MAX_RESERVATIONS 256
#define MAX_REGISTRATIONS 256
#define MAX_HANDLES 256
#define MAX_MAPPINGS 256
#define MAX_STREAMS 64
#define MAX_CONTEXTS 16

enum block_kind { BLOCK_DEVICE, BLOCK_MANAGED, BLOCK_HOST, BLOCK_RESERVED };

struct block {
	uintptr_t start;
	size_t size;
	enum block_kind kind;
};

/* A range of addresses handed out first-fit; blocks sorted by address. */
struct region {
	uintptr_t base;
	size_t size;
	struct block *blocks;
	size_t count, cap;
};

struct handle {
	CUmemGenericAllocationHandle id; /* 0: slot free */
	size_t size;
	unsigned mappings;
	bool released;
};

struct mapping {
	uintptr_t start;
	size_t size;
	struct handle *handle;           /* NULL: slot free */
};

struct registration {
	uintptr_t start;
	size_t size;                     /* 0: slot free */
};

struct CUstream_st {
	bool live;
};

struct CUctx_st {
	bool live;
	CUdevice device;
};

struct CUmemPoolHandle_st {
	CUdevice device;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool ready;
static size_t capacity, used;
static struct block arena_blocks[MAX_BLOCKS], reserve_blocks[MAX_RESERVATIONS];
static struct region arena = { .blocks = arena_blocks, .cap = MAX_BLOCKS };
static struct region address_space = { .blocks = reserve_blocks, .cap = MAX_RESERVATIONS };
static struct registration registrations[MAX_REGISTRATIONS];
static struct handle handles[MAX_HANDLES];
static CUmemGenericAllocationHandle last_handle = 0xfa4e0000;
static struct mapping mappings[MAX_MAPPINGS];
static struct CUstream_st streams[MAX_STREAMS];
static struct CUctx_st contexts[MAX_CONTEXTS]; /* [0] is the primary context */
static CUcontext current;
static struct CUmemPoolHandle_st default_pool;

/* --- The arena ------------------------------------------------------- */

static void *map_raw(size_t size, int prot)
{
	long p = syscall(SYS_mmap, NULL, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == -1 ? NULL : (void *)p;
}

static size_t capacity_from_env(void)
{
	const char *s = getenv("FAKECUDA_CAPACITY");
	char *end;
	if (!s || !*s)
		return DEFAULT_CAPACITY;
	unsigned long long v = strtoull(s, &end, 10);
	return *end || v == 0 ? DEFAULT_CAPACITY : (size_t)v;
}

/* Both ranges are taken on first use, so that the capacity can be set
 * by the test that starts the program, and cuGetProcAddress works before
 * cuInit as it does with the real driver. Called with the lock held. */
static CUresult setup_locked(void)
{
	if (ready)
		return CUDA_SUCCESS;
	capacity = capacity_from_env();
	arena.size = capacity + HOST_ROOM;
	address_space.size = ADDRESS_SPACE;
	void *a = map_raw(arena.size, PROT_READ | PROT_WRITE);
	void *r = map_raw(address_space.size, PROT_NONE);
	if (!a || !r)
		return CUDA_ERROR_OUT_OF_MEMORY;
	arena.base = (uintptr_t)a;
	address_space.base = (uintptr_t)r;
	ready = true;
	return CUDA_SUCCESS;
}

static uintptr_t align_up(uintptr_t v, size_t align)
{
	return (v + align - 1) & ~(uintptr_t)(align - 1);
}

/* The first gap of `size` bytes at `align`, or 0. */
static uintptr_t region_take(struct region *r, size_t size, size_t align, enum block_kind kind)
{
	if (r->count == r->cap || size > r->size)
		return 0;
	uintptr_t at = align_up(r->base, align);
	size_t i = 0;
	for (; i < r->count && at + size > r->blocks[i].start; i++)
		at = align_up(r->blocks[i].start + r->blocks[i].size, align);
	if (at + size > r->base + r->size)
		return 0;
	memmove(&r->blocks[i + 1], &r->blocks[i], (r->count - i) * sizeof *r->blocks);
	r->blocks[i] = (struct block){ at, size, kind };
	r->count++;
	return at;
}

static struct block *region_find(struct region *r, uintptr_t start)
{
	for (size_t i = 0; i < r->count; i++)
		if (r->blocks[i].start == start)
			return &r->blocks[i];
	return NULL;
}

static void region_drop(struct region *r, struct block *b)
{
	size_t i = (size_t)(b - r->blocks);
	memmove(&r->blocks[i], &r->blocks[i + 1], (r->count - i - 1) * sizeof *r->blocks);
	r->count--;
}

static bool counts_against_capacity(enum block_kind kind)
{
	return kind == BLOCK_DEVICE || kind == BLOCK_MANAGED;
}

/* Device and managed memory, and pinned host memory. */
static CUresult arena_alloc(uintptr_t *out, size_t size, enum block_kind kind)
{
	if (!out || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	CUresult err = setup_locked();
	bool counted = counts_against_capacity(kind);
	if (!err && counted && size > capacity - used)
		err = CUDA_ERROR_OUT_OF_MEMORY;
	if (!err) {
		uintptr_t at = region_take(&arena, size, counted ? DEVICE_ALIGN : HOST_ALIGN, kind);
		if (at) {
			*out = at;
			if (counted)
				used += size;
		} else {
			err = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* Frees a block of one of the kinds in `accepted` (a bit per kind). */
static CUresult arena_free(uintptr_t p, unsigned accepted)
{
	pthread_mutex_lock(&lock);
	struct block *b = ready ? region_find(&arena, p) : NULL;
	CUresult err = CUDA_ERROR_INVALID_VALUE;
	if (b && (accepted & (1u << b->kind))) {
		if (counts_against_capacity(b->kind))
			used -= b->size;
		region_drop(&arena, b);
		err = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

#define DEVICE_OR_MANAGED ((1u << BLOCK_DEVICE) | (1u << BLOCK_MANAGED))

/* --- Initialization, devices, contexts, streams ------------------------ */

static CUresult init(unsigned int flags)
{
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	CUresult err = setup_locked();
	pthread_mutex_unlock(&lock);
	return err;
}

static CUresult driver_get_version(int *version)
{
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	*version = DRIVER_VERSION;
	return CUDA_SUCCESS;
}

static CUresult device_get_count(int *count)
{
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = 1;
	return CUDA_SUCCESS;
}

static CUresult device_get(CUdevice *device, int ordinal)
{
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = 0;
	return CUDA_SUCCESS;
}

static CUresult primary_ctx_retain(CUcontext *pctx, CUdevice dev)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&lock);
	contexts[0].live = true;
	*pctx = &contexts[0];
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

static CUresult primary_ctx_release(CUdevice dev)
{
	return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	(void)flags;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	CUresult err = CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&lock);
	for (size_t i = 1; i < MAX_CONTEXTS; i++) {
		if (!contexts[i].live) {
			contexts[i] = (struct CUctx_st){ .live = true, .device = dev };
			*pctx = current = &contexts[i];
			err = CUDA_SUCCESS;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static bool context_known(CUcontext ctx)
{
	return ctx >= &contexts[0] && ctx < &contexts[MAX_CONTEXTS] && ctx->live;
}

static CUresult ctx_destroy(CUcontext ctx)
{
	pthread_mutex_lock(&lock);
	CUresult err = context_known(ctx) && ctx != &contexts[0] ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	if (!err) {
		ctx->live = false;
		if (current == ctx)
			current = NULL;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static CUresult ctx_set_current(CUcontext ctx)
{
	pthread_mutex_lock(&lock);
	CUresult err = !ctx || context_known(ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	if (!err)
		current = ctx;
	pthread_mutex_unlock(&lock);
	return err;
}

static CUresult ctx_get_current(CUcontext *pctx)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	*pctx = current;
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

static CUresult ctx_get_device(CUdevice *device)
{
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = 0;
	return CUDA_SUCCESS;
}

static CUresult ctx_synchronize(void)
{
	return CUDA_SUCCESS;
}

/* NULL (the legacy default stream), the two special handles, or a stream
 * made by cuStreamCreate and not destroyed. Called with the lock held. */
static bool stream_known_locked(CUstream s)
{
	if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return true;
	return s >= &streams[0] && s < &streams[MAX_STREAMS] && s->live;
}

static bool stream_known(CUstream s)
{
	pthread_mutex_lock(&lock);
	bool known = stream_known_locked(s);
	pthread_mutex_unlock(&lock);
	return known;
}

static CUresult stream_create(CUstream *ps, unsigned int flags)
{
	(void)flags;
	if (!ps)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult err = CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < MAX_STREAMS; i++) {
		if (!streams[i].live) {
			streams[i].live = true;
			*ps = &streams[i];
			err = CUDA_SUCCESS;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static CUresult stream_destroy(CUstream s)
{
	pthread_mutex_lock(&lock);
	CUresult err = s >= &streams[0] && s < &streams[MAX_STREAMS] && s->live ? CUDA_SUCCESS
										 : CUDA_ERROR_INVALID_HANDLE;
	if (!err)
		s->live = false;
	pthread_mutex_unlock(&lock);
	return err;
}

/* Everything here completes before its call returns. */
static CUresult stream_synchronize(CUstream s)
{
	return stream_known(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult stream_get_ctx(CUstream s, CUcontext *pctx)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!stream_known(s))
		return CUDA_ERROR_INVALID_HANDLE;
	*pctx = &contexts[0];
	return CUDA_SUCCESS;
}

static CUresult device_get_default_mem_pool(CUmemoryPool *pool, CUdevice dev)
{
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*pool = &default_pool;
	return CUDA_SUCCESS;
}

/* --- Device, managed and host memory ----------------------------------- */

static CUresult mem_get_info(size_t *free, size_t *total)
{
	if (!free || !total)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	CUresult err = setup_locked();
	if (!err) {
		*free = capacity - used;
		*total = capacity;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* The output is written only on success. */
static CUresult device_alloc(CUdeviceptr *dptr, size_t bytesize, enum block_kind kind)
{
	uintptr_t at;
	CUresult err = dptr ? arena_alloc(&at, bytesize, kind) : CUDA_ERROR_INVALID_VALUE;
	if (!err)
		*dptr = at;
	return err;
}

static CUresult mem_alloc(CUdeviceptr *dptr, size_t bytesize)
{
	return device_alloc(dptr, bytesize, BLOCK_DEVICE);
}

static CUresult mem_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height, unsigned int element)
{
	if (!dptr || !pitch || !width || !height || (element != 4 && element != 8 && element != 16))
		return CUDA_ERROR_INVALID_VALUE;
	size_t row = align_up(width, PITCH_ALIGN);
	if (height > SIZE_MAX / row)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult err = mem_alloc(dptr, row * height);
	if (!err)
		*pitch = row;
	return err;
}

static CUresult mem_free(CUdeviceptr dptr)
{
	return dptr ? arena_free(dptr, DEVICE_OR_MANAGED) : CUDA_SUCCESS;
}

static CUresult mem_alloc_managed(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	return device_alloc(dptr, bytesize, BLOCK_MANAGED);
}

static CUresult mem_host_alloc(void **pp, size_t bytesize, unsigned int flags)
{
	(void)flags;
	uintptr_t at;
	CUresult err = pp ? arena_alloc(&at, bytesize, BLOCK_HOST) : CUDA_ERROR_INVALID_VALUE;
	if (!err)
		*pp = (void *)at;
	return err;
}

static CUresult mem_alloc_host(void **pp, size_t bytesize)
{
	return mem_host_alloc(pp, bytesize, 0);
}

static CUresult mem_free_host(void *p)
{
	return p ? arena_free((uintptr_t)p, 1u << BLOCK_HOST) : CUDA_SUCCESS;
}

static CUresult mem_host_register(void *p, size_t bytesize, unsigned int flags)
{
	(void)flags;
	if (!p || !bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t start = (uintptr_t)p;
	CUresult err = CUDA_ERROR_OUT_OF_MEMORY;
	struct registration *slot = NULL;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < MAX_REGISTRATIONS; i++) {
		struct registration *r = &registrations[i];
		if (!r->size)
			slot = slot ? slot : r;
		else if (start < r->start + r->size && r->start < start + bytesize)
			err = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	}
	if (err != CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED && slot) {
		*slot = (struct registration){ start, bytesize };
		err = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static CUresult mem_host_unregister(void *p)
{
	CUresult err = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < MAX_REGISTRATIONS; i++) {
		if (registrations[i].size && registrations[i].start == (uintptr_t)p) {
			registrations[i].size = 0;
			err = CUDA_SUCCESS;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* --- Stream-ordered allocation: done at once, which every order allows -- */

static CUresult mem_alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream s)
{
	if (!stream_known(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return mem_alloc(dptr, bytesize);
}

static CUresult mem_alloc_async_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream s)
{
	return mem_alloc_async(dptr, bytesize, s);
}

static CUresult mem_alloc_from_pool_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream s)
{
	if (pool != &default_pool)
		return CUDA_ERROR_INVALID_VALUE;
	return mem_alloc_async(dptr, bytesize, s);
}

static CUresult mem_alloc_from_pool_async_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream s)
{
	return mem_alloc_from_pool_async(dptr, bytesize, pool, s);
}

static CUresult mem_free_async(CUdeviceptr dptr, CUstream s)
{
	if (!stream_known(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return mem_free(dptr);
}

static CUresult mem_free_async_ptsz(CUdeviceptr dptr, CUstream s)
{
	return mem_free_async(dptr, s);
}

/* --- Host functions: one helper thread runs them, one at a time -------- */

static pthread_mutex_t host_fn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t host_fn_cond = PTHREAD_COND_INITIALIZER;
static pthread_once_t host_fn_once = PTHREAD_ONCE_INIT;
static bool host_fn_thread;
static CUhostFn host_fn;
static void *host_fn_data;
static unsigned long host_fn_posted, host_fn_done;

static void *host_fn_worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&host_fn_lock);
	for (;;) {
		while (host_fn_done == host_fn_posted)
			pthread_cond_wait(&host_fn_cond, &host_fn_lock);
		CUhostFn fn = host_fn;
		void *data = host_fn_data;
		pthread_mutex_unlock(&host_fn_lock);
		fn(data);
		pthread_mutex_lock(&host_fn_lock);
		host_fn_done++;
		pthread_cond_broadcast(&host_fn_cond);
	}
	return NULL;
}

static void host_fn_start(void)
{
	pthread_t t;
	host_fn_thread = pthread_create(&t, NULL, host_fn_worker, NULL) == 0;
	if (host_fn_thread)
		pthread_detach(t);
}

static CUresult launch_host_func(CUstream s, CUhostFn fn, void *data)
{
	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	if (!stream_known(s))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_once(&host_fn_once, host_fn_start);
	if (!host_fn_thread) {
		fn(data);
		return CUDA_SUCCESS;
	}
	pthread_mutex_lock(&host_fn_lock);
	while (host_fn_done != host_fn_posted)
		pthread_cond_wait(&host_fn_cond, &host_fn_lock);
	host_fn = fn;
	host_fn_data = data;
	unsigned long mine = ++host_fn_posted;
	pthread_cond_broadcast(&host_fn_cond);
	while (host_fn_done < mine)
		pthread_cond_wait(&host_fn_cond, &host_fn_lock);
	pthread_mutex_unlock(&host_fn_lock);
	return CUDA_SUCCESS;
}

static CUresult launch_host_func_ptsz(CUstream s, CUhostFn fn, void *data)
{
	return launch_host_func(s, fn, data);
}

/* --- Modules, functions and launches ------------------------------------
 * There is no code to run, only parameter layouts. cuModuleLoadData takes
 * any image but NULL and makes a module; cuModuleGetFunction makes a
 * function whose parameters are spelled by its name: "k", then for each
 * parameter, in order, "_" and one of
 *   ptr    8 bytes aligned to 8 (a pointer)
 *   long   8 bytes aligned to 8 (a scalar)
 *   int    4 bytes aligned to 4
 *   char   1 byte
 *   sN     a struct of N bytes (1..1024) aligned to 8
 *   iN     an array of ints, N bytes (a multiple of 4 up to 1024), aligned to 4
 * laid out as a C compiler lays out a struct: "k_char_ptr_int" has offsets
 * 0, 8, 16 and sizes 1, 8, 4; "k" has no parameters. Any other name is
 * CUDA_ERROR_NOT_FOUND. The same name in the same module is the same
 * function. cuModuleUnload ends its module's functions, and function
 * handles are reused first-fit: after an unload, the next function made
 * gets the lowest free handle, an old one, as a real driver may hand out
 * a freed handle again for another kernel.
 *
 * A launch checks its function, stream, dimensions and parameters (either
 * kernelParams, one pointer per parameter, or `extra` with
 * CU_LAUNCH_PARAM_BUFFER_POINTER and CU_LAUNCH_PARAM_BUFFER_SIZE of
 * exactly the parameters' bytes; not both), copies the parameter values
 * into a buffer of its own as the driver does, and does nothing else.
 */

#define MAX_MODULES 16
#define MAX_FUNCTIONS 64
#define MAX_PARAMS 32
#define MAX_FUNCTION_NAME 64
#define MAX_PARAM_BYTES 4096 /* the real driver allows 32764 */

struct CUmod_st {
	bool live;
};

struct CUfunc_st {
	CUmodule module;                 /* NULL: slot free */
	char name[MAX_FUNCTION_NAME];
	unsigned nparams;
	size_t offset[MAX_PARAMS], size[MAX_PARAMS];
	size_t bytes;                    /* all parameters, as laid out */
};

static struct CUmod_st modules[MAX_MODULES];
static struct CUfunc_st functions[MAX_FUNCTIONS];

static bool parse_param(const char *tok, size_t len, size_t *size, size_t *align)
{
	static const struct {
		const char *name;
		size_t size, align;
	} fixed[] = { { "ptr", 8, 8 }, { "long", 8, 8 }, { "int", 4, 4 }, { "char", 1, 1 } };
	for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
		if (strlen(fixed[i].name) == len && memcmp(fixed[i].name, tok, len) == 0) {
			*size = fixed[i].size;
			*align = fixed[i].align;
			return true;
		}
	}
	if (len < 2 || (tok[0] != 's' && tok[0] != 'i'))
		return false;
	size_t n = 0;
	for (size_t i = 1; i < len; i++) {
		if (tok[i] < '0' || tok[i] > '9' || (n = n * 10 + (size_t)(tok[i] - '0')) > 1024)
			return false;
	}
	if (n == 0 || (tok[0] == 'i' && n % 4))
		return false;
	*size = n;
	*align = tok[0] == 's' ? 8 : 4;
	return true;
}

/* The layout a function's name spells (see above). */
static bool parse_function(const char *name, struct CUfunc_st *fn)
{
	if (name[0] != 'k' || strlen(name) >= MAX_FUNCTION_NAME)
		return false;
	size_t at = 0;
	fn->nparams = 0;
	for (const char *p = name + 1; *p;) {
		if (*p != '_' || fn->nparams == MAX_PARAMS)
			return false;
		const char *tok = ++p;
		while (*p && *p != '_')
			p++;
		size_t size, align;
		if (!parse_param(tok, (size_t)(p - tok), &size, &align))
			return false;
		at = align_up(at, align);
		fn->offset[fn->nparams] = at;
		fn->size[fn->nparams++] = size;
		at += size;
	}
	fn->bytes = at;
	strcpy(fn->name, name);
	return at <= MAX_PARAM_BYTES;
}

static bool module_known_locked(CUmodule m)
{
	return m >= &modules[0] && m < &modules[MAX_MODULES] && m->live;
}

static bool function_known_locked(CUfunction f)
{
	return f >= &functions[0] && f < &functions[MAX_FUNCTIONS] && f->module && f->module->live;
}

static CUresult module_load_data(CUmodule *module, const void *image)
{
	if (!module || !image)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult err = CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < MAX_MODULES; i++) {
		if (!modules[i].live) {
			modules[i].live = true;
			*module = &modules[i];
			err = CUDA_SUCCESS;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static CUresult module_unload(CUmodule m)
{
	pthread_mutex_lock(&lock);
	bool known = module_known_locked(m);
	if (known) {
		m->live = false;
		for (size_t i = 0; i < MAX_FUNCTIONS; i++)
			if (functions[i].module == m)
				functions[i] = (struct CUfunc_st){ 0 };
	}
	pthread_mutex_unlock(&lock);
	return known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* The module's function of that name, or else a free slot, or NULL. */
static struct CUfunc_st *function_slot_locked(CUmodule m, const char *name)
{
	struct CUfunc_st *free_slot = NULL;
	for (size_t i = 0; i < MAX_FUNCTIONS; i++) {
		if (functions[i].module == m && strcmp(functions[i].name, name) == 0)
			return &functions[i];
		if (!functions[i].module && !free_slot)
			free_slot = &functions[i];
	}
	return free_slot;
}

static CUresult module_get_function(CUfunction *hfunc, CUmodule m, const char *name)
{
	if (!hfunc || !name)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUfunc_st made = { 0 };
	if (!parse_function(name, &made))
		return CUDA_ERROR_NOT_FOUND;
	made.module = m;
	pthread_mutex_lock(&lock);
	CUresult err = CUDA_ERROR_INVALID_HANDLE;
	if (module_known_locked(m)) {
		struct CUfunc_st *slot = function_slot_locked(m, name);
		err = slot ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
		if (slot && !slot->module)
			*slot = made;
		if (slot)
			*hfunc = slot;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static CUresult func_get_param_info(CUfunction f, size_t index, size_t *offset, size_t *size)
{
	if (!offset || !size)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	CUresult err = !function_known_locked(f) ? CUDA_ERROR_INVALID_HANDLE
		: index >= f->nparams ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	if (!err) {
		*offset = f->offset[index];
		*size = f->size[index];
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* The parameters packed in `extra`, into buffer. */
static CUresult packed_params(void **extra, size_t bytes, unsigned char *buffer)
{
	const void *data = NULL;
	const size_t *size = NULL;
	for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			data = extra[i + 1];
		else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
			size = extra[i + 1];
		else
			return CUDA_ERROR_INVALID_VALUE;
	}
	if (!data || !size || *size != bytes)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(buffer, data, bytes);
	return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, const unsigned dim[6], CUstream s, void **params, void **extra)
{
	unsigned char buffer[MAX_PARAM_BYTES];
	for (int i = 0; i < 6; i++)
		if (dim[i] == 0)
			return CUDA_ERROR_INVALID_VALUE;
	struct CUfunc_st fn;
	pthread_mutex_lock(&lock);
	bool known = function_known_locked(f), stream_ok = stream_known_locked(s);
	if (known)
		fn = *f;
	pthread_mutex_unlock(&lock);
	if (!known || !stream_ok)
		return CUDA_ERROR_INVALID_HANDLE;
	if (params && extra)
		return CUDA_ERROR_INVALID_VALUE;
	if (extra)
		return packed_params(extra, fn.bytes, buffer);
	if (!params && fn.nparams)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < fn.nparams; i++)
		memcpy(buffer + fn.offset[i], params[i], fn.size[i]);
	__asm__ volatile("" : : "r"(buffer) : "memory"); /* the copy is the point */
	return CUDA_SUCCESS;
}

static CUresult launch_kernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
			      unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params,
			      void **extra)
{
	(void)shared;
	return launch(f, (const unsigned[6]){ gx, gy, gz, bx, by, bz }, s, params, extra);
}

static CUresult launch_kernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
				   unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params,
				   void **extra)
{
	return launch_kernel(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
}

static CUresult launch_kernel_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	return launch(f, (const unsigned[6]){ c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
					      c->blockDimZ }, c->hStream, params, extra);
}

static CUresult launch_kernel_ex_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
	return launch_kernel_ex(c, f, params, extra);
}

/* --- Virtual memory management ----------------------------------------- */

static struct handle *handle_find_locked(CUmemGenericAllocationHandle id)
{
	for (size_t i = 0; id && i < MAX_HANDLES; i++)
		if (handles[i].id == id && !handles[i].released)
			return &handles[i];
	return NULL;
}

/* A handle's memory goes back when it is released and no longer mapped. */
static void handle_settle_locked(struct handle *h)
{
	if (h->released && h->mappings == 0) {
		used -= h->size;
		*h = (struct handle){ 0 };
	}
}

static CUresult mem_create(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
			   unsigned long long flags)
{
	if (!handle || !size || !prop || flags || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	CUresult err = setup_locked();
	if (!err && size > capacity - used)
		err = CUDA_ERROR_OUT_OF_MEMORY;
	if (!err) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		for (size_t i = 0; i < MAX_HANDLES; i++) {
			if (!handles[i].id) {
				handles[i] = (struct handle){ .id = ++last_handle, .size = size };
				used += size;
				*handle = last_handle;
				err = CUDA_SUCCESS;
				break;
			}
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static CUresult mem_release(CUmemGenericAllocationHandle id)
{
	pthread_mutex_lock(&lock);
	struct handle *h = handle_find_locked(id);
	if (h) {
		h->released = true;
		handle_settle_locked(h);
	}
	pthread_mutex_unlock(&lock);
	return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult mem_address_reserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
				    unsigned long long flags)
{
	(void)addr; /* only a hint */
	if (!ptr || !size || flags || (alignment & (alignment - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	CUresult err = setup_locked();
	if (!err) {
		uintptr_t at = region_take(&address_space, size, alignment ? alignment : RESERVE_ALIGN, BLOCK_RESERVED);
		if (at)
			*ptr = at;
		else
			err = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static bool mapped_within_locked(uintptr_t start, size_t size)
{
	for (size_t i = 0; i < MAX_MAPPINGS; i++)
		if (mappings[i].handle && mappings[i].start < start + size && start < mappings[i].start + mappings[i].size)
			return true;
	return false;
}

/* The whole reservation, with nothing mapped in it any more. */
static CUresult mem_address_free(CUdeviceptr ptr, size_t size)
{
	pthread_mutex_lock(&lock);
	struct block *b = ready ? region_find(&address_space, ptr) : NULL;
	CUresult err = b && b->size == size && !mapped_within_locked(ptr, size) ? CUDA_SUCCESS
										   : CUDA_ERROR_INVALID_VALUE;
	if (!err)
		region_drop(&address_space, b);
	pthread_mutex_unlock(&lock);
	return err;
}

static bool reserved_locked(uintptr_t start, size_t size)
{
	for (size_t i = 0; i < address_space.count; i++) {
		const struct block *b = &address_space.blocks[i];
		if (b->start <= start && start + size <= b->start + b->size)
			return true;
	}
	return false;
}

/* Part of a handle's memory at reserved addresses that are not mapped yet. */
static CUresult mem_map(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle id,
			unsigned long long flags)
{
	if (!ptr || !size || flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	struct handle *h = handle_find_locked(id);
	CUresult err = CUDA_ERROR_INVALID_VALUE;
	if (h && offset <= h->size && size <= h->size - offset && reserved_locked(ptr, size) &&
	    !mapped_within_locked(ptr, size)) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		for (size_t i = 0; i < MAX_MAPPINGS; i++) {
			if (!mappings[i].handle) {
				mappings[i] = (struct mapping){ ptr, size, h };
				h->mappings++;
				err = CUDA_SUCCESS;
				break;
			}
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* Whole mappings only: the range must be exactly what one or more
 * cuMemMap calls mapped. */
static CUresult mem_unmap(CUdeviceptr ptr, size_t size)
{
	pthread_mutex_lock(&lock);
	size_t covered = 0;
	bool partial = false;
	for (size_t i = 0; i < MAX_MAPPINGS; i++) {
		const struct mapping *m = &mappings[i];
		if (!m->handle || m->start + m->size <= ptr || ptr + size <= m->start)
			continue;
		if (m->start < ptr || ptr + size < m->start + m->size)
			partial = true;
		covered += m->size;
	}
	CUresult err = !partial && size && covered == size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; !err && i < MAX_MAPPINGS; i++) {
		struct mapping *m = &mappings[i];
		if (!m->handle || m->start + m->size <= ptr || ptr + size <= m->start)
			continue;
		struct handle *h = m->handle;
		*m = (struct mapping){ 0 };
		h->mappings--;
		handle_settle_locked(h);
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* --- Errors ------------------------------------------------------------ */

static CUresult get_error_string(CUresult error, const char **str)
{
	static const struct {
		CUresult code;
		const char *text;
	} texts[] = {
		{ CUDA_SUCCESS, "no error" },
		{ CUDA_ERROR_INVALID_VALUE, "invalid argument" },
		{ CUDA_ERROR_OUT_OF_MEMORY, "out of memory" },
		{ CUDA_ERROR_NOT_INITIALIZED, "initialization error" },
		{ CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal" },
		{ CUDA_ERROR_INVALID_HANDLE, "invalid resource handle" },
		{ CUDA_ERROR_NOT_FOUND, "named symbol not found" },
		{ CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped" },
		{ CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region" },
	};
	if (!str)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
		if (texts[i].code == error) {
			*str = texts[i].text;
			return CUDA_SUCCESS;
		}
	}
	*str = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

/* --- Entry points ------------------------------------------------------ */

static CUresult get_proc_address(const char *symbol, void **pfn, int version, cuuint64_t flags);
static CUresult get_proc_address_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
				    CUdriverProcAddressQueryResult *status);

/*
 * Every export: its symbol, the function behind it, the base name
 * cuGetProcAddress knows it by, the first version that gets it, and
 * whether it is the per-thread-default-stream variant. A base name with
 * several rows goes to the newest row the caller's version allows.
 */
#define FAKECUDA_ENTRIES(X)                                                               \
	X(cuInit, init, "cuInit", 2000, 0)                                                \
	X(cuDriverGetVersion, driver_get_version, "cuDriverGetVersion", 2020, 0)          \
	X(cuDeviceGetCount, device_get_count, "cuDeviceGetCount", 2000, 0)                \
	X(cuDeviceGet, device_get, "cuDeviceGet", 2000, 0)                                \
	X(cuDevicePrimaryCtxRetain, primary_ctx_retain, "cuDevicePrimaryCtxRetain", 7000, 0) \
	X(cuDevicePrimaryCtxRelease_v2, primary_ctx_release, "cuDevicePrimaryCtxRelease", 11000, 0) \
	X(cuCtxCreate_v2, ctx_create, "cuCtxCreate", 3020, 0)                             \
	X(cuCtxDestroy_v2, ctx_destroy, "cuCtxDestroy", 4000, 0)                          \
	X(cuCtxSetCurrent, ctx_set_current, "cuCtxSetCurrent", 4000, 0)                   \
	X(cuCtxGetCurrent, ctx_get_current, "cuCtxGetCurrent", 4000, 0)                   \
	X(cuCtxGetDevice, ctx_get_device, "cuCtxGetDevice", 2000, 0)                      \
	X(cuCtxSynchronize, ctx_synchronize, "cuCtxSynchronize", 2000, 0)                 \
	X(cuStreamCreate, stream_create, "cuStreamCreate", 2000, 0)                       \
	X(cuStreamDestroy_v2, stream_destroy, "cuStreamDestroy", 4000, 0)                 \
	X(cuStreamSynchronize, stream_synchronize, "cuStreamSynchronize", 2000, 0)        \
	X(cuStreamGetCtx, stream_get_ctx, "cuStreamGetCtx", 9020, 0)                      \
	X(cuDeviceGetDefaultMemPool, device_get_default_mem_pool, "cuDeviceGetDefaultMemPool", 11020, 0) \
	X(cuMemGetInfo_v2, mem_get_info, "cuMemGetInfo", 3020, 0)                         \
	X(cuMemAlloc_v2, mem_alloc, "cuMemAlloc", 3020, 0)                                \
	X(cuMemAllocPitch_v2, mem_alloc_pitch, "cuMemAllocPitch", 3020, 0)                \
	X(cuMemFree_v2, mem_free, "cuMemFree", 3020, 0)                                   \
	X(cuMemAllocManaged, mem_alloc_managed, "cuMemAllocManaged", 6000, 0)             \
	X(cuMemAllocHost_v2, mem_alloc_host, "cuMemAllocHost", 3020, 0)                   \
	X(cuMemHostAlloc, mem_host_alloc, "cuMemHostAlloc", 2020, 0)                      \
	X(cuMemFreeHost, mem_free_host, "cuMemFreeHost", 2000, 0)                         \
	X(cuMemHostRegister_v2, mem_host_register, "cuMemHostRegister", 6050, 0)          \
	X(cuMemHostUnregister, mem_host_unregister, "cuMemHostUnregister", 4000, 0)       \
	X(cuMemAllocAsync, mem_alloc_async, "cuMemAllocAsync", 11020, 0)                  \
	X(cuMemAllocAsync_ptsz, mem_alloc_async_ptsz, "cuMemAllocAsync", 11020, 1)        \
	X(cuMemAllocFromPoolAsync, mem_alloc_from_pool_async, "cuMemAllocFromPoolAsync", 11020, 0) \
	X(cuMemAllocFromPoolAsync_ptsz, mem_alloc_from_pool_async_ptsz, "cuMemAllocFromPoolAsync", 11020, 1) \
	X(cuMemFreeAsync, mem_free_async, "cuMemFreeAsync", 11020, 0)                     \
	X(cuMemFreeAsync_ptsz, mem_free_async_ptsz, "cuMemFreeAsync", 11020, 1)           \
	X(cuLaunchHostFunc, launch_host_func, "cuLaunchHostFunc", 10000, 0)               \
	X(cuLaunchHostFunc_ptsz, launch_host_func_ptsz, "cuLaunchHostFunc", 10000, 1)     \
	X(cuMemCreate, mem_create, "cuMemCreate", 10020, 0)                               \
	X(cuMemRelease, mem_release, "cuMemRelease", 10020, 0)                            \
	X(cuMemAddressReserve, mem_address_reserve, "cuMemAddressReserve", 10020, 0)      \
	X(cuMemAddressFree, mem_address_free, "cuMemAddressFree", 10020, 0)               \
	X(cuMemMap, mem_map, "cuMemMap", 10020, 0)                                        \
	X(cuMemUnmap, mem_unmap, "cuMemUnmap", 10020, 0)                                  \
	X(cuModuleLoadData, module_load_data, "cuModuleLoadData", 2000, 0)                \
	X(cuModuleUnload, module_unload, "cuModuleUnload", 2000, 0)                       \
	X(cuModuleGetFunction, module_get_function, "cuModuleGetFunction", 2000, 0)       \
	X(cuFuncGetParamInfo, func_get_param_info, "cuFuncGetParamInfo", 12040, 0)        \
	X(cuLaunchKernel, launch_kernel, "cuLaunchKernel", 4000, 0)                       \
	X(cuLaunchKernel_ptsz, launch_kernel_ptsz, "cuLaunchKernel", 4000, 1)             \
	X(cuLaunchKernelEx, launch_kernel_ex, "cuLaunchKernelEx", 11060, 0)               \
	X(cuLaunchKernelEx_ptsz, launch_kernel_ex_ptsz, "cuLaunchKernelEx", 11060, 1)     \
	X(cuGetErrorString, get_error_string, "cuGetErrorString", 6000, 0)                \
	X(cuGetProcAddress, get_proc_address, "cuGetProcAddress", 11030, 0)               \
	X(cuGetProcAddress_v2, get_proc_address_v2, "cuGetProcAddress", 12000, 0)

/* The exported names are aliases of the static functions: calls inside
 * this file, and the table below, never go through a symbol that a
 * preloaded library could take over. */
#define EXPORT(symbol, impl, base, since, ptsz) \
	extern __typeof__(symbol) symbol __attribute__((alias(#impl), visibility("default")));
FAKECUDA_ENTRIES(EXPORT)

static const struct proc {
	const char *name;
	int since;
	bool ptsz;
	void *fn;
} procs[] = {
#define PROC(symbol, impl, base, since, ptsz) { base, since, ptsz, (void *)impl },
	FAKECUDA_ENTRIES(PROC)
};

static bool has_ptsz(const char *name)
{
	for (size_t i = 0; i < sizeof procs / sizeof *procs; i++)
		if (procs[i].ptsz && strcmp(procs[i].name, name) == 0)
			return true;
	return false;
}

static CUresult get_proc_address_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
				    CUdriverProcAddressQueryResult *status)
{
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	if (version > DRIVER_VERSION) {
		*pfn = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
	bool ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && has_ptsz(symbol);
	const struct proc *best = NULL;
	bool named = false;
	for (size_t i = 0; i < sizeof procs / sizeof *procs; i++) {
		const struct proc *p = &procs[i];
		if (p->ptsz != ptsz || strcmp(p->name, symbol) != 0)
			continue;
		named = true;
		if (p->since <= version && (!best || p->since > best->since))
			best = p;
	}
	*pfn = best ? best->fn : NULL;
	if (status)
		*status = best ? CU_GET_PROC_ADDRESS_SUCCESS
			: named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return best ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

static CUresult get_proc_address(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	return get_proc_address_v2(symbol, pfn, version, flags, NULL);
}
