/*
 * flame.c - `wsprof report flame`: the call stacks of one kind as a flame
 * graph or folded stacks, weighted by a metric of the model's per-stack
 * figures, of a trace or a job. Parses the options, loads, has the tree
 * built (compute/flametree.c) and hands it to draw/flamegraph.c, which
 * writes it in the format asked for.
 */
#include "commands.h"

#include "cli.h"
#include "flame.h"
#include "job.h"
#include "views.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char *const metric_names[] = { "peak", "leaked", "allocations", "bytes" };

static void usage(FILE *out)
{
	fputs("usage: wsprof report flame [--metric peak|leaked|allocations|bytes] [--format svg|folded]\n"
	      "                           [--kind KIND] [-o FILE] [--process P] TRACE...|DIR\n"
	      "  several traces or a directory: every process's stacks in one graph, summed\n"
	      "  --metric M     what a box's width shows (default peak: bytes live when the kind peaked)\n"
	      "  --format F     svg (default): a self-contained flame graph; folded: the stack text\n"
	      "                 that flamegraph.pl and speedscope read\n"
	      "  --kind KIND    heap (default) or mmap\n"
	      "  -o FILE        where to write (- for stdout); an SVG needs it; FILE.pdf or FILE.png\n"
	      "                 draws the graph as a PDF or PNG page instead\n", out);
}

struct flame_options {
	enum wsp_flame_metric metric;
	bool folded;
};

static int flame_option(void *ctx, int val, const char *arg)
{
	struct flame_options *o = ctx;
	if (val == 'm') {
		size_t i = 0;
		while (i < 4 && strcmp(arg, metric_names[i]))
			i++;
		if (i == 4) {
			fprintf(stderr, "wsprof: --metric takes peak, leaked, allocations or bytes\n");
			return 2;
		}
		o->metric = (enum wsp_flame_metric)i;
		return 0;
	}
	if (strcmp(arg, "svg") && strcmp(arg, "folded")) { /* --format */
		fprintf(stderr, "wsprof: --format takes svg or folded\n");
		return 2;
	}
	o->folded = !strcmp(arg, "folded");
	return 0;
}

static int flame_job(const struct wsp_cli *cli, unsigned kind, enum wsp_flame_metric metric, bool folded)
{
	struct wsp_flame *flame;
	struct wsp_job job;
	bool estimated;
	if (wsp_flame_of_job(cli->job, cli->njob, kind, metric, &flame, &job, &estimated))
		return 1;
	int rc = wsp_flame_write_job(flame, job.n - job.unread, cli->job, cli->njob, kind, metric, estimated, cli->out, folded);
	wsp_flame_free(flame);
	wsp_job_free(&job, NULL);
	return rc;
}

int wsp_cmd_flame(int argc, char **argv)
{
	static const struct wsp_cli_option own[] = {
		{ "metric", required_argument, 0, 'm' },
		{ "format", required_argument, 0, 'f' },
		{ 0 },
	};
	struct flame_options fo = { .metric = WSP_FLAME_PEAK };
	struct wsp_cli cli;
	int status = wsp_cli_parse(argc, argv, WSP_CLI_OUTPUT | WSP_CLI_KIND | WSP_CLI_MANY, own, flame_option, &fo, usage, &cli);
	if (status >= 0)
		return status;
	enum wsp_flame_metric metric = fo.metric;
	bool folded = fo.folded;
	unsigned kind = cli.kind >= 0 ? (unsigned)cli.kind : WSPROF_KIND_HEAP;
	const char *output = cli.out, *trace = cli.trace;
	if (!output && !folded) {
		fprintf(stderr, "wsprof: report flame writes an SVG: name it with -o FILE.svg (or use --format folded)\n");
		wsp_cli_free(&cli);
		return 2;
	}
	if (cli.job) {
		int rc = flame_job(&cli, kind, metric, folded);
		wsp_cli_free(&cli);
		return rc;
	}
	struct wsp_model_options mo = { .per_stack = true };
	struct wsp_loaded l;
	if (wsp_load(trace, &mo, true, &l)) {
		wsp_cli_free(&cli);
		return 1;
	}
	int rc = 0;
	if (!folded && wsp_flame_page_output(output)) {
		struct wsp_doc *doc = wsp_doc_open(output, false);
		rc = wsp_doc_finish(doc, doc && wsp_flame_draw(doc, &l, kind, metric) == 0);
	} else {
		struct wsp_flame *flame;
		int err = wsp_flame_of(&l, kind, metric, &flame);
		if (err) {
			fprintf(stderr, "wsprof: %s\n", strerror(-err));
			rc = 1;
		} else {
			rc = wsp_flame_write_trace(flame, &l, kind, metric, output, folded);
			wsp_flame_free(flame);
		}
	}
	wsp_loaded_free(&l);
	wsp_cli_free(&cli);
	return rc;
}
