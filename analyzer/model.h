/*
 * model.h - what the analyzer knows about a trace: the live set and the
 * per-kind figures, updated one event at a time. No output code here: the
 * renderers (summary.c, ...) read a finished model.
 *
 * Exactness rules (the summary must match a program's own accounting):
 *  - realloc/mremap count as one free of the old block and one allocation
 *    of the new one; the old block leaves the live set at MOVE, so the peak
 *    is taken on the net change;
 *  - a failed realloc puts the old block back and counts one failure;
 *  - leaked = live at the end of the trace;
 *  - a free of an address that is not live (allocated before tracing began,
 *    or inherited across fork) is counted as untracked, nothing else.
 */
#ifndef WSP_MODEL_H
#define WSP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wsprof/trace.h"

struct wsp_kind_stats {
	uint64_t allocations, frees, failed;
	uint64_t total_bytes;      /* bytes requested by all allocations */
	uint64_t live_bytes, live_blocks;
	uint64_t peak_bytes, peak_time_ns;
	bool seen;                 /* any event of this kind */
};

struct wsp_block {
	uint64_t addr, size, stack;
	uint64_t origin, origin_size; /* mmap: the mapping this piece was cut from */
	uint64_t serial;           /* the allocating thread's allocation count, for "temporary" */
	uint32_t tid;              /* the allocating thread */
	uint32_t site;             /* index of its (kind, stack) figures, with per_stack */
	uint8_t kind;
	bool excluded;             /* filtered out: tracked only to match its free */
};

/* Figures of one call stack (and kind), with per_stack.
 * temporary: allocations freed before their thread allocated again (a
 * realloc's old block included), counted when the free is seen. */
struct wsp_site_stats {
	uint64_t stack;
	unsigned kind;
	uint64_t allocations, bytes, failed, temporary;
	uint64_t peak_bytes;       /* live when the kind's live total peaked */
	uint64_t leaked_bytes, leaked_blocks; /* live at the end */
};

struct wsp_model;

struct wsp_model_options {
	/* Count only allocations whose caller (first frame outside the C++
	 * runtime's operator new) lies in one of these modules: a file name
	 * ("libfoo.so.1") or a full path. NULL-terminated; NULL: everything. */
	const char *const *callers;
	/* Keep figures per call stack (wsp_model_each_site). */
	bool per_stack;
};

struct wsp_model *wsp_model_new(const struct wsp_model_options *opt);
void wsp_model_free(struct wsp_model *m);

/* Apply one event, in trace order. The trace is used for stacks/modules. */
int wsp_model_apply(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev);

const struct wsp_kind_stats *wsp_model_kind(const struct wsp_model *m, unsigned kind);
uint64_t wsp_model_untracked_frees(const struct wsp_model *m);
uint64_t wsp_model_last_time(const struct wsp_model *m);

/* A device's memory as sampled while the program ran (CUDA). */
struct wsp_device_stats {
	int device;
	uint64_t total, free_min, free_min_time_ns, free_last, samples;
};
size_t wsp_model_devices(const struct wsp_model *m, const struct wsp_device_stats **devices);

/* Children forked while tracing, and the program exec'd at the end (or NULL). */
size_t wsp_model_children(const struct wsp_model *m, const uint32_t **pids);
const char *wsp_model_exec(const struct wsp_model *m);

/* Call fn for the figures of every (kind, stack) that allocated, with per_stack. */
void wsp_model_each_site(const struct wsp_model *m, void (*fn)(const struct wsp_site_stats *, void *), void *arg);

/* Call fn for every live block (heap blocks and mmap ranges). */
void wsp_model_each_live(const struct wsp_model *m, void (*fn)(const struct wsp_block *, void *), void *arg);

#endif
