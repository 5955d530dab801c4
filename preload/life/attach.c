/*
 * attach.c - recording a process that is already running: `wsprof attach`
 * loads libwsprof.so into it (dlopen, from a ptrace'd call) and calls
 * wsprof_attach_begin(), which starts a trace from that moment.
 *
 * A library loaded late interposes nothing, so the program's calls are
 * redirected here: the GOT slot of every relocation of a hooked function
 * (the malloc and mmap families, dlopen and dlclose) in every loaded
 * module is rewritten to the hook, the old value kept; a module loaded
 * later is patched as the module map records it (wsp_modules_on_load).
 * libwsprof itself and the libraries it records with (libunwind, libzstd)
 * are left alone: their calls reach the real allocator, as under
 * LD_PRELOAD. The hooks call the real functions as RTLD_DEFAULT finds them
 * (bootstrap.c). The files whose wsprof.h calls found no library before
 * the attach are told to look again (below).
 *
 * Recording ends when the control FIFO wsprof attach holds open is
 * closed (it ended, or died), or at wsprof_attach_end(): RECORDING off
 * (cause detach), the GOT slots restored, the trace finished with its
 * footer, wsprof's threads gone; the FIFO is then removed, which tells
 * wsprof attach the trace is complete. The library stays loaded (a thread
 * may still be inside a hook; the hooks pass straight through once
 * recording is off) and a later attach starts a new trace. A program
 * that exits meanwhile finishes its trace at exit as usual.
 *
 * Reentrancy: the patching runs with the guard held, inside a module scan
 * (the attach's first, or a later one that found a new module, possibly
 * from a hook): the loader's lock and the module lock held, patch_lock
 * taken last. The restore takes the loader's lock (dl_iterate_phdr) and
 * then patch_lock, the same order. patch_lock is held across nothing but
 * mprotect and wsprof's own page allocation.
 */

#include "life.h"
#include "base.h"
#include "core.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* What is redirected: the hooks of libwsprof.map for memory, dlopen and
 * dlclose so that a library loaded meanwhile is patched at once, and dlsym
 * (hooks_cuda.c: the way to the CUDA driver). */
static const char *const hooked[] = {
	"malloc", "free", "calloc", "realloc", "reallocarray", "cfree", "posix_memalign", "aligned_alloc",
	"memalign", "valloc", "pvalloc", "mmap", "mmap64", "munmap", "mremap", "mprotect", "dlopen", "dlclose",
	"dlsym", /* CUDA set up after the attach: cudart's dlsym of cuGetProcAddress gets the wrapper */
};
#define NHOOKED (sizeof hooked / sizeof *hooked)
static void *hook_of[NHOOKED];

struct patch {
	void **slot;
	void *old, *now; /* what it held, what it was given (restored only if it still holds that) */
	uintptr_t module; /* its load bias, to restore only slots still mapped */
};
static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct patch *patches;
static size_t npatches, patches_cap;
static _Atomic bool patching; /* between begin and end */
static uintptr_t self_base;

static int control_fd = -1;
static char control_path[4096];
static pthread_t control_thread;

/* The module's own libraries must reach the real allocator untraced. */
static bool left_alone(const struct dl_phdr_info *info)
{
	const char *n = info->dlpi_name ? info->dlpi_name : "";
	return info->dlpi_addr == self_base || strstr(n, "libwsprof") || strstr(n, "libunwind") ||
	       strstr(n, "libzstd") || strstr(n, "liblzma") || strstr(n, "ld-linux") || strstr(n, "linux-vdso");
}

static int hook_index(const char *name)
{
	for (size_t i = 0; i < NHOOKED; i++)
		if (strcmp(hooked[i], name) == 0)
			return (int)i;
	return -1;
}

static bool keep_patch(void **slot, void *old, void *now, uintptr_t module)
{
	if (npatches == patches_cap) {
		size_t cap = patches_cap ? patches_cap * 2 : 512;
		struct patch *p = wsp_pages_alloc(cap * sizeof *p);
		if (!p)
			return false;
		if (patches) {
			memcpy(p, patches, npatches * sizeof *p);
			wsp_pages_free(patches, patches_cap * sizeof *p);
		}
		patches = p;
		patches_cap = cap;
	}
	patches[npatches++] = (struct patch){ slot, old, now, module };
	return true;
}

/* Write a slot if it still holds `expected` (the program may write it
 * too: a table of its own), making its page writable for the moment if
 * it is RELRO. @return whether it was written. */
