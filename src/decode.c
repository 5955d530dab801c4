/*
 * decode.c - a chunk's records into pending events (reader_internal.h).
 *
 * The decoding side's: the records of one chunk, in rows or in the
 * column layout (src/columns.h), go into the pending runs that merge.c
 * releases, with each segment's delta state, the stack nodes defined
 * (into the batch being filled), the threads seen, Python's codes and
 * the chunks' places. It starts no thread and reads no file: a chunk's
 * bytes in memory are all it needs (tests/fuzz/fuzz_decode.c feeds it so).
 * A damaged chunk never crashes it: every length is checked before it is
 * used, and a record that fails leaves no event behind.
 *
 * What few events carry beyond the fields all have (struct extra) is made
 * here, and used again once the caller is done with it (extra_recycle).
 */
#include "reader_internal.h"

#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

char *reader_dup_bytes(const uint8_t *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

char *reader_get_string(struct wsp_cursor *c)
{
	size_t n;
	const uint8_t *s = wsp_get_bytes(c, &n);
	return reader_dup_bytes(s ? s : (const uint8_t *)"", s ? n : 0);
}

void reader_module_free(struct module *m)
{
	if (!m)
		return;
	free(m->path);
	free(m->build_id);
	free(m->segs);
}

/* What an extra owns. */
static void extra_clear(struct extra *x)
{
	free(x->path);
	free(x->regions);
	if (x->mod) {
		reader_module_free(x->mod);
		free(x->mod);
	}
}

void reader_extra_free(struct extra *x)
{
	if (!x)
		return;
	extra_clear(x);
	free(x);
}

static struct extra *extra_of(wsprof_trace *t, struct pending *p)
{
	if (p->x)
		return p->x;
	if (!t->spare)
		t->spare = atomic_exchange_explicit(&t->recycled, NULL, memory_order_acquire);
	struct extra *x = t->spare;
	if (x) {
		t->spare = x->next_free;
		*x = (struct extra){ 0 };
	} else {
		x = calloc(1, sizeof *x);
	}
	return p->x = x;
}

/* An extra handed out is done with: what it owns is freed, it waits to be
 * used again (extra_of clears it then). */
void reader_extra_recycle(wsprof_trace *t, struct extra *x)
{
	if (!x)
		return;
	extra_clear(x);
	x->next_free = atomic_load_explicit(&t->recycled, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&t->recycled, &x->next_free, x, memory_order_release,
						      memory_order_relaxed))
		;
}

void reader_extras_free(struct extra *x)
{
	for (struct extra *next; x; x = next) {
		next = x->next_free;
		free(x);
	}
}

/* ---- records into pending events ---------------------------------------- */

/* Begin decoding a chunk's records, in rows or in the column layout
 * (read where they lie: records must outlive the chunk's decoding). */
int reader_chunk_begin(wsprof_trace *t, const uint8_t *records, size_t len, bool columns)
{
	t->chunk = (struct wsp_cursor){ records, records + len, false };
	t->in_columns = columns;
	if (columns) {
		if (!t->columns && !(t->columns = alloc_big(t, sizeof *t->columns)))
			return -ENOMEM;
		if (wsp_columns_begin(&t->iter, t->columns, records, len) > WSP_CHUNK_RAW_MAX)
			return WSPROF_E_CORRUPT;
	}
	memset(&t->seg, 0, sizeof t->seg);
	t->in_chunk = true;
	return 1;
}

/* A segment is one thread's: most events are of the thread noted last. */
static int tid_note(wsprof_trace *t, uint32_t tid)
{
	if (tid && tid == t->last_tid)
		return 0;
	t->last_tid = tid;
	if (t->w.threads * 2 >= t->tidcap) {
		size_t ncap = t->tidcap ? t->tidcap * 2 : 64;
		uint32_t *n = calloc(ncap, sizeof *n);
		if (!n)
			return -ENOMEM;
		for (size_t i = 0; i < t->tidcap; i++) {
			if (!t->tids[i])
				continue;
			size_t j = t->tids[i] * 2654435761u & (ncap - 1);
			while (n[j])
				j = (j + 1) & (ncap - 1);
			n[j] = t->tids[i];
		}
		free(t->tids);
		t->tids = n;
		t->tidcap = ncap;
	}
	size_t j = (uint64_t)tid * 2654435761u & (t->tidcap - 1);
	while (t->tids[j] && t->tids[j] != tid)
		j = (j + 1) & (t->tidcap - 1);
	if (!t->tids[j]) {
		t->tids[j] = tid;
		t->w.threads++;
	}
	return 0;
}

