/*
 * reader.c - stream a wsprof trace back into events in global order: the
 * public API (include/wsprof/trace.h), the file's header, its chunks
 * read and unpacked, and the threads that read ahead.
 *
 * Chunks are read and decompressed one at a time. Their events go into a
 * pending list (decode.c); a SYNC record (or the end of the file)
 * releases, sorted by sequence number, every pending event below its
 * watermark (merge.c). Memory is the pending window plus the stack and
 * module tables (tables.c). A pending event is 64 bytes; what few events
 * carry beyond the fields all have (strings, regions, a module, a CUDA
 * stream) hangs off it.
 *
 * A regular file is read ahead of the caller on two threads of their
 * own: one reads and decompresses chunks, a chunk ahead at most; the
 * other decodes them (a chunk in the column layout straight from its
 * columns, src/columns.h) and merges them, and hands the events
 * over in batches, NBATCH at most in flight. A batch also carries the
 * stack nodes defined before its events and, at each release, a mark of
 * how far reading had got: the caller's stack table, status and position
 * change as its events are handed out, exactly as when it reads for
 * itself.
 *
 * A reader may also start at a chunk in the middle (resume.h): the
 * decoding side notes where each chunk lies and the seqs it holds, and a
 * release drops the events below the seq a reader was opened for.
 *
 * A damaged file never crashes the reader: every length is checked before
 * it is used, and reading stops at the first chunk that fails, keeping what
 * came before (the status says why).
 */
#include "reader_internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *wsprof_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case WSPROF_E_NOT_TRACE: return "not a wsprof trace (wrong magic): pass a file written by wsprof record";
	case WSPROF_E_NEWER: return "trace written by a newer wsprof (format major version too high): use a newer wsprof to read it";
	case WSPROF_E_CORRUPT: return "trace is corrupt";
	case WSPROF_E_TRUNCATED: return "trace is truncated (the traced program was killed or is still running)";
	case WSPROF_E_EMPTY: return "trace file is empty (the traced program may have been killed before its first flush)";
	case WSPROF_E_AGAIN: return "nothing more yet: the trace is still being written";
	default: return err < 0 ? strerror(-err) : "unknown error";
	}
}

static const char *const kind_names[WSPROF_KIND_COUNT] = {
	"heap", "mmap", "cuda_device", "cuda_managed", "cuda_host", "cuda_vmm", "pool",
	"cuda_vmm_mapped", "cuda_vmm_reserved", "mmap_reserved",
};

const char *wsprof_kind_name(unsigned kind)
{
	return kind < WSPROF_KIND_COUNT ? kind_names[kind] : NULL;
}

static const char *const op_names[WSPROF_OP_COUNT] = {
	"malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
	"memalign", "valloc", "pvalloc", "free", "cfree", "mmap", "munmap", "mremap",
	"cuMemAlloc", "cuMemAllocPitch", "cuMemFree", "cuMemAllocManaged", "cuMemAllocHost",
	"cuMemHostAlloc", "cuMemFreeHost", "cuMemHostRegister", "cuMemHostUnregister",
	"cuMemAllocAsync", "cuMemAllocFromPoolAsync", "cuMemFreeAsync", "cuMemCreate", "cuMemRelease",
	"cuMemMap", "cuMemUnmap", "cuMemAddressReserve", "cuMemAddressFree",
	"cudaMalloc", "cudaMallocPitch", "cudaMallocManaged", "cudaMallocHost", "cudaHostAlloc",
	"cudaHostRegister", "cudaMallocAsync", "cudaMallocFromPoolAsync", "pool_alloc", "pool_free",
	"mprotect",
};

static const char *const annotation_names[WSPROF_ANN_COUNT] = {
	"name", "acquire", "release", "valid", "invalid", "touch", "phase_push", "phase_pop", "snapshot",
	"pool_reset",
};

const char *wsprof_annotation_name(unsigned ann)
{
	return ann < WSPROF_ANN_COUNT ? annotation_names[ann] : NULL;
}

const char *wsprof_op_name(unsigned op)
{
	return op < WSPROF_OP_COUNT ? op_names[op] : NULL;
}

/* ---- header ---------------------------------------------------------- */

static int read_exact(wsprof_trace *t, void *buf, size_t n)
{
	size_t got = fread(buf, 1, n, t->f);
	t->bytes_read += got;
	if (got == n)
		return 0;
	if (ferror(t->f))
		return -EIO;
	return got == 0 ? 1 : WSPROF_E_TRUNCATED; /* 1: clean end of file */
}

