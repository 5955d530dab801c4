/*
 * wssdist.c - the distribution of the working set over its windows:
 * nearest-rank percentiles 0/25/50/75/100 and the mean (compute.h), what
 * `wsprof report wss` prints.
 */
#include "compute.h"

#include "wss.h"

#include <stdlib.h>

/* Nearest-rank percentiles of v (sorted in place). */
static struct wsp_wss_dist distribution(uint64_t *v, size_t n)
{
	struct wsp_wss_dist d = { .n = n };
	if (!n)
		return d;
	qsort(v, n, sizeof *v, wsp_cmp_u64);
	static const unsigned pct[5] = { 0, 25, 50, 75, 100 };
	unsigned __int128 sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	for (int i = 0; i < 5; i++)
		d.p[i] = wsp_nearest_rank(v, n, pct[i]);
	d.mean = (uint64_t)(sum / n);
	return d;
}

struct wsp_wss_dist wsp_wss_dist_of(const struct wsp_wss_point *pts, size_t n, int source, int kind)
{
	uint64_t *v = malloc((n ? n : 1) * sizeof *v);
	if (!v)
		return (struct wsp_wss_dist){ 0 };
	for (size_t i = 0; i < n; i++)
		v[i] = wsp_wss_point_bytes(&pts[i], source, kind);
	struct wsp_wss_dist d = distribution(v, n);
	free(v);
	return d;
}
