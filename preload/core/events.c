/*
 * events.c - per-thread event buffers and the records the hooks write.
 *
 * Each thread appends encoded records to its own buffer under its own
 * lock, which only the writer's sweep ever contends for: there is no global
 * lock on the hot path, only one atomic counter for the global order. A full
 * buffer is queued for the writer and the thread takes a fresh one from a
 * bounded pool (waiting for the writer when the pool is spent, which bounds
 * wsprof's memory). Every buffer starts a new segment (doc/trace-format.md).
 *
 * Reentrancy: called from hooks with the guard held. The thread lock is
 * held across nothing that waits for another thread's progress: while it
 * is held, a full buffer is queued (the queue's mutex, held for a list
 * insert, and the writer's wake-up) and the stack tree may grow (its lock,
 * and an mmap of wsprof's own through the raw system call); never the
 * pool's wait for the writer, which happens with no lock held. So the
 * writer can always steal. (The queueing stays under the lock: the
 * thread's floor may only rise once its buffer is in the queue.) Signal
 * handlers that allocate while the guard is held pass through.
 */

#include "core.h"
#include "format.h"

#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE WSP_BUF_SIZE
#define BUF_MAX_BYTES WSP_BUF_MAX_BYTES

struct wsp_seq_line wsp_seq;
uint64_t wsp_start_mono, wsp_start_real;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wsp_thread *threads;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cond = PTHREAD_COND_INITIALIZER;
static struct wsp_buf *pool_free;
static size_t pool_made;

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wsp_buf *queue_head, *queue_tail;

static inline void spin_lock(atomic_flag *l)
{
	while (atomic_flag_test_and_set_explicit(l, memory_order_acquire))
		;
}

static inline void spin_unlock(atomic_flag *l)
{
	atomic_flag_clear_explicit(l, memory_order_release);
}

/* Events are stamped with the coarse clock: a tick of a few milliseconds
 * (what a timeline can show) for a tenth of the cost of the precise clock
 * in a VM (6 ns against 50 here), and time deltas that compress to
 * nothing. The order of events is their sequence numbers', not their
 * times. Both clocks count from the same origin. */
uint64_t wsp_coarse_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return now > wsp_start_mono ? now - wsp_start_mono : 0;
}

uint64_t wsp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return now > wsp_start_mono ? now - wsp_start_mono : 0;
}

/* ---- buffer pool and queue ------------------------------------------ */

/* Who drains the queue (the writer, which registers itself): told when a
 * buffer is queued or a thread waits for one. */
static void (*drainer)(void);

void wsp_buf_on_queue(void (*wake)(void))
{
	drainer = wake;
}

static void wake_drainer(void)
{
	if (drainer)
		drainer();
}

struct wsp_buf *wsp_buf_get(void)
{
	pthread_mutex_lock(&pool_lock);
	struct wsp_buf *b = NULL;
	while (atomic_load(&wsp_state) == WSP_ACTIVE || atomic_load(&wsp_state) == WSP_STARTING) {
		if (pool_free) {
			b = pool_free;
			pool_free = b->next;
			break;
		}
		/* The writer itself never waits for buffers: it would wait for itself. */
		if (pool_made * BUF_SIZE < BUF_MAX_BYTES || wsp_tls.writing) {
			b = wsp_rescue_buf(); /* memory wsprof record can read, else our own */
			if (!b)
				b = wsp_pages_alloc(BUF_SIZE);
			if (b) {
				pool_made++;
				b->cap = BUF_SIZE - sizeof *b;
				break;
			}
		}
		wake_drainer();
		pthread_cond_wait(&pool_cond, &pool_lock);
	}
	pthread_mutex_unlock(&pool_lock);
	if (b) {
		b->next = NULL;
		b->len = 0;
		b->events = 0;
		b->staged_gen = 0;
		atomic_signal_fence(memory_order_release); /* src/rescue.h: empty before held */
		atomic_store_explicit(&b->held, WSP_BUF_HELD, memory_order_relaxed);
	}
	return b;
}

/* Wake every thread waiting for a buffer: recording has stopped. */
void wsp_buf_release_waiters(void)
{
	pthread_mutex_lock(&pool_lock);
	pthread_cond_broadcast(&pool_cond);
	pthread_mutex_unlock(&pool_lock);
}

