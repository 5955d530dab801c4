/*
 * test_model.c - the analyzer's live-set model (analyzer/model/model.c), fed
 * events directly, without a trace file.
 *
 * What is pinned: the counting rules the summary promises (model.h):
 * realloc and mremap are one free plus one allocation with the peak taken
 * on the net change, a failed realloc restores the old block, munmap cuts
 * any part of a mapping and counts a free only for a mapping released
 * whole, a MAP_FIXED mapping releases what it covers, frees of unknown
 * addresses are untracked, and a kind appears only once something of it
 * was allocated. After every event the model's books must balance
 * (wsp_model_check: running totals against the sums over its blocks).
 */
#include "model.h"

#include <criterion/criterion.h>

static struct wsp_model *m;
static uint64_t seq;

static void setup(void)
{
	m = wsp_model_new(NULL);
	seq = 0;
}

static void teardown(void)
{
	wsp_model_free(m);
}

/* The model's books (wsp_model_check) after every event of a test, but
 * every thousandth of a long one. */
static void books(const struct wsp_model *x)
{
	if (seq > 1000 && seq % 1000)
		return;
	const char *broken = wsp_model_check(x);
	cr_assert_null(broken, "after event %llu: %s", (unsigned long long)seq, broken);
}

static void ev(int type, unsigned kind, uint32_t tid, uint64_t addr, uint64_t size)
{
	seq++; /* not inside the initializer: it reads seq too, in no set order */
	wsprof_event e = { .type = type, .kind = kind, .tid = tid, .seq = seq, .time_ns = seq * 10,
			   .addr = addr, .size = size };
	cr_assert_eq(wsp_model_apply(m, NULL, &e), 0);
	books(m);
}

static const struct wsp_kind_stats *heap(void)
{
	return wsp_model_kind(m, WSPROF_KIND_HEAP);
}

static const struct wsp_kind_stats *maps(void)
{
	return wsp_model_kind(m, WSPROF_KIND_MMAP);
}

TestSuite(model, .init = setup, .fini = teardown);

Test(model, allocations_frees_peak_and_leaks)
{
	ev(WSPROF_EV_ALLOC, 0, 1, 0x1000, 100);
	ev(WSPROF_EV_ALLOC, 0, 1, 0x2000, 50);
	ev(WSPROF_EV_FREE, 0, 1, 0x1000, 0);
	ev(WSPROF_EV_ALLOC, 0, 1, 0x3000, 20);
	cr_expect_eq(heap()->allocations, 3);
	cr_expect_eq(heap()->frees, 1);
	cr_expect_eq(heap()->peak_bytes, 150);
	cr_expect_eq(heap()->peak_time_ns, 20);
	cr_expect_eq(heap()->live_bytes, 70);
	cr_expect_eq(heap()->live_blocks, 2);
	cr_expect_eq(heap()->total_bytes, 170);
}

Test(model, realloc_is_a_free_and_an_allocation_with_the_peak_on_the_net_change)
{
	ev(WSPROF_EV_ALLOC, 0, 1, 0x1000, 100);
	ev(WSPROF_EV_MOVE, 0, 1, 0x1000, 0);
	ev(WSPROF_EV_ALLOC, 0, 1, 0x5000, 150);
	cr_expect_eq(heap()->allocations, 2);
	cr_expect_eq(heap()->frees, 1);
	cr_expect_eq(heap()->peak_bytes, 150, "peak %llu: old and new block were counted together",
		     (unsigned long long)heap()->peak_bytes);
	cr_expect_eq(heap()->live_bytes, 150);
	cr_expect_eq(heap()->live_blocks, 1);
}

Test(model, realloc_in_place_still_counts_a_free_and_an_allocation)
{
	ev(WSPROF_EV_ALLOC, 0, 1, 0x1000, 100);
	ev(WSPROF_EV_MOVE, 0, 1, 0x1000, 0);
	ev(WSPROF_EV_ALLOC, 0, 1, 0x1000, 80);
	cr_expect_eq(heap()->allocations, 2);
	cr_expect_eq(heap()->frees, 1);
	cr_expect_eq(heap()->live_bytes, 80);
	cr_expect_eq(heap()->peak_bytes, 100);
}

