/*
 * diff.c - `wsprof diff BASE NEW` printed: the summaries side by side with
 * the change of each figure per kind, and the call sites whose figures
 * changed most (compute/diff.c pairs and orders them), as text or JSON.
 * The command is cmd/diff.c.
 */
#include "text.h"
#include "compute.h"
#include "json.h"

#include <stdio.h>
#include <string.h>

static int64_t change(uint64_t base, uint64_t now)
{
	return (int64_t)(now - base);
}

static const char *const row_words[WSP_DIFF_ROWS] = { "peak", "leaked", "allocations", "bytes allocated", "failed",
						       "truly in use, peak", "working set, median" };
static const char *const row_keys[WSP_DIFF_ROWS] = { "peak_bytes", "leaked_bytes", "allocations", "total_bytes", "failed",
						      "in_use_peak_bytes", "working_set_median_bytes" };
static const bool row_bytes[WSP_DIFF_ROWS] = { true, true, false, true, false, true, true };

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

static const char *program_of(const struct wsp_loaded *l)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	return p->cmdline[0] ? p->cmdline : p->exe;
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

static void print_kinds(const struct wsp_diff *r)
{
	printf("\n  %-22s %14s %14s %14s\n", "", "base", "new", "change");
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		if (!wsp_diff_kind_shown(&r->base, &r->now, k))
			continue;
		printf("  %s\n", wsprof_kind_name(k));
		const char *eb = wsp_est_total(&r->base, k), *en = wsp_est_total(&r->now, k);
		const char *ec = *eb ? eb : en;
		for (int row = 0; row < WSP_DIFF_ROWS; row++) {
			uint64_t b = 0, n = 0;
			bool hb = wsp_diff_kind_figure(&r->base, k, (enum wsp_diff_row)row, &b), hn = wsp_diff_kind_figure(&r->now, k, (enum wsp_diff_row)row, &n);
			if (!hb && !hn)
				continue;
			if (row == WSP_DIFF_ROW_FAILED && !b && !n)
				continue;
			char vb[40], vn[40], vc[40], pc[24], t[32];
			bool bytes = row_bytes[row];
			bool est = row != WSP_DIFF_ROW_FAILED; /* failures are always recorded */
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

static void print_sites(const struct wsp_diff *r, size_t top)
{
	size_t changed = r->changed;
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
	size_t shown = changed < top ? changed : top;
	printf("  %zu changed, by the change of %s%s\n\n", changed, wsp_diff_figure_words[r->sort], shown < changed ? ", the top ones" : "");
	printf("  %12s %12s %12s %12s %12s  %s\n", "base", "new", "change", "leaked", "allocations", "site");
	for (size_t i = 0; i < shown; i++) {
		const struct wsp_site_pair *p = &m->pairs[i];
		bool bytes = r->sort != WSP_DIFF_ALLOCATIONS;
		uint64_t b = wsp_diff_site_figure(p->base, r->sort), n = wsp_diff_site_figure(p->now, r->sort);
		char vb[40], vn[40], vc[40], vl[40], va[40], t[32], label[1024];
		snprintf(vb, sizeof vb, "%s%s", p->base ? eb : "", p->base ? amount(t, sizeof t, b, bytes) : "-");
		snprintf(vn, sizeof vn, "%s%s", p->now ? en : "", p->now ? amount(t, sizeof t, n, bytes) : "-");
		snprintf(vc, sizeof vc, "%s%s", ec, signed_amount(t, sizeof t, change(b, n), bytes));
		snprintf(vl, sizeof vl, "%s%s", ec,
			 wsp_human_change(t, sizeof t, change(wsp_diff_site_figure(p->base, WSP_DIFF_LEAKED), wsp_diff_site_figure(p->now, WSP_DIFF_LEAKED))));
		snprintf(va, sizeof va, "%s%s", ec,
			 wsp_count_change(t, sizeof t,
					  change(wsp_diff_site_figure(p->base, WSP_DIFF_ALLOCATIONS), wsp_diff_site_figure(p->now, WSP_DIFF_ALLOCATIONS))));
		const char *state = pair_state(p);
		printf("  %12s %12s %12s %12s %12s  %s%s%s%s\n", vb, vn, vc, vl, va, pair_label(p, label, sizeof label),
		       strcmp(state, "matched") ? " [" : "", strcmp(state, "matched") ? state : "", strcmp(state, "matched") ? "]" : "");
	}
	if (shown < changed)
		printf("\n  ... %zu more (--top 0 shows all)\n", changed - shown);
	printf("\n  leaked and allocations: their change; [new]: only in the new run, [gone]: only in the base, [moved]: its "
	       "line moved\n");
}

static void print_text(const struct wsp_diff *r, size_t top)
{
	printf("wsprof diff\n");
	print_run("base", &r->base);
	print_run("new", &r->now);
	print_kinds(r);
	print_sites(r, top);
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

static void print_json(const struct wsp_diff *r, size_t top)
{
	size_t changed = r->changed;
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
		if (!wsp_diff_kind_shown(&r->base, &r->now, k))
			continue;
		wsp_json_begin_object(&j, wsprof_kind_name(k));
		wsp_json_bool(&j, "base_estimated", wsp_model_totals_estimated(r->base.model, k));
		wsp_json_bool(&j, "new_estimated", wsp_model_totals_estimated(r->now.model, k));
		for (int row = 0; row < WSP_DIFF_ROWS; row++) {
			uint64_t b = 0, n = 0;
			bool hb = wsp_diff_kind_figure(&r->base, k, (enum wsp_diff_row)row, &b), hn = wsp_diff_kind_figure(&r->now, k, (enum wsp_diff_row)row, &n);
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
	wsp_json_string(&j, "sort", wsp_diff_figure_names[r->sort]);
	wsp_json_uint(&j, "base", m->nbase);
	wsp_json_uint(&j, "new", m->nnew);
	wsp_json_uint(&j, "matched", m->matched);
	wsp_json_uint(&j, "moved", m->moved);
	wsp_json_uint(&j, "only_base", m->only_base);
	wsp_json_uint(&j, "only_new", m->only_new);
	wsp_json_uint(&j, "unmatched_without_names", m->unnamed);
	wsp_json_uint(&j, "changed", changed);
	wsp_json_begin_array(&j, "changes");
	size_t shown = changed < top ? changed : top;
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
		for (int fig = 0; fig < WSP_DIFF_FIGURES; fig++) {
			static const char *const keys[] = { "peak_bytes", "leaked_bytes", "allocations", "bytes" };
			wsp_json_int(&j, keys[fig], change(wsp_diff_site_figure(p->base, (enum wsp_diff_figure)fig), wsp_diff_site_figure(p->now, (enum wsp_diff_figure)fig)));
		}
		wsp_json_end_object(&j);
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	wsp_json_end_object(&j);
	wsp_json_end_object(&j);
}


void wsp_diff_print(const struct wsp_diff *d, size_t top, bool json)
{
	if (json)
		print_json(d, top);
	else
		print_text(d, top);
}
