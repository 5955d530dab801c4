/*
 * diff.c - `wsprof diff BASE NEW`: what changed between two runs of a
 * program (two builds, yesterday and today): the summaries side by side
 * with the change of each figure per kind, the call sites whose figures
 * changed most (sites paired by sitematch.c, those of one run only
 * included), and with -o a differential flame graph (flame.h: as wide as
 * the new run, red where it grew, blue where it shrank).
 */
#include "analyzer.h"
#include "text.h"
#include "cli.h"
#include "compute.h"
#include "commands.h"
#include "flame.h" /* the differential flame graph of -o */
#include "json.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The figures a site is compared by, in --sort's words. */
enum figure { FIG_PEAK, FIG_LEAKED, FIG_ALLOCATIONS, FIG_BYTES };
static const char *const figure_names[] = { "peak", "leaked", "allocations", "bytes" };
static const char *const figure_words[] = { "bytes live at the peak", "bytes leaked", "allocations",
					    "bytes allocated" };

static uint64_t site_figure(const struct wsp_site_row *r, enum figure f)
{
	if (!r)
		return 0;
	switch (f) {
	case FIG_PEAK: return r->sum.peak_bytes;
	case FIG_LEAKED: return r->sum.leaked_bytes;
	case FIG_ALLOCATIONS: return r->sum.allocations;
	case FIG_BYTES: return r->sum.bytes;
	}
	return 0;
}

static int64_t change(uint64_t base, uint64_t now)
{
	return (int64_t)(now - base);
}

struct options {
	enum figure sort;
	size_t top;
};

static void usage(FILE *out)
{
	fputs("usage: wsprof diff [--kind KIND] [--sort peak|leaked|allocations|bytes] [--top N] [--json]\n"
	      "                   [-o FLAME.svg|pdf|png] BASE NEW\n"
	      "  what changed from the run recorded in BASE to the one in NEW (two builds of a program,\n"
	      "  yesterday's run and today's): each kind's figures side by side, and the call sites whose\n"
	      "  figures changed most, matched by function, file and line (a function whose lines moved\n"
	      "  still matches), sites of one run only included\n"
	      "  --kind KIND  the call sites and flame graph of KIND (default heap); the figures show every kind\n"
	      "  --sort F     the change that orders the sites (default peak: bytes live at the peak)\n"
	      "  --top N      sites to show (default 20, 0 for all)\n"
	      "  --json       one JSON object with every figure\n"
	      "  -o FILE      also a differential flame graph of --sort's figure: as wide as NEW,\n"
	      "               red where it grew, blue where it shrank (SVG with tooltips, PDF or PNG)\n", out);
}

static int diff_option(void *ctx, int val, const char *arg)
{
	struct options *o = ctx;
	if (val == 't')
		return wsp_parse_top(arg, &o->top) ? 2 : 0;
	for (size_t i = 0; i < sizeof figure_names / sizeof *figure_names; i++)
		if (!strcmp(arg, figure_names[i])) {
			o->sort = (enum figure)i;
			return 0;
		}
	fprintf(stderr, "wsprof: --sort takes peak, leaked, allocations or bytes\n");
	return 2;
}

/* ---- The figures of a kind ------------------------------------------- */

enum { ROW_PEAK, ROW_LEAKED, ROW_ALLOCATIONS, ROW_BYTES, ROW_FAILED, ROW_IN_USE, ROW_WSS, ROWS };
static const char *const row_words[ROWS] = { "peak", "leaked", "allocations", "bytes allocated", "failed",
					     "truly in use, peak", "working set, median" };
static const char *const row_keys[ROWS] = { "peak_bytes", "leaked_bytes", "allocations", "total_bytes", "failed",
					    "in_use_peak_bytes", "working_set_median_bytes" };
static const bool row_bytes[ROWS] = { true, true, false, true, false, true, true };

