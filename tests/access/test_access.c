/*
 * test_access.c - the access sampler (preload/access/sampler.c), read back from
 * the trace with the reader API (wsprof/trace.h).
 *
 * hot_idle writes one 64 MiB buffer over and over while a second one,
 * written once at the start, stays idle. Every window inside its "steady"
 * phase, once the sampler has settled, must show the hot buffer written
 * whole and the idle one not at all, the written bytes must be the hot
 * buffer's, and the resident set both buffers. The same holds at the
 * buffer's new address after realloc moved it, in a forked child's own
 * trace, and when only every other page is written and the regions must
 * be bounded (WSPROF_MAX_REGIONS). When half the hot buffer stops being
 * written, that half is reported idle within the bound the budget sets.
 * With WSPROF_ACCESS=0, or where userfaultfd is refused (a seccomp filter,
 * as container runtimes apply), there are no write samples and the trace
 * header says why. Where the kernel cannot watch written pages at all
 * (before Linux 6.7), the tests that need them are skipped, saying why.
 *
 * The sampler write-protects at most WSPROF_WP_PAGES written pages again
 * per window, going round them; the rest stay unprotected and are reported
 * written in every window, assumed still hot, until their turn comes. The
 * tests set a budget below the hot buffer's 16384 pages, so that is what
 * they see: the hot buffer reported whole in every window though only part
 * of it takes faults, and pages written once - the idle buffer, when the
 * sampler armed it before hot_idle had written it - reported for up to
 * ceil(written / budget) windows. A phase is checked from then on.
 *
 * The window is 250 ms, not the default 100: a write to a protected page
 * costs a fault, about 15 us on this project's VMs, so the sweep after the
 * buffer is armed (16384 faults) takes about a quarter of a second, and
 * the 8192 pages protected again per window cost a tenth of a second more
 * in each. The tests run one at a time (a sweep slowed by a neighbour
 * would see less).
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wsprof/trace.h"

/* Linux 6.7 uapi, for older headers (as in preload/access/sampler.c). */
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef PAGEMAP_SCAN
struct pm_scan_arg {
	__u64 size, flags, start, end, walk_end, vec, vec_len, max_pages;
	__u64 category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_WRITTEN (1 << 1)
#endif

/* Whether this kernel, here, lets a process watch its written pages - the
 * tests' own look, apart from the recorder's. @return NULL, or why not. */
static const char *written_pages_unavailable(void)
{
	static char why[128];
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (uffd < 0) {
		snprintf(why, sizeof why, "userfaultfd: %s", strerror(errno));
		return why;
	}
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC };
	int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct uffdio_register reg = { .range = { (uintptr_t)page, 4096 }, .mode = UFFDIO_REGISTER_MODE_WP };
	struct pm_scan_arg scan = { .size = sizeof scan, .start = (uintptr_t)page, .end = (uintptr_t)page + 4096,
				    .category_mask = PAGE_IS_WRITTEN };
	if (ioctl(uffd, UFFDIO_API, &api) != 0)
		snprintf(why, sizeof why, "no asynchronous write-protection: %s", strerror(errno));
	else if (ioctl(uffd, UFFDIO_REGISTER, &reg) != 0)
		snprintf(why, sizeof why, "UFFDIO_REGISTER: %s", strerror(errno));
	else if (ioctl(pagemap, PAGEMAP_SCAN, &scan) < 0)
		snprintf(why, sizeof why, "PAGEMAP_SCAN: %s", strerror(errno));
	else
		why[0] = 0;
	munmap(page, 4096);
	close(pagemap);
	close(uffd);
	return why[0] ? why : NULL;
}

static void need_written_pages(void)
{
	const char *why = written_pages_unavailable();
	if (why)
		cr_skip_test("written pages cannot be watched here (%s): it takes Linux >= 6.7 and userfaultfd allowed", why);
}

TestSuite(access, .fini = wt_cleanup, .timeout = 60);

#define STEADY_MS "3000"
#define WP_PAGES 8192 /* the budget of window_env, half the hot buffer */
#define MIB (1024.0 * 1024.0)
/* Written pages besides the two buffers that compete for the budget: the
 * moved buffer's extra 1024, the program's other pages and wsprof's. */
#define OTHER_PAGES 4096

struct window {
	uint64_t start, end;  /* ns since the process started */
	uint64_t written;     /* bytes in all regions */
	uint64_t hot, idle;   /* bytes of them in the hot and idle buffers */
	size_t nregions;
};

struct samples {
	unsigned sources, window_ms, max_regions;
	char note[256];
	struct window w[256];
	size_t nw;
	uint64_t rss[256];
	uint64_t rss_time[256];
	size_t nrss;
	uint64_t phase_start, phase_end; /* of the phase asked for */
	size_t released;      /* written pages of blocks read as they were freed (window 0) */
	bool unsorted;
};

static uint64_t overlap(const wsprof_region *r, uint64_t lo, uint64_t hi)
{
	uint64_t a = r->addr > lo ? r->addr : lo, b = r->addr + r->len < hi ? r->addr + r->len : hi;
	return b > a ? b - a : 0;
}

/* Read a trace: its access sources, and per window the bytes written in
 * [hot, hot + size) and [idle, idle + size) (page-rounded). */
