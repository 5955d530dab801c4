/*
 * python.c - the Python stack of every event, read from CPython's own
 * frames in the traced process, and placed in the native stack.
 *
 * Detection: a loaded module that exports Py_Version (3.11+) is an
 * interpreter (the python binary itself, or libpython in any program).
 * Its layout is pylayout.h's for 3.11 and 3.12 and what _Py_DebugOffsets
 * says for 3.13; it must agree with the running interpreter's own type
 * sizes (PyCode_Type, PyUnicode_Type) before anything is read per event.
 * Anything else is said once, in a PYTHON record, and left alone.
 *
 * The walk: the calling thread's own thread state (PyGILState's TLS
 * lookup, GIL held or not) gives its innermost frame; frames are followed
 * to their callers. Only the owning thread pushes and pops its frames, so
 * while it sits in one of our hooks its chain is stable, and a frame holds
 * its code object alive. Still every pointer is checked (alignment, range,
 * each code object's type), the depth is capped, a cycle ends the walk:
 * anything wrong gives the event no Python frames, never a crash.
 *
 * Placement: the frames one call of the evaluation loop runs form a block
 * whose anchor lies on the C stack inside that call's native frame (3.11:
 * its _PyCFrame; 3.12+: the shim frame it pushes). The unwind memo knows
 * where each return address sits on the stack, which bounds each native
 * frame, so each block goes just inside the native frame that holds its
 * anchor: no symbol names needed (Debian's interpreter is stripped, and
 * its evaluation loop has cold parts without any).
 *
 * Code objects are recorded once (PY_CODE: names, first line, line table)
 * under an id; the id is kept by the code object's address together with
 * its qualified name's and line table's addresses, first line and the
 * name's hash, so a dead code object whose address a new one takes gets a
 * new id. A per-thread cache answers without a lock, and without reading
 * the code object while no code object has died (PyCode_Type's tp_dealloc
 * is wrapped to count deaths); the process-wide table is under the stack
 * tree's lock, like stack nodes, and for the same reason (a PY_CODE
 * record precedes every use of its id).
 *
 * Cost: a thread keeps its last walks and what each read; when its frames
 * hold the same now, checking that is loads which do not wait for each
 * other, where a walk's each wait for the last. A merged stack the thread
 * interned before is found by its native stack's memo serial and its
 * Python frames, so most events intern nothing.
 *
 * It reaches the events through the core's wsp_events_stack_more, once it
 * has found an interpreter whose layout validated, and hears of modules
 * through wsp_modules_on_load (life/process.c registers it).
 *
 * Reentrancy: runs inside a hook (guard held), before the event's
 * wsp_event_begin; never calls into Python but for the thread-state
 * lookup (a TLS read), never allocates but wsprof's own pages.
 */

#include "python.h"
#include "pylayout.h"
#include "format.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct wsp_pylayout L;
static uintptr_t code_type, unicode_type, bytes_type;
static int (*py_is_initialized)(void);
static void *(*py_this_thread_state)(void);
static bool seen; /* an interpreter was found (one per process) */
static bool frames_on; /* ... and its frames are recorded */

#define MAX_FRAMES 128      /* Python frames kept per event, innermost first */
#define MAX_BLOCKS 64
#define WALK_LIMIT 100000   /* frames looked at, past MAX_FRAMES, for the last block's anchor */
#define NAME_MAX_BYTES 1024 /* of a qualified name or file name, in UTF-8 */
#define LINETABLE_MAX (32u << 10)
#define MERGED_MAX (256 + WSP_STACK_SLACK + MAX_FRAMES)

static inline uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static void make_factors(void);

/* ---- finding the interpreter ---------------------------------------- */

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;
	for (; *s; s++)
		h = h * 33 + (uint8_t)*s;
	return h;
}

/* A symbol a loaded module exports, from its own GNU hash table: no
 * dlsym (a module loaded RTLD_LOCAL is found too, and nothing allocates). */
static uintptr_t module_symbol(const struct dl_phdr_info *info, const char *name)
{
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return 0;
	uintptr_t symtab = 0, strtab = 0, hash = 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		/* The loader relocates these in place on most machines; not on all. */
		uintptr_t v = dyn->d_un.d_ptr < info->dlpi_addr ? dyn->d_un.d_ptr + info->dlpi_addr : dyn->d_un.d_ptr;
		if (dyn->d_tag == DT_SYMTAB)
			symtab = v;
		else if (dyn->d_tag == DT_STRTAB)
			strtab = v;
		else if (dyn->d_tag == DT_GNU_HASH)
			hash = v;
	}
	if (!symtab || !strtab || !hash)
		return 0;
	const uint32_t *h = (const uint32_t *)hash;
	uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
	if (!nbuckets)
		return 0;
	const uint32_t *buckets = (const uint32_t *)(h + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4));
	const uint32_t *chain = buckets + nbuckets;
	uint32_t want = gnu_hash(name);
	uint32_t i = buckets[want % nbuckets];
	if (i < symoffset)
		return 0;
	const ElfW(Sym) *syms = (const ElfW(Sym) *)symtab;
	for (;; i++) {
		uint32_t c = chain[i - symoffset];
		if ((c | 1) == (want | 1) && syms[i].st_shndx != SHN_UNDEF &&
		    !strcmp((const char *)strtab + syms[i].st_name, name))
			return info->dlpi_addr + syms[i].st_value;
		if (c & 1)
			return 0;
	}
}

