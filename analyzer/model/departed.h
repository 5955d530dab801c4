/*
 * departed.h - blocks freed a short while ago, kept so that a window's
 * accesses go to the blocks that were live when they happened.
 *
 * A window of access samples is recorded when it ends, after the program
 * may have freed blocks it wrote during it (a temporary, a device buffer
 * passed to a kernel launch). The model keeps each freed block here, with
 * the time it ended, for as long as a window still open may have seen it,
 * and asks for the ones whose life overlapped a window: all of them, or
 * by address within one region.
 *
 * One block is kept per address: a block freed where another was freed
 * before (an allocator reusing its memory, a temporary after a temporary)
 * takes its place, and the one before is let go. So memory stays bounded
 * by the addresses a program frees within a window or two, not by how
 * often it frees them; of the blocks freed at one address during a
 * window, the last takes the window's accesses.
 */
#ifndef WSP_DEPARTED_H
#define WSP_DEPARTED_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct wsp_departed_block {
	struct wsp_block b;
	uint64_t end_ns;            /* when it was freed */
};

struct wsp_departed;

/* let_go is called for each block as it is let go (replaced or pruned). */
struct wsp_departed *wsp_departed_new(void (*let_go)(struct wsp_departed_block *, void *), void *arg);
/* Free, without letting go of the blocks left. */
void wsp_departed_free(struct wsp_departed *d);
/* A block ends at end_ns. @return 0 or -ENOMEM (it is then let go at once). */
int wsp_departed_add(struct wsp_departed *d, const struct wsp_block *b, uint64_t end_ns);
/* Let go of the blocks that ended before `before`. Cheap to call often:
 * the table is swept only when `before` moved on by `every` since the
 * last sweep. */
void wsp_departed_prune(struct wsp_departed *d, uint64_t before, uint64_t every);
/* Call fn for each block kept (in no particular order). */
void wsp_departed_each(struct wsp_departed *d, void (*fn)(struct wsp_departed_block *, void *), void *arg);
/* Call fn, in order of address, for each block kept that was live at some
 * moment of [start_ns, end_ns] (allocated by its end, freed after its
 * start) and overlaps [addr, addr + len), with the overlap [lo, hi).
 * @return 0 or -ENOMEM (its address index is built on first use). */
int wsp_departed_each_overlap(struct wsp_departed *d, uint64_t start_ns, uint64_t end_ns, uint64_t addr,
			      uint64_t len, void (*fn)(struct wsp_departed_block *, uint64_t lo, uint64_t hi, void *),
			      void *arg);

#endif
