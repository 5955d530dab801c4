/*
 * test_resume.c - opening a trace in its middle (src/resume.h).
 *
 * What is pinned: for many checkpoints of a pass, a reader opened at the
 * place wsp_chunk_places_resume_offset gives for the checkpoint's next
 * seq, seeded with the tables read out at the checkpoint, hands out
 * exactly the events the pass handed out after it, in the same order,
 * with the same stacks (Python frames and their code objects included)
 * and the same modules, and ends with a clean status. The traces: four
 * threads whose buffers are written in the order of their floors, with
 * SYNCs, so that chunks hold seqs out of file order (trace_builder, in
 * rows and in the column layout), and the recorder's own traces of the
 * fuzzing corpus. Also: the places a pipe's reader (no threads) notes are
 * the file's, a place past the last event gives nothing and a clean
 * status, and a place that is not one is refused.
 */
#include "columns.h"
#include "format.h"
#include "resume.h"
#include "trace_builder.h"
#include "wsprof/trace.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

/* ---- a trace of interleaved threads ---------------------------------- */

#define THREADS 4
#define MODULES 6
#define MOD_BASE(m) (0x400000ull * ((m) + 1))

struct gen {
	struct trace_builder b;
	uint64_t rng;
	bool columns, python;
	uint64_t *queue[THREADS]; /* each thread's seqs, in order */
	size_t qlen[THREADS], qpos[THREADS];
	uint64_t seqs, nstacks, ncodes, python_seq;
	bool loaded[MODULES];
	uint64_t seg_last;        /* the open segment's last stamped seq */
	uint64_t max_written;     /* the highest seq written */
	bool seg_event;           /* and whether it holds an event */
	uint64_t chunk_max;
	uint64_t *max_seq;        /* each chunk's, as the reader should note it */
	struct wsp_columns *cols;
	ZSTD_CCtx *cctx;
};

static uint64_t rnd(struct gen *g)
{
	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 7;
	g->rng ^= g->rng << 17;
	return g->rng;
}

static size_t put_string(uint8_t *p, const char *s)
{
	return (size_t)(wsp_put_bytes(p, s, strlen(s)) - p);
}

/* A stack for the next event: often a new node (native in a module, or
 * a Python frame, its code object defined first), else one defined before. */
static uint64_t new_node(struct gen *g)
{
	uint64_t id = ++g->nstacks, parent = rnd(g) % id; /* 0 (the root) or any defined */
	if (g->python && rnd(g) % 3 == 0) {
		if (!g->ncodes || rnd(g) % 3 == 0) {
			uint8_t pl[256], *p = pl;
			uint64_t code = ++g->ncodes;
			char name[32];
			snprintf(name, sizeof name, "f%llu", (unsigned long long)code);
			p = wsp_put_varint(p, code);
			p = wsp_put_varint(p, 10 + code);
			p += put_string(p, name);
			p += put_string(p, "app.py");
			static const uint8_t table[] = { 0x80 | (13 << 3) | 3, 4, 0x80 | (11 << 3) | 7 };
			p = wsp_put_bytes(p, table, sizeof table);
			tb_record_bytes(&g->b, WSP_REC_PY_CODE, pl, (size_t)(p - pl));
		}
		uint64_t f[] = { id, parent, 1 + rnd(g) % g->ncodes, rnd(g) % 12 };
		tb_record(&g->b, WSP_REC_PYFRAME, f, 4);
	} else {
		tb_stack(&g->b, id, parent, MOD_BASE(rnd(g) % MODULES) + 0x1000 + rnd(g) % 0x100000);
	}
	return id;
}

static uint64_t pick_stack(struct gen *g)
{
	return g->nstacks && rnd(g) % 4 ? 1 + rnd(g) % g->nstacks : new_node(g);
}

