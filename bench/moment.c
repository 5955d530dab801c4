/*
 * moment - what reaching a moment of a trace costs through its index
 * (analyzer/model/timeindex.h), without printing it: the index opened
 * (or built), then for each moment the model there restored from the
 * checkpoint before it and the events from there replayed, its live
 * blocks counted. bench/moments.sh times `wsprof report state` beside it,
 * which also names and prints every live block.
 *
 * usage: moment TRACE [SECONDS ...]   (default: ten moments across the run and the end)
 *
 * Prints a line per moment: `at S s: N blocks live, M ms`, after
 * `index: built|read in M ms, B bytes, C checkpoints`.
 */
#include "analyzer.h"
#include "timeindex.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void count(const struct wsp_block *b, void *arg)
{
	(void)b;
	++*(size_t *)arg;
}

static int at(struct wsp_tindex *ix, double seconds)
{
	double t0 = now_ms();
	struct wsp_loaded l;
	uint64_t stop = seconds < 0 ? UINT64_MAX : (uint64_t)(seconds * 1e9);
	if (wsp_tindex_replay(ix, UINT64_MAX, stop, false, &l))
		return 1;
	size_t n = 0;
	wsp_model_each_live(l.model, count, &n);
	double t1 = now_ms();
	if (seconds < 0)
		printf("at the end: %zu blocks live, %.1f ms\n", n, t1 - t0);
	else
		printf("at %.3f s: %zu blocks live, %.1f ms\n", seconds, n, t1 - t0);
	wsp_loaded_free(&l);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: moment TRACE [SECONDS ...]\n");
		return 2;
	}
	double t0 = now_ms();
	struct wsp_tindex *ix;
	if (wsp_tindex_open(argv[1], &ix))
		return 1;
	struct wsp_tindex_info info;
	wsp_tindex_info(ix, &info);
	printf("index: %s in %.1f ms, %llu bytes, %zu checkpoints\n", info.built ? "built" : "read", now_ms() - t0,
	       (unsigned long long)info.bytes, info.checkpoints);
	int rc = 0;
	if (argc > 2) {
		for (int i = 2; i < argc && !rc; i++)
			rc = at(ix, strtod(argv[i], NULL));
	} else {
		double end = (double)wsp_model_last_time(wsp_tindex_whole(ix)->model) / 1e9;
		for (int i = 1; i <= 10 && !rc; i++)
			rc = at(ix, end * i / 10.5);
		if (!rc)
			rc = at(ix, -1);
	}
	wsp_tindex_close(ix);
	return rc;
}
