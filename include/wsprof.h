/*
 * wsprof.h - tell wsprof what only the program knows about its memory.
 *
 * Header-only, C99 and C++, nothing to link. The memory line of a profile
 * only goes up when a runtime keeps copies around as cache; these calls let
 * wsprof tell memory that is truly in use from memory the program could
 * give back at once:
 *
 *   wsprof_name(p, "weights")       name the block p points into
 *   wsprof_acquire(p) / _release(p) a task holds / lets go of it (a count)
 *   wsprof_valid(p) / _invalid(p)   this copy holds current data / is stale
 *   wsprof_touch(p, len)            p..p+len was used (memory wsprof cannot
 *                                   watch itself, such as device memory)
 *   wsprof_pool_alloc(pool, p, n)   a sub-allocation inside a block the
 *   wsprof_pool_free(pool, p)       program carves itself (slab, arena)
 *   wsprof_phase_push(name) / _pop() marks on the timeline (per thread)
 *   wsprof_snapshot(label)          a moment to look at later
 *   wsprof_start() / wsprof_stop()  record allocations from here / stop
 *                                   (frees are still recorded; start a
 *                                   program paused with WSPROF_START=paused)
 *
 * p may point anywhere inside a traced block. A block is in use while its
 * count is above zero, while it is marked valid, or if it was never
 * acquired, released, validated or invalidated; otherwise it is
 * collectable. Names, labels and phases are copied at the call.
 *
 * Cost: without wsprof each call is one load and one branch, after the
 * first call of each source file resolved that wsprof is absent (through
 * dlsym of one versioned entry symbol, so it works from the main program
 * as well as from libraries). Define WSPROF_DISABLE to compile every call
 * away. Thread-safe.
 */
#ifndef WSPROF_H
#define WSPROF_H

#include <stddef.h>

#define WSPROF_VERSION_MAJOR 0
#define WSPROF_VERSION_MINOR 1
#define WSPROF_VERSION_PATCH 0
#define WSPROF_VERSION_NUMBER (WSPROF_VERSION_MAJOR * 10000 + WSPROF_VERSION_MINOR * 100 + WSPROF_VERSION_PATCH)

/* The calls libwsprof.so offers, found by name: "wsprof_get_annotation_api_v1"
 * returns this table. Later versions only append members; `size` says how
 * many this library has. */
typedef struct wsprof_annotation_api_v1 {
	size_t size;
	void (*name)(const void *p, const char *name);
	void (*acquire)(const void *p);
	void (*release)(const void *p);
	void (*valid)(const void *p);
	void (*invalid)(const void *p);
	void (*touch)(const void *p, size_t len);
	void (*pool_alloc)(const void *pool, const void *p, size_t size);
	void (*pool_free)(const void *pool, const void *p);
	void (*phase_push)(const char *name);
	void (*phase_pop)(void);
	void (*snapshot)(const char *label);
	void (*start)(void);
	void (*stop)(void);
} wsprof_annotation_api_v1;

#define WSPROF_ANNOTATION_ENTRY "wsprof_get_annotation_api_v1"

#if defined(WSPROF_DISABLE)

#define wsprof_name(p, name) ((void)0)
#define wsprof_acquire(p) ((void)0)
#define wsprof_release(p) ((void)0)
#define wsprof_valid(p) ((void)0)
#define wsprof_invalid(p) ((void)0)
#define wsprof_touch(p, len) ((void)0)
#define wsprof_pool_alloc(pool, p, size) ((void)0)
#define wsprof_pool_free(pool, p) ((void)0)
#define wsprof_phase_push(name) ((void)0)
#define wsprof_phase_pop() ((void)0)
#define wsprof_snapshot(label) ((void)0)
#define wsprof_start() ((void)0)
#define wsprof_stop() ((void)0)

#else

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One per source file: NULL once wsprof is known to be absent,
 * WSPROF__UNRESOLVED until the first call looked. */
#define WSPROF__UNRESOLVED ((const wsprof_annotation_api_v1 *)1)
__attribute__((unused)) static const wsprof_annotation_api_v1 *wsprof__api = WSPROF__UNRESOLVED;

__attribute__((unused, noinline)) static const wsprof_annotation_api_v1 *wsprof__resolve(void)
{
	typedef const wsprof_annotation_api_v1 *(*entry_fn)(void);
	/* __extension__: ISO C has no cast from an object to a function pointer; POSIX dlsym needs one. */
	entry_fn entry = __extension__(entry_fn)dlsym(RTLD_DEFAULT, WSPROF_ANNOTATION_ENTRY);
	const wsprof_annotation_api_v1 *api = entry ? entry() : NULL;
	if (api && api->size < sizeof *api)
		api = NULL; /* an older library than this header: stay silent */
	__atomic_store_n(&wsprof__api, api, __ATOMIC_RELAXED);
	return api;
}

static inline const wsprof_annotation_api_v1 *wsprof__get(void)
{
	const wsprof_annotation_api_v1 *api = __atomic_load_n(&wsprof__api, __ATOMIC_RELAXED);
	if (__builtin_expect(api == WSPROF__UNRESOLVED, 0))
		api = wsprof__resolve();
	return api;
}

#define WSPROF__CALL(member, ...)                                                  \
	do {                                                                       \
		const wsprof_annotation_api_v1 *wsprof__a = wsprof__get();         \
		if (__builtin_expect(wsprof__a != NULL, 0))                        \
			wsprof__a->member(__VA_ARGS__);                            \
	} while (0)

static inline void wsprof_name(const void *p, const char *name) { WSPROF__CALL(name, p, name); }
static inline void wsprof_acquire(const void *p) { WSPROF__CALL(acquire, p); }
static inline void wsprof_release(const void *p) { WSPROF__CALL(release, p); }
static inline void wsprof_valid(const void *p) { WSPROF__CALL(valid, p); }
static inline void wsprof_invalid(const void *p) { WSPROF__CALL(invalid, p); }
static inline void wsprof_touch(const void *p, size_t len) { WSPROF__CALL(touch, p, len); }
static inline void wsprof_pool_alloc(const void *pool, const void *p, size_t size) { WSPROF__CALL(pool_alloc, pool, p, size); }
static inline void wsprof_pool_free(const void *pool, const void *p) { WSPROF__CALL(pool_free, pool, p); }
static inline void wsprof_phase_push(const char *name) { WSPROF__CALL(phase_push, name); }
#define WSPROF__CALL0(member)                                                      \
	do {                                                                       \
		const wsprof_annotation_api_v1 *wsprof__a = wsprof__get();         \
		if (__builtin_expect(wsprof__a != NULL, 0))                        \
			wsprof__a->member();                                       \
	} while (0)

static inline void wsprof_phase_pop(void) { WSPROF__CALL0(phase_pop); }
static inline void wsprof_start(void) { WSPROF__CALL0(start); }
static inline void wsprof_stop(void) { WSPROF__CALL0(stop); }
static inline void wsprof_snapshot(const char *label) { WSPROF__CALL(snapshot, label); }

#ifdef __cplusplus
}
#endif

#endif /* WSPROF_DISABLE */
#endif
