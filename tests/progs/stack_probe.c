/*
 * stack_probe - how much of the program's stack one recorded allocation
 * takes, and an allocation on a coroutine's small stack.
 *
 * usage: stack_probe EXPECT
 *
 * Paints 64 KiB of the stack below main's frame, calls malloc once from
 * there, and counts the painted bytes that changed: what malloc (and, under
 * wsprof, the hook, the unwinding and the record) used. Then runs a
 * coroutine (makecontext) on a 16 KiB stack of its own that allocates and
 * frees 100 blocks, as fibers and green threads do. Writes EXPECT with the
 * bytes used, and the coroutine's allocations.
 */
#include "account.h"

#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#define PAINT (64 * 1024)
#define COROUTINE_STACK (16 * 1024)

static struct account heap;
static ucontext_t main_ctx, co_ctx;

/* Both read and write stack bytes no C object owns: that is the point. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((noinline)) static void paint(void)
{
	volatile unsigned char b[PAINT];
	for (size_t i = 0; i < PAINT; i++)
		b[i] = 0xa5;
}

/* The painted bytes below this frame that something wrote since. */
__attribute__((noinline)) static size_t changed(void)
{
	volatile unsigned char b[PAINT];
	for (size_t i = 0; i < PAINT; i++)
		if (b[i] != 0xa5)
			return PAINT - i;
	return 0;
}
#pragma GCC diagnostic pop

__attribute__((noinline)) static void allocate_once(void)
{
	void *p = malloc(100);
	account_keep(p);
	account_alloc(&heap, 100);
	free(p);
	account_free(&heap, 100);
}

static void coroutine(void)
{
	for (int i = 0; i < 100; i++) {
		void *p = malloc(64 + (size_t)i);
		account_keep(p);
		account_alloc(&heap, 64 + (size_t)i);
		free(p);
		account_free(&heap, 64 + (size_t)i);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: stack_probe EXPECT");
		return 2;
	}
	allocate_once(); /* recording has started, this thread is known */
	paint();
	allocate_once();
	size_t used = changed();

	static unsigned char stack[COROUTINE_STACK] __attribute__((aligned(16)));
	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = stack;
	co_ctx.uc_stack.ss_size = sizeof stack;
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, coroutine, 0);
	swapcontext(&main_ctx, &co_ctx);

	struct expect e;
	expect_init(&e);
	expect_uint(&e, "stack_bytes", used);
	expect_account(&e, "heap", &heap);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
