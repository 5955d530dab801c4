/*
 * test_sampling.c - the recorder's heap sampling (preload/hooks/sampling.c),
 * compiled into this test with preload/base/mem.c.
 *
 * The rest of the preload library is replaced by what these two files
 * take from it: the settings (wsp_cfg) and the warning line. What is
 * pinned: an allocation of s bytes is sampled with probability
 * 1 - exp(-s/N) whatever came before it (checked against the binomial
 * spread, sizes interleaved so that a countdown carried wrongly from one
 * to the next would show); N = 1 samples all; the set of live sampled
 * blocks is shared by threads, grows, never loses a live block to a
 * reader while others remove entries around it, and when a stripe is
 * full says so once and has every free recorded; fork holds the set
 * still and a child gets it whole, usable.
 */
#include "hooks.h"

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- stand-ins for the rest of libwsprof ------------------------------ */

struct wsp_config wsp_cfg;
static atomic_int warnings;

void wsp_warn(const char *fmt, ...)
{
	(void)fmt;
	atomic_fetch_add(&warnings, 1);
}

static void setup(void)
{
	memset(&wsp_cfg, 0, sizeof wsp_cfg);
	wsp_cfg.sample_seed = 20261129;
	atomic_store(&warnings, 0);
}

TestSuite(sampling, .init = setup);

/* ---- which allocations are sampled ------------------------------------- */

struct draw {
	const size_t *sizes;
	size_t nsizes, rounds;
	uint64_t *taken; /* per size */
};

/* On a thread of its own: a fresh countdown. */
static void *draw_sizes(void *arg)
{
	struct draw *d = arg;
	for (size_t r = 0; r < d->rounds; r++)
		for (size_t i = 0; i < d->nsizes; i++)
			d->taken[i] += wsp_sample_take(d->sizes[i]);
	return NULL;
}

static void draw_on_a_thread(struct draw *d)
{
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, draw_sizes, d), 0);
	pthread_join(t, NULL);
}

Test(sampling, an_allocation_is_sampled_with_probability_one_minus_exp_of_its_size_over_n)
{
	wsp_cfg.sample_bytes = 4096;
	/* Interleaved: each size's odds must not depend on its neighbours'. */
	static const size_t sizes[] = { 0, 1, 64, 1000, 4096, 20000 };
	uint64_t taken[6] = { 0 };
	struct draw d = { sizes, 6, 200000, taken };
	draw_on_a_thread(&d);
	for (size_t i = 0; i < 6; i++) {
		double s = sizes[i] ? (double)sizes[i] : 1, p = -expm1(-s / 4096.0);
		double n = (double)d.rounds, want = n * p, sd = sqrt(n * p * (1 - p));
		/* Six standard deviations: a false alarm about once in 10^9 runs. */
		cr_expect_leq(fabs((double)taken[i] - want), 6 * sd + 1,
			      "size %zu: %llu of %.0f sampled, %.1f expected (p = %.5f, sd %.1f)", sizes[i],
			      (unsigned long long)taken[i], n, want, p, sd);
	}
}

Test(sampling, one_byte_samples_every_allocation_and_zero_none_is_skipped)
{
	static const size_t sizes[] = { 0, 1, 7, 100000 };
	uint64_t taken[4] = { 0 };
	struct draw d = { sizes, 4, 1000, taken };
	wsp_cfg.sample_bytes = 1;
	draw_on_a_thread(&d);
	for (size_t i = 0; i < 4; i++)
		cr_expect_eq(taken[i], 1000, "size %zu: %llu of 1000 recorded at 1 byte", sizes[i],
			     (unsigned long long)taken[i]);
	memset(taken, 0, sizeof taken);
	wsp_cfg.sample_bytes = 0; /* not sampling: every allocation is recorded */
	draw_on_a_thread(&d);
	for (size_t i = 0; i < 4; i++)
		cr_expect_eq(taken[i], 1000, "size %zu: %llu of 1000 recorded without sampling", sizes[i],
			     (unsigned long long)taken[i]);
}

/* ---- the set of live sampled blocks ------------------------------------ */

static uint64_t addr_of(uint64_t i)
{
	return 0x7f0000000000ull + i * 48;
}

struct span {
	uint64_t from, to;
	uint64_t forgotten;
};

static void *forget_span(void *arg)
{
	struct span *s = arg;
	for (uint64_t i = s->from; i < s->to; i++)
		s->forgotten += wsp_sample_forget((void *)addr_of(i));
	return NULL;
}

Test(sampling, a_block_remembered_by_one_thread_is_forgotten_by_another)
{
	wsp_cfg.sample_bytes = 4096;
	const uint64_t n = 200000; /* far past the first tables: they grow */
	for (uint64_t i = 0; i < n; i++)
		wsp_sample_remember((void *)addr_of(i));
	for (uint64_t i = 0; i < n; i++)
		cr_assert(wsp_sample_maybe_live((void *)addr_of(i)), "block %llu lost", (unsigned long long)i);
	cr_expect(!wsp_sample_maybe_live((void *)addr_of(n)), "a block never remembered");
	cr_expect(!wsp_sample_forget((void *)addr_of(n + 1)), "a block never remembered");
	struct span s = { 0, n, 0 };
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, forget_span, &s), 0);
	pthread_join(t, NULL);
	cr_expect_eq(s.forgotten, n);
	for (uint64_t i = 0; i < n; i += 997)
		cr_expect(!wsp_sample_maybe_live((void *)addr_of(i)), "block %llu forgotten, still there",
			  (unsigned long long)i);
	cr_expect(!wsp_sample_forget((void *)addr_of(5)), "forgotten twice");
	cr_expect_eq(atomic_load(&warnings), 0);
}

