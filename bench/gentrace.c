/*
 * gentrace - write a synthetic wsprof trace of any number of events, in
 * constant memory, to show that the analyzer's memory is bounded by live
 * blocks and distinct stacks, not by the length of the trace.
 *
 * usage: gentrace OUT EVENTS [LIVE [STACKS]]
 *        (default 100,000 live blocks, 10,000 distinct stacks)
 *
 * The trace follows doc/trace-format.md with the encoders of src/format.h,
 * written as it is made: a header frame, chunks of CHUNK_EVENTS events
 * each ending in a SYNC, a footer. The process has two threads; each
 * chunk holds one segment per thread, their events interleaved by
 * sequence number in runs of RUN steps, so a reader must merge them as it
 * merges a real recording. The first chunk defines the stacks: STACKS
 * call stacks of DEPTH frames, a 4-ary prefix tree (neighbouring stacks
 * share their outer frames).
 *
 * Each step replaces one of LIVE heap blocks chosen at random: the free
 * of the old block (at the slot's address), then the malloc of the new
 * one (same address, as malloc reuses a freed chunk) of 16 B to 4 KiB
 * from one of the stacks, about 100 ns later; until every slot is filled
 * a step is the malloc alone. Exactly EVENTS events are written; the
 * blocks live at the end are leaks. In the column layout and compressed
 * with zstd level 3, as the recorder writes. Prints the events, chunks, stack nodes and bytes written.
 */
#include "columns.h"
#include "format.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define DEPTH 12
#define CHUNK_EVENTS (256u << 10)
#define RUN 32
#define THREADS 2
#define HEAP_BASE 0x7f0000000000ull
#define SLOT_SPACING 4096
#define TEXT_BASE 0x401000ull

struct buf {
	uint8_t *p;
	size_t len, cap;
};

/* One thread's segment of the chunk being built, with its delta state. */
struct segment {
	struct buf b;
	uint64_t seq, time, addr;
	int open;
};

struct gen {
	FILE *out;
	const char *path;
	uint64_t rng;
	uint64_t seq, time;
	uint64_t written;      /* events */
	uint32_t chunks;
	uint64_t bytes;
	uint64_t stack_nodes;
	struct segment seg[THREADS];
	struct buf raw, z, cols;
	ZSTD_CCtx *cctx;
	struct wsp_columns *columns;
	uint64_t *leaf;        /* stack id of each distinct stack */
	uint8_t *live;         /* one flag a slot */
};

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "gentrace: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	exit(1);
}

static void *must(void *p)
{
	if (!p)
		die("out of memory", NULL);
	return p;
}

static void reserve(struct buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	size_t n = b->cap ? b->cap : 1 << 16;
	while (n < b->len + more)
		n *= 2;
	b->p = must(realloc(b->p, n));
	b->cap = n;
}

