/*
 * alloc_stripped - a program linked without any symbols (-s), so that its
 * frames can only be shown as module+offset.
 *
 * usage: alloc_stripped EXPECT
 */
#include "account.h"

#include <stdlib.h>

__attribute__((noinline)) static void *hidden_alloc(size_t n)
{
	void *p = malloc(n);
	account_keep(p); /* and no tail call */
	return p;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: alloc_stripped EXPECT");
		return 2;
	}
	void *p = hidden_alloc(4242);
	account_keep(p);
	free(p);
	struct expect e;
	expect_init(&e);
	expect_uint(&e, "done", 1);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
