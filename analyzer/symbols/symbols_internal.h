/*
 * symbols_internal.h - what the files of symbols/ share: the layout of a
 * struct wsp_syms and the helpers more than one of them calls (prefix
 * syms_). Not for the rest of the analyzer: it asks symbols.h.
 *
 * Three tables, each growing only with distinct things: modules (one
 * libdwfl session each, opened on first use: modules.c), addresses (a
 * module and an offset, and once named their logical frames, in one
 * arena: symbols.c) and stack nodes (4 bytes each: the place of the
 * address a node's ip had in the modules loaded when it was first seen:
 * stacks.c). Strings are interned, so frames compare by pointer. The
 * names kept between reports (cache.c) are a fourth table, read before
 * any module is opened.
 *
 * The files: symbols.c (the object, strings, addresses and naming one),
 * modules.c (modules, their debug files, naming them in parallel),
 * dwarf.c (one module's names: its symbol index, DWARF, the demangler),
 * cache.c (TRACE.symbols, doc/symbol-cache.md), stacks.c (noted stacks,
 * Python frames, the views and sites).
 */
#ifndef WSP_SYMBOLS_INTERNAL_H
#define WSP_SYMBOLS_INTERNAL_H

#include "symbols.h"

#include <elfutils/libdwfl.h>

enum { MOD_UNTRIED, MOD_READY, MOD_UNUSABLE };

struct mod {
	char *path;
	const char *name;     /* file name part of path */
	uint8_t *build_id;
	size_t build_id_len;
	uint64_t base;
	uint64_t start, end;  /* the span of its loadable segments */
	int state;
	Dwfl *dwfl;
	Dwfl_Module *dm;
	struct sym *syms;     /* the index: function symbols by address, built on first use */
	size_t nsyms;
	bool indexed;
	uint64_t unnamed;     /* addresses in it that no symbol names */
	uint64_t resolved;    /* addresses in it looked up */
	bool absent;          /* not here, or not the file recorded (rebuilt since) */
	uint64_t lost;        /* addresses in it left as module+offset because it is absent */
	char bid[129];        /* the build-id in hex, "" without one */
	const char *key;      /* bid interned: the cache's key; NULL without a build-id */
};

/* A function symbol of a module: where it starts (as libdwfl places the
 * module), its size (0: unknown, it runs to the next one) and its name,
 * in the ELF string table libdwfl keeps open. */
struct sym {
	uint64_t addr, size;
	const char *name;
	bool global;
};

/* A distinct (module, offset) of the stacks noted, in a dense array a
 * stack node names by its place. */
struct addr_entry {
	int32_t mod;          /* -1: outside every module; PY_MOD: a Python frame */
	bool named;           /* its frames are in the arena */
	bool fresh;           /* symbolized here, not found in the cache */
	bool lead_known;
	uint16_t lead;        /* its first frames that are allocator entry points (lead_known) */
	uint64_t offset;      /* ip - base, or the ip itself outside modules */
	uint32_t first, count; /* frames in the arena */
};

#define PY_MOD (-2)           /* an addr_entry's mod for a Python frame (its offset the frame's key) */

/* An address the cache knew: (build-id, offset) -> frames in cache_frames. */
struct cached {
	const char *bid;      /* interned; NULL: empty slot */
	uint64_t offset;
	uint32_t first, count;
};

struct wsp_syms {
	FILE *warn;
	enum wsp_stack_view view;
	struct mod *mods;
	size_t nmods, modcap;
	uint32_t *nodes;      /* a stack node -> its address's place in addrs + 1 (0: not noted) */
	uint32_t *parents;    /* a noted node -> its parent (0: the root), always below it */
	size_t nodecap;
	struct addr_entry *addrs;
	size_t addrs_cap, naddrs;
	uint32_t *addr_index; /* (mod, offset) -> place in addrs + 1, half full at most */
	size_t index_cap;
	struct wsp_frame *arena;
	size_t narena, arenacap;
	char **strings;       /* interned, open addressing */
	size_t strcap, nstrings;
	struct wsp_frame *out; /* the last wsp_syms_stack() answer */
	size_t outcap;
	char *trace_path;     /* the trace's, for advice */
	bool named_all;       /* wsp_syms_name_all has run */
	bool noted_all;       /* no stack is noted any more (wsp_syms_noted_all) */
	size_t fresh;         /* addresses symbolized here */
	/* The cache (cache.c): read when the first stack is noted, when the
	 * trace it must belong to is known. */
	char *cache_path;     /* where names are kept between reports; NULL: nowhere */
	bool cache_read;      /* cache_path has been read (or found missing, or ignored) */
	bool cache_rewrite;   /* what was there is ignored: write it anew even with nothing fresh */
	uint32_t trace_pid;   /* the trace's identity, which the cache records */
	uint64_t trace_start_ns;
	struct cached *cache; /* open addressing */
	size_t cache_cap, ncache;
	struct wsp_frame *cache_frames;
	size_t ncache_frames, cache_frames_cap;
};

