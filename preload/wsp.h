/*
 * wsp.h - what the pieces of libwsprof.so share.
 *
 * The preload library is built from small files in layers, each using
 * only those below it (its header includes the one below; python/ sits
 * between life/ and hooks/):
 *   base/    base.h    bootstrap.c  the real functions behind the hooks (dlsym may allocate)
 *                      config.c     WSPROF_* environment settings (declared here, with wsp_warn)
 *                      mem.c        wsprof's own memory: mmap-backed, never the program's malloc
 *                      threads.c    the threads wsprof starts (every signal blocked)
 *                      fds.c        wsprof's own descriptors, kept high
 *   core/    core.h    events.c     per-thread buffers and the encoding of event records
 *                      stacks.c     unwinding and the shared stack prefix tree
 *                      modules.c    the module map and dlopen/dlclose
 *                      writer.c     the writer thread: sweep, compress, write, footer
 *                      rescue.c     the buffers wsprof record can finish a trace from (src/rescue.h)
 *                      recording.c  the switch: allocations recorded now or not (spans, attach)
 *   access/  access.h  sampler.c    written pages (userfaultfd, PAGEMAP_SCAN), memory given back
 *                      damon.c      DAMON
 *   hooks/   hooks.h   hooks_libc.c the malloc family and mmap/munmap/mremap/mprotect
 *                      hooks_pthread.c  pthread_getattr_np, never asked from a hook
 *                      sampling.c   WSPROF_SAMPLE_BYTES: which heap allocations (and frees) are recorded
 *                      tally.c      ... and the heap's totals counted whole meanwhile (HEAP_TOTALS)
 *                      hooks_cuda.c CUDA driver allocations by every route, the CUDA runtime's failures
 *                      nvtx.c       NVTX memory heaps and ranges
 *                      annotate.c   what the program says about its memory (wsprof.h, NVTX)
 *   life/    life.h    process.c    start, exit, fork and exec, which set up and end all of it
 *                      attach.c     wsprof attach: a running process's calls redirected (GOT), its end
 *                      signals.c    fatal signals finish the trace; the program's view of them
 *   python/  python.h  python.c     a CPython program's Python frames, in their places in its stacks
 *                      pylayout.h   where each CPython version keeps them
 * This file holds what all of them share: the state, the guard, the
 * settings, wsprof's memory.
 *
 * Reentrancy rule for every file: code that runs inside a hook sets the
 * calling thread's guard (wsp_tls.guard) for its whole duration, so that any
 * allocation it causes (libunwind, dlsym, pthread) passes straight through to
 * the real allocator untraced. Nothing here calls the program's malloc.
 *
 * No hook may wait on a lock the program can hold. The locks a hook can
 * meet, and why none of them closes a cycle (each site says so again):
 *   - wsprof's own: a thread's buffer spin lock (never held across a call
 *     that can block), the buffer pool (a thread waits for the writer only
 *     outside every other lock; the writer and anything recording module
 *     or exec records never wait), the module lock (only ever tried), the
 *     writer lock (taken by the writer thread, exec and fork, never inside
 *     a malloc-family hook).
 *   - attach.c's patch lock (an attached process): taken last, inside a
 *     module scan, held across no call that waits.
 *   - the loader's (dlsym, dladdr, dl_iterate_phdr, dlopen RTLD_NOLOAD):
 *     recursive, so a hook running inside dlopen or inside the program's
 *     dl_iterate_phdr callback takes them again; called with no wsprof
 *     lock held, or with the module lock alone, which nobody waits for.
 *   - glibc's pthread attribute lock: never; pthread_getattr_np reallocs
 *     holding it, so hooks never ask it (hooks_pthread.c, no_stack_query).
 *   - another allocator's (jemalloc's init, tcmalloc's heap) or
 *     libunwind's: recording never starts inside an mmap-family call and
 *     never records libunwind's own calls (hooks_libc.c, map_enter).
 *   - stdio and locale: never used (wsp_warn writes with write(2);
 *     snprintf of numbers and strings takes no lock; wsp_strerror does
 *     not translate).
 *   - TLS: wsprof's is initial-exec (-ftls-model=initial-exec), set up
 *     with the program's, and allocates nothing when first touched.
 */
