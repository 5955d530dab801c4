/*
 * threads.c - the threads wsprof starts in the program (the writer, the
 * access sampler).
 */

#include "base.h"
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* wsprof's threads alive in this process (a forked child has none until
 * it starts its own): the program's are the others. */
static _Atomic int own_threads;

static void *run(void *arg)
{
	void *(*fn)(void *) = (void *(*)(void *))arg;
	void *r = fn(NULL);
	atomic_fetch_sub(&own_threads, 1);
	return r;
}

bool wsp_threads_only_own(void)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* After the command's closing parenthesis: state is field 3, the
	 * number of threads field 20. A leader thread that ended is a zombie
	 * still counted there while other threads live. */
	const char *p = strrchr(buf, ')');
	char state = p && p[1] == ' ' ? p[2] : 0;
	for (int field = 2; p && field < 20; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return false;
	long threads = strtol(p + 1, NULL, 10), own = atomic_load(&own_threads);
	return threads > 0 && own > 0 && (threads <= own || (state == 'Z' && threads <= own + 1));
}

void wsp_threads_reset_after_fork(void)
{
	atomic_store(&own_threads, 0);
}

/* wsprof's own threads take none of the program's signals: its handlers
 * run on its threads only, and a write past RLIMIT_FSIZE fails with EFBIG
 * (recording stops, with a warning) instead of raising SIGXFSZ, which
 * would end a program that never wrote that file itself. They are born
 * with every signal blocked: blocking them from the thread itself left a
 * moment in which a program's timer signal could run its handler on a
 * thread of wsprof's. */
int wsp_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *))
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_fetch_add(&own_threads, 1);
	int err = pthread_create(th, attr, run, (void *)fn);
	if (err)
		atomic_fetch_sub(&own_threads, 1);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}
