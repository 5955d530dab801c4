/*
 * writer.c - the trace file: header, compressed chunks, SYNC marks, footer.
 *
 * One writer thread drains the queue of full buffers into a staging area
 * and compresses it with zstd in a static workspace (no malloc) into
 * self-contained chunks. Every flush interval, or sooner when much has
 * been staged, it sweeps the threads' partial buffers and writes a SYNC
 * watermark, so a SIGKILL loses at most one interval. Other threads call
 * wsp_writer_flush() before exec and wsp_writer_finish() at exit; the
 * writer lock serializes all of this.
 *
 * If the file cannot be written (disk full, descriptor closed by the
 * program), one warning goes to stderr and recording stops; the program
 * goes on untouched.
 */

#include "core.h"
#include "base.h"
#include "columns.h"
#include "format.h"

#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A chunk's records, before the column layout: eight thread buffers
 * (why 1 MiB: BENCHMARKS.md, Profiles, "the measurements behind the
 * defaults"). */
#define STAGE_CAP (1u << 20)
#define SYNC_BYTES (8u << 20)  /* sweep at least this often, to bound a reader's window */
#define ZSTD_LEVEL 3

/* Counted by the mmap-family hooks (hooks_libc.c), said by the footer. */
_Atomic uint64_t wsp_untraced_calls;

static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static int fd = -1;
static char path[PATH_MAX];
static uint32_t chunk_index;
static uint64_t events_written;
static size_t since_sync;

static uint8_t *stage, *stage_own, *zout; /* stage: stage_own, or in the memory shared with wsprof record */
static size_t stage_len, zout_cap;
static uint64_t stage_gen = 1; /* src/rescue.h */
static ZSTD_CCtx *cctx;

/* The column layout (src/columns.h): its state, and the area it is built
 * in (only the pages the columns reach are ever touched). */
static struct wsp_columns *columns;
static uint8_t *column_area;

/* A fatal signal's handler asks the writer thread to finish the trace
 * (it may not take locks itself) and waits for it: 1 asked, 2 done. */
static atomic_int finish_request;
static atomic_bool writer_running;
#define REQUEST_POLL_MS 50 /* how often the writer thread looks for one */

/* What other parts ask the writer thread to do for them, so that it knows
 * none of them: before each flush due (CUDA's device memory samples go out
 * with it), and before it finishes the trace at a fatal signal's request
 * (the access sampler's last windows). */
#define TASKS_MAX 4
static void (*on_flush[TASKS_MAX])(void), (*on_finish[TASKS_MAX])(void);
static _Atomic size_t n_on_flush, n_on_finish;

static void add_task(void (**tasks)(void), _Atomic size_t *n, void (*fn)(void))
{
	for (size_t i = 0; i < atomic_load(n); i++)
		if (tasks[i] == fn)
			return;
	if (atomic_load(n) < TASKS_MAX) {
		tasks[atomic_load(n)] = fn;
		atomic_fetch_add(n, 1);
	}
}

void wsp_writer_on_flush(void (*fn)(void))
{
	add_task(on_flush, &n_on_flush, fn);
}

void wsp_writer_on_finish(void (*fn)(void))
{
	add_task(on_finish, &n_on_finish, fn);
}

void wsp_writer_finish_tasks(void)
{
	for (size_t i = 0; i < atomic_load(&n_on_finish); i++)
		on_finish[i]();
}

static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;
static bool wake_pending;

static void stop_recording(const char *what, int err)
{
	wsp_warn("cannot %s trace %s: %s; recording stopped, the program goes on", what, path, wsp_strerror(err));
	atomic_store(&wsp_state, WSP_OFF);
	wsp_rescue_set_state(WSP_RESCUE_STOPPED);
	wsp_buf_release_waiters();
	if (fd >= 0)
		close(fd);
	fd = -1;
}

static uint64_t written; /* bytes of the file so far */

/* Whether n more bytes stay within RLIMIT_FSIZE. Past it the kernel would
 * raise SIGXFSZ in the writing thread, which may be the program's (at
 * exit), and end a program that never wrote that file itself: so wsprof
 * stops before, as on a full disk. */
static bool fits_size_limit(size_t n)
{
	struct rlimit lim;
	return getrlimit(RLIMIT_FSIZE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY || written + n <= lim.rlim_cur;
}

static bool write_all(const void *data, size_t n)
{
	const uint8_t *p = data;
	if (fd >= 0 && !fits_size_limit(n)) {
		stop_recording("write", EFBIG);
		return false;
	}
	while (n && fd >= 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			stop_recording("write", w < 0 ? errno : ENOSPC);
			return false;
		}
		p += w;
		n -= (size_t)w;
		written += (uint64_t)w;
	}
	return fd >= 0;
}

static bool compress_setup(void)
{
	if (cctx)
		return true;
	/* For chunks of STAGE_CAP at most, compressed as a stream (a column at
	 * a time, see wsp_columns_compress): sized for the one source-size tier
	 * a chunk uses, not by ZSTD_estimateCStreamSize, which sizes every tier
	 * (its CCtx twin took ten times as long, which a short process notices:
	 * BENCHMARKS.md, "Short processes"). */
	size_t ws = ZSTD_estimateCStreamSize_usingCParams(ZSTD_getCParams(ZSTD_LEVEL, STAGE_CAP, 0));
	void *mem = wsp_pages_alloc(ws);
	stage = stage_own = wsp_pages_alloc(STAGE_CAP);
	zout_cap = ZSTD_compressBound(STAGE_CAP);
	zout = wsp_pages_alloc(zout_cap);
	columns = wsp_pages_alloc(sizeof *columns);
	column_area = columns ? wsp_pages_alloc(WSP_COL_AREA(STAGE_CAP)) : NULL;
	cctx = mem ? ZSTD_initStaticCCtx(mem, ws) : NULL;
	if (!cctx || !stage || !zout)
		return false;
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, ZSTD_LEVEL);
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	/* A chunk in columns is compressed a column at a time from where it
	 * lies, into zout: zstd copies neither. */
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_stableInBuffer, 1);
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_stableOutBuffer, 1);
	return true;
}

