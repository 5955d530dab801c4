/*
 * sampler.c - which memory the program writes, window by window, and how
 * much of it is resident.
 *
 * One thread of wsprof's own wakes every window (WSPROF_WINDOW_MS) and
 * records the resident set (/proc/self/statm) and, where the kernel allows,
 * the pages written since the previous window:
 *
 *   written pages (Linux >= 6.7, unprivileged): the program's writable
 *   private anonymous mappings are registered with a userfaultfd in
 *   asynchronous write-protect mode. A write to a protected page costs one
 *   minor fault, which the kernel resolves by itself (nothing is delivered
 *   to us), and leaves the page unprotected. Every window, the PAGEMAP_SCAN
 *   ioctl on /proc/self/pagemap returns the unprotected pages, all reported
 *   written, and protects at most WSPROF_WP_PAGES of them again, in the
 *   same call that reports them. Page granular; reads are invisible.
 *
 *   The budget bounds the cost: each page protected again costs the
 *   program at most one fault in the next window, whatever it writes.
 *   A window in which the process had less CPU time than wall time (a
 *   loaded machine) gets the budget in proportion, at least 64 pages.
 *   When the unprotected pages fit in it, all are protected again and each
 *   window is exact. When they do not, the budget goes round them in
 *   address order, window after window, from where the last one ran out:
 *   the rest stay unprotected and are reported written in every window
 *   until their turn comes. That is the approximation: a page left
 *   unprotected is assumed still hot, so a page that went cold is seen so
 *   within ceil(unprotected pages / budget) windows, not at once, and the
 *   working set is over-counted by the pages that went cold since.
 *
 * Mappings come and go, so /proc/self/maps is read again every window: new
 * ranges are registered, and their present pages that are not the zero
 * page are counted as written in this window before they are armed (in
 * fresh anonymous memory, present means written since it appeared: what
 * arming the range at once would have shown; a registration reports every
 * page written, so only presence tells); a range moved by mremap loses its
 * registration and is registered again at its new address, counted the
 * same way (an upper bound: its pages moved with it); a range replaced in
 * place is found by the scan refusing it (PM_SCAN_CHECK_WPASYNC), counted
 * so from where the scan got to, and registered and armed again at once.
 *
 * Memory written and given back within one window is gone before the
 * window is scanned: the hooks read it as it goes (wsp_sampler_release,
 * "memory given back" below).
 *
 * Not registered: file mappings, shared memory, the main [stack],
 * [vvar]/[vdso], and wsprof's own memory as far as this file knows it: the
 * sampler's tables and stack, and libwsprof's own data and bss. The kernel
 * merges neighbouring anonymous mappings, so a mapping that holds one page
 * of ours may also hold the program's: ours is cut out page by page, never
 * by skipping the whole mapping. wsprof's other pages (event buffers, the
 * writer's staging and compression workspace, the writer's stack) cannot
 * be told apart from the program's without mem.c keeping a table of them,
 * and show as written memory outside any of the program's allocations.
 *
 * Side effects on the program: one minor fault per page protected again,
 * at most WSPROF_WP_PAGES a window, and, once, one per page it writes of a
 * range just armed (arming is not budgeted: a range registered and left
 * unprotected would report its idle pages as written); a transparent huge
 * page written in part is split; and a range we registered cannot be
 * registered with another userfaultfd (EBUSY) - a program that uses
 * userfaultfd on its own heap should run with WSPROF_ACCESS=0. Without a
 * usable userfaultfd there are no write samples (the trace header says
 * why); that is never the program's failure.
 *
 * Reads and writes, by region (damon.c): where the kernel has DAMON's
 * virtual-address operations and the user may use them (root), a kdamond
 * of wsprof's own watches the process and this thread reads its regions
 * once per aggregation window, which then paces the thread. Both sources
 * are recorded when both are there: written pages are exact, DAMON's
 * regions see reads.
 *
 * Reentrancy: the sampler thread holds its guard for its whole life, so
 * what it causes passes untraced, and sets wsp_tls.writing while it
 * records, so it never waits for a buffer. Its state is its own: probe()
 * runs before the thread starts, reset_after_fork() in a child where the
 * thread does not exist. Nothing here calls malloc or stdio.
 */

#include "access.h"
#include "base.h"
#include "core.h"
#include "wsprof/trace.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- the kernel interface, for headers older than Linux 6.7 ----------
 * Transcribed from include/uapi/linux/userfaultfd.h and fs.h. */
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef PAGEMAP_SCAN
struct page_region {
	__u64 start;
	__u64 end; /* exclusive */
	__u64 categories;
};

struct pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};

#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PM_SCAN_WP_MATCHING (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
#define PAGE_IS_WRITTEN (1 << 1)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#define PAGE_IS_PFNZERO (1 << 5)
#endif

unsigned wsp_access_sources;
char wsp_access_note[256];

#define STACK_SIZE (256u << 10)   /* the sampler's stack, static TLS included */
#define VEC_LEN 4096              /* page regions per PAGEMAP_SCAN call */
#define STORE_CAP 65536           /* written regions held before they are bounded */
#define RECORD_REGIONS 4096       /* regions per ACCESS record: 80 KiB of a 128 KiB buffer */
#define MAPS_MIN (256u << 10)
#define MAPS_MAX (64u << 20)
#define TABLE_MIN 1024

struct span {
	uint64_t start, end;
	bool fresh; /* registered this window, not yet armed: its present pages are new */
};

/* Descriptors, kept high and close-on-exec; -1 when closed. */
static int uffd = -1, pagemap = -1, maps_fd = -1, statm_fd = -1;
static struct stat pagemap_id, maps_id, statm_id;
static uint64_t page_size = 4096;

