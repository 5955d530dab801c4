/*
 * diff.c - `wsprof diff BASE NEW`: what changed between two runs of a
 * program (two builds, yesterday and today). Parses the options, loads
 * both runs, compares them (compute/diff.c: figures per kind, sites
 * paired by sitematch.c and ordered by their change) and hands the result
 * to text/diff.c, and with -o the differential flame graph built by
 * compute/flametree.c to draw/flamegraph.c (as wide as the new run, red
 * where it grew, blue where it shrank).
 */
#include "commands.h"

#include "cli.h"
#include "compute.h"
#include "flame.h"
#include "flametree.h"
#include "text.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

struct options {
	enum wsp_diff_figure sort;
	size_t top;
};

static void usage(FILE *out)
{
	fputs("usage: wsprof diff [--kind KIND] [--sort peak|leaked|allocations|bytes] [--top N] [--json]\n"
	      "                   [-o FLAME.svg|pdf|png] BASE NEW\n"
	      "  what changed from the run recorded in BASE to the one in NEW (two builds of a program,\n"
	      "  yesterday's run and today's): each kind's figures side by side, and the call sites whose\n"
	      "  figures changed most, matched by function, file and line (a function whose lines moved\n"
	      "  still matches), sites of one run only included\n"
	      "  --kind KIND  the call sites and flame graph of KIND (default heap); the figures show every kind\n"
	      "  --sort F     the change that orders the sites (default peak: bytes live at the peak)\n"
	      "  --top N      sites to show (default 20, 0 for all)\n"
	      "  --json       one JSON object with every figure\n"
	      "  -o FILE      also a differential flame graph of --sort's figure: as wide as NEW,\n"
	      "               red where it grew, blue where it shrank (SVG with tooltips, PDF or PNG)\n", out);
}

static int diff_option(void *ctx, int val, const char *arg)
{
	struct options *o = ctx;
	if (val == 't')
		return wsp_parse_top(arg, &o->top) ? 2 : 0;
	for (size_t i = 0; i < WSP_DIFF_FIGURES; i++)
		if (!strcmp(arg, wsp_diff_figure_names[i])) {
			o->sort = (enum wsp_diff_figure)i;
			return 0;
		}
	fprintf(stderr, "wsprof: --sort takes peak, leaked, allocations or bytes\n");
	return 2;
}

static int load_runs(const char *base, const char *now, unsigned kind, struct wsp_diff *d)
{
	struct wsp_model_options mo = { .per_stack = true };
	*d = (struct wsp_diff){ .kind = kind };
	if (wsp_load(base, &mo, true, &d->base))
		return 1;
	if (wsp_load(now, &mo, true, &d->now)) {
		wsp_loaded_free(&d->base);
		return 1;
	}
	return 0;
}

static int write_flame(const struct wsp_diff *d, const char *path)
{
	static const enum wsp_flame_metric metric[] = { WSP_FLAME_PEAK, WSP_FLAME_LEAKED, WSP_FLAME_ALLOCATIONS, WSP_FLAME_BYTES };
	struct wsp_flame *f = wsp_flame_new();
	int err = f ? wsp_flame_add_trace(f, &d->now, d->kind, metric[d->sort], false) : -ENOMEM;
	if (!err)
		err = wsp_flame_add_trace(f, &d->base, d->kind, metric[d->sort], true);
	if (err) {
		fprintf(stderr, "wsprof: flame graph: %s\n", strerror(-err));
		wsp_flame_free(f);
		return 1;
	}
	int rc = wsp_flame_write_diff(f, d, path);
	wsp_flame_free(f);
	return rc;
}

int wsp_cmd_diff(int argc, char **argv)
{
	static const struct wsp_cli_option own[] = {
		{ "sort", required_argument, 0, 's' },
		{ "top", required_argument, 0, 't' },
		{ 0 },
	};
	struct options o = { .sort = WSP_DIFF_PEAK, .top = 20 };
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_PAIR | WSP_CLI_KIND | WSP_CLI_JSON | WSP_CLI_OUTPUT | WSP_CLI_BOTH, own,
			       diff_option, &o, usage, &cli);
	if (rc >= 0)
		return rc;
	unsigned kind = cli.kind >= 0 ? (unsigned)cli.kind : WSPROF_KIND_HEAP;
	struct wsp_diff d;
	if (load_runs(cli.base, cli.trace, kind, &d))
		return 1;
	if (wsp_diff_compare(&d, o.sort)) {
		fprintf(stderr, "wsprof: out of memory\n");
		wsp_loaded_free(&d.base);
		wsp_loaded_free(&d.now);
		return 1;
	}
	for (size_t i = 0; i < d.nwarnings; i++)
		fprintf(stderr, "wsprof: %s\n", d.warnings[i]);
	wsp_diff_print(&d, o.top, cli.json);
	rc = cli.out ? write_flame(&d, cli.out) : 0;
	wsp_diff_free(&d);
	wsp_loaded_free(&d.base);
	wsp_loaded_free(&d.now);
	return rc;
}
