/*
 * units.c - see units.h.
 */
#include "units.h"

#include <stdio.h>

/* The rounding is settled before the format is picked, so 9.999 KiB reads
 * "10.0 KiB" and 1023.9 KiB "1.00 MiB". */
const char *wsp_human_bytes(char *buf, size_t cap, uint64_t bytes)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (bytes < 1024) {
		snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	double v = (double)bytes;
	int u = 0;
	while (v >= 1023.5 && u < 6) {
		v /= 1024;
		u++;
	}
	snprintf(buf, cap, v >= 99.95 ? "%.0f %s" : v >= 9.995 ? "%.1f %s" : "%.2f %s", v, unit[u]);
	return buf;
}

const char *wsp_group_digits(char *buf, size_t cap, uint64_t n)
{
	char raw[24];
	int len = snprintf(raw, sizeof raw, "%llu", (unsigned long long)n);
	size_t o = 0;
	for (int i = 0; i < len && o + 2 < cap; i++) {
		if (i && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	buf[o] = 0;
	return buf;
}
