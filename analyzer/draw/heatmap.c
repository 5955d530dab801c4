/*
 * heatmap.c - `wsprof report heatmap` and the heatmap pages of the full
 * report (heatmap.h): memory over time, rows by address band, by
 * allocation site or by named buffer.
 *
 * Two passes over the trace keep memory bounded by the grid, not by the
 * trace's length:
 *   1. the time span, the window of the access samples, and the address
 *      ranges ever live or accessed (a sorted set of at most SPANS_CAP
 *      ranges: past that, the ranges closest together are joined), each
 *      weighed by the bytes accessed and allocated in it;
 *   2. the model replayed event by event; each access sample's regions
 *      are split among the rows (address bands, or the live blocks'
 *      sites and names) and spread over the columns its window covers,
 *      and the live bytes of each row are sampled a few times a column.
 *
 * A cell's colour is the access rate - bytes accessed per second, the
 * most any one access source saw, since sources watch the same memory in
 * different ways - wherever the memory shown has access samples, and the
 * live bytes (mean of the column's samples) otherwise. Cold memory is a
 * pale grey, never black: live but not accessed. White is nothing live.
 *
 * By address, a gap between live or accessed ranges is collapsed when it
 * is MIN_GAP at least and more than a twenty-fourth of what would be
 * shown without it (the largest MAX_SEPARATORS of them); by default only
 * the hottest of the spans between collapsed gaps is shown, laid out again
 * on its own, as damo does. Rows are bands of one power-of-two size, so
 * their colours compare. By site or name, a byte of a pool sub-allocation
 * counts for the pool's row and for the row of the block it was carved
 * from; the top rows are kept and the rest summed in one.
 */
#include "heatmap.h"

#include "analyzer.h"
#include "json.h"
#include "views.h"

#include "grow.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ADDRESS_ROWS 160
#define MAX_SEPARATORS 12
#define MAX_KEYS 2048       /* sites or names with a row of their own; the rest go to "other" */
#define DEFAULT_TOP 30
#define MAX_TOP 45          /* rows a page shows readably */
#define SPANS_CAP 4096
#define LIVE_SAMPLES 300    /* live-set samples over the whole run, at least one a column */
#define PAGE 4096u
#define MIN_GAP (64u << 10) /* a gap worth a separator: smaller ones stay in their span */
#define SOURCES WSPROF_ACCESS_SOURCE_COUNT
#define LEVELS 64           /* colour steps drawn */

static const char *const by_names[WSP_HEAT_BY_COUNT] = { "address", "callsite", "name" };

/* ---- kinds ---------------------------------------------------------------- */

/* Kinds whose blocks lie at addresses memory is accessed at: not CUDA VMM
 * physical allocations (handles) nor address space only reserved. */
static bool has_addresses(unsigned kind)
{
	return kind != WSPROF_KIND_CUDA_VMM && !wsp_kind_is_reservation(kind);
}

static bool kind_wanted(int kind, unsigned k)
{
	return kind >= 0 ? k == (unsigned)kind : has_addresses(k);
}

/* Pool sub-allocations and registered host ranges lie inside other
 * blocks: by address their bytes would count twice. */
static bool inside_another(const struct wsp_block *b)
{
	return b->kind == WSPROF_KIND_POOL || b->addr >> 62 == 1;
}

/* ---- pass 1: the address ranges ever live or accessed --------------------- */

struct span {
	uint64_t lo, hi;
	double accessed, allocated;
};