static void emit(struct gen *g, uint32_t tid, uint64_t seq)
{
	struct trace_builder *b = &g->b;
	uint64_t time = seq * 1000, addr = 0x7f0000000000ull + rnd(g) % 4096 * 64;
	g->seg_last = seq;
	if (seq > g->max_written)
		g->max_written = seq;
	if (seq == g->python_seq) { /* stamped, not an event */
		uint8_t pl[128], *p = pl;
		p = wsp_put_varint(p, seq - b->seq);
		p = wsp_put_varint(p, time - b->time);
		p = wsp_put_varint(p, 0x030c00f0);
		p = wsp_put_varint(p, 1);
		p = wsp_put_varint(p, 0);
		p += put_string(p, "/usr/lib/libpython3.12.so");
		p += put_string(p, "");
		tb_record_bytes(b, WSP_REC_PYTHON, pl, (size_t)(p - pl));
		b->seq = seq;
		b->time = time;
		return;
	}
	g->seg_event = true;
	unsigned r = (unsigned)(rnd(g) % 100), m = (unsigned)(rnd(g) % MODULES);
	if (r < 45) {
		uint64_t stack = pick_stack(g);
		tb_ev_alloc(b, seq, time, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, addr, 16 + rnd(g) % 4000, stack);
	} else if (r < 70) {
		tb_ev_free(b, seq, time, WSPROF_KIND_HEAP, WSPROF_OP_FREE, addr);
	} else if (r < 78 && g->loaded[m]) {
		tb_ev_module_unload(b, seq, time, MOD_BASE(m));
		g->loaded[m] = false;
	} else if (r < 78) {
		char path[32];
		snprintf(path, sizeof path, "/lib/mod%u.so", m);
		uint8_t id[4] = { 0xb1, (uint8_t)m, (uint8_t)seq, 0x1d };
		struct tb_segdesc segs[] = { { 0, 0x80000, 5 }, { 0x80000, 0x100000, 6 } };
		tb_ev_module_load(b, seq, time, MOD_BASE(m), path, id, sizeof id, segs, 2);
		g->loaded[m] = true;
	} else if (r < 84) {
		char text[32];
		snprintf(text, sizeof text, "block %llu", (unsigned long long)seq);
		tb_ev_annotate(b, seq, time, WSPROF_ANN_NAME, addr, 0, 0, text);
	} else if (r < 88) {
		struct tb_region regs[] = { { addr, 4096 }, { addr + 65536, 8192 } };
		tb_ev_access(b, seq, time, 0, 1000000, regs, 2);
	} else if (r < 91) {
		tb_ev_rss(b, seq, time, 1 << 20);
	} else if (r < 94) {
		tb_ev_recording(b, seq, time, seq % 2, 1);
	} else {
		uint64_t stack = pick_stack(g);
		tb_ev_alloc(b, seq, time, WSPROF_KIND_MMAP, WSPROF_OP_MMAP, addr << 4, 1 << 16, stack);
	}
	(void)tid;
}

/* The open chunk, in rows or in the column layout. */
static void chunk(struct gen *g)
{
	struct trace_builder *b = &g->b;
	g->max_seq = realloc(g->max_seq, (b->chunks + 1) * sizeof *g->max_seq);
	cr_assert_not_null(g->max_seq);
	g->max_seq[b->chunks] = g->chunk_max;
	g->chunk_max = 0;
	if (!g->columns) {
		tb_chunk(b);
		return;
	}
	size_t cap = b->raw_len + 64, n;
	uint8_t *area = malloc(WSP_COL_AREA(cap)), *out = malloc(WSP_CHUNK_HEADER + ZSTD_compressBound(cap * 2));
	cr_assert(area && out);
	const uint8_t *cols = wsp_columns_pack(g->cols, b->raw, b->raw_len, area, cap, &n);
	cr_assert_not_null(cols, "the chunk fits its columns");
	size_t z = wsp_columns_compress(g->cctx, out + WSP_CHUNK_HEADER, ZSTD_compressBound(cap * 2), cols, n);
	cr_assert(!ZSTD_isError(z));
	wsp_put_le32(out, WSP_MAGIC_CHUNK);
	wsp_put_le32(out + 4, WSP_CHUNK_HEADER - 8);
	wsp_put_le32(out + 8, b->chunks);
	wsp_put_le32(out + 12, (uint32_t)n);
	wsp_put_le32(out + 16, (uint32_t)z);
	wsp_put_le32(out + 20, WSP_CHUNK_COLUMNS);
	tb_file_bytes(b, out, WSP_CHUNK_HEADER + z);
	b->chunks++;
	b->raw_len = 0;
	free(area);
	free(out);
}

static void segment_end(struct gen *g)
{
	if (g->seg_event && g->seg_last > g->chunk_max)
		g->chunk_max = g->seg_last;
}

/* Seqs 1..n dealt to the threads in runs; buffers of 1 to 12 records
 * written in the order of their floors, a SYNC after most (its watermark
 * the lowest seq not yet written), three buffers a chunk. */