static int parse_header_records(wsprof_trace *t, struct wsp_cursor *c)
{
	while (c->p < c->end) {
		uint64_t type = wsp_get_varint(c), len = wsp_get_varint(c);
		if (c->bad || len > (uint64_t)(c->end - c->p))
			return WSPROF_E_CORRUPT;
		struct wsp_cursor r = { c->p, c->p + len, false };
		c->p += len;
		if (type == WSP_REC_PROCESS) {
			t->proc.pid = (uint32_t)wsp_get_field(&r);
			t->proc.ppid = (uint32_t)wsp_get_field(&r);
			t->proc.start_realtime_ns = wsp_get_field(&r);
			wsp_get_field(&r); /* start_monotonic_ns: times in segments are already relative */
			free(t->exe);
			free(t->cmdline);
			free(t->tool_version);
			t->exe = reader_get_string(&r);
			size_t cmdlen;
			const uint8_t *cmd = wsp_get_bytes(&r, &cmdlen);
			if (cmdlen && cmd[cmdlen - 1] == 0)
				cmdlen--; /* /proc/self/cmdline ends each argument with a NUL */
			t->cmdline = reader_dup_bytes(cmd ? cmd : (const uint8_t *)"", cmd ? cmdlen : 0);
			for (size_t i = 0; t->cmdline && i < cmdlen; i++) /* NULs between arguments -> spaces */
				if (!t->cmdline[i])
					t->cmdline[i] = ' ';
			t->tool_version = reader_get_string(&r);
			wsp_get_field(&r); /* page size */
			t->proc.parent_traced_pid = (uint32_t)wsp_get_field(&r);
			if (!t->exe || !t->cmdline || !t->tool_version)
				return -ENOMEM;
			t->proc.rank = (int64_t)wsp_get_field(&r) - 1; /* 2.4: rank + 1, 0 none */
			t->proc.job_size = wsp_get_field(&r);
			if (r.p < r.end) {
				free(t->job_id);
				free(t->launcher);
				t->job_id = reader_get_string(&r);
				t->launcher = reader_get_string(&r);
				if (!t->job_id || !t->launcher)
					return -ENOMEM;
			}
		} else if (type == WSP_REC_CONFIG) {
			t->proc.stack_depth = (unsigned)wsp_get_field(&r);
			t->proc.flush_ms = (unsigned)wsp_get_field(&r);
			t->proc.follow = (unsigned)wsp_get_field(&r);
			t->proc.access_sources = (unsigned)wsp_get_field(&r);
			t->proc.wp_pages = (unsigned)wsp_get_field(&r);
			t->proc.window_ms = (unsigned)wsp_get_field(&r);
			t->proc.max_regions = (unsigned)wsp_get_field(&r);
			free(t->access_note);
			t->access_note = reader_get_string(&r);
			if (!t->access_note)
				return -ENOMEM;
			t->proc.sample_bytes = wsp_get_field(&r);
			t->proc.release_pages = (unsigned)wsp_get_field(&r);
			if (r.p < r.end) {
				free(t->allocator);
				if (!(t->allocator = reader_get_string(&r)))
					return -ENOMEM;
			}
		}
		if (r.bad)
			return WSPROF_E_CORRUPT;
	}
	return 0;
}

static int read_header(wsprof_trace *t)
{
	uint8_t fixed[WSP_HEADER_FIXED];
	size_t got = fread(fixed, 1, sizeof fixed, t->f);
	t->bytes_read += got;
	if (got == 0)
		return ferror(t->f) ? -EIO : WSPROF_E_EMPTY;
	if (got < 16 || wsp_get_le32(fixed) != WSP_MAGIC_HEADER ||
	    memcmp(fixed + 8, WSP_SIGNATURE, WSP_SIGNATURE_LEN) != 0)
		return WSPROF_E_NOT_TRACE;
	if (got < sizeof fixed)
		return WSPROF_E_TRUNCATED;
	t->proc.format_major = wsp_get_le16(fixed + 16);
	t->proc.format_minor = wsp_get_le16(fixed + 18);
	if (t->proc.format_major > WSPROF_FORMAT_MAJOR)
		return WSPROF_E_NEWER;
	uint32_t size = wsp_get_le32(fixed + 4);
	if (size < WSP_HEADER_FIXED - 8 || size > WSP_HEADER_MAX)
		return WSPROF_E_CORRUPT;
	size_t rest = size - (WSP_HEADER_FIXED - 8);
	uint8_t *buf = malloc(rest ? rest : 1);
	if (!buf)
		return -ENOMEM;
	int err = read_exact(t, buf, rest);
	if (err == 1)
		err = WSPROF_E_TRUNCATED;
	if (!err) {
		struct wsp_cursor c = { buf, buf + rest, false };
		err = parse_header_records(t, &c);
	}
	free(buf);
	return err;
}

