/*
 * attach.c - recording a process that is already running.
 *
 * tests/progs/attach_self does to itself what `wsprof attach` does
 * (dlopen libwsprof.so, nothing preloaded; wsprof_attach_begin/_end),
 * twice: each trace counts exactly its span's allocations, from a thread
 * older than the attach too; malloc reaches the hook during a span and
 * the C library after it, and wsprof's threads are gone.
 *
 * `wsprof attach` itself, on tests/progs/service (60 ticks of 50 ms, not
 * under wsprof): for --duration 1, about 20 of tick's allocations with
 * tick in their stack, the frees of older blocks untracked; twice in a
 * row, two traces; the program's output and exit status unchanged; a
 * refusal in one line when ptrace is not allowed (a simulated
 * kernel.yama.ptrace_scope of 3), the program undisturbed, and for a
 * process that does not exist; written pages sampled while attached (the
 * program's memory write-protected then) and not one page left protected,
 * nor a userfaultfd left open, after; wsprof.h calls of a file that looked
 * for the library before the attach heard after it. These skip
 * where this machine does not let a process ptrace another.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "wsprof/trace.h"

TestSuite(attach, .fini = wt_cleanup, .timeout = 90);

/* The trace's RECORDING events: the first event says on (attach), the
 * last of them off (its end). */
static void expect_attach_span(const char *trace)
{
	wsprof_trace *t;
	int err = wsprof_trace_open(trace, &t);
	cr_assert_eq(err, 0, "cannot open %s: %s", trace, wsprof_strerror(err));
	wsprof_event ev;
	size_t n = 0, events = 0;
	uint64_t last_on = 1;
	unsigned last_cause = 0;
	while ((err = wsprof_trace_next(t, &ev)) > 0) {
		bool counted = ev.type == WSPROF_EV_ALLOC || ev.type == WSPROF_EV_FREE || ev.type == WSPROF_EV_RECORDING;
		if (!counted)
			continue;
		if (events++ == 0)
			cr_expect(ev.type == WSPROF_EV_RECORDING && ev.size == 1 && ev.op == WSPROF_REC_ATTACH,
				  "%s: the first event is RECORDING on (attach)", trace);
		if (ev.type == WSPROF_EV_RECORDING) {
			n++;
			last_on = ev.size;
			last_cause = ev.op;
		}
	}
	cr_expect_eq(err, 0, "reading %s: %s", trace, wsprof_strerror(err));
	cr_expect_eq(n, 2, "%s: two RECORDING events, found %zu", trace, n);
	cr_expect(last_on == 0 && last_cause == WSPROF_REC_DETACH, "%s: the last RECORDING event is off (detach)", trace);
	wsprof_trace_close(t);
}

Test(attach, a_process_attaching_itself_twice)
{
	const char *dir = wt_test_dir();
	char *prog = wt_prog("attach_self"), *lib = getenv("WSPROF_PRELOAD");
	cr_assert(lib, "WSPROF_PRELOAD names libwsprof.so in the tests");
	struct wt_result r;
	wt_run(&r, (const char *[]){ prog, dir, lib, NULL });
	wt_assert_status(&r, 0, "attach_self");
	for (int i = 1; i <= 2; i++) {
		char *trace = wt_path(dir, "t%d.wsp", i), *books = wt_path(dir, "expect%d.json", i);
		struct wt_json *s = wt_summary(trace, NULL), *b = wt_json_load(books);
		wt_assert_counted(s, b, i == 1 ? "attach_self's first span" : "attach_self's second span");
		cr_expect_geq(wt_u64(s, "untracked_frees"), 1, "a block allocated before the span, freed in it");
		expect_attach_span(trace);
		wt_json_free(s), wt_json_free(b);
		free(trace), free(books);
	}
	char *after = wt_path(dir, "after.json");
	struct wt_json *a = wt_json_load(after);
	cr_expect_eq(wt_u64(a, "hooked_during"), 1, "malloc's GOT slot led to wsprof during the span");
	cr_expect_eq(wt_u64(a, "restored_after"), 1, "malloc's GOT slot is restored after it");
	cr_expect_eq(wt_u64(a, "threads_after"), wt_u64(a, "threads_before"), "wsprof's threads are gone");
	wt_json_free(a);
	free(after), free(prog);
	wt_result_free(&r);
}