void wsp_buf_put(struct wsp_buf *b)
{
	atomic_store_explicit(&b->held, WSP_BUF_FREE, memory_order_release);
	pthread_mutex_lock(&pool_lock);
	b->next = pool_free;
	pool_free = b;
	pthread_cond_signal(&pool_cond);
	pthread_mutex_unlock(&pool_lock);
}

void wsp_buf_enqueue(struct wsp_buf *b)
{
	b->next = NULL;
	pthread_mutex_lock(&queue_lock);
	if (queue_tail)
		queue_tail->next = b;
	else
		queue_head = b;
	queue_tail = b;
	pthread_mutex_unlock(&queue_lock);
	wake_drainer();
}

struct wsp_buf *wsp_buf_dequeue_all(void)
{
	pthread_mutex_lock(&queue_lock);
	struct wsp_buf *b = queue_head;
	queue_head = queue_tail = NULL;
	pthread_mutex_unlock(&queue_lock);
	return b;
}

/* ---- threads -------------------------------------------------------- */

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void thread_exit(struct wsp_thread *t);

static void on_thread_exit(void *arg)
{
	wsp_tls.guard++;
	thread_exit(arg);
	wsp_tls.guard--;
}

/* A thread's first event registers it: pthread_once and the key are
 * glibc's own small locks, never held across a call into the program;
 * pthread_setspecific may calloc its second-level table, which passes
 * through to the real allocator (the guard is held). */
static void make_exit_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

struct wsp_thread *wsp_thread_self(void)
{
	struct wsp_thread *t = wsp_tls.thread;
	if (t)
		return t;
	pthread_once(&exit_key_once, make_exit_key);
	pthread_mutex_lock(&reg_lock);
	for (t = threads; t && !t->dead; t = t->next)
		;
	if (!t) {
		t = wsp_mem_alloc_lines(sizeof *t); /* written on every event: no line shared with another thread's */
		if (t) {
			atomic_flag_clear(&t->lock);
			atomic_store(&t->floor, UINT64_MAX);
			t->next = threads;
			threads = t;
		}
	}
	if (t) {
		/* A reused entry: the unwind memo knew another thread's stack. */
		struct wsp_unwind_memo *memo = t->memo;
		t->memo = NULL;
		wsp_unwind_memo_free(t->dead ? memo : NULL);
		t->dead = false;
		t->tid = (uint32_t)gettid();
	}
	pthread_mutex_unlock(&reg_lock);
	if (t) {
		wsp_tls.thread = t;
		pthread_setspecific(exit_key, t);
	}
	return t;
}

/* Queues the thread's buffer to be written: nothing of it is held back
 * any more. The caller holds t->lock. */
static void queue_buf_locked(struct wsp_thread *t)
{
	struct wsp_buf *b = t->buf;
	__atomic_store_n(&t->buf, NULL, __ATOMIC_RELEASE);
	if (b)
		wsp_buf_enqueue(b);
	atomic_store(&t->floor, UINT64_MAX);
}

/* The thread is going away: queue what it recorded and free its entry. */
static void thread_exit(struct wsp_thread *t)
{
	spin_lock(&t->lock);
	queue_buf_locked(t);
	spin_unlock(&t->lock);
	wsp_tls.thread = NULL;
	pthread_mutex_lock(&reg_lock);
	t->dead = true;
	pthread_mutex_unlock(&reg_lock);
}

uint64_t wsp_threads_sweep(void)
{
	uint64_t watermark = atomic_load(&wsp_seq.n);
	pthread_mutex_lock(&reg_lock);
	for (struct wsp_thread *t = threads; t; t = t->next) {
		spin_lock(&t->lock);
		queue_buf_locked(t);
		spin_unlock(&t->lock);
	}
	pthread_mutex_unlock(&reg_lock);
	return watermark;
}

/* A buffer whose first event lags the counter by more than this belongs to
 * a thread that is quiet while others are busy: it is queued rather than
 * left holding the watermark (and a reader's window) back. */
#define STEAL_LAG (1u << 16)

