/*
 * sitematch.c - the call sites of two runs of a program, paired (wsprof
 * diff, wsprof check --baseline).
 *
 * Two builds of one program share no addresses, often not even module
 * names, so a site is known by its symbolized frame: function, source
 * file (its last component: builds live in different directories) and
 * line. Sites that agree on all three pair first. Of those left, a
 * function and file with as many sites in each run pair in line order:
 * the code moved (lines added above it) but is the same. A frame with no
 * function name is known by its module and offset, which pair only within
 * one build; whatever pairs with nothing is a site of one run only.
 */
#include "analyzer.h"
#include "compute.h"

#include <stdlib.h>
#include <string.h>

struct key {
	const struct wsp_site_row *row;
	const char *function, *file, *module; /* file and module: their last component */
	bool now;                             /* a site of the new run */
	size_t at;                            /* its row's index in its run */
};

static const char *last_component(const char *path)
{
	if (!path)
		return "";
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

/* Function and file, then the line: the order both passes group by. */
static int cmp_place(const struct key *a, const struct key *b)
{
	if (!a->function != !b->function)
		return a->function ? -1 : 1;
	if (!a->function) { /* no name: module and offset */
		int c = cmp_str(a->module, b->module);
		if (c)
			return c;
		return (a->row->site.offset > b->row->site.offset) - (a->row->site.offset < b->row->site.offset);
	}
	int c = strcmp(a->function, b->function);
	return c ? c : cmp_str(a->file, b->file);
}

static int cmp_exact(const void *pa, const void *pb)
{
	const struct key *a = pa, *b = pb;
	int c = cmp_place(a, b);
	if (c)
		return c;
	if (a->function && a->row->site.line != b->row->site.line)
		return a->row->site.line < b->row->site.line ? -1 : 1;
	if (a->now != b->now)
		return a->now ? 1 : -1;
	return (a->at > b->at) - (a->at < b->at);
}

/* Pair the base keys of [lo, hi) with its new keys in order, as far as
 * both go. @return how many pairs. */
static size_t pair_run(struct key *k, size_t lo, size_t hi, const struct wsp_site_row **partner_base,
		       const struct wsp_site_row **partner_new, bool *moved, bool is_move)
{
	size_t nb = 0, nn = 0, made = 0;
	for (size_t i = lo; i < hi; i++)
		k[i].now ? nn++ : nb++;
	if (is_move && nb != nn)
		return 0; /* not the same sites moved: leave them apart */
	size_t b = lo, n = lo;
	for (;;) {
		while (b < hi && k[b].now)
			b++;
		while (n < hi && !k[n].now)
			n++;
		if (b >= hi || n >= hi)
			break;
		partner_new[k[n].at] = k[b].row;
		partner_base[k[b].at] = k[n].row;
		moved[k[n].at] = is_move;
		made++;
		b++;
		n++;
	}
	return made;
}

static struct key key_of(const struct wsp_site_row *row, bool now, size_t at)
{
	return (struct key){ row, row->site.function, last_component(row->site.file), last_component(row->site.module),
			     now, at };
}

/* The keys of the rows still without a partner, sorted by cmp_exact. */
static size_t unpaired(struct key *k, const struct wsp_site_match *m, const struct wsp_site_row **pb,
		       const struct wsp_site_row **pn)
{
	size_t n = 0;
	for (size_t i = 0; i < m->nbase; i++)
		if (!pb[i])
			k[n++] = key_of(&m->base_rows[i], false, i);
	for (size_t i = 0; i < m->nnew; i++)
		if (!pn[i])
			k[n++] = key_of(&m->new_rows[i], true, i);
	qsort(k, n, sizeof *k, cmp_exact);
	return n;
}

static int match_rows(struct wsp_site_match *m)
{
	size_t total = m->nbase + m->nnew;
	struct key *k = malloc((total ? total : 1) * sizeof *k);
	const struct wsp_site_row **pb = calloc(m->nbase + 1, sizeof *pb), **pn = calloc(m->nnew + 1, sizeof *pn);
	bool *moved = calloc(m->nnew + 1, sizeof *moved);
	m->pairs = malloc((total ? total : 1) * sizeof *m->pairs);
	if (!k || !pb || !pn || !moved || !m->pairs) {
		free(k), free(pb), free(pn), free(moved);
		return -1;
	}
	/* Pass 1: the same function, file and line (or module and offset). */
	size_t n = unpaired(k, m, pb, pn);
	for (size_t lo = 0, hi; lo < n; lo = hi) {
		for (hi = lo + 1; hi < n && cmp_place(&k[lo], &k[hi]) == 0 &&
				  (!k[lo].function || k[lo].row->site.line == k[hi].row->site.line);
		     hi++)
			;
		pair_run(k, lo, hi, pb, pn, moved, false);
	}
	/* Pass 2: a function and file whose sites all moved alike. */
	n = unpaired(k, m, pb, pn);
	for (size_t lo = 0, hi; lo < n; lo = hi) {
		for (hi = lo + 1; hi < n && cmp_place(&k[lo], &k[hi]) == 0; hi++)
			;
		if (k[lo].function)
			pair_run(k, lo, hi, pb, pn, moved, true);
	}
	for (size_t i = 0; i < m->nnew; i++) {
		m->pairs[m->npairs++] = (struct wsp_site_pair){ pn[i], &m->new_rows[i], moved[i] };
		if (pn[i])
			m->matched++, m->moved += moved[i];
		else
			m->only_new++, m->unnamed += !m->new_rows[i].site.function;
	}
	for (size_t i = 0; i < m->nbase; i++)
		if (!pb[i]) {
			m->pairs[m->npairs++] = (struct wsp_site_pair){ &m->base_rows[i], NULL, false };
			m->only_base++;
			m->unnamed += !m->base_rows[i].site.function;
		}
	free(k), free(pb), free(pn), free(moved);
	return 0;
}

int wsp_site_match(struct wsp_loaded *base, struct wsp_loaded *now, unsigned kind, struct wsp_site_match *m)
{
	*m = (struct wsp_site_match){ 0 };
	if (wsp_callsites_rows(base, kind, "peak", &m->base_rows, &m->nbase) ||
	    wsp_callsites_rows(now, kind, "peak", &m->new_rows, &m->nnew) || match_rows(m)) {
		wsp_site_match_free(m);
		return -1;
	}
	return 0;
}

void wsp_site_match_free(struct wsp_site_match *m)
{
	free(m->base_rows);
	free(m->new_rows);
	free(m->pairs);
	*m = (struct wsp_site_match){ 0 };
}
