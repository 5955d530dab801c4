/*
 * checkpoint.h - a state model's books written out and read back, so that
 * a replay can start in the middle of a trace (timeindex.h).
 *
 * A state model is one made with totals_only and without per_stack or
 * callers; the books of any model without callers are saved as a state
 * model's: the live set, what the program said about each block, the
 * per-kind figures, the blocks a realloc holds in flight, the threads'
 * allocation counts (a sampled block's weight is drawn from them), and
 * the lists the heading of a report reads (phases, snapshots, recording
 * switches, RSS samples, children, the exec). A model restored from a
 * checkpoint and fed the events after it holds exactly what the model
 * that wrote it holds after the same events; what a state model does not
 * keep anyway (series, working-set windows) starts empty.
 *
 * The bytes are varints (src/format.h), blocks in key order with their
 * keys as deltas; a reader checks every length and count against what is
 * left, so damaged bytes give an error, never a bad model.
 */
#ifndef WSP_CHECKPOINT_H
#define WSP_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* Bytes that grow; err sticks at the first failure (-ENOMEM). */
struct wsp_bytes {
	uint8_t *p;
	size_t n, cap;
	int err;
};
void wsp_bytes_varint(struct wsp_bytes *b, uint64_t v);
void wsp_bytes_put(struct wsp_bytes *b, const void *s, size_t n);
/* A length, then the bytes. */
void wsp_bytes_string(struct wsp_bytes *b, const char *s);
void wsp_bytes_free(struct wsp_bytes *b);
/* The reading side: a count of items of at least min_bytes each, which
 * sets c->bad (and gives 0) when more than the bytes left could hold. */
struct wsp_cursor;
size_t wsp_cursor_count(struct wsp_cursor *c, size_t min_bytes);

/* Can m's books be saved: any model but one with a --caller filter,
 * whose blocks are not all counted. */
bool wsp_model_savable(const struct wsp_model *m);
/* Append m's books to out as a state model's (a model that keeps more -
 * per-stack figures, access matched to blocks - gives what a state model
 * of the same events holds; a block's access figures, which no view of a
 * moment shows, are not kept: a restored model has them from the events
 * after it), with its failed allocations when `failures`
 * (a whole trace's: where --at oom looks). @return 0, -EINVAL (not
 * savable) or -ENOMEM. */
int wsp_model_save(const struct wsp_model *m, bool failures, struct wsp_bytes *out);
/* A state model with opt (totals_only is implied) and the books of
 * [p, p + n). @return NULL with *err -EINVAL (damaged) or -ENOMEM. */
struct wsp_model *wsp_model_restore(const struct wsp_model_options *opt, const uint8_t *p, size_t n, int *err);
/* The live heap blocks and ranges of a state model, for sizing. */
size_t wsp_model_live_count(const struct wsp_model *m);

#endif