/* Stack ids come from one counter and each is defined once, the ones still
 * in other threads' buffers a little later: an id far beyond the count of
 * those defined is corruption, not a reason to allocate. (Far beyond the
 * highest would not do: a run of far jumps, each from the last, makes a
 * few hundred bytes ask for gigabytes.) The node itself goes to the
 * caller's table with the batch being filled. */
int reader_add_stack(wsprof_trace *t, uint64_t id, uint64_t parent, uint64_t ip)
{
	if (id == 0 || id > t->defined_stacks + (1u << 20))
		return WSPROF_E_CORRUPT;
	size_t word = (size_t)(id / 64);
	if (word >= t->defwords) {
		size_t cap = t->defwords;
		if (wsp_grow(&t->defined, &cap, word + 1, sizeof *t->defined))
			return -ENOMEM;
		memset(t->defined + t->defwords, 0, (cap - t->defwords) * sizeof *t->defined);
		t->defwords = cap;
	}
	uint64_t bit = 1ull << (id % 64);
	if (!(t->defined[word] & bit)) {
		t->defined[word] |= bit;
		t->defined_stacks++;
	}
	struct batch *b = t->filling;
	if (wsp_grow(&b->defs, &b->defcap, b->ndefs + 1, sizeof *b->defs))
		return -ENOMEM;
	b->defs[b->ndefs++] = (struct stack_def){ id, parent, ip };
	return 0;
}

static struct pending *pending_push(wsprof_trace *t, struct segment *s, uint64_t dseq, uint64_t dtime)
{
	if (t->npend == t->pendcap && grow_big(t, &t->pend, &t->pendcap, t->npend + 1, sizeof *t->pend))
		return NULL;
	if (__builtin_expect(!t->run_open || !t->nruns, 0)) {
		if (wsp_grow(&t->runs, &t->runcap, t->nruns + 1, sizeof *t->runs))
			return NULL;
		t->runs[t->nruns++] = (struct run){ t->npend, t->npend };
		t->run_open = true;
	}
	t->runs[t->nruns - 1].end++;
	t->nlive++;
	if (WSP_CHECKED && (s->seq + dseq < s->seq || s->seq + dseq < t->out_seq))
		t->disordered = true;
	s->seq += dseq;
	s->time += dtime;
	if (s->time > t->w.last_time)
		t->w.last_time = s->time;
	struct pending *p = &t->pend[t->npend++];
	*p = (struct pending){ .seq = s->seq, .time = s->time, .tid = s->tid, .device = -1 };
	return p;
}

/* A stream and a handle, kept only when there are any. */
static int put_stream_handle(wsprof_trace *t, struct pending *p, uint64_t stream, uint64_t handle)
{
	if (!stream && !handle)
		return 0;
	struct extra *x = extra_of(t, p);
	if (!x)
		return -ENOMEM;
	x->stream = stream;
	x->handle = handle;
	return 0;
}

static uint64_t get_addr(struct segment *s, struct wsp_cursor *r)
{
	s->addr += (uint64_t)wsp_unzigzag(wsp_get_field(r));
	return s->addr;
}

/* A device ordinal, written plus one (0: none). One that no int holds is
 * corrupt. */
static int get_device(struct wsp_cursor *r)
{
	uint64_t d = wsp_get_field(r);
	if (d > (uint64_t)INT_MAX + 1) {
		r->bad = true;
		return -1;
	}
	return d ? (int)(d - 1) : -1;
}

/* CUDA events append the device (+1, 0: none), the stream and, for
 * allocations, the VMM handle a mapping maps (format 1.1). Other events
 * end before them: no call for those. */
