/*
 * timeindex.h - any moment of a trace without replaying it from its start.
 *
 * The index of a trace is built in one pass the first time a moment is
 * asked for, and kept beside it (TRACE.index, or in the user's cache
 * directory where the trace's folder is read-only; WSPROF_INDEX=0 keeps
 * none and builds it in memory for the one report): the books of a state
 * model (checkpoint.h) at checkpoints along the trace, where the reader
 * can start again for each (src/resume.h), the tables a reader started
 * there lacks (the stack tree, Python's code objects, the modules loaded),
 * and the whole trace's figures (its peaks, failures and snapshots: where
 * the moments are). A moment is then the nearest checkpoint at or before
 * it, restored, and the events from there to the moment: the same model a
 * replay from the start would give (tests/unit/test_timeindex.c checks it
 * at many moments).
 *
 * The index names the trace it belongs to (its size, modification time
 * and the hashes of its first and last 64 KiB): a trace rebuilt, grown or
 * replaced is indexed again, as is an index that is damaged or of another
 * version. doc/trace-format.md, "The index beside a trace", has its layout.
 */
#ifndef WSP_TIMEINDEX_H
#define WSP_TIMEINDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer.h"

struct wsp_tindex;

/* What opening found. */
struct wsp_tindex_info {
	bool built;          /* built now (missing, stale, damaged) rather than read */
	const char *path;    /* where it is kept; NULL: in memory only */
	uint64_t bytes;      /* its size */
	size_t checkpoints;
};

/* The index of the trace at path, read or built. Prints a one-line error
 * and returns 1 when the trace cannot be read at all; warns as a load
 * does when it is truncated or damaged. @return 0 or 1. */
int wsp_tindex_open(const char *path, struct wsp_tindex **out);
void wsp_tindex_close(struct wsp_tindex *ix);
void wsp_tindex_info(const struct wsp_tindex *ix, struct wsp_tindex_info *info);

/* The whole trace as a loaded one whose model is a state model at the end
 * (finished, with its failures): the figures that say where the moments
 * are. Its trace is a reader with the header only; no symbols. Owned by
 * ix; read by wsp_tindex_open only. */
const struct wsp_loaded *wsp_tindex_whole(const struct wsp_tindex *ix);

/* The trace replayed up to a moment - after the event numbered stop_seq,
 * or before the first event later than stop_time_ns (UINT64_MAX: no
 * stop) - from the checkpoint nearest before it, into out (a state model,
 * its reader, and symbols when `symbols`: the stacks of every block live
 * then are noted). The model is finished. @return 0, or 1 after a
 * one-line error. */
int wsp_tindex_replay(struct wsp_tindex *ix, uint64_t stop_seq, uint64_t stop_time_ns, bool symbols,
		      struct wsp_loaded *out);

/* The same, naming stacks with syms, which every stack of the trace
 * was noted in (a load's with symbols): out->syms is syms, borrowed (set
 * it to NULL before wsp_loaded_free). */
int wsp_tindex_replay_named(struct wsp_tindex *ix, uint64_t stop_seq, uint64_t stop_time_ns, struct wsp_syms *syms,
			    struct wsp_loaded *out);

/* The index kept for the trace at path, if there is one and it is the
 * trace's; nothing is built or printed, and the whole trace's figures are
 * not read (wsp_tindex_whole's model is NULL: whoever finds an index this
 * way has loaded the trace). @return 0, -ENOENT (none, stale or damaged)
 * or another -errno. */
int wsp_tindex_find(const char *path, struct wsp_tindex **out);

/* wsp_load_following, and the trace's index in *ix: the one kept, or one
 * built by following this load (this load's model checkpointed: no pass
 * of its own). @return 0, or 1 after a one-line error. */
int wsp_load_indexed(const char *path, const struct wsp_model_options *opt, bool symbols, const struct wsp_follower *f,
		     size_t nf, struct wsp_loaded *out, struct wsp_tindex **ix);

/* The index built by a follower of a load (the full report's one pass):
 * l is the load followed, whose model (without callers) is checkpointed;
 * its address must be the one wsp_load_following fills. NULL when out of
 * memory or the trace cannot be read. */
struct wsp_tindex_build;
struct wsp_tindex_build *wsp_tindex_build_new(const char *path, const struct wsp_loaded *l);
struct wsp_follower wsp_tindex_build_follower(struct wsp_tindex_build *b);
/* After the load: the index (kept where it is kept), and b freed.
 * @return 0, or 1 after a one-line error. */
int wsp_tindex_build_end(struct wsp_tindex_build *b, struct wsp_tindex **out);
/* b freed without an index (the load failed). */
void wsp_tindex_build_free(struct wsp_tindex_build *b);

/* Tests: checkpoints at least every `events` events (0: the default),
 * for indexes built from now on, so that small traces get many. */
void wsp_tindex_set_spacing(uint64_t events);

#endif
