/*
 * sites.c - the call-site rows of a loaded trace: the model's per-stack
 * figures of one kind grouped by their site (the first frame outside the
 * allocator: function and line, inlined frames included), or each stack
 * kept apart, sorted by a figure. What callsites, leaks, diff, check, top
 * and the full report print or draw; nothing here prints.
 */
#include "compute.h"

#include "grow.h"

#include <stdlib.h>
#include <string.h>

const char *const wsp_site_sort_names[WSP_SITE_SORTS] = { "peak",      "allocations", "bytes", "leaked",
							   "temporary", "accessed",    "cold" };

int wsp_site_sort_parse(const char *name)
{
	for (int i = 0; i < WSP_SITE_SORTS; i++)
		if (!strcmp(name, wsp_site_sort_names[i]))
			return i;
	return -1;
}

struct rows {
	struct wsp_site_row *v;
	size_t n, cap;
	uint32_t *index;         /* hash of the site -> row + 1, when grouping */
	size_t index_cap;
	bool by_stack;
	unsigned kind;
	struct wsp_loaded *l;
	int err;
};

static bool same_site(const struct wsp_frame *a, const struct wsp_frame *b)
{
	/* Interned strings compare by pointer. */
	return a->function == b->function && a->file == b->file && a->line == b->line &&
	       a->module == b->module && (a->function || a->offset == b->offset);
}

static size_t site_hash(const struct wsp_frame *f, size_t cap)
{
	uint64_t h = (uintptr_t)f->function * 31 + (uintptr_t)f->file * 17 + f->line * 13 + (uintptr_t)f->module;
	if (!f->function)
		h += f->offset * 0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (size_t)h & (cap - 1);
}

static size_t row_site_hash(size_t i, void *ctx)
{
	return site_hash(&((const struct rows *)ctx)->v[i].site, 0); /* unmasked */
}

/* The row of a site, made if new. NULL without memory. */
static struct wsp_site_row *row_of(struct rows *r, const struct wsp_frame *site, uint64_t stack)
{
	if (!r->by_stack && wsp_index_fit(&r->index, &r->index_cap, r->n + 1, 256, 0, r->n, row_site_hash, NULL, r))
		return NULL;
	size_t j = 0;
	if (!r->by_stack) {
		for (j = site_hash(site, r->index_cap); r->index[j]; j = (j + 1) & (r->index_cap - 1))
			if (same_site(&r->v[r->index[j] - 1].site, site))
				return &r->v[r->index[j] - 1];
	}
	if (wsp_grow(&r->v, &r->cap, r->n + 1, sizeof *r->v))
		return NULL;
	struct wsp_site_row *row = &r->v[r->n++];
	memset(row, 0, sizeof *row);
	row->site = *site;
	row->stack = stack;
	if (!r->by_stack)
		r->index[j] = (uint32_t)r->n;
	return row;
}

void wsp_site_stats_add(struct wsp_site_stats *to, const struct wsp_site_stats *s)
{
	to->allocations += s->allocations;
	to->bytes += s->bytes;
	to->failed += s->failed;
	to->temporary += s->temporary;
	to->peak_bytes += s->peak_bytes;
	to->leaked_bytes += s->leaked_bytes;
	to->leaked_blocks += s->leaked_blocks;
	to->accessed_bytes += s->accessed_bytes;
	if (s->coldest_idle_ns > to->coldest_idle_ns)
		to->coldest_idle_ns = s->coldest_idle_ns;
}

static void add_site(const struct wsp_site_stats *s, void *arg)
{
	struct rows *r = arg;
	if (s->kind != r->kind || r->err)
		return;
	const struct wsp_frame *frames;
	size_t n = wsp_syms_stack(r->l->syms, r->l->trace, s->stack, &frames);
	struct wsp_frame site = n ? frames[wsp_syms_site_at(r->l->syms, frames, n)] : (struct wsp_frame){ 0 };
	struct wsp_site_row *row = row_of(r, &site, s->stack);
	if (!row) {
		r->err = 1;
		return;
	}
	wsp_site_stats_add(&row->sum, s);
}

/* Rows by the figure arg points at (qsort_r: a job's traces are read on threads of their own). */
static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct wsp_site_row *x = a, *y = b;
	enum wsp_site_figure sort_by = *(const enum wsp_site_figure *)arg;
	uint64_t p = wsp_site_figure(&x->sum, sort_by), q = wsp_site_figure(&y->sum, sort_by);
	if (p != q)
		return p > q ? -1 : 1;
	if (x->sum.bytes != y->sum.bytes)
		return x->sum.bytes > y->sum.bytes ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

int wsp_site_rows(struct wsp_loaded *l, unsigned kind, bool by_stack, enum wsp_site_figure sort,
		  struct wsp_site_row **rows, size_t *n)
{
	struct rows r = { .by_stack = by_stack, .kind = kind, .l = l };
	wsp_model_each_site(l->model, add_site, &r);
	free(r.index);
	if (r.err) {
		free(r.v);
		return -1;
	}
	qsort_r(r.v, r.n, sizeof *r.v, cmp_rows, &sort);
	*rows = r.v;
	*n = r.n;
	return 0;
}

int wsp_callsites_rows(struct wsp_loaded *l, unsigned kind, const char *sort, struct wsp_site_row **rows, size_t *n)
{
	int k = wsp_site_sort_parse(sort);
	return k < 0 ? -1 : wsp_site_rows(l, kind, false, (enum wsp_site_figure)k, rows, n);
}

size_t wsp_site_rows_leaked(struct wsp_site_row *rows, size_t n, uint64_t *bytes, uint64_t *blocks)
{
	size_t k = 0;
	*bytes = *blocks = 0;
	for (size_t i = 0; i < n; i++) {
		if (!rows[i].sum.leaked_blocks)
			continue;
		*bytes += rows[i].sum.leaked_bytes;
		*blocks += rows[i].sum.leaked_blocks;
		rows[k++] = rows[i];
	}
	return k;
}
