/*
 * heatgrid.h - the heatmaps' grid (the model's side of heatmap.h): what
 * heatgrid.c computes as it follows a load of the trace, asking the load's
 * model for the live blocks, for draw/heatmap.c to draw and
 * text/heattext.c to print. Internal to the heatmaps: heatmap.h is the
 * interface.
 */
#ifndef WSP_HEATGRID_H
#define WSP_HEATGRID_H

#include "heatmap.h"

#include "analyzer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_ADDRESS_ROWS 160
#define MAX_SEPARATORS 12
#define MAX_KEYS 2048       /* sites or names with a row of their own; the rest go to "other" */
#define DEFAULT_TOP 30
#define MAX_TOP 45          /* rows a page shows readably */
#define SPANS_CAP 4096
#define FINE_COLUMNS (4 * WSP_HEAT_COLUMNS) /* columns while the trace is read, merged two by two */
#define FINE_PER_WINDOW 4   /* their first width: a quarter of the access window */
#define FIRST_COLUMN_NS 1000000u /* their first width without access samples: 1 ms */
#define CELLS_CAP 2048      /* cells of address space while the trace is read; past that, wider */
#define CELLS_INDEX 8192    /* their hash, a power of two over twice the cap */
#define PAGE 4096u
#define MIN_GAP (64u << 10) /* a gap worth a separator: smaller ones stay in their span */
#define SOURCES WSPROF_ACCESS_SOURCE_COUNT
#define LEVELS 64           /* colour steps drawn */


extern const char *const wsp_heat_by_names[WSP_HEAT_BY_COUNT];

/* ---- kinds ---------------------------------------------------------------- */

/* Kinds whose blocks lie at addresses memory is accessed at: not CUDA VMM
 * physical allocations (handles) nor address space only reserved. */
static inline bool has_addresses(unsigned kind)
{
	return kind != WSPROF_KIND_CUDA_VMM && !wsp_kind_is_reservation(kind);
}

static inline bool kind_wanted(int kind, unsigned k)
{
	return kind >= 0 ? k == (unsigned)kind : has_addresses(k);
}

/* Pool sub-allocations and registered host ranges lie inside other
 * blocks: by address their bytes would count twice. */
static inline bool inside_another(const struct wsp_block *b)
{
	return b->kind == WSPROF_KIND_POOL || wsp_block_space(b) == WSP_SPACE_REGISTERED;
}


/* ---- the address ranges ever live or accessed ---------------------------- */

struct span {
	uint64_t lo, hi;
	double accessed, allocated;
};

struct spans {
	struct span *v, *pending, *merged;
	size_t n, cap, npending, pending_cap, merged_cap;
};

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

/* While the trace is read, rows hold FINE_COLUMNS columns of col_ns each
 * (live: the sum of the samples, live_n of them a column); at its end they
 * are laid over the ncols columns drawn. By address, the bytes go to
 * cells of cell_size (a power of two, a page at first), and the bands
 * are laid out at the end from the ranges and filled from the cells. */
struct heat {
	const struct wsp_heatmap_options *opt;
	const char *path;
	const struct wsp_loaded *load; /* the load followed: &l, or the report's */
	struct wsp_loaded l;        /* its trace, symbols and model (borrowed from the report's) */
	struct view views[WSP_HEAT_BY_COUNT];
	struct view cells;          /* by address, while the trace is read */
	uint64_t cell_size;
	size_t cell_last;           /* the cell found last */
	uint64_t end_ns;            /* the time axis runs from 0 to here */
	size_t ncols;               /* FINE_COLUMNS while the trace is read */
	double col_s;
	uint64_t col_ns;            /* a fine column's width */
	uint32_t *live_n;           /* samples of the live set in each fine column */
	size_t sampled;             /* fine columns sampled */
	bool names;                 /* some block was named */
	struct spans spans;
	uint32_t *frame_rows;       /* a site's frame (wsp_syms_site's id) -> its call-site row + 1 */
	size_t frame_rows_cap;
	long no_stack_row;          /* the row of stacks without frames, or -1 */
	struct place_row {
		uint64_t stack;
		uint32_t row;       /* + 1; 0: none yet */
	} *place_rows;              /* by the model's place of a live block (wsp_model_place): its call-site row */
	size_t place_rows_cap;
	int err;
	bool begun, access;
	uint64_t window_ns, last_ns;
};


/* The grid's life (heatgrid.c): followed in a load of its own
 * (heat_compute) or of someone else's (load: the report's, whose model
 * must match access samples, and which must outlive the heat). */
void heat_init(struct heat *h, const char *path, const struct wsp_heatmap_options *opt, const struct wsp_loaded *load);
int heat_compute(struct heat *h, const char *path, const struct wsp_heatmap_options *opt);
void heat_free(struct heat *h);
int heat_event(void *arg, wsprof_trace *t, const wsprof_event *ev);
int heat_end(void *arg, wsprof_trace *t);
uint64_t heat_col_start(const struct heat *h, size_t c);

long heat_row_new(struct heat *h, struct view *v, const char *label, enum row_what what);
long heat_row_of_key(struct heat *h, struct view *v, const char *label, const struct wsp_frame *site);
long heat_row_of_stack(struct heat *h, uint64_t stack);
long heat_row_of_name(struct heat *h, const struct wsp_block *b);
void heat_touch_row(struct view *v, long r, double bytes, int *err);

/* The words the pages and the text share: compute/heatwords.h. */

#endif
