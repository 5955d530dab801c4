/*
 * wss.h - working-set size over time: the union of the memory accessed in
 * each bucket of time, per access source, split by kind.
 *
 * Fed by the model with the ACCESS samples as they come (sorted regions of
 * one recorded window); a bucket (the recorded window, or a multiple asked
 * with --window) closes when a sample starts past its end, and its regions
 * are merged so that memory accessed in several windows counts once. The
 * kind of each byte comes from the blocks live during the bucket (the
 * model's attribute function).
 */
#ifndef WSP_WSS_H
#define WSP_WSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wsprof/trace.h"

struct wsp_wss_point {
	uint64_t start_ns, end_ns;
	uint64_t bytes[WSPROF_ACCESS_SOURCE_COUNT];  /* accessed, per source */
	uint64_t kind_bytes[WSPROF_KIND_COUNT];      /* all sources, per kind of the block */
	uint64_t unattributed_bytes;                 /* in no live block (allocator metadata, free memory) */
};

struct wsp_wss;

/* An access source (WSPROF_ACCESS_*) as every report names it: its key
 * (JSON, --source), its word ("written pages"), the word with what the
 * source sees ("written pages (exact)"), and its WSPROF_SOURCE_* bit. */
struct wsp_access_source {
	const char *key, *word, *detail;
	unsigned bit;
};
const struct wsp_access_source *wsp_access_source(unsigned source);
/* The i-th source in the order reports list them (NULL past the last). */
const struct wsp_access_source *wsp_access_source_listed(size_t i);

/* The access sources of a WSPROF_SOURCE_* set, by word ("written pages,
 * annotations"; empty when none), in the order reports list them.
 * @return buf. */
const char *wsp_access_sources_text(unsigned bits, char *buf, size_t cap);

/* Does an access sample cover a window (written pages, DAMON), or is it a
 * moment (a kernel launch, an annotation, a block read as it was freed:
 * window 0)? */
static inline bool wsp_access_is_window(unsigned source, uint64_t window_ns)
{
	return (source == WSPROF_ACCESS_WRITES || source == WSPROF_ACCESS_DAMON) && window_ns;
}

/* Split [addr, addr+len), accessed in the bucket [start_ns, end_ns], among
 * kinds: add each kind's bytes into kind_bytes and @return the bytes that
 * fall in no block live during the bucket. */
typedef uint64_t (*wsp_wss_attribute_fn)(void *ctx, uint64_t start_ns, uint64_t end_ns, uint64_t addr, uint64_t len,
					 uint64_t *kind_bytes);

/* bucket_ns 0: each recorded window is a bucket. attribute NULL: the
 * buckets alone are kept, with no bytes (a summary counts the windows). */
struct wsp_wss *wsp_wss_new(uint64_t bucket_ns, wsp_wss_attribute_fn attribute, void *ctx);
void wsp_wss_free(struct wsp_wss *w);
/* One sample: the window [end - window, end]. @return 0 or -ENOMEM. */
int wsp_wss_add(struct wsp_wss *w, unsigned source, uint64_t end_ns, uint64_t window_ns, const wsprof_region *r,
		size_t n);
/* The start of the bucket open now; UINT64_MAX when none is. */
uint64_t wsp_wss_open_start(const struct wsp_wss *w);
/* Close the last bucket. */
int wsp_wss_finish(struct wsp_wss *w);
size_t wsp_wss_points(const struct wsp_wss *w, const struct wsp_wss_point **points);
/* The bytes a point stands for: one source's (source >= 0), one kind's
 * (kind >= 0), or everything accessed, in blocks or not, each byte once
 * however many sources saw it. */
uint64_t wsp_wss_point_bytes(const struct wsp_wss_point *p, int source, int kind);

/* The nearest-rank percentile pct (0-100) of n sorted values (0 when n is 0). */
uint64_t wsp_nearest_rank(const uint64_t *sorted, size_t n, unsigned pct);
/* The median over the points of their bytes (wsp_wss_point_bytes with
 * source -1 and kind). @return 0 with *median, -1 when there are no
 * points (no access samples), or -ENOMEM. */
int wsp_wss_median(const struct wsp_wss *w, int kind, uint64_t *median);

#endif
