/*
 * jobsites.c - the call-site rows of a job (callsites and leaks of
 * several traces): the sites (or whole stacks) of every process merged by
 * their symbolized text, as pprof merges profiles, each with the sum of
 * its figures and how many processes it appears in. Each reader adds its trace's rows (texts and
 * figures) to the job's under a lock, and the job's are merged by text
 * whenever they have doubled: memory follows the distinct sites of the
 * job, not the number of its processes. Printing them is
 * text/jobsites.c's.
 */
#include "compute.h"
#include "job.h"

#include "grow.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gather {
	unsigned kind;
	enum wsp_site_figure sort;
	bool by_stack;       /* a row per whole stack (leaks, --full-stacks) */
	pthread_mutex_t lock;
	struct wsp_job_rows all;    /* every process's rows so far */
	size_t merged;       /* all.v[0, merged) is merged by text */
};

/* The stack's frames as text, one a line ("at f (x.c:3)"). NULL without memory. */
static char *stack_text(struct wsp_loaded *l, uint64_t stack)
{
	const struct wsp_frame *frames;
	size_t n = wsp_syms_stack(l->syms, l->trace, stack, &frames);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	char label[1024];
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s %s\n", frames[i].inlined ? "inlined" : "at", wsp_frame_label(&frames[i], label, sizeof label));
	if (!n)
		fputs("(no stack recorded)\n", f);
	return fclose(f) ? NULL : text;
}

struct stack_rows {
	struct wsp_loaded *l;
	unsigned kind;
	struct wsp_job_rows *out;
	int err;
};

static void add_stack_row(const struct wsp_site_stats *s, void *arg)
{
	struct stack_rows *sr = arg;
	if (sr->err || s->kind != sr->kind)
		return;
	char *key = stack_text(sr->l, s->stack);
	if (!key || wsp_grow(&sr->out->v, &sr->out->cap, sr->out->n + 1, sizeof *sr->out->v)) {
		free(key);
		sr->err = -1;
		return;
	}
	sr->out->v[sr->out->n++] = (struct wsp_job_row){ .key = key, .sum = *s, .procs = 1 };
}

void wsp_job_rows_free(struct wsp_job_rows *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].key);
	free(r->v);
	*r = (struct wsp_job_rows){ 0 };
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const struct wsp_job_row *)a)->key, ((const struct wsp_job_row *)b)->key);
}

/* Rows of one text become one: figures added, processes counted. */
static void merge_by_text(struct wsp_job_rows *r)
{
	qsort(r->v, r->n, sizeof *r->v, cmp_key);
	size_t n = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (n && !strcmp(r->v[n - 1].key, r->v[i].key)) {
			wsp_site_stats_add(&r->v[n - 1].sum, &r->v[i].sum);
			r->v[n - 1].procs += r->v[i].procs;
			free(r->v[i].key);
			continue;
		}
		r->v[n++] = r->v[i];
	}
	r->n = n;
}

/* A process's rows into the job's (the keys move). @return 0 or -1. */
static int hand_over(struct gather *g, struct wsp_job_rows *rows)
{
	pthread_mutex_lock(&g->lock);
	int err = wsp_grow(&g->all.v, &g->all.cap, g->all.n + rows->n, sizeof *g->all.v);
	if (!err) {
		memcpy(g->all.v + g->all.n, rows->v, rows->n * sizeof *rows->v);
		g->all.n += rows->n;
		rows->n = 0;
		if (g->all.n > 2 * g->merged + 4096) {
			merge_by_text(&g->all);
			g->merged = g->all.n;
		}
	}
	pthread_mutex_unlock(&g->lock);
	wsp_job_rows_free(rows);
	return err ? -1 : 0;
}

/* On a reader's thread: the rows of one process. */
static int visit(struct wsp_job_proc *p, struct wsp_loaded *l, void *ctx)
{
	struct gather *g = ctx;
	struct wsp_job_rows local = { 0 }, *rows = &local;
	(void)p;
	if (g->by_stack) {
		struct stack_rows sr = { l, g->kind, rows, 0 };
		wsp_model_each_site(l->model, add_stack_row, &sr);
		if (sr.err)
			goto oom;
		return hand_over(g, rows) ? (fprintf(stderr, "wsprof: out of memory\n"), -1) : 0;
	}
	struct wsp_site_row *site;
	size_t n;
	if (wsp_site_rows(l, g->kind, false, g->sort, &site, &n))
		goto oom;
	rows->v = calloc(n ? n : 1, sizeof *rows->v);
	for (size_t i = 0; rows->v && i < n; i++) {
		char label[1024];
		rows->v[i] = (struct wsp_job_row){ .key = strdup(wsp_frame_label(&site[i].site, label, sizeof label)),
					    .sum = site[i].sum, .procs = 1 };
		rows->n++;
		if (!rows->v[i].key)
			break;
	}
	free(site);
	if (!rows->v || rows->n < n || (n && !rows->v[n - 1].key) || hand_over(g, rows))
		goto oom;
	return 0;
oom:
	wsp_job_rows_free(rows);
	fprintf(stderr, "wsprof: out of memory\n");
	return -1;
}

static int cmp_figure(const void *a, const void *b, void *arg)
{
	const struct wsp_job_row *x = a, *y = b;
	enum wsp_site_figure f = *(const enum wsp_site_figure *)arg;
	uint64_t p = wsp_site_figure(&x->sum, f), q = wsp_site_figure(&y->sum, f);
	if (p != q)
		return p > q ? -1 : 1;
	if (x->sum.bytes != y->sum.bytes)
		return x->sum.bytes > y->sum.bytes ? -1 : 1;
	return strcmp(x->key, y->key);
}

int wsp_job_site_rows(char *const *paths, size_t n, unsigned kind, enum wsp_site_figure sort, bool by_stack, bool leaks,
		      struct wsp_job *job, struct wsp_job_rows *rows)
{
	struct gather g = { .kind = kind, .sort = sort, .by_stack = by_stack, .lock = PTHREAD_MUTEX_INITIALIZER };
	/* A job's rows show no access figure: they are matched only for a sort by them. */
	bool access = !leaks && (sort == WSP_FIG_ACCESSED || sort == WSP_FIG_COLD);
	struct wsp_model_options mo = { .per_stack = true, .no_access_figures = !access };
	if (wsp_job_load(paths, n, &mo, true, visit, &g, job)) {
		wsp_job_rows_free(&g.all);
		return 1;
	}
	merge_by_text(&g.all);
	qsort_r(g.all.v, g.all.n, sizeof *g.all.v, cmp_figure, &sort);
	*rows = g.all;
	return 0;
}
