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

/* The sorts of call-site rows, by name: the site figures of model.h in
 * their order ("peak", "allocations", ... "cold"). */
#define WSP_SITE_SORTS 7
extern const char *const wsp_site_sort_names[WSP_SITE_SORTS];
/* @return the figure named, or -1. */
int wsp_site_sort_parse(const char *name);
/* Does a view sorted by this figure show access figures? */
static inline bool wsp_site_sort_shows_access(enum wsp_site_figure f)
{
	return f == WSP_FIG_ACCESSED || f == WSP_FIG_COLD;
}
/* The rows of one kind, grouped by site (or a row per stack when
 * by_stack), sorted by the figure, then bytes, then stack.
 * @return 0 (free *rows), or -1 out of memory. */
int wsp_site_rows(struct wsp_loaded *l, unsigned kind, bool by_stack, enum wsp_site_figure sort,
		  struct wsp_site_row **rows, size_t *n);
/* s's figures added to to's (the coldest idle time: the larger). */
void wsp_site_stats_add(struct wsp_site_stats *to, const struct wsp_site_stats *s);
/* The rows still holding blocks at the end, kept in order in place, and
 * their leaked bytes and blocks summed. @return how many. */
size_t wsp_site_rows_leaked(struct wsp_site_row *rows, size_t n, uint64_t *bytes, uint64_t *blocks);

/* callsites and leaks of a job (jobsites.c): the rows of every process
 * merged by their text (the site's label, or the stack's frames one a
 * line), with how many processes each is in. */
struct wsp_job_row {
	char *key;
	struct wsp_site_stats sum;
	size_t procs;
};
struct wsp_job_rows {
	struct wsp_job_row *v;
	size_t n, cap;
};
struct wsp_job;
/* The job's traces read side by side (job.h), their rows of one kind
 * merged and sorted by the figure; leaks: no access figures matched.
 * @return 0 (free rows with wsp_job_rows_free, job with wsp_job_free),
 * or 1 after a one-line error. */
int wsp_job_site_rows(char *const *paths, size_t n, unsigned kind, enum wsp_site_figure sort, bool by_stack, bool leaks,
		      struct wsp_job *job, struct wsp_job_rows *rows);
void wsp_job_rows_free(struct wsp_job_rows *r);

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

/* The working set's distribution over its windows (wssdist.c): nearest-rank
 * percentiles and the mean of the bytes of source (-1: all) and kind (-1:
 * all) accessed per window. */
struct wsp_wss_point;
struct wsp_wss_dist {
	uint64_t p[5]; /* 0, 25, 50, 75, 100 */
	uint64_t mean;
	size_t n;
};
/* All zero when out of memory. */
struct wsp_wss_dist wsp_wss_dist_of(const struct wsp_wss_point *pts, size_t n, int source, int kind);

/* ---- diff.c: two runs compared (`wsprof diff`, `wsprof check --max-growth`) -- */

/* The figures a site is compared by, in --sort's words (wsp_diff_figure_names). */
enum wsp_diff_figure { WSP_DIFF_PEAK, WSP_DIFF_LEAKED, WSP_DIFF_ALLOCATIONS, WSP_DIFF_BYTES };
#define WSP_DIFF_FIGURES 4
extern const char *const wsp_diff_figure_names[WSP_DIFF_FIGURES];
/* "bytes live at the peak", ...: the figure in a sentence. */
extern const char *const wsp_diff_figure_words[WSP_DIFF_FIGURES];
/* A site's figure; 0 for a site a run does not have (row NULL). */
uint64_t wsp_diff_site_figure(const struct wsp_site_row *row, enum wsp_diff_figure f);

/* The figures of a kind the two runs are compared by, row by row. */
enum wsp_diff_row { WSP_DIFF_ROW_PEAK, WSP_DIFF_ROW_LEAKED, WSP_DIFF_ROW_ALLOCATIONS, WSP_DIFF_ROW_BYTES,
		    WSP_DIFF_ROW_FAILED, WSP_DIFF_ROW_IN_USE, WSP_DIFF_ROW_WSS, WSP_DIFF_ROWS };
/* A kind's figure in one run; false when it has none (no access samples). */
bool wsp_diff_kind_figure(const struct wsp_loaded *l, unsigned kind, enum wsp_diff_row row, uint64_t *v);
/* Kinds with a line: seen in either run, address ranges told with their kind. */
bool wsp_diff_kind_shown(const struct wsp_loaded *base, const struct wsp_loaded *now, unsigned kind);

/* Two runs, loaded with per_stack and symbols by the command, compared. */
struct wsp_diff {
	struct wsp_loaded base, now;
	struct wsp_site_match match; /* after wsp_diff_compare: the changed pairs first, by the change */
	unsigned kind;
	enum wsp_diff_figure sort;
	size_t changed;              /* pairs with any change, first in match.pairs */
	char warnings[3][512];       /* caveats of the comparison, for stderr and the JSON */
	size_t nwarnings;
};
/* Pair base's and now's sites of d->kind, note the caveats, and order
 * the pairs with any change by the change of sort.
 * @return 0 (free with wsp_diff_free), or -ENOMEM. */
int wsp_diff_compare(struct wsp_diff *d, enum wsp_diff_figure sort);
/* Frees what wsp_diff_compare made (the runs stay the command's). */
void wsp_diff_free(struct wsp_diff *d);

/* ---- budget.c: `wsprof check`'s budgets held -------------------------------- */

enum wsp_budget_type { WSP_MAX_PEAK, WSP_MAX_LEAKED, WSP_MAX_IN_USE, WSP_MAX_GROWTH };
#define WSP_BUDGET_TYPES 4
/* "max-peak", ...: the option of each type. */
extern const char *const wsp_budget_names[WSP_BUDGET_TYPES];

struct wsp_budget {
	enum wsp_budget_type type;
	unsigned kind;
	uint64_t limit;      /* bytes (WSP_MAX_GROWTH: unused) */
	double percent;      /* WSP_MAX_GROWTH */
	const char *text;    /* as given */
};

/* A call site behind an exceeded budget: its share of the figure (for
 * growth, how much more it holds at the peak than in the baseline). */
struct wsp_budget_site {
	int64_t bytes;
	char label[512];
	bool new_site; /* growth: not in the baseline */
};

struct wsp_verdict {
	const struct wsp_budget *b;
	uint64_t value, base_value; /* base_value: WSP_MAX_GROWTH */
	double growth;              /* percent; INFINITY from nothing */
	bool exceeded;
	struct wsp_budget_site *sites; /* exceeded: those behind it, most first */
	size_t nsites;
};
/* Hold b against l (and base, loaded with per_stack and symbols, for
 * WSP_MAX_GROWTH); an exceeded budget gets at most sites of the call
 * sites behind it (none when out of memory). Free with wsp_verdict_free. */
struct wsp_verdict wsp_budget_judge(const struct wsp_budget *b, struct wsp_loaded *l, struct wsp_loaded *base, size_t sites);
void wsp_verdict_free(struct wsp_verdict *v);

#endif
