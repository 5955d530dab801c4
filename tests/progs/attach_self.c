/*
 * attach_self - what `wsprof attach` does to a process, done by the
 * process to itself: it loads libwsprof.so with dlopen (nothing preloaded)
 * and calls wsprof_attach_begin() and wsprof_attach_end() around two
 * spans, keeping the books of each.
 *
 * usage: attach_self DIR LIBWSPROF
 *
 * Before the first span a block is allocated (freed in the span: an
 * untracked free) and a thread is started that allocates inside the span
 * (a thread older than the attach). DIR/t1.wsp and DIR/t2.wsp are the
 * traces, DIR/expect1.json and DIR/expect2.json their books, and
 * DIR/after.json what the program saw once both ended: whether malloc
 * reached the hook during a span and the C library again after it (the
 * GOT slot restored), and its threads before and after.
 */
#include "account.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

typedef int (*begin_fn)(const char *, const char *);
typedef int (*end_fn)(void);

static struct account heap1, heap2, map1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int step;

static void *older_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	while (step < 1)
		pthread_cond_wait(&cond, &lock);
	char *d = malloc(500); /* inside the first span, on a thread older than it */
	account_keep(d);
	account_alloc(&heap1, 500);
	step = 2;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static unsigned threads_now(void)
{
	DIR *d = opendir("/proc/self/task");
	unsigned n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static void books(const char *dir, const char *name, const struct account *heap, const struct account *map)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	struct expect e;
	expect_init(&e);
	expect_account(&e, "heap", heap);
	if (map)
		expect_account(&e, "mmap", map);
	expect_write(&e, path);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		complain("usage: attach_self DIR LIBWSPROF");
		return 2;
	}
	const char *dir = argv[1];
	char t1[4096], t2[4096];
	snprintf(t1, sizeof t1, "%s/t1.wsp", dir);
	snprintf(t2, sizeof t2, "%s/t2.wsp", dir);
	void *(*volatile malloc_before)(size_t) = malloc;
	char *a = malloc(1000);
	account_keep(a);
	pthread_t th;
	pthread_create(&th, NULL, older_thread, NULL);
	struct timespec settle = { 0, 300 * 1000000 };
	nanosleep(&settle, NULL);
	unsigned threads_before = threads_now() - 1; /* older_thread ends in the first span */

	void *lib = dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL);
	begin_fn begin = lib ? (begin_fn)dlsym(lib, "wsprof_attach_begin") : NULL;
	end_fn end = lib ? (end_fn)dlsym(lib, "wsprof_attach_end") : NULL;
	if (!begin || !end) {
		complain("attach_self: cannot load %s: %s", argv[2], dlerror());
		return 1;
	}
	int r = begin(t1, NULL);
	if (r != 0) {
		complain("attach_self: wsprof_attach_begin: %d", r);
		return 1;
	}
	void *(*volatile malloc_during)(size_t) = malloc;
	char *b = malloc(300), *c = malloc(400);
	account_keep(b);
	account_keep(c);
	account_alloc(&heap1, 300);
	account_alloc(&heap1, 400);
	free(a); /* allocated before: an untracked free */
	pthread_mutex_lock(&lock);
	step = 1;
	pthread_cond_broadcast(&cond);
	while (step < 2)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	pthread_join(th, NULL);
	free(b);
	account_free(&heap1, 300);
	void *m = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	account_alloc(&map1, 65536);
	munmap(m, 65536);
	account_free(&map1, 65536);
	if (end() != 0 || end() == 0)
		complain("attach_self: the first span did not end once");

	free(c); /* after the span: not in any trace */
	char *e = malloc(50);
	account_keep(e);
	if (begin(t2, NULL) != 0 || begin(t2, NULL) != -16 /* -EBUSY: it records already */) {
		complain("attach_self: the second attach did not begin once");
		return 1;
	}
	char *f = malloc(600);
	account_keep(f);
	account_alloc(&heap2, 600);
	free(e);
	end();
	void *(*volatile malloc_after)(size_t) = malloc;
	nanosleep(&settle, NULL);
	books(dir, "expect1.json", &heap1, &map1);
	books(dir, "expect2.json", &heap2, NULL);

	char path[4096];
	snprintf(path, sizeof path, "%s/after.json", dir);
	struct expect x;
	expect_init(&x);
	expect_uint(&x, "hooked_during", malloc_during != malloc_before);
	expect_uint(&x, "restored_after", malloc_after == malloc_before);
	expect_uint(&x, "threads_before", threads_before);
	expect_uint(&x, "threads_after", threads_now());
	return expect_write(&x, path) == 0 ? 0 : 1;
}
