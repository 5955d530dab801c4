/*
 * bootstrap.c - find the real allocator and friends behind libwsprof.
 *
 * dlsym(RTLD_NEXT, ...) may itself call calloc/malloc (for its error
 * state) before any real function is known. Those calls are served from a
 * small static pool; free() ignores pool pointers and realloc() copies out
 * of the pool. Resolution happens once, on the first hook call or in the
 * constructor, whichever comes first; it is idempotent and thread-safe
 * enough for that moment (racing threads resolve the same pointers).
 * dlsym takes the loader's lock, which is recursive: resolving from a hook
 * inside dlopen (a constructor that allocates) takes it again; and no
 * wsprof lock is held here, so nothing the lock's holder waits for is.
 */

#include "base.h"
#include <dlfcn.h>
#include <string.h>

struct wsp_real wsp_real;

#define POOL_SIZE (64 * 1024)
static _Alignas(64) unsigned char pool[POOL_SIZE];
static _Atomic size_t pool_used;

/* Each pool block is preceded by 16 bytes holding its size. */
void *wsp_bootstrap_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	if (size > POOL_SIZE || (align & (align - 1)))
		return NULL;
	size_t old = atomic_load(&pool_used), start, end;
	do {
		start = (old + 16 + align - 1) & ~(align - 1);
		end = start + size;
		if (end > POOL_SIZE)
			return NULL;
	} while (!atomic_compare_exchange_weak(&pool_used, &old, end));
	memcpy(pool + start - sizeof(size_t), &size, sizeof size);
	memset(pool + start, 0, size);
	return pool + start;
}

bool wsp_bootstrap_owns(const void *p)
{
	return (const unsigned char *)p >= pool && (const unsigned char *)p < pool + POOL_SIZE;
}

size_t wsp_bootstrap_size(const void *p)
{
	size_t n;
	memcpy(&n, (const unsigned char *)p - sizeof n, sizeof n);
	return n;
}

/* ---- loaded late: the program's own definitions -------------------------
 * dlsym(RTLD_DEFAULT, "malloc") in a non-PIE executable that takes
 * malloc's address (python3 does) finds the executable's canonical PLT
 * entry: an undefined symbol whose value is its PLT stub, which jumps
 * through the very GOT slot attach.c redirects to the hook. The function
 * is then the first definition in an object loaded after the executable,
 * in load order (the order of the global scope). */

struct definition {
	const char *name;
	void *found;
	bool exe_done;
};

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;
	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

static uint32_t sysv_hash(const char *s)
{
	uint32_t h = 0;
	for (; *s; s++) {
		h = (h << 4) + (unsigned char)*s;
		uint32_t g = h & 0xf0000000u;
		h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

bool wsp_dynamic_of(const struct dl_phdr_info *info, struct wsp_dynamic *d)
{
	memset(d, 0, sizeof *d);
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		/* The loader made the pointers absolute, except where it could not. */
		uintptr_t v = dyn->d_un.d_ptr < info->dlpi_addr ? info->dlpi_addr + dyn->d_un.d_ptr : dyn->d_un.d_ptr;
		switch (dyn->d_tag) {
		case DT_SYMTAB: d->symtab = (const ElfW(Sym) *)v; break;
		case DT_STRTAB: d->strtab = (const char *)v; break;
		case DT_GNU_HASH: d->gnu_hash = (const uint32_t *)v; break;
		case DT_HASH: d->sysv_hash = (const uint32_t *)v; break;
		case DT_JMPREL: d->jmprel = (const ElfW(Rela) *)v; break;
		case DT_PLTRELSZ: d->jmprel_bytes = dyn->d_un.d_val; break;
		case DT_RELA: d->rela = (const ElfW(Rela) *)v; break;
		case DT_RELASZ: d->rela_bytes = dyn->d_un.d_val; break;
		default: break;
		}
	}
	return d->symtab && d->strtab;
}

/* The dynamic symbol `name` of a loaded object, through its hash table. */
static const ElfW(Sym) *dynamic_symbol(const struct dl_phdr_info *info, const char *name)
{
	struct wsp_dynamic d;
	if (!wsp_dynamic_of(info, &d))
		return NULL;
	const ElfW(Sym) *symtab = d.symtab;
	const char *strtab = d.strtab;
	const uint32_t *gnu = d.gnu_hash, *sysv = d.sysv_hash;
	if (gnu) {
		uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_words = gnu[2];
		const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom_words);
		const uint32_t *chain = buckets + nbuckets;
		uint32_t h = gnu_hash(name), i = nbuckets ? buckets[h % nbuckets] : 0;
		for (; i >= symoffset && i; i++) {
			uint32_t h2 = chain[i - symoffset];
			if ((h | 1) == (h2 | 1) && !strcmp(strtab + symtab[i].st_name, name))
				return &symtab[i];
			if (h2 & 1)
				break;
		}
		return NULL;
	}
	if (sysv) {
		uint32_t nbuckets = sysv[0];
		const uint32_t *buckets = sysv + 2, *chain = buckets + nbuckets;
		for (uint32_t i = nbuckets ? buckets[sysv_hash(name) % nbuckets] : 0; i; i = chain[i])
			if (!strcmp(strtab + symtab[i].st_name, name))
				return &symtab[i];
	}
	return NULL;
}

