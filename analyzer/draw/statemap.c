/*
 * statemap.c - one memory's address layout at a moment (compute/layout.c)
 * drawn: the map `wsprof report state -o` and the full report draw.
 *
 * The map is the memory's span, lowest block to highest, as one long bar
 * broken into rows: blocks to scale (a tiny one still gets a visible
 * width), the holes between them hatched, the largest hole outlined.
 * Gaps so large they separate areas of the address space (the brk heap
 * and the mmap area) are breaks: drawn at a fixed width with the bytes
 * they leave out written in, so the blocks on either side stay readable.
 * Blocks are coloured in use, collectable, or pool (the block a program
 * carves sub-allocations from, drawn inside it); names and sizes are
 * written where they fit. At a failed allocation the request and the
 * largest hole are drawn to one scale under the map.
 */
#include "statemap.h"
#include "text.h"

#include "grow.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the map ------------------------------------------------------------ */

#define ADDR_W 76.0   /* the column of row addresses */
#define ROW_H 30.0
#define ROW_GAP 12.0
#define MAX_ROWS 12
#define MIN_BLOCK_W 2.0
#define BREAK_W 54.0
#define POOL_BAND 9.0 /* a pool's own label, above its sub-allocations */

enum seg_type { SEG_BLOCK, SEG_GAP, SEG_BREAK };

struct seg {
	enum seg_type type;
	uint64_t addr, bytes;
	double p0, p1;                       /* drawn from p0 to p1 along the bar, in points */
	const struct wsp_state_block *block; /* SEG_BLOCK */
	size_t sub0, nsubs;                  /* its sub-allocations in the memory's subs */
};

struct map {
	cairo_t *cr;
	struct wsp_state *st;
	const struct wsp_memory *m;
	double x, y, w;      /* the bar's rows: left edge, top, width */
	size_t rows;
	double scale;        /* points per byte */
	double min_w, break_w;
	struct seg *segs;
	size_t nsegs;
	double total;        /* the bar's length */
};

struct piece {
	double x, y, w;
};

/* Where p0..p1 of the bar lies on the page: a piece per row it crosses.
 * @return the number of pieces. */
static size_t pieces(const struct map *mp, double p0, double p1, struct piece *out)
{
	size_t n = 0;
	while (p1 - p0 > 1e-9 && n < MAX_ROWS + 1) {
		size_t row = (size_t)(p0 / mp->w);
		if (row >= mp->rows) /* rounding at the very end */
			row = mp->rows - 1;
		double end = fmin(p1, (double)(row + 1) * mp->w);
		if (end <= p0) /* p0 sits on the last row's right edge */
			break;
		out[n++] = (struct piece){ mp->x + p0 - (double)row * mp->w, mp->y + (double)row * (ROW_H + ROW_GAP), end - p0 };
		p0 = end;
	}
	return n;
}

static size_t widest(const struct piece *p, size_t n)
{
	size_t best = 0;
	for (size_t i = 1; i < n; i++)
		if (p[i].w > p[best].w)
			best = i;
	return best;
}

/* The bar's length at a scale. */
static double length_at(const struct map *mp, double scale)
{
	double len = 0;
	for (size_t i = 0; i < mp->nsegs; i++) {
		const struct seg *s = &mp->segs[i];
		if (s->type == SEG_BREAK)
			len += mp->break_w;
		else if (s->type == SEG_BLOCK)
			len += fmax((double)s->bytes * scale, mp->min_w);
		else
			len += (double)s->bytes * scale;
	}
	return len;
}

/* The segments, in address order: blocks, the gaps between them, breaks. */
static int make_segs(struct map *mp)
{
	const struct wsp_memory *m = mp->m;
	size_t cap = 0, sub = 0;
	uint64_t reach = 0;
	for (size_t i = 0; i < m->n; i++) {
		uint64_t gap = wsp_memory_gap_before(m, i, &reach), at = wsp_block_addr(m->blocks[i]->b);
		if (wsp_grow(&mp->segs, &cap, mp->nsegs + 2, sizeof *mp->segs))
			return -ENOMEM;
		if (gap)
			mp->segs[mp->nsegs++] =
				(struct seg){ .type = gap >= m->break_bytes ? SEG_BREAK : SEG_GAP, .addr = at - gap, .bytes = gap };
		struct seg s = { .type = SEG_BLOCK, .addr = at, .bytes = m->blocks[i]->b->size, .block = m->blocks[i], .sub0 = sub };
		while (sub < m->nsubs && wsp_block_addr(m->subs[sub]->b) < at + s.bytes) {
			if (wsp_block_addr(m->subs[sub]->b) >= at)
				s.nsubs++;
			else
				s.sub0 = sub + 1;
			sub++;
		}
		mp->segs[mp->nsegs++] = s;
	}
	return 0;
}

/* Rows and scale: the bar fills the rows it needs, up to max_rows; tiny
 * blocks and breaks get their fixed widths, the rest shares what is left
 * in proportion to bytes. */
