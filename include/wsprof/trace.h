/*
 * wsprof/trace.h - read wsprof traces.
 *
 * A trace is what libwsprof.so writes while a program runs (see
 * doc/trace-format.md). This API streams it: events come out one at a time
 * in the program's global order (by sequence number), and the reader's
 * memory grows with the number of distinct stacks and modules, not with the
 * length of the trace.
 *
 *   wsprof_trace *t;
 *   int err = wsprof_trace_open("app.wsp", &t);
 *   if (err < 0) { fprintf(stderr, "%s\n", wsprof_strerror(err)); ... }
 *   wsprof_event ev;
 *   while ((err = wsprof_trace_next(t, &ev)) > 0) { ... }
 *   wsprof_trace_close(t);
 *
 * Errors are negative numbers: -errno for system errors, WSPROF_E_* for
 * trace errors; wsprof_strerror() names both. Nothing here prints.
 *
 * A regular file is read, decompressed and decoded ahead of the caller, a
 * bounded number of events ahead, on two threads that start with the first
 * wsprof_trace_next() and are gone when wsprof_trace_close() returns; a
 * pipe is read as events are asked for. Either way the caller sees the same events,
 * stacks, modules, status and position at every step. A trace is used by
 * one thread at a time.
 */
#ifndef WSPROF_TRACE_H
#define WSPROF_TRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef WSPROF_API
#define WSPROF_API __attribute__((visibility("default")))
#endif

/* Trace format version this reader writes and understands (doc/trace-format.md). */
#define WSPROF_FORMAT_MAJOR 3
#define WSPROF_FORMAT_MINOR 0

/* A frame of a stack that is a Python frame (2.3), not a return address:
 * the top bit set, the code object's id (wsprof_trace_pycode) and the
 * instruction's offset in code units plus one (0: before the first). */
#define WSPROF_PYFRAME_BIT (1ull << 63)
#define WSPROF_PYFRAME_IP(code, instr) (WSPROF_PYFRAME_BIT | (uint64_t)(code) << 24 | ((uint64_t)(instr) & 0xffffff))
#define WSPROF_IS_PYFRAME(ip) (((ip) & WSPROF_PYFRAME_BIT) != 0)
#define WSPROF_PYFRAME_CODE(ip) (((ip) & ~WSPROF_PYFRAME_BIT) >> 24)
#define WSPROF_PYFRAME_INSTR(ip) ((ip) & 0xffffff)

/* How Python's small objects reached the trace (PYTHON record). */
enum wsprof_pyobjects {
	WSPROF_PYOBJ_ARENAS = 0, /* inside pymalloc's 256 KiB arenas: each arena is an mmap */
	WSPROF_PYOBJ_MALLOC = 1, /* each one a malloc (PYTHONMALLOC=malloc) */
	WSPROF_PYOBJ_HOOKED = 2, /* each one recorded through the object allocator (WSPROF_PYTHON_OBJECTS=1) */
};

enum wsprof_error {
	WSPROF_E_NOT_TRACE = -4097, /* the file is not a wsprof trace */
	WSPROF_E_NEWER = -4098,     /* written by a newer wsprof: format major too high */
	WSPROF_E_CORRUPT = -4099,   /* a chunk or record is malformed */
	WSPROF_E_TRUNCATED = -4100, /* the file ends inside a frame */
	WSPROF_E_EMPTY = -4101,     /* the file is empty */
	WSPROF_E_AGAIN = -4102,     /* nothing more yet: the trace is still being written (wsprof_trace_open_live) */
};

/* @return a one-line description of err (negative errno or WSPROF_E_*). */
WSPROF_API const char *wsprof_strerror(int err);

