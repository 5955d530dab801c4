/*
 * units.c - see units.h.
 */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static uint64_t magnitude(int64_t v)
{
	return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

const char *wsp_human_change(char *buf, size_t cap, int64_t bytes)
{
	char n[32];
	wsp_human_bytes(n, sizeof n, magnitude(bytes));
	snprintf(buf, cap, "%s%s", bytes > 0 ? "+" : bytes < 0 ? "-" : "", n);
	return buf;
}

const char *wsp_count_change(char *buf, size_t cap, int64_t v)
{
	char n[32];
	wsp_group_digits(n, sizeof n, magnitude(v));
	snprintf(buf, cap, "%s%s", v > 0 ? "+" : v < 0 ? "-" : "", n);
	return buf;
}

int wsp_parse_size(const char *s, uint64_t *bytes)
{
	static const char *const units[] = { "", "k", "m", "g", "t", "p", "e" };
	const char *p = s;
	while (*p == ' ')
		p++;
	if (!(*p >= '0' && *p <= '9') && *p != '.')
		return -1;
	char *end;
	errno = 0;
	long double v = strtold(p, &end);
	if (end == p || end != p + strspn(p, "0123456789.") || errno || v < 0) /* no hex, no exponent */
		return -1;
	while (*end == ' ')
		end++;
	char unit[8] = "";
	size_t len = strlen(end);
	if (len >= sizeof unit)
		return -1;
	for (size_t i = 0; i <= len; i++)
		unit[i] = (char)tolower((unsigned char)end[i]);
	/* "b" alone, else a letter with "", "b", "ib" after it */
	int power = -1;
	if (!strcmp(unit, "") || !strcmp(unit, "b")) {
		power = 0;
	} else {
		for (int u = 1; u < 7 && power < 0; u++)
			if (unit[0] == units[u][0] && (!unit[1] || !strcmp(unit + 1, "b") || !strcmp(unit + 1, "ib")))
				power = u;
	}
	if (power < 0)
		return -1;
	for (int i = 0; i < power; i++)
		v *= 1024;
	if (v >= 18446744073709551616.0L)
		return -1;
	*bytes = (uint64_t)(v + 0.5L);
	return 0;
}

static void trim_zeros(char *s)
{
	char *dot = strchr(s, '.');
	if (!dot)
		return;
	char *end = dot + strlen(dot) - 1;
	while (end > dot && *end == '0')
		*end-- = 0;
	if (end == dot)
		*end = 0;
}

const char *wsp_unit_format(char *buf, size_t cap, double v, enum wsp_unit u)
{
	char num[32];
	switch (u) {
	case WSP_UNIT_SECONDS: {
		double a = fabs(v);
		const char *unit = a == 0 || a >= 1 ? "s" : a >= 1e-3 ? "ms" : "µs";
		double x = a == 0 || a >= 1 ? v : a >= 1e-3 ? v * 1e3 : v * 1e6;
		snprintf(num, sizeof num, "%.2f", x);
		trim_zeros(num);
		snprintf(buf, cap, "%s %s", num, unit);
		return buf;
	}
	case WSP_UNIT_BYTES:
	case WSP_UNIT_BYTES_PER_S: {
		static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
		double x = fabs(v);
		int i = 0;
		while (x >= 1024 && i < 5) {
			x /= 1024;
			i++;
		}
		snprintf(num, sizeof num, "%.2f", v < 0 ? -x : x);
		trim_zeros(num);
		snprintf(buf, cap, "%s %s%s", num, unit[i], u == WSP_UNIT_BYTES_PER_S ? "/s" : "");
		return buf;
	}
	case WSP_UNIT_PERCENT:
		snprintf(num, sizeof num, "%.1f", v);
		trim_zeros(num);
		snprintf(buf, cap, "%s %%", num);
		return buf;
	case WSP_UNIT_COUNT:
	default:
		if (fabs(v) >= 1e6) {
			snprintf(num, sizeof num, "%.2f", v / 1e6);
			trim_zeros(num);
			snprintf(buf, cap, "%sM", num);
		} else if (fabs(v) >= 1e4) {
			snprintf(num, sizeof num, "%.1f", v / 1e3);
			trim_zeros(num);
			snprintf(buf, cap, "%sk", num);
		} else {
			snprintf(num, sizeof num, "%.2f", v);
			trim_zeros(num);
			snprintf(buf, cap, "%s", num);
		}
		return buf;
	}
}
