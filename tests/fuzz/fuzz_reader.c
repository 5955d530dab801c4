/*
 * fuzz_reader.c - a libFuzzer target for the trace reader (src/reader.c)
 * and the analyzer's model (analyzer/model/model.c), which every report reads
 * a trace through.
 *
 * Each input is a trace file. It is written to a memory file, opened with
 * wsprof_trace_open through /proc/self/fd (the reader opens paths only),
 * and read to the end the way the reports read it: every event goes into
 * two models (one per call stack with every recorded window a working-set
 * bucket, one keeping only the allocations of some modules, with its own
 * buckets), every stack is walked and every frame looked up in the module
 * map, and at the end every figure the model keeps is visited. Whatever the
 * bytes, this must end without a crash, undefined behaviour, a hang
 * (-timeout) or an allocation out of proportion to the input
 * (-rss_limit_mb, -malloc_limit_mb).
 *
 * A trace is mostly zstd frames with checksums: a byte changed inside one
 * would almost only test zstd's checks. So the mutator also works inside
 * the chunks: it decompresses one, lets libFuzzer change its records, and
 * compresses them again, so the record decoder sees damage that passes
 * the checksum. The other mutations work on the file as it is (header,
 * frame sizes, chunk indexes, truncation).
 *
 * Once a pass has ended, a second reader opens at one of the places it
 * noted (src/resume.h), seeded with the pass's tables: it must hand out
 * nothing below the seq it was given, and fail only for memory.
 *
 * tests/fuzz/run.sh runs it; README.md ("Checked builds and fuzzing") says
 * how to run it for longer.
 */
#include "format.h"
#include "model.h"
#include "resume.h"
#include "wss.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

static int memfd = -1;
static char memfd_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	memfd = memfd_create("wsprof-fuzz-trace", MFD_CLOEXEC);
	if (memfd < 0) {
		perror("fuzz_reader: memfd_create");
		exit(1);
	}
	snprintf(memfd_path, sizeof memfd_path, "/proc/self/fd/%d", memfd);
	return 0;
}

static void put_input(const uint8_t *data, size_t size)
{
	if (ftruncate(memfd, 0) < 0) {
		perror("fuzz_reader: ftruncate");
		abort();
	}
	for (size_t done = 0; done < size;) {
		ssize_t n = pwrite(memfd, data + done, size - done, (off_t)done);
		if (n <= 0) {
			perror("fuzz_reader: pwrite");
			abort();
		}
		done += (size_t)n;
	}
}

/* Reads that make the sanitizers check what the reader hands out: a
 * string must end, an array must be as long as it says. Their sum goes to
 * sink, so that the compiler keeps them. */
static volatile size_t sink;

static size_t touch(const void *p, size_t n)
{
	const volatile uint8_t *b = p;
	size_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += b[i];
	return sum;
}

static size_t touch_string(const char *s)
{
	return s ? touch(s, strlen(s) + 1) : 0;
}

/* What symbolization and the flame graph do with a stack: its frames, the
 * module under each return address, and the prefix tree's nodes. */
static size_t walk_stack(wsprof_trace *t, uint64_t stack)
{
	uint64_t ips[64];
	size_t depth = wsprof_trace_stack(t, stack, ips, 64), sum = depth;
	for (size_t i = 0; i < depth && i < 64; i++) {
		uint64_t base = 0;
		sum += touch_string(wsprof_trace_module_at(t, ips[i], &base));
		wsprof_module_info info;
		if (wsprof_trace_module_info_at(t, ips[i] - 1, &info))
			sum += touch_string(info.path) + touch(info.build_id, info.build_id_len);
		uint64_t start, end;
		if (wsprof_trace_module_span_at(t, ips[i] - 1, &start, &end))
			sum += (size_t)(end - start);
	}
	/* The same walk node by node, as far as a corrupt tree lets it go. */
	uint64_t node = stack, parent, ip;
	for (size_t i = 0; i < 64 && wsprof_trace_stack_node(t, node, &parent, &ip); i++) {
		sum += (size_t)ip;
		node = parent;
	}
	return sum;
}

static size_t walk_event(wsprof_trace *t, const wsprof_event *ev)
{
	size_t sum = touch_string(ev->path) + touch_string(ev->text);
	sum += touch(ev->build_id, ev->build_id_len);
	sum += touch(ev->regions, ev->nregions * sizeof *ev->regions);
	if (ev->stack)
		sum += walk_stack(t, ev->stack);
	return sum;
}

static void visit_site(const struct wsp_site_stats *s, void *arg)
{
	*(size_t *)arg += (size_t)(s->allocations + s->bytes + s->leaked_bytes + s->coldest_idle_ns);
}

struct live_visit {
	const struct wsp_model *model;
	size_t sum;
};

static void visit_live(const struct wsp_block *b, void *arg)
{
	struct live_visit *v = arg;
	const struct wsp_ann_state *a = wsp_model_ann(v->model, b);
	v->sum += (size_t)(wsp_block_addr(b) + b->size);
	if (a)
		v->sum += touch_string(a->name) + (size_t)a->refs;
}

