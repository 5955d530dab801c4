/*
 * timeline.c - `wsprof report timeline`: memory over time, kind by kind,
 * of a trace or of a job. Parses the options, loads the trace (or the
 * job's, compute/timeline.c) and hands it to the charts (draw/timeline.c)
 * or the text and JSON (text/timelinetext.c).
 */
#include "commands.h"

#include "cli.h"
#include "job.h"
#include "text.h"
#include "timeline.h"
#include "views.h"

#include <stdio.h>

static int timeline_job(const struct wsp_cli *cli, const char *out)
{
	unsigned kind = cli->kind >= 0 ? (unsigned)cli->kind : WSPROF_KIND_HEAP;
	struct wsp_job job;
	if (wsp_timeline_job_load(cli->job, cli->njob, kind, &job))
		return 1;
	int status = 0;
	if (out) {
		struct wsp_doc *doc = wsp_doc_open(out, false);
		if (doc)
			wsp_timeline_job_draw(doc, &job, kind, cli->job[0], cli->njob);
		status = wsp_doc_finish(doc, true);
	} else if (cli->json) {
		wsp_timeline_job_json(&job, kind);
	} else {
		wsp_timeline_job_text(&job, kind);
	}
	wsp_job_free(&job, wsp_job_line_free);
	return status;
}

static void usage(FILE *out)
{
	fputs("usage: wsprof report timeline [-o OUT.pdf|OUT.svg|OUT.png] [--kind KIND] [--json] [--process P] TRACE...|DIR\n"
	      "  several traces or a directory: the kind (default heap) of each process, a line each,\n"
	      "  on the job's clock\n"
	      "  memory over time, per kind: allocated, truly in use, working set, resident set,\n"
	      "  device free memory; phases shaded, failed allocations marked\n"
	      "  -o FILE       draw it (two kinds a page; SVG and PNG: FILE-1.svg, ... when more)\n"
	      "  --kind KIND   one kind only (heap, mmap, cuda_device, ...)\n"
	      "  --json        every point of every series\n", out);
}

int wsp_cmd_timeline(int argc, char **argv)
{
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_OUTPUT | WSP_CLI_KIND | WSP_CLI_JSON | WSP_CLI_MANY, NULL, NULL, NULL, usage,
			       &cli);
	if (rc >= 0)
		return rc;
	const char *out = cli.out, *trace = cli.trace;
	bool json = cli.json;
	enum wsp_doc_format format;
	if (out && wsp_doc_format_of(out, &format)) {
		wsp_cli_free(&cli);
		return 2;
	}
	if (cli.job) {
		rc = timeline_job(&cli, out);
		wsp_cli_free(&cli);
		return rc;
	}
	struct wsp_loaded l;
	struct wsp_model_options mo = { 0 };
	if (wsp_load(trace, &mo, false, &l)) {
		wsp_cli_free(&cli);
		return 1;
	}
	int k = cli.kind;
	int status = 0;
	if (out) {
		unsigned kinds[WSPROF_KIND_COUNT];
		size_t n = wsp_timeline_kinds(&l, k, kinds);
		struct wsp_doc *doc = wsp_doc_open(out, n > WSP_TIMELINE_CHARTS_PER_PAGE);
		if (doc)
			wsp_timeline_draw(doc, &l, k);
		status = wsp_doc_finish(doc, true);
	} else if (json) {
		wsp_timeline_print_json(&l, k);
	} else {
		wsp_timeline_print_text(&l, k);
	}
	wsp_loaded_free(&l);
	wsp_cli_free(&cli);
	return status;
}