static void read_source(const char *path, unsigned source, const char *phase, uint64_t hot, uint64_t idle,
			uint64_t size, uint64_t page, struct samples *s)
{
	memset(s, 0, sizeof *s);
	uint64_t hot_lo = hot & ~(page - 1), hot_hi = hot + size;
	uint64_t idle_lo = idle & ~(page - 1), idle_hi = (idle + size + page - 1) & ~(page - 1);
	wsprof_trace *t;
	int err = wsprof_trace_open(path, &t);
	cr_assert_eq(err, 0, "cannot open %s: %s", path, wsprof_strerror(err));
	const wsprof_process *p = wsprof_trace_process(t);
	s->sources = p->access_sources;
	s->window_ms = p->window_ms;
	s->max_regions = p->max_regions;
	snprintf(s->note, sizeof s->note, "%s", p->access_note ? p->access_note : "");
	const char *open_phase[16];
	size_t depth = 0;
	wsprof_event ev;
	while ((err = wsprof_trace_next(t, &ev)) > 0) {
		if (ev.type == WSPROF_EV_ANNOTATE && ev.op == WSPROF_ANN_PHASE_PUSH && depth < 16) {
			open_phase[depth++] = ev.text && strcmp(ev.text, phase) == 0 ? phase : "";
			if (open_phase[depth - 1] == phase)
				s->phase_start = ev.time_ns;
		} else if (ev.type == WSPROF_EV_ANNOTATE && ev.op == WSPROF_ANN_PHASE_POP && depth) {
			if (open_phase[--depth] == phase)
				s->phase_end = ev.time_ns;
		} else if (ev.type == WSPROF_EV_RSS && s->nrss < 256) {
			s->rss_time[s->nrss] = ev.time_ns;
			s->rss[s->nrss++] = ev.size;
		} else if (ev.type == WSPROF_EV_ACCESS && ev.op == source && !ev.size && source == WSPROF_ACCESS_WRITES) {
			s->released++; /* a block read as it was freed: a moment, not a window */
		} else if (ev.type == WSPROF_EV_ACCESS && ev.op == source && s->nw < 256) {
			struct window *w = &s->w[s->nw++];
			w->end = ev.time_ns;
			w->start = ev.time_ns > ev.size ? ev.time_ns - ev.size : 0;
			w->nregions = ev.nregions;
			for (size_t i = 0; i < ev.nregions; i++) {
				const wsprof_region *r = &ev.regions[i];
				if (i && r->addr < ev.regions[i - 1].addr + ev.regions[i - 1].len)
					s->unsorted = true;
				w->written += r->len;
				w->hot += overlap(r, hot_lo, hot_hi);
				w->idle += overlap(r, idle_lo, idle_hi);
			}
		}
	}
	cr_assert_eq(err, 0, "reading %s failed: %s", path, wsprof_strerror(err));
	wsprof_trace_close(t);
}

static void read_samples(const char *path, const char *phase, uint64_t hot, uint64_t idle, uint64_t size,
			 uint64_t page, struct samples *s)
{
	read_source(path, WSPROF_ACCESS_WRITES, phase, hot, idle, size, page, s);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_u64);
	return v[n / 2];
}

/* How long after a moment pages written before it may still be reported:
 * the sampler protects wp_pages of the written pages again per window,
 * going round them, so a page no longer written is seen so within
 * ceil(written / wp_pages) windows; one more for a window that ends late. */
static uint64_t settle_ns(uint64_t written_pages, unsigned wp_pages, unsigned window_ms)
{
	return ((written_pages + wp_pages - 1) / wp_pages + 1) * window_ms * 1000000ull;
}

/* The windows wholly inside the phase once the sampler has settled (both
 * buffers may have been written in full, and not protected since, before
 * it began): the hot buffer written whole in most, the idle one in none;
 * the median written bytes are the hot buffer's; the resident set holds
 * both buffers. */
static void check_hot_and_idle(const char *trace, const char *phase, uint64_t hot, const struct wt_json *expect,
			       unsigned wp_pages)
{
	uint64_t size = wt_u64(expect, "size"), page = wt_u64(expect, "page_size");
	struct samples *s = calloc(1, sizeof *s);
	read_samples(trace, phase, hot, wt_u64(expect, "idle"), size, page, s);
	cr_assert(s->sources & WSPROF_SOURCE_WRITES, "%s: no written-pages source (sources %#x, note \"%s\")", trace,
		  s->sources, s->note);
	cr_expect(s->sources & WSPROF_SOURCE_ANNOTATIONS, "annotations are always a source");
	cr_expect(!strstr(s->note, "written pages"), "written pages are there, yet the note says \"%s\"", s->note);
	cr_assert(s->phase_start && s->phase_end, "%s: no \"%s\" phase in the trace", trace, phase);
	cr_expect(!s->unsorted, "regions come sorted and apart");

	uint64_t from = s->phase_start + settle_ns(2 * size / page + OTHER_PAGES, wp_pages, s->window_ms), written[256];
	size_t n = 0, whole = 0;
	for (size_t i = 0; i < s->nw; i++) {
		const struct window *w = &s->w[i];
		if (w->start < from || w->end > s->phase_end)
			continue;
		written[n++] = w->written;
		whole += w->hot >= size / 100 * 95;
		cr_expect_eq(w->idle, 0, "window ending at %.2f s: %.1f MiB of the idle buffer reported written",
			     w->end / 1e9, w->idle / MIB);
		cr_expect_leq(w->nregions, s->max_regions, "window ending at %.2f s: %zu regions, more than %u",
			      w->end / 1e9, w->nregions, s->max_regions);
		cr_log_info("%s window ending at %.2f s: %.1f MiB written in %zu regions, %.1f MiB of the hot buffer",
			    phase, w->end / 1e9, w->written / MIB, w->nregions, w->hot / MIB);
	}
	cr_assert_geq(n, 3, "only %zu whole windows inside the %.2f s of phase \"%s\"", n,
		      (s->phase_end - s->phase_start) / 1e9, phase);
	cr_expect_geq(whole * 3, n * 2, "the hot buffer was written whole in only %zu of %zu windows", whole, n);
	double med = median(written, n) / MIB;
	cr_expect(med > 64 * 0.8 && med < 64 * 1.2, "median written per window %.1f MiB, not 64 MiB within 20%%", med);

	uint64_t rss[256];
	size_t nrss = 0;
	for (size_t i = 0; i < s->nrss; i++)
		if (s->rss_time[i] >= from && s->rss_time[i] <= s->phase_end)
			rss[nrss++] = s->rss[i];
	cr_assert_gt(nrss, 0, "no RSS samples inside phase \"%s\"", phase);
	double resident = median(rss, nrss) / MIB;
	cr_log_info("%s: resident %.1f MiB (median of %zu samples)", phase, resident, nrss);
	cr_expect(resident >= 128 && resident < 128 + 32, "resident %.1f MiB, not about 128 MiB", resident);
	free(s);
}