/* The staging area in the column layout, in column_area: @return its
 * start (*n its length), or NULL where it does not fit (the chunk is then
 * written in rows, which a reader takes as well). */
static const uint8_t *stage_columns(size_t *n)
{
	const uint8_t *start = column_area ? wsp_columns_pack(columns, stage, stage_len, column_area, STAGE_CAP, n) : NULL;
	return start && *n <= STAGE_CAP ? start : NULL; /* zout holds a compressed STAGE_CAP */
}

/* What wsprof record reads should the process end now (src/rescue.h). */
static void set_stage_len(size_t n)
{
	stage_len = n;
	if (wsp_rescue) {
		atomic_signal_fence(memory_order_release);
		atomic_store_explicit(&wsp_rescue->stage_len, n, memory_order_relaxed);
	}
}

/* A chunk of the staging area's generation is in the file, whole. */
static void publish_committed(void)
{
	struct wsp_rescue_head *h = wsp_rescue;
	if (!h)
		return;
	atomic_store(&h->committed_bytes, written);
	atomic_store(&h->committed_chunks, chunk_index);
	atomic_store(&h->committed_events, events_written);
	atomic_store(&h->committed_gen, stage_gen); /* last: the others belong to it */
}

/* Compress the staging area into one chunk. */
static void write_chunk(void)
{
	if (!stage_len || fd < 0)
		return;
	size_t raw_len = stage_len;
	const uint8_t *raw = stage_columns(&raw_len);
	uint32_t flags = raw ? WSP_CHUNK_COLUMNS : 0;
	if (!raw)
		raw = stage, raw_len = stage_len;
	size_t z = flags & WSP_CHUNK_COLUMNS ? wsp_columns_compress(cctx, zout, zout_cap, raw, raw_len)
					     : ZSTD_compress2(cctx, zout, zout_cap, raw, raw_len);
	if (ZSTD_isError(z)) {
		wsp_warn("compression failed (%s); recording stopped", ZSTD_getErrorName(z));
		stop_recording("compress", EIO);
		return;
	}
	uint8_t h[WSP_CHUNK_HEADER];
	wsp_put_le32(h, WSP_MAGIC_CHUNK);
	wsp_put_le32(h + 4, WSP_CHUNK_HEADER - 8);
	wsp_put_le32(h + 8, chunk_index);
	wsp_put_le32(h + 12, (uint32_t)raw_len);
	wsp_put_le32(h + 16, (uint32_t)z);
	wsp_put_le32(h + 20, flags);
	if (write_all(h, sizeof h) && write_all(zout, z)) {
		chunk_index++;
		publish_committed();
	}
	set_stage_len(0);
	stage_gen++;
	if (wsp_rescue)
		atomic_store(&wsp_rescue->stage_gen, stage_gen);
}

