/*
 * damon.c - reads and writes, region by region, from the kernel's DAMON.
 *
 * Where the kernel has DAMON's virtual-address operations and the user may
 * write its sysfs interface (root), wsprof starts a kdamond of its own that
 * monitors this process: it samples one page per region every sampling
 * interval (WSPROF_SAMPLE_US) for the accessed bit, so it sees reads as
 * well as writes, and adapts its regions between a minimum and
 * WSPROF_MAX_REGIONS, which bounds its cost whatever the memory size. Each
 * window wsprof asks for the regions a "stat" scheme saw (state
 * "update_schemes_tried_regions", answered after the kdamond's next
 * aggregation) and records those with nr_accesses > 0 as accessed.
 *
 * Other people's kdamonds are never touched. The sysfs interface can only
 * add one by writing nr_kdamonds, which rebuilds every kdamond's directory
 * and is refused while any runs; so wsprof starts one only where there are
 * none, and at exit stops it and sets nr_kdamonds back to 0, only if the
 * count is still its own 1. When the program dies without exit (SIGKILL),
 * the kdamond stops by itself once its target is gone, leaving its
 * directory for the next run to see as someone else's, which the trace
 * header then says.
 *
 * A forked child does not inherit the kdamond: its DAMON source is off
 * (the trace header of the child says so), and only the process that
 * started it stops it.
 *
 * WSPROF_DAMON_SYSFS names another root than /sys/kernel/mm/damon/admin
 * (the tests point it at a tree of plain files they answer themselves).
 * Nothing here calls malloc or stdio's FILE functions.
 */

#include "access.h"
#include "core.h"
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIN_REGIONS 10

static char root[512];     /* ..../kdamonds */
static _Atomic pid_t owner; /* the process that started the kdamond; 0: none */
static _Atomic bool active; /* this process reads it */

static int path_of(char *out, size_t cap, const char *rel)
{
	int n = snprintf(out, cap, "%s/%s", root, rel);
	return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

/* Write a value to a sysfs file below the root. @return 0 or -errno. */
static int put(const char *rel, const char *value)
{
	char path[768];
	int err = path_of(path, sizeof path, rel);
	if (err)
		return err;
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC); /* as a shell's ">" */
	if (fd < 0)
		return -errno;
	size_t len = strlen(value);
	ssize_t w = write(fd, value, len);
	err = w == (ssize_t)len ? 0 : w < 0 ? -errno : -EIO;
	close(fd);
	return err;
}

static int put_u64(const char *rel, uint64_t v)
{
	char text[24];
	snprintf(text, sizeof text, "%llu", (unsigned long long)v);
	return put(rel, text);
}

/* Read a sysfs file below the root into out, NUL-terminated, trailing
 * newline removed. @return its length or -errno. */
static long get(const char *rel, char *out, size_t cap)
{
	char path[768];
	int err = path_of(path, sizeof path, rel);
	if (err)
		return err;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, out, cap - 1);
	int saved = errno;
	close(fd);
	if (n < 0)
		return -saved;
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
		n--;
	out[n] = 0;
	return n;
}

static int get_u64(const char *rel, uint64_t *v)
{
	char text[32];
	long n = get(rel, text, sizeof text);
	if (n < 0)
		return (int)n;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(text, &end, 10);
	if (errno || end == text || *end)
		return -EINVAL;
	*v = x;
	return 0;
}

/* Whether a space-separated list holds a word. */
static bool has_word(const char *list, const char *word)
{
	size_t len = strlen(word);
	for (const char *s = list; (s = strstr(s, word)); s += len)
		if ((s == list || s[-1] == ' ' || s[-1] == '\n') && (!s[len] || s[len] == ' ' || s[len] == '\n'))
			return true;
	return false;
}

static const char *because(char *why, size_t cap, const char *what, int err)
{
	snprintf(why, cap, "%s (%s)", what, wsp_strerror(err));
	return why;
}

/* Our kdamond's configuration, written in the order the interface needs
 * (each directory exists once its parent's count is written). */
