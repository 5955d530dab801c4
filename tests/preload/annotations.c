/*
 * annotations.c - what a program says through include/wsprof.h
 * (tests/progs/alloc_annotated, under `wsprof record`).
 *
 * The summary's truly-in-use figures must equal the program's books:
 * in_use_peak_bytes, collectable bytes at the peak and at the end, for the
 * heap and for pool sub-allocations; interior pointers reach their block,
 * an unknown address is counted, threads acquiring and releasing one block
 * concurrently leave it held exactly as the program left it. The state
 * report lists the blocks with names and holders, and the collectable ones
 * least recently used first with a running total.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

TestSuite(annotations, .fini = wt_cleanup, .timeout = 60);

Test(annotations, truly_in_use_matches_the_programs_books)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_annotated", NULL);
	wt_assert_status(&rec.run, 0, "wsprof record alloc_annotated");
	cr_assert(rec.expect, "alloc_annotated wrote no expect file");
	struct wt_json *s = wt_summary(rec.trace, (const char *[]){ "alloc_annotated", NULL });
	wt_assert_counted(s, rec.expect, "alloc_annotated");
	cr_expect_eq(wt_u64(s, "kinds.heap.in_use_peak_bytes"), wt_u64(rec.expect, "heap_in_use_peak_bytes"));
	cr_expect_eq(wt_u64(s, "kinds.heap.collectable_bytes_at_peak"),
		     wt_u64(rec.expect, "heap_collectable_bytes_at_peak"));
	cr_expect_eq(wt_u64(s, "kinds.heap.collectable_bytes_at_end"), wt_u64(rec.expect, "heap_collectable_bytes_at_end"));
	cr_expect_eq(wt_u64(s, "kinds.pool.collectable_bytes_at_end"), wt_u64(rec.expect, "pool_collectable_bytes_at_end"));
	cr_expect_eq(wt_u64(s, "annotations.unknown_addresses"), wt_u64(rec.expect, "unknown_addresses"));
	cr_expect_str_eq(wt_json_str(s, "annotations.snapshots.0.label"), "scripted");
	wt_json_free(s);
	wt_recording_free(&rec);
}

static struct wt_json *state(const char *trace, const char *at, struct wt_result *r)
{
	wt_run(r, (const char *[]){ wt_wsprof(), "report", "state", trace, "--at", at, "--kind", "heap", "--json", NULL });
	wt_assert_status(r, 0, "wsprof report state");
	char err[256];
	struct wt_json *j = wt_json_parse(r->out, err, sizeof err);
	cr_assert(j, "not JSON (%s):\n%s", err, r->out);
	return j;
}

static const struct wt_json *named(const struct wt_json *blocks, const char *name)
{
	for (size_t i = 0; blocks && i < blocks->count; i++) {
		const char *n = wt_json_str(&blocks->items[i], "name");
		if (n && !strcmp(n, name))
			return &blocks->items[i];
	}
	return NULL;
}

Test(annotations, the_state_at_a_snapshot_and_at_the_end)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_annotated", (const char *[]){ "2", NULL });
	wt_assert_status(&rec.run, 0, "wsprof record alloc_annotated");

	struct wt_result r;
	struct wt_json *j = state(rec.trace, "scripted", &r);
	const struct wt_json *a = named(wt_json_get(j, "blocks"), "tile a");
	cr_assert(a, "no block named \"tile a\" at the snapshot:\n%s", r.out);
	bool collectable = false;
	cr_expect(wt_json_bool(a, "collectable", &collectable) && collectable, "tile a was released: collectable");
	cr_expect_eq(wt_u64(a, "size"), 1000);
	const struct wt_json *c = wt_json_get(j, "collectable");
	cr_expect(c && c->count == 1, "one collectable block at the snapshot:\n%s", r.out);
	cr_expect_eq(wt_u64(j, "collectable.0.running_total_bytes"), 1000);
	wt_json_free(j);
	wt_result_free(&r);

	j = state(rec.trace, "end", &r);
	c = wt_json_get(j, "collectable");
	cr_assert(c && c->count == 1, "at the end only b is collectable:\n%s", r.out);
	cr_expect_eq(wt_u64(j, "collectable.0.size"), 2000);
	cr_expect_str_eq(wt_json_str(j, "collectable.0.validity"), "invalid");
	const struct wt_json *blocks = wt_json_get(j, "blocks");
	bool shared_held = false;
	for (size_t i = 0; blocks && i < blocks->count; i++) {
		uint64_t refs = 0;
		if (wt_u64(&blocks->items[i], "size") == 64 && wt_json_u64(&blocks->items[i], "refs", &refs))
			shared_held = refs == 1;
	}
	cr_expect(shared_held, "the block the threads churned is held exactly once:\n%s", r.out);
	wt_json_free(j);
	wt_result_free(&r);
	wt_recording_free(&rec);
}

Test(annotations, a_moment_that_does_not_exist_is_refused)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_annotated", (const char *[]){ "1", NULL });
	struct wt_result r;
	wt_run(&r, (const char *[]){ wt_wsprof(), "report", "state", rec.trace, "--at", "no such label", NULL });
	wt_assert_status(&r, 2, "wsprof report state --at 'no such label'");
	cr_expect_eq(wt_count_lines(r.err), 1, "one line says why:\n%s", r.err);
	wt_result_free(&r);
	wt_run(&r, (const char *[]){ wt_wsprof(), "report", "state", rec.trace, "--at", "oom", NULL });
	wt_assert_status(&r, 1, "wsprof report state --at oom of a trace without failures");
	wt_result_free(&r);
	wt_recording_free(&rec);
}
