/*
 * alloc_span - a program that records only a span of itself, keeping the
 * books of that span alone.
 *
 * usage: alloc_span EXPECT call|signal   (run with WSPROF_START=paused;
 *                                          signal: WSPROF_TOGGLE_SIGNAL=SIGUSR2)
 *
 * Before the span it allocates and frees (nothing of it counted); the span
 * is opened and closed by wsprof_start()/wsprof_stop() (call) or by
 * raising SIGUSR2 at itself (signal); inside it, heap blocks and a mapping,
 * one block freed inside; after it, a block of the span is freed, another
 * is moved by realloc (it leaves the span's books), the mapping is
 * unmapped, and blocks allocated outside are freed (untracked frees). The
 * books hold what the summary must count: the span's allocations, and the
 * frees of its blocks wherever they happen; "untracked_frees" the frees
 * of blocks allocated outside it.
 */
#include "account.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "wsprof.h"

static void toggle(bool by_signal, bool on)
{
	if (by_signal)
		raise(SIGUSR2);
	else if (on)
		wsprof_start();
	else
		wsprof_stop();
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[2], "call") && strcmp(argv[2], "signal"))) {
		complain("usage: alloc_span EXPECT call|signal");
		return 2;
	}
	bool by_signal = !strcmp(argv[2], "signal");
	struct account heap = { 0 }, mmap_books = { 0 };
	uint64_t untracked = 0;

	char *before = malloc(1000), *gone = malloc(2000);
	account_keep(before);
	account_keep(gone);
	free(gone);
	untracked++;

	toggle(by_signal, true);
	char *c = malloc(100), *d = malloc(200), *e = malloc(300), *g = malloc(700);
	account_alloc(&heap, 100);
	account_alloc(&heap, 200);
	account_alloc(&heap, 300);
	account_alloc(&heap, 700);
	account_keep(c);
	account_keep(d);
	account_keep(e);
	account_keep(g);
	free(d);
	account_free(&heap, 200);
	void *m = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	account_alloc(&mmap_books, 65536);
	toggle(by_signal, false);

	char *after = malloc(5000);
	account_keep(after);
	free(after);
	untracked++;
	free(c);
	account_free(&heap, 100);
	char *moved = realloc(e, 4000); /* leaves the books; the new block is not recorded */
	account_free(&heap, 300);
	account_keep(moved);
	munmap(m, 65536);
	account_free(&mmap_books, 65536);
	free(moved);
	untracked++;
	free(before);
	untracked++;

	struct expect x;
	expect_init(&x);
	expect_account(&x, "heap", &heap);
	expect_account(&x, "mmap", &mmap_books);
	expect_uint(&x, "untracked_frees", untracked);
	return expect_write(&x, argv[1]) == 0 ? 0 : 1;
}
