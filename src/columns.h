/*
 * columns.h - the column layout of chunks (format 2.0, grown in 3.0): a reversible
 * transform of a chunk's records that lets zstd see each field of the
 * allocation events on its own, and replaces most addresses by short
 * references. doc/trace-format.md, "Column layout", is the specification.
 *
 * Row records mix fields of very different statistics (sequence deltas,
 * sizes, addresses) byte by byte, which zstd's entropy stage cannot take
 * apart. The writer turns the records of a chunk into thirteen columns
 * (nine in a 2.x trace); the reader turns them back into the very same
 * bytes and decodes those as before. ALLOC, FREE (with or without their CUDA fields), ANNOTATE and
 * ACCESS records of the usual shape become columns; every other record is
 * carried verbatim.
 *
 * Addresses, the largest part of what is left, are predicted within a
 * segment (one thread's buffer), as the allocator itself reuses memory:
 * a free names the allocation it ends by how many allocations ago it was
 * made; an allocation names a block freed earlier in the segment, by its
 * place among the blocks freed of its size class (newest first), or by how
 * many frees ago it was freed; only what neither predicts is an address
 * delta. An annotation names the last annotation of its address or the
 * allocation just made, an access region the allocation it starts at.
 * The encoder finds the references with small hash tables; the decoder
 * needs none, only the rings both sides keep.
 *
 * Neither side allocates: both work in a caller-provided struct
 * wsp_columns (about 1.9 MiB; the recorder's comes from its own pages).
 * The decoder checks every read and write against its bounds and reports
 * malformed input.
 */
#ifndef WSP_COLUMNS_H
#define WSP_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h" /* struct wsp_cursor */

#include <zstd.h>

/* Chunk header flag: the chunk's raw bytes are in the column layout. */
#define WSP_CHUNK_COLUMNS 1u

enum wsp_column {
	WSP_COL_TYPE,      /* 0 verbatim record, 1 ALLOC, 2 FREE */
	WSP_COL_SEQ,       /* dseq of ALLOC and FREE */
	WSP_COL_TIME,      /* dtime */
	WSP_COL_KIND,      /* kind, op */
	WSP_COL_ALLOC,     /* an allocation's address: reference or delta */
	WSP_COL_SIZE,
	WSP_COL_STACK,
	WSP_COL_FREE,      /* a free's address: reference or delta */
	WSP_COL_VERBATIM,  /* every other record, whole */
	/* Format 3.0: */
	WSP_COL_ANN_ADDR,  /* an ANNOTATE's address: reference or delta */
	WSP_COL_ANN,       /* an ANNOTATE's ann, size, pool and text */
	WSP_COL_TAG,       /* the CUDA fields of an ALLOC or FREE */
	WSP_COL_ACCESS,    /* an ACCESS's source, window and regions */
	WSP_COL_COUNT
};

/* The columns of a format 2.x chunk: up to WSP_COL_VERBATIM. */
#define WSP_COL_COUNT_2_0 (WSP_COL_VERBATIM + 1)

/* The longest record the decoder rebuilds into rows: a one-byte type and
 * length, a payload of at most 127 bytes. */
#define WSP_COL_ROW_MAX (2 + 127)

#define WSP_COL_RING (1u << 15)    /* allocations and frees remembered per segment */
#define WSP_COL_CLASSES 512        /* size classes; 0: a block of unknown size */
#define WSP_COL_DEPTH 64           /* frees remembered per size class */
#define WSP_COL_BUCKET_BITS 13      /* encoder hints: 2^13 buckets of 4 */
#define WSP_COL_ANN_HINTS 1024      /* encoder hints for annotated addresses */

struct wsp_col_block {
	uint64_t addr;
	uint32_t cls;
	bool used;   /* a freed block an allocation has taken again */
	uint8_t pos; /* a free's index in its class's ring of ordinals */
};

/* The newest frees of one size class, a ring of their ords. */
struct wsp_col_class {
	uint32_t head, count; /* where the newest is in its ring of ordinals, how many */
};

/* An encoder hint: where an address was last allocated and freed (ords;
 * UINT32_MAX: not known). */
struct wsp_col_slot {
	uint64_t addr;
	uint32_t alloc, free;
};