static const char *const window_env[] = { "WSPROF_WINDOW_MS=250", "WSPROF_WP_PAGES=8192", NULL };

static void record(struct wt_recording *rec, const char *const env[], const char *mode, const char *steady_ms,
		   const char *then_ms)
{
	char *prog = wt_path(ACCESS_PROG_DIR, "hot_idle");
	wt_record_with(rec, env, NULL, prog, (const char *[]){ mode, steady_ms, then_ms, NULL });
	free(prog);
	wt_assert_status(&rec->run, 0, "wsprof record hot_idle");
	cr_assert(rec->expect, "hot_idle wrote no expect file");
}

Test(access, written_pages_show_the_hot_buffer_and_not_the_idle_one)
{
	need_written_pages();
	struct wt_recording rec;
	record(&rec, window_env, "plain", STEADY_MS, NULL);
	check_hot_and_idle(rec.trace, "steady", wt_u64(rec.expect, "hot"), rec.expect, WP_PAGES);
	wt_recording_free(&rec);
}

Test(access, a_buffer_moved_by_realloc_is_followed_to_its_new_address)
{
	need_written_pages();
	struct wt_recording rec;
	record(&rec, window_env, "realloc", "1000", STEADY_MS);
	uint64_t hot = wt_u64(rec.expect, "hot"), moved = wt_u64(rec.expect, "moved");
	cr_assert_neq(hot, moved, "realloc did not move the block: nothing to follow");
	/* The old address is gone: reported as written only if it was never let go. */
	check_hot_and_idle(rec.trace, "moved", moved, rec.expect, WP_PAGES);
	struct samples *s = calloc(1, sizeof *s);
	read_samples(rec.trace, "moved", hot, wt_u64(rec.expect, "idle"), wt_u64(rec.expect, "size"),
		     wt_u64(rec.expect, "page_size"), s);
	for (size_t i = 0; i < s->nw; i++)
		if (s->w[i].start >= s->phase_start)
			cr_expect_eq(s->w[i].hot, 0, "window ending at %.2f s: the old address is reported written",
				     s->w[i].end / 1e9);
	free(s);
	wt_recording_free(&rec);
}

Test(access, a_forked_child_has_its_own_samples)
{
	need_written_pages();
	struct wt_recording rec;
	record(&rec, window_env, "fork", STEADY_MS, NULL);
	char *child = wt_path(rec.dir, "t.wsp.%llu", (unsigned long long)wt_u64(rec.expect, "pid"));
	cr_assert(wt_file_exists(child), "the child's trace %s was not written", child);
	check_hot_and_idle(child, "steady", wt_u64(rec.expect, "hot"), rec.expect, WP_PAGES);
	free(child);
	wt_recording_free(&rec);
}

/* 8192 regions written per window, 100 allowed: the neighbours separated by
 * the smallest gaps (the unwritten pages between them) are joined, so the
 * window shows the whole hot buffer - twice the bytes truly written, the
 * over-count a bound costs - and still nothing of the idle buffer. */
Test(access, scattered_writes_are_bounded_to_max_regions)
{
	need_written_pages();
	struct wt_recording rec;
	record(&rec, (const char *[]){ "WSPROF_WINDOW_MS=300", "WSPROF_MAX_REGIONS=100", "WSPROF_WP_PAGES=8192", NULL },
	       "sparse", STEADY_MS, NULL);
	check_hot_and_idle(rec.trace, "steady", wt_u64(rec.expect, "hot"), rec.expect, WP_PAGES);
	wt_recording_free(&rec);
}

/* 4096 pages protected again per 100 ms window, a quarter of the hot
 * buffer. When its second half is no longer written, the pages of it not
 * yet protected again are still reported, fewer each window, and none
 * after ceil(written / 4096) windows (and one more), while the first half,
 * lower in memory and written on, is reported whole throughout: the budget
 * goes round all the written pages, not to the same ones each window. */
