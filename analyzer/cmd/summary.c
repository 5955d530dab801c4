/*
 * summary.c - `wsprof report summary`: the whole trace in a few lines, or
 * one JSON object. Parses the options (--caller, --json, a job), loads
 * the trace's totals and hands them to text/summary.c, or a job's traces
 * (model/job.c) to text/jobsummary.c. In the `wsprof` program itself (commands.h: CORE).
 */
#include "commands.h"

#include "cli.h"
#include "job.h"
#include "text.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static void usage(FILE *out)
{
	fputs("usage: wsprof report summary [--json] [--caller MODULE]... [--process RANK|PID] TRACE...|DIR\n"
	      "  several traces, or a directory of them: the job as one (every process, the tree fork\n"
	      "  and exec made, totals, and across the ranks the least, median and most of each figure)\n"
	      "  --json           one JSON object with every figure\n"
	      "  --process P      only the trace of rank P (else of pid P) among those given\n"
	      "  --caller MODULE  count only allocations made from MODULE (a file name such as\n"
	      "                   libfoo.so.1, or a full path); C++ operator new is looked through.\n"
	      "                   May be repeated.\n", out);
}

/* --caller, as often as it is given. */
struct callers {
	const char **v;
	size_t n;
};

static int add_caller(void *ctx, int val, const char *arg)
{
	(void)val;
	struct callers *c = ctx;
	c->v[c->n++] = arg;
	return 0;
}

int wsp_cmd_summary(int argc, char **argv)
{
	static const struct wsp_cli_option own[] = { { "caller", required_argument, 'c', 'c' }, { 0 } };
	struct callers cs = { calloc((size_t)argc + 1, sizeof *cs.v), 0 };
	if (!cs.v) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	struct wsp_cli cli;
	int status = wsp_cli_parse(argc, argv, WSP_CLI_JSON | WSP_CLI_MANY, own, add_caller, &cs, usage, &cli);
	if (status >= 0) {
		free(cs.v);
		return status;
	}
	if (cli.job) {
		struct wsp_model_options mo = { .callers = cs.n ? cs.v : NULL, .totals_only = true };
		struct wsp_job job;
		int rc = wsp_job_load(cli.job, cli.njob, &mo, false, NULL, NULL, &job) ? 1 : 0;
		if (!rc) {
			wsp_job_summary_print(&job, cli.job, cli.njob, cli.json);
			wsp_job_free(&job, NULL);
		}
		wsp_cli_free(&cli);
		free(cs.v);
		return rc;
	}
	const char **callers = cs.v, *trace = cli.trace;
	size_t ncallers = cs.n;
	bool json = cli.json;
	struct wsp_model_options mo = { .callers = ncallers ? callers : NULL, .totals_only = true };
	struct wsp_loaded l;
	int rc = wsp_load(trace, &mo, false, &l);
	if (rc == 0) {
		if (json)
			wsp_summary_print_json(&l);
		else
			wsp_summary_print_text(&l, ncallers > 0);
		wsp_loaded_free(&l);
	}
	wsp_cli_free(&cli);
	free(callers);
	return rc;
}