static int get_cuda_fields(wsprof_trace *t, struct pending *p, struct wsp_cursor *r, bool handle)
{
	p->device = get_device(r);
	uint64_t stream = wsp_get_field(r);
	return put_stream_handle(t, p, stream, handle ? wsp_get_field(r) : 0);
}

static int decode_module_load(wsprof_trace *t, struct pending *p, struct wsp_cursor *r)
{
	p->type = WSPROF_EV_MODULE_LOAD;
	struct extra *x = extra_of(t, p);
	struct module *m = x ? x->mod = calloc(1, sizeof *m) : NULL;
	if (!m)
		return -ENOMEM;
	m->base = p->addr = wsp_get_field(r);
	size_t n;
	const uint8_t *path = wsp_get_bytes(r, &n);
	const uint8_t *bid = wsp_get_bytes(r, &m->build_id_len);
	uint64_t nsegs = wsp_get_field(r);
	if (r->bad || nsegs > (uint64_t)(r->end - r->p))
		return WSPROF_E_CORRUPT;
	m->path = reader_dup_bytes(path, n);
	m->build_id = (uint8_t *)reader_dup_bytes(bid, m->build_id_len);
	m->segs = calloc(nsegs ? nsegs : 1, sizeof *m->segs);
	if (!m->path || !m->build_id || !m->segs)
		return -ENOMEM;
	for (uint64_t i = 0; i < nsegs; i++) {
		m->segs[i][0] = wsp_get_field(r);
		m->segs[i][1] = wsp_get_field(r);
		wsp_get_field(r); /* p_flags */
	}
	m->nsegs = (size_t)nsegs;
	return r->bad ? WSPROF_E_CORRUPT : 0;
}

static int decode_access(wsprof_trace *t, struct pending *p, struct wsp_cursor *r)
{
	p->type = WSPROF_EV_ACCESS;
	p->op = (unsigned)wsp_get_field(r);
	p->size = wsp_get_field(r);
	uint64_t n = wsp_get_field(r);
	if (n > (uint64_t)(r->end - r->p) / 2) { /* each region takes two bytes at least */
		r->bad = true;
		return 0;
	}
	struct extra *x = extra_of(t, p);
	if (!x || !(x->regions = malloc((n ? n : 1) * sizeof *x->regions)))
		return -ENOMEM;
	uint64_t end = 0;
	for (uint64_t i = 0; i < n; i++) {
		x->regions[i].addr = end + wsp_get_field(r);
		x->regions[i].len = wsp_get_field(r);
		end = x->regions[i].addr + x->regions[i].len;
	}
	x->nregions = (size_t)n;
	return 0;
}

/* A string the event owns: an annotation's text (if any), an exec's path. */
static int put_path(wsprof_trace *t, struct pending *p, const uint8_t *s, size_t n)
{
	struct extra *x = extra_of(t, p);
	return x && (x->path = reader_dup_bytes(s, n)) ? 0 : -ENOMEM;
}