#ifndef WSP_PRELOAD_H
#define WSP_PRELOAD_H


#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "config.h"
#include "launch.h"
#include "rescue.h"
#include "wsprof/trace.h" /* WSPROF_END_* */

#define WSP_TLS __thread __attribute__((tls_model("initial-exec")))
/* The library's interface to the program; everything else is hidden. */
#define WSPROF_EXPORT __attribute__((visibility("default")))

/* ---- state ---------------------------------------------------------- */

enum wsp_state {
	WSP_UNINIT,       /* nothing set up yet */
	WSP_STARTING,     /* one thread is setting up; others pass through */
	WSP_ACTIVE,       /* recording */
	WSP_OFF,          /* finished, failed or not following this process */
};

extern _Atomic int wsp_state;

struct wsp_tls {
	int guard;                 /* >0 while inside wsprof on this thread */
	bool writing;              /* holds the writer lock: must never wait for the writer */
	int cuda_depth;            /* inside a CUDA runtime entry point */
	/* >0: the thread may hold a lock pthread_getattr_np or the allocator
	 * takes (inside the program's pthread_getattr_np, or an allocator's
	 * mmap): stacks.c must not ask for the thread's stack bounds now. */
	int no_stack_query;
	bool cuda_recorded;        /* ... and the driver level recorded its outcome */
	struct wsp_thread *thread; /* this thread's recorder state, lazily made */
	/* Inside a call into CPython's object allocator (python.c,
	 * WSPROF_PYTHON_OBJECTS=1): the libc hooks say whether it reached
	 * them (pyobj_libc), and clear pyobj_old when they free or move it. */
	bool pyobj_watch, pyobj_libc;
	const void *pyobj_old;
};

extern WSP_TLS struct wsp_tls wsp_tls;

/* The libc hooks' part of python.c's watch (see struct wsp_tls). */
static inline void wsp_python_libc_call(const void *old)
{
	if (__builtin_expect(wsp_tls.pyobj_watch, 0)) {
		wsp_tls.pyobj_libc = true;
		if (old && old == wsp_tls.pyobj_old)
			wsp_tls.pyobj_old = NULL;
	}
}

/* Make sure recording is set up. @return true if events should be recorded
 * from this thread now. Call with the guard held. */
bool wsp_ready(void);
bool wsp_is_traced_process(void); /* false in a vfork child sharing our memory */

/* A hook enters wsprof to record: false (and nothing held) when this call
 * must pass untraced - the thread is already inside wsprof, or recording
 * is off. leave() gives back the guard and the program's errno. */
static inline bool wsp_enter(void)
{
	if (wsp_tls.guard)
		return false;
	wsp_tls.guard++;
	if (wsp_ready())
		return true;
	wsp_tls.guard--;
	return false;
}

static inline void wsp_leave(int saved_errno)
{
	wsp_tls.guard--;
	errno = saved_errno;
}

/* ---- config.c ------------------------------------------------------- */