Test(model, a_failed_realloc_keeps_the_old_block)
{
	ev(WSPROF_EV_ALLOC, 0, 1, 0x1000, 100);
	ev(WSPROF_EV_MOVE, 0, 1, 0x1000, 0);
	ev(WSPROF_EV_FAIL, 0, 1, 0, 1u << 30);
	cr_expect_eq(heap()->failed, 1);
	cr_expect_eq(heap()->frees, 0);
	cr_expect_eq(heap()->live_bytes, 100);
	ev(WSPROF_EV_FREE, 0, 1, 0x1000, 0);
	cr_expect_eq(heap()->frees, 1);
	cr_expect_eq(heap()->live_bytes, 0);
	cr_expect_eq(wsp_model_untracked_frees(m), 0);
}

Test(model, reallocs_in_flight_on_two_threads_stay_apart)
{
	ev(WSPROF_EV_ALLOC, 0, 1, 0x1000, 10);
	ev(WSPROF_EV_ALLOC, 0, 2, 0x2000, 20);
	ev(WSPROF_EV_MOVE, 0, 1, 0x1000, 0);
	ev(WSPROF_EV_MOVE, 0, 2, 0x2000, 0);
	ev(WSPROF_EV_FAIL, 0, 2, 0, 99);
	ev(WSPROF_EV_ALLOC, 0, 1, 0x3000, 30);
	cr_expect_eq(heap()->frees, 1);
	cr_expect_eq(heap()->failed, 1);
	cr_expect_eq(heap()->live_bytes, 50);
	cr_expect_eq(heap()->live_blocks, 2);
}

Test(model, a_free_of_an_unknown_address_is_untracked)
{
	ev(WSPROF_EV_FREE, 0, 1, 0x1000, 0);
	cr_expect_eq(wsp_model_untracked_frees(m), 1);
	cr_expect_eq(heap()->frees, 0);
	cr_expect(!heap()->seen, "a kind with no allocation must not appear");
}

Test(model, an_address_allocated_again_replaces_the_block_whose_free_was_missed)
{
	ev(WSPROF_EV_ALLOC, 0, 1, 0x1000, 100);
	ev(WSPROF_EV_ALLOC, 0, 1, 0x1000, 40);
	cr_expect_eq(heap()->live_bytes, 40);
	cr_expect_eq(heap()->live_blocks, 1);
	cr_expect_eq(heap()->peak_bytes, 100);
}

Test(model, many_blocks_survive_table_growth_and_removal)
{
	for (uint64_t i = 1; i <= 20000; i++)
		ev(WSPROF_EV_ALLOC, 0, 1, i * 16, i);
	for (uint64_t i = 1; i <= 20000; i += 2)
		ev(WSPROF_EV_FREE, 0, 1, i * 16, 0);
	uint64_t odd = 0, even = 0;
	for (uint64_t i = 1; i <= 20000; i++)
		*(i & 1 ? &odd : &even) += i;
	cr_expect_eq(heap()->live_bytes, even);
	cr_expect_eq(heap()->live_blocks, 10000);
	cr_expect_eq(heap()->peak_bytes, odd + even);
	for (uint64_t i = 2; i <= 20000; i += 2)
		ev(WSPROF_EV_FREE, 0, 1, i * 16, 0);
	cr_expect_eq(heap()->live_bytes, 0);
	cr_expect_eq(wsp_model_untracked_frees(m), 0);
}

Test(model, munmap_cuts_a_mapping_and_frees_it_when_nothing_is_left)
{
	ev(WSPROF_EV_ALLOC, 1, 1, 0x10000, 0x4000);
	ev(WSPROF_EV_UNMAP, 1, 1, 0x11000, 0x1000); /* a hole in the middle */
	cr_expect_eq(maps()->live_bytes, 0x3000);
	cr_expect_eq(maps()->live_blocks, 1, "a mapping with a hole is still one mapping");
	cr_expect_eq(maps()->frees, 0);
	ev(WSPROF_EV_UNMAP, 1, 1, 0x13000, 0x1000); /* the right piece */
	cr_expect_eq(maps()->frees, 0);
	ev(WSPROF_EV_UNMAP, 1, 1, 0x10000, 0x4000); /* over the rest, and the hole */
	cr_expect_eq(maps()->live_bytes, 0);
	cr_expect_eq(maps()->live_blocks, 0);
	cr_expect_eq(maps()->frees, 1, "one mapping, one free, when its last piece goes");
	cr_expect_eq(maps()->allocations, 1);
}

