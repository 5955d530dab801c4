/*
 * check.c - `wsprof check TRACE --max-peak heap=512MiB ...`: memory
 * budgets for CI. Each budget is a figure of one kind held against a
 * limit: the peak, the bytes leaked, the peak of memory truly in use, or
 * the growth of the peak against a baseline run (--baseline, sites paired
 * as `wsprof diff` pairs them). Exit status 0 when every budget holds, 1
 * when any is exceeded (each exceeded one printed with its figure and the
 * call sites that account for most of it), 2 for a usage error or a trace
 * that cannot be read, so a CI step fails for the right reason. Parses the
 * budgets, loads the run (and the baseline), has compute/budget.c hold
 * them and text/check.c print the verdicts.
 */
#include "commands.h"

#include "cli.h"
#include "compute.h"
#include "text.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BUDGETS 64
#define SITES_SHOWN 5

struct options {
	struct wsp_budget budgets[MAX_BUDGETS];
	size_t n;
	const char *baseline;
	size_t top;
};

static void usage(FILE *out)
{
	fputs("usage: wsprof check [--max-peak KIND=SIZE] [--max-leaked KIND=SIZE] [--max-in-use KIND=SIZE]\n"
	      "                    [--baseline BASE --max-growth KIND=PERCENT] [--top N] [--json] TRACE\n"
	      "  memory budgets, for CI: exit status 0 when the run recorded in TRACE keeps every one,\n"
	      "  1 when it exceeds any (each printed with its figure and the call sites behind it),\n"
	      "  2 for a usage error or a trace that cannot be read. Each option may be repeated.\n"
	      "  --max-peak KIND=SIZE     the kind's live bytes at their peak\n"
	      "  --max-leaked KIND=SIZE   the kind's bytes still live at the end\n"
	      "  --max-in-use KIND=SIZE   the peak of the kind's memory truly in use (the program's\n"
	      "                           annotations say what could be given back; else its peak)\n"
	      "  --max-growth KIND=PERCENT  the kind's peak may grow at most this much over BASE's\n"
	      "  --baseline BASE          the trace --max-growth compares with (the main branch's run)\n"
	      "  --top N                  call sites shown per exceeded budget (default 5)\n"
	      "  KIND is heap, mmap, cuda_device, ... (KIND= may be left out for heap); SIZE as 4096, 512MiB,\n"
	      "  1.5G or 64K (units are powers of 1024); PERCENT as 10 or 2.5%.\n", out);
}

/* "heap=512MiB" or "512MiB": the kind and what follows the '='. @return 0 or 2. */
static int split_kind(const char *option, const char *arg, unsigned *kind, const char **value)
{
	const char *eq = strchr(arg, '=');
	*kind = WSPROF_KIND_HEAP;
	*value = arg;
	if (!eq)
		return 0;
	char name[64];
	if ((size_t)(eq - arg) >= sizeof name) {
		fprintf(stderr, "wsprof: --%s: no kind is called '%.*s'\n", option, (int)(eq - arg), arg);
		return 2;
	}
	memcpy(name, arg, (size_t)(eq - arg));
	name[eq - arg] = 0;
	if (wsp_parse_kind(name, kind))
		return 2;
	*value = eq + 1;
	return 0;
}

/* "10", "2.5%": a growth in percent. @return 0 or -1. */
static int parse_percent(const char *s, double *percent)
{
	char *end;
	if (!*s || !strchr("0123456789.", *s))
		return -1;
	double v = strtod(s, &end);
	if (end == s || (*end && strcmp(end, "%")) || !isfinite(v) || v < 0)
		return -1;
	*percent = v;
	return 0;
}

static int check_option(void *ctx, int val, const char *arg)
{
	struct options *o = ctx;
	if (val == 'b') {
		o->baseline = arg;
		return 0;
	}
	if (val == 't')
		return wsp_parse_top(arg, &o->top) ? 2 : 0;
	if (o->n == MAX_BUDGETS) {
		fprintf(stderr, "wsprof: at most %d budgets in one check\n", MAX_BUDGETS);
		return 2;
	}
	struct wsp_budget *b = &o->budgets[o->n];
	*b = (struct wsp_budget){ .type = (enum wsp_budget_type)val, .text = arg };
	const char *value;
	if (split_kind(wsp_budget_names[val], arg, &b->kind, &value))
		return 2;
	if (b->type == WSP_MAX_GROWTH) {
		if (parse_percent(value, &b->percent)) {
			fprintf(stderr, "wsprof: --max-growth: '%s' is not a percentage: write it as heap=10 or heap=2.5%%\n", value);
			return 2;
		}
	} else if (wsp_parse_size(value, &b->limit)) {
		fprintf(stderr, "wsprof: --%s: '%s' is not a size: write it as 4096, 512MiB, 1.5G or 64K\n",
			wsp_budget_names[val], value);
		return 2;
	}
	o->n++;
	return 0;
}

#define SITES_MAX 1000 /* --top 0 (all) shows at most this many sites a budget */

static size_t sites_wanted(const struct options *o)
{
	return o->top < SITES_MAX ? o->top : SITES_MAX;
}

int wsp_cmd_check(int argc, char **argv)
{
	static const struct wsp_cli_option own[] = {
		{ "max-peak", required_argument, 0, WSP_MAX_PEAK },
		{ "max-leaked", required_argument, 0, WSP_MAX_LEAKED },
		{ "max-in-use", required_argument, 0, WSP_MAX_IN_USE },
		{ "max-growth", required_argument, 0, WSP_MAX_GROWTH },
		{ "baseline", required_argument, 0, 'b' },
		{ "top", required_argument, 0, 't' },
		{ 0 },
	};
	static struct options o;
	o = (struct options){ .top = SITES_SHOWN };
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_JSON, own, check_option, &o, usage, &cli);
	if (rc >= 0)
		return rc ? 2 : 0;
	bool growth = false;
	for (size_t i = 0; i < o.n; i++)
		growth = growth || o.budgets[i].type == WSP_MAX_GROWTH;
	if (!o.n) {
		fprintf(stderr, "wsprof: check needs a budget, e.g. wsprof check --max-peak heap=512MiB %s\n", cli.trace);
		return 2;
	}
	if (growth != (o.baseline != NULL)) {
		fprintf(stderr, growth ? "wsprof: --max-growth needs --baseline BASE: the trace to compare with\n"
				       : "wsprof: --baseline is for --max-growth KIND=PERCENT: say how much the peak may grow\n");
		return 2;
	}
	struct wsp_model_options mo = { .per_stack = true };
	struct wsp_loaded l, base;
	if (wsp_load(cli.trace, &mo, true, &l))
		return 2;
	if (o.baseline && wsp_load(o.baseline, &mo, true, &base)) {
		wsp_loaded_free(&l);
		return 2;
	}
	static struct wsp_verdict v[MAX_BUDGETS];
	size_t exceeded = 0;
	for (size_t i = 0; i < o.n; i++) {
		v[i] = wsp_budget_judge(&o.budgets[i], &l, o.baseline ? &base : NULL, sites_wanted(&o));
		exceeded += v[i].exceeded;
	}
	wsp_check_print(v, o.n, &l, o.baseline, cli.json);
	for (size_t i = 0; i < o.n; i++)
		wsp_verdict_free(&v[i]);
	if (o.baseline)
		wsp_loaded_free(&base);
	wsp_loaded_free(&l);
	return exceeded ? 1 : 0;
}
