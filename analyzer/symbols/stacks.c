/*
 * stacks.c - the noted stacks (symbols.h): each stack node bound, as it
 * is first read, to the address its ip had among the modules loaded then
 * (a Python frame named from the trace's code table at once), so a stack
 * is read later without the trace's own nodes and without a probe; and
 * what a stack shows: the views (--stacks), the allocator's entry points
 * trimmed from its top, and which frame is its site.
 */
#include "symbols_internal.h"

#include "grow.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Is a Python file the interpreter's library or an installed package's
 * rather than the program's own? (frozen modules, .../lib/python3.X/...,
 * site-packages, dist-packages) */
static bool python_library(const char *file)
{
	if (!file)
		return false;
	if (!strncmp(file, "<frozen ", 8) || strstr(file, "/site-packages/") || strstr(file, "/dist-packages/"))
		return true;
	for (const char *p = strstr(file, "/lib/python3"); p; p = strstr(p + 1, "/lib/python3")) {
		const char *q = p + 12;
		if (*q != '.' || !q[1])
			continue;
		for (q++; *q >= '0' && *q <= '9'; q++)
			;
		if (*q == '/')
			return true;
	}
	return false;
}

/* A Python frame is named from the trace's code table as it is noted
 * (the code is defined before any frame using it is handed out). */
static int name_python(struct wsp_syms *s, const wsprof_trace *t, struct addr_entry *e, uint64_t key)
{
	const wsprof_pycode *c = wsprof_trace_pycode(t, WSPROF_PYFRAME_CODE(key));
	int line = wsprof_pycode_line(c, WSPROF_PYFRAME_INSTR(key));
	struct wsp_frame f = { .function = syms_intern(s, c ? c->qualname : "<unknown Python code>"),
			       .file = c ? syms_intern(s, c->filename) : NULL,
			       .line = line > 0 ? (unsigned)line : 0,
			       .offset = key,
			       .python = true,
			       .library = c && python_library(c->filename) };
	e->first = (uint32_t)s->narena;
	if (syms_arena_add(s, f))
		return -ENOMEM;
	e->count = 1;
	e->named = e->lead_known = true;
	return 0;
}

int wsp_syms_note_stack(struct wsp_syms *s, const wsprof_trace *t, uint64_t node)
{
	if (!s->cache_read)
		syms_cache_read(s, t); /* the trace's identity is known now */
	uint64_t parent, ip;
	for (; node && wsprof_trace_stack_node(t, node, &parent, &ip); node = parent) {
		if (node >= UINT32_MAX)
			return 0; /* past 2^32 nodes: named no further */
		if (node >= s->nodecap) {
			/* The two grow alike (wsp_grow doubles), apart: one array of
			 * both took 8 MB more at the peak of the PyTorch trace's report. */
			size_t old = s->nodecap, pcap = s->nodecap;
			if (wsp_grow(&s->parents, &pcap, (size_t)node + 1, sizeof *s->parents) ||
			    wsp_grow(&s->nodes, &s->nodecap, (size_t)node + 1, sizeof *s->nodes))
				return -ENOMEM;
			memset(s->nodes + old, 0, (s->nodecap - old) * sizeof *s->nodes);
		}
		if (s->nodes[node])
			break; /* and so are its parents */
		wsprof_module_info info;
		int32_t mod = -1;
		uint64_t offset = ip;
		/* A return address may be just past its function's end: look up the call. */
		if (WSPROF_IS_PYFRAME(ip))
			mod = PY_MOD;
		else if (wsprof_trace_module_info_at(t, ip - 1, &info) && (mod = syms_module_of(s, t, ip - 1, &info)) >= 0)
			offset = ip - info.base;
		int64_t e = syms_entry_of(s, mod, offset);
		if (e < 0 || (mod == PY_MOD && !s->addrs[e].named && name_python(s, t, &s->addrs[e], ip)))
			return -ENOMEM;
		/* Parents come first: one that does not (a damaged trace) ends the stack. */
		s->nodes[node] = (uint32_t)e + 1;
		s->parents[node] = parent < node ? (uint32_t)parent : 0;
	}
	return 0;
}

void wsp_syms_noted_all(struct wsp_syms *s)
{
	s->noted_all = true;
}

static bool is_allocator_entry(const char *fn)
{
	static const char *const names[] = {
		"malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign", "aligned_alloc",
		"memalign", "valloc", "pvalloc", "mmap", "mmap64", "mremap", "munmap",
	};
	if (!fn)
		return false;
	if (strncmp(fn, "operator new", 12) == 0 || strncmp(fn, "__libc_", 7) == 0)
		return true;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strcmp(fn, names[i]) == 0)
			return true;
	return false;
}

/* Every address noted so far named at once, the first time a stack is read. */
static void name_all_once(struct wsp_syms *s)
{
	if (s->named_all)
		return;
	char label[PATH_MAX + 32];
	snprintf(label, sizeof label, "naming frames of %s", s->trace_path ? s->trace_path : "the trace");
	wsp_syms_name_all(s, label); /* without memory, each is named as it comes */
}

