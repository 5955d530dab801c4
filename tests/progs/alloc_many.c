/*
 * alloc_many - allocations from a library of thousands of functions
 * (libmany.so, written by gen_many.c, built without debug info so that
 * only its symbol table can name them).
 *
 * usage: alloc_many EXPECT K...
 *
 * Calls function K of the library for each K, which allocates 16 + 8K
 * bytes and keeps the block; writes EXPECT with the count.
 */
#include "account.h"

#include <stdlib.h>

int many_call(long k); /* libmany.so: function K, or -1 past the last */

int main(int argc, char **argv)
{
	if (argc < 3) {
		complain("usage: alloc_many EXPECT K...");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (many_call(strtol(argv[i], NULL, 10)) < 0)
			return 2;
	}
	struct expect e;
	expect_init(&e);
	expect_uint(&e, "calls", (uint64_t)(argc - 2));
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