static void lay_out(struct map *mp, size_t max_rows)
{
	size_t nblocks = 0, nbreaks = 0;
	uint64_t bytes = 0;
	for (size_t i = 0; i < mp->nsegs; i++) {
		nblocks += mp->segs[i].type == SEG_BLOCK;
		nbreaks += mp->segs[i].type == SEG_BREAK;
		bytes += mp->segs[i].type != SEG_BREAK ? mp->segs[i].bytes : 0;
	}
	mp->rows = mp->nsegs < max_rows ? (mp->nsegs ? mp->nsegs : 1) : max_rows;
	double room = (double)mp->rows * mp->w;
	/* So many blocks or breaks that their fixed widths would fill the map:
	 * shrink them, so that bytes still decide most of the picture. */
	mp->break_w = nbreaks ? fmin(BREAK_W, 0.3 * room / (double)nbreaks) : BREAK_W;
	mp->min_w = nblocks ? fmin(MIN_BLOCK_W, 0.3 * room / (double)nblocks) : MIN_BLOCK_W;
	double lo = 0, hi = bytes ? room / (double)bytes : 1;
	for (int i = 0; i < 60; i++) {
		double mid = (lo + hi) / 2;
		if (length_at(mp, mid) <= room)
			lo = mid;
		else
			hi = mid;
	}
	/* A round number of bytes a row, so that the rows start at round
	 * offsets from the span's start: what fits, rounded up to 1, 1.25,
	 * 1.5, 1.75 times a power of two. */
	double per_row = lo > 0 ? mp->w / lo : 1, base = 1;
	while (base * 2 <= per_row)
		base *= 2;
	static const double steps[] = { 1, 1.25, 1.5, 1.75, 2 };
	size_t step = 0;
	while (base * steps[step] < per_row) /* ends at 2 at the latest: base * 2 > per_row */
		step++;
	mp->scale = mp->w / (base * steps[step]);
	double p = 0;
	for (size_t i = 0; i < mp->nsegs; i++) {
		struct seg *s = &mp->segs[i];
		double len = s->type == SEG_BREAK ? mp->break_w
			     : s->type == SEG_BLOCK ? fmax((double)s->bytes * mp->scale, mp->min_w)
						    : (double)s->bytes * mp->scale;
		s->p0 = p;
		s->p1 = p += len;
	}
	mp->total = fmin(p, room);
}

/* The address at a point of the bar. */
static uint64_t addr_at(const struct map *mp, double p)
{
	for (size_t i = 0; i < mp->nsegs; i++) {
		const struct seg *s = &mp->segs[i];
		if (p < s->p1 || i + 1 == mp->nsegs) {
			double f = s->p1 > s->p0 ? (p - s->p0) / (s->p1 - s->p0) : 0;
			return s->addr + (uint64_t)llround(fmin(fmax(f, 0), 1) * (double)s->bytes);
		}
	}
	return mp->m->lo;
}

static struct wsp_rgb block_colour(const struct wsp_state_block *r, bool pool)
{
	if (pool)
		return WSP_C_POOL;
	return r->ann && r->ann->collectable ? WSP_C_COLLECTABLE : WSP_C_IN_USE;
}

static struct wsp_rgb darker(struct wsp_rgb c, double f)
{
	return (struct wsp_rgb){ c.r * f, c.g * f, c.b * f };
}

/* Text that reads on a fill: white on dark colours, dark on light ones. */
static void text_colour_on(cairo_t *cr, struct wsp_rgb fill)
{
	if (0.299 * fill.r + 0.587 * fill.g + 0.114 * fill.b < 0.5)
		cairo_set_source_rgb(cr, 1, 1, 1);
	else
		wsp_set_colour(cr, WSP_C_TEXT, 1);
}

/* A hole: its colour crossed by light diagonal lines. */
static void hatch(cairo_t *cr, double x, double y, double w, double h)
{
	cairo_save(cr);
	wsp_set_colour(cr, WSP_C_HOLE, 1);
	cairo_rectangle(cr, x, y, w, h);
	cairo_fill_preserve(cr);
	cairo_clip(cr);
	cairo_set_source_rgb(cr, 0.80, 0.80, 0.80);
	cairo_set_line_width(cr, 0.5);
	for (double d = x - h - fmod(x, 5.0); d < x + w; d += 5.0) {
		cairo_move_to(cr, d, y + h);
		cairo_line_to(cr, d + h, y);
	}
	cairo_stroke(cr);
	cairo_restore(cr);
}

/* Text on a white patch, so it reads over hatching. */
static void patch_text(cairo_t *cr, double x, double y, double size, bool bold, const char *s, struct wsp_rgb c)
{
	double tw = wsp_text_width(cr, size, bold, s);
	cairo_set_source_rgba(cr, 1, 1, 1, 0.92);
	cairo_rectangle(cr, x - tw / 2 - 2, y - size, tw + 4, size + 3);
	cairo_fill(cr);
	wsp_set_colour(cr, c, 1);
	wsp_text(cr, x, y, size, bold, WSP_CENTER, s);
}

static size_t rows_used(const struct map *mp)
{
	size_t n = (size_t)ceil(mp->total / mp->w - 1e-9);
	return n < 1 ? 1 : n;
}

static void draw_rows(const struct map *mp)
{
	cairo_t *cr = mp->cr;
	char addr[32];
	for (size_t r = 0; r < mp->rows; r++) {
		double used = fmin(mp->w, mp->total - (double)r * mp->w);
		if (used <= 0)
			break;
		double y = mp->y + (double)r * (ROW_H + ROW_GAP);
		wsp_set_colour(cr, WSP_C_HOLE, 1);
		cairo_rectangle(cr, mp->x, y, used, ROW_H);
		cairo_fill(cr);
		snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)addr_at(mp, (double)r * mp->w));
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		wsp_text(cr, mp->x - 5, y + ROW_H / 2 + 3, 7.5, false, WSP_RIGHT, addr);
		if (used < mp->w - 70 || r + 1 == mp->rows) { /* the end of the span, after the last block */
			snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)mp->m->hi);
			cairo_set_source_rgb(cr, 0.45, 0.45, 0.45);
			if (used < mp->w - 70)
				wsp_text(cr, mp->x + used + 5, y + ROW_H / 2 + 3, 7.5, false, WSP_LEFT, addr);
			else
				wsp_text(cr, mp->x + mp->w, y + ROW_H + 9, 7.5, false, WSP_RIGHT, addr);
		}
	}
}

