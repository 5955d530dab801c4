/*
 * reader.c - stream a wsprof trace back into events in global order.
 *
 * Chunks are read and decompressed one at a time. Their events go into a
 * pending list; a SYNC record (or the end of the file) releases, sorted by
 * sequence number, every pending event below its watermark. Memory is the
 * pending window plus the stack and module tables.
 *
 * The pending list is kept as runs, one per segment: a thread numbers its
 * events in order, so each run is sorted already, and a release takes the
 * prefix of each run below the watermark and sorts only what it took.
 * Every event is moved and sorted once, however long it waits (a thread
 * preempted while it held its buffer holds the watermark back for a
 * whole flush interval, while the other threads' events pile up). A
 * pending event is 64 bytes; what few events carry beyond the fields all
 * have (strings, regions, a module, a CUDA stream) hangs off it.
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

#include "check.h"
#include "columns.h"
#include "format.h"
#include "grow.h"
#include "pycode.h"
#include "resume.h"
#include "wsprof/trace.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

struct module {
	uint64_t base;
	char *path;
	uint8_t *build_id;
	size_t build_id_len;
	size_t nsegs;
	uint64_t (*segs)[2];    /* vaddr, memsz */
};

/* What few events carry beyond the fields all have: made for those only. */
struct extra {
	uint64_t stream, handle, device_free, device_total;
	uint32_t child_pid;
	size_t nregions;
	char *path;             /* an exec's path, an annotation's text */
	struct module *mod;     /* a MODULE_LOAD's, until it moves to the table */
	wsprof_region *regions; /* an ACCESS sample's */
	wsprof_heap_totals heap; /* a HEAP_TOTALS record's */
	struct extra *next_free; /* on a list of extras to use again */
};

/* An event on its way out: 64 bytes, which the merge moves. */
struct pending {
	uint64_t seq, time, addr, size, stack;
	uint32_t tid, op;
	int32_t device;
	uint8_t type, kind;
	struct extra *x;        /* owned; NULL for most events */
};

/* A node of the caller's table: 16 bytes, its top bit saying it is
 * defined (ids stay far below 2^63: each is at most 2^20 past the count
 * defined), for a table of millions of nodes on a program like PyTorch. */
struct stack_node {
	uint64_t parent;      /* | NODE_DEFINED */
	uint64_t ip;
};

#define NODE_DEFINED (1ull << 63)

struct stack_def {
	uint64_t id, parent, ip;
};

/* Per-segment delta state. */
struct segment {
	uint32_t tid;
	uint64_t seq, time, addr;
	bool open;
};

/* The FOOTER record's fields. */
struct footer {
	uint64_t end, chunks, events, untraced;
	uint64_t ending, ending_value, finisher; /* 2.2: enum wsp_ending, its value, who wrote it */
	bool seen;
};

/* How far reading has got: what the status and the position tell. */
struct progress {
	uint64_t bytes_read, chunks, events, threads, last_time;
	size_t pycodes;         /* code objects defined (resume.h: read out up to there) */
	struct footer footer;
	int error;
	bool eof, exec_seen;
	bool python;            /* the PYTHON record is read: the caller may read it */
};

/* Events handed over together, in order. Mark k comes before
 * ev[marks[k].events]: the stack nodes defs[marks[k - 1].defs ..
 * marks[k].defs) join the caller's table, and marks[k].at is how far
 * reading had got. A release's events follow a mark of their own; the
 * limits keep a batch's memory bounded. */
#define BATCH_EVENTS 4096
#define BATCH_MARKS 1024
#define BATCH_DEFS 4096
#define NBATCH 8

struct mark {
	size_t events, defs;
	struct progress at;
};

struct batch {
	struct pending *ev;
	size_t n, cap;
	struct stack_def *defs;
	size_t ndefs, defcap;
	struct mark *marks;
	size_t nmarks, markcap;
};

/* A frame of the file read ahead: a chunk's records (result 1), or the
 * end (0, the footer if there was one) or damage (an error); with how far
 * the file had been read. The unpacking thread fills the next of NFRAMES
 * while the chunk of another is decoded: a chunk's bytes are unpacked
 * ahead by one chunk at most. */
#define NFRAMES 2

struct frame {
	int result;
	const uint8_t *records;
	size_t len;
	bool columns;               /* records in the column layout */
	uint64_t offset;            /* where the frame starts in the file */
	uint32_t index;             /* a chunk's index */
	uint64_t bytes_read;
	struct footer footer;
	uint8_t *zbuf, *raw;        /* compressed, decompressed */
	size_t zcap, rawcap;
};

struct wsprof_trace {
	FILE *f;
	uint64_t file_size;       /* for wsprof_trace_position; 0: not a regular file */
	bool regular;             /* read ahead on threads */
	bool live;                /* still being written: the end of the file is not the end (open_live) */
	bool huge;                /* large buffers in huge pages (see grow_big) */
	bool resumed;             /* opened at a place (resume.h): the footer's counts are the whole file's */
	uint64_t from_seq;        /* resumed: events below it are dropped */
	wsprof_process proc;
	char *exe, *cmdline, *tool_version, *access_note, *allocator, *job_id, *launcher;

	/* The unpacking side: the unpacking thread's, or the caller's without one. */
	ZSTD_DCtx *dctx;
	uint64_t bytes_read, chunks_read;
	struct frame frames[NFRAMES];

	/* The decoding side: the decoding thread's, or the caller's without one. */
	struct frame *decoding;   /* frames[fhead], whose chunk is being decoded */
	struct wsp_cursor chunk;  /* undecoded rest of the current chunk, in rows */
	struct wsp_col_iter iter; /* or in the column layout */
	struct wsp_columns *columns; /* the column layout's decoder state */
	bool in_columns;
	struct segment seg;       /* delta state of its open segment */
	bool in_chunk;
	bool done;                /* the end is marked in a batch */
	struct progress w;        /* how far it has got */
	struct wsp_chunk_place place; /* of the chunk being decoded */
	struct wsp_chunk_place *places; /* of those decoded, then the end */
	size_t nplaces, placecap;

