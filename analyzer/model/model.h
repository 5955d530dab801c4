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
 * A sampled trace (WSPROF_SAMPLE_BYTES) holds only some heap blocks: each
 * stands for 1/p blocks of its size and its bytes for size/p bytes, in
 * every figure (wsp_model_block_bytes), which makes the heap figures
 * unbiased estimates; other kinds are exact.
 */
#ifndef WSP_MODEL_H
#define WSP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wsprof/trace.h"
#include "series.h"
#include "wss.h"

struct wsp_kind_stats {
	uint64_t allocations, frees, failed;
	uint64_t total_bytes;      /* bytes requested by all allocations */
	uint64_t live_bytes, live_blocks;
	uint64_t peak_bytes, peak_time_ns, peak_seq;
	uint64_t first_fail_seq, first_fail_time_ns; /* valid when failed > 0 */
	/* "Truly in use" (annotations): live minus what could be given back. */
	uint64_t collectable_bytes;
	uint64_t in_use_peak_bytes, in_use_peak_time_ns;
	uint64_t collectable_at_peak; /* collectable bytes when live_bytes peaked */
	bool seen;                 /* any event of this kind */
};

/* What the program said about a block (include/wsprof.h). */
enum wsp_validity { WSP_VALIDITY_UNKNOWN, WSP_VALIDITY_VALID, WSP_VALIDITY_INVALID };
struct wsp_ann_state {
	const char *name;          /* NULL if never named */
	int64_t refs;              /* acquires minus releases */
	enum wsp_validity validity;
	bool annotated;            /* acquired, released, validated or invalidated */
	bool collectable;          /* annotated, nobody holds it, not valid */
	uint64_t last_use_ns;      /* last annotation that used it, else its allocation */
};

struct wsp_phase {
	char *name;
	uint32_t tid;
	unsigned depth;
	uint64_t start_ns, end_ns; /* end 0 while open */
};

struct wsp_snapshot {
	char *label;
	uint64_t time_ns, seq;
};

struct wsp_block {
	uint64_t addr, size, stack;
	uint64_t origin, origin_size; /* mmap: the mapping this piece was cut from */
	uint64_t serial;           /* the allocating thread's allocation count, for "temporary" */
	uint32_t tid;              /* the allocating thread */
	uint32_t site;             /* index of its (kind, stack) figures, with per_stack */
	uint64_t time_ns;          /* when it was allocated */
	uint64_t last_access_ns;   /* end of the last window it was accessed in; 0: never */
	uint64_t accessed_bytes;   /* the most of it accessed in one window */
	uint8_t kind;
	int16_t device;            /* the CUDA device of a device block, -1: none */
	bool excluded;             /* filtered out: tracked only to match its free */
	bool has_ann;              /* the program annotated it */
	bool in_reservation;       /* mmap committed inside reserved address space (a runtime's heap) */
	bool ordered;              /* the model's own: in its order by address (model_internal.h) */
};

/* Address space only reserved, not memory: CUDA VMM reservations and
 * mmap reservations (PROT_NONE, MAP_NORESERVE). */
static inline bool wsp_kind_is_reservation(unsigned kind)
{
	return kind == WSPROF_KIND_CUDA_VMM_RESERVED || kind == WSPROF_KIND_MMAP_RESERVED;
}

/* Kinds that are address ranges, shown with the kind whose memory they
 * hold rather than as memory of their own: reservations, and CUDA VMM
 * mappings (their bytes are the cuda_vmm allocations mapped). */
static inline bool wsp_kind_is_address_space(unsigned kind)
{
	return kind == WSPROF_KIND_CUDA_VMM_MAPPED || wsp_kind_is_reservation(kind);
}

/* Kinds the model keeps as address ranges, cut and joined by later calls
 * (mmap, and the address-space kinds) rather than as blocks freed whole. */
static inline bool wsp_kind_is_range(unsigned kind)
{
	return kind == WSPROF_KIND_MMAP || wsp_kind_is_address_space(kind);
}

/* Figures of one call stack (and kind), with per_stack.
 * temporary: allocations freed before their thread allocated again (a
 * realloc's old block included), counted when the free is seen. */
