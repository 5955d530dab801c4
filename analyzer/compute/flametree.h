/*
 * flametree.h - the stack tree behind flame graphs: stacks of frame labels
 * with a value each (bytes or a count) merged into one tree. Its writers
 * are folded text (text.h: wsp_flame_write_folded) and the pictures
 * (draw/flame.h).
 *
 * Guarantees: stacks sharing outer frames share their boxes, each box's
 * value is the sum of the stacks through it; what the writers make of it
 * depends only on what was added, never on the order it was added in.
 * Memory is linear in the number of distinct frames of the tree (nodes)
 * and distinct labels. The model decides what a value means; this module
 * only sums.
 */
#ifndef WSP_FLAMETREE_H
#define WSP_FLAMETREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A tree of frames with summed values. */
struct wsp_flame;

/* @return an empty tree, or NULL when out of memory. */
struct wsp_flame *wsp_flame_new(void);
void wsp_flame_free(struct wsp_flame *f);

/* Add one stack: frames[0] outermost ... frames[n-1] innermost (the
 * allocation's caller), with its value; a value of 0 is ignored. Labels are
 * copied as they are; each writer replaces what its format cannot carry.
 * @return 0, -EINVAL for an empty stack or a NULL label, or -ENOMEM (the
 * values are then unchanged). */
int wsp_flame_add(struct wsp_flame *f, const char *const *frames, size_t n, uint64_t value);

/* The sum of the values added. */
uint64_t wsp_flame_total(const struct wsp_flame *f);

/* A differential flame graph: the same stacks of a base run, with their
 * values, added after or before the drawn ones. Boxes stay as wide as the
 * drawn values (a stack only in the base has no width); the writers then
 * colour each box by its change (red grew, blue shrank) and name both
 * figures in its tooltip and in the page's list. Same rules as
 * wsp_flame_add. */
int wsp_flame_add_base(struct wsp_flame *f, const char *const *frames, size_t n, uint64_t value);
/* The sum of the base values added. */
uint64_t wsp_flame_base_total(const struct wsp_flame *f);

/* ---- The flame graph of a trace ------------------------------------- */

/* What a box's width shows, from the model's per-stack figures. */
enum wsp_flame_metric {
	WSP_FLAME_PEAK,        /* bytes live when the kind peaked */
	WSP_FLAME_LEAKED,      /* bytes still live at the end */
	WSP_FLAME_ALLOCATIONS, /* allocations made */
	WSP_FLAME_BYTES,       /* bytes allocated in all */
};

struct wsp_loaded;
/* Add one kind's call stacks of a loaded trace to f, each frame a box
 * (a native frame its function, a Python frame its line), valued by the
 * metric: as drawn values, or as the base of a differential graph.
 * @return 0 or -ENOMEM. */
int wsp_flame_add_trace(struct wsp_flame *f, const struct wsp_loaded *l, unsigned kind, enum wsp_flame_metric metric,
			bool base);

/* The tree of one kind's stacks of a loaded trace. @return 0 or -ENOMEM (*out NULL). */
int wsp_flame_of(const struct wsp_loaded *l, unsigned kind, enum wsp_flame_metric metric, struct wsp_flame **out);
/* The tree of every process of a job (job.h), summed; *estimated when a
 * sampled trace's figures went in. @return 0 (free *out, and job with
 * wsp_job_free), or 1 after a one-line error. */
struct wsp_job;
int wsp_flame_of_job(char *const *paths, size_t n, unsigned kind, enum wsp_flame_metric metric, struct wsp_flame **out,
		     struct wsp_job *job, bool *estimated);

#endif
