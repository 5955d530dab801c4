/*
 * fds.c - descriptors wsprof holds, kept out of the program's way and
 * out of its reach.
 *
 * A program may rely on open() returning the lowest free descriptor, or
 * close and reuse low numbers. wsprof's trace file, the sampler's files,
 * and the pipe libunwind opens for itself on the first unwind, are moved
 * to high numbers. The pipe2 hook acts only for calls made inside wsprof
 * (the guard is held); the program's own calls pass straight through.
 *
 * Daemons, shells and subprocess launchers close every descriptor they do
 * not know about (a close() loop up to the limit, closefrom, close_range).
 * While this process records, a descriptor of wsprof's is not the
 * program's to close: close() answers EBADF, as for a number that is not
 * open, and closefrom/close_range close everything around it. Without
 * this the trace would end there and, worse, libunwind would go on
 * reading and writing its pipe's numbers, whatever files the program later
 * opened there. wsprof's own close() calls (guard held) go through and
 * forget the number.
 * Beyond reach: a direct syscall(SYS_close, ...), and a dup2() onto one of
 * these numbers, which the program then owns while wsprof goes on writing
 * to it (no program seen so far aims dup2 at numbers it never opened).
 *
 * Signal safety: the table is a fixed array of atomics; the hooks take no
 * lock and allocate nothing.
 */

#include "base.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The trace, userfaultfd, pagemap, maps, statm, libunwind's two pipe
 * ends: a few, with room to spare. Each slot holds descriptor + 1, 0 when
 * free. */
#define OWN_MAX 16
static _Atomic int own[OWN_MAX];

static void own_add(int fd)
{
	for (int i = 0; i < OWN_MAX; i++) {
		int free_slot = 0;
		if (atomic_compare_exchange_strong(&own[i], &free_slot, fd + 1))
			return;
	}
}

static bool own_has(int fd)
{
	for (int i = 0; i < OWN_MAX; i++)
		if (atomic_load_explicit(&own[i], memory_order_relaxed) == fd + 1)
			return true;
	return false;
}

static void own_forget(int fd)
{
	for (int i = 0; i < OWN_MAX; i++) {
		int mine = fd + 1;
		atomic_compare_exchange_strong(&own[i], &mine, 0);
	}
}

/* A program's call must leave this descriptor alone: it is wsprof's and
 * recording is on. When recording is off (finished, or a child not
 * followed) the program may close it like any other. */
static bool protected_fd(int fd)
{
	return !wsp_tls.guard && fd >= 0 && atomic_load(&wsp_state) == WSP_ACTIVE && own_has(fd);
}

int wsp_fd_move_high(int fd)
{
	struct rlimit rl;
	int floor = 1000;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 1200)
		floor = rl.rlim_cur > 64 ? (int)rl.rlim_cur - 32 : 3;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, floor);
	if (high >= 0) {
		close(fd);
		fd = high;
	}
	own_add(fd);
	return fd;
}

WSPROF_EXPORT int pipe2(int fds[2], int flags)
{
	static int (*real_pipe2)(int[2], int);
	if (!real_pipe2)
		real_pipe2 = (int (*)(int[2], int))dlsym(RTLD_NEXT, "pipe2");
	int r = real_pipe2(fds, flags);
	if (r == 0 && wsp_tls.guard) {
		fds[0] = wsp_fd_move_high(fds[0]);
		fds[1] = wsp_fd_move_high(fds[1]);
	}
	return r;
}

WSPROF_EXPORT int close(int fd)
{
	static int (*real_close)(int);
	if (!real_close)
		real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
	if (protected_fd(fd)) {
		errno = EBADF;
		return -1;
	}
	/* Forgotten first: once closed, the number may be someone else's. */
	own_forget(fd);
	return real_close ? real_close(fd) : (int)syscall(SYS_close, fd);
}

static int sys_close_range(unsigned first, unsigned last, int flags)
{
	return (int)syscall(SYS_close_range, first, last, flags);
}

/* The lowest descriptor of wsprof's in [from, last], if any. */
static bool own_lowest(unsigned from, unsigned last, unsigned *out)
{
	unsigned best = last;
	bool found = false;
	for (int i = 0; i < OWN_MAX; i++) {
		int v = atomic_load(&own[i]);
		if (v > 0 && (unsigned)(v - 1) >= from && (unsigned)(v - 1) <= best) {
			best = (unsigned)(v - 1);
			found = true;
		}
	}
	*out = best;
	return found;
}

/* Close [first, last] except wsprof's descriptors, which split it into
 * the ranges around them. */
static int close_range_around(unsigned first, unsigned last, int flags)
{
	if (flags & CLOSE_RANGE_CLOEXEC) /* only marks them; wsprof's are close-on-exec already */
		return sys_close_range(first, last, flags);
	unsigned fd;
	if (wsp_tls.guard || atomic_load(&wsp_state) != WSP_ACTIVE) {
		while (own_lowest(first, last, &fd)) /* each found is forgotten: the next is another */
			own_forget((int)fd);
		return sys_close_range(first, last, flags);
	}
	for (unsigned from = first;; from = fd + 1) {
		if (!own_lowest(from, last, &fd))
			return sys_close_range(from, last, flags);
		if (fd > from && sys_close_range(from, fd - 1, flags) < 0)
			return -1;
		if (fd == last)
			return 0;
	}
}

WSPROF_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	if (first > last) {
		errno = EINVAL;
		return -1;
	}
	return close_range_around(first, last, flags);
}

/* glibc's closefrom calls close_range inside libc, out of the hook's
 * reach: the same here, through the hook's rules; on a kernel without
 * close_range, close() of each number up to the limit. */
WSPROF_EXPORT void closefrom(int lowfd)
{
	unsigned first = lowfd < 0 ? 0 : (unsigned)lowfd;
	if (close_range_around(first, ~0U, 0) == 0 || errno != ENOSYS)
		return;
	struct rlimit rl;
	rlim_t limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
	if (limit > INT_MAX)
		limit = INT_MAX;
	for (rlim_t fd = first; fd < limit; fd++)
		close((int)fd);
}