struct wsp_site_stats {
	uint64_t stack;
	unsigned kind;
	uint64_t allocations, bytes, failed, temporary;
	uint64_t peak_bytes;       /* live when the kind's live total peaked */
	uint64_t leaked_bytes, leaked_blocks; /* live at the end */
	/* Access samples: bytes of its blocks seen accessed (the most of each
	 * block in one window), and the longest any of its blocks went without
	 * an access before it was freed or the trace ended (since its
	 * allocation if never accessed). */
	uint64_t accessed_bytes, coldest_idle_ns;
};

/* One figure of a site, by name: what callsites sorts by and flame graphs
 * size their boxes by. */
enum wsp_site_figure {
	WSP_FIG_PEAK, WSP_FIG_ALLOCATIONS, WSP_FIG_BYTES, WSP_FIG_LEAKED, WSP_FIG_TEMPORARY, WSP_FIG_ACCESSED,
	WSP_FIG_COLD, /* the longest one of its blocks went untouched */
};

static inline uint64_t wsp_site_figure(const struct wsp_site_stats *s, enum wsp_site_figure f)
{
	switch (f) {
	case WSP_FIG_PEAK: return s->peak_bytes;
	case WSP_FIG_ALLOCATIONS: return s->allocations;
	case WSP_FIG_BYTES: return s->bytes;
	case WSP_FIG_LEAKED: return s->leaked_bytes;
	case WSP_FIG_TEMPORARY: return s->temporary;
	case WSP_FIG_ACCESSED: return s->accessed_bytes;
	case WSP_FIG_COLD: return s->coldest_idle_ns;
	}
	return 0;
}

struct wsp_model;

struct wsp_model_options {
	/* Count only allocations whose caller (first frame outside the C++
	 * runtime's operator new) lies in one of these modules: a file name
	 * ("libfoo.so.1") or a full path. NULL-terminated; NULL: everything. */
	const char *const *callers;
	/* Keep figures per call stack (wsp_model_each_site). */
	bool per_stack;
	/* Working-set buckets: 0 for the recorder's window (wsp_model_wss). */
	uint64_t wss_bucket_ns;
	/* Only the totals a summary shows: no live series (wsp_model_live_series
	 * stays empty), and access samples make working-set windows without
	 * being matched to blocks or measured (the windows are counted, with no
	 * bytes, no block's access figures). Matching keeps blocks in address
	 * order, which costs more than everything else. */
	bool totals_only;
	/* Access samples are not matched to blocks (no block's or site's
	 * access figures, no working-set window split by kind), while every
	 * other figure is kept, freed blocks included (wsp_model_each_departed):
	 * for views that split the accesses themselves (the heatmaps). */
	bool unmatched_access;
	/* For views that show no access figure (callsites by peak, leaks):
	 * access samples are not matched to blocks, as with unmatched_access,
	 * and freed blocks are not kept for them either; every other figure is
	 * kept. Matching a compile's written pages to its blocks takes ten
	 * times as long as the rest of its load (BENCHMARKS.md). */
	bool no_access_figures;
	/* The trace's wsprof_process.sample_bytes: 0 when every heap block
	 * was recorded, else the mean bytes between sampled ones. */
	uint64_t sample_bytes;
	/* The trace is a forked child's: its HEAP_TOTALS count what it
	 * inherited, which its recorded blocks do not. */
	bool child;
};

struct wsp_model *wsp_model_new(const struct wsp_model_options *opt);
void wsp_model_free(struct wsp_model *m);

/* Apply one event, in trace order. The trace is used for stacks/modules. */
int wsp_model_apply(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev);

const struct wsp_kind_stats *wsp_model_kind(const struct wsp_model *m, unsigned kind);
/* Live mmap bytes committed inside reserved address space (mmap_reserved):
 * what a runtime (JVM, Go, V8) made of the heap it reserved. */
uint64_t wsp_model_mmap_in_reservations(const struct wsp_model *m);
uint64_t wsp_model_untracked_frees(const struct wsp_model *m);
uint64_t wsp_model_last_time(const struct wsp_model *m);

/* A device's memory as sampled while the program ran (CUDA). */
struct wsp_device_stats {
	int device;
	uint64_t total, free_min, free_min_time_ns, free_last, samples;
};
size_t wsp_model_devices(const struct wsp_model *m, const struct wsp_device_stats **devices);

/* Over time, for the pictures: a kind's live bytes (hi) and bytes truly
 * in use (hi_b), and a device's used memory (total - free, hi) and its
 * total (hi_b), each the highest in its bucket. Complete once
 * wsp_model_finish was called. */
