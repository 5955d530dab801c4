/*
 * base.h - what every layer of the recorder stands on: the real functions behind the hooks, wsprof's threads and descriptors (its memory and settings are in wsp.h).
 * wsp.h has what every file shares and the rule every hook follows.
 */
#ifndef WSP_BASE_H
#define WSP_BASE_H

#include "wsp.h"

#include <elf.h>
#include <link.h>

/* ---- bootstrap.c ---------------------------------------------------- */

struct wsp_real {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	int (*mprotect)(void *, size_t, int);
	void *(*mremap)(void *, size_t, size_t, int, ...);
	void *(*dlopen)(const char *, int);
	int (*dlclose)(void *);
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	void (*_exit)(int);
	size_t (*malloc_usable_size)(void *);
	int (*pthread_getattr_np)(pthread_t, pthread_attr_t *);
};
extern struct wsp_real wsp_real;

/* A loaded object's dynamic section (its pointers absolute): the symbols
 * and their hash tables, and the relocations of its GOT. @return false
 * without a symbol table. */
struct wsp_dynamic {
	const ElfW(Sym) *symtab;
	const char *strtab;
	const uint32_t *gnu_hash, *sysv_hash; /* NULL: none */
	const ElfW(Rela) *jmprel, *rela;
	size_t jmprel_bytes, rela_bytes;
};
bool wsp_dynamic_of(const struct dl_phdr_info *info, struct wsp_dynamic *d);

/* Resolve the real functions once. While dlsym runs, allocations are
 * served from a static pool. */
void wsp_real_resolve(void);
/* The same for a library loaded into a running process (attach). */
void wsp_real_resolve_global(void);
bool wsp_bootstrap_owns(const void *p);
void *wsp_bootstrap_alloc(size_t size, size_t align);
size_t wsp_bootstrap_size(const void *p);

/* ---- threads.c ------------------------------------------------------ */

/* Start one of wsprof's own threads, born with every signal blocked. */
int wsp_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *));
/* Has the program no thread left, only wsprof's? (Its last thread ended
 * with pthread_exit: without wsprof the process would exit with status
 * 0, and wsprof's threads must not keep it alive.) From /proc/self/stat;
 * false when that cannot be read. */
bool wsp_threads_only_own(void);
void wsp_threads_reset_after_fork(void); /* a forked child has none of wsprof's threads */

/* ---- fds.c ---------------------------------------------------------- */

/* Move a descriptor of wsprof's own out of the low numbers the program
 * expects open() to return. @return the new descriptor (close-on-exec). */
int wsp_fd_move_high(int fd);

#endif