Test(access, a_buffer_that_goes_cold_is_reported_idle_within_the_bound)
{
	need_written_pages();
	struct wt_recording rec;
	record(&rec, (const char *[]){ "WSPROF_WINDOW_MS=100", "WSPROF_WP_PAGES=4096", NULL }, "cool", "2000", "1500");
	uint64_t hot = wt_u64(rec.expect, "hot"), size = wt_u64(rec.expect, "size"), page = wt_u64(rec.expect, "page_size");
	check_hot_and_idle(rec.trace, "steady", hot, rec.expect, 4096);
	/* As read here, "hot" is the half still written, "idle" the half gone cold. */
	struct samples *s = calloc(1, sizeof *s);
	read_samples(rec.trace, "cooled", hot, hot + size / 2, size / 2, page, s);
	cr_assert(s->phase_start && s->phase_end, "%s: no \"cooled\" phase in the trace", rec.trace);

	/* What was written when half the buffer went cold: the most reported
	 * by the windows ending within one window of that moment. */
	uint64_t window_ns = s->window_ms * 1000000ull, written = 0;
	for (size_t i = 0; i < s->nw; i++)
		if (s->w[i].end + window_ns > s->phase_start && s->w[i].end <= s->phase_start + window_ns &&
		    s->w[i].written > written)
			written = s->w[i].written;
	cr_assert_geq(written, size / 100 * 95, "only %.1f MiB written when half the buffer went cold", written / MIB);
	uint64_t cold_from = s->phase_start + settle_ns(written / page, 4096, s->window_ms), last = UINT64_MAX;
	size_t n = 0;
	for (size_t i = 0; i < s->nw; i++) {
		const struct window *w = &s->w[i];
		if (w->start < s->phase_start || w->end > s->phase_end)
			continue;
		cr_log_info("cooled window ending at %.2f s: %.1f MiB of the half still written, %.1f MiB of the cold one",
			    w->end / 1e9, w->hot / MIB, w->idle / MIB);
		cr_expect_geq(w->hot, size / 2 / 100 * 95, "window ending at %.2f s: only %.1f MiB of the half still written",
			      w->end / 1e9, w->hot / MIB);
		cr_expect_leq(w->idle, last, "window ending at %.2f s: more of the cold half reported written (%.1f MiB)",
			      w->end / 1e9, w->idle / MIB);
		last = w->idle;
		if (w->start < cold_from)
			continue;
		n++;
		cr_expect_eq(w->idle, 0, "window ending at %.2f s, %.2f s after half the buffer went cold: %.1f MiB of "
			     "that half reported written", w->end / 1e9, (w->end - s->phase_start) / 1e9, w->idle / MIB);
	}
	cr_assert_geq(n, 3, "only %zu windows of the cooled phase after %.2f s, the bound for %.1f MiB written", n,
		      (cold_from - s->phase_start) / 1e9, written / MIB);
	free(s);
	wt_recording_free(&rec);
}

/* No write samples, RSS samples still, and the header saying why. */
static void check_no_writes(const char *trace, const char *want_note)
{
	struct samples *s = calloc(1, sizeof *s);
	read_samples(trace, "steady", 0, 0, 0, 4096, s);
	cr_expect_eq(s->nw, 0, "%zu ACCESS records, expected none", s->nw);
	cr_expect_eq(s->sources & WSPROF_SOURCE_WRITES, 0, "the written-pages source is claimed");
	cr_expect(s->sources & WSPROF_SOURCE_ANNOTATIONS, "annotations are always a source");
	cr_expect(strstr(s->note, want_note), "the note \"%s\" does not say \"%s\"", s->note, want_note);
	cr_expect_gt(s->nrss, 0, "no RSS samples");
	free(s);
}

Test(access, access_off_records_no_samples_and_says_so)
{
	struct wt_recording rec;
	record(&rec, (const char *[]){ "WSPROF_ACCESS=0", "WSPROF_WINDOW_MS=100", NULL }, "plain", "300", NULL);
	check_no_writes(rec.trace, "access sampling off (WSPROF_ACCESS=0)");
	wt_recording_free(&rec);
}

Test(access, refused_userfaultfd_leaves_the_program_alone_and_says_why)
{
	const char *dir = wt_test_dir();
	char *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json");
	char *jail = wt_path(ACCESS_PROG_DIR, "no_userfaultfd"), *prog = wt_path(ACCESS_PROG_DIR, "hot_idle");
	const char *argv[] = { jail, "/usr/bin/env", "WSPROF_WINDOW_MS=100", wt_wsprof(), "record", "-o", trace,
			       "--", prog, expect, "plain", "300", NULL };
	struct wt_result run;
	cr_assert_eq(wt_run(&run, argv), 0, "cannot run %s", jail);
	wt_assert_status(&run, 0, "wsprof record hot_idle without userfaultfd");
	cr_expect(wt_file_exists(expect), "hot_idle did not finish its work");
	cr_expect(!strstr(run.err ? run.err : "", "access sampling"), "a warning for a missing source:\n%s", run.err);
	check_no_writes(trace, "written pages: userfaultfd not permitted (Operation not permitted)");
	struct samples *s = calloc(1, sizeof *s);
	read_samples(trace, "steady", 0, 0, 0, 4096, s);
	cr_expect(strstr(s->note, "DAMON: this kernel has no DAMON sysfs interface"),
		  "the note \"%s\" does not say why there is no DAMON", s->note);
	cr_expect(s->sources & WSPROF_SOURCE_KERNEL_LAUNCHES, "kernel launches stay a source");
	free(s);
	wt_result_free(&run);
	free(trace), free(expect), free(jail), free(prog);
}

/* The reports: the median working set is the hot buffer, and the idle
 * buffer's call site is the cold one. */
static struct wt_json *report_json(const char *const argv[], struct wt_result *r)
{
	wt_run(r, argv);
	wt_assert_status(r, 0, argv[2]);
	char err[256];
	struct wt_json *j = wt_json_parse(r->out, err, sizeof err);
	cr_assert(j, "not JSON (%s):\n%s", err, r->out);
	return j;
}

static uint64_t line_in(const char *file, const char *marker)
{
	char *path = wt_path(getenv("WSPROF_SOURCE_ROOT"), file);
	char *text = wt_read_file(path, NULL);
	cr_assert(text && strstr(text, marker), "no %s in %s", marker, path);
	uint64_t line = 1;
	for (const char *p = text; p < strstr(text, marker); p++)
		line += *p == '\n';
	free(text);
	free(path);
	return line;
}