Test(model, one_munmap_may_release_several_mappings)
{
	ev(WSPROF_EV_ALLOC, 1, 1, 0x10000, 0x1000);
	ev(WSPROF_EV_ALLOC, 1, 1, 0x12000, 0x1000);
	ev(WSPROF_EV_ALLOC, 1, 1, 0x20000, 0x1000);
	ev(WSPROF_EV_UNMAP, 1, 1, 0x10000, 0x3000);
	cr_expect_eq(maps()->frees, 2);
	cr_expect_eq(maps()->live_bytes, 0x1000);
	ev(WSPROF_EV_UNMAP, 1, 1, 0x50000, 0x1000); /* nothing traced there */
	cr_expect_eq(maps()->frees, 2);
}

Test(model, a_fixed_mapping_replaces_what_it_covers)
{
	ev(WSPROF_EV_ALLOC, 1, 1, 0x10000, 0x4000);
	ev(WSPROF_EV_ALLOC, 1, 1, 0x11000, 0x1000);
	cr_expect_eq(maps()->live_bytes, 0x4000);
	cr_expect_eq(maps()->live_blocks, 2);
	cr_expect_eq(maps()->peak_bytes, 0x4000);
	cr_expect_eq(maps()->frees, 0, "the old mapping keeps two pieces");
	ev(WSPROF_EV_ALLOC, 1, 1, 0x10000, 0x4000); /* over all of both */
	cr_expect_eq(maps()->frees, 2);
	cr_expect_eq(maps()->live_blocks, 1);
}

Test(model, mremap_moves_a_mapping)
{
	ev(WSPROF_EV_ALLOC, 1, 1, 0x10000, 0x2000);
	ev(WSPROF_EV_MOVE, 1, 1, 0x10000, 0x2000);
	ev(WSPROF_EV_ALLOC, 1, 1, 0x40000, 0x8000);
	cr_expect_eq(maps()->allocations, 2);
	cr_expect_eq(maps()->frees, 1);
	cr_expect_eq(maps()->live_bytes, 0x8000);
	cr_expect_eq(maps()->peak_bytes, 0x8000);
}

Test(model, a_failed_mremap_keeps_the_mapping)
{
	ev(WSPROF_EV_ALLOC, 1, 1, 0x10000, 0x2000);
	ev(WSPROF_EV_MOVE, 1, 1, 0x10000, 0x2000);
	cr_expect_eq(maps()->live_blocks, 0);
	ev(WSPROF_EV_FAIL, 1, 1, 0, 1ull << 40);
	cr_expect_eq(maps()->failed, 1);
	cr_expect_eq(maps()->live_bytes, 0x2000);
	cr_expect_eq(maps()->live_blocks, 1);
	ev(WSPROF_EV_UNMAP, 1, 1, 0x10000, 0x2000);
	cr_expect_eq(maps()->frees, 1);
}

Test(model, a_mapping_at_the_start_of_an_old_one_is_a_mapping_of_its_own)
{
	ev(WSPROF_EV_ALLOC, 1, 1, 0x10000, 0x4000);
	ev(WSPROF_EV_UNMAP, 1, 1, 0x10000, 0x1000); /* the old one's head */
	ev(WSPROF_EV_ALLOC, 1, 1, 0x10000, 0x1000); /* a new one in the hole, at the old one's start */
	cr_expect_eq(maps()->live_blocks, 2);
	ev(WSPROF_EV_UNMAP, 1, 1, 0x11000, 0x3000); /* the old one's last piece */
	cr_expect_eq(maps()->frees, 1, "the old mapping is gone");
	cr_expect_eq(maps()->live_blocks, 1);
	ev(WSPROF_EV_UNMAP, 1, 1, 0x10000, 0x1000);
	cr_expect_eq(maps()->frees, 2);
	cr_expect_eq(maps()->live_blocks, 0);
}

Test(model, an_empty_mapping_and_a_block_at_address_0_are_damage_and_ignored)
{
	ev(WSPROF_EV_ALLOC, 1, 1, 0x10000, 0x4000);
	ev(WSPROF_EV_ALLOC, 1, 1, 0x12000, 0); /* inside the mapping, empty */
	ev(WSPROF_EV_ALLOC, 0, 1, 0, 64);      /* 0 marks an empty slot of the heap table */
	cr_expect_eq(maps()->allocations, 1);
	cr_expect_eq(heap()->allocations, 0);
	cr_expect_eq(heap()->live_bytes, 0);
}

