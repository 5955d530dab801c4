/*
 * flame_internal.h - the stack tree's layout (flametree.c), shared with
 * its writers: folded text (text/flamefold.c), the SVG and the page
 * (draw/flame.c). Nothing else includes it.
 *
 * Labels are interned once (a string arena and a hash table), so a node is
 * 24 bytes: its two sums, its parent and its label. The writers build an
 * index of each node's children in label order (wsp_flame_index_build)
 * with two counting sorts, so output never depends on the order stacks
 * came in.
 */
#ifndef WSP_FLAME_INTERNAL_H
#define WSP_FLAME_INTERNAL_H

#include "flametree.h"

#include <errno.h>
#include <stdio.h>

#define ROOT 0 /* nodes[0], drawn as "all"; nobody's child, so 0 marks an empty slot */

struct label {
	size_t text;   /* offset in the arena */
	uint64_t hash; /* also picks the label's colour */
};

struct node {
	uint64_t total; /* stacks through this frame */
	uint64_t self;  /* stacks that end here */
	uint64_t base;  /* a differential graph: the base run's stacks through it */
	uint32_t parent;
	uint32_t label;
};

struct wsp_flame {
	struct node *nodes;
	size_t nnodes, nodes_cap;
	uint32_t *node_slots;  /* open addressing on (parent, label): node + 1 */
	size_t node_slots_cap;
	struct label *labels;
	size_t nlabels, labels_cap;
	uint32_t *label_slots; /* open addressing on the text: label index + 1 */
	size_t label_slots_cap;
	char *text;
	size_t text_len, text_cap;
	bool diff;             /* base values were added: growth and shrinkage in colour */
};

struct tree_index {
	uint32_t *kids;   /* every node but the root, by parent, each group in label order */
	uint32_t *first;  /* the children of node i: kids[first[i] .. first[i + 1]) */
	uint32_t *rank;   /* per label: its place in label order */
	uint32_t *folded; /* per label: the same, shared by labels of equal folded text */
};

/* @return 0 or -ENOMEM (ix then holds nothing). */
int wsp_flame_index_build(const struct wsp_flame *f, struct tree_index *ix);
void wsp_flame_index_free(struct tree_index *ix);
/* A node's label. */
const char *wsp_flame_label_text(const struct wsp_flame *f, uint32_t node);
/* FNV-1a: stable across runs and machines, so colours are too. */
uint64_t wsp_flame_hash_text(const char *s);
/* What folded text makes of a label byte: ';' separates frames there and a
 * line ends the stack. Siblings are ordered on this. */
int wsp_flame_fold(unsigned char c);

/* A writer's end: 0, or -EIO when out could not be written. */
static inline int wsp_flame_finish(FILE *out)
{
	return fflush(out) || ferror(out) ? -EIO : 0;
}

#endif