struct wsp_config {
	char output[4096];    /* WSPROF_OUTPUT pattern: %p pid, %e program name, %r rank */
	char manifest[4096];  /* WSPROF_MANIFEST: file to append "pid<TAB>trace path" lines to */
	char rescue[WSP_RESCUE_NAME_MAX + 1]; /* WSPROF_RESCUE: wsprof record's socket (src/rescue.h) */
	unsigned stack_depth; /* WSPROF_STACK_DEPTH, 1..256 */
	unsigned flush_ms;    /* WSPROF_FLUSH_MS, 1..60000 */
	bool follow;          /* WSPROF_FOLLOW: trace forked children and exec'd programs */
	/* WSPROF_FOLLOW_PATTERN: fnmatch patterns, separated by ':'; when
	 * set, only a program whose name (the file exec'd, or the executable
	 * running it; their paths for a pattern with a '/') matches one
	 * records (process.c) */
	char follow_pattern[4096];
	struct wsp_launch job;   /* the process's place in a parallel job (src/launch.h) */
	bool cuda_stream_times; /* WSPROF_CUDA_STREAM_TIMES: also record when streams reach async calls */
	bool access;          /* WSPROF_ACCESS: sample which memory is accessed (default 1) */
	unsigned window_ms;   /* WSPROF_WINDOW_MS: aggregation window, 10..60000, default 100 */
	unsigned max_regions; /* WSPROF_MAX_REGIONS: regions per window at most, 10..10000, default 1000 */
	unsigned sample_us;   /* WSPROF_SAMPLE_US: DAMON's sampling interval, 100..1000000, default 5000 */
	unsigned wp_pages;    /* WSPROF_WP_PAGES: pages write-protected again per window at most, 64..1048576,
			       * default 1536 per 100 ms of window, 256 when sampling heap allocations */
	unsigned release_pages; /* WSPROF_RELEASE_PAGES: pages of memory given back that the hooks read
				 * for writes per window at most (0: none), default 262144 per 100 ms */
	unsigned sample_bytes; /* WSPROF_SAMPLE_BYTES: mean bytes between sampled heap allocations; 0: all */
	unsigned sample_seed; /* WSPROF_SAMPLE_SEED: fixes the sampling gaps (tests); 0: from the clock */
	bool python;          /* WSPROF_PYTHON: record Python frames of a CPython 3.11+ (default 1) */
	bool python_objects;  /* WSPROF_PYTHON_OBJECTS: each small Python object a pool block (default 0) */
	bool start_paused;    /* WSPROF_START=paused: recording starts off (core/recording.c) */
	int toggle_signal;    /* WSPROF_TOGGLE_SIGNAL: the signal that toggles recording; 0 none */
};

/* What the access sampler has (WSPROF_SOURCE_* of include/wsprof/trace.h)
 * and why a source is missing; set by wsp_sampler_probe() before the
 * trace header is written, which names them. */
extern unsigned wsp_access_sources;
extern char wsp_access_note[256];
extern struct wsp_config wsp_cfg;

void wsp_config_load(void);
/* strerror without translation: glibc's strerror goes through gettext,
 * which may lock and allocate where a hook cannot. */
static inline const char *wsp_strerror(int err)
{
	const char *s = strerrordesc_np(err);
	return s ? s : "unknown error";
}
/* One line on stderr, prefixed "wsprof: ", without stdio or malloc. */
void wsp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- mem.c ---------------------------------------------------------- */

void *wsp_pages_alloc(size_t size);   /* zeroed, page-granular, NULL on failure */
void wsp_pages_free(void *p, size_t size);
void *wsp_mem_alloc(size_t size);     /* small zeroed objects that live until exit */
/* The same in whole cache lines of their own: what one thread writes on
 * every event, which must not share a line with another's. */
void *wsp_mem_alloc_lines(size_t size);

/* ---- sequence counts (seqlocks) ------------------------------------- */
/* What a hot path reads without a lock: writers, serialized among
 * themselves by a lock of their own, make the count odd while they change
 * what it guards; a reader takes what it read only if the count was even
 * and is unchanged after. A writer may be descheduled with the count odd:
 * a reader bounds its tries and then waits for the writers' lock, or goes
 * without. */
static inline void wsp_seq_write_begin(_Atomic unsigned *seq)
{
	atomic_store_explicit(seq, atomic_load_explicit(seq, memory_order_relaxed) + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release); /* odd before the stores it guards */
}

static inline void wsp_seq_write_end(_Atomic unsigned *seq)
{
	atomic_store_explicit(seq, atomic_load_explicit(seq, memory_order_relaxed) + 1, memory_order_release);
}

/* @return the count to give wsp_seq_read_ok; odd: a writer is in, read later. */
static inline unsigned wsp_seq_read_begin(_Atomic unsigned *seq)
{
	return atomic_load_explicit(seq, memory_order_acquire);
}

static inline bool wsp_seq_read_ok(_Atomic unsigned *seq, unsigned begun)
{
	atomic_thread_fence(memory_order_acquire); /* the loads it guards before the count's */
	return !(begun & 1) && atomic_load_explicit(seq, memory_order_relaxed) == begun;
}

#endif
