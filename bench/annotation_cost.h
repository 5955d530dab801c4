/*
 * annotation_cost.h - the timed loops of annotation_cost, shared by its two
 * translation units: annotation_cost.c (the header's calls as a program
 * gets them) and annotation_cost_disabled.c (the same calls compiled with
 * WSPROF_DISABLE). Each runs its body n times on p.
 */
#ifndef ANNOTATION_COST_H
#define ANNOTATION_COST_H

#include <stdint.h>

/* Ends every loop body: the compiler must keep the loop, pass p in a
 * register, and reload any memory the body reads (such as the header's
 * table pointer) on every iteration. */
#define BENCH_BARRIER(p) __asm__ volatile("" : : "r"(p) : "memory")

void bench_acquire_disabled(const void *p, uint64_t n);
void bench_touch_disabled(const void *p, uint64_t n);

#endif
