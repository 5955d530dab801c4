/*
 * columns.c - the column layout of chunks (see columns.h and
 * doc/trace-format.md, "Column layout").
 *
 * Both directions walk the records in order and keep the same segment
 * state: the rings of the segment's allocations and frees, the newest frees
 * of each size class, and the three addresses deltas are taken from. The
 * encoder only turns a record into columns when the decoder's canonical
 * re-encoding gives back its very bytes, so the transform is exact.
 * Records carried verbatim take no part in the predictions (they only move
 * the row format's address), so both sides stay in step whatever they hold.
 */
#include "columns.h"

#include "format.h"

#include <string.h>

#define ALLOC_FIELDS 7 /* dseq, dtime, kind, op, daddr, size, stack */
#define FREE_FIELDS 5  /* dseq, dtime, kind, op, daddr */

/* glibc's chunk sizes up to 1 KiB (its per-thread caches), then eight
 * classes per power of two; class 0 is a block whose size is not known. */
static uint32_t size_class(uint64_t size)
{
	if (size > (UINT64_C(1) << 60))
		return WSP_COL_CLASSES - 1;
	uint64_t chunk = (size + 8 + 15) & ~UINT64_C(15);
	if (chunk < 32)
		chunk = 32;
	if (chunk <= 1024)
		return (uint32_t)(chunk / 16);
	unsigned msb = 63u - (unsigned)__builtin_clzll(chunk);
	return 65 + (msb - 10) * 8 + (uint32_t)((chunk >> (msb - 3)) & 7);
}

static void segment_reset(struct wsp_columns *ws)
{
	ws->row_addr = ws->prev_alloc = ws->prev_miss = 0;
	ws->nalloc = ws->nfree = 0;
	memset(ws->classes, 0, sizeof ws->classes);
}

/* The row format's address delta of a record carried verbatim, as the
 * reader takes it (an absent field reads as 0). */
static void follow_row_addr(struct wsp_columns *ws, uint64_t type, const uint8_t *payload, size_t len)
{
	int skip;
	switch (type) {
	case WSP_REC_ALLOC:
	case WSP_REC_FREE:
	case WSP_REC_MOVE:
	case WSP_REC_UNMAP:
	case WSP_REC_STREAM_REACHED:
		skip = 4;
		break;
	case WSP_REC_ANNOTATE:
		skip = 3;
		break;
	case WSP_REC_SEGMENT:
		segment_reset(ws);
		return;
	default:
		return;
	}
	struct wsp_cursor r = { payload, payload + len, false };
	for (int i = 0; i < skip; i++)
		wsp_get_field(&r);
	ws->row_addr += (uint64_t)wsp_unzigzag(wsp_get_field(&r));
}

/* ---- the rings and classes both sides keep ----------------------------- */

static bool free_live(const struct wsp_columns *ws, uint32_t ord)
{
	return ord < ws->nfree && ws->nfree - ord <= WSP_COL_RING && !ws->frees[ord % WSP_COL_RING].used;
}

static void push_alloc(struct wsp_columns *ws, uint64_t addr, uint32_t cls)
{
	ws->allocs[ws->nalloc % WSP_COL_RING] = (struct wsp_col_block){ addr, cls, false };
	ws->nalloc++;
	ws->prev_alloc = addr;
}

static void push_free(struct wsp_columns *ws, uint64_t addr, uint32_t cls)
{
	ws->frees[ws->nfree % WSP_COL_RING] = (struct wsp_col_block){ addr, cls, false };
	struct wsp_col_class *c = &ws->classes[cls];
	ws->class_ord[cls][c->head] = ws->nfree;
	c->head = (c->head + 1) % WSP_COL_DEPTH;
	if (c->count < WSP_COL_DEPTH)
		c->count++;
	ws->nfree++;
}

/* The k-th newest free class cls remembers. */
static uint32_t *class_slot(struct wsp_columns *ws, uint32_t cls, uint32_t k)
{
	return &ws->class_ord[cls][(ws->classes[cls].head + WSP_COL_DEPTH - 1 - k) % WSP_COL_DEPTH];
}

/* An allocation has taken the free ord again (at `place` in its class,
 * if known): its class forgets it, so a class holds only frees not taken
 * and a place is a plain index (both sides forget alike: what a class
 * remembers must be the same). */
