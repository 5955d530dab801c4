/*
 * callsites.c - `wsprof report callsites` and `wsprof report leaks` of
 * one trace, printed: the rows compute/sites.c made (a site's or a whole
 * stack's figures, largest first), as text or JSON.
 */
#include "text.h"

#include "compute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void callsites_json(const struct wsp_sites_report *o, struct wsp_loaded *l, const struct wsp_site_row *rows, size_t n,
			   size_t shown)
{
	struct wsp_json j;
	json_open(&j, l, "callsites", o->kind);
	wsp_json_string(&j, "sort", wsp_site_sort_names[o->sort]);
	wsp_json_bool(&j, "full_stacks", o->by_stack);
	wsp_json_uint(&j, "sites_total", n);
	wsp_json_begin_array(&j, "sites");
	for (size_t i = 0; i < shown; i++) {
		const struct wsp_site_row *row = &rows[i];
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
		if (o->by_stack)
			json_stack(&j, l, row->stack);
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	wsp_json_end_object(&j);
}

static void callsites_text(const struct wsp_sites_report *o, struct wsp_loaded *l, const struct wsp_site_row *rows, size_t n,
			   size_t shown)
{
	wsp_print_heading(l, "call sites");
	printf("  %s: %zu %s%s, sorted by %s%s\n\n", wsprof_kind_name(o->kind), n,
	       o->by_stack ? "call stack" : "allocation site", n == 1 ? "" : "s", wsp_site_sort_names[o->sort],
	       shown < n ? ", the top ones" : "");
	bool access = wsp_site_sort_shows_access(o->sort);
	const char *est = wsp_est(l, o->kind);
	if (access)
		printf("  %11s %11s %11s %13s  %s\n", "bytes", "accessed", "cold for", "allocations", o->by_stack ? "call stack" : "site");
	else
		printf("  %11s %11s %13s %11s %11s  %s\n", "peak", "leaked", "allocations", "temporary", "bytes",
		       o->by_stack ? "call stack" : "site");
	for (size_t i = 0; i < shown; i++) {
		const struct wsp_site_row *row = &rows[i];
		char a[32], b[32], c[32], d[32], e[32], label[1024];
		if (access) { /* cold for: the longest a block went untouched before its free or the end */
			printf("  %11s %11s %9.3f s %13s  %s\n",
			       wsp_estimate_text(a, sizeof a, est, wsp_human_bytes(a, sizeof a, row->sum.bytes)),
			       wsp_estimate_text(b, sizeof b, est, wsp_human_bytes(b, sizeof b, row->sum.accessed_bytes)),
			       (double)row->sum.coldest_idle_ns / 1e9,
			       wsp_estimate_text(c, sizeof c, est, wsp_group_digits(c, sizeof c, row->sum.allocations)),
			       wsp_frame_label(&row->site, label, sizeof label));
			if (o->by_stack)
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
		if (o->by_stack)
			print_stack(l, row->stack, "      ");
	}
	if (shown < n)
		printf("\n  ... %zu more (--top 0 shows all)\n", n - shown);
	if (!n)
		printf("  (no %s allocations recorded)\n", wsprof_kind_name(o->kind));
}

void wsp_callsites_print(struct wsp_loaded *l, const struct wsp_site_row *rows, size_t n, const struct wsp_sites_report *o)
{
	size_t shown = n < o->top ? n : o->top;
	if (o->json)
		callsites_json(o, l, rows, n, shown);
	else
		callsites_text(o, l, rows, n, shown);
}

/* ---- leaks ------------------------------------------------------------- */

void wsp_leaks_print(struct wsp_loaded *pl, const struct wsp_site_row *rows, size_t n, uint64_t bytes, uint64_t blocks,
		     const struct wsp_sites_report *po)
{
	const struct wsp_sites_report o = *po;
	struct wsp_loaded l = *pl;
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
			wsp_json_uint(&j, "leaked_bytes", rows[i].sum.leaked_bytes);
			wsp_json_uint(&j, "leaked_blocks", rows[i].sum.leaked_blocks);
			wsp_json_uint(&j, "allocations", rows[i].sum.allocations);
			json_stack(&j, &l, rows[i].stack);
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
			       wsp_human_bytes(a, sizeof a, rows[i].sum.leaked_bytes), est,
			       wsp_group_digits(b, sizeof b, rows[i].sum.leaked_blocks), rows[i].sum.leaked_blocks == 1 ? "" : "s",
			       est, wsp_group_digits((char[32]){ 0 }, 32, rows[i].sum.allocations));
			print_stack(&l, rows[i].stack, "      ");
		}
		if (shown < n)
			printf("\n  ... %zu more stack%s (--top 0 shows all)\n", n - shown, n - shown == 1 ? "" : "s");
	}
}