/* A kind's figure in one run; false when it has none (no access samples). */
static bool kind_figure(const struct wsp_loaded *l, unsigned kind, int row, uint64_t *v)
{
	const struct wsp_kind_stats *s = wsp_model_kind(l->model, kind);
	switch (row) {
	case ROW_PEAK: *v = s->peak_bytes; return true;
	case ROW_LEAKED: *v = s->live_bytes; return true;
	case ROW_ALLOCATIONS: *v = s->allocations; return true;
	case ROW_BYTES: *v = s->total_bytes; return true;
	case ROW_FAILED: *v = s->failed; return true;
	case ROW_IN_USE: *v = s->in_use_peak_bytes; return true;
	default: return wsp_wss_median(wsp_model_wss(l->model), (int)kind, v) == 0;
	}
}

/* Kinds with a line: seen in either run, address ranges told with their kind. */
static bool kind_shown(const struct wsp_loaded *b, const struct wsp_loaded *n, unsigned k)
{
	return !wsp_kind_is_address_space(k) && (wsp_model_kind(b->model, k)->seen || wsp_model_kind(n->model, k)->seen);
}

static const char *amount(char *buf, size_t cap, uint64_t v, bool bytes)
{
	return bytes ? wsp_human_bytes(buf, cap, v) : wsp_group_digits(buf, cap, v);
}

static const char *signed_amount(char *buf, size_t cap, int64_t v, bool bytes)
{
	return bytes ? wsp_human_change(buf, cap, v) : wsp_count_change(buf, cap, v);
}

/* "(+100%)", "(-25.0%)", "(new)" or "". */
static const char *percent(char *buf, size_t cap, uint64_t base, uint64_t now)
{
	if (base == now)
		snprintf(buf, cap, "%s", "");
	else if (!base)
		snprintf(buf, cap, "(new)");
	else {
		double p = 100.0 * ((double)now - (double)base) / (double)base;
		double m = p < 0 ? -p : p;
		snprintf(buf, cap, m >= 99.95 ? "(%+.0f%%)" : "(%+.1f%%)", p);
	}
	return buf;
}

/* ---- Reading the two runs -------------------------------------------- */

struct runs {
	struct wsp_loaded base, now;
	struct wsp_site_match match;
	unsigned kind;
	char warnings[3][512];
	size_t nwarnings;
};

static const char *program_of(const struct wsp_loaded *l)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	return p->cmdline[0] ? p->cmdline : p->exe;
}

static const char *exe_name(const struct wsp_loaded *l)
{
	const char *exe = wsprof_trace_process(l->trace)->exe, *slash = strrchr(exe, '/');
	return slash ? slash + 1 : exe;
}

/* Said on stderr and kept for the JSON: the runs compare, with a caveat. */
static void warn(struct runs *r, const char *text)
{
	fprintf(stderr, "wsprof: %s\n", text);
	if (r->nwarnings < sizeof r->warnings / sizeof *r->warnings)
		snprintf(r->warnings[r->nwarnings++], sizeof r->warnings[0], "%s", text);
}

static void check_comparable(struct runs *r)
{
	char text[512];
	if (strcmp(exe_name(&r->base), exe_name(&r->now))) {
		snprintf(text, sizeof text, "the runs are of different programs (%s and %s): comparing them anyway",
			 exe_name(&r->base), exe_name(&r->now));
		warn(r, text);
	}
	bool sb = wsp_model_estimated(r->base.model, WSPROF_KIND_HEAP), sn = wsp_model_estimated(r->now.model, WSPROF_KIND_HEAP);
	if (sb != sn) {
		snprintf(text, sizeof text, "%s was recorded with --sample-bytes: its heap figures are estimates (~), and so "
			 "are their changes", sb ? "the base" : "the new run");
		warn(r, text);
	}
}

static int load_runs(const char *base, const char *now, unsigned kind, struct runs *r)
{
	struct wsp_model_options mo = { .per_stack = true };
	*r = (struct runs){ .kind = kind };
	if (wsp_load(base, &mo, true, &r->base))
		return 1;
	if (wsp_load(now, &mo, true, &r->now)) {
		wsp_loaded_free(&r->base);
		return 1;
	}
	if (wsp_site_match(&r->base, &r->now, kind, &r->match)) {
		fprintf(stderr, "wsprof: out of memory\n");
		wsp_loaded_free(&r->base);
		wsp_loaded_free(&r->now);
		return 1;
	}
	check_comparable(r);
	return 0;
}