static uint64_t source_line(const char *marker)
{
	return line_in("tests/access/hot_idle.c", marker);
}

Test(access, the_reports_show_the_working_set_and_the_cold_site)
{
	need_written_pages();
	struct wt_recording rec;
	record(&rec, window_env, "plain", STEADY_MS, NULL);
	struct wt_result r;
	struct wt_json *w = report_json((const char *[]){ wt_wsprof(), "report", "wss", "--json", rec.trace, NULL }, &r);
	double median = (double)wt_u64(w, "percentiles_by_source.writes.p50") / MIB;
	cr_expect(median >= 64 * 0.8 && median <= 64 * 1.2, "median working set %.1f MiB, not 64 MiB within 20%%", median);
	cr_expect_str_eq(wt_json_str(w, "sources.0"), "writes");
	wt_json_free(w);
	wt_result_free(&r);

	struct wt_json *c = report_json((const char *[]){ wt_wsprof(), "report", "callsites", "--sort", "cold", "--kind",
							  "heap", "--top", "0", "--json", rec.trace, NULL }, &r);
	const struct wt_json *sites = wt_json_get(c, "sites");
	uint64_t idle_line = source_line("SITE:idle"), hot_line = source_line("SITE:hot");
	double idle_cold = -1, hot_cold = -1;
	for (size_t i = 0; sites && i < sites->count; i++) {
		const struct wt_json *s = &sites->items[i];
		const char *cold = wt_json_str(s, "coldest_idle_s");
		const struct wt_json *cold_num = wt_json_get(s, "coldest_idle_s");
		double v = cold_num && cold_num->text ? strtod(cold_num->text, NULL) : (cold ? strtod(cold, NULL) : -1);
		if (wt_u64(s, "line") == idle_line)
			idle_cold = v;
		if (wt_u64(s, "line") == hot_line)
			hot_cold = v;
	}
	cr_expect(idle_cold >= 0.5, "the idle buffer's site went cold for %.3f s only:\n%s", idle_cold, r.out);
	cr_expect(hot_cold >= 0 && hot_cold < 0.5, "the hot buffer's site shows cold for %.3f s:\n%s", hot_cold, r.out);
	cr_expect_str_eq(wt_json_str(c, "sites.0.file") ? strrchr(wt_json_str(c, "sites.0.file"), '/') + 1 : "",
			 "hot_idle.c", "the coldest site first");
	cr_expect_eq(wt_u64(c, "sites.0.line"), idle_line, "the idle buffer is the coldest site");
	wt_json_free(c);
	wt_result_free(&r);
	wt_recording_free(&rec);
}

/* ---- memory given back within a window ----------------------------------
 * temporaries keeps an 8 MiB block hot and, every 10 ms, writes a
 * temporary whole and frees it: never live when a window is scanned. With
 * the defaults (100 ms windows, the default budget), the temporaries'
 * site must be seen accessed, and each window's working set must hold
 * the hot block and a temporary, attributed to the heap: a 48 MiB
 * temporary is an mmap of its own, unmapped at free, and read by the free
 * hook before it goes; a 4 MiB one is served from the brk heap once glibc
 * raised its mmap threshold, read by the free hook too, and seen again by
 * the window scan in pages no live block holds any more. */

#define HOT_MIB 8.0

struct temp_run {
	struct wt_recording rec;
	uint64_t temp_size, temps, page;
	uint64_t site_accessed, site_bytes; /* temp_site's, from report callsites */
	uint64_t window_median, heap_median; /* report wss, windows inside the phase */
	size_t windows;
};

static uint64_t median_of(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_u64);
	return n ? v[n / 2] : 0;
}

static void temp_record(struct temp_run *t, const char *temp_size, const char *written)
{
	char *prog = wt_path(ACCESS_PROG_DIR, "temporaries");
	/* meson test sets MALLOC_PERTURB_, with which glibc writes every block
	 * it hands out: a temporary never written would be written after all. */
	wt_record_with(&t->rec, (const char *[]){ "MALLOC_PERTURB_=0", NULL }, NULL, prog,
		       (const char *[]){ temp_size, written, "1000", NULL });
	free(prog);
	wt_assert_status(&t->rec.run, 0, "wsprof record temporaries");
	cr_assert(t->rec.expect, "temporaries wrote no expect file");
	t->temp_size = wt_u64(t->rec.expect, "temp_size");
	t->temps = wt_u64(t->rec.expect, "temps");
	t->page = wt_u64(t->rec.expect, "page_size");

	struct wt_result r;
	struct wt_json *c = report_json((const char *[]){ wt_wsprof(), "report", "callsites", "--sort", "accessed",
							  "--kind", "heap", "--top", "0", "--json", t->rec.trace, NULL },
					&r);
	const struct wt_json *sites = wt_json_get(c, "sites");
	uint64_t line = line_in("tests/access/temporaries.c", "SITE:temp_site");
	for (size_t i = 0; sites && i < sites->count; i++) {
		if (wt_u64(&sites->items[i], "line") != line)
			continue;
		t->site_accessed = wt_u64(&sites->items[i], "accessed_bytes");
		t->site_bytes = wt_u64(&sites->items[i], "bytes");
	}
	cr_assert(t->site_bytes || strcmp(written, "mapped") == 0, "no site at temporaries.c:%llu:\n%s",
		  (unsigned long long)line, r.out);
	wt_json_free(c);
	wt_result_free(&r);

	/* The windows wholly inside the phase, less the first (only arms). */
	struct samples *s = calloc(1, sizeof *s);
	read_samples(t->rec.trace, "steady", 0, 0, 0, t->page, s);
	struct wt_json *w = report_json((const char *[]){ wt_wsprof(), "report", "wss", "--json", t->rec.trace, NULL }, &r);
	const struct wt_json *series = wt_json_get(w, "series");
	uint64_t all[64], heap[64];
	size_t n = 0;
	for (size_t i = 0; series && i < series->count && n < 64; i++) {
		const struct wt_json *p = &series->items[i];
		double start = strtod(wt_json_get(p, "start_s")->text, NULL), end = strtod(wt_json_get(p, "end_s")->text, NULL);
		if (start * 1e9 < (double)s->phase_start + 100e6 || end * 1e9 > (double)s->phase_end)
			continue;
		all[n] = wt_u64(p, "bytes");
		uint64_t h = 0;
		wt_json_u64(p, "by_kind.heap", &h);
		heap[n++] = h;
	}
	t->windows = n;
	t->window_median = median_of(all, n);
	t->heap_median = median_of(heap, n);
	wt_json_free(w);
	wt_result_free(&r);
	free(s);
}

