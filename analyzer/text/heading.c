/*
 * heading.c - what every text and JSON report says of the trace it read
 * before its own figures: the heading lines (what, of which trace, which
 * program, sampled or not, the spans recorded), the "~" of estimated
 * figures, and the JSON fields saying the same. Renderers call these;
 * the figures themselves come from the model (wsp_recorded_spans,
 * wsp_model_estimated).
 */
#include "text.h"

#include <stdio.h>
#include <string.h>

void wsp_print_heading(const struct wsp_loaded *l, const char *what)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	printf("wsprof %s of %s\n", what, l->path);
	printf("  program   %s (pid %u)\n", p->cmdline[0] ? p->cmdline : p->exe, p->pid);
	if (!l->status.complete)
		printf("  trace     %s: this covers what was read\n",
		       l->status.error == WSPROF_E_TRUNCATED ? "truncated" : "damaged");
	char sampled[128], spans[256];
	if (*wsp_sampled_text(l, sampled, sizeof sampled))
		printf("  %s\n", sampled);
	struct wsp_span first;
	bool attached;
	wsp_recorded_spans(l, &first, 1, &attached);
	if (attached)
		printf("  attached  at %.3f s: memory allocated before is not attributed\n", (double)first.start_ns / 1e9);
	if (*wsp_spans_text(l, spans, sizeof spans))
		printf("  spans     %s\n", spans);
	printf("\n");
}

/* ---- sampled traces ------------------------------------------------------ */

const char *wsp_sampled_text(const struct wsp_loaded *l, char *buf, size_t cap)
{
	uint64_t n = wsprof_trace_process(l->trace)->sample_bytes;
	char digits[32];
	if (!n)
		buf[0] = 0;
	else if (n == 1)
		snprintf(buf, cap, "sampled: 1 in 1 byte, so every heap allocation was recorded; figures are exact");
	else if (wsp_model_heap_counted(l->model, NULL))
		snprintf(buf, cap, "sampled: 1 in %s bytes; heap totals counted, heap call sites estimated",
			 wsp_group_digits(digits, sizeof digits, n));
	else
		snprintf(buf, cap, "sampled: 1 in %s bytes; heap figures are estimates", wsp_group_digits(digits, sizeof digits, n));
	return buf;
}

const char *wsp_est(const struct wsp_loaded *l, unsigned kind)
{
	return wsp_model_estimated(l->model, kind) ? "~" : "";
}

const char *wsp_est_total(const struct wsp_loaded *l, unsigned kind)
{
	return wsp_model_totals_estimated(l->model, kind) ? "~" : "";
}

const char *wsp_estimate_text(char *buf, size_t cap, const char *est, const char *text)
{
	size_t e = strlen(est), n = strlen(text);
	if (e + n >= cap)
		return text;
	memmove(buf + e, text, n + 1);
	memcpy(buf, est, e);
	return buf;
}

void wsp_json_sampled(struct wsp_json *j, const struct wsp_loaded *l)
{
	uint64_t n = wsprof_trace_process(l->trace)->sample_bytes;
	if (!n)
		return;
	wsp_json_bool(j, "sampled", true);
	wsp_json_uint(j, "sample_bytes", n);
}

void wsp_json_estimated(struct wsp_json *j, const struct wsp_loaded *l, unsigned kind)
{
	if (wsp_model_estimated(l->model, kind))
		wsp_json_bool(j, "estimated", true);
}

void wsp_json_total_estimated(struct wsp_json *j, const struct wsp_loaded *l, unsigned kind)
{
	double share;
	if (kind == WSPROF_KIND_HEAP && wsp_model_heap_counted(l->model, &share)) {
		wsp_json_bool(j, "counted", true);
		wsp_json_double(j, "usable_share", share);
		const struct wsp_kind_stats *e = wsp_model_heap_estimates(l->model);
		wsp_json_begin_object(j, "estimated_from_samples");
		wsp_json_uint(j, "allocations", e->allocations);
		wsp_json_uint(j, "frees", e->frees);
		wsp_json_uint(j, "peak_bytes", e->peak_bytes);
		wsp_json_uint(j, "leaked_bytes", e->live_bytes);
		wsp_json_uint(j, "leaked_blocks", e->live_blocks);
		wsp_json_uint(j, "total_bytes", e->total_bytes);
		wsp_json_end_object(j);
	} else {
		wsp_json_estimated(j, l, kind);
	}
}

const char *wsp_spans_text(const struct wsp_loaded *l, char *buf, size_t cap)
{
	struct wsp_span spans[8];
	bool attached;
	size_t n = wsp_recorded_spans(l, spans, 8, &attached);
	const struct wsp_recording_switch *sw;
	size_t total = wsp_model_recording(l->model, &sw);
	buf[0] = 0;
	if (!total)
		return buf;
	size_t o = 0;
	o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, "recorded ");
	for (size_t i = 0; i < n && i < 4; i++)
		o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, "%s%.3f s to %.3f s", i ? ", " : "",
				      (double)spans[i].start_ns / 1e9, (double)spans[i].end_ns / 1e9);
	if (!n)
		o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, "nothing (recording was never on)");
	else if (n > 4)
		o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, ", ...");
	snprintf(buf + o, o < cap ? cap - o : 0, " (%zu span%s%s)", n, n == 1 ? "" : "s",
		 n == 8 ? " or more" : "");
	return buf;
}
