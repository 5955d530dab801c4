/*
 * heatmap.c - `wsprof report heatmap`: memory over time by address, call
 * site or name. Parses the options, has the grid computed (heatgrid.h)
 * and hands it to the text or JSON renderer (text/heattext.c), or to the
 * pages (draw/heatmap.c) for -o; both with --json -o.
 */
#include "commands.h"

#include "cli.h"
#include "heatgrid.h"
#include "text.h"
#include "views.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		wsp_heat_print_json(&h, v);
	else
		wsp_heat_print_text(&h, v);
	heat_free(&h);
	return 0;
}
