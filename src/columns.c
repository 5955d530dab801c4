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
#include <zstd_errors.h>

#define ALLOC_FIELDS 7 /* dseq, dtime, kind, op, daddr, size, stack */
#define FREE_FIELDS 5  /* dseq, dtime, kind, op, daddr */
#define ALLOC_TAG 3    /* then device + 1, stream, handle */
#define FREE_TAG 2     /* then device + 1, stream */
#define ANN_FIELDS 6   /* dseq, dtime, ann, daddr, size, pool; then the text */
#define ACCESS_FIELDS 5 /* dseq, dtime, source, window_ns, n; then n gaps and lengths */
#define MOST_FIELDS (ALLOC_FIELDS + ALLOC_TAG)
#define ACCESS_MOST 127 /* fields in a one-byte length at most */

/* What the type column says of a record. */
enum {
	WHAT_VERBATIM,
	WHAT_ALLOC,
	WHAT_FREE,
	WHAT_ANNOTATE,  /* 3.0 */
	WHAT_ALLOC_TAG, /* 3.0: an ALLOC with its CUDA fields */
	WHAT_FREE_TAG,  /* 3.0: a FREE with its CUDA fields */
	WHAT_ACCESS,    /* 3.0: an ACCESS */
	WHAT_COUNT
};

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
	ws->row_addr = ws->prev_alloc = ws->prev_miss = ws->prev_ann = ws->prev_handle = ws->prev_region = ws->prev_stream = 0;
	ws->nalloc = ws->nfree = ws->nann = 0;
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

/* Whether the free ord is still in the ring (taken again or not): no look
 * at the ring itself, which is a cache miss. */
static bool free_in_ring(const struct wsp_columns *ws, uint32_t ord)
{
	return ord < ws->nfree && ws->nfree - ord <= WSP_COL_RING;
}

static bool free_live(const struct wsp_columns *ws, uint32_t ord)
{
	return free_in_ring(ws, ord) && !ws->frees[ord % WSP_COL_RING].used;
}

static void push_alloc(struct wsp_columns *ws, uint64_t addr, uint32_t cls)
{
	ws->allocs[ws->nalloc % WSP_COL_RING] = (struct wsp_col_block){ addr, cls, false, 0 };
	ws->nalloc++;
	ws->prev_alloc = addr;
}

static void push_free(struct wsp_columns *ws, uint64_t addr, uint32_t cls)
{
	struct wsp_col_class *c = &ws->classes[cls];
	ws->frees[ws->nfree % WSP_COL_RING] = (struct wsp_col_block){ addr, cls, false, (uint8_t)c->head };
	ws->class_ord[cls][c->head] = ws->nfree;
	c->head = (c->head + 1) % WSP_COL_DEPTH;
	if (c->count < WSP_COL_DEPTH)
		c->count++;
	ws->nfree++;
}

static bool alloc_known(const struct wsp_columns *ws, uint32_t ord)
{
	return ord < ws->nalloc && ws->nalloc - ord <= WSP_COL_RING;
}

static bool ann_known(const struct wsp_columns *ws, uint32_t ord)
{
	return ord < ws->nann && ws->nann - ord <= WSP_COL_RING;
}

static void push_ann(struct wsp_columns *ws, uint64_t addr)
{
	ws->anns[ws->nann % WSP_COL_RING] = addr;
	ws->nann++;
	ws->prev_ann = addr;
}

/* Where in its class's ring the k-th newest free class cls remembers is. */
static uint32_t class_index(const struct wsp_columns *ws, uint32_t cls, uint32_t k)
{
	return (ws->classes[cls].head + WSP_COL_DEPTH - 1 - k) % WSP_COL_DEPTH;
}

static uint32_t *class_slot(struct wsp_columns *ws, uint32_t cls, uint32_t k)
{
	return &ws->class_ord[cls][class_index(ws, cls, k)];
}

/* The place of the free ord in its class, newest first, from the index
 * its ring entry keeps (ord a free of the ring). @return UINT32_MAX if
 * the class has forgotten it. */
static uint32_t class_place(struct wsp_columns *ws, uint32_t cls, uint32_t ord)
{
	uint32_t pos = ws->frees[ord % WSP_COL_RING].pos;
	uint32_t k = class_index(ws, cls, pos); /* the map from places to indexes is its own inverse */
	return k < ws->classes[cls].count && ws->class_ord[cls][pos] == ord ? k : UINT32_MAX;
}