const struct wsp_series *wsp_model_live_series(const struct wsp_model *m, unsigned kind);
const struct wsp_series *wsp_model_device_series(const struct wsp_model *m, size_t device_index);

/* Failed allocations, in trace order (the first WSP_MODEL_FAILURES_MAX). */
#define WSP_MODEL_FAILURES_MAX 100000
struct wsp_failure {
	uint64_t time_ns, seq, size, stack;
	unsigned kind, op;         /* op: the call that failed (enum wsprof_op) */
	int device;                /* its CUDA device, -1: none */
};
size_t wsp_model_failures(const struct wsp_model *m, const struct wsp_failure **failures);

/* Children forked while tracing, and the program exec'd at the end (or NULL). */
size_t wsp_model_children(const struct wsp_model *m, const uint32_t **pids);
const char *wsp_model_exec(const struct wsp_model *m);

/* Call fn for the figures of every (kind, stack) that allocated, with per_stack. */
void wsp_model_each_site(const struct wsp_model *m, void (*fn)(const struct wsp_site_stats *, void *), void *arg);

/* The annotation state of a live block, or NULL if it has none. */
const struct wsp_ann_state *wsp_model_ann(const struct wsp_model *m, const struct wsp_block *b);
/* The address the program sees (blocks of some kinds are keyed apart). */
uint64_t wsp_block_addr(const struct wsp_block *b);

/* A block's key (wsp_block.addr) is its address in one of four name
 * spaces, in the key's top two bits: memory (heap, device, managed,
 * pinned host, mappings), registered host ranges (a malloc'd buffer may
 * also be registered), VMM handles (opaque numbers) and pool
 * sub-allocations (inside other blocks). */
enum wsp_key_space { WSP_SPACE_MEMORY = 0, WSP_SPACE_REGISTERED = 1, WSP_SPACE_HANDLE = 2, WSP_SPACE_POOL = 3 };

static inline enum wsp_key_space wsp_key_space(uint64_t key)
{
	return (enum wsp_key_space)(key >> 62);
}

static inline uint64_t wsp_key_in(enum wsp_key_space space, uint64_t addr)
{
	return addr ^ (uint64_t)space << 62;
}

static inline enum wsp_key_space wsp_block_space(const struct wsp_block *b)
{
	return wsp_key_space(b->addr);
}
uint64_t wsp_model_unknown_annotations(const struct wsp_model *m);
size_t wsp_model_phases(const struct wsp_model *m, const struct wsp_phase **phases);
size_t wsp_model_snapshots(const struct wsp_model *m, const struct wsp_snapshot **snapshots);

/* Recording turned on or off (RECORDING events, format 2.4), in order:
 * none when the whole run was recorded. The first, with cause
 * WSPROF_REC_ATTACH, says the trace began with wsprof attach. */
struct wsp_recording_switch {
	uint64_t time_ns, seq;
	bool on;
	unsigned cause;            /* enum wsprof_recording_cause */
};
size_t wsp_model_recording(const struct wsp_model *m, const struct wsp_recording_switch **switches);

/* Working-set size over time (NULL when the trace has no access samples;
 * complete once wsp_model_finish was called). */
const struct wsp_wss *wsp_model_wss(const struct wsp_model *m);
struct wsp_rss_point {
	uint64_t time_ns, bytes;
};
size_t wsp_model_rss(const struct wsp_model *m, const struct wsp_rss_point **points);
/* The end of the trace: close what is still open. @return 0 or -ENOMEM. */
int wsp_model_finish(struct wsp_model *m);

/* Call fn for each block freed before now that was live at some moment of
 * [start_ns, end_ns] and held bytes of [addr, addr + len) that no block
 * live now (allocated by end_ns) holds, with those bytes, each byte once:
 * where a window's accesses go when their memory was freed before the
 * window was recorded. Without totals_only. @return 0 or -ENOMEM. */
int wsp_model_each_departed(struct wsp_model *m, uint64_t start_ns, uint64_t end_ns, uint64_t addr, uint64_t len,
			    void (*fn)(const struct wsp_block *, uint64_t bytes, void *), void *arg);

/* A live block's part [lo, hi) of an address range asked about. */
typedef void (*wsp_model_overlap_fn)(const struct wsp_block *b, uint64_t lo, uint64_t hi, void *arg);

