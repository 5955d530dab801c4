/*
 * nvtx_pools - a sub-allocator and ranges told to tools through NVTX v3
 * (the CUDA toolkit's header-only nvtx3/nvToolsExtMem.h), with the program's
 * own books of kind `pool`.
 *
 * usage: nvtx_pools EXPECT
 *
 * Two heaps over malloc'd slabs: heap A gets regions (in batches, with
 * handles and without), a name, an unregistration by pointer and one by
 * handle, a resize, a reset (every region still registered is freed), new
 * regions, and is unregistered at the end (the same again); heap B keeps
 * its regions to the end (leaked). One region goes through the
 * process-wide heap. Ranges are pushed as ASCII, wide, attribute and
 * registered-string messages, nested, and all popped.
 *
 * Writes to EXPECT: "pool" (account.h figures), and "nvtx": what a tool
 * should have been told (heap handles, regions registered per heap,
 * unregistrations, resets, the named region, phase names in push order,
 * the levels NVTX returned for pushes and pops, NVTX_INJECTION64_PATH as
 * the program saw it). Prints one line on stdout that does not depend on
 * whether a tool is attached, so a test can compare runs.
 */
#include "account.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#define SLAB (64 * 1024)

static struct account pool;

/* What the tool should have seen, beyond the figures. */
static struct {
	unsigned regions_a, regions_b, regions_process_wide;
	unsigned unregistered, resized, resets;
	char phases[512], levels[256];
} told;

static void list_add(char *list, size_t cap, const char *item)
{
	size_t n = strlen(list);
	snprintf(list + n, cap - n, "%s%s", n ? "|" : "", item);
}

static void level(const char *what, int value)
{
	char item[32];
	snprintf(item, sizeof item, "%s%d", what, value);
	list_add(told.levels, sizeof told.levels, item);
}

static nvtxMemHeapHandle_t heap_register(void *slab, size_t size, uint32_t usage, const char *name)
{
	nvtxMemVirtualRangeDesc_t range = { .size = size, .ptr = slab };
	nvtxMemHeapDesc_t desc = {
		.extCompatID = NVTX_EXT_COMPATID_MEM,
		.structSize = sizeof desc,
		.usage = usage,
		.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
		.typeSpecificDescSize = sizeof range,
		.typeSpecificDesc = &range,
		.messageType = NVTX_MESSAGE_TYPE_ASCII,
		.message.ascii = name,
	};
	return nvtxMemHeapRegister(NULL, &desc);
}

/* Register n regions of heap at base + offsets[i], sizes[i]; their handles
 * go to handles (may be NULL). */
static void regions_register(nvtxMemHeapHandle_t heap, char *base, const size_t *offsets, const size_t *sizes,
			     size_t n, nvtxMemRegionHandle_t *handles)
{
	nvtxMemVirtualRangeDesc_t ranges[8];
	for (size_t i = 0; i < n; i++) {
		ranges[i] = (nvtxMemVirtualRangeDesc_t){ .size = sizes[i], .ptr = base + offsets[i] };
		account_alloc(&pool, sizes[i]);
	}
	nvtxMemRegionsRegisterBatch_t batch = {
		.extCompatID = NVTX_EXT_COMPATID_MEM,
		.structSize = sizeof batch,
		.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
		.heap = heap,
		.regionCount = n,
		.regionDescElementSize = sizeof ranges[0],
		.regionDescElements = ranges,
		.regionHandleElementsOut = handles,
	};
	nvtxMemRegionsRegister(NULL, &batch);
}

static void region_unregister(uint32_t ref_type, nvtxMemRegionRef_t ref, size_t size)
{
	nvtxMemRegionsUnregisterBatch_t batch = {
		.extCompatID = NVTX_EXT_COMPATID_MEM,
		.structSize = sizeof batch,
		.refType = ref_type,
		.refCount = 1,
		.refElementSize = sizeof ref,
		.refElements = &ref,
	};
	nvtxMemRegionsUnregister(NULL, &batch);
	account_free(&pool, size);
	told.unregistered++;
}

static void region_resize(void *p, size_t old_size, size_t new_size)
{
	nvtxMemVirtualRangeDesc_t range = { .size = new_size, .ptr = p };
	nvtxMemRegionsResizeBatch_t batch = {
		.extCompatID = NVTX_EXT_COMPATID_MEM,
		.structSize = sizeof batch,
		.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
		.regionDescCount = 1,
		.regionDescElementSize = sizeof range,
		.regionDescElements = &range,
	};
	nvtxMemRegionsResize(NULL, &batch);
	account_resize(&pool, old_size, new_size);
	told.resized++;
}

static void region_name(nvtxMemRegionHandle_t handle, const char *name)
{
	nvtxMemRegionNameDesc_t d = {
		.regionRefType = NVTX_MEM_REGION_REF_TYPE_HANDLE,
		.nameType = NVTX_MESSAGE_TYPE_ASCII,
		.region.handle = handle,
		.name.ascii = name,
	};
	nvtxMemRegionsNameBatch_t batch = {
		.extCompatID = NVTX_EXT_COMPATID_MEM,
		.structSize = sizeof batch,
		.regionCount = 1,
		.regionElementSize = sizeof d,
		.regionElements = &d,
	};
	nvtxMemRegionsName(NULL, &batch);
}

/* Heap reset or unregistration: every region still registered is freed. */
static void heap_gone(const size_t *live_sizes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		account_free(&pool, live_sizes[i]);
	told.resets++;
}