static bool write_slot(void **slot, void *expected, void *value, uintptr_t relro_lo, uintptr_t relro_hi)
{
	uintptr_t a = (uintptr_t)slot;
	bool ro = a >= relro_lo && a < relro_hi;
	uintptr_t page = a & ~(uintptr_t)4095;
	if (ro && syscall(SYS_mprotect, page, 4096, PROT_READ | PROT_WRITE) != 0)
		return false;
	bool written = __atomic_compare_exchange_n(slot, &expected, value, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	if (ro)
		syscall(SYS_mprotect, page, 4096, PROT_READ);
	return written;
}

static void relro_of(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	*lo = *hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
			*lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
			*hi = *lo + info->dlpi_phdr[i].p_memsz;
		}
	}
}

static void patch_relocs(const struct dl_phdr_info *info, const ElfW(Rela) *rel, size_t bytes,
			 const struct wsp_dynamic *d, uintptr_t relro_lo, uintptr_t relro_hi)
{
	for (size_t i = 0; i < bytes / sizeof *rel; i++) {
		unsigned type = (unsigned)ELF64_R_TYPE(rel[i].r_info);
#if defined(__x86_64__)
		if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
			continue;
#elif defined(__aarch64__)
		if (type != R_AARCH64_JUMP_SLOT && type != R_AARCH64_GLOB_DAT)
			continue;
#endif
		int h = hook_index(d->strtab + d->symtab[ELF64_R_SYM(rel[i].r_info)].st_name);
		if (h < 0 || !hook_of[h])
			continue;
		void **slot = (void **)(info->dlpi_addr + rel[i].r_offset);
		void *now = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
		if (now == hook_of[h] || !keep_patch(slot, now, hook_of[h], info->dlpi_addr))
			continue;
		if (!write_slot(slot, now, hook_of[h], relro_lo, relro_hi))
			npatches--; /* changed meanwhile: not ours to put back */
	}
}

/* Redirect the module's calls of the hooked functions to the hooks. */
static void patch_module(const struct dl_phdr_info *info)
{
	struct wsp_dynamic d;
	if (left_alone(info) || !wsp_dynamic_of(info, &d))
		return;
	uintptr_t lo, hi;
	relro_of(info, &lo, &hi);
	pthread_mutex_lock(&patch_lock);
	if (atomic_load(&patching)) {
		if (d.jmprel)
			patch_relocs(info, d.jmprel, d.jmprel_bytes, &d, lo, hi);
		if (d.rela)
			patch_relocs(info, d.rela, d.rela_bytes, &d, lo, hi);
	}
	pthread_mutex_unlock(&patch_lock);
}

/* ---- wsprof.h's calls ----------------------------------------------------
 * Each file including include/wsprof.h keeps, in a static pointer named
 * wsprof__api, what its first call found: the library's functions, or
 * NULL when it was absent, and then stays silent. Those that looked before
 * the attach are found by name in the module's symbol table (.symtab, read
 * from its file: it is not loaded) and told to look again (the value
 * WSPROF__UNRESOLVED, 1). A stripped module keeps its silence. */
#define ANN_SYMBOL "wsprof__api"

static bool ann_symbol(const char *name)
{
	size_t n = sizeof ANN_SYMBOL - 1;
	return !strncmp(name, ANN_SYMBOL, n) && (name[n] == 0 || name[n] == '.'); /* wsprof__api.0, .lto_priv.0 */
}

/* Is [a, a + size) in one of the module's writable loaded segments? */
static bool in_writable(const struct dl_phdr_info *info, uintptr_t a, size_t size)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && a >= lo && a - lo + size <= ph->p_memsz)
			return true;
	}
	return false;
}