/* An allocation has taken the free ord (of the ring) again: its class
 * forgets it, so a class holds only frees not taken and a place is a plain
 * index (both sides forget alike: what a class remembers must be the
 * same). The newer ones move down one, their ring entries told where. */
static void take_free(struct wsp_columns *ws, uint32_t ord)
{
	ws->frees[ord % WSP_COL_RING].used = true;
	uint32_t cls = ws->frees[ord % WSP_COL_RING].cls, k = class_place(ws, cls, ord);
	if (k == UINT32_MAX)
		return;
	for (; k > 0; k--) {
		uint32_t moved = *class_slot(ws, cls, k - 1), at = class_index(ws, cls, k);
		ws->class_ord[cls][at] = moved;
		if (free_in_ring(ws, moved))
			ws->frees[moved % WSP_COL_RING].pos = (uint8_t)at;
	}
	struct wsp_col_class *c = &ws->classes[cls];
	c->head = (c->head + WSP_COL_DEPTH - 1) % WSP_COL_DEPTH;
	c->count--;
}

static uint32_t class_at(struct wsp_columns *ws, uint32_t cls, uint64_t place)
{
	if (place >= ws->classes[cls].count)
		return UINT32_MAX;
	uint32_t ord = *class_slot(ws, cls, (uint32_t)place);
	return free_live(ws, ord) ? ord : UINT32_MAX;
}

/* ---- encoder ------------------------------------------------------------ */

/* The bucket of hints addr belongs to, and *turn the slot it takes by turns. */
static size_t hint_bucket(const struct wsp_columns *ws, uint64_t addr, unsigned *turn)
{
	uint64_t h = (addr >> 4) * UINT64_C(0x9E3779B97F4A7C15);
	*turn = (unsigned)(h >> 19) & 3;
	return (size_t)(h >> (64 - ws->hint_bits));
}

/* The hint for addr: its slot, or a slot taken for it (one whose ords have
 * left the rings, else one by turns). One cache line read: the slots hold
 * their whole address, and which one to take is told from the ords alone. */
static struct wsp_col_slot *hint(struct wsp_columns *ws, uint64_t addr)
{
	unsigned turn;
	struct wsp_col_slot *b = ws->hints[hint_bucket(ws, addr, &turn)], *victim = &b[turn];
	for (int i = 0; i < 4; i++) {
		if (b[i].addr == addr)
			return &b[i];
		if (!alloc_known(ws, b[i].alloc) && !free_in_ring(ws, b[i].free))
			victim = &b[i];
	}
	*victim = (struct wsp_col_slot){ addr, UINT32_MAX, UINT32_MAX };
	return victim;
}