/* Call fn for every live block overlapping [addr, addr + len): memory
 * blocks, mmap ranges, CUDA VMM mappings and pool sub-allocations (which
 * lie inside other blocks: their bytes come twice). Not registered host
 * ranges. Without totals_only. @return 0 or -ENOMEM. */
int wsp_model_each_in(struct wsp_model *m, uint64_t addr, uint64_t len, wsp_model_overlap_fn fn, void *arg);

/* Have fn told, as each access sample is matched to the blocks (not with
 * totals_only, unmatched_access or no_access_figures), of every live block
 * a region of it overlaps, as wsp_model_each_in would: a view that splits
 * the accesses among blocks follows the model's own matching rather than
 * matching them again. NULL: no one. */
void wsp_model_observe_access(struct wsp_model *m, wsp_model_overlap_fn fn, void *arg);

/* Call fn for every live block (heap blocks and mmap ranges). */
void wsp_model_each_live(const struct wsp_model *m, void (*fn)(const struct wsp_block *, void *), void *arg);

/* Where a live heap block (as each_live gives it) lies in the model's
 * dense array: the same while it lives, taken by a later block once it is
 * freed; SIZE_MAX for a range. For views that keep a little about each
 * block beside the model, read in the same order as each_live. */
size_t wsp_model_place(const struct wsp_model *m, const struct wsp_block *b);

/* The address span whose ranges (mmap, CUDA VMM) changed since the last
 * call, for views that follow the live set event by event: false when
 * none did; the span is forgotten either way. */
bool wsp_model_ranges_changed(struct wsp_model *m, uint64_t *lo, uint64_t *hi);
/* Call fn for every live range (mmap, CUDA VMM) overlapping [lo, hi). */
void wsp_model_each_range_in(const struct wsp_model *m, uint64_t lo, uint64_t hi,
			     void (*fn)(const struct wsp_block *, void *), void *arg);

/* The probability that a heap allocation of `size` bytes was recorded with
 * WSPROF_SAMPLE_BYTES = sample_bytes: 1 - exp(-size / sample_bytes), a
 * size of 0 counting as 1; 1 when sample_bytes is 0 or 1 (all recorded). */
double wsp_sample_probability(uint64_t sample_bytes, uint64_t size);
/* The bytes a live block stands for in the figures: its size, or in a
 * sampled trace, for a heap block, size / p, rounded. */
uint64_t wsp_model_block_bytes(const struct wsp_model *m, const struct wsp_block *b);
/* The allocations a live block stands for in the counts: 1, or for a heap
 * block of a sampled trace 1/p drawn whole (the same at its allocation and
 * at its free). A range is a piece of its mapping (origin): it says 1 for
 * the mapping, which counts once however many pieces munmap cut it in. */
uint64_t wsp_model_block_count(const struct wsp_model *m, const struct wsp_block *b);
/* Are this kind's figures estimates (a sampled trace's heap)? */
bool wsp_model_estimated(const struct wsp_model *m, unsigned kind);
/* Were a sampled trace's heap totals counted whole (HEAP_TOTALS, after
 * wsp_model_finish)? Then the kind's allocations, frees, bytes and live
 * blocks are exact, its live and peak bytes the allocator's usable bytes
 * scaled by *share (bytes asked for / bytes given, when share is not
 * NULL), and only the per-site figures are estimates. */
bool wsp_model_heap_counted(const struct wsp_model *m, double *share);
/* The heap's totals as the sampled blocks estimated them, beside the
 * counted ones (how good the estimates are); NULL when not counted. */
const struct wsp_kind_stats *wsp_model_heap_estimates(const struct wsp_model *m);
/* Before the finish (a trace followed as it grows): the heap's figures
 * with its totals counted so far, into *out; false (*out the estimates)
 * where the trace has no counted totals for them. */
bool wsp_model_heap_counted_now(const struct wsp_model *m, struct wsp_kind_stats *out);
/* Are this kind's totals estimates (estimated, and not counted)? */
bool wsp_model_totals_estimated(const struct wsp_model *m, unsigned kind);

/* The model's books checked against its live set: each kind's live bytes
 * and blocks, collectable bytes and sites' figures against the sums over
 * its blocks, the peak against live, the heap table's maps, the ranges'
 * order, frees against allocations. @return NULL, or the first rule
 * broken, in words (valid until the next call on the thread). In every
 * build; the checked build calls it as events are applied (books.c). */
const char *wsp_model_check(const struct wsp_model *m);

#endif