static void gen_trace(struct gen *g, uint64_t n, bool columns, bool python, uint64_t seed)
{
	*g = (struct gen){ .rng = seed, .columns = columns, .python = python, .seqs = n };
	tb_init(&g->b);
	tb_header_version(&g->b, 3, 0, NULL);
	if (columns) {
		g->cols = calloc(1, sizeof *g->cols);
		g->cctx = ZSTD_createCCtx();
		cr_assert(g->cols && g->cctx);
		ZSTD_CCtx_setParameter(g->cctx, ZSTD_c_compressionLevel, 3);
		ZSTD_CCtx_setParameter(g->cctx, ZSTD_c_checksumFlag, 1);
		ZSTD_CCtx_setParameter(g->cctx, ZSTD_c_contentSizeFlag, 1);
	}
	unsigned th = 0;
	for (unsigned t = 0; t < THREADS; t++)
		g->queue[t] = calloc(n, sizeof *g->queue[t]);
	for (uint64_t seq = 1; seq <= n; seq++) {
		if (rnd(g) % 10 < 3)
			th = (unsigned)(rnd(g) % THREADS);
		g->queue[th][g->qlen[th]++] = seq;
	}
	g->python_seq = python ? n / 5 : 0;
	for (unsigned buffers = 0;;) {
		unsigned t = THREADS;
		for (unsigned i = 0; i < THREADS; i++)
			if (g->qpos[i] < g->qlen[i] && (t == THREADS || g->queue[i][g->qpos[i]] < g->queue[t][g->qpos[t]]))
				t = i;
		if (t == THREADS)
			break;
		uint64_t first = g->queue[t][g->qpos[t]];
		tb_segment(&g->b, 100 + t, first, first * 1000);
		g->seg_event = false;
		for (unsigned k = 1 + (unsigned)(rnd(g) % 12); k && g->qpos[t] < g->qlen[t]; k--)
			emit(g, 100 + t, g->queue[t][g->qpos[t]++]);
		segment_end(g);
		if (rnd(g) % 10 < 6) {
			uint64_t w = n + 1;
			for (unsigned i = 0; i < THREADS; i++)
				if (g->qpos[i] < g->qlen[i] && g->queue[i][g->qpos[i]] < w)
					w = g->queue[i][g->qpos[i]];
			tb_sync(&g->b, w, first * 1000);
			/* Nodes defined ahead of the events that use them, after a
			 * SYNC that released every event written, at the chunk's
			 * end: the next chunk is the first with a seq past the
			 * SYNC, but a checkpoint just before it lacks these nodes,
			 * so a resume must start before them (resume.h). */
			if (g->max_written < w && rnd(g) % 2) {
				for (unsigned k = 1 + (unsigned)(rnd(g) % 3); k; k--)
					new_node(g);
				chunk(g);
				buffers = 0;
				continue;
			}
		}
		if (++buffers % 3 == 0)
			chunk(g);
	}
	if (g->b.raw_len)
		chunk(g);
	tb_footer_fields(&g->b, (n + 1) * 1000, g->b.chunks, g->b.events, g->nstacks);
	for (unsigned t = 0; t < THREADS; t++)
		free(g->queue[t]);
	free(g->cols);
	ZSTD_freeCCtx(g->cctx);
}

/* The events a reader hands out: every seq but the PYTHON record's. */
static size_t gen_events(const struct gen *g)
{
	return (size_t)(g->seqs - (g->python_seq != 0));
}

/* ---- what a reader hands out, and its tables -------------------------- */

/* An event as text: its fields, its stack resolved (Python frames by their
 * code's name), the module of its innermost frame, its strings. */