static int decode_event(wsprof_trace *t, struct segment *s, uint64_t type, struct wsp_cursor *r)
{
	uint64_t dseq = wsp_get_field(r), dtime = wsp_get_field(r);
	struct pending *p = pending_push(t, s, dseq, dtime);
	if (!p)
		return -ENOMEM;
	int err = 0;
	unsigned kind = 0;
	size_t n;
	const uint8_t *text;
	switch (type) {
	case WSP_REC_ALLOC:
	case WSP_REC_FAIL:
		p->type = type == WSP_REC_ALLOC ? WSPROF_EV_ALLOC : WSPROF_EV_FAIL;
		kind = (unsigned)wsp_get_field(r);
		p->op = (unsigned)wsp_get_field(r);
		if (type == WSP_REC_ALLOC)
			p->addr = get_addr(s, r);
		p->size = wsp_get_field(r);
		p->stack = wsp_get_field(r);
		err = r->p < r->end ? get_cuda_fields(t, p, r, true) : 0;
		break;
	case WSP_REC_FREE:
	case WSP_REC_MOVE:
	case WSP_REC_UNMAP:
		p->type = type == WSP_REC_FREE ? WSPROF_EV_FREE
			: type == WSP_REC_MOVE ? WSPROF_EV_MOVE : WSPROF_EV_UNMAP;
		kind = (unsigned)wsp_get_field(r);
		p->op = (unsigned)wsp_get_field(r);
		p->addr = get_addr(s, r);
		if (type != WSP_REC_FREE)
			p->size = wsp_get_field(r);
		else
			err = r->p < r->end ? get_cuda_fields(t, p, r, false) : 0;
		break;
	case WSP_REC_STREAM_REACHED:
		p->type = WSPROF_EV_STREAM_REACHED;
		kind = (unsigned)wsp_get_field(r);
		p->op = (unsigned)wsp_get_field(r);
		p->addr = get_addr(s, r);
		err = put_stream_handle(t, p, wsp_get_field(r), 0);
		break;
	case WSP_REC_ANNOTATE:
		p->type = WSPROF_EV_ANNOTATE;
		p->op = (unsigned)wsp_get_field(r);
		p->addr = get_addr(s, r);
		p->size = wsp_get_field(r);
		err = put_stream_handle(t, p, 0, wsp_get_field(r));
		text = wsp_get_bytes(r, &n);
		if (!err && !r->bad && n)
			err = put_path(t, p, text, n);
		break;
	case WSP_REC_ACCESS:
		err = decode_access(t, p, r);
		break;
	case WSP_REC_RSS:
		p->type = WSPROF_EV_RSS;
		p->size = wsp_get_field(r);
		break;
	case WSP_REC_HEAP_TOTALS: {
		p->type = WSPROF_EV_HEAP_TOTALS;
		struct extra *x = extra_of(t, p);
		if (!x) {
			err = -ENOMEM;
			break;
		}
		wsprof_heap_totals *h = &x->heap;
		uint64_t *fields[] = { &h->allocations, &h->frees, &h->requested, &h->given, &h->given_back, &h->peak, &h->peak_ns };
		for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
			*fields[i] = wsp_get_field(r);
		break;
	}
	case WSP_REC_RECORDING:
		p->type = WSPROF_EV_RECORDING;
		p->size = wsp_get_field(r) ? 1 : 0;
		p->op = (unsigned)wsp_get_field(r);
		if (p->op >= WSPROF_REC_CAUSE_COUNT)
			err = WSPROF_E_CORRUPT;
		break;
	case WSP_REC_DEVICE_MEMORY: {
		p->type = WSPROF_EV_DEVICE_MEMORY;
		p->device = get_device(r);
		struct extra *x = extra_of(t, p);
		if (!x) {
			err = -ENOMEM;
			break;
		}
		x->device_free = wsp_get_field(r);
		x->device_total = wsp_get_field(r);
		break;
	}
	case WSP_REC_MODULE_LOAD:
		err = decode_module_load(t, p, r);
		break;
	case WSP_REC_MODULE_UNLOAD:
		p->type = WSPROF_EV_MODULE_UNLOAD;
		p->addr = wsp_get_field(r);
		break;
	case WSP_REC_FORK: {
		p->type = WSPROF_EV_FORK;
		struct extra *x = extra_of(t, p);
		if (x)
			x->child_pid = (uint32_t)wsp_get_field(r);
		else
			err = -ENOMEM;
		break;
	}
	case WSP_REC_EXEC:
		p->type = WSPROF_EV_EXEC;
		text = wsp_get_bytes(r, &n);
		if (!r->bad)
			err = put_path(t, p, text, n);
		break;
	}
	if (r->bad || kind >= WSPROF_KIND_COUNT)
		err = err ? err : WSPROF_E_CORRUPT;
	if (err) {
		reader_extra_free(p->x);
		t->npend--;
		t->runs[t->nruns - 1].end--;
		t->nlive--;
		return err;
	}
	p->kind = (uint8_t)kind;
	if (type <= WSP_REC_UNMAP)
		t->w.events++;
	/* Threads are the program's: wsprof's own (writer, sampler) record only
	 * samples, never an allocation or an annotation. */
	if (type <= WSP_REC_UNMAP || type == WSP_REC_ANNOTATE)
		return tid_note(t, s->tid);
	return 0;
}

