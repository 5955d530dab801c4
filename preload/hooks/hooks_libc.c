/*
 * hooks_libc.c - the malloc family and mmap/munmap/mremap, as seen by the
 * traced program.
 *
 * Every hook calls the real function and records what happened (of the
 * heap, with WSPROF_SAMPLE_BYTES, only the sampled blocks: sampling.c). Order
 * matters for the global sequence (doc/trace-format.md): a release is
 * recorded before the memory is given back, an allocation after it was
 * obtained. errno is preserved across recording. A call made while the
 * thread is already inside wsprof (the guard) passes straight through, as
 * does every call before the real functions are known (served from the
 * bootstrap pool, see bootstrap.c). While recording is off
 * (core/recording.c) allocations pass through unrecorded; releases are
 * still recorded (a realloc's old block is a FREE once the call
 * succeeded, an mremap an UNMAP of the old range).
 *
 * C++ operator new/delete reach these through libstdc++, which calls
 * malloc/free; glibc's own mmaps for large blocks use an internal entry
 * point and stay part of `heap`.
 */
/* Define mmap and mmap64 both: no large-file redirection of one to the other. */
#undef _FILE_OFFSET_BITS

#include "hooks.h"
#include "base.h"
#include "core.h"
#include "access.h"
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wsprof/trace.h"


#define HEAP WSPROF_KIND_HEAP
#define MMAP WSPROF_KIND_MMAP

/* mmap, munmap, mremap and mprotect are what allocators call from inside their own
 * critical sections: jemalloc while it initialises, tcmalloc growing its
 * heap while it unwinds with libunwind, libunwind filling its memory pools.
 * So such a call never starts recording (the start creates threads, which
 * allocate: they would come back into the allocator that holds its lock),
 * and one made by libunwind itself is never recorded (recording unwinds
 * with libunwind, which would wait on the lock its caller holds). Both
 * pass untraced; recording starts at the next malloc-family call, outside
 * the allocator, or in wsprof's constructor. A call that is recorded
 * never asks for the thread's stack bounds (no_stack_query): glibc's
 * answer reallocs, into the allocator whose lock may be held. */
static inline bool map_record_enter(void)
{
	if (!wsp_enter())
		return false;
	wsp_tls.no_stack_query++;
	return true;
}

static inline bool map_enter(uintptr_t caller)
{
	int s = atomic_load_explicit(&wsp_state, memory_order_acquire);
	if (!wsp_tls.guard && (s == WSP_UNINIT || (s == WSP_ACTIVE && wsp_addr_in_unwinder(caller)))) {
		atomic_fetch_add_explicit(&wsp_untraced_calls, 1, memory_order_relaxed);
		return false;
	}
	return map_record_enter();
}

static inline void map_leave(int e)
{
	wsp_tls.no_stack_query--;
	wsp_leave(e);
}

/* Address space a runtime reserves (the JVM's and Go's heaps, V8's
 * cages) is not memory until it is committed: PROT_NONE or MAP_NORESERVE
 * makes a reservation (doc/trace-format.md, mmap_reserved). */
static unsigned map_kind(int prot, int flags)
{
	return prot == PROT_NONE || (flags & MAP_NORESERVE) ? WSPROF_KIND_MMAP_RESERVED : MMAP;
}

static void note_map(void *p, size_t size, int prot, int flags, uintptr_t caller)
{
	if (!wsp_recording_on())
		return;
	int e = errno;
	if (!map_enter(caller))
		return;
	if (p)
		wsp_record_alloc(map_kind(prot, flags), WSPROF_OP_MMAP, p, size);
	else
		wsp_record_fail(map_kind(prot, flags), WSPROF_OP_MMAP, size);
	map_leave(e);
}

/* A heap block sampled (every one without WSPROF_SAMPLE_BYTES, see
 * sampling.c): recorded, and remembered so that its free is too. */
static void record_sampled(unsigned op, void *p, size_t size)
{
	if (wsp_cfg.sample_bytes)
		wsp_sample_remember(p);
	wsp_record_alloc(HEAP, op, p, size);
}

static __attribute__((noinline)) void record_heap_alloc(unsigned op, void *p, size_t size, bool decided)
{
	int e = errno;
	if (!wsp_enter())
		return;
	if (!p)
		wsp_record_fail(HEAP, op, size);
	else if (decided || wsp_sample_take(size))
		record_sampled(op, p, size);
	wsp_leave(e);
}

