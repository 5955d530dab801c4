/*
 * top.c - `wsprof top` printed: one screen of a trace followed while it is
 * written (the command, cmd/top.c, reads it and keeps the terminal): how
 * long the program has run, each kind's live bytes and peak, the device's
 * free memory, the call sites holding the most, the rate of allocations.
 */
#include "text.h"
#include "compute.h"

#include <stdio.h>

void wsp_top_print(const struct wsp_loaded *l, const struct wsp_top_view *v, bool tty)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	char a[32], b[32], c[32];
	if (tty)
		fputs("\033[H\033[2J", stdout); /* home, clear */
	else
		fputs("\n", stdout);
	printf("wsprof top  %s (pid %u)  %s\n", p->cmdline[0] ? p->cmdline : p->exe, p->pid, l->path);
	wsprof_trace_status st;
	wsprof_trace_get_status(l->trace, &st);
	printf("  %.1f s recorded, %s events, %s allocations a second%s\n\n", (double)v->last_ns / 1e9,
	       wsp_group_digits(a, sizeof a, st.events), wsp_group_digits(b, sizeof b, (uint64_t)(v->rate + 0.5)),
	       v->ended ? "; the trace has ended" : v->error ? "; reading stopped: the trace is damaged" : "");
	printf("  %-12s %12s %12s %14s\n", "kind", "live", "peak", "allocations");
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		const struct wsp_kind_stats *s = wsp_model_kind(l->model, k);
		struct wsp_kind_stats heap;
		const char *est = wsp_est(l, k);
		if (k == WSPROF_KIND_HEAP && wsp_model_heap_counted_now(l->model, &heap)) {
			s = &heap; /* a sampled trace's heap, counted */
			est = "";
		}
		if (!s->seen || wsp_kind_is_address_space(k))
			continue;
		char live[40], peak[40];
		snprintf(live, sizeof live, "%s%s", est, wsp_human_bytes(a, sizeof a, s->live_bytes));
		snprintf(peak, sizeof peak, "%s%s", est, wsp_human_bytes(b, sizeof b, s->peak_bytes));
		printf("  %-12s %12s %12s %14s\n", wsprof_kind_name(k), live, peak, wsp_group_digits(c, sizeof c, s->allocations));
	}
	const struct wsp_device_stats *dev;
	size_t nd = wsp_model_devices(l->model, &dev);
	for (size_t i = 0; i < nd; i++)
		printf("  device %d: %s free of %s (least %s)\n", dev[i].device, wsp_human_bytes(a, sizeof a, dev[i].free_last),
		       wsp_human_bytes(b, sizeof b, dev[i].total), wsp_human_bytes(c, sizeof c, dev[i].free_min));
	if (v->rows) {
		const struct wsp_site_row *rows = v->rows;
		printf("\n  %s call sites by live bytes\n  %12s %12s  %s\n", wsprof_kind_name(v->kind), "live", "allocations", "site");
		for (size_t i = 0; i < v->nrows && i < v->sites && rows[i].sum.leaked_bytes; i++) {
			char label[512];
			printf("  %12s %12s  %s\n", wsp_human_bytes(a, sizeof a, rows[i].sum.leaked_bytes),
			       wsp_group_digits(b, sizeof b, rows[i].sum.allocations),
			       wsp_frame_label(&rows[i].site, label, sizeof label));
		}
	}
	if (tty && !v->ended)
		printf("\n  q quits\n");
	fflush(stdout);
}

void wsp_top_print_gone(uint32_t pid)
{
	printf("\n  the program (pid %u) is gone and its trace has no end: what was written is shown\n", pid);
}