/* A segment narrower than this is drawn by density (draw_dense). */
#define NARROW 1.5
#define BIN 0.5

static bool narrow(const struct seg *s)
{
	return s->p1 - s->p0 < NARROW;
}

/* Fill the wide blocks of one colour at once: one path, and the edges
 * where a block is wide enough to show them, so that neighbours stay
 * apart. */
static void fill_blocks(const struct map *mp, struct wsp_rgb colour)
{
	cairo_t *cr = mp->cr;
	struct piece p[MAX_ROWS + 1];
	for (int pass = 0; pass < 2; pass++) {
		bool any = false;
		for (size_t i = 0; i < mp->nsegs; i++) {
			const struct seg *s = &mp->segs[i];
			if (s->type != SEG_BLOCK || narrow(s))
				continue;
			struct wsp_rgb c = block_colour(s->block, s->nsubs > 0);
			if (c.r != colour.r || c.g != colour.g || c.b != colour.b)
				continue;
			size_t n = pieces(mp, s->p0, s->p1, p);
			for (size_t k = 0; k < n; k++) {
				if (!pass)
					cairo_rectangle(cr, p[k].x, p[k].y, p[k].w, ROW_H);
				else if (p[k].w >= 3)
					cairo_rectangle(cr, p[k].x + 0.25, p[k].y + 0.25, p[k].w - 0.5, ROW_H - 0.5);
				any = true;
			}
		}
		if (!any)
			return;
		wsp_set_colour(cr, pass ? darker(colour, 0.72) : colour, 1);
		cairo_set_line_width(cr, 0.5);
		if (pass)
			cairo_stroke(cr);
		else
			cairo_fill(cr);
	}
}

enum { DENSE_IN_USE, DENSE_COLLECTABLE, DENSE_POOL, DENSE_HOLE, DENSE_CLASSES };

#define SHADES 16 /* steps a colour channel of the dense bins */

/* A stretch of bins of one colour. */
struct dense_run {
	int colour; /* the quantized channels, r * 17^2 + g * 17 + b */
	double x, y, w;
};

static int by_colour(const void *a, const void *b)
{
	return ((const struct dense_run *)a)->colour - ((const struct dense_run *)b)->colour;
}

/* The mix of what covers a bin, to SHADES steps a channel; -1: nothing. */
static int mix(const double cover[DENSE_CLASSES])
{
	static const struct wsp_rgb *const colours[DENSE_CLASSES] = { &WSP_C_IN_USE, &WSP_C_COLLECTABLE, &WSP_C_POOL,
								      &WSP_C_HOLE };
	double total = 0, r = 0, g = 0, b = 0;
	for (int k = 0; k < DENSE_CLASSES; k++)
		total += cover[k];
	if (!(total > 0))
		return -1;
	for (int k = 0; k < DENSE_CLASSES; k++) {
		r += colours[k]->r * cover[k] / total;
		g += colours[k]->g * cover[k] / total;
		b += colours[k]->b * cover[k] / total;
	}
	return ((int)lround(r * SHADES) * (SHADES + 1) + (int)lround(g * SHADES)) * (SHADES + 1) + (int)lround(b * SHADES);
}

/* The bins of one colour at once: one path each, however many bins. */
static void fill_runs(cairo_t *cr, struct dense_run *runs, size_t n)
{
	if (!n)
		return;
	qsort(runs, n, sizeof *runs, by_colour);
	for (size_t i = 0; i < n; i++) {
		cairo_rectangle(cr, runs[i].x, runs[i].y, runs[i].w, ROW_H);
		if (i + 1 < n && runs[i + 1].colour == runs[i].colour)
			continue;
		int c = runs[i].colour;
		cairo_set_source_rgb(cr, (double)(c / ((SHADES + 1) * (SHADES + 1))) / SHADES,
				     (double)(c / (SHADES + 1) % (SHADES + 1)) / SHADES, (double)(c % (SHADES + 1)) / SHADES);
		cairo_fill(cr);
	}
}

/* Blocks and gaps too narrow to draw one by one (thousands of small heap
 * blocks) are drawn by density: the bar is cut into bins of half a point,
 * each coloured by the mix of what covers it, so a stretch where a third
 * of the bytes are holes reads paler than a packed one, as it is. */