uint64_t wsp_threads_watermark(void)
{
	uint64_t now = atomic_load(&wsp_seq.n), watermark = now;
	pthread_mutex_lock(&reg_lock);
	for (struct wsp_thread *t = threads; t; t = t->next) {
		/* No thread lock: a thread writing events holds its own, and on
		 * two cores spinning against it would take one from the program.
		 * Its floor says enough (see struct wsp_thread). */
		uint64_t floor = atomic_load(&t->floor);
		if (floor == UINT64_MAX)
			continue;
		if (now - floor <= STEAL_LAG || atomic_flag_test_and_set_explicit(&t->lock, memory_order_acquire)) {
			if (floor < watermark)
				watermark = floor;
			continue;
		}
		/* Quiet while others are busy, and not writing now: take its
		 * buffer rather than hold the watermark back. */
		queue_buf_locked(t);
		spin_unlock(&t->lock);
	}
	pthread_mutex_unlock(&reg_lock);
	return watermark;
}

void wsp_events_lock_all(void)
{
	pthread_mutex_lock(&reg_lock);
	for (struct wsp_thread *t = threads; t; t = t->next)
		spin_lock(&t->lock);
	wsp_stacks_lock();
	pthread_mutex_lock(&pool_lock);
	pthread_mutex_lock(&queue_lock);
}

void wsp_events_unlock_all(void)
{
	pthread_mutex_unlock(&queue_lock);
	pthread_mutex_unlock(&pool_lock);
	wsp_stacks_unlock();
	for (struct wsp_thread *t = threads; t; t = t->next)
		spin_unlock(&t->lock);
	pthread_mutex_unlock(&reg_lock);
}

/* In a forked child (called with everything locked by the parent's
 * prepare handler): what is buffered or queued belongs to the parent's
 * trace, and only the forking thread exists. */
void wsp_events_reset_after_fork(void)
{
	pthread_mutex_init(&reg_lock, NULL);
	pthread_mutex_init(&pool_lock, NULL);
	pthread_cond_init(&pool_cond, NULL);
	pthread_mutex_init(&queue_lock, NULL);
	/* Buffers in the parent's shared memory stay the parent's: only
	 * private ones come back to the pool. */
	struct wsp_buf *mine = NULL;
	size_t kept = 0;
	for (struct wsp_buf *b = pool_free, *next; b; b = next) {
		next = b->next;
		if (!wsp_rescue_owns(b))
			b->next = mine, mine = b, kept++;
	}
	pool_free = mine;
	for (struct wsp_thread *t = threads; t; t = t->next) {
		atomic_flag_clear(&t->lock);
		atomic_store(&t->floor, UINT64_MAX);
		if (t->buf && !wsp_rescue_owns(t->buf))
			wsp_buf_put(t->buf), kept++;
		__atomic_store_n(&t->buf, NULL, __ATOMIC_RELEASE);
		t->dead = t != wsp_tls.thread;
		if (!t->dead)
			t->tid = (uint32_t)gettid();
	}
	for (struct wsp_buf *b = queue_head, *next; b; b = next) {
		next = b->next;
		if (!wsp_rescue_owns(b))
			wsp_buf_put(b), kept++;
	}
	queue_head = queue_tail = NULL;
	pool_made = kept;
}

/* A finished trace's leftovers: a thread that was inside a hook as the
 * trace ended may have appended to its buffer after the last sweep. */
void wsp_events_discard(void)
{
	pthread_mutex_lock(&reg_lock);
	for (struct wsp_thread *t = threads; t; t = t->next) {
		spin_lock(&t->lock);
		struct wsp_buf *b = t->buf;
		__atomic_store_n(&t->buf, NULL, __ATOMIC_RELEASE);
		atomic_store(&t->floor, UINT64_MAX);
		spin_unlock(&t->lock);
		if (b)
			wsp_buf_put(b);
	}
	pthread_mutex_unlock(&reg_lock);
	for (struct wsp_buf *b = wsp_buf_dequeue_all(), *next; b; b = next) {
		next = b->next;
		wsp_buf_put(b);
	}
}

/* ---- appending records ---------------------------------------------- */

