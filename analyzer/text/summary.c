/*
 * summary.c - `wsprof report summary` printed: the whole trace in a few
 * lines, or one JSON object with every figure (--json). The command is
 * cmd/summary.c; a job's summary text/jobsummary.c.
 */
#include "text.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* "3.11.2" from PY_VERSION_HEX; "older than 3.11" when not known. */
static const char *python_version(uint32_t v, char *buf, size_t cap)
{
	if (!v)
		snprintf(buf, cap, "older than 3.11");
	else
		snprintf(buf, cap, "%u.%u.%u", v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff);
	return buf;
}

static const char *python_objects_name(unsigned objects)
{
	return objects == WSPROF_PYOBJ_MALLOC ? "malloc" : objects == WSPROF_PYOBJ_HOOKED ? "hooked" : "arenas";
}

/* What the recorder found of a Python interpreter, and how its small objects show. */
static void print_python(const struct wsp_loaded *l)
{
	const wsprof_python *py = wsprof_trace_python(l->trace);
	if (!py->seen)
		return;
	char ver[32];
	const char *base = strrchr(py->path, '/');
	printf("  python    %s (%s): ", python_version(py->version, ver, sizeof ver), base ? base + 1 : py->path);
	if (!py->frames) {
		const char *why = strstr(py->note, "no Python frames");
		printf("%s\n", why ? why : py->note);
		return;
	}
	printf("Python frames in the stacks; ");
	if (py->objects == WSPROF_PYOBJ_MALLOC)
		printf("every object is its own allocation (PYTHONMALLOC=malloc)\n");
	else if (py->objects == WSPROF_PYOBJ_HOOKED)
		printf("every object of 512 bytes or less recorded as a pool block inside pymalloc's arenas "
		       "(WSPROF_PYTHON_OBJECTS=1)\n");
	else
		printf("objects of 512 bytes or less live in pymalloc's 256 KiB arenas (mmap), each attributed to "
		       "the line that opened it (WSPROF_PYTHON_OBJECTS=1 records every object)\n");
}

/* CUDA VMM mappings and reservations, mmap reservations: address space,
 * told with cuda_vmm and mmap, not as kinds of their own. */
static bool is_address_range_kind(unsigned k)
{
	return wsp_kind_is_address_space(k);
}

/* Whether a kind has a line in the table: mmap also for reservations alone. */
static bool shown(const struct wsp_loaded *l, unsigned k)
{
	if (is_address_range_kind(k))
		return false;
	return wsp_model_kind(l->model, k)->seen ||
	       (k == WSPROF_KIND_MMAP && wsp_model_kind(l->model, WSPROF_KIND_MMAP_RESERVED)->seen);
}

static const char *status_word(const wsprof_trace_status *st)
{
	if (st->complete)
		return st->ended_by_exec ? "complete (ended by exec)" : "complete";
	return st->error == WSPROF_E_TRUNCATED ? "truncated" : "damaged";
}

/* How the process ended, in a word for JSON. */
static const char *ending_word(const wsprof_trace_status *st)
{
	if (st->ended_by_exec)
		return "exec";
	if (!st->complete)
		return "cut";
	return st->ending == WSPROF_END_EXIT ? "exit" : st->ending == WSPROF_END_SIGNAL ? "signal" : "unknown";
}

static const char *signal_name(int sig, char *buf, size_t cap)
{
	const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;
	if (abbrev)
		snprintf(buf, cap, "SIG%s", abbrev);
	else
		snprintf(buf, cap, "signal %d", sig);
	return buf;
}

