/*
 * config.c - WSPROF_* settings from the environment.
 *
 * Read once at start (and again in an exec'd program). A malformed value
 * never stops the program: one warning line on stderr, then the default.
 * A relative WSPROF_OUTPUT is taken from the directory the process starts
 * in, so that a forked child of a program that changed directory writes
 * its trace next to its parent's. The process's place in a parallel job
 * comes from its launcher's variables (src/launch.h). Uses getenv, getcwd
 * and write(2) only: no allocation, no stdio.
 */

#include "base.h"
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct wsp_config wsp_cfg;

void wsp_warn(const char *fmt, ...)
{
	char line[512];
	int n = snprintf(line, sizeof line, "wsprof: ");
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n += m < 0 ? 0 : m;
	if (n > (int)sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	int saved = errno;
	ssize_t w = write(STDERR_FILENO, line, (size_t)n);
	(void)w;
	errno = saved;
}

static unsigned env_uint(const char *name, unsigned lo, unsigned hi, unsigned def)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	if (errno || *end || *v == '-' || n < lo || n > hi) {
		wsp_warn("ignoring %s=%.64s (expected a whole number from %u to %u); using %u",
			 name, v, lo, hi, def);
		return def;
	}
	return (unsigned)n;
}

static void env_path(const char *name, char *dst, size_t cap, const char *def)
{
	const char *v = getenv(name);
	if (v && strlen(v) >= cap) {
		wsp_warn("ignoring %s: longer than %zu bytes; using %s", name, cap - 1, def);
		v = NULL;
	}
	snprintf(dst, cap, "%s", v && *v ? v : def);
}

/* The output pattern, made absolute from the current directory. Static
 * buffers: one thread loads the settings, and its stack may be small. */
static void output_path(void)
{
	static char rel[sizeof wsp_cfg.output], cwd[sizeof wsp_cfg.output];
	size_t cap = sizeof wsp_cfg.output;
	env_path("WSPROF_OUTPUT", rel, sizeof rel, "wsprof.%e.%p.wsp");
	if (rel[0] != '/' && getcwd(cwd, sizeof cwd)) {
		int n = snprintf(wsp_cfg.output, cap, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", rel);
		if (n >= 0 && (size_t)n < cap)
			return;
	}
	snprintf(wsp_cfg.output, cap, "%s", rel);
}

/* WSPROF_TOGGLE_SIGNAL: a number, or a name with or without "SIG". */
static int env_signal(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return 0;
	const char *abbrev = strncmp(v, "SIG", 3) == 0 ? v + 3 : v;
	char *end;
	long n = strtol(v, &end, 10);
	if (*end || end == v)
		for (n = 0; n < NSIG && !(sigabbrev_np((int)n) && strcmp(sigabbrev_np((int)n), abbrev) == 0); n++)
			;
	if (n <= 0 || n >= NSIG || n == SIGKILL || n == SIGSTOP) {
		wsp_warn("ignoring %s=%.64s (expected a signal that can be caught, such as SIGUSR2 or 12)", name, v);
		return 0;
	}
	return (int)n;
}

void wsp_config_load(void)
{
	output_path();
	env_path("WSPROF_MANIFEST", wsp_cfg.manifest, sizeof wsp_cfg.manifest, "");
	env_path(WSP_RESCUE_ENV, wsp_cfg.rescue, sizeof wsp_cfg.rescue, "");
	wsp_cfg.stack_depth = env_uint("WSPROF_STACK_DEPTH", 1, 256, 64);
	wsp_cfg.flush_ms = env_uint("WSPROF_FLUSH_MS", 1, 60000, 200);
	wsp_cfg.follow = env_uint("WSPROF_FOLLOW", 0, 1, 1) != 0;
	env_path("WSPROF_FOLLOW_PATTERN", wsp_cfg.follow_pattern, sizeof wsp_cfg.follow_pattern, "");
	wsp_launch_from_env(&wsp_cfg.job);
	wsp_cfg.cuda_stream_times = env_uint("WSPROF_CUDA_STREAM_TIMES", 0, 1, 0) != 0;
	wsp_cfg.access = env_uint("WSPROF_ACCESS", 0, 1, 1) != 0;
	wsp_cfg.window_ms = env_uint("WSPROF_WINDOW_MS", 10, 60000, 100);
	wsp_cfg.max_regions = env_uint("WSPROF_MAX_REGIONS", 10, 10000, 1000);
	wsp_cfg.sample_us = env_uint("WSPROF_SAMPLE_US", 100, 1000000, 5000);
	/* 1536 pages per 100 ms of window (a program rewriting all its memory
	 * then runs about 1.3x slower once armed), 256 when sampling heap
	 * allocations (which promises at most 1.2x): BENCHMARKS.md, Profiles,
	 * "the measurements behind the defaults". */
	wsp_cfg.sample_bytes = env_uint("WSPROF_SAMPLE_BYTES", 0, 1u << 30, 0);
	wsp_cfg.wp_pages = env_uint("WSPROF_WP_PAGES", 64, 1048576,
				    wsp_cfg.window_ms * (wsp_cfg.sample_bytes ? 256u : 1536u) / 100u);
	/* 1 GiB of released memory read per 100 ms at most: about 2 ms of the
	 * hooks' time, at 2-9 ns a page (BENCHMARKS.md, release_cost.sh). */
	uint64_t release = (uint64_t)wsp_cfg.window_ms * 262144u / 100u;
	wsp_cfg.release_pages = env_uint("WSPROF_RELEASE_PAGES", 0, 1u << 24, release < (1u << 24) ? (unsigned)release : 1u << 24);
	wsp_cfg.sample_seed = env_uint("WSPROF_SAMPLE_SEED", 0, UINT_MAX, 0);
	wsp_cfg.python = env_uint("WSPROF_PYTHON", 0, 1, 1) != 0;
	wsp_cfg.python_objects = env_uint("WSPROF_PYTHON_OBJECTS", 0, 1, 0) != 0;
	const char *start = getenv("WSPROF_START");
	wsp_cfg.start_paused = start && strcmp(start, "paused") == 0;
	if (start && *start && !wsp_cfg.start_paused && strcmp(start, "on") != 0)
		wsp_warn("ignoring WSPROF_START=%.64s (expected paused or on); recording from the start", start);
	wsp_cfg.toggle_signal = env_signal("WSPROF_TOGGLE_SIGNAL");
}