Test(model, forks_and_exec_are_remembered)
{
	wsprof_event f = { .type = WSPROF_EV_FORK, .child_pid = 4242, .seq = 1 };
	wsprof_event x = { .type = WSPROF_EV_EXEC, .path = "/bin/true", .seq = 2 };
	cr_assert_eq(wsp_model_apply(m, NULL, &f), 0);
	cr_assert_eq(wsp_model_apply(m, NULL, &x), 0);
	const uint32_t *kids;
	cr_assert_eq(wsp_model_children(m, &kids), 1);
	cr_expect_eq(kids[0], 4242);
	cr_expect_str_eq(wsp_model_exec(m), "/bin/true");
}

/* ---- per-stack figures ------------------------------------------------ */

static struct wsp_model *ms;

static void setup_sites(void)
{
	struct wsp_model_options opt = { .per_stack = true };
	ms = wsp_model_new(&opt);
	seq = 0;
}

static void teardown_sites(void)
{
	wsp_model_free(ms);
}

static void sev(int type, uint32_t tid, uint64_t addr, uint64_t size, uint64_t stack)
{
	seq++;
	wsprof_event e = { .type = type, .kind = WSPROF_KIND_HEAP, .tid = tid, .seq = seq, .time_ns = seq,
			   .addr = addr, .size = size, .stack = stack };
	cr_assert_eq(wsp_model_apply(ms, NULL, &e), 0);	books(ms);
}

struct site_table {
	struct wsp_site_stats s[8];
	size_t n;
};

static void collect(const struct wsp_site_stats *s, void *arg)
{
	struct site_table *t = arg;
	if (t->n < 8)
		t->s[t->n++] = *s;
}

static struct wsp_site_stats site(uint64_t stack)
{
	struct site_table t = { .n = 0 };
	wsp_model_each_site(ms, collect, &t);
	for (size_t i = 0; i < t.n; i++)
		if (t.s[i].stack == stack)
			return t.s[i];
	cr_assert_fail("no figures for stack %llu", (unsigned long long)stack);
	return t.s[0];
}

TestSuite(sites, .init = setup_sites, .fini = teardown_sites);

Test(sites, bytes_at_the_peak_are_what_each_stack_held_then)
{
	sev(WSPROF_EV_ALLOC, 1, 0x1000, 100, 7);  /* live 100 */
	sev(WSPROF_EV_ALLOC, 1, 0x2000, 50, 8);   /* live 150: the peak */
	sev(WSPROF_EV_FREE, 1, 0x1000, 0, 0);     /* 50 */
	sev(WSPROF_EV_ALLOC, 1, 0x3000, 20, 8);   /* 70 */
	cr_expect_eq(site(7).peak_bytes, 100);
	cr_expect_eq(site(8).peak_bytes, 50, "stack 8 held 50 at the peak, 70 now");
	cr_expect_eq(site(8).leaked_bytes, 70);
	cr_expect_eq(site(8).leaked_blocks, 2);
	sev(WSPROF_EV_ALLOC, 1, 0x4000, 200, 8);  /* 270: a new peak */
	cr_expect_eq(site(7).peak_bytes, 0);
	cr_expect_eq(site(8).peak_bytes, 270);
	cr_expect_eq(site(8).allocations, 3);
	cr_expect_eq(site(8).bytes, 270);
}

Test(sites, a_block_freed_before_its_thread_allocates_again_is_temporary)
{
	sev(WSPROF_EV_ALLOC, 1, 0x1000, 10, 7);
	sev(WSPROF_EV_FREE, 1, 0x1000, 0, 0);      /* temporary */
	sev(WSPROF_EV_ALLOC, 1, 0x2000, 10, 7);
	sev(WSPROF_EV_ALLOC, 1, 0x3000, 10, 8);
	sev(WSPROF_EV_FREE, 1, 0x2000, 0, 0);      /* not: thread 1 allocated since */
	sev(WSPROF_EV_ALLOC, 2, 0x4000, 10, 7);    /* another thread's allocation does not count */
	sev(WSPROF_EV_FREE, 1, 0x3000, 0, 0);      /* temporary, freed by any thread */
	cr_expect_eq(site(7).temporary, 1);
	cr_expect_eq(site(8).temporary, 1);
}

Test(sites, a_realloc_right_after_the_allocation_makes_the_old_block_temporary)
{
	sev(WSPROF_EV_ALLOC, 1, 0x1000, 10, 7);
	sev(WSPROF_EV_MOVE, 1, 0x1000, 0, 0);
	sev(WSPROF_EV_ALLOC, 1, 0x2000, 20, 8);
	cr_expect_eq(site(7).temporary, 1);
	cr_expect_eq(site(7).leaked_bytes, 0);
	cr_expect_eq(site(8).leaked_bytes, 20);
	cr_expect_eq(site(8).temporary, 0);
}

