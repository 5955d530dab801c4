/*
 * kept.c - where a file kept for a trace goes (kept.h): one rule for the
 * symbol cache (symbols/cache.c) and the index of moments (tindex_build.c).
 */
#include "kept.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *wsp_kept_path(const char *trace_path, const char *suffix)
{
	char dir[PATH_MAX], path[2 * PATH_MAX + 64];
	snprintf(dir, sizeof dir, "%s", trace_path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(dir, sizeof dir, ".");
	if (access(dir, W_OK) == 0) {
		snprintf(path, sizeof path, "%s.%s", trace_path, suffix);
		return strdup(path);
	}
	/* Elsewhere, named after the trace's whole path. */
	char real[PATH_MAX], base[PATH_MAX];
	const char *home = getenv("HOME"), *xdg = getenv("XDG_CACHE_HOME");
	if (!realpath(trace_path, real) || ((!xdg || !*xdg) && !home))
		return NULL;
	if (xdg && *xdg) {
		snprintf(base, sizeof base, "%s/wsprof", xdg);
	} else {
		snprintf(base, sizeof base, "%s/.cache", home);
		mkdir(base, 0700);
		size_t n = strlen(base);
		snprintf(base + n, sizeof base - n, "/wsprof");
	}
	mkdir(base, 0700);
	uint64_t h = 14695981039346656037ull; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)real; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	const char *name = strrchr(real, '/');
	snprintf(path, sizeof path, "%s/%s.%016llx.%s", base, name ? name + 1 : real, (unsigned long long)h, suffix);
	return strdup(path);
}