/* Say what was found, once per process image. */
static void record_python(unsigned version, bool frames, bool hooked, const char *path, const char *note)
{
	struct wsp_thread *t = wsp_thread_self();
	size_t np = strnlen(path, 4096), nn = strnlen(note, 512);
	size_t need = WSP_EVENT_RECORD_MAX + np + nn;
	uint8_t *p = t ? wsp_event_begin(t, need) : NULL;
	if (!p)
		return;
	const char *pm = getenv("PYTHONMALLOC");
	unsigned objects = hooked ? WSPROF_PYOBJ_HOOKED
			   : pm && (!strcmp(pm, "malloc") || !strcmp(pm, "malloc_debug")) ? WSPROF_PYOBJ_MALLOC
										 : WSPROF_PYOBJ_ARENAS;
	struct wsp_record_mark m;
	p = wsp_record_open(p, WSP_REC_PYTHON, need, &m);
	p = wsp_event_stamp(t, p);
	p = wsp_put_varint(p, version);
	p = wsp_put_varint(p, frames ? 1 : 0);
	p = wsp_put_varint(p, objects);
	p = wsp_put_bytes(p, path, np);
	p = wsp_put_bytes(p, note, nn);
	wsp_event_end(t, wsp_record_close(p, &m), false);
}

static inline uint64_t rd64(uintptr_t a)
{
	uint64_t v;
	memcpy(&v, (const void *)a, sizeof v);
	return v;
}

/* 3.13+: the offsets the interpreter publishes about itself. */
static const char *layout_from_debug_offsets(uintptr_t runtime, unsigned version)
{
	if (memcmp((const void *)runtime, "xdebugpy", 8) != 0)
		return "its _PyRuntime does not start with _Py_DebugOffsets";
	if (rd64(runtime + WSP_PYDBG_VERSION) != version)
		return "its _Py_DebugOffsets are of another version";
	if (rd64(runtime + WSP_PYDBG_FREE_THREADED))
		return "it is a free-threaded build";
	if (((version >> 16) & 0xff) != 13)
		return "its layout is newer than this wsprof knows (3.11 to 3.13)";
	struct wsp_pylayout l = {
		.minor = 13, .ts_cframe = WSP_PY_NONE, .cframe_frame = WSP_PY_NONE, .cframe_previous = WSP_PY_NONE,
		.fr_is_entry = WSP_PY_NONE, .co_flags = 48,
	};
	l.ts_frame = (uint16_t)rd64(runtime + WSP_PYDBG_TS_CURRENT_FRAME);
	l.fr_previous = (uint16_t)rd64(runtime + WSP_PYDBG_FR_PREVIOUS);
	l.fr_code = (uint16_t)rd64(runtime + WSP_PYDBG_FR_EXECUTABLE);
	l.fr_instr = (uint16_t)rd64(runtime + WSP_PYDBG_FR_INSTR_PTR);
	l.fr_owner = (uint16_t)rd64(runtime + WSP_PYDBG_FR_OWNER);
	l.co_filename = (uint16_t)rd64(runtime + WSP_PYDBG_CO_FILENAME);
	l.co_qualname = (uint16_t)rd64(runtime + WSP_PYDBG_CO_QUALNAME);
	l.co_linetable = (uint16_t)rd64(runtime + WSP_PYDBG_CO_LINETABLE);
	l.co_firstlineno = (uint16_t)rd64(runtime + WSP_PYDBG_CO_FIRSTLINENO);
	l.co_code_adaptive = (uint16_t)rd64(runtime + WSP_PYDBG_CO_CODE_ADAPTIVE);
	l.bytes_size = (uint16_t)rd64(runtime + WSP_PYDBG_BYTES_OB_SIZE);
	l.bytes_data = (uint16_t)rd64(runtime + WSP_PYDBG_BYTES_OB_SVAL);
	l.unicode_size = (uint16_t)rd64(runtime + WSP_PYDBG_STR_SIZE);
	l.str_state = (uint16_t)rd64(runtime + WSP_PYDBG_STR_STATE);
	l.str_length = (uint16_t)rd64(runtime + WSP_PYDBG_STR_LENGTH);
	l.ascii_size = (uint16_t)rd64(runtime + WSP_PYDBG_STR_ASCII_SIZE);
	l.str_hash = 24;
	l.compact_size = (uint16_t)(l.ascii_size + 16); /* utf8_length and utf8 follow the ASCII header */
	L = l;
	return NULL;
}

/* Code objects that died, counted by a wrapper around PyCode_Type's
 * tp_dealloc: while the count stands still, no code object has died, so
 * one the thread's cache checked is still the one at its address and
 * need not be checked again (a deep stack's frames cost a compare each
 * instead of five loads). The wrapper counts and calls the original. */
static _Atomic uint64_t code_deaths = 1;
static void (*code_dealloc)(void *);
#define TP_DEALLOC 48 /* in PyTypeObject: PyObject_VAR_HEAD, tp_name, tp_basicsize, tp_itemsize */

static void count_code_death(void *code)
{
	atomic_fetch_add_explicit(&code_deaths, 1, memory_order_release);
	code_dealloc(code);
}

static void watch_code_deaths(void)
{
	void (**slot)(void *) = (void (**)(void *))(code_type + TP_DEALLOC);
	if (code_dealloc || !*slot || *slot == count_code_death)
		return;
	code_dealloc = *slot;
	*slot = count_code_death;
}

/* ---- small objects (WSPROF_PYTHON_OBJECTS=1) ---------------------------
 *
 * pymalloc serves objects of 512 bytes or less from its arenas, which
 * malloc never sees (the arenas are mmaps, each at the line that opened
 * it). Asked to, the recorder wraps the object allocator's domain
 * (PyMem_SetAllocator, installed as the interpreter is found, before it
 * initializes, or as a hook calling the one it replaces): each object
 * pymalloc serves from an arena becomes a block of kind pool inside it;
 * what it hands on to malloc (larger objects) stays the heap block the
 * libc hooks record. Which is which: whether the call reached the libc
 * hooks (wsp_python_libc_call). Object allocation holds the GIL, so no
 * other thread takes an object's address between its free and the
 * record of it. */