/* wsprof's own memory, cut out of what is registered: sorted by start. */
enum own_slot { OWN_STACK, OWN_MAPS, OWN_TRACKED, OWN_NEXT, OWN_VEC, OWN_STORE, OWN_GAPS, OWN_DAMON, OWN_IMAGE, OWN_MAX = OWN_IMAGE + 8 };
static struct span own[OWN_MAX];        /* by slot; empty when start == end */
static struct span own_sorted[OWN_MAX];
static size_t nown_sorted;

static char *maps_buf;
static size_t maps_cap;
/* Ranges registered and armed, sorted, neighbours joined. */
static struct span *tracked, *next_tracked;
static size_t ntracked, nnext, tracked_cap;
static struct page_region *vec;
static struct wsp_range *store; /* this window's written regions, sorted */
static size_t nstore;
static uint64_t *gaps;
static struct wsp_range *damon_store; /* this window's regions DAMON saw accessed */
static void *stack;

static uint64_t last_scan_ns; /* 0 until the first window has armed everything */
static bool warned;

static void warn_once(const char *what, int err)
{
	if (warned)
		return;
	warned = true;
	wsp_warn("access sampling: %s (%s); written pages are no longer recorded, the program goes on", what,
		 wsp_strerror(err));
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- wsprof's own memory --------------------------------------------- */

static void own_sort(void)
{
	nown_sorted = 0;
	for (size_t i = 0; i < OWN_MAX; i++) {
		if (own[i].start == own[i].end)
			continue;
		size_t k = nown_sorted++;
		for (; k && own_sorted[k - 1].start > own[i].start; k--)
			own_sorted[k] = own_sorted[k - 1];
		own_sorted[k] = own[i];
	}
}

static void own_set(enum own_slot slot, const void *p, size_t len)
{
	uint64_t a = (uintptr_t)p & ~(page_size - 1);
	own[slot] = (struct span){ a, p ? ((uintptr_t)p + len + page_size - 1) & ~(page_size - 1) : a, false };
	own_sort();
}

/* Pages of our own, in whatever memory wsp_pages_alloc gives. */
static void *own_alloc(enum own_slot slot, size_t len)
{
	void *p = wsp_pages_alloc(len);
	if (p)
		own_set(slot, p, len);
	return p;
}

static void own_free(enum own_slot slot, void *p, size_t len)
{
	wsp_pages_free(p, len);
	own_set(slot, NULL, 0);
}

/* libwsprof's writable segments: its data, and the bss the loader maps
 * anonymously after it (the sampler's statics among them). */
static int find_image(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size, (void)arg;
	uintptr_t mine = (uintptr_t)&uffd;
	bool found = false;
	for (int i = 0; i < info->dlpi_phnum && !found; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		found = ph->p_type == PT_LOAD && mine >= a && mine < a + ph->p_memsz;
	}
	if (!found)
		return 0;
	size_t slot = OWN_IMAGE;
	for (int i = 0; i < info->dlpi_phnum && slot < OWN_MAX; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
			const void *a = (const void *)(info->dlpi_addr + ph->p_vaddr);
			own_set((enum own_slot)slot++, a, ph->p_memsz);
		}
	}
	return 1;
}

/* ---- userfaultfd and PAGEMAP_SCAN ------------------------------------- */

/* One PAGEMAP_SCAN: pages written (and, with flags, re-protected), at
 * most max_pages of them reported (0: no limit; only with out). */
static long pm_scan_fd(int fd, uint64_t start, uint64_t end, uint64_t flags, struct page_region *out,
		       size_t out_len, uint64_t max_pages, uint64_t *walk_end)
{
	struct pm_scan_arg arg = {
		.size = sizeof arg,
		.flags = flags,
		.start = start,
		.end = end,
		.vec = (uintptr_t)out,
		.vec_len = out ? out_len : 0,
		.max_pages = max_pages,
		.category_mask = PAGE_IS_WRITTEN,
		.return_mask = out ? PAGE_IS_WRITTEN | PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_PFNZERO : 0,
	};
	long n = ioctl(fd, PAGEMAP_SCAN, &arg);
	if (walk_end)
		*walk_end = arg.walk_end;
	return n;
}

static long pm_scan(uint64_t start, uint64_t end, uint64_t flags, struct page_region *out, size_t out_len,
		    uint64_t max_pages, uint64_t *walk_end)
{
	return pm_scan_fd(pagemap, start, end, flags, out, out_len, max_pages, walk_end);
}

/* A page PAGEMAP_SCAN reported written that holds data the program put
 * there: in memory or swapped out, and not the shared zero page (which a
 * read of untouched memory maps). */
static bool holds_writes(const struct page_region *r)
{
	return (r->categories & (PAGE_IS_PRESENT | PAGE_IS_SWAPPED)) && !(r->categories & PAGE_IS_PFNZERO);
}

/* Where to go on after a PAGEMAP_SCAN of [.., end) that returned n regions
 * into v; full: it filled v or reached its max_pages, so it may have
 * stopped early. A walk that completes after more than one of the
 * kernel's internal chunks leaves walk_end where the last chunk began
 * (Linux 6.7 to 6.18 at least), so a scan that did not stop early went to
 * the end, and one that did is past its last region whatever walk_end
 * says: scanning a report-only range again from walk_end would report its
 * pages twice. */
static uint64_t scan_resume(const struct page_region *v, long n, bool full, uint64_t walk_end, uint64_t end)
{
	if (!full)
		return end;
	uint64_t last = n > 0 ? v[n - 1].end : walk_end;
	return walk_end > last ? walk_end : last;
}

/* Write-protect every page of a range, reporting nothing. Unpopulated
 * pages get markers (WP_UNPOPULATED), so the page a later read fault maps
 * comes protected and only a write counts. */
static bool arm(uint64_t start, uint64_t end)
{
	return pm_scan(start, end, PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC, NULL, 0, 0, NULL) >= 0;
}