static char *describe(wsprof_trace *t, const wsprof_event *ev)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	cr_assert_not_null(f);
	fprintf(f, "type %d kind %u op %u tid %u seq %llu time %llu addr %llx size %llu dev %d stream %llu handle %llu",
		ev->type, ev->kind, ev->op, ev->tid, (unsigned long long)ev->seq, (unsigned long long)ev->time_ns,
		(unsigned long long)ev->addr, (unsigned long long)ev->size, ev->device, (unsigned long long)ev->stream,
		(unsigned long long)ev->handle);
	if (ev->path)
		fprintf(f, " path %s", ev->path);
	if (ev->text)
		fprintf(f, " text %s", ev->text);
	for (size_t i = 0; i < ev->build_id_len; i++)
		fprintf(f, "%s%02x", i ? "" : " id ", ev->build_id[i]);
	for (size_t i = 0; i < ev->nregions; i++)
		fprintf(f, " [%llx+%llu]", (unsigned long long)ev->regions[i].addr, (unsigned long long)ev->regions[i].len);
	uint64_t ips[256];
	size_t depth = wsprof_trace_stack(t, ev->stack, ips, 256);
	fprintf(f, " stack %llu:", (unsigned long long)ev->stack);
	for (size_t i = 0; i < depth && i < 256; i++) {
		if (WSPROF_IS_PYFRAME(ips[i])) {
			const wsprof_pycode *c = wsprof_trace_pycode(t, WSPROF_PYFRAME_CODE(ips[i]));
			fprintf(f, " %s:%d", c ? c->qualname : "?",
				wsprof_pycode_line(c, WSPROF_PYFRAME_INSTR(ips[i])));
		} else {
			uint64_t base = 0;
			const char *mod = wsprof_trace_module_at(t, ips[i], &base);
			fprintf(f, " %llx(%s)", (unsigned long long)ips[i], mod ? mod : "-");
		}
	}
	fclose(f);
	return s;
}

struct module_seed {
	uint64_t base;
	char *path;
	uint8_t id[64];
	size_t idlen, nsegs;
	uint64_t segs[4][2];
};

struct pycode_seed {
	uint64_t id;
	wsprof_pycode c;
};

/* The tables at a checkpoint, as the index would save them. */
struct seeds {
	uint64_t (*nodes)[3];
	size_t nnodes;
	struct pycode_seed *codes;
	size_t ncodes;
	struct module_seed *mods;
	size_t nmods;
	wsprof_python py;
};

static int save_node(void *arg, uint64_t id, uint64_t parent, uint64_t ip)
{
	struct seeds *s = arg;
	s->nodes = realloc(s->nodes, (s->nnodes + 1) * sizeof *s->nodes);
	cr_assert_not_null(s->nodes);
	s->nodes[s->nnodes][0] = id;
	s->nodes[s->nnodes][1] = parent;
	s->nodes[s->nnodes++][2] = ip;
	return 0;
}

static int save_code(void *arg, uint64_t id, const wsprof_pycode *c)
{
	struct seeds *s = arg;
	cr_assert_not_null(c, "code %llu is defined", (unsigned long long)id);
	s->codes = realloc(s->codes, (s->ncodes + 1) * sizeof *s->codes);
	cr_assert_not_null(s->codes);
	uint8_t *table = malloc(c->linetable_len + 1);
	memcpy(table, c->linetable, c->linetable_len);
	s->codes[s->ncodes++] = (struct pycode_seed){ id, { strdup(c->qualname), strdup(c->filename), c->firstlineno,
							   table, c->linetable_len } };
	return 0;
}

static int save_module(void *arg, uint64_t base, const char *path, const uint8_t *id, size_t idlen, size_t nsegs,
		       const uint64_t (*segs)[2])
{
	struct seeds *s = arg;
	cr_assert(idlen <= 64 && nsegs <= 4);
	s->mods = realloc(s->mods, (s->nmods + 1) * sizeof *s->mods);
	cr_assert_not_null(s->mods);
	struct module_seed *m = &s->mods[s->nmods++];
	*m = (struct module_seed){ .base = base, .path = strdup(path), .idlen = idlen, .nsegs = nsegs };
	if (idlen)
		memcpy(m->id, id, idlen);
	memcpy(m->segs, segs, nsegs * sizeof *segs);
	return 0;
}

static void seeds_save(wsprof_trace *t, struct seeds *s)
{
	*s = (struct seeds){ 0 };
	cr_assert_eq(wsp_trace_each_stack_node(t, save_node, s), 0);
	cr_assert_eq(wsp_trace_each_pycode(t, save_code, s), 0);
	cr_assert_eq(wsp_trace_each_module(t, save_module, s), 0);
	const wsprof_python *py = wsprof_trace_python(t);
	s->py = *py;
	s->py.path = py->path ? strdup(py->path) : NULL;
	s->py.note = py->note ? strdup(py->note) : NULL;
}