/* Copy n bytes into the staging area; b, when they are a buffer's, is
 * marked as copied before the staging area's new length is published. */
static void stage_bytes_of(const void *data, size_t n, struct wsp_buf *b)
{
	if (stage_len + n > STAGE_CAP)
		write_chunk();
	memcpy(stage + stage_len, data, n);
	if (b) {
		b->staged_end = stage_len + n;
		atomic_signal_fence(memory_order_release);
		b->staged_gen = stage_gen;
	}
	set_stage_len(stage_len + n);
	since_sync += n;
}

static void stage_bytes(const void *data, size_t n)
{
	stage_bytes_of(data, n, NULL);
}

static void stage_sync(uint64_t watermark);

/* Move every queued buffer into the staging area. Writer lock held.
 * watermark: computed before the queue was taken (see doc/trace-format.md,
 * Ordering), or 0. With one, a SYNC follows each buffer after which the
 * watermark can move: every event below the floor of the next buffer
 * (and below watermark) has been staged, and so has every stack node
 * such an event uses. A reader then holds about a buffer per thread,
 * however many buffers a wake of a writer starved of CPU finds queued. */
static uint64_t last_synced; /* the highest watermark staged in this trace */

static int by_floor(const void *a, const void *b)
{
	uint64_t x = (*(struct wsp_buf *const *)a)->floor, y = (*(struct wsp_buf *const *)b)->floor;
	return x < y ? -1 : x > y;
}

static void drain_to(uint64_t watermark)
{
	static struct wsp_buf *order[4096]; /* writer lock held */
	struct wsp_buf *b = wsp_buf_dequeue_all(), *next;
	while (b) {
		/* In order of their floors (a quiet thread's buffer, stolen
		 * late, queues behind newer ones): then the buffers still to
		 * come all start above the one just staged. */
		size_t n = 0;
		for (; b && n < sizeof order / sizeof *order; b = next) {
			next = b->next;
			order[n++] = b;
		}
		qsort(order, n, sizeof *order, by_floor);
		for (size_t i = 0; i < n; i++) {
			struct wsp_buf *cur = order[i];
			if (fd >= 0 && !WSP_FLOOR_NO_WRITER) { /* bench/floors.py: nothing written */
				/* Counted after the copy, which may first write
				 * the chunk before it (publish_committed). */
				stage_bytes_of(cur->data, cur->len, cur);
				events_written += cur->events;
				uint64_t after = i + 1 < n ? order[i + 1]->floor : UINT64_MAX;
				uint64_t w = after < watermark ? after : watermark;
				if (!b && i + 1 < n && w > last_synced) { /* b: more than one batch, the rest unsorted */
					stage_sync(w);
					last_synced = w;
				}
			}
			wsp_buf_put(cur);
		}
	}
}

static void stage_sync(uint64_t watermark)
{
	uint8_t rec[32], *p;
	struct wsp_record_mark m;
	p = wsp_record_open(rec, WSP_REC_SYNC, 24, &m);
	p = wsp_put_varint(p, watermark);
	p = wsp_put_varint(p, wsp_now_ns());
	p = wsp_record_close(p, &m);
	stage_bytes(rec, (size_t)(p - rec));
}

/* Between flushes: write out full buffers, with a SYNC so a reader can
 * release the events they complete. */
static void drain_with_sync(void)
{
	wsp_tls.writing = true;
	uint64_t watermark = wsp_threads_watermark();
	drain_to(watermark);
	if (fd >= 0)
		stage_sync(watermark);
	wsp_tls.writing = false;
}

