/* main.c - the most frequent words of a text; --quiet prints one line. */
#include "project.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char text[] =
	"A trace is a sequence of self-contained frames written at least every flush "
	"interval, so a program killed with a signal leaves a readable trace missing at "
	"most the last interval; the report then says the trace is truncated and covers "
	"what was read. A normal exit and exec write everything, and so do the signals "
	"that end a program by default, while the program leaves one at its default action.";

int main(int argc, char **argv)
{
	size_t n, distinct;
	char **words = split_words(text, &n);
	struct table *t = table_new();
	for (size_t i = 0; i < n; i++)
		table_add(t, words[i]);
	struct word *list = table_words(t, &distinct);
	order_words(list, distinct);
	if (argc > 1 && strcmp(argv[1], "--quiet") == 0) {
		printf("%zu words, %zu distinct, most often \"%s\"\n", n, distinct, list[0].text);
	} else {
		for (size_t i = 0; i < 5 && i < distinct; i++)
			printf("%3zu %s\n", list[i].count, list[i].text);
	}
	free(list);
	table_free(t);
	for (size_t i = 0; i < n; i++)
		free(words[i]);
	free(words);
	return 0;
}