static void seeds_apply(wsprof_trace *t, const struct seeds *s)
{
	for (size_t i = 0; i < s->nnodes; i++)
		cr_assert_eq(wsp_trace_seed_stack(t, s->nodes[i][0], s->nodes[i][1], s->nodes[i][2]), 0);
	for (size_t i = 0; i < s->ncodes; i++) {
		const wsprof_pycode *c = &s->codes[i].c;
		cr_assert_eq(wsp_trace_seed_pycode(t, s->codes[i].id, c->firstlineno, c->qualname, c->filename,
						   c->linetable, c->linetable_len), 0);
	}
	for (size_t i = 0; i < s->nmods; i++) {
		const struct module_seed *m = &s->mods[i];
		cr_assert_eq(wsp_trace_seed_module(t, m->base, m->path, m->idlen ? m->id : NULL, m->idlen, m->nsegs,
						   (const uint64_t (*)[2])m->segs), 0);
	}
	if (s->py.seen)
		cr_assert_eq(wsp_trace_seed_python(t, &s->py), 0);
}

static void seeds_free(struct seeds *s)
{
	for (size_t i = 0; i < s->ncodes; i++) {
		free((char *)s->codes[i].c.qualname);
		free((char *)s->codes[i].c.filename);
		free((uint8_t *)s->codes[i].c.linetable);
	}
	for (size_t i = 0; i < s->nmods; i++)
		free(s->mods[i].path);
	free(s->nodes);
	free(s->codes);
	free(s->mods);
	free((char *)s->py.path);
	free((char *)s->py.note);
}

/* ---- the property ------------------------------------------------------ */

struct pass {
	char **ev;                /* described */
	uint64_t *seq;
	size_t n;
	struct wsp_chunk_place *places;
	size_t nplaces;
	wsprof_trace_status st;
	uint64_t done;            /* the position at the end */
	struct seeds *seeds;      /* seeds[k]: the tables with k events handed out (at checkpoints) */
};

static bool is_checkpoint(size_t k, size_t n, size_t every)
{
	return k < 3 || k + 3 > n || k % every == 0;
}

/* A pass from the start of a trace of n events: every event described,
 * the tables saved at the checkpoints, the places. */
static void read_pass(const char *path, struct pass *p, size_t every, size_t n)
{
	wsprof_trace *t;
	int err = wsprof_trace_open(path, &t);
	cr_assert_eq(err, 0, "open %s: %s", path, wsprof_strerror(err));
	*p = (struct pass){ 0 };
	size_t cap = 0;
	wsprof_event ev;
	for (;;) {
		if (p->n == cap) {
			cap = cap ? cap * 2 : 1024;
			p->ev = realloc(p->ev, cap * sizeof *p->ev);
			p->seq = realloc(p->seq, cap * sizeof *p->seq);
			p->seeds = realloc(p->seeds, (cap + 1) * sizeof *p->seeds);
			cr_assert(p->ev && p->seq && p->seeds);
		}
		if (is_checkpoint(p->n, n, every))
			seeds_save(t, &p->seeds[p->n]);
		int r = wsprof_trace_next(t, &ev);
		cr_assert_geq(r, 0);
		if (!r)
			break;
		p->ev[p->n] = describe(t, &ev);
		p->seq[p->n++] = ev.seq;
	}
	cr_assert_eq(p->n, n, "%s: %zu events, not %zu", path, p->n, n);
	wsprof_trace_get_status(t, &p->st);
	uint64_t size;
	wsprof_trace_position(t, &p->done, &size);
	const struct wsp_chunk_place *pl;
	p->nplaces = wsp_trace_chunk_places(t, &pl);
	p->places = malloc((p->nplaces + 1) * sizeof *pl);
	memcpy(p->places, pl, p->nplaces * sizeof *pl);
	wsprof_trace_close(t);
}

static void pass_free(struct pass *p, size_t every)
{
	for (size_t k = 0; k <= p->n; k++)
		if (is_checkpoint(k, p->n, every))
			seeds_free(&p->seeds[k]);
	for (size_t i = 0; i < p->n; i++)
		free(p->ev[i]);
	free(p->ev);
	free(p->seq);
	free(p->seeds);
	free(p->places);
}

/* From checkpoint k (k events handed out): the seq to resume at. */
static uint64_t resume_seq(const struct pass *p, size_t k)
{
	return k ? p->seq[k - 1] + 1 : 0;
}

/* Open at the place for checkpoint k, seeded, and compare what comes out
 * with the pass's events from k on. @return the events handed out. */
