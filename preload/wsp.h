/*
 * wsp.h - what the pieces of libwsprof.so share.
 *
 * The preload library is built from small files by concern:
 *   bootstrap.c  finding the real allocator functions (dlsym may allocate)
 *   mem.c        wsprof's own memory: mmap-backed, never the program's malloc
 *   config.c     WSPROF_* environment settings
 *   events.c     per-thread buffers and the encoding of event records
 *   stacks.c     unwinding and the shared stack prefix tree
 *   writer.c     the writer thread: sweep, compress, write, footer
 *   modules.c    the module map and dlopen/dlclose
 *   process.c    start, exit, fork and exec
 *   rescue.c     the buffers wsprof record can finish a trace from (src/rescue.h)
 *   threads.c    the threads wsprof starts (every signal blocked)
 *   signals.c    fatal signals finish the trace; the program's view of them
 *   sampler.c    access sampling: written pages (userfaultfd, PAGEMAP_SCAN), memory given back
 *   damon.c      access sampling with DAMON
 *   nvtx.c       NVTX memory heaps and ranges
 *   fds.c        wsprof's own descriptors, kept high
 *   hooks_libc.c the malloc family and mmap/munmap/mremap/mprotect
 *   sampling.c   WSPROF_SAMPLE_BYTES: which heap allocations (and frees) are recorded
 *   hooks_cuda.c CUDA driver allocations by every route, the CUDA runtime's failures
 *   annotate.c   what the program says about its memory (wsprof.h, NVTX)
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
};
extern WSP_TLS struct wsp_tls wsp_tls;

/* Make sure recording is set up. @return true if events should be recorded
 * from this thread now. Call with the guard held. */
bool wsp_ready(void);

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
	char output[4096];    /* WSPROF_OUTPUT pattern: %p pid, %e program name */
	char manifest[4096];  /* WSPROF_MANIFEST: file to append "pid<TAB>trace path" lines to */
	char rescue[WSP_RESCUE_NAME_MAX + 1]; /* WSPROF_RESCUE: wsprof record's socket (src/rescue.h) */
	unsigned stack_depth; /* WSPROF_STACK_DEPTH, 1..256 */
	unsigned flush_ms;    /* WSPROF_FLUSH_MS, 1..60000 */
	bool follow;          /* WSPROF_FOLLOW: trace forked children and exec'd programs */
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

/* ---- bootstrap.c ---------------------------------------------------- */

struct wsp_real {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	int (*mprotect)(void *, size_t, int);
	void *(*mremap)(void *, size_t, size_t, int, ...);
	void *(*dlopen)(const char *, int);
	int (*dlclose)(void *);
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	void (*_exit)(int);
	size_t (*malloc_usable_size)(void *);
	int (*pthread_getattr_np)(pthread_t, pthread_attr_t *);
};
extern struct wsp_real wsp_real;

/* Resolve the real functions once. While dlsym runs, allocations are
 * served from a static pool. */
void wsp_real_resolve(void);
bool wsp_bootstrap_owns(const void *p);
void *wsp_bootstrap_alloc(size_t size, size_t align);
size_t wsp_bootstrap_size(const void *p);

/* ---- hooks_libc.c ---------------------------------------------------- */

/* The program's calls that passed through untraced because recording them
 * could wait on a lock their caller holds (mmap before recording began,
 * from libunwind's code): the footer says how many. */
extern _Atomic uint64_t wsp_untraced_calls;

/* ---- mem.c ---------------------------------------------------------- */

void *wsp_pages_alloc(size_t size);   /* zeroed, page-granular, NULL on failure */
void wsp_pages_free(void *p, size_t size);
void *wsp_mem_alloc(size_t size);     /* small zeroed objects that live until exit */

/* ---- sampling.c ----------------------------------------------------- */

/* Bytes the calling thread may still allocate before its next sample. */
extern WSP_TLS int64_t wsp_sample_left;
/* The countdown reached zero (or the thread starts). @return sampled. */
bool wsp_sample_crossed(uint64_t size);

/* Is a heap allocation of `size` bytes recorded? Always without
 * WSPROF_SAMPLE_BYTES; with it, counts the bytes down and says whether
 * this one is sampled (a new gap is then drawn). Touches nothing but the
 * thread's countdown: safe with or without the guard. */
static inline bool wsp_sample_take(size_t size)
{
	if (__builtin_expect(!wsp_cfg.sample_bytes, 1))
		return true;
	int64_t s = size > (size_t)INT64_MAX ? INT64_MAX : size ? (int64_t)size : 1;
	int64_t left = wsp_sample_left - s;
	if (left > 0) {
		wsp_sample_left = left;
		return false;
	}
	return wsp_sample_crossed((uint64_t)s);
}

