/*
 * series.h - a value over time in bounded memory, for the pictures.
 *
 * Time is cut into at most WSP_SERIES_CAP buckets of equal width; when the
 * trace runs past the last one, neighbouring buckets are merged two by two
 * and the width doubles, so a run of any length costs the same. Each
 * bucket keeps the highest of each of two values seen in it (a peak is
 * never averaged away: a kind's live bytes and its bytes truly in use, a
 * device's used memory and its total), and the last of both, which an
 * empty bucket that follows carries on.
 */
#ifndef WSP_SERIES_H
#define WSP_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WSP_SERIES_CAP 2048

struct wsp_series_point {
	uint64_t hi, hi_b;     /* the highest of each value in the bucket */
	uint64_t last, last_b; /* both at the bucket's last update */
	bool set;              /* updated in this bucket (else carried on) */
};

struct wsp_series {
	uint64_t width_ns;     /* of a bucket; bucket i starts at i * width_ns */
	size_t n;              /* buckets up to the last update */
	struct wsp_series_point *p;
};

/* A value (and its companion) at t. @return 0 or -ENOMEM. */
int wsp_series_note(struct wsp_series *s, uint64_t t_ns, uint64_t value, uint64_t b);
/* Carry the last values on to t (the end of the trace). */
int wsp_series_extend(struct wsp_series *s, uint64_t t_ns);
void wsp_series_free(struct wsp_series *s);

#endif
