/*
 * core.h - the recording core: per-thread buffers and event records, stacks, the module map, the writer and the memory shared with wsprof record.
 * wsp.h has what every file shares and the rule every hook follows.
 */
#ifndef WSP_CORE_H
#define WSP_CORE_H

#include "wsp.h"
#include "base.h" /* the layer below */

#include <link.h>

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
	struct wsp_stack_path *path; /* the last stack interned (stacks.c) */
	struct wsp_unwind_memo *memo; /* the thread's last unwinds (stacks.c) */
	struct wsp_pythread *py;   /* the thread's Python frames and code cache (python.c) */
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
uint64_t wsp_coarse_now_ns(void); /* the same by the coarse clock (events' stamps): a few ms a tick, 6 ns a read */
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
/* Drop what threads hold or is queued (an attach's new trace). */
void wsp_events_discard(void);
void wsp_events_lock_all(void);
void wsp_events_unlock_all(void);

/* The global order's counter, alone on its cache line: every event of every
 * thread moves that line, and what sat beside it (the start time, the stack
 * hook read on every allocation) would move with it. */
struct wsp_seq_line {
	_Alignas(64) _Atomic uint64_t n;
	char pad[64 - sizeof(uint64_t)];
};
extern struct wsp_seq_line wsp_seq;
extern uint64_t wsp_start_mono, wsp_start_real;

/* Stacks that hold more than native frames (python/python.c, which
 * registers itself once it finds an interpreter): called for each event
 * with a stack, after unwinding. stack() @return the depth of the frames
 * it made from ips (*frames, *known as wsp_python_stack says), or 0 to
 * keep ips as they are; remember() is told the id they were interned as. */
struct wsp_stack_more {
	int (*stack)(struct wsp_thread *t, const uintptr_t *ips, int depth, const uintptr_t **frames, uint32_t *known);
	void (*remember)(struct wsp_thread *t, uint32_t id);
};
void wsp_events_stack_more(const struct wsp_stack_more *m);

/* High-level records, each called with the guard held. */
void wsp_record_alloc(unsigned kind, unsigned op, const void *addr, size_t size);
void wsp_record_free(unsigned kind, unsigned op, const void *addr);
void wsp_record_move(unsigned kind, unsigned op, const void *addr, size_t old_size);
void wsp_record_fail(unsigned kind, unsigned op, size_t size);
void wsp_record_unmap(const void *addr, size_t len);
void wsp_record_fork(pid_t child);
/* A record of one varint value after the stamp (FORK, MODULE_UNLOAD, RSS). */
void wsp_record_value(unsigned type, uint64_t value);
/* HEAP_TOTALS: allocations, frees, requested, given, given back, peak, its time. */
void wsp_record_heap_totals(const uint64_t values[7]);

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
/* RECORDING: allocations are recorded (on) or not from here (recording.c). */
void wsp_record_recording(bool on, unsigned cause);

/* ---- recording.c ---------------------------------------------------- */

/* Whether allocations (and annotations) are recorded now; frees always
 * are. Read by the hooks with one relaxed load. */
extern _Atomic bool wsp_recording;
/* The toggle signal flipped the switch; its record is not written yet. */
extern _Atomic bool wsp_recording_signalled;
static inline bool wsp_recording_on(void)
{
	return atomic_load_explicit(&wsp_recording, memory_order_relaxed);
}
/* Set the switch and write RECORDING(on, cause) whatever the trace said
 * before: a trace's first event (a paused start, an attach), its end. */
void wsp_recording_mark(bool on, unsigned cause);
/* Turn recording on or off (enum wsprof_recording_cause). @return whether
 * it changed (and a record was written). Guard held. */
bool wsp_recording_set(bool on, unsigned cause);
/* Async-signal-safe: flip the switch; the record follows (catch_up). */
void wsp_recording_toggle_from_signal(void);
/* Write the record of a toggle by signal, if one is pending. Guard held. */
void wsp_recording_catch_up(void);
static inline void wsp_recording_check_signalled(void)
{
	if (__builtin_expect(atomic_load_explicit(&wsp_recording_signalled, memory_order_relaxed), 0))
		wsp_recording_catch_up();
}

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
/* Where on the stack each frame of the last wsp_stack_capture keeps its
 * return address (the i-th frame's own locals lie above slot[i], below
 * slot[i + 1], below *hi for the last), or NULL when that is not known (a
 * stack that is not the thread's own, a signal frame, a deep stack). */
const uintptr_t *const *wsp_stack_slots(struct wsp_thread *t, uintptr_t *hi);
/* A number for the last capture's native stack that the thread gives no
 * other stack (while its memo keeps it), or 0 when not known. */
uint32_t wsp_stack_serial(struct wsp_thread *t);
void wsp_unwind_memo_free(struct wsp_unwind_memo *u);
/* Intern a stack (innermost first; a Python frame is a WSPROF_PYFRAME_IP
 * key) and append STACK and PYFRAME records for new nodes
 * at *p. Call inside wsp_event_begin with room for depth * WSP_STACK_RECORD_MAX. */
uint64_t wsp_stack_intern(struct wsp_thread *t, const uintptr_t *ips, int depth, uint8_t **p);
void wsp_stacks_reset_after_fork(void);
void wsp_stacks_lock(void);
void wsp_stacks_unlock(void);
void wsp_stack_cache_free(struct wsp_stack_cache *c);
void wsp_stack_path_free(struct wsp_stack_path *p);

/* How the process is ending (enum wsprof_ending), for the footer: set by
 * exit, _exit and fatal signals (process.c, signals.c). */
extern _Atomic unsigned wsp_ending, wsp_ending_value;
void wsp_set_ending(unsigned how, unsigned value);

/* ---- modules.c ------------------------------------------------------ */

void wsp_modules_init(void);
/* If the loader's counters moved, record what was loaded and unloaded. */
void wsp_modules_check(void);
/* Told of each module as it is recorded (under the module lock), from the
 * first scan on: registered before wsp_modules_init (two listeners at most). */
void wsp_modules_on_load(void (*fn)(const struct dl_phdr_info *info, const char *path));
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
/* The loaded object holding addr: the lowest address it is loaded at and
 * its path ("" the executable). Reads no symbol table, unlike dladdr;
 * takes only the loader's recursive lock (dl_iterate_phdr). @return false
 * if no object holds addr. */
bool wsp_object_at(const void *addr, uintptr_t *lo, const char **name);

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

/* ---- hooks_libc.c (defined in writer.c, counted by the hooks) ------------------------------------------------ */

/* The program's calls that passed through untraced because recording them
 * could wait on a lock their caller holds (mmap before recording began,
 * from libunwind's code): the footer says how many. */
extern _Atomic uint64_t wsp_untraced_calls;

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
 * it starts): before each flush due, before finishing at a fatal signal;
 * whoever finishes the trace otherwise (exit, _exit, the end of an attach)
 * runs the finishing work first too (wsp_writer_finish_tasks). */
void wsp_writer_on_flush(void (*fn)(void));
void wsp_writer_on_finish(void (*fn)(void));
/* Run what was registered with wsp_writer_on_finish (before wsp_writer_finish). */
void wsp_writer_finish_tasks(void);
void wsp_writer_lock(void);
void wsp_writer_unlock(void);
void wsp_writer_reset_after_fork(void);

#endif