static size_t walk_series(const struct wsp_series *s)
{
	return s ? touch(s->p, s->n * sizeof *s->p) : 0;
}

/* Every figure a report may read from a finished model. */
static size_t walk_model(const struct wsp_model *m)
{
	size_t sum = 0;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		sum += (size_t)wsp_model_kind(m, k)->live_bytes;
		sum += walk_series(wsp_model_live_series(m, k));
	}
	wsp_model_each_site(m, visit_site, &sum);
	struct live_visit v = { m, 0 };
	wsp_model_each_live(m, visit_live, &v);
	sum += v.sum;
	const struct wsp_device_stats *devices;
	size_t ndev = wsp_model_devices(m, &devices);
	sum += touch(devices, ndev * sizeof *devices);
	for (size_t i = 0; i < ndev; i++)
		sum += walk_series(wsp_model_device_series(m, i));
	const struct wsp_failure *failures;
	size_t nfailures = wsp_model_failures(m, &failures);
	sum += touch(failures, nfailures * sizeof *failures);
	const uint32_t *pids;
	size_t npids = wsp_model_children(m, &pids);
	sum += touch(pids, npids * sizeof *pids);
	sum += touch_string(wsp_model_exec(m));
	const struct wsp_phase *phases;
	size_t nphases = wsp_model_phases(m, &phases);
	for (size_t i = 0; i < nphases; i++)
		sum += touch_string(phases[i].name);
	const struct wsp_snapshot *snaps;
	size_t nsnaps = wsp_model_snapshots(m, &snaps);
	for (size_t i = 0; i < nsnaps; i++)
		sum += touch_string(snaps[i].label);
	const struct wsp_wss *wss = wsp_model_wss(m);
	if (wss) {
		const struct wsp_wss_point *points;
		size_t npoints = wsp_wss_points(wss, &points);
		sum += touch(points, npoints * sizeof *points);
	}
	const struct wsp_rss_point *rss;
	size_t nrss = wsp_model_rss(m, &rss);
	sum += touch(rss, nrss * sizeof *rss);
	return sum + (size_t)(wsp_model_untracked_frees(m) + wsp_model_last_time(m) +
			      wsp_model_unknown_annotations(m));
}

static int seed_node(void *arg, uint64_t id, uint64_t parent, uint64_t ip)
{
	return wsp_trace_seed_stack(arg, id, parent, ip) == -ENOMEM ? -ENOMEM : 0; /* -EINVAL: an id too far */
}

static int seed_module(void *arg, uint64_t base, const char *path, const uint8_t *build_id, size_t build_id_len,
		       size_t nsegs, const uint64_t (*segs)[2])
{
	return wsp_trace_seed_module(arg, base, path, build_id, build_id_len, nsegs, segs);
}

/* A reader opened at the place `pick` chooses among those the ended pass
 * `from` noted, for a seq near that chunk's highest. */
static size_t resume_somewhere(wsprof_trace *from, size_t pick)
{
	const struct wsp_chunk_place *places;
	size_t n = wsp_trace_chunk_places(from, &places);
	if (!n)
		return 0;
	uint64_t top = places[pick % n].max_seq, seq = top > pick % 8 ? top - pick % 8 : 0;
	struct wsp_resume r = { .seq = seq };
	r.offset = wsp_chunk_places_resume_offset(places, n, seq, &r.chunk);
	wsprof_trace *t;
	if (wsp_trace_open_at(memfd_path, &r, &t) < 0)
		return 0;
	int err = wsp_trace_each_stack_node(from, seed_node, t);
	if (!err)
		err = wsp_trace_each_module(from, seed_module, t);
	wsprof_event ev;
	size_t sum = 0;
	while (!err && (err = wsprof_trace_next(t, &ev)) > 0) {
		if (ev.seq < seq) {
			fprintf(stderr, "fuzz_reader: seq %llu handed out from seq %llu on\n", (unsigned long long)ev.seq,
				(unsigned long long)seq);
			abort();
		}
		sum += walk_event(t, &ev);
	}
	wsprof_trace_close(t);
	if (err < 0 && err != -ENOMEM) {
		fprintf(stderr, "fuzz_reader: error %d (%s) reading from a place\n", err, wsprof_strerror(err));
		abort();
	}
	return sum;
}

/* Modules of the seed traces (tests/fuzz/corpus): some allocations pass
 * the caller filter, some do not. */
