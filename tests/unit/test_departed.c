/*
 * test_departed.c - blocks freed a short while ago (analyzer/model/departed.c),
 * and the model's use of them: a window's accesses go to the blocks live
 * during it, a block freed in it included.
 *
 * What is pinned: one block is kept per address (the one freed later takes
 * the place, the other is let go); pruning lets go of exactly the blocks
 * that ended before the time given; a region finds, in address order, the
 * blocks live at some moment of a window that overlap it, big blocks
 * reaching over small ones included, and no block outside the window; in
 * the model, a window's written bytes in a block freed during the window
 * go to its kind and its site, each byte once, the live block first, and
 * nothing goes to a block that ended before the window or began after it.
 */
#include "departed.h"
#include "model.h"
#include "wss.h"

#include <criterion/criterion.h>
#include <string.h>

/* ---- the table ---- */

static uint64_t let_go_addrs[16];
static size_t nlet_go;

static void let_go(struct wsp_departed_block *d, void *arg)
{
	(void)arg;
	if (nlet_go < 16)
		let_go_addrs[nlet_go] = d->b.addr;
	nlet_go++;
}

static struct wsp_block block(uint64_t addr, uint64_t size, uint64_t born)
{
	return (struct wsp_block){ .addr = addr, .size = size, .time_ns = born };
}

struct seen {
	uint64_t addr[16], lo[16], hi[16];
	size_t n;
};

static void see(struct wsp_departed_block *d, uint64_t lo, uint64_t hi, void *arg)
{
	struct seen *s = arg;
	cr_assert_lt(s->n, 16);
	s->addr[s->n] = d->b.addr;
	s->lo[s->n] = lo;
	s->hi[s->n++] = hi;
}

Test(departed, a_block_freed_at_an_address_takes_the_place_of_the_one_before)
{
	nlet_go = 0;
	struct wsp_departed *d = wsp_departed_new(let_go, NULL);
	struct wsp_block a = block(0x1000, 100, 10), b = block(0x1000, 200, 30);
	cr_assert_eq(wsp_departed_add(d, &a, 20), 0);
	cr_assert_eq(wsp_departed_add(d, &b, 40), 0);
	cr_expect_eq(nlet_go, 1, "the first block is let go when the second takes its address");
	cr_expect_eq(let_go_addrs[0], 0x1000);
	struct seen s = { 0 };
	cr_assert_eq(wsp_departed_each_overlap(d, 0, 100, 0x1000, 300, see, &s), 0);
	cr_assert_eq(s.n, 1);
	cr_expect_eq(s.hi[0] - s.lo[0], 200, "the block kept is the later one");
	wsp_departed_free(d);
}

Test(departed, pruning_lets_go_of_what_ended_before_the_time_given)
{
	nlet_go = 0;
	struct wsp_departed *d = wsp_departed_new(let_go, NULL);
	for (uint64_t i = 0; i < 3000; i++) {
		struct wsp_block b = block(0x10000 + i * 64, 32, i);
		cr_assert_eq(wsp_departed_add(d, &b, 1000 + i), 0);
	}
	wsp_departed_prune(d, 2500, 0);
	cr_expect_eq(nlet_go, 1500, "%zu let go, not the 1500 that ended before 2500", nlet_go);
	struct seen s = { 0 };
	cr_assert_eq(wsp_departed_each_overlap(d, 0, 10000, 0x10000, 64 * 1500, see, &s), 0);
	cr_expect_eq(s.n, 0, "a block let go is still found");
	cr_assert_eq(wsp_departed_each_overlap(d, 0, 10000, 0x10000 + 64 * 1500, 64, see, &s), 0);
	cr_expect_eq(s.n, 1, "the first block kept is not found");
	wsp_departed_prune(d, 2501, 1000);
	cr_expect_eq(nlet_go, 1500, "a prune sooner than `every` after the last one swept the table");
	wsp_departed_free(d);
}

Test(departed, a_region_finds_the_blocks_of_its_window_in_address_order)
{
	struct wsp_departed *d = wsp_departed_new(let_go, NULL);
	struct wsp_block big = block(0x1000, 0x4000, 100);  /* [0x1000, 0x5000), 100..200 */
	struct wsp_block small = block(0x2000, 0x10, 150); /* inside big's old range, 150..220 */
	struct wsp_block early = block(0x6000, 0x100, 0);  /* ended at 50: before the window */
	struct wsp_block late = block(0x7000, 0x100, 400); /* born after the window */
	cr_assert_eq(wsp_departed_add(d, &big, 200), 0);
	cr_assert_eq(wsp_departed_add(d, &small, 220), 0);
	cr_assert_eq(wsp_departed_add(d, &early, 50), 0);
	cr_assert_eq(wsp_departed_add(d, &late, 450), 0);
	struct seen s = { 0 };
	cr_assert_eq(wsp_departed_each_overlap(d, 100, 300, 0x1800, 0x8000, see, &s), 0);
	cr_assert_eq(s.n, 2, "%zu blocks, not big and small", s.n);
	cr_expect_eq(s.addr[0], 0x1000);
	cr_expect_eq(s.lo[0], 0x1800, "clipped to the region");
	cr_expect_eq(s.hi[0], 0x5000);
	cr_expect_eq(s.addr[1], 0x2000);
	memset(&s, 0, sizeof s);
	cr_assert_eq(wsp_departed_each_overlap(d, 100, 300, 0x2008, 4, see, &s), 0);
	cr_expect_eq(s.n, 2, "a region inside small is inside big too");
	wsp_departed_free(d);
}

