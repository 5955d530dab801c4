/*
 * alloc_hostile - a program that undoes its surroundings while recorded.
 *
 * usage: alloc_hostile EXPECT MODE [DIR]
 *
 * Allocates and frees a few blocks, then does one hostile thing, then
 * allocates and frees some more and leaks a block, so the books can only
 * match if recording survived. MODE is:
 *   unsetenv    removes LD_PRELOAD from its environment, then starts
 *               /bin/true with posix_spawn (which gets that environment)
 *   close-loop  close() on every descriptor from 3 up to the limit, as
 *               daemons and shells do
 *   closefrom   closefrom(3)
 *   close-range close_range(3, ~0U, 0)
 *   chdir       chdir(DIR), then forks a child that allocates with books
 *               of its own, and exits from DIR: traces named by a
 *               relative path must not follow it there
 * After the hostile step it opens /dev/null and records the descriptor it
 * got ("first_fd": 3 when every low one was closed), so a test can check
 * that wsprof kept nothing of its own in the program's way.
 * The expect file: {"pid": P, "heap": ..., "first_fd": N,
 *                   ["child_pid": C, "child": {"heap": ...}]}
 */
#include "account.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static struct account heap;

static void *counted(struct account *a, size_t size)
{
	void *p = malloc(size);
	account_keep(p);
	account_alloc(a, size);
	return p;
}

static void release(struct account *a, void *p, size_t size)
{
	account_keep(p);
	free(p);
	account_free(a, size);
}

/* Enough calls that some of them sit in the buffers when the step comes. */
static void churn(struct account *a, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		release(a, counted(a, 24 + i % 200), 24 + i % 200);
}

static int spawn_true(void)
{
	pid_t pid;
	char *argv[] = { "/bin/true", NULL };
	if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) != 0)
		return -1;
	int status;
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void close_loop(void)
{
	struct rlimit rl;
	int limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
	for (int fd = 3; fd < limit; fd++)
		close(fd);
}

/* The child's books go to the parent through a pipe, as in alloc_fork. */
static pid_t fork_child(char *text, size_t cap)
{
	int fds[2];
	if (pipe(fds) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		struct account mine = { 0 };
		churn(&mine, 100);
		account_keep(counted(&mine, 4321));
		struct expect e;
		expect_init(&e);
		expect_account(&e, "heap", &mine);
		expect_write_fd(&e, fds[1]);
		_exit(0);
	}
	close(fds[1]);
	size_t got = 0;
	for (ssize_t n; pid > 0 && (n = read(fds[0], text + got, cap - 1 - got)) > 0;)
		got += (size_t)n;
	text[got] = 0;
	close(fds[0]);
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) || !got)
		return -1;
	return pid;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		complain("usage: alloc_hostile EXPECT unsetenv|close-loop|closefrom|close-range|chdir [DIR]");
		return 2;
	}
	const char *mode = argv[2];
	churn(&heap, 500);
	void *kept = counted(&heap, 1000);

	char child_text[4096] = "";
	pid_t child = 0;
	if (strcmp(mode, "unsetenv") == 0) {
		if (unsetenv("LD_PRELOAD") < 0 || getenv("LD_PRELOAD") || spawn_true() < 0) {
			complain("alloc_hostile: unsetenv or posix_spawn failed");
			return 2;
		}
	} else if (strcmp(mode, "close-loop") == 0) {
		close_loop();
	} else if (strcmp(mode, "closefrom") == 0) {
		closefrom(3);
	} else if (strcmp(mode, "close-range") == 0) {
		if (close_range(3, ~0U, 0) < 0) {
			complain("alloc_hostile: close_range failed");
			return 2;
		}
	} else if (strcmp(mode, "chdir") == 0 && argc > 3) {
		if (chdir(argv[3]) < 0 || (child = fork_child(child_text, sizeof child_text)) < 0) {
			complain("alloc_hostile: chdir %s or the child failed", argv[3]);
			return 2;
		}
	} else {
		complain("alloc_hostile: unknown mode %s", mode);
		return 2;
	}

	int fd = open("/dev/null", O_RDONLY);
	churn(&heap, 500);
	release(&heap, kept, 1000);
	account_keep(counted(&heap, 777)); /* leaked */

	struct expect e;
	expect_init(&e);
	expect_uint(&e, "pid", (uint64_t)getpid());
	expect_account(&e, "heap", &heap);
	expect_uint(&e, "first_fd", (uint64_t)fd);
	if (child) {
		expect_uint(&e, "child_pid", (uint64_t)child);
		expect_raw(&e, "child", child_text);
	}
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