static void free_runs(struct runs *r)
{
	wsp_site_match_free(&r->match);
	wsp_loaded_free(&r->base);
	wsp_loaded_free(&r->now);
}

/* ---- The sites, by change -------------------------------------------- */

static enum figure sort_by;

static int cmp_pairs(const void *pa, const void *pb)
{
	const struct wsp_site_pair *a = pa, *b = pb;
	int64_t ca = change(site_figure(a->base, sort_by), site_figure(a->now, sort_by));
	int64_t cb = change(site_figure(b->base, sort_by), site_figure(b->now, sort_by));
	uint64_t ma = ca < 0 ? (uint64_t)0 - (uint64_t)ca : (uint64_t)ca;
	uint64_t mb = cb < 0 ? (uint64_t)0 - (uint64_t)cb : (uint64_t)cb;
	if (ma != mb)
		return ma > mb ? -1 : 1;
	if (ca != cb)
		return ca > cb ? -1 : 1; /* growth before shrinkage of the same size */
	uint64_t na = site_figure(a->now, sort_by), nb = site_figure(b->now, sort_by);
	if (na != nb)
		return na > nb ? -1 : 1;
	const struct wsp_site_row *ra = a->now ? a->now : a->base, *rb = b->now ? b->now : b->base;
	int c = strcmp(ra->site.function ? ra->site.function : "", rb->site.function ? rb->site.function : "");
	if (c)
		return c;
	return (ra->site.line > rb->site.line) - (ra->site.line < rb->site.line);
}

/* The pairs with any change at all, by the size of the change. @return how many. */
static size_t changed_pairs(struct runs *r, enum figure sort)
{
	struct wsp_site_match *m = &r->match;
	size_t n = 0;
	for (size_t i = 0; i < m->npairs; i++) {
		const struct wsp_site_pair *p = &m->pairs[i];
		bool same = true;
		for (int f = 0; f <= FIG_BYTES; f++)
			same = same && site_figure(p->base, (enum figure)f) == site_figure(p->now, (enum figure)f);
		if (!same)
			m->pairs[n++] = *p;
	}
	sort_by = sort;
	qsort(m->pairs, n, sizeof *m->pairs, cmp_pairs);
	return n;
}

static const char *pair_label(const struct wsp_site_pair *p, char *buf, size_t cap)
{
	return wsp_frame_label(p->now ? &p->now->site : &p->base->site, buf, cap);
}

static const char *pair_state(const struct wsp_site_pair *p)
{
	return !p->base ? "new" : !p->now ? "gone" : p->moved ? "moved" : "matched";
}

/* ---- Text -------------------------------------------------------------- */

static void print_run(const char *what, const struct wsp_loaded *l)
{
	const wsprof_trace_status *st = &l->status;
	char ev[32], sampled[128];
	printf("  %-9s %s (%s): %s, pid %u, %.3f s, %s events\n", what, l->path, st->complete ? "complete" : "incomplete",
	       program_of(l), wsprof_trace_process(l->trace)->pid, (double)st->end_time_ns / 1e9,
	       wsp_group_digits(ev, sizeof ev, st->events));
	if (*wsp_sampled_text(l, sampled, sizeof sampled))
		printf("  %-9s %s\n", "", sampled);
}