struct pymem_allocator { /* PyMemAllocatorEx */
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t new_size);
	void (*free)(void *ctx, void *ptr);
};

#define PYMEM_DOMAIN_OBJ 2
static struct pymem_allocator obj_prev;
static uint64_t obj_pool; /* the pool's id: the interpreter's PyObject_Malloc */

static void watch(const void *old)
{
	wsp_tls.pyobj_libc = false;
	wsp_tls.pyobj_old = old;
	wsp_tls.pyobj_watch = true;
}

static void *obj_malloc(void *ctx, size_t n)
{
	(void)ctx;
	watch(NULL);
	void *p = obj_prev.malloc(obj_prev.ctx, n);
	wsp_tls.pyobj_watch = false;
	if (p && !wsp_tls.pyobj_libc)
		wsp_pool_alloc(obj_pool, (uintptr_t)p, n);
	return p;
}

static void *obj_calloc(void *ctx, size_t nelem, size_t elsize)
{
	(void)ctx;
	watch(NULL);
	void *p = obj_prev.calloc(obj_prev.ctx, nelem, elsize);
	wsp_tls.pyobj_watch = false;
	if (p && !wsp_tls.pyobj_libc)
		wsp_pool_alloc(obj_pool, (uintptr_t)p, nelem * elsize);
	return p;
}

static void *obj_realloc(void *ctx, void *old, size_t n)
{
	(void)ctx;
	watch(old);
	void *p = obj_prev.realloc(obj_prev.ctx, old, n);
	wsp_tls.pyobj_watch = false;
	bool old_in_arena = old && wsp_tls.pyobj_old == old; /* libc neither freed nor moved it */
	if (p && old_in_arena)
		wsp_pool_free(obj_pool, (uintptr_t)old);
	if (p && !wsp_tls.pyobj_libc)
		wsp_pool_alloc(obj_pool, (uintptr_t)p, n);
	return p;
}

static void obj_free(void *ctx, void *p)
{
	(void)ctx;
	watch(p);
	obj_prev.free(obj_prev.ctx, p);
	wsp_tls.pyobj_watch = false;
	if (p && wsp_tls.pyobj_old == p)
		wsp_pool_free(obj_pool, (uintptr_t)p);
}

/* @return whether every small object is recorded from now on (once a
 * process: a forked child keeps its parent's hook). */
static bool hook_objects(const struct dl_phdr_info *info)
{
	static bool hooked;
	if (hooked)
		return true;
	void (*get)(int, struct pymem_allocator *), (*set)(int, struct pymem_allocator *);
	*(void **)&get = (void *)module_symbol(info, "PyMem_GetAllocator");
	*(void **)&set = (void *)module_symbol(info, "PyMem_SetAllocator");
	obj_pool = module_symbol(info, "PyObject_Malloc");
	const char *pm = getenv("PYTHONMALLOC");
	if (!get || !set || !obj_pool || (pm && *pm && strcmp(pm, "pymalloc")))
		return false; /* PYTHONMALLOC chose another allocator, which Python sets up later */
	get(PYMEM_DOMAIN_OBJ, &obj_prev);
	if (!obj_prev.malloc || !obj_prev.free)
		return false;
	struct pymem_allocator mine = { NULL, obj_malloc, obj_calloc, obj_realloc, obj_free };
	set(PYMEM_DOMAIN_OBJ, &mine);
	return hooked = true;
}

/* tp_basicsize of a type object (PyObject_VAR_HEAD, then tp_name). */
static uint64_t type_basicsize(uintptr_t type)
{
	return rd64(type + 32);
}

/* An interpreter found while its library was still being loaded (a
 * dlopen's first allocations come before its relocations): looked at
 * again at each of the next events (the dlopen is over by then), and
 * every PENDING_EVERY after PENDING_SOON of them (a library that never
 * looks ready costs little). */
#define PENDING_SOON 1024
#define PENDING_EVERY 256
static uintptr_t pending_base;
static char pending_path[4096];
static atomic_flag detecting = ATOMIC_FLAG_INIT;

static int find_pending(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (info->dlpi_addr != pending_base)
		return 0;
	wsp_python_module(info, pending_path);
	return 1;
}

static int pending_stack(struct wsp_thread *t, const uintptr_t *ips, int depth, const uintptr_t **frames,
			 uint32_t *known);

static void pending_remember(struct wsp_thread *t, uint32_t id)
{
	(void)t;
	(void)id;
}

static int wsp_python_stack(struct wsp_thread *t, const uintptr_t *ips, int depth, const uintptr_t **merged,
			    uint32_t *known);
static void wsp_python_remember(struct wsp_thread *t, uint32_t id);
static const struct wsp_stack_more pending_more = { pending_stack, pending_remember };
static const struct wsp_stack_more python_more = { wsp_python_stack, wsp_python_remember };

static int pending_stack(struct wsp_thread *t, const uintptr_t *ips, int depth, const uintptr_t **frames,
			 uint32_t *known)
{
	static _Atomic unsigned calls;
	*known = 0;
	unsigned n = atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
	if ((n > PENDING_SOON && n % PENDING_EVERY) || !pending_base)
		return 0;
	dl_iterate_phdr(find_pending, NULL);
	return frames_on ? wsp_python_stack(t, ips, depth, frames, known) : 0;
}

/* Look at a module: an interpreter whose frames are recorded from now on,
 * one whose frames cannot be (said once), not yet relocated (looked at
 * again later), or no interpreter. */
