/*
 * checkpoint.c - a state model's books written out and read back
 * (checkpoint.h). The layout follows struct wsp_model (model_internal.h):
 * a field added there that a state model keeps is added here, on both
 * sides, and CHECKPOINT_VERSION in timeindex.c goes up.
 */
#include "checkpoint.h"

#include "check.h"
#include "format.h"
#include "grow.h"
#include "model_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- bytes ------------------------------------------------------------- */

static bool bytes_room(struct wsp_bytes *b, size_t more)
{
	if (b->err)
		return false;
	if (wsp_grow(&b->p, &b->cap, b->n + more, 1)) {
		b->err = -ENOMEM;
		return false;
	}
	return true;
}

void wsp_bytes_varint(struct wsp_bytes *b, uint64_t v)
{
	if (bytes_room(b, 10))
		b->n = (size_t)(wsp_put_varint(b->p + b->n, v) - b->p);
}

void wsp_bytes_put(struct wsp_bytes *b, const void *s, size_t n)
{
	if (n && bytes_room(b, n)) {
		memcpy(b->p + b->n, s, n);
		b->n += n;
	}
}

void wsp_bytes_string(struct wsp_bytes *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	wsp_bytes_varint(b, n);
	wsp_bytes_put(b, s, n);
}

void wsp_bytes_free(struct wsp_bytes *b)
{
	free(b->p);
	*b = (struct wsp_bytes){ 0 };
}

/* ---- writing ------------------------------------------------------------- */

static void put_zig(struct wsp_bytes *o, int64_t v)
{
	wsp_bytes_varint(o, wsp_zigzag(v));
}

static void put_kind_stats(struct wsp_bytes *o, const struct wsp_kind_stats *k)
{
	const uint64_t v[] = { k->allocations, k->frees, k->failed, k->total_bytes, k->live_bytes, k->live_blocks,
			       k->peak_bytes, k->peak_time_ns, k->peak_seq, k->first_fail_seq, k->first_fail_time_ns,
			       k->collectable_bytes, k->in_use_peak_bytes, k->in_use_peak_time_ns, k->collectable_at_peak,
			       k->seen };
	wsp_bytes_varint(o, sizeof v / sizeof *v);
	for (size_t i = 0; i < sizeof v / sizeof *v; i++)
		wsp_bytes_varint(o, v[i]);
}

/* A block, its key as a delta from the one before (blocks go in key
 * order), without its access figures: no view of a moment shows them,
 * and a model that matches access samples to blocks has them from the
 * samples too, which a state model does not match. */
struct as_state {
	bool serials; /* a state model numbers a thread's allocations (apply_alloc): a sampled trace's */
};

static void put_block(struct wsp_bytes *o, const struct wsp_block *b, uint64_t *prev, const struct as_state *as)
{
	put_zig(o, (int64_t)(b->addr - *prev));
	*prev = b->addr;
	wsp_bytes_varint(o, b->size);
	wsp_bytes_varint(o, b->stack);
	put_zig(o, (int64_t)(b->origin - b->addr));
	wsp_bytes_varint(o, b->origin_size);
	wsp_bytes_varint(o, as->serials ? b->serial : 0);
	wsp_bytes_varint(o, b->tid);
	wsp_bytes_varint(o, b->time_ns);
	wsp_bytes_varint(o, b->kind);
	wsp_bytes_varint(o, (uint64_t)(b->device + 1));
	wsp_bytes_varint(o, (uint64_t)b->excluded | (uint64_t)b->has_ann << 1 | (uint64_t)b->in_reservation << 2);
}

static int key_cmp(const void *a, const void *b)
{
	uint64_t x = (*(const struct wsp_block *const *)a)->addr, y = (*(const struct wsp_block *const *)b)->addr;
	return x < y ? -1 : x > y;
}

static void put_blocks(struct wsp_bytes *o, const struct wsp_block *v, size_t n, const struct as_state *as)
{
	wsp_bytes_varint(o, n);
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i++)
		put_block(o, &v[i], &prev, as);
}

bool wsp_model_savable(const struct wsp_model *m)
{
	return !m->callers;
}