void wsp_writer_flush_locked(void)
{
	wsp_tls.writing = true;
	drain_to(wsp_threads_watermark()); /* first, so the pool has buffers for the module records */
	if (fd >= 0)
		wsp_modules_check();
	uint64_t watermark = wsp_threads_sweep();
	drain_to(watermark);
	wsp_tls.writing = false;
	/* A quiet program gets no chunk of SYNCs alone every interval. */
	static uint64_t last_watermark = UINT64_MAX;
	if (fd < 0 || (!stage_len && watermark == last_watermark))
		return;
	last_watermark = watermark;
	stage_sync(watermark);
	since_sync = 0;
	write_chunk();
	if (wsp_rescue) {
		atomic_store(&wsp_rescue->untraced, atomic_load(&wsp_untraced_calls));
		atomic_store(&wsp_rescue->alive_ns, wsp_now_ns());
	}
}

void wsp_writer_flush(void)
{
	pthread_mutex_lock(&write_lock);
	wsp_writer_flush_locked();
	pthread_mutex_unlock(&write_lock);
}

void wsp_writer_finish(void)
{
	pthread_mutex_lock(&write_lock);
	if (fd >= 0) {
		atomic_store(&wsp_state, WSP_OFF);
		wsp_buf_release_waiters();
		wsp_writer_flush_locked();
		uint8_t frame[128], *p;
		struct wsp_record_mark m;
		p = wsp_record_open(frame + 8, WSP_REC_FOOTER, 100, &m);
		p = wsp_put_varint(p, wsp_now_ns());
		p = wsp_put_varint(p, chunk_index);
		p = wsp_put_varint(p, events_written);
		p = wsp_put_varint(p, 0);
		p = wsp_put_varint(p, atomic_load(&wsp_untraced_calls));
		p = wsp_put_varint(p, atomic_load(&wsp_ending));
		p = wsp_put_varint(p, atomic_load(&wsp_ending_value));
		p = wsp_put_varint(p, 0); /* finished by the process itself */
		p = wsp_record_close(p, &m);
		wsp_put_le32(frame, WSP_MAGIC_FOOTER);
		wsp_put_le32(frame + 4, (uint32_t)(p - frame - 8));
		if (write_all(frame, (size_t)(p - frame))) {
			close(fd);
			wsp_rescue_set_state(WSP_RESCUE_FINISHED);
		}
		fd = -1;
	}
	pthread_mutex_unlock(&write_lock);
}

void wsp_writer_lock(void)
{
	pthread_mutex_lock(&write_lock);
}

void wsp_writer_unlock(void)
{
	pthread_mutex_unlock(&write_lock);
}

/* ---- the writer thread ---------------------------------------------- */

void wsp_writer_wake(void)
{
	pthread_mutex_lock(&wake_lock);
	wake_pending = true;
	pthread_cond_signal(&wake_cond);
	pthread_mutex_unlock(&wake_lock);
}

static void deadline_after(struct timespec *t, unsigned ms)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	uint64_t ns = (uint64_t)t->tv_nsec + (uint64_t)ms * 1000000u;
	t->tv_sec += (time_t)(ns / 1000000000u);
	t->tv_nsec = (long)(ns % 1000000000u);
}

