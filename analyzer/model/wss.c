/*
 * wss.c - see wss.h.
 */
#include "wss.h"
#include "units.h"

#include <stdio.h>

static const struct wsp_access_source sources[WSPROF_ACCESS_SOURCE_COUNT] = {
	[WSPROF_ACCESS_WRITES] = { "writes", "written pages", "written pages (exact)", WSPROF_SOURCE_WRITES },
	[WSPROF_ACCESS_DAMON] = { "damon", "DAMON", "DAMON (sampled reads and writes)", WSPROF_SOURCE_DAMON },
	[WSPROF_ACCESS_INFERRED] = { "inferred", "kernel launches", "inferred from kernel launches (may be touched)",
				     WSPROF_SOURCE_KERNEL_LAUNCHES },
	[WSPROF_ACCESS_ANNOTATED] = { "annotated", "annotations", "annotations (wsprof_touch)", WSPROF_SOURCE_ANNOTATIONS },
};

const struct wsp_access_source *wsp_access_source(unsigned source)
{
	return source < WSPROF_ACCESS_SOURCE_COUNT ? &sources[source] : NULL;
}

const struct wsp_access_source *wsp_access_source_listed(size_t i)
{
	/* The order the summary has always listed them in. */
	static const unsigned order[WSPROF_ACCESS_SOURCE_COUNT] = { WSPROF_ACCESS_WRITES, WSPROF_ACCESS_DAMON,
								     WSPROF_ACCESS_ANNOTATED, WSPROF_ACCESS_INFERRED };
	return i < WSPROF_ACCESS_SOURCE_COUNT ? &sources[order[i]] : NULL;
}

const char *wsp_access_sources_text(unsigned bits, char *buf, size_t cap)
{
	size_t o = 0;
	buf[0] = 0;
	for (size_t i = 0; i < WSPROF_ACCESS_SOURCE_COUNT; i++)
		if (bits & wsp_access_source_listed(i)->bit)
			o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, "%s%s", o ? ", " : "",
					      wsp_access_source_listed(i)->word);
	return buf;
}

#include "grow.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct wsp_wss {
	uint64_t bucket_ns;
	wsp_wss_attribute_fn attribute;
	void *ctx;
	struct wsp_wss_point *points;
	size_t npoints, cap;
	bool open;
	struct wsp_wss_point cur;
	uint64_t cur_from;  /* the earliest start of the open bucket's samples (a window may start before it) */
	wsprof_region *regions[WSPROF_ACCESS_SOURCE_COUNT]; /* of the open bucket */
	size_t nregions[WSPROF_ACCESS_SOURCE_COUNT], rcap[WSPROF_ACCESS_SOURCE_COUNT];
};

struct wsp_wss *wsp_wss_new(uint64_t bucket_ns, wsp_wss_attribute_fn attribute, void *ctx)
{
	struct wsp_wss *w = calloc(1, sizeof *w);
	if (w) {
		w->bucket_ns = bucket_ns;
		w->attribute = attribute;
		w->ctx = ctx;
	}
	return w;
}

void wsp_wss_free(struct wsp_wss *w)
{
	if (!w)
		return;
	for (unsigned s = 0; s < WSPROF_ACCESS_SOURCE_COUNT; s++)
		free(w->regions[s]);
	free(w->points);
	free(w);
}

static int by_addr(const void *a, const void *b)
{
	uint64_t x = ((const wsprof_region *)a)->addr, y = ((const wsprof_region *)b)->addr;
	return x < y ? -1 : x > y;
}

/* Merge a source's regions in place (sorted, overlaps joined). @return the count. */
static size_t merge(wsprof_region *r, size_t n)
{
	if (n)
		qsort(r, n, sizeof *r, by_addr); /* r is NULL when n is 0, which qsort may not get */
	size_t out = 0;
	for (size_t i = 0; i < n; i++) {
		if (out && r[i].addr <= r[out - 1].addr + r[out - 1].len) {
			uint64_t end = r[i].addr + r[i].len;
			if (end > r[out - 1].addr + r[out - 1].len)
				r[out - 1].len = end - r[out - 1].addr;
		} else {
			r[out++] = r[i];
		}
	}
	return out;
}