static size_t check_resume(const char *path, const struct pass *p, size_t k)
{
	struct wsp_resume r = { .seq = resume_seq(p, k) };
	r.offset = wsp_chunk_places_resume_offset(p->places, p->nplaces, r.seq, &r.chunk);
	wsprof_trace *t;
	int err = wsp_trace_open_at(path, &r, &t);
	cr_assert_eq(err, 0, "open at %llu (chunk %u) for seq %llu: %s", (unsigned long long)r.offset, r.chunk,
		     (unsigned long long)r.seq, wsprof_strerror(err));
	seeds_apply(t, &p->seeds[k]);
	wsprof_event ev;
	size_t i = k;
	int got;
	while ((got = wsprof_trace_next(t, &ev)) > 0) {
		cr_assert_lt(i, p->n, "from checkpoint %zu (seq %llu): more events than the pass", k,
			     (unsigned long long)r.seq);
		char *d = describe(t, &ev);
		cr_assert_str_eq(d, p->ev[i], "from checkpoint %zu (seq %llu, chunk %u), event %zu:\n%s\nshould be\n%s", k,
				 (unsigned long long)r.seq, r.chunk, i, d, p->ev[i]);
		free(d);
		i++;
	}
	cr_assert_eq(got, 0);
	cr_assert_eq(i, p->n, "%s from checkpoint %zu (seq %llu, chunk %u): %zu events of %zu", path, k, (unsigned long long)r.seq, r.chunk, i - k,
		     p->n - k);
	wsprof_trace_status st;
	wsprof_trace_get_status(t, &st);
	cr_assert_eq(st.error, p->st.error, "from checkpoint %zu: status %s, the pass's %s", k, wsprof_strerror(st.error),
		     wsprof_strerror(p->st.error));
	cr_assert_eq(st.complete, p->st.complete, "from checkpoint %zu", k);
	cr_assert_eq(st.chunks, p->st.chunks);
	/* The tables at the end: the pass's. */
	struct seeds end;
	seeds_save(t, &end);
	const struct seeds *want = &p->seeds[p->n];
	cr_assert_eq(end.py.seen, want->py.seen, "from checkpoint %zu: the PYTHON record", k);
	if (want->py.seen)
		cr_assert(end.py.version == want->py.version && !strcmp(end.py.path, want->py.path));
	cr_assert_eq(end.nmods, want->nmods, "from checkpoint %zu: %zu modules at the end, the pass %zu", k, end.nmods,
		     want->nmods);
	for (size_t i = 0; i < end.nmods; i++)
		cr_assert(end.mods[i].base == want->mods[i].base && !strcmp(end.mods[i].path, want->mods[i].path) &&
				  end.mods[i].idlen == want->mods[i].idlen &&
				  !memcmp(end.mods[i].id, want->mods[i].id, end.mods[i].idlen) &&
				  end.mods[i].nsegs == want->mods[i].nsegs &&
				  !memcmp(end.mods[i].segs, want->mods[i].segs, end.mods[i].nsegs * sizeof *end.mods[i].segs),
			  "from checkpoint %zu: module %zu at the end", k, i);
	seeds_free(&end);
	uint64_t done, size;
	wsprof_trace_position(t, &done, &size);
	cr_assert_eq(done, p->done, "the position counts from the file's start: %llu, the pass's %llu",
		     (unsigned long long)done, (unsigned long long)p->done);
	wsprof_trace_close(t);
	return i - k;
}

static void check_all(const char *path, size_t every, size_t n)
{
	struct pass p;
	read_pass(path, &p, every, n);
	for (size_t k = 0; k <= p.n; k++) /* not between two events of one seq (a damaged trace's): no seq names it */
		if (is_checkpoint(k, p.n, every) && !(k && k < p.n && p.seq[k] <= p.seq[k - 1]))
			check_resume(path, &p, k);
	pass_free(&p, every);
}

static char *save_gen(struct gen *g)
{
	char *path = tb_save_temp(&g->b);
	cr_assert_not_null(path);
	return path;
}

/* ---- tests ------------------------------------------------------------- */