static bool passed(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

bool wsp_writer_thread_running(void)
{
	return atomic_load(&writer_running);
}

bool wsp_writer_finish_from_signal(unsigned timeout_ms)
{
	if (!atomic_load(&writer_running))
		return false;
	int idle = 0;
	atomic_compare_exchange_strong(&finish_request, &idle, 1);
	struct timespec ms = { 0, 1000000 };
	for (unsigned waited = 0; waited < timeout_ms; waited++) {
		if (atomic_load(&finish_request) == 2)
			return true;
		nanosleep(&ms, NULL);
	}
	return false;
}

/* The earlier of the deadline and a poll for a finish request from now. */
static void wait_until(const struct timespec *deadline)
{
	struct timespec poll;
	deadline_after(&poll, REQUEST_POLL_MS);
	bool deadline_first = deadline->tv_sec < poll.tv_sec ||
			      (deadline->tv_sec == poll.tv_sec && deadline->tv_nsec < poll.tv_nsec);
	pthread_mutex_lock(&wake_lock);
	while (!wake_pending && atomic_load(&finish_request) != 1 &&
	       pthread_cond_timedwait(&wake_cond, &wake_lock, deadline_first ? deadline : &poll) != ETIMEDOUT)
		;
	wake_pending = false;
	pthread_mutex_unlock(&wake_lock);
}

/* Drain full buffers as they come; sweep and SYNC every flush interval;
 * finish the trace when a fatal signal's handler asks. */
static void *writer_main(void *arg)
{
	(void)arg;
	wsp_tls.guard = 1; /* nothing this thread does is the program's */
	struct timespec next;
	deadline_after(&next, wsp_cfg.flush_ms);
	for (;;) {
		wait_until(&next);
		if (atomic_load(&finish_request) == 1) {
			wsp_writer_finish_tasks();
			wsp_writer_finish();
			atomic_store(&finish_request, 2);
			atomic_store(&writer_running, false);
			return NULL;
		}
		bool due = passed(&next);
		if (due && wsp_threads_only_own() && wsp_is_traced_process()) {
			/* The program's last thread ended with pthread_exit: the
			 * process ends as it would have without wsprof's threads,
			 * as glibc ends it then (exit(0): atexit handlers, and the
			 * trace finished by its destructor). */
			wsp_set_ending(WSPROF_END_EXIT, 0);
			exit(0);
		}
		if (due) {
			wsp_tls.writing = true;
			for (size_t i = 0; i < atomic_load(&n_on_flush); i++)
				on_flush[i]();
			wsp_tls.writing = false;
		}
		pthread_mutex_lock(&write_lock);
		if (due || since_sync >= SYNC_BYTES) {
			wsp_writer_flush_locked();
			deadline_after(&next, wsp_cfg.flush_ms);
		} else {
			drain_with_sync();
		}
		pthread_mutex_unlock(&write_lock);
	}
	return NULL;
}

void wsp_writer_start_thread(void)
{
	wsp_buf_on_queue(wsp_writer_wake);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wake_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_t th;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	atomic_store(&finish_request, 0);
	if (wsp_thread_create(&th, &attr, writer_main) != 0) {
		wsp_warn("cannot start the writer thread; events are written when buffers fill and at exit");
	} else {
		atomic_store(&writer_running, true);
		pthread_setname_np(th, "wsprof-writer");
	}
	pthread_attr_destroy(&attr);
}

/* ---- the file ------------------------------------------------------- */

/* Expand %p (pid), %e (program name), %r (rank in a parallel job, or
 * "p" and the pid without one) and %% in the output pattern. */
static void expand_pattern(char *dst, size_t cap, const char *pattern, pid_t pid, const char *exe)
{
	const char *base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	size_t n = 0;
	for (const char *s = pattern; *s && n + 1 < cap; s++) {
		int w = 0;
		if (s[0] == '%' && s[1] == 'p')
			w = snprintf(dst + n, cap - n, "%d", (int)pid), s++;
		else if (s[0] == '%' && s[1] == 'e')
			w = snprintf(dst + n, cap - n, "%s", *base ? base : "program"), s++;
		else if (s[0] == '%' && s[1] == 'r' && wsp_cfg.job.rank >= 0)
			w = snprintf(dst + n, cap - n, "%lld", (long long)wsp_cfg.job.rank), s++;
		else if (s[0] == '%' && s[1] == 'r')
			w = snprintf(dst + n, cap - n, "p%d", (int)pid), s++;
		else if (s[0] == '%' && s[1] == '%')
			dst[n] = '%', w = 1, s++;
		else
			dst[n] = *s, w = 1;
		n += w > 0 ? (size_t)w : 0;
	}
	dst[n < cap ? n : cap - 1] = 0;
}

static size_t read_small_file(const char *file, char *buf, size_t cap)
{
	int f = open(file, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return 0;
	size_t n = 0;
	ssize_t r;
	while (n < cap && (r = read(f, buf + n, cap - n)) > 0)
		n += (size_t)r;
	close(f);
	return n;
}

/* Create the file without ever replacing one: the pattern's name, else
 * NAME.PID (a forked child or an exec'd image of an explicit -o name, a
 * rank of a job whose ranks share one name), else NAME.PID.N. *attempt
 * gets which. The file stays locked (shared) while it is open, so that
 * `wsprof record` knows a trace another process is writing right now. */
static int create_file(const char *want, pid_t pid, int *attempt)
{
	char cwd[PATH_MAX] = "";
	if (want[0] != '/' && !getcwd(cwd, sizeof cwd))
		cwd[0] = 0;
	const char *sep = cwd[0] ? "/" : "";
	for (*attempt = 0; *attempt < 100; ++*attempt) {
		int n;
		if (*attempt == 0)
			n = snprintf(path, sizeof path, "%s%s%s", cwd, sep, want);
		else if (*attempt == 1)
			n = snprintf(path, sizeof path, "%s%s%s.%d", cwd, sep, want, (int)pid);
		else
			n = snprintf(path, sizeof path, "%s%s%s.%d.%d", cwd, sep, want, (int)pid, *attempt - 1);
		if (n < 0 || (size_t)n >= sizeof path) {
			errno = ENAMETOOLONG;
			return -1;
		}
		int f = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (f >= 0)
			flock(f, LOCK_SH | LOCK_NB);
		if (f >= 0 || errno != EEXIST)
			return f;
	}
	errno = EEXIST;
	return -1;
}

/* Whether the trace at file is one of this pid's: an earlier image,
 * which exec ended. */
static bool trace_of_pid(const char *file, pid_t pid)
{
	uint8_t h[64];
	size_t n = read_small_file(file, (char *)h, sizeof h);
	if (n < WSP_HEADER_FIXED || memcmp(h + 8, WSP_SIGNATURE, WSP_SIGNATURE_LEN) != 0)
		return false;
	struct wsp_cursor c = { h + WSP_HEADER_FIXED, h + n, false };
	bool process = wsp_get_varint(&c) == WSP_REC_PROCESS;
	wsp_get_varint(&c); /* the record's length */
	return process && wsp_get_varint(&c) == (uint64_t)pid && !c.bad;
}

static void note_in_manifest(pid_t pid)
{
	if (!wsp_cfg.manifest[0])
		return;
	int m = open(wsp_cfg.manifest, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (m < 0)
		return;
	char line[PATH_MAX + 32];
	int n = snprintf(line, sizeof line, "%d\t%s\n", (int)pid, path);
	if (n > 0 && write(m, line, (size_t)n) < 0)
		wsp_warn("cannot note the trace in %s: %s", wsp_cfg.manifest, wsp_strerror(errno));
	close(m);
}

static size_t header_records(uint8_t *p0, pid_t pid, pid_t parent_traced, const char *exe,
			     const char *cmdline, size_t cmdlen)
{
	uint8_t *p = p0;
	struct wsp_record_mark m;
	size_t exelen = strlen(exe);
	const struct wsp_launch *job = &wsp_cfg.job;
	size_t idlen = strnlen(job->id, sizeof job->id), launcherlen = strlen(job->launcher);
	/* 8 numbers and 5 string lengths of 10 bytes at most, and the strings */
	p = wsp_record_open(p, WSP_REC_PROCESS, 130 + exelen + cmdlen + strlen(WSPROF_VERSION) + idlen + launcherlen, &m);
	p = wsp_put_varint(p, (uint64_t)pid);
	p = wsp_put_varint(p, (uint64_t)getppid());
	p = wsp_put_varint(p, wsp_start_real);
	p = wsp_put_varint(p, wsp_start_mono);
	p = wsp_put_bytes(p, exe, exelen);
	p = wsp_put_bytes(p, cmdline, cmdlen);
	p = wsp_put_bytes(p, WSPROF_VERSION, strlen(WSPROF_VERSION));
	p = wsp_put_varint(p, (uint64_t)sysconf(_SC_PAGESIZE));
	p = wsp_put_varint(p, (uint64_t)parent_traced);
	p = wsp_put_varint(p, (uint64_t)(job->rank + 1)); /* 2.4: 0, no rank */
	p = wsp_put_varint(p, job->size);
	p = wsp_put_bytes(p, job->id, idlen);
	p = wsp_put_bytes(p, job->launcher, launcherlen);
	p = wsp_record_close(p, &m);
	size_t notelen = strnlen(wsp_access_note, sizeof wsp_access_note);
	/* The library that serves malloc: the program's allocator (its
	 * executable, for a malloc of its own). Found with no wsprof lock
	 * held: the trace is being opened as recording starts. */
	const char *allocator = "";
	if (wsp_object_at((void *)wsp_real.malloc, NULL, &allocator) && !allocator[0])
		allocator = exe;
	size_t alloclen = strnlen(allocator, 1024);
	p = wsp_record_open(p, WSP_REC_CONFIG, 112 + notelen + alloclen, &m);
	p = wsp_put_varint(p, wsp_cfg.stack_depth);
	p = wsp_put_varint(p, wsp_cfg.flush_ms);
	p = wsp_put_varint(p, wsp_cfg.follow);
	p = wsp_put_varint(p, wsp_access_sources);
	p = wsp_put_varint(p, wsp_cfg.wp_pages);
	p = wsp_put_varint(p, wsp_cfg.window_ms);
	p = wsp_put_varint(p, wsp_cfg.max_regions);
	p = wsp_put_bytes(p, wsp_access_note, notelen);
	p = wsp_put_varint(p, wsp_cfg.sample_bytes);
	p = wsp_put_varint(p, wsp_cfg.release_pages);
	p = wsp_put_bytes(p, allocator, alloclen);
	p = wsp_record_close(p, &m);
	return (size_t)(p - p0);
}

int wsp_writer_open(pid_t parent_traced)
{
	if (!compress_setup()) {
		wsp_warn("out of memory for the trace writer; not recording");
		return -1;
	}
	pid_t pid = getpid();
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = 0;
	char want[PATH_MAX];
	expand_pattern(want, sizeof want, wsp_cfg.output, pid, exe);
	int attempt, f = create_file(want, pid, &attempt);
	if (f < 0) {
		snprintf(path, sizeof path, "%s", want);
		wsp_warn("cannot create trace %s: %s; not recording (set WSPROF_OUTPUT to a writable path)",
			 want, wsp_strerror(errno));
		return -1;
	}
	/* Ranks of one job given one name: each says where its trace went
	 * (under wsprof record, which lists the traces, that command does). */
	if (attempt && wsp_cfg.job.rank >= 0 && !parent_traced && !wsp_cfg.manifest[0] && !trace_of_pid(want, pid))
		wsp_warn("%s is another process's trace; rank %lld (pid %d) records to %s", want,
			 (long long)wsp_cfg.job.rank, (int)pid, path);
	fd = wsp_fd_move_high(f);
	chunk_index = 0;
	events_written = 0;
	written = 0;
	stage_len = since_sync = 0;

	static char cmdline[16384]; /* static: too big for a small thread stack */
	size_t cmdlen = read_small_file("/proc/self/cmdline", cmdline, sizeof cmdline);
	/* + the note, the allocator and the job */
	static uint8_t header[WSP_HEADER_FIXED + PATH_MAX + sizeof cmdline + 2048 + sizeof wsp_cfg.job.id];
	uint8_t *p = header;
	wsp_put_le32(p, WSP_MAGIC_HEADER);
	memcpy(p + 8, WSP_SIGNATURE, WSP_SIGNATURE_LEN);
	wsp_put_le16(p + 16, WSPROF_FORMAT_MAJOR);
	wsp_put_le16(p + 18, WSPROF_FORMAT_MINOR);
	wsp_put_le32(p + 20, 0);
	size_t len = WSP_HEADER_FIXED + header_records(p + WSP_HEADER_FIXED, pid, parent_traced, exe, cmdline, cmdlen);
	wsp_put_le32(p + 4, (uint32_t)(len - 8));
	if (!write_all(header, len))
		return -1;
	stage_gen = 1;
	stage = wsp_rescue_open(path, fd, written, WSP_BUF_SIZE, 2 * WSP_BUF_MAX_BYTES / WSP_BUF_SIZE, STAGE_CAP)
			? wsp_rescue_stage() : stage_own;
	note_in_manifest(pid);
	return 0;
}

/* In a forked child: the parent's file and writer thread are not ours. */
void wsp_writer_reset_after_fork(void)
{
	pthread_mutex_init(&write_lock, NULL);
	pthread_mutex_init(&wake_lock, NULL);
	wake_pending = false;
	atomic_store(&writer_running, false); /* the parent's thread is not here */
	last_synced = 0;                      /* the child's trace is new */
	atomic_store(&finish_request, 0);
	if (fd >= 0)
		close(fd);
	fd = -1;
	stage_len = since_sync = 0;
	stage = stage_own; /* the parent's shared staging area is the parent's */
	stage_gen = 1;
}
