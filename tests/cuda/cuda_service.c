/*
 * cuda_service - a CUDA program that is already running when wsprof
 * attaches to it: it sets the driver up first (dlopen libcuda.so.1, dlsym
 * cuGetProcAddress_v2, then every entry point through cuGetProcAddress,
 * kept in a table of its own, as cudart does), then on a timer allocates
 * a device block in tick() and frees the oldest once it holds 8, and
 * prints how many ticks it made and whether its table still leads to the
 * driver.
 *
 * usage: cuda_service EXPECT [TICKS [INTERVAL_MS]]   (EXPECT: ignored; default 60 ticks of 50 ms)
 */
#include "cuda_min.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BLOCK (1 << 20)

/* The driver's functions, as cudart keeps them. */
static struct {
	__typeof__(cuGetProcAddress_v2) *lookup;
	__typeof__(cuInit) *init;
	__typeof__(cuMemAlloc_v2) *alloc;
	__typeof__(cuMemFree_v2) *free;
} drv;

/* The table as it was made, disguised: a word holding a driver function is
 * what the attach looks for and redirects. */
#define DISGUISE(f) ((uintptr_t)(f) ^ (uintptr_t)0x5a5a5a5a5a5a5a5aull)
static uintptr_t first[3];

static CUdeviceptr held[8];

static void *need(const char *base, int version)
{
	void *f = NULL;
	CUdriverProcAddressQueryResult status;
	if (drv.lookup(base, &f, version, 0, &status) != CUDA_SUCCESS || !f) {
		fprintf(stderr, "cuda_service: no %s\n", base);
		exit(2);
	}
	return f;
}

__attribute__((noinline)) static void tick(long i)
{
	if (held[i % 8])
		drv.free(held[i % 8]);
	held[i % 8] = 0;
	if (drv.alloc(&held[i % 8], BLOCK) != CUDA_SUCCESS)
		held[i % 8] = 0;
}

int main(int argc, char **argv)
{
	long ticks = argc > 2 ? strtol(argv[2], NULL, 10) : 60, ms = argc > 3 ? strtol(argv[3], NULL, 10) : 50;
	void *driver = dlopen("libcuda.so.1", RTLD_NOW);
	if (!driver || !(drv.lookup = (__typeof__(drv.lookup))dlsym(driver, "cuGetProcAddress_v2"))) {
		fprintf(stderr, "cuda_service: %s\n", dlerror());
		return 2;
	}
	drv.lookup = need("cuGetProcAddress", 12000);
	drv.init = need("cuInit", 2000);
	drv.alloc = need("cuMemAlloc", 3020);
	drv.free = need("cuMemFree", 3020);
	first[0] = DISGUISE(drv.alloc), first[1] = DISGUISE(drv.free), first[2] = DISGUISE(drv.lookup);
	if (drv.init(0) != CUDA_SUCCESS) {
		fprintf(stderr, "cuda_service: cuInit failed\n");
		return 2;
	}
	struct timespec pause = { ms / 1000, (ms % 1000) * 1000000 };
	long i = 0;
	for (; i < ticks; i++) {
		tick(i);
		nanosleep(&pause, NULL);
	}
	printf("ticks %ld\n", i);
	/* Whoever changed the table meanwhile has put it back. */
	bool driver_again = DISGUISE(drv.alloc) == first[0] && DISGUISE(drv.free) == first[1] && DISGUISE(drv.lookup) == first[2];
	printf("table %s\n", driver_again ? "leads to the driver" : "changed");
	return 0;
}
