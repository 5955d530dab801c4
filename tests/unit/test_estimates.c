/*
 * test_estimates.c - the analyzer's estimates from a sampled trace
 * (WSPROF_SAMPLE_BYTES): the probability that an allocation was
 * recorded, the weights the model (analyzer/model/model.c) gives heap blocks,
 * and the sampling rate as the reader takes it from the CONFIG record.
 *
 * What is pinned: a heap block of s bytes stands for s/p bytes (rounded)
 * and for 1/p allocations (a whole number, floor or ceiling, unbiased),
 * the same at its allocation and at its free, so that everything freed
 * leaves nothing live; other kinds are counted exactly; temporary
 * allocations are not estimated; a realloc whose new block was not
 * sampled ends with a FREE of the old address by the same thread, which
 * never frees another thread's block allocated there meanwhile; a trace
 * without the field is not sampled.
 */
#include "model.h"
#include "trace_builder.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#define N 1000 /* the sampling rate of these tests, in bytes */

static struct wsp_model *m;
static uint64_t seq;

static void sampled_model(uint64_t sample_bytes, bool per_stack)
{
	m = wsp_model_new(&(struct wsp_model_options){ .sample_bytes = sample_bytes, .per_stack = per_stack });
	cr_assert(m);
	seq = 0;
}

static void teardown(void)
{
	wsp_model_free(m);
}

static void ev(int type, unsigned kind, unsigned op, uint32_t tid, uint64_t addr, uint64_t size)
{
	seq++;
	wsprof_event e = { .type = type, .kind = kind, .op = op, .tid = tid, .seq = seq, .time_ns = seq * 10,
			   .addr = addr, .size = size, .stack = 7 };
	cr_assert_eq(wsp_model_apply(m, NULL, &e), 0);
}

static const struct wsp_kind_stats *heap(void)
{
	return wsp_model_kind(m, WSPROF_KIND_HEAP);
}

static uint64_t weighed(uint64_t size)
{
	return (uint64_t)llround((double)size / wsp_sample_probability(N, size));
}

TestSuite(estimates, .fini = teardown);

Test(estimates, the_probability_of_a_record_is_one_minus_exp_of_size_over_rate)
{
	sampled_model(0, false);
	cr_expect_eq(wsp_sample_probability(0, 100), 1, "not sampled: every block recorded");
	cr_expect_eq(wsp_sample_probability(1, 100), 1, "one byte: every block recorded");
	cr_expect_float_eq(wsp_sample_probability(N, N), 1 - exp(-1), 1e-12);
	cr_expect_float_eq(wsp_sample_probability(N, 10), -expm1(-10.0 / N), 1e-15);
	cr_expect_eq(wsp_sample_probability(N, 0), wsp_sample_probability(N, 1), "0 bytes count as 1");
	cr_expect(!wsp_model_estimated(m, WSPROF_KIND_HEAP), "a trace that is not sampled is exact");
}

Test(estimates, a_heap_block_stands_for_its_size_over_p_until_it_is_freed)
{
	sampled_model(N, false);
	static const uint64_t sizes[] = { 10, 1000, 100000, 0 };
	uint64_t total = 0;
	for (int i = 0; i < 4; i++) {
		ev(WSPROF_EV_ALLOC, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 1, 0x1000 * (i + 1), sizes[i]);
		total += weighed(sizes[i]);
	}
	cr_expect(wsp_model_estimated(m, WSPROF_KIND_HEAP));
	cr_expect_eq(weighed(10), 1005, "10 bytes at 1 in 1000: about 1005");
	cr_expect_eq(heap()->total_bytes, total);
	cr_expect_eq(heap()->live_bytes, total);
	cr_expect_eq(heap()->peak_bytes, total);
	for (int i = 0; i < 4; i++)
		ev(WSPROF_EV_FREE, WSPROF_KIND_HEAP, WSPROF_OP_FREE, 2, 0x1000 * (i + 1), 0);
	cr_expect_eq(heap()->live_bytes, 0, "the same weight comes off at the free");
	cr_expect_eq(heap()->live_blocks, 0);
	cr_expect_eq(heap()->frees, heap()->allocations);
	cr_expect_eq(heap()->peak_bytes, total);
}

