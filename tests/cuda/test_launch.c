/*
 * test_launch.c - kernel launches under `wsprof record` (cuda_launch).
 *
 * After each successful launch whose parameters point into live device or
 * managed blocks, the recorder writes one ACCESS record of source
 * WSPROF_ACCESS_INFERRED, window 0, whose regions are exactly those
 * blocks, whole, sorted, touching ones merged; a launch that names none
 * leaves no record. The trace is read with the reader API
 * (wsprof/trace.h): a record belongs to the launch whose snapshot came
 * last, and must match what the program says that launch was given.
 *
 * By every route to the launch entry points (linked, dlsym,
 * cuGetProcAddress), and with WSPROF_MAX_REGIONS=10, where the launch of
 * twelve apart blocks gets at most ten regions that still cover them all.
 */
#include "cuda_harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wsprof/trace.h"

TestSuite(cuda_launch, .fini = wt_cleanup, .timeout = 60);

#define MAX_SAMPLES 64
#define MAX_REGIONS 64

struct sample {
	char label[64];          /* the last snapshot before it */
	uint64_t window_ns;
	size_t n;
	wsprof_region r[MAX_REGIONS];
};

static struct sample samples[MAX_SAMPLES];
static size_t nsamples;

/* Every inferred ACCESS record of the trace, with the launch it follows. */
static void read_samples(const char *trace)
{
	wsprof_trace *t;
	int err = wsprof_trace_open(trace, &t);
	cr_assert_eq(err, 0, "cannot read %s: %s", trace, wsprof_strerror(err));
	char label[64] = "";
	wsprof_event ev;
	nsamples = 0;
	while ((err = wsprof_trace_next(t, &ev)) > 0) {
		if (ev.type == WSPROF_EV_ANNOTATE && ev.op == WSPROF_ANN_SNAPSHOT) {
			snprintf(label, sizeof label, "%s", ev.text ? ev.text : "");
			continue;
		}
		if (ev.type != WSPROF_EV_ACCESS || ev.op != WSPROF_ACCESS_INFERRED)
			continue;
		cr_assert_lt(nsamples, MAX_SAMPLES, "more inferred samples than launches");
		cr_assert_leq(ev.nregions, MAX_REGIONS, "after %s: %zu regions", label, ev.nregions);
		struct sample *s = &samples[nsamples++];
		snprintf(s->label, sizeof s->label, "%s", label);
		s->window_ns = ev.size;
		s->n = ev.nregions;
		memcpy(s->r, ev.regions, ev.nregions * sizeof *ev.regions);
	}
	cr_assert_eq(err, 0, "reading %s: %s", trace, wsprof_strerror(err));
	wsprof_trace_status st;
	wsprof_trace_get_status(t, &st);
	cr_expect(st.complete, "the trace of a program that exited is complete");
	wsprof_trace_close(t);
}

static int by_addr(const void *a, const void *b)
{
	const wsprof_region *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The blocks named (space-separated names of the expect file's "blocks"),
 * sorted. @return how many. */
static size_t named_blocks(const struct wt_json *expect, const char *names, wsprof_region *out)
{
	size_t n = 0;
	char copy[256], *save = NULL;
	snprintf(copy, sizeof copy, "%s", names);
	for (char *name = strtok_r(copy, " ", &save); name; name = strtok_r(NULL, " ", &save)) {
		char path[96];
		cr_assert_lt(n, MAX_REGIONS);
		snprintf(path, sizeof path, "blocks.%s.start", name);
		out[n].addr = wt_u64(expect, path);
		snprintf(path, sizeof path, "blocks.%s.size", name);
		out[n++].len = wt_u64(expect, path);
	}
	qsort(out, n, sizeof *out, by_addr);
	return n;
}

/* Touching blocks become one region. */
static size_t merged(wsprof_region *r, size_t n)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && r[i].addr <= r[m - 1].addr + r[m - 1].len)
			r[m - 1].len = r[i].addr + r[i].len - r[m - 1].addr;
		else
			r[m++] = r[i];
	}
	return m;
}

static void expect_exactly(const struct sample *s, const wsprof_region *want, size_t n)
{
	cr_expect_eq(s->n, n, "%s: %zu regions, expected %zu", s->label, s->n, n);
	for (size_t i = 0; i < n && i < s->n; i++)
		cr_expect(s->r[i].addr == want[i].addr && s->r[i].len == want[i].len,
			  "%s: region %zu is %#llx+%llu, expected %#llx+%llu", s->label, i,
			  (unsigned long long)s->r[i].addr, (unsigned long long)s->r[i].len,
			  (unsigned long long)want[i].addr, (unsigned long long)want[i].len);
}

/* More blocks than the bound: neighbours merged, nothing lost, each
 * region from a block's start to a block's end. */
