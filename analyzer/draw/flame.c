/*
 * flame.c - a flame graph's stack tree (compute/flametree.c) drawn: as a
 * self-contained SVG, or on a page of a document with cairo (flame.h).
 * The two pictures share one layout: the same walk over the same boxes,
 * the same colours. The walk uses explicit stacks: call stacks thousands
 * of frames deep (runaway recursion) must not overflow ours.
 */
#include "flame.h"
#include "flame_internal.h"
#include "plot.h"
#include "units.h"

#include "grow.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- Numbers for people --------------------------------------------- */

/* "1.50 MiB, 37.5%" or "12,345 allocations, 37.5%" */
static void format_value(char *buf, size_t cap, uint64_t value, uint64_t total, const char *unit)
{
	char number[64], share[16];
	if (!unit || !strcmp(unit, "bytes")) {
		wsp_human_bytes(number, sizeof number, value);
	} else {
		char digits[32];
		wsp_group_digits(digits, sizeof digits, value);
		size_t len = strlen(unit);
		/* "1 allocation", not "1 allocations" */
		if (value == 1 && len > 1 && unit[len - 1] == 's')
			len--;
		snprintf(number, sizeof number, "%s %.*s", digits, (int)len, unit);
	}
	double pct = 100.0 * (double)value / (double)total;
	if (pct < 0.05)
		snprintf(share, sizeof share, "<0.1%%");
	else
		snprintf(share, sizeof share, "%.1f%%", pct);
	snprintf(buf, cap, "%s, %s", number, share);
}

/* A box's value as its tooltip and the page's list show it: in a
 * differential graph also the base run's figure and the change
 * ("16.0 MiB, 66.7% (base 8.00 MiB, +8.00 MiB)"). */
static void format_node(char *buf, size_t cap, const struct wsp_flame *f, uint32_t node, const char *unit)
{
	const struct node *n = &f->nodes[node];
	format_value(buf, cap, n->total, f->nodes[ROOT].total, unit);
	if (!f->diff)
		return;
	bool bytes = !unit || !strcmp(unit, "bytes");
	char base[32], change[32];
	if (bytes)
		wsp_human_bytes(base, sizeof base, n->base);
	else
		wsp_group_digits(base, sizeof base, n->base);
	int64_t d = (int64_t)(n->total - n->base);
	if (bytes)
		wsp_human_change(change, sizeof change, d);
	else
		wsp_count_change(change, sizeof change, d);
	size_t len = strlen(buf);
	snprintf(buf + len, cap - len, " (base %s, %s)", base, change);
}

/* ---- XML text ------------------------------------------------------- */

/* The length of the UTF-8 character at s, and whether XML can carry it;
 * a byte that starts no valid character counts as one character of its own. */
static size_t utf8_char(const char *str, bool *ok)
{
	const unsigned char *s = (const unsigned char *)str;
	*ok = true;
	if (s[0] < 0x80)
		return 1;
	size_t len = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
	uint32_t cp = len ? s[0] & (0x7f >> len) : 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			len = 0;
			break;
		}
		cp = cp << 6 | (s[i] & 0x3f);
	}
	static const uint32_t least[] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (!len || cp < least[len] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff || cp == 0xfffe || cp == 0xffff) {
		*ok = false;
		return 1;
	}
	return len;
}

static size_t utf8_count(const char *s)
{
	size_t n = 0;
	bool ok;
	for (; *s; n++)
		s += utf8_char(s, &ok);
	return n;
}

/* At most `chars` characters of s as XML character data (also good inside
 * an attribute): markup escaped, control characters as spaces, bytes that
 * are not UTF-8 as U+FFFD. */
static void put_xml(FILE *out, const char *s, size_t chars)
{
	for (; *s && chars; chars--) {
		bool ok;
		size_t len = utf8_char(s, &ok);
		unsigned char c = (unsigned char)*s;
		if (!ok)
			fputs("\xef\xbf\xbd", out);
		else if (c == '&')
			fputs("&amp;", out);
		else if (c == '<')
			fputs("&lt;", out);
		else if (c == '>')
			fputs("&gt;", out);
		else if (c == '"')
			fputs("&quot;", out);
		else if (c == '\'')
			fputs("&apos;", out);
		else if (c < 0x20 || c == 0x7f)
			putc(' ', out);
		else
			fwrite(s, 1, len, out);
		s += len;
	}
}

