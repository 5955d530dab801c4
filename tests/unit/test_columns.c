/*
 * test_columns.c - the column layout of chunks (src/columns.c): exact
 * round trips of every kind of record, the references it writes for
 * addresses the allocator reuses, records that must stay verbatim, and
 * malformed column chunks refused without reading or writing out of bounds
 * (the checked build runs this under ASan).
 */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_frameHeaderSize */
#include "columns.h"
#include "format.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define CAP (1u << 22)

static struct wsp_columns enc, dec;

/* A chunk's records, as the recorder writes them. */
struct rows {
	uint8_t *p;
	size_t len;
	uint64_t addr; /* the segment's address delta state */
};

static void rec(struct rows *r, unsigned type, const uint64_t *f, int nf)
{
	uint8_t *p = r->p + r->len;
	struct wsp_record_mark m;
	p = wsp_record_open(p, type, WSP_EVENT_RECORD_MAX - 2, &m);
	for (int i = 0; i < nf; i++)
		p = wsp_put_varint(p, f[i]);
	r->len = (size_t)(wsp_record_close(p, &m) - r->p);
}

static void segment(struct rows *r, uint64_t tid)
{
	rec(r, WSP_REC_SEGMENT, (uint64_t[]){ tid, 0, 0 }, 3);
	r->addr = 0;
}

static uint64_t daddr(struct rows *r, uint64_t a)
{
	uint64_t d = wsp_zigzag((int64_t)(a - r->addr));
	r->addr = a;
	return d;
}

static void alloc(struct rows *r, uint64_t a, uint64_t size, uint64_t stack)
{
	uint64_t d = daddr(r, a);
	rec(r, WSP_REC_ALLOC, (uint64_t[]){ 1, 0, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, d, size, stack }, 7);
}

static void release(struct rows *r, uint64_t a)
{
	uint64_t d = daddr(r, a);
	rec(r, WSP_REC_FREE, (uint64_t[]){ 1, 0, WSPROF_KIND_HEAP, WSPROF_OP_FREE, d }, 5);
}

/* A packed chunk, and its columns as the decoder finds them. */
struct encoded {
	uint8_t *area;
	const uint8_t *chunk;
	size_t n;
	const uint8_t *col[WSP_COL_COUNT];
	size_t len[WSP_COL_COUNT];
};

static void encode(const struct rows *r, struct encoded *e)
{
	e->area = malloc(WSP_COL_AREA(CAP));
	e->chunk = wsp_columns_pack(&enc, r->p, r->len, e->area, CAP, &e->n);
	cr_assert_not_null(e->chunk);
	struct wsp_col_iter it;
	cr_assert_eq(wsp_columns_begin(&it, &dec, e->chunk, e->n), r->len, "the header gives the rows' size");
	for (int i = 0; i < WSP_COL_COUNT; i++) {
		e->col[i] = it.col[i].p;
		e->len[i] = (size_t)(it.col[i].end - it.col[i].p);
	}
}

static void encoded_free(struct encoded *e)
{
	free(e->area);
}

static void expect_round_trip(const struct rows *r, struct encoded *e)
{
	encode(r, e);
	uint8_t *back = malloc(r->len + 1);
	cr_assert_eq(wsp_columns_decode(&dec, e->chunk, e->n, back, r->len), 0);
	cr_expect_eq(memcmp(back, r->p, r->len), 0, "the records come back byte for byte");
	free(back);
}

static struct rows rows_new(void)
{
	return (struct rows){ malloc(CAP), 0, 0 };
}