Test(sites, failures_count_for_their_stack)
{
	sev(WSPROF_EV_FAIL, 1, 0, 1u << 30, 9);
	cr_expect_eq(site(9).failed, 1);
	cr_expect_eq(site(9).allocations, 0);
}

/* ---- annotations: truly in use ------------------------------------------ */

static void ann(unsigned op, uint32_t tid, uint64_t addr, const char *text)
{
	seq++;
	wsprof_event e = { .type = WSPROF_EV_ANNOTATE, .op = op, .tid = tid, .seq = seq, .time_ns = seq,
			   .addr = addr, .text = text };
	cr_assert_eq(wsp_model_apply(m, NULL, &e), 0);	books(m);
}

Test(model, acquire_and_release_make_a_block_collectable)
{
	ev(WSPROF_EV_ALLOC, 0, 1, 0x1000, 100);
	ev(WSPROF_EV_ALLOC, 0, 1, 0x2000, 50);
	ann(WSPROF_ANN_ACQUIRE, 1, 0x1000, NULL);
	ann(WSPROF_ANN_ACQUIRE, 1, 0x1000, NULL);
	ann(WSPROF_ANN_RELEASE, 1, 0x1000, NULL);
	cr_expect_eq(heap()->collectable_bytes, 0, "still held once");
	ann(WSPROF_ANN_RELEASE, 1, 0x1000, NULL);
	cr_expect_eq(heap()->collectable_bytes, 100, "no holder after a release");
	cr_expect_eq(heap()->in_use_peak_bytes, 150);
	ev(WSPROF_EV_ALLOC, 0, 1, 0x3000, 30);       /* live 180, of which 100 collectable */
	cr_expect_eq(heap()->peak_bytes, 180);
	cr_expect_eq(heap()->collectable_at_peak, 100);
	cr_expect_eq(heap()->in_use_peak_bytes, 150, "in use stayed at 150 (80 now)");
	ann(WSPROF_ANN_ACQUIRE, 1, 0x1000, NULL);    /* held again: in use 180 */
	cr_expect_eq(heap()->collectable_bytes, 0);
	cr_expect_eq(heap()->in_use_peak_bytes, 180);
	ann(WSPROF_ANN_RELEASE, 1, 0x1000, NULL);
	ev(WSPROF_EV_FREE, 0, 1, 0x1000, 0);         /* a collectable block goes */
	cr_expect_eq(heap()->collectable_bytes, 0);
	cr_expect_eq(heap()->live_bytes, 80);
}

Test(model, valid_keeps_a_block_in_use_and_invalid_lets_it_go)
{
	ev(WSPROF_EV_ALLOC, 0, 1, 0x1000, 100);
	ann(WSPROF_ANN_VALID, 1, 0x1000, NULL);
	cr_expect_eq(heap()->collectable_bytes, 0);
	ann(WSPROF_ANN_ACQUIRE, 1, 0x1000, NULL);
	ann(WSPROF_ANN_INVALID, 1, 0x1000, NULL);
	cr_expect_eq(heap()->collectable_bytes, 0, "invalid but held");
	ann(WSPROF_ANN_RELEASE, 1, 0x1000, NULL);
	cr_expect_eq(heap()->collectable_bytes, 100, "invalid and nobody holds it");
	ann(WSPROF_ANN_VALID, 1, 0x1000, NULL);
	cr_expect_eq(heap()->collectable_bytes, 0, "valid again");
}

struct live_name {
	const char *name;
	int64_t refs;
};

static void note_name(const struct wsp_block *b, void *arg)
{
	const struct wsp_ann_state *st = wsp_model_ann(m, b);
	struct live_name *g = arg;
	if (st) {
		g->name = st->name;
		g->refs = st->refs;
	}
}

Test(model, names_and_touches_do_not_change_what_is_in_use)
{
	ev(WSPROF_EV_ALLOC, 0, 1, 0x1000, 100);
	ann(WSPROF_ANN_NAME, 1, 0x1000, "weights");
	ann(WSPROF_ANN_TOUCH, 1, 0x1000, NULL);
	cr_expect_eq(heap()->collectable_bytes, 0);
	struct live_name got = { NULL, -1 };
	wsp_model_each_live(m, note_name, &got);
	cr_expect_str_eq(got.name, "weights");
	cr_expect_eq(got.refs, 0);
}