static void print_kinds(const struct runs *r)
{
	printf("\n  %-22s %14s %14s %14s\n", "", "base", "new", "change");
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		if (!kind_shown(&r->base, &r->now, k))
			continue;
		printf("  %s\n", wsprof_kind_name(k));
		const char *eb = wsp_est_total(&r->base, k), *en = wsp_est_total(&r->now, k);
		const char *ec = *eb ? eb : en;
		for (int row = 0; row < ROWS; row++) {
			uint64_t b = 0, n = 0;
			bool hb = kind_figure(&r->base, k, row, &b), hn = kind_figure(&r->now, k, row, &n);
			if (!hb && !hn)
				continue;
			if (row == ROW_FAILED && !b && !n)
				continue;
			char vb[40], vn[40], vc[40], pc[24], t[32];
			bool bytes = row_bytes[row];
			bool est = row != ROW_FAILED; /* failures are always recorded */
			snprintf(vb, sizeof vb, "%s%s", hb && est ? eb : "", hb ? amount(t, sizeof t, b, bytes) : "-");
			snprintf(vn, sizeof vn, "%s%s", hn && est ? en : "", hn ? amount(t, sizeof t, n, bytes) : "-");
			if (hb && hn)
				snprintf(vc, sizeof vc, "%s%s", est ? ec : "", signed_amount(t, sizeof t, change(b, n), bytes));
			else
				snprintf(vc, sizeof vc, "-");
			printf("    %-20s %14s %14s %14s %s\n", row_words[row], vb, vn, vc, hb && hn ? percent(pc, sizeof pc, b, n) : "");
		}
	}
}

static void print_sites(const struct runs *r, const struct options *o, size_t changed)
{
	const struct wsp_site_match *m = &r->match;
	const char *eb = wsp_est(&r->base, r->kind), *en = wsp_est(&r->now, r->kind), *ec = *eb ? eb : en;
	printf("\n  %s call sites: %zu in the base, %zu in the new run; %zu matched", wsprof_kind_name(r->kind), m->nbase,
	       m->nnew, m->matched);
	if (m->moved)
		printf(" (%zu of them after their lines moved)", m->moved);
	printf(", %zu only in the new run, %zu only in the base\n", m->only_new, m->only_base);
	if (m->unnamed)
		printf("  %zu of the sites in one run only have no function name and could not be matched by one "
		       "(build with -g, or install the program's debug symbols)\n", m->unnamed);
	if (!changed) {
		printf("  no call site changed\n");
		return;
	}
	size_t shown = changed < o->top ? changed : o->top;
	printf("  %zu changed, by the change of %s%s\n\n", changed, figure_words[o->sort], shown < changed ? ", the top ones" : "");
	printf("  %12s %12s %12s %12s %12s  %s\n", "base", "new", "change", "leaked", "allocations", "site");
	for (size_t i = 0; i < shown; i++) {
		const struct wsp_site_pair *p = &m->pairs[i];
		bool bytes = o->sort != FIG_ALLOCATIONS;
		uint64_t b = site_figure(p->base, o->sort), n = site_figure(p->now, o->sort);
		char vb[40], vn[40], vc[40], vl[40], va[40], t[32], label[1024];
		snprintf(vb, sizeof vb, "%s%s", p->base ? eb : "", p->base ? amount(t, sizeof t, b, bytes) : "-");
		snprintf(vn, sizeof vn, "%s%s", p->now ? en : "", p->now ? amount(t, sizeof t, n, bytes) : "-");
		snprintf(vc, sizeof vc, "%s%s", ec, signed_amount(t, sizeof t, change(b, n), bytes));
		snprintf(vl, sizeof vl, "%s%s", ec,
			 wsp_human_change(t, sizeof t, change(site_figure(p->base, FIG_LEAKED), site_figure(p->now, FIG_LEAKED))));
		snprintf(va, sizeof va, "%s%s", ec,
			 wsp_count_change(t, sizeof t,
					  change(site_figure(p->base, FIG_ALLOCATIONS), site_figure(p->now, FIG_ALLOCATIONS))));
		const char *state = pair_state(p);
		printf("  %12s %12s %12s %12s %12s  %s%s%s%s\n", vb, vn, vc, vl, va, pair_label(p, label, sizeof label),
		       strcmp(state, "matched") ? " [" : "", strcmp(state, "matched") ? state : "", strcmp(state, "matched") ? "]" : "");
	}
	if (shown < changed)
		printf("\n  ... %zu more (--top 0 shows all)\n", changed - shown);
	printf("\n  leaked and allocations: their change; [new]: only in the new run, [gone]: only in the base, [moved]: its "
	       "line moved\n");
}

