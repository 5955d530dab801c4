/*
 * make_golden - write the small committed traces the golden tests render.
 *
 * usage: make_golden server|story OUTPUT
 *
 * Both are made-up programs whose files exist nowhere, so every frame
 * reads module+offset on any machine and the reports are the same
 * everywhere. Run it again only when the format changes on purpose, check
 * that the other trace comes out the same (cmp), and commit the new trace
 * with its outputs (WSPROF_GOLDEN_UPDATE=1 meson test golden rewrites them).
 *
 * server.wsp (format 1.0): "/opt/golden/bin/server" with "libgolden.so".
 * Two threads; a realloc, a failed allocation, an mmap cut in two, a fork,
 * leaks and a temporary allocation; the heap peaks at 3 KiB + 100 B.
 *
 * story.wsp (format 1.1): "/opt/golden/bin/trainer --steps 4" with
 * "libmodel.so", a GPU training job of 10 s on device 0 (16 GiB). Threads:
 * 5151 main, 5152 a batch loader; 5153 (the recorder's sampler: ACCESS of
 * written pages and RSS, every 100 ms window ending at 0.1 .. 9.9 s) and
 * 5154 (its writer: DEVICE_MEMORY every 200 ms from 0.7 s) are not the
 * program's. Phases, all on the main thread:
 *
 *   load   0.010 - 1.990 s         snapshot "after-load" at 1.995 s
 *   train  2.050 - 7.990 s, four nested "step" phases:
 *          2.210-3.490, 3.610-4.890, 5.010-6.290, 6.410-7.690 s
 *   save   8.050 - 9.580 s
 *
 * Heap: a 4 KiB temporary config buffer (0.050-0.060 s) and a 1 KiB model
 * description (0.080 s, leaked); "grad-accum", 32 MiB at 0.105 s, acquired,
 * written whole in every window until 9.7 s (hot), released and freed at
 * 9.850/9.855 s; an unnamed 48 MiB index at 0.155 s, written once (window
 * ending 0.2 s) and never again (cold, leaked); "host-weights", 64 MiB at
 * 0.205 s, acquired, written 4 MiB a window until 1.8 s, released and
 * invalidated at 1.905/1.906 s (collectable from then on, leaked). The
 * loader allocates a 256 B temporary (step start + 5 ms, freed at + 6)
 * and each step's batch (8, 10, 12, 10 MiB, at + 8 ms, written in the two
 * windows after); the main thread frees the batch 10 ms before the step
 * ends. The large blocks lie side by side from 0x7f2000000000. The heap
 * peaks at 156 MiB + 1 KiB at 5.018 s (64 MiB of it collectable); truly in
 * use at most 144 MiB + 1 KiB, from 0.205 s. At the end 112 MiB + 1 KiB is
 * leaked in 3 blocks.
 *
 * Device 0 (the CUDA context takes 512 MiB at 0.5 s; blocks from
 * 0x7e0000000000, first fit): cuMemAlloc "weights" 6 GiB at 0.550 s; an
 * unnamed 512 MiB scratch buffer 0.560-1.850 s, whose place stays a hole;
 * "optimizer" 3 GiB at 2.120 s (acquired); each step a "kv-cache-N" of
 * 1 GiB (marked valid, kept; the cache of two steps before is marked
 * invalid: collectable) and 1 GiB of "activations" freed at step end - 5
 * ms. cuda_device peaks at 14 GiB at 6.430 s; the device has 1.5 GiB free
 * at the least (first seen at 6.5 s). At 7.510 s a 2 GiB cuMemAlloc of the
 * workspace fails (the OOM; a DEVICE_MEMORY sample of 1.5 GiB free follows
 * it): the one hole is 512 MiB, while kv-cache-1 and -2, side by side, are
 * 2 GiB collectable. The caches are freed at 7.905-7.935 s, optimizer and
 * weights at 9.650/9.660 s. Kernel launches (inferred ACCESS) touch
 * weights, optimizer, the step's cache and activations 250, 650 and 1050
 * ms into each step. In save: an mmap of 256 MiB at 8.150 s written 32 MiB
 * a window (windows ending 8.2 - 8.9 s) and unmapped at 9.450 s, and 512
 * MiB of pinned host memory (cuMemAllocHost, never accessed) from 8.250 to
 * 9.520 s. RSS: 40 MiB, 200 MiB more from 0.5 s, plus what was written of
 * the live blocks and the pinned memory; 1152 MiB at most (8.9-9.4 s).
 * Regions in no block: the main thread's stack, 12 KiB in every window.
 * The config buffer's page, written in the first window, goes to the
 * config buffer, freed during that window.
 */
