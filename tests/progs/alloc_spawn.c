/*
 * alloc_spawn - children started by vfork and posix_spawn.
 *
 * usage: alloc_spawn EXPECT PROGRAM DIR
 *
 * Between allocations of its own, starts PROGRAM (alloc_basic makes a
 * good one) four ways and waits for each: vfork + execv, posix_spawn,
 * posix_spawnp (given a path, which it takes as is), and a vfork child
 * that calls _exit(7) without exec. A started PROGRAM gets DIR/NAME.json as its
 * expect file, for NAME in vfork, spawn, spawnp. The expect file:
 *   {"heap": ..., "pids": {"vfork": P, "spawn": P, "spawnp": P, "vfork_exit": P}}
 * A child that fails makes the program exit 2.
 */
#include "account.h"

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static struct account heap;

static void churn(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = malloc(40 + i);
		account_keep(p);
		account_alloc(&heap, 40 + i);
		free(p);
		account_free(&heap, 40 + i);
	}
}

static bool exited(pid_t pid, int want)
{
	int status;
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == want;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		complain("usage: alloc_spawn EXPECT PROGRAM DIR");
		return 2;
	}
	const char *prog = argv[2], *dir = argv[3];
	static const char *const names[] = { "vfork", "spawn", "spawnp" };
	char expect_of[3][4096];
	for (int i = 0; i < 3; i++)
		snprintf(expect_of[i], sizeof expect_of[i], "%s/%s.json", dir, names[i]);
	pid_t pids[4];

	churn(50);
	void *kept = malloc(2500);
	account_keep(kept);
	account_alloc(&heap, 2500);

	char *vfork_argv[] = { (char *)prog, expect_of[0], "plain", "leaks", NULL };
	pids[0] = vfork();
	if (pids[0] == 0) {
		execv(prog, vfork_argv);
		_exit(127);
	}
	churn(50);
	char *spawn_argv[] = { (char *)prog, expect_of[1], "plain", "leaks", NULL };
	if (posix_spawn(&pids[1], prog, NULL, NULL, spawn_argv, environ) != 0)
		pids[1] = -1;
	char *spawnp_argv[] = { (char *)prog, expect_of[2], "realloc", NULL };
	if (posix_spawnp(&pids[2], prog, NULL, NULL, spawnp_argv, environ) != 0)
		pids[2] = -1;
	pids[3] = vfork();
	if (pids[3] == 0)
		_exit(7);
	churn(50);

	bool ok = exited(pids[0], 0) & exited(pids[1], 0) & exited(pids[2], 0) & exited(pids[3], 7);
	free(kept);
	account_free(&heap, 2500);
	account_keep(malloc(99));
	account_alloc(&heap, 99);
	if (!ok) {
		complain("alloc_spawn: a child failed");
		return 2;
	}

	struct expect e;
	expect_init(&e);
	expect_account(&e, "heap", &heap);
	expect_open(&e, "pids");
	for (int i = 0; i < 3; i++)
		expect_uint(&e, names[i], (uint64_t)pids[i]);
	expect_uint(&e, "vfork_exit", (uint64_t)pids[3]);
	expect_close(&e);
	expect_uint(&e, "threads", 1);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