static void segment_open(struct wsp_thread *t, struct wsp_buf *b)
{
	uint8_t *p = b->data;
	struct wsp_record_mark m;
	p = wsp_record_open(p, WSP_REC_SEGMENT, 30, &m);
	p = wsp_put_varint(p, t->tid);
	p = wsp_put_varint(p, 0);
	p = wsp_put_varint(p, 0);
	p = wsp_record_close(p, &m);
	atomic_signal_fence(memory_order_release); /* src/rescue.h: records before their length */
	b->len = (size_t)(p - b->data);
	t->prev_seq = t->prev_time = t->prev_addr = 0;
}

uint8_t *wsp_event_begin(struct wsp_thread *t, size_t need)
{
	for (;;) {
		spin_lock(&t->lock);
		struct wsp_buf *b = t->buf;
		if (b && b->cap - b->len >= need)
			return b->data + b->len;
		if (b)
			queue_buf_locked(t);
		spin_unlock(&t->lock);
		b = wsp_buf_get();
		if (!b)
			return NULL;
		if (need + 64 > b->cap) {
			wsp_buf_put(b);
			return NULL;
		}
		spin_lock(&t->lock);
		/* Only this thread installs buffers; the writer only takes them, and
		 * reads which one is there without the lock. */
		/* Every event this buffer will hold takes its number after
		 * this: the writer may count on it (seq_cst, before the
		 * fetch_add of the first event). */
		b->floor = atomic_load(&wsp_seq.n);
		atomic_store(&t->floor, b->floor);
		__atomic_store_n(&t->buf, b, __ATOMIC_RELEASE);
		segment_open(t, b);
		spin_unlock(&t->lock);
	}
}

void wsp_event_end(struct wsp_thread *t, uint8_t *end, bool counted)
{
	t->buf->events += counted;
	atomic_signal_fence(memory_order_release); /* src/rescue.h: records before their length */
	t->buf->len = (size_t)(end - t->buf->data);
	spin_unlock(&t->lock);
}

uint8_t *wsp_event_stamp(struct wsp_thread *t, uint8_t *p)
{
	uint64_t seq = atomic_fetch_add_explicit(&wsp_seq.n, 1, memory_order_relaxed);
	uint64_t now = wsp_coarse_now_ns();
	if (now < t->prev_time)
		now = t->prev_time;
	p = wsp_put_varint(p, seq - t->prev_seq);
	p = wsp_put_varint(p, now - t->prev_time);
	t->prev_seq = seq;
	t->prev_time = now;
	return p;
}

uint8_t *wsp_put_addr(struct wsp_thread *t, uint8_t *p, uint64_t a)
{
	p = wsp_put_varint(p, wsp_zigzag((int64_t)(a - t->prev_addr)));
	t->prev_addr = a;
	return p;
}

/* CUDA fields appended to ALLOC, FAIL and FREE (format 1.1). */
static uint8_t *put_tag(uint8_t *p, const struct wsp_cuda_tag *tag, bool handle)
{
	p = wsp_put_varint(p, (uint64_t)(tag->device + 1));
	p = wsp_put_varint(p, tag->stream);
	if (handle)
		p = wsp_put_varint(p, tag->handle);
	return p;
}

static const struct wsp_stack_more *_Atomic stack_more;

void wsp_events_stack_more(const struct wsp_stack_more *m)
{
	atomic_store_explicit(&stack_more, m, memory_order_release);
}