static void draw_dense(const struct map *mp)
{
	size_t per_row = (size_t)ceil(mp->w / BIN), nbins = per_row * mp->rows, nruns = 0, cap = 0;
	double (*cover)[DENSE_CLASSES] = calloc(nbins, sizeof *cover);
	struct dense_run *runs = NULL;
	struct piece p[MAX_ROWS + 1];
	for (size_t i = 0; cover && i < mp->nsegs; i++) {
		const struct seg *s = &mp->segs[i];
		if (s->type == SEG_BREAK || !narrow(s))
			continue;
		/* Slack is the allocator's overhead of the block before it: its colour. */
		const struct seg *b = s->type == SEG_GAP && s->bytes < mp->m->slack && i ? &mp->segs[i - 1] : s;
		int cls = b->type == SEG_GAP ? DENSE_HOLE
			  : b->nsubs ? DENSE_POOL
			  : b->block->ann && b->block->ann->collectable ? DENSE_COLLECTABLE : DENSE_IN_USE;
		size_t n = pieces(mp, s->p0, s->p1, p);
		for (size_t k = 0; k < n; k++) {
			size_t row = (size_t)((p[k].y - mp->y) / (ROW_H + ROW_GAP) + 0.5);
			for (double a = p[k].x - mp->x, end = a + p[k].w; a < end;) {
				size_t bin = (size_t)(a / BIN);
				double edge = fmin(end, (double)(bin + 1) * BIN);
				if (bin < per_row && row < mp->rows)
					cover[row * per_row + bin][cls] += edge - a;
				a = edge > a ? edge : end;
			}
		}
	}
	for (size_t row = 0; cover && row < mp->rows; row++) {
		double y = mp->y + (double)row * (ROW_H + ROW_GAP);
		int run = -1;
		size_t from = 0;
		for (size_t bin = 0; bin <= per_row; bin++) {
			int c = bin < per_row ? mix(cover[row * per_row + bin]) : -1;
			if (c == run)
				continue;
			if (run >= 0) {
				if (wsp_grow(&runs, &cap, nruns + 1, sizeof *runs))
					break; /* the wide blocks still show; the fine grain is lost */
				runs[nruns++] = (struct dense_run){ run, mp->x + (double)from * BIN, y,
								    fmin((double)bin * BIN, mp->w) - (double)from * BIN };
			}
			run = c;
			from = bin;
		}
	}
	fill_runs(mp->cr, runs, nruns);
	free(runs);
	free(cover);
}

/* The bar position of an address inside a block's segment. */
static double pos_in(const struct seg *s, uint64_t addr)
{
	double f = s->bytes ? (double)(addr - s->addr) / (double)s->bytes : 0;
	return s->p0 + fmin(fmax(f, 0), 1) * (s->p1 - s->p0);
}

static void draw_subs(const struct map *mp, const struct seg *s)
{
	cairo_t *cr = mp->cr;
	struct piece p[MAX_ROWS + 1];
	char size[32];
	for (size_t j = s->sub0; j < s->sub0 + s->nsubs; j++) {
		const struct wsp_state_block *sub = mp->m->subs[j];
		uint64_t at = wsp_block_addr(sub->b);
		double p0 = pos_in(s, at), p1 = fmax(pos_in(s, at + sub->b->size), p0 + 1);
		struct wsp_rgb c = block_colour(sub, false);
		size_t n = pieces(mp, p0, fmin(p1, s->p1), p);
		for (size_t k = 0; k < n; k++) {
			cairo_rectangle(cr, p[k].x, p[k].y + POOL_BAND, p[k].w, ROW_H - POOL_BAND - 2);
			wsp_set_colour(cr, c, 1);
			cairo_fill_preserve(cr);
			wsp_set_colour(cr, darker(c, 0.72), 1);
			cairo_set_line_width(cr, 0.5);
			cairo_stroke(cr);
		}
		if (!n)
			continue;
		const struct piece *w = &p[widest(p, n)];
		wsp_human_bytes(size, sizeof size, sub->b->size);
		if (wsp_text_width(cr, 6.5, false, size) + 4 <= w->w) {
			text_colour_on(cr, c);
			wsp_text(cr, w->x + w->w / 2, w->y + POOL_BAND + (ROW_H - POOL_BAND) / 2 + 1.5, 6.5, false, WSP_CENTER,
				 size);
		}
	}
}

/* A block's name and size, where they fit: two lines, the size alone, or
 * nothing. A pool's go in the band above its sub-allocations. */
static void label_block(const struct map *mp, const struct seg *s)
{
	cairo_t *cr = mp->cr;
	struct piece p[MAX_ROWS + 1];
	size_t n = pieces(mp, s->p0, s->p1, p);
	if (!n)
		return;
	const struct piece *w = &p[widest(p, n)];
	if (w->w < 12) /* not even "1 B" */
		return;
	char name[256], size[32], fit[256], line[320];
	wsp_state_block_name(mp->st, s->block, name, sizeof name);
	wsp_human_bytes(size, sizeof size, s->bytes);
	double room = w->w - 3, cx = w->x + w->w / 2;
	bool pool = s->nsubs > 0;
	text_colour_on(cr, block_colour(s->block, pool));
	if (pool) {
		snprintf(line, sizeof line, "%s  %s", name, size);
		wsp_text_fit(cr, 6.5, false, wsp_text_width(cr, 6.5, false, line) <= room ? line : name, room, fit, sizeof fit);
		if (strlen(fit) >= 6 || !strcmp(fit, name))
			wsp_text(cr, cx, w->y + POOL_BAND - 2, 6.5, false, WSP_CENTER, fit);
		return;
	}
	bool size_fits = wsp_text_width(cr, 7, false, size) <= room;
	wsp_text_fit(cr, 7.5, true, name, room, fit, sizeof fit);
	bool name_fits = strlen(fit) >= 6 || (*fit && !strcmp(fit, name));
	if (name_fits && size_fits) {
		wsp_text(cr, cx, w->y + 12.5, 7.5, true, WSP_CENTER, fit);
		wsp_text(cr, cx, w->y + 23, 7, false, WSP_CENTER, size);
	} else if (size_fits) {
		wsp_text(cr, cx, w->y + ROW_H / 2 + 2.5, 7, false, WSP_CENTER, size);
	}
}

