/*
 * heatmap.h - memory over time as a grid of colours (`wsprof report
 * heatmap`): time across, and down either address bands, allocation
 * sites or named buffers.
 *
 * The colour of a cell is the access rate (accessed bytes per second)
 * when the trace has access samples for the memory shown, the live bytes
 * otherwise; every page says which, with a colour bar in those units.
 * By address, ranges empty for the whole run are collapsed into labelled
 * separators, and the view defaults to the hottest contiguous span.
 *
 * The trace is read once, in memory bounded by the grid, not by the
 * trace's length: the grid follows the load, asking its model for the
 * live blocks and told by it of the blocks each access sample touches;
 * the time columns and the address rows are settled at the end. The full
 * report (report.c) computes the same pages following its own load
 * (wsp_heat_*).
 */
#ifndef WSP_HEATMAP_H
#define WSP_HEATMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer.h"

#define WSP_HEAT_COLUMNS 300

enum wsp_heat_by { WSP_HEAT_BY_ADDRESS, WSP_HEAT_BY_CALLSITE, WSP_HEAT_BY_NAME, WSP_HEAT_BY_COUNT };

struct wsp_heatmap_options {
	unsigned views;          /* bits 1 << enum wsp_heat_by: the pages wanted */
	int kind;                /* only blocks of this kind; -1: every kind with addresses */
	/* By address: every span (all), or [range_lo, range_hi) when
	 * range_hi > 0; otherwise the hottest span. */
	bool all_ranges;
	uint64_t range_lo, range_hi;
	size_t top;              /* by call site or name: rows at most (0: 30) */
};

/* The pages (draw/views.h: wsp_heatmap_draw, wsp_heat_pages) computed by
 * a follower of someone else's load: l is the load followed (the address
 * wsp_load_following fills), whose model must match access samples (no
 * totals_only, unmatched_access or no_access_figures) and whose trace,
 * symbols and model the pages borrow: l must outlive the heatmap, and so
 * must opt. */
struct wsp_heat;
struct wsp_heat *wsp_heat_new(const char *trace_path, const struct wsp_heatmap_options *opt,
			      const struct wsp_loaded *l);
struct wsp_follower wsp_heat_follower(struct wsp_heat *h);
void wsp_heat_free(struct wsp_heat *h);

#endif
