/*
 * callsites.c - `wsprof report callsites` and `wsprof report leaks`:
 * which code allocates, holds at the peak, leaks and churns memory.
 *
 * Both start from the model's per-stack figures. Call sites group stacks
 * by their first frame outside the allocator (function and line, inlined
 * frames included); --full-stacks keeps each stack apart. Leaks are the
 * stacks still holding blocks at the end, largest first.
 */
#include "analyzer.h"
#include "text.h"
#include "cli.h"
#include "compute.h"
#include "commands.h"
#include "json.h"

#include "grow.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rows {
	struct wsp_site_row *v;
	size_t n, cap;
	uint32_t *index;         /* hash of the site -> row + 1, when grouping */
	size_t index_cap;
	bool by_stack;
	unsigned kind;
	struct wsp_loaded *l;
	int err;
};

/* The sort keys are the site figures, in their order (the coldest memory
 * first: blocks untouched for longest). */
enum sort_key { BY_PEAK, BY_ALLOCATIONS, BY_BYTES, BY_LEAKED, BY_TEMPORARY, BY_ACCESSED, BY_COLD };
static const char *const sort_names[] = { "peak", "allocations", "bytes", "leaked", "temporary", "accessed", "cold" };

static uint64_t metric(const struct wsp_site_stats *s, enum sort_key k)
{
	return wsp_site_figure(s, (enum wsp_site_figure)k);
}

static bool same_site(const struct wsp_frame *a, const struct wsp_frame *b)
{
	/* Interned strings compare by pointer. */
	return a->function == b->function && a->file == b->file && a->line == b->line &&
	       a->module == b->module && (a->function || a->offset == b->offset);
}

static size_t site_hash(const struct wsp_frame *f, size_t cap)
{
	uint64_t h = (uintptr_t)f->function * 31 + (uintptr_t)f->file * 17 + f->line * 13 + (uintptr_t)f->module;
	if (!f->function)
		h += f->offset * 0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (size_t)h & (cap - 1);
}

static size_t row_site_hash(size_t i, void *ctx)
{
	return site_hash(&((const struct rows *)ctx)->v[i].site, 0); /* unmasked */
}

/* The row of a site, made if new. NULL without memory. */
static struct wsp_site_row *row_of(struct rows *r, const struct wsp_frame *site, uint64_t stack)
{
	if (!r->by_stack && wsp_index_fit(&r->index, &r->index_cap, r->n + 1, 256, 0, r->n, row_site_hash, NULL, r))
		return NULL;
	size_t j = 0;
	if (!r->by_stack) {
		for (j = site_hash(site, r->index_cap); r->index[j]; j = (j + 1) & (r->index_cap - 1))
			if (same_site(&r->v[r->index[j] - 1].site, site))
				return &r->v[r->index[j] - 1];
	}
	if (wsp_grow(&r->v, &r->cap, r->n + 1, sizeof *r->v))
		return NULL;
	struct wsp_site_row *row = &r->v[r->n++];
	memset(row, 0, sizeof *row);
	row->site = *site;
	row->stack = stack;
	if (!r->by_stack)
		r->index[j] = (uint32_t)r->n;
	return row;
}

static void add_site(const struct wsp_site_stats *s, void *arg)
{
	struct rows *r = arg;
	if (s->kind != r->kind || r->err)
		return;
	const struct wsp_frame *frames;
	size_t n = wsp_syms_stack(r->l->syms, r->l->trace, s->stack, &frames);
	struct wsp_frame site = n ? frames[wsp_syms_site_at(r->l->syms, frames, n)] : (struct wsp_frame){ 0 };
	struct wsp_site_row *row = row_of(r, &site, s->stack);
	if (!row) {
		r->err = 1;
		return;
	}
	row->sum.allocations += s->allocations;
	row->sum.bytes += s->bytes;
	row->sum.failed += s->failed;
	row->sum.temporary += s->temporary;
	row->sum.peak_bytes += s->peak_bytes;
	row->sum.leaked_bytes += s->leaked_bytes;
	row->sum.leaked_blocks += s->leaked_blocks;
	row->sum.accessed_bytes += s->accessed_bytes;
	if (s->coldest_idle_ns > row->sum.coldest_idle_ns)
		row->sum.coldest_idle_ns = s->coldest_idle_ns;
}

