/*
 * check.c - `wsprof check TRACE --max-peak heap=512MiB ...`: memory
 * budgets for CI. Each budget is a figure of one kind held against a
 * limit: the peak, the bytes leaked, the peak of memory truly in use, or
 * the growth of the peak against a baseline run (--baseline, sites paired
 * as `wsprof diff` pairs them). Exit status 0 when every budget holds, 1
 * when any is exceeded (each exceeded one printed with its figure and the
 * call sites that account for most of it), 2 for a usage error or a trace
 * that cannot be read, so a CI step fails for the right reason.
 */
#include "analyzer.h"
#include "text.h"
#include "cli.h"
#include "compute.h"
#include "commands.h"
#include "json.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum budget_type { MAX_PEAK, MAX_LEAKED, MAX_IN_USE, MAX_GROWTH };
static const char *const budget_options[] = { "max-peak", "max-leaked", "max-in-use", "max-growth" };
static const char *const budget_words[] = { "peak", "leaked", "truly in use, peak", "peak growth" };

#define MAX_BUDGETS 64
#define SITES_SHOWN 5

struct budget {
	enum budget_type type;
	unsigned kind;
	uint64_t limit;      /* bytes (MAX_GROWTH: unused) */
	double percent;      /* MAX_GROWTH */
	const char *text;    /* as given */
};

struct options {
	struct budget budgets[MAX_BUDGETS];
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
	struct budget *b = &o->budgets[o->n];
	*b = (struct budget){ .type = (enum budget_type)val, .text = arg };
	const char *value;
	if (split_kind(budget_options[val], arg, &b->kind, &value))
		return 2;
	if (b->type == MAX_GROWTH) {
		if (parse_percent(value, &b->percent)) {
			fprintf(stderr, "wsprof: --max-growth: '%s' is not a percentage: write it as heap=10 or heap=2.5%%\n", value);
			return 2;
		}
	} else if (wsp_parse_size(value, &b->limit)) {
		fprintf(stderr, "wsprof: --%s: '%s' is not a size: write it as 4096, 512MiB, 1.5G or 64K\n",
			budget_options[val], value);
		return 2;
	}
	o->n++;
	return 0;
}

/* ---- Holding each budget ------------------------------------------------ */

struct verdict {
	const struct budget *b;
	uint64_t value, base_value; /* base_value: MAX_GROWTH */
	double growth;              /* percent; INFINITY from nothing */
	bool exceeded;
};

static uint64_t kind_value(const struct wsp_loaded *l, const struct budget *b)
{
	const struct wsp_kind_stats *s = wsp_model_kind(l->model, b->kind);
	switch (b->type) {
	case MAX_LEAKED: return s->live_bytes;
	case MAX_IN_USE: return s->in_use_peak_bytes;
	default: return s->peak_bytes;
	}
}

static struct verdict judge(const struct budget *b, const struct wsp_loaded *l, const struct wsp_loaded *base)
{
	struct verdict v = { .b = b, .value = kind_value(l, b) };
	if (b->type != MAX_GROWTH) {
		v.exceeded = v.value > b->limit;
		return v;
	}
	v.base_value = kind_value(base, b);
	if (v.base_value)
		v.growth = 100.0 * ((double)v.value - (double)v.base_value) / (double)v.base_value;
	else
		v.growth = v.value ? INFINITY : 0;
	v.exceeded = v.growth > b->percent;
	return v;
}

/* A call site behind an exceeded budget: its share of the figure (for
 * growth, how much more it holds at the peak than in the baseline). */
struct site_line {
	int64_t bytes;
	char label[512];
	bool new_site; /* growth: not in the baseline */
};

static int64_t peak_growth(const struct wsp_site_pair *p)
{
	return (int64_t)((p->now ? p->now->sum.peak_bytes : 0) - (p->base ? p->base->sum.peak_bytes : 0));
}

static int cmp_growth(const void *pa, const void *pb)
{
	int64_t a = peak_growth(pa), b = peak_growth(pb);
	return (a < b) - (a > b);
}

/* The sites that account for most of v's figure, at most cap.
 * @return how many, or 0 when there is no memory for them. */
