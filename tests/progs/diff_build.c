/*
 * diff_build.c - one program built twice, as two builds of it would be
 * (VARIANT 1, the base, and VARIANT 2, the new one), whose call sites
 * change by known amounts: what `wsprof diff` and `wsprof check` are
 * tested on (tests/reports/test_diff.c holds the expected figures).
 *
 *   site       base (VARIANT 1)               new (VARIANT 2)
 *   steady     10 x 1,000 B kept              the same
 *   grows      1 x 1 MiB kept                 2 x 1 MiB kept
 *   shrinks    4 x 64 KiB kept                1 x 64 KiB kept
 *   churn      1,000 x 100 B freed at once    3,000 x 100 B freed at once
 *   held       4 x 1 MiB, freed after the peak  3 x 1 MiB, freed after the peak
 *   removed    300,000 B kept                 (gone)
 *   added      (none)                         500,000 B kept
 *
 * Every block is allocated in that order after the churn, so the heap
 * peaks once everything but the churn is live, just before `held` frees.
 */
#include <stdlib.h>
#include <string.h>

#ifndef VARIANT
#define VARIANT 1
#endif

#if VARIANT == 2
/* The new build has 20 more lines up here, so every function below starts
 * further down the file: the diff must still pair its sites (by function
 * and file) and say their lines moved. */
#line 51
#endif

static void *kept[64];
static int nkept;

/* Each site's own call to malloc (a helper would be the site of them all);
 * written to, and kept where the compiler cannot see it dropped. */
static void *volatile sink;
#define TOUCHED(n) (sink = malloc(n), memset(sink, 1, (n)), sink)

__attribute__((noinline)) static void steady(void)
{
	for (int i = 0; i < 10; i++)
		kept[nkept++] = TOUCHED(1000);
}

__attribute__((noinline)) static void grows(void)
{
	for (int i = 0; i < VARIANT; i++)
		kept[nkept++] = TOUCHED(1 << 20);
}

__attribute__((noinline)) static void shrinks(void)
{
	for (int i = 0; i < (VARIANT == 1 ? 4 : 1); i++)
		kept[nkept++] = TOUCHED(64 << 10);
}

__attribute__((noinline)) static void churn(void)
{
	for (int i = 0; i < 1000 * (VARIANT == 1 ? 1 : 3); i++)
		free(TOUCHED(100));
}

static void *held[4];

__attribute__((noinline)) static void hold(void)
{
	for (int i = 0; i < (VARIANT == 1 ? 4 : 3); i++)
		held[i] = TOUCHED(1 << 20);
}

#if VARIANT == 1
__attribute__((noinline)) static void removed(void)
{
	kept[nkept++] = TOUCHED(300000);
}
#else
__attribute__((noinline)) static void added(void)
{
	kept[nkept++] = TOUCHED(500000);
}
#endif

int main(void)
{
	churn();
	steady();
	grows();
	shrinks();
#if VARIANT == 1
	removed();
#else
	added();
#endif
	hold();
	for (int i = 0; i < 4; i++)
		free(held[i]);
	return 0;
}