#include "trace_builder.h"

#include "wsprof/trace.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HEAP = WSPROF_KIND_HEAP, MMAP = WSPROF_KIND_MMAP };

#define MS 1000000ull /* event times below are in milliseconds */
#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

/* ---- server.wsp --------------------------------------------------------- */

static void build_server(struct trace_builder *b)
{
	struct tb_process p = tb_process_default();
	static const char cmdline[] = "/opt/golden/bin/server\0--port\0008080";
	p.pid = 4242;
	p.ppid = 1;
	p.exe = "/opt/golden/bin/server";
	p.cmdline = cmdline;
	p.cmdline_len = sizeof cmdline;
	p.start_realtime_ns = 1795939200000000000ull; /* 2026-11-29 08:00:00 UTC */
	p.tool_version = "0.1.0";
	/* It has only records of format 1.0, and says so, as when it was made. */
	tb_header_version(b, 1, 0, &p);

	const uint64_t exe = 0x555555554000ull, lib = 0x7f0000000000ull;
	static const uint8_t exe_id[] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4 };
	static const uint8_t lib_id[] = { 0xfe, 0xed, 0xfa, 0xce, 5, 6, 7, 8 };
	const struct tb_segdesc exe_segs[] = { { 0, 0x1000, 4 }, { 0x1000, 0x4000, 5 } };
	const struct tb_segdesc lib_segs[] = { { 0, 0x1000, 4 }, { 0x1000, 0x8000, 5 } };

	/* Thread 100, the main thread. */
	tb_segment(b, 100, 0, 0);
	tb_ev_module_load(b, 1, 1 * MS, exe, "/opt/golden/bin/server", exe_id, sizeof exe_id, exe_segs, 2);
	tb_ev_module_load(b, 2, 2 * MS, lib, "/opt/golden/lib/libgolden.so", lib_id, sizeof lib_id, lib_segs, 2);
	/* Stacks: 1 _start, 2 main, 3 handle_request, 4 parse (in the library), 5 cache_put, 6 worker */
	tb_stack(b, 1, 0, exe + 0x1100);
	tb_stack(b, 2, 1, exe + 0x1234);
	tb_stack(b, 3, 2, exe + 0x1400);
	tb_stack(b, 4, 3, lib + 0x2010);
	tb_stack(b, 5, 2, exe + 0x1800);
	tb_stack(b, 6, 0, exe + 0x1900);
	tb_ev_alloc(b, 3, 10 * MS, HEAP, WSPROF_OP_MALLOC, 0x1000, 1024, 5);    /* cache entry, leaked */
	tb_ev_alloc(b, 4, 11 * MS, HEAP, WSPROF_OP_MALLOC, 0x2000, 64, 4);      /* parse buffer */
	tb_ev_free(b, 5, 12 * MS, HEAP, WSPROF_OP_FREE, 0x2000);                /* ... temporary */
	tb_ev_alloc(b, 6, 13 * MS, HEAP, WSPROF_OP_CALLOC, 0x3000, 100, 3);     /* request */
	tb_ev_move(b, 7, 14 * MS, HEAP, WSPROF_OP_REALLOC, 0x3000, 0);
	tb_ev_alloc(b, 8, 15 * MS, HEAP, WSPROF_OP_REALLOC, 0x4000, 2048, 3);   /* request grown */
	tb_ev_alloc(b, 9, 16 * MS, MMAP, WSPROF_OP_MMAP, 0x7e0000000000ull, 0x4000, 2);
	tb_sync(b, 10, 16 * MS);
	tb_chunk(b);

	/* Thread 101, a worker, and the main thread again. */
	tb_segment(b, 101, 0, 0);
	tb_ev_alloc(b, 10, 20 * MS, HEAP, WSPROF_OP_MALLOC, 0x5000, 100, 6);    /* the peak: 3 KiB + 100 B */
	tb_ev_free(b, 11, 21 * MS, HEAP, WSPROF_OP_FREE, 0x4000);               /* freed on another thread */
	tb_ev_fail(b, 12, 22 * MS, HEAP, WSPROF_OP_MALLOC, 1ull << 40, 6);
	tb_segment(b, 100, 0, 0);
	tb_ev_unmap(b, 13, 23 * MS, MMAP, WSPROF_OP_MUNMAP, 0x7e0000001000ull, 0x1000); /* a hole */
	tb_ev_fork(b, 14, 24 * MS, 4343);
	tb_ev_alloc(b, 15, 25 * MS, HEAP, WSPROF_OP_MALLOC, 0x6000, 512, 5);    /* cache entry, leaked */
	tb_sync(b, 16, 26 * MS);
	tb_chunk(b);
	tb_footer(b, 30 * MS);
}