/* An ALLOC or FREE of the column layout, its fields decoded already. */
static int decode_compact(wsprof_trace *t, struct segment *s, const struct wsp_col_record *cr)
{
	if (cr->kind >= WSPROF_KIND_COUNT)
		return WSPROF_E_CORRUPT;
	struct pending *p = pending_push(t, s, cr->dseq, cr->dtime);
	if (!p)
		return -ENOMEM;
	p->type = cr->type == WSP_REC_ALLOC ? WSPROF_EV_ALLOC : WSPROF_EV_FREE;
	p->kind = (uint8_t)cr->kind;
	p->op = (unsigned)cr->op;
	p->addr = s->addr = cr->addr; /* the row format's deltas go on from it */
	p->size = cr->size;
	p->stack = cr->stack;
	t->w.events++;
	return tid_note(t, s->tid);
}

/* The next record of the chunk being decoded: 1 with its type and a
 * cursor over its payload (for an ALLOC or FREE of the column layout,
 * cr->compact and its fields instead), 0 at the chunk's end, or damage. */
static int next_record(wsprof_trace *t, uint64_t *type, struct wsp_cursor *r, struct wsp_col_record *cr)
{
	if (t->in_columns) {
		int got = wsp_columns_next(&t->iter, cr);
		if (got <= 0)
			return got < 0 ? WSPROF_E_CORRUPT : 0;
		*type = cr->type;
		*r = cr->compact ? (struct wsp_cursor){ NULL, NULL, false }
				 : (struct wsp_cursor){ cr->payload, cr->payload + cr->len, false };
		return 1;
	}
	struct wsp_cursor *c = &t->chunk;
	if (c->p >= c->end)
		return 0;
	*type = wsp_get_varint(c);
	uint64_t rlen = wsp_get_varint(c);
	if (c->bad || rlen > (uint64_t)(c->end - c->p))
		return WSPROF_E_CORRUPT;
	*r = (struct wsp_cursor){ c->p, c->p + rlen, false };
	c->p += rlen;
	cr->compact = false;
	return 1;
}

static int read_pycode(wsprof_trace *t, struct wsp_cursor *r)
{
	uint64_t id = wsp_get_field(r), first = wsp_get_field(r);
	size_t qn, fn, ln;
	const uint8_t *q = wsp_get_bytes(r, &qn), *f = wsp_get_bytes(r, &fn), *l = wsp_get_bytes(r, &ln);
	if (r->bad || !q || !f || !l)
		return WSPROF_E_CORRUPT;
	int err = wsp_pycodes_add(&t->pycodes, id, first, reader_dup_bytes(q, qn), reader_dup_bytes(f, fn),
				  (uint8_t *)reader_dup_bytes(l, ln), ln);
	t->w.pycodes = t->pycodes.count;
	return err;
}

/* A stamped record, not an event: its deltas still move the segment's. */
static int read_python(wsprof_trace *t, struct segment *seg, struct wsp_cursor *r)
{
	seg->seq += wsp_get_field(r);
	seg->time += wsp_get_field(r);
	uint64_t version = wsp_get_field(r), frames = wsp_get_field(r), objects = wsp_get_field(r);
	char *path = reader_get_string(r), *note = reader_get_string(r);
	if (!path || !note) {
		free(path);
		free(note);
		return -ENOMEM;
	}
	if (r->bad || t->python.seen) { /* one interpreter a process */
		free(path);
		free(note);
		return r->bad ? WSPROF_E_CORRUPT : 0;
	}
	t->python = (wsprof_python){ 1, (uint32_t)version, frames != 0, (unsigned)objects, path, note };
	t->w.python = true;
	return 0;
}

/* A segment's events are in seq order: its last seq, once it has pushed
 * one (its run is open), is the highest of the segment, which the chunk's
 * place keeps. Nothing to do for each event. */