static void zigzag(cairo_t *cr, double x, double y)
{
	cairo_move_to(cr, x, y - 2);
	for (int i = 0; i <= 6; i++)
		cairo_line_to(cr, x + (i % 2 ? 2.5 : -2.5), y + (ROW_H + 4) * i / 6.0 - 2);
}

static void draw_breaks(const struct map *mp)
{
	cairo_t *cr = mp->cr;
	struct piece p[MAX_ROWS + 1];
	char size[32];
	for (size_t i = 0; i < mp->nsegs; i++) {
		const struct seg *s = &mp->segs[i];
		if (s->type != SEG_BREAK)
			continue;
		size_t n = pieces(mp, s->p0, s->p1, p);
		for (size_t k = 0; k < n; k++) {
			cairo_set_source_rgb(cr, 1, 1, 1);
			cairo_rectangle(cr, p[k].x, p[k].y - 2, p[k].w, ROW_H + 4);
			cairo_fill(cr);
		}
		if (!n)
			continue;
		const struct piece *w = &p[widest(p, n)];
		cairo_set_source_rgb(cr, 0.45, 0.45, 0.45);
		cairo_set_line_width(cr, 0.8);
		zigzag(cr, p[0].x + 3, p[0].y);
		zigzag(cr, p[n - 1].x + p[n - 1].w - 3, p[n - 1].y);
		cairo_stroke(cr);
		wsp_human_bytes(size, sizeof size, s->bytes);
		if (wsp_text_width(cr, 6.5, false, size) + 10 <= w->w) {
			wsp_text(cr, w->x + w->w / 2, w->y + 12, 6.5, false, WSP_CENTER, "gap");
			wsp_text(cr, w->x + w->w / 2, w->y + 21, 6.5, false, WSP_CENTER, size);
		}
	}
}

/* Hole sizes where they fit; the largest hole outlined and named. */
static void draw_holes(const struct map *mp)
{
	cairo_t *cr = mp->cr;
	struct piece p[MAX_ROWS + 1];
	char size[32], text[64];
	for (size_t i = 0; i < mp->nsegs; i++) {
		const struct seg *s = &mp->segs[i];
		if (s->type != SEG_GAP || s->bytes < mp->m->slack)
			continue;
		size_t n = pieces(mp, s->p0, s->p1, p);
		for (size_t k = 0; k < n; k++)
			if (p[k].w >= 1.5) /* narrower, the rows' hole colour says it */
				hatch(cr, p[k].x, p[k].y, p[k].w, ROW_H);
		if (!n)
			continue;
		const struct piece *w = &p[widest(p, n)];
		bool largest = s->bytes == mp->m->largest_hole && s->addr == mp->m->largest_hole_addr;
		wsp_human_bytes(size, sizeof size, s->bytes);
		if (largest) {
			wsp_set_colour(cr, WSP_C_ACCENT, 1);
			cairo_set_line_width(cr, 1.4);
			for (size_t k = 0; k < n; k++)
				cairo_rectangle(cr, p[k].x + 0.7, p[k].y + 0.7, fmax(p[k].w - 1.4, 0.5), ROW_H - 1.4);
			cairo_stroke(cr);
			snprintf(text, sizeof text, "largest hole %s", size);
			const char *t = wsp_text_width(cr, 7, true, text) + 8 <= w->w ? text
					: wsp_text_width(cr, 7, true, size) + 8 <= w->w ? size : NULL;
			if (t) {
				patch_text(cr, w->x + w->w / 2, w->y + ROW_H / 2 + 2.5, 7, true, t, WSP_C_ACCENT);
			} else { /* too narrow to write in: pointed at from above the row */
				double cx = w->x + w->w / 2, tw = wsp_text_width(cr, 7, true, text);
				double tx = fmin(fmax(cx, mp->x + tw / 2 + 2), mp->x + mp->w - tw / 2 - 2);
				cairo_move_to(cr, cx - 3, w->y - 4);
				cairo_line_to(cr, cx + 3, w->y - 4);
				cairo_line_to(cr, cx, w->y);
				cairo_close_path(cr);
				cairo_fill(cr);
				patch_text(cr, tx, w->y - 5, 7, true, text, WSP_C_ACCENT);
			}
		} else if (wsp_text_width(cr, 6.5, false, size) + 8 <= w->w) {
			patch_text(cr, w->x + w->w / 2, w->y + ROW_H / 2 + 2.5, 6.5, false, size, WSP_C_TEXT);
		}
	}
}

static void draw_map(struct map *mp)
{
	draw_rows(mp);
	draw_dense(mp);
	fill_blocks(mp, WSP_C_IN_USE);
	fill_blocks(mp, WSP_C_COLLECTABLE);
	fill_blocks(mp, WSP_C_POOL);
	for (size_t i = 0; i < mp->nsegs; i++)
		if (mp->segs[i].type == SEG_BLOCK && mp->segs[i].nsubs && !narrow(&mp->segs[i]))
			draw_subs(mp, &mp->segs[i]);
	draw_holes(mp);
	draw_breaks(mp);
	for (size_t i = 0; i < mp->nsegs; i++)
		if (mp->segs[i].type == SEG_BLOCK)
			label_block(mp, &mp->segs[i]);
}

/* ---- the page ----------------------------------------------------------- */

struct tile {
	const char *label;
	char value[48], detail[96];
};

