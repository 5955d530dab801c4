/*
 * alloc_mmap - the program's own mappings: kind `mmap`.
 *
 * usage: alloc_mmap EXPECT [hole|reserve]
 *
 * Maps and unmaps whole mappings, trims one from both ends (partial
 * munmap: fewer bytes, still one block), grows one with mremap (one free,
 * one allocation), maps over one with MAP_FIXED (which releases what it
 * covers), fails one mmap, and leaves one mapping behind.
 *
 * With "hole", it instead punches a hole in the middle of a mapping and
 * then unmaps the whole original range with one call: one mapping made,
 * one released, whatever pieces it was cut into in between.
 *
 * With "reserve", it behaves as a runtime with a heap of its own: reserves
 * 256 MiB of address space (PROT_NONE, MAP_NORESERVE), commits parts of it
 * (mprotect, mmap MAP_FIXED), flips one part between protections as a JIT
 * does (no change), gives parts back (MAP_FIXED PROT_NONE, mprotect
 * PROT_NONE), unmaps half the reservation and leaves the rest mapped.
 * Reserved address space is mmap_reserved, not mmap; what was committed
 * in it is mmap, and is "in reservations" at the end.
 */
#include "account.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static struct account maps;
static size_t page;

static char *map(size_t pages)
{
	char *p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		account_fail(&maps);
		return NULL;
	}
	account_alloc(&maps, pages * page);
	return p;
}

static void unmap(char *p, size_t pages)
{
	munmap(p, pages * page);
	account_free(&maps, pages * page);
}

static void whole_and_trimmed(void)
{
	unmap(map(4), 4);

	/* Trim a page from each end, then release the rest. */
	char *p = map(8);
	munmap(p, page);
	account_trim(&maps, page);
	munmap(p + 7 * page, page);
	account_trim(&maps, page);
	unmap(p + page, 6);
}

static void remapped(void)
{
	char *p = map(2);
	memset(p, 7, 2 * page);
	char *q = mremap(p, 2 * page, 64 * page, MREMAP_MAYMOVE);
	if (q == MAP_FAILED) {
		complain("alloc_mmap: mremap failed");
		_exit(2);
	}
	account_resize(&maps, 2 * page, 64 * page);
	/* Shrinking in place is a move too, by the same rule. */
	q = mremap(q, 64 * page, 16 * page, 0);
	account_resize(&maps, 64 * page, 16 * page);
	unmap(q, 16);
}

static void mapped_over(void)
{
	char *p = map(4);
	char *q = mmap(p, 4 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (q != p) {
		complain("alloc_mmap: MAP_FIXED did not map where asked");
		_exit(2);
	}
	account_free(&maps, 4 * page); /* the old mapping is gone */
	account_alloc(&maps, 4 * page);
	unmap(q, 4);
}

static void failed(void)
{
	/* A file mapping of no file: EBADF. */
	void *p = mmap(NULL, page, PROT_READ, MAP_PRIVATE, -1, 0);
	if (p != MAP_FAILED) {
		complain("alloc_mmap: mmap of fd -1 succeeded");
		_exit(2);
	}
	account_fail(&maps);
}

#define MIB (1024u * 1024u)

static void reserve(struct expect *e)
{
	char *r = mmap(NULL, 256 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED) {
		complain("alloc_mmap: cannot reserve 256 MiB");
		_exit(2);
	}
	/* Committed: [0, 16) by mprotect, [32, 40) by MAP_FIXED. */
	if (mprotect(r, 16 * MIB, PROT_READ | PROT_WRITE) != 0 || mprotect(r, 16 * MIB, PROT_READ) != 0 ||
	    mprotect(r, 16 * MIB, PROT_READ | PROT_WRITE) != 0 ||
	    mmap(r + 32 * MIB, 8 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		complain("alloc_mmap: cannot commit");
		_exit(2);
	}
	memset(r, 1, 16 * MIB);
	/* Given back: [4, 8) by MAP_FIXED PROT_NONE, [12, 16) by mprotect. */
	if (mmap(r + 4 * MIB, 4 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED ||
	    mprotect(r + 12 * MIB, 4 * MIB, PROT_NONE) != 0) {
		complain("alloc_mmap: cannot give back");
		_exit(2);
	}
	unmap(map(256), 256);
	munmap(r + 128 * MIB, 128 * MIB);
	expect_open(e, "mmap");
	expect_uint(e, "allocations", 3);
	expect_uint(e, "frees", 1);
	expect_uint(e, "peak_bytes", 24 * MIB);
	expect_uint(e, "leaked_bytes", 16 * MIB);
	expect_uint(e, "leaked_blocks", 2);
	expect_uint(e, "reservations", 3);
	expect_uint(e, "reserved_peak_bytes", 256 * MIB);
	expect_uint(e, "reserved_bytes_at_end", 112 * MIB);
	expect_uint(e, "in_reservations_bytes_at_end", 16 * MIB);
	expect_close(e);
}

static void hole(void)
{
	char *p = map(8);
	munmap(p + 3 * page, 2 * page);
	account_trim(&maps, 2 * page);
	munmap(p, 8 * page);
	account_free(&maps, 6 * page);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: alloc_mmap EXPECT [hole]");
		return 2;
	}
	page = (size_t)sysconf(_SC_PAGESIZE);
	struct expect e;
	expect_init(&e);
	if (argc > 2 && strcmp(argv[2], "reserve") == 0) {
		reserve(&e);
		expect_uint(&e, "threads", 1);
		return expect_write(&e, argv[1]) < 0 ? 2 : 0;
	}
	if (argc > 2 && strcmp(argv[2], "hole") == 0) {
		hole();
	} else {
		whole_and_trimmed();
		remapped();
		mapped_over();
		failed();
		map(3); /* leaked */
	}
	expect_account(&e, "mmap", &maps);
	expect_uint(&e, "threads", 1);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
