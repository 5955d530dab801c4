/*
 * annotations.c - what the program says about its blocks (names,
 * holders, valid and invalid copies, touches, pools, phases) kept beside
 * the model's blocks, and the order of blocks by address that finds the
 * block an interior pointer points into (model.h).
 */
#include "model_internal.h"

#include "grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- blocks by address order (interior pointers) ------------------------ */

int model_treap_insert(struct treap *t, uint64_t key, uint32_t place)
{
	uint32_t node = wsp_treap_insert(&t->pool, &t->root, key);
	if (!node || wsp_grow(&t->place, &t->place_cap, node, sizeof *t->place))
		return -ENOMEM;
	t->place[node - 1] = place;
	t->inserted++;
	return 0;
}

struct lay_out {
	const struct treap *t;
	uint64_t *keys;
	uint32_t *place;
	size_t n;
};

static void collect_node(uint32_t node, void *arg)
{
	struct lay_out *o = arg;
	o->keys[o->n] = wsp_treap_key(&o->t->pool, node);
	o->place[o->n++] = o->t->place[node - 1];
}

/* The nodes put in a pool of their own in key order (node i + 1 the i-th
 * key), once a quarter of them came since the last time: a walk in
 * address order (each_overlap, every live block a window's pages hold)
 * then reads nodes and places one after another, not all over the pool.
 * Amortized, four nodes moved per insert. @return 0 or -ENOMEM. */
int model_treap_lay_out(struct treap *t)
{
	size_t n = t->laid_out + t->inserted; /* at least the nodes there are */
	if (t->inserted < 4096 || t->inserted < t->laid_out / 4)
		return 0;
	struct lay_out o = { t, malloc(n * sizeof *o.keys), malloc(n * sizeof *o.place), 0 };
	struct wsp_tpool pool = { .seed = t->pool.seed };
	uint32_t root = 0, *nodes = malloc(n * sizeof *nodes);
	int err = o.keys && o.place && nodes ? 0 : -ENOMEM;
	if (!err)
		wsp_treap_each(&t->pool, t->root, 0, UINT64_MAX, collect_node, &o);
	if (!err)
		err = wsp_treap_build(&pool, &root, o.keys, o.n, nodes);
	free(o.keys);
	free(nodes);
	if (err) {
		free(o.place);
		wsp_tpool_free(&pool);
		return err;
	}
	wsp_tpool_free(&t->pool);
	free(t->place);
	t->pool = pool;
	t->root = root;
	t->place = o.place; /* node i + 1 holds the i-th key */
	t->place_cap = n;
	t->laid_out = o.n;
	t->inserted = 0;
	return 0;
}

void model_treap_remove(struct treap *t, uint64_t key)
{
	wsp_treap_remove(&t->pool, &t->root, key);
}

/* The least key not below x, or 0. */
uint64_t model_treap_ceil(const struct treap *t, uint64_t x)
{
	uint32_t n = wsp_treap_ceil(&t->pool, t->root, x);
	return n ? wsp_treap_key(&t->pool, n) : 0;
}

/* The greatest key not above x, or 0. */
uint64_t model_treap_floor(const struct treap *t, uint64_t x)
{
	uint32_t n = wsp_treap_floor(&t->pool, t->root, x);
	return n ? wsp_treap_key(&t->pool, n) : 0;
}

/* Memory blocks and pool blocks each have a treap; other name spaces none. */
struct treap *model_treap_of(struct wsp_model *m, uint64_t key)
{
	if (!m->ordered)
		return NULL;
	enum wsp_key_space space = wsp_key_space(key);
	return space == WSP_SPACE_MEMORY ? &m->by_addr[0] : space == WSP_SPACE_POOL ? &m->by_addr[1] : NULL;
}

/* ---- annotations: names, holders, validity -------------------------------- */

struct ann *model_ann_find(const struct wsp_model *m, uint64_t key)
{
	if (!m->ann_cap)
		return NULL;
	for (size_t i = hash64(key, m->ann_cap); m->anns[i].key; i = (i + 1) & (m->ann_cap - 1))
		if (m->anns[i].key == key)
			return &m->anns[i];
	return NULL;
}

