/*
 * flamefold.c - a flame graph's stack tree (compute/flametree.c) as the
 * folded text flamegraph.pl and speedscope read: one line per distinct
 * stack, outermost frame first (flame.h: wsp_flame_write_folded).
 */
#include "flame_internal.h"
#include "text.h"

#include "grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One depth of the walk: the children of the group above, the group of
 * siblings (equal folded labels) being written, and the next group's start. */
struct fold_level {
	const uint32_t *kids;
	uint32_t *owned; /* kids merged from several siblings */
	size_t n, at, end;
};

static int u64_cmp(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
	return a < b ? -1 : a > b;
}

/* The children of kids[at .. end), in label order. One node (the usual
 * case) lends its own; several are merged by (rank, node) sort keys. */
static int fold_children(const struct wsp_flame *f, const struct tree_index *ix, const struct fold_level *up,
			 struct fold_level *down)
{
	*down = (struct fold_level){ 0 };
	if (up->end - up->at == 1) {
		uint32_t node = up->kids[up->at];
		down->kids = ix->kids + ix->first[node];
		down->n = ix->first[node + 1] - ix->first[node];
		return 0;
	}
	size_t n = 0;
	for (size_t i = up->at; i < up->end; i++)
		n += ix->first[up->kids[i] + 1] - ix->first[up->kids[i]];
	uint64_t *keys = malloc((n + 1) * sizeof *keys);
	down->owned = malloc((n + 1) * sizeof *down->owned);
	if (!keys || !down->owned) {
		free(keys);
		free(down->owned);
		return -ENOMEM;
	}
	for (size_t i = up->at, k = 0; i < up->end; i++)
		for (uint32_t j = ix->first[up->kids[i]]; j < ix->first[up->kids[i] + 1]; j++)
			keys[k++] = (uint64_t)ix->rank[f->nodes[ix->kids[j]].label] << 32 | ix->kids[j];
	qsort(keys, n, sizeof *keys, u64_cmp);
	for (size_t k = 0; k < n; k++)
		down->owned[k] = (uint32_t)keys[k];
	free(keys);
	down->kids = down->owned;
	down->n = n;
	return 0;
}

static void fold_write_line(const struct wsp_flame *f, const struct fold_level *levels, size_t depth,
			    uint64_t value, FILE *out)
{
	for (size_t d = 0; d < depth; d++) {
		if (d)
			putc(';', out);
		for (const char *s = wsp_flame_label_text(f, levels[d].kids[levels[d].at]); *s; s++)
			putc(wsp_flame_fold((unsigned char)*s), out);
	}
	fprintf(out, " %llu\n", (unsigned long long)value);
}

static int fold_walk(const struct wsp_flame *f, const struct tree_index *ix, FILE *out)
{
	struct fold_level *levels = NULL;
	size_t cap = 0, depth = 1;
	int err = wsp_grow(&levels, &cap, 1, sizeof *levels);
	if (err)
		return err;
	levels[0] = (struct fold_level){ .kids = ix->kids + ix->first[ROOT], .n = ix->first[ROOT + 1] - ix->first[ROOT] };
	while (depth && !err) {
		struct fold_level *l = &levels[depth - 1];
		if (l->end == l->n) {
			free(l->owned);
			depth--;
			continue;
		}
		l->at = l->end;
		uint32_t group = ix->folded[f->nodes[l->kids[l->at]].label];
		uint64_t self = 0;
		while (l->end < l->n && ix->folded[f->nodes[l->kids[l->end]].label] == group)
			self += f->nodes[l->kids[l->end++]].self;
		if (self)
			fold_write_line(f, levels, depth, self, out);
		err = wsp_grow(&levels, &cap, depth + 1, sizeof *levels);
		if (!err)
			err = fold_children(f, ix, &levels[depth - 1], &levels[depth]);
		if (!err)
			depth++;
	}
	while (depth)
		free(levels[--depth].owned);
	free(levels);
	return err;
}

int wsp_flame_write_folded(const struct wsp_flame *f, FILE *out)
{
	struct tree_index ix;
	int err = wsp_flame_index_build(f, &ix);
	if (err)
		return err;
	err = fold_walk(f, &ix, out);
	wsp_flame_index_free(&ix);
	return err ? err : wsp_flame_finish(out);
}
