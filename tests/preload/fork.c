/*
 * fork.c - a traced program that forks (tests/progs/alloc_fork).
 *
 * Following children (the default), the child writes its own trace next
 * to the parent's, named after its pid, and each trace counts exactly its
 * own process's books: the parent's trace lists the child and never its
 * calls; the child's names the parent it was forked from, and its free of
 * a block allocated before the fork counts as untracked. With --no-follow
 * no child trace appears, and the parent's figures do not change.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdlib.h>

TestSuite(fork, .fini = wt_cleanup, .timeout = 60);

static void check_parent(const struct wt_recording *rec)
{
	struct wt_json *parent = wt_summary(rec->trace, (const char *[]){ "alloc_fork", NULL });
	wt_assert_counted(parent, wt_json_get(rec->expect, "parent"), "alloc_fork's parent");
	cr_expect_eq(wt_u64(parent, "process.pid"), wt_u64(rec->expect, "pid"), "the root trace is the parent's");
	cr_expect_eq(wt_u64(parent, "threads"), 1, "the parent runs on one thread");
	const struct wt_json *children = wt_json_get(parent, "children");
	cr_assert(children && children->type == WT_JSON_ARRAY, "the summary has no children array");
	cr_expect_eq(children->count, 1, "the parent forked once, the summary lists %zu children", children->count);
	if (children->count == 1)
		cr_expect_eq(wt_u64(parent, "children.0"), wt_u64(rec->expect, "child_pid"),
			     "the child listed is the one forked");
	cr_expect_eq(wt_u64(parent, "untracked_frees"), 0, "the parent frees only its own blocks");
	wt_json_free(parent);
}

Test(fork, parent_and_child_each_get_their_own_trace)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_fork", NULL);
	wt_assert_status(&rec.run, 0, "wsprof record alloc_fork");
	cr_assert(rec.expect, "alloc_fork wrote no expect file");
	check_parent(&rec);

	char *child_trace = wt_path(rec.dir, "t.wsp.%llu", (unsigned long long)wt_u64(rec.expect, "child_pid"));
	cr_assert(wt_file_exists(child_trace), "the child's trace %s was not written", child_trace);
	struct wt_json *child = wt_summary(child_trace, (const char *[]){ "alloc_fork", NULL });
	const struct wt_json *books = wt_json_get(rec.expect, "child");
	wt_assert_counted(child, books, "alloc_fork's child");
	bool complete = false;
	cr_expect(wt_json_bool(child, "complete", &complete) && complete, "the child's trace is complete");
	cr_expect_eq(wt_u64(child, "process.pid"), wt_u64(rec.expect, "child_pid"), "the child trace is the child's");
	cr_expect_eq(wt_u64(child, "process.forked_from"), wt_u64(rec.expect, "pid"),
		     "the child's trace names the parent it was forked from");
	cr_expect_eq(wt_u64(child, "untracked_frees"), wt_u64(books, "untracked_frees"),
		     "the child's free of an inherited block is untracked");
	cr_expect_eq(wt_u64(child, "threads"), 1, "the child runs on one thread");
	wt_json_free(child);
	free(child_trace);
	wt_recording_free(&rec);
}

Test(fork, no_follow_writes_no_child_trace)
{
	struct wt_recording rec;
	wt_record(&rec, (const char *[]){ "--no-follow", NULL }, "alloc_fork", NULL);
	wt_assert_status(&rec.run, 0, "wsprof record --no-follow alloc_fork");
	cr_assert(rec.expect, "alloc_fork wrote no expect file");
	check_parent(&rec);

	char *child_trace = wt_path(rec.dir, "t.wsp.%llu", (unsigned long long)wt_u64(rec.expect, "child_pid"));
	cr_expect(!wt_file_exists(child_trace), "--no-follow, yet the child wrote %s", child_trace);
	free(child_trace);
	wt_recording_free(&rec);
}
