/*
 * test_timeindex.c - a moment reached through the index (timeindex.h) is
 * the moment a replay from the start reaches: the same figures, the same
 * live blocks with the same annotations, at many moments of recorded-like
 * and generated traces (rows and columns, several threads, annotations,
 * pools, CUDA kinds, sampled); and an index that is not the trace's is
 * never read.
 */
#include <criterion/criterion.h>

#include "analyzer.h"
#include "checkpoint.h"
#include "timeindex.h"
#include "trace_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

struct live {
	struct wsp_block b;
	bool has_ann;
	struct wsp_ann_state ann;
	char name[64];
};

struct lives {
	const struct wsp_model *m;
	struct live *v;
	size_t n, cap;
};

static void gather(const struct wsp_block *b, void *arg)
{
	struct lives *l = arg;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = realloc(l->v, l->cap * sizeof *l->v);
		cr_assert(l->v);
	}
	struct live *x = &l->v[l->n++];
	memset(x, 0, sizeof *x);
	x->b = *b;
	x->b.site = 0;        /* a place in another model's table */
	x->b.ordered = false; /* the model's own bookkeeping: when it entered the order by address */
	const struct wsp_ann_state *a = wsp_model_ann(l->m, b);
	x->has_ann = a != NULL;
	if (a) {
		x->ann = *a;
		snprintf(x->name, sizeof x->name, "%s", a->name ? a->name : "");
		x->ann.name = NULL;
	}
}

/* The first field two blocks differ in, or NULL; not their access
 * figures, which no view of a moment shows and a checkpoint does not keep. */
static const char *block_differs(const struct wsp_block *x, const struct wsp_block *y)
{
#define FIELD(f) if (x->f != y->f) return #f
	FIELD(addr); FIELD(size); FIELD(stack); FIELD(origin); FIELD(origin_size); FIELD(serial); FIELD(tid);
	FIELD(time_ns); FIELD(kind); FIELD(device); FIELD(excluded);
	FIELD(has_ann); FIELD(in_reservation);
#undef FIELD
	return NULL;
}

static int live_cmp(const void *a, const void *b)
{
	const struct live *x = a, *y = b;
	if (x->b.kind != y->b.kind)
		return x->b.kind < y->b.kind ? -1 : 1;
	return x->b.addr < y->b.addr ? -1 : x->b.addr > y->b.addr;
}

static void lives_of(const struct wsp_model *m, struct lives *l)
{
	*l = (struct lives){ .m = m };
	wsp_model_each_live(m, gather, l);
	if (l->n)
		qsort(l->v, l->n, sizeof *l->v, live_cmp);
}

static void same_kind_stats(const struct wsp_kind_stats *a, const struct wsp_kind_stats *b, unsigned k, const char *at)
{
	cr_expect_eq(a->allocations, b->allocations, "kind %u allocations at %s", k, at);
	cr_expect_eq(a->frees, b->frees, "kind %u frees at %s", k, at);
	cr_expect_eq(a->failed, b->failed, "kind %u failed at %s", k, at);
	cr_expect_eq(a->total_bytes, b->total_bytes, "kind %u total at %s", k, at);
	cr_expect_eq(a->live_bytes, b->live_bytes, "kind %u live bytes at %s: %llu, %llu", k, at,
		     (unsigned long long)a->live_bytes, (unsigned long long)b->live_bytes);
	cr_expect_eq(a->live_blocks, b->live_blocks, "kind %u live blocks at %s", k, at);
	cr_expect_eq(a->peak_bytes, b->peak_bytes, "kind %u peak at %s", k, at);
	cr_expect_eq(a->peak_seq, b->peak_seq, "kind %u peak seq at %s", k, at);
	cr_expect_eq(a->collectable_bytes, b->collectable_bytes, "kind %u collectable at %s", k, at);
	cr_expect_eq(a->in_use_peak_bytes, b->in_use_peak_bytes, "kind %u in-use peak at %s", k, at);
	cr_expect_eq(a->seen, b->seen, "kind %u seen at %s", k, at);
}