static const char *configure(char *why, size_t cap)
{
	char text[256];
	int err;
	if ((err = put("0/contexts/nr_contexts", "1")))
		return because(why, cap, "cannot add a DAMON context", -err);
	long n = get("0/contexts/0/avail_operations", text, sizeof text);
	if (n >= 0 && !has_word(text, "vaddr")) {
		snprintf(why, cap, "the kernel has no virtual-address monitoring (it offers: %s)", n ? text : "none");
		return why;
	}
	if ((err = put("0/contexts/0/operations", "vaddr")))
		return because(why, cap, "the kernel refused virtual-address monitoring", -err);
	uint64_t aggr = (uint64_t)wsp_cfg.window_ms * 1000u;
	uint64_t sample = wsp_cfg.sample_us < aggr ? wsp_cfg.sample_us : aggr;
	uint64_t max = wsp_cfg.max_regions > MIN_REGIONS ? wsp_cfg.max_regions : MIN_REGIONS;
	if ((err = put_u64("0/contexts/0/monitoring_attrs/intervals/sample_us", sample)) ||
	    (err = put_u64("0/contexts/0/monitoring_attrs/intervals/aggr_us", aggr)) ||
	    (err = put_u64("0/contexts/0/monitoring_attrs/intervals/update_us", aggr * 10)) ||
	    (err = put_u64("0/contexts/0/monitoring_attrs/nr_regions/max", max)) ||
	    (err = put_u64("0/contexts/0/monitoring_attrs/nr_regions/min", MIN_REGIONS)))
		return because(why, cap, "cannot set DAMON's intervals", -err);
	if ((err = put("0/contexts/0/targets/nr_targets", "1")) ||
	    (err = put_u64("0/contexts/0/targets/0/pid_target", (uint64_t)getpid())))
		return because(why, cap, "cannot make this process DAMON's target", -err);
	/* A scheme that does nothing to the memory ("stat") and matches every
	 * region: what it tried is the region list with access counts. */
	if ((err = put("0/contexts/0/schemes/nr_schemes", "1")) ||
	    (err = put("0/contexts/0/schemes/0/action", "stat")) ||
	    (err = put("0/contexts/0/schemes/0/access_pattern/sz/min", "0")) ||
	    (err = put("0/contexts/0/schemes/0/access_pattern/sz/max", "18446744073709551615")) ||
	    (err = put("0/contexts/0/schemes/0/access_pattern/nr_accesses/min", "0")) ||
	    (err = put("0/contexts/0/schemes/0/access_pattern/nr_accesses/max", "4294967295")) ||
	    (err = put("0/contexts/0/schemes/0/access_pattern/age/min", "0")) ||
	    (err = put("0/contexts/0/schemes/0/access_pattern/age/max", "4294967295")))
		return because(why, cap, "cannot set DAMON's scheme", -err);
	if ((err = put("0/state", "on")))
		return because(why, cap, "DAMON refused to start", -err);
	return NULL;
}

const char *wsp_damon_open(char *why, size_t cap)
{
	const char *base = getenv("WSPROF_DAMON_SYSFS");
	snprintf(root, sizeof root, "%s/kdamonds", base && *base ? base : "/sys/kernel/mm/damon/admin");
	active = false;
	uint64_t count;
	int err = get_u64("nr_kdamonds", &count);
	if (err == -ENOENT)
		return "this kernel has no DAMON sysfs interface";
	if (err == -EACCES || err == -EPERM)
		return "needs root";
	if (err)
		return because(why, cap, "cannot read DAMON's sysfs interface", -err);
	if (count) {
		snprintf(why, cap, "%llu kdamond(s) not started by wsprof exist; it adds none beside them",
			 (unsigned long long)count);
		return why;
	}
	if ((err = put("nr_kdamonds", "1")))
		return err == -EACCES || err == -EPERM ? "needs root" : because(why, cap, "cannot add a kdamond", -err);
	const char *failed = configure(why, cap);
	if (failed) {
		put("nr_kdamonds", "0");
		return failed;
	}
	owner = getpid();
	active = true;
	return NULL;
}

bool wsp_damon_active(void)
{
	return active;
}

/* The regions the scheme tried in the kdamond's latest aggregation, those
 * accessed in it into out (sorted by the kernel, by address), at most cap.
 * Blocks until that aggregation ends. @return how many, or -errno (the
 * kdamond stopped: its target is gone, or someone turned it off). */
long wsp_damon_sample(struct wsp_range *out, size_t cap)
{
	if (!active)
		return -ENODEV;
	int err = put("0/state", "update_schemes_tried_regions");
	if (err)
		return err;
	size_t n = 0;
	for (unsigned i = 0; n < cap; i++) {
		char rel[96];
		uint64_t start, end, hits;
		snprintf(rel, sizeof rel, "0/contexts/0/schemes/0/tried_regions/%u/start", i);
		if (get_u64(rel, &start))
			break;
		snprintf(rel, sizeof rel, "0/contexts/0/schemes/0/tried_regions/%u/end", i);
		if (get_u64(rel, &end))
			break;
		snprintf(rel, sizeof rel, "0/contexts/0/schemes/0/tried_regions/%u/nr_accesses", i);
		if (get_u64(rel, &hits))
			break;
		if (!hits || end <= start)
			continue;
		if (n && out[n - 1].start + out[n - 1].len == start)
			out[n - 1].len += end - start; /* neighbours accessed alike are one range */
		else
			out[n++] = (struct wsp_range){ start, end - start };
	}
	return (long)n;
}

/* Stop reading (the kdamond stopped, or recording did). */
void wsp_damon_close(void)
{
	atomic_store(&active, false);
	pid_t self = getpid(), expected = self;
	/* Once, whether the sampler (its kdamond stopped) or exit gets here first. */
	if (!atomic_compare_exchange_strong(&owner, &expected, 0))
		return;
	uint64_t count;
	put("0/state", "off");
	/* Still only ours: give the slot back as we found it. */
	if (get_u64("nr_kdamonds", &count) == 0 && count == 1)
		put("nr_kdamonds", "0");
}

/* In a forked child: the kdamond watches the parent. */
void wsp_damon_forget_after_fork(void)
{
	active = false;
}
