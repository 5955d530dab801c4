/*
 * flamegraph.c - `wsprof report flame`: the call stacks of one kind as a
 * flame graph (a self-contained SVG with tooltips, or a PDF or PNG page)
 * or as folded stacks for flamegraph.pl and speedscope, weighted by a
 * metric of the model's per-stack figures. wsp_flame_draw gives the whole
 * report the same page.
 */
#include "analyzer.h"
#include "text.h"
#include "cli.h"
#include "commands.h"
#include "flame.h"
#include "job.h"
#include "plot.h"
#include "views.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const metric_names[] = { "peak", "leaked", "allocations", "bytes" };
static const char *const metric_words[] = {
	"bytes live when the kind peaked", "bytes still live at the end", "allocations made",
	"bytes allocated in all",
};

/* The tree of one kind's stacks. @return 0 or -ENOMEM (*out NULL). */
static int flame_of(const struct wsp_loaded *l, unsigned kind, enum wsp_flame_metric metric, struct wsp_flame **out)
{
	struct wsp_flame *f = wsp_flame_new();
	int err = f ? wsp_flame_add_trace(f, l, kind, metric, false) : -ENOMEM;
	if (err) {
		wsp_flame_free(f);
		f = NULL;
	}
	*out = f;
	return err;
}

/* "3.10 KiB" or "12,345": the sum of the metric. */
static const char *total_text(char *buf, size_t cap, const struct wsp_flame *f, enum wsp_flame_metric metric)
{
	if (metric == WSP_FLAME_ALLOCATIONS)
		return wsp_group_digits(buf, cap, wsp_flame_total(f));
	return wsp_human_bytes(buf, cap, wsp_flame_total(f));
}

int wsp_flame_draw(struct wsp_doc *doc, const struct wsp_loaded *l, unsigned kind, enum wsp_flame_metric metric)
{
	struct wsp_flame *f;
	int err = flame_of(l, kind, metric, &f);
	if (!err) {
		char title[256], subtitle[1024], total[32];
		snprintf(title, sizeof title, "%s by call stack: %s (%s%s in all)", wsprof_kind_name(kind),
			 metric_words[metric], wsp_est(l, kind), total_text(total, sizeof total, f, metric));
		wsp_view_subtitle(l, subtitle, sizeof subtitle);
		struct wsp_flame_svg_options opt = { .title = title, .subtitle = subtitle,
						     .unit = metric == WSP_FLAME_ALLOCATIONS ? "allocations" : "bytes" };
		err = wsp_flame_draw_page(f, &opt, wsp_doc_page(doc));
		wsp_flame_free(f);
	}
	if (err) {
		fprintf(stderr, "wsprof: flame graph: %s\n", strerror(-err));
		return -1;
	}
	return 0;
}

/* A PDF or PNG is drawn with cairo; anything else is the SVG with tooltips. */
static bool page_output(const char *path)
{
	const char *dot = strrchr(path, '.');
	return dot && (!strcasecmp(dot, ".pdf") || !strcasecmp(dot, ".png"));
}

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

int wsp_flame_write(const struct wsp_flame *flame, const struct wsp_flame_svg_options *so, const char *output,
		    bool folded)
{
	if (!folded && page_output(output)) {
		struct wsp_doc *doc = wsp_doc_open(output, false);
		int err = doc ? wsp_flame_draw_page(flame, so, wsp_doc_page(doc)) : 0;
		if (err)
			fprintf(stderr, "wsprof: flame graph: %s\n", strerror(-err));
		return wsp_doc_finish(doc, doc && !err);
	}
	FILE *out = stdout;
	if (output && strcmp(output, "-") && !(out = fopen(output, "we"))) {
		fprintf(stderr, "wsprof: cannot write %s: %s\n", output, strerror(errno));
		return 1;
	}
	int err = folded ? wsp_flame_write_folded(flame, out) : wsp_flame_write_svg(flame, so, out);
	if (out != stdout && fclose(out) != 0 && !err)
		err = -errno;
	if (err) {
		fprintf(stderr, "wsprof: cannot write %s: %s\n", output ? output : "the output", strerror(-err));
		return 1;
	}
	if (out != stdout)
		fprintf(stderr, "wsprof: wrote %s\n", output);
	return 0;
}

