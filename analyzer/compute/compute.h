/*
 * compute.h - results as plain structs, computed from a loaded trace's
 * model and symbols: the call-site rows, two runs' sites paired, ...
 * Nothing here prints or draws: the renderers (text.h, views.h) do, with
 * what these hand them.
 */
#ifndef WSP_COMPUTE_H
#define WSP_COMPUTE_H

#include "analyzer.h"

/* An allocation site: the first frame outside the allocator, and the
 * figures of every stack of one kind that allocates there. */
struct wsp_site_row {
	struct wsp_frame site;
	uint64_t stack;          /* one of the stacks grouped here */
	struct wsp_site_stats sum;
};
/* The sites of one kind in a trace loaded with per_stack and symbols,
 * largest first by sort (peak, allocations, bytes, leaked, temporary,
 * accessed, cold). @return 0 (free *rows), or -1 (unknown sort, no memory). */
int wsp_callsites_rows(struct wsp_loaded *l, unsigned kind, const char *sort, struct wsp_site_row **rows, size_t *n);

/* callsites and leaks of a job (jobsites.c): the rows of every process
 * merged by their text, with how many processes each is in. */
struct wsp_job_report {
	unsigned kind;
	const char *sort;   /* callsites' --sort name */
	size_t top;
	bool json, leaks, by_stack;
};
/* @return the exit status. */
int wsp_job_sites(char *const *paths, size_t n, const struct wsp_job_report *o);

/* The call sites of one kind in two runs, paired (sitematch.c): by
 * function, source file and line; then, of those left, a function and
 * file with as many sites in both runs in line order (the code moved);
 * a frame without a function name by module and offset (one build only).
 * Both traces loaded with per_stack and symbols. */
struct wsp_site_pair {
	const struct wsp_site_row *base, *now; /* NULL: the site is in the other run only */
	bool moved;                            /* paired by function and file: its line moved */
};
struct wsp_site_match {
	struct wsp_site_row *base_rows, *new_rows;
	size_t nbase, nnew;
	struct wsp_site_pair *pairs; /* the new run's sites in its order, then the base's alone */
	size_t npairs;
	size_t matched, moved;       /* pairs, and of them those whose line moved */
	size_t only_base, only_new;  /* sites of one run only */
	size_t unnamed;              /* of those, without a function name (known by address alone) */
};
/* @return 0 (free with wsp_site_match_free), or -1 out of memory. */
int wsp_site_match(struct wsp_loaded *base, struct wsp_loaded *now, unsigned kind, struct wsp_site_match *m);
void wsp_site_match_free(struct wsp_site_match *m);

#endif