Test(estimates, counts_are_whole_and_unbiased)
{
	sampled_model(N, false);
	const uint64_t blocks = 20000, size = 500;
	double w = 1 / wsp_sample_probability(N, size); /* 2.54: each block counts 2 or 3 */
	uint64_t before = 0;
	for (uint64_t i = 0; i < blocks; i++) {
		ev(WSPROF_EV_ALLOC, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 1 + i % 3, 0x10000 + 64 * i, size);
		uint64_t one = heap()->allocations - before;
		before = heap()->allocations;
		cr_assert(one == 2 || one == 3, "block %llu counts %llu allocations", (unsigned long long)i,
			  (unsigned long long)one);
	}
	/* Each count is floor or ceiling with the odds of the fraction: its
	 * spread is at most 1/2, so the sum is within 5 * sqrt(n / 4). */
	double want = (double)blocks * w;
	cr_expect_leq(fabs((double)heap()->allocations - want), 5 * sqrt((double)blocks / 4),
		      "%llu allocations estimated, %.0f expected", (unsigned long long)heap()->allocations, want);
	cr_expect_eq(heap()->live_blocks, heap()->allocations);
	for (uint64_t i = 0; i < blocks; i++)
		ev(WSPROF_EV_FREE, WSPROF_KIND_HEAP, WSPROF_OP_FREE, 2, 0x10000 + 64 * i, 0);
	cr_expect_eq(heap()->frees, heap()->allocations, "every block counts the same at its free");
	cr_expect_eq(heap()->live_blocks, 0);
}

Test(estimates, other_kinds_are_counted_exactly)
{
	sampled_model(N, false);
	ev(WSPROF_EV_ALLOC, WSPROF_KIND_MMAP, WSPROF_OP_MMAP, 1, 0x100000, 4096);
	const struct wsp_kind_stats *maps = wsp_model_kind(m, WSPROF_KIND_MMAP);
	cr_expect(!wsp_model_estimated(m, WSPROF_KIND_MMAP));
	cr_expect_eq(maps->allocations, 1);
	cr_expect_eq(maps->live_bytes, 4096);
	ev(WSPROF_EV_FAIL, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 1, 0, 1u << 30);
	cr_expect_eq(heap()->failed, 1, "failures are always recorded: never weighed");
}

Test(estimates, a_realloc_ended_by_a_free_frees_only_its_own_old_block)
{
	sampled_model(N, false);
	ev(WSPROF_EV_ALLOC, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 1, 0x1000, 100);
	uint64_t first = heap()->allocations;
	ev(WSPROF_EV_MOVE, WSPROF_KIND_HEAP, WSPROF_OP_REALLOC, 1, 0x1000, 0);
	/* realloc gave the old address back; another thread's sampled block got it */
	ev(WSPROF_EV_ALLOC, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 2, 0x1000, 200);
	ev(WSPROF_EV_FREE, WSPROF_KIND_HEAP, WSPROF_OP_REALLOC, 1, 0x1000, 0); /* the new block: not sampled */
	cr_expect_eq(heap()->frees, first, "the old block is freed");
	cr_expect_eq(heap()->live_bytes, weighed(200), "the other thread's block stays live");
	cr_expect_eq(wsp_model_untracked_frees(m), 0);
	ev(WSPROF_EV_FREE, WSPROF_KIND_HEAP, WSPROF_OP_FREE, 2, 0x1000, 0);
	cr_expect_eq(heap()->live_bytes, 0);
	cr_expect_eq(heap()->frees, heap()->allocations);
}

struct sites {
	uint64_t allocations, bytes, temporary;
};

