/*
 * kept.h - where a file kept for a trace goes (the names of its frames,
 * TRACE.symbols; the index of its moments, TRACE.index): beside the trace
 * when its folder can be written, else in the user's cache directory
 * ($XDG_CACHE_HOME/wsprof/, else ~/.cache/wsprof/, made if missing), named
 * after the trace's file name and the FNV-1a hash of its real path.
 */
#ifndef WSP_KEPT_H
#define WSP_KEPT_H

/* TRACE.SUFFIX or CACHE/NAME.HASH.SUFFIX, malloc'd; NULL when there is no
 * such place (the trace's real path unknown, no cache directory) or no
 * memory. */
char *wsp_kept_path(const char *trace_path, const char *suffix);

#endif