/* ---- story.wsp ---------------------------------------------------------- */

/*
 * The story is one function, told in time order, that is replayed once for
 * every chunk and thread: each replay writes only the records of that
 * thread in that second, as one segment, the way the recorder writes each
 * thread's buffer. Sequence numbers, the live blocks and the device's free
 * memory come out of the telling, the same in every replay.
 */

enum { MAIN = 5151, LOADER = 5152, SAMPLER = 5153, WRITER = 5154 };

#define EXE 0x555555554000ull
#define LIB 0x7f1000000000ull
#define END_MS 10000
#define CHUNK_MS 1000
#define WINDOW_MS 100
#define DEVICE_TOTAL (16 * GiB)
#define CONTEXT_BYTES (512 * MiB) /* device memory the CUDA context takes */
#define RSS_BASE (40 * MiB)
#define RSS_CUDA (200 * MiB)      /* host memory of the CUDA runtime */

/* Call stacks: node, parent, return address (see put_stacks). */
enum {
	S_START = 1, S_MAIN, S_LOAD, S_READ_CONFIG, S_PARSE_DESC, S_ALLOC_GRADS, S_BUILD_INDEX, S_STAGE_WEIGHTS,
	S_UPLOAD_WEIGHTS, S_UPLOAD_SCRATCH, S_TRAIN, S_INIT_OPTIMIZER, S_STEP, S_GROW_CACHE, S_FORWARD, S_WORKSPACE, S_SAVE,
	S_MAP_OUTPUT, S_PIN_OUTPUT, S_LOADER, S_NEXT_BATCH, S_SHUFFLE, S_COUNT
};

static const struct { uint64_t parent, ip; } stacks[S_COUNT] = {
	[S_START] = { 0, EXE + 0x1105 },
	[S_MAIN] = { S_START, EXE + 0x1253 },
	[S_LOAD] = { S_MAIN, EXE + 0x2105 },          /* load_model */
	[S_READ_CONFIG] = { S_LOAD, EXE + 0x2210 },   /* read_config */
	[S_PARSE_DESC] = { S_LOAD, LIB + 0x3014 },    /* libmodel: parse_desc */
	[S_ALLOC_GRADS] = { S_LOAD, LIB + 0x3408 },   /* libmodel: alloc_grads */
	[S_BUILD_INDEX] = { S_LOAD, EXE + 0x2310 },   /* build_index */
	[S_STAGE_WEIGHTS] = { S_LOAD, LIB + 0x3108 }, /* libmodel: stage_weights */
	[S_UPLOAD_WEIGHTS] = { S_LOAD, LIB + 0x3210 },/* libmodel: upload_weights */
	[S_UPLOAD_SCRATCH] = { S_LOAD, LIB + 0x3250 },/* libmodel: upload_scratch */
	[S_TRAIN] = { S_MAIN, EXE + 0x2405 },         /* train */
	[S_INIT_OPTIMIZER] = { S_TRAIN, LIB + 0x3310 },
	[S_STEP] = { S_TRAIN, EXE + 0x2505 },         /* train_step */
	[S_GROW_CACHE] = { S_STEP, LIB + 0x3510 },
	[S_FORWARD] = { S_STEP, LIB + 0x3610 },
	[S_WORKSPACE] = { S_STEP, LIB + 0x3710 },     /* alloc_workspace: the OOM */
	[S_SAVE] = { S_MAIN, EXE + 0x2605 },          /* save_checkpoint */
	[S_MAP_OUTPUT] = { S_SAVE, EXE + 0x2710 },
	[S_PIN_OUTPUT] = { S_SAVE, LIB + 0x3810 },
	[S_LOADER] = { 0, EXE + 0x1905 },             /* loader_main, the loader thread */
	[S_NEXT_BATCH] = { S_LOADER, EXE + 0x1a10 },
	[S_SHUFFLE] = { S_LOADER, EXE + 0x1b10 },
};