/* SVG numbers must use '.' whatever LC_NUMERIC says, so no %f here. */
static void put_px(FILE *out, double v)
{
	unsigned long long hundredths = (unsigned long long)(v * 100 + 0.5);
	fprintf(out, "%llu.%02llu", hundredths / 100, hundredths % 100);
}

/* ---- Layout: what both pictures walk -------------------------------- */

/* The tree laid out over a width: boxes as wide as their values, those
 * narrower than min_box left out, and the depth of the deepest drawn. */
struct layout {
	const struct wsp_flame *f;
	const struct tree_index *ix;
	double scale;   /* width per unit of value */
	double min_box;
	unsigned max_depth;
};

typedef void (*visit_fn)(void *ctx, uint32_t node, unsigned depth, uint64_t offset);

static bool layout_visible(const struct layout *lay, uint32_t node)
{
	return (double)lay->f->nodes[node].total * lay->scale >= lay->min_box;
}

struct walk_frame {
	uint32_t node, next; /* next: the next child's place in ix->kids */
	uint64_t offset;     /* value left of the next child */
};

/* Pre-order over the boxes wide enough to draw; a child is never wider
 * than its parent, so a box too narrow hides its whole subtree. */
static int layout_walk(const struct layout *lay, visit_fn visit, void *ctx)
{
	const struct tree_index *ix = lay->ix;
	struct walk_frame *stack = NULL;
	size_t cap = 0, depth = 0;
	if (wsp_grow(&stack, &cap, 1, sizeof *stack))
		return -ENOMEM;
	visit(ctx, ROOT, 0, 0);
	stack[depth++] = (struct walk_frame){ ROOT, ix->first[ROOT], 0 };
	while (depth) {
		struct walk_frame *top = &stack[depth - 1];
		if (top->next == ix->first[top->node + 1]) {
			depth--;
			continue;
		}
		uint32_t kid = ix->kids[top->next++];
		uint64_t offset = top->offset;
		top->offset += lay->f->nodes[kid].total;
		if (!layout_visible(lay, kid))
			continue;
		visit(ctx, kid, (unsigned)depth, offset);
		if (wsp_grow(&stack, &cap, depth + 1, sizeof *stack)) {
			free(stack);
			return -ENOMEM;
		}
		stack[depth++] = (struct walk_frame){ kid, ix->first[kid], offset };
	}
	free(stack);
	return 0;
}

static void layout_note_depth(void *ctx, uint32_t node, unsigned depth, uint64_t offset)
{
	struct layout *lay = ctx;
	(void)node, (void)offset;
	if (depth > lay->max_depth)
		lay->max_depth = depth;
}

/* Lay a tree with a nonzero total out over width; ix is built here and
 * left for the caller to free. */
static int layout_init(struct layout *lay, const struct wsp_flame *f, struct tree_index *ix, double width,
		       double min_box)
{
	int err = wsp_flame_index_build(f, ix);
	if (err)
		return err;
	*lay = (struct layout){ .f = f, .ix = ix, .scale = width / (double)f->nodes[ROOT].total, .min_box = min_box };
	err = layout_walk(lay, layout_note_depth, lay);
	if (err)
		wsp_flame_index_free(ix);
	return err;
}

static const char *node_label(const struct wsp_flame *f, uint32_t node)
{
	return node == ROOT ? "all" : wsp_flame_label_text(f, node);
}

/* A differential graph's box: light grey when it stayed the same, redder
 * as it grew, bluer as it shrank, by its change against the larger of its
 * two values (a box new in this run is full red), on a square-root scale
 * so that a change of a few percent already shows. */
static void diff_colour(const struct node *n, unsigned rgb[3])
{
	uint64_t hi = n->total > n->base ? n->total : n->base;
	double change = hi ? ((double)n->total - (double)n->base) / (double)hi : 0;
	double t = sqrt(change < 0 ? -change : change);
	unsigned strong = (unsigned)(225 + 25 * t + 0.5), weak = (unsigned)(225 - 175 * t + 0.5);
	if (change >= 0)
		rgb[0] = strong, rgb[1] = weak, rgb[2] = weak;
	else
		rgb[0] = weak, rgb[1] = weak, rgb[2] = strong;
}