	struct pending *pend;     /* events not yet released, in runs (holes between) */
	size_t npend, pendcap;    /* slots used, holes included */
	struct run { size_t next, end; } *runs; /* pend[next..end) of one segment, sorted */
	size_t nruns, runcap, nlive; /* nlive: events in runs */
	size_t *merge, mergecap;  /* a release's stops and heap: 2 per run */
	size_t nheap;             /* runs in the heap; nonzero while a release is under way */
	bool run_open;            /* the last run takes the next event */
	/* The checked build's (src/check.h): events go out in seq order
	 * (release_emit) unless the trace broke it: a thread's numbers
	 * wrapped, or an event came in below one already out (a SYNC's
	 * promise broken). */
	bool disordered;
	uint64_t out_seq;         /* the last event released */
	struct batch *filling;    /* the batch that stack nodes go to */

	uint64_t *defined;        /* a bit per stack id defined */
	size_t defwords;
	uint64_t defined_stacks;  /* distinct ids defined */

	uint32_t *tids;           /* open-addressing set of thread ids (capacity a power of 2) */
	size_t tidcap;
	uint32_t last_tid;        /* the one noted last */

	/* Between the sides (under lock once the threads run). */
	size_t fhead, nframes;    /* frames[fhead..fhead+nframes) (mod NFRAMES) read, in order */
	struct batch batches[NBATCH];
	struct pending *batch_ev; /* their events, BATCH_EVENTS each */
	size_t batch_evcap;
	size_t head, queued;      /* batches[head..head+queued) (mod NBATCH) filled, in order */
	bool started, unpacking, threaded, stop, finished; /* unpacking, threaded: the threads run */
	bool wants_room, wants_more; /* a side waits for the other (woken half-way: few wake-ups) */
	int result;               /* how the decoding thread finished: 0 or -ENOMEM */
	pthread_t thread, unpacker;
	pthread_mutex_t lock;
	pthread_cond_t more, room, frame_more, frame_room;

	/* The caller's side. */
	struct batch *reading;    /* batches[head], being handed out */
	size_t pos, mark;         /* its next event and next mark */
	struct extra *current;    /* of the event last handed out */
	/* Extras handed out and done with, to use again (a pool allocation,
	 * a CUDA one or an annotation's text takes one per event, and malloc
	 * and free on two threads cost more than decoding it): the caller's
	 * thread pushes them, the decoder takes the whole list at once into
	 * its own spare list. */
	struct extra *_Atomic recycled;
	struct extra *spare;
	struct progress seen;     /* as of the event last handed out */

	struct stack_node *stacks;
	size_t nstacks;           /* table capacity */
	bool forget_stacks;       /* wsprof_trace_forget_stacks: nodes checked, not kept */

	struct module *mods;
	size_t nmods, modcap;

	/* Python (2.3): written by the decoding side (pycode.h says why the
	 * caller may read the codes meanwhile; the PYTHON record once a mark
	 * says it was read). */
	struct wsp_pycodes pycodes;
	wsprof_python python;
};

/* Room in one of the reader's large reused buffers (pending events, the
 * batches, the column decoder's state, a chunk unpacked): in huge pages
 * for a trace large enough to fill them (grow.h: a fresh page costs ~13
 * us here), on the heap for a small one, which would pay more to set
 * them up than they save. */
#define HUGE_FROM ((uint64_t)1 << 20)

static int grow_big(const wsprof_trace *t, void *array, size_t *cap, size_t need, size_t elem)
{
	return t->huge ? wsp_grow_huge(array, cap, need, elem) : wsp_grow(array, cap, need, elem);
}

static void *alloc_big(const wsprof_trace *t, size_t n)
{
	return t->huge ? wsp_alloc_huge(n) : malloc(n);
}

static void free_big(const wsprof_trace *t, void *array, size_t cap, size_t elem)
{
	if (t->huge)
		wsp_free_huge(array, cap, elem);
	else
		free(array);
}

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


