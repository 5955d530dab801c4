/*
 * tally.c - a sampled trace's heap totals, counted whole (HEAP_TOTALS).
 *
 * With WSPROF_SAMPLE_BYTES only some heap blocks are recorded, and the
 * heap's totals estimated from them are noisy; the peak, the highest of
 * a noisy estimate over time, overstates the truth most when few sampled
 * blocks are live at once. The totals need no estimate: every thread
 * counts every heap allocation and free it makes in a tally of its own -
 * allocations, frees, bytes asked for, and the bytes the allocator gave
 * (malloc_usable_size, which a free can ask too, so the live bytes are
 * known without remembering any block) - and their sum is written as a
 * HEAP_TOTALS record with each flush, before the footer, and in between
 * by a thread whose live bytes moved once the last record is old enough:
 * 1 ms early on, a 4096th of the time run later, so that a timeline of
 * any length has a record or more in each of its buckets (a run of an
 * hour writes one every second or so).
 *
 * The peak between two records is the threads' to keep: each adds the
 * change of its live bytes to one shared level once it reaches WSP_TALLY_STEP bytes
 * either way, and raises the shared peak when the level passes it. The
 * level is then off the truth by less than WSP_TALLY_STEP per thread, and the one
 * atomic operation comes once in WSP_TALLY_STEP bytes of change, not on every call.
 *
 * A tally is written by its thread only (plain stores) and read by the
 * writer; the tallies are wsprof's memory, never freed, so a thread that
 * ends without running its key destructor leaves its counts in the sum.
 * One that does folds its counts into `ended` and from then on (its last
 * frees) counts there, atomically. Calls made with the guard held are not
 * counted, as they are not recorded.
 */

#include "hooks.h"
#include <pthread.h>

WSP_TLS struct wsp_tally *wsp_tally_mine;
bool wsp_tally_glibc;
static pthread_once_t glibc_once = PTHREAD_ONCE_INIT;
static struct wsp_tally *tallies;   /* every thread's, under list_lock */
static struct wsp_tally ended = { .shared = true };
static atomic_flag list_lock = ATOMIC_FLAG_INIT;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static _Atomic int64_t level, level_peak;
static _Atomic uint64_t level_peak_ns;
static atomic_flag recording = ATOMIC_FLAG_INIT; /* a record is being made */
static _Atomic uint64_t last_record_ns;
static uint64_t last_allocations = UINT64_MAX, last_frees; /* of the last record, while recording */

/* glibc's malloc_usable_size, the one whose answer wsp_usable_size reads
 * itself: the allocator's functions from libc.so.6 (a debugging malloc
 * preloaded, libc_malloc_debug.so, is another library). */
static void which_allocator(void)
{
	const char *a = NULL, *b = NULL;
	if (!wsp_object_at((void *)wsp_real.malloc, NULL, &a) ||
	    !wsp_object_at((void *)wsp_real.malloc_usable_size, NULL, &b) || !a || !b)
		return;
	const char *base = strrchr(a, '/');
	base = base ? base + 1 : a;
	wsp_tally_glibc = !strcmp(a, b) && !strncmp(base, "libc.so", 7);
}

/* wsp_usable_size before malloc is known to be glibc's: found out once
 * (with the guard held, so that what the lookup allocates passes through),
 * then malloc_usable_size for any other allocator. */
size_t wsp_usable_size_slow(const void *p)
{
	wsp_tls.guard++;
	pthread_once(&glibc_once, which_allocator);
	wsp_tls.guard--;
	if (wsp_tally_glibc)
		return wsp_glibc_usable_size(p);
	size_t (*usable)(void *) = wsp_real.malloc_usable_size;
	return usable ? usable((void *)p) : 0;
}

static void record(void);

static void list_take(void)
{
	while (atomic_flag_test_and_set_explicit(&list_lock, memory_order_acquire))
		;
}

static void list_give(void)
{
	atomic_flag_clear_explicit(&list_lock, memory_order_release);
}

/* An ended threads' tally is counted atomically: any thread may be in it. */
static void add(struct wsp_tally *t, _Atomic uint64_t *field, uint64_t n)
{
	if (t->shared)
		atomic_fetch_add_explicit(field, n, memory_order_relaxed);
	else
		wsp_tally_add(field, n);
}

static void raise_peak(int64_t now)
{
	int64_t peak = atomic_load_explicit(&level_peak, memory_order_relaxed);
	while (now > peak)
		if (atomic_compare_exchange_weak_explicit(&level_peak, &peak, now, memory_order_relaxed,
							  memory_order_relaxed)) {
			atomic_store_explicit(&level_peak_ns, wsp_now_ns(), memory_order_relaxed);
			return;
		}
}

static void to_level(int64_t change)
{
	int64_t now = atomic_fetch_add_explicit(&level, change, memory_order_relaxed) + change;
	if (change > 0) /* a fall is never a peak */
		raise_peak(now);
}

/* The level moved: a record if the last one is old enough (guard not held). */
static void to_level_and_record(int64_t change)
{
	to_level(change);
	uint64_t now = wsp_coarse_now_ns(), gap = now / 4096 > 1000000 ? now / 4096 : 1000000;
	if (now - atomic_load_explicit(&last_record_ns, memory_order_relaxed) < gap)
		return;
	int e = errno;
	if (wsp_enter()) {
		record();
		wsp_leave(e);
	}
}

void wsp_tally_step(struct wsp_tally *t, int64_t pending)
{
	t->pending = 0;
	to_level_and_record(pending);
}