static void detect(const struct dl_phdr_info *info, const char *path)
{
	uintptr_t ver = module_symbol(info, "Py_Version");
	if (!ver) {
		const char *base = strrchr(path, '/');
		base = base ? base + 1 : path;
		if (module_symbol(info, "Py_Initialize") && !strncmp(base, "libpython", 9)) {
			seen = true;
			record_python(0, false, false, path, "Python older than 3.11: no Python frames (3.11 or later has them)");
		}
		return;
	}
	code_type = module_symbol(info, "PyCode_Type");
	uintptr_t type_type = module_symbol(info, "PyType_Type");
	if (code_type && type_type && rd64(code_type + 8) != type_type) {
		/* Not relocated yet: nothing of it can be called, nor changed. */
		if (!pending_base) {
			pending_base = info->dlpi_addr;
			snprintf(pending_path, sizeof pending_path, "%s", path);
			wsp_events_stack_more(&pending_more);
		}
		return;
	}
	seen = true;
	pending_base = 0;
	unsigned version = *(const uint32_t *)ver;
	unsigned minor = (version >> 16) & 0xff;
	uintptr_t runtime = module_symbol(info, "_PyRuntime");
	unicode_type = module_symbol(info, "PyUnicode_Type");
	bytes_type = module_symbol(info, "PyBytes_Type");
	*(void **)&py_is_initialized = (void *)module_symbol(info, "Py_IsInitialized");
	*(void **)&py_this_thread_state = (void *)module_symbol(info, "PyGILState_GetThisThreadState");
	const char *why = NULL;
	char note[256];
	if (version >> 24 != 3 || minor < 11)
		why = "its version is not 3.11 or later";
	else if (!code_type || !type_type || !unicode_type || !bytes_type || !py_is_initialized || !py_this_thread_state ||
		 !runtime)
		why = "it does not export what the walk needs";
	else if (minor == 11)
		L = wsp_pylayout_311;
	else if (minor == 12)
		L = wsp_pylayout_312;
	else
		why = layout_from_debug_offsets(runtime, version);
	if (!why && !wsp_cfg.python)
		why = "WSPROF_PYTHON=0 turned them off";
	if (!why && (type_basicsize(code_type) != L.co_code_adaptive || type_basicsize(unicode_type) != L.unicode_size))
		why = "its objects are not laid out as a release build's (a debug build?)";
	if (why) {
		snprintf(note, sizeof note, "Python %u.%u: no Python frames, %s", minor ? 3 : 0, minor, why);
		record_python(version, false, false, path, note);
		wsp_events_stack_more(NULL);
		return;
	}
	make_factors();
	watch_code_deaths();
	bool hooked = wsp_cfg.python_objects && hook_objects(info);
	record_python(version, true, hooked, path, "");
	frames_on = true;
	wsp_events_stack_more(&python_more);
}

void wsp_python_module(const struct dl_phdr_info *info, const char *path)
{
	if (seen || atomic_flag_test_and_set(&detecting))
		return; /* one interpreter a process; one thread looks at a time */
	if (!seen)
		detect(info, path);
	atomic_flag_clear(&detecting);
}

/* ---- the walk ------------------------------------------------------- */

struct block {
	int end;          /* its frames are frame[previous block's end .. end) */
	uintptr_t anchor; /* where on the C stack its evaluation call is; 0: not known */
};

struct pyframe {
	uintptr_t code;
	uint32_t instr;   /* the instruction's offset in code units + 1; 0: before the first */
	uint32_t id;      /* the code's id, once interned */
};

/* A code object's identity: its address, and what a code object taking
 * a dead one's address would not have alike (its name's address and
 * hash, its line table's address, its first line). */
struct code_entry {
	uintptr_t code, qualname, linetable;
	uint64_t hash;
	int32_t firstlineno;
	uint32_t id;      /* 0: empty */
	uint64_t deaths;  /* code_deaths when it was last checked (the thread's cache) */
};

#define THREAD_CODES 2048 /* two ways a set */
#define THREAD_STACKS 2048

/* A merged stack the thread interned: the native stack's serial
 * (wsp_stack_serial) and its Python frames, hashed, to its id. */
struct merged_entry {
	uint64_t h1, h2;
	uint32_t id;
};

/* What a frame of the walk was found holding: a later walk that would
 * read the same (the same frames with the same code, instruction and
 * caller) gives the same result, which it can tell with loads that do not
 * wait for each other, where the walk's each wait for the last. */
struct visit {
	uintptr_t frame, code, instr;
};

#define MEMO_VISITS 160 /* frames looked at (shims too) by a walk kept for later */
#define MEMO_WALKS 4

/* One walk of the thread's frames, and what it read. */
struct pywalk {
	int nframes, nblocks;
	struct pyframe frame[MAX_FRAMES];
	struct block block[MAX_BLOCKS];
	int nvisit;               /* 0: not kept (too deep, or not made) */
	struct visit visit[MEMO_VISITS];
	uintptr_t last_previous;  /* the last frame's caller */
	uintptr_t first;          /* 3.12+: the innermost frame; 3.11: the innermost _PyCFrame */
	int ncframes;             /* 3.11: the _PyCFrames read, and their frames */
	uintptr_t cframe[MAX_BLOCKS + 1], cframe_frame[MAX_BLOCKS + 1];
	unsigned generation;      /* of the code ids in frame[] */
	uint64_t deaths;          /* code_deaths when they were checked */
	uint32_t serial, merged;  /* the last native stack it was merged with (wsp_stack_serial), and the id */
};

struct wsp_pythread {
	unsigned generation;
	struct merged_entry *pending; /* where the stack being recorded goes once interned */
	uint64_t h1, h2;
	struct pywalk *cur;           /* the walk of the event being recorded */
	unsigned next;                /* the walk to replace next */
	struct pywalk walks[MEMO_WALKS];
	uintptr_t merged[MERGED_MAX];
	struct code_entry codes[THREAD_CODES];
	struct merged_entry stacks[THREAD_STACKS];
};

