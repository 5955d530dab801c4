/*
 * test_nvtx.c - libwsprof.so as an NVTX injection library, under
 * `wsprof record` (which points NVTX_INJECTION64_PATH at it).
 *
 * nvtx_pools keeps its own books; the recording must hold exactly what it
 * told NVTX: one pool allocation per region with its heap's handle, one
 * pool free per unregistration and resize, one reset per heap reset or
 * unregistration, the region's name, the ranges as phases in order with
 * the levels NVTX returns; its output must not change under wsprof; the
 * summary's kind `pool` must equal its books. A tool the user already
 * named in NVTX_INJECTION64_PATH keeps NVTX, with one line saying so.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wsprof/trace.h"

TestSuite(nvtx, .fini = wt_cleanup, .timeout = 60);

#define PROG NVTX_PROG_DIR "/nvtx_pools"

static void record(struct wt_recording *rec, const char *const env[])
{
	wt_record_with(rec, env, NULL, PROG, NULL);
	wt_assert_status(&rec->run, 0, "wsprof record nvtx_pools");
	cr_assert(rec->expect, "nvtx_pools wrote no expect file");
}

static uint64_t told(const struct wt_recording *rec, const char *what)
{
	char path[128];
	snprintf(path, sizeof path, "nvtx.%s", what);
	return wt_u64(rec->expect, path);
}

/* What the trace holds of NVTX's calls. */
struct seen {
	uint64_t allocs_a, allocs_b, allocs_other, frees, resets_a, resets_other, bytes_mismatch;
	uint64_t pushes, pops, names_at_region;
	char phases[512], region_name[64];
	char heap_names[2][64];
};

static void append(char *list, size_t cap, const char *item)
{
	size_t n = strlen(list);
	snprintf(list + n, cap - n, "%s%s", n ? "|" : "", item);
}

static void read_trace(const struct wt_recording *rec, struct seen *s)
{
	memset(s, 0, sizeof *s);
	uint64_t a = told(rec, "heap_a"), b = told(rec, "heap_b");
	uint64_t named = told(rec, "named_addr"), slab_a = told(rec, "slab_a"), slab_b = told(rec, "slab_b");
	wsprof_trace *t;
	int err = wsprof_trace_open(rec->trace, &t);
	cr_assert_eq(err, 0, "cannot open %s: %s", rec->trace, wsprof_strerror(err));
	wsprof_event ev;
	while ((err = wsprof_trace_next(t, &ev)) > 0) {
		if (ev.type == WSPROF_EV_ALLOC && ev.kind == WSPROF_KIND_POOL) {
			uint64_t *n = ev.handle == a ? &s->allocs_a : ev.handle == b ? &s->allocs_b : &s->allocs_other;
			(*n)++;
		} else if (ev.type == WSPROF_EV_FREE && ev.kind == WSPROF_KIND_POOL) {
			s->frees++;
		} else if (ev.type == WSPROF_EV_ANNOTATE) {
			switch (ev.op) {
			case WSPROF_ANN_POOL_RESET:
				(*(ev.handle == a ? &s->resets_a : &s->resets_other))++;
				break;
			case WSPROF_ANN_PHASE_PUSH:
				s->pushes++;
				append(s->phases, sizeof s->phases, ev.text ? ev.text : "(none)");
				break;
			case WSPROF_ANN_PHASE_POP:
				s->pops++;
				break;
			case WSPROF_ANN_NAME:
				if (ev.addr == named) {
					s->names_at_region++;
					snprintf(s->region_name, sizeof s->region_name, "%s", ev.text ? ev.text : "");
				} else if (ev.addr == slab_a || ev.addr == slab_b) {
					snprintf(s->heap_names[ev.addr == slab_b], sizeof s->heap_names[0], "%s",
						 ev.text ? ev.text : "");
				}
				break;
			}
		}
	}
	cr_assert_geq(err, 0, "reading %s: %s", rec->trace, wsprof_strerror(err));
	wsprof_trace_status st;
	wsprof_trace_get_status(t, &st);
	cr_expect(st.complete, "the trace of a program that exited is complete");
	wsprof_trace_close(t);
}

