/*
 * jobsites.c - callsites and leaks of a job, printed: the rows that
 * compute/jobsites.c merged across processes, as text or JSON, each with
 * how many processes it is in.
 */
#include "text.h"

#include "compute.h"
#include "job.h"

#include <stdio.h>
#include <string.h>

static size_t readable(const struct wsp_job *job)
{
	return job->n - job->unread;
}

static void json_row(struct wsp_json *j, const struct wsp_job_row *r, bool by_stack)
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

void wsp_job_sites_print(const struct wsp_job *job, const struct wsp_job_rows *rows, const struct wsp_sites_report *o)
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
			wsp_json_string(&j, "sort", wsp_site_sort_names[o->sort]);
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
			const struct wsp_job_row *r = &rows->v[i];
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
		       o->by_stack ? "call stack" : "allocation site", n == 1 ? "" : "s", wsp_site_sort_names[o->sort],
		       shown < n ? ", the top ones" : "");
		printf("  %11s %11s %13s %11s %11s %9s  %s\n", "peak", "leaked", "allocations", "temporary", "bytes", "processes",
		       o->by_stack ? "call stack" : "site");
		for (size_t i = 0; i < shown; i++) {
			const struct wsp_job_row *r = &rows->v[i];
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
