/*
 * test_job.c - the reports of a job: several traces, or a directory of
 * them, read as one. tests/progs/job_tree.c is a parent that keeps 1 MiB
 * and three forked children keeping 1, 2 and 3 MiB, the first of which
 * execs and keeps 512 KiB more: the job summary's processes, tree, totals
 * and least / median / most exact; call sites and leaks merged with the
 * number of processes each is in; one flame graph; a timeline line per
 * process; --process; directories and bad operands.
 */
#include "harness.h"
#include "pictures.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(job, .fini = wt_cleanup, .timeout = 120);

#define MiB (1024ull * 1024)

static struct wt_recording tree;

/* job_tree recorded into a directory of its own: five traces. */
static const char *record_tree(void)
{
	wt_record(&tree, NULL, "job_tree", NULL);
	wt_assert_status(&tree.run, 0, "wsprof record job_tree");
	return tree.dir;
}

static const struct wt_json *items(const struct wt_json *j, const char *path)
{
	const struct wt_json *a = wt_json_get(j, path);
	cr_assert(a && a->type == WT_JSON_ARRAY, "no array %s", path);
	return a;
}

/* The process of the job whose heap peak is `peak` (each is different). */
static size_t by_peak(const struct wt_json *procs, uint64_t peak)
{
	for (size_t i = 0; i < procs->count; i++)
		if (wt_u64(&procs->items[i], "kinds.heap.peak_bytes") == peak)
			return i;
	cr_assert_fail("no process with a heap peak of %llu", (unsigned long long)peak);
	return 0;
}

Test(job, the_summary_of_a_process_tree)
{
	const char *dir = record_tree();
	struct wt_json *s = wt_json_text(wt_wsprof_ok((const char *[]){ "report", "summary", "--json", dir, NULL }, 0));
	bool job = false;
	cr_expect(wt_json_bool(s, "job", &job) && job);
	cr_expect_eq(wt_u64(s, "traces"), 5);
	const struct wt_json *p = items(s, "processes");
	cr_assert_eq(p->count, 5);
	size_t parent = by_peak(p, MiB), exec = by_peak(p, 512 << 10), second = by_peak(p, 2 * MiB), third = by_peak(p, 3 * MiB);
	cr_expect_eq(wt_json_get(&p->items[parent], "parent")->type, WT_JSON_NULL, "the root has no parent");
	/* The first child: 1 MiB, like the parent, but forked from it. */
	size_t first = p->count;
	for (size_t i = 0; i < p->count; i++)
		if (i != parent && wt_u64(&p->items[i], "kinds.heap.peak_bytes") == MiB)
			first = i;
	cr_assert_lt(first, p->count);
	cr_expect_eq(wt_u64(&p->items[first], "parent"), parent);
	cr_expect_eq(wt_u64(&p->items[second], "parent"), parent);
	cr_expect_eq(wt_u64(&p->items[third], "parent"), parent);
	bool exec_of = false;
	cr_expect(wt_json_bool(&p->items[exec], "exec_of_parent", &exec_of) && exec_of);
	cr_expect_eq(wt_u64(&p->items[exec], "parent"), first, "the exec'd image replaced the first child");
	cr_expect_eq(wt_u64(&p->items[exec], "pid"), wt_u64(&p->items[first], "pid"));
	for (size_t i = 0; i < p->count; i++)
		cr_expect_eq(wt_u64(&p->items[i], "kinds.heap.leaked_bytes"), wt_u64(&p->items[i], "kinds.heap.peak_bytes"));
	cr_expect_eq(wt_u64(s, "totals.heap.peak_bytes_sum"), 7 * MiB + (512 << 10));
	cr_expect_eq(wt_u64(s, "totals.heap.leaked_bytes"), 7 * MiB + (512 << 10));
	cr_expect_eq(wt_u64(s, "totals.heap.allocations"), 5);
	/* Across the four processes (the image that exec'd goes on as the next one). */
	cr_expect_str_eq(wt_json_str(s, "across.by"), "process");
	cr_expect_eq(wt_u64(s, "across.count"), 4);
	cr_expect_eq(wt_u64(s, "across.heap.peak_bytes.min"), 512 << 10);
	cr_expect_eq(wt_u64(s, "across.heap.peak_bytes.min_pid"), wt_u64(&p->items[exec], "pid"));
	cr_expect_eq(wt_u64(s, "across.heap.peak_bytes.median"), 2 * MiB);
	cr_expect_eq(wt_u64(s, "across.heap.peak_bytes.max"), 3 * MiB);
	cr_expect_eq(wt_u64(s, "across.heap.peak_bytes.max_pid"), wt_u64(&p->items[third], "pid"));

	char *text = wt_wsprof_ok((const char *[]){ "report", "summary", dir, NULL }, 0);
	cr_expect(strstr(text, "wsprof summary of a job: 5 traces"), "%s", text);
	cr_expect(strstr(text, "tree (fork and exec)"));
	cr_expect(strstr(text, "job_tree") && strstr(text, " exec\n") && strstr(text, "-> "), "the exec is on its process's line");
	cr_expect(strstr(text, "heap peak                   512 KiB pid "));
	free(text);
	wt_json_free(s);
	wt_recording_free(&tree);
}