/* A heap allocation: recorded if sampled; a failure always. One that
 * sampling passes over costs the countdown and nothing else, inline
 * (before the settings are read, sampling decides after wsp_enter). */
static inline void note_heap_alloc(unsigned op, void *p, size_t size)
{
	if (wsp_tally_on() && p)
		wsp_tally_alloc(p, size);
	if (!wsp_recording_on())
		return; /* not recorded: not remembered as sampled either */
	bool decided = p && wsp_cfg.sample_bytes && !wsp_tls.guard;
	if (!decided || wsp_sample_take(size))
		record_heap_alloc(op, p, size, decided);
}

/* A large heap block about to be freed: what was written of it since the
 * last window, read now, as the allocator may give its pages back at once
 * (glibc unmaps a block it served by mmap). The size is the allocator's
 * own (wsp_usable_size: malloc_usable_size, which reads the block's header
 * and takes no lock in glibc, jemalloc or tcmalloc, or glibc's header read
 * directly). */
static void release_heap_block(void *p)
{
	if (atomic_load_explicit(&wsp_release_fd, memory_order_relaxed) < 0)
		return;
	size_t n = wsp_usable_size(p);
	if (n >= WSP_RELEASE_MIN)
		wsp_sampler_release((uintptr_t)p, n);
}

static __attribute__((noinline)) void record_free(unsigned op, void *p)
{
	int e = errno;
	if (!wsp_enter())
		return;
	if (wsp_sample_release(p)) {
		release_heap_block(p);
		wsp_record_free(HEAP, op, p);
	}
	wsp_leave(e);
}

/* With sampling, the free of a block not sampled costs one lookup. */
static inline void note_free(unsigned op, void *p)
{
	if (wsp_tally_on())
		wsp_tally_freed(wsp_usable_size(p));
	if (!wsp_cfg.sample_bytes || wsp_sample_maybe_live(p))
		record_free(op, p);
}

static inline bool need_real(void *fn)
{
	if (__builtin_expect(fn != NULL, 1))
		return false;
	wsp_real_resolve();
	return true;
}

WSPROF_EXPORT void *malloc(size_t size)
{
	if (need_real((void *)wsp_real.malloc) && !wsp_real.malloc)
		return wsp_bootstrap_alloc(size, 16);
	wsp_python_libc_call(NULL);
	void *p = wsp_real.malloc(size);
	note_heap_alloc(WSPROF_OP_MALLOC, p, size);
	return p;
}

WSPROF_EXPORT void *calloc(size_t n, size_t size)
{
	if (need_real((void *)wsp_real.calloc) && !wsp_real.calloc)
		return n && size > SIZE_MAX / n ? NULL : wsp_bootstrap_alloc(n * size, 16);
	wsp_python_libc_call(NULL);
	void *p = wsp_real.calloc(n, size);
	size_t total;
	note_heap_alloc(WSPROF_OP_CALLOC, p, __builtin_mul_overflow(n, size, &total) ? SIZE_MAX : total);
	return p;
}

static void free_with(unsigned op, void *p)
{
	if (!p || wsp_bootstrap_owns(p))
		return;
	if (need_real((void *)wsp_real.free) && !wsp_real.free)
		return;
	wsp_python_libc_call(p);
	note_free(op, p);
	wsp_real.free(p);
}

WSPROF_EXPORT void free(void *p)
{
	free_with(WSPROF_OP_FREE, p);
}

WSPROF_EXPORT void cfree(void *p)
{
	free_with(WSPROF_OP_CFREE, p);
}

/* A block from the bootstrap pool moves to the real allocator. */
static void *out_of_pool(void *old, size_t size)
{
	size_t keep = wsp_bootstrap_size(old);
	void *p = malloc(size);
	if (p)
		memcpy(p, old, keep < size ? keep : size);
	return p;
}

/* realloc and reallocarray: the old block is released (MOVE, or FREE when
 * the new size is 0 and glibc frees it) before the call, and the outcome
 * recorded after it. Both go to the real realloc: glibc's reallocarray
 * calls realloc through its PLT, which would land in our hook again.
 * With sampling, the old block is released only if it was sampled, and
 * the new one is a fresh sampling decision, taken before the call; a
 * sampled old block whose successor is not sampled ends its MOVE with a
 * FREE of the same address (doc/trace-format.md). */
