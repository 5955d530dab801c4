/*
 * units.h - numbers for people, the same in every report and picture.
 */
#ifndef WSP_UNITS_H
#define WSP_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* "1.50 MiB": 3 significant digits, binary units. @return buf. */
const char *wsp_human_bytes(char *buf, size_t cap, uint64_t bytes);
/* "12,345" @return buf. */
const char *wsp_group_digits(char *buf, size_t cap, uint64_t n);

/* qsort's comparison of two uint64_t, ascending. */
static inline int wsp_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

#endif