static void take_free(struct wsp_columns *ws, uint32_t ord, uint32_t place)
{
	ws->frees[ord % WSP_COL_RING].used = true;
	uint32_t cls = ws->frees[ord % WSP_COL_RING].cls;
	struct wsp_col_class *c = &ws->classes[cls];
	for (uint32_t k = place != UINT32_MAX ? place : 0; k < c->count; k++) {
		if (*class_slot(ws, cls, k) != ord)
			continue;
		for (; k > 0; k--) /* the newer ones move down one */
			*class_slot(ws, cls, k) = *class_slot(ws, cls, k - 1);
		c->head = (c->head + WSP_COL_DEPTH - 1) % WSP_COL_DEPTH;
		c->count--;
		return;
	}
}

/* The place of the free ord in its class, newest first (encoder), and the
 * free at a place (decoder). @return UINT32_MAX if there is none. */
static uint32_t class_place(struct wsp_columns *ws, uint32_t cls, uint32_t ord)
{
	for (uint32_t k = 0; k < ws->classes[cls].count; k++)
		if (*class_slot(ws, cls, k) == ord)
			return k;
	return UINT32_MAX;
}

static uint32_t class_at(struct wsp_columns *ws, uint32_t cls, uint64_t place)
{
	if (place >= ws->classes[cls].count)
		return UINT32_MAX;
	uint32_t ord = *class_slot(ws, cls, (uint32_t)place);
	return free_live(ws, ord) ? ord : UINT32_MAX;
}

/* ---- encoder ------------------------------------------------------------ */

/* Whether an allocation's ord still names something in the ring. */
static bool alloc_known(const struct wsp_columns *ws, uint32_t ord)
{
	return ord < ws->nalloc && ws->nalloc - ord <= WSP_COL_RING;
}

/* The hint for addr: its slot, or a slot taken for it (one whose hints no
 * longer hold, else one by turns). */
static struct wsp_col_slot *hint(struct wsp_columns *ws, uint64_t addr)
{
	uint64_t h = (addr >> 4) * UINT64_C(0x9E3779B97F4A7C15);
	uint32_t tag = (uint32_t)(h >> 19);
	struct wsp_col_slot *b = ws->hints[h >> (64 - ws->hint_bits)], *victim = &b[tag & 3];
	for (int i = 0; i < 4; i++) {
		if (b[i].tag == tag)
			return &b[i];
		if (!alloc_known(ws, b[i].alloc) && !free_live(ws, b[i].free))
			victim = &b[i];
	}
	*victim = (struct wsp_col_slot){ tag, UINT32_MAX, UINT32_MAX, 0 };
	return victim;
}

struct col_writer {
	uint8_t *const *col;
	size_t *len, cap;
	bool full;
};

static inline void put(struct col_writer *w, int i, uint64_t v)
{
	if (w->len[i] + 10 > w->cap) {
		w->full = true;
		return;
	}
	w->len[i] = (size_t)(wsp_put_varint(w->col[i] + w->len[i], v) - w->col[i]);
}

static void put_bytes(struct col_writer *w, int i, const uint8_t *p, size_t n)
{
	if (w->len[i] + n > w->cap) {
		w->full = true;
		return;
	}
	memcpy(w->col[i] + w->len[i], p, n);
	w->len[i] += n;
}

/* The canonical row encoding of an ALLOC or FREE: what the decoder writes. */
static size_t put_row(uint8_t *out, uint64_t type, const uint64_t *f, int nf)
{
	uint8_t *p = out + 2;
	for (int i = 0; i < nf; i++)
		p = wsp_put_varint(p, f[i]);
	out[0] = (uint8_t)type;
	out[1] = (uint8_t)(p - out - 2); /* at most 70: one byte */
	return (size_t)(p - out);
}

/* Read an ALLOC's or FREE's fields if the record is exactly their
 * canonical encoding: one-byte type and length, nf minimal varints and
 * nothing more (CUDA fields, say, keep a record verbatim). */
static bool canonical(const uint8_t *rec, const uint8_t *end, uint64_t *f, int nf)
{
	if (rec[1] >= 0x80 || rec + 2 + rec[1] != end)
		return false;
	const uint8_t *p = rec + 2;
	for (int i = 0; i < nf; i++) {
		uint64_t v = 0;
		for (int shift = 0;; shift += 7) {
			if (p == end || shift > 63)
				return false;
			uint8_t b = *p++;
			v |= (uint64_t)(b & 0x7f) << shift;
			if (!(b & 0x80)) {
				if (!b && shift) /* a padded varint */
					return false;
				break;
			}
		}
		f[i] = v;
	}
	return p == end;
}