/* flamegraph.pl's "hot" palette, from the label's hash; lighter in green
 * than the original so that black text stays readable on every box.
 * Python frames ("py ..." labels) are blue instead. */
static void node_colour(const struct wsp_flame *f, uint32_t node, unsigned rgb[3])
{
	if (f->diff) {
		diff_colour(&f->nodes[node], rgb);
		return;
	}
	uint64_t hash = node == ROOT ? wsp_flame_hash_text("all") : f->labels[f->nodes[node].label].hash;
	if (node != ROOT && !strncmp(wsp_flame_label_text(f, node), "py ", 3)) {
		rgb[0] = 90 + (unsigned)(hash % 60);
		rgb[1] = 170 + (unsigned)((hash >> 16) % 50);
		rgb[2] = 215 + (unsigned)((hash >> 32) % 41);
		return;
	}
	rgb[0] = 205 + (unsigned)(hash % 51);
	rgb[1] = 80 + (unsigned)((hash >> 16) % 151);
	rgb[2] = (unsigned)((hash >> 32) % 56);
}

/* ---- SVG ------------------------------------------------------------ */

enum {
	SVG_DEFAULT_WIDTH = 1200,
	SVG_MIN_WIDTH = 200,
	SVG_PAD = 10,       /* left and right of the graph, below it */
	SVG_ROW = 16,       /* one frame's row; boxes are a pixel shorter */
	SVG_TITLE_Y = 24,
	SVG_SUBTITLE_Y = 44,
	SVG_CHAR_PX = 7,    /* average width of a character at 12 px */
	SVG_TEXT_INSET = 3, /* from the box's left edge to its label */
	SVG_MIN_CHARS = 3,  /* narrower boxes go unlabelled */
};
#define SVG_MIN_BOX_PX 0.1

struct svg {
	struct layout lay;
	const char *unit;
	FILE *out;
	unsigned width, top;
};

static void svg_frame(void *ctx, uint32_t node, unsigned depth, uint64_t offset)
{
	struct svg *s = ctx;
	const struct wsp_flame *f = s->lay.f;
	const char *label = node_label(f, node);
	double x = SVG_PAD + (double)offset * s->lay.scale, w = (double)f->nodes[node].total * s->lay.scale;
	unsigned y = s->top + (s->lay.max_depth - depth) * SVG_ROW, rgb[3];
	char value[160];
	format_node(value, sizeof value, f, node, s->unit);
	node_colour(f, node, rgb);

	fputs("<g><title>", s->out);
	put_xml(s->out, label, SIZE_MAX);
	fputs(" \xe2\x80\x94 ", s->out);
	put_xml(s->out, value, SIZE_MAX);
	fputs("</title><rect x=\"", s->out);
	put_px(s->out, x);
	fprintf(s->out, "\" y=\"%u\" width=\"", y);
	put_px(s->out, w);
	fprintf(s->out, "\" height=\"%u\" rx=\"2\" ry=\"2\" fill=\"rgb(%u,%u,%u)\"/>", SVG_ROW - 1, rgb[0], rgb[1], rgb[2]);

	double room = (w - SVG_TEXT_INSET) / SVG_CHAR_PX;
	size_t fit = room > 0 ? (size_t)room : 0, chars = utf8_count(label);
	if (fit >= SVG_MIN_CHARS) {
		fputs("<text x=\"", s->out);
		put_px(s->out, x + SVG_TEXT_INSET);
		fprintf(s->out, "\" y=\"%u\">", y + 12);
		put_xml(s->out, label, chars <= fit ? chars : fit - 2);
		if (chars > fit)
			fputs("..", s->out);
		fputs("</text>", s->out);
	}
	fputs("</g>\n", s->out);
}