static int uffd_register(uint64_t start, uint64_t end)
{
	struct uffdio_register reg = { .range = { .start = start, .len = end - start }, .mode = UFFDIO_REGISTER_MODE_WP };
	return ioctl(uffd, UFFDIO_REGISTER, &reg) == 0 ? 0 : -errno;
}

static const char *errno_reason(const char *what, int err)
{
	static char why[160];
	snprintf(why, sizeof why, "%s (%s)", what, wsp_strerror(err));
	return why;
}

static int open_high(const char *path, struct stat *id)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	fd = wsp_fd_move_high(fd);
	fstat(fd, id);
	return fd;
}

/* Still the file we opened: a program that closes descriptors it does not
 * own must not have us read, or aim ioctls at, whatever reuses the number. */
static bool same_file(int fd, const struct stat *id)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == id->st_dev && st.st_ino == id->st_ino;
}

/* Open the userfaultfd and the pagemap, and see them work on a page of our
 * own: registered, armed, written once, scanned. @return NULL, or why not. */
static const char *writes_open(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0) {
		int err = errno;
		if (err == ENOSYS)
			return "this kernel has no userfaultfd";
		if (err == EINVAL)
			return "this kernel is too old (needs Linux 6.7)";
		if (err == EPERM || err == EACCES)
			return errno_reason("userfaultfd not permitted", err);
		return errno_reason("cannot create a userfaultfd", err);
	}
	uffd = wsp_fd_move_high(fd);
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED };
	if (ioctl(uffd, UFFDIO_API, &api) != 0 || !(api.features & UFFD_FEATURE_WP_ASYNC))
		return "this kernel lacks asynchronous write-protection (needs Linux 6.7)";
	pagemap = open_high("/proc/self/pagemap", &pagemap_id);
	if (pagemap < 0)
		return errno_reason("cannot open /proc/self/pagemap", errno);

	const char *why = NULL;
	uint8_t *page = wsp_pages_alloc(page_size);
	struct page_region found[2];
	int err;
	if (!page)
		why = "out of memory";
	else if ((err = uffd_register((uintptr_t)page, (uintptr_t)page + page_size)) < 0)
		why = errno_reason("cannot register memory with userfaultfd", -err);
	else if (!arm((uintptr_t)page, (uintptr_t)page + page_size))
		why = errno == ENOTTY || errno == EINVAL ? "this kernel lacks PAGEMAP_SCAN (needs Linux 6.7)"
							 : errno_reason("PAGEMAP_SCAN failed", errno);
	else {
		*(volatile uint8_t *)page = 1;
		long n = pm_scan((uintptr_t)page, (uintptr_t)page + page_size, PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
				 found, 2, 0, NULL);
		if (n != 1 || !(found[0].categories & PAGE_IS_PRESENT))
			why = "PAGEMAP_SCAN did not see a test write";
	}
	wsp_pages_free(page, page_size);
	return why;
}

void wsp_sampler_probe(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	page_size = ps > 0 ? (uint64_t)ps : 4096;
	wsp_access_note[0] = 0;
	if (!wsp_cfg.access) {
		wsp_access_sources = WSPROF_SOURCE_ANNOTATIONS;
		snprintf(wsp_access_note, sizeof wsp_access_note, "access sampling off (WSPROF_ACCESS=0)");
		return;
	}
	/* Kernel launches are the CUDA hooks' to record, where there is CUDA. */
	wsp_access_sources = WSPROF_SOURCE_ANNOTATIONS | WSPROF_SOURCE_KERNEL_LAUNCHES;
	const char *why = writes_open();
	if (!why) {
		wsp_access_sources |= WSPROF_SOURCE_WRITES;
	} else {
		close_fd(&uffd);
		close_fd(&pagemap);
	}
	char damon_why[160];
	const char *damon = wsp_damon_open(damon_why, sizeof damon_why);
	if (!damon)
		wsp_access_sources |= WSPROF_SOURCE_DAMON;
	if (why && damon)
		snprintf(wsp_access_note, sizeof wsp_access_note, "written pages: %s; DAMON: %s", why, damon);
	else if (why)
		snprintf(wsp_access_note, sizeof wsp_access_note, "written pages: %s", why);
	else if (damon)
		snprintf(wsp_access_note, sizeof wsp_access_note, "DAMON: %s", damon);
}

/* ---- memory given back ------------------------------------------------ *
 * A block written and given back within one window (a large malloc's
 * mmap, a mapping the program unmaps, heap top glibc trims) is gone before
 * the window is scanned. The hooks read its pages just before they let it
 * go, with a pagemap descriptor of their own, and record those holding
 * writes as an ACCESS of written pages with a window of 0: at that moment,
 * of that block. A page reads as written when it was written since it was
 * last armed, or, unarmed (memory new since the last window), since it
 * appeared. At most WSPROF_RELEASE_PAGES pages are read per window, taken
 * by whichever threads release first; past that a release is not read.
 *
 * Reentrancy: called from hooks with the guard held. Lock-free: an ioctl
 * on a descriptor that is never closed while the hooks may use it (it is
 * switched off instead; a forked child, alone then, closes its parent's),
 * a budget counter, and the caller's stack for the regions. */
#define RELEASE_VEC 64
#define RELEASE_REGIONS 16

_Atomic int wsp_release_fd = -1;         /* -1: off */
static int release_kept = -1;            /* wsp_release_fd's descriptor, on or off */
static _Atomic int64_t release_left;     /* pages still to be read this window */

static void release_budget_renew(void)
{
	atomic_store_explicit(&release_left, (int64_t)wsp_cfg.release_pages, memory_order_relaxed);
}

/* [start, end) into out, which holds at most RELEASE_REGIONS: when full,
 * the two neighbours closest together are joined (the gap counts as
 * written: an upper bound for a block written in many scattered places). */