/* ---- the model ---- */

static struct wsp_model *m;
static uint64_t seq;

static void ev(int type, uint64_t t_ms, uint64_t addr, uint64_t size, uint64_t stack)
{
	seq++;
	wsprof_event e = { .type = type, .kind = WSPROF_KIND_HEAP, .tid = 1, .seq = seq, .time_ns = t_ms * 1000000,
			   .addr = addr, .size = size, .stack = stack };
	cr_assert_eq(wsp_model_apply(m, NULL, &e), 0);
}

/* Written pages of the window ending at t_ms (100 ms long). */
static void window(uint64_t t_ms, uint64_t addr, uint64_t len)
{
	seq++;
	wsprof_region r = { addr, len };
	wsprof_event e = { .type = WSPROF_EV_ACCESS, .op = WSPROF_ACCESS_WRITES, .tid = 2, .seq = seq,
			   .time_ns = t_ms * 1000000, .size = 100000000, .regions = &r, .nregions = 1 };
	cr_assert_eq(wsp_model_apply(m, NULL, &e), 0);
}

static uint64_t site_accessed[8];

static void collect(const struct wsp_site_stats *s, void *arg)
{
	(void)arg;
	if (s->stack < 8)
		site_accessed[s->stack] = s->accessed_bytes;
}

static const struct wsp_wss_point *points(size_t *n)
{
	const struct wsp_wss_point *p;
	*n = wsp_wss_points(wsp_model_wss(m), &p);
	return p;
}

static void setup(void)
{
	m = wsp_model_new(&(struct wsp_model_options){ .per_stack = true, .wss_bucket_ns = 100000000 });
	seq = 0;
	memset(site_accessed, 0, sizeof site_accessed);
}

static void teardown(void)
{
	wsp_model_free(m);
}

TestSuite(window_blocks, .init = setup, .fini = teardown);

Test(window_blocks, a_block_freed_during_a_window_keeps_what_the_window_saw_of_it)
{
	ev(WSPROF_EV_ALLOC, 110, 0x10000, 0x2000, 1); /* a temporary: 110..150 ms */
	ev(WSPROF_EV_FREE, 150, 0x10000, 0, 0);
	window(100, 0x90000, 0x1000);                 /* [0, 100]: before it */
	window(200, 0x10000, 0x3000);                 /* [100, 200]: its bytes and 0x1000 past them */
	cr_assert_eq(wsp_model_finish(m), 0);
	size_t n;
	const struct wsp_wss_point *p = points(&n);
	cr_assert_eq(n, 2);
	cr_expect_eq(p[0].kind_bytes[WSPROF_KIND_HEAP], 0, "the window before the block saw nothing of it");
	cr_expect_eq(p[1].kind_bytes[WSPROF_KIND_HEAP], 0x2000, "the window of the block: its 8 KiB are the heap's");
	cr_expect_eq(p[1].unattributed_bytes, 0x1000);
	wsp_model_each_site(m, collect, NULL);
	cr_expect_eq(site_accessed[1], 0x2000, "its site: %#llx accessed", (unsigned long long)site_accessed[1]);
}

Test(window_blocks, each_byte_goes_once_the_live_block_first)
{
	ev(WSPROF_EV_ALLOC, 110, 0x10000, 0x2000, 1); /* freed during the window */
	ev(WSPROF_EV_FREE, 120, 0x10000, 0, 0);
	ev(WSPROF_EV_ALLOC, 130, 0x11000, 0x2000, 2); /* live over its second half and past it */
	ev(WSPROF_EV_ALLOC, 210, 0x20000, 0x1000, 3); /* born after the window ended */
	window(200, 0x10000, 0x3000);
	window(300, 0x20000, 0);                      /* closes the bucket */
	cr_assert_eq(wsp_model_finish(m), 0);
	size_t n;
	const struct wsp_wss_point *p = points(&n);
	cr_assert_geq(n, 1);
	cr_expect_eq(p[0].kind_bytes[WSPROF_KIND_HEAP], 0x3000, "heap %#llx: not each byte once",
		     (unsigned long long)p[0].kind_bytes[WSPROF_KIND_HEAP]);
	cr_expect_eq(p[0].unattributed_bytes, 0);
	wsp_model_each_site(m, collect, NULL);
	cr_expect_eq(site_accessed[1], 0x2000, "the freed block may have been accessed whole");
	cr_expect_eq(site_accessed[2], 0x2000);
	cr_expect_eq(site_accessed[3], 0, "a block born after the window saw nothing of it");
}

Test(window_blocks, a_block_freed_before_a_window_is_not_its)
{
	ev(WSPROF_EV_ALLOC, 10, 0x10000, 0x2000, 1);
	ev(WSPROF_EV_FREE, 20, 0x10000, 0, 0);
	window(100, 0x90000, 0x1000);
	window(300, 0x10000, 0x2000); /* [200, 300]: long after it */
	cr_assert_eq(wsp_model_finish(m), 0);
	size_t n;
	const struct wsp_wss_point *p = points(&n);
	cr_assert_eq(n, 2);
	cr_expect_eq(p[1].kind_bytes[WSPROF_KIND_HEAP], 0);
	cr_expect_eq(p[1].unattributed_bytes, 0x2000);
	wsp_model_each_site(m, collect, NULL);
	cr_expect_eq(site_accessed[1], 0);
}
