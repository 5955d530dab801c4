/*
 * nvtx.c - libwsprof.so as an NVTX injection library: what a program says
 * through NVTX v3 (ranges, and the memory API of nvToolsExtMem.h) becomes
 * wsprof annotations and pool sub-allocations (annotate.c).
 *
 * NVTX is header-only: the first NVTX call of a program dlopens the library
 * named by NVTX_INJECTION64_PATH (`wsprof record` points it here unless the
 * user named another tool) and calls InitializeInjectionNvtx2, which fills
 * the core callback table; the first call of an extension module (the
 * memory API) calls InitializeInjectionNvtxExtension with that module's
 * function slots. Slots left empty become no-ops in the program.
 *
 * Mapping:
 *   nvtxRangePush{A,W,Ex}, nvtxDomainRangePushEx  phase push (text)
 *   nvtxRangePop, nvtxDomainRangePop               phase pop
 *   nvtxMemHeapRegister      a pool; the handle returned is its pool id,
 *                            a number never reused (not an address)
 *   nvtxMemRegionsRegister   pool allocation per region (handle = address)
 *   nvtxMemRegionsUnregister pool free
 *   nvtxMemRegionsResize     pool free + pool allocation of the new size
 *   nvtxMemHeapReset/Unregister  POOL_RESET of the heap's pool
 *   nvtxMemRegionsName, a heap's own name  NAME annotation at the address
 * Regions of NVTX_MEM_HEAP_HANDLE_PROCESS_WIDE belong to one pool of their
 * own (PROCESS_WIDE_POOL). Domains and categories are not distinguished:
 * a thread has one stack of phases whatever the domain.
 *
 * The NVTX types below are transcribed from the NVTX v3 headers of the CUDA
 * 13.0 toolkit (nvtx3/nvToolsExt.h, nvtxDetail/nvtxTypes.h,
 * nvtxDetail/nvtxExtTypes.h, nvToolsExtMem.h: NVTX_VERSION 3, memory
 * extension NVTX_EXT_COMPATID_MEM 0x0102), so building wsprof needs no
 * toolkit. Only the layouts used here are declared.
 *
 * Reentrancy: the callbacks run on the program's threads, at any time.
 * They never allocate on the hot paths (ranges, regions): each record goes
 * through wsp_annotate/wsp_pool_*, which enter wsprof themselves. Heap
 * registration, unregistration and region resizes take a spin lock around
 * a small static table of heaps, never held across a call; registered
 * strings are copied into wsp_mem_alloc memory, kept until exit. Nothing
 * here is async-signal-safe beyond what annotate.c is.
 */

#include "hooks.h"
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include "wsprof/trace.h"

/* ---- NVTX core (nvToolsExt.h, nvtxDetail/nvtxTypes.h) ------------------- */

#define NVTX_VERSION 3

enum {
	NVTX_MESSAGE_TYPE_ASCII = 1,
	NVTX_MESSAGE_TYPE_UNICODE = 2,
	NVTX_MESSAGE_TYPE_REGISTERED = 3,
};

union nvtx_message {
	const char *ascii;
	const wchar_t *unicode;
	const void *registered; /* nvtxStringHandle_t: ours, from register_string */
};

struct nvtx_event_attributes { /* nvtxEventAttributes_v2 */
	uint16_t version;
	uint16_t size;
	uint32_t category;
	int32_t color_type;
	uint32_t color;
	int32_t payload_type;
	int32_t reserved0;
	uint64_t payload;
	int32_t message_type;
	union nvtx_message message;
};

typedef void (*nvtx_fn)(void);                       /* NvtxFunctionPointer */
typedef nvtx_fn **nvtx_fn_table;                     /* NvtxFunctionTable */
typedef const void *(*nvtx_get_export_table)(uint32_t id); /* NvtxGetExportTableFunc_t */

enum { NVTX_ETID_CALLBACKS = 1, NVTX_ETID_VERSIONINFO = 3 };
enum { NVTX_CB_MODULE_CORE = 1, NVTX_CB_MODULE_CORE2 = 5 };