/* service EXPECT 60 50, not under wsprof. */
static void start_service(struct wt_proc *p)
{
	char *prog = wt_prog("service");
	int err = wt_spawn(p, (const char *[]){ prog, "-", "60", "50", NULL });
	free(prog);
	cr_assert_eq(err, 0, "cannot start service: %s", strerror(-err));
	struct timespec settle = { 0, 300 * 1000000 };
	nanosleep(&settle, NULL);
}

static void expect_service_undisturbed(struct wt_proc *p)
{
	struct wt_result r;
	wt_wait(p, &r);
	wt_assert_status(&r, 0, "service");
	cr_expect(strstr(r.out, "ticks 60\n"), "service's output is unchanged: %s", r.out);
	wt_result_free(&r);
}

/* tick's allocations, about duration / interval of them, sited at tick. */
static void expect_ticks(const char *trace)
{
	struct wt_json *s = wt_summary(trace, NULL);
	uint64_t n = wt_u64(s, "kinds.heap.allocations");
	cr_expect(n >= 10 && n <= 30, "%s: about 20 allocations in 1 s of 50 ms ticks, found %llu", trace,
		  (unsigned long long)n);
	cr_expect_geq(wt_u64(s, "untracked_frees"), 1, "frees of blocks allocated before the attach are untracked");
	wt_json_free(s);
	struct wt_json *c = wt_wsprof_json((const char *[]){ "report", "callsites", "--json", trace, NULL });
	cr_expect_str_eq(wt_json_str(c, "sites.0.function"), "tick", "the allocations are tick's");
	cr_expect_eq(wt_u64(c, "sites.0.allocations"), n);
	wt_json_free(c);
}

Test(attach, wsprof_attach_to_a_running_service)
{
	struct wt_proc p;
	start_service(&p);
	char *trace = wt_path(wt_test_dir(), "a.wsp");
	if (!wt_attach(p.pid, "1", trace)) {
		free(trace);
		cr_skip_test("this machine does not let a process ptrace another");
	}
	expect_ticks(trace);
	expect_service_undisturbed(&p);
	free(trace);
}

/* The process's userfaultfd descriptors and write-protected pages (the
 * uffd-wp bit of /proc/PID/pagemap) in its private writable memory. */
static void protection_of(pid_t pid, unsigned *uffds, uint64_t *wp_pages)
{
	char path[64], link[256];
	*uffds = 0;
	*wp_pages = 0;
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	cr_assert(d, "cannot list %s", path);
	for (struct dirent *e; (e = readdir(d));) {
		char fd[320];
		snprintf(fd, sizeof fd, "%s/%s", path, e->d_name);
		ssize_t n = readlink(fd, link, sizeof link - 1);
		if (n > 0 && (link[n] = 0, strstr(link, "userfaultfd")))
			(*uffds)++;
	}
	closedir(d);
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *maps = fopen(path, "r");
	snprintf(path, sizeof path, "/proc/%d/pagemap", (int)pid);
	FILE *pm = fopen(path, "rb");
	cr_assert(maps && pm, "cannot read the maps and pagemap of %d", (int)pid);
	char line[512];
	while (fgets(line, sizeof line, maps)) {
		unsigned long long lo, hi;
		char perms[8];
		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3 || strcmp(perms, "rw-p"))
			continue;
		fseek(pm, (long)(lo / 4096 * 8), SEEK_SET);
		for (unsigned long long a = lo; a < hi; a += 4096) {
			uint64_t entry;
			if (fread(&entry, sizeof entry, 1, pm) != 1)
				break;
			*wp_pages += entry >> 57 & 1;
		}
	}
	fclose(maps);
	fclose(pm);
}

/* Written pages are sampled in an attached process as under record: its
 * memory is write-protected (asynchronously: it only takes minor faults)
 * while the attach lasts, and not one page stays protected after it, nor
 * any userfaultfd of wsprof's. */