/* The figures, in a row of tiles. @return the y below them. */
static double draw_tiles(cairo_t *cr, const struct wsp_memory *m, double y)
{
	struct tile t[9];
	size_t n = 0;
	char a[32], b[32];
	t[n] = (struct tile){ .label = "address span" };
	wsp_human_bytes(t[n].value, sizeof t[n].value, m->hi - m->lo);
	if (m->n)
		snprintf(t[n].detail, sizeof t->detail, "0x%llx - 0x%llx", (unsigned long long)m->lo,
			 (unsigned long long)m->hi);
	else
		snprintf(t[n].detail, sizeof t->detail, "nothing live");
	n++;
	const char *est = m->estimated ? "~" : "";
	t[n] = (struct tile){ .label = "live" };
	wsp_estimate_text(t[n].value, sizeof t[n].value, est, wsp_human_bytes(t[n].value, sizeof t[n].value, m->live_bytes));
	snprintf(t[n++].detail, sizeof t->detail, "in %s", wsp_counted(a, sizeof a, m->n, m->estimated ? "sampled block" : "block"));
	t[n] = (struct tile){ .label = "free in holes" };
	wsp_human_bytes(t[n].value, sizeof t[n].value, m->free_bytes);
	snprintf(t[n++].detail, sizeof t->detail, "in %s", wsp_counted(a, sizeof a, m->holes, "hole"));
	t[n] = (struct tile){ .label = "largest hole" };
	if (m->largest_hole) {
		wsp_human_bytes(t[n].value, sizeof t[n].value, m->largest_hole);
		snprintf(t[n++].detail, sizeof t->detail, "at 0x%llx", (unsigned long long)m->largest_hole_addr);
	} else {
		snprintf(t[n].value, sizeof t->value, "none");
		snprintf(t[n++].detail, sizeof t->detail, "no gap of %s or more", wsp_human_bytes(a, sizeof a, m->slack));
	}
	t[n] = (struct tile){ .label = "fragmentation" };
	wsp_memory_fragmentation(m, t[n].value, sizeof t->value);
	snprintf(t[n++].detail, sizeof t->detail, "1 - largest hole / free");
	t[n] = (struct tile){ .label = "collectable" };
	wsp_estimate_text(t[n].value, sizeof t[n].value, est,
			  wsp_human_bytes(t[n].value, sizeof t[n].value, m->collectable_bytes));
	snprintf(t[n++].detail, sizeof t->detail, "%s%s in use", est,
		 wsp_human_bytes(a, sizeof a, m->live_bytes - m->collectable_bytes));
	if (m->pools) {
		t[n] = (struct tile){ .label = "in pools" };
		wsp_human_bytes(t[n].value, sizeof t[n].value, m->pooled_bytes);
		snprintf(t[n++].detail, sizeof t->detail, "%s in %s", wsp_counted(a, sizeof a, m->nsubs, "sub-allocation"),
			 wsp_counted(b, sizeof b, m->pools, "pool"));
	}
	if (m->breaks) {
		t[n] = (struct tile){ .label = "breaks" };
		wsp_human_bytes(t[n].value, sizeof t[n].value, m->break_total);
		snprintf(t[n++].detail, sizeof t->detail, "left out in %s", wsp_counted(a, sizeof a, m->breaks, "gap"));
	}
	if (m->sampled) {
		t[n] = (struct tile){ .label = "free on the device" };
		wsp_human_bytes(t[n].value, sizeof t[n].value, m->device_free);
		snprintf(t[n++].detail, sizeof t->detail, "of %s, last sample", wsp_human_bytes(a, sizeof a, m->device_total));
	}
	/* Each tile as wide as its words, the room left shared out. */
	double w[9], sum = 0;
	for (size_t i = 0; i < n; i++) {
		w[i] = fmax(fmax(wsp_text_width(cr, 7.5, false, t[i].label), wsp_text_width(cr, 13, true, t[i].value)),
			    wsp_text_width(cr, 7, false, t[i].detail)) + 12;
		sum += w[i];
	}
	double room = WSP_PAGE_W - 2 * WSP_MARGIN, x = WSP_MARGIN;
	char fit[128];
	for (size_t i = 0; i < n; i++) {
		double tw = sum > room ? w[i] * room / sum : w[i] + (room - sum) / (double)n;
		cairo_set_source_rgb(cr, 0.40, 0.40, 0.40);
		wsp_text(cr, x, y + 8, 7.5, false, WSP_LEFT, wsp_text_fit(cr, 7.5, false, t[i].label, tw - 8, fit, sizeof fit));
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		wsp_text(cr, x, y + 23, 13, true, WSP_LEFT, wsp_text_fit(cr, 13, true, t[i].value, tw - 8, fit, sizeof fit));
		cairo_set_source_rgb(cr, 0.40, 0.40, 0.40);
		wsp_text(cr, x, y + 33, 7, false, WSP_LEFT, wsp_text_fit(cr, 7, false, t[i].detail, tw - 8, fit, sizeof fit));
		x += tw;
	}
	return y + 42;
}

struct legend_item {
	const char *label;
	enum { KEY_FILL, KEY_HOLE, KEY_LARGEST, KEY_BREAK } key;
	struct wsp_rgb c;
};