Test(resume, places_say_where_each_chunk_is_and_its_highest_seq)
{
	struct gen g;
	gen_trace(&g, 2000, false, true, 0x1234567);
	char *path = save_gen(&g);
	struct pass p;
	read_pass(path, &p, 100000, gen_events(&g));
	cr_assert(p.st.complete && !p.st.error, "complete %d: %s", p.st.complete, wsprof_strerror(p.st.error));
	cr_assert_eq(p.nplaces, g.b.chunks + 1, "%zu places for %u chunks and the end", p.nplaces, g.b.chunks);
	uint64_t at = 0;
	bool out_of_order = false;
	for (size_t i = 0; i < g.b.chunks; i++) {
		const struct wsp_chunk_place *pl = &p.places[i];
		cr_assert_eq(pl->index, i);
		cr_assert_eq(wsp_get_le32(g.b.data + pl->offset), WSP_MAGIC_CHUNK, "place %zu is a chunk's frame", i);
		cr_assert_eq(wsp_get_le32(g.b.data + pl->offset + 8), i);
		cr_assert_gt(pl->offset, at);
		cr_assert_eq(pl->max_seq, g.max_seq[i], "chunk %zu: max_seq %llu, written %llu", i,
			     (unsigned long long)pl->max_seq, (unsigned long long)g.max_seq[i]);
		out_of_order |= i && pl->max_seq < p.places[i - 1].max_seq;
		at = pl->offset;
	}
	cr_expect(out_of_order, "the trace has a chunk of seqs below the one before it");
	const struct wsp_chunk_place *end = &p.places[g.b.chunks];
	cr_assert_eq(wsp_get_le32(g.b.data + end->offset), WSP_MAGIC_FOOTER, "the last place is the footer's");
	cr_assert_eq(end->index, g.b.chunks);
	uint32_t index;
	cr_assert_eq(wsp_chunk_places_resume_offset(p.places, p.nplaces, UINT64_MAX, &index), end->offset);
	cr_assert_eq(index, g.b.chunks);
	cr_assert_eq(wsp_chunk_places_resume_offset(p.places, p.nplaces, 0, &index), p.places[0].offset);
	pass_free(&p, 100000);
	unlink(path);
	free(path);
	free(g.max_seq);
	tb_fini(&g.b);
}

Test(resume, from_any_checkpoint_the_same_events_in_rows, .timeout = 120)
{
	struct gen g;
	gen_trace(&g, 3000, false, true, 0x9E3779B97F4A7C15ull);
	char *path = save_gen(&g);
	check_all(path, 37, gen_events(&g));
	unlink(path);
	free(path);
	free(g.max_seq);
	tb_fini(&g.b);
}

Test(resume, from_any_checkpoint_the_same_events_in_columns, .timeout = 120)
{
	struct gen g;
	gen_trace(&g, 3000, true, true, 0xC0FFEE123ull);
	char *path = save_gen(&g);
	check_all(path, 41, gen_events(&g));
	unlink(path);
	free(path);
	free(g.max_seq);
	tb_fini(&g.b);
}

/* Over 1 MiB (the reader's buffers in huge pages), batches full, tens
 * of thousands of stack nodes to seed. */
Test(resume, from_some_checkpoints_of_a_large_trace, .timeout = 120)
{
	struct gen g;
	gen_trace(&g, 120000, true, true, 0x31415926ull);
	cr_assert_gt(g.b.len, 1u << 20);
	cr_assert_gt(g.nstacks, 10000);
	char *path = save_gen(&g);
	check_all(path, 15000, gen_events(&g));
	unlink(path);
	free(path);
	free(g.max_seq);
	tb_fini(&g.b);
}

Test(resume, from_every_checkpoint_of_a_small_trace, .timeout = 120)
{
	struct gen g;
	gen_trace(&g, 1000, false, true, 0xABCDEF1ull);
	char *path = save_gen(&g);
	check_all(path, 1, gen_events(&g));
	unlink(path);
	free(path);
	free(g.max_seq);
	tb_fini(&g.b);
}

/* The recorder's own traces (formats 1.1 to 2.1, threads, modules, a
 * fork, an exec, a killed one): every checkpoint. */
Test(resume, from_every_checkpoint_of_recorded_traces, .timeout = 120)
{
	DIR *d = opendir(CORPUS_DIR);
	cr_assert_not_null(d, "%s", CORPUS_DIR);
	size_t files = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", CORPUS_DIR, e->d_name);
		wsprof_trace *t;
		if (wsprof_trace_open(path, &t))
			continue; /* not a trace whose header opens */
		wsprof_event ev;
		size_t n = 0;
		while (wsprof_trace_next(t, &ev) > 0)
			n++;
		wsprof_trace_close(t);
		check_all(path, n * n / 2000000 + 1, n); /* every checkpoint, or some: 2 M events read in all */
		files++;
	}
	closedir(d);
	cr_assert_geq(files, 10);
}