static uint64_t rand64(struct gen *g)
{
	uint64_t x = g->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	g->rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* A record of varint fields, at most 10 of them. */
static void record(struct buf *b, unsigned type, const uint64_t *fields, size_t n)
{
	reserve(b, WSP_EVENT_RECORD_MAX);
	struct wsp_record_mark m;
	uint8_t *p = wsp_record_open(b->p + b->len, type, 10 * n, &m);
	for (size_t i = 0; i < n; i++)
		p = wsp_put_varint(p, fields[i]);
	b->len = (size_t)(wsp_record_close(p, &m) - b->p);
}

static void put_file(struct gen *g, const void *p, size_t n)
{
	if (fwrite(p, 1, n, g->out) != n)
		die("cannot write", g->path);
	g->bytes += n;
}

static void header(struct gen *g)
{
	static const char exe[] = "/usr/local/bin/gentrace-synthetic", cmdline[] = "gentrace-synthetic";
	static const char version[] = "gentrace";
	struct buf recs = { 0 };
	reserve(&recs, 512);
	struct wsp_record_mark m;
	uint8_t *p = wsp_record_open(recs.p, WSP_REC_PROCESS, 400, &m);
	p = wsp_put_varint(p, 4242);
	p = wsp_put_varint(p, 1);
	p = wsp_put_varint(p, 1700000000000000000ull);
	p = wsp_put_varint(p, g->time);
	p = wsp_put_bytes(p, exe, sizeof exe - 1);
	p = wsp_put_bytes(p, cmdline, sizeof cmdline);
	p = wsp_put_bytes(p, version, sizeof version - 1);
	p = wsp_put_varint(p, 4096);
	p = wsp_put_varint(p, 0);
	recs.len = (size_t)(wsp_record_close(p, &m) - recs.p);
	record(&recs, WSP_REC_CONFIG, (const uint64_t[]){ 64, 200, 0 }, 3);

	uint8_t fixed[WSP_HEADER_FIXED];
	wsp_put_le32(fixed, WSP_MAGIC_HEADER);
	wsp_put_le32(fixed + 4, (uint32_t)(WSP_HEADER_FIXED - 8 + recs.len));
	memcpy(fixed + 8, WSP_SIGNATURE, WSP_SIGNATURE_LEN);
	wsp_put_le16(fixed + 16, WSPROF_FORMAT_MAJOR);
	wsp_put_le16(fixed + 18, WSPROF_FORMAT_MINOR);
	wsp_put_le32(fixed + 20, 0);
	put_file(g, fixed, sizeof fixed);
	put_file(g, recs.p, recs.len);
	free(recs.p);
}

/* The stacks, into the first chunk: stack s at depth d (0 outermost)
 * is node (d, s >> 2(DEPTH-1-d)), defined when s first reaches it. */
static void stacks(struct gen *g, uint64_t count)
{
	uint64_t cur[DEPTH] = { 0 };
	for (uint64_t s = 0; s < count; s++) {
		for (unsigned d = 0; d < DEPTH; d++) {
			unsigned shift = 2 * (DEPTH - 1 - d);
			uint64_t mask = shift >= 64 ? ~0ull : (1ull << shift) - 1;
			if (s != 0 && (s & mask) != 0)
				continue; /* the same node as stack s - 1 at this depth */
			uint64_t group = s >> shift;
			uint64_t ip = TEXT_BASE + d * 0x1000 + (group % 251) * 16 + 5;
			cur[d] = ++g->stack_nodes;
			record(&g->raw, WSP_REC_STACK, (const uint64_t[]){ cur[d], d ? cur[d - 1] : 0, ip }, 3);
		}
		g->leaf[s] = cur[DEPTH - 1];
	}
}

static struct segment *segment_for(struct gen *g, unsigned tid)
{
	struct segment *s = &g->seg[tid];
	if (!s->open) {
		s->b.len = 0;
		s->seq = g->seq;
		s->time = g->time;
		s->addr = 0;
		record(&s->b, WSP_REC_SEGMENT, (const uint64_t[]){ 1000 + tid, s->seq, s->time }, 3);
		s->open = 1;
	}
	return s;
}

static void event(struct gen *g, unsigned tid, unsigned type, uint64_t addr, uint64_t size, uint64_t stack)
{
	struct segment *s = segment_for(g, tid);
	uint64_t f[7] = { g->seq - s->seq, g->time - s->time, WSPROF_KIND_HEAP,
			  type == WSP_REC_ALLOC ? WSPROF_OP_MALLOC : WSPROF_OP_FREE,
			  wsp_zigzag((int64_t)(addr - s->addr)), size, stack };
	record(&s->b, type, f, type == WSP_REC_ALLOC ? 7 : 5);
	s->seq = g->seq++;
	s->time = g->time;
	s->addr = addr;
	g->written++;
}

/* The chunk's records in the column layout, in g->cols. @return where
 * they start, *n their length. */
static const uint8_t *columns(struct gen *g, size_t *n)
{
	size_t cap = g->raw.len + 64;
	reserve(&g->cols, WSP_COL_AREA(cap));
	const uint8_t *start = wsp_columns_pack(g->columns, g->raw.p, g->raw.len, g->cols.p, cap, n);
	if (!start)
		die("a chunk does not fit its columns", NULL);
	return start;
}

/* Close the segments with a SYNC and write them as one chunk. */
static void chunk(struct gen *g)
{
	for (unsigned t = 0; t < THREADS; t++) {
		if (!g->seg[t].open)
			continue;
		reserve(&g->raw, g->seg[t].b.len);
		memcpy(g->raw.p + g->raw.len, g->seg[t].b.p, g->seg[t].b.len);
		g->raw.len += g->seg[t].b.len;
		g->seg[t].open = 0;
	}
	record(&g->raw, WSP_REC_SYNC, (const uint64_t[]){ g->seq, g->time }, 2);
	if (g->raw.len > WSP_CHUNK_RAW_MAX)
		die("a chunk is over the format's 64 MiB", NULL);
	size_t n;
	const uint8_t *cols = columns(g, &n);
	size_t bound = ZSTD_compressBound(n);
	g->z.len = 0;
	reserve(&g->z, WSP_CHUNK_HEADER + bound);
	size_t zlen = wsp_columns_compress(g->cctx, g->z.p + WSP_CHUNK_HEADER, bound, cols, n); /* as the recorder */
	if (ZSTD_isError(zlen))
		die("zstd", ZSTD_getErrorName(zlen));
	uint8_t *h = g->z.p;
	wsp_put_le32(h, WSP_MAGIC_CHUNK);
	wsp_put_le32(h + 4, WSP_CHUNK_HEADER - 8);
	wsp_put_le32(h + 8, g->chunks++);
	wsp_put_le32(h + 12, (uint32_t)n);
	wsp_put_le32(h + 16, (uint32_t)zlen);
	wsp_put_le32(h + 20, WSP_CHUNK_COLUMNS);
	put_file(g, h, WSP_CHUNK_HEADER + zlen);
	g->raw.len = 0;
}

static void footer(struct gen *g)
{
	struct buf rec = { 0 };
	record(&rec, WSP_REC_FOOTER, (const uint64_t[]){ g->time, g->chunks, g->written, g->stack_nodes }, 4);
	uint8_t h[8];
	wsp_put_le32(h, WSP_MAGIC_FOOTER);
	wsp_put_le32(h + 4, (uint32_t)rec.len);
	put_file(g, h, sizeof h);
	put_file(g, rec.p, rec.len);
	free(rec.p);
}

static uint64_t number(const char *s, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v == 0) {
		fprintf(stderr, "gentrace: %s must be a positive number, not '%s'\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: gentrace OUT EVENTS [LIVE [STACKS]]\n");
		return 2;
	}
	uint64_t events = number(argv[2], "EVENTS");
	uint64_t nlive = argc > 3 ? number(argv[3], "LIVE") : 100000;
	uint64_t nstacks = argc > 4 ? number(argv[4], "STACKS") : 10000;
	struct gen g = { .path = argv[1], .rng = 0x9E3779B97F4A7C15ull, .time = 5000000000ull };
	g.out = fopen(g.path, "wb");
	if (!g.out)
		die("cannot create", g.path);
	g.cctx = must(ZSTD_createCCtx());
	g.columns = must(calloc(1, sizeof *g.columns));
	ZSTD_CCtx_setParameter(g.cctx, ZSTD_c_compressionLevel, 3);
	ZSTD_CCtx_setParameter(g.cctx, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(g.cctx, ZSTD_c_contentSizeFlag, 1);
	g.leaf = must(calloc(nstacks, sizeof *g.leaf));
	g.live = must(calloc(nlive, 1));

	header(&g);
	stacks(&g, nstacks);
	uint64_t in_chunk = 0;
	for (uint64_t step = 0; g.written < events; step++) {
		unsigned tid = (unsigned)(step / RUN % THREADS);
		uint64_t r = rand64(&g);
		uint64_t slot = r % nlive, addr = HEAP_BASE + slot * SLOT_SPACING;
		if (g.live[slot]) {
			event(&g, tid, WSP_REC_FREE, addr, 0, 0);
			g.time += 40 + (r >> 58);
			in_chunk++;
		}
		if (g.written < events) {
			event(&g, tid, WSP_REC_ALLOC, addr, 16 + (r >> 20) % 4081, g.leaf[(r >> 40) % nstacks]);
			g.time += 40 + (r >> 58);
			g.live[slot] = 1;
			in_chunk++;
		} else {
			g.live[slot] = 0;
		}
		if (in_chunk >= CHUNK_EVENTS && step % RUN == RUN - 1) {
			chunk(&g);
			in_chunk = 0;
		}
	}
	chunk(&g);
	footer(&g);
	if (fclose(g.out) != 0)
		die("cannot write", g.path);
	printf("events %" PRIu64 " chunks %" PRIu32 " stack_nodes %" PRIu64 " bytes %" PRIu64 "\n", g.written,
	       g.chunks, g.stack_nodes, g.bytes);
	ZSTD_freeCCtx(g.cctx);
	free(g.columns);
	free(g.leaf);
	free(g.live);
	free(g.raw.p);
	free(g.z.p);
	free(g.cols.p);
	for (unsigned t = 0; t < THREADS; t++)
		free(g.seg[t].b.p);
	return 0;
}
