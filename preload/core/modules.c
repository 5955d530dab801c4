/*
 * modules.c - the module map: which object is loaded where, with build-ids.
 *
 * Stacks are recorded as raw addresses and symbolized offline, so the trace
 * must say which file was mapped at each address. The map is written at
 * start and again whenever the loader's add/remove counters (dlpi_adds,
 * dlpi_subs) moved. The dlopen/dlclose wrappers only note the time and
 * tail-call the real function (so dlopen still sees the program as its
 * caller, which matters for RUNPATH and namespaces). For 100 ms after such
 * a call every recorded allocation checks the counters first, so a library's
 * map precedes its first allocations; the writer checks at every sweep as a
 * backstop for objects loaded in other ways.
 *
 * Reentrancy: rescans run with the guard held, under the module lock.
 * Why no rescan deadlocks: dl_iterate_phdr takes the loader's lock (a
 * recursive one, so a hook inside the program's own dl_iterate_phdr
 * callback or a constructor run by dlopen takes it again freely). A thread
 * may wait for it while holding the module lock, so nothing waits for the
 * module lock: it is only ever tried, and a thread that finds it taken
 * leaves the rescan to the one scanning (the program's callback that
 * allocates while another thread scans then goes on, releasing the
 * loader's lock). The records a rescan writes never wait for the writer
 * (wsp_tls.writing): the writer may be the thread the scanner waits for.
 */

#include "core.h"
#include "base.h"
#include "format.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_MODULES 4096
#define MAX_SEGS 16

struct known {
	uintptr_t base;
	uint64_t name_hash;
	bool seen;
};

static pthread_mutex_t mod_lock = PTHREAD_MUTEX_INITIALIZER;
static struct known *known;
static size_t nknown;
static uintptr_t self_lo, self_hi, unwinder_lo, unwinder_hi;
static unsigned long long seen_adds, seen_subs;
_Atomic bool wsp_dl_recent;
static _Atomic uint64_t dl_call_ns;
#define DL_WINDOW_NS 100000000u

#define ON_LOAD_MAX 2 /* python.c, attach.c */
static void (*on_load[ON_LOAD_MAX])(const struct dl_phdr_info *info, const char *path);

void wsp_modules_on_load(void (*fn)(const struct dl_phdr_info *info, const char *path))
{
	for (size_t i = 0; i < ON_LOAD_MAX; i++) {
		if (on_load[i] == fn)
			return;
		if (!on_load[i]) {
			on_load[i] = fn;
			return;
		}
	}
}

bool wsp_addr_in_self(uintptr_t ip)
{
	return ip >= self_lo && ip < self_hi;
}