enum { /* NvtxCallbackIdCore */
	NVTX_CBID_CORE_RangePushEx = 8,
	NVTX_CBID_CORE_RangePushA = 9,
	NVTX_CBID_CORE_RangePushW = 10,
	NVTX_CBID_CORE_RangePop = 11,
};

enum { /* NvtxCallbackIdCore2 */
	NVTX_CBID_CORE2_DomainRangePushEx = 4,
	NVTX_CBID_CORE2_DomainRangePop = 5,
	NVTX_CBID_CORE2_DomainRegisterStringA = 10,
	NVTX_CBID_CORE2_DomainRegisterStringW = 11,
};

struct nvtx_export_table_callbacks { /* NvtxExportTableCallbacks */
	size_t struct_size;
	int (*get_module_function_table)(int module, nvtx_fn_table *out_table, unsigned *out_size);
};

struct nvtx_export_table_version_info { /* NvtxExportTableVersionInfo */
	size_t struct_size;
	uint32_t version;
	uint32_t reserved0;
	void (*set_injection_nvtx_version)(uint32_t version);
};

/* ---- NVTX extension modules (nvtxDetail/nvtxExtTypes.h) ---------------- */

struct nvtx_ext_module_segment { /* nvtxExtModuleSegment_t */
	size_t segment_id;
	size_t slot_count;
	intptr_t *function_slots;
};

struct nvtx_ext_module_info { /* nvtxExtModuleInfo_t */
	uint16_t nvtx_ver;
	uint16_t struct_size;
	uint16_t module_id;
	uint16_t compat_id;
	size_t segments_count;
	struct nvtx_ext_module_segment *segments;
	intptr_t (*get_export_function)(uint32_t id);
	const void *ext_info;
};

/* ---- NVTX memory extension (nvToolsExtMem.h) ----------------------------- */

#define NVTX_EXT_MODULEID_MEM 1
#define NVTX_EXT_COMPATID_MEM 0x0102

#define NVTX_MEM_TYPE_VIRTUAL_ADDRESS 0x1
#define NVTX_MEM_REGION_REF_TYPE_POINTER 0x1
#define NVTX_MEM_REGION_REF_TYPE_HANDLE 0x2

enum { /* NVTX3EXT_CBID_*: slot indexes of the memory module */
	CBID_MemHeapRegister = 0,
	CBID_MemHeapUnregister = 1,
	CBID_MemHeapReset = 2,
	CBID_MemRegionsRegister = 3,
	CBID_MemRegionsResize = 4,
	CBID_MemRegionsUnregister = 5,
	CBID_MemRegionsName = 6,
	CBID_MemPermissionsAssign = 7,
	CBID_MemPermissionsCreate = 8,
	CBID_MemPermissionsDestroy = 9,
	CBID_MemPermissionsReset = 10,
	CBID_MemPermissionsBind = 11,
	CBID_MemPermissionsUnbind = 12,
	CBID_MemCudaGetProcessWidePermissions = 13, /* nvToolsExtMemCudaRt.h */
	CBID_MemCudaGetDeviceWidePermissions = 14,
	CBID_MemCudaSetPeerAccess = 15,
	CBID_MemCudaMarkInitialized = 16,
	CBID_MEM_COUNT
};

struct nvtx_mem_virtual_range { /* nvtxMemVirtualRangeDesc_v1 */
	size_t size;
	const void *ptr;
};

struct nvtx_mem_heap_desc { /* nvtxMemHeapDesc_v1 */
	uint16_t ext_compat_id;
	uint16_t struct_size;
	uint32_t reserved0;
	uint32_t usage;
	uint32_t type;
	size_t type_specific_desc_size;
	const void *type_specific_desc;
	uint32_t category;
	uint32_t message_type;
	union nvtx_message message;
};