Test(columns, references_for_reused_addresses)
{
	struct rows r = rows_new();
	segment(&r, 7);
	alloc(&r, 0x10000, 100, 3);  /* a delta from 0 */
	alloc(&r, 0x10100, 40, 3);   /* a delta from the last allocation */
	release(&r, 0x10000);        /* the allocation two ago */
	alloc(&r, 0x10000, 104, 4);  /* the newest free of its class (112-byte chunks) */
	release(&r, 0x99990);        /* not allocated here: a delta */
	alloc(&r, 0x99990, 5000, 4); /* unknown size: no class; the free one ago */
	struct encoded e;
	expect_round_trip(&r, &e);
	static const uint8_t types[] = { 0, 1, 1, 2, 1, 2, 1 };
	cr_assert_eq(e.len[WSP_COL_TYPE], sizeof types);
	cr_expect_eq(memcmp(e.col[WSP_COL_TYPE], types, sizeof types), 0);
	/* 0x10000 -> zigzag 0x20000 * 3; +0x100 -> 0x200 * 3; place 0 -> 1; one free ago -> 1 * 3 + 2 */
	uint8_t want_alloc[32], *p = want_alloc;
	p = wsp_put_varint(p, 0x20000 * 3);
	p = wsp_put_varint(p, 0x200 * 3);
	p = wsp_put_varint(p, 1);
	p = wsp_put_varint(p, 5);
	cr_assert_eq(e.len[WSP_COL_ALLOC], (size_t)(p - want_alloc));
	cr_expect_eq(memcmp(e.col[WSP_COL_ALLOC], want_alloc, e.len[WSP_COL_ALLOC]), 0);
	/* two allocations ago -> 2 * 2 + 1; 0x99990 from 0 -> zigzag * 2 */
	uint8_t want_free[16];
	p = wsp_put_varint(want_free, 5);
	p = wsp_put_varint(p, wsp_zigzag(0x99990) * 2);
	cr_assert_eq(e.len[WSP_COL_FREE], (size_t)(p - want_free));
	cr_expect_eq(memcmp(e.col[WSP_COL_FREE], want_free, e.len[WSP_COL_FREE]), 0);
	cr_expect_eq(e.len[WSP_COL_VERBATIM], 2 + 3, "only the SEGMENT is verbatim");
	encoded_free(&e);
	free(r.p);
}

static void annotate(struct rows *r, uint64_t ann, uint64_t a, uint64_t size, uint64_t pool, const char *text)
{
	uint64_t d = daddr(r, a);
	uint8_t *p = r->p + r->len;
	struct wsp_record_mark m;
	p = wsp_record_open(p, WSP_REC_ANNOTATE, WSP_ANNOTATE_PAYLOAD_MAX(text ? strlen(text) : 0), &m);
	uint64_t f[] = { 1, 0, ann, d, size, pool };
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		p = wsp_put_varint(p, f[i]);
	p = wsp_put_bytes(p, text ? text : "", text ? strlen(text) : 0);
	r->len = (size_t)(wsp_record_close(p, &m) - r->p);
}

static void expect_column(const struct encoded *e, int col, const uint8_t *want, size_t n)
{
	cr_assert_eq(e->len[col], n, "column %d: %zu bytes, want %zu", col, e->len[col], n);
	cr_expect_eq(memcmp(e->col[col], want, n), 0, "column %d", col);
}

/* Format 3.0: annotations name their addresses by reference too, and
 * CUDA allocations keep their fields in a column of their own. */
