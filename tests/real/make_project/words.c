/* words.c - split a text into words (letters only, lowered). */
#include "project.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

char **split_words(const char *text, size_t *n)
{
	size_t cap = 16;
	char **out = malloc(cap * sizeof *out);
	*n = 0;
	for (const char *p = text; *p;) {
		while (*p && !isalpha((unsigned char)*p))
			p++;
		const char *start = p;
		while (isalpha((unsigned char)*p))
			p++;
		if (p == start)
			continue;
		if (*n == cap)
			out = realloc(out, (cap *= 2) * sizeof *out);
		char *w = malloc((size_t)(p - start) + 1);
		for (size_t i = 0; i < (size_t)(p - start); i++)
			w[i] = (char)tolower((unsigned char)start[i]);
		w[p - start] = 0;
		out[(*n)++] = w;
	}
	return out;
}
