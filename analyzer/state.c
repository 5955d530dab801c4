/*
 * state.c - `wsprof report state`: what memory looked like at one moment
 * (the peak, the end, the first failed allocation, a time, a snapshot
 * label), block by block, with what the program said about each block -
 * and which blocks could be given back, least recently used first, with
 * the running total evicting them would free.
 *
 * Two passes over the trace: the first finds the moment, the second
 * replays the events up to it.
 */
#include "analyzer.h"
#include "json.h"

#include "grow.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct row {
	const struct wsp_block *b;
	const struct wsp_ann_state *ann;
};

struct rows {
	struct row *v;
	size_t n, cap;
	const struct wsp_model *m;
	int kind;      /* -1: every kind */
	int err;
};

static bool is_memory_kind(unsigned k)
{
	return k != WSPROF_KIND_CUDA_VMM_MAPPED && k != WSPROF_KIND_CUDA_VMM_RESERVED;
}

static void collect(const struct wsp_block *b, void *arg)
{
	struct rows *r = arg;
	if (r->err || b->excluded || !is_memory_kind(b->kind) || (r->kind >= 0 && b->kind != (unsigned)r->kind))
		return;
	if (wsp_grow(&r->v, &r->cap, r->n + 1, sizeof *r->v)) {
		r->err = -ENOMEM;
		return;
	}
	r->v[r->n++] = (struct row){ b, wsp_model_ann(r->m, b) };
}

static int by_kind_then_address(const void *a, const void *b)
{
	const struct wsp_block *x = ((const struct row *)a)->b, *y = ((const struct row *)b)->b;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	uint64_t p = wsp_block_addr(x), q = wsp_block_addr(y);
	return p < q ? -1 : p > q;
}

static uint64_t last_use(const struct row *r)
{
	return r->ann ? r->ann->last_use_ns : r->b->time_ns;
}

static int least_recently_used(const void *a, const void *b)
{
	uint64_t x = last_use(a), y = last_use(b);
	if (x != y)
		return x < y ? -1 : 1;
	return by_kind_then_address(a, b);
}

static const char *validity_word(const struct wsp_ann_state *a)
{
	if (!a || a->validity == WSP_VALIDITY_UNKNOWN)
		return "-";
	return a->validity == WSP_VALIDITY_VALID ? "valid" : "invalid";
}

/* ---- the moment ---------------------------------------------------------- */

struct moment {
	const char *what;      /* for the heading: "the heap peak", "0.500 s", ... */
	char text[256];
	uint64_t seq, time_ns; /* stop after seq, or at time (UINT64_MAX: none) */
	int kind;              /* the kind the moment is about, -1: all */
};

/* The kind with the largest peak: the memory that matters most here. */
static unsigned biggest_kind(const struct wsp_model *m)
{
	unsigned best = WSPROF_KIND_HEAP;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		if (is_memory_kind(k) && wsp_model_kind(m, k)->peak_bytes > wsp_model_kind(m, best)->peak_bytes)
			best = k;
	return best;
}

/* @return 0, or an exit status after saying why there is no such moment. */
static int find_moment(const struct wsp_loaded *l, const char *at, int kind, struct moment *mo)
{
	*mo = (struct moment){ .what = mo->text, .seq = UINT64_MAX, .time_ns = UINT64_MAX, .kind = kind };
	const struct wsp_model *m = l->model;
	if (!strcmp(at, "end")) {
		snprintf(mo->text, sizeof mo->text, "the end");
	} else if (!strcmp(at, "peak")) {
		unsigned k = kind >= 0 ? (unsigned)kind : biggest_kind(m);
		const struct wsp_kind_stats *s = wsp_model_kind(m, k);
		mo->seq = s->peak_seq;
		mo->kind = kind;
		snprintf(mo->text, sizeof mo->text, "the %s peak (%.3f s)", wsprof_kind_name(k), (double)s->peak_time_ns / 1e9);
	} else if (!strcmp(at, "oom")) {
		int which = -1;
		for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
			const struct wsp_kind_stats *s = wsp_model_kind(m, k);
			if (s->failed && (kind < 0 || (unsigned)kind == k) &&
			    (which < 0 || s->first_fail_seq < wsp_model_kind(m, (unsigned)which)->first_fail_seq))
				which = (int)k;
		}
		if (which < 0) {
			fprintf(stderr, "wsprof: %s has no failed %s allocation: use --at peak, end, SECONDS or a snapshot label\n",
				l->path, kind >= 0 ? wsprof_kind_name((unsigned)kind) : "");
			return 1;
		}
		const struct wsp_kind_stats *s = wsp_model_kind(m, (unsigned)which);
		mo->seq = s->first_fail_seq;
		snprintf(mo->text, sizeof mo->text, "the first failed %s allocation (%.3f s)", wsprof_kind_name((unsigned)which),
			 (double)s->first_fail_time_ns / 1e9);
	} else {
		char *end;
		double seconds = strtod(at, &end);
		if (end != at && !*end && seconds >= 0) {
			mo->time_ns = (uint64_t)(seconds * 1e9);
			snprintf(mo->text, sizeof mo->text, "%.3f s", seconds);
			return 0;
		}
		const struct wsp_snapshot *snaps;
		size_t n = wsp_model_snapshots(m, &snaps);
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(snaps[i].label, at)) {
				mo->seq = snaps[i].seq;
				snprintf(mo->text, sizeof mo->text, "snapshot \"%s\" (%.3f s)", at, (double)snaps[i].time_ns / 1e9);
				return 0;
			}
		}
		fprintf(stderr, "wsprof: --at %s is not peak, end, oom, a number of seconds or a snapshot label of %s\n", at,
			l->path);
		return 2;
	}
	return 0;
}

