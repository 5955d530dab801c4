/*
 * heatwords.c - the words a heatmap's renderers share: a view's title,
 * the line saying what its rows are, what the colour means, a cell's
 * figure ("269 MiB/s"). The text and JSON (text/heattext.c) and the
 * pages (draw/heatmap.c) say the same thing with these; they build
 * strings from the computed grid (model/heatgrid.h) and print nothing.
 */
#include "heatwords.h"

#include <math.h>
#include <stdio.h>

const char *heat_sources_text(unsigned bits, char *buf, size_t cap)
{
	size_t o = 0;
	buf[0] = 0;
	for (int s = 0; s < SOURCES; s++)
		if (bits >> s & 1)
			o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, "%s%s", o ? ", " : "", wsp_access_source((unsigned)s)->word);
	return buf;
}

/* A heat_figure as the rows show it: "269 MiB/s", "1.50 GiB". */
const char *heat_figure(char *buf, size_t cap, double v, bool rate)
{
	char b[32];
	snprintf(buf, cap, "%s%s", wsp_human_bytes(b, sizeof b, (uint64_t)llround(v)), rate ? "/s" : "");
	return buf;
}

const char *heat_view_title(const struct view *v, char *buf, size_t cap)
{
	static const char *const rows[] = { "by address", "by allocation site", "by named buffer" };
	snprintf(buf, cap, "Heatmap: %s %s, over time", v->access ? "memory accessed" : "live memory", rows[v->by]);
	return buf;
}

/* What the rows are: the line under the heading. */
const char *heat_view_note(const struct heat *h, const struct view *v, char *buf, size_t cap)
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

const char *heat_colour_words(const struct view *v, char *buf, size_t cap)
{
	char s[128];
	if (v->access)
		snprintf(buf, cap, "colour: bytes accessed per second (%s%s); pale grey: live, not accessed; white: nothing live",
			 heat_sources_text(v->sources, s, sizeof s), v->sources & (v->sources - 1) ? ", the most one saw" : "");
	else
		snprintf(buf, cap, "colour: live bytes (mean of the column's samples); white: nothing live; no access samples "
			 "for this memory");
	return buf;
}
