/*
 * alloc_stress - threads allocating at random, freeing each other's blocks,
 * coming and going, and a main thread that forks meanwhile.
 *
 * usage: alloc_stress EXPECT THREADS MS [FORKS [SEED]]
 *
 * THREADS workers (1 to 16) run for MS milliseconds, each a random walk
 * over SLOTS slots of its own: malloc into an empty slot; for a full one,
 * free it, realloc it (to a new size, or to 0, which frees), or hand it to
 * the exchange, a ring from which every worker takes blocks to free, so
 * that blocks die on other threads than their own. Sizes run from 0 to a
 * few KiB, with one in 64 past glibc's mmap threshold. A spawner thread
 * starts short-lived threads one after another, each allocating, freeing,
 * handing blocks to the exchange and exiting while the workers go on.
 * Meanwhile the main thread forks FORKS times (default 0), evenly over MS:
 * each child, alone in its process, allocates with books of its own,
 * sends them through a pipe and leaves with _exit.
 * At the end the main thread frees what the exchange holds and every
 * worker's blocks but worker 0's, which are leaked.
 *
 * The expect file: {"heap": ..., "heap_peak": {"min", "max"} (see
 * shared_books.h), "threads": main + workers + spawner + short-lived ones,
 * "forks": N, "children": {"1": {"pid": P, "heap": ...}, ...}}.
 */
#include "shared_books.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 16
#define SLOTS 256
#define RING 4096
#define MAX_FORKS 16

struct block {
	void *p;
	size_t size;
};

static struct shared_books heap;
static struct block slots[MAX_THREADS][SLOTS];
static _Atomic bool stop;
static _Atomic uint64_t threads_seen;

static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block ring[RING];
static size_t ring_head, ring_len;

static uint64_t next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static size_t random_size(uint64_t *s)
{
	uint64_t r = next_random(s);
	return r % 64 == 0 ? 200000 + r % 100000 : r % 4000;
}

static void *book_malloc(size_t size)
{
	shared_will_alloc(&heap, size);
	void *p = malloc(size);
	if (!p) {
		complain("alloc_stress: malloc(%zu) failed", size);
		exit(2);
	}
	shared_did_alloc(&heap, size);
	return p;
}

static void book_free(struct block b)
{
	shared_will_free(&heap, b.size);
	free(b.p);
	shared_did_free(&heap, b.size);
}

/* realloc(p, 0) frees p (glibc returns NULL): a free, no allocation. */
static struct block book_realloc(struct block b, size_t size)
{
	shared_will_free(&heap, b.size);
	if (size)
		shared_will_alloc(&heap, size);
	void *p = realloc(b.p, size);
	if (size && !p) {
		complain("alloc_stress: realloc(%zu) failed", size);
		exit(2);
	}
	if (size)
		shared_did_alloc(&heap, size);
	shared_did_free(&heap, b.size);
	return (struct block){ size ? p : NULL, size };
}

static void ring_put(struct block b)
{
	pthread_mutex_lock(&ring_lock);
	bool full = ring_len == RING;
	if (!full)
		ring[(ring_head + ring_len++) % RING] = b;
	pthread_mutex_unlock(&ring_lock);
	if (full)
		book_free(b);
}

static bool ring_take(struct block *b)
{
	pthread_mutex_lock(&ring_lock);
	bool got = ring_len > 0;
	if (got) {
		*b = ring[ring_head];
		ring_head = (ring_head + 1) % RING;
		ring_len--;
	}
	pthread_mutex_unlock(&ring_lock);
	return got;
}

static void step(uint64_t *seed, struct block *slot)
{
	uint64_t r = next_random(seed) % 10;
	if (!slot->p) {
		size_t size = random_size(seed);
		*slot = (struct block){ book_malloc(size), size };
	} else if (r < 4) {
		book_free(*slot);
		*slot = (struct block){ NULL, 0 };
	} else if (r < 7) {
		*slot = book_realloc(*slot, r == 4 ? 0 : random_size(seed));
	} else {
		ring_put(*slot);
		*slot = (struct block){ NULL, 0 };
	}
}

static void *worker(void *arg)
{
	unsigned self = (unsigned)(uintptr_t)arg;
	uint64_t seed = 0x9E3779B97F4A7C15ull * (self + 1);
	atomic_fetch_add(&threads_seen, 1);
	while (!atomic_load(&stop)) {
		for (int i = 0; i < 256; i++) {
			step(&seed, &slots[self][next_random(&seed) % SLOTS]);
			struct block b;
			if (i % 4 == 0 && ring_take(&b))
				book_free(b);
		}
	}
	return NULL;
}