struct wsp_columns {
	/* Segment state, reset by every SEGMENT record. */
	uint64_t row_addr;   /* what the row format's next address delta is from */
	uint64_t prev_alloc; /* the last allocation's address */
	uint64_t prev_miss;  /* the last free's address that was no reference */
	uint64_t prev_ann;   /* the last annotation's address */
	uint64_t prev_handle; /* the last CUDA handle of an allocation */
	uint64_t prev_region; /* the last ACCESS region's start */
	uint64_t prev_stream; /* the last CUDA stream named */
	uint32_t nalloc, nfree, nann;
	struct wsp_col_block allocs[WSP_COL_RING], frees[WSP_COL_RING];
	uint64_t anns[WSP_COL_RING]; /* the annotations' addresses, in order */
	/* Each class's newest frees: its head and count apart from the
	 * ordinals, so that a reset touches 4 KiB (a short process's trace
	 * is a chunk or two; a page faulted in costs more than the chunk). */
	struct wsp_col_class classes[WSP_COL_CLASSES];
	uint32_t class_ord[WSP_COL_CLASSES][WSP_COL_DEPTH];
	/* Encoder only: hints, checked against the rings (so no reset is
	 * needed), a cache line a bucket, one bucket read an event; a chunk
	 * uses the first 2^hint_bits buckets, about one slot a record. */
	struct wsp_col_slot hints[1u << WSP_COL_BUCKET_BITS][4];
	unsigned hint_bits;
	/* Encoder only: the newest annotation of an address, by its hash
	 * (few addresses, used again and again: a table that stays in cache;
	 * checked against the ring as well). */
	struct wsp_col_ann_hint {
		uint64_t addr;
		uint32_t ord;
	} ann_hints[WSP_COL_ANN_HINTS];
};

/* The header before the columns: the rows' size, the column count and
 * each column's length, 10 bytes each at most. */
#define WSP_COL_HEADER_MAX ((WSP_COL_COUNT + 2) * 10)

/* The bytes wsp_columns_pack's area needs for columns of cap bytes. */
#define WSP_COL_AREA(cap) (WSP_COL_HEADER_MAX + (size_t)WSP_COL_COUNT * (cap))

/* The records in[0..n) in the column layout, built in area (of
 * WSP_COL_AREA(cap) bytes; only what the columns reach is touched).
 * @return where the chunk starts in area, *len its length; NULL if a
 * column would pass cap bytes (the chunk is then written in rows). */
const uint8_t *wsp_columns_pack(struct wsp_columns *ws, const uint8_t *in, size_t n, uint8_t *area, size_t cap,
				size_t *len);

/* Compress the column-layout chunk in[0..n) (as wsp_columns_pack made it)
 * into one zstd frame at dst (cap bytes) with cctx, whose parameters
 * (level, checksum) it keeps; the frame states its content size. Each
 * column of some size ends a zstd block, so that each gets entropy tables
 * of its own instead of sharing a block's with its neighbours (a block is
 * 128 KiB, several small columns or the ends of two large ones). The frame
 * decompresses as any other. @return its size, or a zstd error code
 * (ZSTD_isError). */
size_t wsp_columns_compress(ZSTD_CCtx *cctx, void *dst, size_t cap, const uint8_t *in, size_t n);

/* One record of a column-layout chunk: a verbatim record as written (or
 * rebuilt: an ANNOTATE, an ALLOC or FREE with CUDA fields), or an ALLOC or
 * FREE given by its fields, its address whole. */
struct wsp_col_record {
	uint64_t type;
	bool compact;
	const uint8_t *record, *payload; /* verbatim: the whole record, its payload */
	size_t record_len, len;
	uint64_t dseq, dtime, kind, op, addr, size, stack; /* compact */
};

/* A reading position in a column-layout chunk. */
struct wsp_col_iter {
	struct wsp_columns *ws;
	struct wsp_cursor col[WSP_COL_COUNT];
	uint8_t row[WSP_COL_ROW_MAX]; /* a rebuilt record, until the next one */
};

/* Start reading the chunk in[0..n) (which must outlive the reading) with
 * the decoder state ws. @return the size its records take in rows, or
 * SIZE_MAX if its header is malformed. */
size_t wsp_columns_begin(struct wsp_col_iter *it, struct wsp_columns *ws, const uint8_t *in, size_t n);

/* The next record. @return 1, 0 at the end of the chunk (every column
 * read exactly), -1 if the chunk is malformed. */
int wsp_columns_next(struct wsp_col_iter *it, struct wsp_col_record *r);

/* Turn a column-layout chunk back into its records: out gets exactly the
 * rows' size wsp_columns_begin() returns (cap at least that).
 * @return 0, or -1 if the chunk is malformed. */
int wsp_columns_decode(struct wsp_columns *ws, const uint8_t *in, size_t n, uint8_t *out, size_t cap);

#endif
