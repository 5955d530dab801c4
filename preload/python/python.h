/*
 * python.h - Python stacks, recorded from inside the interpreter's own
 * process (python.c), merged into the native stacks of events.
 */
#ifndef WSP_PYTHON_H
#define WSP_PYTHON_H

#include "hooks.h" /* the layer below (and wsp_pool_alloc) */

#include <link.h>

/* A module was loaded (modules.c, under the module lock): if it is a
 * CPython of a known layout, Python stacks are recorded from now on, and
 * a PYTHON record says so (or says why not). */
void wsp_python_module(const struct dl_phdr_info *info, const char *path);

/* The calling thread's Python frames merged into its native stack
 * ips[0..depth) (innermost first, just unwound by wsp_stack_capture):
 * each Python frame, as a key for wsp_stack_intern (WSPROF_PYFRAME_IP),
 * just inside the native evaluation frame that runs it. New code objects
 * are recorded first (PY_CODE records), so call before wsp_event_begin.
 * @return the merged depth, with *merged the frames (the thread's own
 * memory, valid until its next event), or 0: no Python frames (none
 * running, or the walk gave up); ips stands as it is. *known: the merged
 * stack's id when the thread has interned it before (*merged is then not
 * made), else 0: intern it, then wsp_python_remember. */
int wsp_python_stack(struct wsp_thread *t, const uintptr_t *ips, int depth, const uintptr_t **merged,
		     uint32_t *known);
void wsp_python_remember(struct wsp_thread *t, uint32_t id);

/* A forked child's trace defines its code objects and stacks again. */
void wsp_python_reset_after_fork(void);

#endif