static void push_ascii(const char *name)
{
	level("push", nvtxRangePushA(name));
	list_add(told.phases, sizeof told.phases, name);
}

static void pop(void)
{
	level("pop", nvtxRangePop());
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: nvtx_pools EXPECT");
		return 2;
	}
	char *slab_a = malloc(SLAB), *slab_b = malloc(SLAB), *lone = malloc(256);
	if (!slab_a || !slab_b || !lone)
		return 1;

	push_ascii("nvtx-setup");
	nvtxMemHeapHandle_t a = heap_register(slab_a, SLAB, NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR, "slab-a");
	nvtxMemHeapHandle_t b = heap_register(slab_b, SLAB, NVTX_MEM_HEAP_USAGE_TYPE_LAYOUT, "slab-b");

	/* Heap A, first life: 3 regions with handles, 1 without. */
	nvtxMemRegionHandle_t h[3] = { 0 };
	regions_register(a, slab_a, (const size_t[]){ 0, 4096, 8192 }, (const size_t[]){ 1000, 2000, 3000 }, 3, h);
	regions_register(a, slab_a, (const size_t[]){ 16384 }, (const size_t[]){ 500 }, 1, NULL);
	told.regions_a += 4;
	region_name(h[1], "weights");

	nvtxEventAttributes_t attr = {
		.version = NVTX_VERSION,
		.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
		.messageType = NVTX_MESSAGE_TYPE_ASCII,
		.message.ascii = "nvtx-work",
	};
	level("push", nvtxRangePushEx(&attr));
	list_add(told.phases, sizeof told.phases, "nvtx-work");
	level("push", nvtxRangePushW(L"nvtx-wide-\u00e9"));
	list_add(told.phases, sizeof told.phases, "nvtx-wide-\xc3\xa9");

	region_unregister(NVTX_MEM_REGION_REF_TYPE_POINTER, (nvtxMemRegionRef_t){ .pointer = slab_a }, 1000);
	region_resize(slab_a + 8192, 3000, 5000);
	pop();

	nvtxEventAttributes_t reg = attr;
	reg.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	reg.message.registered = nvtxDomainRegisterStringA(NULL, "nvtx-registered");
	level("push", nvtxRangePushEx(&reg));
	list_add(told.phases, sizeof told.phases, "nvtx-registered");

	/* Reset: 4096 (2000), 8192 (5000 after the resize), 16384 (500) go. */
	nvtxMemHeapReset(NULL, a);
	heap_gone((const size_t[]){ 2000, 5000, 500 }, 3);
	pop();
	pop();

	/* Heap A, second life: 2 regions, one unregistered by handle, then the
	 * heap itself. */
	nvtxMemRegionHandle_t h2[2] = { 0 };
	regions_register(a, slab_a, (const size_t[]){ 0, 32768 }, (const size_t[]){ 7000, 9000 }, 2, h2);
	told.regions_a += 2;
	region_unregister(NVTX_MEM_REGION_REF_TYPE_HANDLE, (nvtxMemRegionRef_t){ .handle = h2[0] }, 7000);
	nvtxMemHeapUnregister(NULL, a);
	heap_gone((const size_t[]){ 9000 }, 1);

	/* Heap B keeps its regions: leaked. */
	regions_register(b, slab_b, (const size_t[]){ 128, 1024 }, (const size_t[]){ 100, 300 }, 2, NULL);
	told.regions_b += 2;

	/* The process-wide heap. */
	regions_register(NVTX_MEM_HEAP_HANDLE_PROCESS_WIDE, lone, (const size_t[]){ 0 }, (const size_t[]){ 256 }, 1, NULL);
	told.regions_process_wide++;
	region_unregister(NVTX_MEM_REGION_REF_TYPE_POINTER, (nvtxMemRegionRef_t){ .pointer = lone }, 256);
	pop();

	struct expect e;
	expect_init(&e);
	expect_account(&e, "pool", &pool);
	expect_open(&e, "nvtx");
	expect_uint(&e, "heap_a", (uint64_t)(uintptr_t)a);
	expect_uint(&e, "heap_b", (uint64_t)(uintptr_t)b);
	expect_uint(&e, "regions_a", told.regions_a);
	expect_uint(&e, "regions_b", told.regions_b);
	expect_uint(&e, "regions_process_wide", told.regions_process_wide);
	expect_uint(&e, "unregistered", told.unregistered);
	expect_uint(&e, "resized", told.resized);
	expect_uint(&e, "resets", told.resets);
	expect_uint(&e, "named_addr", (uint64_t)(uintptr_t)(slab_a + 4096));
	expect_string(&e, "name", "weights");
	expect_uint(&e, "slab_a", (uint64_t)(uintptr_t)slab_a);
	expect_uint(&e, "slab_b", (uint64_t)(uintptr_t)slab_b);
	expect_string(&e, "phases", told.phases);
	expect_string(&e, "levels", told.levels);
	const char *tool = getenv("NVTX_INJECTION64_PATH");
	expect_string(&e, "injection_path", tool ? tool : "");
	expect_close(&e);
	if (expect_write(&e, argv[1]) < 0)
		return 1;

	say("nvtx_pools: %llu regions registered, %llu unregistered, %llu leaked (%llu bytes), peak %llu bytes",
	    (unsigned long long)pool.allocations, (unsigned long long)pool.frees,
	    (unsigned long long)pool.live_blocks, (unsigned long long)pool.live_bytes,
	    (unsigned long long)pool.peak_bytes);
	free(lone);
	free(slab_a);
	return 0; /* slab_b stays: heap B is still registered */
}