/* A short life: allocate, free, hand blocks on, exit. */
static void *short_lived(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg * 0x2545F4914F6CDD1Dull + 1;
	struct block mine[16];
	for (int i = 0; i < 16; i++) {
		size_t size = random_size(&seed);
		mine[i] = (struct block){ book_malloc(size), size };
	}
	for (int i = 0; i < 16; i++) {
		if (i % 2)
			ring_put(mine[i]);
		else
			book_free(mine[i]);
	}
	return NULL;
}

static void *spawner(void *arg)
{
	(void)arg;
	atomic_fetch_add(&threads_seen, 1);
	for (uintptr_t n = 1; !atomic_load(&stop); n++) {
		pthread_t t;
		if (pthread_create(&t, NULL, short_lived, (void *)n) != 0)
			break;
		pthread_join(t, NULL);
		atomic_fetch_add(&threads_seen, 1);
		struct timespec pause = { 0, 2 * 1000 * 1000 };
		nanosleep(&pause, NULL);
	}
	return NULL;
}

/* In the child: one thread, exact books, sent to the parent. */
static void child(int out, unsigned n)
{
	struct account mine = { 0 };
	void *kept[100];
	for (unsigned i = 0; i < 100; i++) {
		size_t size = 10 + i * n;
		kept[i] = malloc(size);
		account_keep(kept[i]);
		account_alloc(&mine, size);
	}
	for (unsigned i = 0; i < 100; i += 2) {
		kept[i] = realloc(kept[i], 5000);
		account_keep(kept[i]);
		account_resize(&mine, 10 + i * n, 5000);
	}
	for (unsigned i = 0; i < 100; i += 4) {
		free(kept[i]);
		account_free(&mine, 5000);
	}
	struct expect e;
	expect_init(&e);
	expect_account(&e, "heap", &mine);
	_exit(expect_write_fd(&e, out) < 0 ? 2 : 0);
}

static pid_t fork_one(unsigned n, char *text, size_t cap)
{
	int fds[2];
	if (pipe(fds) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child(fds[1], n);
	}
	close(fds[1]);
	size_t got = 0;
	for (ssize_t r; pid > 0 && (r = read(fds[0], text + got, cap - 1 - got)) > 0;)
		got += (size_t)r;
	text[got] = 0;
	close(fds[0]);
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) || !got)
		return -1;
	return pid;
}

static void sleep_ms(unsigned ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000 };
	while (nanosleep(&t, &t) < 0)
		;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		complain("usage: alloc_stress EXPECT THREADS MS [FORKS [SEED]]");
		return 2;
	}
	unsigned nthreads = (unsigned)strtoul(argv[2], NULL, 10), ms = (unsigned)strtoul(argv[3], NULL, 10);
	unsigned forks = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 0;
	if (nthreads < 1 || nthreads > MAX_THREADS || forks > MAX_FORKS) {
		complain("alloc_stress: 1 to %d threads, at most %d forks", MAX_THREADS, MAX_FORKS);
		return 2;
	}
	atomic_fetch_add(&threads_seen, 1); /* this one */
	pthread_t tids[MAX_THREADS], spawn_tid;
	for (unsigned t = 0; t < nthreads; t++)
		pthread_create(&tids[t], NULL, worker, (void *)(uintptr_t)t);
	pthread_create(&spawn_tid, NULL, spawner, NULL);

	static char child_text[MAX_FORKS][1024];
	pid_t pids[MAX_FORKS];
	for (unsigned f = 0; f < forks; f++) {
		sleep_ms(ms / (forks + 1));
		if ((pids[f] = fork_one(f + 1, child_text[f], sizeof child_text[f])) < 0) {
			complain("alloc_stress: child %u failed", f + 1);
			return 2;
		}
	}
	sleep_ms(ms - forks * (ms / (forks + 1)));
	atomic_store(&stop, true);
	for (unsigned t = 0; t < nthreads; t++)
		pthread_join(tids[t], NULL);
	pthread_join(spawn_tid, NULL);

	for (struct block b; ring_take(&b);)
		book_free(b);
	for (unsigned t = 1; t < nthreads; t++)
		for (unsigned i = 0; i < SLOTS; i++)
			if (slots[t][i].p)
				book_free(slots[t][i]);

	struct expect e;
	expect_init(&e);
	expect_shared(&e, "heap", &heap);
	expect_uint(&e, "threads", atomic_load(&threads_seen));
	expect_uint(&e, "forks", forks);
	expect_open(&e, "children");
	for (unsigned f = 0; f < forks; f++) {
		char name[16];
		snprintf(name, sizeof name, "%u", f + 1);
		expect_open(&e, name);
		expect_uint(&e, "pid", (uint64_t)pids[f]);
		expect_raw(&e, "child", child_text[f]);
		expect_close(&e);
	}
	expect_close(&e);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
