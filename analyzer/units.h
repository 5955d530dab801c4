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

#endif