static size_t release_add(struct wsp_range *out, size_t n, uint64_t start, uint64_t end)
{
	if (n && out[n - 1].start + out[n - 1].len == start) {
		out[n - 1].len = end - out[n - 1].start;
		return n;
	}
	if (n == RELEASE_REGIONS) {
		size_t best = 0;
		uint64_t gap = UINT64_MAX;
		for (size_t i = 0; i + 1 < n; i++) {
			uint64_t g = out[i + 1].start - (out[i].start + out[i].len);
			if (g < gap)
				gap = g, best = i;
		}
		uint64_t last_gap = start - (out[n - 1].start + out[n - 1].len);
		if (last_gap <= gap) {
			out[n - 1].len = end - out[n - 1].start;
			return n;
		}
		out[best].len = out[best + 1].start + out[best + 1].len - out[best].start;
		memmove(&out[best + 1], &out[best + 2], (n - best - 2) * sizeof *out);
		n--;
	}
	out[n++] = (struct wsp_range){ start, end - start };
	return n;
}

void wsp_sampler_release(uint64_t addr, uint64_t len)
{
	int fd = atomic_load_explicit(&wsp_release_fd, memory_order_acquire);
	if (fd < 0 || !len || addr + len < addr)
		return;
	uint64_t start = addr & ~(page_size - 1), end = (addr + len + page_size - 1) & ~(page_size - 1);
	int64_t pages = (int64_t)((end - start) / page_size);
	if (atomic_fetch_sub_explicit(&release_left, pages, memory_order_relaxed) < pages) {
		atomic_fetch_add_explicit(&release_left, pages, memory_order_relaxed);
		return; /* this window's budget is spent */
	}
	struct page_region v[RELEASE_VEC];
	struct wsp_range out[RELEASE_REGIONS];
	size_t n = 0;
	for (uint64_t at = start; at < end;) {
		uint64_t walk_end = end;
		long got = pm_scan_fd(fd, at, end, 0, v, RELEASE_VEC, 0, &walk_end);
		if (got < 0)
			break;
		for (long i = 0; i < got; i++) {
			uint64_t a = v[i].start > addr ? v[i].start : addr, b = v[i].end < addr + len ? v[i].end : addr + len;
			if (holds_writes(&v[i]) && b > a)
				n = release_add(out, n, a, b);
		}
		uint64_t next = scan_resume(v, got, got == RELEASE_VEC, walk_end, end);
		if (next <= at)
			break;
		at = next;
	}
	if (n)
		wsp_record_access(WSPROF_ACCESS_WRITES, 0, out, n);
}

/* Heap blocks are sized with the allocator's own malloc_usable_size, and
 * only when it comes from the same library as the malloc it sizes: a
 * program's allocator without one would have glibc's read a header that
 * is not there. */
static void release_check_sizer(void)
{
	/* Once, as recording starts (no wsprof lock held). */
	uintptr_t a, b;
	if (wsp_real.malloc_usable_size &&
	    (!wsp_object_at((void *)wsp_real.malloc, &a, NULL) ||
	     !wsp_object_at((void *)wsp_real.malloc_usable_size, &b, NULL) || a != b))
		wsp_real.malloc_usable_size = NULL;
}

/* The hooks read released memory while written pages are watched. */
static void release_start(void)
{
	if (!wsp_cfg.release_pages)
		return; /* WSPROF_RELEASE_PAGES=0: the hooks do nothing for a release */
	release_check_sizer();
	if (release_kept < 0 && pagemap >= 0) {
		int fd = dup(pagemap);
		release_kept = fd >= 0 ? wsp_fd_move_high(fd) : -1;
	}
	if (release_kept < 0)
		return;
	release_budget_renew();
	atomic_store_explicit(&wsp_release_fd, release_kept, memory_order_release);
}

/* Off, with the descriptor left open: a hook may be using it now. */
static void release_stop(void)
{
	atomic_store(&wsp_release_fd, -1);
}

/* ---- the program's mappings ------------------------------------------- */

/* The whole of /proc/self/maps, NUL-terminated. @return its length, or -1. */
static long maps_read(void)
{
	for (;;) {
		if (!maps_buf) {
			maps_cap = maps_cap ? maps_cap : MAPS_MIN;
			if (!(maps_buf = own_alloc(OWN_MAPS, maps_cap)))
				return -1;
		}
		if (lseek(maps_fd, 0, SEEK_SET) < 0)
			return -1;
		size_t n = 0;
		ssize_t r;
		while (n < maps_cap - 1 && (r = read(maps_fd, maps_buf + n, maps_cap - 1 - n)) != 0) {
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return -1;
			n += (size_t)r;
		}
		if (n < maps_cap - 1) {
			maps_buf[n] = 0;
			return (long)n;
		}
		if (maps_cap >= MAPS_MAX) {
			errno = EFBIG;
			return -1;
		}
		own_free(OWN_MAPS, maps_buf, maps_cap);
		maps_buf = NULL;
		maps_cap *= 2;
	}
}

static uint64_t parse_hex(const char **s)
{
	uint64_t v = 0;
	for (;; (*s)++) {
		char c = **s;
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
			   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
		if (d == 16)
			return v;
		v = v * 16 + d;
	}
}

static const char *skip_field(const char *s)
{
	while (*s == ' ')
		s++;
	while (*s && *s != ' ' && *s != '\n')
		s++;
	return s;
}

/* A line of /proc/self/maps: the program's memory we can watch is
 * writable, private and anonymous - no file (inode 0), and no name but
 * the brk heap's or one the program gave (PR_SET_VMA_ANON_NAME). The main
 * [stack], [vvar], [vdso] and their kind are left alone. @return the next
 * line; *ok tells whether [start, end) is a candidate. */