static void add_site(const struct wsp_site_stats *s, void *arg)
{
	struct sites *sum = arg;
	sum->allocations += s->allocations;
	sum->bytes += s->bytes;
	sum->temporary += s->temporary;
}

Test(estimates, call_sites_are_weighed_and_temporary_is_not_estimated)
{
	sampled_model(N, true);
	ev(WSPROF_EV_ALLOC, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 1, 0x1000, 300);
	ev(WSPROF_EV_FREE, WSPROF_KIND_HEAP, WSPROF_OP_FREE, 1, 0x1000, 0);
	struct sites sum = { 0 };
	wsp_model_each_site(m, add_site, &sum);
	cr_expect_eq(sum.allocations, heap()->allocations);
	cr_expect_eq(sum.bytes, weighed(300));
	cr_expect_eq(sum.temporary, 0, "freed before its thread allocated again, as far as the samples tell: not known");
}

/* ---- the rate in the trace ------------------------------------------------ */

static uint64_t rate_read_back(const struct tb_process *pr)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, pr);
	tb_footer(&b, 1000);
	char *path = tb_save_temp(&b);
	cr_assert(path);
	wsprof_trace *t;
	int err = wsprof_trace_open(path, &t);
	cr_assert_eq(err, 0, "%s", wsprof_strerror(err));
	uint64_t rate = wsprof_trace_process(t)->sample_bytes;
	wsprof_trace_close(t);
	unlink(path);
	free(path);
	tb_fini(&b);
	return rate;
}

Test(estimates, the_rate_comes_from_the_config_record)
{
	sampled_model(0, false);
	struct tb_process pr = tb_process_default();
	cr_expect_eq(rate_read_back(&pr), 0, "a 1.0 CONFIG record: not sampled");
	pr.access_sources = WSPROF_SOURCE_ANNOTATIONS;
	cr_expect_eq(rate_read_back(&pr), 0, "a 1.1 CONFIG record: not sampled");
	pr.sample_bytes = 524288;
	cr_expect_eq(rate_read_back(&pr), 524288);
}

/* ---- counted totals (HEAP_TOTALS, format 2.5) ---------------------------- */

static void totals(uint64_t time, const wsprof_heap_totals *h)
{
	seq++;
	wsprof_event e = { .type = WSPROF_EV_HEAP_TOTALS, .seq = seq, .time_ns = time, .heap_totals = h };
	cr_assert_eq(wsp_model_apply(m, NULL, &e), 0);
}

/* The totals replace the estimates at the finish: counts and bytes asked
 * for as they are, live and peak bytes the usable ones scaled by the
 * share asked for, the peak the highest of any record's (and when), the
 * live series from the records; the estimates stay beside them. */