/* The model a replay from the start reaches, and the index's, at one moment. */
static void same_moment(struct wsp_tindex *ix, const char *path, uint64_t stop_seq, uint64_t stop_time)
{
	char at[96];
	snprintf(at, sizeof at, "seq %llu time %llu", (unsigned long long)stop_seq, (unsigned long long)stop_time);
	struct wsp_loaded a, b;
	cr_assert_eq(wsp_load_until(path, &(struct wsp_model_options){ .totals_only = true }, false, stop_seq, stop_time, &a),
		     0);
	cr_assert_eq(wsp_tindex_replay(ix, stop_seq, stop_time, false, &b), 0, "replay at %s", at);
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		same_kind_stats(wsp_model_kind(a.model, k), wsp_model_kind(b.model, k), k, at);
	cr_expect_eq(wsp_model_last_time(a.model), wsp_model_last_time(b.model), "last time at %s", at);
	cr_expect_eq(wsp_model_untracked_frees(a.model), wsp_model_untracked_frees(b.model), "untracked at %s", at);
	struct lives la, lb;
	lives_of(a.model, &la);
	lives_of(b.model, &lb);
	cr_expect_eq(la.n, lb.n, "live blocks at %s: %zu, %zu", at, la.n, lb.n);
	for (size_t i = 0; i < la.n && i < lb.n; i++) {
		const struct live *x = &la.v[i], *y = &lb.v[i];
		const char *field = block_differs(&x->b, &y->b);
		cr_expect_null(field, "block %zu (0x%llx, 0x%llx) at %s: %s", i, (unsigned long long)x->b.addr,
			       (unsigned long long)y->b.addr, at, field);
		cr_expect_eq(x->has_ann, y->has_ann, "annotated %zu at %s", i, at);
		cr_expect_eq(memcmp(&x->ann, &y->ann, sizeof x->ann), 0, "annotation %zu at %s", i, at);
		cr_expect_str_eq(x->name, y->name, "name %zu at %s", i, at);
	}
	free(la.v);
	free(lb.v);
	wsp_loaded_free(&a);
	wsp_loaded_free(&b);
}

/* Every event's seq and time, in order. */
static size_t moments(const char *path, uint64_t **seqs, uint64_t **times)
{
	wsprof_trace *t;
	cr_assert_eq(wsprof_trace_open(path, &t), 0);
	size_t n = 0, cap = 0;
	*seqs = *times = NULL;
	wsprof_event ev;
	while (wsprof_trace_next(t, &ev) > 0) {
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			*seqs = realloc(*seqs, cap * sizeof **seqs);
			*times = realloc(*times, cap * sizeof **times);
		}
		(*seqs)[n] = ev.seq;
		(*times)[n++] = ev.time_ns;
	}
	wsprof_trace_close(t);
	return n;
}

/* Many moments of the trace at path: by seq at every event of a stride,
 * by time at as many times, and the ends. */
static void check_trace(const char *path, uint64_t spacing, size_t count)
{
	setenv("WSPROF_INDEX", "0", 1); /* in memory: tests leave nothing beside the traces */
	wsp_tindex_set_spacing(spacing);
	struct wsp_tindex *ix;
	cr_assert_eq(wsp_tindex_open(path, &ix), 0, "index of %s", path);
	struct wsp_tindex_info info;
	wsp_tindex_info(ix, &info);
	uint64_t *seqs, *times;
	size_t n = moments(path, &seqs, &times);
	cr_assert_gt(n, 0);
	cr_expect_gt(info.checkpoints, n / spacing > 2 ? 2 : 1, "%s: %zu checkpoints for %zu events", path,
		     info.checkpoints, n);
	size_t stride = n / count ? n / count : 1;
	for (size_t i = 0; i < n; i += stride) {
		same_moment(ix, path, seqs[i], UINT64_MAX);
		same_moment(ix, path, UINT64_MAX, times[i]);
	}
	same_moment(ix, path, seqs[n - 1], UINT64_MAX);
	same_moment(ix, path, UINT64_MAX, UINT64_MAX);
	same_moment(ix, path, UINT64_MAX, 0);
	free(seqs);
	free(times);
	wsp_tindex_close(ix);
	wsp_tindex_set_spacing(0);
}