/* The summary's "ended" line. */
const char *wsp_ending_text(const struct wsp_loaded *l, char *buf, size_t cap)
{
	const wsprof_trace_status *st = &l->status;
	const char *by = st->finished_by_launcher
				 ? "; the process could not write the end of its trace, wsprof record did from the process's buffers"
				 : "";
	char sig[32];
	buf[0] = 0;
	const struct wsp_recording_switch *sw;
	size_t nsw = wsp_model_recording(l->model, &sw);
	if (nsw && sw[nsw - 1].cause == WSPROF_REC_DETACH) {
		snprintf(buf, cap, "wsprof attach ended at %.3f s and the program went on: \"leaked\" is what was live then",
			 (double)sw[nsw - 1].time_ns / 1e9);
		return buf;
	}
	if (st->ended_by_exec)
		snprintf(buf, cap, "by exec of %s", wsp_model_exec(l->model) ? wsp_model_exec(l->model) : "?");
	else if (!st->complete)
		snprintf(buf, cap, "not known: the trace was cut (killed, or ended by exit_group, without wsprof record to "
			 "finish it); what was written before is shown");
	else if (st->ending == WSPROF_END_EXIT)
		snprintf(buf, cap, "exit status %d%s", st->ending_value, by);
	else if (st->ending == WSPROF_END_SIGNAL)
		snprintf(buf, cap, "killed by %s%s%s", signal_name(st->ending_value, sig, sizeof sig),
			 st->ending_value == SIGKILL ? " (kill -9, or the kernel's out-of-memory killer)" : "", by);
	else if (wsprof_trace_process(l->trace)->format_minor >= 2 || wsprof_trace_process(l->trace)->format_major > 2)
		snprintf(buf, cap, "how is not known%s", by);
	return buf;
}

static void print_ending(const struct wsp_loaded *l)
{
	char text[512];
	if (*wsp_ending_text(l, text, sizeof text))
		printf("  ended     %s\n", text);
}

/* "recording": the spans recorded and every switch, when recording was switched. */
static void print_json_recording(struct wsp_json *j, const struct wsp_loaded *l)
{
	static const char *const causes[WSPROF_REC_CAUSE_COUNT] = { "start", "call", "signal", "attach", "detach" };
	const struct wsp_recording_switch *sw;
	size_t n = wsp_model_recording(l->model, &sw);
	struct wsp_span spans[64];
	bool attached;
	size_t ns = wsp_recorded_spans(l, spans, 64, &attached);
	wsp_json_begin_object(j, "recording");
	wsp_json_bool(j, "whole_run", n == 0);
	wsp_json_bool(j, "attached", attached);
	wsp_json_begin_array(j, "spans");
	for (size_t i = 0; i < ns; i++) {
		wsp_json_begin_object(j, NULL);
		wsp_json_seconds(j, "start_s", spans[i].start_ns);
		wsp_json_seconds(j, "end_s", spans[i].end_ns);
		wsp_json_end_object(j);
	}
	wsp_json_end_array(j);
	wsp_json_begin_array(j, "switches");
	for (size_t i = 0; i < n; i++) {
		wsp_json_begin_object(j, NULL);
		wsp_json_seconds(j, "time_s", sw[i].time_ns);
		wsp_json_bool(j, "on", sw[i].on);
		wsp_json_string(j, "cause", sw[i].cause < WSPROF_REC_CAUSE_COUNT ? causes[sw[i].cause] : "?");
		wsp_json_end_object(j);
	}
	wsp_json_end_array(j);
	wsp_json_end_object(j);
}

