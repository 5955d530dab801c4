/*
 * alloc_locked - allocations that reach wsprof while the program is inside
 * a library function holding a lock wsprof's own paths could take.
 *
 * usage: alloc_locked EXPECT
 *
 * glibc's pthread_getattr_np reallocs while it holds the thread's lock. A
 * new thread whose very first allocation is that realloc (as in every
 * Rust program's std::rt::init and the JVM's threads), the main thread's
 * call (which also fopens /proc/self/maps), and then ordinary allocations
 * on both threads, with the books of the program's own (account.h): the
 * calls glibc makes inside are glibc's, left out with --caller.
 */
#include "account.h"

#include <pthread.h>
#include <stdlib.h>

#define BLOCKS 100

static struct account heap;
static pthread_mutex_t books_lock = PTHREAD_MUTEX_INITIALIZER;

static int describe_self(void)
{
	pthread_attr_t attr;
	void *lo;
	size_t len;
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return -1;
	int r = pthread_attr_getstack(&attr, &lo, &len);
	pthread_attr_destroy(&attr);
	return r == 0 && len ? 0 : -1;
}

static void allocate_some(void)
{
	for (unsigned i = 0; i < BLOCKS; i++) {
		size_t size = 16 + i * 8;
		void *p = malloc(size);
		if (!p)
			abort();
		account_keep(p);
		free(p);
		pthread_mutex_lock(&books_lock);
		account_alloc(&heap, size);
		account_free(&heap, size);
		pthread_mutex_unlock(&books_lock);
	}
}

static void *thread_main(void *arg)
{
	(void)arg;
	if (describe_self() != 0) /* the thread's first allocation is inside */
		return (void *)1;
	allocate_some();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		complain("usage: alloc_locked EXPECT");
		return 2;
	}
	if (describe_self() != 0)
		return 1;
	pthread_t t;
	void *failed = (void *)1;
	if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, &failed) != 0 || failed)
		return 1;
	allocate_some();
	struct expect e;
	expect_init(&e);
	expect_account(&e, "heap", &heap);
	return expect_write(&e, argv[1]) == 0 ? 0 : 2;
}