Test(nvtx, the_trace_holds_what_the_program_told_nvtx)
{
	struct wt_recording rec;
	record(&rec, NULL);
	cr_expect(!strstr(rec.run.err, "NVTX_INJECTION64_PATH"), "wsprof record set the variable itself, yet said:\n%s",
		  rec.run.err);
	struct seen s;
	read_trace(&rec, &s);

	uint64_t a = told(&rec, "heap_a"), b = told(&rec, "heap_b");
	cr_assert(a && b && a != b, "nvtxMemHeapRegister returned handles %llu and %llu: wsprof did not attach",
		  (unsigned long long)a, (unsigned long long)b);
	uint64_t resized = told(&rec, "resized");
	cr_expect_eq(s.allocs_a, told(&rec, "regions_a") + resized, "pool allocations in heap A (a resize is one more)");
	cr_expect_eq(s.allocs_b, told(&rec, "regions_b"), "pool allocations in heap B");
	cr_expect_eq(s.allocs_other, told(&rec, "regions_process_wide"), "pool allocations in the process-wide heap");
	cr_expect_eq(s.frees, told(&rec, "unregistered") + resized, "pool frees: unregistrations and resizes");
	cr_expect_eq(s.resets_a, told(&rec, "resets"), "resets of heap A (reset, unregister)");
	cr_expect_eq(s.resets_other, 0, "no other heap was reset");

	cr_expect_eq(s.names_at_region, 1, "one name for the region nvtxMemRegionsName named");
	cr_expect_str_eq(s.region_name, wt_json_str(rec.expect, "nvtx.name"));
	cr_expect_str_eq(s.heap_names[0], "slab-a", "heap A's own name goes to its slab");
	cr_expect_str_eq(s.heap_names[1], "slab-b", "heap B's own name goes to its slab");

	cr_expect_str_eq(s.phases, wt_json_str(rec.expect, "nvtx.phases"), "phases pushed, in order");
	cr_expect_eq(s.pops, s.pushes, "every range was popped");
	cr_expect_str_eq(wt_json_str(rec.expect, "nvtx.levels"),
			 "push0|push1|push2|pop2|push2|pop2|pop1|pop0", "the levels nvtxRangePush/Pop returned");
	wt_recording_free(&rec);
}

Test(nvtx, the_programs_output_is_unchanged)
{
	struct wt_recording rec;
	record(&rec, NULL);
	char *expect = wt_path(wt_test_dir(), "plain.json");
	struct wt_result plain;
	int err = wt_run(&plain, (const char *[]){ PROG, expect, NULL });
	cr_assert_eq(err, 0, "cannot run %s", PROG);
	wt_assert_status(&plain, 0, "nvtx_pools without wsprof");
	cr_expect_str_eq(rec.run.out, plain.out, "nvtx_pools printed something else under wsprof");
	struct wt_json *books = wt_json_load(expect);
	const char *path = wt_json_str(books, "nvtx.injection_path");
	cr_expect(path && !*path, "nvtx_pools ran without wsprof, yet saw NVTX_INJECTION64_PATH=%s", path);
	path = wt_json_str(rec.expect, "nvtx.injection_path");
	cr_expect(path && strstr(path, "libwsprof.so"), "under wsprof record NVTX_INJECTION64_PATH is %s", path);
	wt_json_free(books);
	wt_result_free(&plain);
	free(expect);
	wt_recording_free(&rec);
}

/* The analyzer's side: kind `pool` (resets free every region still
 * registered), the phases, and names that land on known blocks. */