static void *resize(unsigned op, void *old, size_t size)
{
	int e = errno;
	bool tally = wsp_tally_on();
	size_t old_given = tally ? wsp_usable_size(old) : 0;
	bool rec = wsp_enter(), old_rec = false, new_rec = false, on = wsp_recording_on();
	if (rec) {
		old_rec = wsp_sample_release(old);
		if (old_rec)
			release_heap_block(old);
		if (size == 0 && old_rec)
			wsp_record_free(HEAP, op, old);
		else if (size != 0) {
			/* While off, the old block's FREE follows the call. */
			new_rec = on && wsp_sample_take(size);
			if (old_rec && on)
				wsp_record_move(HEAP, op, old, 0);
		}
		wsp_leave(e);
	}
	void *p = wsp_real.realloc(old, size);
	if (tally && (p || size == 0)) { /* freed, or moved; a failure leaves it */
		e = errno;
		wsp_tally_freed(old_given);
		if (p)
			wsp_tally_alloc(p, size);
		errno = e;
	}
	if (rec && size != 0) {
		e = errno;
		if (wsp_enter()) {
			if (!p) {
				wsp_record_fail(HEAP, op, size);
				if (old_rec && wsp_cfg.sample_bytes) /* the old block stays, sampled */
					wsp_sample_remember(old);
			} else if (new_rec) {
				record_sampled(op, p, size);
			} else if (old_rec) {
				wsp_record_free(HEAP, op, old);
			}
			wsp_leave(e);
		}
	}
	return p;
}

static void *realloc_as(unsigned op, void *old, size_t size)
{
	if (need_real((void *)wsp_real.realloc) && !wsp_real.realloc) {
		void *p = wsp_bootstrap_alloc(size, 16);
		if (p && old)
			memcpy(p, old, wsp_bootstrap_size(old) < size ? wsp_bootstrap_size(old) : size);
		return p;
	}
	if (old && wsp_bootstrap_owns(old))
		return out_of_pool(old, size);
	wsp_python_libc_call(old);
	if (!old) {
		void *p = wsp_real.realloc(NULL, size);
		note_heap_alloc(op, p, size);
		return p;
	}
	return resize(op, old, size);
}

WSPROF_EXPORT void *realloc(void *old, size_t size)
{
	return realloc_as(WSPROF_OP_REALLOC, old, size);
}

WSPROF_EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		note_heap_alloc(WSPROF_OP_REALLOCARRAY, NULL, SIZE_MAX);
		errno = ENOMEM;
		return NULL; /* as glibc: the old block stays */
	}
	return realloc_as(WSPROF_OP_REALLOCARRAY, old, total);
}

WSPROF_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (need_real((void *)wsp_real.posix_memalign) && !wsp_real.posix_memalign) {
		*out = wsp_bootstrap_alloc(size, align);
		return *out ? 0 : ENOMEM;
	}
	int r = wsp_real.posix_memalign(out, align, size);
	note_heap_alloc(WSPROF_OP_POSIX_MEMALIGN, r == 0 ? *out : NULL, size);
	return r;
}

WSPROF_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	if (need_real((void *)wsp_real.aligned_alloc) && !wsp_real.aligned_alloc)
		return wsp_bootstrap_alloc(size, align);
	void *p = wsp_real.aligned_alloc(align, size);
	note_heap_alloc(WSPROF_OP_ALIGNED_ALLOC, p, size);
	return p;
}

WSPROF_EXPORT void *memalign(size_t align, size_t size)
{
	if (need_real((void *)wsp_real.memalign) && !wsp_real.memalign)
		return wsp_bootstrap_alloc(size, align);
	void *p = wsp_real.memalign(align, size);
	note_heap_alloc(WSPROF_OP_MEMALIGN, p, size);
	return p;
}

WSPROF_EXPORT void *valloc(size_t size)
{
	if (need_real((void *)wsp_real.valloc) && !wsp_real.valloc)
		return wsp_bootstrap_alloc(size, 4096);
	void *p = wsp_real.valloc(size);
	note_heap_alloc(WSPROF_OP_VALLOC, p, size);
	return p;
}

