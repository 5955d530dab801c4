/*
 * hooks_pthread.c - pthread functions that allocate while holding a lock
 * wsprof itself needs.
 *
 * glibc's pthread_getattr_np locks the thread it describes and, holding
 * that lock, reallocs a CPU set (and, for the main thread, fopens
 * /proc/self/maps). A thread whose first allocation is that realloc came
 * into wsprof, which asked pthread_getattr_np for the thread's stack
 * (stacks.c, once per thread) and waited forever on the lock it already
 * held: every Rust program (std::rt::init) and the JVM's threads hung.
 * While the program's call runs, the thread is marked (wsp_tls.no_stack_query)
 * and stacks.c does not ask: what the call allocates is recorded as any
 * allocation, its stack unwound without the memo that needs the bounds,
 * which is made at the thread's next allocation instead.
 *
 * Reentrancy: only the mark is touched; errno is the real function's.
 */

#include "hooks.h"
#include "base.h"
#include <pthread.h>

WSPROF_EXPORT int pthread_getattr_np(pthread_t th, pthread_attr_t *attr)
{
	if (!wsp_real.pthread_getattr_np)
		wsp_real_resolve();
	if (!wsp_real.pthread_getattr_np)
		return EAGAIN; /* another thread is resolving: as glibc says when it cannot allocate */
	wsp_tls.no_stack_query++;
	int r = wsp_real.pthread_getattr_np(th, attr);
	wsp_tls.no_stack_query--;
	return r;
}
