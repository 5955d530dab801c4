/*
 * cuda_vmm - physical allocations and mappings of the CUDA virtual memory
 * API: kind `cuda_vmm`.
 *
 * usage: cuda_vmm EXPECT [procaddr]
 *
 * Creates two physical allocations (cuMemCreate), reserves two address
 * ranges, maps the first allocation once and the second twice (whole, and
 * its second half again elsewhere), unmaps two of the mappings, frees the
 * first range and releases the first allocation; the second stays created,
 * mapped and reserved to the end. One cuMemCreate asks for more than is
 * free and fails.
 *
 * Only cuMemCreate and cuMemRelease make and end `cuda_vmm` blocks;
 * mappings and reservations are kept apart, in the expect file's
 * "vmm_mapping": how many maps and unmaps, and the largest and final
 * totals of mapped and of reserved bytes.
 *
 * The program is linked with libcuda.so.1. With "procaddr" it reaches
 * these entry points through cuGetProcAddress_v2 by base name instead, as
 * PyTorch does (cudaGetDriverEntryPointByVersion).
 */
#include "account.h"
#include "cuda_min.h"

#include <string.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

/* X(symbol, base, version) */
#define VMM_ENTRIES(X)                                       \
	X(cuInit, "cuInit", 2000)                            \
	X(cuMemGetInfo_v2, "cuMemGetInfo", 3020)             \
	X(cuMemCreate, "cuMemCreate", 10020)                 \
	X(cuMemRelease, "cuMemRelease", 10020)               \
	X(cuMemAddressReserve, "cuMemAddressReserve", 10020) \
	X(cuMemAddressFree, "cuMemAddressFree", 10020)       \
	X(cuMemMap, "cuMemMap", 10020)                       \
	X(cuMemUnmap, "cuMemUnmap", 10020)

static struct {
#define VMM_MEMBER(symbol, base, version) __typeof__(symbol) *symbol;
	VMM_ENTRIES(VMM_MEMBER)
} api;

static struct account vmm;
static struct {
	uint64_t maps, unmaps;
	uint64_t mapped, mapped_peak, reserved, reserved_peak;
} books;

static void check(CUresult got, CUresult want, const char *call)
{
	if (got != want) {
		complain("cuda_vmm: %s returned %d, expected %d", call, (int)got, (int)want);
		_exit(3);
	}
}

static void resolve(bool by_procaddr)
{
	if (!by_procaddr) {
#define LINKED(symbol, base, version) api.symbol = symbol;
		VMM_ENTRIES(LINKED)
		return;
	}
	void *f;
	CUdriverProcAddressQueryResult status;
#define BY_VERSION(symbol, base, version)                                                      \
	check(cuGetProcAddress_v2(base, &f, version, 0, &status), CUDA_SUCCESS, "cuGetProcAddress_v2(" base ")"); \
	api.symbol = f;
	VMM_ENTRIES(BY_VERSION)
}

static CUmemGenericAllocationHandle create(size_t size)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
	CUmemGenericAllocationHandle h;
	check(api.cuMemCreate(&h, size, &prop, 0), CUDA_SUCCESS, "cuMemCreate");
	account_alloc(&vmm, size);
	return h;
}

static void release(CUmemGenericAllocationHandle h, size_t size)
{
	check(api.cuMemRelease(h), CUDA_SUCCESS, "cuMemRelease");
	account_free(&vmm, size);
}

static CUdeviceptr reserve(size_t size)
{
	CUdeviceptr p;
	check(api.cuMemAddressReserve(&p, size, 0, 0, 0), CUDA_SUCCESS, "cuMemAddressReserve");
	books.reserved += size;
	if (books.reserved > books.reserved_peak)
		books.reserved_peak = books.reserved;
	return p;
}

static void unreserve(CUdeviceptr p, size_t size)
{
	check(api.cuMemAddressFree(p, size), CUDA_SUCCESS, "cuMemAddressFree");
	books.reserved -= size;
}

static void map(CUdeviceptr at, size_t size, size_t offset, CUmemGenericAllocationHandle h)
{
	check(api.cuMemMap(at, size, offset, h, 0), CUDA_SUCCESS, "cuMemMap");
	books.maps++;
	books.mapped += size;
	if (books.mapped > books.mapped_peak)
		books.mapped_peak = books.mapped;
}

static void unmap(CUdeviceptr at, size_t size)
{
	check(api.cuMemUnmap(at, size), CUDA_SUCCESS, "cuMemUnmap");
	books.unmaps++;
	books.mapped -= size;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "procaddr") != 0)) {
		complain("usage: cuda_vmm EXPECT [procaddr]");
		return 2;
	}
	resolve(argc == 3);
	check(api.cuInit(0), CUDA_SUCCESS, "cuInit");

	CUmemGenericAllocationHandle first = create(2 * MiB), second = create(4 * MiB);
	CUdeviceptr near = reserve(4 * MiB), far = reserve(8 * MiB);
	map(near, 2 * MiB, 0, first);
	map(far, 4 * MiB, 0, second);
	map(far + 4 * MiB, 2 * MiB, 2 * MiB, second); /* its second half, again */

	unmap(far + 4 * MiB, 2 * MiB);
	unmap(near, 2 * MiB);
	unreserve(near, 4 * MiB);
	release(first, 2 * MiB);

	size_t free_bytes, total;
	check(api.cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS, "cuMemGetInfo_v2");
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
	CUmemGenericAllocationHandle none = 0;
	check(api.cuMemCreate(&none, free_bytes + 2 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY,
	      "cuMemCreate of more than is free");
	account_fail(&vmm);
	if (none) {
		complain("cuda_vmm: a failed cuMemCreate wrote a handle");
		return 3;
	}
	/* `second` stays created, mapped at `far`, and `far` stays reserved. */

	struct expect e;
	expect_init(&e);
	expect_account(&e, "cuda_vmm", &vmm);
	expect_open(&e, "vmm_mapping");
	expect_uint(&e, "maps", books.maps);
	expect_uint(&e, "unmaps", books.unmaps);
	expect_uint(&e, "mapped_peak_bytes", books.mapped_peak);
	expect_uint(&e, "mapped_bytes_at_end", books.mapped);
	expect_uint(&e, "reserved_peak_bytes", books.reserved_peak);
	expect_uint(&e, "reserved_bytes_at_end", books.reserved);
	expect_close(&e);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