static void expect_temporaries_seen(const char *temp_size)
{
	need_written_pages();
	struct temp_run t = { 0 };
	temp_record(&t, temp_size, "written");
	double temp_mib = (double)t.temp_size / MIB;
	cr_expect_geq(t.site_accessed, t.temp_size, "temp_site accessed %.1f MiB, less than one temporary (%.0f MiB)",
		      (double)t.site_accessed / MIB, temp_mib);
	cr_expect_geq(t.site_accessed, t.site_bytes / 2, "temp_site accessed %.1f MiB of the %.1f MiB it wrote",
		      (double)t.site_accessed / MIB, (double)t.site_bytes / MIB);
	cr_assert_geq(t.windows, 5, "only %zu windows inside the phase", t.windows);
	/* The hot block's last bytes lie in a page written only once, at the start. */
	uint64_t want = (uint64_t)(HOT_MIB * MIB) + t.temp_size - t.page;
	cr_expect_geq(t.window_median, want,
		      "median working set %.2f MiB per window, not the hot %.0f MiB and a %.0f MiB temporary",
		      (double)t.window_median / MIB, HOT_MIB, temp_mib);
	cr_expect_geq(t.heap_median, want, "median heap working set %.2f MiB per window: the temporaries are not the heap's",
		      (double)t.heap_median / MIB);
	wt_recording_free(&t.rec);
}

Test(access, a_4_mib_temporary_from_the_heap_counts_in_its_window_and_site)
{
	expect_temporaries_seen("4194304");
}

Test(access, a_48_mib_temporary_unmapped_at_free_counts_in_its_window_and_site)
{
	expect_temporaries_seen("50331648");
}

/* Allocated and freed, never written: nothing of it counts but the page
 * the allocator writes its header in (a whole page is the unit). */
Test(access, a_temporary_never_written_is_not_counted)
{
	need_written_pages();
	const char *sizes[] = { "4194304", "50331648" };
	for (size_t i = 0; i < 2; i++) {
		struct temp_run t = { 0 };
		temp_record(&t, sizes[i], "unwritten");
		cr_expect_leq(t.site_accessed, t.temps * t.page,
			      "%s-byte temporaries never written: %.1f MiB accessed at their site", sizes[i],
			      (double)t.site_accessed / MIB);
		cr_expect_leq((double)t.window_median / MIB, HOT_MIB + 1,
			      "%s-byte temporaries never written: %.2f MiB per window", sizes[i],
			      (double)t.window_median / MIB);
		wt_recording_free(&t.rec);
	}
}

/* A mapping made and written within a window, and kept: the window scan
 * finds it new, and counts what it holds before arming it. */
Test(access, a_mapping_made_and_written_within_a_window_counts_in_it)
{
	need_written_pages();
	struct temp_run t = { 0 };
	temp_record(&t, "16777216", "mapped");
	struct wt_result r;
	struct wt_json *w = report_json((const char *[]){ wt_wsprof(), "report", "wss", "--json", "--kind", "mmap",
							  t.rec.trace, NULL },
					&r);
	const struct wt_json *series = wt_json_get(w, "series");
	uint64_t mapped[64];
	size_t n = 0;
	for (size_t i = 1; series && i + 1 < series->count && n < 64; i++) {
		uint64_t b = 0;
		wt_json_u64(&series->items[i], "by_kind.mmap", &b);
		mapped[n++] = b;
	}
	cr_assert_geq(n, 5, "only %zu windows:\n%s", n, r.out);
	uint64_t median = median_of(mapped, n);
	cr_expect_geq(median, 16u << 20, "median %.2f MiB of new mappings per window, not the 16 MiB made in each",
		      (double)median / MIB);
	wt_json_free(w);
	wt_result_free(&r);
	wt_recording_free(&t.rec);
}

/* The bundled example frees its blocks before its last window is
 * recorded: what that window saw is the heap's, not memory of no block. */