size_t wsp_model_live_count(const struct wsp_model *m)
{
	size_t n = m->heap_used + m->ann_used;
	for (size_t r = 0; r < sizeof m->ranges / sizeof *m->ranges; r++)
		n += m->ranges[r].n;
	return n;
}

int wsp_model_save(const struct wsp_model *m, bool failures, struct wsp_bytes *o)
{
	if (!wsp_model_savable(m))
		return -EINVAL;
	const struct as_state as = { m->sample_bytes != 0 };
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		put_kind_stats(o, &m->kinds[k]);
	wsp_bytes_varint(o, m->untracked_frees);
	wsp_bytes_varint(o, m->last_time);
	wsp_bytes_varint(o, m->seq);
	wsp_bytes_varint(o, m->unknown_annotations);
	wsp_bytes_varint(o, m->window_ns);
	wsp_bytes_varint(o, m->windowed_end);

	/* Heap blocks, in key order. */
	const struct wsp_block **heap = m->heap_used ? malloc(m->heap_used * sizeof *heap) : NULL;
	if (m->heap_used && !heap)
		return -ENOMEM;
	size_t nheap = 0;
	for (size_t i = 0; i < m->heap_cap; i++)
		if (m->heap_keys[i])
			heap[nheap++] = &m->blocks[m->heap_block[i]];
	if (nheap)
		qsort(heap, nheap, sizeof *heap, key_cmp);
	wsp_bytes_varint(o, nheap);
	uint64_t prev = 0;
	for (size_t i = 0; i < nheap; i++)
		put_block(o, heap[i], &prev, &as);
	free(heap);
	wsp_bytes_varint(o, m->ordered);

	for (size_t r = 0; r < sizeof m->ranges / sizeof *m->ranges; r++)
		put_blocks(o, m->ranges[r].v, m->ranges[r].n, &as);

	/* What the program said, of blocks live now. */
	wsp_bytes_varint(o, m->ann_used);
	for (size_t i = 0; i < m->ann_cap; i++) {
		const struct ann *a = &m->anns[i];
		if (!a->key)
			continue;
		wsp_bytes_varint(o, a->key);
		wsp_bytes_varint(o, a->name != NULL);
		wsp_bytes_string(o, a->name);
		put_zig(o, a->st.refs);
		wsp_bytes_varint(o, a->st.validity);
		wsp_bytes_varint(o, (uint64_t)a->st.annotated | (uint64_t)a->st.collectable << 1);
		wsp_bytes_varint(o, a->st.last_use_ns);
	}

	/* Reallocs in flight. */
	size_t used = 0;
	for (size_t i = 0; i < m->nstashes; i++)
		used += m->stashes[i].used;
	wsp_bytes_varint(o, used);
	for (size_t i = 0; i < m->nstashes; i++) {
		const struct stash *s = &m->stashes[i];
		if (!s->used)
			continue;
		wsp_bytes_varint(o, s->tid);
		wsp_bytes_varint(o, s->moved);
		wsp_bytes_varint(o, s->blocks_gone);
		put_blocks(o, s->blocks, s->n, &as);
	}

	wsp_bytes_varint(o, as.serials ? m->serials_used : 0);
	for (size_t i = 0; as.serials && i < m->serials_cap; i++)
		if (m->serials[i].tid) {
			wsp_bytes_varint(o, m->serials[i].tid);
			wsp_bytes_varint(o, m->serials[i].serial);
		}

	wsp_bytes_varint(o, m->ndevices);
	for (size_t i = 0; i < m->ndevices; i++) {
		const struct wsp_device_stats *d = &m->devices[i];
		put_zig(o, d->device);
		wsp_bytes_varint(o, d->total);
		wsp_bytes_varint(o, d->free_min);
		wsp_bytes_varint(o, d->free_min_time_ns);
		wsp_bytes_varint(o, d->free_last);
		wsp_bytes_varint(o, d->samples);
	}

	wsp_bytes_varint(o, m->nphases);
	for (size_t i = 0; i < m->nphases; i++) {
		const struct wsp_phase *p = &m->phases[i];
		wsp_bytes_string(o, p->name);
		wsp_bytes_varint(o, p->tid);
		wsp_bytes_varint(o, p->depth);
		wsp_bytes_varint(o, p->start_ns);
		wsp_bytes_varint(o, p->end_ns);
	}
	wsp_bytes_varint(o, m->nsnapshots);
	for (size_t i = 0; i < m->nsnapshots; i++) {
		wsp_bytes_string(o, m->snapshots[i].label);
		wsp_bytes_varint(o, m->snapshots[i].time_ns);
		wsp_bytes_varint(o, m->snapshots[i].seq);
	}
	wsp_bytes_varint(o, m->nswitches);
	for (size_t i = 0; i < m->nswitches; i++) {
		const struct wsp_recording_switch *w = &m->switches[i];
		wsp_bytes_varint(o, w->time_ns);
		wsp_bytes_varint(o, w->seq);
		wsp_bytes_varint(o, w->on);
		wsp_bytes_varint(o, w->cause);
	}
	wsp_bytes_varint(o, m->nrss);
	for (size_t i = 0; i < m->nrss; i++) {
		wsp_bytes_varint(o, m->rss[i].time_ns);
		wsp_bytes_varint(o, m->rss[i].bytes);
	}
	wsp_bytes_varint(o, m->nchildren);
	for (size_t i = 0; i < m->nchildren; i++)
		wsp_bytes_varint(o, m->children[i]);
	wsp_bytes_varint(o, m->exec_path != NULL);
	wsp_bytes_string(o, m->exec_path);

	/* A sampled heap's counted totals. */
	const wsprof_heap_totals *h = &m->totals;
	const uint64_t t[] = { h->allocations, h->frees, h->requested, h->given, h->given_back, h->peak, h->peak_ns };
	wsp_bytes_varint(o, sizeof t / sizeof *t);
	for (size_t i = 0; i < sizeof t / sizeof *t; i++)
		wsp_bytes_varint(o, t[i]);
	wsp_bytes_varint(o, (uint64_t)m->has_totals | (uint64_t)m->heap_counted << 1 | (uint64_t)m->child << 2);
	wsp_bytes_varint(o, m->totals_peak);
	wsp_bytes_varint(o, m->totals_peak_ns);
	wsp_bytes_varint(o, m->totals_peak_seq);
	wsp_bytes_varint(o, m->totals_last_ns);
	put_kind_stats(o, &m->heap_estimates);
	put_kind_stats(o, &m->estimated_at_totals);
	if (failures) {
		wsp_bytes_varint(o, m->nfailures);
		for (size_t i = 0; i < m->nfailures; i++) {
			const struct wsp_failure *f = &m->failures[i];
			const uint64_t v[] = { f->time_ns, f->seq, f->size, f->stack, f->kind, f->op, (uint64_t)(f->device + 1) };
			for (size_t j = 0; j < sizeof v / sizeof *v; j++)
				wsp_bytes_varint(o, v[j]);
		}
	}
	return o->err;
}