/* ---- output ------------------------------------------------------------- */

static const char *site_of(struct wsp_loaded *l, const struct wsp_block *b, char *buf, size_t cap)
{
	const struct wsp_frame *frames;
	size_t n = wsp_syms_stack(l->syms, l->trace, b->stack, &frames);
	return n ? wsp_frame_label(&frames[0], buf, cap) : "(no stack)";
}

static void print_text(struct wsp_loaded *l, const struct moment *mo, struct rows *r)
{
	wsp_print_heading(l, "memory state");
	printf("  at %s\n\n", mo->what);
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		uint64_t live = 0, collectable = 0, blocks = 0;
		for (size_t i = 0; i < r->n; i++) {
			if (r->v[i].b->kind != k)
				continue;
			blocks++;
			live += r->v[i].b->size;
			collectable += r->v[i].ann && r->v[i].ann->collectable ? r->v[i].b->size : 0;
		}
		if (!blocks)
			continue;
		char a[32], b[32], c[32], d[32];
		printf("  %-12s %s live in %s blocks: %s in use, %s collectable\n", wsprof_kind_name(k),
		       wsp_human_bytes(a, sizeof a, live), wsp_group_digits(b, sizeof b, blocks),
		       wsp_human_bytes(c, sizeof c, live - collectable), wsp_human_bytes(d, sizeof d, collectable));
	}
	if (!r->n) {
		printf("  (no live blocks)\n");
		return;
	}
	printf("\n  %-12s %-18s %11s %5s %-8s %10s  %-24s %s\n", "kind", "address", "size", "refs", "validity", "last use",
	       "name", "site");
	for (size_t i = 0; i < r->n; i++) {
		const struct row *row = &r->v[i];
		char size[32], site[1024], refs[24];
		snprintf(refs, sizeof refs, "%lld", row->ann ? (long long)row->ann->refs : 0LL);
		printf("  %-12s 0x%016llx %11s %5s %-8s %8.3f s  %-24s %s\n", wsprof_kind_name(row->b->kind),
		       (unsigned long long)wsp_block_addr(row->b), wsp_human_bytes(size, sizeof size, row->b->size),
		       row->ann && row->ann->annotated ? refs : "-", validity_word(row->ann), (double)last_use(row) / 1e9,
		       row->ann && row->ann->name ? row->ann->name : "-", site_of(l, row->b, site, sizeof site));
	}
	qsort(r->v, r->n, sizeof *r->v, least_recently_used);
	bool any = false;
	uint64_t total = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct row *row = &r->v[i];
		if (!row->ann || !row->ann->collectable)
			continue;
		if (!any)
			printf("\n  collectable, least recently used first (evicting down to a row frees the running total):\n"
			       "  %-12s %-18s %11s %10s %13s  %s\n", "kind", "address", "size", "last use", "running total", "name");
		any = true;
		total += row->b->size;
		char size[32], sum[32];
		printf("  %-12s 0x%016llx %11s %8.3f s %13s  %s\n", wsprof_kind_name(row->b->kind),
		       (unsigned long long)wsp_block_addr(row->b), wsp_human_bytes(size, sizeof size, row->b->size),
		       (double)last_use(row) / 1e9, wsp_human_bytes(sum, sizeof sum, total),
		       row->ann->name ? row->ann->name : "-");
	}
	if (!any)
		printf("\n  nothing is collectable: no block was released or invalidated without another holder\n");
}