enum wsprof_kind {
	WSPROF_KIND_HEAP = 0,
	WSPROF_KIND_MMAP = 1,
	WSPROF_KIND_CUDA_DEVICE = 2,
	WSPROF_KIND_CUDA_MANAGED = 3,
	WSPROF_KIND_CUDA_HOST = 4,
	WSPROF_KIND_CUDA_VMM = 5,
	WSPROF_KIND_POOL = 6,
	/* Address ranges of the CUDA virtual memory API: mapped onto physical
	 * cuda_vmm allocations, and reserved. Reports show them with cuda_vmm. */
	WSPROF_KIND_CUDA_VMM_MAPPED = 7,
	WSPROF_KIND_CUDA_VMM_RESERVED = 8,
	/* Address space mapped but not committed (format 2.2): mmap with
	 * PROT_NONE or MAP_NORESERVE, or made PROT_NONE by mprotect; a commit
	 * (mprotect making it accessible, mmap MAP_FIXED over it) turns the
	 * part it covers into mmap. Reports show it with mmap, not as memory. */
	WSPROF_KIND_MMAP_RESERVED = 9,
	WSPROF_KIND_COUNT = 10
};

/* @return the kind's name as used in reports ("heap", "mmap", ...), or NULL. */
WSPROF_API const char *wsprof_kind_name(unsigned kind);

enum wsprof_op {
	WSPROF_OP_MALLOC = 0, WSPROF_OP_CALLOC, WSPROF_OP_REALLOC, WSPROF_OP_REALLOCARRAY,
	WSPROF_OP_POSIX_MEMALIGN, WSPROF_OP_ALIGNED_ALLOC, WSPROF_OP_MEMALIGN, WSPROF_OP_VALLOC,
	WSPROF_OP_PVALLOC, WSPROF_OP_FREE, WSPROF_OP_CFREE, WSPROF_OP_MMAP, WSPROF_OP_MUNMAP,
	WSPROF_OP_MREMAP,
	/* CUDA driver API */
	WSPROF_OP_CU_MEM_ALLOC, WSPROF_OP_CU_MEM_ALLOC_PITCH, WSPROF_OP_CU_MEM_FREE,
	WSPROF_OP_CU_MEM_ALLOC_MANAGED, WSPROF_OP_CU_MEM_ALLOC_HOST, WSPROF_OP_CU_MEM_HOST_ALLOC,
	WSPROF_OP_CU_MEM_FREE_HOST, WSPROF_OP_CU_MEM_HOST_REGISTER, WSPROF_OP_CU_MEM_HOST_UNREGISTER,
	WSPROF_OP_CU_MEM_ALLOC_ASYNC, WSPROF_OP_CU_MEM_ALLOC_FROM_POOL_ASYNC, WSPROF_OP_CU_MEM_FREE_ASYNC,
	WSPROF_OP_CU_MEM_CREATE, WSPROF_OP_CU_MEM_RELEASE, WSPROF_OP_CU_MEM_MAP, WSPROF_OP_CU_MEM_UNMAP,
	WSPROF_OP_CU_MEM_ADDRESS_RESERVE, WSPROF_OP_CU_MEM_ADDRESS_FREE,
	/* CUDA runtime entry points: only failures that never reached the driver */
	WSPROF_OP_CUDA_MALLOC, WSPROF_OP_CUDA_MALLOC_PITCH, WSPROF_OP_CUDA_MALLOC_MANAGED,
	WSPROF_OP_CUDA_MALLOC_HOST, WSPROF_OP_CUDA_HOST_ALLOC, WSPROF_OP_CUDA_HOST_REGISTER,
	WSPROF_OP_CUDA_MALLOC_ASYNC, WSPROF_OP_CUDA_MALLOC_FROM_POOL_ASYNC,
	/* sub-allocations the program reports (wsprof_pool_alloc/free, NVTX regions) */
	WSPROF_OP_POOL_ALLOC, WSPROF_OP_POOL_FREE,
	/* mprotect (format 2.2): an ALLOC of kind mmap commits the reserved
	 * part of its range, of kind mmap_reserved gives back the committed
	 * part; what the range holds of neither is left as it is */
	WSPROF_OP_MPROTECT,
	WSPROF_OP_COUNT
};

