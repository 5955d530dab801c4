/*
 * heatgrid.c - the heatmaps' grid (heatgrid.h), in two passes over the
 * trace that keep memory bounded by the grid, not by the trace's length:
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
#include "heatgrid.h"

#include "grow.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const wsp_heat_by_names[WSP_HEAT_BY_COUNT] = { "address", "callsite", "name" };

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

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

long heat_row_new(struct heat *h, struct view *v, const char *label, enum row_what what)
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

static size_t key_row_hash(size_t i, void *ctx)
{
	return (size_t)hash_str(((const struct view *)ctx)->rows[i].label);
}

static bool is_key_row(size_t i, void *ctx)
{
	return ((const struct view *)ctx)->rows[i].what == ROW_KEY;
}

/* The row of a site or name, made if new; past MAX_KEYS, "other". -1 without memory. */
long heat_row_of_key(struct heat *h, struct view *v, const char *label, const struct wsp_frame *site)
{
	if (v->keys < MAX_KEYS &&
	    wsp_index_fit(&v->index, &v->index_cap, v->keys + 1, 256, 0, v->nrows, key_row_hash, is_key_row, v))
		return -1;
	size_t j = hash_str(label) & (v->index_cap - 1);
	for (; v->index[j]; j = (j + 1) & (v->index_cap - 1))
		if (!strcmp(v->rows[v->index[j] - 1].label, label))
			return v->index[j] - 1;
	if (v->keys >= MAX_KEYS) {
		v->keys_capped = true;
		if (v->other < 0)
			v->other = heat_row_new(h, v, "", ROW_OTHER);
		return v->other;
	}
	long r = heat_row_new(h, v, label, ROW_KEY);
	if (r < 0)
		return -1;
	if (site)
		v->rows[r].site = *site;
	v->index[j] = (uint32_t)r + 1;
	v->keys++;
	return r;
}

/* The call-site row of a stack: its site's frame, found by its id in a
 * small array (as many slots as frames named), where a hash of every
 * distinct stack (a million on a PyTorch program) took 32 MB. */
long heat_row_of_stack(struct heat *h, uint64_t stack)
{
	uint32_t id = 0;
	const struct wsp_frame *f = stack ? wsp_syms_site(h->l.syms, h->l.trace, stack, &id) : NULL;
	struct view *v = &h->views[WSP_HEAT_BY_CALLSITE];
	if (!f) {
		if (h->no_stack_row < 0)
			h->no_stack_row = heat_row_of_key(h, v, "(no stack)", NULL);
		return h->no_stack_row;
	}
	if (id < h->frame_rows_cap && h->frame_rows[id])
		return (long)h->frame_rows[id] - 1;
	char label[1024];
	long r = heat_row_of_key(h, v, wsp_frame_label(f, label, sizeof label), f);
	if (r < 0)
		return -1;
	if (id >= h->frame_rows_cap) {
		size_t old = h->frame_rows_cap;
		if (wsp_grow(&h->frame_rows, &h->frame_rows_cap, (size_t)id + 1, sizeof *h->frame_rows))
			return -1;
		memset(h->frame_rows + old, 0, (h->frame_rows_cap - old) * sizeof *h->frame_rows);
	}
	h->frame_rows[id] = (uint32_t)r + 1;
	return r;
}

long heat_row_of_name(struct heat *h, const struct wsp_block *b)
{
	struct view *v = &h->views[WSP_HEAT_BY_NAME];
	const struct wsp_ann_state *a = wsp_model_ann(h->l.model, b);
	if (a && a->name && a->name[0])
		return heat_row_of_key(h, v, a->name, NULL);
	if (v->unnamed < 0)
		v->unnamed = heat_row_new(h, v, "(unnamed memory)", ROW_UNNAMED);
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
			long r = heat_row_new(h, v, label, ROW_KEY);
			if (r < 0)
				err = -ENOMEM;
			else
				v->rows[r].lo = lo, v->rows[r].hi = hi;
		}
	}
	free(seg);
	return err;
}

/* ---- the pass: filling the grid ------------------------------------------- */

uint64_t heat_col_start(const struct heat *h, size_t c)
{
	return (uint64_t)((unsigned __int128)h->end_ns * c / h->ncols);
}


/* Columns of col_ns while the trace is read, merged two by two when the
 * trace runs past FINE_COLUMNS of them (as series.c does): the time span
 * is known only at its end, when they are laid again over the columns
 * drawn (rebin). */