WSPROF_EXPORT void *pvalloc(size_t size)
{
	if (need_real((void *)wsp_real.pvalloc) && !wsp_real.pvalloc)
		return wsp_bootstrap_alloc((size + 4095) & ~(size_t)4095, 4096);
	void *p = wsp_real.pvalloc(size);
	note_heap_alloc(WSPROF_OP_PVALLOC, p, size);
	return p;
}

/* ---- mmap family ---------------------------------------------------- */

/* Before the real functions are known (another thread is resolving them),
 * the kernel serves these directly. */
static void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static int sys_munmap(void *addr, size_t len)
{
	return (int)syscall(SYS_munmap, addr, len);
}

static void *sys_mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	void *want = va_arg(ap, void *);
	va_end(ap);
	return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, want);
}

static inline void *map_from(uintptr_t caller, void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (need_real((void *)wsp_real.mmap) && !wsp_real.mmap)
		return sys_mmap(addr, len, prot, flags, fd, off);
	void *p = wsp_real.mmap(addr, len, prot, flags, fd, off);
	note_map(p == MAP_FAILED ? NULL : p, len, prot, flags, caller);
	return p;
}

WSPROF_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return map_from((uintptr_t)__builtin_return_address(0), addr, len, prot, flags, fd, off);
}

WSPROF_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return map_from((uintptr_t)__builtin_return_address(0), addr, len, prot, flags, fd, off);
}

WSPROF_EXPORT int munmap(void *addr, size_t len)
{
	if (need_real((void *)wsp_real.munmap) && !wsp_real.munmap)
		return sys_munmap(addr, len);
	int e = errno;
	if (len && ((uintptr_t)addr & 4095) == 0 && map_enter((uintptr_t)__builtin_return_address(0))) {
		wsp_sampler_release((uintptr_t)addr, len);
		wsp_record_unmap(addr, len);
		map_leave(e);
	}
	return wsp_real.munmap(addr, len);
}

/* Making part of a reservation accessible commits it; PROT_NONE gives
 * committed memory back to the reservation (the model moves only the part
 * on the other side: a JIT flipping its code between writable and
 * executable changes nothing). Recorded once the call succeeded. */
WSPROF_EXPORT int mprotect(void *addr, size_t len, int prot)
{
	if (need_real((void *)wsp_real.mprotect) && !wsp_real.mprotect)
		return (int)syscall(SYS_mprotect, addr, len, prot);
	int r = wsp_real.mprotect(addr, len, prot);
	int e = errno;
	if (r == 0 && len && ((uintptr_t)addr & 4095) == 0 && map_enter((uintptr_t)__builtin_return_address(0))) {
		size_t pages = (len + 4095) & ~(size_t)4095;
		wsp_record_alloc(prot == PROT_NONE ? WSPROF_KIND_MMAP_RESERVED : MMAP, WSPROF_OP_MPROTECT, addr, pages);
		map_leave(e);
	}
	return r;
}

WSPROF_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *(*real_mremap)(void *, size_t, size_t, int, ...) = wsp_real.mremap;
	if (need_real((void *)real_mremap) && !(real_mremap = wsp_real.mremap))
		real_mremap = sys_mremap;
	void *want = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
	}
	/* old_len 0 duplicates a shared mapping: the old one stays. */
	int e = errno;
	bool rec = map_enter((uintptr_t)__builtin_return_address(0)), on = wsp_recording_on();
	if (rec) {
		if (old_len && on) {
			wsp_sampler_release((uintptr_t)old, old_len);
			wsp_record_move(MMAP, WSPROF_OP_MREMAP, old, old_len);
		}
		map_leave(e);
	}
	void *p = real_mremap(old, old_len, new_len, flags, want);
	if (rec) {
		e = errno;
		if (map_record_enter()) { /* the call was let in above */
			if (!on) { /* not recording the new mapping: the old one is gone */
				if (p != MAP_FAILED && old_len)
					wsp_record_unmap(old, old_len);
			} else if (p != MAP_FAILED)
				wsp_record_alloc(MMAP, WSPROF_OP_MREMAP, p, new_len);
			else
				wsp_record_fail(MMAP, WSPROF_OP_MREMAP, new_len);
			map_leave(e);
		}
	}
	return p;
}
