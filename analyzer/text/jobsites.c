/*
 * jobsites.c - `wsprof report callsites` and `leaks` of a job: the sites
 * (or whole stacks) of every process merged by their symbolized text, as
 * pprof merges profiles, each with the sum of its figures and how many
 * processes it appears in. Each reader adds its trace's rows (texts and
 * figures) to the job's under a lock, and the job's are merged by text
 * whenever they have doubled: memory follows the distinct sites of the
 * job, not the number of its processes.
 */
#include "analyzer.h"
#include "compute.h"
#include "job.h"
#include "json.h"

#include "grow.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A site (or a stack) of one process, then of the job. */
struct jrow {
	char *key;   /* the site's label, or the stack's frames, one a line */
	struct wsp_site_stats sum;
	size_t procs;
};

struct jrows {
	struct jrow *v;
	size_t n, cap;
};

struct gather {
	unsigned kind;
	const char *sort;
	bool by_stack;       /* a row per whole stack (leaks, --full-stacks) */
	pthread_mutex_t lock;
	struct jrows all;    /* every process's rows so far */
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

static void add_stats(struct wsp_site_stats *to, const struct wsp_site_stats *s)
{
	to->allocations += s->allocations;
	to->bytes += s->bytes;
	to->failed += s->failed;
	to->temporary += s->temporary;
	to->peak_bytes += s->peak_bytes;
	to->leaked_bytes += s->leaked_bytes;
	to->leaked_blocks += s->leaked_blocks;
	to->accessed_bytes += s->accessed_bytes;
	if (s->coldest_idle_ns > to->coldest_idle_ns)
		to->coldest_idle_ns = s->coldest_idle_ns;
}

struct stack_rows {
	struct wsp_loaded *l;
	unsigned kind;
	struct jrows *out;
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
	sr->out->v[sr->out->n++] = (struct jrow){ .key = key, .sum = *s, .procs = 1 };
}

static void free_rows(struct jrows *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].key);
	free(r->v);
	*r = (struct jrows){ 0 };
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const struct jrow *)a)->key, ((const struct jrow *)b)->key);
}

/* Rows of one text become one: figures added, processes counted. */
static void merge_by_text(struct jrows *r)
{
	qsort(r->v, r->n, sizeof *r->v, cmp_key);
	size_t n = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (n && !strcmp(r->v[n - 1].key, r->v[i].key)) {
			add_stats(&r->v[n - 1].sum, &r->v[i].sum);
			r->v[n - 1].procs += r->v[i].procs;
			free(r->v[i].key);
			continue;
		}
		r->v[n++] = r->v[i];
	}
	r->n = n;
}

/* A process's rows into the job's (the keys move). @return 0 or -1. */
static int hand_over(struct gather *g, struct jrows *rows)
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
	free_rows(rows);
	return err ? -1 : 0;
}