static struct ann *ann_make(struct wsp_model *m, struct wsp_block *b)
{
	struct ann *a = model_ann_find(m, b->addr);
	if (a)
		return a;
	if ((m->ann_used + 1) * 2 > m->ann_cap) {
		size_t cap = m->ann_cap ? m->ann_cap * 2 : 256;
		struct ann *t = calloc(cap, sizeof *t);
		if (!t)
			return NULL;
		for (size_t i = 0; i < m->ann_cap; i++) {
			if (!m->anns[i].key)
				continue;
			size_t j = hash64(m->anns[i].key, cap);
			while (t[j].key)
				j = (j + 1) & (cap - 1);
			t[j] = m->anns[i];
			t[j].st.name = t[j].name;
		}
		free(m->anns);
		m->anns = t;
		m->ann_cap = cap;
	}
	size_t j = hash64(b->addr, m->ann_cap);
	while (m->anns[j].key)
		j = (j + 1) & (m->ann_cap - 1);
	a = &m->anns[j];
	*a = (struct ann){ .key = b->addr, .st.last_use_ns = b->time_ns };
	m->ann_used++;
	b->has_ann = true;
	return a;
}

/* The block is going: what it held as collectable goes with it. */
void model_ann_drop(struct wsp_model *m, const struct wsp_block *b)
{
	struct ann *a = model_ann_find(m, b->addr);
	if (!a)
		return;
	if (a->st.collectable && !b->excluded)
		m->kinds[b->kind].collectable_bytes -= model_weigh(m, b, b->size);
	free(a->name);
	size_t mask = m->ann_cap - 1, i = (size_t)(a - m->anns);
	for (size_t j = (i + 1) & mask; m->anns[j].key; j = (j + 1) & mask) {
		size_t home = hash64(m->anns[j].key, m->ann_cap);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->anns[i] = m->anns[j];
			m->anns[i].st.name = m->anns[i].name;
			i = j;
		}
	}
	m->anns[i].key = 0;
	m->ann_used--;
}

/* In use: held, valid, or never said otherwise. */
static void ann_settle(struct wsp_model *m, const struct wsp_block *b, struct ann *a, uint64_t time)
{
	bool collectable = a->st.annotated && a->st.refs <= 0 && a->st.validity != WSP_VALIDITY_VALID;
	if (collectable == a->st.collectable)
		return;
	a->st.collectable = collectable;
	if (b->excluded)
		return;
	struct wsp_kind_stats *k = &m->kinds[b->kind];
	if (collectable) {
		k->collectable_bytes += model_weigh(m, b, b->size);
	} else {
		k->collectable_bytes -= model_weigh(m, b, b->size);
		model_note_in_use(k, time);
	}
}

int model_build_ordered(struct wsp_model *m)
{
	m->ordered = true;
	m->by_addr[0].pool.seed = m->by_addr[1].pool.seed = 0x2545f491u;
	for (size_t i = 0; i < m->heap_cap; i++) {
		struct treap *t = m->heap_keys[i] ? model_treap_of(m, m->heap_keys[i]) : NULL;
		if (t && model_treap_insert(t, m->heap_keys[i], m->heap_block[i]))
			return -ENOMEM;
		if (t)
			m->blocks[m->heap_block[i]].ordered = true;
	}
	return 0;
}

/* The treaps brought up to date before they are asked: the blocks
 * allocated since, that still live, go in (a place freed and taken again
 * is listed twice, its block put in once). @return 0 or -ENOMEM. */
int model_order_new(struct wsp_model *m)
{
	if (!m->ordered)
		return model_build_ordered(m);
	for (size_t i = 0; i < m->nunordered; i++) {
		struct wsp_block *b = &m->blocks[m->unordered[i]];
		struct treap *t = b->addr && !b->ordered ? model_treap_of(m, b->addr) : NULL;
		if (t && model_treap_insert(t, b->addr, m->unordered[i]))
			return -ENOMEM;
		b->ordered = b->ordered || t != NULL;
	}
	m->nunordered = 0;
	return 0;
}

/* The block an address points into: a pool sub-allocation first, then
 * memory; exact addresses first, interior ones through the treaps (kept
 * from the first interior pointer on). */
static struct wsp_block *block_at(struct wsp_model *m, uint64_t addr)
{
	uint64_t pool_key = wsp_key_in(WSP_SPACE_POOL, addr);
	struct wsp_block *b = model_heap_find(m, pool_key);
	if (!b)
		b = model_heap_find(m, addr);
	if (b || wsp_key_space(addr) != WSP_SPACE_MEMORY)
		return b;
	if (model_order_new(m))
		return NULL;
	const uint64_t keys[2] = { pool_key, addr };
	const struct treap *t[2] = { &m->by_addr[1], &m->by_addr[0] };
	for (int i = 0; i < 2; i++) {
		uint64_t k = model_treap_floor(t[i], keys[i]);
		b = k && wsp_key_space(k) == wsp_key_space(keys[i]) ? model_heap_find(m, k) : NULL;
		if (b && keys[i] - k < b->size)
			return b;
	}
	return NULL;
}