static int find_definition(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct definition *d = arg;
	if (!d->exe_done) { /* the executable comes first */
		d->exe_done = true;
		return 0;
	}
	const ElfW(Sym) *sym = dynamic_symbol(info, d->name);
	if (!sym || sym->st_shndx == SHN_UNDEF || !sym->st_value || ELF64_ST_TYPE(sym->st_info) == STT_TLS)
		return 0;
	d->found = (void *)(info->dlpi_addr + sym->st_value);
	return 1;
}

static int exe_symbol(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct definition *d = arg;
	const ElfW(Sym) *sym = dynamic_symbol(info, d->name);
	d->exe_done = sym && sym->st_shndx == SHN_UNDEF && sym->st_value &&
		      d->found == (void *)(info->dlpi_addr + sym->st_value);
	return 1; /* the executable only */
}

static void *resolve_default(const char *name)
{
	struct definition d = { name, dlsym(RTLD_DEFAULT, name), false };
	if (!d.found)
		return NULL;
	dl_iterate_phdr(exe_symbol, &d);
	if (!d.exe_done)
		return d.found; /* not the executable's PLT stub */
	d.found = NULL;
	d.exe_done = false;
	dl_iterate_phdr(find_definition, &d);
	return d.found;
}

#define RESOLVE(name) \
	wsp_real.name = (__typeof__(wsp_real.name))(scope == RTLD_DEFAULT ? resolve_default(#name) : dlsym(scope, #name))

static void resolve_in(void *scope)
{
	RESOLVE(free);
	RESOLVE(malloc);
	RESOLVE(calloc);
	RESOLVE(realloc);
	RESOLVE(posix_memalign);
	RESOLVE(aligned_alloc);
	RESOLVE(memalign);
	RESOLVE(valloc);
	RESOLVE(pvalloc);
	RESOLVE(mmap);
	RESOLVE(munmap);
	RESOLVE(mprotect);
	RESOLVE(mremap);
	RESOLVE(dlopen);
	RESOLVE(dlclose);
	RESOLVE(execve);
	RESOLVE(execvpe);
	RESOLVE(fexecve);
	RESOLVE(_exit);
	RESOLVE(malloc_usable_size);
	RESOLVE(pthread_getattr_np);
}

void wsp_real_resolve(void)
{
	static _Atomic bool done, resolving;
	if (atomic_load_explicit(&done, memory_order_acquire) || atomic_exchange(&resolving, true))
		return; /* done, or dlsym is allocating: the caller falls back to the pool */
	resolve_in(RTLD_NEXT);
	atomic_store_explicit(&done, true, memory_order_release);
}

/* Loaded into a running process (life/attach.c), wsprof comes last in the
 * global scope, where RTLD_NEXT finds nothing: the real functions are the
 * ones the program's own calls reach. Called before any hook is. */
void wsp_real_resolve_global(void)
{
	wsp_real_resolve();
	resolve_in(RTLD_DEFAULT);
}