Test(job, call_sites_and_leaks_merged_across_processes)
{
	const char *dir = record_tree();
	struct wt_json *c = wt_json_text(wt_wsprof_ok((const char *[]){ "report", "callsites", "--json", dir, NULL }, 0));
	const struct wt_json *sites = items(c, "sites");
	bool found = false;
	for (size_t i = 0; i < sites->count; i++) {
		const struct wt_json *r = &sites->items[i];
		if (strncmp(wt_json_str(r, "label"), "child_work (job_tree.c:", 23))
			continue;
		found = true;
		cr_expect_eq(wt_u64(r, "processes"), 3);
		cr_expect_eq(wt_u64(r, "peak_bytes"), 6 * MiB);
		cr_expect_eq(wt_u64(r, "allocations"), 3);
	}
	cr_expect(found, "child_work is a site");
	cr_expect(!strncmp(wt_json_str(c, "sites.0.label"), "child_work", 10), "the largest first");
	wt_json_free(c);
	struct wt_json *l = wt_json_text(wt_wsprof_ok((const char *[]){ "report", "leaks", "--json", dir, NULL }, 0));
	cr_expect_eq(wt_u64(l, "leaked_bytes"), 7 * MiB + (512 << 10));
	cr_expect_eq(wt_u64(l, "stacks.0.processes"), 3);
	cr_expect(!strncmp(wt_json_str(l, "stacks.0.stack.0"), "child_work (job_tree.c:", 23));
	wt_json_free(l);
	char *folded = wt_wsprof_ok((const char *[]){ "report", "flame", "--format", "folded", dir, NULL }, 0);
	cr_expect(strstr(folded, ";main;child_work 6291456\n"), "%s", folded);
	cr_expect(strstr(folded, ";main;parent_work 1048576\n"));
	free(folded);
	char *svg = wt_path(dir, "job.svg");
	free(wt_wsprof_ok((const char *[]){ "report", "flame", "-o", svg, dir, NULL }, 0));
	wt_assert_svg(svg);
	free(svg);
	wt_recording_free(&tree);
}

Test(job, a_timeline_line_per_process)
{
	const char *dir = record_tree();
	struct wt_json *t = wt_json_text(wt_wsprof_ok((const char *[]){ "report", "timeline", "--json", dir, NULL }, 0));
	const struct wt_json *p = items(t, "processes");
	cr_assert_eq(p->count, 5);
	uint64_t peaks = 0;
	for (size_t i = 0; i < p->count; i++) {
		peaks += wt_u64(&p->items[i], "peak_bytes");
		cr_expect_gt(items(&p->items[i], "allocated")->count, 0);
	}
	cr_expect_eq(peaks, 7 * MiB + (512 << 10));
	wt_json_free(t);
	char *png = wt_path(dir, "timeline.png");
	free(wt_wsprof_ok((const char *[]){ "report", "timeline", "-o", png, dir, NULL }, 0));
	wt_assert_png(png, 1263, 892, 6);
	free(png);
	wt_recording_free(&tree);
}

Test(job, one_process_of_a_job)
{
	const char *dir = record_tree();
	struct wt_json *s = wt_json_text(wt_wsprof_ok((const char *[]){ "report", "summary", "--json", dir, NULL }, 0));
	const struct wt_json *p = items(s, "processes");
	char pid[32];
	snprintf(pid, sizeof pid, "%llu", (unsigned long long)wt_u64(&p->items[by_peak(p, 3 * MiB)], "pid"));
	wt_json_free(s);
	struct wt_json *one = wt_json_text(wt_wsprof_ok((const char *[]){ "report", "summary", "--json", "--process", pid, dir, NULL }, 0));
	cr_expect_eq(wt_u64(one, "kinds.heap.peak_bytes"), 3 * MiB);
	cr_expect_null(wt_json_get(one, "job"), "a single trace's summary");
	wt_json_free(one);
	const char *argv[] = { wt_wsprof(), "report", "summary", "--process", "999999999", dir, NULL };
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0);
	wt_assert_status(&r, 2, "--process of no trace");
	cr_expect(strstr(r.err, "no trace of rank or pid 999999999"), "%s", r.err);
	wt_result_free(&r);
	wt_recording_free(&tree);
}

