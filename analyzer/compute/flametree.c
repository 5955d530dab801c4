/*
 * flametree.c - the stack tree behind flame graphs (flametree.h): stacks
 * of frame labels with a value each merged into one tree, and the tree of
 * a loaded trace's call stacks. Its writers are text/flamefold.c (folded
 * text) and draw/flame.c (SVG, a page); flame_internal.h is what they share.
 *
 * Children are found through one hash table keyed by (parent, label)
 * while stacks are added. wsp_flame_add reserves room for a whole stack
 * before changing anything, so running out of memory leaves the sums as
 * they were.
 */
#include "flame_internal.h"

#include "analyzer.h"
#include "grow.h"
#include "job.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a: stable across runs and machines, so colours are too. */
uint64_t wsp_flame_hash_text(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static uint64_t hash_edge(uint32_t parent, uint32_t label)
{
	uint64_t x = (uint64_t)parent << 32 | label;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

struct wsp_flame *wsp_flame_new(void)
{
	struct wsp_flame *f = calloc(1, sizeof *f);
	if (!f || wsp_grow(&f->nodes, &f->nodes_cap, 1, sizeof *f->nodes)) {
		free(f);
		return NULL;
	}
	f->nodes[ROOT] = (struct node){ .label = UINT32_MAX };
	f->nnodes = 1;
	return f;
}

void wsp_flame_free(struct wsp_flame *f)
{
	if (!f)
		return;
	free(f->nodes);
	free(f->node_slots);
	free(f->labels);
	free(f->label_slots);
	free(f->text);
	free(f);
}

uint64_t wsp_flame_total(const struct wsp_flame *f)
{
	return f->nodes[ROOT].total;
}

static size_t node_hash(size_t i, void *ctx)
{
	const struct node *n = &((const struct wsp_flame *)ctx)->nodes[i];
	return (size_t)hash_edge(n->parent, n->label);
}

/* Node slots hold node + 1; the root (node 0) is never in them. */
static int node_slots_fit(struct wsp_flame *f, size_t count)
{
	return wsp_index_fit(&f->node_slots, &f->node_slots_cap, count, 64, 1, f->nnodes, node_hash, NULL, f);
}

static size_t label_hash(size_t i, void *ctx)
{
	return (size_t)((const struct wsp_flame *)ctx)->labels[i].hash;
}

static int label_slots_fit(struct wsp_flame *f, size_t count)
{
	return wsp_index_fit(&f->label_slots, &f->label_slots_cap, count, 64, 0, f->nlabels, label_hash, NULL, f);
}

/* Room for n new labels and nodes, whatever the stack turns out to share. */
static int reserve(struct wsp_flame *f, const char *const *frames, size_t n)
{
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += strlen(frames[i]) + 1;
	if (n >= UINT32_MAX - f->nnodes)
		return -ENOMEM;
	if (wsp_grow(&f->nodes, &f->nodes_cap, f->nnodes + n, sizeof *f->nodes) ||
	    wsp_grow(&f->labels, &f->labels_cap, f->nlabels + n, sizeof *f->labels) ||
	    wsp_grow(&f->text, &f->text_cap, f->text_len + bytes, 1) ||
	    node_slots_fit(f, f->nnodes + n) || label_slots_fit(f, f->nlabels + n))
		return -ENOMEM;
	return 0;
}

static uint32_t label_intern(struct wsp_flame *f, const char *s)
{
	uint64_t h = wsp_flame_hash_text(s);
	size_t mask = f->label_slots_cap - 1, i = h & mask;
	for (; f->label_slots[i]; i = (i + 1) & mask) {
		const struct label *l = &f->labels[f->label_slots[i] - 1];
		if (l->hash == h && !strcmp(f->text + l->text, s))
			return f->label_slots[i] - 1;
	}
	size_t len = strlen(s) + 1;
	memcpy(f->text + f->text_len, s, len);
	f->labels[f->nlabels] = (struct label){ .text = f->text_len, .hash = h };
	f->text_len += len;
	f->label_slots[i] = (uint32_t)++f->nlabels;
	return (uint32_t)(f->nlabels - 1);
}

static uint32_t node_child(struct wsp_flame *f, uint32_t parent, uint32_t label)
{
	size_t mask = f->node_slots_cap - 1, i = hash_edge(parent, label) & mask;
	for (; f->node_slots[i]; i = (i + 1) & mask) {
		const struct node *n = &f->nodes[f->node_slots[i] - 1];
		if (n->parent == parent && n->label == label)
			return f->node_slots[i] - 1;
	}
	f->nodes[f->nnodes] = (struct node){ .parent = parent, .label = label };
	f->node_slots[i] = (uint32_t)f->nnodes + 1;
	return (uint32_t)f->nnodes++;
}

/* Add value along the stack's path, to the drawn sums or the base's. */
static int add_path(struct wsp_flame *f, const char *const *frames, size_t n, uint64_t value, bool base)
{
	if (!n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!frames[i])
			return -EINVAL;
	if (!value)
		return 0;
	int err = reserve(f, frames, n);
	if (err)
		return err;
	uint32_t at = ROOT;
	for (size_t i = 0; i <= n; i++) {
		if (i)
			at = node_child(f, at, label_intern(f, frames[i - 1]));
		if (base)
			f->nodes[at].base += value;
		else
			f->nodes[at].total += value;
	}
	if (!base)
		f->nodes[at].self += value;
	return 0;
}

int wsp_flame_add(struct wsp_flame *f, const char *const *frames, size_t n, uint64_t value)
{
	return add_path(f, frames, n, value, false);
}

int wsp_flame_add_base(struct wsp_flame *f, const char *const *frames, size_t n, uint64_t value)
{
	f->diff = true;
	return add_path(f, frames, n, value, true);
}

uint64_t wsp_flame_base_total(const struct wsp_flame *f)
{
	return f->nodes[ROOT].base;
}

const char *wsp_flame_label_text(const struct wsp_flame *f, uint32_t node)
{
	return f->text + f->labels[f->nodes[node].label].text;
}

/* ---- Children in label order ---------------------------------------- */

/* What folded text makes of a label byte: ';' separates frames there and a
 * line ends the stack. Siblings are ordered on this, so the labels that
 * fold to the same text sit together and the folded writer can merge them. */
int wsp_flame_fold(unsigned char c)
{
	return c == ';' ? ':' : c < 0x20 || c == 0x7f ? ' ' : c;
}

static int fold_cmp(const char *a, const char *b)
{
	while (*a && *b && wsp_flame_fold(*a) == wsp_flame_fold(*b))
		a++, b++;
	return (*a ? wsp_flame_fold(*a) : 0) - (*b ? wsp_flame_fold(*b) : 0);
}

struct sorted_label {
	const char *text;
	uint32_t id;
};

static int sorted_label_cmp(const void *pa, const void *pb)
{
	const struct sorted_label *a = pa, *b = pb;
	int c = fold_cmp(a->text, b->text);
	return c ? c : strcmp(a->text, b->text);
}

void wsp_flame_index_free(struct tree_index *ix)
{
	free(ix->kids);
	free(ix->first);
	free(ix->rank);
	free(ix->folded);
}

static void index_rank_labels(const struct wsp_flame *f, struct tree_index *ix, struct sorted_label *by_text)
{
	for (uint32_t i = 0; i < f->nlabels; i++)
		by_text[i] = (struct sorted_label){ f->text + f->labels[i].text, i };
	qsort(by_text, f->nlabels, sizeof *by_text, sorted_label_cmp);
	uint32_t folded = 0;
	for (uint32_t i = 0; i < f->nlabels; i++) {
		if (i && fold_cmp(by_text[i - 1].text, by_text[i].text))
			folded++;
		ix->rank[by_text[i].id] = i;
		ix->folded[by_text[i].id] = folded;
	}
}

/* Nodes sorted by label rank, then (stably) by parent: two counting sorts. */
static void index_group_kids(const struct wsp_flame *f, struct tree_index *ix, uint32_t *cursor, uint32_t *by_rank)
{
	size_t nl = f->nlabels, nn = f->nnodes;
	memset(cursor, 0, (nl + 1) * sizeof *cursor);
	for (uint32_t i = 1; i < nn; i++)
		cursor[ix->rank[f->nodes[i].label] + 1]++;
	for (size_t r = 1; r <= nl; r++)
		cursor[r] += cursor[r - 1];
	for (uint32_t i = 1; i < nn; i++)
		by_rank[cursor[ix->rank[f->nodes[i].label]]++] = i;

	for (uint32_t i = 1; i < nn; i++)
		ix->first[f->nodes[i].parent + 1]++;
	for (size_t p = 1; p <= nn; p++)
		ix->first[p] += ix->first[p - 1];
	memcpy(cursor, ix->first, nn * sizeof *cursor);
	for (size_t k = 0; k + 1 < nn; k++) {
		uint32_t node = by_rank[k];
		ix->kids[cursor[f->nodes[node].parent]++] = node;
	}
}

int wsp_flame_index_build(const struct wsp_flame *f, struct tree_index *ix)
{
	size_t nl = f->nlabels, nn = f->nnodes;
	size_t scratch = (nl > nn ? nl : nn) + 1;
	*ix = (struct tree_index){
		.kids = malloc(nn * sizeof *ix->kids),
		.first = calloc(nn + 1, sizeof *ix->first),
		.rank = malloc((nl + 1) * sizeof *ix->rank),
		.folded = malloc((nl + 1) * sizeof *ix->folded),
	};
	struct sorted_label *by_text = malloc((nl + 1) * sizeof *by_text);
	uint32_t *cursor = malloc(scratch * sizeof *cursor);
	uint32_t *by_rank = malloc(nn * sizeof *by_rank);
	int err = 0;
	if (!ix->kids || !ix->first || !ix->rank || !ix->folded || !by_text || !cursor || !by_rank) {
		wsp_flame_index_free(ix);
		err = -ENOMEM;
	} else {
		index_rank_labels(f, ix, by_text);
		index_group_kids(f, ix, cursor, by_rank);
	}
	free(by_text);
	free(cursor);
	free(by_rank);
	return err;
}

/* ---- The tree of a trace ------------------------------------------------- */

struct build {
	const struct wsp_loaded *l;
	struct wsp_flame *flame;
	enum wsp_flame_metric metric;
	unsigned kind;
	bool base;             /* the base run of a differential graph */
	const char **labels;   /* outermost first, for wsp_flame_add */
	char *text;            /* the labels' characters */
	size_t cap, text_cap;
	int err;
};

static uint64_t value_of(const struct wsp_site_stats *s, enum wsp_flame_metric m)
{
	static const enum wsp_site_figure figure[] = {
		[WSP_FLAME_PEAK] = WSP_FIG_PEAK, [WSP_FLAME_LEAKED] = WSP_FIG_LEAKED,
		[WSP_FLAME_ALLOCATIONS] = WSP_FIG_ALLOCATIONS, [WSP_FLAME_BYTES] = WSP_FIG_BYTES,
	};
	return wsp_site_figure(s, figure[m]);
}

/* A native flame frame is a function (or module+offset), not a line: a
 * function calling malloc from two lines is one box. A Python frame is
 * its line ("py train (train.py:42)"), as Python profilers show them: the
 * script's lines are what its author reads. */
static const char *frame_text(const struct wsp_frame *f, char *buf, size_t cap)
{
	if (f->function && !f->python)
		return f->function;
	return wsp_frame_label(f, buf, cap);
}

static void add_stack(const struct wsp_site_stats *s, void *arg)
{
	struct build *b = arg;
	uint64_t v = value_of(s, b->metric);
	if (b->err || s->kind != b->kind || !v)
		return;
	const struct wsp_frame *frames;
	size_t n = wsp_syms_stack(b->l->syms, b->l->trace, s->stack, &frames);
	if (!n) {
		static const char *const none[] = { "(no stack recorded)" };
		b->err = (b->base ? wsp_flame_add_base : wsp_flame_add)(b->flame, none, 1, v);
		return;
	}
	if (n > b->cap) {
		const char **labels = realloc(b->labels, n * sizeof *labels);
		if (!labels) {
			b->err = -ENOMEM;
			return;
		}
		b->labels = labels;
		b->cap = n;
	}
	/* Labels go into one buffer first (frame_text may format into it), then get pointed at. */
	size_t need = 0;
	char tmp[1024];
	for (size_t i = 0; i < n; i++)
		need += strlen(frame_text(&frames[i], tmp, sizeof tmp)) + 1;
	if (need > b->text_cap) {
		char *text = realloc(b->text, need);
		if (!text) {
			b->err = -ENOMEM;
			return;
		}
		b->text = text;
		b->text_cap = need;
	}
	char *p = b->text;
	for (size_t i = 0; i < n; i++) {
		const char *t = frame_text(&frames[i], tmp, sizeof tmp);
		size_t len = strlen(t) + 1;
		memcpy(p, t, len);
		b->labels[n - 1 - i] = p; /* frames are innermost first; the graph wants the root first */
		p += len;
	}
	b->err = (b->base ? wsp_flame_add_base : wsp_flame_add)(b->flame, b->labels, n, v);
}

int wsp_flame_add_trace(struct wsp_flame *f, const struct wsp_loaded *l, unsigned kind, enum wsp_flame_metric metric,
			bool base)
{
	struct build b = { .l = l, .flame = f, .metric = metric, .kind = kind, .base = base };
	wsp_model_each_site(l->model, add_stack, &b);
	free(b.labels);
	free(b.text);
	return b.err;
}

int wsp_flame_of(const struct wsp_loaded *l, unsigned kind, enum wsp_flame_metric metric, struct wsp_flame **out)
{
	struct wsp_flame *f = wsp_flame_new();
	int err = f ? wsp_flame_add_trace(f, l, kind, metric, false) : -ENOMEM;
	if (err) {
		wsp_flame_free(f);
		f = NULL;
	}
	*out = f;
	return err;
}


/* A job's graph: every process's stacks added to one tree. */
struct job_flame {
	struct wsp_flame *flame;
	unsigned kind;
	enum wsp_flame_metric metric;
	pthread_mutex_t lock;
	bool estimated;
};

static int add_process(struct wsp_job_proc *p, struct wsp_loaded *l, void *ctx)
{
	struct job_flame *jf = ctx;
	pthread_mutex_lock(&jf->lock);
	int err = wsp_flame_add_trace(jf->flame, l, jf->kind, jf->metric, false);
	jf->estimated = jf->estimated || wsp_model_estimated(l->model, jf->kind);
	pthread_mutex_unlock(&jf->lock);
	(void)p;
	if (err)
		fprintf(stderr, "wsprof: out of memory\n");
	return err ? -1 : 0;
}

int wsp_flame_of_job(char *const *paths, size_t n, unsigned kind, enum wsp_flame_metric metric, struct wsp_flame **out,
		     struct wsp_job *job, bool *estimated)
{
	struct job_flame jf = { .flame = wsp_flame_new(), .kind = kind, .metric = metric, .lock = PTHREAD_MUTEX_INITIALIZER };
	struct wsp_model_options mo = { .per_stack = true };
	*out = NULL;
	if (!jf.flame) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	if (wsp_job_load(paths, n, &mo, true, add_process, &jf, job)) {
		wsp_flame_free(jf.flame);
		return 1;
	}
	*out = jf.flame;
	*estimated = jf.estimated;
	return 0;
}
