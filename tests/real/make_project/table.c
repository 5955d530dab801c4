/* table.c - an open-addressing table of word counts, doubled when half full. */
#include "project.h"

#include <stdlib.h>
#include <string.h>

struct table {
	struct word *slots;
	size_t cap, used;
};

static size_t hash(const char *s)
{
	size_t h = 5381;
	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static struct word *slot_of(struct word *slots, size_t cap, const char *word)
{
	size_t i = hash(word) & (cap - 1);
	while (slots[i].text && strcmp(slots[i].text, word) != 0)
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

struct table *table_new(void)
{
	struct table *t = malloc(sizeof *t);
	t->cap = 8;
	t->used = 0;
	t->slots = calloc(t->cap, sizeof *t->slots);
	return t;
}

void table_add(struct table *t, const char *word)
{
	if (2 * (t->used + 1) > t->cap) {
		struct word *grown = calloc(2 * t->cap, sizeof *grown);
		for (size_t i = 0; i < t->cap; i++)
			if (t->slots[i].text)
				*slot_of(grown, 2 * t->cap, t->slots[i].text) = t->slots[i];
		free(t->slots);
		t->slots = grown;
		t->cap *= 2;
	}
	struct word *w = slot_of(t->slots, t->cap, word);
	if (!w->text) {
		w->text = strdup(word);
		t->used++;
	}
	w->count++;
}

struct word *table_words(const struct table *t, size_t *n)
{
	struct word *out = malloc((t->used ? t->used : 1) * sizeof *out);
	*n = 0;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].text)
			out[(*n)++] = t->slots[i];
	return out;
}

void table_free(struct table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].text);
	free(t->slots);
	free(t);
}
