/*
 * test_export.c - `wsprof export --perfetto`: Chrome trace-event JSON.
 *
 * The golden story (tests/golden/story.wsp, make_golden.c says what
 * happens in it) is exported and read back as JSON: each counter track's
 * highest value is the figure the summary, the working-set report and the
 * device's lowest free memory give; its seven phases come out as slices
 * with their names, threads, start times and lengths; the failed 2 GiB
 * device allocation as an instant event with its size, kind and call
 * site. The server trace (format 1.0: no annotations, no samples) gets
 * only what it has. A trace of ten minutes, built here, stays bounded
 * (more windows and samples than a series has buckets) and keeps its
 * one-millisecond peaks. A fresh recording of the bundled
 * example is exported the same way. Bad input gets a one-line error.
 */
#include "harness.h"
#include "pictures.h"
#include "trace_builder.h"

#include "wsprof/trace.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(export, .fini = wt_cleanup, .timeout = 120);

#define MS 1000000ull
#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)
#define SERIES_CAP 2048 /* analyzer/model/series.h */

/* The export of a trace, parsed; asserts it is one JSON object. */
static struct wt_json *export_json(const char *trace)
{
	char *out = wt_path(wt_test_dir(), "export-%u.json", (unsigned)rand());
	char *err = wt_wsprof_ok((const char *[]){ "export", "--perfetto", "-o", out, trace, NULL }, 0);
	free(err);
	struct wt_json *j = wt_json_load(out);
	cr_assert(wt_json_get(j, "traceEvents"), "no traceEvents in %s", out);
	free(out);
	return j;
}

static const struct wt_json *events(const struct wt_json *j)
{
	const struct wt_json *ev = wt_json_get(j, "traceEvents");
	cr_assert(ev && ev->type == WT_JSON_ARRAY);
	return ev;
}

/* A counter track: how many values, the highest and lowest, and whether
 * its times never go back. */
struct track {
	size_t n, zeros;
	uint64_t most, least;
	bool ordered;
};

static struct track track(const struct wt_json *j, const char *name)
{
	const struct wt_json *ev = events(j);
	struct track t = { .least = UINT64_MAX, .ordered = true };
	uint64_t last_ts = 0;
	for (size_t i = 0; i < ev->count; i++) {
		const struct wt_json *e = &ev->items[i];
		if (strcmp(wt_json_str(e, "ph"), "C") || strcmp(wt_json_str(e, "name"), name))
			continue;
		uint64_t v = wt_u64(e, "args.bytes"), ts = wt_u64(e, "ts");
		t.ordered &= !t.n || ts >= last_ts;
		last_ts = ts;
		t.n++;
		t.zeros += v == 0;
		t.most = v > t.most ? v : t.most;
		t.least = v < t.least ? v : t.least;
	}
	return t;
}

/* Events of a phase ("X", "i", "M"), in file order. */
static size_t of_phase(const struct wt_json *j, const char *ph, const struct wt_json **out, size_t cap)
{
	const struct wt_json *ev = events(j);
	size_t n = 0;
	for (size_t i = 0; i < ev->count; i++)
		if (!strcmp(wt_json_str(&ev->items[i], "ph"), ph)) {
			if (n < cap)
				out[n] = &ev->items[i];
			n++;
		}
	return n;
}

/* Every kind of the summary has an "allocated" track peaking at its peak,
 * and an "in use" track peaking at its in-use peak where the two differ. */
static void expect_kind_peaks(const struct wt_json *j, const struct wt_json *summary)
{
	const struct wt_json *kinds = wt_json_get(summary, "kinds");
	cr_assert(kinds && kinds->count > 0, "no kinds in the summary");
	for (size_t i = 0; i < kinds->count; i++) {
		const struct wt_json *k = &kinds->items[i];
		char name[96];
		snprintf(name, sizeof name, "%s allocated", k->key);
		struct track t = track(j, name);
		cr_expect_gt(t.n, 0, "no \"%s\" track", name);
		cr_expect(t.ordered, "\"%s\" goes back in time", name);
		cr_expect_eq(t.most, wt_u64(k, "peak_bytes"), "\"%s\" peaks at %llu, the summary at %llu", name,
			     (unsigned long long)t.most, (unsigned long long)wt_u64(k, "peak_bytes"));
		snprintf(name, sizeof name, "%s in use", k->key);
		struct track u = track(j, name);
		uint64_t in_use_peak = wt_u64(k, "in_use_peak_bytes");
		if (u.n)
			cr_expect_eq(u.most, in_use_peak, "\"%s\" peaks at %llu, the summary at %llu", name,
				     (unsigned long long)u.most, (unsigned long long)in_use_peak);
		else
			cr_expect_eq(in_use_peak, wt_u64(k, "peak_bytes"), "no \"%s\" track, yet in use differs", name);
	}
}

