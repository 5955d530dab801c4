/*
 * alloc_killed - allocate, wait to be recorded, then wait to be killed.
 *
 * usage: alloc_killed EXPECT [BLOCKS]   (default 1000)
 *
 * Allocates BLOCKS blocks and keeps them, sleeps half a second (several
 * flush intervals when recorded with --flush-ms 50, so every event is on
 * disk), then writes EXPECT, with its pid, as the sign that it is ready,
 * and pauses until a signal ends it. The test kills it with SIGKILL: no
 * exit handler runs, the trace has no footer, and must still be readable.
 */
#include "account.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static struct account heap;

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: alloc_killed EXPECT [BLOCKS]");
		return 2;
	}
	unsigned long blocks = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
	for (unsigned long i = 0; i < blocks; i++) {
		size_t size = 32 + i % 100;
		account_keep(malloc(size));
		account_alloc(&heap, size);
	}
	struct timespec wait = { 0, 500 * 1000 * 1000 };
	while (nanosleep(&wait, &wait) < 0)
		;

	struct expect e;
	expect_init(&e);
	expect_uint(&e, "pid", (uint64_t)getpid());
	expect_account(&e, "heap", &heap);
	expect_uint(&e, "threads", 1);
	if (expect_write(&e, argv[1]) < 0)
		return 2;
	for (;;)
		pause();
}