static unsigned generation = 1; /* bumped at fork: the child's trace defines its codes again */

static inline bool plausible(uintptr_t p)
{
	return p && !(p & 7) && p < ((uintptr_t)1 << 47);
}

static inline uintptr_t rdp(uintptr_t a, uint16_t off)
{
	return (uintptr_t)rd64(a + off);
}

static bool is_code(uintptr_t code)
{
	return plausible(code) && rdp(code, 8) == code_type;
}

/* A frame looked at: kept while the walk fits, for a later one to check against. */
static void visited(struct pywalk *w, uintptr_t frame, uintptr_t code, uintptr_t instr)
{
	if (w->nvisit < 0)
		return;
	if (w->nvisit == MEMO_VISITS) {
		w->nvisit = -1; /* too deep to keep */
		return;
	}
	w->visit[w->nvisit++] = (struct visit){ frame, code, instr };
}

static void push(struct pywalk *w, uintptr_t code, uintptr_t instr)
{
	if (w->nframes == MAX_FRAMES)
		return;
	uintptr_t first = code + L.co_code_adaptive;
	uint64_t units = instr >= first ? (instr - first) / 2 + 1 : 0;
	w->frame[w->nframes++] = (struct pyframe){ code, units > 0xfffffe ? 0xffffff : (uint32_t)units, 0 };
}

static bool close_block(struct pywalk *w, uintptr_t anchor)
{
	int start = w->nblocks ? w->block[w->nblocks - 1].end : 0;
	if (w->nframes == start)
		return true;
	if (w->nblocks == MAX_BLOCKS)
		return false;
	w->block[w->nblocks++] = (struct block){ w->nframes, anchor };
	return true;
}

/* 3.11: each _PyCFrame is one call of the evaluation loop, its frames
 * those from its current one out to the one it began with, whose caller
 * is the current frame of the _PyCFrame before it (the loop's prologue
 * links them so): no need to read each frame's is_entry. */
static bool walk_cframes(struct pywalk *w, uintptr_t ts)
{
	uintptr_t cf = rdp(ts, L.ts_cframe);
	w->first = cf;
	size_t steps = 0;
	while (plausible(cf)) {
		if (w->ncframes == MAX_BLOCKS + 1)
			return false;
		uintptr_t f = rdp(cf, L.cframe_frame), prev = rdp(cf, L.cframe_previous);
		w->cframe[w->ncframes] = cf;
		w->cframe_frame[w->ncframes++] = f;
		if (!f)
			break; /* the thread state's root _PyCFrame */
		uintptr_t stop = plausible(prev) ? rdp(prev, L.cframe_frame) : 0;
		while (f != stop) {
			if (!plausible(f) || ++steps > WALK_LIMIT)
				return false;
			uintptr_t code = rdp(f, L.fr_code), instr = rdp(f, L.fr_instr);
			if (!is_code(code))
				return false;
			visited(w, f, code, instr);
			push(w, code, instr);
			f = rdp(f, L.fr_previous);
		}
		w->last_previous = f;
		if (!close_block(w, cf))
			return false;
		cf = prev;
	}
	return true;
}

/* 3.12+: one chain of frames; a call of the evaluation loop from C
 * pushes a shim frame (owned by the C stack, on it) outside its first. */
static bool walk_frames(struct pywalk *w, uintptr_t f)
{
	uintptr_t tortoise = f;
	size_t steps = 0, power = 1, lam = 0;
	w->first = f;
	while (f) {
		if (!plausible(f) || ++steps > WALK_LIMIT)
			return false;
		uintptr_t code = rdp(f, L.fr_code), instr = rdp(f, L.fr_instr);
		visited(w, f, code, instr);
		/* 3.13's shim runs no code object (None): only then is its owner read. */
		bool code_ok = is_code(code);
		if ((L.minor == 12 || !code_ok) && *(const uint8_t *)(f + L.fr_owner) == WSP_PY_OWNED_BY_CSTACK) {
			if (!close_block(w, f))
				return false;
		} else if (code_ok) {
			if (L.minor < 13 || !(*(const int32_t *)(code + L.co_flags) & WSP_PY_CO_NO_MONITORING))
				push(w, code, instr);
		} else if (L.minor < 13) {
			return false; /* 3.13 frames may run other things than code */
		}
		f = rdp(f, L.fr_previous);
		if (f == tortoise)
			return false; /* a cycle */
		if (++lam == power) {
			tortoise = f;
			power *= 2;
			lam = 0;
		}
	}
	w->last_previous = 0;
	return close_block(w, 0);
}

static struct wsp_pythread *pythread(struct wsp_thread *t)
{
	if (!t->py) {
		t->py = wsp_pages_alloc(sizeof *t->py);
		if (t->py)
			t->py->generation = __atomic_load_n(&generation, __ATOMIC_RELAXED);
	}
	return t->py;
}

/* @return whether the thread runs Python (frames in py), false when not or when the walk gave up. */
/* The calling thread's own thread state, 0 when it runs no Python. */
static uintptr_t thread_state(void)
{
	if (!py_is_initialized())
		return 0;
	uintptr_t ts = (uintptr_t)py_this_thread_state();
	return plausible(ts) ? ts : 0;
}

