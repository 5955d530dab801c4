/*
 * reader_internal.h - what the reader's files share (reader.c, decode.c,
 * merge.c, tables.c): struct wsprof_trace, the pending events and their
 * batches, and the functions the files use of each other. Not for users
 * of the reader: they have include/wsprof/trace.h (and resume.h).
 *
 * Three sides touch a trace, each its own fields (struct wsprof_trace
 * says which): the unpacking side (reader.c: chunks read and
 * decompressed), the decoding side (decode.c into pending runs, merge.c
 * out of them in order, reader.c's batches) and the caller's (reader.c's
 * events out, tables.c). Between the sides only under lock.
 */
#ifndef WSP_READER_INTERNAL_H
#define WSP_READER_INTERNAL_H

#include "columns.h"
#include "format.h"
#include "grow.h"
#include "pycode.h"
#include "resume.h"
#include "wsprof/trace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

static inline int grow_big(const wsprof_trace *t, void *array, size_t *cap, size_t need, size_t elem)
{
	return t->huge ? wsp_grow_huge(array, cap, need, elem) : wsp_grow(array, cap, need, elem);
}

static inline void *alloc_big(const wsprof_trace *t, size_t n)
{
	return t->huge ? wsp_alloc_huge(n) : malloc(n);
}

static inline void free_big(const wsprof_trace *t, void *array, size_t cap, size_t elem)
{
	if (t->huge)
		wsp_free_huge(array, cap, elem);
	else
		free(array);
}

/* decode.c: a chunk's records. reader_chunk_begin starts on one (@return
 * 1, or an error); reader_decode_some decodes until a SYNC begins a
 * release (1), the chunk ends (0), or the batch being filled holds
 * BATCH_DEFS stack nodes (2), or damage. Extras: freed, or given back by
 * the caller to be used again. */
int reader_chunk_begin(wsprof_trace *t, const uint8_t *records, size_t len, bool columns);
int reader_decode_some(wsprof_trace *t);
int reader_place_add(wsprof_trace *t, const struct wsp_chunk_place *p);
/* A stack node defined (also seeded, resume.h): checked, and to the batch being filled. */
int reader_add_stack(wsprof_trace *t, uint64_t id, uint64_t parent, uint64_t ip);
char *reader_dup_bytes(const uint8_t *s, size_t n);
char *reader_get_string(struct wsp_cursor *c);
void reader_module_free(struct module *m);
void reader_extra_free(struct extra *x);
void reader_extra_recycle(wsprof_trace *t, struct extra *x);
void reader_extras_free(struct extra *x);

/* merge.c: reader_release_begin starts a release of every pending event
 * below watermark (all: every one; t->nheap is nonzero while it lasts),
 * reader_release_emit moves up to room of them to out, in order, and
 * says how many. */
int reader_release_begin(wsprof_trace *t, uint64_t watermark, bool all);
size_t reader_release_emit(wsprof_trace *t, struct pending *out, size_t room);

/* tables.c: a stack node into the caller's table; a module loaded or
 * unloaded, kept in step with the events handed out. */
int reader_stack_set(wsprof_trace *t, const struct stack_def *d);
int reader_apply_module(wsprof_trace *t, int type, uint64_t base, struct extra *x);

#endif