static void svg_open(const struct svg *s, const struct wsp_flame_svg_options *opt, unsigned height)
{
	FILE *out = s->out;
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		     "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%u\" height=\"%u\" "
		     "viewBox=\"0 0 %u %u\" font-family=\"Verdana, DejaVu Sans, sans-serif\" font-size=\"12\">\n"
		     "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"#f8f8f2\"/>\n",
		s->width, height, s->width, height, s->width, height);
	fprintf(out, "<text x=\"%u\" y=\"%u\" text-anchor=\"middle\" font-size=\"17\">", s->width / 2, SVG_TITLE_Y);
	put_xml(out, opt && opt->title ? opt->title : "Flame graph", SIZE_MAX);
	fputs("</text>\n", out);
	if (opt && opt->subtitle) {
		fprintf(out, "<text x=\"%u\" y=\"%u\" text-anchor=\"middle\" fill=\"#444\">", s->width / 2, SVG_SUBTITLE_Y);
		put_xml(out, opt->subtitle, SIZE_MAX);
		fputs("</text>\n", out);
	}
}

int wsp_flame_write_svg(const struct wsp_flame *f, const struct wsp_flame_svg_options *opt, FILE *out)
{
	struct svg s = {
		.unit = opt ? opt->unit : NULL,
		.out = out,
		.width = opt && opt->width ? opt->width : SVG_DEFAULT_WIDTH,
		.top = (opt && opt->subtitle ? SVG_SUBTITLE_Y : SVG_TITLE_Y) + SVG_ROW,
	};
	if (s.width < SVG_MIN_WIDTH)
		s.width = SVG_MIN_WIDTH;
	if (!f->nodes[ROOT].total) {
		svg_open(&s, opt, s.top + 3 * SVG_ROW);
		fprintf(out, "<text x=\"%u\" y=\"%u\" text-anchor=\"middle\">Nothing to show: no stack has a nonzero value.</text>\n"
			     "</svg>\n", s.width / 2, s.top + 2 * SVG_ROW);
		return wsp_flame_finish(out);
	}

	struct tree_index ix;
	int err = layout_init(&s.lay, f, &ix, (double)(s.width - 2 * SVG_PAD), SVG_MIN_BOX_PX);
	if (err)
		return err;
	svg_open(&s, opt, s.top + (s.lay.max_depth + 1) * SVG_ROW + SVG_PAD);
	err = layout_walk(&s.lay, svg_frame, &s);
	fputs("</svg>\n", out);
	wsp_flame_index_free(&ix);
	return err ? err : wsp_flame_finish(out);
}

/* ---- A page of a document (cairo) ----------------------------------- */

#define PAGE_ROW_MAX 16.0  /* points; boxes are a point shorter */
#define PAGE_ROW_MIN 2.5   /* deeper stacks are cut to what fits */
#define PAGE_LABEL_MIN 7.0 /* rows lower than this go unlabelled */
#define PAGE_MIN_BOX 0.1
#define PAGE_TEXT_INSET 2.5
#define PAGE_LABEL_CAP 512
#define PAGE_NOTE 18.0     /* below the graph: how to read it */
#define PAGE_LIST_ROW 10.5 /* a line of the list of names that did not fit */

struct page {
	struct layout lay;
	cairo_t *cr;
	double bottom, row, font;
	unsigned depths;   /* rows drawn: deeper frames are cut */
	/* Boxes whose names did not fit: a page has no tooltips, so the
	 * room below the graph lists them. */
	struct cut {
		uint64_t total;
		const char *label;
		uint32_t node;
	} *cut;
	size_t ncut, cut_cap;
	int err;
};

/* At most max_chars characters of s that cairo can show: bytes that are
 * not UTF-8 become U+FFFD (cairo refuses a string with one, and stops
 * drawing), control characters spaces. @return whether all of s is in buf. */
static bool page_clean(char *buf, size_t cap, const char *s, size_t max_chars)
{
	size_t o = 0;
	for (; *s && max_chars; max_chars--) {
		bool ok;
		size_t len = utf8_char(s, &ok);
		const char *piece = ok ? s : "\xef\xbf\xbd";
		size_t plen = ok ? len : 3;
		if (o + plen + 1 > cap)
			break;
		if (ok && len == 1 && ((unsigned char)*s < 0x20 || *s == 0x7f))
			buf[o++] = ' ';
		else
			memcpy(buf + o, piece, plen), o += plen;
		s += len;
	}
	buf[o] = 0;
	return !*s;
}

static void page_note_cut(struct page *pg, uint32_t node)
{
	if (!pg->err && !(pg->err = wsp_grow(&pg->cut, &pg->cut_cap, pg->ncut + 1, sizeof *pg->cut)))
		pg->cut[pg->ncut++] = (struct cut){ pg->lay.f->nodes[node].total, node_label(pg->lay.f, node), node };
}

