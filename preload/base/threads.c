/*
 * threads.c - the threads wsprof starts in the program (the writer, the
 * access sampler).
 */

#include "base.h"
#include <pthread.h>
#include <signal.h>

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
	int err = pthread_create(th, attr, fn, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}
