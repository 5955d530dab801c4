/*
 * heattext.c - `wsprof report heatmap`: the grid as text and JSON, the
 * words the pages share, and the command.
 */
#include "heatgrid.h"
#include "text.h"
#include "cli.h"
#include "commands.h"

#include "json.h"
#include "views.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- words ---------------------------------------------------------------- */

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

/* ---- text and JSON -------------------------------------------------------- */

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

static void print_text(const struct heat *h, const struct view *v)
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

static void print_json(const struct heat *h, const struct view *v)
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

/* ---- the command -------------------------------------------------------- */

static void usage(FILE *out)
{
	fputs("usage: wsprof report heatmap [--by address|callsite|name] [--range hot|all|LO-HI] [--top N]\n"
	      "                             [--kind KIND] [-o OUT.svg|.png|.pdf] [--json] TRACE\n"
	      "  memory over time: the access rate (bytes accessed per second) where the trace has\n"
	      "  access samples, the live bytes otherwise; pale grey is live memory nobody accessed\n"
	      "  --by address   rows are address bands; ranges empty for the whole run are collapsed\n"
	      "  --by callsite  a row per allocation site (first frame outside the allocator)\n"
	      "  --by name      a row per named buffer (wsprof_name, NVTX), unnamed memory last\n"
	      "  --range hot    by address: only the hottest span (the default); all: every span;\n"
	      "                 LO-HI: the addresses from LO to HI (0x... or decimal)\n"
	      "  --top N        sites or names with a row of their own (1 to 45, default 30)\n"
	      "  --kind KIND    only blocks of that kind (heap, mmap, cuda_device, pool, ...)\n"
	      "  -o FILE        draw it (.svg, .png or .pdf); --json prints the grid; text otherwise\n", out);
}

static int parse_range(const char *s, struct wsp_heatmap_options *o)
{
	if (!strcmp(s, "hot") || !strcmp(s, "all")) {
		o->all_ranges = !strcmp(s, "all");
		o->range_lo = o->range_hi = 0;
		return 0;
	}
	char *end;
	unsigned long long lo = strtoull(s, &end, 0), hi = 0;
	if (end != s && *end == '-' && end[1] != '-') {
		const char *h = end + 1;
		hi = strtoull(h, &end, 0);
		if (end != h && !*end && hi > lo && *s != '-') {
			o->range_lo = lo;
			o->range_hi = hi;
			return 0;
		}
	}
	fprintf(stderr, "wsprof: --range takes hot, all or LO-HI (addresses, LO below HI: 0x7f0000000000-0x7f0100000000), "
		"not '%s'\n", s);
	return -1;
}

static int heat_option(void *ctx, int val, const char *arg)
{
	struct wsp_heatmap_options *o = ctx;
	if (val == 'b') {
		int by = 0;
		while (by < WSP_HEAT_BY_COUNT && strcmp(arg, wsp_heat_by_names[by]))
			by++;
		if (by == WSP_HEAT_BY_COUNT) {
			fprintf(stderr, "wsprof: --by takes address, callsite or name, not '%s'\n", arg);
			return 2;
		}
		o->views = 1u << by;
		return 0;
	}
	if (val == 'r')
		return parse_range(arg, o) ? 2 : 0;
	char *end; /* --top */
	unsigned long v = strtoul(arg, &end, 10);
	if (*arg == '-' || *end || !*arg || v < 1 || v > MAX_TOP) {
		fprintf(stderr, "wsprof: --top wants 1 to %d rows (what a page shows readably), not '%s'\n", MAX_TOP, arg);
		return 2;
	}
	o->top = v;
	return 0;
}

int wsp_cmd_heatmap(int argc, char **argv)
{
	static const struct wsp_cli_option own[] = {
		{ "by", required_argument, 0, 'b' },
		{ "range", required_argument, 0, 'r' },
		{ "top", required_argument, 0, 't' },
		{ 0 },
	};
	struct wsp_heatmap_options o = { .views = 1u << WSP_HEAT_BY_ADDRESS, .kind = -1 };
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_OUTPUT | WSP_CLI_KIND | WSP_CLI_JSON | WSP_CLI_BOTH, own, heat_option,
			       &o, usage, &cli);
	if (rc >= 0)
		return rc;
	if (cli.kind >= 0 && !has_addresses((unsigned)cli.kind)) {
		fprintf(stderr, "wsprof: %s blocks have no addresses memory is accessed at: use --kind cuda_vmm_mapped\n",
			wsprof_kind_name((unsigned)cli.kind));
		return 2;
	}
	o.kind = cli.kind;
	const char *path = cli.trace, *out = cli.out;
	bool json = cli.json;
	enum wsp_doc_format format;
	if (out && wsp_doc_format_of(out, &format))
		return 2;
	if (out) {
		struct wsp_doc *doc = wsp_doc_open(out, false);
		if (!doc)
			return 1;
		int status = wsp_doc_finish(doc, wsp_heatmap_draw(doc, path, &o) >= 0);
		if (status || !json)
			return status;
	}
	struct heat h;
	if (heat_compute(&h, path, &o))
		return 1;
	const struct view *v = &h.views[__builtin_ctz(o.views)];
	if (json)
		print_json(&h, v);
	else
		print_text(&h, v);
	heat_free(&h);
	return 0;
}

