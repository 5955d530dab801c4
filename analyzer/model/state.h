/*
 * state.h - the memory state at one moment of a trace: the moment itself
 * (the peak, the end, the first failed allocation, a time, a snapshot
 * label), every block live then with what the program said about it, and,
 * at a failed allocation, the request that failed.
 *
 * state.c reads it, statetext.c prints it (`wsprof report state`, text or
 * JSON), statemap.c draws it as a map of addresses. Both read the same blocks, so
 * the figures of the text, the JSON and the picture are the same.
 */
#ifndef WSP_STATE_H
#define WSP_STATE_H

#include "analyzer.h"

struct wsp_state_block {
	const struct wsp_block *b;
	const struct wsp_ann_state *ann; /* NULL: the program never annotated it */
	int device;                      /* the CUDA device of a cuda_device block, else -1 */
};

/* The allocation that failed, at --at oom. */
struct wsp_state_failure {
	uint64_t size, time_ns;
	unsigned kind, op; /* op WSPROF_OP_COUNT: not known (a damaged trace) */
	int device; /* CUDA device ordinal, -1: none */
};

struct wsp_state {
	struct wsp_loaded l;          /* the trace replayed up to the moment, from the index */
	struct wsp_syms *names;       /* the whole trace's load's symbols, NULL: its own (wsp_state_plan) */
	bool syms_borrowed;           /* l.syms is names */
	struct wsp_tindex *ix;        /* the trace's index, when the state opened it (wsp_state_open) */
	uint64_t stop_seq, stop_time_ns; /* the replay stops after stop_seq, or before an event after stop_time_ns */
	char what[256];               /* "the heap peak (0.020 s)", "snapshot \"warm\" (1.000 s)" */
	uint64_t time_ns;             /* when the moment is */
	uint64_t end_ns;              /* when the trace ends */
	int kind;                     /* --kind, -1: every kind */
	int moment_kind;              /* the kind that peaked or failed, -1: none */
	struct wsp_state_block *v;    /* every live block of memory (pool sub-allocations too), by kind then address */
	size_t n;
	bool failed;                  /* the moment is a failed allocation: */
	struct wsp_state_failure failure;
};

/* Read the state of the trace at path at the moment `at` (peak, end, oom,
 * SECONDS or a snapshot label), of kind (-1: any) for peak and oom.
 * @return 0, or an exit status after a one-line error. */
int wsp_state_open(const char *path, const char *at, int kind, struct wsp_state *st);
/* The same for a trace whose index is open: the moment found in whole
 * (the index's own, or a load of the trace, whose symbols then name the
 * blocks: whole must outlive st), the state replayed from ix.
 * @return 0, or an exit status after a one-line error (free st either way). */
struct wsp_tindex;
int wsp_state_at(struct wsp_tindex *ix, const struct wsp_loaded *whole, const char *at, int kind,
		 struct wsp_state *st);
/* wsp_state_at in two steps: plan finds the moment in whole (whose
 * symbols, if any, must outlive st; its model need not), replay reaches
 * it from ix. @return 0, or an exit status after a one-line error. */
int wsp_state_plan(const struct wsp_loaded *whole, const char *at, int kind, struct wsp_state *st);
int wsp_state_replay(struct wsp_tindex *ix, struct wsp_state *st);
void wsp_state_free(struct wsp_state *st);

/* qsort's order of state blocks: by kind, then address. */
int wsp_state_block_cmp(const void *a, const void *b);

/* When a block was last used: its last annotation, else its allocation. */
uint64_t wsp_state_last_use(const struct wsp_state_block *r);
/* The collectable blocks, least recently used first (what evicting them
 * frees, in order), malloc'd into *out. @return how many (0: *out NULL;
 * out of memory reads as none). */
size_t wsp_state_collectable(const struct wsp_state *st, struct wsp_state_block **out);

/* The call that failed ("cuMemAlloc"), or "an allocation". */
const char *wsp_state_failed_call(const struct wsp_state_failure *f);
/* The block's name: the program's (wsprof_name), else the function that
 * allocated it, else its first frame. @return buf. */
const char *wsp_state_block_name(struct wsp_state *st, const struct wsp_state_block *b, char *buf, size_t cap);

#endif