static void reopen_annotations(const struct dl_phdr_info *info)
{
	const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	const uint8_t *f = end > (off_t)sizeof(ElfW(Ehdr)) ? mmap(NULL, (size_t)end, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	close(fd);
	if (f == MAP_FAILED)
		return;
	size_t size = (size_t)end;
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)f;
	bool ok = !memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
		  eh->e_shentsize == sizeof(ElfW(Shdr)) && eh->e_shoff < size &&
		  (size - eh->e_shoff) / sizeof(ElfW(Shdr)) >= eh->e_shnum;
	const ElfW(Shdr) *sh = ok ? (const ElfW(Shdr) *)(f + eh->e_shoff) : NULL;
	for (size_t i = 0; ok && i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
			continue;
		const ElfW(Shdr) *st = &sh[sh[i].sh_link];
		if (sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset || st->sh_offset > size ||
		    st->sh_size > size - st->sh_offset || !st->sh_size)
			break;
		const ElfW(Sym) *sym = (const ElfW(Sym) *)(f + sh[i].sh_offset);
		const char *names = (const char *)(f + st->sh_offset);
		for (size_t k = 0; k < sh[i].sh_size / sizeof *sym; k++) {
			if (ELF64_ST_TYPE(sym[k].st_info) != STT_OBJECT || sym[k].st_size != sizeof(void *) ||
			    sym[k].st_name >= st->sh_size || !memchr(names + sym[k].st_name, 0, st->sh_size - sym[k].st_name) ||
			    !ann_symbol(names + sym[k].st_name))
				continue;
			uintptr_t a = info->dlpi_addr + sym[k].st_value;
			if (!in_writable(info, a, sizeof(void *)))
				continue;
			void *absent = NULL;
			__atomic_compare_exchange_n((void **)a, &absent, (void *)1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		}
		break;
	}
	munmap((void *)f, size);
}

static void on_module(const struct dl_phdr_info *info, const char *path)
{
	(void)path;
	if (!atomic_load(&patching) || left_alone(info))
		return;
	patch_module(info);
	reopen_annotations(info);
}

/* Put back what each slot held, in the modules still loaded. */
static int restore_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	uintptr_t lo, hi;
	relro_of(info, &lo, &hi);
	pthread_mutex_lock(&patch_lock);
	for (size_t i = 0; i < npatches; i++) {
		struct patch *p = &patches[i];
		if (p->slot && p->module == info->dlpi_addr && !left_alone(info)) {
			write_slot(p->slot, p->now, p->old, lo, hi); /* unless the program changed it since */
			p->slot = NULL;
		}
	}
	pthread_mutex_unlock(&patch_lock);
	return 0;
}

/* The loader's lock, then patch_lock, in that order, as a rescan takes them. */
static void restore_all(void)
{
	pthread_mutex_lock(&patch_lock);
	atomic_store(&patching, false); /* no module patched from now on */
	pthread_mutex_unlock(&patch_lock);
	dl_iterate_phdr(restore_module, NULL);
	pthread_mutex_lock(&patch_lock);
	npatches = 0;
	pthread_mutex_unlock(&patch_lock);
}

/* The hooks by name in this library (its own scope first: the global
 * scope would find libc's). */
static bool find_hooks(void)
{
	Dl_info self;
	if (!dladdr((void *)find_hooks, &self))
		return false;
	self_base = (uintptr_t)self.dli_fbase;
	void *h = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return false;
	for (size_t i = 0; i < NHOOKED; i++)
		hook_of[i] = dlsym(h, hooked[i]);
	dlclose(h);
	return hook_of[0] != NULL;
}

/* ---- CUDA ---------------------------------------------------------------
 * The CUDA hooks are reached through dlsym and cuGetProcAddress
 * (hooks_cuda.c), which a program that set CUDA up before the attach has
 * long called: cudart keeps the driver's functions in a table of its own,
 * a program linked with libcuda in its GOT. So the words of every
 * module's writable segments that hold one of the driver's functions
 * wsprof wraps are given the wrapper, kept as patches and put back at the
 * end like the GOT's (where the program has not changed them since).
 * Memory is read through process_vm_readv, which fails where a page is
 * not readable instead of faulting. Not found: tables in the heap. */
#define CUDA_PAIRS 128
#define SCAN_CHUNK (64 * 1024)

struct cuda_scan {
	struct wsp_cuda_pair pair[CUDA_PAIRS];
	size_t n;
	uintptr_t lo, hi; /* the lowest and highest real function */
	const char *driver;
	uint64_t *buf;
	size_t patched;
};

static void *cuda_wrapper_of(const struct cuda_scan *c, uintptr_t w)
{
	if (w < c->lo || w > c->hi)
		return NULL;
	for (size_t i = 0; i < c->n; i++)
		if ((uintptr_t)c->pair[i].real == w)
			return c->pair[i].wrapper;
	return NULL;
}

static void scan_range(struct cuda_scan *c, const struct dl_phdr_info *info, uintptr_t start, uintptr_t end,
		       uintptr_t relro_lo, uintptr_t relro_hi)
{
	start = (start + 7) & ~(uintptr_t)7;
	for (uintptr_t a = start; a + 8 <= end; a += SCAN_CHUNK) {
		size_t len = end - a < SCAN_CHUNK ? (end - a) & ~(size_t)7 : SCAN_CHUNK;
		struct iovec mine = { c->buf, len }, theirs = { (void *)a, len };
		if (syscall(SYS_process_vm_readv, getpid(), &mine, 1UL, &theirs, 1UL, 0UL) != (long)len)
			continue; /* a page not readable: left alone */
		for (size_t i = 0; i < len / 8; i++) {
			void *wrapper = cuda_wrapper_of(c, (uintptr_t)c->buf[i]);
			void **slot = (void **)(a + i * 8);
			if (!wrapper || !keep_patch(slot, (void *)(uintptr_t)c->buf[i], wrapper, info->dlpi_addr))
				continue;
			if (write_slot(slot, (void *)(uintptr_t)c->buf[i], wrapper, relro_lo, relro_hi))
				c->patched++;
			else
				npatches--; /* changed since it was read */
		}
	}
}