/* addr's hint if it has one: a look that takes no slot. */
static const struct wsp_col_slot *hint_find(const struct wsp_columns *ws, uint64_t addr)
{
	unsigned turn;
	const struct wsp_col_slot *b = ws->hints[hint_bucket(ws, addr, &turn)];
	for (int i = 0; i < 4; i++)
		if (b[i].addr == addr)
			return &b[i];
	return NULL;
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

/* v as a varint at p, if it fits before end. @return past it, or NULL. */
static uint8_t *put_varint_within(uint8_t *p, const uint8_t *end, uint64_t v)
{
	if (end - p >= 10)
		return wsp_put_varint(p, v);
	uint8_t tmp[10];
	size_t k = (size_t)(wsp_put_varint(tmp, v) - tmp);
	if (k > (size_t)(end - p))
		return NULL;
	memcpy(p, tmp, k);
	return p + k;
}

/* The canonical row encoding of a record of nf varint fields and then
 * n bytes of text (with its length) if text: what the decoder writes, in
 * out's cap bytes. @return its length, or 0 if it does not fit them or a
 * one-byte length (fields the decoder read may be anything). */
static size_t put_row(uint8_t *out, size_t cap, uint64_t type, const uint64_t *f, int nf, const uint8_t *text,
		      size_t n)
{
	const uint8_t *end = out + (cap < WSP_COL_ROW_MAX ? cap : WSP_COL_ROW_MAX);
	uint8_t *p = out + 2;
	for (int i = 0; i < nf && p; i++)
		p = put_varint_within(p, end, f[i]);
	if (p && text && (p = put_varint_within(p, end, n)) && n <= (size_t)(end - p)) {
		memcpy(p, text, n);
		p += n;
	} else if (text) {
		p = NULL;
	}
	if (!p)
		return 0;
	out[0] = (uint8_t)type;
	out[1] = (uint8_t)(p - out - 2);
	return (size_t)(p - out);
}

/* Read up to max minimal varints from p on. @return how many, up to end
 * or the first that is not one, and *at where they stopped. Most fields
 * are a byte (a sequence or time delta, a kind, an op): those take one
 * compare. */
static int minimal_fields(const uint8_t *p, const uint8_t *end, uint64_t *f, int max, const uint8_t **at)
{
	int i = 0;
	for (; i < max && p < end; i++) {
		if (*p < 0x80) {
			f[i] = *p++;
			continue;
		}
		const uint8_t *q = p;
		uint64_t v = 0;
		for (int shift = 0;; shift += 7) {
			if (q == end || shift > 63)
				goto out;
			uint8_t b = *q++;
			v |= (uint64_t)(b & 0x7f) << shift;
			if (!(b & 0x80)) {
				if (!b) /* a padded varint (its first byte continued) */
					goto out;
				break;
			}
		}
		f[i] = v;
		p = q;
	}
out:
	*at = p;
	return i;
}

/* The fields of a record that is exactly its canonical encoding: one-byte
 * type and length, minimal varints and nothing more. @return how many
 * (up to max), or -1 if the record is not so. */
static int canonical(const uint8_t *rec, const uint8_t *end, uint64_t *f, int max)
{
	if (rec[1] >= 0x80 || rec + 2 + rec[1] != end)
		return -1;
	const uint8_t *at;
	int n = minimal_fields(rec + 2, end, f, max, &at);
	return at == end ? n : -1;
}

/* An ANNOTATE's fields and text if the record is its canonical encoding:
 * @return the text's length, or -1. */
static long canonical_ann(const uint8_t *rec, const uint8_t *end, uint64_t *f, const uint8_t **text)
{
	if (rec[1] >= 0x80 || rec + 2 + rec[1] != end)
		return -1;
	const uint8_t *at;
	uint64_t n;
	if (minimal_fields(rec + 2, end, f, ANN_FIELDS, &at) != ANN_FIELDS ||
	    minimal_fields(at, end, &n, 1, &at) != 1 || n != (uint64_t)(end - at))
		return -1;
	*text = at;
	return (long)n;
}

/* What ALLOC and FREE both put: what they are, then dseq, dtime, kind, op.
 * The CUDA fields after them, if any, go to their column. */
static void put_common(struct col_writer *w, uint64_t what, const uint64_t *f)
{
	put(w, WSP_COL_TYPE, what);
	put(w, WSP_COL_SEQ, f[0]);
	put(w, WSP_COL_TIME, f[1]);
	put(w, WSP_COL_KIND, f[2]);
	put(w, WSP_COL_KIND, f[3]);
}

/* The CUDA fields: device + 1 as it is; the stream as 0 (none), 1 (the
 * last stream named) or 2 + the zigzag change from it; an allocation's
 * handle (its pool, its physical memory) as the zigzag change from the
 * last one. */
static void put_tag(struct wsp_columns *ws, struct col_writer *w, const uint64_t *tag, int n)
{
	put(w, WSP_COL_TAG, tag[0]);
	uint64_t z = wsp_zigzag((int64_t)(tag[1] - ws->prev_stream));
	put(w, WSP_COL_TAG, !tag[1] ? 0 : tag[1] == ws->prev_stream ? 1 : z + 2); /* tag_codable */
	if (tag[1])
		ws->prev_stream = tag[1];
	if (n == ALLOC_TAG) {
		put(w, WSP_COL_TAG, wsp_zigzag((int64_t)(tag[2] - ws->prev_handle)));
		ws->prev_handle = tag[2];
	}
}

/* Whether put_tag has a code for the stream. */
static bool tag_codable(const struct wsp_columns *ws, const uint64_t *tag)
{
	return wsp_zigzag((int64_t)(tag[1] - ws->prev_stream)) <= UINT64_MAX - 2;
}

static void get_tag(struct wsp_columns *ws, struct wsp_cursor *c, uint64_t *tag, int n)
{
	tag[0] = wsp_get_varint(c);
	uint64_t s = wsp_get_varint(c);
	tag[1] = s == 0 ? 0 : s == 1 ? ws->prev_stream : ws->prev_stream + (uint64_t)wsp_unzigzag(s - 2);
	if (tag[1])
		ws->prev_stream = tag[1];
	if (n == ALLOC_TAG)
		tag[2] = ws->prev_handle = ws->prev_handle + (uint64_t)wsp_unzigzag(wsp_get_varint(c));
}

/* @return false if the allocation must stay verbatim. */
static bool encode_alloc(struct wsp_columns *ws, struct col_writer *w, const uint64_t *f, bool tag)
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
		take_free(ws, ord);
	ws->row_addr = addr;
	known->alloc = ws->nalloc;
	push_alloc(ws, addr, cls);
	put_common(w, tag ? WHAT_ALLOC_TAG : WHAT_ALLOC, f);
	put(w, WSP_COL_ALLOC, code);
	put(w, WSP_COL_SIZE, f[5]);
	put(w, WSP_COL_STACK, f[6]);
	if (tag)
		put_tag(ws, w, f + ALLOC_FIELDS, ALLOC_TAG);
	return true;
}

