/*
 * test_spans.c - the spans of time a trace recorded, from its RECORDING
 * events (format 2.4): a paused start and wsprof_start/stop, the toggle
 * signal, an attach and its end, and a run recorded whole; what the
 * summary says of them.
 */
#include "text.h"
#include "trace_builder.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MS 1000000ull

/* A trace of one thread holding these switches (time in ms, on, cause), one allocation after each. */
static void load_switches(const unsigned (*sw)[3], size_t n, struct wsp_loaded *l, char **path)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 1, 0, 0);
	uint64_t seq = 1;
	for (size_t i = 0; i < n; i++) {
		tb_ev_recording(&b, seq++, sw[i][0] * MS, sw[i][1], sw[i][2]);
		tb_ev_alloc(&b, seq++, sw[i][0] * MS, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x1000 + 0x100 * i, 16, 0);
	}
	tb_sync(&b, seq, 1000 * MS);
	tb_chunk(&b);
	tb_footer(&b, 1000 * MS);
	*path = tb_save_temp(&b);
	cr_assert_not_null(*path);
	tb_fini(&b);
	cr_assert_eq(wsp_load(*path, NULL, false, l), 0);
}

static void done(struct wsp_loaded *l, char *path)
{
	wsp_loaded_free(l);
	unlink(path);
	free(path);
}

Test(spans, a_paused_start_and_two_spans)
{
	static const unsigned sw[][3] = { { 0, 0, WSPROF_REC_START }, { 100, 1, WSPROF_REC_CALL }, { 200, 0, WSPROF_REC_CALL },
					  { 500, 1, WSPROF_REC_SIGNAL }, { 600, 0, WSPROF_REC_SIGNAL } };
	struct wsp_loaded l;
	char *path;
	load_switches(sw, 5, &l, &path);
	struct wsp_span s[8];
	bool attached = true;
	cr_assert_eq(wsp_recorded_spans(&l, s, 8, &attached), 2);
	cr_expect_not(attached);
	cr_expect_eq(s[0].start_ns, 100 * MS);
	cr_expect_eq(s[0].end_ns, 200 * MS);
	cr_expect_eq(s[1].start_ns, 500 * MS);
	cr_expect_eq(s[1].end_ns, 600 * MS);
	char text[256];
	cr_expect_str_eq(wsp_spans_text(&l, text, sizeof text), "recorded 0.100 s to 0.200 s, 0.500 s to 0.600 s (2 spans)");
	done(&l, path);
}

Test(spans, an_attach_to_its_end)
{
	static const unsigned sw[][3] = { { 300, 1, WSPROF_REC_ATTACH }, { 700, 0, WSPROF_REC_DETACH } };
	struct wsp_loaded l;
	char *path;
	load_switches(sw, 2, &l, &path);
	struct wsp_span s[8];
	bool attached = false;
	cr_assert_eq(wsp_recorded_spans(&l, s, 8, &attached), 1);
	cr_expect(attached);
	cr_expect_eq(s[0].start_ns, 300 * MS);
	cr_expect_eq(s[0].end_ns, 700 * MS);
	done(&l, path);
}

Test(spans, on_until_the_end_and_a_whole_run)
{
	static const unsigned sw[][3] = { { 0, 0, WSPROF_REC_START }, { 400, 1, WSPROF_REC_CALL } };
	struct wsp_loaded l;
	char *path;
	load_switches(sw, 2, &l, &path);
	struct wsp_span s[8];
	bool attached;
	cr_assert_eq(wsp_recorded_spans(&l, s, 8, &attached), 1);
	cr_expect_eq(s[0].start_ns, 400 * MS);
	cr_expect_eq(s[0].end_ns, 1000 * MS, "on until the trace's end");
	done(&l, path);
	load_switches(sw, 0, &l, &path);
	cr_assert_eq(wsp_recorded_spans(&l, s, 8, &attached), 1);
	cr_expect_eq(s[0].start_ns, 0);
	char text[64];
	cr_expect_str_eq(wsp_spans_text(&l, text, sizeof text), "", "a run recorded whole says nothing");
	done(&l, path);
}
