/*
 * layout.h - the address layout of one memory at one moment, as figures:
 * its blocks by address, the holes between them, the largest hole,
 * fragmentation, and at a failed allocation the request against the
 * largest hole. text/statetext.c prints them, draw/statemap.c draws them.
 *
 * A memory is the heap, the program's own mappings, pinned host memory,
 * managed memory, or the device memory of one CUDA device: the live blocks
 * of one kind (and device), by address. The figures are defined in
 * doc/reports.md ("Memory state"); `wsprof report state` prints them
 * (state.c) and draws them (-o), and the full report draws the same pages.
 */
#ifndef WSP_LAYOUT_H
#define WSP_LAYOUT_H

#include "state.h"

struct wsp_memory {
	unsigned kind;
	int device;                               /* cuda_device: the device, else -1 */
	const struct wsp_state_block **blocks;    /* its live blocks, by address */
	size_t n;
	const struct wsp_state_block **subs;      /* pool sub-allocations inside them, by address */
	size_t nsubs;
	uint64_t lo, hi;                          /* the span: from the lowest block to the end of the highest */
	uint64_t live_bytes, collectable_bytes;
	bool estimated;                           /* a sampled heap: only the sampled blocks are here, and
						   * live and collectable bytes are estimates */
	uint64_t slack;                           /* gaps under this are allocator overhead, not holes */
	uint64_t break_bytes;                     /* gaps of this or more separate areas: breaks, not holes */
	uint64_t holes, free_bytes;               /* gaps from slack up to break_bytes, and their bytes */
	uint64_t largest_hole, largest_hole_addr; /* 0 when there is no hole */
	uint64_t breaks, break_total;             /* breaks, and the bytes they leave out */
	uint64_t pools, pooled_bytes;             /* blocks holding sub-allocations; the sub-allocations' bytes */
	double fragmentation;                     /* 1 - largest hole / free bytes; 0 without holes */
	bool sampled;                             /* a device whose memory was sampled before the moment: */
	uint64_t device_free, device_total;       /* the last sample (cuMemGetInfo) */
};

/* The memories with live blocks at the moment, of kind (-1: every kind
 * with addresses), the moment's own memory first (the one that failed or
 * peaked), then by kind and device. The memory a failed request was for
 * is there even when nothing is live in it.
 * @return 0, or -ENOMEM. */
int wsp_memories(const struct wsp_state *st, int kind, struct wsp_memory **out, size_t *n);
void wsp_memories_free(struct wsp_memory *m, size_t n);
/* Whether blocks of kind have addresses to lay out (not pool
 * sub-allocations, drawn inside their blocks, nor CUDA VMM handles). */
bool wsp_memory_kind(unsigned kind);
/* "1 hole", "2,048 holes". @return buf. */
const char *wsp_counted(char *buf, size_t cap, uint64_t n, const char *noun);
/* The fragmentation as a percentage, "15.4 %". @return buf. */
const char *wsp_memory_fragmentation(const struct wsp_memory *m, char *buf, size_t cap);
/* "heap", "device 0". @return buf. */
const char *wsp_memory_name(const struct wsp_memory *m, char *buf, size_t cap);
/* Whether the moment's failed request was for this memory. */
bool wsp_memory_failed(const struct wsp_state *st, const struct wsp_memory *m);
/* What the failed request says about the memory: "it fits the largest
 * hole: ...", "... fragmentation", "more than all the holes together". */
const char *wsp_memory_verdict(const struct wsp_memory *m, uint64_t request);

/* The gap before block i of m, walking by address with *reach the end of
 * the blocks so far (0 for the first, or an overlap). */
uint64_t wsp_memory_gap_before(const struct wsp_memory *m, size_t i, uint64_t *reach);

#endif