Test(export, the_story_counters_peak_where_the_reports_do)
{
	char *trace = wt_golden("story");
	struct wt_json *j = export_json(trace), *summary = wt_summary(trace, NULL);
	expect_kind_peaks(j, summary);
	cr_expect_eq(track(j, "heap in use").n > 0, true, "the heap had collectable blocks: an in-use track");
	cr_expect_eq(track(j, "mmap in use").n, 0, "nothing of mmap was collectable: no in-use track");

	struct track dev = track(j, "device 0 free");
	cr_expect_eq(dev.least, wt_u64(summary, "devices.0.free_min_bytes"), "device 0 free at least %llu",
		     (unsigned long long)dev.least);
	cr_expect_eq(dev.most, 16 * GiB - 512 * MiB, "before any block, all but the context's 512 MiB is free");
	cr_expect_eq(track(j, "RSS").most, wt_u64(summary, "access.rss_peak_bytes"));

	/* The working set: the union of all sources, per window, as `report wss` adds it up. */
	char *wss = wt_wsprof_ok((const char *[]){ "report", "wss", "--json", trace, NULL }, 0);
	char err[256];
	struct wt_json *w = wt_json_parse(wss, err, sizeof err);
	cr_assert(w, "report wss --json: %s", err);
	const struct wt_json *series = wt_json_get(w, "series");
	uint64_t most = 0, heap_most = 0;
	for (size_t i = 0; i < series->count; i++) {
		const struct wt_json *p = &series->items[i], *by_kind = wt_json_get(p, "by_kind");
		uint64_t sum = wt_u64(p, "unattributed");
		for (size_t k = 0; k < by_kind->count; k++) {
			uint64_t v = strtoull(by_kind->items[k].text, NULL, 10);
			sum += v;
			if (!strcmp(by_kind->items[k].key, "heap") && v > heap_most)
				heap_most = v;
		}
		most = sum > most ? sum : most;
	}
	cr_expect_eq(track(j, "working set").most, most);
	cr_expect_eq(track(j, "heap working set").most, heap_most);
	cr_expect_eq(track(j, "cuda_host working set").n, 0, "the pinned memory was never accessed");
	wt_json_free(w);
	free(wss);
	wt_json_free(summary);
	wt_json_free(j);
	free(trace);
}

Test(export, the_story_phases_are_slices_on_the_main_thread)
{
	char *trace = wt_golden("story");
	struct wt_json *j = export_json(trace);
	static const struct {
		const char *name;
		uint64_t ts, dur, depth;
	} want[] = {
		{ "load", 10000, 1980000, 0 },    { "train", 2050000, 5940000, 0 }, { "step", 2210000, 1280000, 1 },
		{ "step", 3610000, 1280000, 1 }, { "step", 5010000, 1280000, 1 }, { "step", 6410000, 1280000, 1 },
		{ "save", 8050000, 1530000, 0 },
	};
	const struct wt_json *x[16];
	size_t n = of_phase(j, "X", x, 16);
	cr_assert_eq(n, 7, "%zu slices, not the story's 7 phases", n);
	for (size_t i = 0; i < n; i++) {
		cr_expect_str_eq(wt_json_str(x[i], "name"), want[i].name);
		cr_expect_eq(wt_u64(x[i], "ts"), want[i].ts, "%s starts at %llu us", want[i].name,
			     (unsigned long long)wt_u64(x[i], "ts"));
		cr_expect_eq(wt_u64(x[i], "dur"), want[i].dur, "%s lasts %llu us", want[i].name,
			     (unsigned long long)wt_u64(x[i], "dur"));
		cr_expect_eq(wt_u64(x[i], "tid"), 5151);
		cr_expect_eq(wt_u64(x[i], "pid"), 5151);
		cr_expect_eq(wt_u64(x[i], "args.depth"), want[i].depth);
	}
	const struct wt_json *m[8];
	size_t nm = of_phase(j, "M", m, 8);
	cr_assert_eq(nm, 3, "process, main thread, failures: %zu names", nm);
	cr_expect_str_eq(wt_json_str(m[0], "name"), "process_name");
	cr_expect_str_eq(wt_json_str(m[0], "args.name"), "/opt/golden/bin/trainer --steps 4");
	cr_expect_str_eq(wt_json_str(m[1], "name"), "thread_name");
	cr_expect_eq(wt_u64(m[1], "tid"), 5151);
	cr_expect_str_eq(wt_json_str(m[1], "args.name"), "main thread");
	cr_expect_str_eq(wt_json_str(m[2], "args.name"), "failed allocations");
	cr_expect_str_eq(wt_json_str(j, "otherData.program"), "/opt/golden/bin/trainer --steps 4");
	wt_json_free(j);
	free(trace);
}

