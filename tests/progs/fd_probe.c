/*
 * fd_probe - what a program sees of its file descriptors.
 *
 * usage: fd_probe EXPECT
 *
 * Writes {"first_fd": N, "low_fds": M}: the descriptor a fresh open()
 * gets (the lowest free one) and how many descriptors below 100 are open.
 * Under wsprof both must be what they are in a plain run: wsprof's own
 * descriptors (its trace, libunwind's pipe) sit high, out of the way.
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
	uint64_t low_fds = 0;
	DIR *d = opendir("/proc/self/fd");
	int own = d ? dirfd(d) : -1;
	for (struct dirent *de; d && (de = readdir(d));) {
		int n = de->d_name[0] == '.' ? -1 : atoi(de->d_name);
		low_fds += n >= 0 && n < 100 && n != own && n != fd;
	}
	if (d)
		closedir(d);
	struct expect e;
	expect_init(&e);
	expect_uint(&e, "first_fd", (uint64_t)fd);
	expect_uint(&e, "low_fds", low_fds);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
