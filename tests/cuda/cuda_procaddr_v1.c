/*
 * cuda_procaddr_v1 - the CUDA workload (cuda_work.h) through the first,
 * four-argument cuGetProcAddress (CUDA 11.3 to 11.8): dlopen libcuda.so.1,
 * dlsym "cuGetProcAddress", ask that for "cuGetProcAddress" at version
 * 11030, and make every other lookup through the pointer it returns, by
 * base name, version and flags.
 *
 * usage: cuda_procaddr_v1 EXPECT
 *
 * An unknown name must still be refused through that pointer.
 */
#include "cuda_work.h"

#include <dlfcn.h>
#include <unistd.h>

static __typeof__(cuGetProcAddress) *lookup;

static void *need(const char *base, int version, cuuint64_t flags)
{
	void *f = NULL;
	CUresult r = lookup(base, &f, version, flags);
	if (r != CUDA_SUCCESS || !f) {
		complain("cuda_procaddr_v1: cuGetProcAddress(\"%s\", %d, %llu) returned %d", base, version,
			 (unsigned long long)flags, (int)r);
		_exit(3);
	}
	return f;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		complain("usage: cuda_procaddr_v1 EXPECT");
		return 2;
	}
	void *driver = dlopen("libcuda.so.1", RTLD_NOW);
	if (!driver || !(lookup = dlsym(driver, "cuGetProcAddress"))) {
		complain("cuda_procaddr_v1: %s", dlerror());
		return 2;
	}
	lookup = need("cuGetProcAddress", 11030, 0);

	void *none = &none;
	CUresult r = lookup("cuNoSuchEntryPoint", &none, 11030, 0);
	if (r != CUDA_ERROR_NOT_FOUND || none) {
		complain("cuda_procaddr_v1: an unknown name gave %d and %s", (int)r, none ? "a function" : "none");
		return 3;
	}

	struct cuda_api api;
#define BY_VERSION(symbol, base, version, flags) api.symbol = need(base, version, flags);
	CUDA_WORK_ENTRIES(BY_VERSION)

	struct cuda_books books = { 0 };
	cuda_work_run(&api, &books);

	struct expect e;
	expect_init(&e);
	cuda_work_expect(&e, &books);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
