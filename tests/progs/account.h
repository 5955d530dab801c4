/*
 * account.h - how the test programs keep their own books.
 *
 * Each program under tests/progs counts what it allocates with the same
 * rules as wsprof's model (analyzer/model/model.h) and writes the figures it
 * expects to an "expect" file, one JSON object, for tests/preload to
 * compare with `wsprof report summary --json`. Nothing here allocates or
 * uses stdio (a FILE would allocate its buffer through the very malloc
 * being traced): figures are formatted with snprintf into fixed buffers
 * and written with write(2).
 *
 * The rules, as a program applies them:
 *   account_alloc  one allocation of `size` requested bytes;
 *   account_free   one free of a block of `size` bytes;
 *   account_fail   one failed call (NULL, MAP_FAILED, nonzero error);
 *   account_resize realloc/mremap: the old block is freed first, then the
 *                  new one allocated, so the peak sees only the net change;
 *   account_trim   part of a mapping unmapped: bytes leave, the block stays.
 */
#ifndef PROGS_ACCOUNT_H
#define PROGS_ACCOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct account {
	uint64_t allocations, frees, failed;
	uint64_t total_bytes;
	uint64_t live_bytes, live_blocks, peak_bytes;
};

void account_alloc(struct account *a, uint64_t size);
void account_free(struct account *a, uint64_t size);
void account_fail(struct account *a);
void account_resize(struct account *a, uint64_t old_size, uint64_t new_size);
void account_trim(struct account *a, uint64_t bytes);

/* Make the compiler believe the block is used, so that it cannot drop a
 * malloc/free pair it can see through (GCC does, at -O2). */
static inline void account_keep(const void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* The expect file, built as JSON text in a fixed buffer. Members are added
 * to the innermost open object; expect_write closes the document. */
struct expect {
	char text[8192];
	size_t len;
	int depth;
	bool need_comma;
	bool overflow;
};

void expect_init(struct expect *e);
void expect_open(struct expect *e, const char *name);
void expect_close(struct expect *e);
void expect_uint(struct expect *e, const char *name, uint64_t value);
void expect_string(struct expect *e, const char *name, const char *value);
/* "kind": {"allocations": ..., "frees": ..., ...} with every figure the
 * summary reports for a kind (leaked_* being what is still live). */
void expect_account(struct expect *e, const char *kind, const struct account *a);
/* "name": json, for a document another process wrote (trailing newline dropped). */
void expect_raw(struct expect *e, const char *name, const char *json);
/* Write the document to path, whole or not at all: it goes to a temporary
 * name first and is renamed, so a test polling for the file never reads
 * half of it. @return 0 or -errno. */
int expect_write(struct expect *e, const char *path);
/* Close the document and write it to a descriptor (a pipe to a parent). */
int expect_write_fd(struct expect *e, int fd);

/* One formatted line on stdout (or stderr) through write(2). */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif
#endif