/* The address of a noted node, named (NULL without memory), and how many
 * of its first frames are the allocator's entry points (counted once). */
static struct addr_entry *named_at(struct wsp_syms *s, uint64_t node, uint32_t *lead)
{
	struct addr_entry *e = &s->addrs[s->nodes[node] - 1];
	if (!e->named && syms_symbolize(s, e))
		return NULL;
	if (!e->lead_known) {
		e->lead_known = true;
		while (e->lead < e->count && is_allocator_entry(s->arena[e->first + e->lead].function))
			e->lead++;
	}
	*lead = e->lead;
	return e;
}

/* Does this view keep a native frame of a stack with Python frames?
 * Merged: not the evaluation call that runs a block of Python frames (the
 * native frame just outside the block's outermost: so its nameless cold
 * parts are known too), nor, outside the innermost Python frame, any
 * other frame of the interpreter's module (the call machinery between
 * blocks); C code of other modules stays where it ran. */
struct view_walk {
	bool python_seen, after_python;
	int32_t interp;       /* the interpreter's module, once an evaluation frame showed it */
};

static bool view_keeps(enum wsp_stack_view view, struct view_walk *w, const struct addr_entry *e)
{
	bool python = e->mod == PY_MOD, after = w->after_python;
	w->after_python = python;
	if (python) {
		w->python_seen = true;
		return view != WSP_STACKS_NATIVE;
	}
	if (view == WSP_STACKS_PYTHON) /* of a stack with Python frames */
		return false;
	if (view == WSP_STACKS_NATIVE || !w->python_seen)
		return true;
	if (after) {
		w->interp = e->mod;
		return false;
	}
	return e->mod < 0 || e->mod != w->interp;
}

/* Does the stack at node have Python frames (which the Python view shows alone)? */
static bool has_python(const struct wsp_syms *s, uint64_t node)
{
	for (; node && node < s->nodecap && s->nodes[node]; node = s->parents[node])
		if (s->addrs[s->nodes[node] - 1].mod == PY_MOD)
			return true;
	return false;
}

size_t wsp_syms_stack(struct wsp_syms *s, const wsprof_trace *t, uint64_t node, const struct wsp_frame **frames)
{
	(void)t; /* the stack as noted: the trace may keep none by now */
	name_all_once(s);
	size_t n = 0;
	bool top = true;
	struct view_walk w = { .interp = INT32_MIN };
	enum wsp_stack_view view = s->view;
	if (view == WSP_STACKS_PYTHON && !has_python(s, node))
		view = WSP_STACKS_NATIVE; /* nothing else to show */
	for (; node && node < s->nodecap && s->nodes[node]; node = s->parents[node]) {
		uint32_t lead;
		const struct addr_entry *e = named_at(s, node, &lead);
		if (!e)
			break; /* without memory */
		if (!view_keeps(view, &w, e))
			continue;
		/* The allocator's entry points are left out, from the top only. */
		for (uint32_t i = top ? lead : 0; i < e->count; i++, top = false) {
			if (wsp_grow(&s->out, &s->outcap, n + 1, sizeof *s->out))
				break;
			s->out[n++] = s->arena[e->first + i];
		}
	}
	*frames = s->out;
	return n;
}

size_t wsp_syms_site_at(const struct wsp_syms *s, const struct wsp_frame *frames, size_t n)
{
	size_t python = n;
	if (s->view == WSP_STACKS_DEFAULT || s->view == WSP_STACKS_PYTHON)
		for (size_t i = 0; i < n; i++) {
			if (!frames[i].python)
				continue;
			if (s->view == WSP_STACKS_PYTHON || !frames[i].library)
				return i;
			if (python == n)
				python = i;
		}
	return python < n ? python : 0;
}

const struct wsp_frame *wsp_syms_site(struct wsp_syms *s, const wsprof_trace *t, uint64_t node, uint32_t *id)
{
	(void)t;
	name_all_once(s);
	bool python_first = s->view == WSP_STACKS_DEFAULT || s->view == WSP_STACKS_PYTHON;
	if (python_first) {
		const struct addr_entry *innermost = NULL;
		for (uint64_t at = node; at && at < s->nodecap && s->nodes[at]; at = s->parents[at]) {
			const struct addr_entry *e = &s->addrs[s->nodes[at] - 1];
			if (e->mod != PY_MOD)
				continue;
			if (!innermost)
				innermost = e;
			if (s->view == WSP_STACKS_PYTHON || !s->arena[e->first].library) {
				innermost = e;
				break;
			}
		}
		if (innermost) {
			*id = innermost->first;
			return &s->arena[*id];
		}
	}
	for (; node && node < s->nodecap && s->nodes[node]; node = s->parents[node]) {
		uint32_t lead;
		const struct addr_entry *e = named_at(s, node, &lead);
		if (!e)
			return NULL;
		if (e->mod == PY_MOD && s->view == WSP_STACKS_NATIVE)
			continue;
		if (lead < e->count) {
			*id = e->first + lead;
			return &s->arena[*id];
		}
	}
	return NULL;
}