/* Blocks the story writes to or samples, by address. */
#define A_CONFIG 0x5555555a0000ull
#define A_DESC 0x5555555a1000ull
/* Large heap blocks are mappings of their own, side by side. */
#define A_GRADS 0x7f2000000000ull
#define A_INDEX (A_GRADS + 32 * MiB)
#define A_STAGING (A_INDEX + 48 * MiB)
#define A_BATCH (A_STAGING + 64 * MiB)
#define A_SHUFFLE 0x5555555a2000ull
#define A_CHECKPOINT 0x7f3000000000ull
#define A_PINNED 0x7f5000000000ull
/* Device memory as the driver hands it out, first fit from its base: the
 * scratch buffer leaves a hole the optimizer does not fit in; each step's
 * cache takes the place of the activations of the step before. */
#define A_DEVICE 0x7e0000000000ull
#define A_WEIGHTS A_DEVICE
#define A_SCRATCH (A_DEVICE + 6 * GiB)
#define A_OPTIMIZER (A_DEVICE + 6 * GiB + 512 * MiB)
#define A_CACHE (A_DEVICE + 9 * GiB + 512 * MiB)        /* + 1 GiB per step */
#define A_ACTIVATIONS (A_DEVICE + 10 * GiB + 512 * MiB) /* + 1 GiB per step */
#define A_STACK 0x7ffd4a3f0000ull

#define MAX_BLOCKS 16
#define MAX_REGIONS 16

struct story {
	struct trace_builder *b;
	/* The replay: records of thread tid at times in [from, to). */
	uint32_t tid;
	uint64_t from, to;
	bool open;               /* its segment was written */
	uint64_t watermark;      /* one past the last sequence number before `to` */
	/* The telling so far. */
	uint64_t seq, now;
	uint64_t next_window, next_device_sample; /* in ms */
	struct live_block {
		uint64_t addr, size, written;
		unsigned kind;
	} live[MAX_BLOCKS];
	size_t nlive;
	struct tb_region regions[MAX_REGIONS]; /* of the window being told */
	size_t nregions;
};

static void die(const char *what)
{
	fprintf(stderr, "make_golden: %s\n", what);
	exit(1);
}

static void put_stacks(struct trace_builder *b)
{
	for (uint64_t id = 1; id < S_COUNT; id++)
		tb_stack(b, id, stacks[id].parent, stacks[id].ip);
}

/* Count one record of thread tid at t (ms). @return whether this replay writes it. */
static bool take(struct story *s, uint32_t tid, uint64_t t)
{
	if (t * MS < s->now)
		die("the story went back in time");
	s->now = t * MS;
	s->seq++;
	if (s->now < s->to)
		s->watermark = s->seq + 1;
	if (tid != s->tid || s->now < s->from || s->now >= s->to)
		return false;
	if (!s->open) {
		tb_segment(s->b, tid, 0, 0);
		s->open = true;
		if (s->from == 0 && tid == MAIN)
			put_stacks(s->b);
	}
	return true;
}

static bool is_device(unsigned kind)
{
	return kind == WSPROF_KIND_CUDA_DEVICE;
}

static uint64_t device_used(const struct story *s)
{
	uint64_t used = s->now >= 500 * MS ? CONTEXT_BYTES : 0;
	for (size_t i = 0; i < s->nlive; i++)
		used += is_device(s->live[i].kind) ? s->live[i].size : 0;
	return used;
}