Test(attach, written_pages_are_sampled_and_nothing_stays_protected)
{
	struct wt_proc p;
	start_service(&p);
	char *trace = wt_path(wt_test_dir(), "w.wsp"), spid[16];
	snprintf(spid, sizeof spid, "%d", (int)p.pid);
	struct wt_proc a;
	cr_assert_eq(wt_spawn(&a, (const char *[]){ wt_wsprof(), "attach", "--duration", "2", "-o", trace, spid, NULL }), 0);
	struct timespec wait = { 1, 200 * 1000000 };
	nanosleep(&wait, NULL);
	unsigned uffds_during, uffds_after;
	uint64_t wp_during, wp_after;
	protection_of(p.pid, &uffds_during, &wp_during);
	struct wt_result r;
	wt_wait(&a, &r);
	if (r.status == 1 && strstr(r.err, "cannot ptrace")) {
		wt_result_free(&r);
		kill(p.pid, SIGKILL);
		free(trace);
		cr_skip_test("this machine does not let a process ptrace another");
	}
	wt_assert_status(&r, 0, "wsprof attach");
	wt_result_free(&r);
	protection_of(p.pid, &uffds_after, &wp_after);
	struct wt_json *s = wt_summary(trace, NULL);
	bool writes = false;
	const struct wt_json *sources = wt_json_get(s, "access.sources");
	for (size_t i = 0; sources && i < sources->count; i++)
		writes = writes || (sources->items[i].text && !strcmp(sources->items[i].text, "written pages"));
	const char *note = wt_json_str(s, "access.note");
	cr_expect(!note || !strstr(note, "access sampling off"), "access sampling was off in the attached process: %s", note);
	if (writes) {
		cr_expect_eq(uffds_during, 1, "while attached, wsprof's userfaultfd is open");
		cr_expect_gt(wp_during, 0, "while attached, the program's memory is write-protected");
		struct wt_json *w = wt_wsprof_json((const char *[]){ "report", "wss", "--json", trace, NULL });
		cr_expect_gt(wt_u64(w, "percentiles_by_source.writes.p100"), 0, "tick's writes were seen");
		wt_json_free(w);
	} else {
		cr_log_warn("no written pages on this kernel (%s): only what is left after the attach is checked",
			    note ? note : "no note");
	}
	cr_expect_eq(uffds_after, 0, "a userfaultfd of wsprof's is left open in the program");
	cr_expect_eq(wp_after, 0, "%llu pages of the program stay write-protected after the attach",
		     (unsigned long long)wp_after);
	wt_json_free(s);
	expect_service_undisturbed(&p);
	free(trace);
}

/* service names each block it makes (wsprof.h) from its first tick on,
 * long before the attach: the file's first call found no wsprof and kept
 * that in mind; the attach tells it to look again, so the blocks of the
 * attached span have their name. */
Test(attach, wsprof_h_calls_made_before_the_attach_are_heard_after_it)
{
	struct wt_proc p;
	char *prog = wt_prog("service");
	int err = wt_spawn(&p, (const char *[]){ prog, "-", "60", "50", "named", NULL });
	free(prog);
	cr_assert_eq(err, 0, "cannot start service: %s", strerror(-err));
	struct timespec settle = { 0, 300 * 1000000 };
	nanosleep(&settle, NULL);
	char *trace = wt_path(wt_test_dir(), "n.wsp");
	if (!wt_attach(p.pid, "1", trace)) {
		free(trace);
		cr_skip_test("this machine does not let a process ptrace another");
	}
	struct wt_json *st = wt_wsprof_json((const char *[]){ "report", "state", "--json", trace, NULL });
	const struct wt_json *blocks = wt_json_get(st, "blocks");
	size_t named = 0;
	for (size_t i = 0; blocks && i < blocks->count; i++) {
		const char *name = wt_json_str(&blocks->items[i], "name");
		named += name && !strcmp(name, "tick block");
	}
	cr_expect_geq(named, 6, "%zu of the blocks live at the peak are named \"tick block\" (7 of 8 expected)", named);
	wt_json_free(st);
	expect_service_undisturbed(&p);
	free(trace);
}

/* Debian's python3 is a non-PIE executable that takes malloc's address:
 * dlsym(RTLD_DEFAULT, "malloc") there finds its own PLT stub, which leads
 * through the GOT slot the attach redirects, back to the hook (the program
 * crashed). Attached to, it goes on; its allocations are recorded at the
 * script's line, and ctypes' dlopen and dlsym work during the attach. */
