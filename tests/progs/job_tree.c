/*
 * job_tree.c - a small tree of processes with known memory, for the
 * reports of a job (tests/reports/test_job.c): the parent keeps 1 MiB
 * (parent_work) and forks three children; child i keeps i + 1 MiB
 * (child_work) and exits; the first child then also execs this program
 * again, which keeps 512 KiB (exec_work). Everything kept is leaked, so
 * each process's peak and leaked bytes are those figures (plus the C
 * library's own few blocks, which the test leaves out by site).
 *
 * usage: job_tree EXPECT [exec]   (EXPECT: ignored, the harness's first argument)
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile kept[4];

__attribute__((noinline)) static void parent_work(void)
{
	kept[0] = malloc(1 << 20);
	memset(kept[0], 1, 1 << 20);
}

__attribute__((noinline)) static void child_work(int i)
{
	size_t n = (size_t)(i + 1) << 20;
	kept[1] = malloc(n);
	memset(kept[1], 2, n);
}

__attribute__((noinline)) static void exec_work(void)
{
	kept[2] = malloc(512 << 10);
	memset(kept[2], 3, 512 << 10);
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[2], "exec")) {
		exec_work();
		return 0;
	}
	parent_work();
	for (int i = 0; i < 3; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			child_work(i);
			if (i == 0) {
				execl("/proc/self/exe", argv[0], argc > 1 ? argv[1] : "-", "exec", (char *)NULL);
				_exit(127);
			}
			_exit(0);
		}
		int status;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
	}
	return 0;
}