static char *dup_bytes(const uint8_t *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

static void module_free(struct module *m)
{
	if (!m)
		return;
	free(m->path);
	free(m->build_id);
	free(m->segs);
}

/* What an extra owns. */
static void extra_clear(struct extra *x)
{
	free(x->path);
	free(x->regions);
	if (x->mod) {
		module_free(x->mod);
		free(x->mod);
	}
}

static void extra_free(struct extra *x)
{
	if (!x)
		return;
	extra_clear(x);
	free(x);
}

/* A segment is one thread's: most events are of the thread noted last. */
static int tid_note(wsprof_trace *t, uint32_t tid)
{
	if (tid && tid == t->last_tid)
		return 0;
	t->last_tid = tid;
	if (t->w.threads * 2 >= t->tidcap) {
		size_t ncap = t->tidcap ? t->tidcap * 2 : 64;
		uint32_t *n = calloc(ncap, sizeof *n);
		if (!n)
			return -ENOMEM;
		for (size_t i = 0; i < t->tidcap; i++) {
			if (!t->tids[i])
				continue;
			size_t j = t->tids[i] * 2654435761u & (ncap - 1);
			while (n[j])
				j = (j + 1) & (ncap - 1);
			n[j] = t->tids[i];
		}
		free(t->tids);
		t->tids = n;
		t->tidcap = ncap;
	}
	size_t j = (uint64_t)tid * 2654435761u & (t->tidcap - 1);
	while (t->tids[j] && t->tids[j] != tid)
		j = (j + 1) & (t->tidcap - 1);
	if (!t->tids[j]) {
		t->tids[j] = tid;
		t->w.threads++;
	}
	return 0;
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

static char *get_string(struct wsp_cursor *c)
{
	size_t n;
	const uint8_t *s = wsp_get_bytes(c, &n);
	return dup_bytes(s ? s : (const uint8_t *)"", s ? n : 0);
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
			t->exe = get_string(&r);
			size_t cmdlen;
			const uint8_t *cmd = wsp_get_bytes(&r, &cmdlen);
			if (cmdlen && cmd[cmdlen - 1] == 0)
				cmdlen--; /* /proc/self/cmdline ends each argument with a NUL */
			t->cmdline = dup_bytes(cmd ? cmd : (const uint8_t *)"", cmd ? cmdlen : 0);
			for (size_t i = 0; t->cmdline && i < cmdlen; i++) /* NULs between arguments -> spaces */
				if (!t->cmdline[i])
					t->cmdline[i] = ' ';
			t->tool_version = get_string(&r);
			wsp_get_field(&r); /* page size */
			t->proc.parent_traced_pid = (uint32_t)wsp_get_field(&r);
			if (!t->exe || !t->cmdline || !t->tool_version)
				return -ENOMEM;
			t->proc.rank = (int64_t)wsp_get_field(&r) - 1; /* 2.4: rank + 1, 0 none */
			t->proc.job_size = wsp_get_field(&r);
			if (r.p < r.end) {
				free(t->job_id);
				free(t->launcher);
				t->job_id = get_string(&r);
				t->launcher = get_string(&r);
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
			t->access_note = get_string(&r);
			if (!t->access_note)
				return -ENOMEM;
			t->proc.sample_bytes = wsp_get_field(&r);
			t->proc.release_pages = (unsigned)wsp_get_field(&r);
			if (r.p < r.end) {
				free(t->allocator);
				if (!(t->allocator = get_string(&r)))
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

/* ---- chunks and records (the worker's side) -------------------------- */

/* Stack ids come from one counter and each is defined once, the ones still
 * in other threads' buffers a little later: an id far beyond the count of
 * those defined is corruption, not a reason to allocate. (Far beyond the
 * highest would not do: a run of far jumps, each from the last, makes a
 * few hundred bytes ask for gigabytes.) The node itself goes to the
 * caller's table with the batch being filled. */
static int add_stack(wsprof_trace *t, uint64_t id, uint64_t parent, uint64_t ip)
{
	if (id == 0 || id > t->defined_stacks + (1u << 20))
		return WSPROF_E_CORRUPT;
	size_t word = (size_t)(id / 64);
	if (word >= t->defwords) {
		size_t cap = t->defwords;
		if (wsp_grow(&t->defined, &cap, word + 1, sizeof *t->defined))
			return -ENOMEM;
		memset(t->defined + t->defwords, 0, (cap - t->defwords) * sizeof *t->defined);
		t->defwords = cap;
	}
	uint64_t bit = 1ull << (id % 64);
	if (!(t->defined[word] & bit)) {
		t->defined[word] |= bit;
		t->defined_stacks++;
	}
	struct batch *b = t->filling;
	if (wsp_grow(&b->defs, &b->defcap, b->ndefs + 1, sizeof *b->defs))
		return -ENOMEM;
	b->defs[b->ndefs++] = (struct stack_def){ id, parent, ip };
	return 0;
}

static struct pending *pending_push(wsprof_trace *t, struct segment *s, uint64_t dseq, uint64_t dtime)
{
	if (t->npend == t->pendcap && grow_big(t, &t->pend, &t->pendcap, t->npend + 1, sizeof *t->pend))
		return NULL;
	if (__builtin_expect(!t->run_open || !t->nruns, 0)) {
		if (wsp_grow(&t->runs, &t->runcap, t->nruns + 1, sizeof *t->runs))
			return NULL;
		t->runs[t->nruns++] = (struct run){ t->npend, t->npend };
		t->run_open = true;
	}
	t->runs[t->nruns - 1].end++;
	t->nlive++;
	if (WSP_CHECKED && (s->seq + dseq < s->seq || s->seq + dseq < t->out_seq))
		t->disordered = true;
	s->seq += dseq;
	s->time += dtime;
	if (s->time > t->w.last_time)
		t->w.last_time = s->time;
	struct pending *p = &t->pend[t->npend++];
	*p = (struct pending){ .seq = s->seq, .time = s->time, .tid = s->tid, .device = -1 };
	return p;
}

static struct extra *extra_of(wsprof_trace *t, struct pending *p)
{
	if (p->x)
		return p->x;
	if (!t->spare)
		t->spare = atomic_exchange_explicit(&t->recycled, NULL, memory_order_acquire);
	struct extra *x = t->spare;
	if (x) {
		t->spare = x->next_free;
		*x = (struct extra){ 0 };
	} else {
		x = calloc(1, sizeof *x);
	}
	return p->x = x;
}

/* An extra handed out is done with: what it owns is freed, it waits to be
 * used again (extra_of clears it then). */
static void extra_recycle(wsprof_trace *t, struct extra *x)
{
	if (!x)
		return;
	extra_clear(x);
	x->next_free = atomic_load_explicit(&t->recycled, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&t->recycled, &x->next_free, x, memory_order_release,
						      memory_order_relaxed))
		;
}

static void extras_free(struct extra *x)
{
	for (struct extra *next; x; x = next) {
		next = x->next_free;
		free(x);
	}
}

/* A stream and a handle, kept only when there are any. */
static int put_stream_handle(wsprof_trace *t, struct pending *p, uint64_t stream, uint64_t handle)
{
	if (!stream && !handle)
		return 0;
	struct extra *x = extra_of(t, p);
	if (!x)
		return -ENOMEM;
	x->stream = stream;
	x->handle = handle;
	return 0;
}

static uint64_t get_addr(struct segment *s, struct wsp_cursor *r)
{
	s->addr += (uint64_t)wsp_unzigzag(wsp_get_field(r));
	return s->addr;
}

/* A device ordinal, written plus one (0: none). One that no int holds is
 * corrupt. */
static int get_device(struct wsp_cursor *r)
{
	uint64_t d = wsp_get_field(r);
	if (d > (uint64_t)INT_MAX + 1) {
		r->bad = true;
		return -1;
	}
	return d ? (int)(d - 1) : -1;
}

/* CUDA events append the device (+1, 0: none), the stream and, for
 * allocations, the VMM handle a mapping maps (format 1.1). Other events
 * end before them: no call for those. */
static int get_cuda_fields(wsprof_trace *t, struct pending *p, struct wsp_cursor *r, bool handle)
{
	p->device = get_device(r);
	uint64_t stream = wsp_get_field(r);
	return put_stream_handle(t, p, stream, handle ? wsp_get_field(r) : 0);
}

static int decode_module_load(wsprof_trace *t, struct pending *p, struct wsp_cursor *r)
{
	p->type = WSPROF_EV_MODULE_LOAD;
	struct extra *x = extra_of(t, p);
	struct module *m = x ? x->mod = calloc(1, sizeof *m) : NULL;
	if (!m)
		return -ENOMEM;
	m->base = p->addr = wsp_get_field(r);
	size_t n;
	const uint8_t *path = wsp_get_bytes(r, &n);
	const uint8_t *bid = wsp_get_bytes(r, &m->build_id_len);
	uint64_t nsegs = wsp_get_field(r);
	if (r->bad || nsegs > (uint64_t)(r->end - r->p))
		return WSPROF_E_CORRUPT;
	m->path = dup_bytes(path, n);
	m->build_id = (uint8_t *)dup_bytes(bid, m->build_id_len);
	m->segs = calloc(nsegs ? nsegs : 1, sizeof *m->segs);
	if (!m->path || !m->build_id || !m->segs)
		return -ENOMEM;
	for (uint64_t i = 0; i < nsegs; i++) {
		m->segs[i][0] = wsp_get_field(r);
		m->segs[i][1] = wsp_get_field(r);
		wsp_get_field(r); /* p_flags */
	}
	m->nsegs = (size_t)nsegs;
	return r->bad ? WSPROF_E_CORRUPT : 0;
}

static int decode_access(wsprof_trace *t, struct pending *p, struct wsp_cursor *r)
{
	p->type = WSPROF_EV_ACCESS;
	p->op = (unsigned)wsp_get_field(r);
	p->size = wsp_get_field(r);
	uint64_t n = wsp_get_field(r);
	if (n > (uint64_t)(r->end - r->p) / 2) { /* each region takes two bytes at least */
		r->bad = true;
		return 0;
	}
	struct extra *x = extra_of(t, p);
	if (!x || !(x->regions = malloc((n ? n : 1) * sizeof *x->regions)))
		return -ENOMEM;
	uint64_t end = 0;
	for (uint64_t i = 0; i < n; i++) {
		x->regions[i].addr = end + wsp_get_field(r);
		x->regions[i].len = wsp_get_field(r);
		end = x->regions[i].addr + x->regions[i].len;
	}
	x->nregions = (size_t)n;
	return 0;
}

/* A string the event owns: an annotation's text (if any), an exec's path. */
static int put_path(wsprof_trace *t, struct pending *p, const uint8_t *s, size_t n)
{
	struct extra *x = extra_of(t, p);
	return x && (x->path = dup_bytes(s, n)) ? 0 : -ENOMEM;
}

static int decode_event(wsprof_trace *t, struct segment *s, uint64_t type, struct wsp_cursor *r)
{
	uint64_t dseq = wsp_get_field(r), dtime = wsp_get_field(r);
	struct pending *p = pending_push(t, s, dseq, dtime);
	if (!p)
		return -ENOMEM;
	int err = 0;
	unsigned kind = 0;
	size_t n;
	const uint8_t *text;
	switch (type) {
	case WSP_REC_ALLOC:
	case WSP_REC_FAIL:
		p->type = type == WSP_REC_ALLOC ? WSPROF_EV_ALLOC : WSPROF_EV_FAIL;
		kind = (unsigned)wsp_get_field(r);
		p->op = (unsigned)wsp_get_field(r);
		if (type == WSP_REC_ALLOC)
			p->addr = get_addr(s, r);
		p->size = wsp_get_field(r);
		p->stack = wsp_get_field(r);
		err = r->p < r->end ? get_cuda_fields(t, p, r, true) : 0;
		break;
	case WSP_REC_FREE:
	case WSP_REC_MOVE:
	case WSP_REC_UNMAP:
		p->type = type == WSP_REC_FREE ? WSPROF_EV_FREE
			: type == WSP_REC_MOVE ? WSPROF_EV_MOVE : WSPROF_EV_UNMAP;
		kind = (unsigned)wsp_get_field(r);
		p->op = (unsigned)wsp_get_field(r);
		p->addr = get_addr(s, r);
		if (type != WSP_REC_FREE)
			p->size = wsp_get_field(r);
		else
			err = r->p < r->end ? get_cuda_fields(t, p, r, false) : 0;
		break;
	case WSP_REC_STREAM_REACHED:
		p->type = WSPROF_EV_STREAM_REACHED;
		kind = (unsigned)wsp_get_field(r);
		p->op = (unsigned)wsp_get_field(r);
		p->addr = get_addr(s, r);
		err = put_stream_handle(t, p, wsp_get_field(r), 0);
		break;
	case WSP_REC_ANNOTATE:
		p->type = WSPROF_EV_ANNOTATE;
		p->op = (unsigned)wsp_get_field(r);
		p->addr = get_addr(s, r);
		p->size = wsp_get_field(r);
		err = put_stream_handle(t, p, 0, wsp_get_field(r));
		text = wsp_get_bytes(r, &n);
		if (!err && !r->bad && n)
			err = put_path(t, p, text, n);
		break;
	case WSP_REC_ACCESS:
		err = decode_access(t, p, r);
		break;
	case WSP_REC_RSS:
		p->type = WSPROF_EV_RSS;
		p->size = wsp_get_field(r);
		break;
	case WSP_REC_HEAP_TOTALS: {
		p->type = WSPROF_EV_HEAP_TOTALS;
		struct extra *x = extra_of(t, p);
		if (!x) {
			err = -ENOMEM;
			break;
		}
		wsprof_heap_totals *h = &x->heap;
		uint64_t *fields[] = { &h->allocations, &h->frees, &h->requested, &h->given, &h->given_back, &h->peak, &h->peak_ns };
		for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
			*fields[i] = wsp_get_field(r);
		break;
	}
	case WSP_REC_RECORDING:
		p->type = WSPROF_EV_RECORDING;
		p->size = wsp_get_field(r) ? 1 : 0;
		p->op = (unsigned)wsp_get_field(r);
		if (p->op >= WSPROF_REC_CAUSE_COUNT)
			err = WSPROF_E_CORRUPT;
		break;
	case WSP_REC_DEVICE_MEMORY: {
		p->type = WSPROF_EV_DEVICE_MEMORY;
		p->device = get_device(r);
		struct extra *x = extra_of(t, p);
		if (!x) {
			err = -ENOMEM;
			break;
		}
		x->device_free = wsp_get_field(r);
		x->device_total = wsp_get_field(r);
		break;
	}
	case WSP_REC_MODULE_LOAD:
		err = decode_module_load(t, p, r);
		break;
	case WSP_REC_MODULE_UNLOAD:
		p->type = WSPROF_EV_MODULE_UNLOAD;
		p->addr = wsp_get_field(r);
		break;
	case WSP_REC_FORK: {
		p->type = WSPROF_EV_FORK;
		struct extra *x = extra_of(t, p);
		if (x)
			x->child_pid = (uint32_t)wsp_get_field(r);
		else
			err = -ENOMEM;
		break;
	}
	case WSP_REC_EXEC:
		p->type = WSPROF_EV_EXEC;
		text = wsp_get_bytes(r, &n);
		if (!r->bad)
			err = put_path(t, p, text, n);
		break;
	}
	if (r->bad || kind >= WSPROF_KIND_COUNT)
		err = err ? err : WSPROF_E_CORRUPT;
	if (err) {
		extra_free(p->x);
		t->npend--;
		t->runs[t->nruns - 1].end--;
		t->nlive--;
		return err;
	}
	p->kind = (uint8_t)kind;
	if (type <= WSP_REC_UNMAP)
		t->w.events++;
	/* Threads are the program's: wsprof's own (writer, sampler) record only
	 * samples, never an allocation or an annotation. */
	if (type <= WSP_REC_UNMAP || type == WSP_REC_ANNOTATE)
		return tid_note(t, s->tid);
	return 0;
}

/* An ALLOC or FREE of the column layout, its fields decoded already. */
static int decode_compact(wsprof_trace *t, struct segment *s, const struct wsp_col_record *cr)
{
	if (cr->kind >= WSPROF_KIND_COUNT)
		return WSPROF_E_CORRUPT;
	struct pending *p = pending_push(t, s, cr->dseq, cr->dtime);
	if (!p)
		return -ENOMEM;
	p->type = cr->type == WSP_REC_ALLOC ? WSPROF_EV_ALLOC : WSPROF_EV_FREE;
	p->kind = (uint8_t)cr->kind;
	p->op = (unsigned)cr->op;
	p->addr = s->addr = cr->addr; /* the row format's deltas go on from it */
	p->size = cr->size;
	p->stack = cr->stack;
	t->w.events++;
	return tid_note(t, s->tid);
}

/* The next record of the chunk being decoded: 1 with its type and a
 * cursor over its payload (for an ALLOC or FREE of the column layout,
 * cr->compact and its fields instead), 0 at the chunk's end, or damage. */
static int next_record(wsprof_trace *t, uint64_t *type, struct wsp_cursor *r, struct wsp_col_record *cr)
{
	if (t->in_columns) {
		int got = wsp_columns_next(&t->iter, cr);
		if (got <= 0)
			return got < 0 ? WSPROF_E_CORRUPT : 0;
		*type = cr->type;
		*r = cr->compact ? (struct wsp_cursor){ NULL, NULL, false }
				 : (struct wsp_cursor){ cr->payload, cr->payload + cr->len, false };
		return 1;
	}
	struct wsp_cursor *c = &t->chunk;
	if (c->p >= c->end)
		return 0;
	*type = wsp_get_varint(c);
	uint64_t rlen = wsp_get_varint(c);
	if (c->bad || rlen > (uint64_t)(c->end - c->p))
		return WSPROF_E_CORRUPT;
	*r = (struct wsp_cursor){ c->p, c->p + rlen, false };
	c->p += rlen;
	cr->compact = false;
	return 1;
}

/* Drop emptied runs and, once holes are most of the list, close them up:
 * each event is moved at most a constant number of times on average. */
static void pending_compact(wsprof_trace *t)
{
	size_t kept = 0;
	for (size_t i = 0; i < t->nruns; i++)
		if (t->runs[i].next < t->runs[i].end || (i == t->nruns - 1 && t->run_open))
			t->runs[kept++] = t->runs[i];
	t->nruns = kept;
	if (t->nlive * 2 >= t->npend)
		return;
	size_t to = 0;
	for (size_t i = 0; i < t->nruns; i++) {
		size_t n = t->runs[i].end - t->runs[i].next;
		memmove(t->pend + to, t->pend + t->runs[i].next, n * sizeof *t->pend);
		t->runs[i] = (struct run){ to, to + n };
		to += n;
	}
	t->npend = to;
}

/* A reader opened at a place (resume.h) hands out nothing below seq:
 * each run's prefix below it goes (a run is sorted), at each release. */
static void pending_drop_below(wsprof_trace *t, uint64_t seq)
{
	for (size_t i = 0; i < t->nruns; i++) {
		struct run *r = &t->runs[i];
		for (; r->next < r->end && t->pend[r->next].seq < seq; r->next++, t->nlive--) {
			extra_free(t->pend[r->next].x);
			t->pend[r->next].x = NULL;
		}
	}
}

/* The number of the next event of the run at heap[k]. */
#define HEAD(k) (t->pend[t->runs[heap[k]].next].seq)

/* Begin a release: every pending event with seq < watermark (every one,
 * with all) is to go out, sorted, by release_emit. It is a k-way merge of
 * the runs' prefixes, each event copied once. t->nheap is nonzero while
 * it lasts. @return 0 or -ENOMEM. */
static int release_begin(wsprof_trace *t, uint64_t watermark, bool all)
{
	if (!t->nruns)
		return 0;
	if (t->from_seq)
		pending_drop_below(t, t->from_seq);
	/* Where each run's prefix below the watermark stops, and a heap of
	 * runs by the number of their next event. */
	if (wsp_grow(&t->merge, &t->mergecap, 2 * t->nruns, sizeof *t->merge))
		return -ENOMEM;
	size_t *stop = t->merge, *heap = t->merge + t->nruns, nh = 0;
	for (size_t i = 0; i < t->nruns; i++) {
		const struct run *r = &t->runs[i];
		size_t j = all ? r->end : r->next;
		while (j < r->end && t->pend[j].seq < watermark)
			j++;
		stop[i] = j;
	}
	for (size_t i = 0; i < t->nruns; i++) {
		if (stop[i] == t->runs[i].next)
			continue;
		size_t k = nh++; /* sift up */
		heap[k] = i;
		while (k && HEAD((k - 1) / 2) > HEAD(k)) {
			size_t up = (k - 1) / 2, tmp = heap[up];
			heap[up] = heap[k];
			heap[k] = tmp;
			k = up;
		}
	}
	t->nheap = nh;
	if (!nh && t->from_seq)
		pending_compact(t); /* all of it dropped */
	return 0;
}

/* Move up to room events of the release under way to out, in order.
 * @return how many. */
static size_t release_emit(wsprof_trace *t, struct pending *out, size_t room)
{
	size_t *stop = t->merge, *heap = t->merge + t->nruns, nh = t->nheap, k = 0;
	if (nh == 2) { /* the usual case of a program's two busiest threads: without a branch on the order */
		struct run *a = &t->runs[heap[0]], *b = &t->runs[heap[1]];
		const struct pending *pa = t->pend + a->next, *ea = t->pend + stop[heap[0]];
		const struct pending *pb = t->pend + b->next, *eb = t->pend + stop[heap[1]];
		while (k < room && pa < ea && pb < eb) {
			bool first = pa->seq < pb->seq;
			out[k++] = *(first ? pa : pb);
			pa += first;
			pb += !first;
		}
		a->next = (size_t)(pa - t->pend);
		b->next = (size_t)(pb - t->pend);
		if (pa == ea)
			heap[0] = heap[1];
		if (pa == ea || pb == eb)
			nh = 1;
		else if (pb->seq < pa->seq) { /* room ran out: the smaller head on top */
			size_t tmp = heap[0];
			heap[0] = heap[1];
			heap[1] = tmp;
		}
	}
	while (nh && k < room) {
		struct run *r = &t->runs[heap[0]];
		if (nh == 1) { /* one run left: the rest of its prefix at once */
			size_t n = stop[heap[0]] - r->next;
			n = n < room - k ? n : room - k;
			memcpy(out + k, t->pend + r->next, n * sizeof *out);
			r->next += n;
			k += n;
			nh = r->next < stop[heap[0]];
			break;
		}
		out[k++] = t->pend[r->next++];
		if (r->next == stop[heap[0]])
			heap[0] = heap[--nh];
		for (size_t i = 0;;) { /* sift down */
			size_t a = 2 * i + 1, b = a + 1, m = i;
			if (a < nh && HEAD(a) < HEAD(m))
				m = a;
			if (b < nh && HEAD(b) < HEAD(m))
				m = b;
			if (m == i)
				break;
			size_t tmp = heap[m];
			heap[m] = heap[i];
			heap[i] = tmp;
			i = m;
		}
	}
#undef HEAD
	for (size_t i = 0; WSP_CHECKED && i < k; i++) {
		WSP_ASSERT_MSG(t->disordered || out[i].seq >= t->out_seq, "event %llu released after %llu",
			       (unsigned long long)out[i].seq, (unsigned long long)t->out_seq);
		t->out_seq = out[i].seq;
	}
	t->nheap = nh;
	t->nlive -= k;
	if (!nh)
		pending_compact(t);
	return k;
}

/* Decode the current chunk's records until a SYNC begins a release (1),
 * the chunk ends (0), or the batch being filled holds BATCH_DEFS stack
 * nodes (2): only the events between two SYNCs are ever held. */
static int read_pycode(wsprof_trace *t, struct wsp_cursor *r)
{
	uint64_t id = wsp_get_field(r), first = wsp_get_field(r);
	size_t qn, fn, ln;
	const uint8_t *q = wsp_get_bytes(r, &qn), *f = wsp_get_bytes(r, &fn), *l = wsp_get_bytes(r, &ln);
	if (r->bad || !q || !f || !l)
		return WSPROF_E_CORRUPT;
	int err = wsp_pycodes_add(&t->pycodes, id, first, dup_bytes(q, qn), dup_bytes(f, fn),
				  (uint8_t *)dup_bytes(l, ln), ln);
	t->w.pycodes = t->pycodes.count;
	return err;
}

/* A stamped record, not an event: its deltas still move the segment's. */
static int read_python(wsprof_trace *t, struct segment *seg, struct wsp_cursor *r)
{
	seg->seq += wsp_get_field(r);
	seg->time += wsp_get_field(r);
	uint64_t version = wsp_get_field(r), frames = wsp_get_field(r), objects = wsp_get_field(r);
	char *path = get_string(r), *note = get_string(r);
	if (!path || !note) {
		free(path);
		free(note);
		return -ENOMEM;
	}
	if (r->bad || t->python.seen) { /* one interpreter a process */
		free(path);
		free(note);
		return r->bad ? WSPROF_E_CORRUPT : 0;
	}
	t->python = (wsprof_python){ 1, (uint32_t)version, frames != 0, (unsigned)objects, path, note };
	t->w.python = true;
	return 0;
}

/* A segment's events are in seq order: its last seq, once it has pushed
 * one (its run is open), is the highest of the segment, which the chunk's
 * place keeps. Nothing to do for each event. */
static void segment_close(wsprof_trace *t, const struct segment *seg)
{
	if (seg->open && t->run_open && seg->seq > t->place.max_seq)
		t->place.max_seq = seg->seq;
}

static int place_add(wsprof_trace *t, const struct wsp_chunk_place *p)
{
	if (wsp_grow(&t->places, &t->placecap, t->nplaces + 1, sizeof *t->places))
		return -ENOMEM;
	t->places[t->nplaces++] = *p;
	return 0;
}

static int decode_some(wsprof_trace *t)
{
	struct segment *seg = &t->seg;
	for (;;) {
		uint64_t type;
		struct wsp_cursor r;
		struct wsp_col_record cr;
		int got = next_record(t, &type, &r, &cr);
		if (got <= 0) {
			if (got < 0)
				return got;
			break;
		}
		int err = 0;
		switch (type) {
		case WSP_REC_SEGMENT:
			segment_close(t, seg);
			t->run_open = false; /* its events are a run of their own */
			seg->tid = (uint32_t)wsp_get_field(&r);
			seg->seq = wsp_get_field(&r);
			seg->time = wsp_get_field(&r);
			seg->addr = 0;
			seg->open = true;
			break;
		case WSP_REC_SYNC: {
			uint64_t watermark = wsp_get_field(&r), time = wsp_get_field(&r);
			if (time > t->w.last_time)
				t->w.last_time = time; /* a quiet program's trace still shows how long it ran */
			if (watermark > t->place.watermark)
				t->place.watermark = watermark;
			err = release_begin(t, watermark, false);
			break;
		}
		case WSP_REC_STACK: {
			uint64_t id = wsp_get_field(&r), parent = wsp_get_field(&r), ip = wsp_get_field(&r);
			err = r.bad ? WSPROF_E_CORRUPT : add_stack(t, id, parent, ip);
			break;
		}
		case WSP_REC_PYFRAME: {
			uint64_t id = wsp_get_field(&r), parent = wsp_get_field(&r), code = wsp_get_field(&r),
				 instr = wsp_get_field(&r);
			err = r.bad || code >> 39 || instr > 0xffffff
				      ? WSPROF_E_CORRUPT
				      : add_stack(t, id, parent, WSPROF_PYFRAME_IP(code, instr));
			break;
		}
		case WSP_REC_PY_CODE:
			err = read_pycode(t, &r);
			break;
		case WSP_REC_PYTHON:
			if (!seg->open)
				return WSPROF_E_CORRUPT;
			err = read_python(t, seg, &r);
			break;
		case WSP_REC_ALLOC: case WSP_REC_FREE: case WSP_REC_MOVE: case WSP_REC_FAIL:
		case WSP_REC_UNMAP: case WSP_REC_MODULE_LOAD: case WSP_REC_MODULE_UNLOAD:
		case WSP_REC_FORK: case WSP_REC_EXEC: case WSP_REC_STREAM_REACHED: case WSP_REC_DEVICE_MEMORY:
		case WSP_REC_ANNOTATE: case WSP_REC_ACCESS: case WSP_REC_RSS: case WSP_REC_RECORDING:
		case WSP_REC_HEAP_TOTALS:
			if (!seg->open)
				return WSPROF_E_CORRUPT;
			err = cr.compact ? decode_compact(t, seg, &cr) : decode_event(t, seg, type, &r);
			if (type == WSP_REC_EXEC)
				t->w.exec_seen = true;
			break;
		default:
			break; /* a record of a later minor version */
		}
		if (err)
			return err;
		if (r.bad)
			return WSPROF_E_CORRUPT;
		if (t->nheap)
			return 1;
		if (t->filling->ndefs >= BATCH_DEFS)
			return 2;
	}
	segment_close(t, seg);
	t->in_chunk = false;
	t->w.chunks++;
	return place_add(t, &t->place);
}

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
	t->chunk = (struct wsp_cursor){ fr->records, fr->records + fr->len, false };
	t->in_columns = fr->columns;
	if (fr->columns) {
		if (!t->columns && !(t->columns = alloc_big(t, sizeof *t->columns)))
			return -ENOMEM;
		if (wsp_columns_begin(&t->iter, t->columns, fr->records, fr->len) > WSP_CHUNK_RAW_MAX)
			return WSPROF_E_CORRUPT;
	}
	memset(&t->seg, 0, sizeof t->seg);
	t->in_chunk = true;
	return 1;
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
			int err = release_begin(t, 0, true);
			return err ? err : t->nheap ? 1 : 0;
		}
		int r;
		if (t->in_chunk) {
			r = decode_some(t);
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
		if (place_add(t, &end))
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
		b->n += release_emit(t, b->ev + b->n, BATCH_EVENTS - b->n);
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

static int stack_set(wsprof_trace *t, const struct stack_def *d)
{
	if (t->forget_stacks)
		return 0;
	if (d->id >= t->nstacks) {
		size_t cap = t->nstacks, need = (size_t)d->id + 1;
		if (wsp_grow(&t->stacks, &cap, need, sizeof *t->stacks))
			return -ENOMEM;
		memset(t->stacks + t->nstacks, 0, (cap - t->nstacks) * sizeof *t->stacks);
		t->nstacks = cap;
	}
	/* A parent past every id (a damaged trace) stays one, whatever its top bit. */
	uint64_t parent = d->parent < NODE_DEFINED ? d->parent : NODE_DEFINED - 1;
	t->stacks[d->id] = (struct stack_node){ parent | NODE_DEFINED, d->ip };
	return 0;
}

/* Mark k of the batch being handed out: its stack nodes join the table,
 * and where reading had got becomes what the status says. */
static int mark_apply(wsprof_trace *t, size_t k)
{
	const struct batch *b = t->reading;
	for (size_t i = k ? b->marks[k - 1].defs : 0; i < b->marks[k].defs; i++)
		if (stack_set(t, &b->defs[i]))
			return -ENOMEM;
	t->seen = b->marks[k].at;
	return 0;
}

/* Keep the module table in step with the events handed out; the module
 * moves from the event into the table. */
static int apply_module(wsprof_trace *t, int type, uint64_t base, struct extra *x)
{
	if (type == WSPROF_EV_MODULE_UNLOAD) {
		for (size_t i = 0; i < t->nmods; i++) {
			if (t->mods[i].base != base)
				continue;
			module_free(&t->mods[i]);
			t->mods[i] = t->mods[--t->nmods];
			break;
		}
		return 0;
	}
	if (wsp_grow(&t->mods, &t->modcap, t->nmods + 1, sizeof *t->mods))
		return -ENOMEM;
	t->mods[t->nmods++] = *x->mod;
	free(x->mod);
	x->mod = NULL;
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
	extra_recycle(t, t->current);
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
		if (apply_module(t, p->type, p->addr, x))
			return -ENOMEM;
		const struct module *m = &t->mods[t->nmods - 1];
		ev->path = m->path;
		ev->build_id = m->build_id;
		ev->build_id_len = m->build_id_len;
	} else if (p->type == WSPROF_EV_MODULE_UNLOAD && apply_module(t, p->type, p->addr, x)) {
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

void wsprof_trace_forget_stacks(wsprof_trace *t)
{
	t->forget_stacks = true;
	free(t->stacks);
	t->stacks = NULL;
	t->nstacks = 0;
}

size_t wsprof_trace_stack(const wsprof_trace *t, uint64_t stack, uint64_t *ips, size_t max)
{
	size_t depth = 0;
	/* The depth bound also stops a cycle in a corrupt trace. */
	while (stack && stack < t->nstacks && (t->stacks[stack].parent & NODE_DEFINED) && depth < 4096) {
		if (depth < max)
			ips[depth] = t->stacks[stack].ip;
		depth++;
		uint64_t parent = t->stacks[stack].parent & ~NODE_DEFINED;
		if (parent >= stack && parent != 0)
			break; /* parents are always defined first */
		stack = parent;
	}
	return depth;
}

int wsprof_trace_stack_node(const wsprof_trace *t, uint64_t node, uint64_t *parent, uint64_t *ip)
{
	if (!node || node >= t->nstacks || !(t->stacks[node].parent & NODE_DEFINED))
		return 0;
	*parent = t->stacks[node].parent & ~NODE_DEFINED;
	*ip = t->stacks[node].ip;
	return 1;
}

static const struct module *module_covering(const wsprof_trace *t, uint64_t addr)
{
	for (size_t i = 0; i < t->nmods; i++) {
		const struct module *m = &t->mods[i];
		for (size_t s = 0; s < m->nsegs; s++) {
			uint64_t lo = m->base + m->segs[s][0];
			if (addr >= lo && addr - lo < m->segs[s][1])
				return m;
		}
	}
	return NULL;
}

const char *wsprof_trace_module_at(const wsprof_trace *t, uint64_t addr, uint64_t *base)
{
	const struct module *m = module_covering(t, addr);
	if (m && base)
		*base = m->base;
	return m ? m->path : NULL;
}

int wsprof_trace_module_info_at(const wsprof_trace *t, uint64_t addr, wsprof_module_info *info)
{
	const struct module *m = module_covering(t, addr);
	if (!m)
		return 0;
	info->path = m->path;
	info->base = m->base;
	info->build_id = m->build_id_len ? m->build_id : NULL;
	info->build_id_len = m->build_id_len;
	return 1;
}

int wsprof_trace_module_span_at(const wsprof_trace *t, uint64_t addr, uint64_t *start, uint64_t *end)
{
	const struct module *m = module_covering(t, addr);
	if (!m)
		return 0;
	*start = UINT64_MAX;
	*end = 0;
	for (size_t s = 0; s < m->nsegs; s++) {
		uint64_t lo = m->base + m->segs[s][0];
		*start = lo < *start ? lo : *start;
		*end = lo + m->segs[s][1] > *end ? lo + m->segs[s][1] : *end;
	}
	return 1;
}

void wsprof_trace_close(wsprof_trace *t)
{
	if (!t)
		return;
	threads_end(t);
	extra_free(t->current);
	extras_free(t->spare);
	extras_free(atomic_load(&t->recycled));
	for (size_t i = 0; i < t->queued; i++) { /* events never handed out */
		struct batch *b = &t->batches[(t->head + i) % NBATCH];
		for (size_t j = b == t->reading ? t->pos : 0; j < b->n; j++)
			extra_free(b->ev[j].x);
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
			extra_free(t->pend[j].x);
	free(t->runs);
	free(t->merge);
	free_big(t, t->pend, t->pendcap, sizeof *t->pend);
	free(t->defined);
	for (size_t i = 0; i < t->nmods; i++)
		module_free(&t->mods[i]);
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

int wsp_trace_seed_stack(wsprof_trace *t, uint64_t id, uint64_t parent, uint64_t ip)
{
	if (t->started)
		return -EBUSY;
	/* add_stack's bound, and the batch it notes the node in (no thread yet: it is ours). */
	t->filling = &t->batches[0];
	int err = add_stack(t, id, parent, ip);
	if (err)
		return err == WSPROF_E_CORRUPT ? -EINVAL : err;
	struct batch *b = &t->batches[0];
	return stack_set(t, &b->defs[--b->ndefs]);
}

static char *dup_string(const char *s)
{
	return dup_bytes((const uint8_t *)(s ? s : ""), s ? strlen(s) : 0);
}

int wsp_trace_seed_pycode(wsprof_trace *t, uint64_t id, unsigned firstlineno, const char *qualname,
			  const char *filename, const uint8_t *linetable, size_t linetable_len)
{
	if (t->started)
		return -EBUSY;
	int err = wsp_pycodes_add(&t->pycodes, id, firstlineno, dup_string(qualname), dup_string(filename),
				  (uint8_t *)dup_bytes(linetable ? linetable : (const uint8_t *)"", linetable_len),
				  linetable_len);
	t->w.pycodes = t->seen.pycodes = t->pycodes.count;
	return err;
}

int wsp_trace_seed_python(wsprof_trace *t, const wsprof_python *py)
{
	if (t->started)
		return -EBUSY;
	char *path = dup_string(py->path), *note = dup_string(py->note);
	if (!path || !note) {
		free(path);
		free(note);
		return -ENOMEM;
	}
	free((char *)t->python.path);
	free((char *)t->python.note);
	t->python = *py;
	t->python.seen = 1;
	t->python.path = path;
	t->python.note = note;
	t->w.python = t->seen.python = true;
	return 0;
}

int wsp_trace_seed_module(wsprof_trace *t, uint64_t base, const char *path, const uint8_t *build_id,
			  size_t build_id_len, size_t nsegs, const uint64_t (*segs)[2])
{
	if (t->started)
		return -EBUSY;
	if (wsp_grow(&t->mods, &t->modcap, t->nmods + 1, sizeof *t->mods))
		return -ENOMEM;
	struct module m = { .base = base, .build_id_len = build_id_len, .nsegs = nsegs };
	m.path = dup_string(path);
	m.build_id = (uint8_t *)dup_bytes(build_id ? build_id : (const uint8_t *)"", build_id_len);
	m.segs = nsegs <= SIZE_MAX / sizeof *m.segs ? malloc((nsegs ? nsegs : 1) * sizeof *m.segs) : NULL;
	if (!m.path || !m.build_id || !m.segs) {
		module_free(&m);
		return -ENOMEM;
	}
	if (nsegs)
		memcpy(m.segs, segs, nsegs * sizeof *m.segs);
	t->mods[t->nmods++] = m;
	return 0;
}

int wsp_trace_each_stack_node(const wsprof_trace *t, int (*fn)(void *arg, uint64_t id, uint64_t parent, uint64_t ip),
			      void *arg)
{
	for (size_t id = 1; id < t->nstacks; id++) {
		const struct stack_node *n = &t->stacks[id];
		if (!(n->parent & NODE_DEFINED))
			continue;
		int r = fn(arg, id, n->parent & ~NODE_DEFINED, n->ip);
		if (r)
			return r;
	}
	return 0;
}

/* Up to the count of the last mark applied: those entries were written
 * before the mark was (pycode.h). */
int wsp_trace_each_pycode(const wsprof_trace *t, int (*fn)(void *arg, uint64_t id, const wsprof_pycode *code),
			  void *arg)
{
	for (size_t i = 0; i < t->seen.pycodes; i++) {
		uint64_t id = wsp_pycodes_nth(&t->pycodes, i);
		int r = fn(arg, id, wsp_pycodes_get(&t->pycodes, id));
		if (r)
			return r;
	}
	return 0;
}

int wsp_trace_each_module(const wsprof_trace *t,
			  int (*fn)(void *arg, uint64_t base, const char *path, const uint8_t *build_id,
				    size_t build_id_len, size_t nsegs, const uint64_t (*segs)[2]),
			  void *arg)
{
	for (size_t i = 0; i < t->nmods; i++) {
		const struct module *m = &t->mods[i];
		int r = fn(arg, m->base, m->path, m->build_id_len ? m->build_id : NULL, m->build_id_len, m->nsegs,
			   (const uint64_t (*)[2])m->segs);
		if (r)
			return r;
	}
	return 0;
}
