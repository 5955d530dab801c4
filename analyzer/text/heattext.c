/*
 * heattext.c - `wsprof report heatmap` as text and JSON: one view of the
 * grid that model/heatgrid.c computed, a row as a strip of characters
 * darker for more, or every cell's figure in JSON. The command is
 * cmd/heatmap.c; the pages are draw/heatmap.c's.
 */
#include "heatwords.h"
#include "text.h"


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	printf("  %-36s %12s |%s|\n", fit, heat_figure(p, sizeof p, peak, v->access), strip);
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

void wsp_heat_print_text(const struct heat *h, const struct view *v)
{
	char note[512], words[512], title[128], a[32], b[32];
	wsp_print_heading(&h->l, "heatmap");
	printf("  %s\n  %s\n", heat_view_title(v, title, sizeof title) + strlen("Heatmap: "), heat_view_note(h, v, note, sizeof note));
	printf("  %s\n", heat_colour_words(v, words, sizeof words));
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
	       heat_figure(a, sizeof a, max, v->access));
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

void wsp_heat_print_json(const struct heat *h, const struct view *v)
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
	wsp_json_string(&j, "by", wsp_heat_by_names[v->by]);
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
		wsp_json_seconds(&j, NULL, c == h->ncols ? h->end_ns : heat_col_start(h, c));
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
