/*
 * spans.c - recording only a span of a program (tests/progs/alloc_span):
 * started paused, the span opened and closed by wsprof_start()/
 * wsprof_stop() or by the toggle signal the program raises at itself.
 *
 * The summary counts exactly the span's allocations, and the frees of its
 * blocks wherever they happen (a block allocated in the span and freed or
 * moved after it leaves the live set); blocks allocated outside it are
 * absent, their frees untracked. The trace's RECORDING events say off at
 * the start, then on and off with the cause that turned them.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdlib.h>

#include "wsprof/trace.h"

TestSuite(spans, .fini = wt_cleanup, .timeout = 60);

static void record_span(struct wt_recording *rec, const char *const env[], const char *const opts[], const char *mode)
{
	char *prog = wt_prog("alloc_span");
	wt_record_with(rec, env, opts, prog, (const char *[]){ mode, NULL });
	free(prog);
	wt_assert_status(&rec->run, 0, "wsprof record alloc_span");
	cr_assert(rec->expect, "alloc_span wrote no expect file");
	struct wt_json *s = wt_summary(rec->trace, NULL);
	wt_assert_counted(s, rec->expect, "alloc_span");
	cr_expect_geq(wt_u64(s, "untracked_frees"), wt_u64(rec->expect, "untracked_frees"),
		      "the frees of blocks allocated outside the span are untracked frees");
	wt_json_free(s);
}

/* The trace's RECORDING events, in order, are off (start), on, off (cause). */
static void expect_recording_events(const char *trace, unsigned cause)
{
	wsprof_trace *t;
	int err = wsprof_trace_open(trace, &t);
	cr_assert_eq(err, 0, "cannot open %s: %s", trace, wsprof_strerror(err));
	const uint64_t want_on[] = { 0, 1, 0 };
	const unsigned want_cause[] = { WSPROF_REC_START, cause, cause };
	size_t n = 0;
	bool first = true;
	wsprof_event ev;
	while ((err = wsprof_trace_next(t, &ev)) > 0) {
		if (ev.type != WSPROF_EV_RECORDING) {
			cr_expect(n > 0 || ev.type != WSPROF_EV_ALLOC, "an allocation before the first RECORDING event");
			continue;
		}
		cr_expect(!first || n == 0, "RECORDING off is the first event");
		first = false;
		cr_assert_lt(n, 3, "more than 3 RECORDING events");
		cr_expect_eq(ev.size, want_on[n], "RECORDING event %zu: on %llu, expected %llu", n,
			     (unsigned long long)ev.size, (unsigned long long)want_on[n]);
		cr_expect_eq(ev.op, want_cause[n], "RECORDING event %zu: cause %u, expected %u", n, ev.op, want_cause[n]);
		n++;
	}
	cr_expect_eq(err, 0, "reading %s: %s", trace, wsprof_strerror(err));
	cr_expect_eq(n, 3, "3 RECORDING events, found %zu", n);
	wsprof_trace_close(t);
}

Test(spans, wsprof_start_and_stop_around_a_span)
{
	struct wt_recording rec;
	record_span(&rec, (const char *[]){ "WSPROF_START=paused", NULL }, NULL, "call");
	expect_recording_events(rec.trace, WSPROF_REC_CALL);
	wt_recording_free(&rec);
}

Test(spans, record_paused_option)
{
	struct wt_recording rec;
	record_span(&rec, NULL, (const char *[]){ "--paused", NULL }, "call");
	wt_recording_free(&rec);
}

Test(spans, the_toggle_signal_around_a_span)
{
	struct wt_recording rec;
	record_span(&rec, NULL, (const char *[]){ "--paused", "--toggle-signal", "USR2", NULL }, "signal");
	expect_recording_events(rec.trace, WSPROF_REC_SIGNAL);
	wt_recording_free(&rec);
}

Test(spans, the_toggle_signal_by_number_and_name)
{
	struct wt_recording rec;
	record_span(&rec, (const char *[]){ "WSPROF_START=paused", "WSPROF_TOGGLE_SIGNAL=12", NULL }, NULL, "signal");
	wt_recording_free(&rec);
	record_span(&rec, (const char *[]){ "WSPROF_START=paused", "WSPROF_TOGGLE_SIGNAL=SIGUSR2", NULL }, NULL, "signal");
	wt_recording_free(&rec);
}
