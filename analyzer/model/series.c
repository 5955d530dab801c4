/*
 * series.c - a value over time in bounded memory (series.h).
 */
#include "series.h"

#include <errno.h>
#include <stdlib.h>

#define FIRST_WIDTH_NS 1000000u /* 1 ms: short runs keep their detail */

/* Halve the resolution: bucket i of the new width is buckets 2i and 2i+1. */
static void merge(struct wsp_series *s)
{
	size_t n = (s->n + 1) / 2;
	for (size_t i = 0; i < n; i++) {
		struct wsp_series_point a = s->p[2 * i], b = 2 * i + 1 < s->n ? s->p[2 * i + 1] : a;
		struct wsp_series_point m = b; /* b's last values already carry a's on */
		m.set = a.set || b.set;
		m.hi = a.hi > b.hi ? a.hi : b.hi;
		m.hi_b = a.hi_b > b.hi_b ? a.hi_b : b.hi_b;
		s->p[i] = m;
	}
	s->n = n;
	s->width_ns *= 2;
}

/* The bucket of t, buckets up to it carrying the last values on. */
static struct wsp_series_point *bucket(struct wsp_series *s, uint64_t t_ns)
{
	if (!s->p) {
		s->p = calloc(WSP_SERIES_CAP, sizeof *s->p);
		if (!s->p)
			return NULL;
		s->width_ns = FIRST_WIDTH_NS;
	}
	while (t_ns / s->width_ns >= WSP_SERIES_CAP)
		merge(s);
	size_t i = (size_t)(t_ns / s->width_ns);
	if (s->n && i < s->n - 1)
		i = s->n - 1; /* threads' events may come a little out of time order */
	for (; s->n <= i; s->n++) {
		struct wsp_series_point carry = s->n ? s->p[s->n - 1] : (struct wsp_series_point){ 0 };
		s->p[s->n] = (struct wsp_series_point){ carry.last, carry.last_b, carry.last, carry.last_b, false };
	}
	return &s->p[i];
}

int wsp_series_note(struct wsp_series *s, uint64_t t_ns, uint64_t value, uint64_t b)
{
	struct wsp_series_point *p = bucket(s, t_ns);
	if (!p)
		return -ENOMEM;
	if (!p->set || value > p->hi)
		p->hi = value;
	if (!p->set || b > p->hi_b)
		p->hi_b = b;
	p->last = value;
	p->last_b = b;
	p->set = true;
	return 0;
}

int wsp_series_extend(struct wsp_series *s, uint64_t t_ns)
{
	if (!s->n)
		return 0;
	return bucket(s, t_ns) ? 0 : -ENOMEM;
}

void wsp_series_free(struct wsp_series *s)
{
	free(s->p);
	*s = (struct wsp_series){ 0 };
}