static int phase_push(struct wsp_model *m, const wsprof_event *ev)
{
	unsigned depth = 0;
	for (size_t i = 0; i < m->nphases; i++)
		depth += m->phases[i].tid == ev->tid && !m->phases[i].end_ns;
	if (wsp_grow(&m->phases, &m->phases_cap, m->nphases + 1, sizeof *m->phases))
		return -ENOMEM;
	char *name = strdup(ev->text ? ev->text : "");
	if (!name)
		return -ENOMEM;
	m->phases[m->nphases++] = (struct wsp_phase){ name, ev->tid, depth, ev->time_ns, 0 };
	return 0;
}

static void phase_pop(struct wsp_model *m, const wsprof_event *ev)
{
	for (size_t i = m->nphases; i-- > 0;) {
		if (m->phases[i].tid == ev->tid && !m->phases[i].end_ns) {
			m->phases[i].end_ns = ev->time_ns > m->phases[i].start_ns ? ev->time_ns : m->phases[i].start_ns + 1;
			return;
		}
	}
}

/* Every sub-allocation of a pool is freed (NVTX heap reset). */
static int pool_reset(struct wsp_model *m, uint64_t pool)
{
	uint64_t *keys = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < m->heap_cap; i++) {
		const struct wsp_block *b = model_heap_at(m, i);
		if (b && b->kind == WSPROF_KIND_POOL && b->origin == pool) {
			if (wsp_grow(&keys, &cap, n + 1, sizeof *keys)) {
				free(keys);
				return -ENOMEM;
			}
			keys[n++] = b->addr;
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct wsp_block *b = model_heap_find(m, keys[i]);
		model_lose(m, b);
		if (!b->excluded)
			model_count_free(m, b);
		model_heap_remove(m, b);
	}
	free(keys);
	return 0;
}

int model_ensure_wss(struct wsp_model *m, wsprof_trace *t);

static int touch_access(struct wsp_model *m, const wsprof_event *ev, struct wsp_block *b)
{
	int err = model_ensure_wss(m, NULL);
	if (err)
		return err;
	uint64_t start = ev->addr, len = ev->size ? ev->size : 1;
	if (len > b->addr + b->size - start && start >= b->addr)
		len = b->addr + b->size - start;
	b->last_access_ns = ev->time_ns;
	if (len > b->accessed_bytes)
		b->accessed_bytes = len;
	const wsprof_region r = { start, len };
	return wsp_wss_add(m->wss, WSPROF_ACCESS_ANNOTATED, ev->time_ns, 0, &r, 1);
}

int model_apply_annotation(struct wsp_model *m, const wsprof_event *ev)
{
	switch (ev->op) {
	case WSPROF_ANN_PHASE_PUSH:
		return phase_push(m, ev);
	case WSPROF_ANN_PHASE_POP:
		phase_pop(m, ev);
		return 0;
	case WSPROF_ANN_SNAPSHOT: {
		char *label = strdup(ev->text ? ev->text : "");
		if (!label || wsp_grow(&m->snapshots, &m->snapshots_cap, m->nsnapshots + 1, sizeof *m->snapshots)) {
			free(label);
			return -ENOMEM;
		}
		m->snapshots[m->nsnapshots++] = (struct wsp_snapshot){ label, ev->time_ns, ev->seq };
		return 0;
	}
	case WSPROF_ANN_POOL_RESET:
		return pool_reset(m, ev->handle);
	}
	struct wsp_block *b = block_at(m, ev->addr);
	if (!b) {
		m->unknown_annotations++;
		return 0;
	}
	struct ann *a = ann_make(m, b);
	if (!a)
		return -ENOMEM;
	switch (ev->op) {
	case WSPROF_ANN_NAME: {
		char *name = strdup(ev->text ? ev->text : "");
		if (!name)
			return -ENOMEM;
		free(a->name);
		a->name = name;
		a->st.name = name;
		return 0;
	}
	case WSPROF_ANN_ACQUIRE: a->st.refs++; a->st.annotated = true; break;
	case WSPROF_ANN_RELEASE: a->st.refs--; a->st.annotated = true; break;
	case WSPROF_ANN_VALID: a->st.validity = WSP_VALIDITY_VALID; a->st.annotated = true; break;
	case WSPROF_ANN_INVALID: a->st.validity = WSP_VALIDITY_INVALID; a->st.annotated = true; break;
	case WSPROF_ANN_TOUCH: {
		/* An access the program reports: the source for memory wsprof cannot watch. */
		int err = touch_access(m, ev, b);
		if (err)
			return err;
		break;
	}
	default: return 0; /* an annotation of a later version */
	}
	a->st.last_use_ns = ev->time_ns;
	ann_settle(m, b, a, ev->time_ns);
	return 0;
}