static void print_text(const struct runs *r, const struct options *o, size_t changed)
{
	printf("wsprof diff\n");
	print_run("base", &r->base);
	print_run("new", &r->now);
	print_kinds(r);
	print_sites(r, o, changed);
}

/* ---- JSON -------------------------------------------------------------- */

static void json_run(struct wsp_json *j, const char *key, const struct wsp_loaded *l)
{
	wsp_json_begin_object(j, key);
	wsp_json_string(j, "trace", l->path);
	wsp_json_string(j, "program", program_of(l));
	wsp_json_uint(j, "pid", wsprof_trace_process(l->trace)->pid);
	wsp_json_bool(j, "complete", l->status.complete);
	wsp_json_seconds(j, "duration_s", l->status.end_time_ns);
	wsp_json_uint(j, "events", l->status.events);
	wsp_json_sampled(j, l);
	wsp_json_end_object(j);
}

static void json_site_figures(struct wsp_json *j, const char *key, const struct wsp_site_row *row)
{
	if (!row) {
		wsp_json_null(j, key);
		return;
	}
	wsp_json_begin_object(j, key);
	wsp_json_uint(j, "peak_bytes", row->sum.peak_bytes);
	wsp_json_uint(j, "leaked_bytes", row->sum.leaked_bytes);
	wsp_json_uint(j, "allocations", row->sum.allocations);
	wsp_json_uint(j, "bytes", row->sum.bytes);
	wsp_json_end_object(j);
}

static void print_json(const struct runs *r, const struct options *o, size_t changed)
{
	struct wsp_json j;
	wsp_json_init(&j, stdout);
	wsp_json_begin_object(&j, NULL);
	wsp_json_string(&j, "report", "diff");
	json_run(&j, "base", &r->base);
	json_run(&j, "new", &r->now);
	wsp_json_begin_array(&j, "warnings");
	for (size_t i = 0; i < r->nwarnings; i++)
		wsp_json_string(&j, NULL, r->warnings[i]);
	wsp_json_end_array(&j);
	wsp_json_begin_object(&j, "kinds");
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		if (!kind_shown(&r->base, &r->now, k))
			continue;
		wsp_json_begin_object(&j, wsprof_kind_name(k));
		wsp_json_bool(&j, "base_estimated", wsp_model_totals_estimated(r->base.model, k));
		wsp_json_bool(&j, "new_estimated", wsp_model_totals_estimated(r->now.model, k));
		for (int row = 0; row < ROWS; row++) {
			uint64_t b = 0, n = 0;
			bool hb = kind_figure(&r->base, k, row, &b), hn = kind_figure(&r->now, k, row, &n);
			wsp_json_begin_object(&j, row_keys[row]);
			hb ? wsp_json_uint(&j, "base", b) : wsp_json_null(&j, "base");
			hn ? wsp_json_uint(&j, "new", n) : wsp_json_null(&j, "new");
			hb && hn ? wsp_json_int(&j, "change", change(b, n)) : wsp_json_null(&j, "change");
			wsp_json_end_object(&j);
		}
		wsp_json_end_object(&j);
	}
	wsp_json_end_object(&j);
	const struct wsp_site_match *m = &r->match;
	wsp_json_begin_object(&j, "sites");
	wsp_json_string(&j, "kind", wsprof_kind_name(r->kind));
	wsp_json_string(&j, "sort", figure_names[o->sort]);
	wsp_json_uint(&j, "base", m->nbase);
	wsp_json_uint(&j, "new", m->nnew);
	wsp_json_uint(&j, "matched", m->matched);
	wsp_json_uint(&j, "moved", m->moved);
	wsp_json_uint(&j, "only_base", m->only_base);
	wsp_json_uint(&j, "only_new", m->only_new);
	wsp_json_uint(&j, "unmatched_without_names", m->unnamed);
	wsp_json_uint(&j, "changed", changed);
	wsp_json_begin_array(&j, "changes");
	size_t shown = changed < o->top ? changed : o->top;
	for (size_t i = 0; i < shown; i++) {
		const struct wsp_site_pair *p = &m->pairs[i];
		const struct wsp_frame *f = p->now ? &p->now->site : &p->base->site;
		char label[1024];
		wsp_json_begin_object(&j, NULL);
		wsp_json_string(&j, "label", wsp_frame_label(f, label, sizeof label));
		wsp_json_string(&j, "function", f->function);
		wsp_json_string(&j, "file", f->file);
		wsp_json_uint(&j, "line", f->line);
		if (p->base && p->now && p->base->site.line != p->now->site.line)
			wsp_json_uint(&j, "base_line", p->base->site.line);
		wsp_json_string(&j, "module", f->module);
		wsp_json_string(&j, "state", pair_state(p));
		json_site_figures(&j, "base", p->base);
		json_site_figures(&j, "new", p->now);
		wsp_json_begin_object(&j, "change");
		for (int fig = 0; fig <= FIG_BYTES; fig++) {
			static const char *const keys[] = { "peak_bytes", "leaked_bytes", "allocations", "bytes" };
			wsp_json_int(&j, keys[fig], change(site_figure(p->base, (enum figure)fig), site_figure(p->now, (enum figure)fig)));
		}
		wsp_json_end_object(&j);
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	wsp_json_end_object(&j);
	wsp_json_end_object(&j);
}