/* The name of a box in it, if it fits whole or cut; @return whether all of it shows. */
static bool page_label(struct page *pg, uint32_t node, double x, double y, double w)
{
	double room = w - 2 * PAGE_TEXT_INSET;
	if (pg->row < PAGE_LABEL_MIN || room < 3 * pg->font * 0.6)
		return false;
	/* No glyph of DejaVu Sans is narrower than a quarter of its size:
	 * more characters than that cannot fit, so no need to measure them. */
	const char *label = node_label(pg->lay.f, node);
	char clean[PAGE_LABEL_CAP], fit[PAGE_LABEL_CAP];
	bool whole = page_clean(clean, sizeof clean, label, (size_t)(room / (pg->font * 0.25)) + 1);
	wsp_text_fit(pg->cr, pg->font, false, clean, room, fit, sizeof fit);
	if (!*fit)
		return false;
	wsp_set_colour(pg->cr, WSP_C_TEXT, 1);
	wsp_text(pg->cr, x + PAGE_TEXT_INSET, y + (pg->row - 1) / 2 + pg->font * 0.36, pg->font, false, WSP_LEFT, fit);
	return whole && !strcmp(fit, clean);
}

static void page_frame(void *ctx, uint32_t node, unsigned depth, uint64_t offset)
{
	struct page *pg = ctx;
	if (depth >= pg->depths)
		return;
	const struct wsp_flame *f = pg->lay.f;
	double x = WSP_MARGIN + (double)offset * pg->lay.scale, w = (double)f->nodes[node].total * pg->lay.scale;
	double y = pg->bottom - (depth + 1) * pg->row;
	unsigned rgb[3];
	node_colour(f, node, rgb);
	cairo_set_source_rgb(pg->cr, rgb[0] / 255.0, rgb[1] / 255.0, rgb[2] / 255.0);
	cairo_rectangle(pg->cr, x, y, w > 1.5 ? w - 0.5 : w, pg->row - 1);
	cairo_fill(pg->cr);
	if (!page_label(pg, node, x, y, w))
		page_note_cut(pg, node);
}

/* Widest first, then by name: boxes that still tie show the same line,
 * so the list never depends on the order stacks were added in. */
static int cut_cmp(const void *pa, const void *pb)
{
	const struct cut *a = pa, *b = pb;
	if (a->total != b->total)
		return a->total < b->total ? 1 : -1;
	int c = strcmp(a->label, b->label);
	return c ? c : (a->node > b->node) - (a->node < b->node);
}

/* The boxes whose names did not fit, widest first, as many as the room
 * below the graph holds: value, share, and the whole name. */
static void page_list_cut(struct page *pg, double top, const char *unit)
{
	double bottom = WSP_PAGE_H - WSP_MARGIN;
	size_t lines = top + 2 * PAGE_LIST_ROW < bottom ? (size_t)((bottom - top) / PAGE_LIST_ROW) - 1 : 0;
	if (!pg->ncut || !lines)
		return;
	const struct wsp_flame *f = pg->lay.f;
	qsort(pg->cut, pg->ncut, sizeof *pg->cut, cut_cmp);
	cairo_t *cr = pg->cr;
	wsp_set_colour(cr, WSP_C_TEXT, 1);
	wsp_text(cr, WSP_MARGIN, top, 9.5, true, WSP_LEFT, "Boxes too narrow for their names, widest first");
	size_t n = pg->ncut < lines ? pg->ncut : lines;
	for (size_t i = 0; i < n; i++) {
		uint32_t node = pg->cut[i].node;
		double y = top + (double)(i + 1) * PAGE_LIST_ROW;
		char value[160], clean[PAGE_LABEL_CAP], fit[PAGE_LABEL_CAP];
		unsigned rgb[3];
		node_colour(f, node, rgb);
		cairo_set_source_rgb(cr, rgb[0] / 255.0, rgb[1] / 255.0, rgb[2] / 255.0);
		cairo_rectangle(cr, WSP_MARGIN, y - 7, 9, 8);
		cairo_fill(cr);
		format_node(value, sizeof value, f, node, unit);
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		wsp_text(cr, WSP_MARGIN + 14, y, 8, false, WSP_LEFT, value);
		page_clean(clean, sizeof clean, node_label(f, node), SIZE_MAX);
		double name_x = f->diff ? 250 : 110; /* after the base's figure and the change too */
		wsp_text(cr, WSP_MARGIN + name_x, y, 8, false, WSP_LEFT,
			 wsp_text_fit(cr, 8, false, clean, WSP_PAGE_W - 2 * WSP_MARGIN - name_x, fit, sizeof fit));
	}
	if (pg->ncut > n) {
		char more[64];
		snprintf(more, sizeof more, "and %zu more", pg->ncut - n);
		cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
		wsp_text(cr, WSP_MARGIN + 14, top + (double)(n + 1) * PAGE_LIST_ROW, 8, false, WSP_LEFT, more);
	}
}