static int open_trace(const char *path, bool live, wsprof_trace **out);

int wsprof_trace_open(const char *path, wsprof_trace **out)
{
	return open_trace(path, false, out);
}

int wsprof_trace_open_live(const char *path, wsprof_trace **out)
{
	return open_trace(path, true, out);
}

static int open_trace(const char *path, bool live, wsprof_trace **out)
{
	*out = NULL;
	wsprof_trace *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	t->f = fopen(path, "rbe");
	if (!t->f) {
		int err = -errno;
		free(t);
		return err;
	}
	struct stat st;
	t->live = live;
	if (fstat(fileno(t->f), &st) == 0 && S_ISREG(st.st_mode) && !live) {
		t->file_size = (uint64_t)st.st_size;
		t->regular = true;
		t->huge = t->file_size >= HUGE_FROM;
	} else if (S_ISDIR(st.st_mode)) { /* a directory opens, then fails to read as "I/O error" */
		fclose(t->f);
		free(t);
		return -EISDIR;
	}
	t->dctx = ZSTD_createDCtx();
	int err = t->dctx ? read_header(t) : -ENOMEM;
	if (err) {
		wsprof_trace_close(t);
		return err;
	}
	t->proc.exe = t->exe ? t->exe : "";
	t->proc.cmdline = t->cmdline ? t->cmdline : "";
	t->proc.tool_version = t->tool_version ? t->tool_version : "";
	t->proc.access_note = t->access_note ? t->access_note : "";
	t->proc.allocator = t->allocator ? t->allocator : "";
	t->proc.job_id = t->job_id ? t->job_id : "";
	t->proc.launcher = t->launcher ? t->launcher : "";
	t->w.bytes_read = t->bytes_read;
	t->seen = t->w;
	*out = t;
	return 0;
}

const wsprof_process *wsprof_trace_process(const wsprof_trace *t)
{
	return &t->proc;
}

/* Once a mark says it was read: the decoding side wrote it before. */
const wsprof_python *wsprof_trace_python(const wsprof_trace *t)
{
	static const wsprof_python none;
	return t->seen.python ? &t->python : &none;
}

const wsprof_pycode *wsprof_trace_pycode(const wsprof_trace *t, uint64_t code)
{
	return wsp_pycodes_get(&t->pycodes, code);
}

/* ---- chunks read and unpacked (the unpacking side) ---------------------- */

static int read_footer(wsprof_trace *t, struct frame *fr, uint32_t size, const uint8_t *first)
{
	/* `first` holds the 16 bytes already read after the frame header. */
	if (size > 4096)
		return WSPROF_E_CORRUPT;
	uint8_t buf[4096];
	size_t have = size < 16 ? size : 16;
	memcpy(buf, first, have);
	if (size > have) {
		int err = read_exact(t, buf + have, size - have);
		if (err)
			return err == 1 ? WSPROF_E_TRUNCATED : err;
	}
	struct wsp_cursor c = { buf, buf + size, false };
	uint64_t type = wsp_get_varint(&c), len = wsp_get_varint(&c);
	if (c.bad || type != WSP_REC_FOOTER || len > (uint64_t)(c.end - c.p))
		return WSPROF_E_CORRUPT;
	struct wsp_cursor r = { c.p, c.p + len, false };
	struct footer *f = &fr->footer;
	f->end = wsp_get_field(&r);
	f->chunks = wsp_get_field(&r);
	f->events = wsp_get_field(&r);
	wsp_get_field(&r); /* stack nodes */
	f->untraced = wsp_get_field(&r);
	f->ending = wsp_get_field(&r);
	f->ending_value = wsp_get_field(&r);
	f->finisher = wsp_get_field(&r);
	if (r.bad)
		return WSPROF_E_CORRUPT;
	f->seen = true;
	return 0;
}

/* The records of the chunk whose header h was read: its compressed bytes
 * read and decompressed, in rows or in the column layout (which the
 * decoding side reads as it is: src/columns.h).
 * @return 0 with fr->records and fr->len set, or an error. */