/* What the colours and marks mean, on one line, and the scale. */
static void draw_legend(cairo_t *cr, const struct map *mp, bool failed, double y)
{
	const struct wsp_memory *m = mp->m;
	struct legend_item items[7];
	size_t n = 0;
	items[n++] = (struct legend_item){ "in use", KEY_FILL, WSP_C_IN_USE };
	items[n++] = (struct legend_item){ "collectable", KEY_FILL, WSP_C_COLLECTABLE };
	if (m->pools)
		items[n++] = (struct legend_item){ "pool (its sub-allocations inside)", KEY_FILL, WSP_C_POOL };
	items[n++] = (struct legend_item){ "hole", KEY_HOLE, WSP_C_HOLE };
	items[n++] = (struct legend_item){ "largest hole", KEY_LARGEST, WSP_C_ACCENT };
	if (m->breaks)
		items[n++] = (struct legend_item){ "break: a gap left out", KEY_BREAK, WSP_C_TEXT };
	if (failed)
		items[n++] = (struct legend_item){ "the failed request", KEY_FILL, WSP_C_FAIL };
	double x = WSP_MARGIN;
	for (size_t i = 0; i < n; i++) {
		if (items[i].key == KEY_HOLE || items[i].key == KEY_LARGEST)
			hatch(cr, x, y - 7, 16, 9);
		if (items[i].key == KEY_FILL) {
			wsp_set_colour(cr, items[i].c, 1);
			cairo_rectangle(cr, x, y - 7, 16, 9);
			cairo_fill(cr);
		} else if (items[i].key == KEY_LARGEST) {
			wsp_set_colour(cr, items[i].c, 1);
			cairo_set_line_width(cr, 1.4);
			cairo_rectangle(cr, x + 0.7, y - 6.3, 14.6, 7.6);
			cairo_stroke(cr);
		} else if (items[i].key == KEY_BREAK) {
			cairo_set_source_rgb(cr, 0.45, 0.45, 0.45);
			cairo_set_line_width(cr, 0.8);
			cairo_move_to(cr, x + 5, y - 8);
			cairo_line_to(cr, x + 3, y - 4);
			cairo_line_to(cr, x + 5, y);
			cairo_line_to(cr, x + 3, y + 3);
			cairo_move_to(cr, x + 13, y - 8);
			cairo_line_to(cr, x + 11, y - 4);
			cairo_line_to(cr, x + 13, y);
			cairo_line_to(cr, x + 11, y + 3);
			cairo_stroke(cr);
		}
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		wsp_text(cr, x + 20, y + 1, 8, false, WSP_LEFT, items[i].label);
		x += 20 + wsp_text_width(cr, 8, false, items[i].label) + 14;
	}
	if (!m->n)
		return;
	char row[32], text[128];
	snprintf(text, sizeof text, "one row: %s; blocks under %.0f pt and breaks are widened",
		 wsp_unit_format(row, sizeof row, mp->scale > 0 ? mp->w / mp->scale : 0, WSP_UNIT_BYTES), MIN_BLOCK_W);
	cairo_set_source_rgb(cr, 0.40, 0.40, 0.40);
	if (x + wsp_text_width(cr, 7.5, false, text) <= WSP_PAGE_W - WSP_MARGIN)
		wsp_text(cr, WSP_PAGE_W - WSP_MARGIN, y + 1, 7.5, false, WSP_RIGHT, text);
}

/* One bar of the request panel: a label, the bar to the panel's scale,
 * its size after it. */
static void request_bar(cairo_t *cr, double x, double y, double w, const char *label, uint64_t bytes,
			struct wsp_rgb colour, bool hole)
{
	char size[32];
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	wsp_text(cr, x - 5, y + 11, 8, false, WSP_RIGHT, label);
	if (bytes && hole) {
		hatch(cr, x, y, w, 15);
		wsp_set_colour(cr, colour, 1);
		cairo_set_line_width(cr, 1.4);
		cairo_rectangle(cr, x + 0.7, y + 0.7, fmax(w - 1.4, 0.3), 13.6);
		cairo_stroke(cr);
	} else if (bytes) {
		wsp_set_colour(cr, colour, 1);
		cairo_rectangle(cr, x, y, w, 15);
		cairo_fill(cr);
	}
	wsp_set_colour(cr, colour, 1);
	wsp_text(cr, x + (bytes ? w : 0) + 5, y + 11, 8, true, WSP_LEFT,
		 bytes ? wsp_human_bytes(size, sizeof size, bytes) : "none");
}

/* A bar's length: to scale, and visible however small. */
static double bar_w(uint64_t bytes, double scale)
{
	return bytes ? fmax((double)bytes * scale, 1.5) : 0;
}

/* Lines of the request panel, under its title. */
static size_t request_bars(const struct wsp_memory *m)
{
	return m->sampled ? 3 : 2;
}

#define REQUEST_BAR 20.0

/* The failed request against the largest hole (and, for a device, the
 * free memory it reported), to one scale. */