/* A sampled block now lives at p: its free is to be recorded. Call with
 * the guard held (the set's locks must not meet a handler that frees). */
void wsp_sample_remember(const void *p);
/* Forget p if it is a sampled block. @return whether its free is
 * recorded. Call with the guard held. */
bool wsp_sample_forget(const void *p);
/* Without taking a lock, safe anywhere: may p be a live sampled block
 * (or is every free recorded)? false: its free is not recorded. */
bool wsp_sample_maybe_live(const void *p);

/* Is the free (or realloc) of the heap block at p recorded? Always
 * without sampling; with it, when p is a live sampled block, which it
 * then no longer is. Call with the guard held. */
static inline bool wsp_sample_release(const void *p)
{
	return __builtin_expect(!wsp_cfg.sample_bytes, 1) || wsp_sample_forget(p);
}

/* Around fork: the set is consistent in the child (it keeps the parent's
 * sampled blocks, whose frees are then untracked frees, as unsampled). */
void wsp_sample_lock_all(void);
void wsp_sample_unlock_all(void);

/* ---- events.c ------------------------------------------------------- */

/* struct wsp_buf is in src/rescue.h: wsprof record reads buffers too. */
#define WSP_BUF_SIZE (128 * 1024)
#define WSP_BUF_MAX_BYTES (64u << 20) /* the pool, beyond which threads wait for the writer */

struct wsp_thread {
	atomic_flag lock;          /* held while appending; taken by the writer to steal */
	struct wsp_buf *buf;       /* current buffer, NULL when none */
	/* A lower bound of the numbers of the events in buf, published before
	 * any of them takes its number; UINT64_MAX when nothing is held back.
	 * The writer reads it without the lock to place its watermark. */
	_Atomic uint64_t floor;
	uint32_t tid;
	bool dead;                 /* the thread exited; the entry may be reused */
	uint64_t prev_seq, prev_time, prev_addr; /* delta bases of the open segment */
	struct wsp_stack_cache *cache;
	struct wsp_unwind_memo *memo; /* the thread's last unwinds (stacks.c) */
	struct wsp_thread *next;   /* registry link */
};

struct wsp_thread *wsp_thread_self(void);

/* Open an event of at most `need` bytes (stack records included) in the
 * calling thread's buffer. @return where to write, with the thread's lock
 * held, or NULL if recording stopped. The event's sequence number and time
 * are taken inside the lock (see doc/trace-format.md, Ordering). */
uint8_t *wsp_event_begin(struct wsp_thread *t, size_t need);
/* counted: the record is an event (ALLOC, FREE, MOVE, FAIL, UNMAP). */
void wsp_event_end(struct wsp_thread *t, uint8_t *end, bool counted);
/* Write the sequence/time deltas of a new event at p. */
uint8_t *wsp_event_stamp(struct wsp_thread *t, uint8_t *p);
uint64_t wsp_now_ns(void);  /* monotonic ns since the process (image) started */
/* Write an address as the delta from the previous one of the segment. */
uint8_t *wsp_put_addr(struct wsp_thread *t, uint8_t *p, uint64_t addr);

/* Buffers are handed to the writer through one queue. */
struct wsp_buf *wsp_buf_get(void);          /* may wait for the writer */
void wsp_buf_put(struct wsp_buf *b);        /* back to the free pool */
void wsp_buf_release_waiters(void);
void wsp_buf_enqueue(struct wsp_buf *b);    /* full or stolen: to be written */
void wsp_buf_on_queue(void (*wake)(void));  /* who drains the queue: woken when a buffer is queued */
struct wsp_buf *wsp_buf_dequeue_all(void);  /* FIFO list, writer only */
/* Take every thread's partial buffer into the queue. @return the sequence
 * watermark: every event below it is now queued or written. */
uint64_t wsp_threads_sweep(void);
/* The lowest sequence number that may still sit in a thread's buffer:
 * everything below it is queued or written. Queues the buffers of quiet
 * threads that would hold it far back. */
uint64_t wsp_threads_watermark(void);
void wsp_events_reset_after_fork(void);
void wsp_events_lock_all(void);
void wsp_events_unlock_all(void);

extern _Atomic uint64_t wsp_seq;
extern uint64_t wsp_start_mono, wsp_start_real;

/* High-level records, each called with the guard held. */
void wsp_record_alloc(unsigned kind, unsigned op, const void *addr, size_t size);
void wsp_record_free(unsigned kind, unsigned op, const void *addr);
void wsp_record_move(unsigned kind, unsigned op, const void *addr, size_t old_size);
void wsp_record_fail(unsigned kind, unsigned op, size_t size);
void wsp_record_unmap(const void *addr, size_t len);
void wsp_record_fork(pid_t child);
/* A record of one varint value after the stamp (FORK, MODULE_UNLOAD, RSS). */
void wsp_record_value(unsigned type, uint64_t value);

