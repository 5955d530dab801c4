/*
 * alloc_vanish - allocate on several threads, then end at once, in a way
 * that runs no exit handler.
 *
 * usage: alloc_vanish EXPECT HOW [THREADS [BLOCKS]]   (default 4, 20000)
 *
 * THREADS threads each allocate BLOCKS blocks (of 16 to 2063 bytes) and
 * free every third one; when all have joined, the program writes EXPECT
 * and ends straight away, well within one flush interval, so most of what
 * was recorded is still in memory:
 *   kill        raise(SIGKILL): what the OOM killer does
 *   exit_group  the raw exit_group system call with status 3, as Go's
 *               runtime ends a process
 *   exit        exit(5), for comparison: the recorder finishes the trace
 *   thread_exit another thread calls _exit(6) while the main thread waits
 *               for it: the recorder finishes the trace from there
 *   child_kill  a forked child does the work and raises SIGKILL; the
 *               parent writes EXPECT with the child's books and pid
 *   forever     never ends: the threads allocate and free until killed
 *               (a test kills it at a moment of its choosing)
 * Under wsprof record every event must be in the trace all the same.
 */
#include "account.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static struct account heap[64];
static unsigned long blocks = 20000;

static int forever;

static void *exit_now(void *arg)
{
	(void)arg;
	_exit(6);
}

static void *worker(void *arg)
{
	struct account *a = arg;
	for (unsigned long i = 0; forever || i < blocks; i++) {
		size_t size = 16 + (i * 7919u) % 2048u;
		void *p = malloc(size);
		account_keep(p);
		account_alloc(a, size);
		if (i % 3 == 0) {
			free(p);
			account_free(a, size);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		complain("usage: alloc_vanish EXPECT kill|exit_group|exit|thread_exit|child_kill|forever [THREADS [BLOCKS]]");
		return 2;
	}
	unsigned long threads = argc > 3 ? strtoul(argv[3], NULL, 10) : 4;
	if (argc > 4)
		blocks = strtoul(argv[4], NULL, 10);
	if (threads < 1 || threads > 64) {
		complain("alloc_vanish: 1 to 64 threads");
		return 2;
	}
	forever = strcmp(argv[2], "forever") == 0;
	pid_t child = strcmp(argv[2], "child_kill") == 0 ? fork() : 0;
	if (child < 0)
		return 2;
	if (child > 0) {
		int status;
		while (waitpid(child, &status, 0) < 0)
			;
		return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : 1;
	}
	pthread_t th[64];
	for (unsigned long i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, &heap[i]);
	for (unsigned long i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	struct account all = { 0 };
	for (unsigned long i = 0; i < threads; i++) {
		all.allocations += heap[i].allocations;
		all.frees += heap[i].frees;
		all.total_bytes += heap[i].total_bytes;
		all.live_bytes += heap[i].live_bytes;
		all.live_blocks += heap[i].live_blocks;
	}
	struct expect e;
	expect_init(&e);
	expect_uint(&e, "pid", (uint64_t)getpid());
	expect_uint(&e, "threads", threads + 1); /* and the main thread (pthread_create allocates) */
	expect_open(&e, "heap");
	expect_uint(&e, "allocations", all.allocations);
	expect_uint(&e, "frees", all.frees);
	expect_uint(&e, "total_bytes", all.total_bytes);
	expect_uint(&e, "leaked_bytes", all.live_bytes);
	expect_uint(&e, "leaked_blocks", all.live_blocks);
	expect_close(&e);
	if (expect_write(&e, argv[1]) < 0)
		return 2;
	if (strcmp(argv[2], "kill") == 0 || strcmp(argv[2], "child_kill") == 0)
		raise(SIGKILL);
	else if (strcmp(argv[2], "exit_group") == 0)
		syscall(SYS_exit_group, 3);
	else if (strcmp(argv[2], "exit") == 0)
		exit(5);
	else if (strcmp(argv[2], "thread_exit") == 0) {
		pthread_t t;
		pthread_create(&t, NULL, exit_now, NULL);
		pthread_join(t, NULL);
	}
	complain("alloc_vanish: HOW is kill, exit_group, exit, thread_exit, child_kill or forever");
	return 2;
}
