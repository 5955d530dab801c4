/*
 * flamegraph.c - `wsprof report flame` written out: a trace's (or a job's)
 * stack tree (compute/flametree.c) titled, as a self-contained SVG with
 * tooltips, a PDF or PNG page, or folded stacks for flamegraph.pl and
 * speedscope (text/flamefold.c). wsp_flame_draw gives the whole report
 * the same page. The command is cmd/flame.c; `wsprof diff -o`'s
 * differential graph (cmd/diff.c) is titled here too.
 */
#include "analyzer.h"
#include "compute.h"
#include "text.h"
#include "flame.h"
#include "plot.h"
#include "views.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const metric_words[] = {
	"bytes live when the kind peaked", "bytes still live at the end", "allocations made",
	"bytes allocated in all",
};

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
	int err = wsp_flame_of(l, kind, metric, &f);
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
bool wsp_flame_page_output(const char *path)
{
	const char *dot = strrchr(path, '.');
	return dot && (!strcasecmp(dot, ".pdf") || !strcasecmp(dot, ".png"));
}

int wsp_flame_write(const struct wsp_flame *flame, const struct wsp_flame_svg_options *so, const char *output,
		    bool folded)
{
	if (!folded && wsp_flame_page_output(output)) {
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

int wsp_flame_write_job(const struct wsp_flame *flame, size_t nread, char *const *paths, size_t npaths, unsigned kind,
			enum wsp_flame_metric metric, bool estimated, const char *output, bool folded)
{
	char title[512], subtitle[512], total[32];
	size_t n = nread;
	snprintf(title, sizeof title, "%s by call stack: a job of %zu process%s (%s%s)", wsprof_kind_name(kind), n,
		 n == 1 ? "" : "es", paths[0], npaths > 1 ? " ..." : "");
	snprintf(subtitle, sizeof subtitle, "width: %s, summed over the processes (%s%s in all)%s", metric_words[metric],
		 estimated ? "~" : "", total_text(total, sizeof total, flame, metric),
		 estimated ? "; sampled traces' figures are estimates" : "");
	struct wsp_flame_svg_options so = { .title = title, .subtitle = subtitle,
					    .unit = metric == WSP_FLAME_ALLOCATIONS ? "allocations" : "bytes" };
	return wsp_flame_write(flame, &so, output, folded);
}

int wsp_flame_write_trace(const struct wsp_flame *flame, const struct wsp_loaded *l, unsigned kind,
			  enum wsp_flame_metric metric, const char *output, bool folded)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	char title[1024], subtitle[256], total[32], sampled[128];
	snprintf(title, sizeof title, "%s by call stack: %s (%s)", wsprof_kind_name(kind),
		 p->cmdline[0] ? p->cmdline : p->exe, l->path);
	wsp_sampled_text(l, sampled, sizeof sampled);
	snprintf(subtitle, sizeof subtitle, "width: %s (%s%s in all)%s%s%s", metric_words[metric],
		 wsp_est(l, kind), total_text(total, sizeof total, flame, metric),
		 l->status.complete ? "" : "; the trace is incomplete", sampled[0] ? "; " : "", sampled);
	if (folded && sampled[0]) /* the folded format has no place for it */
		fprintf(stderr, "wsprof: %s\n", sampled);
	struct wsp_flame_svg_options so = { .title = title, .subtitle = subtitle,
					    .unit = metric == WSP_FLAME_ALLOCATIONS ? "allocations" : "bytes" };
	return wsp_flame_write(flame, &so, output, folded);
}

static const char *diff_amount(char *buf, size_t cap, uint64_t v, bool bytes)
{
	return bytes ? wsp_human_bytes(buf, cap, v) : wsp_group_digits(buf, cap, v);
}

int wsp_flame_write_diff(const struct wsp_flame *f, const struct wsp_diff *d, const char *output)
{
	bool bytes = d->sort != WSP_DIFF_ALLOCATIONS;
	const struct wsp_loaded *now = &d->now;
	const wsprof_process *p = wsprof_trace_process(now->trace);
	char title[1024], subtitle[1024], tn[32], tb[32], tc[32];
	snprintf(title, sizeof title, "%s, change in %s: %s (%s) against %s", wsprof_kind_name(d->kind),
		 wsp_diff_figure_words[d->sort], p->cmdline[0] ? p->cmdline : p->exe, now->path, d->base.path);
	uint64_t total = wsp_flame_total(f), base = wsp_flame_base_total(f);
	int64_t change = (int64_t)(total - base);
	snprintf(subtitle, sizeof subtitle, "width: the new run (%s in all; base %s, %s); red: grew, blue: shrank; stacks "
		 "only in the base have no width", diff_amount(tn, sizeof tn, total, bytes), diff_amount(tb, sizeof tb, base, bytes),
		 bytes ? wsp_human_change(tc, sizeof tc, change) : wsp_count_change(tc, sizeof tc, change));
	struct wsp_flame_svg_options so = { .title = title, .subtitle = subtitle, .unit = bytes ? "bytes" : "allocations" };
	return wsp_flame_write(f, &so, output, false);
}