/* ---- reading ------------------------------------------------------------- */

size_t wsp_cursor_count(struct wsp_cursor *c, size_t min_bytes)
{
	uint64_t n = wsp_get_varint(c);
	if (c->bad || n > (uint64_t)(c->end - c->p) / (min_bytes ? min_bytes : 1)) {
		c->bad = true;
		return 0;
	}
	return (size_t)n;
}

static int64_t get_zig(struct wsp_cursor *c)
{
	return wsp_unzigzag(wsp_get_varint(c));
}

/* A string written by wsp_bytes_string, malloc'd; NULL with c->bad on
 * damage or with *err on no memory. */
static char *get_string(struct wsp_cursor *c, int *err)
{
	size_t n;
	const uint8_t *s = wsp_get_bytes(c, &n);
	if (!s)
		return NULL;
	char *v = malloc(n + 1);
	if (!v) {
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(v, s, n);
	v[n] = 0;
	return v;
}

static void get_kind_stats(struct wsp_cursor *c, struct wsp_kind_stats *k)
{
	uint64_t *f[] = { &k->allocations, &k->frees, &k->failed, &k->total_bytes, &k->live_bytes, &k->live_blocks,
			  &k->peak_bytes, &k->peak_time_ns, &k->peak_seq, &k->first_fail_seq, &k->first_fail_time_ns,
			  &k->collectable_bytes, &k->in_use_peak_bytes, &k->in_use_peak_time_ns, &k->collectable_at_peak };
	size_t n = wsp_cursor_count(c, 1), nf = sizeof f / sizeof *f;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = wsp_get_varint(c);
		if (i < nf)
			*f[i] = v;
		else if (i == nf)
			k->seen = v != 0;
	}
}