Test(job, directories_and_several_files)
{
	const char *dir = record_tree();
	/* Files that are not traces are passed over in a directory. */
	char *notes = wt_path(dir, "notes.txt");
	cr_assert_eq(wt_write_file(notes, "not a trace\n", 12), 0);
	struct wt_json *s = wt_json_text(wt_wsprof_ok((const char *[]){ "report", "summary", "--json", dir, NULL }, 0));
	cr_expect_eq(wt_u64(s, "traces"), 5);
	wt_json_free(s);
	/* Two traces named one by one are a job of two. */
	s = wt_json_text(wt_wsprof_ok((const char *[]){ "report", "summary", "--json", dir, NULL }, 0));
	const char *a = wt_json_str(s, "processes.0.trace"), *b = wt_json_str(s, "processes.1.trace");
	struct wt_json *two = wt_json_text(wt_wsprof_ok((const char *[]){ "report", "summary", "--json", a, b, NULL }, 0));
	cr_expect_eq(wt_u64(two, "traces"), 2);
	wt_json_free(two);
	wt_json_free(s);
	/* An empty directory, and a file that is not a trace among traces. */
	char *empty = wt_path(dir, "empty");
	cr_assert_eq(mkdir(empty, 0755), 0);
	const char *argv[] = { wt_wsprof(), "report", "summary", empty, NULL };
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0);
	wt_assert_status(&r, 2, "summary of an empty directory");
	cr_expect(strstr(r.err, "holds no wsprof trace"), "%s", r.err);
	wt_result_free(&r);
	const char *argv2[] = { wt_wsprof(), "report", "summary", tree.trace, notes, NULL };
	cr_assert_eq(wt_run(&r, argv2), 0);
	wt_assert_status(&r, 0, "summary of a trace and a file that is not one");
	cr_expect(strstr(r.err, "notes.txt"), "the file that is no trace is named: %s", r.err);
	cr_expect(strstr(r.out, "(1 more could not be read)"), "%s", r.out);
	wt_result_free(&r);
	free(notes), free(empty);
	wt_recording_free(&tree);
}

/* Three ranks of a real mpirun (tests/progs/mpi_ranks: rank R makes R + 1
 * allocations of 1000 bytes from its own code), read as one job. */
Test(job, the_ranks_of_an_mpi_job)
{
	const char *mpirun = getenv("WSPROF_TEST_MPIRUN");
	if (!mpirun || !*mpirun)
		cr_skip_test("no OpenMPI here (apt-get install openmpi-bin libopenmpi-dev)");
	const char *dir = wt_test_dir();
	char *pattern = wt_path(dir, "t.%%r.wsp"), *prog = wt_prog("mpi_ranks");
	const char *argv[] = { "/usr/bin/env", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", mpirun,
			       "--oversubscribe", "-np", "3", wt_wsprof(), "record", "-o", pattern, "--", prog, dir, NULL };
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0);
	wt_assert_status(&r, 0, "mpirun wsprof record mpi_ranks");
	wt_result_free(&r);
	struct wt_json *s = wt_json_text(wt_wsprof_ok((const char *[]){ "report", "summary", "--json", "--caller", "mpi_ranks", dir, NULL }, 0));
	cr_expect_eq(wt_u64(s, "traces"), 3);
	cr_expect_str_eq(wt_json_str(s, "across.by"), "rank");
	cr_expect_eq(wt_u64(s, "across.count"), 3);
	const struct wt_json *p = items(s, "processes");
	for (size_t i = 0; i < p->count; i++) {
		uint64_t rank = wt_u64(&p->items[i], "rank");
		cr_expect_eq(wt_u64(&p->items[i], "kinds.heap.allocations"), rank + 1, "rank %llu", (unsigned long long)rank);
		cr_expect_eq(wt_u64(&p->items[i], "kinds.heap.peak_bytes"), 1000);
		cr_expect_str_eq(wt_json_str(&p->items[i], "launcher"), "openmpi");
		cr_expect_str_eq(wt_json_str(&p->items[i], "job_id"), wt_json_str(&p->items[0], "job_id"));
	}
	cr_expect_eq(wt_u64(s, "across.heap.allocations.min"), 1);
	cr_expect_eq(wt_u64(s, "across.heap.allocations.min_rank"), 0);
	cr_expect_eq(wt_u64(s, "across.heap.allocations.median"), 2);
	cr_expect_eq(wt_u64(s, "across.heap.allocations.max"), 3);
	cr_expect_eq(wt_u64(s, "across.heap.allocations.max_rank"), 2);
	cr_expect_eq(wt_u64(s, "totals.heap.allocations"), 6);
	wt_json_free(s);
	/* One rank alone. */
	struct wt_json *one = wt_json_text(wt_wsprof_ok((const char *[]){ "report", "summary", "--json", "--caller", "mpi_ranks",
								   "--process", "2", dir, NULL }, 0));
	cr_expect_eq(wt_u64(one, "kinds.heap.allocations"), 3);
	cr_expect_eq(wt_u64(one, "process.rank"), 2);
	wt_json_free(one);
	free(pattern), free(prog);
}