/* Rows as high as the page allows, at most PAGE_ROW_MAX; stacks too deep
 * for PAGE_ROW_MIN are cut, and a line says so. @return where the graph starts. */
static double page_rows(struct page *pg, double top)
{
	double bottom = WSP_PAGE_H - WSP_MARGIN;
	unsigned rows = pg->lay.max_depth + 1;
	pg->row = (bottom - top - PAGE_NOTE) / rows;
	pg->depths = rows;
	if (pg->row > PAGE_ROW_MAX)
		pg->row = PAGE_ROW_MAX;
	if (pg->row < PAGE_ROW_MIN) {
		pg->row = PAGE_ROW_MIN;
		pg->depths = (unsigned)((bottom - top - 12 - PAGE_NOTE) / PAGE_ROW_MIN);
		char note[160];
		snprintf(note, sizeof note, "Stacks are %u frames deep; the %u frames nearest the root are shown.", rows - 1,
			 pg->depths - 1);
		wsp_set_colour(pg->cr, WSP_C_TEXT, 1);
		wsp_text(pg->cr, WSP_MARGIN, top + 2, 8, false, WSP_LEFT, note);
		top += 12;
	}
	pg->font = pg->row * 0.62 < 9 ? pg->row * 0.62 : 9;
	return top;
}

int wsp_flame_draw_page(const struct wsp_flame *f, const struct wsp_flame_svg_options *opt, cairo_t *cr)
{
	double top = wsp_page_heading(cr, opt && opt->title ? opt->title : "Flame graph", opt ? opt->subtitle : NULL);
	if (!f->nodes[ROOT].total) {
		wsp_set_colour(cr, WSP_C_TEXT, 1);
		wsp_text(cr, WSP_PAGE_W / 2, (top + WSP_PAGE_H - WSP_MARGIN) / 2, 11, false, WSP_CENTER,
			 "Nothing to show: no stack has a nonzero value.");
		return 0;
	}
	struct page pg = { .cr = cr };
	struct tree_index ix;
	int err = layout_init(&pg.lay, f, &ix, WSP_PAGE_W - 2 * WSP_MARGIN, PAGE_MIN_BOX);
	if (err)
		return err;
	/* The graph hangs from the heading: a shallow one leaves the room at
	 * the bottom of the page, for the names that did not fit. */
	top = page_rows(&pg, top);
	pg.bottom = top + pg.depths * pg.row;
	cairo_save(cr);
	err = layout_walk(&pg.lay, page_frame, &pg);
	cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
	bool python = false;
	for (size_t i = 0; i < f->nlabels && !python; i++)
		python = !strncmp(f->text + f->labels[i].text, "py ", 3);
	wsp_text(cr, WSP_MARGIN, pg.bottom + 13, 8, false, WSP_LEFT,
		 f->diff ? "Each box is a function, as wide as its share of the new run; red: it grew since the base run, "
			   "blue: it shrank (the deeper, the more), grey: unchanged."
		 : python ? "Each box is a function (blue: a line of Python), as wide as its share; the boxes on it are "
			  "the ones it called, and \"all\" at the bottom is everything."
			: "Each box is a function, as wide as its share; the boxes on it are the functions it called, "
			  "and \"all\" at the bottom is everything.");
	if (!err)
		err = pg.err;
	if (!err)
		page_list_cut(&pg, pg.bottom + PAGE_NOTE + 16, opt ? opt->unit : NULL);
	cairo_restore(cr);
	free(pg.cut);
	wsp_flame_index_free(&ix);
	return err;
}