Test(access, the_bundled_examples_last_window_is_the_heaps)
{
	need_written_pages();
	char *prog = wt_path(getenv("WSPROF_EXAMPLES"), "taskrt"), *trace = wt_path(wt_test_dir(), "t.wsp");
	struct wt_result r;
	/* As a user runs it: not with meson test's MALLOC_PERTURB_, with which
	 * glibc writes each block it frees, in memory of no block. */
	wt_run(&r, (const char *[]){ "/usr/bin/env", "MALLOC_PERTURB_=0", wt_wsprof(), "record", "-o", trace, "--", prog,
				     NULL });
	wt_assert_status(&r, 0, "wsprof record taskrt");
	wt_result_free(&r);
	free(prog);
	struct wt_json *w = report_json((const char *[]){ wt_wsprof(), "report", "wss", "--json", trace, NULL }, &r);
	const struct wt_json *series = wt_json_get(w, "series");
	cr_assert(series && series->count, "no windows:\n%s", r.out);
	const struct wt_json *last = &series->items[series->count - 1];
	uint64_t bytes = wt_u64(last, "bytes"), heap = 0;
	wt_json_u64(last, "by_kind.heap", &heap);
	cr_expect_gt(bytes, 0, "the last window saw nothing");
	/* Not all of it: wsprof's own event buffers and glibc's free lists are
	 * written too, in no block of the program's (up to a tenth here). */
	cr_expect_geq((double)heap, 0.75 * (double)bytes, "the last window: %.2f MiB accessed, %.2f MiB of it the heap's",
		      (double)bytes / MIB, (double)heap / MIB);
	wt_json_free(w);
	wt_result_free(&r);
	free(trace);
}

/* ---- DAMON, against a sysfs tree of plain files -------------------------
 * No kernel this suite runs on can be counted on to offer DAMON's
 * virtual-address operations to the tests (and a test must not start a
 * kdamond on the machine), so the tests give the recorder a tree shaped
 * like /sys/kernel/mm/damon/admin through WSPROF_DAMON_SYSFS and play the
 * kernel's part themselves: hot_idle writes the regions a kdamond would
 * report. What is checked is wsprof's side: the tree it configures, the
 * regions it reads and records, and that it leaves others' kdamonds and
 * the slot count as it found them. */

static const char *const damon_files[] = {
	"nr_kdamonds", "0/state", "0/pid", "0/contexts/nr_contexts", "0/contexts/0/avail_operations",
	"0/contexts/0/operations", "0/contexts/0/monitoring_attrs/intervals/sample_us",
	"0/contexts/0/monitoring_attrs/intervals/aggr_us", "0/contexts/0/monitoring_attrs/intervals/update_us",
	"0/contexts/0/monitoring_attrs/nr_regions/min", "0/contexts/0/monitoring_attrs/nr_regions/max",
	"0/contexts/0/targets/nr_targets", "0/contexts/0/targets/0/pid_target", "0/contexts/0/schemes/nr_schemes",
	"0/contexts/0/schemes/0/action", "0/contexts/0/schemes/0/access_pattern/sz/min",
	"0/contexts/0/schemes/0/access_pattern/sz/max", "0/contexts/0/schemes/0/access_pattern/nr_accesses/min",
	"0/contexts/0/schemes/0/access_pattern/nr_accesses/max", "0/contexts/0/schemes/0/access_pattern/age/min",
	"0/contexts/0/schemes/0/access_pattern/age/max", "0/contexts/0/schemes/0/tried_regions/0/start",
	"0/contexts/0/schemes/0/tried_regions/1/start", NULL
};

static void mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(path, 0755);
			*p = '/';
		}
}

/* A DAMON tree with nr_kdamonds and kdamond 0's avail_operations and
 * state as given; every other file empty. @return its root. */
static char *damon_tree(const char *nr_kdamonds, const char *avail, const char *state)
{
	char *root = wt_path(wt_test_dir(), "damon");
	for (size_t i = 0; damon_files[i]; i++) {
		char rel[256];
		snprintf(rel, sizeof rel, "kdamonds/%s", damon_files[i]);
		char *path = wt_path(root, rel);
		mkdirs(path);
		if (strstr(rel, "tried_regions/")) { /* the directories only: hot_idle writes the regions */
			free(path);
			continue;
		}
		const char *value = strcmp(damon_files[i], "nr_kdamonds") == 0				 ? nr_kdamonds
				    : strcmp(damon_files[i], "0/contexts/0/avail_operations") == 0 ? avail
				    : strcmp(damon_files[i], "0/state") == 0			 ? state
												 : "";
		FILE *f = fopen(path, "w");
		cr_assert(f, "cannot write %s", path);
		fprintf(f, "%s\n", value);
		fclose(f);
		free(path);
	}
	return root;
}

/* A file of the tree, its trailing newline dropped. */
static char *damon_file(const char *root, const char *rel)
{
	char full[256];
	snprintf(full, sizeof full, "kdamonds/%s", rel);
	char *path = wt_path(root, full);
	char *text = wt_read_file(path, NULL);
	cr_assert(text, "cannot read %s", path);
	free(path);
	size_t n = strlen(text);
	while (n && text[n - 1] == '\n')
		text[--n] = 0;
	return text;
}

static void expect_damon_file(const char *root, const char *rel, const char *want)
{
	char *got = damon_file(root, rel);
	cr_expect_str_eq(got, want, "%s: \"%s\", expected \"%s\"", rel, got, want);
	free(got);
}

static void record_damon(struct wt_recording *rec, const char *root)
{
	char env_root[512];
	snprintf(env_root, sizeof env_root, "WSPROF_DAMON_SYSFS=%s", root);
	record(rec, (const char *[]){ env_root, "WSPROF_WINDOW_MS=250", "WSPROF_WP_PAGES=8192", NULL }, "damon", "2000",
	       NULL);
}

