/*
 * summary_json.c - what `wsprof report summary --json` says about the
 * process and the recorder, checked against the trace itself (read with
 * wsprof/trace.h) and against the options given to `wsprof record`.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

#include "wsprof/trace.h"

TestSuite(summary_json, .fini = wt_cleanup, .timeout = 60);

Test(summary_json, process_and_recorder_as_recorded)
{
	struct wt_recording rec;
	wt_record(&rec, (const char *[]){ "--stack-depth", "20", "--flush-ms", "70", "--no-follow", NULL },
		  "alloc_basic", NULL);
	wt_assert_status(&rec.run, 0, "wsprof record alloc_basic");
	struct wt_json *s = wt_summary(rec.trace, NULL);

	wsprof_trace *t;
	int err = wsprof_trace_open(rec.trace, &t);
	cr_assert_eq(err, 0, "cannot open %s: %s", rec.trace, wsprof_strerror(err));
	const wsprof_process *p = wsprof_trace_process(t);

	cr_expect_eq(wt_u64(s, "process.pid"), p->pid, "process.pid");
	cr_expect_eq(wt_u64(s, "process.ppid"), p->ppid, "process.ppid");
	cr_expect_null(wt_json_get(s, "process.forked_from"), "only a forked child's trace has forked_from");
	const char *exe = wt_json_str(s, "process.exe");
	cr_expect(exe && strcmp(exe, p->exe) == 0 && strstr(exe, "/alloc_basic"), "process.exe is %s",
		  exe ? exe : "missing");
	const char *cmdline = wt_json_str(s, "process.cmdline");
	cr_expect(cmdline && strstr(cmdline, rec.expect_path), "process.cmdline lacks the program's argument: %s",
		  cmdline ? cmdline : "missing");

	/* A date to the second at least: the JSON number must carry it. */
	const struct wt_json *start = wt_json_get(s, "process.start_unix_s");
	cr_assert(start && start->type == WT_JSON_NUMBER, "no process.start_unix_s");
	double recorded = (double)p->start_realtime_ns / 1e9;
	cr_expect(fabs(strtod(start->text, NULL) - recorded) < 1e-3,
		  "process.start_unix_s is %s, the trace says %.6f", start->text, recorded);

	cr_expect_eq(wt_u64(s, "recorder.stack_depth"), 20, "recorder.stack_depth follows --stack-depth");
	cr_expect_eq(wt_u64(s, "recorder.flush_ms"), 70, "recorder.flush_ms follows --flush-ms");
	bool follow = true;
	cr_expect(wt_json_bool(s, "recorder.follow", &follow) && !follow, "recorder.follow is false with --no-follow");
	const char *format = wt_json_str(s, "recorder.format");
	char written[16];
	snprintf(written, sizeof written, "%d.%d", WSPROF_FORMAT_MAJOR, WSPROF_FORMAT_MINOR);
	cr_expect(format && strcmp(format, written) == 0, "recorder.format is %s, not %s", format ? format : "missing",
		  written);

	wsprof_trace_close(t);
	wt_json_free(s);
	wt_recording_free(&rec);
}

Test(summary_json, stack_depth_limits_the_recorded_frames)
{
	struct wt_recording rec;
	wt_record(&rec, (const char *[]){ "--stack-depth", "4", NULL }, "alloc_threads",
		  (const char *[]){ "1", "1", "10", NULL });
	wt_assert_status(&rec.run, 0, "wsprof record --stack-depth 4 alloc_threads");
	wsprof_trace *t;
	int err = wsprof_trace_open(rec.trace, &t);
	cr_assert_eq(err, 0, "cannot open %s: %s", rec.trace, wsprof_strerror(err));
	wsprof_event ev;
	size_t deepest = 0;
	while (wsprof_trace_next(t, &ev) > 0) {
		if (ev.type != WSPROF_EV_ALLOC)
			continue;
		uint64_t ips[64];
		size_t depth = wsprof_trace_stack(t, ev.stack, ips, 64);
		if (depth > deepest)
			deepest = depth;
	}
	cr_expect_eq(deepest, 4, "with --stack-depth 4 the deepest stack has %zu frames", deepest);
	wsprof_trace_close(t);
	wt_recording_free(&rec);
}