/* @return the operation's name ("malloc", "posix_memalign", ...), or NULL. */
WSPROF_API const char *wsprof_op_name(unsigned op);

enum wsprof_event_type {
	WSPROF_EV_ALLOC = 1,  /* addr, size, kind, op, stack */
	WSPROF_EV_FREE,       /* addr, kind, op */
	WSPROF_EV_MOVE,       /* addr (old block), size (old size): realloc/mremap began */
	WSPROF_EV_FAIL,       /* size, kind, op, stack: an allocation failed */
	WSPROF_EV_UNMAP,      /* addr, size (length): release a range */
	WSPROF_EV_MODULE_LOAD,   /* addr (load bias), path, build_id */
	WSPROF_EV_MODULE_UNLOAD, /* addr (load bias) */
	WSPROF_EV_FORK,       /* child_pid */
	WSPROF_EV_EXEC,       /* path */
	WSPROF_EV_DEVICE_MEMORY, /* device, device_free, device_total: a sample */
	WSPROF_EV_STREAM_REACHED, /* kind, op, addr, stream: a stream got to an async alloc/free */
	WSPROF_EV_ANNOTATE,   /* op (enum wsprof_annotation), addr, size, handle (pool), text */
	WSPROF_EV_ACCESS,     /* op (enum wsprof_access_source), size (window ns), regions, nregions */
	WSPROF_EV_RSS,        /* size (resident bytes) */
	WSPROF_EV_RECORDING,  /* size: 1 recording from here on, 0 not (frees still are); op: enum wsprof_recording_cause */
	WSPROF_EV_HEAP_TOTALS, /* heap_totals: a sampled trace's heap, counted whole (format 2.5) */
};

/* Every heap allocation and free the process made since the recorder
 * started, counted while it recorded only some (WSPROF_SAMPLE_BYTES):
 * written with each flush and before the footer. Allocated bytes are
 * counted twice: as asked for, and as the allocator gave them
 * (malloc_usable_size, which a free can ask too), so the live bytes are
 * given - given_back. failed allocations are not counted (FAIL events
 * are all recorded); a realloc is a free and an allocation. */
typedef struct wsprof_heap_totals {
	uint64_t allocations, frees;
	uint64_t requested;          /* bytes the allocations asked for */
	uint64_t given, given_back;  /* usable bytes of the blocks allocated, of those freed */
	/* The most live usable bytes since the previous record, and when
	 * (ns since the process started), within 16 KiB per thread. */
	uint64_t peak, peak_ns;
} wsprof_heap_totals;

/* Why recording was turned on or off (format 2.4, WSPROF_EV_RECORDING). */
enum wsprof_recording_cause {
	WSPROF_REC_START = 0,  /* the process started so (WSPROF_START=paused: off) */
	WSPROF_REC_CALL = 1,   /* wsprof_start() / wsprof_stop() (include/wsprof.h) */
	WSPROF_REC_SIGNAL = 2, /* the toggle signal (WSPROF_TOGGLE_SIGNAL) */
	WSPROF_REC_ATTACH = 3, /* wsprof attach began: what was allocated before is not in the trace */
	WSPROF_REC_DETACH = 4, /* wsprof attach ended */
	WSPROF_REC_CAUSE_COUNT
};

/* Where an access sample comes from. */
enum wsprof_access_source {
	WSPROF_ACCESS_WRITES = 0,   /* pages written (userfaultfd write-protect + PAGEMAP_SCAN): exact */
	WSPROF_ACCESS_DAMON = 1,    /* regions DAMON saw accessed (reads and writes, sampled) */
	WSPROF_ACCESS_INFERRED = 2, /* device blocks passed to a kernel launch: may have been touched */
	WSPROF_ACCESS_ANNOTATED = 3, /* wsprof_touch (an ANNOTATE event, never an ACCESS record) */
	WSPROF_ACCESS_SOURCE_COUNT
};