static const char *const callers[] = { "alloc_basic", "libc.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
				       NULL };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	put_input(data, size);
	wsprof_trace *t;
	if (wsprof_trace_open(memfd_path, &t) < 0)
		return 0;
	const wsprof_process *p = wsprof_trace_process(t);
	size_t sum = touch_string(p->exe) + touch_string(p->cmdline) + touch_string(p->tool_version) +
		     touch_string(p->access_note);

	struct wsp_model_options all = { .per_stack = true };
	struct wsp_model_options some = { .callers = callers, .wss_bucket_ns = 250000000 };
	struct wsp_model *models[2] = { wsp_model_new(&all), wsp_model_new(&some) };
	if (!models[0] || !models[1])
		abort(); /* out of memory, which -rss_limit_mb reports before this */
	wsprof_event ev;
	int err;
	while ((err = wsprof_trace_next(t, &ev)) > 0) {
		sum += walk_event(t, &ev);
		for (int i = 0; i < 2 && err >= 0; i++)
			err = wsp_model_apply(models[i], t, &ev);
		if (err < 0)
			break;
	}
	bool ended = err == 0; /* the places are valid */
	for (int i = 0; i < 2; i++) {
		if (err >= 0)
			err = wsp_model_finish(models[i]);
		sum += walk_model(models[i]);
		wsp_model_free(models[i]);
	}
	wsprof_trace_status st;
	wsprof_trace_get_status(t, &st);
	uint64_t done, total;
	wsprof_trace_position(t, &done, &total);
	sum += touch_string(wsprof_strerror(st.error));
	if (ended)
		sum += resume_somewhere(t, size);
	wsprof_trace_close(t);
	/* An error may only be running out of memory (the reader's contract:
	 * damage ends the stream early, it is never an error of next()). */
	if (err < 0 && err != -ENOMEM) {
		fprintf(stderr, "fuzz_reader: error %d (%s) while reading\n", err, wsprof_strerror(err));
		abort();
	}
	sink = sum;
	return 0;
}

/* ---- mutations inside the chunks ------------------------------------- */

/* The largest chunk the mutator unpacks: seeds are small, and a bigger
 * chunk would only make each run slower. */
#define MUTATE_RAW_MAX (1u << 20)

struct chunk_at {
	size_t offset;         /* of the frame header */
	uint32_t rawsize, zsize;
};

/* The well-formed chunk frames of a file, in order; parsing stops at the
 * first frame that is not one. @return how many were found (at most max). */
static size_t find_chunks(const uint8_t *data, size_t size, struct chunk_at *out, size_t max)
{
	if (size < WSP_HEADER_FIXED || wsp_get_le32(data) != WSP_MAGIC_HEADER)
		return 0;
	size_t at = 8 + (size_t)wsp_get_le32(data + 4), n = 0;
	while (n < max && at + WSP_CHUNK_HEADER <= size && wsp_get_le32(data + at) == WSP_MAGIC_CHUNK) {
		uint32_t rawsize = wsp_get_le32(data + at + 12), zsize = wsp_get_le32(data + at + 16);
		if (zsize > size - at - WSP_CHUNK_HEADER)
			break;
		out[n++] = (struct chunk_at){ at, rawsize, zsize };
		at += WSP_CHUNK_HEADER + zsize;
	}
	return n;
}

/* Replace one chunk's records by a mutation of them, compressed again with
 * the content size and checksum the recorder writes.
 * @return the new size, or 0 if this input has no chunk to work on. */
static size_t mutate_in_chunk(uint8_t *data, size_t size, size_t max_size, unsigned seed)
{
	static uint8_t raw[MUTATE_RAW_MAX], packed[ZSTD_COMPRESSBOUND(MUTATE_RAW_MAX)];
	static ZSTD_CCtx *cctx;
	struct chunk_at chunks[256];
	size_t n = find_chunks(data, size, chunks, 256);
	if (!n)
		return 0;
	struct chunk_at c = chunks[seed % n];
	if (c.rawsize > MUTATE_RAW_MAX / 2)
		return 0;
	size_t got = ZSTD_decompress(raw, c.rawsize, data + c.offset + WSP_CHUNK_HEADER, c.zsize);
	if (ZSTD_isError(got))
		return 0;
	/* Room to grow by half again (a few more records), within the input's limit. */
	size_t rawmax = got + got / 2 + 64;
	size_t rawlen = LLVMFuzzerMutate(raw, got, rawmax < MUTATE_RAW_MAX ? rawmax : MUTATE_RAW_MAX);
	if (!cctx) {
		cctx = ZSTD_createCCtx();
		if (!cctx)
			abort();
		ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
		ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
		ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
	}
	size_t zlen = ZSTD_compress2(cctx, packed, sizeof packed, raw, rawlen);
	if (ZSTD_isError(zlen))
		return 0;
	size_t tail = c.offset + WSP_CHUNK_HEADER + c.zsize, newsize = size - c.zsize + zlen;
	if (newsize > max_size)
		return 0;
	memmove(data + c.offset + WSP_CHUNK_HEADER + zlen, data + tail, size - tail);
	memcpy(data + c.offset + WSP_CHUNK_HEADER, packed, zlen);
	wsp_put_le32(data + c.offset + 12, (uint32_t)rawlen);
	wsp_put_le32(data + c.offset + 16, (uint32_t)zlen);
	return newsize;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	/* Two mutations in three inside a chunk, the rest on the file's bytes. */
	if (seed % 3 != 0) {
		size_t n = mutate_in_chunk(data, size, max_size, seed / 3);
		if (n)
			return n;
	}
	return LLVMFuzzerMutate(data, size, max_size);
}