/* Resident host memory: what was written of the live blocks, and pinned memory whole. */
static uint64_t rss(const struct story *s)
{
	uint64_t bytes = RSS_BASE + (s->now >= 500 * MS ? RSS_CUDA : 0);
	for (size_t i = 0; i < s->nlive; i++)
		bytes += s->live[i].kind == WSPROF_KIND_CUDA_HOST ? s->live[i].size : s->live[i].written;
	return bytes;
}

static void add_region(struct story *s, uint64_t addr, uint64_t len)
{
	if (s->nregions == MAX_REGIONS)
		die("too many regions in one window");
	s->regions[s->nregions++] = (struct tb_region){ addr, len };
}

/* The program wrote [addr, addr + len) of a live block during this window. */
static void write_block(struct story *s, uint64_t addr, uint64_t len)
{
	for (size_t i = 0; i < s->nlive; i++) {
		if (addr >= s->live[i].addr && addr - s->live[i].addr < s->live[i].size) {
			uint64_t upto = addr + len - s->live[i].addr;
			if (upto > s->live[i].written) /* every block is written front to back */
				s->live[i].written = upto;
			add_region(s, addr, len);
			return;
		}
	}
	die("a write to no live block");
}

static int by_start(const void *a, const void *b)
{
	uint64_t x = ((const struct tb_region *)a)->start, y = ((const struct tb_region *)b)->start;
	return x < y ? -1 : x > y;
}

/* The step (0-3) whose phase holds t (ms), or -1. */
static int step_at(uint64_t t)
{
	for (int k = 0; k < 4; k++) {
		uint64_t start = 2210 + 1400 * (uint64_t)k;
		if (t >= start && t < start + 1280)
			return k;
	}
	return -1;
}

static const uint64_t batch_size[4] = { 8 * MiB, 10 * MiB, 12 * MiB, 10 * MiB };

/* What the sampler saw written in the window ending at t (ms), then the RSS. */
static void window(struct story *s, uint64_t t)
{
	s->nregions = 0;
	add_region(s, A_STACK, 12 * KiB);
	if (t == 100)
		add_region(s, A_CONFIG, 8 * KiB); /* the freed config buffer's page, and the description */
	if (t >= 200 && t <= 9700)
		write_block(s, A_GRADS, 32 * MiB);
	if (t == 200)
		write_block(s, A_INDEX, 48 * MiB);
	if (t >= 300 && t <= 1800)
		write_block(s, A_STAGING + (t - 300) / 100 * 4 * MiB, 4 * MiB);
	int k = step_at(t - 1);
	if (k >= 0 && t - (2210 + 1400 * (uint64_t)k) < 200)
		write_block(s, A_BATCH, batch_size[k]);
	if (t >= 8200 && t <= 8900)
		write_block(s, A_CHECKPOINT + (t - 8200) / 100 * 32 * MiB, 32 * MiB);
	qsort(s->regions, s->nregions, sizeof *s->regions, by_start);
	if (take(s, SAMPLER, t))
		tb_ev_access(s->b, s->seq, t * MS, WSPROF_ACCESS_WRITES, WINDOW_MS * MS, s->regions, s->nregions);
	if (take(s, SAMPLER, t))
		tb_ev_rss(s->b, s->seq, t * MS, rss(s));
}

static void device_sample(struct story *s, uint32_t tid, uint64_t t)
{
	if (take(s, tid, t))
		tb_ev_device_memory(s->b, s->seq, t * MS, 0, DEVICE_TOTAL - device_used(s), DEVICE_TOTAL);
}

/* Tell the recorder's own records up to t (ms): they come at round times,
 * the program's events never do. */
static void until(struct story *s, uint64_t t)
{
	for (;;) {
		uint64_t w = s->next_window, d = s->next_device_sample;
		if (w <= d && w <= t && w < END_MS) {
			window(s, w);
			s->next_window += WINDOW_MS;
		} else if (d < w && d <= t && d < END_MS) {
			device_sample(s, WRITER, d);
			s->next_device_sample += 200;
		} else {
			return;
		}
	}
}

static const struct tb_cuda_tag device0 = { 0, 0, 0 };