static size_t sites_behind(const struct verdict *v, struct wsp_loaded *l, struct wsp_loaded *base,
			   struct site_line *out, size_t cap)
{
	size_t n = 0;
	if (v->b->type == MAX_GROWTH) {
		struct wsp_site_match m;
		if (wsp_site_match(base, l, v->b->kind, &m))
			return 0;
		qsort(m.pairs, m.npairs, sizeof *m.pairs, cmp_growth);
		for (size_t i = 0; i < m.npairs && n < cap && peak_growth(&m.pairs[i]) > 0; i++) {
			const struct wsp_site_pair *p = &m.pairs[i];
			out[n] = (struct site_line){ .bytes = peak_growth(p), .new_site = !p->base };
			wsp_frame_label(p->now ? &p->now->site : &p->base->site, out[n].label, sizeof out[n].label);
			n++;
		}
		wsp_site_match_free(&m);
		return n;
	}
	bool leaked = v->b->type == MAX_LEAKED;
	struct wsp_site_row *rows;
	size_t nrows;
	if (wsp_callsites_rows(l, v->b->kind, leaked ? "leaked" : "peak", &rows, &nrows))
		return 0;
	for (size_t i = 0; i < nrows && n < cap; i++) {
		uint64_t bytes = leaked ? rows[i].sum.leaked_bytes : rows[i].sum.peak_bytes;
		if (!bytes)
			break;
		out[n] = (struct site_line){ .bytes = (int64_t)bytes };
		wsp_frame_label(&rows[i].site, out[n].label, sizeof out[n].label);
		n++;
	}
	free(rows);
	return n;
}

/* ---- Output -------------------------------------------------------------- */

#define SITES_MAX 1000 /* --top 0 (all) shows at most this many sites a budget */

static size_t sites_wanted(const struct options *o)
{
	return o->top < SITES_MAX ? o->top : SITES_MAX;
}

/* "heap peak 8.00 MiB" and what it is held against. */
static void text_verdict(const struct verdict *v, const struct wsp_loaded *l, const char *baseline)
{
	const struct budget *b = v->b;
	const char *est = wsp_est_total(l, b->kind);
	char a[32], c[32], d[32];
	printf("  %-9s %s %s ", v->exceeded ? "EXCEEDED" : "ok", wsprof_kind_name(b->kind), budget_words[b->type]);
	if (b->type == MAX_GROWTH) {
		if (isinf(v->growth))
			printf("from 0 B to %s%s", est, wsp_human_bytes(a, sizeof a, v->value));
		else
			printf("%+.1f%% (%s%s to %s%s)", v->growth, est, wsp_human_bytes(a, sizeof a, v->base_value), est,
			       wsp_human_bytes(c, sizeof c, v->value));
		printf(" against %s, %s the budget of +%g%%\n", baseline, v->exceeded ? "over" : "within", b->percent);
		return;
	}
	printf("%s%s, ", est, wsp_human_bytes(a, sizeof a, v->value));
	if (v->exceeded)
		printf("over the budget of %s by %s%s\n", wsp_human_bytes(c, sizeof c, b->limit), est,
		       wsp_human_bytes(d, sizeof d, v->value - b->limit));
	else
		printf("within the budget of %s\n", wsp_human_bytes(c, sizeof c, b->limit));
}

static const char *const sites_heading[] = { "live at the peak", "leaked by", "live at the peak", "grew most" };

