/*
 * statemap.h - the address layout of one memory at one moment
 * (compute/layout.h) drawn as a map: blocks to scale, the holes between
 * them, the largest hole, and at a failed allocation the request against
 * the largest hole.
 *
 * A memory is the heap, the program's own mappings, pinned host memory,
 * managed memory, or the device memory of one CUDA device: the live blocks
 * of one kind (and device), by address. The figures are defined in
 * doc/reports.md ("Memory state"); `wsprof report state` prints them
 * (state.c) and draws them (-o), and the full report draws the same pages.
 */
#ifndef WSP_STATEMAP_H
#define WSP_STATEMAP_H

#include "plot.h"
#include "layout.h"

/* A page per memory into an open document. @return pages drawn. */
size_t wsp_statemap_draw_state(struct wsp_doc *doc, struct wsp_state *st, const struct wsp_memory *m, size_t n);
/* Its memories of kind (-1: every kind), a page each. @return 0, or 1
 * after a one-line error. */
int wsp_statemap_draw_memories(struct wsp_doc *doc, struct wsp_state *st, int kind);
/* The same from a trace: its state at `at` (peak, end, oom, SECONDS or a
 * snapshot label), memories of kind (-1: all). @return 0, or an exit
 * status after a one-line error. */
int wsp_statemap_draw(struct wsp_doc *doc, const char *trace_path, const char *at, int kind);

#endif