static void segment_close(wsprof_trace *t, const struct segment *seg)
{
	if (seg->open && t->run_open && seg->seq > t->place.max_seq)
		t->place.max_seq = seg->seq;
}

int reader_place_add(wsprof_trace *t, const struct wsp_chunk_place *p)
{
	if (wsp_grow(&t->places, &t->placecap, t->nplaces + 1, sizeof *t->places))
		return -ENOMEM;
	t->places[t->nplaces++] = *p;
	return 0;
}

/* Decode the current chunk's records until a SYNC begins a release (1),
 * the chunk ends (0), or the batch being filled holds BATCH_DEFS stack
 * nodes (2): only the events between two SYNCs are ever held. */
int reader_decode_some(wsprof_trace *t)
{
	struct segment *seg = &t->seg;
	for (;;) {
		uint64_t type;
		struct wsp_cursor r;
		struct wsp_col_record cr;
		int got = next_record(t, &type, &r, &cr);
		if (got <= 0) {
			if (got < 0)
				return got;
			break;
		}
		int err = 0;
		switch (type) {
		case WSP_REC_SEGMENT:
			segment_close(t, seg);
			t->run_open = false; /* its events are a run of their own */
			seg->tid = (uint32_t)wsp_get_field(&r);
			seg->seq = wsp_get_field(&r);
			seg->time = wsp_get_field(&r);
			seg->addr = 0;
			seg->open = true;
			break;
		case WSP_REC_SYNC: {
			uint64_t watermark = wsp_get_field(&r), time = wsp_get_field(&r);
			if (time > t->w.last_time)
				t->w.last_time = time; /* a quiet program's trace still shows how long it ran */
			if (watermark > t->place.watermark)
				t->place.watermark = watermark;
			err = reader_release_begin(t, watermark, false);
			break;
		}
		case WSP_REC_STACK: {
			uint64_t id = wsp_get_field(&r), parent = wsp_get_field(&r), ip = wsp_get_field(&r);
			err = r.bad ? WSPROF_E_CORRUPT : reader_add_stack(t, id, parent, ip);
			break;
		}
		case WSP_REC_PYFRAME: {
			uint64_t id = wsp_get_field(&r), parent = wsp_get_field(&r), code = wsp_get_field(&r),
				 instr = wsp_get_field(&r);
			err = r.bad || code >> 39 || instr > 0xffffff
				      ? WSPROF_E_CORRUPT
				      : reader_add_stack(t, id, parent, WSPROF_PYFRAME_IP(code, instr));
			break;
		}
		case WSP_REC_PY_CODE:
			err = read_pycode(t, &r);
			break;
		case WSP_REC_PYTHON:
			if (!seg->open)
				return WSPROF_E_CORRUPT;
			err = read_python(t, seg, &r);
			break;
		case WSP_REC_ALLOC: case WSP_REC_FREE: case WSP_REC_MOVE: case WSP_REC_FAIL:
		case WSP_REC_UNMAP: case WSP_REC_MODULE_LOAD: case WSP_REC_MODULE_UNLOAD:
		case WSP_REC_FORK: case WSP_REC_EXEC: case WSP_REC_STREAM_REACHED: case WSP_REC_DEVICE_MEMORY:
		case WSP_REC_ANNOTATE: case WSP_REC_ACCESS: case WSP_REC_RSS: case WSP_REC_RECORDING:
		case WSP_REC_HEAP_TOTALS:
			if (!seg->open)
				return WSPROF_E_CORRUPT;
			err = cr.compact ? decode_compact(t, seg, &cr) : decode_event(t, seg, type, &r);
			if (type == WSP_REC_EXEC)
				t->w.exec_seen = true;
			break;
		default:
			break; /* a record of a later minor version */
		}
		if (err)
			return err;
		if (r.bad)
			return WSPROF_E_CORRUPT;
		if (t->nheap)
			return 1;
		if (t->filling->ndefs >= BATCH_DEFS)
			return 2;
	}
	segment_close(t, seg);
	t->in_chunk = false;
	t->w.chunks++;
	return reader_place_add(t, &t->place);
}