/* A trace of three threads whose segments interleave, in chunks ending
 * in SYNCs: heap blocks freed by other threads, reallocs (MOVE), mmaps
 * cut by munmap, names, holders and validity, pool sub-allocations, a
 * CUDA device's blocks and memory, snapshots, RSS, module loads, and, when
 * sample_bytes, the heap's counted totals. Deterministic (a fixed LCG). */
static char *mixed_trace(uint64_t sample_bytes, size_t steps)
{
	struct trace_builder b;
	tb_init(&b);
	struct tb_process proc = tb_process_default();
	proc.sample_bytes = sample_bytes;
	tb_header(&b, &proc);
	uint64_t rng = 12345, seq = 1, time = 1000;
	uint64_t live[3][64] = { { 0 } };
	tb_segment(&b, 100, seq, time);
	for (uint64_t id = 1; id <= 40; id++)
		tb_stack(&b, id, id > 8 ? id % 8 : 0, 0x400000 + id * 16);
	const struct tb_segdesc seg = { 0, 0x100000, 5 };
	tb_ev_module_load(&b, seq, time, 0x400000, "/opt/t/bin/app", "\x01\x02", 2, &seg, 1);
	seq++;
	struct tb_cuda_tag gpu = { 0, 0, 0 };
	for (size_t i = 0; i < steps; i++) {
		uint32_t tid = 100 + (uint32_t)(i / 64 % 3);
		if (i % 64 == 0) {
			if (i)
				tb_sync(&b, seq, time);
			if (i % 512 == 0 && i)
				tb_chunk(&b);
			tb_segment(&b, tid, seq, time);
		}
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		unsigned r = (unsigned)(rng >> 33);
		size_t slot = r % 64;
		uint64_t *at = &live[tid - 100][slot];
		uint64_t stack = 1 + r % 40;
		time += r % 3 ? 0 : 1000000;
		switch (r % 11) {
		case 0: case 1: case 2: case 3:
			if (*at) {
				tb_ev_free(&b, seq++, time, WSPROF_KIND_HEAP, WSPROF_OP_FREE, *at);
				*at = 0;
			} else {
				*at = 0x10000000 + (uint64_t)(tid - 100) * 0x1000000 + slot * 0x10000;
				tb_ev_alloc(&b, seq++, time, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, *at, 16 + r % 40000, stack);
			}
			break;
		case 4: /* realloc in place */
			if (*at) {
				tb_ev_move(&b, seq++, time, WSPROF_KIND_HEAP, WSPROF_OP_REALLOC, *at, 0);
				tb_ev_alloc(&b, seq++, time, WSPROF_KIND_HEAP, WSPROF_OP_REALLOC, *at, 32 + r % 50000, stack);
			}
			break;
		case 5: /* a mapping, its head cut later */
			tb_ev_alloc(&b, seq++, time, WSPROF_KIND_MMAP, WSPROF_OP_MMAP, 0x7f0000000000 + (uint64_t)i * 0x100000,
				    0x40000, stack);
			if (i > 10)
				tb_ev_unmap(&b, seq++, time, WSPROF_KIND_MMAP, WSPROF_OP_MUNMAP,
					    0x7f0000000000 + (uint64_t)(i - 10) * 0x100000, 0x10000 + (r % 4) * 0x10000);
			break;
		case 6: /* what the program says */
			if (*at) {
				static const char *const names[] = { "weights", "cache", "activations" };
				unsigned what = r / 11 % 5;
				tb_ev_annotate(&b, seq++, time, what, *at + (r % 2 ? 8 : 0), 0, 0,
					       what == WSPROF_ANN_NAME ? names[r % 3] : NULL);
			}
			break;
		case 7: /* a pool carved from a block */
			if (*at) {
				struct tb_cuda_tag pool = { -1, 0, *at };
				tb_ev_cuda_alloc(&b, seq++, time, WSPROF_KIND_POOL, WSPROF_OP_MALLOC, *at + 64, 256, stack, &pool);
			}
			break;
		case 8:
			tb_ev_cuda_alloc(&b, seq++, time, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC,
					 0x500000000 + (i % 32) * 0x100000, 0x80000, stack, &gpu);
			if (i % 3 == 0)
				tb_ev_cuda_free(&b, seq++, time, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_FREE,
						0x500000000 + ((i + 16) % 32) * 0x100000, &gpu);
			tb_ev_device_memory(&b, seq++, time, 0, (1ull << 33) - i * 4096, 1ull << 33);
			break;
		case 9:
			if (r % 7 == 0) {
				char label[32];
				snprintf(label, sizeof label, "snap%zu", i);
				tb_ev_annotate(&b, seq++, time, WSPROF_ANN_SNAPSHOT, 0, 0, 0, label);
			}
			tb_ev_rss(&b, seq++, time, 1000000 + i * 100);
			break;
		default:
			if (sample_bytes) {
				struct wsprof_heap_totals h = { i * 3, i * 2, i * 5000, i * 5100, i * 3000, i * 2200, time };
				tb_ev_heap_totals(&b, seq++, time, &h);
			} else {
				tb_ev_fail(&b, seq++, time, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 1ull << 40, stack);
			}
			break;
		}
	}
	tb_sync(&b, seq, time);
	tb_chunk(&b);
	tb_footer(&b, time + 1);
	char *path = tb_save_temp(&b);
	tb_fini(&b);
	cr_assert(path);
	return path;
}

