/*
 * annotate.c - what the program tells wsprof about its memory: the calls
 * of include/wsprof.h (through the table "wsprof_get_annotation_api_v1"
 * returns) and the NVTX memory and range calls (nvtx.c), recorded as
 * ANNOTATE records, and pool sub-allocations as allocations of kind `pool`.
 *
 * Reentrancy: each call enters wsprof like a hook (guard, errno kept); a
 * call made inside wsprof is dropped. Addresses are recorded as given:
 * the analyzer resolves interior pointers to their blocks. While
 * recording is off (core/recording.c) annotations are dropped, and
 * wsprof_start()/wsprof_stop() turn it on and off.
 */

#include "hooks.h"
#include "core.h"
#include "format.h"

#include <string.h>

#include "wsprof.h"

void wsp_annotate(unsigned ann, uint64_t addr, uint64_t size, uint64_t pool, const char *text)
{
	if (!wsp_recording_on())
		return;
	int e = errno;
	if (!wsp_enter())
		return;
	struct wsp_thread *t = wsp_thread_self();
	size_t n = text ? strnlen(text, 1024) : 0;
	uint8_t *p = t ? wsp_event_begin(t, WSP_EVENT_RECORD_MAX + n) : NULL;
	if (p) {
		struct wsp_record_mark m;
		p = wsp_record_open(p, WSP_REC_ANNOTATE, WSP_ANNOTATE_PAYLOAD_MAX(n), &m);
		p = wsp_event_stamp(t, p);
		p = wsp_put_varint(p, ann);
		p = wsp_put_addr(t, p, addr);
		p = wsp_put_varint(p, size);
		p = wsp_put_varint(p, pool);
		p = wsp_put_bytes(p, text ? text : "", n);
		wsp_event_end(t, wsp_record_close(p, &m), false);
	}
	wsp_leave(e);
}

void wsp_pool_alloc(uint64_t pool, uint64_t addr, uint64_t size)
{
	int e = errno;
	if (!wsp_enter())
		return;
	struct wsp_cuda_tag tag = { -1, 0, pool };
	wsp_record_cuda_alloc(WSPROF_KIND_POOL, WSPROF_OP_POOL_ALLOC, addr, size, &tag);
	wsp_leave(e);
}

void wsp_pool_free(uint64_t pool, uint64_t addr)
{
	int e = errno;
	if (!wsp_enter())
		return;
	(void)pool; /* a sub-allocation is known by its address */
	wsp_record_cuda_free(WSPROF_KIND_POOL, WSPROF_OP_POOL_FREE, addr, NULL);
	wsp_leave(e);
}

static uint64_t u(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void api_name(const void *p, const char *name) { wsp_annotate(WSPROF_ANN_NAME, u(p), 0, 0, name); }
static void api_acquire(const void *p) { wsp_annotate(WSPROF_ANN_ACQUIRE, u(p), 0, 0, NULL); }
static void api_release(const void *p) { wsp_annotate(WSPROF_ANN_RELEASE, u(p), 0, 0, NULL); }
static void api_valid(const void *p) { wsp_annotate(WSPROF_ANN_VALID, u(p), 0, 0, NULL); }
static void api_invalid(const void *p) { wsp_annotate(WSPROF_ANN_INVALID, u(p), 0, 0, NULL); }
static void api_touch(const void *p, size_t len) { wsp_annotate(WSPROF_ANN_TOUCH, u(p), len, 0, NULL); }
static void api_pool_alloc(const void *pool, const void *p, size_t size) { wsp_pool_alloc(u(pool), u(p), size); }
static void api_pool_free(const void *pool, const void *p) { wsp_pool_free(u(pool), u(p)); }
static void api_phase_push(const char *name) { wsp_annotate(WSPROF_ANN_PHASE_PUSH, 0, 0, 0, name); }
static void api_phase_pop(void) { wsp_annotate(WSPROF_ANN_PHASE_POP, 0, 0, 0, NULL); }
static void api_snapshot(const char *label) { wsp_annotate(WSPROF_ANN_SNAPSHOT, 0, 0, 0, label); }

static void recording_call(bool on)
{
	int e = errno;
	if (!wsp_enter())
		return;
	wsp_recording_set(on, WSPROF_REC_CALL);
	wsp_leave(e);
}

static void api_start(void) { recording_call(true); }
static void api_stop(void) { recording_call(false); }

static const wsprof_annotation_api_v1 api = {
	.size = sizeof api,
	.name = api_name,
	.acquire = api_acquire,
	.release = api_release,
	.valid = api_valid,
	.invalid = api_invalid,
	.touch = api_touch,
	.pool_alloc = api_pool_alloc,
	.pool_free = api_pool_free,
	.phase_push = api_phase_push,
	.phase_pop = api_phase_pop,
	.snapshot = api_snapshot,
	.start = api_start,
	.stop = api_stop,
};

/* The entry include/wsprof.h looks up by name. */
WSPROF_EXPORT const wsprof_annotation_api_v1 *wsprof_get_annotation_api_v1(void)
{
	return &api;
}