static void live_change(struct wsp_tally *t, int64_t change)
{
	if (t->shared)
		to_level(change);
	else
		wsp_tally_live(t, change);
}

static void on_thread_exit(void *arg)
{
	struct wsp_tally *t = arg;
	wsp_tls.guard++;
	list_take();
	for (size_t i = 0; i < WSP_TALLY_FIELDS; i++) {
		atomic_fetch_add_explicit(&ended.n[i], atomic_load_explicit(&t->n[i], memory_order_relaxed),
					  memory_order_relaxed);
		atomic_store_explicit(&t->n[i], 0, memory_order_relaxed);
	}
	to_level(t->pending);
	t->pending = 0;
	t->vacant = true;
	list_give();
	wsp_tally_mine = &ended;
	wsp_tls.guard--;
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

/* The calling thread's tally, made on its first call (guard not held). */
static __attribute__((noinline)) struct wsp_tally *join(void)
{
	if (!wsp_real.malloc_usable_size)
		return NULL; /* no way to know a freed block's size: no totals */
	int e = errno;
	wsp_tls.guard++;
	pthread_once(&exit_key_once, make_exit_key);
	pthread_once(&glibc_once, which_allocator);
	list_take();
	struct wsp_tally *t = tallies;
	while (t && !t->vacant)
		t = t->next;
	if (t) {
		t->vacant = false;
	} else if ((t = wsp_mem_alloc_lines(sizeof *t))) {
		t->next = tallies;
		tallies = t;
	}
	list_give();
	if (t) {
		wsp_tally_mine = t;
		pthread_setspecific(exit_key, t); /* may calloc: passes through, guard held */
	}
	wsp_tls.guard--;
	errno = e;
	return t;
}

void wsp_tally_alloc_slow(const void *p, size_t requested)
{
	struct wsp_tally *t = wsp_tally_mine ? wsp_tally_mine : join();
	if (!t)
		return;
	size_t given = wsp_usable_size(p);
	add(t, &t->n[WSP_TALLY_ALLOCATIONS], 1);
	add(t, &t->n[WSP_TALLY_REQUESTED], requested);
	add(t, &t->n[WSP_TALLY_GIVEN], given);
	live_change(t, (int64_t)given);
}

void wsp_tally_freed_slow(size_t given)
{
	struct wsp_tally *t = wsp_tally_mine ? wsp_tally_mine : join();
	if (!t)
		return;
	add(t, &t->n[WSP_TALLY_FREES], 1);
	add(t, &t->n[WSP_TALLY_GIVEN_BACK], given);
	live_change(t, -(int64_t)given);
}

/* The sum of every tally: HEAP_TOTALS, when something changed since the
 * last one. One at a time: a thread that finds another making one leaves
 * it to that one (guard held). */
static void record(void)
{
	if (atomic_flag_test_and_set_explicit(&recording, memory_order_acquire))
		return;
	uint64_t values[WSP_TALLY_FIELDS + 2] = { 0 }, *sum = values; /* + the peak and its time */
	list_take();
	for (struct wsp_tally *t = tallies;; t = t->next) {
		if (!t)
			t = &ended;
		for (size_t i = 0; i < WSP_TALLY_FIELDS; i++)
			sum[i] += atomic_load_explicit(&t->n[i], memory_order_relaxed);
		if (t == &ended)
			break;
	}
	list_give();
	uint64_t now = wsp_now_ns();
	atomic_store_explicit(&last_record_ns, wsp_coarse_now_ns(), memory_order_relaxed);
	if (sum[WSP_TALLY_ALLOCATIONS] == last_allocations && sum[WSP_TALLY_FREES] == last_frees) {
		atomic_flag_clear_explicit(&recording, memory_order_release);
		return;
	}
	last_allocations = sum[WSP_TALLY_ALLOCATIONS], last_frees = sum[WSP_TALLY_FREES];
	/* The peak since the last record: the level's, or the exact live bytes
	 * now if higher; the level's peak starts again from the level. */
	int64_t live = (int64_t)(sum[WSP_TALLY_GIVEN] - sum[WSP_TALLY_GIVEN_BACK]);
	uint64_t peak_ns = atomic_load_explicit(&level_peak_ns, memory_order_relaxed);
	int64_t peak = atomic_exchange_explicit(&level_peak, atomic_load_explicit(&level, memory_order_relaxed),
						memory_order_relaxed);
	atomic_store_explicit(&level_peak_ns, now, memory_order_relaxed);
	if (live >= peak) {
		peak = live;
		peak_ns = now;
	}
	_Static_assert(sizeof values / sizeof *values == 7, "HEAP_TOTALS holds the counts, the peak and its time");
	values[WSP_TALLY_FIELDS] = peak > 0 ? (uint64_t)peak : 0;
	values[WSP_TALLY_FIELDS + 1] = peak_ns;
	wsp_record_heap_totals(values);
	atomic_flag_clear_explicit(&recording, memory_order_release);
}

void wsp_tally_record(void)
{
	if (wsp_cfg.sample_bytes > 1 && wsp_real.malloc_usable_size)
		record();
}

/* Around fork: the child gets the list whole. The parent's other threads'
 * tallies stay in it, unchanging: the child inherited their blocks. */
void wsp_tally_lock(void)
{
	list_take();
}

void wsp_tally_unlock(bool child)
{
	if (child) /* a thread the child does not have may have been making a record */
		atomic_flag_clear(&recording);
	list_give();
}