Test(resume, past_the_last_event_nothing_and_a_clean_status)
{
	struct gen g;
	gen_trace(&g, 500, true, false, 0x5151ull);
	char *path = save_gen(&g);
	struct pass p;
	read_pass(path, &p, 100000, gen_events(&g));
	cr_assert_eq(check_resume(path, &p, p.n), 0);
	struct wsp_resume r = { .seq = p.seq[p.n - 1] + 1 };
	r.offset = wsp_chunk_places_resume_offset(p.places, p.nplaces, r.seq, &r.chunk);
	wsprof_trace *t;
	cr_assert_eq(wsp_trace_open_at(path, &r, &t), 0);
	wsprof_event ev;
	cr_assert_eq(wsprof_trace_next(t, &ev), 0);
	wsprof_trace_status st;
	wsprof_trace_get_status(t, &st);
	cr_assert(st.complete && !st.error, "complete: %d, %s", st.complete, wsprof_strerror(st.error));
	wsprof_trace_close(t);
	pass_free(&p, 100000);
	unlink(path);
	free(path);
	free(g.max_seq);
	tb_fini(&g.b);
}

Test(resume, a_place_that_is_not_one_is_refused)
{
	struct gen g;
	gen_trace(&g, 500, false, false, 0x777ull);
	char *path = save_gen(&g);
	struct pass p;
	read_pass(path, &p, 100000, gen_events(&g));
	cr_assert_geq(p.nplaces, 3);
	const struct wsp_chunk_place *pl = &p.places[1];
	struct wsp_resume bad[] = {
		{ pl->offset + 3, pl->index, 0 },      /* inside a chunk */
		{ pl->offset, pl->index + 1, 0 },      /* the wrong index */
		{ 10, 0, 0 },                          /* in the header */
		{ g.b.len + 100, 0, 0 },               /* past the end */
		{ p.places[0].offset - 1, 0, 0 },      /* just before the first chunk */
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		wsprof_trace *t = (wsprof_trace *)1;
		int err = wsp_trace_open_at(path, &bad[i], &t);
		cr_expect_eq(err, -EINVAL, "place %zu: %s", i, wsprof_strerror(err));
		cr_expect_null(t);
	}
	wsprof_trace *t;
	cr_assert_eq(wsp_trace_open_at("/nonexistent/trace.wsp", &bad[0], &t), -ENOENT);
	/* Seeds only before reading. */
	struct wsp_resume r = { pl->offset, pl->index, 0 };
	cr_assert_eq(wsp_trace_open_at(path, &r, &t), 0);
	wsprof_event ev;
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_assert_eq(wsp_trace_seed_stack(t, 1, 0, 0x1000), -EBUSY);
	wsprof_trace_close(t);
	pass_free(&p, 100000);
	unlink(path);
	free(path);
	free(g.max_seq);
	tb_fini(&g.b);
}

/* A pipe is read on the caller's thread: the same places. */
Test(resume, a_pipe_notes_the_same_places)
{
	struct gen g;
	gen_trace(&g, 1500, true, true, 0x4242ull);
	char *path = save_gen(&g);
	struct pass p;
	read_pass(path, &p, 100000, gen_events(&g));

	char *fifo = tb_save_temp(&g.b);
	cr_assert_not_null(fifo);
	unlink(fifo);
	cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		signal(SIGPIPE, SIG_IGN);
		FILE *f = fopen(fifo, "wb");
		_exit(!f || fwrite(g.b.data, 1, g.b.len, f) != g.b.len || fclose(f));
	}
	wsprof_trace *t;
	cr_assert_eq(wsprof_trace_open(fifo, &t), 0);
	wsprof_event ev;
	int r;
	while ((r = wsprof_trace_next(t, &ev)) > 0)
		;
	cr_assert_eq(r, 0);
	const struct wsp_chunk_place *pl;
	size_t n = wsp_trace_chunk_places(t, &pl);
	cr_assert_eq(n, p.nplaces);
	for (size_t i = 0; i < n; i++)
		cr_assert(pl[i].offset == p.places[i].offset && pl[i].index == p.places[i].index &&
				  pl[i].max_seq == p.places[i].max_seq && pl[i].watermark == p.places[i].watermark,
			  "place %zu a pipe's reader notes is the file's", i);
	wsprof_trace_close(t);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	unlink(fifo);
	free(fifo);
	pass_free(&p, 100000);
	unlink(path);
	free(path);
	free(g.max_seq);
	tb_fini(&g.b);
}