static int unpack_chunk(wsprof_trace *t, struct frame *fr, const uint8_t *h)
{
	uint32_t rawsize = wsp_get_le32(h + 12), zsize = wsp_get_le32(h + 16), flags = wsp_get_le32(h + 20);
	if (wsp_grow(&fr->zbuf, &fr->zcap, zsize, 1) || grow_big(t, &fr->raw, &fr->rawcap, rawsize + 1, 1))
		return -ENOMEM;
	int err = read_exact(t, fr->zbuf, zsize);
	if (err)
		return err == 1 ? WSPROF_E_TRUNCATED : err;
	size_t n = ZSTD_decompressDCtx(t->dctx, fr->raw, rawsize, fr->zbuf, zsize);
	if (ZSTD_isError(n) || n != rawsize)
		return WSPROF_E_CORRUPT;
	fr->records = fr->raw;
	fr->len = n;
	fr->columns = flags & WSP_CHUNK_COLUMNS;
	return 0;
}

static int read_chunk_here(wsprof_trace *t, struct frame *fr);

/* Read and decompress the next chunk into fr. @return 1 if one was read,
 * 0 at the end. A live trace that ends inside the frame, or before it, is
 * not cut short but not written yet: reading goes back to the frame's
 * start and says WSPROF_E_AGAIN. */
static int read_chunk(wsprof_trace *t, struct frame *fr)
{
	if (!t->live)
		return read_chunk_here(t, fr);
	off_t at = ftello(t->f);
	uint64_t bytes_at = t->bytes_read;
	int r = read_chunk_here(t, fr);
	if (r == 0 && !fr->footer.seen)
		r = WSPROF_E_TRUNCATED; /* no footer yet */
	if (r == WSPROF_E_TRUNCATED && at >= 0 && fseeko(t->f, at, SEEK_SET) == 0) {
		clearerr(t->f);
		t->bytes_read = bytes_at;
		return WSPROF_E_AGAIN;
	}
	return r;
}

static int read_chunk_here(wsprof_trace *t, struct frame *fr)
{
	uint8_t h[WSP_CHUNK_HEADER];
	int err = read_exact(t, h, 8);
	if (err == 1)
		return 0;
	if (err)
		return err;
	uint32_t magic = wsp_get_le32(h), size = wsp_get_le32(h + 4);
	if (magic == WSP_MAGIC_FOOTER) {
		size_t first = size < 16 ? size : 16;
		err = read_exact(t, h + 8, first);
		if (err)
			return err == 1 ? WSPROF_E_TRUNCATED : err;
		err = read_footer(t, fr, size, h + 8);
		return err ? err : 0;
	}
	if (magic != WSP_MAGIC_CHUNK || size != WSP_CHUNK_HEADER - 8)
		return WSPROF_E_CORRUPT;
	err = read_exact(t, h + 8, WSP_CHUNK_HEADER - 8);
	if (err)
		return err == 1 ? WSPROF_E_TRUNCATED : err;
	uint32_t index = wsp_get_le32(h + 8), rawsize = wsp_get_le32(h + 12),
		 zsize = wsp_get_le32(h + 16), flags = wsp_get_le32(h + 20);
	if (index != t->chunks_read || rawsize > WSP_CHUNK_RAW_MAX || (flags & ~WSP_CHUNK_COLUMNS) ||
	    ((flags & WSP_CHUNK_COLUMNS) && t->proc.format_major < 2) ||
	    zsize > ZSTD_compressBound(rawsize) + 64)
		return WSPROF_E_CORRUPT;
	err = unpack_chunk(t, fr, h);
	if (err)
		return err;
	t->chunks_read++;
	return 1;
}

/* The next frame of the file into fr, and how far the file was read. */
static void read_frame(wsprof_trace *t, struct frame *fr)
{
	memset(&fr->footer, 0, sizeof fr->footer);
	fr->offset = t->bytes_read;
	fr->index = (uint32_t)t->chunks_read;
	fr->result = read_chunk(t, fr);
	fr->bytes_read = t->bytes_read;
}

/* The unpacking thread: frames read ahead, NFRAMES at most, until the end
 * of the file or damage (the decoding side stops taking them there, or at
 * damage inside a chunk before). */