static void get_block(struct wsp_cursor *c, struct wsp_block *b, uint64_t *prev)
{
	*b = (struct wsp_block){ 0 };
	b->addr = *prev + (uint64_t)get_zig(c);
	*prev = b->addr;
	b->size = wsp_get_varint(c);
	b->stack = wsp_get_varint(c);
	b->origin = b->addr + (uint64_t)get_zig(c);
	b->origin_size = wsp_get_varint(c);
	b->serial = wsp_get_varint(c);
	b->tid = (uint32_t)wsp_get_varint(c);
	b->time_ns = wsp_get_varint(c);
	uint64_t kind = wsp_get_varint(c);
	b->device = (int16_t)((int64_t)wsp_get_varint(c) - 1);
	uint64_t flags = wsp_get_varint(c);
	if (kind >= WSPROF_KIND_COUNT || !b->addr)
		c->bad = true;
	b->kind = (uint8_t)kind;
	b->excluded = flags & 1;
	b->has_ann = flags & 2;
	b->in_reservation = flags & 4;
}

/* 11 fields of at least a byte each. */
#define BLOCK_MIN_BYTES 11

static int get_blocks(struct wsp_cursor *c, struct wsp_block **v, size_t *n, size_t *cap)
{
	size_t k = wsp_cursor_count(c, BLOCK_MIN_BYTES);
	if (k && wsp_grow(v, cap, k, sizeof **v))
		return -ENOMEM;
	uint64_t prev = 0;
	for (size_t i = 0; i < k; i++)
		get_block(c, &(*v)[i], &prev);
	*n = k;
	return 0;
}