Test(columns, annotations_and_cuda_fields_are_columns)
{
	struct rows r = rows_new();
	segment(&r, 7);
	alloc(&r, 0x10000, 4096, 3);
	annotate(&r, WSPROF_ANN_NAME, 0x10000, 0, 0, "weights"); /* the allocation one ago */
	annotate(&r, WSPROF_ANN_VALID, 0x10000, 0, 0, NULL);     /* the last annotation's */
	annotate(&r, WSPROF_ANN_ACQUIRE, 0x10040, 0, 0, NULL);   /* a delta from it */
	annotate(&r, WSPROF_ANN_TOUCH, 0x10040, 4096, 0, NULL);  /* the last one's, sized */
	annotate(&r, WSPROF_ANN_RELEASE, 0x10000, 0, 0, NULL);   /* the one two before the last */
	uint64_t d = daddr(&r, 0x7e0000000000u);
	rec(&r, WSP_REC_ALLOC, (uint64_t[]){ 1, 0, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC, d, 512, 2, 1, 0, 0x5000 }, 10);
	d = daddr(&r, 0x7e0000000200u);
	rec(&r, WSP_REC_ALLOC, (uint64_t[]){ 1, 0, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC, d, 512, 2, 1, 3, 0x5100 }, 10);
	d = daddr(&r, 0x7e0000000000u);
	rec(&r, WSP_REC_FREE, (uint64_t[]){ 1, 0, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_FREE, d, 1, 3 }, 7);
	char longer[200];
	memset(longer, 'x', sizeof longer - 1);
	longer[sizeof longer - 1] = 0;
	annotate(&r, WSPROF_ANN_NAME, 0x10000, 0, 0, longer); /* too long for a one-byte length: verbatim */
	struct encoded e;
	expect_round_trip(&r, &e);
	expect_column(&e, WSP_COL_TYPE, (const uint8_t[]){ 0, 1, 3, 3, 3, 3, 3, 4, 4, 5, 0 }, 11);
	uint8_t want[64], *p = want;
	p = wsp_put_varint(p, 1 * 3 + 2);
	p = wsp_put_varint(p, 1);
	p = wsp_put_varint(p, wsp_zigzag(0x40) * 3);
	p = wsp_put_varint(p, 1);
	p = wsp_put_varint(p, 2 * 3 + 1);
	expect_column(&e, WSP_COL_ANN_ADDR, want, (size_t)(p - want));
	p = want;
	p = wsp_put_varint(p, WSPROF_ANN_NAME << 2 | 2);
	p = wsp_put_varint(p, 0); /* pool */
	p = wsp_put_bytes(p, "weights", 7);
	p = wsp_put_varint(p, WSPROF_ANN_VALID << 2);
	p = wsp_put_varint(p, WSPROF_ANN_ACQUIRE << 2);
	p = wsp_put_varint(p, WSPROF_ANN_TOUCH << 2 | 1);
	p = wsp_put_varint(p, 4096);
	p = wsp_put_varint(p, WSPROF_ANN_RELEASE << 2);
	expect_column(&e, WSP_COL_ANN, want, (size_t)(p - want));
	p = want;
	p = wsp_put_varint(p, 1);
	p = wsp_put_varint(p, 0);
	p = wsp_put_varint(p, wsp_zigzag(0x5000));
	p = wsp_put_varint(p, 1);
	p = wsp_put_varint(p, wsp_zigzag(3) + 2); /* stream 3: a change from the last (none) */
	p = wsp_put_varint(p, wsp_zigzag(0x100));
	p = wsp_put_varint(p, 1);
	p = wsp_put_varint(p, 1); /* the free's stream: the last one named */
	expect_column(&e, WSP_COL_TAG, want, (size_t)(p - want));
	/* The CUDA free names the allocation two ago. */
	expect_column(&e, WSP_COL_FREE, (const uint8_t[]){ 2 * 2 + 1 }, 1);
	encoded_free(&e);
	free(r.p);
}

/* A kernel launch's accesses name the blocks its parameters point to:
 * references to the allocations, where a 2.x trace wrote whole addresses. */
Test(columns, access_regions_name_allocations)
{
	struct rows r = rows_new();
	segment(&r, 9);
	alloc(&r, 0x7e0000000000u, 4096, 1);
	alloc(&r, 0x7e0000100000u, 512, 1);
	/* source 2 (kernel launches), a moment: the two blocks */
	rec(&r, WSP_REC_ACCESS, (uint64_t[]){ 1, 0, 2, 0, 2, 0x7e0000000000u, 4096, 0x100000 - 4096, 512 }, 9);
	/* a written-pages window of a block not allocated here: a delta */
	rec(&r, WSP_REC_ACCESS, (uint64_t[]){ 1, 0, 0, 100000000, 1, 0x7e0000102000u, 8192 }, 7);
	rec(&r, WSP_REC_ACCESS, (uint64_t[]){ 1, 0, 0, 100000000, 0 }, 5); /* a window with nothing */
	struct encoded e;
	expect_round_trip(&r, &e);
	expect_column(&e, WSP_COL_TYPE, (const uint8_t[]){ 0, 1, 1, 6, 6, 6 }, 6);
	uint8_t want[64], *p = want;
	p = wsp_put_varint(p, 2);
	p = wsp_put_varint(p, 0);
	p = wsp_put_varint(p, 2);
	p = wsp_put_varint(p, 2 * 2 + 1); /* the allocation two ago */
	p = wsp_put_varint(p, 4096);
	p = wsp_put_varint(p, 1 * 2 + 1); /* the one just before */
	p = wsp_put_varint(p, 512);
	p = wsp_put_varint(p, 0);
	p = wsp_put_varint(p, 100000000);
	p = wsp_put_varint(p, 1);
	p = wsp_put_varint(p, wsp_zigzag(0x2000) * 2); /* from the last region's start */
	p = wsp_put_varint(p, 8192);
	p = wsp_put_varint(p, 0);
	p = wsp_put_varint(p, 100000000);
	p = wsp_put_varint(p, 0);
	expect_column(&e, WSP_COL_ACCESS, want, (size_t)(p - want));
	expect_column(&e, WSP_COL_VERBATIM, e.col[WSP_COL_VERBATIM], 2 + 3); /* the SEGMENT alone */
	encoded_free(&e);
	free(r.p);
}