/* Addresses that all fall in one stripe (the top 6 bits of the hash). */
static size_t same_stripe(uint64_t *out, size_t n)
{
	size_t k = 0;
	for (uint64_t i = 1; k < n; i++) {
		uint64_t a = i * 16;
		if (((a >> 4) * 0x9e3779b97f4a7c15ull) >> 58 == 7)
			out[k++] = a;
	}
	return k;
}

struct churn {
	const uint64_t *a;
	size_t n;
	pthread_barrier_t start, end;
	atomic_bool removing;
};

/* Without the sequence count a few looks in a million miss here, and the
 * test fails about one run in three: a stress test, not a proof. */
#define CHURN_ROUNDS 1000

/* The odd ones of a go, round after round, while the test looks. */
static void *churn(void *arg)
{
	struct churn *c = arg;
	for (int r = 0; r < CHURN_ROUNDS; r++) {
		pthread_barrier_wait(&c->start);
		for (size_t i = 1; i < c->n; i += 2)
			wsp_sample_forget((void *)c->a[i]);
		atomic_store(&c->removing, false);
		pthread_barrier_wait(&c->end);
	}
	return NULL;
}

Test(sampling, a_reader_never_misses_a_live_block_while_another_thread_removes_around_it)
{
	wsp_cfg.sample_bytes = 4096;
	/* One stripe, its table nearly as full as it gets (6000 of 8192
	 * slots: long probe runs). Each round the odd addresses go in first
	 * and the even ones after them, further along the runs; then, while
	 * another thread removes the odd ones (shifting the even ones back
	 * towards their home slots), every even one must be found all along. */
	static uint64_t a[6000];
	struct churn c = { .a = a, .n = same_stripe(a, 6000) };
	pthread_barrier_init(&c.start, NULL, 2);
	pthread_barrier_init(&c.end, NULL, 2);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, churn, &c), 0);
	uint64_t misses = 0, looks = 0;
	for (int r = 0; r < CHURN_ROUNDS; r++) {
		for (size_t i = 0; i < c.n; i += 2)
			wsp_sample_forget((void *)a[i]);
		for (size_t i = 1; i < c.n; i += 2)
			wsp_sample_remember((void *)a[i]);
		for (size_t i = 0; i < c.n; i += 2)
			wsp_sample_remember((void *)a[i]);
		atomic_store(&c.removing, true);
		pthread_barrier_wait(&c.start);
		while (atomic_load(&c.removing))
			for (size_t i = 0; i < c.n; i += 2, looks++)
				misses += !wsp_sample_maybe_live((void *)a[i]);
		pthread_barrier_wait(&c.end);
	}
	pthread_join(t, NULL);
	cr_expect_eq(misses, 0, "%llu of %llu looks missed a live block", (unsigned long long)misses,
		     (unsigned long long)looks);
}

Test(sampling, a_full_set_says_so_once_and_has_every_free_recorded)
{
	wsp_cfg.sample_bytes = 4096;
	/* One stripe holds 3/4 of 2^18 slots at most. */
	size_t n = (1u << 18) / 4 * 3 + 2;
	uint64_t *a = malloc(n * sizeof *a);
	cr_assert(a);
	same_stripe(a, n);
	for (size_t i = 0; i + 2 < n; i++)
		wsp_sample_remember((void *)a[i]);
	cr_expect_eq(atomic_load(&warnings), 0, "not full yet");
	cr_expect(!wsp_sample_maybe_live((void *)0x10), "not full yet: an unknown block is not live");
	wsp_sample_remember((void *)a[n - 2]);
	wsp_sample_remember((void *)a[n - 1]);
	cr_expect_eq(atomic_load(&warnings), 1, "one warning when the set overflows, not one per block");
	cr_expect(wsp_sample_maybe_live((void *)0x10), "every free is recorded once the set is full");
	cr_expect(wsp_sample_forget((void *)a[n - 1]), "the block the set could not keep has its free recorded");
	cr_expect(wsp_sample_forget((void *)a[0]), "a block in the set is forgotten as before");
	free(a);
}

static atomic_bool remembered;

static void *remember_one(void *arg)
{
	wsp_sample_remember(arg);
	atomic_store(&remembered, true);
	return NULL;
}

Test(sampling, fork_holds_every_stripe_and_the_child_keeps_the_set)
{
	wsp_cfg.sample_bytes = 4096;
	wsp_sample_remember((void *)0x1000);
	wsp_sample_lock_all(); /* as fork's prepare handler */
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, remember_one, (void *)0x2000), 0);
	usleep(50000);
	cr_expect(!atomic_load(&remembered), "a thread changed the set while fork held it");
	pid_t child = fork();
	if (child == 0) { /* as fork's child handler: the set as it was, usable */
		wsp_sample_unlock_all();
		wsp_sample_remember((void *)0x3000);
		_exit(wsp_sample_forget((void *)0x1000) && wsp_sample_forget((void *)0x3000) &&
		      !wsp_sample_maybe_live((void *)0x2000) ? 0 : 1);
	}
	wsp_sample_unlock_all(); /* as the parent's */
	pthread_join(t, NULL);
	int status;
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child did not find the parent's sampled block, or could not change the set");
	cr_expect(wsp_sample_maybe_live((void *)0x2000), "the parent's thread went on after fork");
}
