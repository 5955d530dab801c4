/*
 * mpi_ranks - a rank of an MPI job that keeps its books (built where an
 * MPI is installed: tests/progs/meson.build).
 *
 * usage: mpi_ranks DIR
 *
 * Each rank allocates (rank + 1) blocks of 1000 bytes and frees them,
 * all ranks meet at a barrier (so that every one runs while the others
 * start), and rank R writes DIR/rank.R.json: {"rank": R, "size": N,
 * "pid": P, "heap": {...}}, what its trace must count of the allocations
 * made from mpi_ranks itself (MPI_Init's are made from its libraries).
 */
#include "account.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) static void rank_work(int rank, struct account *heap)
{
	for (int i = 0; i <= rank; i++) {
		void *p = malloc(1000);
		account_keep(p);
		account_alloc(heap, 1000);
		free(p);
		account_free(heap, 1000);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: mpi_ranks DIR");
		return 2;
	}
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	struct account heap = { 0 };
	rank_work(rank, &heap);
	MPI_Barrier(MPI_COMM_WORLD);
	struct expect e;
	expect_init(&e);
	expect_uint(&e, "rank", (uint64_t)rank);
	expect_uint(&e, "size", (uint64_t)size);
	expect_uint(&e, "pid", (uint64_t)getpid());
	expect_account(&e, "heap", &heap);
	char path[4096];
	snprintf(path, sizeof path, "%s/rank.%d.json", argv[1], rank);
	int r = expect_write(&e, path) < 0 ? 2 : 0;
	MPI_Finalize();
	return r;
}
