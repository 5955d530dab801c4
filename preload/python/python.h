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

/* A forked child's trace defines its code objects and stacks again. */
void wsp_python_reset_after_fork(void);

#endif
