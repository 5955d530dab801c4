/*
 * wssreport.c - `wsprof report wss`: how much memory the program actually
 * touched, window by window, per access source and per kind, and the
 * distribution (percentiles 0/25/50/75/100 and the mean, as damo prints
 * them), as text or JSON. The command is cmd/wss.c; the plot draw/wssplot.c.
 */
#include "compute.h"
#include "text.h"

#include <stdio.h>

static void json_dist(struct wsp_json *j, const char *key, const struct wsp_wss_dist *d)
{
	static const char *const names[5] = { "p0", "p25", "p50", "p75", "p100" };
	wsp_json_begin_object(j, key);
	for (int i = 0; i < 5; i++)
		wsp_json_uint(j, names[i], d->p[i]);
	wsp_json_uint(j, "mean", d->mean);
	wsp_json_end_object(j);
}

static void text_dist(const char *label, const struct wsp_wss_dist *d)
{
	char v[6][32];
	for (int i = 0; i < 5; i++)
		wsp_human_bytes(v[i], sizeof v[i], d->p[i]);
	wsp_human_bytes(v[5], sizeof v[5], d->mean);
	printf("  %-46s %10s %10s %10s %10s %10s %10s\n", label, v[0], v[1], v[2], v[3], v[4], v[5]);
}

void wsp_wss_print(const struct wsp_loaded *lp, int k, uint64_t window_ms, bool json)
{
	const struct wsp_loaded l = *lp;
	const wsprof_process *p = wsprof_trace_process(l.trace);
	const struct wsp_wss *w = wsp_model_wss(l.model);
	const struct wsp_wss_point *pts = NULL;
	size_t n = w ? wsp_wss_points(w, &pts) : 0;
	unsigned window = window_ms ? (unsigned)window_ms : p->window_ms;
	struct wsp_wss_dist all = wsp_wss_dist_of(pts, n, -1, k), per[WSPROF_ACCESS_SOURCE_COUNT];
	for (int s = 0; s < WSPROF_ACCESS_SOURCE_COUNT; s++)
		per[s] = wsp_wss_dist_of(pts, n, s, -1);
	if (json) {
		struct wsp_json j;
		wsp_json_init(&j, stdout);
		wsp_json_begin_object(&j, NULL);
		wsp_json_string(&j, "report", "wss");
		wsp_json_string(&j, "trace", l.path);
		wsp_json_string(&j, "program", p->cmdline[0] ? p->cmdline : p->exe);
		wsp_json_uint(&j, "window_ms", window);
		wsp_json_string(&j, "kind", k >= 0 ? wsprof_kind_name((unsigned)k) : NULL);
		wsp_json_sampled(&j, &l); /* then by_kind's heap bytes are estimates */
		if (k >= 0)
			wsp_json_estimated(&j, &l, (unsigned)k);
		wsp_json_begin_array(&j, "sources");
		for (int s = 0; s < WSPROF_ACCESS_SOURCE_COUNT; s++)
			if (p->access_sources & wsp_access_source((unsigned)s)->bit)
				wsp_json_string(&j, NULL, wsp_access_source((unsigned)s)->key);
		wsp_json_end_array(&j);
		wsp_json_string(&j, "note", p->access_note);
		json_dist(&j, "percentiles", &all);
		wsp_json_begin_object(&j, "percentiles_by_source");
		for (int s = 0; s < WSPROF_ACCESS_SOURCE_COUNT; s++)
			if (per[s].p[4])
				json_dist(&j, wsp_access_source((unsigned)s)->key, &per[s]);
		wsp_json_end_object(&j);
		wsp_json_begin_array(&j, "series");
		for (size_t i = 0; i < n; i++) {
			wsp_json_begin_object(&j, NULL);
			wsp_json_seconds(&j, "start_s", pts[i].start_ns);
			wsp_json_seconds(&j, "end_s", pts[i].end_ns);
			wsp_json_uint(&j, "bytes", wsp_wss_point_bytes(&pts[i], -1, k));
			wsp_json_begin_object(&j, "by_source");
			for (int s = 0; s < WSPROF_ACCESS_SOURCE_COUNT; s++)
				wsp_json_uint(&j, wsp_access_source((unsigned)s)->key, pts[i].bytes[s]);
			wsp_json_end_object(&j);
			wsp_json_begin_object(&j, "by_kind");
			for (unsigned kk = 0; kk < WSPROF_KIND_COUNT; kk++)
				if (pts[i].kind_bytes[kk])
					wsp_json_uint(&j, wsprof_kind_name(kk), pts[i].kind_bytes[kk]);
			wsp_json_end_object(&j);
			wsp_json_uint(&j, "unattributed", pts[i].unattributed_bytes);
			wsp_json_end_object(&j);
		}
		wsp_json_end_array(&j);
		wsp_json_end_object(&j);
	} else {
		wsp_print_heading(&l, "working set");
		printf("  sources   ");
		bool any = false;
		for (int s = 0; s < WSPROF_ACCESS_SOURCE_COUNT; s++) {
			if (p->access_sources & wsp_access_source((unsigned)s)->bit) {
				printf("%s%s", any ? ", " : "", wsp_access_source((unsigned)s)->detail);
				any = true;
			}
		}
		printf("%s\n", any ? "" : "none");
		if (p->access_note[0])
			printf("  missing   %s\n", p->access_note);
		printf("  window    %u ms, %zu windows\n\n", window, n);
		if (!n) {
			printf("  no access samples in this trace\n");
		} else {
			printf("  %-46s %10s %10s %10s %10s %10s %10s\n", "bytes accessed per window", "p0", "p25", "p50", "p75",
			       "p100", "mean");
			char label[64];
			snprintf(label, sizeof label, "%s%s", k >= 0 ? wsprof_kind_name((unsigned)k) : "all sources",
				 k >= 0 && *wsp_est(&l, (unsigned)k) ? " (estimated)" : "");
			text_dist(label, &all);
			for (int s = 0; s < WSPROF_ACCESS_SOURCE_COUNT && k < 0; s++)
				if (per[s].p[4])
					text_dist(wsp_access_source((unsigned)s)->detail, &per[s]);
			printf("\n  %10s %10s  %s\n", "time", "accessed", "by kind");
			size_t step = n > 40 ? (n + 39) / 40 : 1; /* at most about 40 lines; --json has them all */
			for (size_t i = 0; i < n; i += step) {
				char b[32], kb[32];
				printf("  %8.3f s %10s ", (double)pts[i].end_ns / 1e9,
				       wsp_estimate_text(b, sizeof b, k >= 0 ? wsp_est(&l, (unsigned)k) : "",
							 wsp_human_bytes(b, sizeof b, wsp_wss_point_bytes(&pts[i], -1, k))));
				for (unsigned kk = 0; kk < WSPROF_KIND_COUNT; kk++)
					if (pts[i].kind_bytes[kk] && k < 0)
						printf(" %s %s%s", wsprof_kind_name(kk), wsp_est(&l, kk),
						       wsp_human_bytes(kb, sizeof kb, pts[i].kind_bytes[kk]));
				printf("\n");
			}
			if (step > 1)
				printf("  (one window in %zu shown; --json lists all)\n", step);
		}
	}
}