/* The innermost frame (3.12+) or _PyCFrame (3.11) a walk starts from. */
static uintptr_t walk_start(uintptr_t ts)
{
	if (L.fr_is_entry != WSP_PY_NONE)
		return rdp(ts, L.ts_cframe);
	if (L.ts_frame != WSP_PY_NONE)
		return rdp(ts, L.ts_frame);
	uintptr_t cf = rdp(ts, L.ts_cframe); /* 3.12: the innermost frame is still kept in the _PyCFrame */
	return plausible(cf) ? rdp(cf, L.cframe_frame) : 0;
}

static bool walk(struct pywalk *w, uintptr_t ts)
{
	w->nframes = w->nblocks = w->nvisit = w->ncframes = 0;
	w->serial = w->merged = 0;
	bool ok;
	if (L.fr_is_entry != WSP_PY_NONE) {
		ok = walk_cframes(w, ts);
	} else {
		uintptr_t f = walk_start(ts);
		ok = (f || L.ts_frame != WSP_PY_NONE) && walk_frames(w, f);
	}
	if (!ok || w->nframes == 0) {
		w->nvisit = 0;
		return false;
	}
	if (w->nvisit < 0)
		w->nvisit = 0;
	return true;
}

/* Would walking now read what w's walk read? Then its frames, blocks and
 * code ids stand (no code object died since: code_deaths). Each frame is
 * read only once the one before it is shown live and linked to it (the
 * first is the thread's own now): an old walk's frame may be freed memory,
 * whose reads only run ahead speculatively. */
static bool walk_stands(const struct pywalk *w, uintptr_t start, unsigned gen, uint64_t deaths)
{
	if (!w->nvisit || w->first != start || w->generation != gen || w->deaths != deaths)
		return false;
	for (int k = 0; k < w->ncframes; k++) { /* 3.11 */
		if (rdp(w->cframe[k], L.cframe_frame) != w->cframe_frame[k])
			return false;
		if (k + 1 < w->ncframes && rdp(w->cframe[k], L.cframe_previous) != w->cframe[k + 1])
			return false;
	}
	if (w->ncframes && w->visit[0].frame != w->cframe_frame[0])
		return false;
	for (int i = 0; i < w->nvisit; i++) {
		const struct visit *v = &w->visit[i];
		uintptr_t next = i + 1 < w->nvisit ? w->visit[i + 1].frame : w->last_previous;
		if (rdp(v->frame, L.fr_code) != v->code || rdp(v->frame, L.fr_instr) != v->instr ||
		    rdp(v->frame, L.fr_previous) != next)
			return false;
	}
	return true;
}

/* ---- code objects --------------------------------------------------- */

static struct code_entry *table;
static size_t table_cap, table_used;
static uint32_t next_code_id;

static void read_key(uintptr_t code, struct code_entry *k)
{
	k->code = code;
	k->qualname = rdp(code, L.co_qualname);
	k->linetable = rdp(code, L.co_linetable);
	k->firstlineno = *(const int32_t *)(code + L.co_firstlineno);
	k->hash = plausible(k->qualname) ? rd64(k->qualname + L.str_hash) : 0;
}

static bool same_key(const struct code_entry *a, const struct code_entry *b)
{
	return a->code == b->code && a->qualname == b->qualname && a->linetable == b->linetable &&
	       a->firstlineno == b->firstlineno && a->hash == b->hash;
}

static size_t code_slot(uintptr_t code, size_t cap)
{
	uint64_t h = (uint64_t)code * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 32) & (cap - 1);
}

/* A str as UTF-8, at most cap bytes (cut at a character). @return its length. */
static size_t put_str_utf8(uintptr_t s, uint8_t *out, size_t cap)
{
	if (!plausible(s) || rdp(s, 8) != unicode_type)
		return 0;
	uint32_t state = *(const uint32_t *)(s + L.str_state);
	int64_t len = (int64_t)rd64(s + L.str_length);
	bool compact = state & (1u << 5), ascii = state & (1u << 6);
	unsigned kind = (state >> 2) & 7;
	if (!compact || len < 0)
		return 0;
	if (ascii) {
		size_t n = (size_t)len < cap ? (size_t)len : cap;
		memcpy(out, (const void *)(s + L.ascii_size), n);
		return n;
	}
	const uint8_t *d = (const uint8_t *)(s + L.compact_size);
	size_t n = 0;
	for (int64_t i = 0; i < len; i++) {
		uint32_t c = kind == 1 ? d[i] : kind == 2 ? ((const uint16_t *)d)[i] : ((const uint32_t *)d)[i];
		uint8_t b[4];
		size_t w;
		if (c < 0x80)
			b[0] = (uint8_t)c, w = 1;
		else if (c < 0x800)
			b[0] = (uint8_t)(0xc0 | c >> 6), b[1] = (uint8_t)(0x80 | (c & 0x3f)), w = 2;
		else if (c < 0x10000)
			b[0] = (uint8_t)(0xe0 | c >> 12), b[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3f)),
			b[2] = (uint8_t)(0x80 | (c & 0x3f)), w = 3;
		else
			b[0] = (uint8_t)(0xf0 | c >> 18), b[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3f)),
			b[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3f)), b[3] = (uint8_t)(0x80 | (c & 0x3f)), w = 4;
		if (n + w > cap)
			break;
		memcpy(out + n, b, w);
		n += w;
	}
	return n;
}

static uint8_t *put_string_field(uint8_t *p, uintptr_t s)
{
	uint8_t *at = p + 2; /* a length of at most NAME_MAX_BYTES takes two bytes */
	size_t n = put_str_utf8(s, at, NAME_MAX_BYTES);
	wsp_put_varint_fixed(p, n, 2);
	return at + n;
}

static uint8_t *put_linetable(uint8_t *p, uintptr_t b)
{
	size_t n = 0;
	if (plausible(b) && rdp(b, 8) == bytes_type) {
		int64_t len = (int64_t)rd64(b + L.bytes_size);
		n = len < 0 ? 0 : (size_t)len < LINETABLE_MAX ? (size_t)len : LINETABLE_MAX;
	}
	return wsp_put_bytes(p, n ? (const void *)(b + L.bytes_data) : "", n);
}