static void json_block(struct wsp_json *j, struct wsp_loaded *l, const struct row *row, uint64_t running)
{
	char site[1024];
	wsp_json_begin_object(j, NULL);
	wsp_json_string(j, "kind", wsprof_kind_name(row->b->kind));
	wsp_json_uint(j, "address", wsp_block_addr(row->b));
	wsp_json_uint(j, "size", row->b->size);
	wsp_json_string(j, "name", row->ann ? row->ann->name : NULL);
	wsp_json_int(j, "refs", row->ann ? row->ann->refs : 0);
	wsp_json_string(j, "validity", row->ann && row->ann->validity ? validity_word(row->ann) : NULL);
	wsp_json_bool(j, "annotated", row->ann && row->ann->annotated);
	wsp_json_bool(j, "collectable", row->ann && row->ann->collectable);
	wsp_json_seconds(j, "allocated_s", row->b->time_ns);
	wsp_json_seconds(j, "last_use_s", last_use(row));
	wsp_json_string(j, "site", site_of(l, row->b, site, sizeof site));
	if (running)
		wsp_json_uint(j, "running_total_bytes", running);
	wsp_json_end_object(j);
}

static void print_json(struct wsp_loaded *l, const struct moment *mo, struct rows *r)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	struct wsp_json j;
	wsp_json_init(&j, stdout);
	wsp_json_begin_object(&j, NULL);
	wsp_json_string(&j, "report", "state");
	wsp_json_string(&j, "trace", l->path);
	wsp_json_string(&j, "program", p->cmdline[0] ? p->cmdline : p->exe);
	wsp_json_string(&j, "at", mo->what);
	wsp_json_seconds(&j, "time_s", wsp_model_last_time(l->model));
	wsp_json_begin_array(&j, "blocks");
	for (size_t i = 0; i < r->n; i++)
		json_block(&j, l, &r->v[i], 0);
	wsp_json_end_array(&j);
	qsort(r->v, r->n, sizeof *r->v, least_recently_used);
	wsp_json_begin_array(&j, "collectable");
	uint64_t total = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (r->v[i].ann && r->v[i].ann->collectable)
			json_block(&j, l, &r->v[i], total += r->v[i].b->size);
	}
	wsp_json_end_array(&j);
	wsp_json_end_object(&j);
}

static void usage(FILE *out)
{
	fputs("usage: wsprof report state [--at peak|end|oom|SECONDS|LABEL] [--kind KIND] [--json] TRACE\n"
	      "  every live block at that moment (default: the peak of the largest kind), with its name,\n"
	      "  holders, validity and last use from the program's annotations (wsprof.h); then the\n"
	      "  collectable blocks, least recently used first, with what evicting them would free\n"
	      "  --at peak     when the kind (--kind, else the largest) peaked\n"
	      "  --at oom      at the first failed allocation (of --kind, else any)\n"
	      "  --at SECONDS  that many seconds after the start; --at LABEL: at wsprof_snapshot(LABEL)\n", out);
}

int wsp_cmd_state(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "at", required_argument, NULL, 'a' },
		{ "kind", required_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *at = "peak";
	unsigned kind = 0;
	bool json = false, have_kind = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'a': at = optarg; break;
		case 'k': if (wsp_parse_kind(optarg, &kind)) return 2; have_kind = true; break;
		case 'j': json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	const char *path = wsp_trace_operand(argc, argv, usage);
	if (!path)
		return 2;
	struct wsp_loaded whole;
	if (wsp_load(path, NULL, false, &whole))
		return 1;
	struct moment mo;
	int rc = find_moment(&whole, at, have_kind ? (int)kind : -1, &mo);
	wsprof_trace_status status = whole.status;
	wsp_loaded_free(&whole);
	if (rc)
		return rc;
	struct wsp_loaded l;
	if (wsp_load_until(path, NULL, true, mo.seq, mo.time_ns, &l))
		return 1;
	l.status = status; /* the heading describes the trace, not where the replay stopped */
	struct rows r = { .m = l.model, .kind = have_kind ? (int)kind : -1 };
	wsp_model_each_live(l.model, collect, &r);
	if (r.err) {
		fprintf(stderr, "wsprof: out of memory\n");
		rc = 1;
	} else {
		qsort(r.v, r.n, sizeof *r.v, by_kind_then_address);
		if (json)
			print_json(&l, &mo, &r);
		else
			print_text(&l, &mo, &r);
	}
	free(r.v);
	wsp_loaded_free(&l);
	return rc;
}