/* A frame as a module names it, before its strings are interned: names
 * point into libdw's tables (open as long as the module is), a demangled
 * C++ name is the frame's own. Workers naming modules in parallel make
 * these; the caller interns them (syms_adopt), so nothing is shared. */
struct raw {
	const char *function, *file;
	char *owned;          /* function, demangled: freed once interned */
	unsigned line;
	bool inlined;
};

struct raws {
	struct raw *v;
	size_t n, cap;
};

/* symbols.c */
uint64_t syms_hash_bytes(const void *p, size_t n, uint64_t h);
#define SYMS_HASH_SEED 14695981039346656037ull /* FNV-1a's offset basis */
/* str's one copy in s (NULL for NULL, and without memory). */
const char *syms_intern(struct wsp_syms *s, const char *str);
/* @return 0 or -ENOMEM. */
int syms_arena_add(struct wsp_syms *s, struct wsp_frame f);
/* The place of (mod, offset) in addrs, made (not yet named) if new; -1
 * without memory. */
int64_t syms_entry_of(struct wsp_syms *s, int32_t mod, uint64_t offset);
/* An address's frames into the arena: n raw frames (none: only its module
 * and offset are known), their strings interned. @return 0 or -ENOMEM. */
int syms_adopt(struct wsp_syms *s, struct addr_entry *e, struct raw *r, size_t n);
/* Whether a new address needs its module read: 1 (read it), 0 (named at
 * once, from the cache or as module+offset) or -ENOMEM. */
int syms_needs_module(struct wsp_syms *s, struct addr_entry *e);
/* Symbolize one new address. @return 0 or -ENOMEM. */
int syms_symbolize(struct wsp_syms *s, struct addr_entry *e);

/* modules.c */
/* Where libdwfl looks for debug files, set once a process. */
void syms_debug_places(void);
/* The module of an address (at addr, as info describes it), made on first
 * sight. @return its place in mods, or -1 without memory. */
int32_t syms_module_of(struct wsp_syms *s, const wsprof_trace *t, uint64_t addr, const wsprof_module_info *info);
/* Open a module's file and check that it is the one recorded: MOD_READY,
 * else MOD_UNUSABLE with one warning. */
void syms_module_open(struct wsp_syms *s, struct mod *m);
/* The warnings said once, at the end, of modules that left frames unnamed. */
void syms_say_unnamed(const struct wsp_syms *s);
void syms_say_absent(const struct wsp_syms *s);
void syms_modules_free(struct wsp_syms *s);

/* dwarf.c */
/* The frames of an offset in a ready module: from DWARF, else one named
 * by the symbol index (its function NULL when none covers it). Touches
 * nothing but the module and out, so modules can be named in parallel.
 * @return 0 or -ENOMEM. */
int syms_name_offset(struct mod *m, uint64_t offset, struct raws *out);
void syms_raws_free(struct raws *r);
/* What a closed module drops of its index. */
void syms_index_free(struct mod *m);

/* cache.c */
/* Read the cache for the trace t, once (the first stack noted). */
void syms_cache_read(struct wsp_syms *s, const wsprof_trace *t);
/* A new address named from the cache, if it has it. @return 1 if so, 0, or -ENOMEM. */
int syms_from_cache(struct wsp_syms *s, struct addr_entry *e);
/* Write the cache if anything is new (or what was there was ignored).
 * @return 0 or -errno. */
int syms_cache_save(struct wsp_syms *s);
void syms_cache_free(struct wsp_syms *s);

#endif