static void alloc(struct story *s, uint32_t tid, uint64_t t, unsigned kind, unsigned op, uint64_t addr,
		  uint64_t size, uint64_t stack)
{
	until(s, t);
	if (s->nlive == MAX_BLOCKS)
		die("too many live blocks");
	s->live[s->nlive++] = (struct live_block){ addr, size, 0, kind };
	if (!take(s, tid, t))
		return;
	if (kind == HEAP || kind == MMAP)
		tb_ev_alloc(s->b, s->seq, t * MS, kind, op, addr, size, stack);
	else
		tb_ev_cuda_alloc(s->b, s->seq, t * MS, kind, op, addr, size, stack, &device0);
}

static void release(struct story *s, uint32_t tid, uint64_t t, unsigned kind, unsigned op, uint64_t addr)
{
	until(s, t);
	size_t i = 0;
	while (i < s->nlive && s->live[i].addr != addr)
		i++;
	if (i == s->nlive)
		die("a free of no live block");
	uint64_t size = s->live[i].size;
	s->live[i] = s->live[--s->nlive];
	if (!take(s, tid, t))
		return;
	if (kind == HEAP)
		tb_ev_free(s->b, s->seq, t * MS, kind, op, addr);
	else if (kind == MMAP)
		tb_ev_unmap(s->b, s->seq, t * MS, kind, op, addr, size);
	else
		tb_ev_cuda_free(s->b, s->seq, t * MS, kind, op, addr, &device0);
}

static void annotate(struct story *s, uint64_t t, unsigned what, uint64_t addr, const char *text)
{
	until(s, t);
	if (take(s, MAIN, t))
		tb_ev_annotate(s->b, s->seq, t * MS, what, addr, 0, 0, text);
}

/* Kernels of a step read and write these device blocks. */
static void launch(struct story *s, uint64_t t, int step)
{
	until(s, t);
	const struct tb_region used[] = {
		{ A_WEIGHTS, 6 * GiB }, { A_OPTIMIZER, 3 * GiB },
		{ A_CACHE + (uint64_t)step * GiB, 1 * GiB }, { A_ACTIVATIONS + (uint64_t)step * GiB, 1 * GiB },
	};
	if (take(s, MAIN, t))
		tb_ev_access(s->b, s->seq, t * MS, WSPROF_ACCESS_INFERRED, 0, used, 4);
}

static void tell_load(struct story *s)
{
	static const uint8_t exe_id[] = { 0x7a, 0x11, 0xe5, 0x01, 1, 2, 3, 4 };
	static const uint8_t lib_id[] = { 0x30, 0xde, 0x15, 0x02, 5, 6, 7, 8 };
	const struct tb_segdesc exe_segs[] = { { 0, 0x1000, 4 }, { 0x1000, 0x4000, 5 } };
	const struct tb_segdesc lib_segs[] = { { 0, 0x1000, 4 }, { 0x1000, 0x8000, 5 } };
	if (take(s, MAIN, 1))
		tb_ev_module_load(s->b, s->seq, 1 * MS, EXE, "/opt/golden/bin/trainer", exe_id, sizeof exe_id, exe_segs, 2);
	if (take(s, MAIN, 2))
		tb_ev_module_load(s->b, s->seq, 2 * MS, LIB, "/opt/golden/lib/libmodel.so", lib_id, sizeof lib_id,
				  lib_segs, 2);
	annotate(s, 10, WSPROF_ANN_PHASE_PUSH, 0, "load");
	alloc(s, MAIN, 50, HEAP, WSPROF_OP_MALLOC, A_CONFIG, 4 * KiB, S_READ_CONFIG);
	release(s, MAIN, 60, HEAP, WSPROF_OP_FREE, A_CONFIG);
	alloc(s, MAIN, 80, HEAP, WSPROF_OP_MALLOC, A_DESC, 1 * KiB, S_PARSE_DESC);
	alloc(s, MAIN, 105, HEAP, WSPROF_OP_POSIX_MEMALIGN, A_GRADS, 32 * MiB, S_ALLOC_GRADS);
	annotate(s, 106, WSPROF_ANN_NAME, A_GRADS, "grad-accum");
	annotate(s, 107, WSPROF_ANN_ACQUIRE, A_GRADS, NULL);
	alloc(s, MAIN, 155, HEAP, WSPROF_OP_MALLOC, A_INDEX, 48 * MiB, S_BUILD_INDEX);
	alloc(s, MAIN, 205, HEAP, WSPROF_OP_MALLOC, A_STAGING, 64 * MiB, S_STAGE_WEIGHTS);
	annotate(s, 206, WSPROF_ANN_NAME, A_STAGING, "host-weights");
	annotate(s, 207, WSPROF_ANN_ACQUIRE, A_STAGING, NULL);
	alloc(s, MAIN, 550, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC, A_WEIGHTS, 6 * GiB, S_UPLOAD_WEIGHTS);
	annotate(s, 551, WSPROF_ANN_NAME, A_WEIGHTS, "weights");
	alloc(s, MAIN, 560, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC, A_SCRATCH, 512 * MiB, S_UPLOAD_SCRATCH);
	release(s, MAIN, 1850, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_FREE, A_SCRATCH);
	/* Uploaded: the host copy is kept as a stale cache nobody holds. */
	annotate(s, 1905, WSPROF_ANN_RELEASE, A_STAGING + 16 * MiB, NULL); /* an address inside names the block */
	annotate(s, 1906, WSPROF_ANN_INVALID, A_STAGING, NULL);
	annotate(s, 1990, WSPROF_ANN_PHASE_POP, 0, NULL);
	annotate(s, 1995, WSPROF_ANN_SNAPSHOT, 0, "after-load");
}

