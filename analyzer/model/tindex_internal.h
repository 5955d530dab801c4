/*
 * tindex_internal.h - what the two halves of the index share: its layout
 * (doc/trace-format.md, "The index beside a trace"), the trace's identity,
 * and the checkpoints' directory entries. tindex_build.c writes an index,
 * timeindex.c reads it and replays from it. Not for views: timeindex.h.
 */
#ifndef WSP_TINDEX_INTERNAL_H
#define WSP_TINDEX_INTERNAL_H

#include "timeindex.h"

#include "checkpoint.h"
#include "format.h"

#include <stdint.h>

#define INDEX_MAGIC "WSPINDEX"
/* Goes up with any change of the layout, the checkpoint's included. */
#define INDEX_VERSION 2
#define INDEX_HEADER_SIZE 64
/* The bytes at each end of the trace hashed into its identity. */
#define INDEX_IDENT_SPAN ((size_t)64 << 10)
#define INDEX_STATUS_FIELDS 12

/* Which trace an index is of. */
struct tindex_ident {
	uint64_t size, mtime_ns, head, tail;
};

struct tindex_checkpoint {
	uint64_t last_seq;   /* the last event applied (0 with none) */
	uint64_t resume_seq; /* the first event not applied */
	uint64_t max_time;   /* the latest time of the events applied */
	uint64_t events;     /* events applied */
	uint64_t offset;     /* where a reader starts again for it */
	uint32_t chunk;
	uint64_t blob, blob_size;
};

uint64_t tindex_hash(const uint8_t *p, size_t n, uint64_t h);
#define TINDEX_HASH_SEED 0xcbf29ce484222325ull
/* @return 0 or -errno. */
int tindex_ident_of(const char *path, struct tindex_ident *id);
/* Where the index of trace_path is kept (malloc'd), NULL when nowhere. */
char *tindex_path(const char *trace_path);
/* The bytes at path, written whole or not at all. @return 0 or -errno. */
int tindex_write(const char *path, const uint8_t *p, size_t n);

static inline void tindex_put_le64(uint8_t *p, uint64_t v)
{
	wsp_put_le32(p, (uint32_t)v);
	wsp_put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint64_t tindex_get_le64(const uint8_t *p)
{
	return wsp_get_le32(p) | (uint64_t)wsp_get_le32(p + 4) << 32;
}

/* The reader's status as the directory keeps it. */
void tindex_status_fields(const wsprof_trace_status *s, uint64_t v[INDEX_STATUS_FIELDS]);
void tindex_status_from(wsprof_trace_status *s, const uint64_t v[INDEX_STATUS_FIELDS]);

/* Build the index of the trace at path (id its identity) in one pass of
 * its own, into *out. Prints a one-line error and returns 1 when nothing
 * can be read. */
int tindex_build(const char *path, const struct tindex_ident *id, struct wsp_bytes *out);
/* The index whose bytes were just built (taken: *file is emptied), as
 * wsp_tindex_open would give it, and kept. @return 0 or 1 after a
 * one-line error. */
int tindex_adopt(const char *path, const struct tindex_ident *id, struct wsp_bytes *file, struct wsp_tindex **out);
/* Checkpoints at least this many events apart (wsp_tindex_set_spacing). */
extern uint64_t tindex_spacing_min;

#endif