#define CODE_RECORD_MAX (WSP_EVENT_RECORD_MAX + 2 * (NAME_MAX_BYTES + 2) + LINETABLE_MAX + 8)

static bool table_grow(void)
{
	size_t cap = table_cap ? table_cap * 2 : 1024;
	struct code_entry *n = wsp_pages_alloc(cap * sizeof *n);
	if (!n)
		return false;
	for (size_t i = 0; i < table_cap; i++) {
		if (!table[i].id)
			continue;
		size_t j = code_slot(table[i].code, cap);
		while (n[j].id)
			j = (j + 1) & (cap - 1);
		n[j] = table[i];
	}
	wsp_pages_free(table, table_cap * sizeof *table);
	table = n;
	table_cap = cap;
	return true;
}

/* The process table's id of a code object, 0 when it has none (under the lock). */
static uint32_t code_find_locked(const struct code_entry *k)
{
	if (!table_cap)
		return 0;
	size_t j = code_slot(k->code, table_cap);
	for (; table[j].id; j = (j + 1) & (table_cap - 1))
		if (table[j].code == k->code)
			return same_key(&table[j], k) ? table[j].id : 0;
	return 0;
}

/* The id of a code object not in the thread's cache: the process table's,
 * or a new one, whose PY_CODE record goes into the thread's buffer first.
 * @return 0 when recording stopped or memory ran out. */
static uint32_t code_intern(struct wsp_thread *t, const struct code_entry *k)
{
	wsp_stacks_lock();
	uint32_t known = code_find_locked(k); /* most often: another thread's, or one this thread's cache let go */
	wsp_stacks_unlock();
	if (known)
		return known;
	uint8_t *p = wsp_event_begin(t, CODE_RECORD_MAX);
	if (!p)
		return 0;
	uint32_t id = 0;
	wsp_stacks_lock();
	if ((table_used + 1) * 2 > table_cap && !table_grow()) {
		wsp_stacks_unlock();
		wsp_event_end(t, p, false);
		return 0;
	}
	size_t j = code_slot(k->code, table_cap);
	for (; table[j].id; j = (j + 1) & (table_cap - 1))
		if (table[j].code == k->code)
			break;
	if (table[j].id && same_key(&table[j], k)) {
		id = table[j].id;
	} else {
		if (!table[j].id)
			table_used++;
		id = ++next_code_id; /* a code object in a dead one's place takes the slot */
		table[j] = *k;
		table[j].id = id;
		struct wsp_record_mark m;
		p = wsp_record_open(p, WSP_REC_PY_CODE, CODE_RECORD_MAX, &m);
		p = wsp_put_varint(p, id);
		p = wsp_put_varint(p, (uint64_t)(k->firstlineno > 0 ? k->firstlineno : 0));
		p = put_string_field(p, k->qualname);
		p = put_string_field(p, rdp(k->code, L.co_filename));
		p = put_linetable(p, k->linetable);
		p = wsp_record_close(p, &m);
	}
	wsp_stacks_unlock();
	wsp_event_end(t, p, false);
	return id;
}

/* The ids of the walk's code objects, from the thread's cache or found
 * and recorded now. */
static bool codes_interned(struct wsp_thread *t, struct wsp_pythread *py, struct pywalk *w, unsigned gen,
			   uint64_t deaths)
{
	for (int i = 0; i < w->nframes; i++) {
		uintptr_t code = w->frame[i].code;
		if (i && code == w->frame[i - 1].code) {
			w->frame[i].id = w->frame[i - 1].id; /* recursion: its caller's code, just checked */
			continue;
		}
		/* Two ways a set: the newer first. */
		struct code_entry *c = &py->codes[code_slot(code, THREAD_CODES) & ~(size_t)1];
		if (c[1].code == code)
			c++;
		if (c->id && c->code == code && c->deaths == deaths) {
			w->frame[i].id = c->id; /* no code object died since it was checked */
			continue;
		}
		struct code_entry k;
		read_key(code, &k);
		if (!c->id || !same_key(c, &k)) {
			uint32_t id = code_intern(t, &k);
			if (!id)
				return false;
			if (c->code != code) /* a new one: the older way goes */
				c[1] = c[0];
			*c = k;
			c->id = id;
		}
		c->deaths = deaths;
		w->frame[i].id = c->id;
	}
	w->generation = gen;
	w->deaths = deaths;
	return true;
}

/* ---- placing the blocks --------------------------------------------- */

static int copy_block(struct wsp_pythread *py, const struct pywalk *w, int b, int out)
{
	int start = b ? w->block[b - 1].end : 0;
	for (int i = start; i < w->block[b].end && out < MERGED_MAX; i++)
		py->merged[out++] = WSPROF_PYFRAME_IP(w->frame[i].id, w->frame[i].instr);
	return out;
}

/* An odd constant for each place in a stack (splitmix64's sequence), made once. */
static uint64_t factors[2 * MAX_FRAMES];

static void make_factors(void)
{
	for (uint64_t i = 0; i < 2 * MAX_FRAMES; i++)
		factors[i] = mix(0x9e3779b97f4a7c15ull * (i + 1)) | 1;
}

static inline uint64_t place_factor(int i)
{
	return factors[i];
}

/* Has the thread interned this stack before? The same native stack (its
 * serial) and the same Python frames in the same blocks place the blocks
 * alike: their anchors lie in the same native frames. */