struct nvtx_mem_regions_register_batch { /* nvtxMemRegionsRegisterBatch_v1 */
	uint16_t ext_compat_id;
	uint16_t struct_size;
	uint32_t region_type;
	const void *heap;
	size_t region_count;
	size_t region_desc_element_size;
	const void *region_desc_elements;
	const void **region_handle_elements_out;
};

struct nvtx_mem_regions_resize_batch { /* nvtxMemRegionsResizeBatch_v1 */
	uint16_t ext_compat_id;
	uint16_t struct_size;
	uint32_t region_type;
	size_t region_desc_count;
	size_t region_desc_element_size;
	const void *region_desc_elements;
};

struct nvtx_mem_regions_unregister_batch { /* nvtxMemRegionsUnregisterBatch_v1 */
	uint16_t ext_compat_id;
	uint16_t struct_size;
	uint32_t ref_type;
	size_t ref_count;
	size_t ref_element_size;
	const void *ref_elements; /* nvtxMemRegionRef_t: a pointer or our handle */
};

struct nvtx_mem_region_name_desc { /* nvtxMemRegionNameDesc_v1 */
	uint32_t region_ref_type;
	uint32_t name_type;
	const void *region;
	union nvtx_message name;
	uint32_t category;
	uint32_t reserved0;
};

struct nvtx_mem_regions_name_batch { /* nvtxMemRegionsNameBatch_v1 */
	uint16_t ext_compat_id;
	uint16_t struct_size;
	uint32_t reserved0;
	size_t region_count;
	size_t region_element_size;
	const void *region_elements;
	size_t reserved1;
};

/* ---- messages ------------------------------------------------------------- */

#define TEXT_MAX 1024 /* wsp_annotate keeps at most this much of a text */

/* UTF-32 (Linux wchar_t) to UTF-8, cut at a character boundary. */
static const char *utf8_from_wide(const wchar_t *w, char *out, size_t cap)
{
	size_t n = 0;
	for (; *w; w++) {
		uint32_t c = (uint32_t)*w;
		char enc[4];
		size_t len;
		if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			c = 0xfffd;
		if (c < 0x80) {
			enc[0] = (char)c;
			len = 1;
		} else if (c < 0x800) {
			enc[0] = (char)(0xc0 | c >> 6);
			enc[1] = (char)(0x80 | (c & 0x3f));
			len = 2;
		} else if (c < 0x10000) {
			enc[0] = (char)(0xe0 | c >> 12);
			enc[1] = (char)(0x80 | (c >> 6 & 0x3f));
			enc[2] = (char)(0x80 | (c & 0x3f));
			len = 3;
		} else {
			enc[0] = (char)(0xf0 | c >> 18);
			enc[1] = (char)(0x80 | (c >> 12 & 0x3f));
			enc[2] = (char)(0x80 | (c >> 6 & 0x3f));
			enc[3] = (char)(0x80 | (c & 0x3f));
			len = 4;
		}
		if (n + len >= cap)
			break;
		memcpy(out + n, enc, len);
		n += len;
	}
	out[n] = 0;
	return out;
}

/* The text of an NVTX message, converted into buf if need be; NULL if none. */
static const char *message_text(uint32_t type, union nvtx_message m, char *buf, size_t cap)
{
	switch (type) {
	case NVTX_MESSAGE_TYPE_ASCII:
		return m.ascii;
	case NVTX_MESSAGE_TYPE_UNICODE:
		return m.unicode ? utf8_from_wide(m.unicode, buf, cap) : NULL;
	case NVTX_MESSAGE_TYPE_REGISTERED:
		return m.registered;
	default:
		return NULL;
	}
}

/* A registered string's handle is our own copy of it, valid until exit:
 * messages of type REGISTERED are then plain text. */
static const void *register_string(const char *s)
{
	if (!s)
		return NULL;
	size_t n = strnlen(s, TEXT_MAX - 1);
	char *copy = wsp_mem_alloc(n + 1);
	if (copy)
		memcpy(copy, s, n); /* zeroed: terminated */
	return copy;
}

