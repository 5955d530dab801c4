/*
 * cuda_direct - the CUDA workload (cuda_work.h) through a program linked
 * with libcuda.so.1, as `nvcc -cudart shared` programs and most libraries
 * that use the driver API are: every call goes through the program's own
 * imports of the versioned names.
 *
 * usage: cuda_direct EXPECT
 *
 * Besides the cuda kinds, the expect file's books leave out the heap: the
 * buffers the workload pins with cuMemHostRegister come from malloc.
 */
#include "cuda_work.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		complain("usage: cuda_direct EXPECT");
		return 2;
	}
	struct cuda_api api = {
#define LINKED(symbol, base, version, flags) .symbol = symbol,
		CUDA_WORK_ENTRIES(LINKED)
	};
	struct cuda_books books = { 0 };
	cuda_work_run(&api, &books);

	struct expect e;
	expect_init(&e);
	cuda_work_expect(&e, &books);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