/* Rows by the sort key arg points at (qsort_r: a job's traces are read on threads of their own). */
static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct wsp_site_row *x = a, *y = b;
	enum sort_key sort_by = *(const enum sort_key *)arg;
	uint64_t p = metric(&x->sum, sort_by), q = metric(&y->sum, sort_by);
	if (p != q)
		return p > q ? -1 : 1;
	if (x->sum.bytes != y->sum.bytes)
		return x->sum.bytes > y->sum.bytes ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static void json_frame(struct wsp_json *j, const struct wsp_frame *f)
{
	char label[1024];
	wsp_json_begin_object(j, NULL);
	wsp_json_string(j, "label", wsp_frame_label(f, label, sizeof label));
	wsp_json_string(j, "function", f->function);
	wsp_json_string(j, "file", f->file);
	wsp_json_uint(j, "line", f->line);
	wsp_json_string(j, "module", f->module);
	wsp_json_uint(j, "offset", f->offset);
	wsp_json_bool(j, "inlined", f->inlined);
	wsp_json_bool(j, "python", f->python);
	wsp_json_end_object(j);
}

static void json_stack(struct wsp_json *j, struct wsp_loaded *l, uint64_t stack)
{
	const struct wsp_frame *frames;
	size_t n = wsp_syms_stack(l->syms, l->trace, stack, &frames);
	wsp_json_begin_array(j, "stack");
	for (size_t i = 0; i < n; i++)
		json_frame(j, &frames[i]);
	wsp_json_end_array(j);
}

static void print_stack(struct wsp_loaded *l, uint64_t stack, const char *indent)
{
	const struct wsp_frame *frames;
	size_t n = wsp_syms_stack(l->syms, l->trace, stack, &frames);
	char label[1024];
	for (size_t i = 0; i < n; i++)
		printf("%s%s %s\n", indent, frames[i].inlined ? "inlined" : "at", wsp_frame_label(&frames[i], label, sizeof label));
	if (!n)
		printf("%s(no stack recorded)\n", indent);
}

static void json_open(struct wsp_json *j, const struct wsp_loaded *l, const char *report, unsigned kind)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	wsp_json_init(j, stdout);
	wsp_json_begin_object(j, NULL);
	wsp_json_string(j, "report", report);
	wsp_json_string(j, "trace", l->path);
	wsp_json_string(j, "program", p->cmdline[0] ? p->cmdline : p->exe);
	wsp_json_bool(j, "complete", l->status.complete);
	wsp_json_string(j, "kind", wsprof_kind_name(kind));
	wsp_json_sampled(j, l);
	wsp_json_estimated(j, l, kind);
}

struct options {
	enum sort_key sort;
	size_t top;
	bool full, json;
	unsigned kind;
	const char *trace;
	struct wsp_cli cli;  /* the job's traces, when several were given */
};

static void usage_callsites(FILE *out)
{
	fputs("usage: wsprof report callsites [--sort peak|allocations|bytes|leaked|temporary|accessed|cold] [--top N]\n"
	      "                               [--full-stacks] [--kind KIND] [--json] [--process P] TRACE...|DIR\n"
	      "  several traces or a directory: the sites of every process merged (a column says in how\n"
	      "  many processes each is); --process P: only rank P's trace (else pid P's)\n"
	      "  one row per allocation site: the first frame outside the allocator (malloc, operator new)\n"
	      "  --sort KEY      order of the rows (default peak: bytes live when the kind peaked);\n"
	      "                  accessed: bytes seen accessed; cold: the memory that went untouched for\n"
	      "                  longest before its free or the end first (access samples, see report wss)\n"
	      "  --top N         rows to show (default 20, 0 for all)\n"
	      "  --full-stacks   one row per whole call stack, with its frames\n"
	      "  --kind KIND     heap (default) or mmap\n"
	      "  --json          one JSON object with every figure\n"
	      "A temporary allocation is one freed before its thread allocated again (not known\n"
	      "from a trace recorded with --sample-bytes, whose heap figures are estimates).\n", out);
}

static void usage_leaks(FILE *out)
{
	fputs("usage: wsprof report leaks [--top N] [--kind KIND] [--json] [--process P] TRACE...|DIR\n"
	      "  several traces or a directory: the stacks of every process merged\n"
	      "  blocks still live when the trace ends, grouped by call stack, largest first\n"
	      "  --top N      stacks to show (default 20, 0 for all)\n"
	      "  --kind KIND  heap (default) or mmap\n", out);
}