Test(export, the_story_oom_is_an_instant_event_with_its_call_site)
{
	char *trace = wt_golden("story");
	struct wt_json *j = export_json(trace);
	const struct wt_json *f[4];
	cr_assert_eq(of_phase(j, "i", f, 4), 1, "one failed allocation");
	cr_expect_str_eq(wt_json_str(f[0], "name"), "allocation failed");
	cr_expect_str_eq(wt_json_str(f[0], "s"), "t");
	cr_expect_eq(wt_u64(f[0], "ts"), 7510000);
	cr_expect_eq(wt_u64(f[0], "args.size"), 2 * GiB);
	cr_expect_str_eq(wt_json_str(f[0], "args.kind"), "cuda_device");
	/* alloc_workspace, LIB + 0x3710: libmodel.so exists nowhere, so module+offset. */
	cr_expect_str_eq(wt_json_str(f[0], "args.call_site"), "libmodel.so+0x3710");
	const struct wt_json *m[4];
	cr_assert_eq(of_phase(j, "M", m, 4), 3);
	cr_expect_str_eq(wt_json_str(m[2], "args.name"), "failed allocations");
	cr_expect_eq(wt_u64(f[0], "tid"), wt_u64(m[2], "tid"), "on the track named \"failed allocations\"");
	wt_json_free(j);
	free(trace);
}

Test(export, a_trace_without_annotations_or_samples_gets_what_it_has)
{
	char *trace = wt_golden("server");
	struct wt_json *j = export_json(trace), *summary = wt_summary(trace, NULL);
	expect_kind_peaks(j, summary);
	const struct wt_json *any[4];
	cr_expect_eq(of_phase(j, "X", any, 4), 0, "no phases");
	cr_expect_eq(track(j, "heap in use").n, 0);
	cr_expect_eq(track(j, "RSS").n, 0);
	cr_expect_eq(track(j, "working set").n, 0);
	cr_assert_eq(of_phase(j, "i", any, 4), 1);
	cr_expect_eq(wt_u64(any[0], "args.size"), 1ull << 40);
	cr_expect_eq(wt_u64(any[0], "ts"), 22000);
	wt_json_free(summary);
	wt_json_free(j);
	free(trace);
}

/* Ten minutes: a block allocated and freed every 100 ms, an RSS sample and a
 * window of written pages every 100 ms; once, in the middle, a 1 GiB
 * block lives for a millisecond, RSS spikes and a window writes 512 MiB. */