static void draw_request(cairo_t *cr, const struct wsp_state *st, const struct wsp_memory *m, double y)
{
	const struct wsp_state_failure *f = &st->failure;
	char req[32], hole[32], free_b[32], holes[48], text[512], fit[512];
	wsp_human_bytes(req, sizeof req, f->size);
	wsp_human_bytes(hole, sizeof hole, m->largest_hole);
	wsp_human_bytes(free_b, sizeof free_b, m->free_bytes);
	wsp_set_colour(cr, WSP_C_FAIL, 1);
	snprintf(text, sizeof text, "requested %s, largest hole %s", req, m->largest_hole ? hole : "none");
	wsp_text(cr, WSP_MARGIN, y + 10, 10.5, true, WSP_LEFT, text);
	double tw = wsp_text_width(cr, 10.5, true, text);
	cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
	snprintf(text, sizeof text, "%s at %.3f s; %s free in %s: %s", wsp_state_failed_call(f), (double)f->time_ns / 1e9,
		 free_b, wsp_counted(holes, sizeof holes, m->holes, "hole"), wsp_memory_verdict(m, f->size));
	wsp_text(cr, WSP_MARGIN + tw + 10, y + 10, 8, false, WSP_LEFT,
		 wsp_text_fit(cr, 8, false, text, WSP_PAGE_W - 2 * WSP_MARGIN - tw - 10, fit, sizeof fit));
	double x = WSP_MARGIN + ADDR_W, w = WSP_PAGE_W - WSP_MARGIN - x - 60;
	uint64_t big = f->size > m->largest_hole ? f->size : m->largest_hole;
	if (m->sampled && m->device_free > big)
		big = m->device_free;
	double scale = big ? w / (double)big : 0;
	double by = y + 20;
	request_bar(cr, x, by, bar_w(m->largest_hole, scale), "largest hole", m->largest_hole, WSP_C_ACCENT, true);
	request_bar(cr, x, by + REQUEST_BAR, bar_w(f->size, scale), "requested", f->size, WSP_C_FAIL, false);
	if (m->sampled)
		request_bar(cr, x, by + 2 * REQUEST_BAR, bar_w(m->device_free, scale), "free on the device", m->device_free,
			    WSP_C_DEVICE_FREE, false);
	cairo_set_source_rgb(cr, 0.40, 0.40, 0.40);
	wsp_text(cr, WSP_PAGE_W - WSP_MARGIN, by + (double)request_bars(m) * REQUEST_BAR + 7, 7, false, WSP_RIGHT,
		 "the bars to one scale");
}

static void draw_page(struct wsp_doc *doc, struct wsp_state *st, const struct wsp_memory *m)
{
	cairo_t *cr = wsp_doc_page(doc);
	const wsprof_process *p = wsprof_trace_process(st->l.trace);
	char name[32], title[512], subtitle[1024];
	const char *what = m ? wsp_memory_name(m, name, sizeof name) : st->kind >= 0 ? wsprof_kind_name((unsigned)st->kind)
											 : "memory";
	snprintf(title, sizeof title, "Memory map: %s at %s", what, st->what);
	char sampled[128]; /* first: a long command line may not fit */
	wsp_sampled_text(&st->l, sampled, sizeof sampled);
	snprintf(subtitle, sizeof subtitle, "%s%s%s (pid %u)  -  %s  -  %.3f s of %.3f s%s", sampled, sampled[0] ? "  -  " : "",
		 p->cmdline[0] ? p->cmdline : p->exe, p->pid, st->l.path, (double)st->time_ns / 1e9, (double)st->end_ns / 1e9,
		 st->l.status.complete ? "" : "  -  trace cut short: this covers what was read");
	double y = wsp_page_heading(cr, title, subtitle);
	if (!m) {
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		char text[128];
		snprintf(text, sizeof text, "No block of %s was live at this moment.", what);
		wsp_text(cr, WSP_MARGIN, y + 20, 10, false, WSP_LEFT, text);
		return;
	}
	bool failed = wsp_memory_failed(st, m);
	y = draw_tiles(cr, m, y);
	struct map mp = { .cr = cr, .st = st, .m = m, .x = WSP_MARGIN + ADDR_W, .w = WSP_PAGE_W - 2 * WSP_MARGIN - ADDR_W };
	if (make_segs(&mp)) {
		fprintf(stderr, "wsprof: out of memory\n");
		free(mp.segs);
		return;
	}
	double bottom = WSP_PAGE_H - WSP_MARGIN - (failed ? 32 + (double)request_bars(m) * REQUEST_BAR : 0);
	mp.y = y + 22;
	size_t rows = (size_t)((bottom - mp.y + ROW_GAP - 10) / (ROW_H + ROW_GAP));
	lay_out(&mp, rows < 1 ? 1 : rows > MAX_ROWS ? MAX_ROWS : rows);
	draw_legend(cr, &mp, failed, y + 6);
	if (m->n) {
		draw_map(&mp);
	} else {
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		wsp_text(cr, WSP_MARGIN, mp.y + 14, 10, false, WSP_LEFT, "Nothing of this memory was live at this moment.");
	}
	if (failed) /* under the map, or at the foot of the page when the map fills it */
		draw_request(cr, st, m, fmin(bottom + 8, mp.y + (double)rows_used(&mp) * (ROW_H + ROW_GAP) + 14));
	free(mp.segs);
}

size_t wsp_statemap_draw_state(struct wsp_doc *doc, struct wsp_state *st, const struct wsp_memory *m, size_t n)
{
	if (!n) {
		draw_page(doc, st, NULL);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		draw_page(doc, st, &m[i]);
	return n;
}

int wsp_statemap_draw_memories(struct wsp_doc *doc, struct wsp_state *st, int kind)
{
	struct wsp_memory *m;
	size_t n;
	if (wsp_memories(st, kind, &m, &n)) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	wsp_statemap_draw_state(doc, st, m, n);
	wsp_memories_free(m, n);
	return 0;
}

int wsp_statemap_draw(struct wsp_doc *doc, const char *trace_path, const char *at, int kind)
{
	struct wsp_state st;
	int rc = wsp_state_open(trace_path, at, kind, &st);
	if (rc)
		return rc;
	rc = wsp_statemap_draw_memories(doc, &st, kind);
	wsp_state_free(&st);
	return rc;
}