/* CUDA: which device (-1: unknown), stream and VMM handle an event concerns. */
struct wsp_cuda_tag {
	int device;
	uint64_t stream;
	uint64_t handle;
};
void wsp_record_cuda_alloc(unsigned kind, unsigned op, uint64_t addr, size_t size, const struct wsp_cuda_tag *tag);
void wsp_record_cuda_fail(unsigned kind, unsigned op, size_t size, const struct wsp_cuda_tag *tag);
void wsp_record_cuda_free(unsigned kind, unsigned op, uint64_t addr, const struct wsp_cuda_tag *tag);
/* Release an address range of a range kind (mmap, CUDA VMM mappings and reservations). */
void wsp_record_range_release(unsigned kind, unsigned op, uint64_t addr, size_t len);
void wsp_record_stream_reached(unsigned kind, unsigned op, uint64_t addr, uint64_t stream);
void wsp_record_device_memory(int device, uint64_t free_bytes, uint64_t total_bytes);

/* Access samples (sampler.c, and kernel launches in hooks_cuda.c). Regions
 * sorted by address, not overlapping; at most a few thousand per record
 * (the buffer must hold n * 20 bytes). */
struct wsp_range {
	uint64_t start, len;
};
void wsp_record_access(unsigned source, uint64_t window_ns, const struct wsp_range *regions, size_t n);
void wsp_record_rss(uint64_t bytes);
void wsp_record_exec(const char *path);

/* ---- stacks.c ------------------------------------------------------- */

#define WSP_STACK_RECORD_MAX 32
void wsp_stacks_init(void);
/* An address in the unwinder's code (modules.c finds its extent). */
uintptr_t wsp_unwinder_address(void);
/* Unwind the caller's stack, skipping wsprof's own frames; *id: the stack's
 * id when the thread's unwind memo knows it, else 0 (intern it, then
 * wsp_stack_remember_id). @return depth. */
#define WSP_STACK_SLACK 16 /* wsprof's own frames, unwound and then dropped */
/* ips: room for max + WSP_STACK_SLACK addresses. */
int wsp_stack_capture(struct wsp_thread *t, uintptr_t *ips, int max, uint32_t *id);
void wsp_stack_remember_id(struct wsp_thread *t, uint32_t id);
void wsp_unwind_memo_free(struct wsp_unwind_memo *u);
/* Intern a stack (innermost first) and append STACK records for new nodes
 * at *p. Call inside wsp_event_begin with room for depth * WSP_STACK_RECORD_MAX. */
uint64_t wsp_stack_intern(struct wsp_thread *t, const uintptr_t *ips, int depth, uint8_t **p);
void wsp_stacks_reset_after_fork(void);
void wsp_stacks_lock(void);
void wsp_stacks_unlock(void);
void wsp_stack_cache_free(struct wsp_stack_cache *c);

/* How the process is ending (enum wsprof_ending), for the footer: set by
 * exit, _exit and fatal signals (process.c, signals.c). */
extern _Atomic unsigned wsp_ending, wsp_ending_value;
void wsp_set_ending(unsigned how, unsigned value);

/* ---- rescue.c ------------------------------------------------------- */

/* The memory shared with wsprof record, NULL when there is none. */
extern struct wsp_rescue_head *wsp_rescue;
/* After the trace file is created (header_bytes written): a memfd for
 * buffers and the staging area, handed to the launcher. @return whether
 * there is one now. */
bool wsp_rescue_open(const char *path, int trace_fd, uint64_t header_bytes, size_t buf_size, size_t nslots,
		     size_t stage_cap);
struct wsp_buf *wsp_rescue_buf(void); /* a fresh slot, NULL when none is left */
uint8_t *wsp_rescue_stage(void);      /* the staging area, NULL without a memfd */
bool wsp_rescue_owns(const void *p);
void wsp_rescue_set_state(unsigned state);              /* enum wsp_rescue_state */
void wsp_rescue_set_ending(unsigned how, unsigned value); /* enum wsprof_ending */
void wsp_rescue_reset_after_fork(void);

/* ---- writer.c ------------------------------------------------------- */

/* Create the trace file for this process and write its header. */
int wsp_writer_open(pid_t parent_traced);
void wsp_writer_start_thread(void);
/* Sweep, compress and write everything recorded so far. */
void wsp_writer_flush(void);
void wsp_writer_flush_locked(void); /* the same, with wsp_writer_lock() held */
/* Final flush, footer, close. Later events are dropped. */
void wsp_writer_finish(void);
/* From a signal handler (async-signal-safe): have the writer thread finish
 * the trace, waiting at most timeout_ms. @return whether it did. */