static bool encode_free(struct wsp_columns *ws, struct col_writer *w, const uint64_t *f, bool tag)
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
	put_common(w, tag ? WHAT_FREE_TAG : WHAT_FREE, f);
	put(w, WSP_COL_FREE, code);
	if (tag)
		put_tag(ws, w, f + FREE_FIELDS, FREE_TAG);
	return true;
}

/* An annotation's address: the last annotation's (code 1), one k
 * annotations before that (3k + 1), the allocation d ago (3d + 2), or a
 * delta from the last annotation's (3 zigzag). Annotations name blocks
 * the program uses again and again, and just allocated. */
static bool encode_ann(struct wsp_columns *ws, struct col_writer *w, const uint64_t *f, const uint8_t *text,
		       size_t n)
{
	if (f[2] > (UINT64_MAX >> 2))
		return false;
	uint64_t addr = ws->row_addr + (uint64_t)wsp_unzigzag(f[3]), code;
	struct wsp_col_ann_hint *known =
		&ws->ann_hints[((addr >> 3) * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - __builtin_ctz(WSP_COL_ANN_HINTS))];
	uint32_t ord = known->ord;
	if (ws->nann && ws->prev_ann == addr) {
		code = 1;
	} else if (known->addr == addr && ann_known(ws, ord) && ws->anns[ord % WSP_COL_RING] == addr) {
		code = (uint64_t)(ws->nann - 1 - ord) * 3 + 1;
	} else if (ws->nalloc && ws->prev_alloc == addr) {
		code = 1 * 3 + 2; /* the allocation just made: a name, say */
	} else {
		uint64_t z = wsp_zigzag((int64_t)(addr - ws->prev_ann));
		if (z > UINT64_MAX / 3)
			return false;
		code = z * 3;
	}
	*known = (struct wsp_col_ann_hint){ addr, ws->nann };
	ws->row_addr = addr;
	push_ann(ws, addr);
	put(w, WSP_COL_TYPE, WHAT_ANNOTATE);
	put(w, WSP_COL_SEQ, f[0]);
	put(w, WSP_COL_TIME, f[1]);
	put(w, WSP_COL_ANN_ADDR, code);
	/* ann, and what follows: mostly nothing. */
	bool sized = f[4] != 0, more = f[5] != 0 || n != 0;
	put(w, WSP_COL_ANN, f[2] << 2 | (uint64_t)more << 1 | sized);
	if (sized)
		put(w, WSP_COL_ANN, f[4]);
	if (more) {
		put(w, WSP_COL_ANN, f[5]);
		put(w, WSP_COL_ANN, n);
		put_bytes(w, WSP_COL_ANN, text, n);
	}
	return true;
}

/* An ACCESS region's start: the allocation d ago (2d + 1), as a kernel's
 * parameters name whole blocks, or a delta from the last region's start
 * (prev, which it becomes). @return false if the delta has no code. */