static int scan_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct cuda_scan *c = arg;
	if (left_alone(info) || (info->dlpi_name && !strcmp(info->dlpi_name, c->driver)))
		return 0;
	uintptr_t lo, hi;
	relro_of(info, &lo, &hi);
	pthread_mutex_lock(&patch_lock);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W))
			scan_range(c, info, info->dlpi_addr + ph->p_vaddr, info->dlpi_addr + ph->p_vaddr + ph->p_memsz, lo, hi);
	}
	pthread_mutex_unlock(&patch_lock);
	return 0;
}

/* @return how many words now lead to the wrappers. */
static size_t redirect_cuda(void)
{
	static struct cuda_scan c;
	char driver[4096];
	c.n = wsp_cuda_real_functions(c.pair, CUDA_PAIRS, driver, sizeof driver);
	c.patched = 0;
	if (!c.n)
		return 0;
	c.lo = UINTPTR_MAX, c.hi = 0;
	for (size_t i = 0; i < c.n; i++) {
		uintptr_t r = (uintptr_t)c.pair[i].real;
		c.lo = r < c.lo ? r : c.lo;
		c.hi = r > c.hi ? r : c.hi;
	}
	c.driver = driver;
	if (!c.buf && !(c.buf = wsp_pages_alloc(SCAN_CHUNK)))
		return 0;
	dl_iterate_phdr(scan_module, &c);
	return c.patched;
}

/* ---- the end ---------------------------------------------------------- */

static _Atomic bool ending;

static void end_attach(void)
{
	if (!atomic_load(&patching) || atomic_exchange(&ending, true))
		return;
	if (wsp_is_traced_process()) {
		wsp_recording_mark(false, WSPROF_REC_DETACH);
		restore_all();
		wsp_process_detach();
	} else {
		restore_all();
	}
	if (control_fd >= 0)
		close(control_fd);
	control_fd = -1;
	if (control_path[0])
		unlink(control_path); /* wsprof attach's sign that the trace is complete */
	control_path[0] = 0;
	atomic_store(&ending, false);
}

/* Waits for wsprof attach to close its end of the FIFO. */
static void *control_main(void *arg)
{
	(void)arg;
	wsp_tls.guard = 1;
	for (;;) {
		struct pollfd p = { control_fd, POLLIN, 0 };
		int r = poll(&p, 1, -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
			break;
		char buf[64];
		if (read(control_fd, buf, sizeof buf) == 0)
			break;
	}
	end_attach();
	return NULL;
}

/* ---- the entry points ------------------------------------------------- */

WSPROF_EXPORT int wsprof_attach_begin(const char *output, const char *control)
{
	if (!output || !*output)
		return -EINVAL;
	int e = errno, err = 0;
	wsp_tls.guard++;
	if (atomic_load(&patching) || atomic_load(&ending) || !find_hooks()) {
		err = atomic_load(&patching) ? -EBUSY : -EAGAIN;
		goto out;
	}
	if (control && *control) {
		int fd = open(control, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			goto out;
		}
		control_fd = wsp_fd_move_high(fd);
		snprintf(control_path, sizeof control_path, "%s", control);
	}
	atomic_store(&patching, true);
	wsp_modules_on_load(on_module); /* the first scan patches every module */
	err = wsp_process_attach(output);
	if (!err)
		redirect_cuda();
	if (err) {
		restore_all();
	} else if (control_fd >= 0 && wsp_thread_create(&control_thread, NULL, control_main) != 0) {
		wsp_warn("cannot start the attach control thread; recording ends when the program does");
	} else if (control_fd >= 0) {
		pthread_detach(control_thread);
		pthread_setname_np(control_thread, "wsprof-attach");
	}
	if (err && control_fd >= 0) {
		close(control_fd);
		control_fd = -1;
		control_path[0] = 0;
	}
out:
	wsp_tls.guard--;
	errno = e;
	return err;
}

/* For an attach without a control FIFO (with one, closing it ends it). */
WSPROF_EXPORT int wsprof_attach_end(void)
{
	if (!atomic_load(&patching))
		return -ENOENT;
	if (control_fd >= 0)
		return -EBUSY;
	int e = errno;
	wsp_tls.guard++;
	end_attach();
	wsp_tls.guard--;
	errno = e;
	return 0;
}