static void *unpacker_main(void *arg)
{
	wsprof_trace *t = arg;
	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		if (t->nframes == NFRAMES) {
			pthread_cond_wait(&t->frame_room, &t->lock);
			continue;
		}
		struct frame *fr = &t->frames[(t->fhead + t->nframes) % NFRAMES];
		pthread_mutex_unlock(&t->lock);
		read_frame(t, fr);
		pthread_mutex_lock(&t->lock);
		t->nframes++;
		pthread_cond_signal(&t->frame_more);
		if (fr->result <= 0)
			break;
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* The next frame to decode, read ahead or read now; the one decoded
 * before is given back. NULL once the trace is being closed. */
static struct frame *frame_next(wsprof_trace *t)
{
	if (!t->unpacking) {
		read_frame(t, &t->frames[0]);
		return &t->frames[0];
	}
	pthread_mutex_lock(&t->lock);
	if (t->decoding) {
		t->fhead = (t->fhead + 1) % NFRAMES;
		t->nframes--;
		pthread_cond_signal(&t->frame_room);
	}
	while (!t->nframes && !t->stop)
		pthread_cond_wait(&t->frame_more, &t->lock);
	t->decoding = t->nframes ? &t->frames[t->fhead] : NULL;
	pthread_mutex_unlock(&t->lock);
	return t->decoding;
}

/* ---- chunks decoded into batches (the decoding side) -------------------- */

/* Take the next frame: a chunk to decode (1), the end (0) or damage. */
static int take_frame(wsprof_trace *t)
{
	const struct frame *fr = frame_next(t);
	if (!fr)
		return -ECANCELED;
	t->w.bytes_read = fr->bytes_read;
	t->w.footer = fr->footer;
	/* Reading stops at the frame that is not a chunk, or in one that fails: the end's place. */
	t->place = (struct wsp_chunk_place){ .offset = fr->offset, .index = fr->index };
	if (fr->result != 1)
		return fr->result;
	/* The recorder writes nothing after an EXEC's chunk unless exec failed. */
	t->w.exec_seen = false;
	return reader_chunk_begin(t, fr->records, fr->len, fr->columns);
}

/* Read on until a release is under way (1), the end (0), or the batch
 * being filled holds BATCH_DEFS stack nodes (2). @return those, or -ENOMEM
 * (damage ends the stream: t->w.error says why). */
static int advance(wsprof_trace *t)
{
	for (;;) {
		if (t->nheap)
			return 1;
		if (t->w.eof) {
			if (!t->nlive)
				return 0;
			int err = reader_release_begin(t, 0, true);
			return err ? err : t->nheap ? 1 : 0;
		}
		int r;
		if (t->in_chunk) {
			r = reader_decode_some(t);
			if (r > 0)
				return r;
			if (r == 0)
				continue;
			t->in_chunk = false;
		} else {
			r = take_frame(t);
			if (r == 1)
				continue;
		}
		if (r == -ENOMEM || r == -ECANCELED || (r == WSPROF_E_AGAIN && !t->w.exec_seen))
			return r; /* a live trace ended by exec has nothing more to come */
		if (r == WSPROF_E_AGAIN)
			r = 0;
		t->w.eof = true;
		/* The end's place. A trace without a footer ends at its last
		 * chunk: a reader opened there sees how (an exec, a cut). */
		struct wsp_chunk_place end = { t->place.offset, (uint32_t)t->w.chunks, 0, 0 };
		if (r == 0 && !t->w.footer.seen && t->nplaces)
			end = (struct wsp_chunk_place){ t->places[t->nplaces - 1].offset, t->places[t->nplaces - 1].index, 0, 0 };
		if (reader_place_add(t, &end))
			return -ENOMEM;
		if (r < 0)
			t->w.error = r;
		else if (!t->w.footer.seen && !t->w.exec_seen)
			t->w.error = WSPROF_E_TRUNCATED;
	}
}

/* What the caller will see before the events that follow in b. */
static int mark_add(wsprof_trace *t, struct batch *b)
{
	if (wsp_grow(&b->marks, &b->markcap, b->nmarks + 1, sizeof *b->marks))
		return -ENOMEM;
	b->marks[b->nmarks++] = (struct mark){ b->n, b->ndefs, t->w };
	return 0;
}

/* Fill an empty batch with the events of the releases that come next, up
 * to BATCH_EVENTS (one release at most unless greedy), each release's
 * after a mark. @return 0 or -ENOMEM; t->done once the end is marked. */
static int fill(wsprof_trace *t, struct batch *b, bool greedy)
{
	b->n = b->ndefs = b->nmarks = 0;
	t->filling = b;
	if (!b->ev && t->huge) { /* all batches' events in one piece */
		if (wsp_grow_huge(&t->batch_ev, &t->batch_evcap, NBATCH * BATCH_EVENTS, sizeof *b->ev))
			return -ENOMEM;
		b->ev = t->batch_ev + (b - t->batches) * BATCH_EVENTS;
		b->cap = BATCH_EVENTS;
	} else if (wsp_grow(&b->ev, &b->cap, BATCH_EVENTS, sizeof *b->ev)) {
		return -ENOMEM;
	}
	for (;;) {
		if (!t->nheap) {
			if (b->n && (!greedy || b->nmarks >= BATCH_MARKS))
				return 0;
			int r = advance(t);
			if (r < 0 || mark_add(t, b))
				return r < 0 ? r : -ENOMEM;
			if (r == 0)
				t->done = true;
			if (r != 1)
				return 0;
		}
		if (b->n == BATCH_EVENTS)
			return 0;
		b->n += reader_release_emit(t, b->ev + b->n, BATCH_EVENTS - b->n);
	}
}

/* ---- the reading threads ----------------------------------------------- */

/* The decoding thread: batches filled ahead, NBATCH at most. */
static void *worker_main(void *arg)
{
	wsprof_trace *t = arg;
	pthread_mutex_lock(&t->lock);
	while (!t->stop && !t->finished) {
		if (t->queued == NBATCH) {
			t->wants_room = true;
			pthread_cond_wait(&t->room, &t->lock);
			t->wants_room = false;
			continue;
		}
		struct batch *b = &t->batches[(t->head + t->queued) % NBATCH];
		pthread_mutex_unlock(&t->lock);
		int err = fill(t, b, true);
		pthread_mutex_lock(&t->lock);
		t->queued++;
		if (err || t->done) {
			t->result = err;
			t->finished = true;
		}
		if (t->wants_more && (t->queued >= NBATCH / 2 || t->finished))
			pthread_cond_signal(&t->more);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* A regular file is read ahead on two threads of their own: one reads
 * and unpacks chunks, one decodes and merges them. Anything else (a pipe)
 * is read as the caller asks for events: a reading thread blocked on a
 * writer that never comes would hold up closing the trace. Each thread
 * that cannot be made leaves its work to the one before it (the caller
 * last). The threads take no signals: they are the program's. */
static void start(wsprof_trace *t)
{
	t->started = true;
	if (!t->regular)
		return;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->more, NULL);
	pthread_cond_init(&t->room, NULL);
	pthread_cond_init(&t->frame_more, NULL);
	pthread_cond_init(&t->frame_room, NULL);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	t->unpacking = pthread_create(&t->unpacker, NULL, unpacker_main, t) == 0;
	t->threaded = pthread_create(&t->thread, NULL, worker_main, t) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* Named, for top and perf: which one a profile's time is on. */
	if (t->unpacking)
		pthread_setname_np(t->unpacker, "wsprof-unpack");
	if (t->threaded)
		pthread_setname_np(t->thread, "wsprof-decode");
}

/* Ask the reading threads to end and wait for them. */
static void threads_end(wsprof_trace *t)
{
	if (!t->started || !t->regular)
		return;
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_cond_signal(&t->room);
	pthread_cond_signal(&t->frame_room);
	pthread_cond_signal(&t->frame_more);
	pthread_mutex_unlock(&t->lock);
	if (t->threaded)
		pthread_join(t->thread, NULL);
	if (t->unpacking)
		pthread_join(t->unpacker, NULL);
	pthread_cond_destroy(&t->frame_room);
	pthread_cond_destroy(&t->frame_more);
	pthread_cond_destroy(&t->room);
	pthread_cond_destroy(&t->more);
	pthread_mutex_destroy(&t->lock);
}

/* Give back the batch handed out and take the next one.
 * @return 1, 0 at the end, or -ENOMEM. */
static int batch_next(wsprof_trace *t)
{
	if (!t->started)
		start(t);
	if (!t->threaded) {
		t->reading = NULL;
		t->queued = 0;
		if (t->done)
			return 0;
		int err = fill(t, &t->batches[0], false);
		if (err)
			return err;
		t->queued = 1;
		t->reading = &t->batches[0];
		t->pos = t->mark = 0;
		return 1;
	}
	pthread_mutex_lock(&t->lock);
	if (t->reading) {
		t->reading = NULL;
		t->head = (t->head + 1) % NBATCH;
		t->queued--;
		if (t->wants_room && t->queued <= NBATCH / 2)
			pthread_cond_signal(&t->room);
	}
	while (!t->queued && !t->finished) {
		t->wants_more = true;
		pthread_cond_wait(&t->more, &t->lock);
		t->wants_more = false;
	}
	int r = t->queued ? 1 : t->result;
	if (t->queued) {
		t->reading = &t->batches[t->head];
		t->pos = t->mark = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}

/* ---- events out (the caller's side) ------------------------------------ */

/* Mark k of the batch being handed out: its stack nodes join the table,
 * and where reading had got becomes what the status says. */
static int mark_apply(wsprof_trace *t, size_t k)
{
	const struct batch *b = t->reading;
	for (size_t i = k ? b->marks[k - 1].defs : 0; i < b->marks[k].defs; i++)
		if (reader_stack_set(t, &b->defs[i]))
			return -ENOMEM;
	t->seen = b->marks[k].at;
	return 0;
}

/* Field by field: every field is set, without zeroing the whole first. */
static void event_out(const struct pending *p, wsprof_event *ev)
{
	static const struct extra none;
	const struct extra *x = p->x ? p->x : &none;
	ev->type = p->type;
	ev->kind = p->kind;
	ev->op = p->op;
	ev->tid = p->tid;
	ev->seq = p->seq;
	ev->time_ns = p->time;
	ev->addr = p->addr;
	ev->size = p->size;
	ev->stack = p->stack;
	ev->device = p->device;
	ev->stream = x->stream;
	ev->handle = x->handle;
	ev->device_free = x->device_free;
	ev->device_total = x->device_total;
	ev->child_pid = x->child_pid;
	ev->path = p->type == WSPROF_EV_ANNOTATE ? NULL : x->path;
	ev->text = p->type == WSPROF_EV_ANNOTATE ? x->path : NULL;
	ev->regions = x->regions;
	ev->nregions = x->nregions;
	ev->build_id = NULL;
	ev->build_id_len = 0;
	ev->heap_totals = p->type == WSPROF_EV_HEAP_TOTALS ? &x->heap : NULL;
}

int wsprof_trace_next(wsprof_trace *t, wsprof_event *ev)
{
	reader_extra_recycle(t, t->current);
	t->current = NULL;
	const struct batch *b;
	for (;;) {
		b = t->reading;
		if (b) {
			while (t->mark < b->nmarks && b->marks[t->mark].events <= t->pos)
				if (mark_apply(t, t->mark++))
					return -ENOMEM;
			if (t->pos < b->n)
				break;
		}
		int r = batch_next(t);
		if (r <= 0)
			return r;
	}
	const struct pending *p = &b->ev[t->pos++];
	struct extra *x = t->current = p->x;
	event_out(p, ev);
	if (p->type == WSPROF_EV_MODULE_LOAD) {
		/* Point the event at the table's copy, which outlives it. */
		if (reader_apply_module(t, p->type, p->addr, x))
			return -ENOMEM;
		const struct module *m = &t->mods[t->nmods - 1];
		ev->path = m->path;
		ev->build_id = m->build_id;
		ev->build_id_len = m->build_id_len;
	} else if (p->type == WSPROF_EV_MODULE_UNLOAD && reader_apply_module(t, p->type, p->addr, x)) {
		return -ENOMEM;
	}
	return 1;
}

void wsprof_trace_get_status(const wsprof_trace *t, wsprof_trace_status *st)
{
	const struct progress *s = &t->seen;
	memset(st, 0, sizeof *st);
	st->chunks = s->chunks;
	st->events = s->events;
	st->error = s->error;
	const struct footer *f = &s->footer;
	st->ended_by_exec = s->exec_seen && !f->seen;
	st->threads = s->threads;
	st->untraced_calls = f->seen ? f->untraced : 0;
	st->end_time_ns = f->seen && f->end > s->last_time ? f->end : s->last_time;
	if (f->seen && f->ending <= WSPROF_END_SIGNAL) {
		st->ending = (int)f->ending;
		st->ending_value = (int)f->ending_value;
		st->finished_by_launcher = f->finisher == 1;
	}
	/* A reader opened at a place counts chunks from the place's index, so
	 * those must match; its events are those after the place, no more
	 * than the footer's. */
	bool events_agree = t->resumed ? s->events <= f->events : f->events == s->events;
	if (f->seen && !s->error && s->eof && f->chunks == s->chunks && events_agree)
		st->complete = 1;
	else if (s->exec_seen && !s->error && s->eof)
		st->complete = 1;
	else if (f->seen && !s->error && s->eof)
		st->error = WSPROF_E_CORRUPT; /* the footer disagrees with what was read */
}

void wsprof_trace_position(const wsprof_trace *t, uint64_t *bytes_read, uint64_t *file_size)
{
	*bytes_read = t->seen.bytes_read;
	*file_size = t->file_size;
}

void wsprof_trace_close(wsprof_trace *t)
{
	if (!t)
		return;
	threads_end(t);
	reader_extra_free(t->current);
	reader_extras_free(t->spare);
	reader_extras_free(atomic_load(&t->recycled));
	for (size_t i = 0; i < t->queued; i++) { /* events never handed out */
		struct batch *b = &t->batches[(t->head + i) % NBATCH];
		for (size_t j = b == t->reading ? t->pos : 0; j < b->n; j++)
			reader_extra_free(b->ev[j].x);
	}
	wsp_free_huge(t->batch_ev, t->batch_evcap, sizeof *t->batch_ev);
	for (size_t i = 0; i < NBATCH; i++) {
		if (!t->huge)
			free(t->batches[i].ev);
		free(t->batches[i].defs);
		free(t->batches[i].marks);
	}
	for (size_t i = 0; i < t->nruns; i++)
		for (size_t j = t->runs[i].next; j < t->runs[i].end; j++)
			reader_extra_free(t->pend[j].x);
	free(t->runs);
	free(t->merge);
	free_big(t, t->pend, t->pendcap, sizeof *t->pend);
	free(t->defined);
	for (size_t i = 0; i < t->nmods; i++)
		reader_module_free(&t->mods[i]);
	free(t->mods);
	free(t->stacks);
	free(t->tids);
	free(t->places);
	wsp_pycodes_free(&t->pycodes);
	free((char *)t->python.path);
	free((char *)t->python.note);
	for (size_t i = 0; i < NFRAMES; i++) {
		free(t->frames[i].zbuf);
		free_big(t, t->frames[i].raw, t->frames[i].rawcap, 1);
	}
	free_big(t, t->columns, 1, sizeof *t->columns);
	free(t->exe);
	free(t->cmdline);
	free(t->tool_version);
	free(t->access_note);
	free(t->allocator);
	free(t->job_id);
	free(t->launcher);
	ZSTD_freeDCtx(t->dctx);
	if (t->f)
		fclose(t->f);
	free(t);
}

/* ---- resuming in the middle (src/resume.h) ------------------------------ */

size_t wsp_trace_chunk_places(const wsprof_trace *t, const struct wsp_chunk_place **places)
{
	*places = t->places;
	return t->nplaces;
}

uint64_t wsp_chunk_places_resume_offset(const struct wsp_chunk_place *p, size_t n, uint64_t seq, uint32_t *index)
{
	*index = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i].max_seq >= seq || p[i].watermark >= seq || i == n - 1) {
			*index = p[i].index;
			return p[i].offset;
		}
	}
	return 0;
}