static char *long_trace(void)
{
	struct trace_builder b;
	tb_init(&b);
	struct tb_process p = tb_process_default();
	p.pid = 77;
	p.access_sources = WSPROF_SOURCE_WRITES;
	p.window_ms = 100;
	tb_header(&b, &p);
	uint64_t seq = 1, t = 0;
	const uint64_t ticks = 6000, spike = ticks / 2;
	for (uint64_t i = 0; i < ticks; i++) {
		if (i % 1000 == 0)
			tb_segment(&b, 77, 0, 0);
		t = i * 100 * MS;
		tb_ev_alloc(&b, seq++, t + 1 * MS, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x10000, 4096 + i % 7, 0);
		if (i == spike) {
			tb_ev_alloc(&b, seq++, t + 2 * MS, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x7f0000000000ull, GiB, 0);
			tb_ev_free(&b, seq++, t + 3 * MS, WSPROF_KIND_HEAP, WSPROF_OP_FREE, 0x7f0000000000ull);
		}
		tb_ev_free(&b, seq++, t + 50 * MS, WSPROF_KIND_HEAP, WSPROF_OP_FREE, 0x10000);
		struct tb_region r = { 0x10000, i == spike ? 512 * MiB : 4096 };
		tb_ev_access(&b, seq++, t + 100 * MS, WSPROF_ACCESS_WRITES, 100 * MS, &r, 1);
		tb_ev_rss(&b, seq++, t + 100 * MS, i == spike ? 3 * GiB : 100 * MiB + (i % 13) * 4096);
		if (i % 1000 == 999) {
			tb_sync(&b, seq, t + 100 * MS);
			tb_chunk(&b);
		}
	}
	tb_footer(&b, t + 100 * MS);
	return wt_built_trace(&b, "long.wsp");
}

Test(export, a_long_trace_stays_bounded_and_keeps_its_peaks)
{
	char *trace = long_trace();
	struct wt_json *j = export_json(trace), *summary = wt_summary(trace, NULL);
	cr_assert_eq(wt_u64(summary, "kinds.heap.peak_bytes"), GiB + 4096 + (6000 / 2) % 7);
	expect_kind_peaks(j, summary);
	struct track heap = track(j, "heap allocated"), rss = track(j, "RSS"), wss = track(j, "working set");
	cr_expect_leq(heap.n, 2 * SERIES_CAP, "%zu heap values for 6000 allocations", heap.n);
	cr_expect_leq(rss.n, SERIES_CAP, "%zu RSS values for 6000 samples", rss.n);
	cr_expect_leq(wss.n, 2 * SERIES_CAP, "%zu working-set values for 6000 windows", wss.n);
	cr_expect_eq(rss.most, 3 * GiB, "the RSS spike is kept");
	cr_expect_eq(wss.most, 512 * MiB, "the busiest window is kept");
	cr_expect_eq(wss.zeros, 1, "windows follow each other: the track falls to 0 only after the last");
	cr_expect(heap.ordered && rss.ordered && wss.ordered);
	wt_json_free(summary);
	wt_json_free(j);
	free(trace);
}

Test(export, a_recording_of_the_example)
{
	char *prog = wt_path(getenv("WSPROF_EXAMPLES"), "taskrt"), *trace = wt_path(wt_test_dir(), "taskrt.wsp");
	free(wt_wsprof_ok((const char *[]){ "record", "-o", trace, "--", prog, NULL }, 0));
	struct wt_json *j = export_json(trace), *summary = wt_summary(trace, NULL);
	expect_kind_peaks(j, summary);
	const struct wt_json *x[256];
	size_t n = of_phase(j, "X", x, 256);
	cr_expect_eq(n, wt_u64(summary, "annotations.phases"), "%zu slices for %llu phases", n,
		     (unsigned long long)wt_u64(summary, "annotations.phases"));
	bool warm_up = false;
	for (size_t i = 0; i < n && i < 256; i++)
		warm_up |= !strcmp(wt_json_str(x[i], "name"), "warm-up");
	cr_expect(warm_up, "taskrt's \"warm-up\" phase is there");
	cr_expect_eq(track(j, "RSS").most, wt_u64(summary, "access.rss_peak_bytes"));
	wt_json_free(summary);
	wt_json_free(j);
	free(trace);
	free(prog);
}

/* wsprof export ARGS exits with status and one line on stderr. */
static void expect_one_line_error(const char *const args[], int status, const char *words)
{
	wt_expect_failure("export", args, status, words, status == 1);
}