/* What ALLOC and FREE both put: what they are, then dseq, dtime, kind, op. */
static void put_common(struct col_writer *w, uint64_t what, const uint64_t *f)
{
	put(w, WSP_COL_TYPE, what);
	put(w, WSP_COL_SEQ, f[0]);
	put(w, WSP_COL_TIME, f[1]);
	put(w, WSP_COL_KIND, f[2]);
	put(w, WSP_COL_KIND, f[3]);
}

/* @return false if the allocation must stay verbatim. */
static bool encode_alloc(struct wsp_columns *ws, struct col_writer *w, const uint64_t *f)
{
	uint64_t addr = ws->row_addr + (uint64_t)wsp_unzigzag(f[4]), code;
	struct wsp_col_slot *known = hint(ws, addr);
	uint32_t cls = size_class(f[5]), ord = known->free, place = UINT32_MAX;
	if (ord != UINT32_MAX && !(free_live(ws, ord) && ws->frees[ord % WSP_COL_RING].addr == addr))
		ord = UINT32_MAX;
	if (ord != UINT32_MAX && ws->frees[ord % WSP_COL_RING].cls == cls)
		place = class_place(ws, cls, ord);
	if (place != UINT32_MAX) {
		code = (uint64_t)place * 3 + 1;
	} else if (ord != UINT32_MAX) {
		code = (uint64_t)(ws->nfree - ord) * 3 + 2;
	} else {
		uint64_t z = wsp_zigzag((int64_t)(addr - ws->prev_alloc));
		if (z > UINT64_MAX / 3)
			return false;
		code = z * 3;
	}
	if (ord != UINT32_MAX)
		take_free(ws, ord, place);
	ws->row_addr = addr;
	known->alloc = ws->nalloc;
	push_alloc(ws, addr, cls);
	put_common(w, 1, f);
	put(w, WSP_COL_ALLOC, code);
	put(w, WSP_COL_SIZE, f[5]);
	put(w, WSP_COL_STACK, f[6]);
	return true;
}

static bool encode_free(struct wsp_columns *ws, struct col_writer *w, const uint64_t *f)
{
	uint64_t addr = ws->row_addr + (uint64_t)wsp_unzigzag(f[4]), code;
	struct wsp_col_slot *known = hint(ws, addr);
	uint32_t ord = known->alloc, cls = 0;
	if (alloc_known(ws, ord) && ws->allocs[ord % WSP_COL_RING].addr == addr) {
		code = (uint64_t)(ws->nalloc - ord) * 2 + 1;
		cls = ws->allocs[ord % WSP_COL_RING].cls;
	} else {
		uint64_t z = wsp_zigzag((int64_t)(addr - ws->prev_miss));
		if (z > UINT64_MAX / 2)
			return false;
		code = z * 2;
		ws->prev_miss = addr;
	}
	ws->row_addr = addr;
	known->free = ws->nfree;
	push_free(ws, addr, cls);
	put_common(w, 2, f);
	put(w, WSP_COL_FREE, code);
	return true;
}

/* Split the records in[0..n) into columns: col[i] gets len[i] bytes, each
 * at most cap. @return false if a column would pass cap. */
static bool encode(struct wsp_columns *ws, const uint8_t *in, size_t n, uint8_t *const col[WSP_COL_COUNT], size_t cap,
		   size_t len[WSP_COL_COUNT])
{
	struct col_writer w = { col, len, cap, false };
	memset(len, 0, WSP_COL_COUNT * sizeof *len);
	segment_reset(ws);
	struct wsp_cursor c = { in, in + n, false };
	while (c.p < c.end && !w.full) {
		const uint8_t *rec = c.p;
		uint64_t type = wsp_get_varint(&c), rlen = wsp_get_varint(&c);
		if (c.bad || rlen > (uint64_t)(c.end - c.p))
			return false;
		const uint8_t *payload = c.p;
		c.p += rlen;
		size_t reclen = (size_t)(c.p - rec);
		uint64_t f[ALLOC_FIELDS];
		if (type == WSP_REC_ALLOC && rec[0] == type && canonical(rec, c.p, f, ALLOC_FIELDS) && encode_alloc(ws, &w, f))
			continue;
		if (type == WSP_REC_FREE && rec[0] == type && canonical(rec, c.p, f, FREE_FIELDS) && encode_free(ws, &w, f))
			continue;
		put(&w, WSP_COL_TYPE, 0);
		put_bytes(&w, WSP_COL_VERBATIM, rec, reclen);
		follow_row_addr(ws, type, payload, rlen);
	}
	return !w.full;
}