void wsp_summary_print_json(const struct wsp_loaded *l)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	const wsprof_trace_status *st = &l->status;
	struct wsp_json j;
	wsp_json_init(&j, stdout);
	wsp_json_begin_object(&j, NULL);
	wsp_json_string(&j, "trace", l->path);
	wsp_json_bool(&j, "complete", st->complete);
	wsp_json_sampled(&j, l);
	wsp_json_string(&j, "status", status_word(st));
	wsp_json_begin_object(&j, "ended");
	wsp_json_string(&j, "how", ending_word(st));
	if (st->complete && st->ending == WSPROF_END_EXIT)
		wsp_json_uint(&j, "exit_status", (uint64_t)st->ending_value);
	if (st->complete && st->ending == WSPROF_END_SIGNAL) {
		char sig[32];
		wsp_json_uint(&j, "signal", (uint64_t)st->ending_value);
		wsp_json_string(&j, "signal_name", signal_name(st->ending_value, sig, sizeof sig));
	}
	wsp_json_bool(&j, "finished_by_wsprof_record", st->finished_by_launcher);
	wsp_json_end_object(&j);
	if (st->error)
		wsp_json_string(&j, "warning", wsprof_strerror(st->error));
	wsp_json_seconds(&j, "duration_s", st->end_time_ns);
	wsp_json_uint(&j, "threads", st->threads);
	wsp_json_uint(&j, "events", st->events);
	wsp_json_uint(&j, "chunks", st->chunks);
	wsp_json_begin_object(&j, "process");
	wsp_json_uint(&j, "pid", p->pid);
	wsp_json_uint(&j, "ppid", p->ppid);
	if (p->parent_traced_pid)
		wsp_json_uint(&j, "forked_from", p->parent_traced_pid);
	wsp_json_string(&j, "exe", p->exe);
	wsp_json_string(&j, "cmdline", p->cmdline);
	wsp_json_seconds(&j, "start_unix_s", p->start_realtime_ns);
	if (p->rank >= 0)
		wsp_json_int(&j, "rank", p->rank);
	else
		wsp_json_null(&j, "rank");
	wsp_json_uint(&j, "job_size", p->job_size);
	wsp_json_string(&j, "job_id", p->job_id[0] ? p->job_id : NULL);
	wsp_json_string(&j, "launcher", p->launcher[0] ? p->launcher : NULL);
	wsp_json_end_object(&j);
	wsp_json_begin_object(&j, "recorder");
	wsp_json_string(&j, "version", p->tool_version);
	char fmt[32];
	snprintf(fmt, sizeof fmt, "%u.%u", p->format_major, p->format_minor);
	wsp_json_string(&j, "format", fmt);
	wsp_json_uint(&j, "stack_depth", p->stack_depth);
	wsp_json_uint(&j, "flush_ms", p->flush_ms);
	wsp_json_bool(&j, "follow", p->follow);
	if (p->sample_bytes)
		wsp_json_uint(&j, "sample_bytes", p->sample_bytes);
	wsp_json_string(&j, "allocator", p->allocator[0] ? p->allocator : NULL);
	wsp_json_uint(&j, "untraced_calls", l->status.untraced_calls);
	wsp_json_end_object(&j);
	const wsprof_python *py = wsprof_trace_python(l->trace);
	if (py->seen) {
		char ver[32];
		wsp_json_begin_object(&j, "python");
		wsp_json_string(&j, "version", python_version(py->version, ver, sizeof ver));
		wsp_json_string(&j, "interpreter", py->path);
		wsp_json_bool(&j, "frames", py->frames);
		wsp_json_string(&j, "objects", python_objects_name(py->objects));
		wsp_json_string(&j, "note", py->note[0] ? py->note : NULL);
		wsp_json_end_object(&j);
	}
	wsp_json_begin_object(&j, "kinds");
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		const struct wsp_kind_stats *s = wsp_model_kind(l->model, k);
		if (!shown(l, k))
			continue;
		wsp_json_begin_object(&j, wsprof_kind_name(k));
		wsp_json_total_estimated(&j, l, k);
		wsp_json_uint(&j, "allocations", s->allocations);
		wsp_json_uint(&j, "frees", s->frees);
		wsp_json_uint(&j, "failed", s->failed);
		wsp_json_uint(&j, "peak_bytes", s->peak_bytes);
		wsp_json_seconds(&j, "peak_time_s", s->peak_time_ns);
		wsp_json_uint(&j, "leaked_bytes", s->live_bytes);
		wsp_json_uint(&j, "leaked_blocks", s->live_blocks);
		wsp_json_uint(&j, "total_bytes", s->total_bytes);
		wsp_json_uint(&j, "in_use_peak_bytes", s->in_use_peak_bytes);
		wsp_json_seconds(&j, "in_use_peak_time_s", s->in_use_peak_time_ns);
		wsp_json_uint(&j, "collectable_bytes_at_peak", s->collectable_at_peak);
		wsp_json_uint(&j, "collectable_bytes_at_end", s->collectable_bytes);
		if (k == WSPROF_KIND_CUDA_VMM) {
			const struct wsp_kind_stats *map = wsp_model_kind(l->model, WSPROF_KIND_CUDA_VMM_MAPPED);
			const struct wsp_kind_stats *res = wsp_model_kind(l->model, WSPROF_KIND_CUDA_VMM_RESERVED);
			wsp_json_uint(&j, "maps", map->allocations);
			wsp_json_uint(&j, "unmaps", map->frees);
			wsp_json_uint(&j, "mapped_peak_bytes", map->peak_bytes);
			wsp_json_uint(&j, "mapped_bytes_at_end", map->live_bytes);
			wsp_json_uint(&j, "reserved_peak_bytes", res->peak_bytes);
			wsp_json_uint(&j, "reserved_bytes_at_end", res->live_bytes);
		}
		if (k == WSPROF_KIND_MMAP) {
			const struct wsp_kind_stats *res = wsp_model_kind(l->model, WSPROF_KIND_MMAP_RESERVED);
			wsp_json_uint(&j, "reservations", res->allocations);
			wsp_json_uint(&j, "reserved_peak_bytes", res->peak_bytes);
			wsp_json_uint(&j, "reserved_bytes_at_end", res->live_bytes);
			wsp_json_uint(&j, "in_reservations_bytes_at_end", wsp_model_mmap_in_reservations(l->model));
		}
		wsp_json_end_object(&j);
	}
	wsp_json_end_object(&j);
	const struct wsp_device_stats *dev;
	size_t ndev = wsp_model_devices(l->model, &dev);
	wsp_json_begin_array(&j, "devices");
	for (size_t i = 0; i < ndev; i++) {
		wsp_json_begin_object(&j, NULL);
		wsp_json_int(&j, "device", dev[i].device);
		wsp_json_uint(&j, "total_bytes", dev[i].total);
		wsp_json_uint(&j, "free_min_bytes", dev[i].free_min);
		wsp_json_seconds(&j, "free_min_time_s", dev[i].free_min_time_ns);
		wsp_json_uint(&j, "free_bytes_at_end", dev[i].free_last);
		wsp_json_uint(&j, "samples", dev[i].samples);
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	wsp_json_begin_object(&j, "access");
	wsp_json_begin_array(&j, "sources");
	for (size_t i = 0; i < WSPROF_ACCESS_SOURCE_COUNT; i++)
		if (p->access_sources & wsp_access_source_listed(i)->bit)
			wsp_json_string(&j, NULL, wsp_access_source_listed(i)->word);
	wsp_json_end_array(&j);
	wsp_json_string(&j, "note", p->access_note);
	wsp_json_uint(&j, "window_ms", p->window_ms);
	wsp_json_uint(&j, "wp_pages", p->wp_pages);
	wsp_json_uint(&j, "release_pages", p->release_pages);
	wsp_json_uint(&j, "max_regions", p->max_regions);
	const struct wsp_wss *w = wsp_model_wss(l->model);
	const struct wsp_wss_point *pts;
	size_t npts = w ? wsp_wss_points(w, &pts) : 0;
	wsp_json_uint(&j, "windows", npts);
	const struct wsp_rss_point *rss;
	size_t nrss = wsp_model_rss(l->model, &rss);
	uint64_t rss_peak = 0;
	for (size_t i = 0; i < nrss; i++)
		rss_peak = rss[i].bytes > rss_peak ? rss[i].bytes : rss_peak;
	wsp_json_uint(&j, "rss_peak_bytes", rss_peak);
	wsp_json_end_object(&j);
	wsp_json_uint(&j, "untracked_frees", wsp_model_untracked_frees(l->model));
	const struct wsp_phase *phases;
	const struct wsp_snapshot *snaps;
	size_t nphases = wsp_model_phases(l->model, &phases), nsnaps = wsp_model_snapshots(l->model, &snaps);
	wsp_json_begin_object(&j, "annotations");
	wsp_json_uint(&j, "unknown_addresses", wsp_model_unknown_annotations(l->model));
	wsp_json_uint(&j, "phases", nphases);
	wsp_json_begin_array(&j, "snapshots");
	for (size_t i = 0; i < nsnaps; i++) {
		wsp_json_begin_object(&j, NULL);
		wsp_json_string(&j, "label", snaps[i].label);
		wsp_json_seconds(&j, "time_s", snaps[i].time_ns);
		wsp_json_end_object(&j);
	}
	wsp_json_end_array(&j);
	wsp_json_end_object(&j);
	const uint32_t *kids;
	size_t n = wsp_model_children(l->model, &kids);
	wsp_json_begin_array(&j, "children");
	for (size_t i = 0; i < n; i++)
		wsp_json_uint(&j, NULL, kids[i]);
	wsp_json_end_array(&j);
	wsp_json_string(&j, "exec", st->ended_by_exec ? wsp_model_exec(l->model) : NULL);
	print_json_recording(&j, l);
	wsp_json_end_object(&j);
}