/* An option of callsites' or leaks' own. */
static int own_option(void *ctx, int val, const char *arg)
{
	struct options *o = ctx;
	switch (val) {
	case 's': {
		size_t i = 0;
		while (i < sizeof sort_names / sizeof *sort_names && strcmp(arg, sort_names[i]))
			i++;
		if (i == sizeof sort_names / sizeof *sort_names) {
			fprintf(stderr, "wsprof: --sort takes peak, allocations, bytes, leaked, temporary, accessed or cold\n");
			return 2;
		}
		o->sort = (enum sort_key)i;
		return 0;
	}
	case 't': return wsp_parse_top(arg, &o->top) ? 2 : 0;
	default: o->full = true; return 0; /* --full-stacks */
	}
}

/* Options shared by callsites and leaks (leaks has no --sort nor
 * --full-stacks). @return 0, -1 after --help, or the exit status. */
static int parse(int argc, char **argv, bool callsites, struct options *o)
{
	static const struct wsp_cli_option callsites_own[] = {
		{ "sort", required_argument, 0, 's' },
		{ "top", required_argument, 0, 't' },
		{ "full-stacks", no_argument, 0, 'f' },
		{ 0 },
	};
	static const struct wsp_cli_option leaks_own[] = { { "top", required_argument, 0, 't' }, { 0 } };
	*o = (struct options){ .sort = callsites ? BY_PEAK : BY_LEAKED, .top = 20, .kind = WSPROF_KIND_HEAP };
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_KIND | WSP_CLI_JSON | WSP_CLI_MANY, callsites ? callsites_own : leaks_own,
			       own_option, o, callsites ? usage_callsites : usage_leaks, &cli);
	if (rc >= 0)
		return rc ? rc : -1;
	o->cli = cli;
	o->trace = cli.trace;
	o->json = cli.json;
	if (cli.kind >= 0)
		o->kind = (unsigned)cli.kind;
	return 0;
}

/* The rows of one kind from a loaded trace, sorted. @return 0 or -1 (out of memory). */
static int gather_loaded(struct wsp_loaded *l, unsigned kind, bool by_stack, enum sort_key sort, struct rows *r)
{
	*r = (struct rows){ .by_stack = by_stack, .kind = kind, .l = l };
	wsp_model_each_site(l->model, add_site, r);
	free(r->index);
	r->index = NULL;
	if (r->err) {
		free(r->v);
		r->v = NULL;
		return -1;
	}
	qsort_r(r->v, r->n, sizeof *r->v, cmp_rows, &sort);
	return 0;
}

int wsp_callsites_rows(struct wsp_loaded *l, unsigned kind, const char *sort, struct wsp_site_row **rows, size_t *n)
{
	size_t k = 0;
	while (k < sizeof sort_names / sizeof *sort_names && strcmp(sort, sort_names[k]))
		k++;
	struct rows r;
	if (k == sizeof sort_names / sizeof *sort_names || gather_loaded(l, kind, false, (enum sort_key)k, &r))
		return -1;
	*rows = r.v;
	*n = r.n;
	return 0;
}

/* Does a view sorted by this key show access figures? */
static bool sort_shows_access(enum sort_key k)
{
	return k == BY_ACCESSED || k == BY_COLD;
}

/* Load with per-stack figures and gather the rows of one kind. Access
 * samples are matched to blocks only where what is printed shows them:
 * callsites sorted by them, or as JSON (every figure); never for leaks. */
static int gather(const struct options *o, bool callsites, struct wsp_loaded *l, struct rows *r)
{
	bool access = callsites && (o->json || sort_shows_access(o->sort));
	struct wsp_model_options mo = { .per_stack = true, .no_access_figures = !access };
	if (wsp_load(o->trace, &mo, true, l))
		return 1;
	if (gather_loaded(l, o->kind, callsites ? o->full : true, o->sort, r)) {
		fprintf(stderr, "wsprof: out of memory\n");
		wsp_loaded_free(l);
		return 1;
	}
	return 0;
}