static void expect_bounded(const struct sample *s, const wsprof_region *blocks, size_t n, size_t bound)
{
	cr_expect_leq(s->n, bound, "%s: %zu regions, more than WSPROF_MAX_REGIONS=%zu", s->label, s->n, bound);
	for (size_t i = 0; i < s->n; i++) {
		bool starts = false, ends = false;
		for (size_t k = 0; k < n; k++) {
			starts |= blocks[k].addr == s->r[i].addr;
			ends |= blocks[k].addr + blocks[k].len == s->r[i].addr + s->r[i].len;
		}
		cr_expect(starts && ends, "%s: region %zu does not run from a block's start to a block's end",
			  s->label, i);
		cr_expect(i == 0 || s->r[i].addr > s->r[i - 1].addr + s->r[i - 1].len,
			  "%s: regions %zu and %zu are not sorted and apart", s->label, i - 1, i);
	}
	for (size_t k = 0; k < n; k++) {
		bool covered = false;
		for (size_t i = 0; i < s->n; i++)
			covered |= s->r[i].addr <= blocks[k].addr &&
				   blocks[k].addr + blocks[k].len <= s->r[i].addr + s->r[i].len;
		cr_expect(covered, "%s: block %#llx+%llu is in no region", s->label,
			  (unsigned long long)blocks[k].addr, (unsigned long long)blocks[k].len);
	}
}

/* Each launch of the expect file against the samples that follow it. */
static void check_launches(const struct wt_json *expect, size_t bound)
{
	const struct wt_json *launches = wt_json_get(expect, "launches");
	cr_assert(launches && launches->type == WT_JSON_OBJECT && launches->count > 0, "no launches in the books");
	size_t accounted = 0;
	for (size_t l = 0; l < launches->count; l++) {
		const char *label = launches->items[l].key, *names = launches->items[l].text;
		const struct sample *got = NULL;
		size_t count = 0;
		for (size_t i = 0; i < nsamples; i++) {
			if (strcmp(samples[i].label, label) == 0) {
				got = got ? got : &samples[i];
				count++;
			}
		}
		accounted += count;
		wsprof_region want[MAX_REGIONS];
		size_t n = named_blocks(expect, names, want);
		if (n == 0) {
			cr_expect_eq(count, 0, "%s names no device block, yet %zu inferred samples follow it", label, count);
			continue;
		}
		cr_expect_eq(count, 1, "%s: %zu inferred samples, expected one", label, count);
		if (!got)
			continue;
		cr_expect_eq(got->window_ns, 0, "%s: an inferred sample has no window", label);
		size_t m = merged(want, n);
		if (m <= bound)
			expect_exactly(got, want, m);
		else
			expect_bounded(got, want, m, bound);
	}
	cr_expect_eq(accounted, nsamples, "%zu inferred samples follow no launch", nsamples - accounted);
}

static void check_route(const char *route, const char *const env[], size_t bound)
{
	struct wt_recording rec;
	ct_record_ok(&rec, "cuda_launch", env, (const char *[]){ route, NULL });
	cr_expect_eq(wt_u64(rec.expect, "handle_reused"), 1,
		     "the test driver gave the reloaded kernel a new handle: the stale-layout case is not tested");
	read_samples(rec.trace);
	check_launches(rec.expect, bound);
	struct wt_json *mine = wt_summary(rec.trace, (const char *[]){ "cuda_launch", NULL });
	ct_assert_cuda_counted(mine, rec.expect, route);
	wt_json_free(mine);
	wt_recording_free(&rec);
}

Test(cuda_launch, a_program_linked_with_libcuda)
{
	check_route("linked", NULL, MAX_REGIONS);
}

Test(cuda_launch, dlsym_of_the_versioned_names)
{
	check_route("dlsym", NULL, MAX_REGIONS);
}

Test(cuda_launch, cuGetProcAddress_by_base_name_and_version)
{
	check_route("procaddr", NULL, MAX_REGIONS);
}

Test(cuda_launch, at_most_max_regions_per_launch)
{
	check_route("linked", (const char *[]){ "WSPROF_MAX_REGIONS=10", NULL }, 10);
}

/* Blocks passed to launches and freed before the window that saw the
 * launches closes (the program frees them and exits within one window)
 * count for their kinds in it as possibly touched, never as memory of no
 * block. */
Test(cuda_launch, blocks_freed_within_the_window_of_their_launches_stay_theirs)
{
	struct wt_recording rec;
	ct_record_ok(&rec, "cuda_launch", (const char *[]){ "WSPROF_WINDOW_MS=60000", NULL },
		     (const char *[]){ "linked", NULL });
	const char *argv[] = { wt_wsprof(), "report", "wss", "--json", rec.trace, NULL };
	struct wt_result r;
	wt_run(&r, argv);
	wt_assert_status(&r, 0, "wsprof report wss");
	char why[256];
	struct wt_json *w = wt_json_parse(r.out, why, sizeof why);
	cr_assert(w, "not JSON (%s):\n%s", why, r.out);
	const struct wt_json *series = wt_json_get(w, "series");
	cr_assert(series && series->count == 1, "not one window:\n%s", r.out);
	uint64_t bytes = wt_u64(&series->items[0], "bytes"), device = 0, managed = 0;
	wt_json_u64(&series->items[0], "by_kind.cuda_device", &device);
	wt_json_u64(&series->items[0], "by_kind.cuda_managed", &managed);
	cr_expect_gt(device, 0, "no device memory in the window:\n%s", r.out);
	cr_expect_eq(wt_u64(&series->items[0], "unattributed"), 0, "launched blocks counted as memory of no block:\n%s",
		     r.out);
	cr_expect_eq(device + managed, bytes, "the launches' blocks are not all device or managed memory:\n%s", r.out);
	wt_json_free(w);
	wt_result_free(&r);
	wt_recording_free(&rec);
}