/* A job's graph: every process's stacks added to one tree. */
struct job_flame {
	struct wsp_flame *flame;
	unsigned kind;
	enum wsp_flame_metric metric;
	pthread_mutex_t lock;
	bool estimated;
};

static int add_process(struct wsp_job_proc *p, struct wsp_loaded *l, void *ctx)
{
	struct job_flame *jf = ctx;
	pthread_mutex_lock(&jf->lock);
	int err = wsp_flame_add_trace(jf->flame, l, jf->kind, jf->metric, false);
	jf->estimated = jf->estimated || *wsp_est(l, jf->kind);
	pthread_mutex_unlock(&jf->lock);
	(void)p;
	if (err)
		fprintf(stderr, "wsprof: out of memory\n");
	return err ? -1 : 0;
}

static int flame_job(const struct wsp_cli *cli, unsigned kind, enum wsp_flame_metric metric, bool folded)
{
	struct job_flame jf = { .flame = wsp_flame_new(), .kind = kind, .metric = metric, .lock = PTHREAD_MUTEX_INITIALIZER };
	struct wsp_model_options mo = { .per_stack = true };
	struct wsp_job job;
	if (!jf.flame) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	if (wsp_job_load(cli->job, cli->njob, &mo, true, add_process, &jf, &job)) {
		wsp_flame_free(jf.flame);
		return 1;
	}
	char title[512], subtitle[512], total[32];
	size_t n = job.n - job.unread;
	snprintf(title, sizeof title, "%s by call stack: a job of %zu process%s (%s%s)", wsprof_kind_name(kind), n,
		 n == 1 ? "" : "es", cli->job[0], cli->njob > 1 ? " ..." : "");
	snprintf(subtitle, sizeof subtitle, "width: %s, summed over the processes (%s%s in all)%s", metric_words[metric],
		 jf.estimated ? "~" : "", total_text(total, sizeof total, jf.flame, metric),
		 jf.estimated ? "; sampled traces' figures are estimates" : "");
	struct wsp_flame_svg_options so = { .title = title, .subtitle = subtitle,
					    .unit = metric == WSP_FLAME_ALLOCATIONS ? "allocations" : "bytes" };
	int rc = wsp_flame_write(jf.flame, &so, cli->out, folded);
	wsp_flame_free(jf.flame);
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
	if (!folded && page_output(output)) {
		struct wsp_doc *doc = wsp_doc_open(output, false);
		rc = wsp_doc_finish(doc, doc && wsp_flame_draw(doc, &l, kind, metric) == 0);
	} else {
		struct wsp_flame *flame;
		int err = flame_of(&l, kind, metric, &flame);
		if (err) {
			fprintf(stderr, "wsprof: %s\n", strerror(-err));
			rc = 1;
		} else {
			const wsprof_process *p = wsprof_trace_process(l.trace);
			char title[1024], subtitle[256], total[32], sampled[128];
			snprintf(title, sizeof title, "%s by call stack: %s (%s)", wsprof_kind_name(kind),
				 p->cmdline[0] ? p->cmdline : p->exe, l.path);
			wsp_sampled_text(&l, sampled, sizeof sampled);
			snprintf(subtitle, sizeof subtitle, "width: %s (%s%s in all)%s%s%s", metric_words[metric],
				 wsp_est(&l, kind), total_text(total, sizeof total, flame, metric),
				 l.status.complete ? "" : "; the trace is incomplete", sampled[0] ? "; " : "", sampled);
			if (folded && sampled[0]) /* the folded format has no place for it */
				fprintf(stderr, "wsprof: %s\n", sampled);
			struct wsp_flame_svg_options so = { .title = title, .subtitle = subtitle,
							    .unit = metric == WSP_FLAME_ALLOCATIONS ? "allocations" : "bytes" };
			rc = wsp_flame_write(flame, &so, output, folded);
			wsp_flame_free(flame);
		}
	}
	wsp_loaded_free(&l);
	wsp_cli_free(&cli);
	return rc;
}