/* On a reader's thread: the rows of one process. */
static int visit(struct wsp_job_proc *p, struct wsp_loaded *l, void *ctx)
{
	struct gather *g = ctx;
	struct jrows local = { 0 }, *rows = &local;
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
	if (wsp_callsites_rows(l, g->kind, g->sort, &site, &n))
		goto oom;
	rows->v = calloc(n ? n : 1, sizeof *rows->v);
	for (size_t i = 0; rows->v && i < n; i++) {
		char label[1024];
		rows->v[i] = (struct jrow){ .key = strdup(wsp_frame_label(&site[i].site, label, sizeof label)),
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
	free_rows(rows);
	fprintf(stderr, "wsprof: out of memory\n");
	return -1;
}

static int cmp_figure(const void *a, const void *b, void *arg)
{
	const struct jrow *x = a, *y = b;
	enum wsp_site_figure f = *(const enum wsp_site_figure *)arg;
	uint64_t p = wsp_site_figure(&x->sum, f), q = wsp_site_figure(&y->sum, f);
	if (p != q)
		return p > q ? -1 : 1;
	if (x->sum.bytes != y->sum.bytes)
		return x->sum.bytes > y->sum.bytes ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* ---- Output -------------------------------------------------------------- */

static size_t readable(const struct wsp_job *job)
{
	return job->n - job->unread;
}

static void json_row(struct wsp_json *j, const struct jrow *r, bool by_stack)
{
	wsp_json_begin_object(j, NULL);
	if (by_stack) {
		wsp_json_begin_array(j, "stack");
		for (const char *s = r->key; *s;) {
			const char *nl = strchr(s, '\n');
			size_t len = nl ? (size_t)(nl - s) : strlen(s);
			char line[1100];
			snprintf(line, sizeof line, "%.*s", (int)len, s);
			wsp_json_string(j, NULL, !strncmp(line, "at ", 3) ? line + 3 : !strncmp(line, "inlined ", 8) ? line + 8 : line);
			s += len + (nl != NULL);
		}
		wsp_json_end_array(j);
	} else {
		wsp_json_string(j, "label", r->key);
	}
	wsp_json_uint(j, "processes", r->procs);
	wsp_json_uint(j, "allocations", r->sum.allocations);
	wsp_json_uint(j, "bytes", r->sum.bytes);
	wsp_json_uint(j, "peak_bytes", r->sum.peak_bytes);
	wsp_json_uint(j, "leaked_bytes", r->sum.leaked_bytes);
	wsp_json_uint(j, "leaked_blocks", r->sum.leaked_blocks);
	wsp_json_uint(j, "temporary", r->sum.temporary);
	wsp_json_uint(j, "failed", r->sum.failed);
	wsp_json_end_object(j);
}

static void print_stack_lines(const char *text)
{
	for (const char *s = text; *s;) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		printf("      %.*s\n", (int)len, s);
		s += len + (nl != NULL);
	}
}

static void print_job(const struct wsp_job *job, const struct jrows *rows, const struct wsp_job_report *o)
{
	size_t shown = rows->n < o->top ? rows->n : o->top;
	size_t n = 0;
	uint64_t leaked = 0, blocks = 0;
	for (size_t i = 0; i < rows->n; i++)
		if (!o->leaks || rows->v[i].sum.leaked_blocks)
			n++, leaked += rows->v[i].sum.leaked_bytes, blocks += rows->v[i].sum.leaked_blocks;
	shown = n < o->top ? n : o->top;
	if (o->json) {
		struct wsp_json j;
		wsp_json_init(&j, stdout);
		wsp_json_begin_object(&j, NULL);
		wsp_json_string(&j, "report", o->leaks ? "leaks" : "callsites");
		wsp_json_bool(&j, "job", true);
		wsp_json_uint(&j, "traces", readable(job));
		wsp_json_string(&j, "kind", wsprof_kind_name(o->kind));
		if (!o->leaks)
			wsp_json_string(&j, "sort", o->sort);
		else
			wsp_json_uint(&j, "leaked_bytes", leaked), wsp_json_uint(&j, "leaked_blocks", blocks);
		wsp_json_uint(&j, o->leaks || o->by_stack ? "stacks_total" : "sites_total", n);
		wsp_json_begin_array(&j, o->leaks || o->by_stack ? "stacks" : "sites");
		for (size_t i = 0, k = 0; i < rows->n && k < shown; i++) {
			if (o->leaks && !rows->v[i].sum.leaked_blocks)
				continue;
			json_row(&j, &rows->v[i], o->by_stack);
			k++;
		}
		wsp_json_end_array(&j);
		wsp_json_end_object(&j);
		return;
	}
	char a[32], b[32], c[32], d[32], e[32];
	printf("wsprof %s of a job: %zu trace%s\n", o->leaks ? "leaks" : "call sites", readable(job), readable(job) == 1 ? "" : "s");
	if (o->leaks) {
		printf("  %s: %s leaked in %s block%s from %zu call stack%s, in all processes\n", wsprof_kind_name(o->kind),
		       wsp_human_bytes(a, sizeof a, leaked), wsp_group_digits(b, sizeof b, blocks), blocks == 1 ? "" : "s", n,
		       n == 1 ? "" : "s");
		for (size_t i = 0, k = 0; i < rows->n && k < shown; i++) {
			const struct jrow *r = &rows->v[i];
			if (!r->sum.leaked_blocks)
				continue;
			printf("\n  %s in %s block%s (of %s allocated there), in %zu process%s\n",
			       wsp_human_bytes(a, sizeof a, r->sum.leaked_bytes), wsp_group_digits(b, sizeof b, r->sum.leaked_blocks),
			       r->sum.leaked_blocks == 1 ? "" : "s", wsp_group_digits(c, sizeof c, r->sum.allocations), r->procs,
			       r->procs == 1 ? "" : "es");
			print_stack_lines(r->key);
			k++;
		}
	} else {
		printf("  %s: %zu %s%s merged across processes, sorted by %s%s\n\n", wsprof_kind_name(o->kind), n,
		       o->by_stack ? "call stack" : "allocation site", n == 1 ? "" : "s", o->sort,
		       shown < n ? ", the top ones" : "");
		printf("  %11s %11s %13s %11s %11s %9s  %s\n", "peak", "leaked", "allocations", "temporary", "bytes", "processes",
		       o->by_stack ? "call stack" : "site");
		for (size_t i = 0; i < shown; i++) {
			const struct jrow *r = &rows->v[i];
			const char *nl = strchr(r->key, '\n');
			printf("  %11s %11s %13s %11s %11s %9zu  %.*s\n", wsp_human_bytes(a, sizeof a, r->sum.peak_bytes),
			       wsp_human_bytes(b, sizeof b, r->sum.leaked_bytes), wsp_group_digits(c, sizeof c, r->sum.allocations),
			       wsp_group_digits(d, sizeof d, r->sum.temporary), wsp_human_bytes(e, sizeof e, r->sum.bytes), r->procs,
			       (int)(nl ? (size_t)(nl - r->key) : strlen(r->key)), r->key);
			if (o->by_stack)
				print_stack_lines(r->key);
		}
		printf("\n  peak: the sum of what each process held at its own peak\n");
	}
	if (shown < n)
		printf("\n  ... %zu more (--top 0 shows all)\n", n - shown);
}

int wsp_job_sites(char *const *paths, size_t n, const struct wsp_job_report *o)
{
	static const struct {
		const char *name;
		enum wsp_site_figure figure;
	} sorts[] = { { "peak", WSP_FIG_PEAK }, { "allocations", WSP_FIG_ALLOCATIONS }, { "bytes", WSP_FIG_BYTES },
		      { "leaked", WSP_FIG_LEAKED }, { "temporary", WSP_FIG_TEMPORARY }, { "accessed", WSP_FIG_ACCESSED },
		      { "cold", WSP_FIG_COLD } };
	enum wsp_site_figure figure = WSP_FIG_PEAK;
	for (size_t i = 0; i < sizeof sorts / sizeof *sorts; i++)
		if (!strcmp(o->sort, sorts[i].name))
			figure = sorts[i].figure;
	struct gather g = { .kind = o->kind, .sort = o->sort, .by_stack = o->by_stack, .lock = PTHREAD_MUTEX_INITIALIZER };
	/* A job's rows show no access figure: they are matched only for a sort by them. */
	bool access = !o->leaks && (figure == WSP_FIG_ACCESSED || figure == WSP_FIG_COLD);
	struct wsp_model_options mo = { .per_stack = true, .no_access_figures = !access };
	struct wsp_job job;
	if (wsp_job_load(paths, n, &mo, true, visit, &g, &job)) {
		free_rows(&g.all);
		return 1;
	}
	merge_by_text(&g.all);
	qsort_r(g.all.v, g.all.n, sizeof *g.all.v, cmp_figure, &figure);
	print_job(&job, &g.all, o);
	free_rows(&g.all);
	wsp_job_free(&job, NULL);
	return 0;
}