struct spans {
	struct span *v, *pending, *merged;
	size_t n, cap, npending, pending_cap, merged_cap;
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void span_push(struct span *out, size_t *n, const struct span *s)
{
	if (*n && s->lo <= out[*n - 1].hi) {
		struct span *last = &out[*n - 1];
		if (s->hi > last->hi)
			last->hi = s->hi;
		last->accessed += s->accessed;
		last->allocated += s->allocated;
	} else {
		out[(*n)++] = *s;
	}
}

/* Join the ranges separated by the smallest gaps until half the cap is left. */
static int spans_thin(struct spans *s)
{
	size_t want = SPANS_CAP / 2;
	uint64_t *gaps = malloc((s->n - 1) * sizeof *gaps);
	if (!gaps)
		return -ENOMEM;
	for (size_t i = 0; i + 1 < s->n; i++)
		gaps[i] = s->v[i + 1].lo - s->v[i].hi;
	qsort(gaps, s->n - 1, sizeof *gaps, wsp_cmp_u64);
	uint64_t limit = gaps[s->n - want - 1];
	free(gaps);
	size_t n = 1;
	for (size_t i = 1; i < s->n; i++) {
		if (s->v[i].lo - s->v[n - 1].hi <= limit) {
			s->v[n - 1].hi = s->v[i].hi;
			s->v[n - 1].accessed += s->v[i].accessed;
			s->v[n - 1].allocated += s->v[i].allocated;
		} else {
			s->v[n++] = s->v[i];
		}
	}
	s->n = n;
	return 0;
}

static int spans_flush(struct spans *s)
{
	if (!s->npending)
		return 0;
	qsort(s->pending, s->npending, sizeof *s->pending, cmp_span);
	if (wsp_grow(&s->merged, &s->merged_cap, s->n + s->npending, sizeof *s->merged))
		return -ENOMEM;
	size_t n = 0, i = 0, j = 0;
	while (i < s->n || j < s->npending) {
		bool old = j == s->npending || (i < s->n && s->v[i].lo <= s->pending[j].lo);
		span_push(s->merged, &n, old ? &s->v[i++] : &s->pending[j++]);
	}
	struct span *v = s->v;
	size_t cap = s->cap;
	s->v = s->merged;
	s->cap = s->merged_cap;
	s->merged = v;
	s->merged_cap = cap;
	s->n = n;
	s->npending = 0;
	return s->n > SPANS_CAP ? spans_thin(s) : 0;
}

static int spans_add(struct spans *s, uint64_t lo, uint64_t hi, double accessed, double allocated)
{
	if (hi <= lo)
		return 0;
	if (s->npending == SPANS_CAP) {
		int err = spans_flush(s);
		if (err)
			return err;
	}
	if (wsp_grow(&s->pending, &s->pending_cap, s->npending + 1, sizeof *s->pending))
		return -ENOMEM;
	s->pending[s->npending++] = (struct span){ lo, hi, accessed, allocated };
	return 0;
}

/* The first span ending after addr. */
static size_t spans_after(const struct span *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Accesses to memory of one kind: they weigh the ranges of its blocks
 * without widening them. */
static int spans_weigh(struct spans *s, uint64_t lo, uint64_t hi)
{
	int err = spans_flush(s);
	for (size_t i = spans_after(s->v, s->n, lo); !err && i < s->n && s->v[i].lo < hi; i++) {
		uint64_t a = s->v[i].lo > lo ? s->v[i].lo : lo, b = s->v[i].hi < hi ? s->v[i].hi : hi;
		s->v[i].accessed += (double)(b - a);
	}
	return err;
}

static void spans_free(struct spans *s)
{
	free(s->v);
	free(s->pending);
	free(s->merged);
	memset(s, 0, sizeof *s);
}

/* ---- the address layout --------------------------------------------------- */

/* The ranges within [lo, hi), cut into segments at the gaps worth
 * collapsing. @return the segments (malloc'd) and their count in *n. */
static struct span *layout_segments(const struct spans *s, uint64_t lo, uint64_t hi, size_t *n, int *err)
{
	*n = 0;
	size_t first = spans_after(s->v, s->n, lo), m = 0;
	while (first + m < s->n && s->v[first + m].lo < hi)
		m++;
	if (!m)
		return NULL;
	struct span *c = malloc(m * sizeof *c);
	size_t *order = malloc(m * sizeof *order);
	bool *cut = calloc(m, sizeof *cut);
	if (!c || !order || !cut) {
		free(c), free(order), free(cut);
		*err = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < m; i++) {
		c[i] = s->v[first + i];
		if (c[i].lo < lo)
			c[i].lo = lo;
		if (c[i].hi > hi)
			c[i].hi = hi;
	}
	/* Gaps, largest first: gap i lies before range i. */
	size_t ng = 0;
	for (size_t i = 1; i < m; i++)
		order[ng++] = i;
	for (size_t i = 1; i < ng; i++) /* insertion sort: m is at most SPANS_CAP */
		for (size_t k = i; k > 0; k--) {
			uint64_t a = c[order[k]].lo - c[order[k] - 1].hi, b = c[order[k - 1]].lo - c[order[k - 1] - 1].hi;
			if (a <= b)
				break;
			size_t t = order[k];
			order[k] = order[k - 1];
			order[k - 1] = t;
		}
	uint64_t extent = c[m - 1].hi - c[0].lo;
	for (size_t k = 0; k < ng && k < MAX_SEPARATORS; k++) {
		uint64_t gap = c[order[k]].lo - c[order[k] - 1].hi;
		if ((double)gap * 24 <= (double)(extent - gap) || gap < MIN_GAP)
			break;
		cut[order[k]] = true;
		extent -= gap;
	}
	size_t out = 0;
	for (size_t i = 0; i < m; i++) {
		if (i && !cut[i]) {
			c[out - 1].hi = c[i].hi;
			c[out - 1].accessed += c[i].accessed;
			c[out - 1].allocated += c[i].allocated;
		} else {
			c[out++] = c[i];
		}
	}
	free(order);
	free(cut);
	*n = out;
	return c;
}

/* Bands of one size, a power of two and a page at least, that lay the
 * segments out in MAX_ADDRESS_ROWS rows or fewer. */
static uint64_t band_size(const struct span *seg, size_t n)
{
	for (uint64_t band = PAGE;; band *= 2) {
		uint64_t rows = 0;
		for (size_t i = 0; i < n; i++)
			rows += (seg[i].hi - 1) / band - seg[i].lo / band + 1;
		if (rows <= MAX_ADDRESS_ROWS || band >> 62)
			return band;
	}
}

/* ---- rows ----------------------------------------------------------------- */

enum row_what { ROW_KEY, ROW_OTHER, ROW_UNNAMED };

struct hrow {
	char *label;
	struct wsp_frame site;      /* by call site: the first frame outside the allocator */
	uint64_t lo, hi;            /* by address: the band */
	enum row_what what;
	double *accessed[SOURCES];  /* bytes per column, NULL while a source has none here */
	double *live;               /* live bytes per column: mean of its samples */
	double *value;              /* what the colour shows, per column (when finished) */
	double pending;             /* bytes of the access sample being split */
	double accessed_bytes, live_seconds, peak;
};

struct view {
	enum wsp_heat_by by;
	bool wanted;
	struct hrow *rows;
	size_t nrows, cap;
	uint32_t *index;            /* by key: hash of the label -> row + 1 */
	size_t index_cap;
	size_t keys;                /* rows of their own */
	bool keys_capped;           /* more keys than MAX_KEYS: the rest are in "other" */
	long other, unnamed;        /* those rows, or -1 */
	size_t ranked;              /* keys in all, before the top ones were kept */
	size_t *touched;            /* rows with bytes pending */
	size_t ntouched, touched_cap;
	/* by address */
	uint64_t band, view_lo, view_hi;
	struct gap {
		size_t below;           /* the row under it */
		uint64_t bytes;
	} *gaps;
	size_t ngaps;
	size_t nsegments, segment;  /* spans of the whole address space; the one shown, or SIZE_MAX */
	/* finished */
	bool access;
	unsigned sources;           /* bits (1 << source) with samples in these rows */
	double max, scale;          /* the largest cell, and the top of the colour scale */
};

/* The live blocks by address, for splitting accesses among them: a treap
 * (keyed by start) per layer of blocks that never overlap one another;
 * a pool sub-allocation lies inside a block of another layer. */
enum layer { LAYER_MEMORY, LAYER_POOL, LAYER_REGISTERED, LAYER_MAPPED, LAYERS };

struct node {
	uint64_t lo, hi;
	uint32_t row[WSP_HEAT_BY_COUNT];
	uint32_t prio, left, right; /* children: node + 1, 0 for none; a free node's left chains the free ones */
	float weight;               /* a byte of it counts this much to its rows: 1/p in a sampled heap */
};

struct index {
	struct node *v;
	size_t n, cap;
	uint32_t free, root[LAYERS];
	uint32_t seed;
};

struct heat {
	const struct wsp_heatmap_options *opt;
	const char *path;
	struct wsp_loaded l;        /* the second pass */
	struct view views[WSP_HEAT_BY_COUNT];
	uint64_t end_ns;            /* the time axis runs from 0 to here */
	size_t ncols;
	double col_s;
	bool names;                 /* some block was named */
	struct spans spans;
	/* Followed event by event; built again from the model when stale (a
	 * change too intricate to follow: mmap ranges cut, a failed realloc,
	 * a pool reset, a stream-ordered free). */
	struct index index;
	bool stale;
	struct stack_row {
		uint64_t stack;
		uint32_t row;
	} *stacks;                  /* hash: stack -> call-site row */
	size_t nstacks, stacks_cap;
	size_t live_col;            /* the column the live sample being taken goes to */
	double live_weight;         /* 1 / samples per column */
	int err;
	/* Where each pass has got. */
	bool first_seen, access, second_seen;
	uint64_t window_ns, last_ns;
	size_t per_col, samples, next;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static long row_new(struct heat *h, struct view *v, const char *label, enum row_what what)
{
	if (wsp_grow(&v->rows, &v->cap, v->nrows + 1, sizeof *v->rows))
		return -1;
	struct hrow *r = &v->rows[v->nrows];
	memset(r, 0, sizeof *r);
	r->label = strdup(label);
	r->live = calloc(h->ncols, sizeof *r->live);
	if (!r->label || !r->live) {
		free(r->label);
		free(r->live);
		return -1;
	}
	r->what = what;
	return (long)v->nrows++;
}

/* The row of a site or name, made if new; past MAX_KEYS, "other". -1 without memory. */
static long row_of_key(struct heat *h, struct view *v, const char *label, const struct wsp_frame *site)
{
	if ((v->keys + 1) * 2 > v->index_cap && v->keys < MAX_KEYS) {
		size_t cap = v->index_cap ? v->index_cap * 2 : 256;
		uint32_t *idx = calloc(cap, sizeof *idx);
		if (!idx)
			return -1;
		for (size_t i = 0; i < v->nrows; i++) {
			if (v->rows[i].what != ROW_KEY)
				continue;
			size_t j = hash_str(v->rows[i].label) & (cap - 1);
			while (idx[j])
				j = (j + 1) & (cap - 1);
			idx[j] = (uint32_t)i + 1;
		}
		free(v->index);
		v->index = idx;
		v->index_cap = cap;
	}
	size_t j = hash_str(label) & (v->index_cap - 1);
	for (; v->index[j]; j = (j + 1) & (v->index_cap - 1))
		if (!strcmp(v->rows[v->index[j] - 1].label, label))
			return v->index[j] - 1;
	if (v->keys >= MAX_KEYS) {
		v->keys_capped = true;
		if (v->other < 0)
			v->other = row_new(h, v, "", ROW_OTHER);
		return v->other;
	}
	long r = row_new(h, v, label, ROW_KEY);
	if (r < 0)
		return -1;
	if (site)
		v->rows[r].site = *site;
	v->index[j] = (uint32_t)r + 1;
	v->keys++;
	return r;
}

static long row_of_stack(struct heat *h, uint64_t stack)
{
	if ((h->nstacks + 1) * 2 > h->stacks_cap) {
		size_t cap = h->stacks_cap ? h->stacks_cap * 2 : 256;
		struct stack_row *t = calloc(cap, sizeof *t);
		if (!t)
			return -1;
		for (size_t i = 0; i < h->stacks_cap; i++) {
			if (!h->stacks[i].row)
				continue;
			size_t j = (h->stacks[i].stack * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
			while (t[j].row)
				j = (j + 1) & (cap - 1);
			t[j] = h->stacks[i];
		}
		free(h->stacks);
		h->stacks = t;
		h->stacks_cap = cap;
	}
	size_t j = (stack * 0x9e3779b97f4a7c15ull >> 20) & (h->stacks_cap - 1);
	for (; h->stacks[j].row; j = (j + 1) & (h->stacks_cap - 1))
		if (h->stacks[j].stack == stack)
			return h->stacks[j].row - 1;
	const struct wsp_frame *frames;
	size_t n = stack ? wsp_syms_stack(h->l.syms, h->l.trace, stack, &frames) : 0;
	char label[1024];
	long r = row_of_key(h, &h->views[WSP_HEAT_BY_CALLSITE], n ? wsp_frame_label(&frames[0], label, sizeof label) : "(no stack)",
			    n ? &frames[0] : NULL);
	if (r < 0)
		return -1;
	h->stacks[j] = (struct stack_row){ stack, (uint32_t)r + 1 };
	h->nstacks++;
	return r;
}

static long row_of_name(struct heat *h, const struct wsp_block *b)
{
	struct view *v = &h->views[WSP_HEAT_BY_NAME];
	const struct wsp_ann_state *a = wsp_model_ann(h->l.model, b);
	if (a && a->name && a->name[0])
		return row_of_key(h, v, a->name, NULL);
	if (v->unnamed < 0)
		v->unnamed = row_new(h, v, "(unnamed memory)", ROW_UNNAMED);
	return v->unnamed;
}

/* The first band ending after addr. */
static size_t band_after(const struct view *v, uint64_t addr)
{
	size_t lo = 0, hi = v->nrows;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v->rows[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Lay the bands out for the view range asked for. @return 0 or -ENOMEM. */
static int address_rows(struct heat *h, struct view *v)
{
	const struct wsp_heatmap_options *o = h->opt;
	int err = spans_flush(&h->spans);
	size_t n = 0;
	struct span *seg = err ? NULL : layout_segments(&h->spans, 0, UINT64_MAX, &n, &err);
	v->nsegments = n;
	v->segment = SIZE_MAX;
	v->view_lo = 0;
	v->view_hi = UINT64_MAX;
	if (o->range_hi) {
		v->view_lo = o->range_lo;
		v->view_hi = o->range_hi;
	} else if (!o->all_ranges && n > 1) {
		bool any = false;
		for (size_t i = 0; i < n; i++)
			any |= seg[i].accessed > 0;
		size_t best = 0;
		for (size_t i = 1; i < n; i++)
			if (any ? seg[i].accessed > seg[best].accessed : seg[i].allocated > seg[best].allocated)
				best = i;
		v->segment = best;
		v->view_lo = seg[best].lo;
		v->view_hi = seg[best].hi;
	}
	if (v->view_lo || v->view_hi != UINT64_MAX) {
		free(seg);
		seg = err ? NULL : layout_segments(&h->spans, v->view_lo, v->view_hi, &n, &err);
	}
	if (err || !n) {
		free(seg);
		return err;
	}
	v->band = band_size(seg, n);
	v->gaps = calloc(n, sizeof *v->gaps);
	if (!v->gaps)
		err = -ENOMEM;
	char label[32];
	for (size_t i = 0; !err && i < n; i++) {
		if (i)
			v->gaps[v->ngaps++] = (struct gap){ v->nrows - 1, seg[i].lo - seg[i - 1].hi };
		for (uint64_t b = seg[i].lo / v->band; !err && b <= (seg[i].hi - 1) / v->band; b++) {
			uint64_t lo = b * v->band, hi = lo + v->band;
			lo = lo < v->view_lo ? v->view_lo : lo;
			hi = hi > v->view_hi || hi < lo ? v->view_hi : hi;
			/* Neighbouring segments never share a band: their gap is wider than many bands. */
			if (v->nrows && lo < v->rows[v->nrows - 1].hi)
				lo = v->rows[v->nrows - 1].hi;
			snprintf(label, sizeof label, "0x%llx", (unsigned long long)lo);
			long r = row_new(h, v, label, ROW_KEY);
			if (r < 0)
				err = -ENOMEM;
			else
				v->rows[r].lo = lo, v->rows[r].hi = hi;
		}
	}
	free(seg);
	return err;
}

/* ---- pass 2: filling the grid --------------------------------------------- */

static size_t col_of(const struct heat *h, uint64_t t)
{
	if (t >= h->end_ns)
		return h->ncols - 1;
	return (size_t)((unsigned __int128)t * h->ncols / h->end_ns);
}

static uint64_t col_start(const struct heat *h, size_t c)
{
	return (uint64_t)((unsigned __int128)h->end_ns * c / h->ncols);
}

static void touch_row(struct view *v, long r, double bytes, int *err)
{
	if (r < 0) {
		*err = -ENOMEM;
		return;
	}
	if (v->rows[r].pending == 0) {
		if (wsp_grow(&v->touched, &v->touched_cap, v->ntouched + 1, sizeof *v->touched)) {
			*err = -ENOMEM;
			return;
		}
		v->touched[v->ntouched++] = (size_t)r;
	}
	v->rows[r].pending += bytes;
}

/* Bytes of [lo, hi) into the bands they fall in. */
static void bands_add(struct view *v, uint64_t lo, uint64_t hi, int *err)
{
	for (size_t i = band_after(v, lo); i < v->nrows && v->rows[i].lo < hi; i++) {
		uint64_t a = v->rows[i].lo > lo ? v->rows[i].lo : lo, b = v->rows[i].hi < hi ? v->rows[i].hi : hi;
		touch_row(v, (long)i, (double)(b - a), err);
	}
}

/* ---- the index of live blocks ---------------------------------------------- */

static uint32_t node_new(struct index *x, uint64_t lo, uint64_t hi)
{
	uint32_t i = x->free;
	if (i) {
		x->free = x->v[i - 1].left;
	} else {
		if (x->n >= UINT32_MAX - 1 || wsp_grow(&x->v, &x->cap, x->n + 1, sizeof *x->v))
			return 0;
		i = (uint32_t)++x->n;
	}
	x->seed = x->seed * 1664525u + 1013904223u;
	x->v[i - 1] = (struct node){ .lo = lo, .hi = hi, .prio = x->seed, .weight = 1 };
	return i;
}

#define N(i) (x->v[(i) - 1])

/* Split t into the nodes starting before key (*l) and the others (*r). */
static void treap_split(struct index *x, uint32_t t, uint64_t key, uint32_t *l, uint32_t *r)
{
	if (!t) {
		*l = *r = 0;
	} else if (N(t).lo < key) {
		treap_split(x, N(t).right, key, &N(t).right, r);
		*l = t;
	} else {
		treap_split(x, N(t).left, key, l, &N(t).left);
		*r = t;
	}
}

/* Join l and r, every node of l starting before those of r. */
static uint32_t treap_merge(struct index *x, uint32_t l, uint32_t r)
{
	if (!l || !r)
		return l ? l : r;
	if (N(l).prio > N(r).prio) {
		N(l).right = treap_merge(x, N(l).right, r);
		return l;
	}
	N(r).left = treap_merge(x, l, N(r).left);
	return r;
}

/* Take out the node starting at lo, if any: back to the free ones. */
static void index_remove(struct index *x, enum layer layer, uint64_t lo)
{
	uint32_t l, mid, r;
	treap_split(x, x->root[layer], lo, &l, &r);
	treap_split(x, r, lo + 1, &mid, &r);
	if (mid) { /* one node: starts are distinct in a layer */
		N(mid).left = x->free;
		x->free = mid;
	}
	x->root[layer] = treap_merge(x, l, r);
}

/* Add a block, in place of one starting at the same address. @return its node, 0 without memory. */
static uint32_t index_insert(struct index *x, enum layer layer, uint64_t lo, uint64_t hi)
{
	index_remove(x, layer, lo);
	uint32_t i = node_new(x, lo, hi), l, r;
	if (!i)
		return 0;
	treap_split(x, x->root[layer], lo, &l, &r);
	x->root[layer] = treap_merge(x, treap_merge(x, l, i), r);
	return i;
}

/* The node starting last at or before addr, 0 if none. */
static uint32_t index_floor(const struct index *x, enum layer layer, uint64_t addr)
{
	uint32_t best = 0;
	for (uint32_t t = x->root[layer]; t;) {
		if (N(t).lo <= addr) {
			best = t;
			t = N(t).right;
		} else {
			t = N(t).left;
		}
	}
	return best;
}

static enum layer layer_of_block(const struct wsp_block *b)
{
	if (b->kind == WSPROF_KIND_POOL)
		return LAYER_POOL;
	if (b->addr >> 62 == 1)
		return LAYER_REGISTERED;
	return b->kind == WSPROF_KIND_CUDA_VMM_MAPPED ? LAYER_MAPPED : LAYER_MEMORY;
}

static enum layer layer_of_event(const wsprof_event *ev)
{
	if (ev->kind == WSPROF_KIND_POOL)
		return LAYER_POOL;
	if (ev->kind == WSPROF_KIND_CUDA_HOST &&
	    (ev->op == WSPROF_OP_CU_MEM_HOST_REGISTER || ev->op == WSPROF_OP_CU_MEM_HOST_UNREGISTER))
		return LAYER_REGISTERED;
	return ev->kind == WSPROF_KIND_CUDA_VMM_MAPPED ? LAYER_MAPPED : LAYER_MEMORY;
}

/* Whether the address view splits accesses by block (a kind asked for)
 * rather than taking every accessed byte. */
static bool address_by_block(const struct heat *h)
{
	return h->views[WSP_HEAT_BY_ADDRESS].wanted && h->opt->kind >= 0;
}

/* Whether accesses are split by block at all. */
static bool needs_index(const struct heat *h)
{
	return h->views[WSP_HEAT_BY_CALLSITE].wanted || h->views[WSP_HEAT_BY_NAME].wanted || address_by_block(h);
}

static void unnamed_row(struct heat *h, uint32_t *row)
{
	struct view *v = &h->views[WSP_HEAT_BY_NAME];
	if (v->unnamed < 0 && (v->unnamed = row_new(h, v, "(unnamed memory)", ROW_UNNAMED)) < 0)
		h->err = -ENOMEM;
	*row = (uint32_t)v->unnamed;
}

static void index_block(const struct wsp_block *b, void *arg)
{
	struct heat *h = arg;
	if (h->err || b->excluded || !kind_wanted(h->opt->kind, b->kind) || !b->size)
		return;
	uint64_t lo = wsp_block_addr(b);
	uint32_t i = index_insert(&h->index, layer_of_block(b), lo, lo + b->size);
	if (!i) {
		h->err = -ENOMEM;
		return;
	}
	struct node *nd = &h->index.v[i - 1];
	nd->weight = (float)((double)wsp_model_block_bytes(h->l.model, b) / (double)b->size);
	if (h->views[WSP_HEAT_BY_CALLSITE].wanted) {
		long r = row_of_stack(h, b->stack);
		h->err = r < 0 ? -ENOMEM : h->err;
		nd->row[WSP_HEAT_BY_CALLSITE] = (uint32_t)r;
	}
	if (h->views[WSP_HEAT_BY_NAME].wanted) {
		long r = row_of_name(h, b);
		h->err = r < 0 ? -ENOMEM : h->err;
		nd->row[WSP_HEAT_BY_NAME] = (uint32_t)r;
	}
}

/* The live blocks as the model has them now, when the index fell behind. */
static int index_rebuild(struct heat *h)
{
	if (!h->stale)
		return 0;
	struct index *x = &h->index;
	x->n = 0;
	x->free = 0;
	memset(x->root, 0, sizeof x->root);
	wsp_model_each_live(h->l.model, index_block, h);
	h->stale = false;
	return h->err;
}

/* A block allocated: into the index, with its site's row. */
static void index_alloc(struct heat *h, const wsprof_event *ev)
{
	uint64_t hi = ev->addr + ev->size < ev->addr ? UINT64_MAX : ev->addr + ev->size;
	uint32_t i = index_insert(&h->index, layer_of_event(ev), ev->addr, hi);
	if (!i) {
		h->err = -ENOMEM;
		return;
	}
	uint32_t *row = h->index.v[i - 1].row;
	if (wsp_model_estimated(h->l.model, ev->kind))
		h->index.v[i - 1].weight =
			(float)(1 / wsp_sample_probability(wsprof_trace_process(h->l.trace)->sample_bytes, ev->size));
	if (h->views[WSP_HEAT_BY_CALLSITE].wanted) {
		long r = row_of_stack(h, ev->stack);
		h->err = r < 0 ? -ENOMEM : h->err;
		row[WSP_HEAT_BY_CALLSITE] = (uint32_t)r;
	}
	if (h->views[WSP_HEAT_BY_NAME].wanted)
		unnamed_row(h, &row[WSP_HEAT_BY_NAME]); /* new memory has no name yet */
}

/* A name given to the block at addr: a pool sub-allocation there first,
 * else the block around it, as the model names blocks. */
static void index_rename(struct heat *h, const wsprof_event *ev)
{
	static const enum layer order[] = { LAYER_POOL, LAYER_MEMORY, LAYER_REGISTERED, LAYER_MAPPED };
	struct index *x = &h->index;
	for (size_t k = 0; k < LAYERS; k++) {
		uint32_t t = index_floor(x, order[k], ev->addr);
		if (!t || N(t).hi <= ev->addr)
			continue;
		if (ev->text && ev->text[0]) {
			long r = row_of_key(h, &h->views[WSP_HEAT_BY_NAME], ev->text, NULL);
			h->err = r < 0 ? -ENOMEM : h->err;
			N(t).row[WSP_HEAT_BY_NAME] = (uint32_t)r;
		} else {
			unnamed_row(h, &N(t).row[WSP_HEAT_BY_NAME]);
		}
		return;
	}
}

/* Follow a change of the live set in the index, or mark it stale. */
static void follow(struct heat *h, const wsprof_event *ev)
{
	if (h->stale || !needs_index(h))
		return;
	switch (ev->type) {
	case WSPROF_EV_ALLOC:
	case WSPROF_EV_FREE:
	case WSPROF_EV_MOVE: /* realloc: the old block leaves */
		if (!kind_wanted(h->opt->kind, ev->kind))
			return;
		/* Ranges are cut and joined, stream-ordered calls take effect later, and in
		 * a sampled trace a realloc's FREE ends its MOVE: ask the model. */
		if (ev->kind == WSPROF_KIND_MMAP || ev->kind == WSPROF_KIND_CUDA_VMM_MAPPED || ev->stream ||
		    (ev->type == WSPROF_EV_FREE && wsprof_trace_process(h->l.trace)->sample_bytes &&
		     (ev->op == WSPROF_OP_REALLOC || ev->op == WSPROF_OP_REALLOCARRAY)))
			h->stale = true;
		else if (ev->type == WSPROF_EV_ALLOC)
			index_alloc(h, ev);
		else
			index_remove(&h->index, layer_of_event(ev), ev->addr);
		break;
	case WSPROF_EV_FAIL: /* a failed realloc or mremap puts the old block back */
		h->stale |= ev->op == WSPROF_OP_REALLOC || ev->op == WSPROF_OP_REALLOCARRAY || ev->op == WSPROF_OP_MREMAP;
		break;
	case WSPROF_EV_UNMAP:
	case WSPROF_EV_STREAM_REACHED:
	case WSPROF_EV_EXEC:
		h->stale = true;
		break;
	case WSPROF_EV_ANNOTATE:
		if (ev->op == WSPROF_ANN_POOL_RESET)
			h->stale = true;
		else if (ev->op == WSPROF_ANN_NAME && h->views[WSP_HEAT_BY_NAME].wanted)
			index_rename(h, ev);
		break;
	}
}

/* The bytes of [lo, hi) in node t's block, to its rows. */
static void split_block(struct heat *h, const struct node *nd, uint64_t lo, uint64_t hi, int *err)
{
	uint64_t p = nd->lo > lo ? nd->lo : lo, q = nd->hi < hi ? nd->hi : hi;
	if (q <= p)
		return;
	if (address_by_block(h))
		bands_add(&h->views[WSP_HEAT_BY_ADDRESS], p, q, err);
	for (int by = WSP_HEAT_BY_CALLSITE; by <= WSP_HEAT_BY_NAME; by++)
		if (h->views[by].wanted)
			touch_row(&h->views[by], (long)nd->row[by], (double)(q - p) * nd->weight, err);
}

/* The blocks of subtree t starting in [from, hi), in order. */
static void split_subtree(struct heat *h, uint32_t t, uint64_t from, uint64_t lo, uint64_t hi, int *err)
{
	struct index *x = &h->index;
	if (!t)
		return;
	if (N(t).lo > from)
		split_subtree(h, N(t).left, from, lo, hi, err);
	if (N(t).lo >= from && N(t).lo < hi)
		split_block(h, &N(t), lo, hi, err);
	if (N(t).lo < hi)
		split_subtree(h, N(t).right, from, lo, hi, err);
}

/* One region of an access sample, into the pending bytes of the rows. */
static void split_region(struct heat *h, uint64_t lo, uint64_t hi, int *err)
{
	struct view *va = &h->views[WSP_HEAT_BY_ADDRESS];
	if (va->wanted && !address_by_block(h))
		bands_add(va, lo, hi, err);
	if (!needs_index(h))
		return;
	for (int layer = 0; layer < LAYERS; layer++) {
		/* Blocks never overlap within a layer: only the one starting last before lo can reach into it. */
		uint32_t first = index_floor(&h->index, (enum layer)layer, lo);
		uint64_t from = first ? h->index.v[first - 1].lo : 0;
		split_subtree(h, h->index.root[layer], from, lo, hi, err);
	}
}

#undef N

/* The pending bytes of every row, spread over the columns of [start, end]. */
static void spread(struct heat *h, unsigned source, uint64_t start, uint64_t end, int *err)
{
	for (int by = 0; by < WSP_HEAT_BY_COUNT; by++) {
		struct view *v = &h->views[by];
		for (size_t k = 0; k < v->ntouched; k++) {
			struct hrow *r = &v->rows[v->touched[k]];
			double bytes = r->pending;
			r->pending = 0;
			if (!r->accessed[source] && !(r->accessed[source] = calloc(h->ncols, sizeof(double)))) {
				*err = -ENOMEM;
				continue;
			}
			if (end <= start) {
				r->accessed[source][col_of(h, end)] += bytes;
				continue;
			}
			for (size_t c = col_of(h, start); c <= col_of(h, end - 1); c++) {
				uint64_t a = col_start(h, c), b = c + 1 == h->ncols ? h->end_ns : col_start(h, c + 1);
				a = a > start ? a : start;
				b = b < end ? b : end;
				if (b > a)
					r->accessed[source][c] += bytes * (double)(b - a) / (double)(end - start);
			}
		}
		v->ntouched = 0;
	}
}

/* Bytes of a window that a block freed during it held, and no live block
 * holds now: to the freed block's rows (its name is gone with it). */
static void split_departed(const struct wsp_block *b, uint64_t bytes, void *arg)
{
	struct heat *h = arg;
	if (b->excluded || !kind_wanted(h->opt->kind, b->kind) || !b->size)
		return;
	double w = (double)wsp_model_block_bytes(h->l.model, b) / (double)b->size * (double)bytes;
	if (h->views[WSP_HEAT_BY_CALLSITE].wanted) {
		long r = row_of_stack(h, b->stack);
		if (r < 0)
			h->err = -ENOMEM;
		else
			touch_row(&h->views[WSP_HEAT_BY_CALLSITE], r, w, &h->err);
	}
	if (h->views[WSP_HEAT_BY_NAME].wanted) {
		uint32_t r;
		unnamed_row(h, &r);
		if (!h->err)
			touch_row(&h->views[WSP_HEAT_BY_NAME], (long)r, w, &h->err);
	}
}

static int add_access(struct heat *h, unsigned source, uint64_t start, uint64_t end, const wsprof_region *regions,
		      size_t n)
{
	if (source >= SOURCES)
		return 0; /* a source of a later version */
	int err = needs_index(h) ? index_rebuild(h) : 0;
	/* A window (not a moment) also saw the blocks freed during it. */
	bool window = wsp_access_is_window(source, end - start);
	for (size_t i = 0; !err && i < n; i++) {
		uint64_t hi = regions[i].addr + regions[i].len;
		split_region(h, regions[i].addr, hi < regions[i].addr ? UINT64_MAX : hi, &err);
		if (!err && window && needs_index(h))
			err = wsp_model_each_departed(h->l.model, start, end, regions[i].addr, regions[i].len,
						      split_departed, h);
		err = err ? err : h->err;
	}
	spread(h, source, start, end, &err);
	return err;
}

static void sample_block(const struct wsp_block *b, void *arg)
{
	struct heat *h = arg;
	if (h->err || b->excluded || !kind_wanted(h->opt->kind, b->kind) || !b->size)
		return;
	double w = h->live_weight;
	size_t c = h->live_col;
	struct view *va = &h->views[WSP_HEAT_BY_ADDRESS];
	if (va->wanted && (h->opt->kind >= 0 || !inside_another(b))) {
		uint64_t lo = wsp_block_addr(b), hi = lo + b->size;
		for (size_t i = band_after(va, lo); i < va->nrows && va->rows[i].lo < hi; i++) {
			uint64_t p = va->rows[i].lo > lo ? va->rows[i].lo : lo, q = va->rows[i].hi < hi ? va->rows[i].hi : hi;
			va->rows[i].live[c] += (double)(q - p) * w;
		}
	}
	long r;
	if (h->views[WSP_HEAT_BY_CALLSITE].wanted) {
		if ((r = row_of_stack(h, b->stack)) < 0)
			h->err = -ENOMEM;
		else
			h->views[WSP_HEAT_BY_CALLSITE].rows[r].live[c] += (double)wsp_model_block_bytes(h->l.model, b) * w;
	}
	if (h->views[WSP_HEAT_BY_NAME].wanted) {
		if ((r = row_of_name(h, b)) < 0)
			h->err = -ENOMEM;
		else
			h->views[WSP_HEAT_BY_NAME].rows[r].live[c] += (double)wsp_model_block_bytes(h->l.model, b) * w;
	}
}

static void warn_status(const char *path, const wsprof_trace_status *st)
{
	if (st->error == WSPROF_E_TRUNCATED)
		fprintf(stderr, "wsprof: warning: %s is truncated (no footer: the program was killed or is still running); "
			"this heatmap covers its %llu complete chunks\n", path, (unsigned long long)st->chunks);
	else if (st->error)
		fprintf(stderr, "wsprof: warning: %s: %s after %llu chunks; this heatmap covers what came before\n", path,
			wsprof_strerror(st->error), (unsigned long long)st->chunks);
}

/* Pass 1: the time span, the access window, the address ranges; event by
 * event, as a follower of the report's load or of a pass of its own. */
static int first_event(void *arg, wsprof_trace *t, const wsprof_event *ev)
{
	struct heat *h = arg;
	if (!h->first_seen) {
		h->first_seen = true;
		h->window_ns = (uint64_t)wsprof_trace_process(t)->window_ms * 1000000u;
	}
	bool ranges = h->views[WSP_HEAT_BY_ADDRESS].wanted;
	int kind = h->opt->kind, err = 0;
	h->last_ns = ev->time_ns > h->last_ns ? ev->time_ns : h->last_ns;
	if (ev->type == WSPROF_EV_ALLOC && ranges && kind_wanted(kind, ev->kind)) {
		uint64_t hi = ev->addr + ev->size < ev->addr ? UINT64_MAX : ev->addr + ev->size;
		err = spans_add(&h->spans, ev->addr, hi, 0, (double)ev->size);
	} else if (ev->type == WSPROF_EV_ACCESS) {
		h->access = true;
		if (!h->window_ns || ev->size > h->window_ns)
			h->window_ns = ev->size;
		for (size_t i = 0; ranges && !err && i < ev->nregions; i++) {
			uint64_t lo = ev->regions[i].addr, hi = lo + ev->regions[i].len < lo ? UINT64_MAX : lo + ev->regions[i].len;
			err = kind >= 0 ? spans_weigh(&h->spans, lo, hi) : spans_add(&h->spans, lo, hi, (double)(hi - lo), 0);
		}
	} else if (ev->type == WSPROF_EV_ANNOTATE && ev->op == WSPROF_ANN_NAME) {
		h->names = true;
	} else if (ev->type == WSPROF_EV_ANNOTATE && ev->op == WSPROF_ANN_TOUCH) {
		h->access = true;
		uint64_t len = ev->size ? ev->size : 1;
		if (ranges)
			err = kind >= 0 ? spans_weigh(&h->spans, ev->addr, ev->addr + len)
					: spans_add(&h->spans, ev->addr, ev->addr + len, (double)len, 0);
	}
	return err < 0 ? err : 0;
}

/* The columns, and the address rows the ranges make. */
static int first_end(void *arg, wsprof_trace *t)
{
	struct heat *h = arg;
	wsprof_trace_status st;
	wsprof_trace_get_status(t, &st);
	if (!h->l.borrowed) /* a load that was followed has warned already */
		warn_status(h->path, &st);
	h->end_ns = st.end_time_ns > h->last_ns ? st.end_time_ns : h->last_ns;
	if (!h->end_ns)
		h->end_ns = 1;
	/* A column a window at least, so a column is never a fraction of one sample. */
	uint64_t cols = h->access && h->window_ns ? (h->end_ns + h->window_ns - 1) / h->window_ns : WSP_HEAT_COLUMNS;
	h->ncols = cols < 1 ? 1 : cols > WSP_HEAT_COLUMNS ? WSP_HEAT_COLUMNS : (size_t)cols;
	h->col_s = (double)h->end_ns / 1e9 / (double)h->ncols;
	int err = h->views[WSP_HEAT_BY_ADDRESS].wanted ? address_rows(h, &h->views[WSP_HEAT_BY_ADDRESS]) : 0;
	spans_free(&h->spans);
	return err ? -ENOMEM : 0;
}

/* Sample k is taken at the middle of its share of the run. */
static uint64_t sample_at(const struct heat *h, size_t k)
{
	return (uint64_t)(((unsigned __int128)h->end_ns * (2 * k + 1)) / (2 * h->samples));
}

/* Pass 2: the model replayed, the grid filled. Its model is the heatmap's
 * own; the trace and symbols, in the full report, the report's. */
static int second_begin(struct heat *h, wsprof_trace *t)
{
	struct wsp_loaded *l = &h->l;
	h->second_seen = true;
	l->model = wsp_model_new(&(struct wsp_model_options){ .sample_bytes = wsprof_trace_process(t)->sample_bytes });
	if (!l->borrowed && h->views[WSP_HEAT_BY_CALLSITE].wanted && !(l->syms = wsp_syms_new(stderr)))
		return -ENOMEM;
	if (!l->model)
		return -ENOMEM;
	h->per_col = LIVE_SAMPLES / h->ncols ? LIVE_SAMPLES / h->ncols : 1;
	h->samples = h->per_col * h->ncols;
	h->live_weight = 1.0 / (double)h->per_col;
	h->stale = true;
	return 0;
}

static int second_event(void *arg, wsprof_trace *t, const wsprof_event *ev)
{
	struct heat *h = arg;
	struct wsp_loaded *l = &h->l;
	int err = h->second_seen ? 0 : second_begin(h, t);
	for (; !err && h->next < h->samples && ev->time_ns > sample_at(h, h->next) && !h->err; h->next++) {
		h->live_col = h->next / h->per_col;
		wsp_model_each_live(l->model, sample_block, h);
	}
	err = err ? err : h->err ? h->err : wsp_model_apply(l->model, t, ev);
	if (!err && !l->borrowed && l->syms && (ev->type == WSPROF_EV_ALLOC || ev->type == WSPROF_EV_FAIL))
		err = wsp_syms_note_stack(l->syms, t, ev->stack);
	if (err)
		return err < 0 ? err : -EIO;
	follow(h, ev);
	if (ev->type == WSPROF_EV_ACCESS) {
		uint64_t start = ev->time_ns > ev->size ? ev->time_ns - ev->size : 0;
		err = add_access(h, ev->op, start, ev->time_ns, ev->regions, ev->nregions);
	} else if (ev->type == WSPROF_EV_ANNOTATE && ev->op == WSPROF_ANN_TOUCH) {
		const wsprof_region r = { ev->addr, ev->size ? ev->size : 1 };
		err = add_access(h, WSPROF_ACCESS_ANNOTATED, ev->time_ns, ev->time_ns, &r, 1);
	}
	return err < 0 ? err : 0;
}

static int finish_view(struct heat *h, struct view *v);

static int second_end(void *arg, wsprof_trace *t)
{
	struct heat *h = arg;
	struct wsp_loaded *l = &h->l;
	int err = h->second_seen ? 0 : second_begin(h, t);
	if (!err && !h->err)
		err = wsp_model_finish(l->model);
	for (; err >= 0 && h->next < h->samples && !h->err; h->next++) {
		h->live_col = h->next / h->per_col;
		wsp_model_each_live(l->model, sample_block, h);
	}
	err = err < 0 ? err : h->err;
	if (!l->borrowed)
		wsprof_trace_get_status(t, &l->status);
	for (int by = 0; by < WSP_HEAT_BY_COUNT && !err; by++)
		if (h->views[by].wanted && finish_view(h, &h->views[by]))
			err = -ENOMEM;
	return err;
}

/* ---- finishing: the colour, the rows kept --------------------------------- */

static void row_values(struct heat *h, struct view *v, struct hrow *r)
{
	r->accessed_bytes = r->live_seconds = r->peak = 0;
	for (size_t c = 0; c < h->ncols; c++) {
		double most = 0;
		for (int s = 0; s < SOURCES; s++)
			if (r->accessed[s] && r->accessed[s][c] > most)
				most = r->accessed[s][c];
		r->accessed_bytes += most;
		r->live_seconds += r->live[c] * h->col_s;
		r->value[c] = v->access ? most / h->col_s : r->live[c];
		if (r->value[c] > r->peak)
			r->peak = r->value[c];
	}
}

static void row_free(struct hrow *r)
{
	free(r->label);
	for (int s = 0; s < SOURCES; s++)
		free(r->accessed[s]);
	free(r->live);
	free(r->value);
}

/* Add r's figures into into. @return 0 or -ENOMEM. */
static int row_fold(struct heat *h, struct hrow *into, const struct hrow *r)
{
	for (int s = 0; s < SOURCES; s++) {
		if (!r->accessed[s])
			continue;
		if (!into->accessed[s] && !(into->accessed[s] = calloc(h->ncols, sizeof(double))))
			return -ENOMEM;
		for (size_t c = 0; c < h->ncols; c++)
			into->accessed[s][c] += r->accessed[s][c];
	}
	for (size_t c = 0; c < h->ncols; c++)
		into->live[c] += r->live[c];
	return 0;
}

static int cmp_rank(const void *a, const void *b)
{
	const struct hrow *x = a, *y = b;
	if (x->what != y->what)
		return x->what < y->what ? -1 : 1;
	if (x->accessed_bytes != y->accessed_bytes)
		return x->accessed_bytes > y->accessed_bytes ? -1 : 1;
	if (x->live_seconds != y->live_seconds)
		return x->live_seconds > y->live_seconds ? -1 : 1;
	return strcmp(x->label, y->label);
}

/* Keep the top rows by bytes accessed (live bytes over time without
 * accesses), the rest folded into "other"; drop rows with nothing. */
static int keep_top(struct heat *h, struct view *v, size_t top)
{
	qsort(v->rows, v->nrows, sizeof *v->rows, cmp_rank);
	free(v->index);
	v->index = NULL;
	size_t keep = 0, folded = 0;
	struct hrow other = { 0 };
	for (size_t i = 0; i < v->nrows; i++) {
		struct hrow *r = &v->rows[i];
		bool empty = !r->accessed_bytes && !r->live_seconds;
		if (r->what == ROW_KEY && !empty)
			v->ranked++;
		if (r->what == ROW_UNNAMED || (r->what == ROW_KEY && keep < top && !empty)) {
			if (!empty)
				v->rows[keep++] = *r;
			else
				row_free(r);
			continue;
		}
		if (!empty) {
			if (!other.live && !(other.live = calloc(h->ncols, sizeof(double))))
				return -ENOMEM;
			if (row_fold(h, &other, r))
				return -ENOMEM;
			folded += r->what == ROW_KEY;
		}
		row_free(r);
	}
	v->nrows = keep;
	if (other.live) {
		/* "other" before "unnamed", which sorts last. */
		size_t at = keep && v->rows[keep - 1].what == ROW_UNNAMED ? keep - 1 : keep;
		char label[96];
		if (v->keys_capped)
			snprintf(label, sizeof label, "(%zu+ other %s)", folded, v->by == WSP_HEAT_BY_NAME ? "names" : "sites");
		else
			snprintf(label, sizeof label, "(%zu other %s)", folded, v->by == WSP_HEAT_BY_NAME ? "names" : "sites");
		other.label = strdup(label);
		other.what = ROW_OTHER;
		other.value = calloc(h->ncols, sizeof(double));
		if (!other.label || !other.value) {
			row_free(&other);
			return -ENOMEM;
		}
		memmove(v->rows + at + 1, v->rows + at, (v->nrows - at) * sizeof *v->rows);
		v->rows[at] = other;
		v->nrows++;
		row_values(h, v, &v->rows[at]);
	}
	return 0;
}

/* The top of the colour scale: the largest cell rounded up to a figure
 * that reads well on the colour bar, with its half (300 MiB/s, 16 KiB). */
static double nice_ceiling(double v)
{
	if (!(v > 0))
		return 1;
	double unit = 1;
	while (v / unit >= 1000)
		unit *= 1024;
	double m = v / unit, p = pow(10, floor(log10(m))), two = pow(2, ceil(log2(m) - 1e-12)), best = 10 * p;
	static const double steps[] = { 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 };
	for (size_t i = 0; i < sizeof steps / sizeof *steps && best == 10 * p; i++)
		if (steps[i] * p >= m * (1 - 1e-12))
			best = steps[i] * p;
	return (two < best ? two : best) * unit; /* 16 KiB, 256 MiB/s read well too */
}

static int finish_view(struct heat *h, struct view *v)
{
	v->access = false;
	for (size_t i = 0; i < v->nrows; i++)
		for (int s = 0; s < SOURCES; s++)
			for (size_t c = 0; v->rows[i].accessed[s] && c < h->ncols; c++)
				if (v->rows[i].accessed[s][c] > 0) {
					v->access = true;
					v->sources |= 1u << s;
					break;
				}
	for (size_t i = 0; i < v->nrows; i++) {
		if (!(v->rows[i].value = calloc(h->ncols, sizeof(double))))
			return -ENOMEM;
		row_values(h, v, &v->rows[i]);
	}
	if (v->by != WSP_HEAT_BY_ADDRESS && keep_top(h, v, h->opt->top ? h->opt->top : DEFAULT_TOP))
		return -ENOMEM;
	v->max = 0;
	for (size_t i = 0; i < v->nrows; i++)
		v->max = v->rows[i].peak > v->max ? v->rows[i].peak : v->max;
	v->scale = nice_ceiling(v->max);
	return 0;
}

static void heat_free(struct heat *h)
{
	for (int by = 0; by < WSP_HEAT_BY_COUNT; by++) {
		struct view *v = &h->views[by];
		for (size_t i = 0; i < v->nrows; i++)
			row_free(&v->rows[i]);
		free(v->rows);
		free(v->index);
		free(v->touched);
		free(v->gaps);
	}
	spans_free(&h->spans);
	free(h->index.v);
	free(h->stacks);
	wsp_loaded_free(&h->l);
}

static void heat_init(struct heat *h, const char *path, const struct wsp_heatmap_options *opt)
{
	memset(h, 0, sizeof *h);
	h->opt = opt;
	h->path = path;
	h->l.path = path;
	for (int by = 0; by < WSP_HEAT_BY_COUNT; by++) {
		h->views[by].by = (enum wsp_heat_by)by;
		h->views[by].wanted = opt->views >> by & 1;
		h->views[by].other = h->views[by].unnamed = -1;
	}
}

/* Both passes and the finished views, over passes of its own: the second
 * keeps its reader, for the stacks the rows are named after. @return 0,
 * or 1 after a one-line error. */
static int heat_compute(struct heat *h, const char *path, const struct wsp_heatmap_options *opt)
{
	heat_init(h, path, opt);
	struct wsp_follower first = { first_event, first_end, h };
	if (wsp_follow(path, &first, 1))
		goto fail;
	int err = wsprof_trace_open(path, &h->l.trace);
	if (err < 0) {
		fprintf(stderr, "wsprof: %s: %s\n", path, wsprof_strerror(err));
		goto fail;
	}
	wsprof_event ev;
	while ((err = wsprof_trace_next(h->l.trace, &ev)) > 0 && !(err = second_event(h, h->l.trace, &ev)))
		;
	if (err >= 0)
		err = second_end(h, h->l.trace);
	if (!err)
		return 0;
	fprintf(stderr, "wsprof: %s: %s\n", path, err == -ENOMEM ? "out of memory" : wsprof_strerror(err));
fail:
	heat_free(h);
	return 1;
}

/* ---- words ---------------------------------------------------------------- */

static const char *sources_text(unsigned bits, char *buf, size_t cap)
{
	size_t o = 0;
	buf[0] = 0;
	for (int s = 0; s < SOURCES; s++)
		if (bits >> s & 1)
			o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, "%s%s", o ? ", " : "", wsp_access_source((unsigned)s)->word);
	return buf;
}

/* A figure as the rows show it: "269 MiB/s", "1.50 GiB". */
static const char *figure(char *buf, size_t cap, double v, bool rate)
{
	char b[32];
	snprintf(buf, cap, "%s%s", wsp_human_bytes(b, sizeof b, (uint64_t)llround(v)), rate ? "/s" : "");
	return buf;
}

static const char *view_title(const struct view *v, char *buf, size_t cap)
{
	static const char *const rows[] = { "by address", "by allocation site", "by named buffer" };
	snprintf(buf, cap, "Heatmap: %s %s, over time", v->access ? "memory accessed" : "live memory", rows[v->by]);
	return buf;
}

/* What the rows are: the line under the heading. */
static const char *view_note(const struct heat *h, const struct view *v, char *buf, size_t cap)
{
	char a[32], b[32], kind[48] = "";
	if (h->opt->kind >= 0)
		snprintf(kind, sizeof kind, "%s only; ", wsprof_kind_name((unsigned)h->opt->kind));
	const char *by = v->access ? "bytes accessed" : "live bytes over time";
	size_t keys = 0;
	for (size_t i = 0; i < v->nrows; i++)
		keys += v->rows[i].what == ROW_KEY;
	switch (v->by) {
	case WSP_HEAT_BY_ADDRESS:
		if (!v->nrows)
			snprintf(buf, cap, "%snothing was live or accessed%s", kind, h->opt->range_hi ? " in the range asked for" : "");
		else if (v->segment != SIZE_MAX)
			snprintf(buf, cap, "%sthe hottest of %zu address spans, %s wide; rows of %s; --range all shows every span",
				 kind, v->nsegments, wsp_human_bytes(a, sizeof a, v->view_hi - v->view_lo),
				 wsp_human_bytes(b, sizeof b, v->band));
		else
			snprintf(buf, cap, "%s%s; rows of %s; ranges empty for the whole run collapsed", kind,
				 h->opt->range_hi ? "the range asked for" : "every address span", wsp_human_bytes(b, sizeof b, v->band));
		break;
	case WSP_HEAT_BY_CALLSITE:
		if (!v->ranked) {
			snprintf(buf, cap, "%sno allocation was live or accessed", kind);
			break;
		}
		snprintf(buf, cap, "%s%s%zu of %zu allocation sites by %s%s", kind, keys < v->ranked ? "the top " : "", keys,
			 v->ranked, by, keys < v->ranked ? "; the others in one row" : "");
		break;
	default:
		if (!h->names)
			snprintf(buf, cap, "%sno block was named: name buffers with wsprof_name() (wsprof.h) or NVTX", kind);
		else
			snprintf(buf, cap, "%s%s%zu of %zu named buffers by %s; memory without a name in the last row", kind,
				 keys < v->ranked ? "the top " : "", keys, v->ranked, by);
	}
	return buf;
}

static const char *colour_words(const struct view *v, char *buf, size_t cap)
{
	char s[128];
	if (v->access)
		snprintf(buf, cap, "colour: bytes accessed per second (%s%s); pale grey: live, not accessed; white: nothing live",
			 sources_text(v->sources, s, sizeof s), v->sources & (v->sources - 1) ? ", the most one saw" : "");
	else
		snprintf(buf, cap, "colour: live bytes (mean of the column's samples); white: nothing live; no access samples "
			 "for this memory");
	return buf;
}

/* ---- drawing ---------------------------------------------------------------- */

#define GRID_TOP_GAP 20.0
#define SEP_H 11.0
#define MIN_SPAN_H 10.0 /* points: the least a span of addresses gets */

struct frame {
	double x0, x1, y0, y1; /* the grid */
};

/* The colour step of a cell: -1 none (white), 0 live but not accessed, 1..LEVELS heat. */
static int cell_level(const struct view *v, const struct hrow *r, size_t c)
{
	if (r->value[c] > 0) {
		int lv = (int)ceil(r->value[c] / v->scale * LEVELS);
		return lv < 1 ? 1 : lv > LEVELS ? LEVELS : lv;
	}
	return r->live[c] > 0 ? 0 : -1;
}

static double col_x(const struct heat *h, const struct frame *f, size_t c)
{
	return f->x0 + (f->x1 - f->x0) * (double)c / (double)h->ncols;
}

/* The cells of a row between y and y + rh, batched by colour so a run of
 * equal cells is one rectangle. */
static void draw_cells(cairo_t *cr, const struct heat *h, const struct view *v, const struct frame *f, const double *ys,
		       const double *hs)
{
	cairo_save(cr);
	cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE); /* no seams between cells */
	for (int lv = 0; lv <= LEVELS; lv++) {
		bool any = false;
		for (size_t i = 0; i < v->nrows; i++) {
			for (size_t c = 0; c < h->ncols;) {
				if (cell_level(v, &v->rows[i], c) != lv) {
					c++;
					continue;
				}
				size_t e = c + 1;
				while (e < h->ncols && cell_level(v, &v->rows[i], e) == lv)
					e++;
				cairo_rectangle(cr, col_x(h, f, c), ys[i], col_x(h, f, e) - col_x(h, f, c), hs[i]);
				any = true;
				c = e;
			}
		}
		if (any) {
			wsp_set_colour(cr, wsp_heat((double)lv / LEVELS), 1);
			cairo_fill(cr);
		}
	}
	cairo_restore(cr);
}

static double nice_step(double range, int target)
{
	double raw = range / target, p = pow(10, floor(log10(raw)));
	static const double mult[] = { 1, 2, 5, 10 };
	for (int i = 0; i < 4; i++)
		if (p * mult[i] >= raw)
			return p * mult[i];
	return p * 10;
}

static void draw_time_axis(cairo_t *cr, const struct heat *h, const struct frame *f)
{
	double end = (double)h->end_ns / 1e9, step = nice_step(end, 8);
	char text[32];
	cairo_save(cr);
	cairo_set_line_width(cr, 0.6);
	for (double t = 0; t <= end * (1 + 1e-9); t += step) {
		double x = f->x0 + (f->x1 - f->x0) * t / end;
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		cairo_move_to(cr, x, f->y1);
		cairo_line_to(cr, x, f->y1 + 3);
		cairo_stroke(cr);
		wsp_text(cr, x, f->y1 + 11, 7.5, false, WSP_CENTER, wsp_unit_format(text, sizeof text, t, WSP_UNIT_SECONDS));
	}
	wsp_text(cr, (f->x0 + f->x1) / 2, f->y1 + 22, 8, false, WSP_CENTER, "time since the program started");
	cairo_restore(cr);
}

/* The program's phases (outermost only) in a strip above the grid. */
static void draw_phases(cairo_t *cr, const struct heat *h, const struct frame *f, double y)
{
	const struct wsp_phase *ph;
	size_t n = wsp_model_phases(h->l.model, &ph);
	double end = (double)h->end_ns;
	cairo_save(cr);
	for (size_t i = 0, shown = 0; i < n; i++) {
		if (ph[i].depth)
			continue;
		uint64_t stop = ph[i].end_ns ? ph[i].end_ns : h->end_ns;
		double a = f->x0 + (f->x1 - f->x0) * (double)ph[i].start_ns / end;
		double b = f->x0 + (f->x1 - f->x0) * (double)stop / end;
		b = b < a + 0.8 ? a + 0.8 : b;
		wsp_set_colour(cr, WSP_C_PHASE, 0.35 + 0.2 * (double)(shown++ % 2));
		cairo_rectangle(cr, a, y, b - a, 11);
		cairo_fill(cr);
		char fit[128];
		wsp_text_fit(cr, 7, false, ph[i].name, b - a - 3, fit, sizeof fit);
		if (fit[0] && (!strcmp(fit, ph[i].name) || strlen(fit) >= 8)) {
			cairo_set_source_rgb(cr, 0.15, 0.22, 0.40);
			wsp_text(cr, a + 2, y + 8.3, 7, false, WSP_LEFT, fit);
		}
	}
	cairo_restore(cr);
}

/* The colour bar, and under it the white of nothing live. */
static void draw_legend(cairo_t *cr, const struct view *v, const struct frame *f)
{
	double x = f->x1 + 72, y = f->y0, hgt = (f->y1 - f->y0) - 30;
	wsp_colour_bar(cr, x, y, 10, hgt, v->scale, v->access ? WSP_UNIT_BYTES_PER_S : WSP_UNIT_BYTES,
		       v->access ? "accessed bytes/s" : "live bytes");
	cairo_save(cr);
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_rectangle(cr, x, y + hgt + 17, 10, 8);
	cairo_fill_preserve(cr);
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	cairo_set_line_width(cr, 0.5);
	cairo_stroke(cr);
	wsp_text(cr, x + 13, y + hgt + 24, 7.5, false, WSP_LEFT, "not live");
	cairo_restore(cr);
}

/* Rows top to bottom, sites and names: labels on the left, peaks on the right. */
static void layout_key_rows(cairo_t *cr, const struct heat *h, const struct view *v, const struct frame *f, double *ys,
			    double *hs)
{
	(void)h;
	double rh = (f->y1 - f->y0) / (double)v->nrows;
	double size = rh < 10 ? rh * 0.78 : 8;
	char fit[512], peak[32];
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	wsp_text(cr, f->x1 + 54, f->y0 - 4, 7.5, true, WSP_RIGHT, "peak");
	for (size_t i = 0; i < v->nrows; i++) {
		const struct hrow *r = &v->rows[i];
		ys[i] = f->y0 + rh * (double)i;
		hs[i] = rh;
		double base = ys[i] + rh / 2 + size * 0.35;
		if (r->what == ROW_KEY)
			wsp_set_colour(cr, WSP_C_TEXT, 1);
		else
			cairo_set_source_rgb(cr, 0.42, 0.42, 0.42);
		wsp_text(cr, f->x0 - 5, base, size, false, WSP_RIGHT,
			 wsp_text_fit(cr, size, false, r->label, f->x0 - WSP_MARGIN - 5, fit, sizeof fit));
		wsp_text(cr, f->x1 + 54, base, size, false, WSP_RIGHT, figure(peak, sizeof peak, r->peak, v->access));
	}
}

static void address_label(cairo_t *cr, const struct frame *f, double y, uint64_t addr)
{
	char text[32];
	snprintf(text, sizeof text, "0x%llx", (unsigned long long)addr);
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	cairo_set_line_width(cr, 0.6);
	cairo_move_to(cr, f->x0 - 3, y);
	cairo_line_to(cr, f->x0, y);
	cairo_stroke(cr);
	wsp_text(cr, f->x0 - 5, y + 2.5, 7, false, WSP_RIGHT, text);
}

/* The rows of span g (between gaps g-1 and g): first and last. */
static void span_rows(const struct view *v, size_t g, size_t *first, size_t *last)
{
	*first = g ? v->gaps[g - 1].below + 1 : 0;
	*last = g < v->ngaps ? v->gaps[g].below : v->nrows - 1;
}

/* Bands bottom (low addresses) to top, with a separator for each gap. A
 * span gets MIN_SPAN_H points at least, so a small one stays readable
 * beside a large one: its rows are taller, their bytes the same. */
static void layout_bands(cairo_t *cr, const struct view *v, const struct frame *f, double *ys, double *hs)
{
	double room = (f->y1 - f->y0) - SEP_H * (double)v->ngaps, rows = (double)v->nrows;
	bool small[MAX_SEPARATORS + 1] = { false };
	/* Spans too small for their share get the minimum; the rest share what is left. */
	for (bool again = true; again;) {
		again = false;
		for (size_t g = 0, first, last; g <= v->ngaps; g++) {
			span_rows(v, g, &first, &last);
			double n = (double)(last - first + 1);
			if (!small[g] && n * room / rows < MIN_SPAN_H) {
				small[g] = again = true;
				room -= MIN_SPAN_H;
				rows -= n;
			}
		}
	}
	double y = f->y1;
	for (size_t g = 0, first, last; g <= v->ngaps; g++) {
		span_rows(v, g, &first, &last);
		double h = small[g] ? MIN_SPAN_H / (double)(last - first + 1) : room / rows;
		for (size_t i = first; i <= last; i++) {
			y -= h;
			ys[i] = y;
			hs[i] = h;
		}
		y -= SEP_H;
	}
	/* Addresses at band edges: each span's ends, and round ones between
	 * them at least 30 points apart. */
	for (size_t g = 0, first, last; g <= v->ngaps; g++) {
		span_rows(v, g, &first, &last);
		uint64_t step = 1;
		while ((double)step * hs[first] < 30)
			step *= 2;
		double bottom = ys[first] + hs[first], top = ys[last];
		address_label(cr, f, bottom, v->rows[first].lo);
		if (bottom - top >= 24)
			address_label(cr, f, top, v->rows[last].hi);
		for (size_t i = first + 1; i <= last; i++) {
			double y = ys[i] + hs[i];
			if (v->rows[i].lo % (v->band * step) == 0 && bottom - y >= 14 && y - top >= 14)
				address_label(cr, f, y, v->rows[i].lo);
		}
	}
}

static void draw_gaps(cairo_t *cr, const struct view *v, const struct frame *f, const double *ys)
{
	char text[96], size[32];
	cairo_save(cr);
	for (size_t g = 0; g < v->ngaps; g++) {
		double top = ys[v->gaps[g].below] - SEP_H;
		cairo_set_source_rgb(cr, 1, 1, 1);
		cairo_rectangle(cr, f->x0 - 2, top, f->x1 - f->x0 + 4, SEP_H);
		cairo_fill(cr);
		wsp_set_colour(cr, WSP_C_RSS, 1);
		cairo_set_line_width(cr, 0.5);
		double dash[] = { 2, 2 };
		cairo_set_dash(cr, dash, 2, 0);
		for (int k = 0; k < 2; k++) {
			cairo_move_to(cr, f->x0, top + 1.5 + k * (SEP_H - 3));
			cairo_line_to(cr, f->x1, top + 1.5 + k * (SEP_H - 3));
		}
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		snprintf(text, sizeof text, "\u2026 %s empty \u2026", wsp_human_bytes(size, sizeof size, v->gaps[g].bytes));
		double w = wsp_text_width(cr, 7, false, text);
		cairo_set_source_rgb(cr, 1, 1, 1);
		cairo_rectangle(cr, (f->x0 + f->x1 - w) / 2 - 4, top + 1, w + 8, SEP_H - 2);
		cairo_fill(cr);
		cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
		wsp_text(cr, (f->x0 + f->x1) / 2, top + SEP_H - 3, 7, false, WSP_CENTER, text);
	}
	cairo_restore(cr);
}

static void draw_view(struct wsp_doc *doc, const struct heat *h, const struct view *v)
{
	char title[128], sub[1024], note[512], words[512];
	cairo_t *cr = wsp_doc_page(doc);
	wsp_view_subtitle(&h->l, sub, sizeof sub);
	double top = wsp_page_heading(cr, view_title(v, title, sizeof title), sub);
	cairo_set_source_rgb(cr, 0.30, 0.30, 0.30);
	wsp_text(cr, WSP_MARGIN, top + 2, 8.5, false, WSP_LEFT, view_note(h, v, note, sizeof note));
	const struct wsp_phase *ph;
	bool phases = wsp_model_phases(h->l.model, &ph) > 0;
	struct frame f = { v->by == WSP_HEAT_BY_ADDRESS ? WSP_MARGIN + 74 : WSP_MARGIN + 232, WSP_PAGE_W - WSP_MARGIN - 120,
			   top + (phases ? 26 : 12), WSP_PAGE_H - WSP_MARGIN - 22 };
	if (phases)
		draw_phases(cr, h, &f, top + 9);
	double *ys = calloc(v->nrows ? v->nrows : 1, sizeof *ys), *hs = calloc(v->nrows ? v->nrows : 1, sizeof *hs);
	if (!v->nrows || !ys || !hs) {
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		wsp_text(cr, (f.x0 + f.x1) / 2, (f.y0 + f.y1) / 2, 11, false, WSP_CENTER,
			 v->by == WSP_HEAT_BY_NAME && !h->names ? "No block was named." : "Nothing to show.");
		free(ys);
		free(hs);
		return;
	}
	if (v->by == WSP_HEAT_BY_ADDRESS)
		layout_bands(cr, v, &f, ys, hs);
	else
		layout_key_rows(cr, h, v, &f, ys, hs);
	double bottom = ys[0] + hs[0];
	for (size_t i = 0; i < v->nrows; i++)
		bottom = ys[i] + hs[i] > bottom ? ys[i] + hs[i] : bottom;
	f.y1 = bottom;
	draw_cells(cr, h, v, &f, ys, hs);
	if (v->by != WSP_HEAT_BY_ADDRESS && hs[0] >= 6) { /* rows told apart */
		cairo_save(cr);
		cairo_set_source_rgb(cr, 1, 1, 1);
		cairo_set_line_width(cr, 0.7);
		for (size_t i = 1; i < v->nrows; i++) {
			cairo_move_to(cr, f.x0, ys[i]);
			cairo_line_to(cr, f.x1, ys[i]);
		}
		cairo_stroke(cr);
		cairo_restore(cr);
	}
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	cairo_set_line_width(cr, 0.6);
	cairo_rectangle(cr, f.x0, f.y0, f.x1 - f.x0, f.y1 - f.y0);
	cairo_stroke(cr);
	if (v->by == WSP_HEAT_BY_ADDRESS)
		draw_gaps(cr, v, &f, ys);
	draw_time_axis(cr, h, &f);
	struct frame full = f;
	full.y1 = WSP_PAGE_H - WSP_MARGIN - 22;
	draw_legend(cr, v, &full);
	cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
	wsp_text(cr, WSP_MARGIN, WSP_PAGE_H - 14, 7.5, false, WSP_LEFT, colour_words(v, words, sizeof words));
	free(ys);
	free(hs);
}

static int draw_pages(struct wsp_doc *doc, struct heat *h)
{
	int pages = 0;
	bool several = (h->opt->views & (h->opt->views - 1)) != 0;
	for (int by = 0; by < WSP_HEAT_BY_COUNT; by++) {
		if (!h->views[by].wanted || (several && by == WSP_HEAT_BY_NAME && !h->names))
			continue;
		draw_view(doc, h, &h->views[by]);
		pages++;
	}
	return pages;
}

int wsp_heatmap_draw(struct wsp_doc *doc, const char *trace_path, const struct wsp_heatmap_options *opt)
{
	struct heat h;
	if (heat_compute(&h, trace_path, opt))
		return -1;
	int pages = draw_pages(doc, &h);
	heat_free(&h);
	return pages;
}

/* struct wsp_heat is struct heat, computed by followers of another's passes. */
struct wsp_heat {
	struct heat h;
};

struct wsp_heat *wsp_heat_new(const char *trace_path, const struct wsp_heatmap_options *opt)
{
	struct wsp_heat *w = malloc(sizeof *w);
	if (w) {
		heat_init(&w->h, trace_path, opt);
		w->h.l.borrowed = true; /* the passes and what they read are the caller's */
	}
	return w;
}

struct wsp_follower wsp_heat_first(struct wsp_heat *w)
{
	return (struct wsp_follower){ first_event, first_end, &w->h };
}

struct wsp_follower wsp_heat_second(struct wsp_heat *w, const struct wsp_loaded *l)
{
	w->h.l.trace = l->trace;
	w->h.l.syms = l->syms;
	w->h.l.status = l->status;
	return (struct wsp_follower){ second_event, second_end, &w->h };
}

int wsp_heat_pages(struct wsp_doc *doc, struct wsp_heat *w)
{
	return draw_pages(doc, &w->h);
}

void wsp_heat_free(struct wsp_heat *w)
{
	if (w) {
		heat_free(&w->h);
		free(w);
	}
}

/* ---- text and JSON -------------------------------------------------------- */

#define STRIP 60
static const char shades[] = "-:=+*#%@";

/* One line: label, peak, and the row as characters, darker for more. */
static void text_row(const struct heat *h, const struct view *v, const char *label, const double *value,
		     const double *live, double peak, double max)
{
	char fit[40], p[32], strip[STRIP + 1];
	size_t len = strlen(label);
	if (len > 36) { /* keep whole UTF-8 characters */
		size_t n = 33;
		while (n && ((unsigned char)label[n] & 0xc0) == 0x80)
			n--;
		snprintf(fit, sizeof fit, "%.*s...", (int)n, label);
	} else {
		snprintf(fit, sizeof fit, "%s", label);
	}
	size_t w = h->ncols < STRIP ? h->ncols : STRIP;
	for (size_t k = 0; k < w; k++) {
		size_t a = k * h->ncols / w, b = (k + 1) * h->ncols / w;
		double sum = 0, alive = 0;
		for (size_t c = a; c < b; c++) {
			sum += value[c];
			alive = live[c] > alive ? live[c] : alive;
		}
		double mean = sum / (double)(b - a);
		if (mean > 0 && max > 0) {
			int lv = (int)ceil(mean / max * 8);
			strip[k] = shades[(lv < 1 ? 1 : lv > 8 ? 8 : lv) - 1];
		} else {
			strip[k] = alive > 0 ? '.' : ' ';
		}
	}
	strip[w] = 0;
	printf("  %-36s %12s |%s|\n", fit, figure(p, sizeof p, peak, v->access), strip);
}

/* The lines of the text: the rows, or by address the bands joined a few
 * at a time (never across a gap) so that about 40 lines remain, highest
 * address first as drawn. @return the lines and, in *figures, their
 * figures (both malloc'd), or NULL. */
static struct hrow *text_lines(const struct heat *h, const struct view *v, size_t *n, double **figures)
{
	size_t group = v->by == WSP_HEAT_BY_ADDRESS ? (v->nrows + 39) / 40 : 1;
	struct hrow *lines = calloc(v->nrows ? v->nrows : 1, sizeof *lines);
	double *cells = calloc(2 * h->ncols * (v->nrows ? v->nrows : 1), sizeof *cells);
	if (!lines || !cells) {
		free(lines), free(cells);
		return NULL;
	}
	*figures = cells;
	*n = 0;
	for (size_t g = v->ngaps + 1; g-- > 0;) {
		size_t first = v->by != WSP_HEAT_BY_ADDRESS ? 0 : g ? v->gaps[g - 1].below + 1 : 0;
		size_t last = v->by != WSP_HEAT_BY_ADDRESS ? v->nrows - 1 : g < v->ngaps ? v->gaps[g].below : v->nrows - 1;
		for (size_t top = last + 1; top > first;) {
			size_t lo = v->by != WSP_HEAT_BY_ADDRESS ? top - 1 : top > first + group ? top - group : first;
			struct hrow *line = &lines[*n];
			line->value = cells + 2 * h->ncols * *n;
			line->live = line->value + h->ncols;
			line->label = v->rows[lo].label;
			line->what = v->rows[lo].what;
			line->lo = g; /* the gap under it, for the separator lines */
			for (size_t i = lo; i < top; i++)
				for (size_t c = 0; c < h->ncols; c++) {
					line->value[c] += v->rows[i].value[c];
					line->live[c] += v->rows[i].live[c];
				}
			for (size_t c = 0; c < h->ncols; c++)
				line->peak = line->value[c] > line->peak ? line->value[c] : line->peak;
			(*n)++;
			top = lo;
		}
	}
	if (v->by != WSP_HEAT_BY_ADDRESS) /* sites and names: in rank order, not reversed */
		for (size_t i = 0; i < *n / 2; i++) {
			struct hrow t = lines[i];
			lines[i] = lines[*n - 1 - i];
			lines[*n - 1 - i] = t;
		}
	return lines;
}

static void print_text(const struct heat *h, const struct view *v)
{
	char note[512], words[512], title[128], a[32], b[32];
	wsp_print_heading(&h->l, "heatmap");
	printf("  %s\n  %s\n", view_title(v, title, sizeof title) + strlen("Heatmap: "), view_note(h, v, note, sizeof note));
	printf("  %s\n", colour_words(v, words, sizeof words));
	if (!v->nrows) {
		printf("\n  nothing to show\n");
		return;
	}
	size_t n;
	double *figures;
	struct hrow *lines = text_lines(h, v, &n, &figures);
	if (!lines) {
		fprintf(stderr, "wsprof: out of memory\n");
		return;
	}
	double max = 0;
	for (size_t i = 0; i < n; i++)
		max = lines[i].peak > max ? lines[i].peak : max;
	size_t w = h->ncols < STRIP ? h->ncols : STRIP;
	printf("  characters: '.' live, not accessed; ' ' nothing live; %s up to %s\n\n", shades,
	       figure(a, sizeof a, max, v->access));
	printf("  %-36s %12s |0 s%*s|\n", v->by == WSP_HEAT_BY_ADDRESS ? "address" : v->by == WSP_HEAT_BY_NAME ? "name" : "site",
	       "peak", (int)w - 3, wsp_unit_format(b, sizeof b, (double)h->end_ns / 1e9, WSP_UNIT_SECONDS));
	for (size_t i = 0; i < n; i++) {
		text_row(h, v, lines[i].label, lines[i].value, lines[i].live, lines[i].peak, max);
		if (v->by == WSP_HEAT_BY_ADDRESS && i + 1 < n && lines[i + 1].lo != lines[i].lo)
			printf("  ... %s empty ...\n", wsp_human_bytes(a, sizeof a, v->gaps[lines[i].lo - 1].bytes));
	}
	free(figures);
	free(lines);
}

static void print_json(const struct heat *h, const struct view *v)
{
	const wsprof_process *p = wsprof_trace_process(h->l.trace);
	struct wsp_json j;
	wsp_json_init(&j, stdout);
	wsp_json_begin_object(&j, NULL);
	wsp_json_string(&j, "report", "heatmap");
	wsp_json_string(&j, "trace", h->path);
	wsp_json_string(&j, "program", p->cmdline[0] ? p->cmdline : p->exe);
	wsp_json_bool(&j, "complete", h->l.status.complete);
	wsp_json_sampled(&j, &h->l); /* heap rows' figures are then estimates */
	wsp_json_string(&j, "by", by_names[v->by]);
	wsp_json_string(&j, "kind", h->opt->kind >= 0 ? wsprof_kind_name((unsigned)h->opt->kind) : NULL);
	wsp_json_string(&j, "colour", v->access ? "accessed_bytes_per_s" : "live_bytes");
	wsp_json_string(&j, "unit", v->access ? "bytes/s" : "bytes");
	wsp_json_begin_array(&j, "sources");
	for (int s = 0; s < SOURCES; s++)
		if (v->sources >> s & 1)
			wsp_json_string(&j, NULL, wsp_access_source((unsigned)s)->key);
	wsp_json_end_array(&j);
	wsp_json_uint(&j, "max", (uint64_t)llround(v->max));
	wsp_json_uint(&j, "scale", (uint64_t)llround(v->scale)); /* the top of the colour bar */
	wsp_json_begin_array(&j, "time_edges_s");
	for (size_t c = 0; c <= h->ncols; c++)
		wsp_json_seconds(&j, NULL, c == h->ncols ? h->end_ns : col_start(h, c));
	wsp_json_end_array(&j);
	const struct wsp_phase *ph;
	size_t nph = wsp_model_phases(h->l.model, &ph);
	wsp_json_begin_array(&j, "phases");
	for (size_t i = 0; i < nph; i++) {
		wsp_json_begin_object(&j, NULL);
		wsp_json_string(&j, "name", ph[i].name);
		wsp_json_uint(&j, "depth", ph[i].depth);
		wsp_json_seconds(&j, "start_s", ph[i].start_ns);
		wsp_json_seconds(&j, "end_s", ph[i].end_ns ? ph[i].end_ns : h->end_ns);
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	if (v->by == WSP_HEAT_BY_ADDRESS) {
		wsp_json_uint(&j, "band_bytes", v->band);
		wsp_json_uint(&j, "view_lo", v->view_lo);
		wsp_json_uint(&j, "view_hi", v->view_hi);
		wsp_json_uint(&j, "spans", v->nsegments);
		if (v->segment != SIZE_MAX)
			wsp_json_uint(&j, "span_shown", v->segment);
		else
			wsp_json_null(&j, "span_shown");
		wsp_json_begin_array(&j, "gaps");
		for (size_t g = 0; g < v->ngaps; g++) {
			wsp_json_begin_object(&j, NULL);
			wsp_json_uint(&j, "above_row", v->gaps[g].below);
			wsp_json_uint(&j, "bytes", v->gaps[g].bytes);
			wsp_json_end_object(&j);
		}
		wsp_json_end_array(&j);
	} else {
		wsp_json_uint(&j, "rows_total", v->ranked);
	}
	wsp_json_begin_array(&j, "rows");
	for (size_t i = 0; i < v->nrows; i++) {
		const struct hrow *r = &v->rows[i];
		wsp_json_begin_object(&j, NULL);
		wsp_json_string(&j, "label", r->label);
		if (v->by == WSP_HEAT_BY_ADDRESS) {
			wsp_json_uint(&j, "lo", r->lo);
			wsp_json_uint(&j, "hi", r->hi);
		} else {
			wsp_json_string(&j, "row", r->what == ROW_KEY ? "key" : r->what == ROW_OTHER ? "other" : "unnamed");
		}
		if (v->by == WSP_HEAT_BY_CALLSITE && r->what == ROW_KEY) {
			wsp_json_string(&j, "function", r->site.function);
			wsp_json_string(&j, "file", r->site.file);
			wsp_json_uint(&j, "line", r->site.line);
			wsp_json_string(&j, "module", r->site.module);
		}
		wsp_json_uint(&j, "accessed_bytes", (uint64_t)llround(r->accessed_bytes));
		wsp_json_double(&j, "live_byte_seconds", r->live_seconds);
		wsp_json_uint(&j, "peak", (uint64_t)llround(r->peak));
		wsp_json_begin_array(&j, "values");
		for (size_t c = 0; c < h->ncols; c++)
			wsp_json_uint(&j, NULL, (uint64_t)llround(r->value[c]));
		wsp_json_end_array(&j);
		wsp_json_begin_array(&j, "live_bytes");
		for (size_t c = 0; c < h->ncols; c++)
			wsp_json_uint(&j, NULL, (uint64_t)llround(r->live[c]));
		wsp_json_end_array(&j);
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	wsp_json_end_object(&j);
}

/* ---- the command -------------------------------------------------------- */

static void usage(FILE *out)
{
	fputs("usage: wsprof report heatmap [--by address|callsite|name] [--range hot|all|LO-HI] [--top N]\n"
	      "                             [--kind KIND] [-o OUT.svg|.png|.pdf] [--json] TRACE\n"
	      "  memory over time: the access rate (bytes accessed per second) where the trace has\n"
	      "  access samples, the live bytes otherwise; pale grey is live memory nobody accessed\n"
	      "  --by address   rows are address bands; ranges empty for the whole run are collapsed\n"
	      "  --by callsite  a row per allocation site (first frame outside the allocator)\n"
	      "  --by name      a row per named buffer (wsprof_name, NVTX), unnamed memory last\n"
	      "  --range hot    by address: only the hottest span (the default); all: every span;\n"
	      "                 LO-HI: the addresses from LO to HI (0x... or decimal)\n"
	      "  --top N        sites or names with a row of their own (1 to 45, default 30)\n"
	      "  --kind KIND    only blocks of that kind (heap, mmap, cuda_device, pool, ...)\n"
	      "  -o FILE        draw it (.svg, .png or .pdf); --json prints the grid; text otherwise\n", out);
}

static int parse_range(const char *s, struct wsp_heatmap_options *o)
{
	if (!strcmp(s, "hot") || !strcmp(s, "all")) {
		o->all_ranges = !strcmp(s, "all");
		o->range_lo = o->range_hi = 0;
		return 0;
	}
	char *end;
	unsigned long long lo = strtoull(s, &end, 0), hi = 0;
	if (end != s && *end == '-' && end[1] != '-') {
		const char *h = end + 1;
		hi = strtoull(h, &end, 0);
		if (end != h && !*end && hi > lo && *s != '-') {
			o->range_lo = lo;
			o->range_hi = hi;
			return 0;
		}
	}
	fprintf(stderr, "wsprof: --range takes hot, all or LO-HI (addresses, LO below HI: 0x7f0000000000-0x7f0100000000), "
		"not '%s'\n", s);
	return -1;
}

static int heat_option(void *ctx, int val, const char *arg)
{
	struct wsp_heatmap_options *o = ctx;
	if (val == 'b') {
		int by = 0;
		while (by < WSP_HEAT_BY_COUNT && strcmp(arg, by_names[by]))
			by++;
		if (by == WSP_HEAT_BY_COUNT) {
			fprintf(stderr, "wsprof: --by takes address, callsite or name, not '%s'\n", arg);
			return 2;
		}
		o->views = 1u << by;
		return 0;
	}
	if (val == 'r')
		return parse_range(arg, o) ? 2 : 0;
	char *end; /* --top */
	unsigned long v = strtoul(arg, &end, 10);
	if (*arg == '-' || *end || !*arg || v < 1 || v > MAX_TOP) {
		fprintf(stderr, "wsprof: --top wants 1 to %d rows (what a page shows readably), not '%s'\n", MAX_TOP, arg);
		return 2;
	}
	o->top = v;
	return 0;
}

int wsp_cmd_heatmap(int argc, char **argv)
{
	static const struct wsp_cli_option own[] = {
		{ "by", required_argument, 0, 'b' },
		{ "range", required_argument, 0, 'r' },
		{ "top", required_argument, 0, 't' },
		{ 0 },
	};
	struct wsp_heatmap_options o = { .views = 1u << WSP_HEAT_BY_ADDRESS, .kind = -1 };
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_OUTPUT | WSP_CLI_KIND | WSP_CLI_JSON | WSP_CLI_BOTH, own, heat_option,
			       &o, usage, &cli);
	if (rc >= 0)
		return rc;
	if (cli.kind >= 0 && !has_addresses((unsigned)cli.kind)) {
		fprintf(stderr, "wsprof: %s blocks have no addresses memory is accessed at: use --kind cuda_vmm_mapped\n",
			wsprof_kind_name((unsigned)cli.kind));
		return 2;
	}
	o.kind = cli.kind;
	const char *path = cli.trace, *out = cli.out;
	bool json = cli.json;
	enum wsp_doc_format format;
	if (out && wsp_doc_format_of(out, &format))
		return 2;
	if (out) {
		struct wsp_doc *doc = wsp_doc_open(out, false);
		if (!doc)
			return 1;
		int status = wsp_doc_finish(doc, wsp_heatmap_draw(doc, path, &o) >= 0);
		if (status || !json)
			return status;
	}
	struct heat h;
	if (heat_compute(&h, path, &o))
		return 1;
	const struct view *v = &h.views[__builtin_ctz(o.views)];
	if (json)
		print_json(&h, v);
	else
		print_text(&h, v);
	heat_free(&h);
	return 0;
}