/* The index built by following a load of the full model (the full
 * report's) gives the moments a state model's replay does. */
static void check_followed(const char *path, uint64_t spacing, size_t count)
{
	setenv("WSPROF_INDEX", "0", 1);
	wsp_tindex_set_spacing(spacing);
	struct wsp_loaded l;
	struct wsp_tindex *ix;
	cr_assert_eq(wsp_load_indexed(path, &(struct wsp_model_options){ .per_stack = true }, false, NULL, 0, &l, &ix), 0);
	uint64_t *seqs, *times;
	size_t n = moments(path, &seqs, &times);
	size_t stride = n / count ? n / count : 1;
	for (size_t i = 0; i < n; i += stride) {
		same_moment(ix, path, seqs[i], UINT64_MAX);
		same_moment(ix, path, UINT64_MAX, times[i]);
	}
	same_moment(ix, path, UINT64_MAX, UINT64_MAX);
	free(seqs);
	free(times);
	wsp_tindex_close(ix);
	wsp_loaded_free(&l);
	wsp_tindex_set_spacing(0);
}

Test(timeindex, mixed_exact)
{
	char *path = mixed_trace(0, 6000);
	check_trace(path, 250, 40);
	check_followed(path, 250, 25);
	unlink(path);
	free(path);
}

Test(timeindex, mixed_sampled)
{
	char *path = mixed_trace(4096, 6000);
	check_trace(path, 250, 40);
	check_followed(path, 250, 25);
	unlink(path);
	free(path);
}

Test(timeindex, golden_server)
{
	check_trace(SOURCE_DIR "/tests/golden/server.wsp", 3, 40);
}

Test(timeindex, golden_story)
{
	check_trace(SOURCE_DIR "/tests/golden/story.wsp", 7, 40);
}

/* Every recorded trace of the fuzz corpus (real programs: threads, fork
 * and exec, dlopen, a killed one cut short, format 2 and 3), indexed in
 * its own pass and by following a full load. */
