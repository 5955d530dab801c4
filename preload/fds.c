/*
 * fds.c - descriptors wsprof holds, kept out of the program's way.
 *
 * A program may rely on open() returning the lowest free descriptor, or
 * close and reuse low numbers. wsprof's trace file, and the pipe libunwind
 * opens for itself on the first unwind, are moved to high numbers. The
 * pipe2 hook acts only for calls made inside wsprof (the guard is held);
 * the program's own calls pass straight through.
 */
#include "wsp.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

int wsp_fd_move_high(int fd)
{
	struct rlimit rl;
	int floor = 1000;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 1200)
		floor = rl.rlim_cur > 64 ? (int)rl.rlim_cur - 32 : 3;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, floor);
	if (high < 0)
		return fd;
	close(fd);
	return high;
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