static void tell_step(struct story *s, int k)
{
	static const char *const cache_names[4] = { "kv-cache-1", "kv-cache-2", "kv-cache-3", "kv-cache-4" };
	uint64_t start = 2210 + 1400 * (uint64_t)k, end = start + 1280;
	uint64_t cache = A_CACHE + (uint64_t)k * GiB, activations = A_ACTIVATIONS + (uint64_t)k * GiB;
	annotate(s, start, WSPROF_ANN_PHASE_PUSH, 0, "step");
	alloc(s, LOADER, start + 5, HEAP, WSPROF_OP_MALLOC, A_SHUFFLE, 256, S_SHUFFLE);
	release(s, LOADER, start + 6, HEAP, WSPROF_OP_FREE, A_SHUFFLE);
	alloc(s, LOADER, start + 8, HEAP, WSPROF_OP_MALLOC, A_BATCH, batch_size[k], S_NEXT_BATCH);
	alloc(s, MAIN, start + 10, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC, cache, 1 * GiB, S_GROW_CACHE);
	annotate(s, start + 11, WSPROF_ANN_NAME, cache, cache_names[k]);
	annotate(s, start + 12, WSPROF_ANN_VALID, cache, NULL);
	if (k >= 2) /* the cache of two steps before goes stale, but stays */
		annotate(s, start + 15, WSPROF_ANN_INVALID, cache - 2 * GiB, NULL);
	alloc(s, MAIN, start + 20, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC, activations, 1 * GiB, S_FORWARD);
	annotate(s, start + 21, WSPROF_ANN_NAME, activations, "activations");
	for (uint64_t at = 250; at <= 1050; at += 400) {
		launch(s, start + at, k);
		if (k == 3 && at == 1050) {
			/* The workspace does not fit in the 1.5 GiB left: the OOM. */
			until(s, 7510);
			if (take(s, MAIN, 7510))
				tb_ev_cuda_fail(s->b, s->seq, 7510 * MS, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC,
						2 * GiB, S_WORKSPACE, &device0);
			device_sample(s, MAIN, 7510);
		}
	}
	release(s, MAIN, end - 10, HEAP, WSPROF_OP_FREE, A_BATCH);
	release(s, MAIN, end - 5, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_FREE, activations);
	annotate(s, end, WSPROF_ANN_PHASE_POP, 0, NULL);
}

