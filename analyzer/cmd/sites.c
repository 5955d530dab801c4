/*
 * sites.c - `wsprof report callsites` and `wsprof report leaks`: which
 * code allocates, holds at the peak, leaks and churns memory. Parses the
 * options, loads the trace (or the job's traces) with per-stack figures,
 * has compute make the rows (compute/sites.c, compute/jobsites.c) and
 * text print them (text/callsites.c, text/jobsites.c).
 */
#include "commands.h"

#include "cli.h"
#include "compute.h"
#include "job.h"
#include "text.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct options {
	enum wsp_site_figure sort;
	size_t top;
	bool full, json;
	unsigned kind;
	const char *trace;
	struct wsp_cli cli;  /* the job's traces, when several were given */
};

static void usage_callsites(FILE *out)
{
	fputs("usage: wsprof report callsites [--sort peak|allocations|bytes|leaked|temporary|accessed|cold] [--top N]\n"
	      "                               [--full-stacks] [--kind KIND] [--json] [--process P] TRACE...|DIR\n"
	      "  several traces or a directory: the sites of every process merged (a column says in how\n"
	      "  many processes each is); --process P: only rank P's trace (else pid P's)\n"
	      "  one row per allocation site: the first frame outside the allocator (malloc, operator new)\n"
	      "  --sort KEY      order of the rows (default peak: bytes live when the kind peaked);\n"
	      "                  accessed: bytes seen accessed; cold: the memory that went untouched for\n"
	      "                  longest before its free or the end first (access samples, see report wss)\n"
	      "  --top N         rows to show (default 20, 0 for all)\n"
	      "  --full-stacks   one row per whole call stack, with its frames\n"
	      "  --kind KIND     heap (default) or mmap\n"
	      "  --json          one JSON object with every figure\n"
	      "A temporary allocation is one freed before its thread allocated again (not known\n"
	      "from a trace recorded with --sample-bytes, whose heap figures are estimates).\n", out);
}

static void usage_leaks(FILE *out)
{
	fputs("usage: wsprof report leaks [--top N] [--kind KIND] [--json] [--process P] TRACE...|DIR\n"
	      "  several traces or a directory: the stacks of every process merged\n"
	      "  blocks still live when the trace ends, grouped by call stack, largest first\n"
	      "  --top N      stacks to show (default 20, 0 for all)\n"
	      "  --kind KIND  heap (default) or mmap\n", out);
}

/* An option of callsites' or leaks' own. */
static int own_option(void *ctx, int val, const char *arg)
{
	struct options *o = ctx;
	switch (val) {
	case 's': {
		int i = wsp_site_sort_parse(arg);
		if (i < 0) {
			fprintf(stderr, "wsprof: --sort takes peak, allocations, bytes, leaked, temporary, accessed or cold\n");
			return 2;
		}
		o->sort = (enum wsp_site_figure)i;
		return 0;
	}
	case 't': return wsp_parse_top(arg, &o->top) ? 2 : 0;
	default: o->full = true; return 0; /* --full-stacks */
	}
}

/* Options shared by callsites and leaks (leaks has no --sort nor
 * --full-stacks). @return 0, -1 after --help, or the exit status. */
static int parse(int argc, char **argv, bool callsites, struct options *o)
{
	static const struct wsp_cli_option callsites_own[] = {
		{ "sort", required_argument, 0, 's' },
		{ "top", required_argument, 0, 't' },
		{ "full-stacks", no_argument, 0, 'f' },
		{ 0 },
	};
	static const struct wsp_cli_option leaks_own[] = { { "top", required_argument, 0, 't' }, { 0 } };
	*o = (struct options){ .sort = callsites ? WSP_FIG_PEAK : WSP_FIG_LEAKED, .top = 20, .kind = WSPROF_KIND_HEAP };
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_KIND | WSP_CLI_JSON | WSP_CLI_MANY, callsites ? callsites_own : leaks_own,
			       own_option, o, callsites ? usage_callsites : usage_leaks, &cli);
	if (rc >= 0)
		return rc ? rc : -1;
	o->cli = cli;
	o->trace = cli.trace;
	o->json = cli.json;
	if (cli.kind >= 0)
		o->kind = (unsigned)cli.kind;
	return 0;
}

/* Load with per-stack figures and make the rows of one kind. Access
 * samples are matched to blocks only where what is printed shows them:
 * callsites sorted by them, or as JSON (every figure); never for leaks. */
static int gather(const struct options *o, bool callsites, struct wsp_loaded *l, struct wsp_site_row **rows, size_t *n)
{
	bool access = callsites && (o->json || wsp_site_sort_shows_access(o->sort));
	struct wsp_model_options mo = { .per_stack = true, .no_access_figures = !access };
	if (wsp_load(o->trace, &mo, true, l))
		return 1;
	if (wsp_site_rows(l, o->kind, callsites ? o->full : true, o->sort, rows, n)) {
		fprintf(stderr, "wsprof: out of memory\n");
		wsp_loaded_free(l);
		return 1;
	}
	return 0;
}

/* A job's rows, merged across its processes, printed. */
static int job_command(const struct options *o, const struct wsp_sites_report *rep)
{
	struct wsp_job job;
	struct wsp_job_rows rows;
	if (wsp_job_site_rows(o->cli.job, o->cli.njob, rep->kind, rep->sort, rep->by_stack, rep->leaks, &job, &rows))
		return 1;
	wsp_job_sites_print(&job, &rows, rep);
	wsp_job_rows_free(&rows);
	wsp_job_free(&job, NULL);
	return 0;
}

/* callsites and leaks: the same options and rows, printed their own way. */
static int rows_command(int argc, char **argv, bool callsites)
{
	struct options o;
	struct wsp_loaded l;
	struct wsp_site_row *rows;
	size_t n;
	int rc = parse(argc, argv, callsites, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	struct wsp_sites_report rep = { o.kind, o.sort, o.top, o.json, !callsites, !callsites || o.full };
	if (o.cli.job) {
		rc = job_command(&o, &rep);
		wsp_cli_free(&o.cli);
		return rc;
	}
	if (gather(&o, callsites, &l, &rows, &n)) {
		wsp_cli_free(&o.cli);
		return 1;
	}
	if (callsites) {
		wsp_callsites_print(&l, rows, n, &rep);
	} else {
		uint64_t bytes, blocks;
		n = wsp_site_rows_leaked(rows, n, &bytes, &blocks); /* the stacks still holding blocks, in order */
		wsp_leaks_print(&l, rows, n, bytes, blocks, &rep);
	}
	free(rows);
	wsp_loaded_free(&l);
	wsp_cli_free(&o.cli);
	return 0;
}

int wsp_cmd_callsites(int argc, char **argv)
{
	return rows_command(argc, argv, true);
}

int wsp_cmd_leaks(int argc, char **argv)
{
	return rows_command(argc, argv, false);
}
