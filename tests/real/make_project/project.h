/* project.h - what the files of tests/real's small C project share. */
#ifndef PROJECT_H
#define PROJECT_H

#include <stddef.h>

struct word {
	char *text;
	size_t count;
};

/* words.c: the words of text, each a malloc'd string; *n gets how many. */
char **split_words(const char *text, size_t *n);
/* table.c: words counted in a table that grows as it fills. */
struct table;
struct table *table_new(void);
void table_add(struct table *t, const char *word);
struct word *table_words(const struct table *t, size_t *n);
void table_free(struct table *t);
/* order.c: most frequent first, then alphabetical. */
void order_words(struct word *w, size_t n);

#endif
