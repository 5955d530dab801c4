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
/* A change, signed: "+8.00 MiB", "-512 B", "0 B"; "+1,000", "-3", "0". @return buf. */
const char *wsp_human_change(char *buf, size_t cap, int64_t bytes);
const char *wsp_count_change(char *buf, size_t cap, int64_t n);
/* A size as people write it: "4096", "512MiB", "1.5G", "64 KiB"; every
 * unit a power of 1024 (K, KB and KiB alike, as wsprof prints sizes), B
 * or none for bytes; case does not matter. @return 0, or -1 when s is no
 * size (or more than 2^64 - 1 bytes). */
int wsp_parse_size(const char *s, uint64_t *bytes);

/* qsort's comparison of two uint64_t, ascending. */
static inline int wsp_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The units of an axis or a value shown as one. */
enum wsp_unit { WSP_UNIT_SECONDS, WSP_UNIT_BYTES, WSP_UNIT_COUNT, WSP_UNIT_PERCENT, WSP_UNIT_BYTES_PER_S };
/* A value as an axis shows it: "250 ms", "1.5 s", "512 MiB", "40 %". */
const char *wsp_unit_format(char *buf, size_t cap, double v, enum wsp_unit u);

#endif
