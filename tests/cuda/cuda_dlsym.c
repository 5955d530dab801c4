/*
 * cuda_dlsym - the CUDA workload (cuda_work.h) through dlopen and dlsym of
 * the driver's versioned names ("cuMemAlloc_v2", "cuMemAllocAsync_ptsz"),
 * the way cudart falls back when cuGetProcAddress is not usable.
 *
 * usage: cuda_dlsym EXPECT
 *
 * libcuda.so.1 is found by the loader's search (the test sets
 * LD_LIBRARY_PATH), as a program finds the driver that is installed.
 */
#include "cuda_work.h"

#include <dlfcn.h>
#include <unistd.h>

static void *need(void *driver, const char *name)
{
	void *f = dlsym(driver, name);
	if (!f) {
		complain("cuda_dlsym: %s", dlerror());
		_exit(2);
	}
	return f;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		complain("usage: cuda_dlsym EXPECT");
		return 2;
	}
	void *driver = dlopen("libcuda.so.1", RTLD_NOW);
	if (!driver) {
		complain("cuda_dlsym: %s", dlerror());
		return 2;
	}
	struct cuda_api api;
#define BY_NAME(symbol, base, version, flags) api.symbol = need(driver, #symbol);
	CUDA_WORK_ENTRIES(BY_NAME)

	struct cuda_books books = { 0 };
	cuda_work_run(&api, &books);

	struct expect e;
	expect_init(&e);
	cuda_work_expect(&e, &books);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