bool wsp_writer_finish_from_signal(unsigned timeout_ms);
bool wsp_writer_thread_running(void);
#define WSP_FINISH_TIMEOUT_MS 2000 /* how long a fatal signal or _exit waits for the writer */
void wsp_writer_wake(void);
/* Work the writer thread does for other parts (registered once, before
 * it starts): before each flush due, before finishing at a fatal signal. */
void wsp_writer_on_flush(void (*fn)(void));
void wsp_writer_on_finish(void (*fn)(void));
void wsp_writer_lock(void);
void wsp_writer_unlock(void);
void wsp_writer_reset_after_fork(void);

/* ---- modules.c ------------------------------------------------------ */

void wsp_modules_init(void);
/* If the loader's counters moved, record what was loaded and unloaded. */
void wsp_modules_check(void);
/* Set for a while after dlopen/dlclose: allocations check the map first. */
extern _Atomic bool wsp_dl_recent;
/* Forget what was recorded (a forked child starts a new trace). */
void wsp_modules_reset(void);
bool wsp_addr_in_self(uintptr_t ip);
/* Is ip in the unwinder's code (libunwind)? An allocator that unwinds with
 * it (tcmalloc's heap profiler) calls mmap holding its locks. */
bool wsp_addr_in_unwinder(uintptr_t ip);
void wsp_modules_lock(void);
void wsp_modules_unlock(void);

/* ---- hooks_cuda.c ---------------------------------------------------- */

/* Record the free memory of every device the program allocated on, from
 * the writer thread, borrowing the program's context (never creating one). */
void wsp_cuda_sample(void);

/* ---- damon.c -------------------------------------------------------- */

/* Start a kdamond of wsprof's own watching this process. @return NULL, or
 * why not (a constant or text in why). */
const char *wsp_damon_open(char *why, size_t cap);
bool wsp_damon_active(void);
/* The regions accessed in the kdamond's next aggregation window, merged,
 * at most cap; blocks until it ends. @return how many or -errno. */
long wsp_damon_sample(struct wsp_range *out, size_t cap);
/* Stop it (only the process that started it does); idempotent. */
void wsp_damon_close(void);
void wsp_damon_forget_after_fork(void);

/* ---- signals.c ------------------------------------------------------ */

/* Catch the fatal signals the program leaves at their default action, to
 * finish the trace before the default action happens. */
void wsp_signals_install(void);

/* ---- threads.c ------------------------------------------------------ */

/* Start one of wsprof's own threads, born with every signal blocked. */
int wsp_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *));

/* ---- sampler.c ------------------------------------------------------- */

/* Decide which access sources this process can have (before the header). */
void wsp_sampler_probe(void);
/* Recording ends (exit, exec, no trace file): stop what runs outside the
 * process on its behalf (the kdamond). */
void wsp_sampler_finish(void);
/* Start the sampling thread (after the header). */
void wsp_sampler_start(void);
/* In a forked child, before start: the parent's registrations are not the child's. */
void wsp_sampler_reset_after_fork(void);
/* Memory about to be given back (a heap block, an unmapped range): its
 * pages written since the last window are recorded as accessed by it
 * (ACCESS of written pages, window 0), within the per-window budget.
 * Call with the guard held, before the release is recorded. */
void wsp_sampler_release(uint64_t addr, uint64_t len);
/* The descriptor it reads with; -1 while released memory is not read (no
 * written-page sampling, a budget of 0, recording over): hooks test it
 * before they do any work for a release. */
extern _Atomic int wsp_release_fd;
/* Heap blocks smaller than this are left to the window's scan: they lie in
 * memory the allocator keeps. */
#define WSP_RELEASE_MIN (64u << 10)

/* ---- annotate.c ------------------------------------------------------ */

/* Record what the program says (enum wsprof_annotation). Safe to call from
 * anywhere: enters wsprof itself; dropped when called inside wsprof. */
void wsp_annotate(unsigned ann, uint64_t addr, uint64_t size, uint64_t pool, const char *text);
/* A sub-allocation of `pool` (any id the program uses: the slab's address,
 * an NVTX heap handle), of kind `pool`. */
void wsp_pool_alloc(uint64_t pool, uint64_t addr, uint64_t size);
void wsp_pool_free(uint64_t pool, uint64_t addr);

/* ---- fds.c ---------------------------------------------------------- */

/* Move a descriptor of wsprof's own out of the low numbers the program
 * expects open() to return. @return the new descriptor (close-on-exec). */
int wsp_fd_move_high(int fd);

/* ---- process.c ------------------------------------------------------ */

extern pid_t wsp_pid;            /* pid whose trace this is */
bool wsp_is_traced_process(void); /* false in a vfork child sharing our memory */
/* Remove libwsprof from an environment (for not following exec). */
char **wsp_env_without_preload(char *const envp[]);

#endif