static int restore(struct wsp_model *m, struct wsp_cursor *c)
{
	int err = 0;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		get_kind_stats(c, &m->kinds[k]);
	m->untracked_frees = wsp_get_varint(c);
	m->last_time = wsp_get_varint(c);
	m->seq = wsp_get_varint(c);
	m->unknown_annotations = wsp_get_varint(c);
	m->window_ns = wsp_get_varint(c);
	m->windowed_end = wsp_get_varint(c);

	size_t nheap = wsp_cursor_count(c, BLOCK_MIN_BYTES);
	if (nheap && (err = model_heap_reserve(m, nheap)))
		return err;
	uint64_t prev = 0;
	for (size_t i = 0; i < nheap && !c->bad; i++) {
		struct wsp_block b;
		uint64_t before = prev;
		get_block(c, &b, &prev);
		/* In key order, each once. */
		if (c->bad || (i && b.addr <= before))
			return -EINVAL;
		if ((err = model_heap_add(m, &b)))
			return err;
	}
	bool ordered = wsp_get_varint(c) != 0;
	if (ordered && !c->bad && (err = model_build_ordered(m)))
		return err;

	for (size_t r = 0; r < sizeof m->ranges / sizeof *m->ranges; r++)
		if ((err = get_blocks(c, &m->ranges[r].v, &m->ranges[r].n, &m->ranges[r].cap)))
			return err;

	size_t nann = wsp_cursor_count(c, 7);
	if (nann) {
		size_t cap = 256;
		while (cap < nann * 2 + 2)
			cap *= 2;
		if (!(m->anns = calloc(cap, sizeof *m->anns)))
			return -ENOMEM;
		m->ann_cap = cap;
	}
	for (size_t i = 0; i < nann && !c->bad; i++) {
		uint64_t key = wsp_get_varint(c);
		bool named = wsp_get_varint(c) != 0;
		char *name = get_string(c, &err);
		if (err)
			return err;
		if (!named) {
			free(name);
			name = NULL;
		}
		struct wsp_block *b = model_heap_find(m, key);
		if (!key || !b || !b->has_ann || model_ann_find(m, key)) {
			free(name);
			return -EINVAL;
		}
		size_t j = hash64(key, m->ann_cap);
		while (m->anns[j].key)
			j = (j + 1) & (m->ann_cap - 1);
		struct ann *a = &m->anns[j];
		*a = (struct ann){ .key = key, .name = name };
		a->st.name = name;
		a->st.refs = get_zig(c);
		uint64_t validity = wsp_get_varint(c);
		a->st.validity = validity <= WSP_VALIDITY_INVALID ? (enum wsp_validity)validity : WSP_VALIDITY_UNKNOWN;
		uint64_t flags = wsp_get_varint(c);
		a->st.annotated = flags & 1;
		a->st.collectable = flags & 2;
		a->st.last_use_ns = wsp_get_varint(c);
		m->ann_used++;
	}

	size_t nstash = wsp_cursor_count(c, 4);
	if (nstash && !(m->stashes = calloc(nstash, sizeof *m->stashes)))
		return -ENOMEM;
	m->nstashes = nstash;
	for (size_t i = 0; i < nstash && !c->bad; i++) {
		struct stash *s = &m->stashes[i];
		s->used = true;
		s->tid = (uint32_t)wsp_get_varint(c);
		s->moved = wsp_get_varint(c);
		s->blocks_gone = wsp_get_varint(c);
		size_t cap = 0;
		if ((err = get_blocks(c, &s->blocks, &s->n, &cap)))
			return err;
	}

	size_t nserial = wsp_cursor_count(c, 2);
	for (size_t i = 0; i < nserial && !c->bad; i++) {
		uint32_t tid = (uint32_t)wsp_get_varint(c);
		uint64_t serial = wsp_get_varint(c);
		uint64_t *at = tid ? model_serial_of(m, tid) : NULL;
		if (!at)
			return tid ? -ENOMEM : -EINVAL;
		*at = serial;
	}

	size_t ndev = wsp_cursor_count(c, 6);
	if (ndev && (!(m->devices = calloc(ndev, sizeof *m->devices)) ||
		     !(m->device_used = calloc(ndev, sizeof *m->device_used))))
		return -ENOMEM;
	m->ndevices = m->devices_cap = m->device_used_cap = ndev;
	for (size_t i = 0; i < ndev; i++) {
		struct wsp_device_stats *d = &m->devices[i];
		d->device = (int)get_zig(c);
		d->total = wsp_get_varint(c);
		d->free_min = wsp_get_varint(c);
		d->free_min_time_ns = wsp_get_varint(c);
		d->free_last = wsp_get_varint(c);
		d->samples = wsp_get_varint(c);
	}

	size_t nphases = wsp_cursor_count(c, 5);
	if (nphases && wsp_grow(&m->phases, &m->phases_cap, nphases, sizeof *m->phases))
		return -ENOMEM;
	for (size_t i = 0; i < nphases && !c->bad; i++) {
		struct wsp_phase *p = &m->phases[i];
		p->name = get_string(c, &err);
		if (err)
			return err;
		m->nphases = i + 1;
		p->tid = (uint32_t)wsp_get_varint(c);
		p->depth = (unsigned)wsp_get_varint(c);
		p->start_ns = wsp_get_varint(c);
		p->end_ns = wsp_get_varint(c);
	}
	size_t nsnap = wsp_cursor_count(c, 3);
	if (nsnap && wsp_grow(&m->snapshots, &m->snapshots_cap, nsnap, sizeof *m->snapshots))
		return -ENOMEM;
	for (size_t i = 0; i < nsnap && !c->bad; i++) {
		struct wsp_snapshot *s = &m->snapshots[i];
		s->label = get_string(c, &err);
		if (err)
			return err;
		m->nsnapshots = i + 1;
		s->time_ns = wsp_get_varint(c);
		s->seq = wsp_get_varint(c);
	}
	size_t nswitch = wsp_cursor_count(c, 4);
	if (nswitch && wsp_grow(&m->switches, &m->switches_cap, nswitch, sizeof *m->switches))
		return -ENOMEM;
	for (size_t i = 0; i < nswitch; i++) {
		struct wsp_recording_switch *w = &m->switches[i];
		w->time_ns = wsp_get_varint(c);
		w->seq = wsp_get_varint(c);
		w->on = wsp_get_varint(c) != 0;
		w->cause = (unsigned)wsp_get_varint(c);
	}
	m->nswitches = nswitch;
	size_t nrss = wsp_cursor_count(c, 2);
	if (nrss && wsp_grow(&m->rss, &m->rss_cap, nrss, sizeof *m->rss))
		return -ENOMEM;
	for (size_t i = 0; i < nrss; i++) {
		m->rss[i].time_ns = wsp_get_varint(c);
		m->rss[i].bytes = wsp_get_varint(c);
	}
	m->nrss = nrss;
	size_t nchildren = wsp_cursor_count(c, 1);
	if (nchildren && wsp_grow(&m->children, &m->children_cap, nchildren, sizeof *m->children))
		return -ENOMEM;
	for (size_t i = 0; i < nchildren; i++)
		m->children[i] = (uint32_t)wsp_get_varint(c);
	m->nchildren = nchildren;
	bool has_exec = wsp_get_varint(c) != 0;
	char *exec = get_string(c, &err);
	if (err)
		return err;
	if (has_exec)
		m->exec_path = exec;
	else
		free(exec);

	wsprof_heap_totals *h = &m->totals;
	uint64_t *t[] = { &h->allocations, &h->frees, &h->requested, &h->given, &h->given_back, &h->peak, &h->peak_ns };
	size_t nt = wsp_cursor_count(c, 1);
	for (size_t i = 0; i < nt; i++) {
		uint64_t v = wsp_get_varint(c);
		if (i < sizeof t / sizeof *t)
			*t[i] = v;
	}
	uint64_t flags = wsp_get_varint(c);
	m->has_totals = flags & 1;
	m->heap_counted = flags & 2;
	m->child = m->child || (flags & 4);
	m->totals_peak = wsp_get_varint(c);
	m->totals_peak_ns = wsp_get_varint(c);
	m->totals_peak_seq = wsp_get_varint(c);
	m->totals_last_ns = wsp_get_varint(c);
	get_kind_stats(c, &m->heap_estimates);
	get_kind_stats(c, &m->estimated_at_totals);
	if (c->p < c->end) { /* the failures, when saved */
		size_t nf = wsp_cursor_count(c, 7);
		if (nf && wsp_grow(&m->failures, &m->failures_cap, nf, sizeof *m->failures))
			return -ENOMEM;
		for (size_t i = 0; i < nf; i++) {
			struct wsp_failure *f = &m->failures[i];
			f->time_ns = wsp_get_varint(c);
			f->seq = wsp_get_varint(c);
			f->size = wsp_get_varint(c);
			f->stack = wsp_get_varint(c);
			f->kind = (unsigned)wsp_get_varint(c);
			f->op = (unsigned)wsp_get_varint(c);
			f->device = (int)((int64_t)wsp_get_varint(c) - 1);
		}
		m->nfailures = nf;
	}
	return c->bad || c->p != c->end ? -EINVAL : 0;
}

struct wsp_model *wsp_model_restore(const struct wsp_model_options *opt, const uint8_t *p, size_t n, int *err)
{
	struct wsp_model_options o = opt ? *opt : (struct wsp_model_options){ 0 };
	o.totals_only = true;
	o.per_stack = false;
	o.callers = NULL;
	struct wsp_model *m = wsp_model_new(&o);
	if (!m) {
		*err = -ENOMEM;
		return NULL;
	}
	struct wsp_cursor c = { p, p + n, false };
	int e = restore(m, &c);
	/* Books that parse but do not add up: a damaged index the blobs'
	 * checksums missed, or a model that saved wrong ones. The checked
	 * build looks (a walk of every block); elsewhere the checksums do. */
	if (!e && WSP_CHECKED && wsp_model_check(m))
		e = -EINVAL;
	if (e) {
		wsp_model_free(m);
		*err = e;
		return NULL;
	}
	return m;
}
