/*
 * wsprof.h - the client header of wsprof, the working-set profiler.
 *
 * Programs include this header to tell wsprof what only they know about
 * their memory (names, reference counts, valid/invalid copies, pools,
 * phases). It is header-only and costs nothing when the program runs
 * without wsprof.
 *
 * This version carries the version macros only; the annotation calls
 * (wsprof_name, wsprof_acquire, ...) are specified in the annotation
 * issue and arrive with format minor version 1. Tracing needs no header at
 * all: `wsprof record -- ./app` works on unmodified programs.
 */
#ifndef WSPROF_H
#define WSPROF_H

#define WSPROF_VERSION_MAJOR 0
#define WSPROF_VERSION_MINOR 1
#define WSPROF_VERSION_PATCH 0
#define WSPROF_VERSION_NUMBER (WSPROF_VERSION_MAJOR * 10000 + WSPROF_VERSION_MINOR * 100 + WSPROF_VERSION_PATCH)

#endif
