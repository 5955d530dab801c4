/*
 * cuda_procaddr - the CUDA workload (cuda_work.h) through cuGetProcAddress,
 * the way cudart 12 and 13 reach the driver: dlopen libcuda.so.1, dlsym
 * "cuGetProcAddress_v2", ask that for "cuGetProcAddress" at version 12000,
 * and make every other lookup through the pointer it returns, by base
 * name, version and flags ("cuMemAlloc" at 3020; "cuMemAllocAsync" at
 * 11020 with flag 2 for the _ptsz variant).
 *
 * usage: cuda_procaddr EXPECT
 *
 * It also checks that failed lookups keep their meaning: an unknown name
 * and a version older than the entry point are refused, with their status.
 */
#include "cuda_work.h"

#include <dlfcn.h>
#include <unistd.h>

static __typeof__(cuGetProcAddress_v2) *lookup;

static void *need(const char *base, int version, cuuint64_t flags)
{
	void *f = NULL;
	CUdriverProcAddressQueryResult status = -1;
	CUresult r = lookup(base, &f, version, flags, &status);
	if (r != CUDA_SUCCESS || !f || status != CU_GET_PROC_ADDRESS_SUCCESS) {
		complain("cuda_procaddr: cuGetProcAddress(\"%s\", %d, %llu) returned %d, status %d", base, version,
			 (unsigned long long)flags, (int)r, (int)status);
		_exit(3);
	}
	return f;
}

static void refused(const char *base, int version, CUdriverProcAddressQueryResult want)
{
	void *f = &f;
	CUdriverProcAddressQueryResult status = -1;
	CUresult r = lookup(base, &f, version, 0, &status);
	if (r != CUDA_ERROR_NOT_FOUND || status != want || f) {
		complain("cuda_procaddr: cuGetProcAddress(\"%s\", %d) returned %d, status %d, %s; expected %d, status %d",
			 base, version, (int)r, (int)status, f ? "a function" : "no function", CUDA_ERROR_NOT_FOUND,
			 (int)want);
		_exit(3);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		complain("usage: cuda_procaddr EXPECT");
		return 2;
	}
	void *driver = dlopen("libcuda.so.1", RTLD_NOW);
	if (!driver || !(lookup = dlsym(driver, "cuGetProcAddress_v2"))) {
		complain("cuda_procaddr: %s", dlerror());
		return 2;
	}
	lookup = need("cuGetProcAddress", 12000, 0);

	refused("cuNoSuchEntryPoint", 12000, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	refused("cuMemAllocAsync", 11000, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);

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