/* An ACCESS whose regions would rebuild into more than a record's one-byte
 * length holds (61 regions of 10-byte varints) is refused, and nothing is
 * written past the row it is rebuilt in. */
Test(columns, an_access_too_long_to_rebuild_is_refused)
{
	uint8_t access[5 * 10 + 61 * 2 * 10], *a = access;
	a = wsp_put_varint(a, 0);
	a = wsp_put_varint(a, 0);
	a = wsp_put_varint(a, 61);
	for (int i = 0; i < 61 * 2; i++)
		a = wsp_put_varint(a, UINT64_MAX - 1); /* even: a delta; 10 bytes each */
	size_t lens[WSP_COL_COUNT] = { 0 };
	lens[WSP_COL_TYPE] = lens[WSP_COL_SEQ] = lens[WSP_COL_TIME] = 1;
	lens[WSP_COL_ACCESS] = (size_t)(a - access);
	uint8_t chunk[WSP_COL_HEADER_MAX + sizeof access + 3], *h = wsp_put_varint(chunk, 4096);
	h = wsp_put_varint(h, WSP_COL_COUNT);
	for (int i = 0; i < WSP_COL_COUNT; i++)
		h = wsp_put_varint(h, lens[i]);
	*h++ = 6; /* the type: an ACCESS */
	*h++ = 1; /* dseq */
	*h++ = 0; /* dtime */
	memcpy(h, access, lens[WSP_COL_ACCESS]);
	h += lens[WSP_COL_ACCESS];
	uint8_t out[4096];
	struct wsp_columns *d = malloc(sizeof *d);
	cr_expect_eq(wsp_columns_decode(d, chunk, (size_t)(h - chunk), out, sizeof out), -1);
	free(d);
}

/* A chunk of a 2.x trace has nine columns: it reads as before. */
Test(columns, a_nine_column_chunk_still_reads)
{
	struct rows r = rows_new();
	segment(&r, 3);
	for (int i = 0; i < 50; i++) {
		alloc(&r, 0x20000u + 0x100u * (uint64_t)(i % 7), 100, 1);
		release(&r, 0x20000u + 0x100u * (uint64_t)(i % 7));
	}
	struct encoded e;
	expect_round_trip(&r, &e);
	for (int i = WSP_COL_COUNT_2_0; i < WSP_COL_COUNT; i++)
		cr_assert_eq(e.len[i], 0);
	uint8_t *old = malloc(e.n), *h = wsp_put_varint(old, r.len);
	h = wsp_put_varint(h, WSP_COL_COUNT_2_0);
	size_t body = 0;
	for (int i = 0; i < WSP_COL_COUNT_2_0; i++) {
		h = wsp_put_varint(h, e.len[i]);
		body += e.len[i];
	}
	memcpy(h, e.col[0], body); /* the columns lie one after the other */
	uint8_t *back = malloc(r.len);
	cr_assert_eq(wsp_columns_decode(&dec, old, (size_t)(h - old) + body, back, r.len), 0);
	cr_expect_eq(memcmp(back, r.p, r.len), 0);
	free(back);
	free(old);
	encoded_free(&e);
	free(r.p);
}

/* Every record type, CUDA fields, padded varints, several segments, more
 * allocations than the rings hold, double frees and frees of strangers. */