Test(access, damon_regions_are_recorded_and_the_kdamond_configured_then_removed)
{
	char *root = damon_tree("0", "vaddr fvaddr paddr", "off");
	struct wt_recording rec;
	record_damon(&rec, root);

	struct samples *s = calloc(1, sizeof *s);
	uint64_t size = wt_u64(rec.expect, "size"), page = wt_u64(rec.expect, "page_size");
	read_source(rec.trace, WSPROF_ACCESS_DAMON, "steady", wt_u64(rec.expect, "hot"), wt_u64(rec.expect, "idle"),
		    size, page, s);
	cr_expect(s->sources & WSPROF_SOURCE_DAMON, "no DAMON source (sources %#x, note \"%s\")", s->sources, s->note);
	cr_expect(!strstr(s->note, "DAMON"), "DAMON is there, yet the note says \"%s\"", s->note);
	cr_assert(s->phase_start && s->phase_end, "no \"steady\" phase in the trace");
	size_t n = 0;
	uint64_t seen[256];
	for (size_t i = 0; i < s->nw; i++) {
		const struct window *w = &s->w[i];
		if (w->start < s->phase_start || w->end > s->phase_end)
			continue;
		seen[n++] = w->written;
		cr_expect_geq(w->hot, size, "window ending at %.2f s: %.1f MiB of the hot buffer", w->end / 1e9,
			      w->hot / MIB);
		cr_expect_eq(w->idle, 0, "window ending at %.2f s: the idle buffer reported accessed", w->end / 1e9);
		cr_expect_eq(w->nregions, 1, "window ending at %.2f s: %zu regions, the hot buffer's one expected",
			     w->end / 1e9, w->nregions);
	}
	cr_assert_geq(n, 4, "only %zu DAMON windows inside the 2 s steady phase", n);
	/* One record per window, not one per loop of a thread DAMON no
	 * longer paces (these files answer at once). */
	cr_expect_leq(n, 9, "%zu DAMON windows of 250 ms inside 2 s", n);
	double med = median(seen, n) / MIB;
	cr_expect(med >= 64 && med < 64 * 1.2, "median accessed per window %.1f MiB, not 64 MiB", med);
	free(s);

	struct wt_result r;
	struct wt_json *w = report_json((const char *[]){ wt_wsprof(), "report", "wss", "--json", rec.trace, NULL }, &r);
	double p50 = (double)wt_u64(w, "percentiles_by_source.damon.p50") / MIB;
	cr_expect(p50 >= 64 * 0.8 && p50 <= 64 * 1.2, "median DAMON working set %.1f MiB, not 64 MiB within 20%%", p50);
	wt_json_free(w);
	wt_result_free(&r);
	struct wt_json *sum = wt_summary(rec.trace, NULL);
	const char *sources[4] = { wt_json_str(sum, "access.sources.0"), wt_json_str(sum, "access.sources.1"),
				   wt_json_str(sum, "access.sources.2"), wt_json_str(sum, "access.sources.3") };
	bool named = false;
	for (int i = 0; i < 4; i++)
		named |= sources[i] && strcmp(sources[i], "DAMON") == 0;
	cr_expect(named, "wsprof report summary does not name DAMON among the sources");
	wt_json_free(sum);

	char pid[32];
	snprintf(pid, sizeof pid, "%llu", (unsigned long long)wt_u64(rec.expect, "pid"));
	expect_damon_file(root, "0/contexts/nr_contexts", "1");
	expect_damon_file(root, "0/contexts/0/operations", "vaddr");
	expect_damon_file(root, "0/contexts/0/monitoring_attrs/intervals/sample_us", "5000");
	expect_damon_file(root, "0/contexts/0/monitoring_attrs/intervals/aggr_us", "250000");
	expect_damon_file(root, "0/contexts/0/monitoring_attrs/nr_regions/max", "1000");
	expect_damon_file(root, "0/contexts/0/targets/nr_targets", "1");
	expect_damon_file(root, "0/contexts/0/targets/0/pid_target", pid);
	expect_damon_file(root, "0/contexts/0/schemes/0/action", "stat");
	expect_damon_file(root, "0/state", "off");
	expect_damon_file(root, "nr_kdamonds", "0");
	wt_recording_free(&rec);
	free(root);
}

Test(access, a_kernel_without_virtual_address_damon_is_named_and_left_as_found)
{
	char *root = damon_tree("0", "paddr", "off");
	struct wt_recording rec;
	record_damon(&rec, root);
	struct samples *s = calloc(1, sizeof *s);
	read_source(rec.trace, WSPROF_ACCESS_DAMON, "steady", 0, 0, 0, 4096, s);
	cr_expect_eq(s->sources & WSPROF_SOURCE_DAMON, 0, "a DAMON source is claimed");
	cr_expect_eq(s->nw, 0, "%zu DAMON records", s->nw);
	cr_expect(strstr(s->note, "DAMON: the kernel has no virtual-address monitoring (it offers: paddr)"),
		  "the note \"%s\" does not say why", s->note);
	expect_damon_file(root, "nr_kdamonds", "0");
	free(s);
	wt_recording_free(&rec);
	free(root);
}

Test(access, a_kdamond_of_someone_else_is_never_touched)
{
	char *root = damon_tree("1", "vaddr paddr", "on");
	struct wt_recording rec;
	record_damon(&rec, root);
	struct samples *s = calloc(1, sizeof *s);
	read_source(rec.trace, WSPROF_ACCESS_DAMON, "steady", 0, 0, 0, 4096, s);
	cr_expect_eq(s->sources & WSPROF_SOURCE_DAMON, 0, "a DAMON source is claimed");
	cr_expect(strstr(s->note, "DAMON: 1 kdamond(s) not started by wsprof exist"), "the note \"%s\" does not say why",
		  s->note);
	expect_damon_file(root, "nr_kdamonds", "1");
	expect_damon_file(root, "0/state", "on");
	expect_damon_file(root, "0/contexts/0/operations", "");
	expect_damon_file(root, "0/contexts/0/targets/0/pid_target", "");
	free(s);
	wt_recording_free(&rec);
	free(root);
}