/* Bits of wsprof_process.access_sources: which sources the recorder had. */
#define WSPROF_SOURCE_WRITES (1u << 0)
#define WSPROF_SOURCE_DAMON (1u << 1)
#define WSPROF_SOURCE_ANNOTATIONS (1u << 2)
#define WSPROF_SOURCE_KERNEL_LAUNCHES (1u << 3)

typedef struct wsprof_region {
	uint64_t addr, len;
} wsprof_region;

/* What an ANNOTATE event says (wsprof.h, or NVTX). */
enum wsprof_annotation {
	WSPROF_ANN_NAME = 0,   /* addr, text */
	WSPROF_ANN_ACQUIRE,    /* addr */
	WSPROF_ANN_RELEASE,    /* addr */
	WSPROF_ANN_VALID,      /* addr */
	WSPROF_ANN_INVALID,    /* addr */
	WSPROF_ANN_TOUCH,      /* addr, size */
	WSPROF_ANN_PHASE_PUSH, /* text */
	WSPROF_ANN_PHASE_POP,
	WSPROF_ANN_SNAPSHOT,   /* text */
	WSPROF_ANN_POOL_RESET, /* handle: every sub-allocation of the pool is freed */
	WSPROF_ANN_COUNT
};

/* @return the annotation's name ("acquire", ...), or NULL. */
WSPROF_API const char *wsprof_annotation_name(unsigned ann);

typedef struct wsprof_event {
	int type;            /* enum wsprof_event_type */
	unsigned kind;       /* enum wsprof_kind */
	unsigned op;         /* enum wsprof_op */
	uint32_t tid;        /* thread that made the call */
	uint64_t seq;        /* process-wide order */
	uint64_t time_ns;    /* nanoseconds since the process started */
	uint64_t addr;
	uint64_t size;
	uint64_t stack;      /* stack id for wsprof_trace_stack(), 0: none */
	int device;          /* CUDA device ordinal, -1: none */
	uint64_t stream;     /* CUDA stream of a stream-ordered call, 0: none */
	uint64_t handle;     /* CUDA VMM: the physical allocation a mapping maps */
	uint64_t device_free, device_total;
	uint32_t child_pid;
	const char *path;    /* valid until the next wsprof_trace_next() */
	const char *text;    /* an annotation's name or label, idem */
	const wsprof_region *regions; /* an access sample's regions, sorted, idem */
	size_t nregions;
	const uint8_t *build_id;
	size_t build_id_len;
	const wsprof_heap_totals *heap_totals; /* HEAP_TOTALS, else NULL; idem */
} wsprof_event;

typedef struct wsprof_process {
	uint32_t pid, ppid, parent_traced_pid;
	uint64_t start_realtime_ns;
	const char *exe;
	const char *cmdline;   /* arguments separated by spaces */
	const char *tool_version;
	unsigned format_major, format_minor;
	unsigned stack_depth, flush_ms, follow;
	/* Access sampling (format 1.1): WSPROF_SOURCE_* bits, the pages
	 * re-protected per window at most, the window, the regions per window
	 * at most, and why a source is missing ("" when none is). */
	unsigned access_sources, wp_pages, window_ms, max_regions;
	const char *access_note;
	/* Heap sampling (WSPROF_SAMPLE_BYTES): the mean bytes between sampled
	 * heap allocations, 0 when every one was recorded. A heap allocation
	 * of s bytes (0 counts as 1) was recorded with probability
	 * 1 - exp(-s / sample_bytes), and its free only if it was (1: all). */
	uint64_t sample_bytes;
	/* Memory given back (format 2.1): the pages of released blocks and
	 * unmapped ranges the recorder read for writes per window at most;
	 * 0 when it read none (or an older trace). */
	unsigned release_pages;
	/* The library that served malloc (format 2.1): a path, "" unknown. */
	const char *allocator;
	/* The process's place in a parallel job (format 2.4), from its
	 * launcher's environment: its rank (-1: none), the job's size in
	 * processes (0: not known), the job's id ("" not known) and which
	 * launcher said so ("" none; "openmpi", "pmix", "pmi", "slurm"). */
	int64_t rank;
	uint64_t job_size;
	const char *job_id;
	const char *launcher;
} wsprof_process;