/* The tree a small shell script makes: sh forks, each child execs. */
Test(job, the_tree_of_a_shell_script)
{
	const char *dir = wt_test_dir();
	char *script = wt_path(dir, "run.sh"), *prog = wt_prog("service"), *trace = wt_path(dir, "t.wsp");
	char text[8192];
	snprintf(text, sizeof text, "#!/bin/sh\n%s - 2 1\n( %s - 3 1 )\n%s - 1 1 &\nwait\n", prog, prog, prog);
	cr_assert_eq(wt_write_file(script, text, strlen(text)), 0);
	struct wt_result rec = wt_wsprof_run((const char *[]){ "record", "-o", trace, "--", "/bin/sh", script, NULL });
	wt_assert_status(&rec, 0, "wsprof record of a shell script");
	char says[4200];
	snprintf(says, sizeof says, "as one job: wsprof report summary %s (every trace in that directory)", dir);
	cr_expect(strstr(rec.err, says), "record points at the job: %s", rec.err);
	wt_result_free(&rec);
	struct wt_json *s = wt_json_text(wt_wsprof_ok((const char *[]){ "report", "summary", "--json", dir, NULL }, 0));
	const struct wt_json *p = items(s, "processes");
	size_t root = p->count, services = 0;
	for (size_t i = 0; i < p->count; i++)
		if (wt_json_get(&p->items[i], "parent")->type == WT_JSON_NULL)
			root = i;
	cr_assert_lt(root, p->count, "the shell is the tree's root");
	cr_expect(strstr(wt_json_str(&p->items[root], "program"), "run.sh"));
	for (size_t i = 0; i < p->count; i++) {
		const struct wt_json *q = &p->items[i];
		if (!strstr(wt_json_str(q, "exe"), "service"))
			continue;
		services++;
		/* Started by the shell (vfork and exec: no image of its own
		 * before), or the image of a shell it forked (a subshell, a
		 * background job) that then exec'd. */
		bool exec_of = false;
		cr_assert(wt_json_bool(q, "exec_of_parent", &exec_of));
		size_t up = wt_u64(q, "parent");
		if (exec_of) {
			cr_expect(strstr(wt_json_str(&p->items[up], "program"), "run.sh"), "a forked shell became service");
			up = wt_u64(&p->items[up], "parent");
		}
		cr_expect_eq(up, root, "service %zu's ancestry leads to the script", i);
	}
	cr_expect_eq(services, 3);
	/* Every service's ticks: 2, 3 and 1 allocations of 64 KiB from tick. */
	struct wt_json *c = wt_json_text(wt_wsprof_ok((const char *[]){ "report", "callsites", "--json", dir, NULL }, 0));
	const struct wt_json *sites = items(c, "sites");
	bool found = false;
	for (size_t i = 0; i < sites->count; i++)
		if (!strncmp(wt_json_str(&sites->items[i], "label"), "tick (service.c:", 16)) {
			found = true;
			cr_expect_eq(wt_u64(&sites->items[i], "allocations"), 6);
			cr_expect_eq(wt_u64(&sites->items[i], "processes"), 3);
		}
	cr_expect(found);
	wt_json_free(c);
	wt_json_free(s);
	free(script), free(prog), free(trace);
}