/* An allocation or a failure: both carry the caller's stack. */
static void record_with_stack(unsigned type, unsigned kind, unsigned op, const void *addr, size_t size,
			      const struct wsp_cuda_tag *tag)
{
	wsp_recording_check_signalled();
	if (!wsp_recording_on())
		return; /* a span not recorded: no unwinding */
	struct wsp_thread *t = wsp_thread_self();
	if (!t)
		return;
	if (__builtin_expect(atomic_load_explicit(&wsp_dl_recent, memory_order_relaxed), 0))
		wsp_modules_check();
	/* As many as the configured depth (64 by default, 256 at most): the
	 * program's stack may be a small coroutine's (doc/hacking.md). */
	uintptr_t ips[wsp_cfg.stack_depth + WSP_STACK_SLACK];
	uint32_t known;
	int depth = wsp_stack_capture(t, ips, (int)wsp_cfg.stack_depth, &known);
	/* A Python program's stack: its Python frames in their places. */
	const uintptr_t *frames = ips;
	uint32_t known_merged = 0;
	const struct wsp_stack_more *more = atomic_load_explicit(&stack_more, memory_order_acquire);
	int merged = more ? more->stack(t, ips, depth, &frames, &known_merged) : 0;
	if (merged) {
		depth = known_merged ? 0 : merged;
		known = known_merged; /* the memo knows the native stack alone */
	}
	uint8_t *p = wsp_event_begin(t, WSP_EVENT_RECORD_MAX + (size_t)depth * WSP_STACK_RECORD_MAX);
	if (!p)
		return;
	uint64_t stack = known;
	if (!stack) {
		stack = wsp_stack_intern(t, frames, depth, &p);
		if (merged)
			more->remember(t, (uint32_t)stack);
		else
			wsp_stack_remember_id(t, (uint32_t)stack);
	}
	struct wsp_record_mark m;
	p = wsp_record_open(p, type, WSP_EVENT_RECORD_MAX - 2, &m);
	p = wsp_event_stamp(t, p);
	p = wsp_put_varint(p, kind);
	p = wsp_put_varint(p, op);
	if (type == WSP_REC_ALLOC)
		p = wsp_put_addr(t, p, (uint64_t)(uintptr_t)addr);
	p = wsp_put_varint(p, size);
	p = wsp_put_varint(p, stack);
	if (tag)
		p = put_tag(p, tag, true);
	wsp_event_end(t, wsp_record_close(p, &m), true);
}

void wsp_record_alloc(unsigned kind, unsigned op, const void *addr, size_t size)
{
	record_with_stack(WSP_REC_ALLOC, kind, op, addr, size, NULL);
}

void wsp_record_fail(unsigned kind, unsigned op, size_t size)
{
	record_with_stack(WSP_REC_FAIL, kind, op, NULL, size, NULL);
}

void wsp_record_cuda_alloc(unsigned kind, unsigned op, uint64_t addr, size_t size, const struct wsp_cuda_tag *tag)
{
	record_with_stack(WSP_REC_ALLOC, kind, op, (const void *)(uintptr_t)addr, size, tag);
}

void wsp_record_cuda_fail(unsigned kind, unsigned op, size_t size, const struct wsp_cuda_tag *tag)
{
	record_with_stack(WSP_REC_FAIL, kind, op, NULL, size, tag);
}

/* FREE, MOVE, UNMAP and STREAM_REACHED: an address, an optional size (or
 * stream), no stack. */
static void record_release(unsigned type, unsigned kind, unsigned op, const void *addr, uint64_t size,
			   const struct wsp_cuda_tag *tag)
{
	wsp_recording_check_signalled();
	struct wsp_thread *t = wsp_thread_self();
	if (!t)
		return;
	uint8_t *p = wsp_event_begin(t, WSP_EVENT_RECORD_MAX);
	if (!p)
		return;
	struct wsp_record_mark m;
	p = wsp_record_open(p, type, WSP_EVENT_RECORD_MAX - 2, &m);
	p = wsp_event_stamp(t, p);
	p = wsp_put_varint(p, kind);
	p = wsp_put_varint(p, op);
	p = wsp_put_addr(t, p, (uint64_t)(uintptr_t)addr);
	if (type != WSP_REC_FREE)
		p = wsp_put_varint(p, size);
	else if (tag)
		p = put_tag(p, tag, false);
	wsp_event_end(t, wsp_record_close(p, &m), type != WSP_REC_STREAM_REACHED);
}

void wsp_record_free(unsigned kind, unsigned op, const void *addr)
{
	record_release(WSP_REC_FREE, kind, op, addr, 0, NULL);
}

void wsp_record_cuda_free(unsigned kind, unsigned op, uint64_t addr, const struct wsp_cuda_tag *tag)
{
	record_release(WSP_REC_FREE, kind, op, (const void *)(uintptr_t)addr, 0, tag);
}

