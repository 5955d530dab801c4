/*
 * fd_probe - what a program sees of its file descriptors.
 *
 * usage: fd_probe EXPECT
 *
 * Writes {"first_fd": N, "low_fds": M, "fds": F, "threads": T}: the
 * descriptor a fresh open() gets (the lowest free one), how many
 * descriptors below 100 are open, how many are open in all, and how many
 * threads the process has. Under wsprof the first two must be what they
 * are in a plain run: wsprof's own descriptors (its trace, libunwind's
 * pipe) sit high, out of the way; in a process wsprof does not record
 * (--follow), all four: it opens nothing and starts no thread.
 */
#include "account.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: fd_probe EXPECT");
		return 2;
	}
	int fd = open("/dev/null", O_RDONLY);
	uint64_t low_fds = 0, fds = 0, threads = 0;
	DIR *d = opendir("/proc/self/fd");
	int own = d ? dirfd(d) : -1;
	for (struct dirent *de; d && (de = readdir(d));) {
		int n = de->d_name[0] == '.' ? -1 : atoi(de->d_name);
		low_fds += n >= 0 && n < 100 && n != own && n != fd;
		fds += n >= 0 && n != own && n != fd;
	}
	if (d)
		closedir(d);
	d = opendir("/proc/self/task");
	for (struct dirent *de; d && (de = readdir(d));)
		threads += de->d_name[0] != '.';
	if (d)
		closedir(d);
	struct expect e;
	expect_init(&e);
	expect_uint(&e, "first_fd", (uint64_t)fd);
	expect_uint(&e, "low_fds", low_fds);
	expect_uint(&e, "fds", fds);
	expect_uint(&e, "threads", threads);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