static int close_bucket(struct wsp_wss *w)
{
	if (!w->open)
		return 0;
	/* Kinds are counted once over all sources: merge them all together too. */
	wsprof_region *all = NULL;
	size_t nall = 0, cap = 0;
	for (unsigned s = 0; s < WSPROF_ACCESS_SOURCE_COUNT; s++) {
		size_t n = merge(w->regions[s], w->nregions[s]);
		if (!n)
			continue; /* nothing of this source (its array may not exist) */
		for (size_t i = 0; i < n; i++)
			w->cur.bytes[s] += w->regions[s][i].len;
		if (wsp_grow(&all, &cap, nall + n, sizeof *all)) {
			free(all);
			return -ENOMEM;
		}
		memcpy(all + nall, w->regions[s], n * sizeof *all);
		nall += n;
		w->nregions[s] = 0;
	}
	nall = merge(all, nall);
	for (size_t i = 0; i < nall; i++)
		w->cur.unattributed_bytes +=
			w->attribute(w->ctx, w->cur_from, w->cur.end_ns, all[i].addr, all[i].len, w->cur.kind_bytes);
	free(all);
	if (wsp_grow(&w->points, &w->cap, w->npoints + 1, sizeof *w->points))
		return -ENOMEM;
	w->points[w->npoints++] = w->cur;
	w->open = false;
	return 0;
}

int wsp_wss_add(struct wsp_wss *w, unsigned source, uint64_t end_ns, uint64_t window_ns, const wsprof_region *r,
		size_t n)
{
	if (source >= WSPROF_ACCESS_SOURCE_COUNT)
		return 0;
	/* Written pages and DAMON report windows; a kernel launch or an
	 * annotation is a moment (end_ns) whatever span it names, so it never
	 * stretches a bucket over the next window. */
	bool windowed = wsp_access_is_window(source, window_ns);
	uint64_t start = windowed && end_ns > window_ns ? end_ns - window_ns : windowed ? 0 : end_ns;
	if (w->open && (w->bucket_ns ? start >= w->cur.start_ns + w->bucket_ns : start >= w->cur.end_ns)) {
		int err = close_bucket(w);
		if (err)
			return err;
	}
	if (!w->open) {
		memset(&w->cur, 0, sizeof w->cur);
		/* --window buckets sit on multiples of their length. */
		w->cur.start_ns = w->bucket_ns ? start - start % w->bucket_ns : start;
		w->cur_from = w->cur.start_ns;
		w->open = true;
	}
	if (start < w->cur_from)
		w->cur_from = start;
	/* A window that joins a bucket a moment opened (a launch, a block
	 * read as it was freed) starts it. */
	if (!w->bucket_ns && start < w->cur.start_ns)
		w->cur.start_ns = start;
	if (end_ns > w->cur.end_ns)
		w->cur.end_ns = end_ns;
	if (!n || !w->attribute)
		return 0; /* a window with nothing accessed, or only buckets kept: the bucket is there, with no regions */
	if (wsp_grow(&w->regions[source], &w->rcap[source], w->nregions[source] + n, sizeof *r))
		return -ENOMEM;
	memcpy(w->regions[source] + w->nregions[source], r, n * sizeof *r);
	w->nregions[source] += n;
	return 0;
}

uint64_t wsp_wss_open_start(const struct wsp_wss *w)
{
	return w->open ? w->cur_from : UINT64_MAX;
}

int wsp_wss_finish(struct wsp_wss *w)
{
	return close_bucket(w);
}

size_t wsp_wss_points(const struct wsp_wss *w, const struct wsp_wss_point **points)
{
	*points = w->points;
	return w->npoints;
}

uint64_t wsp_nearest_rank(const uint64_t *sorted, size_t n, unsigned pct)
{
	return n ? sorted[(size_t)((pct * (n - 1) + 50) / 100)] : 0;
}

int wsp_wss_median(const struct wsp_wss *w, int kind, uint64_t *median)
{
	if (!w || !w->npoints)
		return -1;
	uint64_t *v = malloc(w->npoints * sizeof *v);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < w->npoints; i++)
		v[i] = wsp_wss_point_bytes(&w->points[i], -1, kind);
	qsort(v, w->npoints, sizeof *v, wsp_cmp_u64);
	*median = wsp_nearest_rank(v, w->npoints, 50);
	free(v);
	return 0;
}

uint64_t wsp_wss_point_bytes(const struct wsp_wss_point *p, int source, int kind)
{
	if (source >= 0)
		return p->bytes[source];
	if (kind >= 0)
		return p->kind_bytes[kind];
	uint64_t sum = p->unattributed_bytes;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		sum += p->kind_bytes[k];
	return sum;
}
