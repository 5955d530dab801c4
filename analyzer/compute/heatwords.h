/*
 * heatwords.h - the words shared by the heatmap's renderers (heatwords.c):
 * the text (text/heattext.c) and the pages (draw/heatmap.c).
 */
#ifndef WSP_HEATWORDS_H
#define WSP_HEATWORDS_H

#include "heatgrid.h"

/* The access sources in bits, by their words: "write faults, DAMON". @return buf. */
const char *heat_sources_text(unsigned bits, char *buf, size_t cap);
/* A cell's figure as the rows show it: "269 MiB/s", "1.50 GiB". @return buf. */
const char *heat_figure(char *buf, size_t cap, double v, bool rate);
/* "Heatmap: memory accessed by address, over time". @return buf. */
const char *heat_view_title(const struct view *v, char *buf, size_t cap);
/* What the rows are: the line under the heading. @return buf. */
const char *heat_view_note(const struct heat *h, const struct view *v, char *buf, size_t cap);
/* What the colour means. @return buf. */
const char *heat_colour_words(const struct view *v, char *buf, size_t cap);

#endif