Test(export, bad_input_gets_one_line)
{
	char *out = wt_path(wt_test_dir(), "x.json"), *notrace = wt_path(wt_test_dir(), "notrace");
	cr_assert_eq(wt_write_file(notrace, "hello\n", 6), 0);
	char *trace = wt_golden("server");
	expect_one_line_error((const char *[]){ "--perfetto", "-o", out, "/nonexistent/t.wsp", NULL }, 1,
			      "/nonexistent/t.wsp: No such file or directory");
	expect_one_line_error((const char *[]){ "--perfetto", "-o", out, notrace, NULL }, 1, "not a wsprof trace");
	cr_expect(!wt_file_exists(out), "nothing is written for a bad trace");
	expect_one_line_error((const char *[]){ "-o", out, trace, NULL }, 2, "--perfetto");
	expect_one_line_error((const char *[]){ "--perfetto", trace, NULL }, 2, "-o trace.json");
	expect_one_line_error((const char *[]){ "--perfetto", "-o", out, NULL }, 2, "exactly one trace file");
	/* The server trace names modules that exist nowhere: warnings, then the error. */
	struct wt_result r;
	cr_assert_eq(wt_run(&r, (const char *[]){ wt_wsprof(), "export", "--perfetto", "-o", "/nonexistent/x.json",
						  trace, NULL }), 0);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "wsprof: cannot write /nonexistent/x.json: No such file or directory\n"), "%s", r.err);
	wt_result_free(&r);
	free(trace);
	free(notrace);
	free(out);
}

/* A trace built here: a heap allocation at each of the stacks given (0:
 * none), their nodes 1 <- 2 <- 3 at addresses no module holds. */
static char *built_trace(const char *name, const uint64_t *stacks, size_t n)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 1, 0, 0);
	tb_stack(&b, 1, 0, 0x401000);
	tb_stack(&b, 2, 1, 0x402000);
	tb_stack(&b, 3, 2, 0x403000);
	for (size_t i = 0; i < n; i++)
		tb_ev_alloc(&b, i + 1, i + 1, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x1000 + 64 * i, 8, stacks[i]);
	tb_sync(&b, n + 1, n + 1);
	tb_chunk(&b);
	tb_footer(&b, n + 2);
	return wt_built_trace(&b, name);
}

/* `wsprof symbolize TRACE`: its exit status, output, and whether it left TRACE.symbols. */
static bool symbolize(const char *trace, int status, struct wt_result *r)
{
	wt_run(r, (const char *[]){ wt_wsprof(), "symbolize", trace, NULL });
	wt_assert_status(r, status, "wsprof symbolize");
	char *kept = wt_path(wt_test_dir(), "%s.symbols", strrchr(trace, '/') + 1);
	bool left = wt_file_exists(kept);
	free(kept);
	return left;
}

/* What symbolize cannot keep, it says, in one line, without a file: a
 * trace without stacks, one whose frames are all outside modules, one
 * whose modules are on another machine (the golden trace's /opt/golden),
 * and a directory. */
Test(export, symbolize_says_what_it_cannot_keep)
{
	struct wt_result r;
	char *bare = built_trace("bare.wsp", (const uint64_t[]){ 0, 0 }, 2);
	cr_expect(!symbolize(bare, 0, &r), "a file of names for a trace without stacks");
	cr_expect(strstr(r.out, "has no allocation stacks: nothing to name"), "%s", r.out);
	wt_result_free(&r);

	char *jit = built_trace("jit.wsp", (const uint64_t[]){ 3, 2 }, 2);
	cr_expect(!symbolize(jit, 0, &r), "a file of names for frames outside every module");
	cr_expect(strstr(r.out, "the 3 addresses of") && strstr(r.out, "are all outside modules (JIT code)"), "%s", r.out);
	wt_result_free(&r);

	char *golden = wt_golden("server"), *copy = wt_path(wt_test_dir(), "server.wsp");
	size_t len;
	char *bytes = wt_read_file(golden, &len);
	cr_assert(bytes && wt_write_file(copy, bytes, len) == 0);
	free(bytes);
	cr_expect(!symbolize(copy, 1, &r), "a file of names for modules that are elsewhere");
	cr_expect(strstr(r.err, "are not here (or changed since it was recorded): run wsprof symbolize on the machine "
				"that recorded it"), "%s", r.err);
	wt_result_free(&r);

	symbolize(wt_test_dir(), 1, &r);
	cr_expect(strstr(r.err, ": Is a directory"), "%s", r.err);
	wt_result_free(&r);
	free(copy), free(golden), free(jit), free(bare);
}