static const void *domain_register_string_a(const void *domain, const char *s)
{
	(void)domain;
	return register_string(s);
}

static const void *domain_register_string_w(const void *domain, const wchar_t *s)
{
	(void)domain;
	char buf[TEXT_MAX];
	return s ? register_string(utf8_from_wide(s, buf, sizeof buf)) : NULL;
}

/* ---- ranges ------------------------------------------------------------- */

/* Open ranges of this thread, for the levels NVTX returns (one stack for
 * all domains). A pop with nothing open is an error and is not recorded. */
static WSP_TLS int range_depth;

static int push(const char *name)
{
	wsp_annotate(WSPROF_ANN_PHASE_PUSH, 0, 0, 0, name ? name : "");
	return range_depth++;
}

static int push_attributes(const struct nvtx_event_attributes *a)
{
	char buf[TEXT_MAX];
	const char *name = NULL;
	if (a && a->size >= offsetof(struct nvtx_event_attributes, message) + sizeof a->message)
		name = message_text((uint32_t)a->message_type, a->message, buf, sizeof buf);
	return push(name);
}

static int pop(void)
{
	if (range_depth <= 0)
		return -1;
	wsp_annotate(WSPROF_ANN_PHASE_POP, 0, 0, 0, NULL);
	return --range_depth;
}

static int range_push_a(const char *message) { return push(message); }
static int range_push_ex(const struct nvtx_event_attributes *a) { return push_attributes(a); }
static int range_pop(void) { return pop(); }

static int range_push_w(const wchar_t *message)
{
	char buf[TEXT_MAX];
	return push(message ? utf8_from_wide(message, buf, sizeof buf) : NULL);
}

static int domain_range_push_ex(const void *domain, const struct nvtx_event_attributes *a)
{
	(void)domain;
	return push_attributes(a);
}

static int domain_range_pop(const void *domain)
{
	(void)domain;
	return pop();
}

/* ---- heaps -------------------------------------------------------------- */

/* Pool ids: the process-wide heap has one, every registered heap the next
 * number. Small numbers, so they never meet the slab addresses the
 * annotation API uses as pool ids. */
#define PROCESS_WIDE_POOL 1
static _Atomic uint64_t next_heap_id = PROCESS_WIDE_POOL + 1;

/* Live heaps' address ranges, for the one call that names a region but not
 * its heap (resize). A heap registered while the table is full still
 * works; only its resized regions are counted in the process-wide pool. */
#define HEAPS_MAX 1024
static struct heap {
	uint64_t id; /* 0: free slot */
	uint64_t base, size;
} heaps[HEAPS_MAX];
static atomic_flag heaps_lock = ATOMIC_FLAG_INIT;

static void heaps_lock_take(void)
{
	while (atomic_flag_test_and_set_explicit(&heaps_lock, memory_order_acquire))
		;
}

static void heaps_lock_give(void)
{
	atomic_flag_clear_explicit(&heaps_lock, memory_order_release);
}

static void heap_add(uint64_t id, uint64_t base, uint64_t size)
{
	heaps_lock_take();
	for (size_t i = 0; i < HEAPS_MAX; i++) {
		if (!heaps[i].id) {
			heaps[i] = (struct heap){ id, base, size };
			break;
		}
	}
	heaps_lock_give();
}

static void heap_remove(uint64_t id)
{
	heaps_lock_take();
	for (size_t i = 0; i < HEAPS_MAX; i++)
		if (heaps[i].id == id)
			heaps[i].id = 0;
	heaps_lock_give();
}

/* The pool of the innermost live heap holding addr. */
static uint64_t heap_at(uint64_t addr)
{
	uint64_t id = PROCESS_WIDE_POOL, best = UINT64_MAX;
	heaps_lock_take();
	for (size_t i = 0; i < HEAPS_MAX; i++) {
		const struct heap *h = &heaps[i];
		if (h->id && addr - h->base < h->size && h->size < best) {
			id = h->id;
			best = h->size;
		}
	}
	heaps_lock_give();
	return id;
}