Test(estimates, counted_totals_replace_the_estimated_ones_at_the_finish)
{
	m = wsp_model_new(&(struct wsp_model_options){ .sample_bytes = N });
	cr_assert(m);
	ev(WSPROF_EV_ALLOC, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 1, 0x1000, 100000); /* a sampled block */
	const struct wsp_kind_stats before = *heap();
	/* 1,000 allocations of 900 bytes asked, 1,000 usable; half freed. */
	totals(1000000, &(wsprof_heap_totals){ .allocations = 600, .frees = 100, .requested = 540000, .given = 600000,
					    .given_back = 100000, .peak = 800000, .peak_ns = 500000 });
	totals(2000000, &(wsprof_heap_totals){ .allocations = 1000, .frees = 500, .requested = 900000, .given = 1000000,
					    .given_back = 500000, .peak = 600000, .peak_ns = 1500000 });
	cr_expect_eq(heap()->allocations, before.allocations, "the estimates hold until the finish");
	/* After the last record (a trace wsprof record finished after an
	 * exit_group): a sampled block of 1 MB, as the samples estimate it. */
	ev(WSPROF_EV_ALLOC, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 1, 0x900000, 1000000);
	uint64_t tail = weighed(1000000);
	struct wsp_kind_stats now;
	cr_assert(wsp_model_heap_counted_now(m, &now), "a trace followed as it grows (wsprof top) has its counts");
	cr_expect_eq(now.allocations, 1001, "the records' 1,000 and the block after them (p = 1)");
	cr_expect_eq(now.live_bytes, 450000 + tail);
	cr_expect_eq(now.peak_bytes, 450000 + tail, "the block after the records makes a new peak");
	cr_assert_eq(wsp_model_finish(m), 0);
	double share = 0;
	cr_assert(wsp_model_heap_counted(m, &share));
	cr_expect_float_eq(share, 0.9, 1e-12);
	cr_expect(!wsp_model_totals_estimated(m, WSPROF_KIND_HEAP));
	cr_expect(wsp_model_estimated(m, WSPROF_KIND_HEAP), "the call sites are still estimates");
	cr_expect_eq(heap()->allocations, 1001);
	cr_expect_eq(heap()->frees, 500);
	cr_expect_eq(heap()->total_bytes, 900000 + 1000000);
	cr_expect_eq(heap()->live_blocks, 501);
	cr_expect_eq(heap()->live_bytes, 450000 + tail, "500,000 usable bytes x 0.9, and the block after");
	cr_expect_eq(heap()->peak_bytes, 450000 + tail, "above the first record's 800,000 x 0.9 = 720,000");
	cr_expect_eq(heap()->peak_time_ns, 2000000, "the peak is at the trace's end");
	const struct wsp_kind_stats *e = wsp_model_heap_estimates(m);
	cr_assert(e);
	cr_expect_eq(e->live_bytes, before.live_bytes + tail, "the estimates: the sampled blocks'");
	cr_expect_eq(e->live_blocks, before.live_blocks + 1);
	const struct wsp_series *s = wsp_model_live_series(m, WSPROF_KIND_HEAP);
	uint64_t high = 0;
	for (size_t i = 0; i < s->n; i++)
		high = s->p[i].hi > high ? s->p[i].hi : high;
	cr_expect_eq(high, 450000 + tail, "the live series is the records', and the end's");
}

/* Where the totals count what the recorded blocks do not, the estimates
 * stay: a paused span (or an attach), a forked child (its inheritance),
 * --caller (some allocations only); and a trace without any. */
Test(estimates, counted_totals_are_not_used_where_they_count_something_else)
{
	const wsprof_heap_totals h = { .allocations = 10, .frees = 5, .requested = 1000, .given = 1000, .given_back = 500,
				       .peak = 700, .peak_ns = 5 };
	static const char *const callers[] = { "libfoo.so", NULL };
	for (int c = 0; c < 4; c++) {
		m = wsp_model_new(&(struct wsp_model_options){ .sample_bytes = N, .child = c == 1,
							      .callers = c == 2 ? callers : NULL });
		cr_assert(m);
		seq = 0;
		if (c == 0) {
			seq++;
			wsprof_event r = { .type = WSPROF_EV_RECORDING, .seq = seq, .time_ns = 1, .size = 0,
					   .op = WSPROF_REC_CALL };
			cr_assert_eq(wsp_model_apply(m, NULL, &r), 0);
		}
		if (c != 3)
			totals(10, &h);
		cr_assert_eq(wsp_model_finish(m), 0);
		cr_expect(!wsp_model_heap_counted(m, NULL), "case %d: counted", c);
		struct wsp_kind_stats now;
		cr_expect(!wsp_model_heap_counted_now(m, &now), "case %d: counted so far", c);
		cr_expect(wsp_model_totals_estimated(m, WSPROF_KIND_HEAP), "case %d", c);
		cr_expect_null(wsp_model_heap_estimates(m));
		cr_expect_eq(heap()->allocations, 0, "case %d: the estimates (nothing sampled)", c);
		wsp_model_free(m);
	}
	m = NULL;
}