static uint32_t merged_known(struct wsp_pythread *py, const struct pywalk *w, uint32_t serial, int depth)
{
	py->pending = NULL;
	if (!serial)
		return 0;
	/* Each frame's key times a constant of its place, summed: the
	 * multiplies do not wait for each other (a chain of mixes was most of
	 * the cost of a 40-frame stack), mixed once at the end. */
	uint64_t h1 = (uint64_t)serial << 32 | (uint32_t)depth, h2 = ~h1;
	for (int b = 0; b < w->nblocks; b++)
		h1 += (uint64_t)w->block[b].end * place_factor(b), h2 ^= (uint64_t)w->block[b].end << (b & 31);
	for (int i = 0; i < w->nframes; i++) {
		uint64_t k = (uint64_t)w->frame[i].id << 24 | w->frame[i].instr;
		h1 += k * place_factor(i);
		h2 += (k ^ (k >> 17)) * place_factor(i + MAX_FRAMES);
	}
	h1 = mix(h1);
	h2 = mix(h2 ^ (uint64_t)w->nframes << 40);
	struct merged_entry *e = &py->stacks[h1 & (THREAD_STACKS - 1)];
	if (e->id && e->h1 == h1 && e->h2 == h2)
		return e->id;
	py->pending = e;
	py->h1 = h1;
	py->h2 = h2;
	return 0;
}

static void wsp_python_remember(struct wsp_thread *t, uint32_t id)
{
	struct wsp_pythread *py = t->py;
	if (!py || !id)
		return;
	if (py->pending)
		*py->pending = (struct merged_entry){ py->h1, py->h2, id };
	if (py->cur && py->cur->serial)
		py->cur->merged = id;
}

/* The thread's Python frames now: a walk kept from an earlier event if
 * walking again would read the same, else a new walk (its code objects
 * named). NULL when the thread runs no Python frames now, or the walk
 * gave up. */
static struct pywalk *frames_now(struct wsp_thread *t, struct wsp_pythread *py, uintptr_t ts)
{
	unsigned gen = __atomic_load_n(&generation, __ATOMIC_RELAXED);
	if (py->generation != gen) {
		memset(py->codes, 0, sizeof py->codes);
		memset(py->stacks, 0, sizeof py->stacks);
		for (int k = 0; k < MEMO_WALKS; k++)
			py->walks[k].nvisit = 0;
		py->generation = gen;
	}
	uint64_t deaths = atomic_load_explicit(&code_deaths, memory_order_acquire);
	uintptr_t start = walk_start(ts);
	if (py->cur && walk_stands(py->cur, start, gen, deaths))
		return py->cur;
	for (int k = 0; k < MEMO_WALKS; k++)
		if (&py->walks[k] != py->cur && walk_stands(&py->walks[k], start, gen, deaths))
			return py->cur = &py->walks[k];
	struct pywalk *w = &py->walks[py->next];
	py->next = (py->next + 1) % MEMO_WALKS;
	py->cur = w;
	if (!walk(w, ts) || !codes_interned(t, py, w, gen, deaths)) {
		w->nvisit = 0;
		return NULL;
	}
	return w;
}

/* The calling thread's Python frames merged into its native stack ips[0..depth)
 * (innermost first, just unwound): each Python frame, as a key for
 * wsp_stack_intern (WSPROF_PYFRAME_IP), just inside the native evaluation
 * frame that runs it. New code objects are recorded first (PY_CODE
 * records): called before wsp_event_begin. @return the merged depth, with
 * *merged the frames (the thread's own memory, valid until its next event),
 * or 0: no Python frames; ips stands as it is. *known: the merged stack's id
 * when the thread has interned it before (*merged is then not made), else
 * 0: intern it, then wsp_python_remember. */
static int wsp_python_stack(struct wsp_thread *t, const uintptr_t *ips, int depth, const uintptr_t **merged,
			    uint32_t *known)
{
	*known = 0;
	uintptr_t ts = thread_state();
	struct wsp_pythread *py = ts ? pythread(t) : NULL; /* threads that run no Python have none */
	uintptr_t hi;
	const uintptr_t *const *slot = py ? wsp_stack_slots(t, &hi) : NULL;
	struct pywalk *w = py && slot ? frames_now(t, py, ts) : NULL;
	if (!w)
		return 0;
	uint32_t serial = wsp_stack_serial(t);
	py->pending = NULL;
	if (serial && w->serial == serial && w->merged) {
		*known = w->merged; /* the same native stack as the walk's last event */
		return depth + w->nframes;
	}
	w->serial = serial;
	w->merged = 0;
	if ((*known = merged_known(py, w, serial, depth))) {
		w->merged = *known;
		return depth + w->nframes;
	}
	int out = 0, n = 0, b = 0;
	for (; b < w->nblocks; b++) {
		uintptr_t a = w->block[b].anchor;
		int i = n;
		while (i < depth && !(a > (uintptr_t)slot[i] && a < (i + 1 < depth ? (uintptr_t)slot[i + 1] : hi)))
			i++;
		if (i == depth)
			break; /* not in the stack unwound (past its depth): this block and those outside it go last */
		for (; n < i && out < MERGED_MAX; n++)
			py->merged[out++] = ips[n];
		out = copy_block(py, w, b, out);
	}
	for (; n < depth && out < MERGED_MAX; n++)
		py->merged[out++] = ips[n];
	for (; b < w->nblocks; b++)
		out = copy_block(py, w, b, out);
	*merged = py->merged;
	return out;
}

void wsp_python_reset_after_fork(void)
{
	if (table)
		memset(table, 0, table_cap * sizeof *table);
	table_used = 0;
	next_code_id = 0;
	__atomic_fetch_add(&generation, 1, __ATOMIC_RELAXED);
	seen = false; /* the child's trace says again what runs it */
	frames_on = false;
}
