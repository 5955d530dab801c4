/*
 * grow.h - the growable arrays of the reader and the analyzer.
 *
 * wsp_grow(&array, &capacity, need, sizeof *array) makes room for `need`
 * items, doubling. @return 0 or -ENOMEM (the array is left as it was).
 */
#ifndef WSP_GROW_H
#define WSP_GROW_H

#include <errno.h>
#include <stdlib.h>

static inline int wsp_grow(void *array, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 16;
	while (n < need)
		n *= 2;
	void *p = realloc(*(void **)array, n * elem);
	if (!p)
		return -ENOMEM;
	*(void **)array = p;
	*cap = n;
	return 0;
}

#endif