static void callsites_json(const struct options *o, struct wsp_loaded *l, const struct rows *r, size_t shown)
{
	struct wsp_json j;
	json_open(&j, l, "callsites", o->kind);
	wsp_json_string(&j, "sort", sort_names[o->sort]);
	wsp_json_bool(&j, "full_stacks", o->full);
	wsp_json_uint(&j, "sites_total", r->n);
	wsp_json_begin_array(&j, "sites");
	for (size_t i = 0; i < shown; i++) {
		const struct wsp_site_row *row = &r->v[i];
		wsp_json_begin_object(&j, NULL);
		char label[1024];
		wsp_json_string(&j, "label", wsp_frame_label(&row->site, label, sizeof label));
		wsp_json_string(&j, "function", row->site.function);
		wsp_json_string(&j, "file", row->site.file);
		wsp_json_uint(&j, "line", row->site.line);
		wsp_json_string(&j, "module", row->site.module);
		wsp_json_uint(&j, "allocations", row->sum.allocations);
		wsp_json_uint(&j, "bytes", row->sum.bytes);
		wsp_json_uint(&j, "peak_bytes", row->sum.peak_bytes);
		wsp_json_uint(&j, "leaked_bytes", row->sum.leaked_bytes);
		wsp_json_uint(&j, "leaked_blocks", row->sum.leaked_blocks);
		if (wsp_model_estimated(l->model, o->kind)) /* not known from a sampled trace */
			wsp_json_null(&j, "temporary");
		else
			wsp_json_uint(&j, "temporary", row->sum.temporary);
		wsp_json_uint(&j, "failed", row->sum.failed);
		wsp_json_uint(&j, "accessed_bytes", row->sum.accessed_bytes);
		wsp_json_seconds(&j, "coldest_idle_s", row->sum.coldest_idle_ns);
		if (o->full)
			json_stack(&j, l, row->stack);
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	wsp_json_end_object(&j);
}

static void callsites_text(const struct options *o, struct wsp_loaded *l, const struct rows *r, size_t shown)
{
	wsp_print_heading(l, "call sites");
	printf("  %s: %zu %s%s, sorted by %s%s\n\n", wsprof_kind_name(o->kind), r->n,
	       o->full ? "call stack" : "allocation site", r->n == 1 ? "" : "s", sort_names[o->sort],
	       shown < r->n ? ", the top ones" : "");
	bool access = sort_shows_access(o->sort);
	const char *est = wsp_est(l, o->kind);
	if (access)
		printf("  %11s %11s %11s %13s  %s\n", "bytes", "accessed", "cold for", "allocations", o->full ? "call stack" : "site");
	else
		printf("  %11s %11s %13s %11s %11s  %s\n", "peak", "leaked", "allocations", "temporary", "bytes",
		       o->full ? "call stack" : "site");
	for (size_t i = 0; i < shown; i++) {
		const struct wsp_site_row *row = &r->v[i];
		char a[32], b[32], c[32], d[32], e[32], label[1024];
		if (access) { /* cold for: the longest a block went untouched before its free or the end */
			printf("  %11s %11s %9.3f s %13s  %s\n",
			       wsp_estimate_text(a, sizeof a, est, wsp_human_bytes(a, sizeof a, row->sum.bytes)),
			       wsp_estimate_text(b, sizeof b, est, wsp_human_bytes(b, sizeof b, row->sum.accessed_bytes)),
			       (double)row->sum.coldest_idle_ns / 1e9,
			       wsp_estimate_text(c, sizeof c, est, wsp_group_digits(c, sizeof c, row->sum.allocations)),
			       wsp_frame_label(&row->site, label, sizeof label));
			if (o->full)
				print_stack(l, row->stack, "      ");
			continue;
		}
		printf("  %11s %11s %13s %11s %11s  %s\n",
		       wsp_estimate_text(a, sizeof a, est, wsp_human_bytes(a, sizeof a, row->sum.peak_bytes)),
		       wsp_estimate_text(b, sizeof b, est, wsp_human_bytes(b, sizeof b, row->sum.leaked_bytes)),
		       wsp_estimate_text(c, sizeof c, est, wsp_group_digits(c, sizeof c, row->sum.allocations)),
		       *est ? "-" : wsp_group_digits(d, sizeof d, row->sum.temporary), /* not known when sampled */
		       wsp_estimate_text(e, sizeof e, est, wsp_human_bytes(e, sizeof e, row->sum.bytes)),
		       wsp_frame_label(&row->site, label, sizeof label));
		if (o->full)
			print_stack(l, row->stack, "      ");
	}
	if (shown < r->n)
		printf("\n  ... %zu more (--top 0 shows all)\n", r->n - shown);
	if (!r->n)
		printf("  (no %s allocations recorded)\n", wsprof_kind_name(o->kind));
}

static void callsites_print(const struct options *o, struct wsp_loaded *l, struct rows *r)
{
	size_t shown = r->n < o->top ? r->n : o->top;
	if (o->json)
		callsites_json(o, l, r, shown);
	else
		callsites_text(o, l, r, shown);
}

/* ---- leaks ------------------------------------------------------------- */

/* The stacks still holding blocks, largest first: the rows filtered in place. */
static void leaks_print(const struct options *po, struct wsp_loaded *pl, struct rows *pr)
{
	const struct options o = *po;
	struct wsp_loaded l = *pl;
	struct rows r = *pr;
	size_t n = 0; /* keep the stacks still holding blocks, in order */
	uint64_t bytes = 0, blocks = 0;
	for (size_t i = 0; i < r.n; i++) {
		if (!r.v[i].sum.leaked_blocks)
			continue;
		bytes += r.v[i].sum.leaked_bytes;
		blocks += r.v[i].sum.leaked_blocks;
		r.v[n++] = r.v[i];
	}
	size_t shown = n < o.top ? n : o.top;
	char a[32], b[32];
	if (o.json) {
		struct wsp_json j;
		json_open(&j, &l, "leaks", o.kind);
		wsp_json_uint(&j, "leaked_bytes", bytes);
		wsp_json_uint(&j, "leaked_blocks", blocks);
		wsp_json_uint(&j, "stacks_total", n);
		wsp_json_begin_array(&j, "stacks");
		for (size_t i = 0; i < shown; i++) {
			wsp_json_begin_object(&j, NULL);
			wsp_json_uint(&j, "leaked_bytes", r.v[i].sum.leaked_bytes);
			wsp_json_uint(&j, "leaked_blocks", r.v[i].sum.leaked_blocks);
			wsp_json_uint(&j, "allocations", r.v[i].sum.allocations);
			json_stack(&j, &l, r.v[i].stack);
			wsp_json_end_object(&j);
		}
		wsp_json_end_array(&j);
		wsp_json_end_object(&j);
	} else {
		wsp_print_heading(&l, "leaks");
		const char *est = wsp_est(&l, o.kind);
		printf("  %s: %s%s leaked in %s%s block%s from %zu call stack%s\n", wsprof_kind_name(o.kind), est,
		       wsp_human_bytes(a, sizeof a, bytes), est, wsp_group_digits(b, sizeof b, blocks), blocks == 1 ? "" : "s",
		       n, n == 1 ? "" : "s");
		for (size_t i = 0; i < shown; i++) {
			printf("\n  %s%s in %s%s block%s (of %s%s allocated there)\n", est,
			       wsp_human_bytes(a, sizeof a, r.v[i].sum.leaked_bytes), est,
			       wsp_group_digits(b, sizeof b, r.v[i].sum.leaked_blocks), r.v[i].sum.leaked_blocks == 1 ? "" : "s",
			       est, wsp_group_digits((char[32]){ 0 }, 32, r.v[i].sum.allocations));
			print_stack(&l, r.v[i].stack, "      ");
		}
		if (shown < n)
			printf("\n  ... %zu more stack%s (--top 0 shows all)\n", n - shown, n - shown == 1 ? "" : "s");
	}
}

/* callsites and leaks: the same options and rows, printed their own way. */
static int rows_command(int argc, char **argv, bool callsites)
{
	struct options o;
	struct wsp_loaded l;
	struct rows r;
	int rc = parse(argc, argv, callsites, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (o.cli.job) {
		struct wsp_job_report jr = { o.kind, sort_names[o.sort], o.top, o.json, !callsites, !callsites || o.full };
		rc = wsp_job_sites(o.cli.job, o.cli.njob, &jr);
		wsp_cli_free(&o.cli);
		return rc;
	}
	rc = gather(&o, callsites, &l, &r) ? 1 : -1;
	if (rc >= 0) {
		wsp_cli_free(&o.cli);
		return rc;
	}
	(callsites ? callsites_print : leaks_print)(&o, &l, &r);
	free(r.v);
	wsp_loaded_free(&l);
	wsp_cli_free(&o.cli);
	return 0;
}

int wsp_cmd_callsites(int argc, char **argv)
{
	return rows_command(argc, argv, true);
}

int wsp_cmd_leaks(int argc, char **argv)
{
	return rows_command(argc, argv, false);
}