Test(attach, a_python_program_attached_to_runs_on)
{
	if (access("/usr/bin/python3", X_OK) != 0)
		cr_skip_test("no /usr/bin/python3");
	static const char script[] =
		"import time, ctypes\n"
		"keep = []\n"
		"for i in range(60):\n"
		"    keep.append(bytearray(200000))\n"
		"    if len(keep) > 8: keep.pop(0)\n"
		"    cos = ctypes.CDLL('libm.so.6').cos\n"
		"    cos.restype, cos.argtypes = ctypes.c_double, [ctypes.c_double]\n"
		"    assert cos(0.0) == 1.0\n"
		"    time.sleep(0.05)\n"
		"print('done', len(keep))\n";
	char *py = wt_path(wt_test_dir(), "loop.py");
	wt_write_file(py, script, sizeof script - 1);
	struct wt_proc p;
	cr_assert_eq(wt_spawn(&p, (const char *[]){ "/usr/bin/python3", py, NULL }), 0, "cannot start python3");
	struct timespec settle = { 0, 400 * 1000000 };
	nanosleep(&settle, NULL);
	char *trace = wt_path(wt_test_dir(), "py.wsp");
	if (!wt_attach(p.pid, "1", trace)) {
		free(py), free(trace);
		cr_skip_test("this machine does not let a process ptrace another");
	}
	struct wt_result r;
	wt_wait(&p, &r);
	wt_assert_status(&r, 0, "python3 attached to");
	cr_expect(strstr(r.out, "done 8\n"), "python3's output is unchanged: %s", r.out);
	wt_result_free(&r);
	struct wt_json *s = wt_summary(trace, NULL);
	uint64_t n = wt_u64(s, "kinds.heap.allocations");
	cr_expect_geq(n, 10, "about 20 bytearrays in 1 s of 50 ms steps, found %llu heap allocations", (unsigned long long)n);
	wt_json_free(s);
	wt_run(&r, (const char *[]){ wt_wsprof(), "report", "callsites", trace, NULL });
	wt_assert_status(&r, 0, "wsprof report callsites");
	cr_expect(strstr(r.out, "loop.py:4"), "the bytearrays are the script's line 4:\n%s", r.out);
	wt_result_free(&r);
	free(py), free(trace);
}

Test(attach, twice_in_a_row)
{
	struct wt_proc p;
	start_service(&p);
	char *first = wt_path(wt_test_dir(), "first.wsp"), *second = wt_path(wt_test_dir(), "second.wsp");
	if (!wt_attach(p.pid, "1", first)) {
		free(first), free(second);
		cr_skip_test("this machine does not let a process ptrace another");
	}
	cr_assert(wt_attach(p.pid, "1", second));
	expect_ticks(first);
	expect_ticks(second);
	expect_service_undisturbed(&p);
	free(first), free(second);
}

Test(attach, refused_when_ptrace_is_not_allowed)
{
	struct wt_proc p;
	start_service(&p);
	char *yama = wt_path(wt_test_dir(), "ptrace_scope"), spid[16];
	wt_write_file(yama, "3\n", 2);
	snprintf(spid, sizeof spid, "%d", (int)p.pid);
	setenv("WSPROF_TEST_YAMA_SCOPE_FILE", yama, 1);
	struct wt_result r;
	wt_run(&r, (const char *[]){ wt_wsprof(), "attach", spid, NULL });
	unsetenv("WSPROF_TEST_YAMA_SCOPE_FILE");
	cr_expect_eq(r.status, 1, "refused with status 1, got %d", r.status);
	cr_expect_eq(wt_count_lines(r.err), 1, "one line: %s", r.err);
	cr_expect(strstr(r.err, "ptrace_scope = 3"), "it says why: %s", r.err);
	wt_result_free(&r);
	wt_run(&r, (const char *[]){ wt_wsprof(), "attach", "999999999", NULL });
	cr_expect_eq(r.status, 1, "no such process: refused");
	cr_expect(strstr(r.err, "no process 999999999") && wt_count_lines(r.err) == 1, "one line: %s", r.err);
	wt_result_free(&r);
	expect_service_undisturbed(&p);
	free(yama);
}