void wsp_summary_print_text(const struct wsp_loaded *l, bool filtered)
{
	const wsprof_process *p = wsprof_trace_process(l->trace);
	const wsprof_trace_status *st = &l->status;
	char a[32], b[32], c[32], d[32], e[32], f[32];
	printf("wsprof summary of %s\n", l->path);
	printf("  program   %s\n", p->cmdline[0] ? p->cmdline : p->exe);
	printf("  process   pid %u, parent %u", p->pid, p->ppid);
	if (p->parent_traced_pid)
		printf(", forked from traced pid %u", p->parent_traced_pid);
	printf("\n");
	if (p->rank >= 0) {
		printf("  job       rank %lld", (long long)p->rank);
		if (p->job_size)
			printf(" of %llu", (unsigned long long)p->job_size);
		printf(" (%s%s%sfrom %s's environment)\n", p->job_id[0] ? "job " : "", p->job_id, p->job_id[0] ? ", " : "",
		       p->launcher[0] ? p->launcher : "the launcher");
	}
	time_t start = (time_t)(p->start_realtime_ns / 1000000000u);
	struct tm tm;
	char when[64] = "?";
	if (gmtime_r(&start, &tm))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("  recorded  %s, %.3f s, %llu thread%s, %s events\n", when, (double)st->end_time_ns / 1e9,
	       (unsigned long long)st->threads, st->threads == 1 ? "" : "s", wsp_group_digits(a, sizeof a, st->events));
	printf("  trace     %s (format %u.%u, wsprof %s)\n", status_word(st), p->format_major, p->format_minor,
	       p->tool_version);
	print_ending(l);
	char spans[256];
	bool attached;
	struct wsp_span first;
	wsp_recorded_spans(l, &first, 1, &attached);
	if (attached)
		printf("  attached  by wsprof attach, the trace's start: memory the program allocated before is not in these "
		       "figures (its frees are untracked frees)\n");
	if (*wsp_spans_text(l, spans, sizeof spans))
		printf("  spans     %s\n", spans);
	if (p->access_sources) {
		char sources[128];
		printf("  access    %s", wsp_access_sources_text(p->access_sources, sources, sizeof sources));
		char released[96] = "";
		if (p->release_pages && (p->access_sources & WSPROF_SOURCE_WRITES))
			snprintf(released, sizeof released, ", large blocks read as they are freed up to %u pages", p->release_pages);
		printf(" (window %u ms, at most %u pages re-checked%s per window)%s%s\n", p->window_ms, p->wp_pages, released,
		       p->access_note[0] ? "; " : "", p->access_note);
	}
	if (p->allocator[0]) {
		const char *base = strrchr(p->allocator, '/');
		printf("  allocator %s (%s)\n", base ? base + 1 : p->allocator, p->allocator);
	}
	print_python(l);
	if (st->untraced_calls)
		printf("  untraced  %llu mmap-family call%s passed through untraced: made before recording began or by "
		       "libunwind, where recording could have waited on a lock the caller held\n",
		       (unsigned long long)st->untraced_calls, st->untraced_calls == 1 ? "" : "s");
	char sampled[128];
	if (*wsp_sampled_text(l, sampled, sizeof sampled))
		printf("  %s (~)\n", sampled);
	printf("\n");
	if (filtered)
		printf("  (only allocations made from the --caller modules are counted)\n\n");
	printf("  %-12s %13s %13s %8s %11s %11s %13s\n", "kind", "allocations", "frees", "failed", "peak",
	       "leaked", "leaked blocks");
	bool any = false;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		const struct wsp_kind_stats *s = wsp_model_kind(l->model, k);
		if (!shown(l, k))
			continue;
		any = true;
		const char *est = wsp_est_total(l, k); /* failures are always recorded: never estimates */
		printf("  %-12s %13s %13s %8s %11s %11s %13s\n", wsprof_kind_name(k),
		       wsp_estimate_text(a, sizeof a, est, wsp_group_digits(a, sizeof a, s->allocations)),
		       wsp_estimate_text(b, sizeof b, est, wsp_group_digits(b, sizeof b, s->frees)),
		       wsp_group_digits(c, sizeof c, s->failed),
		       wsp_estimate_text(d, sizeof d, est, wsp_human_bytes(d, sizeof d, s->peak_bytes)),
		       wsp_estimate_text(e, sizeof e, est, wsp_human_bytes(e, sizeof e, s->live_bytes)),
		       wsp_estimate_text(f, sizeof f, est, wsp_group_digits(f, sizeof f, s->live_blocks)));
	}
	if (!any)
		printf("  (no allocations recorded)\n");
	double share;
	if (wsp_model_heap_counted(l->model, &share))
		printf("\n  heap         counted whole while sampling: allocations, frees and bytes exactly; peak and leaked bytes\n"
		       "               as the allocator's usable bytes x %.1f%% (what allocations asked of it), the peak within\n"
		       "               16 KiB per thread\n",
		       share * 100);
	bool told = false;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		const struct wsp_kind_stats *s = wsp_model_kind(l->model, k);
		if (!s->seen || is_address_range_kind(k) || s->in_use_peak_bytes == s->peak_bytes)
			continue;
		printf("%s  %-12s truly in use at most %s%s (the program says the rest could be given back: %s%s at the peak)\n",
		       told ? "" : "\n", wsprof_kind_name(k), wsp_est(l, k), wsp_human_bytes(a, sizeof a, s->in_use_peak_bytes),
		       wsp_est(l, k), wsp_human_bytes(b, sizeof b, s->collectable_at_peak));
		told = true;
	}
	uint64_t unknown = wsp_model_unknown_annotations(l->model);
	if (unknown)
		printf("\n  annotations of addresses in no live block: %s\n", wsp_group_digits(a, sizeof a, unknown));
	const struct wsp_kind_stats *map = wsp_model_kind(l->model, WSPROF_KIND_CUDA_VMM_MAPPED);
	const struct wsp_kind_stats *res = wsp_model_kind(l->model, WSPROF_KIND_CUDA_VMM_RESERVED);
	if (map->seen || res->seen)
		printf("\n  cuda_vmm address space: mapped %s at the peak, %s at the end; reserved %s at the peak, %s at the end\n",
		       wsp_human_bytes(a, sizeof a, map->peak_bytes), wsp_human_bytes(b, sizeof b, map->live_bytes),
		       wsp_human_bytes(c, sizeof c, res->peak_bytes), wsp_human_bytes(d, sizeof d, res->live_bytes));
	const struct wsp_kind_stats *reserved = wsp_model_kind(l->model, WSPROF_KIND_MMAP_RESERVED);
	if (reserved->seen) {
		uint64_t heap = wsp_model_mmap_in_reservations(l->model);
		printf("\n  mmap address space reserved, not committed (PROT_NONE, MAP_NORESERVE; not memory): %s at the "
		       "peak, %s at the end\n", wsp_human_bytes(a, sizeof a, reserved->peak_bytes),
		       wsp_human_bytes(b, sizeof b, reserved->live_bytes));
		if (heap)
			printf("  of the mmap live at the end, %s was committed inside reservations: a runtime's heap, "
			       "live when the program ended rather than leaked\n", wsp_human_bytes(c, sizeof c, heap));
	}
	const struct wsp_device_stats *dev;
	size_t ndev = wsp_model_devices(l->model, &dev);
	for (size_t i = 0; i < ndev; i++)
		printf("%s  device %d: %s in all, %s free at the least (at %.3f s), %s free at the end\n", i ? "" : "\n",
		       dev[i].device, wsp_human_bytes(a, sizeof a, dev[i].total), wsp_human_bytes(b, sizeof b, dev[i].free_min),
		       (double)dev[i].free_min_time_ns / 1e9, wsp_human_bytes(c, sizeof c, dev[i].free_last));
	uint64_t untracked = wsp_model_untracked_frees(l->model);
	if (untracked)
		printf("\n  untracked frees: %s (blocks allocated %s)\n", wsp_group_digits(a, sizeof a, untracked),
		       attached ? "before the attach" : "before tracing began, e.g. inherited across fork");
	const uint32_t *kids;
	size_t n = wsp_model_children(l->model, &kids);
	if (n) {
		printf("\n  forked children (each traced into its own file when following):");
		for (size_t i = 0; i < n; i++)
			printf(" %u", kids[i]);
		printf("\n");
	}
}
