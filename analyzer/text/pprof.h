/*
 * pprof.h - `wsprof export --pprof`: one kind's memory as a gzipped
 * profile.proto, the format of Go's pprof, gperftools, jemalloc's jeprof
 * and Grafana Pyroscope (pprof.c says what it holds).
 *
 * The command (cmd/export.c) reads the trace and replays it up to the
 * moment, and opens the output only once that worked; write encodes
 * the profile and compresses it into the file.
 */
#ifndef WSP_PPROF_H
#define WSP_PPROF_H

#include "analyzer.h"
#include "state.h"

#include <stdio.h>

/* What a profile is made of: one kind of a trace, in use at a moment. */
struct wsp_pprof {
	struct wsp_loaded whole;  /* the trace to its end: per-stack figures and names */
	struct wsp_state state;   /* replayed up to the moment */
	unsigned kind;
};

/* @return 0, or -ENOMEM, or -errno of writing out. */
int wsp_pprof_write(struct wsp_pprof *p, FILE *out);

#endif