Test(model, interior_pointers_reach_their_block_and_unknown_ones_are_counted)
{
	ev(WSPROF_EV_ALLOC, 0, 1, 0x10000, 0x1000);
	ev(WSPROF_EV_ALLOC, 0, 1, 0x20000, 0x100);
	ann(WSPROF_ANN_ACQUIRE, 1, 0x10800, NULL);   /* inside the first block */
	ann(WSPROF_ANN_RELEASE, 1, 0x10fff, NULL);   /* its last byte */
	cr_expect_eq(heap()->collectable_bytes, 0x1000);
	ann(WSPROF_ANN_ACQUIRE, 1, 0x11000, NULL);   /* just past it */
	ann(WSPROF_ANN_ACQUIRE, 1, 0x5, NULL);
	cr_expect_eq(wsp_model_unknown_annotations(m), 2);
	ev(WSPROF_EV_ALLOC, 0, 1, 0x30000, 0x100);   /* blocks made after interior lookups began */
	ann(WSPROF_ANN_INVALID, 1, 0x30010, NULL);
	cr_expect_eq(heap()->collectable_bytes, 0x1100);
	ev(WSPROF_EV_FREE, 0, 1, 0x10000, 0);
	ann(WSPROF_ANN_ACQUIRE, 1, 0x10800, NULL);   /* freed: unknown now */
	cr_expect_eq(wsp_model_unknown_annotations(m), 3);
	cr_expect_eq(heap()->collectable_bytes, 0x100);
}

static void pool_ev(int type, uint64_t pool, uint64_t addr, uint64_t size)
{
	seq++;
	wsprof_event e = { .type = type, .kind = WSPROF_KIND_POOL, .tid = 1, .seq = seq, .time_ns = seq,
			   .addr = addr, .size = size, .handle = pool,
			   .op = type == WSPROF_EV_ALLOC ? WSPROF_OP_POOL_ALLOC : WSPROF_OP_POOL_FREE };
	cr_assert_eq(wsp_model_apply(m, NULL, &e), 0);	books(m);
}

Test(model, pool_sub_allocations_are_their_own_kind_inside_their_slab)
{
	ev(WSPROF_EV_ALLOC, 0, 1, 0x10000, 0x1000);   /* the slab */
	pool_ev(WSPROF_EV_ALLOC, 0x10000, 0x10000, 0x100); /* at the slab's own address */
	pool_ev(WSPROF_EV_ALLOC, 0x10000, 0x10100, 0x200);
	const struct wsp_kind_stats *pool = wsp_model_kind(m, WSPROF_KIND_POOL);
	cr_expect_eq(pool->live_bytes, 0x300);
	cr_expect_eq(heap()->live_bytes, 0x1000, "the slab keeps its own kind");
	ann(WSPROF_ANN_ACQUIRE, 1, 0x10150, NULL);    /* inside the second sub-allocation */
	ann(WSPROF_ANN_RELEASE, 1, 0x10150, NULL);
	cr_expect_eq(pool->collectable_bytes, 0x200);
	cr_expect_eq(heap()->collectable_bytes, 0);
	pool_ev(WSPROF_EV_FREE, 0x10000, 0x10000, 0);
	cr_expect_eq(pool->frees, 1);
	cr_expect_eq(heap()->live_bytes, 0x1000, "freeing a sub-allocation leaves the slab");
	wsprof_event reset = { .type = WSPROF_EV_ANNOTATE, .op = WSPROF_ANN_POOL_RESET, .tid = 1, .seq = ++seq,
			       .handle = 0x10000 };
	cr_assert_eq(wsp_model_apply(m, NULL, &reset), 0);
	books(m);
	cr_expect_eq(pool->live_bytes, 0);
	cr_expect_eq(pool->frees, 2);
	cr_expect_eq(pool->collectable_bytes, 0);
}

Test(model, phases_nest_per_thread_and_snapshots_are_kept)
{
	ann(WSPROF_ANN_PHASE_PUSH, 1, 0, "epoch 1");
	ann(WSPROF_ANN_PHASE_PUSH, 2, 0, "loader");
	ann(WSPROF_ANN_PHASE_PUSH, 1, 0, "forward");
	ann(WSPROF_ANN_PHASE_POP, 1, 0, NULL);
	ann(WSPROF_ANN_SNAPSHOT, 1, 0, "after forward");
	ann(WSPROF_ANN_PHASE_POP, 1, 0, NULL);
	const struct wsp_phase *p;
	cr_assert_eq(wsp_model_phases(m, &p), 3);
	cr_expect_str_eq(p[2].name, "forward");
	cr_expect_eq(p[2].depth, 1);
	cr_expect_eq(p[1].depth, 0, "another thread's phases nest apart");
	cr_expect(p[0].end_ns > p[2].end_ns);
	cr_expect_eq(p[1].end_ns, 0, "still open");
	const struct wsp_snapshot *s;
	cr_assert_eq(wsp_model_snapshots(m, &s), 1);
	cr_expect_str_eq(s[0].label, "after forward");
}