static bool region_code(const struct wsp_columns *ws, uint64_t start, uint64_t *prev, uint64_t *code)
{
	const struct wsp_col_slot *known = hint_find(ws, start);
	if (known && alloc_known(ws, known->alloc) && ws->allocs[known->alloc % WSP_COL_RING].addr == start) {
		*code = (uint64_t)(ws->nalloc - known->alloc) * 2 + 1;
	} else {
		uint64_t z = wsp_zigzag((int64_t)(start - *prev));
		if (z > UINT64_MAX / 2)
			return false;
		*code = z * 2;
	}
	*prev = start;
	return true;
}

/* An ACCESS of nf fields (f: dseq, dtime, source, window, n, then each
 * region's gap from the last one's end and its length; the codes replace
 * the gaps in f). @return false if it must stay verbatim. */
static bool encode_access(struct wsp_columns *ws, struct col_writer *w, uint64_t *f, int nf)
{
	if (nf < ACCESS_FIELDS || (nf - ACCESS_FIELDS) % 2 || f[4] != (uint64_t)(nf - ACCESS_FIELDS) / 2)
		return false;
	uint64_t end = 0, prev = ws->prev_region;
	for (int i = ACCESS_FIELDS; i < nf; i += 2) {
		uint64_t start = end + f[i];
		end = start + f[i + 1];
		if (!region_code(ws, start, &prev, &f[i]))
			return false;
	}
	ws->prev_region = prev;
	put(w, WSP_COL_TYPE, WHAT_ACCESS);
	put(w, WSP_COL_SEQ, f[0]);
	put(w, WSP_COL_TIME, f[1]);
	for (int i = 2; i < nf; i++)
		put(w, WSP_COL_ACCESS, f[i]);
	return true;
}

/* Put the record rec..end in columns if it is of a shape they hold.
 * @return false if it must stay verbatim. */
static bool encode_record(struct wsp_columns *ws, struct col_writer *w, uint64_t type, const uint8_t *rec,
			  const uint8_t *end)
{
	if (rec[0] != type)
		return false;
	uint64_t f[ACCESS_MOST];
	int nf;
	const uint8_t *text;
	long n;
	switch (type) {
	case WSP_REC_ALLOC:
		nf = canonical(rec, end, f, MOST_FIELDS);
		return (nf == ALLOC_FIELDS || (nf == ALLOC_FIELDS + ALLOC_TAG && tag_codable(ws, f + ALLOC_FIELDS))) &&
		       encode_alloc(ws, w, f, nf != ALLOC_FIELDS);
	case WSP_REC_FREE:
		nf = canonical(rec, end, f, MOST_FIELDS);
		return (nf == FREE_FIELDS || (nf == FREE_FIELDS + FREE_TAG && tag_codable(ws, f + FREE_FIELDS))) &&
		       encode_free(ws, w, f, nf != FREE_FIELDS);
	case WSP_REC_ANNOTATE:
		n = canonical_ann(rec, end, f, &text);
		return n >= 0 && encode_ann(ws, w, f, text, (size_t)n);
	case WSP_REC_ACCESS:
		nf = canonical(rec, end, f, ACCESS_MOST);
		return nf >= 0 && encode_access(ws, w, f, nf);
	default:
		return false;
	}
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
		if (encode_record(ws, &w, type, rec, c.p))
			continue;
		put(&w, WSP_COL_TYPE, WHAT_VERBATIM);
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
	uint64_t rows = wsp_get_varint(&h), count = wsp_get_varint(&h), len[WSP_COL_COUNT] = { 0 };
	if (h.bad || (count != WSP_COL_COUNT && count != WSP_COL_COUNT_2_0) || rows > SIZE_MAX / 2)
		return SIZE_MAX;
	for (uint64_t i = 0; i < count; i++)
		len[i] = wsp_get_varint(&h);
	if (h.bad)
		return SIZE_MAX;
	const uint8_t *p = h.p;
	for (int i = 0; i < WSP_COL_COUNT; i++) { /* those a 2.5 chunk lacks stay empty */
		if (len[i] > (uint64_t)(h.end - p))
			return SIZE_MAX;
		col[i] = (struct wsp_cursor){ p, p + len[i], false };
		p += len[i];
	}
	return p == h.end ? (size_t)rows : SIZE_MAX;
}

