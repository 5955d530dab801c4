/*
 * check.c - `wsprof check` printed: each budget held or exceeded with its
 * figure and, for an exceeded one, the call sites that account for most
 * of it (compute/budget.c judged them), as text or JSON. The command,
 * and its exit status, is cmd/check.c.
 */
#include "text.h"
#include "compute.h"
#include "json.h"

#include <math.h>
#include <stdio.h>

static const char *const budget_words[WSP_BUDGET_TYPES] = { "peak", "leaked", "truly in use, peak", "peak growth" };

/* "heap peak 8.00 MiB" and what it is held against. */
static void text_verdict(const struct wsp_verdict *v, const struct wsp_loaded *l, const char *baseline)
{
	const struct wsp_budget *b = v->b;
	const char *est = wsp_est_total(l, b->kind);
	char a[32], c[32], d[32];
	printf("  %-9s %s %s ", v->exceeded ? "EXCEEDED" : "ok", wsprof_kind_name(b->kind), budget_words[b->type]);
	if (b->type == WSP_MAX_GROWTH) {
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

static void print_text(const struct wsp_verdict *v, size_t n, const struct wsp_loaded *l, const char *baseline, size_t exceeded)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	printf("wsprof check of %s (%s)\n", l->path, p->cmdline[0] ? p->cmdline : p->exe);
	for (size_t i = 0; i < n; i++) {
		text_verdict(&v[i], l, baseline);
		const struct wsp_budget_site *lines = v[i].sites;
		size_t k = v[i].nsites;
		for (size_t s = 0; s < k; s++) {
			char a[32], amount[40];
			if (v[i].b->type == WSP_MAX_GROWTH)
				wsp_human_change(amount, sizeof amount, lines[s].bytes);
			else
				snprintf(amount, sizeof amount, "%s%s", wsp_est(l, v[i].b->kind),
					 wsp_human_bytes(a, sizeof a, (uint64_t)lines[s].bytes));
			printf("  %9s %-17s %11s  %s%s\n", "", s ? "" : sites_heading[v[i].b->type], amount, lines[s].label,
			       lines[s].new_site ? " [new]" : "");
		}
	}
	printf("\n%s: %zu of %zu budget%s exceeded\n", exceeded ? "FAILED" : "passed", exceeded, n, n == 1 ? "" : "s");
}

static void print_json(const struct wsp_verdict *v, size_t n, const struct wsp_loaded *l, const char *baseline, size_t exceeded)
{
	struct wsp_json j;
	wsp_json_init(&j, stdout);
	wsp_json_begin_object(&j, NULL);
	wsp_json_string(&j, "report", "check");
	wsp_json_string(&j, "trace", l->path);
	wsp_json_string(&j, "baseline", baseline);
	wsp_json_sampled(&j, l);
	wsp_json_bool(&j, "passed", !exceeded);
	wsp_json_uint(&j, "exceeded", exceeded);
	wsp_json_begin_array(&j, "budgets");
	for (size_t i = 0; i < n; i++) {
		const struct wsp_budget *b = v[i].b;
		wsp_json_begin_object(&j, NULL);
		wsp_json_string(&j, "budget", wsp_budget_names[b->type]);
		wsp_json_string(&j, "kind", wsprof_kind_name(b->kind));
		wsp_json_total_estimated(&j, l, b->kind);
		if (b->type == WSP_MAX_GROWTH) {
			wsp_json_double(&j, "limit_percent", b->percent);
			wsp_json_uint(&j, "base_bytes", v[i].base_value);
			isinf(v[i].growth) ? wsp_json_null(&j, "growth_percent") : wsp_json_double(&j, "growth_percent", v[i].growth);
		} else {
			wsp_json_uint(&j, "limit_bytes", b->limit);
		}
		wsp_json_uint(&j, "bytes", v[i].value);
		wsp_json_bool(&j, "exceeded", v[i].exceeded);
		wsp_json_begin_array(&j, "sites");
		const struct wsp_budget_site *lines = v[i].sites;
		size_t k = v[i].nsites;
		for (size_t s = 0; s < k; s++) {
			wsp_json_begin_object(&j, NULL);
			wsp_json_string(&j, "label", lines[s].label);
			wsp_json_int(&j, "bytes", lines[s].bytes);
			wsp_json_end_object(&j);
		}
		wsp_json_end_array(&j);
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	wsp_json_end_object(&j);
}

void wsp_check_print(const struct wsp_verdict *v, size_t n, const struct wsp_loaded *l, const char *baseline, bool json)
{
	size_t exceeded = 0;
	for (size_t i = 0; i < n; i++)
		exceeded += v[i].exceeded;
	(json ? print_json : print_text)(v, n, l, baseline, exceeded);
}