static size_t fine_of(const struct heat *h, uint64_t t)
{
	size_t c = (size_t)(t / h->col_ns);
	return c < FINE_COLUMNS ? c : FINE_COLUMNS - 1;
}

static void merge_cells(double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = v[2 * i] + (2 * i + 1 < 2 * n ? v[2 * i + 1] : 0);
	memset(v + n, 0, (FINE_COLUMNS - n) * sizeof *v);
}

static void merge_view_columns(struct view *v, size_t n)
{
	for (size_t i = 0; i < v->nrows; i++) {
		merge_cells(v->rows[i].live, n);
		for (int s = 0; s < SOURCES; s++)
			if (v->rows[i].accessed[s])
				merge_cells(v->rows[i].accessed[s], n);
	}
}

/* Columns up to t's: the width doubled until it fits. */
static void columns_reach(struct heat *h, uint64_t t)
{
	while (t / h->col_ns >= FINE_COLUMNS) {
		size_t n = FINE_COLUMNS / 2;
		for (int by = 0; by < WSP_HEAT_BY_COUNT; by++)
			if (by != WSP_HEAT_BY_ADDRESS)
				merge_view_columns(&h->views[by], n);
		merge_view_columns(&h->cells, n);
		for (size_t i = 0; i < n; i++)
			h->live_n[i] = h->live_n[2 * i] + h->live_n[2 * i + 1];
		memset(h->live_n + n, 0, (FINE_COLUMNS - n) * sizeof *h->live_n);
		h->sampled = (h->sampled + 1) / 2;
		h->col_ns *= 2;
	}
}

void heat_touch_row(struct view *v, long r, double bytes, int *err)
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

/* ---- cells of address space: the address rows, decided at the end -------- */

