/*
 * model_internal.h - what the files of the model share (model.c, heap.c,
 * ranges.c, figures.c, estimates.c, callers.c, access.c, annotations.c,
 * books.c, query.c, checkpoint.c): the model's own layout and the
 * helpers they use of each other, by file. Not for views: they ask
 * model.h.
 */
#ifndef WSP_MODEL_INTERNAL_H
#define WSP_MODEL_INTERNAL_H

#include "model.h"

#include "departed.h"
#include "treap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stash {
	uint32_t tid;
	bool used;
	uint64_t moved;       /* the key a heap MOVE released */
	uint64_t blocks_gone; /* counted mappings whose last piece was parked */
	struct wsp_block *blocks;
	size_t n, cap;
};

struct ann {
	uint64_t key;                /* the block's key; 0: empty slot */
	struct wsp_ann_state st;
	char *name;
};

/* Block keys in address order: the block containing an interior pointer
 * is the one with the greatest key not above it (treap.h). */
struct treap {
	struct wsp_tpool pool;
	uint32_t root;
	uint32_t *place;             /* beside each node: its block's place in blocks */
	size_t place_cap;
	size_t laid_out, inserted;   /* nodes when last laid out in key order, inserts since */
};

/* Address ranges of one kind, sorted by addr, non-overlapping. */
struct range_set {
	struct wsp_block *v;
	size_t n, cap;
};

struct caller_slot {
	uint64_t stack;  /* 0: empty */
	int8_t ok;
};

struct site {
	uint64_t stack;
	uint8_t kind;
	uint64_t allocations, bytes, failed, temporary;
	uint64_t accessed, coldest;  /* of its freed blocks (live ones are added at the end) */
	uint64_t live, live_blocks, snap;
	uint32_t snap_epoch;
};

struct serial_slot {
	uint32_t tid;    /* 0: empty */
	uint64_t serial; /* allocations made by the thread so far */
};

struct wsp_model {
	struct wsp_kind_stats kinds[WSPROF_KIND_COUNT];
	uint64_t untracked_frees, last_time;
	uint64_t seq;                /* of the event being applied */

	/* Heap blocks: a hash table of their keys (0: empty), each slot naming
	 * a block of a dense array whose freed places are taken again first.
	 * A probe reads a few cache lines of keys, a removal moves slots of
	 * 12 bytes, and a block keeps its place while it lives. The table's
	 * slot order is the order blocks are visited in. */
	uint64_t *heap_keys;
	uint32_t *heap_block;        /* slot -> block */
	size_t heap_cap, heap_used;
	struct wsp_block *blocks;
	uint32_t *block_slot;        /* block -> slot */
	size_t nblocks, blocks_cap;
	uint32_t *free_blocks;       /* places freed, taken again last in first out */
	size_t nfree_blocks;

	struct range_set ranges[4];  /* mmap, CUDA VMM mappings, CUDA VMM reservations, mmap reservations */
	uint64_t changed_lo, changed_hi; /* the span where ranges changed (wsp_model_ranges_changed); empty: lo >= hi */

	struct wsp_device_stats *devices;
	struct wsp_series *device_used; /* by index of devices */
	size_t ndevices, devices_cap, device_used_cap;
	struct wsp_series live[WSPROF_KIND_COUNT];
	struct wsp_failure *failures;
	size_t nfailures, failures_cap;

	struct ann *anns;            /* annotation states by block key (0: empty) */
	size_t ann_cap, ann_used;
	bool ordered;                /* the treaps below are kept (interior pointers seen) */
	struct treap by_addr[2];     /* memory blocks, pool blocks: for interior pointers */
	/* Places of the blocks allocated since the treaps were last asked
	 * (model_order_new): most blocks are freed before that and never
	 * enter them. A block in them says so (wsp_block.ordered). */
	uint32_t *unordered;
	size_t nunordered, unordered_cap;
	uint64_t unknown_annotations;
	struct wsp_phase *phases;
	size_t nphases, phases_cap;
	struct wsp_snapshot *snapshots;
	size_t nsnapshots, snapshots_cap;
	struct wsp_recording_switch *switches; /* RECORDING events, in order */
	size_t nswitches, switches_cap;
	/* HEAP_TOTALS (a sampled trace): the last record, the highest peak
	 * of all (bytes asked for), when and at which record, and the heap's
	 * live bytes over time from them, which replace the estimates' at the
	 * finish (heap_counted) where the trace holds the process whole. */
	wsprof_heap_totals totals;
	bool has_totals, heap_counted, child;
	uint64_t totals_peak, totals_peak_ns, totals_peak_seq, totals_last_ns;
	struct wsp_series totals_live;
	struct wsp_kind_stats heap_estimates; /* what the sampled blocks made of them, when counted */
	struct wsp_kind_stats estimated_at_totals; /* the estimates at the last HEAP_TOTALS */

	uint64_t wss_bucket_ns, window_ns;
	struct wsp_wss *wss;
	/* Blocks freed while a window that may have seen them is open
	 * (departed.h); without totals only. windowed_end: the end of the last
	 * window of written pages or DAMON regions. */
	struct wsp_departed *departed;
	uint64_t windowed_end;
	/* The block an access sample's last region overlapped, and the bytes
	 * of the sample in it so far: a block spanning several regions is
	 * accessed by all of them. */
	const struct wsp_block *note_block;
	uint64_t note_bytes;
	/* A view told of each live block an access sample's region overlaps,
	 * as the sample is matched (wsp_model_observe_access). */
	wsp_model_overlap_fn observe;
	void *observe_arg;
	struct wsp_rss_point *rss;
	size_t nrss, rss_cap;