static const char *maps_line(const char *s, uint64_t *start, uint64_t *end, bool *ok)
{
	*start = parse_hex(&s);
	s += *s == '-';
	*end = parse_hex(&s);
	while (*s == ' ')
		s++;
	bool rw_private = s[0] && s[1] == 'w' && s[2] && s[3] == 'p';
	s = skip_field(s); /* perms */
	s = skip_field(s); /* offset */
	s = skip_field(s); /* device */
	while (*s == ' ')
		s++;
	bool no_inode = s[0] == '0' && (s[1] == ' ' || s[1] == '\n' || !s[1]);
	s = skip_field(s); /* inode */
	while (*s == ' ')
		s++;
	const char *name = s;
	while (*s && *s != '\n')
		s++;
	size_t namelen = (size_t)(s - name);
	bool anonymous = namelen == 0 || (namelen == 6 && memcmp(name, "[heap]", 6) == 0) ||
			 (namelen > 6 && memcmp(name, "[anon:", 6) == 0);
	*ok = rw_private && no_inode && anonymous && *end > *start;
	return *s ? s + 1 : s;
}

/* Room for one more entry in next_tracked: both tables grow together. */
static bool tables_grow(void)
{
	size_t cap = tracked_cap ? tracked_cap * 2 : TABLE_MIN, old = tracked_cap * sizeof(struct span);
	struct span *t = wsp_pages_alloc(cap * sizeof(struct span));
	struct span *n = wsp_pages_alloc(cap * sizeof(struct span));
	if (!t || !n) {
		wsp_pages_free(t, cap * sizeof(struct span));
		wsp_pages_free(n, cap * sizeof(struct span));
		return false;
	}
	if (old) {
		memcpy(t, tracked, ntracked * sizeof(struct span));
		memcpy(n, next_tracked, nnext * sizeof(struct span));
		wsp_pages_free(tracked, old);
		wsp_pages_free(next_tracked, old);
	}
	tracked = t;
	next_tracked = n;
	tracked_cap = cap;
	own[OWN_TRACKED] = (struct span){ (uintptr_t)t, (uintptr_t)t + cap * sizeof(struct span), false };
	own_set(OWN_NEXT, n, cap * sizeof(struct span));
	return true;
}

/* Append [a, b) to next_tracked, joining a neighbour of the same freshness. */
static bool track(uint64_t a, uint64_t b, bool fresh)
{
	if (nnext && next_tracked[nnext - 1].end == a && next_tracked[nnext - 1].fresh == fresh) {
		next_tracked[nnext - 1].end = b;
		return true;
	}
	if (nnext == tracked_cap && !tables_grow())
		return false; /* the rest waits for a later window */
	next_tracked[nnext++] = (struct span){ a, b, fresh };
	return true;
}

/* A range no longer (or never) registered: register it now, arm it when
 * this window is scanned (scan_fresh), which first counts what the
 * program wrote in it since it appeared. A range another userfaultfd owns
 * (EBUSY) or the kernel refuses is tried again next window - it may have
 * changed. */
static void track_new(uint64_t a, uint64_t b)
{
	if (uffd_register(a, b) == 0)
		track(a, b, true);
}

/* [start, end) of one mapping, minus our own pages, against what is
 * tracked (from index *ti on, both sorted). */
static void reconcile_piece(uint64_t s, uint64_t e, size_t *ti)
{
	while (*ti < ntracked && tracked[*ti].end <= s)
		(*ti)++;
	uint64_t cur = s;
	for (size_t k = *ti; k < ntracked && tracked[k].start < e; k++) {
		uint64_t a = tracked[k].start > s ? tracked[k].start : s;
		uint64_t b = tracked[k].end < e ? tracked[k].end : e;
		if (a > cur)
			track_new(cur, a);
		track(a, b, false);
		cur = b;
	}
	if (cur < e)
		track_new(cur, e);
}

static void reconcile_mapping(uint64_t start, uint64_t end, size_t *ti)
{
	uint64_t cur = start;
	for (size_t i = 0; i < nown_sorted && cur < end; i++) {
		if (own_sorted[i].end <= cur || own_sorted[i].start >= end)
			continue;
		if (own_sorted[i].start > cur)
			reconcile_piece(cur, own_sorted[i].start, ti);
		cur = own_sorted[i].end;
	}
	if (cur < end)
		reconcile_piece(cur, end, ti);
}

/* Bring the tracked ranges in line with the mappings there are now. */
static bool reconcile(void)
{
	if (maps_read() < 0)
		return false;
	nnext = 0;
	size_t ti = 0;
	for (const char *s = maps_buf; *s;) {
		uint64_t start, end;
		bool ok;
		s = maps_line(s, &start, &end, &ok);
		if (ok)
			reconcile_mapping(start, end, &ti);
	}
	struct span *t = tracked;
	tracked = next_tracked;
	next_tracked = t;
	struct span o = own[OWN_TRACKED];
	own[OWN_TRACKED] = own[OWN_NEXT];
	own[OWN_NEXT] = o;
	ntracked = nnext;
	return true;
}

/* ---- written regions --------------------------------------------------- */

/* The k-th smallest of v[0..n) (0-based), reordering v: quickselect with
 * a three-way partition, as gaps are often equal. */
