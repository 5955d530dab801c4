/* order.c - words by count, most frequent first, ties alphabetical. */
#include "project.h"

#include <stdlib.h>
#include <string.h>

static int by_count(const void *a, const void *b)
{
	const struct word *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->text, y->text);
}

void order_words(struct word *w, size_t n)
{
	qsort(w, n, sizeof *w, by_count);
}
