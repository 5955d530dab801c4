/*
 * alloc_fork - a parent and a forked child, each with its own books.
 *
 * usage: alloc_fork EXPECT
 *
 * The parent allocates, forks, and goes on allocating; the child frees a
 * block it inherited (a free its own trace cannot match: "untracked"),
 * allocates, reallocates and leaks its own blocks, sends its figures to
 * the parent through a pipe and exits. The expect file holds both:
 *   {"pid": P, "child_pid": C, "parent": {"heap": ...},
 *    "child": {"heap": ..., "untracked_frees": 1}}
 */
#include "account.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct account parent_heap, child_heap;

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

static void child(void *inherited, int out)
{
	free(inherited);          /* allocated before the fork: untracked here */
	void *a = counted(&child_heap, 500);
	void *b = counted(&child_heap, 700);
	release(&child_heap, a, 500);
	b = realloc(b, 900);
	account_resize(&child_heap, 700, 900);
	account_keep(b);          /* leaked */

	struct expect e;
	expect_init(&e);
	expect_account(&e, "heap", &child_heap);
	expect_uint(&e, "untracked_frees", 1);
	expect_write_fd(&e, out);
	exit(0);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: alloc_fork EXPECT");
		return 2;
	}
	int pipefd[2];
	if (pipe(pipefd) < 0)
		return 2;
	void *shared = counted(&parent_heap, 1000);
	void *kept = counted(&parent_heap, 300); /* leaked by the parent */
	account_keep(kept);

	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		close(pipefd[0]);
		child(shared, pipefd[1]);
	}
	close(pipefd[1]);
	release(&parent_heap, counted(&parent_heap, 2000), 2000);

	char child_text[4096];
	size_t got = 0;
	for (ssize_t n; (n = read(pipefd[0], child_text + got, sizeof child_text - 1 - got)) > 0;)
		got += (size_t)n;
	child_text[got] = 0;
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !got) {
		complain("alloc_fork: the child failed");
		return 2;
	}
	release(&parent_heap, shared, 1000);

	struct expect e;
	expect_init(&e);
	expect_uint(&e, "pid", (uint64_t)getpid());
	expect_uint(&e, "child_pid", (uint64_t)pid);
	expect_open(&e, "parent");
	expect_account(&e, "heap", &parent_heap);
	expect_close(&e);
	expect_raw(&e, "child", child_text);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