bool wsp_addr_in_unwinder(uintptr_t ip)
{
	return ip >= unwinder_lo && ip < unwinder_hi;
}

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static size_t build_id_of(const struct dl_phdr_info *info, const uint8_t **id)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof *n;
			const uint8_t *desc = name + ((n->n_namesz + 3) & ~3u);
			if (desc + n->n_descsz > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
				*id = desc;
				return n->n_descsz;
			}
			p = desc + ((n->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

static void record_load(const struct dl_phdr_info *info, const char *name)
{
	struct wsp_thread *t = wsp_thread_self();
	if (!t)
		return;
	const uint8_t *bid = NULL;
	size_t bidlen = build_id_of(info, &bid);
	if (bidlen > 64)
		bidlen = 64;
	size_t namelen = strnlen(name, 4096);
	size_t need = WSP_EVENT_RECORD_MAX + namelen + bidlen + MAX_SEGS * 32;
	uint8_t *p = wsp_event_begin(t, need);
	if (!p)
		return;
	struct wsp_record_mark m;
	p = wsp_record_open(p, WSP_REC_MODULE_LOAD, need, &m);
	p = wsp_event_stamp(t, p);
	p = wsp_put_varint(p, info->dlpi_addr);
	p = wsp_put_bytes(p, name, namelen);
	p = wsp_put_bytes(p, bid, bidlen);
	int nload = 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		nload += info->dlpi_phdr[i].p_type == PT_LOAD;
	if (nload > MAX_SEGS)
		nload = MAX_SEGS;
	p = wsp_put_varint(p, (uint64_t)nload);
	for (int i = 0, k = 0; i < info->dlpi_phnum && k < nload; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		p = wsp_put_varint(p, ph->p_vaddr);
		p = wsp_put_varint(p, ph->p_memsz);
		p = wsp_put_varint(p, ph->p_flags);
		k++;
	}
	wsp_event_end(t, wsp_record_close(p, &m), false);
}

static void record_unload(uintptr_t base)
{
	wsp_record_value(WSP_REC_MODULE_UNLOAD, base);
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	static char exe[4096];
	const char *name = info->dlpi_name;
	if (!name || !*name) {
		if (!exe[0]) {
			ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
			exe[n > 0 ? n : 0] = 0;
		}
		name = exe;
	}
	/* dlopen("./libfoo.so"): the loader keeps the path as given, relative
	 * to the directory the program was in. A report runs elsewhere, so
	 * the trace gets it whole (the rescan follows the dlopen closely; a
	 * program that changed directory in between would name another). */
	static char whole[8192], cwd[4096]; /* the module lock is held */
	if (name[0] != '/' && strchr(name, '/') && getcwd(cwd, sizeof cwd)) {
		const char *rel = name[0] == '.' && name[1] == '/' ? name + 2 : name;
		snprintf(whole, sizeof whole, "%s/%s", strcmp(cwd, "/") ? cwd : "", rel);
		name = whole;
	}
	uint64_t h = hash_name(name);
	for (size_t i = 0; i < nknown; i++) {
		if (known[i].base == info->dlpi_addr && known[i].name_hash == h) {
			known[i].seen = true;
			return 0;
		}
	}
	if (nknown == MAX_MODULES)
		return 0;
	known[nknown++] = (struct known){ info->dlpi_addr, h, true };
	record_load(info, name);
	for (size_t i = 0; i < ON_LOAD_MAX && on_load[i]; i++)
		on_load[i](info, name);
	return 0;
}

static void rescan_locked(void)
{
	if (!known)
		known = wsp_pages_alloc(MAX_MODULES * sizeof *known);
	if (known) {
		for (size_t i = 0; i < nknown; i++)
			known[i].seen = false;
		dl_iterate_phdr(visit, NULL);
		for (size_t i = 0; i < nknown;) {
			if (known[i].seen) {
				i++;
				continue;
			}
			record_unload(known[i].base);
			known[i] = known[--nknown];
		}
	}
}

static int read_counters(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1;
}

void wsp_modules_check(void)
{
	unsigned long long c[2] = { 0, 0 };
	if (atomic_load_explicit(&wsp_dl_recent, memory_order_relaxed) &&
	    wsp_now_ns() - atomic_load(&dl_call_ns) > DL_WINDOW_NS)
		atomic_store(&wsp_dl_recent, false);
	dl_iterate_phdr(read_counters, c);
	if (pthread_mutex_trylock(&mod_lock) != 0)
		return; /* another thread is scanning (see the top of this file) */
	if (c[0] != seen_adds || c[1] != seen_subs || !nknown) {
		seen_adds = c[0];
		seen_subs = c[1];
		bool was = wsp_tls.writing;
		wsp_tls.writing = true;
		rescan_locked();
		wsp_tls.writing = was;
	}
	pthread_mutex_unlock(&mod_lock);
}

void wsp_modules_lock(void)
{
	pthread_mutex_lock(&mod_lock);
}

void wsp_modules_unlock(void)
{
	pthread_mutex_unlock(&mod_lock);
}

void wsp_modules_reset(void)
{
	pthread_mutex_init(&mod_lock, NULL);
	nknown = 0;
}

/* The object holding an address, by the extent of its loadable segments. */
struct object_at {
	uintptr_t addr, lo, hi;
	const char *name;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct object_at *want = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (want->addr < lo || want->addr >= hi)
		return 0;
	*want = (struct object_at){ want->addr, lo, hi, info->dlpi_name ? info->dlpi_name : "" };
	return 1;
}

bool wsp_object_at(const void *addr, uintptr_t *lo, const char **name)
{
	struct object_at o = { (uintptr_t)addr, 0, 0, "" };
	if (!addr || !dl_iterate_phdr(find_object, &o))
		return false;
	if (lo)
		*lo = o.lo;
	if (name)
		*name = o.name;
	return true;
}

void wsp_modules_init(void)
{
	struct object_at self = { (uintptr_t)&wsp_modules_init, 0, 0, "" }, unwinder = { wsp_unwinder_address(), 0, 0, "" };
	dl_iterate_phdr(find_object, &self);
	self_lo = self.lo;
	self_hi = self.hi;
	dl_iterate_phdr(find_object, &unwinder);
	unwinder_lo = unwinder.lo;
	unwinder_hi = unwinder.hi;
	wsp_modules_check();
}

/* ---- dlopen / dlclose ----------------------------------------------- */

/* Both are tail calls: the real dlopen must see the program's return
 * address to pick the right namespace and RUNPATH. */
WSPROF_EXPORT void *dlopen(const char *file, int mode)
{
	if (!wsp_real.dlopen)
		wsp_real_resolve();
	atomic_store(&dl_call_ns, wsp_now_ns());
	atomic_store_explicit(&wsp_dl_recent, true, memory_order_relaxed);
	return wsp_real.dlopen(file, mode);
}

WSPROF_EXPORT int dlclose(void *handle)
{
	if (!wsp_real.dlclose)
		wsp_real_resolve();
	atomic_store(&dl_call_ns, wsp_now_ns());
	atomic_store_explicit(&wsp_dl_recent, true, memory_order_relaxed);
	return wsp_real.dlclose(handle);
}