static uint64_t select_kth(uint64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n;
	while (hi - lo > 1) {
		uint64_t pivot = v[lo + (hi - lo) / 2], t;
		size_t lt = lo, i = lo, gt = hi;
		while (i < gt) {
			if (v[i] < pivot)
				t = v[lt], v[lt++] = v[i], v[i++] = t;
			else if (v[i] > pivot)
				t = v[--gt], v[gt] = v[i], v[i] = t;
			else
				i++;
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return pivot;
	}
	return v[lo];
}

/* At most `max` regions: join the neighbours separated by the smallest
 * gaps. A joined region counts its gap's bytes as written, so a bounded
 * window over-counts; the bound is what keeps the cost of a window (and
 * the size of its record) fixed however scattered the writes. */
static void bound_regions(size_t max)
{
	if (nstore <= max)
		return;
	size_t merges = nstore - max;
	for (size_t i = 0; i + 1 < nstore; i++)
		gaps[i] = store[i + 1].start - (store[i].start + store[i].len);
	uint64_t limit = select_kth(gaps, nstore - 1, merges - 1);
	size_t below = 0;
	for (size_t i = 0; i + 1 < nstore; i++)
		below += store[i + 1].start - (store[i].start + store[i].len) < limit;
	size_t at_limit = merges - below; /* gaps equal to the limit that are joined too */
	size_t out = 0;
	for (size_t i = 1; i < nstore; i++) {
		struct wsp_range *last = &store[out];
		uint64_t gap = store[i].start - (last->start + last->len);
		bool join = gap < limit || (gap == limit && at_limit && at_limit--);
		if (join)
			last->len = store[i].start + store[i].len - last->start;
		else
			store[++out] = store[i];
	}
	nstore = out + 1;
}

static void store_add(uint64_t start, uint64_t end)
{
	if (nstore && store[nstore - 1].start + store[nstore - 1].len == start) {
		store[nstore - 1].len = end - store[nstore - 1].start;
		return;
	}
	if (nstore == STORE_CAP)
		bound_regions(wsp_cfg.max_regions);
	store[nstore++] = (struct wsp_range){ start, end - start };
}

/* This window's budget of pages to write-protect again (WSPROF_WP_PAGES).
 * It goes round the written pages in address order, window after window:
 * from the cursor up first, then from the lowest range up to the cursor.
 * The ranges are walked in address order, so the part below the cursor,
 * walked first, is given what the part above will not take. */
static struct {
	uint64_t cursor; /* where it starts: where the last window's ran out, 0 if it did not */
	uint64_t left;   /* pages it may still protect in the part being walked */
	uint64_t above;  /* pages it keeps for the part from the cursor up */
	bool crossed;    /* the walk is past the cursor: `above` is in `left` */
	uint64_t stop_below, stop_above; /* where it ran out in either part; 0 if it did not */
} wp;

static uint64_t region_pages(const struct page_region *r)
{
	return (r->end - r->start) / page_size;
}


/* How many pages of the tracked ranges from `from` up are written and
 * unprotected, counted up to `max`. Changes nothing; a refused range is
 * left to the walk that follows. */
static uint64_t count_written_from(uint64_t from, uint64_t max)
{
	uint64_t found = 0;
	for (size_t i = 0; i < ntracked && found < max; i++) {
		uint64_t start = tracked[i].start > from ? tracked[i].start : from, end = tracked[i].end;
		while (start < end && found < max) {
			uint64_t walk_end = end;
			long n = pm_scan(start, end, PM_SCAN_CHECK_WPASYNC, vec, VEC_LEN, max - found, &walk_end);
			if (n < 0)
				break;
			for (long k = 0; k < n; k++)
				found += region_pages(&vec[k]);
			uint64_t next = scan_resume(vec, n, n == VEC_LEN || found >= max, walk_end, end);
			if (next <= start)
				break;
			start = next;
		}
	}
	return found;
}

/* Collect the pages of [start, end) written and not protected since, and
 * protect the first wp.left of them again, in the same ioctl that reports
 * them (a write between the two would be lost otherwise); the rest are
 * reported and left unprotected. Counted: pages in memory or swapped out.
 * Not counted, though protected again within the budget: pages dropped
 * since (MADV_DONTNEED: the kernel reports them written, not present) and
 * zero-page mappings (only ever read). A page dropped and read again within
 * one window still counts where the kernel backs the read with a fresh
 * page: nothing tells it from a write. *stop: where the budget ran out, if
 * it did here. @return 0 or -errno (EPERM: part of the range is no longer
 * registered). */
static int scan_piece(uint64_t start, uint64_t end, uint64_t *stop)
{
	while (start < end) {
		bool protect = wp.left > 0; /* max_pages 0 would be no limit */
		uint64_t walk_end = end;
		long n = pm_scan(start, end, PM_SCAN_CHECK_WPASYNC | (protect ? PM_SCAN_WP_MATCHING : 0), vec, VEC_LEN,
				 wp.left, &walk_end);
		if (n < 0)
			return errno == EINTR ? 0 : -errno;
		for (long i = 0; i < n; i++) {
			uint64_t pages = region_pages(&vec[i]);
			if (protect)
				wp.left -= pages < wp.left ? pages : wp.left;
			if (holds_writes(&vec[i]))
				store_add(vec[i].start, vec[i].end);
		}
		uint64_t next = scan_resume(vec, n, n == VEC_LEN || (protect && !wp.left), walk_end, end);
		if (protect && !wp.left && !*stop)
			*stop = next;
		if (next <= start)
			break;
		start = next;
	}
	return 0;
}

/* Report the pages of [start, end) that hold writes, changing nothing.
 * Where the range is not armed - new since the last window, or replaced
 * in place - every page reads as written, and a present page that is not
 * the zero page was written since the range appeared: the pages a window
 * scan would have found had it been armed at once. Where it is armed,
 * the written pages are those not protected again. Not budgeted: arming
 * follows, which costs the program one fault per page it writes again. */
static void scan_report(uint64_t start, uint64_t end)
{
	while (start < end) {
		uint64_t walk_end = end;
		long n = pm_scan(start, end, 0, vec, VEC_LEN, 0, &walk_end);
		if (n < 0)
			return;
		for (long i = 0; i < n; i++)
			if (holds_writes(&vec[i]))
				store_add(vec[i].start, vec[i].end);
		uint64_t next = scan_resume(vec, n, n == VEC_LEN, walk_end, end);
		if (next <= start)
			return;
		start = next;
	}
}

/* A range registered this window: what it holds counted (not in the first
 * window, which has no start), then armed. @return false if it could not
 * be armed (it is then registered again, as new, next window). */
static bool scan_fresh(struct span *r, bool count)
{
	if (count)
		scan_report(r->start, r->end);
	r->fresh = false;
	return arm(r->start, r->end);
}

/* One tracked range: its part below the cursor, then its part above. */
static int scan_range(uint64_t start, uint64_t end)
{
	uint64_t mid = wp.cursor < start ? start : wp.cursor > end ? end : wp.cursor;
	int err = scan_piece(start, mid, &wp.stop_below);
	if (err || mid == end)
		return err;
	if (!wp.crossed) {
		wp.left += wp.above;
		wp.crossed = true;
	}
	return scan_piece(mid, end, &wp.stop_above);
}

/* Share out the window's budget: what the pages from the cursor up take,
 * the part above keeps; the part below gets the rest. */
/* The budget of a window the program had the CPU for part of: a program
 * starved of CPU (a loaded machine) would otherwise spend more of what it
 * gets on faults, the same number in less time. */
static uint64_t last_cpu_ns; /* the process's CPU time at the last window; 0: none yet */

static uint64_t window_budget(uint64_t window_ns)
{
	struct timespec ts;
	uint64_t budget = wsp_cfg.wp_pages;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return budget;
	uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, used = cpu - last_cpu_ns;
	bool first = !last_cpu_ns;
	last_cpu_ns = cpu;
	if (first || !window_ns || used >= window_ns)
		return budget;
	budget = budget * used / window_ns;
	return budget < 64 ? 64 : budget;
}

static void budget_start(uint64_t window_ns)
{
	uint64_t budget = window_budget(window_ns);
	wp.above = wp.cursor ? count_written_from(wp.cursor, budget) : budget;
	wp.left = budget - wp.above;
	wp.crossed = false;
	wp.stop_below = wp.stop_above = 0;
}

/* Where the next window's budget starts: past the last page this one
 * protected, in the order it goes round; the lowest range when every
 * written page is protected again. */
static void budget_end(void)
{
	wp.cursor = wp.stop_below ? wp.stop_below : wp.stop_above;
}

/* A window's regions of one source: consecutive records when they are
 * more than one holds. */
static void record_regions(unsigned source, uint64_t window_ns, const struct wsp_range *r, size_t count)
{
	wsp_tls.writing = true;
	size_t i = 0;
	do {
		size_t n = count - i < RECORD_REGIONS ? count - i : RECORD_REGIONS;
		wsp_record_access(source, window_ns, r + i, n);
		i += n;
	} while (i < count);
	wsp_tls.writing = false;
}

static void record_written(uint64_t window_ns)
{
	bound_regions(wsp_cfg.max_regions);
	record_regions(WSPROF_ACCESS_WRITES, window_ns, store, nstore);
}

static void stop_writes(const char *what, int err)
{
	release_stop();
	warn_once(what, err);
	close_fd(&uffd); /* the kernel drops every registration with it */
	close_fd(&pagemap);
}

/* Register and arm what is new in the maps. @return false if written
 * pages can no longer be watched. */
static bool writes_follow_maps(void)
{
	if (!same_file(pagemap, &pagemap_id) || !same_file(maps_fd, &maps_id)) {
		stop_writes("its descriptors were closed by the program", EBADF);
		return false;
	}
	if (!vec) {
		vec = own_alloc(OWN_VEC, VEC_LEN * sizeof *vec);
		store = own_alloc(OWN_STORE, STORE_CAP * sizeof *store);
		gaps = own_alloc(OWN_GAPS, STORE_CAP * sizeof *gaps);
		if (!vec || !store || !gaps) {
			stop_writes("out of memory", ENOMEM);
			return false;
		}
	}
	if (!reconcile()) {
		stop_writes("cannot read /proc/self/maps", errno);
		return false;
	}
	return true;
}

/* One window: the maps followed, each range scanned (or, new, counted
 * and armed), the written regions recorded. The first window only
 * registers and arms: nothing was watched before it. (Arming at once
 * instead would cost a forked child that is about to exec a walk of all
 * the memory it inherited.) */
static void sample_writes(void)
{
	if (!writes_follow_maps())
		return;
	uint64_t now = wsp_now_ns(), since = last_scan_ns;
	last_scan_ns = now;
	release_budget_renew();
	nstore = 0;
	if (since)
		budget_start(now - since);
	size_t kept = 0;
	for (size_t i = 0; i < ntracked; i++) {
		struct span r = tracked[i];
		if (r.fresh) {
			if (scan_fresh(&r, since != 0))
				tracked[kept++] = r;
			continue;
		}
		if (!since) {
			tracked[kept++] = r;
			continue;
		}
		/* Refused: a mapping was replaced in place (mmap MAP_FIXED, munmap
		 * and mmap again) and is not registered. What it holds from where
		 * the scan got to is counted as in a fresh range, and it is
		 * registered and armed again, watched from the next window on;
		 * forgotten if that fails, to be tried again when the maps are
		 * read. */
		size_t before = nstore;
		if (scan_range(r.start, r.end) == 0) {
			tracked[kept++] = r;
			continue;
		}
		uint64_t from = nstore > before ? store[nstore - 1].start + store[nstore - 1].len : r.start;
		scan_report(from > r.start ? from : r.start, r.end);
		if (uffd_register(r.start, r.end) == 0 && arm(r.start, r.end))
			tracked[kept++] = r;
	}
	ntracked = kept;
	if (!since)
		return; /* the first window only arms: nothing was watched before it */
	budget_end();
	record_written(now - since);
}

/* ---- DAMON ------------------------------------------------------------- */

/* One aggregation window's regions from our kdamond; blocks until the
 * window ends. A kdamond that stopped (someone turned it off) ends the
 * source, with one warning. */
static void sample_damon(void)
{
	if (!damon_store && !(damon_store = own_alloc(OWN_DAMON, STORE_CAP * sizeof *damon_store))) {
		warn_once("DAMON: out of memory", ENOMEM);
		wsp_damon_close();
		return;
	}
	long n = wsp_damon_sample(damon_store, STORE_CAP);
	if (n < 0) {
		warn_once("DAMON stopped", (int)-n);
		wsp_damon_close();
		return;
	}
	record_regions(WSPROF_ACCESS_DAMON, (uint64_t)wsp_cfg.window_ms * 1000000u, damon_store, (size_t)n);
}

/* ---- resident set ------------------------------------------------------ */

static void sample_rss(void)
{
	char text[128];
	ssize_t n = same_file(statm_fd, &statm_id) ? pread(statm_fd, text, sizeof text - 1, 0) : -1;
	if (n <= 0)
		return;
	text[n] = 0;
	const char *s = text;
	while (*s && *s != ' ')
		s++;
	uint64_t pages = 0;
	for (s += *s == ' '; *s >= '0' && *s <= '9'; s++)
		pages = pages * 10 + (uint64_t)(*s - '0');
	wsp_tls.writing = true;
	wsp_record_rss(pages * page_size);
	wsp_tls.writing = false;
}

/* ---- the thread -------------------------------------------------------- */

static void deadline_add(struct timespec *t, unsigned ms)
{
	uint64_t ns = (uint64_t)t->tv_nsec + (uint64_t)ms * 1000000u;
	t->tv_sec += (time_t)(ns / 1000000000u);
	t->tv_nsec = (long)(ns % 1000000000u);
}

/* The sampler thread's kernel id while it may run on its stack. */
static _Atomic pid_t sampler_tid;

void wsp_sampler_wait_gone(unsigned timeout_ms)
{
	pid_t tid = atomic_load(&sampler_tid);
	char task[64];
	snprintf(task, sizeof task, "/proc/self/task/%d", (int)tid);
	struct timespec ms = { 0, 1000000 };
	for (unsigned waited = 0; tid && waited < timeout_ms && access(task, F_OK) == 0; waited++)
		nanosleep(&ms, NULL);
	atomic_store(&sampler_tid, 0);
}

static void *sampler_main(void *arg)
{
	(void)arg;
	wsp_tls.guard = 1; /* nothing this thread does is the program's */
	atomic_store(&sampler_tid, gettid());
	dl_iterate_phdr(find_image, NULL);
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (atomic_load(&wsp_state) == WSP_ACTIVE) {
		deadline_add(&next, wsp_cfg.window_ms);
		/* DAMON answers once its aggregation window ends, which then
		 * sets the pace; whatever answers sooner waits for the deadline. */
		if (wsp_damon_active())
			sample_damon();
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		if (atomic_load(&wsp_state) != WSP_ACTIVE)
			break;
		if (uffd >= 0)
			sample_writes();
		sample_rss();
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec + 1) /* far behind (stopped, swapped): no catching up */
			next = now;
	}
	/* Recording stopped while the program goes on: let go of its memory. */
	release_stop();
	close_fd(&uffd);
	close_fd(&pagemap);
	wsp_damon_close();
	return NULL;
}