Test(nvtx, the_summary_counts_the_pool_kind_as_the_program_did)
{
	struct wt_recording rec;
	record(&rec, NULL);
	struct wt_json *sum = wt_summary(rec.trace, NULL);
	const struct wt_json *books = wt_json_get(rec.expect, "pool");
	cr_assert(books, "nvtx_pools kept no books for kind pool");
	cr_assert(wt_json_get(sum, "kinds.pool"), "the summary has no kinds.pool");
	for (size_t f = 0; f < books->count; f++) {
		char path[128];
		snprintf(path, sizeof path, "kinds.pool.%s", books->items[f].key);
		uint64_t got, want = 0;
		cr_assert(wt_json_u64(books, books->items[f].key, &want));
		cr_assert(wt_json_u64(sum, path, &got), "the summary has no number at %s", path);
		cr_expect_eq(got, want, "nvtx_pools pool.%s: the program counted %llu, wsprof %llu", books->items[f].key,
			     (unsigned long long)want, (unsigned long long)got);
	}
	uint64_t phases = 0;
	cr_expect(wt_json_u64(sum, "annotations.phases", &phases), "the summary has no annotations.phases");
	size_t pushed = 1;
	for (const char *p = wt_json_str(rec.expect, "nvtx.phases"); *p; p++)
		pushed += *p == '|';
	cr_expect_eq(phases, pushed, "phases in the summary");
	cr_expect_eq(wt_u64(sum, "annotations.unknown_addresses"), 0,
		     "every name NVTX gave (heaps' slabs, a region) points into a known block");
	wt_json_free(sum);
	wt_recording_free(&rec);
}

/* An exec'd program wsprof does not follow keeps NVTX_INJECTION64_PATH but
 * not LD_PRELOAD: NVTX then dlopens libwsprof.so alone, which must not
 * attach (it would see pools without the memory they live in). */
Test(nvtx, loaded_by_nvtx_alone_it_does_not_attach)
{
	const char *dir = wt_test_dir();
	char *expect = wt_path(dir, "expect.json");
	char injection[4200], output[4200];
	snprintf(injection, sizeof injection, "NVTX_INJECTION64_PATH=%s", getenv("WSPROF_PRELOAD"));
	snprintf(output, sizeof output, "WSPROF_OUTPUT=%s/stray.%%p.wsp", dir); /* the trace it starts anyway */
	struct wt_result r;
	int err = wt_run(&r, (const char *[]){ "/usr/bin/env", "-u", "LD_PRELOAD", injection, output, PROG, expect, NULL });
	cr_assert_eq(err, 0, "cannot run %s", PROG);
	wt_assert_status(&r, 0, "nvtx_pools with libwsprof.so as its NVTX tool only");
	struct wt_json *books = wt_json_load(expect);
	cr_expect_eq(wt_u64(books, "nvtx.heap_a"), 0, "libwsprof.so attached to NVTX without being preloaded");
	wt_json_free(books);
	wt_result_free(&r);
	free(expect);
}

Test(nvtx, a_tool_the_user_named_keeps_nvtx)
{
	static const char other[] = "/nonexistent/libsome-other-nvtx-tool.so";
	struct wt_recording rec;
	record(&rec, (const char *[]){ "NVTX_INJECTION64_PATH=/nonexistent/libsome-other-nvtx-tool.so", NULL });
	char line[512];
	snprintf(line, sizeof line,
		 "wsprof: NVTX_INJECTION64_PATH is already set (%s); NVTX pools and ranges go to that tool, not to wsprof\n",
		 other);
	const char *at = strstr(rec.run.err, line);
	cr_expect(at, "no notice that NVTX stays with the user's tool; stderr:\n%s", rec.run.err);
	size_t mentions = 0;
	for (const char *p = rec.run.err; (p = strstr(p, "NVTX_INJECTION64_PATH")); p++)
		mentions++;
	cr_expect_eq(mentions, 1, "the notice is one line, once:\n%s", rec.run.err);
	cr_expect_str_eq(wt_json_str(rec.expect, "nvtx.injection_path"), other, "the program saw another path");

	struct seen s;
	read_trace(&rec, &s);
	cr_expect_eq(s.allocs_a + s.allocs_b + s.allocs_other + s.frees + s.resets_a + s.resets_other, 0,
		     "wsprof recorded NVTX memory calls meant for another tool");
	cr_expect_eq(s.pushes + s.pops, 0, "wsprof recorded NVTX ranges meant for another tool");
	wt_recording_free(&rec);
}
