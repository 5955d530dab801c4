/*
 * vmm.c - CUDA virtual memory management, counted.
 *
 * usage: vmm BOOKS
 *
 * Physical allocations made with cuMemCreate and released with
 * cuMemRelease are the cuda_vmm kind; on the side the program keeps the
 * bytes of address space it has reserved (cuMemAddressReserve, freed by
 * cuMemAddressFree) and mapped (cuMemMap, undone by cuMemUnmap), which
 * the summary reports as mapped_* and reserved_* figures of cuda_vmm; the
 * books write them under "vmm_mapping". Sizes are multiples of the
 * allocation granularity the driver reports; one cuMemCreate of 1 TiB
 * fails. At exit one allocation is still mapped into a reservation that
 * was never freed.
 *
 * Plain C built with -cudart none -lcuda: only this code calls the driver.
 */
#include <cuda.h>

#include "books.h"

static struct book vmm = BOOK("cuda_vmm");
static struct level mapped, reserved;
static CUmemAllocationProp prop;

static CUdeviceptr reserve(size_t size)
{
	CUdeviceptr va = 0;
	CU_CHECK(cuMemAddressReserve(&va, size, 0, 0, 0));
	level_add(&reserved, size);
	return va;
}

static void unreserve(CUdeviceptr va, size_t size)
{
	CU_CHECK(cuMemAddressFree(va, size));
	level_sub(&reserved, size);
}

static CUmemGenericAllocationHandle create(size_t size)
{
	CUmemGenericAllocationHandle h;
	CU_CHECK(cuMemCreate(&h, size, &prop, 0));
	books_alloc(&vmm, size);
	return h;
}

static void release(CUmemGenericAllocationHandle h, size_t size)
{
	CU_CHECK(cuMemRelease(h));
	books_free(&vmm, size);
}

/* Map, make it readable and writable, and write it. */
static void map(CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h)
{
	CU_CHECK(cuMemMap(va, size, 0, h, 0));
	level_add(&mapped, size);
	CUmemAccessDesc access;
	memset(&access, 0, sizeof access);
	access.location = prop.location;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CU_CHECK(cuMemSetAccess(va, size, &access, 1));
	CU_CHECK(cuMemsetD8(va, 0x3c, size));
}

static void unmap(CUdeviceptr va, size_t size)
{
	CU_CHECK(cuMemUnmap(va, size));
	level_sub(&mapped, size);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s BOOKS\n", argv[0]);
		return 2;
	}
	CUdevice dev;
	CUcontext ctx;
	CU_CHECK(cuInit(0));
	CU_CHECK(cuDeviceGet(&dev, 0));
	CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU_CHECK(cuCtxSetCurrent(ctx));
	int vmm_supported = 0;
	CU_CHECK(cuDeviceGetAttribute(&vmm_supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
	if (!vmm_supported)
		DIE("device 0 does not support virtual memory management");

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	size_t g = 0;
	CU_CHECK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));

	/* Reservation a: three allocations side by side. */
	CUdeviceptr a = reserve(8 * g);
	CUmemGenericAllocationHandle h1 = create(2 * g), h2 = create(1 * g), h3 = create(3 * g);
	map(a, 2 * g, h1);
	map(a + 2 * g, 1 * g, h2);
	map(a + 3 * g, 3 * g, h3);

	/* 1 TiB, a multiple of any granularity, more than any device has. */
	CUmemGenericAllocationHandle too_big;
	if (cuMemCreate(&too_big, 1ull << 40, &prop, 0) == CUDA_SUCCESS)
		DIE("cuMemCreate of 1 TiB succeeded");
	books_fail(&vmm);

	unmap(a + 2 * g, 1 * g);
	release(h2, 1 * g);

	/* Reservation b, with a fourth allocation: everything peaks here. */
	CUdeviceptr b = reserve(4 * g);
	CUmemGenericAllocationHandle h4 = create(4 * g);
	map(b, 4 * g, h4);
	CU_CHECK(cuCtxSynchronize());
	unmap(b, 4 * g);
	release(h4, 4 * g);
	unreserve(b, 4 * g);

	unmap(a, 2 * g);
	release(h1, 2 * g);
	CU_CHECK(cuCtxSynchronize());
	/* h3 stays mapped at a + 3g, and a stays reserved: leaks. */

	char extra[512];
	snprintf(extra, sizeof extra,
		 "\"vmm_mapping\": {\"mapped_peak_bytes\": %llu, \"mapped_bytes_at_end\": %llu, "
		 "\"reserved_peak_bytes\": %llu, \"reserved_bytes_at_end\": %llu}",
		 (unsigned long long)mapped.peak, (unsigned long long)mapped.now,
		 (unsigned long long)reserved.peak, (unsigned long long)reserved.now);
	struct book *books[] = { &vmm };
	if (books_write(argv[1], books, 1, extra) != 0)
		return 2;
	printf("vmm: granularity %zu; %llu allocations, peak %llu; mapped peak %llu; reserved peak %llu\n", g,
	       (unsigned long long)vmm.allocations, (unsigned long long)vmm.peak_bytes,
	       (unsigned long long)mapped.peak, (unsigned long long)reserved.peak);
	return 0;
}