void wsp_record_move(unsigned kind, unsigned op, const void *addr, size_t old_size)
{
	record_release(WSP_REC_MOVE, kind, op, addr, old_size, NULL);
}

void wsp_record_unmap(const void *addr, size_t len)
{
	record_release(WSP_REC_UNMAP, WSPROF_KIND_MMAP, WSPROF_OP_MUNMAP, addr, len, NULL);
}

void wsp_record_range_release(unsigned kind, unsigned op, uint64_t addr, size_t len)
{
	record_release(WSP_REC_UNMAP, kind, op, (const void *)(uintptr_t)addr, len, NULL);
}

void wsp_record_stream_reached(unsigned kind, unsigned op, uint64_t addr, uint64_t stream)
{
	record_release(WSP_REC_STREAM_REACHED, kind, op, (const void *)(uintptr_t)addr, stream, NULL);
}

void wsp_record_access(unsigned source, uint64_t window_ns, const struct wsp_range *regions, size_t n)
{
	struct wsp_thread *t = wsp_thread_self();
	size_t need = WSP_EVENT_RECORD_MAX + n * 20;
	uint8_t *p = t ? wsp_event_begin(t, need) : NULL;
	if (!p)
		return;
	struct wsp_record_mark m;
	p = wsp_record_open(p, WSP_REC_ACCESS, 5 * 10 + n * 20, &m); /* one length byte for 3 regions: columns */
	p = wsp_event_stamp(t, p);
	p = wsp_put_varint(p, source);
	p = wsp_put_varint(p, window_ns);
	p = wsp_put_varint(p, n);
	uint64_t end = 0;
	for (size_t i = 0; i < n; i++) {
		p = wsp_put_varint(p, regions[i].start - end);
		p = wsp_put_varint(p, regions[i].len);
		end = regions[i].start + regions[i].len;
	}
	wsp_event_end(t, wsp_record_close(p, &m), false);
}

/* A stamped record of n values, not an event of the footer's count. */
static void record_values(unsigned type, const uint64_t *values, size_t n)
{
	struct wsp_thread *t = wsp_thread_self();
	uint8_t *p = t ? wsp_event_begin(t, WSP_EVENT_RECORD_MAX) : NULL;
	if (!p)
		return;
	struct wsp_record_mark m;
	p = wsp_record_open(p, type, WSP_EVENT_RECORD_MAX - 2, &m);
	p = wsp_event_stamp(t, p);
	for (size_t i = 0; i < n; i++)
		p = wsp_put_varint(p, values[i]);
	wsp_event_end(t, wsp_record_close(p, &m), false);
}

void wsp_record_value(unsigned type, uint64_t value)
{
	record_values(type, &value, 1);
}

void wsp_record_heap_totals(const uint64_t values[7])
{
	record_values(WSP_REC_HEAP_TOTALS, values, 7);
}

void wsp_record_rss(uint64_t bytes)
{
	wsp_record_value(WSP_REC_RSS, bytes);
}

void wsp_record_device_memory(int device, uint64_t free_bytes, uint64_t total_bytes)
{
	record_values(WSP_REC_DEVICE_MEMORY, (const uint64_t[]){ (uint64_t)(device + 1), free_bytes, total_bytes }, 3);
}

void wsp_record_recording(bool on, unsigned cause)
{
	record_values(WSP_REC_RECORDING, (const uint64_t[]){ on, cause }, 2);
}

void wsp_record_fork(pid_t child)
{
	wsp_record_value(WSP_REC_FORK, (uint64_t)child);
}

void wsp_record_exec(const char *path)
{
	struct wsp_thread *t = wsp_thread_self();
	size_t n = path ? strnlen(path, 4096) : 0;
	uint8_t *p = t ? wsp_event_begin(t, WSP_EVENT_RECORD_MAX + n) : NULL;
	if (!p)
		return;
	struct wsp_record_mark m;
	p = wsp_record_open(p, WSP_REC_EXEC, WSP_EVENT_RECORD_MAX + n, &m);
	p = wsp_event_stamp(t, p);
	p = wsp_put_bytes(p, path ? path : "", n);
	wsp_event_end(t, wsp_record_close(p, &m), false);
}
