/*
 * symbols.h - call stacks as people read them: function, file:line,
 * inlined frames, C++ names demangled.
 *
 * Symbolization is offline, from the module map the trace recorded, with
 * elfutils' libdwfl: debug info from the file itself or the standard
 * places (/usr/lib/debug/.build-id/..., .gnu_debuglink files), the ELF
 * symbol table otherwise, "module+0xoffset" when nothing is known. A
 * module whose build-id differs from the recorded one (rebuilt since) is
 * not symbolized at all - one warning, never wrong names.
 *
 * Addresses are tied to modules when a stack first appears in the stream
 * (wsp_syms_note_stack), so a library unloaded later still resolves; each
 * distinct (module, address) is symbolized once.
 */
#ifndef WSP_SYMBOLS_H
#define WSP_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "wsprof/trace.h"

/* One logical frame; a machine frame with inlined calls gives several. */
struct wsp_frame {
	const char *function; /* demangled; NULL when unknown */
	const char *file;     /* source file as the debug info names it; NULL when unknown */
	unsigned line;        /* 0 when unknown */
	uint32_t module_id;   /* its module for wsp_syms_module; 0 outside any (and for Python frames) */
	const char *module;   /* file name of the module; NULL outside any module */
	uint64_t offset;      /* of the return address in the module (or absolute, outside) */
	bool inlined;         /* inlined into the frame after it */
	bool python;          /* a Python frame: function is its qualified name, file its file */
	bool library;         /* a Python frame of the interpreter's library or an installed package */
};

/* Which frames a stack shows (--stacks, WSPROF_STACKS): by default the
 * merged stack - each Python frame in place of the interpreter's frames
 * that ran it, native frames of C code around them - with a stack's site
 * its innermost Python frame of the program's own code (not the
 * library's, not an installed package's: the script line that called into
 * PyTorch, not PyTorch's own Python), else its innermost Python frame; MERGED the same with the site its first
 * frame; PYTHON its Python frames alone (a stack without any: its native
 * ones); NATIVE its native frames alone, as recorded. */
enum wsp_stack_view { WSP_STACKS_DEFAULT, WSP_STACKS_MERGED, WSP_STACKS_PYTHON, WSP_STACKS_NATIVE };
/* @return the view named v ("merged", "python", "native"; "default"), or -1. */
static inline int wsp_stack_view_parse(const char *v)
{
	static const char *const names[] = { "default", "merged", "python", "native" };
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (!strcmp(v, names[i]))
			return (int)i;
	return -1;
}

struct wsp_syms;

/* warn: where one-line warnings go (a rebuilt or missing module, a
 * damaged cache), or NULL. view: which frames stacks show, as the command
 * line chose it (cmd/main.c: --stacks, else WSPROF_STACKS). */
struct wsp_syms *wsp_syms_new(FILE *warn, enum wsp_stack_view view);
void wsp_syms_free(struct wsp_syms *s);
/* Keep names between reports of the trace at trace_path: read the cache
 * kept for it (TRACE.symbols beside it, or in the user's cache directory
 * where that is read-only; doc/symbol-cache.md) when the first stack is
 * noted, and write it back, with what this report named, when s is freed.
 * A cache of another trace, or damaged, names nothing: one line to warn,
 * and it is written anew. WSPROF_SYMBOL_CACHE=0 keeps none. */
void wsp_syms_cache(struct wsp_syms *s, const char *trace_path);

/* What was named, for `wsprof symbolize`. */
struct wsp_syms_stats {
	uint64_t addresses;   /* distinct addresses named (from modules, the cache, or as module+offset) */
	uint64_t unnamed;     /* of them, without a function name */
	uint64_t lost;        /* of them, in modules not found here (or changed): module+offset */
	uint64_t uncached;    /* of them, in modules without a build-id: names not kept */
	uint64_t outside;     /* of them, outside every module (JIT code, the vdso) */
	size_t modules;       /* modules with addresses */
	size_t absent;        /* of them, not found here (or changed) */
};
void wsp_syms_stats(const struct wsp_syms *s, struct wsp_syms_stats *st);
/* Write the names kept between reports now (wsp_syms_cache), not only
 * when s is freed. *path: where, NULL when none is kept (WSPROF_SYMBOL_CACHE=0,
 * no place to write). @return 0 or -errno. */
int wsp_syms_save(struct wsp_syms *s, const char **path);

/* Bind a stack's addresses to the modules loaded at this point of the
 * stream. Call for every stack as the events that use it are read.
 * @return 0 or -ENOMEM. */
int wsp_syms_note_stack(struct wsp_syms *s, const wsprof_trace *t, uint64_t stack);

/* Every stack there is has been noted (the trace is read): once named,
 * the modules are closed (wsp_syms_name_all). */
void wsp_syms_noted_all(struct wsp_syms *s);

/* Name every address of the stacks noted so far that is not named yet:
 * from the cache, else by reading its module, the modules in parallel
 * (a thread per core) when there are many, with a progress line on a
 * terminal (label: "naming frames of app.wsp") once it takes a second.
 * The first wsp_syms_stack call runs it (a report names its stacks once
 * it has read the trace and has something to show); stacks noted later
 * are named as wsp_syms_stack meets them.
 * @return the addresses read from their modules, or -ENOMEM. */
long wsp_syms_name_all(struct wsp_syms *s, const char *label);

/* The logical frames of a noted stack (from what was noted: t's own stack
 * nodes need not be kept after), innermost first, with wsprof's and
 * the allocator's entry points (malloc, operator new, ...) trimmed from
 * the top. *frames stays valid until the next call.
 * @return the number of frames. */
size_t wsp_syms_stack(struct wsp_syms *s, const wsprof_trace *t, uint64_t stack, const struct wsp_frame **frames);

/* Which of a stack's frames (wsp_syms_stack's) is its site: its innermost
 * Python frame of the program's own code in the default view (else its
 * innermost Python frame), its innermost Python frame in the Python view,
 * else the first. */
size_t wsp_syms_site_at(const struct wsp_syms *s, const struct wsp_frame *frames, size_t n);

/* The site of a noted stack (wsp_syms_site_at: where it was allocated),
 * without the others, and in *id a number that is that
 * frame's own for as long as s lives (its place among all frames named):
 * stacks of one site give one id. NULL when the stack has no frames. */
const struct wsp_frame *wsp_syms_site(struct wsp_syms *s, const wsprof_trace *t, uint64_t stack, uint32_t *id);

/* A module of the stacks noted, as the trace recorded it: one loaded at
 * two places (unloaded, loaded again) is two. */
struct wsp_module {
	const char *path;     /* as the loader named it; the main program's full path */
	const char *build_id; /* in hex, "" without one */
	uint64_t base;        /* load bias: a frame's return address is base + offset */
	uint64_t start, end;  /* the addresses its loadable segments span */
};
/* The module of frames whose module_id is id. @return false for 0 (none). */
bool wsp_syms_module(const struct wsp_syms *s, uint32_t id, struct wsp_module *out);

/* "function (file:line)", "function (module)", "module+0x1f2e" or "0x7f...". */
const char *wsp_frame_label(const struct wsp_frame *f, char *buf, size_t cap);

#endif
