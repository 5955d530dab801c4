/*
 * alloc_annotated - a program that tells wsprof which of its blocks are in
 * use (include/wsprof.h), keeping its own books of what is truly in use.
 *
 * usage: alloc_annotated EXPECT [THREADS]
 *
 * Scripted: blocks held and let go (acquire/release), copies marked valid
 * and invalid, annotations through interior pointers and of an unknown
 * address, a pool carved from a slab, a snapshot. Then THREADS threads
 * (default 4) acquire and release one shared block 10,000 times each,
 * which must leave it held exactly once (by the main thread). The books
 * give in_use_peak_bytes and collectable_bytes_at_peak for the heap and
 * the pool, as the summary must report them.
 */
#include "account.h"

#include <pthread.h>
#include <stdlib.h>

#include "wsprof.h"

static char *shared;

static void *churn_refs(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10000; i++) {
		wsprof_acquire(shared + (i % 64)); /* any address inside the block */
		wsprof_release(shared);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: alloc_annotated EXPECT [THREADS]");
		return 2;
	}
	int threads = argc > 2 ? atoi(argv[2]) : 4;
	if (threads < 1 || threads > 16)
		threads = 4;
	struct account heap = { 0 }, pool = { 0 };
	uint64_t collectable = 0, in_use_peak = 0, collectable_at_peak = 0;
	/* After every change: the in-use peak, and at a new live peak what was collectable then. */
#define NOTE_PEAK()                                                                     \
	do {                                                                            \
		if (heap.live_bytes - collectable > in_use_peak)                       \
			in_use_peak = heap.live_bytes - collectable;                    \
		if (heap.live_bytes == heap.peak_bytes)                                 \
			collectable_at_peak = collectable;                              \
	} while (0)

	char *a = malloc(1000), *b = malloc(2000), *c = malloc(3000);
	account_alloc(&heap, 1000);
	account_alloc(&heap, 2000);
	account_alloc(&heap, 3000);
	NOTE_PEAK(); /* 6000 in use: nothing said yet */
	wsprof_name(a, "tile a");
	wsprof_acquire(a);
	wsprof_acquire(b + 1500);   /* interior */
	wsprof_release(a + 999);    /* its last byte: a has no holder now */
	collectable += 1000;
	wsprof_invalid(b);          /* stale, but still held */
	wsprof_valid(c);            /* current: in use */
	wsprof_acquire((void *)16); /* no block there: counted, ignored */
	wsprof_snapshot("scripted");

	char *d = malloc(4000);     /* a peak: 10000 live, 1000 collectable */
	account_keep(d);
	account_alloc(&heap, 4000);
	NOTE_PEAK();
	wsprof_release(b);          /* b: invalid and unheld */
	collectable += 2000;
	free(d);
	account_free(&heap, 4000);
	wsprof_acquire(a);          /* a is held again */
	collectable -= 1000;
	NOTE_PEAK();

	char *slab = malloc(8192);
	account_alloc(&heap, 8192);
	NOTE_PEAK();
	wsprof_pool_alloc(slab, slab, 512);          /* at the slab's own address */
	wsprof_pool_alloc(slab, slab + 512, 1024);
	account_alloc(&pool, 512);
	account_alloc(&pool, 1024);
	wsprof_acquire(slab + 600);                  /* the second sub-allocation */
	wsprof_release(slab + 600);
	wsprof_pool_free(slab, slab);
	account_free(&pool, 512);

	shared = malloc(64);
	account_alloc(&heap, 64);
	NOTE_PEAK();
	wsprof_acquire(shared);
	pthread_t t[16];
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, churn_refs, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);

	struct expect e;
	expect_init(&e);
	expect_account(&e, "heap", &heap);
	expect_account(&e, "pool", &pool);
	expect_uint(&e, "heap_in_use_peak_bytes", in_use_peak);
	expect_uint(&e, "heap_collectable_bytes_at_peak", collectable_at_peak);
	expect_uint(&e, "heap_collectable_bytes_at_end", collectable);
	expect_uint(&e, "pool_collectable_bytes_at_end", 1024);
	expect_uint(&e, "unknown_addresses", 1);
	account_keep(a);
	account_keep(c);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