/* ---- access samples --------------------------------------------------- */

static void access(uint64_t end_ns, uint64_t window_ns, const wsprof_region *r, size_t n)
{
	wsprof_event e = { .type = WSPROF_EV_ACCESS, .op = WSPROF_ACCESS_WRITES, .tid = 9, .seq = ++seq,
			   .time_ns = end_ns, .size = window_ns, .regions = r, .nregions = n };
	cr_assert_eq(wsp_model_apply(m, NULL, &e), 0);
}

static void setup_wss(void)
{
	struct wsp_model_options opt = { .wss_bucket_ns = 100 };
	m = wsp_model_new(&opt);
	seq = 0;
}

TestSuite(access, .init = setup_wss, .fini = teardown);

Test(access, windows_count_each_byte_once_and_split_it_by_kind)
{
	ev(WSPROF_EV_ALLOC, 0, 1, 0x10000, 0x4000);   /* heap */
	ev(WSPROF_EV_ALLOC, 1, 1, 0x80000, 0x2000);   /* mmap */
	const wsprof_region w1[] = { { 0x10000, 0x1000 }, { 0x80000, 0x1000 } };
	const wsprof_region w2[] = { { 0x10000, 0x2000 }, { 0x90000, 0x1000 } }; /* overlaps w1; a page in no block */
	access(150, 50, w1, 2);   /* bucket [100, 200) */
	access(200, 50, w2, 2);   /* same bucket: starts at 150 */
	const wsprof_region w3[] = { { 0x11000, 0x1000 } };
	access(300, 50, w3, 1);   /* starts at 250: a new bucket */
	cr_assert_eq(wsp_model_finish(m), 0);
	const struct wsp_wss_point *p;
	cr_assert_eq(wsp_wss_points(wsp_model_wss(m), &p), 2);
	cr_expect_eq(p[0].bytes[WSPROF_ACCESS_WRITES], 0x4000, "0x2000 heap + 0x1000 mmap + 0x1000 elsewhere, once each");
	cr_expect_eq(p[0].kind_bytes[WSPROF_KIND_HEAP], 0x2000);
	cr_expect_eq(p[0].kind_bytes[WSPROF_KIND_MMAP], 0x1000);
	cr_expect_eq(p[0].unattributed_bytes, 0x1000);
	cr_expect_eq(p[1].bytes[WSPROF_ACCESS_WRITES], 0x1000);
}

struct last_access {
	uint64_t heap, maps;
};

static void note_last(const struct wsp_block *b, void *arg)
{
	struct last_access *l = arg;
	*(b->kind == WSPROF_KIND_HEAP ? &l->heap : &l->maps) = b->last_access_ns;
}

Test(access, blocks_remember_when_they_were_last_accessed)
{
	ev(WSPROF_EV_ALLOC, 0, 1, 0x10000, 0x4000);
	ev(WSPROF_EV_ALLOC, 1, 1, 0x80000, 0x2000);
	const wsprof_region a[] = { { 0x13000, 0x8000 } }; /* the heap block's tail, and beyond */
	access(500, 100, a, 1);
	const wsprof_region b[] = { { 0x81000, 0x10 } };
	access(700, 100, b, 1);
	struct last_access got = { 1, 1 };
	wsp_model_each_live(m, note_last, &got);
	cr_expect_eq(got.heap, 500);
	cr_expect_eq(got.maps, 700);
}

/* Each live block's access figures, by its address (0x1000 + 0x100 i). */
struct seen {
	uint64_t last[30000], bytes[30000];
};

static void note_seen(const struct wsp_block *b, void *arg)
{
	struct seen *s = arg;
	size_t i = (b->addr - 0x1000) / 0x100;
	s->last[i] = b->last_access_ns;
	s->bytes[i] = b->accessed_bytes;
}

/* Enough blocks, allocated out of address order, for the order by address
 * to be laid out again between two windows: each window still reaches
 * every block its pages hold, and only those. */