typedef struct wsprof_trace_status {
	int complete;        /* footer (or exec) seen and consistent with what was read */
	int ended_by_exec;   /* the process image ended in exec */
	int error;           /* 0, or why reading stopped early (WSPROF_E_TRUNCATED, ...) */
	uint64_t chunks;     /* complete chunks read */
	uint64_t events;     /* event records read */
	uint64_t end_time_ns;  /* footer time, else the last event's time */
	uint64_t threads;    /* distinct threads that allocated, freed or annotated */
	/* Calls that passed through untraced, as the footer says (format
	 * 2.1): mmap family calls made before recording began or from
	 * libunwind's own code (preload/hooks/hooks_libc.c). */
	uint64_t untraced_calls;
	/* How the process ended, as the footer says (format 2.2):
	 * WSPROF_END_EXIT with the exit status, WSPROF_END_SIGNAL with the
	 * signal that killed it, WSPROF_END_UNKNOWN when nothing says (no
	 * footer: the trace was cut, or ended in exec; an older trace).
	 * finished_by_launcher: the process did not write its footer (killed,
	 * or ended by exit_group), wsprof record finished the trace from the
	 * buffers the process shared with it. */
	int ending, ending_value;
	int finished_by_launcher;
} wsprof_trace_status;

enum wsprof_ending { WSPROF_END_UNKNOWN = 0, WSPROF_END_EXIT = 1, WSPROF_END_SIGNAL = 2 };

typedef struct wsprof_trace wsprof_trace;

/* Open a trace and read its header.
 * @return 0, or a negative error (-ENOENT, WSPROF_E_NOT_TRACE, WSPROF_E_NEWER, ...). */
WSPROF_API int wsprof_trace_open(const char *path, wsprof_trace **out);
/* The same for a trace still being written (by `wsprof record` or a
 * process it runs, perhaps in another terminal): read in the caller's
 * thread, and at the end of what has been written so far, before the
 * footer, wsprof_trace_next returns WSPROF_E_AGAIN instead of ending;
 * call it again later to go on from there (only what was appended since
 * is read). A header not written yet is WSPROF_E_EMPTY or
 * WSPROF_E_TRUNCATED: open again a little later. */
WSPROF_API int wsprof_trace_open_live(const char *path, wsprof_trace **out);

/* Next event in global order.
 * @return 1 with *ev filled, 0 at the end. A damaged or truncated trace ends
 * early with 0; wsprof_trace_get_status() tells why. Negative only for
 * errors that make reading impossible (out of memory). */
WSPROF_API int wsprof_trace_next(wsprof_trace *t, wsprof_event *ev);

WSPROF_API const wsprof_process *wsprof_trace_process(const wsprof_trace *t);
WSPROF_API void wsprof_trace_get_status(const wsprof_trace *t, wsprof_trace_status *st);

/* How far reading has got, for a progress display: *bytes_read is the
 * bytes of the file consumed so far (the header after open, everything
 * at the end), *file_size its size when opened, or 0 when it is not a
 * regular file (a pipe). A file still being written may be read past
 * that size. */
WSPROF_API void wsprof_trace_position(const wsprof_trace *t, uint64_t *bytes_read, uint64_t *file_size);

/* Keep no stack nodes from now on, and let go of those kept so far: they
 * are still read and checked (an event's stack is still its id), but
 * wsprof_trace_stack and wsprof_trace_stack_node find none. For a second
 * pass over a trace whose stacks another reader of it keeps, or a reader
 * whose caller has copied what it needs of them: their table is most of a
 * reader's memory on a program of many distinct stacks. */