/* Whether the frame at offset is chunk `index`, the footer, or the end of
 * the file: read its first bytes, then go back there. @return 0 or -EINVAL. */
static int check_place(wsprof_trace *t, uint64_t offset, uint32_t index)
{
	uint8_t h[12];
	size_t got = fread(h, 1, sizeof h, t->f);
	int ok = got == 0 && !ferror(t->f) && offset == t->file_size; /* the end of a truncated trace */
	if (got >= 8 && wsp_get_le32(h) == WSP_MAGIC_FOOTER)
		ok = 1;
	if (got == sizeof h && wsp_get_le32(h) == WSP_MAGIC_CHUNK && wsp_get_le32(h + 4) == WSP_CHUNK_HEADER - 8 &&
	    wsp_get_le32(h + 8) == index)
		ok = 1;
	clearerr(t->f);
	if (fseeko(t->f, (off_t)offset, SEEK_SET) != 0)
		return -errno;
	return ok ? 0 : -EINVAL;
}

int wsp_trace_open_at(const char *path, const struct wsp_resume *r, wsprof_trace **out)
{
	wsprof_trace *t;
	int err = open_trace(path, false, &t);
	*out = NULL;
	if (err)
		return err;
	if (!t->regular)
		err = -ESPIPE;
	else if (r->offset < t->bytes_read || r->offset > t->file_size)
		err = -EINVAL;
	else if (fseeko(t->f, (off_t)r->offset, SEEK_SET) != 0)
		err = -errno;
	else
		err = check_place(t, r->offset, r->chunk);
	if (err) {
		wsprof_trace_close(t);
		return err;
	}
	t->resumed = true;
	t->from_seq = r->seq;
	t->bytes_read = t->w.bytes_read = r->offset;
	t->chunks_read = t->w.chunks = r->chunk;
	t->seen = t->w;
	*out = t;
	return 0;
}