Test(timeindex, recorded, .timeout = 100)
{
	const char *dir = SOURCE_DIR "/tests/fuzz/corpus";
	DIR *d = opendir(dir);
	cr_assert(d);
	struct dirent *e;
	size_t n = 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 4, ".wsp"))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		wsprof_trace *t;
		if (wsprof_trace_open(path, &t) < 0)
			continue; /* not readable at all: no moments */
		wsprof_event ev;
		size_t events = 0;
		while (wsprof_trace_next(t, &ev) > 0)
			events++;
		wsprof_trace_close(t);
		if (!events)
			continue;
		/* A few moments each: the checked build replays each twice more. */
		uint64_t spacing = events / 8 ? events / 8 : 1;
		check_trace(path, spacing, 6);
		check_followed(path, spacing, 4);
		n++;
	}
	closedir(d);
	cr_expect_geq(n, 15, "%zu recorded traces", n);
}

/* A generated trace (bench/gentrace): two threads merged, the column layout. */
Test(timeindex, generated, .timeout = 100)
{
	char path[] = "/tmp/wsp-tindex-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s %s 300000 20000 500 >/dev/null", GENTRACE, path);
	cr_assert_eq(system(cmd), 0);
	check_trace(path, 20000, 40);
	check_followed(path, 20000, 25);
	unlink(path);
}

/* The model's books, written and read back, are the books. */
Test(timeindex, checkpoint_round_trip)
{
	struct wsp_loaded a;
	cr_assert_eq(wsp_load(SOURCE_DIR "/tests/golden/story.wsp", &(struct wsp_model_options){ .totals_only = true }, false,
			      &a),
		     0);
	struct wsp_bytes out = { 0 };
	cr_assert_eq(wsp_model_save(a.model, true, &out), 0);
	int err;
	struct wsp_model *m = wsp_model_restore(NULL, out.p, out.n, &err);
	cr_assert(m);
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		same_kind_stats(wsp_model_kind(a.model, k), wsp_model_kind(m, k), k, "the end");
	/* Damaged books are an error, never a model. */
	for (size_t cut = 0; cut < out.n; cut += 1 + out.n / 50)
		cr_expect_null(wsp_model_restore(NULL, out.p, cut, &err), "books cut at %zu of %zu", cut, out.n);
	wsp_model_free(m);
	wsp_bytes_free(&out);
	wsp_loaded_free(&a);
}

/* An index kept beside its trace is read again; one of another trace, or
 * of the trace before it grew, is not. */
Test(timeindex, stale)
{
	char dir[] = "/tmp/wsp-tindex-dir-XXXXXX";
	cr_assert(mkdtemp(dir));
	char trace[256], index[300], cmd[1024];
	snprintf(trace, sizeof trace, "%s/t.wsp", dir);
	snprintf(index, sizeof index, "%s.index", trace);
	snprintf(cmd, sizeof cmd, "cp %s/tests/golden/server.wsp %s", SOURCE_DIR, trace);
	cr_assert_eq(system(cmd), 0);
	unsetenv("WSPROF_INDEX");
	struct wsp_tindex *ix;
	struct wsp_tindex_info info;
	cr_assert_eq(wsp_tindex_open(trace, &ix), 0);
	wsp_tindex_info(ix, &info);
	cr_expect(info.built);
	cr_expect_str_eq(info.path, index);
	wsp_tindex_close(ix);
	cr_assert_eq(wsp_tindex_open(trace, &ix), 0);
	wsp_tindex_info(ix, &info);
	cr_expect_not(info.built, "a kept index is read, not built again");
	wsp_tindex_close(ix);
	/* Another trace in its place. */
	snprintf(cmd, sizeof cmd, "cp %s/tests/golden/story.wsp %s", SOURCE_DIR, trace);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(wsp_tindex_open(trace, &ix), 0);
	wsp_tindex_info(ix, &info);
	cr_expect(info.built, "an index of another trace is built again");
	same_moment(ix, trace, UINT64_MAX, UINT64_MAX);
	wsp_tindex_close(ix);
	/* A damaged index. */
	FILE *f = fopen(index, "r+b");
	cr_assert(f);
	fseek(f, 100, SEEK_SET);
	fputs("damage", f);
	fclose(f);
	cr_assert_eq(wsp_tindex_open(trace, &ix), 0);
	same_moment(ix, trace, UINT64_MAX, UINT64_MAX);
	wsp_tindex_close(ix);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}
