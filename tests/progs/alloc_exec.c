/*
 * alloc_exec - allocate, then replace the process image with exec.
 *
 * usage: alloc_exec EXPECT PROGRAM [ARGS...]
 *
 * Allocates and frees a few blocks, leaves some live (the image ends with
 * them: they count as leaked), writes its figures to EXPECT with its pid
 * and the program it is about to run, then execv(PROGRAM, [PROGRAM, ARGS...]).
 * The new image is traced on its own (wsprof writes it a trace of its own,
 * same pid) and keeps its own books: alloc_basic makes a good PROGRAM.
 *
 * If the exec fails, this image goes on: it allocates some more, writes
 * EXPECT again, without "exec" and with "exec_failed": errno, and exits 0.
 */
#include "account.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static struct account heap;

static int write_expect(const char *path, const char *exec, int exec_errno)
{
	struct expect e;
	expect_init(&e);
	expect_uint(&e, "pid", (uint64_t)getpid());
	if (exec)
		expect_string(&e, "exec", exec);
	else
		expect_uint(&e, "exec_failed", (uint64_t)exec_errno);
	expect_account(&e, "heap", &heap);
	return expect_write(&e, path);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		complain("usage: alloc_exec EXPECT PROGRAM [ARGS...]");
		return 2;
	}
	void *a = malloc(300);
	account_alloc(&heap, 300);
	void *b = malloc(400);
	account_alloc(&heap, 400);
	account_keep(a);
	free(a);
	account_free(&heap, 300);
	b = realloc(b, 800);
	account_resize(&heap, 400, 800);
	account_keep(b);
	account_keep(calloc(4, 25));
	account_alloc(&heap, 100);

	if (write_expect(argv[1], argv[2], 0) < 0)
		return 2;
	execv(argv[2], argv + 2);
	int why = errno;

	void *after = malloc(123);
	account_alloc(&heap, 123);
	account_keep(after);
	free(after);
	account_free(&heap, 123);
	account_keep(malloc(45));
	account_alloc(&heap, 45);
	return write_expect(argv[1], NULL, why) < 0 ? 2 : 0;
}