static void tell(struct story *s)
{
	tell_load(s);
	annotate(s, 2050, WSPROF_ANN_PHASE_PUSH, 0, "train");
	alloc(s, MAIN, 2120, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC, A_OPTIMIZER, 3 * GiB, S_INIT_OPTIMIZER);
	annotate(s, 2121, WSPROF_ANN_NAME, A_OPTIMIZER, "optimizer");
	annotate(s, 2122, WSPROF_ANN_ACQUIRE, A_OPTIMIZER, NULL);
	for (int k = 0; k < 4; k++)
		tell_step(s, k);
	for (uint64_t k = 0; k < 4; k++)
		release(s, MAIN, 7905 + 10 * k, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_FREE, A_CACHE + k * GiB);
	annotate(s, 7990, WSPROF_ANN_PHASE_POP, 0, NULL);

	annotate(s, 8050, WSPROF_ANN_PHASE_PUSH, 0, "save");
	alloc(s, MAIN, 8150, MMAP, WSPROF_OP_MMAP, A_CHECKPOINT, 256 * MiB, S_MAP_OUTPUT);
	alloc(s, MAIN, 8250, WSPROF_KIND_CUDA_HOST, WSPROF_OP_CU_MEM_ALLOC_HOST, A_PINNED, 512 * MiB, S_PIN_OUTPUT);
	release(s, MAIN, 9450, MMAP, WSPROF_OP_MUNMAP, A_CHECKPOINT);
	release(s, MAIN, 9520, WSPROF_KIND_CUDA_HOST, WSPROF_OP_CU_MEM_FREE_HOST, A_PINNED);
	annotate(s, 9580, WSPROF_ANN_PHASE_POP, 0, NULL);
	annotate(s, 9645, WSPROF_ANN_RELEASE, A_OPTIMIZER, NULL);
	release(s, MAIN, 9650, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_FREE, A_OPTIMIZER);
	release(s, MAIN, 9660, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_FREE, A_WEIGHTS);
	/* After a window that did not write it: a window's bytes take the kinds
	 * of the blocks live when the next sample comes. */
	annotate(s, 9850, WSPROF_ANN_RELEASE, A_GRADS, NULL);
	release(s, MAIN, 9855, HEAP, WSPROF_OP_FREE, A_GRADS);
	until(s, END_MS);
}

static void build_story(struct trace_builder *b)
{
	struct tb_process p = tb_process_default();
	static const char cmdline[] = "/opt/golden/bin/trainer\0--steps\0" "4";
	p.pid = 5151;
	p.ppid = 1;
	p.exe = "/opt/golden/bin/trainer";
	p.cmdline = cmdline;
	p.cmdline_len = sizeof cmdline;
	p.start_realtime_ns = 1795942800000000000ull; /* 2026-11-29 09:00:00 UTC */
	p.tool_version = "0.1.0";
	p.access_sources = WSPROF_SOURCE_WRITES | WSPROF_SOURCE_ANNOTATIONS | WSPROF_SOURCE_KERNEL_LAUNCHES;
	p.wp_pages = 1536;
	p.window_ms = WINDOW_MS;
	p.max_regions = 1000;
	p.access_note = "DAMON: no /sys/kernel/mm/damon/admin (a kernel without CONFIG_DAMON_SYSFS)";
	tb_header(b, &p);

	static const uint32_t threads[] = { MAIN, LOADER, SAMPLER, WRITER };
	for (uint64_t from = 0; from < END_MS; from += CHUNK_MS) {
		uint64_t watermark = 0;
		for (size_t i = 0; i < sizeof threads / sizeof *threads; i++) {
			struct story s = { .b = b, .tid = threads[i], .from = from * MS, .to = (from + CHUNK_MS) * MS,
					   .next_window = WINDOW_MS, .next_device_sample = 700 };
			tell(&s);
			watermark = s.watermark;
		}
		tb_sync(b, watermark, (from + CHUNK_MS) * MS);
		tb_chunk(b);
	}
	tb_footer(b, END_MS * MS);
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "story"))) {
		fprintf(stderr, "usage: make_golden server|story OUTPUT\n");
		return 2;
	}
	struct trace_builder b;
	tb_init(&b);
	if (!strcmp(argv[1], "server"))
		build_server(&b);
	else
		build_story(&b);
	if (tb_save(&b, argv[2]) < 0) {
		perror(argv[2]);
		return 1;
	}
	tb_fini(&b);
	return 0;
}