WSPROF_API void wsprof_trace_forget_stacks(wsprof_trace *t);

/* Frames of a stack, innermost first.
 * @return the stack's depth (may exceed max; only max frames are stored),
 * or 0 for stack 0 or an unknown id. */
WSPROF_API size_t wsprof_trace_stack(const wsprof_trace *t, uint64_t stack, uint64_t *ips, size_t max);

/* One node of the stack prefix tree: its frame's ip and its parent node
 * (0 at the root). A stack id is the id of its innermost node.
 * @return 1 if the node is defined, 0 otherwise. */
WSPROF_API int wsprof_trace_stack_node(const wsprof_trace *t, uint64_t node, uint64_t *parent, uint64_t *ip);

/* A Python code object (2.3): what a Python frame's code id names. */
typedef struct wsprof_pycode {
	const char *qualname;      /* "Class.method", "<module>" */
	const char *filename;      /* as the code object has it */
	unsigned firstlineno;
	const uint8_t *linetable;  /* co_linetable, CPython 3.11+'s location table */
	size_t linetable_len;
} wsprof_pycode;

/* The code object of a Python frame's code id, defined before any frame
 * that uses it was handed out. @return it, or NULL for an unknown id. */
WSPROF_API const wsprof_pycode *wsprof_trace_pycode(const wsprof_trace *t, uint64_t code);

/* The source line of the instruction a Python frame was at (its
 * WSPROF_PYFRAME_INSTR), decoded from the code's location table as
 * CPython's PyCode_Addr2Line does. @return the line, or -1 when the
 * instruction has none. */
WSPROF_API int wsprof_pycode_line(const wsprof_pycode *c, uint64_t instr);

/* What the recorder said about a Python interpreter in the process (2.3). */
typedef struct wsprof_python {
	int seen;                  /* an interpreter was found (the rest is 0 otherwise) */
	uint32_t version;          /* PY_VERSION_HEX, 0 when not known */
	int frames;                /* its Python frames are in the stacks */
	unsigned objects;          /* enum wsprof_pyobjects */
	const char *path;          /* the module the interpreter is in */
	const char *note;          /* why there are no Python frames ("" when there are) */
} wsprof_python;

/* As read so far (from the events handed out after the record was read;
 * seen 0 before): call it once the events are read. */
WSPROF_API const wsprof_python *wsprof_trace_python(const wsprof_trace *t);

/* The module loaded at addr at this point of the stream.
 * @return the module's path and sets *base to its load bias, or NULL. */
WSPROF_API const char *wsprof_trace_module_at(const wsprof_trace *t, uint64_t addr, uint64_t *base);

typedef struct wsprof_module_info {
	const char *path;          /* as the loader named it; the main program's full path */
	uint64_t base;             /* load bias: file address = addr - base */
	const uint8_t *build_id;   /* GNU build-id note, or NULL */
	size_t build_id_len;
} wsprof_module_info;

/* The same, with the module's build-id. Pointers stay valid until the
 * module is unloaded in the stream or the trace is closed.
 * @return 1 with *info filled, 0 if no module covers addr. */
WSPROF_API int wsprof_trace_module_info_at(const wsprof_trace *t, uint64_t addr, wsprof_module_info *info);

/* Where the module loaded at addr lies: from the lowest address one of
 * its loadable segments starts at to the highest one ends at (base +
 * p_vaddr, base + p_vaddr + p_memsz), the range a profile's mapping of it
 * spans. @return 1 with *start and *end filled, 0 if no module covers addr. */
WSPROF_API int wsprof_trace_module_span_at(const wsprof_trace *t, uint64_t addr, uint64_t *start, uint64_t *end);

WSPROF_API void wsprof_trace_close(wsprof_trace *t);

#ifdef __cplusplus
}
#endif
#endif
