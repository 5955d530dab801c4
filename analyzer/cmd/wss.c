/*
 * wss.c - `wsprof report wss`: how much memory the program actually
 * touched, window by window. Parses the options, loads the trace with
 * the windows asked for, and hands it to the text or JSON
 * (text/wssreport.c) or the plot (draw/wssplot.c).
 */
#include "commands.h"

#include "cli.h"
#include "text.h"
#include "views.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static void usage(FILE *out)
{
	fputs("usage: wsprof report wss [--window MS] [--kind KIND] [--json] [--plot OUT.pdf|svg|png] TRACE\n"
	      "  the working set: bytes accessed per window, per access source and kind, and their\n"
	      "  distribution (percentiles 0, 25, 50, 75, 100 and the mean)\n"
	      "  --window MS   add up the recorded windows into windows of MS milliseconds (each byte\n"
	      "                counted once per window)\n"
	      "  --kind KIND   only the bytes in blocks of that kind (heap, mmap, cuda_device, ...)\n"
	      "  --plot FILE   draw it: over time per source, and the distribution\n", out);
}

struct wss_options {
	const char *plot;
	uint64_t window_ms;
};

static int wss_option(void *ctx, int val, const char *arg)
{
	struct wss_options *o = ctx;
	if (val == 'p') {
		o->plot = arg;
		return 0;
	}
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if (*arg == '-' || *end || !v || v > 3600000) {
		fprintf(stderr, "wsprof: --window wants milliseconds from 1 to 3600000, not '%s'\n", arg);
		return 2;
	}
	o->window_ms = v;
	return 0;
}

int wsp_cmd_wss(int argc, char **argv)
{
	static const struct wsp_cli_option own[] = {
		{ "window", required_argument, 0, 'w' },
		{ "plot", required_argument, 0, 'p' },
		{ 0 },
	};
	struct wss_options o = { 0 };
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_KIND | WSP_CLI_JSON, own, wss_option, &o, usage, &cli);
	if (rc >= 0)
		return rc;
	const char *plot = o.plot, *trace = cli.trace;
	uint64_t window_ms = o.window_ms;
	bool json = cli.json;
	enum wsp_doc_format format;
	if (plot && wsp_doc_format_of(plot, &format))
		return 2;
	struct wsp_model_options mo = { .wss_bucket_ns = window_ms * 1000000u };
	struct wsp_loaded l;
	if (wsp_load(trace, &mo, false, &l))
		return 1;
	if (plot) {
		struct wsp_doc *doc = wsp_doc_open(plot, false);
		if (doc)
			wsp_wss_draw(doc, &l, cli.kind);
		int status = wsp_doc_finish(doc, true);
		wsp_loaded_free(&l);
		return status;
	}
	wsp_wss_print(&l, cli.kind, window_ms, json);
	wsp_loaded_free(&l);
	return 0;
}