Test(columns, every_record_comes_back_exactly)
{
	struct rows r = rows_new();
	uint64_t rng = 12345;
	uint64_t live[512] = { 0 };
	for (int s = 0; s < 3; s++) {
		segment(&r, 100 + (uint64_t)s);
		for (int i = 0; i < 40000; i++) {
			rng = rng * 6364136223846793005u + 1442695040888963407u;
			uint64_t x = rng >> 24, slot = x % 512, a = live[slot];
			if (a && x % 7 == 0) {
				release(&r, a);
				if (x % 3 == 0)
					release(&r, a); /* a double free */
				live[slot] = 0;
			} else if (!a) {
				a = 0x7f0000000000u + (x % 65536) * 16;
				alloc(&r, a, 1 + x % 3000, 1 + x % 17);
				live[slot] = a;
			} else if (x % 11 == 0) {
				release(&r, 0x5500000000u + x); /* allocated elsewhere */
			} else {
				switch (x % 10) {
				case 0: { /* CUDA: device, stream, handle appended */
					uint64_t d = daddr(&r, 0x7e0000000000u + x);
					rec(&r, WSP_REC_ALLOC, (uint64_t[]){ 1, 0, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC, d, 4096, 2, 1, 0, 0 }, 10);
					break;
				}
				case 1: {
					uint64_t d = daddr(&r, 0x7e0000000000u + x);
					rec(&r, WSP_REC_FREE, (uint64_t[]){ 1, 0, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_FREE, d, 1, 0 }, 7);
					break;
				}
				case 2: {
					uint64_t d = daddr(&r, a);
					rec(&r, WSP_REC_MOVE, (uint64_t[]){ 1, 0, WSPROF_KIND_HEAP, WSPROF_OP_REALLOC, d, 64 }, 6);
					break;
				}
				case 3: {
					uint64_t d = daddr(&r, 0x600000000u + x * 4096);
					rec(&r, WSP_REC_UNMAP, (uint64_t[]){ 1, 0, WSPROF_KIND_MMAP, WSPROF_OP_MUNMAP, d, 8192 }, 6);
					break;
				}
				case 4: {
					static const char *const texts[] = { NULL, "", "batch", "a name of some length" };
					annotate(&r, x % 12, x % 5 ? a + 8 * (x % 3) : 0, x % 4 ? 16 : 0, x % 9 == 0 ? a : 0,
						 texts[(x >> 3) % 4]);
					break;
				}
				case 5: {
					uint64_t d = daddr(&r, a);
					rec(&r, WSP_REC_STREAM_REACHED, (uint64_t[]){ 1, 0, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_FREE_ASYNC, d, 9 }, 6);
					break;
				}
				case 6:
					rec(&r, WSP_REC_STACK, (uint64_t[]){ 1 + x % 17, 0, x }, 3);
					break;
				case 7: { /* regions at live blocks, after them, before them (gaps wrap) */
					uint64_t f[5 + 8] = { 1, 0, x % 3, x % 2 ? 100000000 : 0, 1 + x % 4 }, end = 0;
					for (uint64_t k = 0; k < f[4]; k++) {
						uint64_t start = (x >> k) % 3 == 0 ? live[(x >> (4 * k)) % 512]
								 : (x >> k) % 3 == 1 ? end + 4096 * k : end - 65536;
						f[5 + 2 * k] = start - end;
						f[6 + 2 * k] = 1 + (x >> (8 * k)) % 100000;
						end = start + f[6 + 2 * k];
					}
					rec(&r, WSP_REC_ACCESS, f, 5 + 2 * (int)f[4]);
					break;
				}
				case 8: { /* an ALLOC with a padded length: not canonical, verbatim */
					uint8_t *p = r.p + r.len;
					uint64_t d = daddr(&r, a + 0x100000);
					*p++ = WSP_REC_ALLOC;
					uint8_t *len = p;
					p += 2;
					uint8_t *start = p;
					for (int k = 0; k < 7; k++)
						p = wsp_put_varint(p, k == 4 ? d : 1);
					wsp_put_varint_fixed(len, (uint64_t)(p - start), 2);
					r.len = (size_t)(p - r.p);
					break;
				}
				default:
					rec(&r, WSP_REC_SYNC, (uint64_t[]){ x, 0 }, 2);
				}
			}
		}
	}
	struct encoded e;
	expect_round_trip(&r, &e);
	cr_expect_gt(e.len[WSP_COL_ALLOC], 0);
	cr_expect_gt(e.len[WSP_COL_VERBATIM], 0);
	cr_expect_gt(e.len[WSP_COL_ANN_ADDR], 0);
	cr_expect_gt(e.len[WSP_COL_TAG], 0);
	cr_expect_gt(e.len[WSP_COL_ACCESS], 0);
	encoded_free(&e);
	free(r.p);
}

Test(columns, too_small_a_column_is_refused)
{
	struct rows r = rows_new();
	segment(&r, 1);
	for (int i = 0; i < 100; i++)
		alloc(&r, 0x1000u * (uint64_t)i, 10, 1);
	uint8_t *area = malloc(WSP_COL_AREA(64));
	size_t n;
	cr_expect_null(wsp_columns_pack(&enc, r.p, r.len, area, 64, &n));
	free(area);
	free(r.p);
}

/* Cut short, a byte changed, a header lying about sizes: refused or
 * decoded within bounds, never a crash. */