/* ---- The differential flame graph ---------------------------------------- */

static int write_flame(const struct runs *r, enum figure fig, const char *path)
{
	static const enum wsp_flame_metric metric[] = { WSP_FLAME_PEAK, WSP_FLAME_LEAKED, WSP_FLAME_ALLOCATIONS, WSP_FLAME_BYTES };
	struct wsp_flame *f = wsp_flame_new();
	int err = f ? wsp_flame_add_trace(f, &r->now, r->kind, metric[fig], false) : -ENOMEM;
	if (!err)
		err = wsp_flame_add_trace(f, &r->base, r->kind, metric[fig], true);
	if (err) {
		fprintf(stderr, "wsprof: flame graph: %s\n", strerror(-err));
		wsp_flame_free(f);
		return 1;
	}
	bool bytes = fig != FIG_ALLOCATIONS;
	char title[1024], subtitle[1024], tn[32], tb[32], tc[32];
	snprintf(title, sizeof title, "%s, change in %s: %s (%s) against %s", wsprof_kind_name(r->kind), figure_words[fig],
		 program_of(&r->now), r->now.path, r->base.path);
	uint64_t now = wsp_flame_total(f), base = wsp_flame_base_total(f);
	snprintf(subtitle, sizeof subtitle, "width: the new run (%s in all; base %s, %s); red: grew, blue: shrank; stacks "
		 "only in the base have no width", amount(tn, sizeof tn, now, bytes), amount(tb, sizeof tb, base, bytes),
		 signed_amount(tc, sizeof tc, change(base, now), bytes));
	struct wsp_flame_svg_options so = { .title = title, .subtitle = subtitle, .unit = bytes ? "bytes" : "allocations" };
	int rc = wsp_flame_write(f, &so, path, false);
	wsp_flame_free(f);
	return rc;
}

int wsp_cmd_diff(int argc, char **argv)
{
	static const struct wsp_cli_option own[] = {
		{ "sort", required_argument, 0, 's' },
		{ "top", required_argument, 0, 't' },
		{ 0 },
	};
	struct options o = { .sort = FIG_PEAK, .top = 20 };
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_PAIR | WSP_CLI_KIND | WSP_CLI_JSON | WSP_CLI_OUTPUT | WSP_CLI_BOTH, own,
			       diff_option, &o, usage, &cli);
	if (rc >= 0)
		return rc;
	unsigned kind = cli.kind >= 0 ? (unsigned)cli.kind : WSPROF_KIND_HEAP;
	struct runs r;
	if (load_runs(cli.base, cli.trace, kind, &r))
		return 1;
	size_t changed = changed_pairs(&r, o.sort);
	if (cli.json)
		print_json(&r, &o, changed);
	else
		print_text(&r, &o, changed);
	if (cli.out)
		rc = write_flame(&r, o.sort, cli.out);
	else
		rc = 0;
	free_runs(&r);
	return rc;
}