static size_t cell_slot(const struct view *c, uint64_t key)
{
	return (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (c->index_cap - 1);
}

static int cells_index(struct heat *h)
{
	struct view *c = &h->cells;
	if (!c->index) {
		c->index_cap = CELLS_INDEX;
		if (!(c->index = malloc(c->index_cap * sizeof *c->index)))
			return -ENOMEM;
	}
	memset(c->index, 0, c->index_cap * sizeof *c->index);
	for (size_t i = 0; i < c->nrows; i++) {
		size_t j = cell_slot(c, c->rows[i].lo / h->cell_size);
		while (c->index[j])
			j = (j + 1) & (c->index_cap - 1);
		c->index[j] = (uint32_t)i + 1;
	}
	h->cell_last = SIZE_MAX;
	return 0;
}

/* Twice as wide: neighbouring cells joined, with what they hold. */
static int cells_coarsen(struct heat *h)
{
	struct view *c = &h->cells;
	h->cell_size *= 2;
	for (size_t i = 0; i < c->nrows; i++)
		c->rows[i].lo -= c->rows[i].lo % h->cell_size;
	size_t n = 0;
	int err = 0;
	for (size_t i = 0; i < c->nrows; i++) { /* kept in address order */
		struct hrow *r = &c->rows[i];
		if (n && c->rows[n - 1].lo == r->lo) {
			struct hrow *into = &c->rows[n - 1];
			for (size_t k = 0; k < FINE_COLUMNS; k++)
				into->live[k] += r->live[k];
			for (int s = 0; s < SOURCES && !err; s++) {
				if (!r->accessed[s])
					continue;
				if (!into->accessed[s] && !(into->accessed[s] = calloc(FINE_COLUMNS, sizeof(double))))
					err = -ENOMEM;
				for (size_t k = 0; !err && k < FINE_COLUMNS; k++)
					into->accessed[s][k] += r->accessed[s][k];
			}
			into->pending += r->pending;
			free(r->label);
			free(r->live);
			for (int s = 0; s < SOURCES; s++)
				free(r->accessed[s]);
		} else {
			c->rows[n++] = *r;
		}
	}
	c->nrows = n;
	c->ntouched = 0;
	for (size_t i = 0; i < n; i++) {
		c->rows[i].hi = c->rows[i].lo + h->cell_size;
		if (c->rows[i].pending > 0)
			c->touched[c->ntouched++] = i;
	}
	return err ? err : cells_index(h);
}

static int cmp_cell(const void *a, const void *b)
{
	const struct hrow *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The cell holding addr, made if new (past CELLS_CAP cells, all of them
 * twice as wide first). -1 without memory. */
static long cell_of(struct heat *h, uint64_t addr)
{
	struct view *c = &h->cells;
	uint64_t key = addr / h->cell_size;
	if (h->cell_last < c->nrows && c->rows[h->cell_last].lo / h->cell_size == key)
		return (long)h->cell_last;
	if (!c->index && cells_index(h))
		return -1;
	size_t j = cell_slot(c, key);
	for (; c->index[j]; j = (j + 1) & (c->index_cap - 1))
		if (c->rows[c->index[j] - 1].lo / h->cell_size == key)
			return (long)(h->cell_last = c->index[j] - 1);
	if (c->nrows >= CELLS_CAP) {
		/* Coarsened in address order, then looked for again. */
		qsort(c->rows, c->nrows, sizeof *c->rows, cmp_cell);
		if (cells_coarsen(h))
			return -1;
		return cell_of(h, addr);
	}
	long r = heat_row_new(h, c, "", ROW_KEY);
	if (r < 0)
		return -1;
	c->rows[r].lo = key * h->cell_size;
	c->rows[r].hi = c->rows[r].lo + h->cell_size;
	c->index[j] = (uint32_t)r + 1;
	return (long)(h->cell_last = (size_t)r);
}

/* Bytes of [lo, hi) into the cells they fall in. */
static void cells_add(struct heat *h, uint64_t lo, uint64_t hi, int *err)
{
	while (lo < hi && !*err) {
		long r = cell_of(h, lo);
		if (r < 0) {
			*err = -ENOMEM;
			return;
		}
		uint64_t end = h->cells.rows[r].hi;
		end = end > hi || end <= lo ? hi : end;
		heat_touch_row(&h->cells, r, (double)(end - lo), err);
		lo = end;
	}
}

/* Bytes of [lo, hi) into the bands they fall in (at the end: the cells' own). */
static void bands_add_row(struct view *v, const struct hrow *cell, size_t ncols)
{
	double width = (double)(cell->hi - cell->lo);
	for (size_t i = band_after(v, cell->lo); i < v->nrows && v->rows[i].lo < cell->hi; i++) {
		uint64_t a = v->rows[i].lo > cell->lo ? v->rows[i].lo : cell->lo;
		uint64_t b = v->rows[i].hi < cell->hi ? v->rows[i].hi : cell->hi;
		if (b <= a)
			continue;
		double f = (double)(b - a) / width;
		struct hrow *r = &v->rows[i];
		for (size_t c = 0; c < ncols; c++)
			r->live[c] += cell->live[c] * f;
		for (int s = 0; s < SOURCES; s++) {
			if (!cell->accessed[s])
				continue;
			if (!r->accessed[s] && !(r->accessed[s] = calloc(ncols, sizeof(double))))
				continue; /* checked by the caller through live */
			for (size_t c = 0; c < ncols; c++)
				r->accessed[s][c] += cell->accessed[s][c] * f;
		}
	}
}

/* ---- splitting accesses and sampling the live set ------------------------- */

/* The pending bytes of every row, spread over the fine columns of [start, end]. */
static void spread_view(struct heat *h, struct view *v, unsigned source, uint64_t start, uint64_t end, int *err)
{
	for (size_t k = 0; k < v->ntouched; k++) {
		struct hrow *r = &v->rows[v->touched[k]];
		double bytes = r->pending;
		r->pending = 0;
		if (source >= SOURCES)
			continue; /* a source of a later version */
		if (!r->accessed[source] && !(r->accessed[source] = calloc(FINE_COLUMNS, sizeof(double)))) {
			*err = -ENOMEM;
			continue;
		}
		if (end <= start) {
			r->accessed[source][fine_of(h, end)] += bytes;
			continue;
		}
		for (size_t c = fine_of(h, start); c <= fine_of(h, end - 1); c++) {
			uint64_t a = c * h->col_ns, b = a + h->col_ns;
			a = a > start ? a : start;
			b = b < end ? b : end;
			if (b > a)
				r->accessed[source][c] += bytes * (double)(b - a) / (double)(end - start);
		}
	}
	v->ntouched = 0;
}

static void spread(struct heat *h, unsigned source, uint64_t start, uint64_t end, int *err)
{
	for (int by = 0; by < WSP_HEAT_BY_COUNT; by++)
		if (by != WSP_HEAT_BY_ADDRESS)
			spread_view(h, &h->views[by], source, start, end, err);
	spread_view(h, &h->cells, source, start, end, err);
}

/* Whether the address view splits accesses by block (a kind asked for)
 * rather than taking every accessed byte. */
static bool address_by_block(const struct heat *h)
{
	return h->views[WSP_HEAT_BY_ADDRESS].wanted && h->opt->kind >= 0;
}

/* Whether accesses are split by block at all. */
static bool needs_blocks(const struct heat *h)
{
	return h->views[WSP_HEAT_BY_CALLSITE].wanted || h->views[WSP_HEAT_BY_NAME].wanted || address_by_block(h);
}

/* The call-site row of a live block, kept beside the model by the block's
 * place: the samples visit the blocks in the order of their places, so
 * this is read in order, where the hash of stacks would be read at random
 * for every block of every sample. -1 without memory. */
static long live_row_of_stack(struct heat *h, const struct wsp_block *b)
{
	size_t p = wsp_model_place(h->l.model, b);
	if (p == SIZE_MAX)
		return heat_row_of_stack(h, b->stack);
	if (p >= h->place_rows_cap) {
		size_t old = h->place_rows_cap;
		if (wsp_grow(&h->place_rows, &h->place_rows_cap, p + 1, sizeof *h->place_rows))
			return -1;
		memset(h->place_rows + old, 0, (h->place_rows_cap - old) * sizeof *h->place_rows);
	}
	struct place_row *c = &h->place_rows[p];
	if (c->row && c->stack == b->stack)
		return (long)c->row - 1;
	long r = heat_row_of_stack(h, b->stack);
	if (r >= 0)
		*c = (struct place_row){ b->stack, (uint32_t)r + 1 };
	return r;
}

/* A live block's part [lo, hi) of an access region, as the model matches
 * the sample (wsp_model_observe_access): to its rows, pending until the
 * sample is spread. A byte of a sampled heap's block counts 1/p. */
static void observe_block(const struct wsp_block *b, uint64_t lo, uint64_t hi, void *arg)
{
	struct heat *h = arg;
	if (h->err || b->excluded || !kind_wanted(h->opt->kind, b->kind) || !b->size || hi <= lo)
		return;
	double bytes = (double)(hi - lo);
	if (wsp_model_estimated(h->l.model, b->kind))
		bytes *= (double)wsp_model_block_bytes(h->l.model, b) / (double)b->size;
	if (address_by_block(h))
		cells_add(h, lo, hi, &h->err);
	if (h->views[WSP_HEAT_BY_CALLSITE].wanted)
		heat_touch_row(&h->views[WSP_HEAT_BY_CALLSITE], live_row_of_stack(h, b), bytes, &h->err);
	if (h->views[WSP_HEAT_BY_NAME].wanted)
		heat_touch_row(&h->views[WSP_HEAT_BY_NAME], heat_row_of_name(h, b), bytes, &h->err);
}

/* Bytes of a window that a block freed during it held, and no live block
 * holds now: to the freed block's rows (its name is gone with it). */
static void split_departed(const struct wsp_block *b, uint64_t bytes, void *arg)
{
	struct heat *h = arg;
	if (b->excluded || !kind_wanted(h->opt->kind, b->kind) || !b->size)
		return;
	double w = (double)wsp_model_block_bytes(h->l.model, b) / (double)b->size * (double)bytes;
	if (h->views[WSP_HEAT_BY_CALLSITE].wanted)
		heat_touch_row(&h->views[WSP_HEAT_BY_CALLSITE], heat_row_of_stack(h, b->stack), w, &h->err);
	if (h->views[WSP_HEAT_BY_NAME].wanted) {
		struct view *v = &h->views[WSP_HEAT_BY_NAME];
		if (v->unnamed < 0)
			v->unnamed = heat_row_new(h, v, "(unnamed memory)", ROW_UNNAMED);
		heat_touch_row(v, v->unnamed, w, &h->err);
	}
}

/* An access sample, its live blocks' parts already with their rows (the
 * model told them as it matched it, or, for a wsprof_touch, asked now):
 * every byte to the cells, the freed blocks a window saw to theirs, then
 * all spread over the columns the sample covers. */
static int add_access(struct heat *h, unsigned source, uint64_t start, uint64_t end, const wsprof_region *regions,
		      size_t n, bool ask)
{
	int err = 0;
	bool window = source < SOURCES && wsp_access_is_window(source, end - start);
	for (size_t i = 0; !err && i < n && source < SOURCES; i++) {
		uint64_t hi = regions[i].addr + regions[i].len;
		hi = hi < regions[i].addr ? UINT64_MAX : hi;
		if (ask && needs_blocks(h))
			err = wsp_model_each_in(h->l.model, regions[i].addr, hi - regions[i].addr, observe_block, h);
		if (!err && h->views[WSP_HEAT_BY_ADDRESS].wanted && !address_by_block(h))
			cells_add(h, regions[i].addr, hi, &err);
		if (!err && window && needs_blocks(h))
			err = wsp_model_each_departed(h->l.model, start, end, regions[i].addr, regions[i].len,
						      split_departed, h);
		err = err ? err : h->err;
	}
	spread(h, source, start, end, &err);
	return err;
}

/* A live block's bytes into the rows it counts in, pending until the
 * sample is taken (take_live_sample): whole bytes, summed exactly. */
static void sample_block(const struct wsp_block *b, void *arg)
{
	struct heat *h = arg;
	if (h->err || b->excluded || !kind_wanted(h->opt->kind, b->kind) || !b->size)
		return;
	if (h->views[WSP_HEAT_BY_ADDRESS].wanted && (h->opt->kind >= 0 || !inside_another(b)))
		cells_add(h, wsp_block_addr(b), wsp_block_addr(b) + b->size, &h->err);
	double bytes = (double)wsp_model_block_bytes(h->l.model, b);
	if (h->views[WSP_HEAT_BY_CALLSITE].wanted)
		heat_touch_row(&h->views[WSP_HEAT_BY_CALLSITE], live_row_of_stack(h, b), bytes, &h->err);
	if (h->views[WSP_HEAT_BY_NAME].wanted)
		heat_touch_row(&h->views[WSP_HEAT_BY_NAME], heat_row_of_name(h, b), bytes, &h->err);
}

static void flush_live(struct view *v, size_t c)
{
	for (size_t k = 0; k < v->ntouched; k++) {
		struct hrow *r = &v->rows[v->touched[k]];
		r->live[c] += r->pending;
		r->pending = 0;
	}
	v->ntouched = 0;
}

/* A sample of the live set, every live block's bytes to its rows, into
 * fine column c (a column's live bytes: the mean of its samples). */
static void take_live_sample(struct heat *h, size_t c)
{
	wsp_model_each_live(h->l.model, sample_block, h);
	for (int by = 0; by < WSP_HEAT_BY_COUNT; by++)
		if (by != WSP_HEAT_BY_ADDRESS)
			flush_live(&h->views[by], c);
	flush_live(&h->cells, c);
	h->live_n[c]++;
}

/* The samples of the columns whose middle is before t. */
static void live_samples_before(struct heat *h, uint64_t t)
{
	while (!h->err && h->sampled < FINE_COLUMNS && h->sampled * h->col_ns + h->col_ns / 2 < t)
		take_live_sample(h, h->sampled++);
}

/* The address ranges ever live or accessed, for the layout of the rows. */
static int note_ranges(struct heat *h, const wsprof_event *ev)
{
	int kind = h->opt->kind, err = 0;
	if (ev->type == WSPROF_EV_ALLOC && kind_wanted(kind, ev->kind)) {
		uint64_t hi = ev->addr + ev->size < ev->addr ? UINT64_MAX : ev->addr + ev->size;
		err = spans_add(&h->spans, ev->addr, hi, 0, (double)ev->size);
	} else if (ev->type == WSPROF_EV_ACCESS) {
		for (size_t i = 0; !err && i < ev->nregions; i++) {
			uint64_t lo = ev->regions[i].addr, hi = lo + ev->regions[i].len < lo ? UINT64_MAX : lo + ev->regions[i].len;
			err = kind >= 0 ? spans_weigh(&h->spans, lo, hi) : spans_add(&h->spans, lo, hi, (double)(hi - lo), 0);
		}
	} else if (ev->type == WSPROF_EV_ANNOTATE && ev->op == WSPROF_ANN_TOUCH) {
		uint64_t len = ev->size ? ev->size : 1;
		err = kind >= 0 ? spans_weigh(&h->spans, ev->addr, ev->addr + len)
				: spans_add(&h->spans, ev->addr, ev->addr + len, (double)len, 0);
	}
	return err;
}

static int pass_begin(struct heat *h, wsprof_trace *t)
{
	const struct wsp_loaded *load = h->load;
	h->begun = true;
	if (load != &h->l) { /* the report's load: its trace, symbols and model */
		h->l.trace = load->trace;
		h->l.syms = load->syms;
		h->l.model = load->model;
	}
	h->window_ns = (uint64_t)wsprof_trace_process(t)->window_ms * 1000000u;
	h->col_ns = h->window_ns >= FINE_PER_WINDOW ? h->window_ns / FINE_PER_WINDOW : FIRST_COLUMN_NS;
	h->ncols = FINE_COLUMNS; /* rows are made this wide until the end */
	h->cell_size = PAGE;
	if (!(h->live_n = calloc(FINE_COLUMNS, sizeof *h->live_n)))
		return -ENOMEM;
	if (needs_blocks(h))
		wsp_model_observe_access(h->l.model, observe_block, h);
	return 0;
}

/* Each event of the load, after its model took it. */
int heat_event(void *arg, wsprof_trace *t, const wsprof_event *ev)
{
	struct heat *h = arg;
	int err = h->begun ? 0 : pass_begin(h, t);
	if (err)
		return err;
	h->last_ns = ev->time_ns > h->last_ns ? ev->time_ns : h->last_ns;
	columns_reach(h, h->last_ns);
	if (h->views[WSP_HEAT_BY_ADDRESS].wanted)
		err = note_ranges(h, ev);
	if (!err && ev->type == WSPROF_EV_ACCESS) {
		h->access = true;
		if (!h->window_ns || ev->size > h->window_ns)
			h->window_ns = ev->size;
		uint64_t start = ev->time_ns > ev->size ? ev->time_ns - ev->size : 0;
		err = add_access(h, ev->op, start, ev->time_ns, ev->regions, ev->nregions, false);
	} else if (!err && ev->type == WSPROF_EV_ANNOTATE && ev->op == WSPROF_ANN_TOUCH) {
		h->access = true;
		const wsprof_region r = { ev->addr, ev->size ? ev->size : 1 };
		err = add_access(h, WSPROF_ACCESS_ANNOTATED, ev->time_ns, ev->time_ns, &r, 1, true);
	} else if (ev->type == WSPROF_EV_ANNOTATE && ev->op == WSPROF_ANN_NAME) {
		h->names = true;
	}
	if (!err)
		live_samples_before(h, ev->time_ns);
	err = err ? err : h->err;
	return err < 0 ? err : 0;
}

/* A row's fine columns laid over the columns drawn: accessed bytes spread
 * evenly over their column's time, live bytes the mean over the time of
 * the column drawn of its fine columns' means. @return 0 or -ENOMEM. */
static int rebin_row(struct heat *h, struct hrow *r)
{
	double *live = calloc(h->ncols, sizeof *live), *acc[SOURCES] = { 0 };
	int err = live ? 0 : -ENOMEM;
	for (int s = 0; s < SOURCES && !err; s++)
		if (r->accessed[s] && !(acc[s] = calloc(h->ncols, sizeof(double))))
			err = -ENOMEM;
	for (size_t j = 0; j < h->ncols && !err; j++) {
		uint64_t a = heat_col_start(h, j), b = j + 1 == h->ncols ? h->end_ns : heat_col_start(h, j + 1);
		double num = 0, den = 0;
		for (size_t i = fine_of(h, a); i <= fine_of(h, b ? b - 1 : 0); i++) {
			/* The last fine column ends with the trace. */
			uint64_t p = i * h->col_ns, end = p + h->col_ns < h->end_ns ? p + h->col_ns : h->end_ns, q = end;
			p = p > a ? p : a;
			q = q < b ? q : b;
			double o = q > p ? (double)(q - p) : (b == a ? 1 : 0);
			if (o <= 0)
				continue;
			for (int s = 0; s < SOURCES; s++)
				if (acc[s])
					acc[s][j] += r->accessed[s][i] * o / (double)(end > i * h->col_ns ? end - i * h->col_ns : 1);
			if (h->live_n[i]) {
				num += r->live[i] / h->live_n[i] * o;
				den += o;
			}
		}
		live[j] = den > 0 ? num / den : 0;
	}
	free(r->live);
	r->live = live;
	for (int s = 0; s < SOURCES; s++) {
		free(r->accessed[s]);
		r->accessed[s] = acc[s];
	}
	return err;
}

static int rebin_view(struct heat *h, struct view *v)
{
	for (size_t i = 0; i < v->nrows; i++)
		if (rebin_row(h, &v->rows[i]))
			return -ENOMEM;
	return 0;
}

static int finish_view(struct heat *h, struct view *v);

/* The end of the load: the last samples, the columns drawn, the address
 * rows from the ranges and the cells, each view finished. */
int heat_end(void *arg, wsprof_trace *t)
{
	struct heat *h = arg;
	int err = h->begun ? 0 : pass_begin(h, t);
	wsp_model_observe_access(h->l.model, NULL, NULL);
	wsprof_trace_status st;
	wsprof_trace_get_status(t, &st);
	h->end_ns = st.end_time_ns > h->last_ns ? st.end_time_ns : h->last_ns;
	if (!h->end_ns)
		h->end_ns = 1;
	columns_reach(h, h->end_ns);
	/* The columns to the end, sampled with the live set as it ended. */
	size_t last = fine_of(h, h->end_ns - 1);
	while (!err && !h->err && h->sampled <= last)
		take_live_sample(h, h->sampled++);
	err = err ? err : h->err;
	/* A column a window at least, so a column is never a fraction of one sample. */
	uint64_t cols = h->access && h->window_ns ? (h->end_ns + h->window_ns - 1) / h->window_ns : WSP_HEAT_COLUMNS;
	h->ncols = cols < 1 ? 1 : cols > WSP_HEAT_COLUMNS ? WSP_HEAT_COLUMNS : (size_t)cols;
	h->col_s = (double)h->end_ns / 1e9 / (double)h->ncols;
	for (int by = 0; by < WSP_HEAT_BY_COUNT && !err; by++)
		if (by != WSP_HEAT_BY_ADDRESS)
			err = rebin_view(h, &h->views[by]);
	struct view *va = &h->views[WSP_HEAT_BY_ADDRESS];
	if (!err && va->wanted) {
		err = rebin_view(h, &h->cells);
		err = err ? err : address_rows(h, va);
		qsort(h->cells.rows, h->cells.nrows, sizeof *h->cells.rows, cmp_cell);
		for (size_t i = 0; !err && i < h->cells.nrows; i++)
			bands_add_row(va, &h->cells.rows[i], h->ncols);
	}
	spans_free(&h->spans);
	for (int by = 0; by < WSP_HEAT_BY_COUNT && !err; by++)
		if (h->views[by].wanted && finish_view(h, &h->views[by]))
			err = -ENOMEM;
	return err < 0 ? err : 0;
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

/* The top of the colour scale: the largest cell rounded up to a heat_figure
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

void heat_free(struct heat *h)
{
	for (int by = 0; by <= WSP_HEAT_BY_COUNT; by++) {
		struct view *v = by < WSP_HEAT_BY_COUNT ? &h->views[by] : &h->cells;
		for (size_t i = 0; i < v->nrows; i++)
			row_free(&v->rows[i]);
		free(v->rows);
		free(v->index);
		free(v->touched);
		free(v->gaps);
	}
	spans_free(&h->spans);
	free(h->live_n);
	free(h->frame_rows);
	free(h->place_rows);
	if (h->load != &h->l) /* the report's load: what it read is its own */
		h->l.model = NULL;
	wsp_loaded_free(&h->l);
}

void heat_init(struct heat *h, const char *path, const struct wsp_heatmap_options *opt, const struct wsp_loaded *load)
{
	memset(h, 0, sizeof *h);
	h->opt = opt;
	h->path = path;
	h->l.path = path;
	h->load = load ? load : &h->l;
	h->l.borrowed = load != NULL;
	h->no_stack_row = -1;
	for (int by = 0; by < WSP_HEAT_BY_COUNT; by++) {
		h->views[by].by = (enum wsp_heat_by)by;
		h->views[by].wanted = opt->views >> by & 1;
		h->views[by].other = h->views[by].unnamed = -1;
	}
	h->cells.other = h->cells.unnamed = -1;
}

/* The grid over a load of its own (one pass: its model matches the
 * accesses, symbols only for the call sites' names). @return 0, or 1
 * after a one-line error. */
int heat_compute(struct heat *h, const char *path, const struct wsp_heatmap_options *opt)
{
	heat_init(h, path, opt, NULL);
	struct wsp_follower f = { heat_event, heat_end, h };
	if (wsp_load_following(path, NULL, h->views[WSP_HEAT_BY_CALLSITE].wanted, &f, 1, &h->l)) {
		heat_free(h);
		return 1;
	}
	return 0;
}