/* A column shorter than this shares its block with the next one: a block's
 * header and tables cost more than what tables of its own would save. */
#define COLUMN_BLOCK_MIN 2048

size_t wsp_columns_compress(ZSTD_CCtx *cctx, void *dst, size_t cap, const uint8_t *in, size_t n)
{
	struct wsp_cursor col[WSP_COL_COUNT];
	ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
	if (columns_open(in, n, col) == SIZE_MAX)
		return ZSTD_compress2(cctx, dst, cap, in, n);
	size_t r = ZSTD_CCtx_setPledgedSrcSize(cctx, n);
	if (ZSTD_isError(r))
		return r;
	ZSTD_outBuffer out = { dst, cap, 0 };
	ZSTD_inBuffer src = { in, 0, 0 };
	for (int i = 0; i < WSP_COL_COUNT; i++) {
		size_t end = (size_t)(col[i].end - in);
		if (end - src.size < COLUMN_BLOCK_MIN)
			continue; /* with the next column, or the frame's end */
		src.size = end;
		r = ZSTD_compressStream2(cctx, &out, &src, ZSTD_e_flush);
		if (ZSTD_isError(r))
			return r;
		if (r) /* dst is too small: what compress2 would say */
			return (size_t)-ZSTD_error_dstSize_tooSmall;
	}
	src.size = n;
	r = ZSTD_compressStream2(cctx, &out, &src, ZSTD_e_end);
	if (ZSTD_isError(r))
		return r;
	return r ? (size_t)-ZSTD_error_dstSize_tooSmall : out.pos;
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
	uint32_t ord;
	if (code % 3 == 0) {
		*addr = ws->prev_alloc + (uint64_t)wsp_unzigzag(code / 3);
		return true;
	}
	if (code % 3 == 1) {
		ord = class_at(ws, cls, code / 3);
		if (ord == UINT32_MAX)
			return false;
	} else {
		uint64_t d = code / 3;
		if (d == 0 || d > ws->nfree)
			return false;
		ord = ws->nfree - (uint32_t)d;
		if (!free_live(ws, ord))
			return false;
	}
	take_free(ws, ord);
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

static bool decode_ann_addr(struct wsp_columns *ws, uint64_t code, uint64_t *addr)
{
	uint64_t k = code / 3;
	if (code % 3 == 0) {
		*addr = ws->prev_ann + (uint64_t)wsp_unzigzag(k);
	} else if (code % 3 == 1) {
		if (k >= ws->nann || k >= WSP_COL_RING)
			return false;
		*addr = ws->anns[(ws->nann - 1 - (uint32_t)k) % WSP_COL_RING];
	} else {
		if (k == 0 || k > ws->nalloc || k > WSP_COL_RING)
			return false;
		*addr = ws->allocs[(ws->nalloc - (uint32_t)k) % WSP_COL_RING].addr;
	}
	return true;
}

/* r, a record of the columns, as rows: in the iterator's row, for the
 * reader to take as a verbatim one. nf fields, then a text if text.
 * @return false if it does not fit. */
static bool rebuild(struct wsp_col_iter *it, struct wsp_col_record *r, const uint64_t *f, int nf, const uint8_t *text,
		    size_t n)
{
	size_t len = put_row(it->row, sizeof it->row, r->type, f, nf, text, n);
	if (!len)
		return false;
	r->compact = false;
	r->record = it->row;
	r->record_len = len;
	r->payload = it->row + 2;
	r->len = len - 2;
	return true;
}

/* An ANNOTATE of the columns. @return 1, or -1 if malformed. */
static int next_ann(struct wsp_col_iter *it, struct wsp_col_record *r)
{
	struct wsp_columns *ws = it->ws;
	struct wsp_cursor *col = it->col, *a = &col[WSP_COL_ANN];
	uint64_t f[ANN_FIELDS], addr;
	f[0] = wsp_get_varint(&col[WSP_COL_SEQ]);
	f[1] = wsp_get_varint(&col[WSP_COL_TIME]);
	uint64_t code = wsp_get_varint(&col[WSP_COL_ANN_ADDR]);
	uint64_t head = wsp_get_varint(a), n = 0;
	f[2] = head >> 2;
	f[4] = head & 1 ? wsp_get_varint(a) : 0;
	f[5] = head & 2 ? wsp_get_varint(a) : 0;
	if (head & 2)
		n = wsp_get_varint(a);
	if (a->bad || n > (uint64_t)(a->end - a->p) || !decode_ann_addr(ws, code, &addr))
		return -1;
	const uint8_t *text = a->p;
	a->p += n;
	f[3] = wsp_zigzag((int64_t)(addr - ws->row_addr));
	r->type = WSP_REC_ANNOTATE;
	if (!rebuild(it, r, f, ANN_FIELDS, text, (size_t)n))
		return -1;
	push_ann(ws, addr);
	ws->row_addr = addr;
	return 1;
}

/* An ACCESS of the columns. @return 1, or -1 if malformed. */
static int next_access(struct wsp_col_iter *it, struct wsp_col_record *r)
{
	struct wsp_columns *ws = it->ws;
	struct wsp_cursor *col = it->col, *a = &col[WSP_COL_ACCESS];
	uint64_t f[ACCESS_MOST];
	f[0] = wsp_get_varint(&col[WSP_COL_SEQ]);
	f[1] = wsp_get_varint(&col[WSP_COL_TIME]);
	for (int i = 2; i < ACCESS_FIELDS; i++)
		f[i] = wsp_get_varint(a);
	if (a->bad || f[4] > (ACCESS_MOST - ACCESS_FIELDS) / 2)
		return -1;
	int nf = ACCESS_FIELDS + 2 * (int)f[4];
	uint64_t end = 0;
	for (int i = ACCESS_FIELDS; i < nf; i += 2) {
		uint64_t code = wsp_get_varint(a), start, d = code / 2;
		f[i + 1] = wsp_get_varint(a);
		if (a->bad)
			return -1;
		if (code % 2 == 0) {
			start = ws->prev_region + (uint64_t)wsp_unzigzag(d);
		} else {
			if (d == 0 || d > ws->nalloc || d > WSP_COL_RING)
				return -1;
			start = ws->allocs[(ws->nalloc - (uint32_t)d) % WSP_COL_RING].addr;
		}
		ws->prev_region = start;
		f[i] = start - end;
		end = start + f[i + 1];
	}
	r->type = WSP_REC_ACCESS;
	return rebuild(it, r, f, nf, NULL, 0) ? 1 : -1;
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
	if (what == WHAT_VERBATIM) {
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
	if (what == WHAT_ANNOTATE)
		return next_ann(it, r);
	if (what == WHAT_ACCESS)
		return next_access(it, r);
	if (what >= WHAT_COUNT)
		return -1;
	r->compact = true;
	uint64_t from = ws->row_addr;
	r->dseq = wsp_get_varint(&col[WSP_COL_SEQ]);
	r->dtime = wsp_get_varint(&col[WSP_COL_TIME]);
	r->kind = wsp_get_varint(&col[WSP_COL_KIND]);
	r->op = wsp_get_varint(&col[WSP_COL_KIND]);
	bool alloc = what == WHAT_ALLOC || what == WHAT_ALLOC_TAG;
	if (alloc) {
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
	if (what != WHAT_ALLOC_TAG && what != WHAT_FREE_TAG)
		return 1;
	/* With its CUDA fields: rows, as the reader parses them. */
	uint64_t f[MOST_FIELDS] = { r->dseq, r->dtime, r->kind, r->op, wsp_zigzag((int64_t)(r->addr - from)), r->size,
				    r->stack };
	int nf = alloc ? ALLOC_FIELDS : FREE_FIELDS, ntag = alloc ? ALLOC_TAG : FREE_TAG;
	get_tag(ws, &col[WSP_COL_TAG], f + nf, ntag);
	return rebuild(it, r, f, nf + ntag, NULL, 0) ? 1 : -1;
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
			rn = put_row(at, sizeof row, r.type, f, r.type == WSP_REC_ALLOC ? ALLOC_FIELDS : FREE_FIELDS, NULL, 0);
		} else {
			if (r.record_len > (size_t)(end - p))
				return -1;
			memcpy(p, r.record, r.record_len);
			p += r.record_len;
			continue;
		}
		if (!rn || rn > (size_t)(end - p))
			return -1;
		if (at == row)
			memcpy(p, row, rn);
		p += rn;
	}
	return got == 0 && p == end ? 0 : -1;
}