static void print_text(const struct verdict *v, size_t n, struct wsp_loaded *l, struct wsp_loaded *base,
		       const struct options *o, size_t exceeded)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	printf("wsprof check of %s (%s)\n", l->path, p->cmdline[0] ? p->cmdline : p->exe);
	struct site_line *lines = malloc(sites_wanted(o) * sizeof *lines + 1);
	for (size_t i = 0; i < n; i++) {
		text_verdict(&v[i], l, o->baseline);
		if (!v[i].exceeded || !lines)
			continue;
		size_t k = sites_behind(&v[i], l, base, lines, sites_wanted(o));
		for (size_t s = 0; s < k; s++) {
			char a[32], amount[40];
			if (v[i].b->type == MAX_GROWTH)
				wsp_human_change(amount, sizeof amount, lines[s].bytes);
			else
				snprintf(amount, sizeof amount, "%s%s", wsp_est(l, v[i].b->kind),
					 wsp_human_bytes(a, sizeof a, (uint64_t)lines[s].bytes));
			printf("  %9s %-17s %11s  %s%s\n", "", s ? "" : sites_heading[v[i].b->type], amount, lines[s].label,
			       lines[s].new_site ? " [new]" : "");
		}
	}
	free(lines);
	printf("\n%s: %zu of %zu budget%s exceeded\n", exceeded ? "FAILED" : "passed", exceeded, n, n == 1 ? "" : "s");
}

static void print_json(const struct verdict *v, size_t n, struct wsp_loaded *l, struct wsp_loaded *base,
		       const struct options *o, size_t exceeded)
{
	struct wsp_json j;
	wsp_json_init(&j, stdout);
	wsp_json_begin_object(&j, NULL);
	wsp_json_string(&j, "report", "check");
	wsp_json_string(&j, "trace", l->path);
	wsp_json_string(&j, "baseline", o->baseline);
	wsp_json_sampled(&j, l);
	wsp_json_bool(&j, "passed", !exceeded);
	wsp_json_uint(&j, "exceeded", exceeded);
	wsp_json_begin_array(&j, "budgets");
	struct site_line *lines = malloc(sites_wanted(o) * sizeof *lines + 1);
	for (size_t i = 0; i < n; i++) {
		const struct budget *b = v[i].b;
		wsp_json_begin_object(&j, NULL);
		wsp_json_string(&j, "budget", budget_options[b->type]);
		wsp_json_string(&j, "kind", wsprof_kind_name(b->kind));
		wsp_json_total_estimated(&j, l, b->kind);
		if (b->type == MAX_GROWTH) {
			wsp_json_double(&j, "limit_percent", b->percent);
			wsp_json_uint(&j, "base_bytes", v[i].base_value);
			isinf(v[i].growth) ? wsp_json_null(&j, "growth_percent") : wsp_json_double(&j, "growth_percent", v[i].growth);
		} else {
			wsp_json_uint(&j, "limit_bytes", b->limit);
		}
		wsp_json_uint(&j, "bytes", v[i].value);
		wsp_json_bool(&j, "exceeded", v[i].exceeded);
		wsp_json_begin_array(&j, "sites");
		size_t k = v[i].exceeded && lines ? sites_behind(&v[i], l, base, lines, sites_wanted(o)) : 0;
		for (size_t s = 0; s < k; s++) {
			wsp_json_begin_object(&j, NULL);
			wsp_json_string(&j, "label", lines[s].label);
			wsp_json_int(&j, "bytes", lines[s].bytes);
			wsp_json_end_object(&j);
		}
		wsp_json_end_array(&j);
		wsp_json_end_object(&j);
	}
	free(lines);
	wsp_json_end_array(&j);
	wsp_json_end_object(&j);
}

int wsp_cmd_check(int argc, char **argv)
{
	static const struct wsp_cli_option own[] = {
		{ "max-peak", required_argument, 0, MAX_PEAK },
		{ "max-leaked", required_argument, 0, MAX_LEAKED },
		{ "max-in-use", required_argument, 0, MAX_IN_USE },
		{ "max-growth", required_argument, 0, MAX_GROWTH },
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
		growth = growth || o.budgets[i].type == MAX_GROWTH;
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
	struct verdict v[MAX_BUDGETS];
	size_t exceeded = 0;
	for (size_t i = 0; i < o.n; i++) {
		v[i] = judge(&o.budgets[i], &l, o.baseline ? &base : NULL);
		exceeded += v[i].exceeded;
	}
	(cli.json ? print_json : print_text)(v, o.n, &l, o.baseline ? &base : NULL, &o, exceeded);
	if (o.baseline)
		wsp_loaded_free(&base);
	wsp_loaded_free(&l);
	return exceeded ? 1 : 0;
}