static uint64_t pool_of(const void *heap)
{
	return heap ? (uint64_t)(uintptr_t)heap : PROCESS_WIDE_POOL;
}

static uint64_t addr_of(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static const void *mem_heap_register(const void *domain, const struct nvtx_mem_heap_desc *d)
{
	(void)domain;
	uint64_t id = atomic_fetch_add(&next_heap_id, 1);
	if (d && d->type == NVTX_MEM_TYPE_VIRTUAL_ADDRESS && d->type_specific_desc &&
	    d->type_specific_desc_size >= sizeof(struct nvtx_mem_virtual_range)) {
		const struct nvtx_mem_virtual_range *r = d->type_specific_desc;
		heap_add(id, addr_of(r->ptr), r->size);
		char buf[TEXT_MAX];
		const char *name = message_text(d->message_type, d->message, buf, sizeof buf);
		if (name && r->ptr)
			wsp_annotate(WSPROF_ANN_NAME, addr_of(r->ptr), 0, 0, name);
	}
	return (const void *)(uintptr_t)id;
}

static void mem_heap_unregister(const void *domain, const void *heap)
{
	(void)domain;
	if (!heap)
		return; /* the process-wide heap cannot be unregistered */
	wsp_annotate(WSPROF_ANN_POOL_RESET, 0, 0, pool_of(heap), NULL);
	heap_remove(pool_of(heap));
}

static void mem_heap_reset(const void *domain, const void *heap)
{
	(void)domain;
	wsp_annotate(WSPROF_ANN_POOL_RESET, 0, 0, pool_of(heap), NULL);
}

/* ---- regions ------------------------------------------------------------ */

/* Elements of a batch are `given` bytes apart; 0 (left unset) means the
 * size this header version has. */
static size_t stride(size_t given, size_t natural)
{
	return given >= natural ? given : natural;
}

static void mem_regions_register(const void *domain, const struct nvtx_mem_regions_register_batch *b)
{
	(void)domain;
	if (!b || b->region_type != NVTX_MEM_TYPE_VIRTUAL_ADDRESS || !b->region_desc_elements)
		return;
	size_t step = stride(b->region_desc_element_size, sizeof(struct nvtx_mem_virtual_range));
	const unsigned char *at = b->region_desc_elements;
	uint64_t pool = pool_of(b->heap);
	for (size_t i = 0; i < b->region_count; i++, at += step) {
		const struct nvtx_mem_virtual_range *r = (const void *)at;
		wsp_pool_alloc(pool, addr_of(r->ptr), r->size);
		if (b->region_handle_elements_out)
			b->region_handle_elements_out[i] = r->ptr; /* a region's handle is its address */
	}
}

static void mem_regions_resize(const void *domain, const struct nvtx_mem_regions_resize_batch *b)
{
	(void)domain;
	if (!b || b->region_type != NVTX_MEM_TYPE_VIRTUAL_ADDRESS || !b->region_desc_elements)
		return;
	size_t step = stride(b->region_desc_element_size, sizeof(struct nvtx_mem_virtual_range));
	const unsigned char *at = b->region_desc_elements;
	for (size_t i = 0; i < b->region_desc_count; i++, at += step) {
		const struct nvtx_mem_virtual_range *r = (const void *)at;
		uint64_t pool = heap_at(addr_of(r->ptr));
		wsp_pool_free(pool, addr_of(r->ptr));
		wsp_pool_alloc(pool, addr_of(r->ptr), r->size);
	}
}

static void mem_regions_unregister(const void *domain, const struct nvtx_mem_regions_unregister_batch *b)
{
	(void)domain;
	if (!b || !b->ref_elements ||
	    (b->ref_type != NVTX_MEM_REGION_REF_TYPE_POINTER && b->ref_type != NVTX_MEM_REGION_REF_TYPE_HANDLE))
		return;
	size_t step = stride(b->ref_element_size, sizeof(const void *));
	const unsigned char *at = b->ref_elements;
	for (size_t i = 0; i < b->ref_count; i++, at += step) {
		const void *p;
		memcpy(&p, at, sizeof p); /* pointer or handle: the same address */
		wsp_pool_free(0, addr_of(p));
	}
}

static void mem_regions_name(const void *domain, const struct nvtx_mem_regions_name_batch *b)
{
	(void)domain;
	if (!b || !b->region_elements)
		return;
	size_t step = stride(b->region_element_size, sizeof(struct nvtx_mem_region_name_desc));
	const unsigned char *at = b->region_elements;
	for (size_t i = 0; i < b->region_count; i++, at += step) {
		const struct nvtx_mem_region_name_desc *d = (const void *)at;
		if (d->region_ref_type != NVTX_MEM_REGION_REF_TYPE_POINTER &&
		    d->region_ref_type != NVTX_MEM_REGION_REF_TYPE_HANDLE)
			continue;
		char buf[TEXT_MAX];
		const char *name = message_text(d->name_type, d->name, buf, sizeof buf);
		if (name)
			wsp_annotate(WSPROF_ANN_NAME, addr_of(d->region), 0, 0, name);
	}
}

/* ---- permissions and CUDA specifics: accepted, not recorded ------------- */

/* One object stands for every permissions handle: the calls taking one do
 * nothing, and it is neither 0 (process-wide) nor -1 (no tool). */
static const char permissions_object;

static const void *mem_permissions_create(const void *domain, int32_t flags)
{
	(void)domain, (void)flags;
	return &permissions_object;
}

static const void *mem_cuda_get_process_wide_permissions(const void *domain)
{
	(void)domain;
	return &permissions_object;
}

static const void *mem_cuda_get_device_wide_permissions(const void *domain, int device)
{
	(void)domain, (void)device;
	return &permissions_object;
}

static void mem_permissions_assign(const void *domain, const void *batch) { (void)domain, (void)batch; }
static void mem_permissions_destroy(const void *domain, const void *p) { (void)domain, (void)p; }
static void mem_permissions_reset(const void *domain, const void *p) { (void)domain, (void)p; }
static void mem_permissions_bind(const void *domain, const void *p, uint32_t scope, uint32_t flags)
{
	(void)domain, (void)p, (void)scope, (void)flags;
}
static void mem_permissions_unbind(const void *domain, uint32_t scope) { (void)domain, (void)scope; }
static void mem_cuda_set_peer_access(const void *domain, const void *p, int peer, uint32_t flags)
{
	(void)domain, (void)p, (void)peer, (void)flags;
}
static void mem_cuda_mark_initialized(const void *domain, const void *stream, uint8_t per_thread, const void *batch)
{
	(void)domain, (void)stream, (void)per_thread, (void)batch;
}

#define SLOT(f) ((intptr_t)(void (*)(void))(f))

static const intptr_t mem_slots[CBID_MEM_COUNT] = {
	[CBID_MemHeapRegister] = SLOT(mem_heap_register),
	[CBID_MemHeapUnregister] = SLOT(mem_heap_unregister),
	[CBID_MemHeapReset] = SLOT(mem_heap_reset),
	[CBID_MemRegionsRegister] = SLOT(mem_regions_register),
	[CBID_MemRegionsResize] = SLOT(mem_regions_resize),
	[CBID_MemRegionsUnregister] = SLOT(mem_regions_unregister),
	[CBID_MemRegionsName] = SLOT(mem_regions_name),
	[CBID_MemPermissionsAssign] = SLOT(mem_permissions_assign),
	[CBID_MemPermissionsCreate] = SLOT(mem_permissions_create),
	[CBID_MemPermissionsDestroy] = SLOT(mem_permissions_destroy),
	[CBID_MemPermissionsReset] = SLOT(mem_permissions_reset),
	[CBID_MemPermissionsBind] = SLOT(mem_permissions_bind),
	[CBID_MemPermissionsUnbind] = SLOT(mem_permissions_unbind),
	[CBID_MemCudaGetProcessWidePermissions] = SLOT(mem_cuda_get_process_wide_permissions),
	[CBID_MemCudaGetDeviceWidePermissions] = SLOT(mem_cuda_get_device_wide_permissions),
	[CBID_MemCudaSetPeerAccess] = SLOT(mem_cuda_set_peer_access),
	[CBID_MemCudaMarkInitialized] = SLOT(mem_cuda_mark_initialized),
};

/* ---- entry points --------------------------------------------------------- */

/* Attach only to a process wsprof is recording (which it is only when
 * preloaded, see wsp_is_preloaded): loaded by NVTX alone, as an exec'd
 * program that is not followed may inherit NVTX_INJECTION64_PATH, it sees
 * no allocations, so the program's NVTX calls had better be no-ops. */
static bool attachable(void)
{
	return wsp_is_traced_process();
}

static void set_slot(nvtx_fn_table table, unsigned size, unsigned id, nvtx_fn f)
{
	if (id < size && table[id])
		*table[id] = f;
}

/* Called by the NVTX core once per process, on its first NVTX call.
 * @return 1 when attached, 0 to leave every NVTX call a no-op. */
WSPROF_EXPORT int InitializeInjectionNvtx2(nvtx_get_export_table get_export_table)
{
	if (!get_export_table || !attachable())
		return 0;
	const struct nvtx_export_table_callbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
	if (!cb || cb->struct_size < sizeof *cb || !cb->get_module_function_table)
		return 0;
	nvtx_fn_table core, core2;
	unsigned core_size = 0, core2_size = 0;
	if (!cb->get_module_function_table(NVTX_CB_MODULE_CORE, &core, &core_size) || !core)
		return 0;
	set_slot(core, core_size, NVTX_CBID_CORE_RangePushA, (nvtx_fn)range_push_a);
	set_slot(core, core_size, NVTX_CBID_CORE_RangePushW, (nvtx_fn)range_push_w);
	set_slot(core, core_size, NVTX_CBID_CORE_RangePushEx, (nvtx_fn)range_push_ex);
	set_slot(core, core_size, NVTX_CBID_CORE_RangePop, (nvtx_fn)range_pop);
	if (cb->get_module_function_table(NVTX_CB_MODULE_CORE2, &core2, &core2_size) && core2) {
		set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, (nvtx_fn)domain_range_push_ex);
		set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, (nvtx_fn)domain_range_pop);
		set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, (nvtx_fn)domain_register_string_a);
		set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, (nvtx_fn)domain_register_string_w);
	}
	/* "Must be set by tools when attaching" (nvtxTypes.h). */
	const struct nvtx_export_table_version_info *v = get_export_table(NVTX_ETID_VERSIONINFO);
	if (v && v->struct_size >= sizeof *v && v->set_injection_nvtx_version)
		v->set_injection_nvtx_version(NVTX_VERSION);
	return 1;
}

/* Called once per extension module (and per copy of its header version in
 * the program) with that module's function slots. Only the memory module,
 * of the layout transcribed above, is taken.
 * @return 1 when its slots are filled, 0 for modules wsprof does not handle. */
WSPROF_EXPORT int InitializeInjectionNvtxExtension(struct nvtx_ext_module_info *info)
{
	if (!info || info->struct_size < sizeof *info || info->module_id != NVTX_EXT_MODULEID_MEM ||
	    info->compat_id != NVTX_EXT_COMPATID_MEM || !info->segments || !attachable())
		return 0;
	for (size_t s = 0; s < info->segments_count; s++) {
		struct nvtx_ext_module_segment *seg = &info->segments[s];
		if (seg->segment_id != 1 || !seg->function_slots) /* the one segment of version 0x0102 */
			continue;
		size_t n = seg->slot_count < CBID_MEM_COUNT ? seg->slot_count : CBID_MEM_COUNT;
		for (size_t i = 0; i < n; i++)
			seg->function_slots[i] = mem_slots[i];
	}
	return 1;
}
