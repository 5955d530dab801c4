/*
 * diff.c - two runs of a program compared (`wsprof diff`): each kind's
 * figures in both, their call sites paired (sitematch.c) and ordered by
 * the size of their change, and the caveats of the comparison (different
 * programs, one run sampled). Prints nothing: text/diff.c does.
 */
#include "compute.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const wsp_diff_figure_names[WSP_DIFF_FIGURES] = { "peak", "leaked", "allocations", "bytes" };
const char *const wsp_diff_figure_words[WSP_DIFF_FIGURES] = { "bytes live at the peak", "bytes leaked", "allocations",
							      "bytes allocated" };

uint64_t wsp_diff_site_figure(const struct wsp_site_row *r, enum wsp_diff_figure f)
{
	if (!r)
		return 0;
	switch (f) {
	case WSP_DIFF_PEAK: return r->sum.peak_bytes;
	case WSP_DIFF_LEAKED: return r->sum.leaked_bytes;
	case WSP_DIFF_ALLOCATIONS: return r->sum.allocations;
	case WSP_DIFF_BYTES: return r->sum.bytes;
	}
	return 0;
}

bool wsp_diff_kind_figure(const struct wsp_loaded *l, unsigned kind, enum wsp_diff_row row, uint64_t *v)
{
	const struct wsp_kind_stats *s = wsp_model_kind(l->model, kind);
	switch (row) {
	case WSP_DIFF_ROW_PEAK: *v = s->peak_bytes; return true;
	case WSP_DIFF_ROW_LEAKED: *v = s->live_bytes; return true;
	case WSP_DIFF_ROW_ALLOCATIONS: *v = s->allocations; return true;
	case WSP_DIFF_ROW_BYTES: *v = s->total_bytes; return true;
	case WSP_DIFF_ROW_FAILED: *v = s->failed; return true;
	case WSP_DIFF_ROW_IN_USE: *v = s->in_use_peak_bytes; return true;
	default: return wsp_wss_median(wsp_model_wss(l->model), (int)kind, v) == 0;
	}
}

bool wsp_diff_kind_shown(const struct wsp_loaded *b, const struct wsp_loaded *n, unsigned k)
{
	return !wsp_kind_is_address_space(k) && (wsp_model_kind(b->model, k)->seen || wsp_model_kind(n->model, k)->seen);
}

static const char *exe_name(const struct wsp_loaded *l)
{
	const char *exe = wsprof_trace_process(l->trace)->exe, *slash = strrchr(exe, '/');
	return slash ? slash + 1 : exe;
}

static void caveat(struct wsp_diff *d, const char *text)
{
	if (d->nwarnings < sizeof d->warnings / sizeof *d->warnings)
		snprintf(d->warnings[d->nwarnings++], sizeof d->warnings[0], "%s", text);
}

static void check_comparable(struct wsp_diff *d)
{
	char text[512];
	if (strcmp(exe_name(&d->base), exe_name(&d->now))) {
		snprintf(text, sizeof text, "the runs are of different programs (%s and %s): comparing them anyway",
			 exe_name(&d->base), exe_name(&d->now));
		caveat(d, text);
	}
	bool sb = wsp_model_estimated(d->base.model, WSPROF_KIND_HEAP), sn = wsp_model_estimated(d->now.model, WSPROF_KIND_HEAP);
	if (sb != sn) {
		snprintf(text, sizeof text, "%s was recorded with --sample-bytes: its heap figures are estimates (~), and so "
			 "are their changes", sb ? "the base" : "the new run");
		caveat(d, text);
	}
}

static int64_t change(uint64_t base, uint64_t now)
{
	return (int64_t)(now - base);
}

static enum wsp_diff_figure sort_by;

static int cmp_pairs(const void *pa, const void *pb)
{
	const struct wsp_site_pair *a = pa, *b = pb;
	int64_t ca = change(wsp_diff_site_figure(a->base, sort_by), wsp_diff_site_figure(a->now, sort_by));
	int64_t cb = change(wsp_diff_site_figure(b->base, sort_by), wsp_diff_site_figure(b->now, sort_by));
	uint64_t ma = ca < 0 ? (uint64_t)0 - (uint64_t)ca : (uint64_t)ca;
	uint64_t mb = cb < 0 ? (uint64_t)0 - (uint64_t)cb : (uint64_t)cb;
	if (ma != mb)
		return ma > mb ? -1 : 1;
	if (ca != cb)
		return ca > cb ? -1 : 1; /* growth before shrinkage of the same size */
	uint64_t na = wsp_diff_site_figure(a->now, sort_by), nb = wsp_diff_site_figure(b->now, sort_by);
	if (na != nb)
		return na > nb ? -1 : 1;
	const struct wsp_site_row *ra = a->now ? a->now : a->base, *rb = b->now ? b->now : b->base;
	int c = strcmp(ra->site.function ? ra->site.function : "", rb->site.function ? rb->site.function : "");
	if (c)
		return c;
	return (ra->site.line > rb->site.line) - (ra->site.line < rb->site.line);
}

/* The pairs with any change at all, by the size of the change. @return how many. */
static size_t changed_pairs(struct wsp_site_match *m, enum wsp_diff_figure sort)
{
	size_t n = 0;
	for (size_t i = 0; i < m->npairs; i++) {
		const struct wsp_site_pair *p = &m->pairs[i];
		bool same = true;
		for (int f = 0; f < WSP_DIFF_FIGURES; f++)
			same = same && wsp_diff_site_figure(p->base, (enum wsp_diff_figure)f) ==
					       wsp_diff_site_figure(p->now, (enum wsp_diff_figure)f);
		if (!same)
			m->pairs[n++] = *p;
	}
	sort_by = sort;
	qsort(m->pairs, n, sizeof *m->pairs, cmp_pairs);
	return n;
}

int wsp_diff_compare(struct wsp_diff *d, enum wsp_diff_figure sort)
{
	d->sort = sort;
	d->nwarnings = 0;
	if (wsp_site_match(&d->base, &d->now, d->kind, &d->match))
		return -ENOMEM;
	check_comparable(d);
	d->changed = changed_pairs(&d->match, sort);
	return 0;
}

void wsp_diff_free(struct wsp_diff *d)
{
	wsp_site_match_free(&d->match);
}
