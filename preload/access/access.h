/*
 * access.h - access sampling: written pages and memory given back (sampler.c), DAMON (damon.c).
 * wsp.h has what every file shares and the rule every hook follows.
 */
#ifndef WSP_ACCESS_H
#define WSP_ACCESS_H

#include "wsp.h"
#include "core.h" /* the layer below */

/* ---- sampler.c ------------------------------------------------------- */

/* Decide which access sources this process can have (before the header). */
void wsp_sampler_probe(void);
/* Recording ends (exit, exec, no trace file): stop what runs outside the
 * process on its behalf (the kdamond). */
void wsp_sampler_finish(void);
/* Forget the ranges registered for an earlier trace (a new attach's). */
void wsp_sampler_reset(void);
/* Start the sampling thread (after the header). */
void wsp_sampler_start(void);
/* Wait (at most timeout_ms) until the sampler thread, told to stop by
 * recording's end, is gone: its stack is reused by the next start. */
void wsp_sampler_wait_gone(unsigned timeout_ms);
/* In a forked child, before start: the parent's registrations are not the child's. */
void wsp_sampler_reset_after_fork(void);
/* Memory about to be given back (a heap block, an unmapped range): its
 * pages written since the last window are recorded as accessed by it
 * (ACCESS of written pages, window 0), within the per-window budget.
 * Call with the guard held, before the release is recorded. */
void wsp_sampler_release(uint64_t addr, uint64_t len);
/* The descriptor it reads with; -1 while released memory is not read (no
 * written-page sampling, a budget of 0, recording over): hooks test it
 * before they do any work for a release. */
extern _Atomic int wsp_release_fd;
/* Heap blocks smaller than this are left to the window's scan: they lie in
 * memory the allocator keeps. */
#define WSP_RELEASE_MIN (64u << 10)

/* ---- damon.c -------------------------------------------------------- */

/* Start a kdamond of wsprof's own watching this process. @return NULL, or
 * why not (a constant or text in why). */
const char *wsp_damon_open(char *why, size_t cap);
bool wsp_damon_active(void);
/* The regions accessed in the kdamond's next aggregation window, merged,
 * at most cap; blocks until it ends. @return how many or -errno. */
long wsp_damon_sample(struct wsp_range *out, size_t cap);
/* Stop it (only the process that started it does); idempotent. */
void wsp_damon_close(void);
void wsp_damon_forget_after_fork(void);

#endif
