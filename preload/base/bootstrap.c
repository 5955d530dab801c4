/*
 * bootstrap.c - find the real allocator and friends behind libwsprof.
 *
 * dlsym(RTLD_NEXT, ...) may itself call calloc/malloc (for its error
 * state) before any real function is known. Those calls are served from a
 * small static pool; free() ignores pool pointers and realloc() copies out
 * of the pool. Resolution happens once, on the first hook call or in the
 * constructor, whichever comes first; it is idempotent and thread-safe
 * enough for that moment (racing threads resolve the same pointers).
 * dlsym takes the loader's lock, which is recursive: resolving from a hook
 * inside dlopen (a constructor that allocates) takes it again; and no
 * wsprof lock is held here, so nothing the lock's holder waits for is.
 */

#include "base.h"
#include <dlfcn.h>
#include <string.h>

struct wsp_real wsp_real;

#define POOL_SIZE (64 * 1024)
static _Alignas(64) unsigned char pool[POOL_SIZE];
static _Atomic size_t pool_used;

/* Each pool block is preceded by 16 bytes holding its size. */
void *wsp_bootstrap_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	if (size > POOL_SIZE || (align & (align - 1)))
		return NULL;
	size_t old = atomic_load(&pool_used), start, end;
	do {
		start = (old + 16 + align - 1) & ~(align - 1);
		end = start + size;
		if (end > POOL_SIZE)
			return NULL;
	} while (!atomic_compare_exchange_weak(&pool_used, &old, end));
	memcpy(pool + start - sizeof(size_t), &size, sizeof size);
	memset(pool + start, 0, size);
	return pool + start;
}

bool wsp_bootstrap_owns(const void *p)
{
	return (const unsigned char *)p >= pool && (const unsigned char *)p < pool + POOL_SIZE;
}

size_t wsp_bootstrap_size(const void *p)
{
	size_t n;
	memcpy(&n, (const unsigned char *)p - sizeof n, sizeof n);
	return n;
}

#define RESOLVE(name) wsp_real.name = (__typeof__(wsp_real.name))dlsym(scope, #name)

static void resolve_in(void *scope)
{
	RESOLVE(free);
	RESOLVE(malloc);
	RESOLVE(calloc);
	RESOLVE(realloc);
	RESOLVE(posix_memalign);
	RESOLVE(aligned_alloc);
	RESOLVE(memalign);
	RESOLVE(valloc);
	RESOLVE(pvalloc);
	RESOLVE(mmap);
	RESOLVE(munmap);
	RESOLVE(mprotect);
	RESOLVE(mremap);
	RESOLVE(dlopen);
	RESOLVE(dlclose);
	RESOLVE(execve);
	RESOLVE(execvpe);
	RESOLVE(fexecve);
	RESOLVE(_exit);
	RESOLVE(malloc_usable_size);
	RESOLVE(pthread_getattr_np);
}

void wsp_real_resolve(void)
{
	static _Atomic bool done, resolving;
	if (atomic_load_explicit(&done, memory_order_acquire) || atomic_exchange(&resolving, true))
		return; /* done, or dlsym is allocating: the caller falls back to the pool */
	resolve_in(RTLD_NEXT);
	atomic_store_explicit(&done, true, memory_order_release);
}

/* Loaded into a running process (life/attach.c), wsprof comes last in the
 * global scope, where RTLD_NEXT finds nothing: the real functions are the
 * ones the program's own calls reach. Called before any hook is. */
void wsp_real_resolve_global(void)
{
	wsp_real_resolve();
	resolve_in(RTLD_DEFAULT);
}