/* Hint buckets for n bytes of records: about a slot a record (each takes
 * 10 bytes or more), the whole table from 320 KiB of records on. */
static unsigned hint_bits(size_t n)
{
	unsigned bits = 4;
	while (bits < WSP_COL_BUCKET_BITS && (size_t)40 << bits < n)
		bits++;
	return bits;
}

const uint8_t *wsp_columns_pack(struct wsp_columns *ws, const uint8_t *in, size_t n, uint8_t *area, size_t cap,
			       size_t *len)
{
	uint8_t *col[WSP_COL_COUNT];
	size_t clen[WSP_COL_COUNT];
	for (int i = 0; i < WSP_COL_COUNT; i++)
		col[i] = area + WSP_COL_HEADER_MAX + (size_t)i * cap;
	ws->hint_bits = hint_bits(n);
	if (!encode(ws, in, n, col, cap, clen))
		return NULL;
	uint8_t header[WSP_COL_HEADER_MAX], *h = wsp_put_varint(header, n);
	h = wsp_put_varint(h, WSP_COL_COUNT);
	for (int i = 0; i < WSP_COL_COUNT; i++)
		h = wsp_put_varint(h, clen[i]);
	uint8_t *start = area + WSP_COL_HEADER_MAX - (h - header), *p = area + WSP_COL_HEADER_MAX;
	memcpy(start, header, (size_t)(h - header));
	for (int i = 0; i < WSP_COL_COUNT; i++) {
		memmove(p, col[i], clen[i]); /* down, behind the column before */
		p += clen[i];
	}
	*len = (size_t)(p - start);
	return start;
}

/* ---- decoder ------------------------------------------------------------ */

/* Split a chunk into its columns. @return the rows' size, or SIZE_MAX. */
static size_t columns_open(const uint8_t *in, size_t n, struct wsp_cursor col[WSP_COL_COUNT])
{
	struct wsp_cursor h = { in, in + n, false };
	uint64_t rows = wsp_get_varint(&h), count = wsp_get_varint(&h), len[WSP_COL_COUNT];
	if (h.bad || count != WSP_COL_COUNT || rows > SIZE_MAX / 2)
		return SIZE_MAX;
	for (int i = 0; i < WSP_COL_COUNT; i++)
		len[i] = wsp_get_varint(&h);
	if (h.bad)
		return SIZE_MAX;
	const uint8_t *p = h.p;
	for (int i = 0; i < WSP_COL_COUNT; i++) {
		if (len[i] > (uint64_t)(h.end - p))
			return SIZE_MAX;
		col[i] = (struct wsp_cursor){ p, p + len[i], false };
		p += len[i];
	}
	return p == h.end ? (size_t)rows : SIZE_MAX;
}

size_t wsp_columns_begin(struct wsp_col_iter *it, struct wsp_columns *ws, const uint8_t *in, size_t n)
{
	it->ws = ws;
	segment_reset(ws);
	return columns_open(in, n, it->col);
}

/* An allocation's address from its code (cls: its size class). @return
 * false if malformed. */
static bool decode_alloc_addr(struct wsp_columns *ws, uint64_t code, uint32_t cls, uint64_t *addr)
{
	uint32_t ord, place = UINT32_MAX;
	if (code % 3 == 0) {
		*addr = ws->prev_alloc + (uint64_t)wsp_unzigzag(code / 3);
		return true;
	}
	if (code % 3 == 1) {
		ord = class_at(ws, cls, code / 3);
		if (ord == UINT32_MAX)
			return false;
		place = (uint32_t)(code / 3);
	} else {
		uint64_t d = code / 3;
		if (d == 0 || d > ws->nfree)
			return false;
		ord = ws->nfree - (uint32_t)d;
		if (!free_live(ws, ord))
			return false;
	}
	take_free(ws, ord, place);
	*addr = ws->frees[ord % WSP_COL_RING].addr;
	return true;
}