Test(columns, malformed_chunks_are_refused_safely)
{
	struct rows r = rows_new();
	segment(&r, 1);
	for (int i = 0; i < 300; i++) {
		alloc(&r, 0x40000u + 0x40u * (uint64_t)(i % 37), 24 + (uint64_t)i % 50, 1);
		release(&r, 0x40000u + 0x40u * (uint64_t)(i % 37));
	}
	struct encoded e;
	expect_round_trip(&r, &e);
	uint8_t *out = malloc(r.len);
	for (size_t cut = 0; cut < e.n; cut++)
		cr_expect_eq(wsp_columns_decode(&dec, e.chunk, cut, out, r.len), -1, "cut at %zu", cut);
	int refused = 0;
	for (size_t at = 0; at < e.n; at++) {
		uint8_t *copy = malloc(e.n);
		memcpy(copy, e.chunk, e.n);
		copy[at] ^= (uint8_t)(0x5a + at);
		refused += wsp_columns_decode(&dec, copy, e.n, out, r.len) != 0;
		free(copy);
	}
	cr_expect_gt(refused, 0);
	uint8_t lie[WSP_COL_HEADER_MAX], *h = wsp_put_varint(lie, 100);
	h = wsp_put_varint(h, WSP_COL_COUNT);
	for (int i = 0; i < WSP_COL_COUNT; i++)
		h = wsp_put_varint(h, i ? 0 : SIZE_MAX / 4);
	struct wsp_col_iter it;
	cr_expect_eq(wsp_columns_begin(&it, &dec, lie, (size_t)(h - lie)), SIZE_MAX, "a column longer than the chunk");
	cr_expect_eq(wsp_columns_decode(&dec, e.chunk, e.n, out, r.len - 1), -1, "the rows do not fit");
	free(out);
	encoded_free(&e);
	free(r.p);
}

/* How many zstd blocks the frame z (n bytes) has. */
static int zstd_blocks(const uint8_t *z, size_t n)
{
	size_t at = ZSTD_frameHeaderSize(z, n);
	cr_assert(!ZSTD_isError(at));
	int blocks = 0;
	for (bool last = false; !last; blocks++) {
		cr_assert(at + 3 <= n);
		uint32_t h = (uint32_t)z[at] | (uint32_t)z[at + 1] << 8 | (uint32_t)z[at + 2] << 16;
		last = h & 1;
		unsigned type = (h >> 1) & 3;
		at += 3 + (type == 1 ? 1 : h >> 3); /* an RLE block holds one byte */
	}
	return blocks;
}

Test(columns, each_large_column_is_a_zstd_block_of_its_own)
{
	/* Columns of 2 KiB or more end a block; smaller ones join the next. */
	struct rows r = rows_new();
	segment(&r, 1);
	uint64_t x = 12345;
	for (int i = 0; i < 1500; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t a = 0x7f0000000000ull + (x >> 40) * 16;
		alloc(&r, a, 16 + (x >> 20) % 4081, 1);
		release(&r, a);
	}
	struct encoded e;
	encode(&r, &e);
	int flushes = 0;
	size_t pending = (size_t)(e.col[0] - e.chunk); /* the header goes with column 0 */
	for (int i = 0; i < WSP_COL_COUNT; i++) {
		pending += e.len[i];
		if (pending >= 2048) {
			flushes++;
			pending = 0;
		}
	}
	cr_assert_geq(flushes, 4, "sizes, allocation and free codes, and the columns before them");
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	size_t cap = ZSTD_compressBound(e.n), n;
	uint8_t *z = malloc(cap), *back = malloc(e.n);
	n = wsp_columns_compress(cctx, z, cap, e.chunk, e.n);
	cr_assert(!ZSTD_isError(n), "%s", ZSTD_getErrorName(n));
	cr_expect_eq(ZSTD_getFrameContentSize(z, n), e.n, "the frame states its content size");
	cr_assert_eq(ZSTD_decompress(back, e.n, z, n), e.n);
	cr_expect_eq(memcmp(back, e.chunk, e.n), 0, "the chunk comes back byte for byte");
	cr_expect_eq(zstd_blocks(z, n), flushes + 1, "a block each time 2 KiB of columns end, one for the rest");
	size_t whole = ZSTD_compress2(cctx, z, cap, e.chunk, e.n);
	cr_assert(!ZSTD_isError(whole), "%s", ZSTD_getErrorName(whole));
	cr_expect_eq(zstd_blocks(z, whole), 1, "where compressing the chunk at once makes one block");
	cr_expect(ZSTD_isError(wsp_columns_compress(cctx, z, 16, e.chunk, e.n)), "too small a destination is an error");
	ZSTD_freeCCtx(cctx);
	free(z);
	free(back);
	encoded_free(&e);
	free(r.p);
}
