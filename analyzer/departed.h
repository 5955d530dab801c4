/*
 * departed.h - blocks freed a short while ago, kept so that a window's
 * accesses go to the blocks that were live when they happened.
 *
 * A window of access samples is recorded when it ends, after the program
 * may have freed blocks it wrote during it (a temporary, a device buffer
 * passed to a kernel launch). The model keeps each freed block here, with
 * the time it ended, for as long as a window still open may have seen it,
 * and asks for the ones whose life overlapped a window: by departure (all
 * of them, oldest first), or by address within one region.
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

struct wsp_departed *wsp_departed_new(void);
void wsp_departed_free(struct wsp_departed *d);
/* A block ends at end_ns. @return 0 or -ENOMEM. */
int wsp_departed_add(struct wsp_departed *d, const struct wsp_block *b, uint64_t end_ns);
/* Let go of the blocks that ended before `before`, oldest first, calling
 * fn (if not NULL) on each as it goes. */
void wsp_departed_prune(struct wsp_departed *d, uint64_t before,
			void (*fn)(struct wsp_departed_block *, void *), void *arg);
/* The blocks kept, oldest first. @return their count. */
size_t wsp_departed_all(const struct wsp_departed *d, struct wsp_departed_block **v);
/* Call fn, in order of address, for each block kept that was live at some
 * moment of [start_ns, end_ns] (allocated by its end, freed after its
 * start) and overlaps [addr, addr + len), with the overlap [lo, hi).
 * @return 0 or -ENOMEM (its address index is built on first use). */
int wsp_departed_each_overlap(struct wsp_departed *d, uint64_t start_ns, uint64_t end_ns, uint64_t addr,
			      uint64_t len, void (*fn)(struct wsp_departed_block *, uint64_t lo, uint64_t hi, void *),
			      void *arg);

#endif