Test(access, windows_reach_every_block_they_hold_among_many)
{
	enum { FIRST = 20000, ALL = 30000 };
	for (size_t k = 0; k < FIRST; k++) /* a stride prime to FIRST: every place once, out of order */
		ev(WSPROF_EV_ALLOC, 0, 1, 0x1000 + (k * 7919 % FIRST) * 0x100, 0x40);
	const wsprof_region a[] = { { 0x1000 + 5000 * 0x100, 10000 * 0x100 } };
	access(1000000, 100, a, 1);
	for (size_t i = 0; i < FIRST; i += 2) /* half of them go */
		ev(WSPROF_EV_FREE, 0, 1, 0x1000 + i * 0x100, 0);
	for (size_t k = 0; k < ALL - FIRST; k++)
		ev(WSPROF_EV_ALLOC, 0, 1, 0x1000 + (FIRST + k * 7 % (ALL - FIRST)) * 0x100, 0x40);
	const wsprof_region b[] = { { 0x1000 + 12000 * 0x100 + 0x20, 0x100 * 15000 } }; /* from inside a block */
	access(2000000, 100, b, 1);
	static struct seen got;
	memset(&got, 0xff, sizeof got);
	wsp_model_each_live(m, note_seen, &got);
	for (size_t i = 0; i < ALL; i++) {
		if (i < FIRST && i % 2 == 0)
			continue;
		bool in_b = i >= 12000 && i <= 27000, in_a = i >= 5000 && i < 15000 && i < FIRST;
		bool edge = i == 12000 || i == 27000; /* b holds their second half, their first */
		uint64_t last = in_b ? 2000000 : in_a ? 1000000 : 0;
		uint64_t bytes = in_a ? 0x40 : in_b ? (edge ? 0x20 : 0x40) : 0;
		cr_assert_eq(got.last[i], last, "block %zu: last accessed at %llu", i, (unsigned long long)got.last[i]);
		cr_assert_eq(got.bytes[i], bytes, "block %zu: %llu bytes accessed", i, (unsigned long long)got.bytes[i]);
	}
}

Test(access, a_model_with_no_access_figures_matches_nothing_and_keeps_the_rest)
{
	wsp_model_free(m);
	m = wsp_model_new(&(struct wsp_model_options){ .per_stack = true, .no_access_figures = true });
	ev(WSPROF_EV_ALLOC, 0, 1, 0x10000, 0x4000);
	ev(WSPROF_EV_ALLOC, 0, 1, 0x20000, 0x100);
	const wsprof_region a[] = { { 0x10000, 0x20000 } };
	access(500, 100, a, 1);
	ev(WSPROF_EV_FREE, 0, 1, 0x20000, 0);
	cr_assert_eq(wsp_model_finish(m), 0);
	struct last_access got = { 1, 1 };
	wsp_model_each_live(m, note_last, &got);
	cr_expect_eq(got.heap, 0, "not matched");
	cr_expect_eq(heap()->peak_bytes, 0x4100);
	cr_expect_eq(heap()->live_bytes, 0x4000);
	const struct wsp_wss_point *p;
	cr_assert_eq(wsp_wss_points(wsp_model_wss(m), &p), 1);
	cr_expect_eq(p[0].bytes[WSPROF_ACCESS_WRITES], 0x20000, "the working set is counted");
	cr_expect_eq(p[0].unattributed_bytes, 0x20000, "and not split by kind");
}

Test(access, a_touch_annotation_is_an_access)
{
	ev(WSPROF_EV_ALLOC, 2, 1, 0x7f0000000000ull, 0x100000); /* device memory wsprof cannot watch */
	wsprof_event t = { .type = WSPROF_EV_ANNOTATE, .op = WSPROF_ANN_TOUCH, .tid = 1, .seq = ++seq, .time_ns = 150,
			   .addr = 0x7f0000000000ull + 0x1000, .size = 0x2000 };
	cr_assert_eq(wsp_model_apply(m, NULL, &t), 0);
	cr_assert_eq(wsp_model_finish(m), 0);
	const struct wsp_wss_point *p;
	cr_assert_eq(wsp_wss_points(wsp_model_wss(m), &p), 1);
	cr_expect_eq(p[0].bytes[WSPROF_ACCESS_ANNOTATED], 0x2000);
	cr_expect_eq(p[0].kind_bytes[WSPROF_KIND_CUDA_DEVICE], 0x2000);
}