void wsp_sampler_start(void)
{
	if (uffd >= 0 && maps_fd < 0)
		maps_fd = open_high("/proc/self/maps", &maps_id);
	if (uffd >= 0 && maps_fd < 0) {
		wsp_warn("access sampling: cannot open /proc/self/maps (%s); written pages are not recorded",
			 wsp_strerror(errno));
		close_fd(&uffd);
		close_fd(&pagemap);
	}
	if (statm_fd < 0)
		statm_fd = open_high("/proc/self/statm", &statm_id);

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* A stack of our own, so it is never registered. A program with a
	 * lot of static TLS (which lives on it) gets a bigger one. */
	static const size_t sizes[] = { STACK_SIZE, 32 * STACK_SIZE };
	static size_t stack_len;
	int err = EAGAIN;
	pthread_t th;
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes && err; i++) {
		if (stack_len < sizes[i]) {
			if (stack)
				own_free(OWN_STACK, stack, stack_len);
			stack_len = sizes[i];
			stack = own_alloc(OWN_STACK, stack_len);
		}
		if (!stack)
			break;
		pthread_attr_setstack(&attr, stack, stack_len);
		err = wsp_thread_create(&th, &attr, sampler_main);
	}
	pthread_attr_destroy(&attr);
	if (err) {
		wsp_warn("cannot start the access sampler thread (%s); no access or RSS samples", wsp_strerror(err));
		close_fd(&uffd);
		close_fd(&pagemap);
		return;
	}
	pthread_setname_np(th, "wsprof-sampler");
	if (uffd >= 0)
		release_start();
}

void wsp_sampler_finish(void)
{
	wsp_damon_close();
}

/* Before a later attach's trace: the ranges the last one registered went
 * with its userfaultfd (closed as its thread ended), so none is known. The
 * descriptor of memory given back stays: the hooks may still hold it. */
void wsp_sampler_reset(void)
{
	ntracked = nnext = nstore = 0;
	last_scan_ns = 0;
	last_cpu_ns = 0;
	wp.cursor = 0;
}

/* In a forked child: the descriptors name the parent's memory, and the
 * child's mappings are not registered (no UFFD_FEATURE_EVENT_FORK). The
 * parent's sampler stack and tables, copied into the child, are reused. */
void wsp_sampler_reset_after_fork(void)
{
	release_stop();
	close_fd(&release_kept); /* the parent's memory, not ours */
	close_fd(&uffd);
	close_fd(&pagemap);
	close_fd(&maps_fd);
	close_fd(&statm_fd);
	wsp_damon_forget_after_fork();
	wsp_sampler_reset(); /* a child's CPU clock starts again too */
}