static bool decode_free_addr(struct wsp_columns *ws, uint64_t code, uint64_t *addr, uint32_t *cls)
{
	if (code % 2 == 0) {
		*addr = ws->prev_miss = ws->prev_miss + (uint64_t)wsp_unzigzag(code / 2);
		*cls = 0;
		return true;
	}
	uint64_t d = code / 2;
	if (d == 0 || d > ws->nalloc || d > WSP_COL_RING)
		return false;
	const struct wsp_col_block *b = &ws->allocs[(ws->nalloc - (uint32_t)d) % WSP_COL_RING];
	*addr = b->addr;
	*cls = b->cls;
	return true;
}

/* The end of the columns: every one read exactly to its end. */
static int iter_end(const struct wsp_col_iter *it)
{
	for (int i = 0; i < WSP_COL_COUNT; i++)
		if (it->col[i].bad || it->col[i].p != it->col[i].end)
			return -1;
	return 0;
}

int wsp_columns_next(struct wsp_col_iter *it, struct wsp_col_record *r)
{
	struct wsp_columns *ws = it->ws;
	struct wsp_cursor *col = it->col;
	if (col[WSP_COL_TYPE].p >= col[WSP_COL_TYPE].end)
		return iter_end(it);
	uint64_t what = wsp_get_varint(&col[WSP_COL_TYPE]);
	if (what == 0) {
		struct wsp_cursor *v = &col[WSP_COL_VERBATIM];
		r->record = v->p;
		r->type = wsp_get_varint(v);
		uint64_t len = wsp_get_varint(v);
		if (v->bad || len > (uint64_t)(v->end - v->p))
			return -1;
		r->compact = false;
		r->payload = v->p;
		r->len = (size_t)len;
		v->p += len;
		r->record_len = (size_t)(v->p - r->record);
		follow_row_addr(ws, r->type, r->payload, r->len);
		return 1;
	}
	if (what > 2)
		return -1;
	r->compact = true;
	r->dseq = wsp_get_varint(&col[WSP_COL_SEQ]);
	r->dtime = wsp_get_varint(&col[WSP_COL_TIME]);
	r->kind = wsp_get_varint(&col[WSP_COL_KIND]);
	r->op = wsp_get_varint(&col[WSP_COL_KIND]);
	if (what == 1) {
		r->type = WSP_REC_ALLOC;
		uint64_t code = wsp_get_varint(&col[WSP_COL_ALLOC]);
		r->size = wsp_get_varint(&col[WSP_COL_SIZE]);
		r->stack = wsp_get_varint(&col[WSP_COL_STACK]);
		uint32_t cls = size_class(r->size);
		if (!decode_alloc_addr(ws, code, cls, &r->addr))
			return -1;
		push_alloc(ws, r->addr, cls);
	} else {
		r->type = WSP_REC_FREE;
		r->size = r->stack = 0;
		uint32_t cls;
		if (!decode_free_addr(ws, wsp_get_varint(&col[WSP_COL_FREE]), &r->addr, &cls))
			return -1;
		push_free(ws, r->addr, cls);
	}
	ws->row_addr = r->addr;
	return 1;
}

int wsp_columns_decode(struct wsp_columns *ws, const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	struct wsp_col_iter it;
	size_t rows = wsp_columns_begin(&it, ws, in, n);
	if (rows == SIZE_MAX || rows > cap)
		return -1;
	uint8_t *p = out, *end = out + rows;
	struct wsp_col_record r;
	int got;
	for (uint64_t from = ws->row_addr; (got = wsp_columns_next(&it, &r)) == 1; from = ws->row_addr) {
		uint8_t row[2 + ALLOC_FIELDS * 10], *at = end - p >= (ptrdiff_t)sizeof row ? p : row;
		size_t rn;
		if (r.compact) {
			uint64_t daddr = wsp_zigzag((int64_t)(r.addr - from)); /* the row format's delta */
			uint64_t f[ALLOC_FIELDS] = { r.dseq, r.dtime, r.kind, r.op, daddr, r.size, r.stack };
			rn = put_row(at, r.type, f, r.type == WSP_REC_ALLOC ? ALLOC_FIELDS : FREE_FIELDS);
		} else {
			if (r.record_len > (size_t)(end - p))
				return -1;
			memcpy(p, r.record, r.record_len);
			p += r.record_len;
			continue;
		}
		if (rn > (size_t)(end - p))
			return -1;
		if (at == row)
			memcpy(p, row, rn);
		p += rn;
	}
	return got == 0 && p == end ? 0 : -1;
}