	struct stash *stashes;
	size_t nstashes;

	const char *const *callers;
	struct caller_slot *ccache;
	size_t ccache_cap, ccache_used;

	bool per_stack;
	bool totals_only;
	bool unmatched_access;       /* wsp_model_options.unmatched_access (or no_access_figures) */
	bool keep_departed;          /* freed blocks kept for the windows that may have seen them */
	struct site *sites;
	size_t nsites, sites_cap;
	uint32_t *site_index;        /* hash of (kind, stack) -> sites index + 1 */
	size_t site_index_cap;
	uint32_t epoch[WSPROF_KIND_COUNT]; /* bumped at every new peak of the kind */

	struct serial_slot *serials;
	size_t serials_cap, serials_used;

	uint32_t *children;
	size_t nchildren, children_cap;
	char *exec_path;

	uint64_t sample_bytes;       /* the trace's WSPROF_SAMPLE_BYTES; 0: all recorded */
	uint64_t check_due;          /* events before the checked build's next wsp_model_check */
};

static inline size_t hash64(uint64_t x, size_t cap)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	return (size_t)x & (cap - 1);
}

/* model.c: realloc/mremap in flight. */
int model_stash_add(struct stash *s, const struct wsp_block *b);

/* heap.c: blocks by key. model_heap_probe: the slot of a key's block, or
 * the empty slot that ends its probe run; model_heap_insert_at takes
 * that slot (SIZE_MAX: find it); model_heap_add puts a block into the
 * table (checkpoint.c restores them so). */
uint64_t model_block_key(unsigned kind, unsigned op, uint64_t addr);
size_t model_heap_probe(const struct wsp_model *m, uint64_t addr);
struct wsp_block *model_heap_at(const struct wsp_model *m, size_t i);
struct wsp_block *model_heap_find(struct wsp_model *m, uint64_t addr);
int model_heap_insert_at(struct wsp_model *m, const struct wsp_block *b, size_t j);
int model_heap_add(struct wsp_model *m, const struct wsp_block *b);
/* Room for n heap blocks, so that adding them grows nothing. @return 0 or -ENOMEM. */
int model_heap_reserve(struct wsp_model *m, size_t n);
void model_heap_remove(struct wsp_model *m, struct wsp_block *b);

/* ranges.c: address ranges. model_ranges_of: a kind's set (NULL: not a
 * kind of ranges); model_ranges_beside: the other half of the mmap
 * address space; model_ranges_cut releases [addr, addr+len) from both,
 * into a stash for a MOVE. */
struct range_set *model_ranges_of(struct wsp_model *m, unsigned kind);
struct range_set *model_ranges_beside(struct wsp_model *m, unsigned kind);
size_t model_range_first_after(const struct range_set *rs, uint64_t addr);
int model_range_add(struct wsp_model *m, struct range_set *rs, struct wsp_block *b);
int model_ranges_cut(struct wsp_model *m, unsigned kind, uint64_t addr, uint64_t len, struct stash *into);

/* figures.c: what blocks add to. */
void model_add_live(struct wsp_model *m, const struct wsp_block *b, uint64_t bytes, uint64_t blocks, uint64_t time);
void model_sub_live(struct wsp_model *m, const struct wsp_block *b, uint64_t bytes, uint64_t blocks);
void model_gain(struct wsp_model *m, const struct wsp_block *b, uint64_t time);
void model_lose(struct wsp_model *m, const struct wsp_block *b);
void model_count_free(struct wsp_model *m, const struct wsp_block *b);
void model_note_in_use(struct wsp_kind_stats *k, uint64_t time);
/* The figures of (kind, stack), made on first use. @return index or -ENOMEM. */
int64_t model_site_of(struct wsp_model *m, unsigned kind, uint64_t stack);
/* The allocation count of a thread; created at 0. NULL without memory. */
uint64_t *model_serial_of(struct wsp_model *m, uint32_t tid);

/* estimates.c: a sampled trace's weights and counted totals. */
bool model_estimated(const struct wsp_model *m, unsigned kind);
uint64_t model_weigh(const struct wsp_model *m, const struct wsp_block *b, uint64_t x);
int model_apply_totals(struct wsp_model *m, const wsprof_event *ev);
void model_count_heap(struct wsp_model *m);

/* callers.c: whether an allocation by this stack counts (--caller). */
bool model_caller_counts(struct wsp_model *m, wsprof_trace *t, uint64_t stack);

/* access.c */
int model_apply_access(struct wsp_model *m, wsprof_trace *t, const wsprof_event *ev);
int model_ensure_wss(struct wsp_model *m, wsprof_trace *t);

/* annotations.c: annotations and the blocks in address order. */
int model_apply_annotation(struct wsp_model *m, const wsprof_event *ev);
struct ann *model_ann_find(const struct wsp_model *m, uint64_t key);
void model_ann_drop(struct wsp_model *m, const struct wsp_block *b);
int model_build_ordered(struct wsp_model *m);
int model_order_new(struct wsp_model *m);
struct treap *model_treap_of(struct wsp_model *m, uint64_t key);
int model_treap_insert(struct treap *t, uint64_t key, uint32_t place);
void model_treap_remove(struct treap *t, uint64_t key);
int model_treap_lay_out(struct treap *t);
uint64_t model_treap_ceil(const struct treap *t, uint64_t x);
uint64_t model_treap_floor(const struct treap *t, uint64_t x);

#endif
