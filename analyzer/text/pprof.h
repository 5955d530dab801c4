/*
 * pprof.h - `wsprof export --pprof`: one kind's memory as a gzipped
 * profile.proto, the format of Go's pprof, gperftools, jemalloc's jeprof
 * and Grafana Pyroscope (pprof.c says what it holds).
 *
 * In two steps, so that export.c opens the output only once the trace
 * could be read: open reads the trace and replays it up to the moment,
 * write encodes the profile and compresses it into a file.
 */
#ifndef WSP_PPROF_H
#define WSP_PPROF_H

#include <stdio.h>

struct wsp_pprof;

/* The profile of kind in the trace at path, in use at the moment `at`
 * ("peak": when the kind's live bytes peaked, "end", SECONDS since the
 * program started; oom and snapshot labels as `report state` takes them).
 * @return 0 with *out set, or the exit status after a one-line error (2:
 * a moment or kind the trace does not have, 1: the trace cannot be read). */
int wsp_pprof_open(const char *path, unsigned kind, const char *at, struct wsp_pprof **out);
/* @return 0, or -ENOMEM, or -errno of writing out. */
int wsp_pprof_write(struct wsp_pprof *p, FILE *out);
void wsp_pprof_free(struct wsp_pprof *p);

#endif
