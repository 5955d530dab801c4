/*
 * budget.c - `wsprof check`'s budgets held: each budget's figure (a kind's
 * peak, bytes leaked, peak truly in use, or the peak's growth against a
 * baseline run) against its limit, and for an exceeded one the call sites
 * that account for most of it (for growth, paired as `wsprof diff` pairs
 * them). Prints nothing: text/check.c does; the command is cmd/check.c.
 */
#include "compute.h"

#include <math.h>
#include <stdlib.h>

const char *const wsp_budget_names[WSP_BUDGET_TYPES] = { "max-peak", "max-leaked", "max-in-use", "max-growth" };

static uint64_t kind_value(const struct wsp_loaded *l, const struct wsp_budget *b)
{
	const struct wsp_kind_stats *s = wsp_model_kind(l->model, b->kind);
	switch (b->type) {
	case WSP_MAX_LEAKED: return s->live_bytes;
	case WSP_MAX_IN_USE: return s->in_use_peak_bytes;
	default: return s->peak_bytes;
	}
}

static struct wsp_verdict judge_value(const struct wsp_budget *b, const struct wsp_loaded *l, const struct wsp_loaded *base)
{
	struct wsp_verdict v = { .b = b, .value = kind_value(l, b) };
	if (b->type != WSP_MAX_GROWTH) {
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
static size_t sites_behind(const struct wsp_verdict *v, struct wsp_loaded *l, struct wsp_loaded *base,
			   struct wsp_budget_site *out, size_t cap)
{
	size_t n = 0;
	if (v->b->type == WSP_MAX_GROWTH) {
		struct wsp_site_match m;
		if (wsp_site_match(base, l, v->b->kind, &m))
			return 0;
		qsort(m.pairs, m.npairs, sizeof *m.pairs, cmp_growth);
		for (size_t i = 0; i < m.npairs && n < cap && peak_growth(&m.pairs[i]) > 0; i++) {
			const struct wsp_site_pair *p = &m.pairs[i];
			out[n] = (struct wsp_budget_site){ .bytes = peak_growth(p), .new_site = !p->base };
			wsp_frame_label(p->now ? &p->now->site : &p->base->site, out[n].label, sizeof out[n].label);
			n++;
		}
		wsp_site_match_free(&m);
		return n;
	}
	bool leaked = v->b->type == WSP_MAX_LEAKED;
	struct wsp_site_row *rows;
	size_t nrows;
	if (wsp_callsites_rows(l, v->b->kind, leaked ? "leaked" : "peak", &rows, &nrows))
		return 0;
	for (size_t i = 0; i < nrows && n < cap; i++) {
		uint64_t bytes = leaked ? rows[i].sum.leaked_bytes : rows[i].sum.peak_bytes;
		if (!bytes)
			break;
		out[n] = (struct wsp_budget_site){ .bytes = (int64_t)bytes };
		wsp_frame_label(&rows[i].site, out[n].label, sizeof out[n].label);
		n++;
	}
	free(rows);
	return n;
}

struct wsp_verdict wsp_budget_judge(const struct wsp_budget *b, struct wsp_loaded *l, struct wsp_loaded *base, size_t sites)
{
	struct wsp_verdict v = judge_value(b, l, base);
	if (v.exceeded) {
		v.sites = malloc(sites * sizeof *v.sites + 1);
		v.nsites = v.sites ? sites_behind(&v, l, base, v.sites, sites) : 0;
	}
	return v;
}

void wsp_verdict_free(struct wsp_verdict *v)
{
	free(v->sites);
	v->sites = NULL;
	v->nsites = 0;
}
