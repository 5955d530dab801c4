/*
 * test_reader.c - the streaming trace reader (src/reader.c) against traces
 * written to the letter of doc/trace-format.md by trace_builder.
 *
 * What is pinned: events come out in global sequence order whatever order
 * the segments arrive in; deltas, stacks and modules decode to what was
 * written; records and fields of later minor versions are skipped; every
 * kind of damage ends the stream after the last good chunk with the right
 * status, and opening tells a missing, empty, foreign or newer file apart.
 * A trace cut at every byte never crashes or hangs the reader and always
 * gives the events of the chunks before the cut.
 */
#include "format.h"
#include "trace_builder.h"
#include "wsprof/trace.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers -------------------------------------------------------- */

static int open_bytes(const struct trace_builder *b, wsprof_trace **t)
{
	char *path = tb_save_temp(b);
	cr_assert_not_null(path, "cannot write a temporary trace");
	int err = wsprof_trace_open(path, t);
	unlink(path);
	free(path);
	return err;
}

static wsprof_trace *open_built(const struct trace_builder *b)
{
	wsprof_trace *t = NULL;
	int err = open_bytes(b, &t);
	cr_assert_eq(err, 0, "open: %s", wsprof_strerror(err));
	cr_assert_not_null(t);
	return t;
}

/* Every event left, strings dropped (they die with the next call). */
static size_t read_all(wsprof_trace *t, wsprof_event *evs, size_t max)
{
	size_t n = 0;
	wsprof_event ev;
	int r;
	while ((r = wsprof_trace_next(t, &ev)) > 0) {
		cr_assert_lt(n, max, "more events than were written");
		ev.path = NULL;
		ev.build_id = NULL;
		evs[n++] = ev;
	}
	cr_assert_eq(r, 0, "wsprof_trace_next failed: %s", wsprof_strerror(r));
	return n;
}

static wsprof_trace_status status_of(const wsprof_trace *t)
{
	wsprof_trace_status st;
	wsprof_trace_get_status(t, &st);
	return st;
}

static void expect_seqs(const wsprof_event *evs, size_t n, const uint64_t *seqs, size_t nseqs)
{
	cr_expect_eq(n, nseqs, "%zu events, expected %zu", n, nseqs);
	for (size_t i = 0; i < n && i < nseqs; i++)
		cr_expect_eq(evs[i].seq, seqs[i], "event %zu has seq %llu, expected %llu", i,
			     (unsigned long long)evs[i].seq, (unsigned long long)seqs[i]);
}

/* Three chunks of four events of one thread (seqs 1..12), each chunk
 * ending in a SYNC that covers it; offsets of the chunk frames in at[]. */
static void build_three_chunks(struct trace_builder *b, size_t at[3])
{
	tb_header(b, NULL);
	for (int c = 0; c < 3; c++) {
		uint64_t s = 4 * (uint64_t)c;
		tb_segment(b, 7, s, 1000 * s);
		tb_ev_alloc(b, s + 1, 1000 * s + 10, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x10000 + s, 16, 0);
		tb_ev_alloc(b, s + 2, 1000 * s + 20, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x20000 + s, 32, 0);
		tb_ev_free(b, s + 3, 1000 * s + 30, WSPROF_KIND_HEAP, WSPROF_OP_FREE, 0x10000 + s);
		tb_ev_free(b, s + 4, 1000 * s + 40, WSPROF_KIND_HEAP, WSPROF_OP_FREE, 0x20000 + s);
		tb_sync(b, s + 5, 1000 * s + 50);
		at[c] = tb_chunk(b);
	}
}

static const uint64_t seqs_1_to_4[] = { 1, 2, 3, 4 };
static const uint64_t seqs_1_to_8[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
static const uint64_t seqs_1_to_12[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };

/* Read a damaged trace: the events before the damage, then `error`. */
static void expect_stops_with(const struct trace_builder *b, const uint64_t *seqs, size_t nseqs,
			      int error)
{
	wsprof_trace *t = open_built(b);
	wsprof_event evs[64];
	size_t n = read_all(t, evs, 64);
	expect_seqs(evs, n, seqs, nseqs);
	wsprof_trace_status st = status_of(t);
	cr_expect_eq(st.error, error, "status error %d (%s), expected %d (%s)", st.error,
		     wsprof_strerror(st.error), error, wsprof_strerror(error));
	cr_expect_not(st.complete);
	wsprof_event ev;
	cr_expect_eq(wsprof_trace_next(t, &ev), 0, "the end stays the end");
	wsprof_trace_close(t);
}

/* ---- opening -------------------------------------------------------- */

Test(reader_open, missing_file_is_enoent)
{
	wsprof_trace *t = (wsprof_trace *)1;
	cr_expect_eq(wsprof_trace_open("/nonexistent/wsprof/trace.wsp", &t), -ENOENT);
	cr_expect_null(t);
}

/* A directory opens as a file would, then fails to read: said as what it is. */
Test(reader_open, a_directory_is_eisdir)
{
	wsprof_trace *t = (wsprof_trace *)1;
	cr_expect_eq(wsprof_trace_open("/", &t), -EISDIR);
	cr_expect_null(t);
}

Test(reader_open, empty_file_is_empty)
{
	struct trace_builder b;
	tb_init(&b);
	wsprof_trace *t;
	cr_expect_eq(open_bytes(&b, &t), WSPROF_E_EMPTY);
	cr_expect_null(t);
	tb_fini(&b);
}

Test(reader_open, random_bytes_are_not_a_trace)
{
	struct trace_builder b;
	tb_init(&b);
	uint32_t x = 2463534242u;
	for (int i = 0; i < 1000; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		uint8_t byte = (uint8_t)x;
		tb_file_bytes(&b, &byte, 1);
	}
	wsprof_trace *t;
	cr_expect_eq(open_bytes(&b, &t), WSPROF_E_NOT_TRACE);
	b.len = 5;
	cr_expect_eq(open_bytes(&b, &t), WSPROF_E_NOT_TRACE, "a few bytes of something else");
	tb_fini(&b);
}

Test(reader_open, zstd_frame_is_not_a_trace)
{
	/* A plain zstd file: valid zstd, but not wsprof's skippable header. */
	struct trace_builder b;
	tb_init(&b);
	tb_raw_bytes(&b, "hello", 5);
	size_t at = tb_chunk(&b);
	b.len -= at + WSP_CHUNK_HEADER;
	memmove(b.data, b.data + at + WSP_CHUNK_HEADER, b.len);
	wsprof_trace *t;
	cr_expect_eq(open_bytes(&b, &t), WSPROF_E_NOT_TRACE);
	tb_fini(&b);
}

Test(reader_open, newer_major_is_refused)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header_version(&b, WSPROF_FORMAT_MAJOR + 1, 0, NULL);
	tb_footer(&b, 0);
	wsprof_trace *t;
	cr_expect_eq(open_bytes(&b, &t), WSPROF_E_NEWER);
	cr_expect_null(t);
	tb_fini(&b);
}

Test(reader_open, newer_minor_is_read)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header_version(&b, WSPROF_FORMAT_MAJOR, WSPROF_FORMAT_MINOR + 7, NULL);
	tb_footer(&b, 0);
	wsprof_trace *t = open_built(&b);
	cr_expect_eq(wsprof_trace_process(t)->format_major, WSPROF_FORMAT_MAJOR);
	cr_expect_eq(wsprof_trace_process(t)->format_minor, WSPROF_FORMAT_MINOR + 7);
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_open, header_records_fill_the_process)
{
	struct trace_builder b;
	tb_init(&b);
	static const char cmdline[] = "./app\0-n\0" "3"; /* as /proc/self/cmdline: NUL-ended */
	struct tb_process p = tb_process_default();
	p.pid = 1234, p.ppid = 99, p.parent_pid_traced = 77;
	p.start_realtime_ns = 1712345678901234567ull;
	p.exe = "/opt/app/bin/app";
	p.cmdline = cmdline, p.cmdline_len = sizeof cmdline; /* with the final NUL */
	p.tool_version = "9.8.7";
	p.stack_depth = 32, p.flush_ms = 150, p.follow = 1;
	tb_header(&b, &p);
	tb_footer(&b, 0);
	wsprof_trace *t = open_built(&b);
	const wsprof_process *pr = wsprof_trace_process(t);
	cr_expect_eq(pr->pid, 1234);
	cr_expect_eq(pr->ppid, 99);
	cr_expect_eq(pr->parent_traced_pid, 77);
	cr_expect_eq(pr->start_realtime_ns, 1712345678901234567ull);
	cr_expect_str_eq(pr->exe, "/opt/app/bin/app");
	cr_expect_str_eq(pr->cmdline, "./app -n 3");
	cr_expect_str_eq(pr->tool_version, "9.8.7");
	cr_expect_eq(pr->format_major, WSPROF_FORMAT_MAJOR);
	cr_expect_eq(pr->format_minor, WSPROF_FORMAT_MINOR);
	cr_expect_eq(pr->stack_depth, 32);
	cr_expect_eq(pr->flush_ms, 150);
	cr_expect_eq(pr->follow, 1);
	wsprof_trace_close(t);
	tb_fini(&b);
}

/* Leave garbage in the small blocks malloc hands out next, so a string
 * read past its terminating NUL shows. */
static void dirty_small_blocks(void)
{
	void *p[7];
	for (int i = 0; i < 7; i++) {
		p[i] = malloc(24);
		cr_assert_not_null(p[i]);
		memset(p[i], 'U', 24);
	}
	for (int i = 6; i >= 0; i--)
		free(p[i]);
}

static void expect_cmdline(const char *cmdline, size_t len, const char *want)
{
	struct trace_builder b;
	tb_init(&b);
	struct tb_process p = tb_process_default();
	p.exe = "/a";
	p.tool_version = "1";
	p.cmdline = cmdline;
	p.cmdline_len = len;
	tb_header(&b, &p);
	tb_footer(&b, 0);
	char *path = tb_save_temp(&b);
	cr_assert_not_null(path);
	wsprof_trace *t;
	dirty_small_blocks();
	int err = wsprof_trace_open(path, &t);
	unlink(path);
	free(path);
	cr_assert_eq(err, 0, "open: %s", wsprof_strerror(err));
	cr_expect_str_eq(wsprof_trace_process(t)->cmdline, want);
	wsprof_trace_close(t);
	tb_fini(&b);
}

/* The spec separates arguments by NUL; it does not promise a final one. */
Test(reader_open, cmdline_without_a_final_nul_ends_where_it_ends)
{
	expect_cmdline("program\0argument", 16, "program argument");
}

Test(reader_open, empty_cmdline_reads_empty)
{
	expect_cmdline("", 0, "");
}

/* ---- events in order ------------------------------------------------ */

Test(reader, merges_segments_of_two_threads_by_seq)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	/* Thread 2's segment arrives first although thread 1 began earlier. */
	tb_segment(&b, 2, 0, 0);
	tb_ev_alloc(&b, 2, 20, 0, 0, 0x2000, 2, 0);
	tb_ev_alloc(&b, 5, 50, 0, 0, 0x5000, 5, 0);
	tb_segment(&b, 1, 0, 0);
	tb_ev_alloc(&b, 1, 10, 0, 0, 0x1000, 1, 0);
	tb_ev_alloc(&b, 3, 30, 0, 0, 0x3000, 3, 0);
	tb_sync(&b, 4, 35); /* 5 must wait: 4 is still to come */
	tb_chunk(&b);
	tb_segment(&b, 1, 3, 30);
	tb_ev_alloc(&b, 4, 40, 0, 0, 0x4000, 4, 0);
	tb_ev_alloc(&b, 6, 60, 0, 0, 0x6000, 6, 0);
	tb_sync(&b, 7, 70);
	tb_chunk(&b);
	tb_footer(&b, 80);

	wsprof_trace *t = open_built(&b);
	wsprof_event evs[16];
	size_t n = read_all(t, evs, 16);
	static const uint64_t want[] = { 1, 2, 3, 4, 5, 6 };
	expect_seqs(evs, n, want, 6);
	for (size_t i = 0; i < n; i++) {
		cr_expect_eq(evs[i].tid, evs[i].seq % 3 == 2 ? 2u : 1u, "seq %llu from thread %u",
			     (unsigned long long)evs[i].seq, evs[i].tid);
		cr_expect_eq(evs[i].time_ns, evs[i].seq * 10);
		cr_expect_eq(evs[i].addr, evs[i].seq * 0x1000);
		cr_expect_eq(evs[i].size, evs[i].seq);
	}
	wsprof_trace_status st = status_of(t);
	cr_expect(st.complete);
	cr_expect_eq(st.error, 0);
	cr_expect_eq(st.threads, 2);
	cr_expect_eq(st.chunks, 2);
	cr_expect_eq(st.events, 6);
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader, deltas_decode_to_absolute_values)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 41, 1000, 5000000);
	tb_ev_alloc(&b, 1001, 5000000, WSPROF_KIND_HEAP, WSPROF_OP_CALLOC, 0x7f0000001000, 4096, 3);
	tb_ev_free(&b, 1003, 5000100, WSPROF_KIND_HEAP, WSPROF_OP_FREE, 0x10);           /* far down */
	tb_ev_alloc(&b, 1004, 9000000000, WSPROF_KIND_MMAP, WSPROF_OP_MMAP, UINT64_MAX - 4095,
		    1 << 20, 0);                                                             /* far up */
	tb_ev_fail(&b, 1010, 9000000001, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, UINT64_MAX, 5);
	tb_ev_move(&b, 1011, 9000000002, WSPROF_KIND_HEAP, WSPROF_OP_REALLOC, 0x7f0000000ff0, 100);
	tb_ev_unmap(&b, 1012, 9000000003, WSPROF_KIND_MMAP, WSPROF_OP_MUNMAP, 0x7f0000000000, 8192);
	tb_ev_fork(&b, 1013, 9000000004, 31337);
	/* A new segment starts its deltas over, address included. */
	tb_segment(&b, 42, 2000, 1);
	tb_ev_alloc(&b, 2000, 1, WSPROF_KIND_HEAP, WSPROF_OP_POSIX_MEMALIGN, 0x5000, 64, 0);
	tb_ev_free(&b, 2001, 2, WSPROF_KIND_HEAP, WSPROF_OP_CFREE, 0x5000);
	tb_sync(&b, 3000, 9000000005);
	tb_chunk(&b);
	tb_footer(&b, 9000000006);

	wsprof_trace *t = open_built(&b);
	wsprof_event e[16];
	size_t n = read_all(t, e, 16);
	cr_assert_eq(n, 9);

	cr_expect_eq(e[0].type, WSPROF_EV_ALLOC);
	cr_expect_eq(e[0].tid, 41);
	cr_expect_eq(e[0].seq, 1001);
	cr_expect_eq(e[0].time_ns, 5000000);
	cr_expect_eq(e[0].kind, WSPROF_KIND_HEAP);
	cr_expect_eq(e[0].op, WSPROF_OP_CALLOC);
	cr_expect_eq(e[0].addr, 0x7f0000001000);
	cr_expect_eq(e[0].size, 4096);
	cr_expect_eq(e[0].stack, 3);

	cr_expect_eq(e[1].type, WSPROF_EV_FREE);
	cr_expect_eq(e[1].seq, 1003);
	cr_expect_eq(e[1].time_ns, 5000100);
	cr_expect_eq(e[1].op, WSPROF_OP_FREE);
	cr_expect_eq(e[1].addr, 0x10);

	cr_expect_eq(e[2].type, WSPROF_EV_ALLOC);
	cr_expect_eq(e[2].seq, 1004);
	cr_expect_eq(e[2].time_ns, 9000000000);
	cr_expect_eq(e[2].kind, WSPROF_KIND_MMAP);
	cr_expect_eq(e[2].op, WSPROF_OP_MMAP);
	cr_expect_eq(e[2].addr, UINT64_MAX - 4095);
	cr_expect_eq(e[2].size, 1 << 20);
	cr_expect_eq(e[2].stack, 0);

	cr_expect_eq(e[3].type, WSPROF_EV_FAIL);
	cr_expect_eq(e[3].seq, 1010);
	cr_expect_eq(e[3].size, UINT64_MAX);
	cr_expect_eq(e[3].stack, 5);
	cr_expect_eq(e[3].addr, 0, "a failure has no address");

	cr_expect_eq(e[4].type, WSPROF_EV_MOVE, "the address base did not move with the FAIL");
	cr_expect_eq(e[4].op, WSPROF_OP_REALLOC);
	cr_expect_eq(e[4].addr, 0x7f0000000ff0);
	cr_expect_eq(e[4].size, 100, "a MOVE's size is the old size");

	cr_expect_eq(e[5].type, WSPROF_EV_UNMAP);
	cr_expect_eq(e[5].kind, WSPROF_KIND_MMAP);
	cr_expect_eq(e[5].addr, 0x7f0000000000);
	cr_expect_eq(e[5].size, 8192, "an UNMAP's size is the length");

	cr_expect_eq(e[6].type, WSPROF_EV_FORK);
	cr_expect_eq(e[6].seq, 1013);
	cr_expect_eq(e[6].child_pid, 31337);

	cr_expect_eq(e[7].tid, 42);
	cr_expect_eq(e[7].seq, 2000);
	cr_expect_eq(e[7].time_ns, 1);
	cr_expect_eq(e[7].op, WSPROF_OP_POSIX_MEMALIGN);
	cr_expect_eq(e[7].addr, 0x5000);
	cr_expect_eq(e[8].type, WSPROF_EV_FREE);
	cr_expect_eq(e[8].op, WSPROF_OP_CFREE);
	cr_expect_eq(e[8].addr, 0x5000);

	wsprof_trace_status st = status_of(t);
	cr_expect(st.complete, "error %s", wsprof_strerror(st.error));
	cr_expect_eq(st.events, 8, "FORK is not an event record");
	cr_expect_eq(st.end_time_ns, 9000000006);
	wsprof_trace_close(t);
	tb_fini(&b);
}

/* ---- format 1.1: CUDA, annotations, samples ------------------------- */

Test(reader_v11, access_config_fills_the_process)
{
	struct trace_builder b;
	tb_init(&b);
	struct tb_process p = tb_process_default();
	p.access_sources = WSPROF_SOURCE_WRITES | WSPROF_SOURCE_ANNOTATIONS;
	p.wp_pages = 1536, p.window_ms = 250, p.max_regions = 1000;
	p.access_note = "DAMON: not built into this kernel";
	tb_header(&b, &p);
	tb_footer(&b, 0);
	wsprof_trace *t = open_built(&b);
	const wsprof_process *pr = wsprof_trace_process(t);
	cr_expect_eq(pr->stack_depth, 64, "the 1.0 fields before the access fields");
	cr_expect_eq(pr->access_sources, WSPROF_SOURCE_WRITES | WSPROF_SOURCE_ANNOTATIONS);
	cr_expect_eq(pr->wp_pages, 1536);
	cr_expect_eq(pr->window_ms, 250);
	cr_expect_eq(pr->max_regions, 1000);
	cr_expect_str_eq(pr->access_note, "DAMON: not built into this kernel");
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_v11, config_without_access_fields_reads_as_none)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_footer(&b, 0);
	wsprof_trace *t = open_built(&b);
	const wsprof_process *pr = wsprof_trace_process(t);
	cr_expect_eq(pr->access_sources, 0);
	cr_expect_eq(pr->wp_pages, 0);
	cr_expect_eq(pr->window_ms, 0);
	cr_expect_eq(pr->max_regions, 0);
	cr_expect_str_eq(pr->access_note, "");
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_v11, cuda_events_carry_device_stream_and_handle)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 7, 0, 0);
	const struct tb_cuda_tag dev1 = { 1, 0x5000, 0 }, dev0 = { 0, 0, 0 }, pool = { -1, 0, 0x7f00000a0000 };
	tb_ev_cuda_alloc(&b, 1, 100, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC_ASYNC, 0x7f0000200000,
			 1 << 20, 2, &dev1);
	tb_ev_stream_reached(&b, 2, 110, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC_ASYNC, 0x7f0000200000,
			     0x5000);
	tb_ev_cuda_fail(&b, 3, 120, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC, 17ull << 30, 3, &dev0);
	tb_ev_cuda_alloc(&b, 4, 130, WSPROF_KIND_POOL, WSPROF_OP_POOL_ALLOC, 0x7f00000a0100, 256, 0, &pool);
	tb_ev_cuda_free(&b, 5, 140, WSPROF_KIND_POOL, WSPROF_OP_POOL_FREE, 0x7f00000a0100, &pool);
	tb_ev_cuda_free(&b, 6, 150, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_FREE_ASYNC, 0x7f0000200000, &dev1);
	tb_ev_alloc(&b, 7, 160, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x1000, 8, 0);
	tb_sync(&b, 8, 170);
	tb_chunk(&b);
	tb_footer(&b, 180);

	wsprof_trace *t = open_built(&b);
	wsprof_event e[8];
	size_t n = read_all(t, e, 8);
	cr_assert_eq(n, 7);
	cr_expect_eq(e[0].type, WSPROF_EV_ALLOC);
	cr_expect_eq(e[0].kind, WSPROF_KIND_CUDA_DEVICE);
	cr_expect_eq(e[0].op, WSPROF_OP_CU_MEM_ALLOC_ASYNC);
	cr_expect_eq(e[0].addr, 0x7f0000200000);
	cr_expect_eq(e[0].size, 1 << 20);
	cr_expect_eq(e[0].stack, 2);
	cr_expect_eq(e[0].device, 1);
	cr_expect_eq(e[0].stream, 0x5000);
	cr_expect_eq(e[0].handle, 0);

	cr_expect_eq(e[1].type, WSPROF_EV_STREAM_REACHED);
	cr_expect_eq(e[1].kind, WSPROF_KIND_CUDA_DEVICE);
	cr_expect_eq(e[1].op, WSPROF_OP_CU_MEM_ALLOC_ASYNC);
	cr_expect_eq(e[1].addr, 0x7f0000200000);
	cr_expect_eq(e[1].stream, 0x5000);

	cr_expect_eq(e[2].type, WSPROF_EV_FAIL);
	cr_expect_eq(e[2].op, WSPROF_OP_CU_MEM_ALLOC);
	cr_expect_eq(e[2].size, 17ull << 30);
	cr_expect_eq(e[2].stack, 3);
	cr_expect_eq(e[2].device, 0, "device 0 is written as 1, 0 being none");
	cr_expect_eq(e[2].stream, 0);

	cr_expect_eq(e[3].type, WSPROF_EV_ALLOC);
	cr_expect_eq(e[3].kind, WSPROF_KIND_POOL);
	cr_expect_eq(e[3].op, WSPROF_OP_POOL_ALLOC);
	cr_expect_eq(e[3].addr, 0x7f00000a0100);
	cr_expect_eq(e[3].size, 256);
	cr_expect_eq(e[3].device, -1);
	cr_expect_eq(e[3].handle, 0x7f00000a0000, "a sub-allocation's handle is its pool");

	cr_expect_eq(e[4].type, WSPROF_EV_FREE);
	cr_expect_eq(e[4].kind, WSPROF_KIND_POOL);
	cr_expect_eq(e[4].op, WSPROF_OP_POOL_FREE);
	cr_expect_eq(e[4].addr, 0x7f00000a0100);
	cr_expect_eq(e[4].device, -1);

	cr_expect_eq(e[5].type, WSPROF_EV_FREE);
	cr_expect_eq(e[5].op, WSPROF_OP_CU_MEM_FREE_ASYNC);
	cr_expect_eq(e[5].addr, 0x7f0000200000);
	cr_expect_eq(e[5].device, 1);
	cr_expect_eq(e[5].stream, 0x5000);

	cr_expect_eq(e[6].addr, 0x1000, "the address delta went on from the CUDA free");
	cr_expect_eq(e[6].device, -1, "a heap event has no device");
	wsprof_trace_status st = status_of(t);
	cr_expect(st.complete, "error %s", wsprof_strerror(st.error));
	cr_expect_eq(st.events, 6, "STREAM_REACHED is not an event record");
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_v11, annotations_decode_what_address_size_pool_and_text)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 9, 10, 1000);
	tb_ev_alloc(&b, 11, 1000, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x7f0000100000, 4096, 1);
	tb_ev_annotate(&b, 12, 1001, WSPROF_ANN_NAME, 0x7f0000100000, 0, 0, "weights");
	tb_ev_annotate(&b, 13, 1002, WSPROF_ANN_ACQUIRE, 0x7f0000100010, 0, 0, NULL);
	tb_ev_annotate(&b, 14, 1003, WSPROF_ANN_RELEASE, 0x7f0000100010, 0, 0, NULL);
	tb_ev_annotate(&b, 15, 1004, WSPROF_ANN_VALID, 0x7f0000100000, 0, 0, NULL);
	tb_ev_annotate(&b, 16, 1005, WSPROF_ANN_INVALID, 0x7f0000100000, 0, 0, NULL);
	tb_ev_annotate(&b, 17, 1006, WSPROF_ANN_TOUCH, 0x7f0000100800, 512, 0, NULL);
	tb_ev_annotate(&b, 18, 1007, WSPROF_ANN_PHASE_PUSH, 0, 0, 0, "train");
	tb_ev_annotate(&b, 19, 1008, WSPROF_ANN_PHASE_POP, 0, 0, 0, NULL);
	tb_ev_annotate(&b, 20, 1009, WSPROF_ANN_SNAPSHOT, 0, 0, 0, "after-load");
	tb_ev_annotate(&b, 21, 1010, WSPROF_ANN_POOL_RESET, 0, 0, 0x7f00000a0000, NULL);
	tb_ev_free(&b, 22, 1011, WSPROF_KIND_HEAP, WSPROF_OP_FREE, 0x7f0000100000);
	tb_sync(&b, 23, 1012);
	tb_chunk(&b);
	tb_footer(&b, 1013);

	wsprof_trace *t = open_built(&b);
	static const struct {
		unsigned what;
		uint64_t addr, size, pool;
		const char *text;
	} want[] = {
		{ WSPROF_ANN_NAME, 0x7f0000100000, 0, 0, "weights" },
		{ WSPROF_ANN_ACQUIRE, 0x7f0000100010, 0, 0, NULL },
		{ WSPROF_ANN_RELEASE, 0x7f0000100010, 0, 0, NULL },
		{ WSPROF_ANN_VALID, 0x7f0000100000, 0, 0, NULL },
		{ WSPROF_ANN_INVALID, 0x7f0000100000, 0, 0, NULL },
		{ WSPROF_ANN_TOUCH, 0x7f0000100800, 512, 0, NULL },
		{ WSPROF_ANN_PHASE_PUSH, 0, 0, 0, "train" },
		{ WSPROF_ANN_PHASE_POP, 0, 0, 0, NULL },
		{ WSPROF_ANN_SNAPSHOT, 0, 0, 0, "after-load" },
		{ WSPROF_ANN_POOL_RESET, 0, 0, 0x7f00000a0000, NULL },
	};
	wsprof_event ev;
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.type, WSPROF_EV_ALLOC);
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		cr_assert_eq(wsprof_trace_next(t, &ev), 1);
		cr_expect_eq(ev.type, WSPROF_EV_ANNOTATE, "event %zu", i);
		cr_expect_eq(ev.tid, 9);
		cr_expect_eq(ev.seq, 12 + i);
		cr_expect_eq(ev.time_ns, 1001 + i);
		cr_expect_eq(ev.op, want[i].what, "event %zu is %u, expected %u", i, ev.op, want[i].what);
		cr_expect_eq(ev.addr, want[i].addr, "annotation %zu: address %#llx", i, (unsigned long long)ev.addr);
		cr_expect_eq(ev.size, want[i].size);
		cr_expect_eq(ev.handle, want[i].pool);
		if (want[i].text)
			cr_expect(ev.text && !strcmp(ev.text, want[i].text), "annotation %zu: text %s", i,
				  ev.text ? ev.text : "(none)");
		else
			cr_expect_null(ev.text, "annotation %zu: an empty text reads as none", i);
	}
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.type, WSPROF_EV_FREE);
	cr_expect_eq(ev.addr, 0x7f0000100000, "the address delta went on from the annotations");
	cr_expect_eq(wsprof_trace_next(t, &ev), 0);
	wsprof_trace_status st = status_of(t);
	cr_expect(st.complete, "error %s", wsprof_strerror(st.error));
	cr_expect_eq(st.events, 2, "annotations are not event records");
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_v11, samples_decode_regions_rss_and_device_memory)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	/* A sampler thread: samples only, so not a thread of the program. */
	tb_segment(&b, 30, 0, 0);
	const struct tb_region regions[] = {
		{ 0x1000, 0x2000 }, { 0x3000, 0x1000 }, /* touching: a delta of 0 */
		{ 0x7f0000000000, 0x10000 }, { UINT64_MAX - 0xfff, 0x1000 },
	};
	tb_ev_access(&b, 1, 100000000, WSPROF_ACCESS_WRITES, 100000000, regions, 4);
	tb_ev_access(&b, 2, 100000000, WSPROF_ACCESS_DAMON, 100000000, NULL, 0);
	tb_ev_access(&b, 3, 150000000, WSPROF_ACCESS_INFERRED, 0, regions + 2, 1);
	tb_ev_rss(&b, 4, 200000000, 123456789);
	tb_ev_device_memory(&b, 5, 200000001, 0, 15ull << 30, 16ull << 30);
	tb_ev_device_memory(&b, 6, 200000002, -1, 1, 2);
	tb_sync(&b, 7, 200000003);
	tb_chunk(&b);
	tb_footer(&b, 200000004);

	wsprof_trace *t = open_built(&b);
	wsprof_event ev;
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.type, WSPROF_EV_ACCESS);
	cr_expect_eq(ev.op, WSPROF_ACCESS_WRITES);
	cr_expect_eq(ev.time_ns, 100000000, "the end of the window");
	cr_expect_eq(ev.size, 100000000, "the window's length");
	cr_assert_eq(ev.nregions, 4);
	for (size_t i = 0; i < 4; i++) {
		cr_expect_eq(ev.regions[i].addr, regions[i].start, "region %zu at %#llx", i,
			     (unsigned long long)ev.regions[i].addr);
		cr_expect_eq(ev.regions[i].len, regions[i].len, "region %zu", i);
	}
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.type, WSPROF_EV_ACCESS);
	cr_expect_eq(ev.op, WSPROF_ACCESS_DAMON);
	cr_expect_eq(ev.nregions, 0, "an empty window is a sample too");
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.op, WSPROF_ACCESS_INFERRED);
	cr_expect_eq(ev.size, 0);
	cr_assert_eq(ev.nregions, 1);
	cr_expect_eq(ev.regions[0].addr, 0x7f0000000000, "the first start is relative to 0");
	cr_expect_eq(ev.regions[0].len, 0x10000);

	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.type, WSPROF_EV_RSS);
	cr_expect_eq(ev.time_ns, 200000000);
	cr_expect_eq(ev.size, 123456789);

	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.type, WSPROF_EV_DEVICE_MEMORY);
	cr_expect_eq(ev.device, 0);
	cr_expect_eq(ev.device_free, 15ull << 30);
	cr_expect_eq(ev.device_total, 16ull << 30);
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.type, WSPROF_EV_DEVICE_MEMORY);
	cr_expect_eq(ev.device, -1, "device+1 of 0 is an unknown device");
	cr_expect_eq(ev.device_free, 1);
	cr_expect_eq(ev.device_total, 2);
	cr_expect_eq(wsprof_trace_next(t, &ev), 0);

	wsprof_trace_status st = status_of(t);
	cr_expect(st.complete, "error %s", wsprof_strerror(st.error));
	cr_expect_eq(st.events, 0, "samples are not event records");
	cr_expect_eq(st.threads, 0, "a thread that only samples is not the program's");
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_v25, heap_totals_decode_whole)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 30, 0, 0);
	const wsprof_heap_totals h = { .allocations = 2000005, .frees = 2000002, .requested = 4096ull << 20,
				       .given = (4096ull << 20) + 12345, .given_back = 4096ull << 20, .peak = 4431731,
				       .peak_ns = 150000000 };
	tb_ev_rss(&b, 1, 100000000, 1);
	tb_ev_heap_totals(&b, 2, 200000000, &h);
	tb_sync(&b, 3, 200000003);
	tb_chunk(&b);
	tb_footer(&b, 200000004);

	wsprof_trace *t = open_built(&b);
	wsprof_event ev;
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.type, WSPROF_EV_RSS);
	cr_expect_null(ev.heap_totals, "only HEAP_TOTALS events have totals");
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.type, WSPROF_EV_HEAP_TOTALS);
	cr_expect_eq(ev.time_ns, 200000000);
	cr_assert(ev.heap_totals);
	cr_expect_eq(memcmp(ev.heap_totals, &h, sizeof h), 0, "the totals read back differ");
	cr_expect_eq(wsprof_trace_next(t, &ev), 0);
	wsprof_trace_status st = status_of(t);
	cr_expect(st.complete, "error %s", wsprof_strerror(st.error));
	cr_expect_eq(st.events, 0, "totals are not event records");
	wsprof_trace_close(t);
	tb_fini(&b);
}

/* ---- stacks --------------------------------------------------------- */

/* Nodes: 1 main <- 2 run <- 3 work, and 4 parse called from main. */
static void put_stack_tree(struct trace_builder *b)
{
	tb_stack(b, 1, 0, 0x401000);
	tb_stack(b, 2, 1, 0x402000);
	tb_stack(b, 3, 2, 0x403000);
	tb_stack(b, 4, 1, 0x404000);
}

/* Two allocations, from stacks 3 and 4 of the tree, in one chunk. */
static wsprof_trace *open_two_on_the_tree(struct trace_builder *b)
{
	tb_init(b);
	tb_header(b, NULL);
	tb_segment(b, 1, 0, 0);
	put_stack_tree(b);
	tb_ev_alloc(b, 1, 1, 0, 0, 0x1000, 8, 3);
	tb_ev_alloc(b, 2, 2, 0, 0, 0x2000, 8, 4);
	tb_sync(b, 3, 3);
	tb_chunk(b);
	tb_footer(b, 4);
	return open_built(b);
}

Test(reader_stacks, stacks_come_back_innermost_first)
{
	struct trace_builder b;
	wsprof_trace *t = open_two_on_the_tree(&b);
	wsprof_event ev;
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.stack, 3);

	uint64_t ips[8] = { 0 };
	cr_assert_eq(wsprof_trace_stack(t, 3, ips, 8), 3);
	cr_expect_eq(ips[0], 0x403000);
	cr_expect_eq(ips[1], 0x402000);
	cr_expect_eq(ips[2], 0x401000);
	cr_assert_eq(wsprof_trace_stack(t, 4, ips, 8), 2);
	cr_expect_eq(ips[0], 0x404000);
	cr_expect_eq(ips[1], 0x401000);
	cr_assert_eq(wsprof_trace_stack(t, 1, ips, 8), 1);
	cr_expect_eq(ips[0], 0x401000);
	wsprof_trace_close(t);
	tb_fini(&b);
}

/* A reader told to forget stacks (a second pass) still gives every event
 * its stack id and reads on past the stack records, but finds no frames. */
Test(reader_stacks, a_reader_that_forgets_stacks_keeps_their_ids_only)
{
	struct trace_builder b;
	wsprof_trace *t = open_two_on_the_tree(&b);
	wsprof_trace_forget_stacks(t);
	wsprof_event ev;
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.stack, 3);
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.stack, 4);
	cr_expect_eq(wsprof_trace_next(t, &ev), 0);
	uint64_t ips[8] = { 0 }, parent, ip;
	cr_expect_eq(wsprof_trace_stack(t, 3, ips, 8), 0);
	cr_expect_eq(wsprof_trace_stack_node(t, 1, &parent, &ip), 0);
	wsprof_trace_status st;
	wsprof_trace_get_status(t, &st);
	cr_expect_eq(st.error, 0, "read to its end: %s", wsprof_strerror(st.error));
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_stacks, depth_is_reported_beyond_max)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 1, 0, 0);
	put_stack_tree(&b);
	tb_sync(&b, 1, 0);
	tb_chunk(&b);
	tb_footer(&b, 0);
	wsprof_trace *t = open_built(&b);
	wsprof_event ev;
	cr_assert_eq(wsprof_trace_next(t, &ev), 0);
	uint64_t ips[3] = { 0, 0, 0xdead };
	cr_expect_eq(wsprof_trace_stack(t, 3, ips, 2), 3, "the whole depth, though only 2 fit");
	cr_expect_eq(ips[0], 0x403000);
	cr_expect_eq(ips[1], 0x402000);
	cr_expect_eq(ips[2], 0xdead, "nothing stored beyond max");
	cr_expect_eq(wsprof_trace_stack(t, 3, NULL, 0), 3);
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_stacks, stack_zero_and_unknown_ids_have_no_frames)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 1, 0, 0);
	put_stack_tree(&b);
	tb_sync(&b, 1, 0);
	tb_chunk(&b);
	tb_footer(&b, 0);
	wsprof_trace *t = open_built(&b);
	wsprof_event ev;
	cr_assert_eq(wsprof_trace_next(t, &ev), 0);
	uint64_t ips[8];
	cr_expect_eq(wsprof_trace_stack(t, 0, ips, 8), 0, "stack 0 is no stack");
	cr_expect_eq(wsprof_trace_stack(t, 5, ips, 8), 0, "id 5 was never defined");
	cr_expect_eq(wsprof_trace_stack(t, 50, ips, 8), 0, "id 50 was never defined");
	cr_expect_eq(wsprof_trace_stack(t, 1000000, ips, 8), 0);
	cr_expect_eq(wsprof_trace_stack(t, UINT64_MAX, ips, 8), 0);
	wsprof_trace_close(t);
	tb_fini(&b);
}

/* doc: "A node is defined in a chunk no later than the first SYNC that
 * covers an event using it" - so it may come after the event. */
Test(reader_stacks, node_defined_after_its_first_use_resolves_by_the_sync)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 1, 0, 0);
	tb_ev_alloc(&b, 1, 1, 0, 0, 0x1000, 8, 2);
	tb_chunk(&b);
	tb_segment(&b, 2, 0, 0);
	tb_stack(&b, 1, 0, 0x111);
	tb_stack(&b, 2, 1, 0x222);
	tb_ev_alloc(&b, 2, 2, 0, 0, 0x2000, 8, 2);
	tb_sync(&b, 3, 3);
	tb_chunk(&b);
	tb_footer(&b, 3);
	wsprof_trace *t = open_built(&b);
	wsprof_event ev;
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.seq, 1);
	uint64_t ips[4];
	cr_assert_eq(wsprof_trace_stack(t, ev.stack, ips, 4), 2);
	cr_expect_eq(ips[0], 0x222);
	cr_expect_eq(ips[1], 0x111);
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_stacks, far_stack_id_is_corrupt)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 1, 0, 0);
	put_stack_tree(&b);
	for (uint64_t s = 1; s <= 4; s++)
		tb_ev_alloc(&b, s, s, 0, 0, 0x1000 * s, 8, 3);
	tb_sync(&b, 5, 5);
	tb_chunk(&b);
	tb_segment(&b, 1, 4, 4);
	tb_stack(&b, (uint64_t)1 << 40, 4, 0x405000);
	tb_ev_alloc(&b, 5, 5, 0, 0, 0x5000, 8, 0);
	tb_sync(&b, 6, 6);
	tb_chunk(&b);
	tb_footer(&b, 6);
	expect_stops_with(&b, seqs_1_to_4, 4, WSPROF_E_CORRUPT);
	tb_fini(&b);
}

static size_t vm_size_bytes(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	cr_assert_not_null(f);
	char line[256];
	size_t kb = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmSize: %zu kB", &kb) == 1)
			break;
	fclose(f);
	cr_assert_gt(kb, 0);
	return kb * 1024;
}

/* A good chunk of four events, then one whose STACK records (written by
 * define_stacks) a reader must call corrupt before memory runs out (the
 * address space is capped so a giant allocation fails fast), ending with
 * an allocation whose stack is `stack`. */
static void expect_stack_ids_refused(void (*define_stacks)(struct trace_builder *), uint64_t stack)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 1, 0, 0);
	for (uint64_t s = 1; s <= 4; s++)
		tb_ev_alloc(&b, s, s, 0, 0, 0x1000 * s, 8, 0);
	tb_sync(&b, 5, 5);
	tb_chunk(&b);
	tb_segment(&b, 1, 4, 4);
	define_stacks(&b);
	tb_ev_alloc(&b, 5, 5, 0, 0, 0x5000, 8, stack);
	tb_sync(&b, 6, 6);
	tb_chunk(&b);
	tb_footer(&b, 6);
	char *path = tb_save_temp(&b);
	cr_assert_not_null(path);

	size_t cap = vm_size_bytes() + (256u << 20);
	struct rlimit rl = { cap, cap };
	cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
	wsprof_trace *t;
	int err = wsprof_trace_open(path, &t);
	unlink(path);
	free(path);
	cr_assert_eq(err, 0, "open: %s", wsprof_strerror(err));
	wsprof_event ev;
	size_t n = 0;
	int r;
	while ((r = wsprof_trace_next(t, &ev)) > 0)
		n++;
	cr_expect_eq(r, 0, "reading ended with %d (%s), not with a corrupt trace", r, wsprof_strerror(r));
	cr_expect_eq(n, 4, "the events of the good chunk");
	cr_expect_eq(status_of(t).error, WSPROF_E_CORRUPT);
	wsprof_trace_close(t);
	tb_fini(&b);
}

static void ids_doubling(struct trace_builder *b)
{
	for (int shift = 20; shift <= 40; shift++)
		tb_stack(b, (uint64_t)1 << shift, 0, 0x400000 + (uint64_t)shift);
}

/* Each id is within a fixed distance of the last table size, but ids that
 * double record after record still describe a table of 2^40 nodes when a
 * handful exist. The reader must call that corrupt before memory runs out
 * (the address space is capped so a giant allocation fails fast). */
Test(reader_stacks, ids_doubling_record_after_record_are_corrupt_not_a_giant_table)
{
	expect_stack_ids_refused(ids_doubling, 0);
}

static void ids_stepping_a_million(struct trace_builder *b)
{
	for (uint64_t step = 1; step <= 400; step++)
		tb_stack(b, step << 20, 0, 0x400000 + step);
}

/* Each id a million past the last was within reach of the highest id so
 * far, so a few hundred bytes of STACK records asked for gigabytes (3 GB
 * from 322 bytes); the count of ids defined bounds the table now. */
Test(reader_stacks, ids_stepping_a_million_record_after_record_are_corrupt_not_a_giant_table)
{
	expect_stack_ids_refused(ids_stepping_a_million, 400ull << 20);
}

/* ---- modules -------------------------------------------------------- */

Test(reader_modules, module_map_follows_the_stream)
{
	static const uint8_t bid[] = { 0xde, 0xad, 0xbe, 0xef, 0x01 };
	static const struct tb_segdesc libsegs[] = { { 0, 0x1000, 5 }, { 0x3000, 0x800, 6 } };
	static const struct tb_segdesc plugsegs[] = { { 0x1000, 0x2000, 5 } };
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 1, 0, 0);
	tb_ev_alloc(&b, 1, 1, 0, 0, 0x100, 8, 0);
	tb_ev_module_load(&b, 2, 2, 0x400000, "/lib/libfoo.so", bid, sizeof bid, libsegs, 2);
	tb_ev_module_load(&b, 3, 3, 0x7f0000000000, "/opt/plug.so", "", 0, plugsegs, 1);
	tb_ev_module_unload(&b, 4, 4, 0x400000);
	tb_ev_alloc(&b, 5, 5, 0, 0, 0x200, 8, 0);
	tb_sync(&b, 6, 6);
	tb_chunk(&b);
	tb_footer(&b, 6);

	wsprof_trace *t = open_built(&b);
	wsprof_event ev;
	uint64_t base = 0;
	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_null(wsprof_trace_module_at(t, 0x400800, &base), "nothing loaded before the first load");

	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_assert_eq(ev.type, WSPROF_EV_MODULE_LOAD);
	cr_expect_eq(ev.addr, 0x400000);
	cr_expect_str_eq(ev.path, "/lib/libfoo.so");
	cr_expect_eq(ev.build_id_len, sizeof bid);
	cr_expect(ev.build_id && memcmp(ev.build_id, bid, sizeof bid) == 0);
	const char *m = wsprof_trace_module_at(t, 0x400800, &base);
	cr_expect(m && strcmp(m, "/lib/libfoo.so") == 0, "inside the first segment");
	cr_expect_eq(base, 0x400000);
	cr_expect_not_null(wsprof_trace_module_at(t, 0x403000, NULL), "start of the second segment");
	cr_expect_null(wsprof_trace_module_at(t, 0x402000, NULL), "between the segments");
	cr_expect_null(wsprof_trace_module_at(t, 0x403800, NULL), "just past the second segment");
	uint64_t start = 0, end = 0;
	cr_expect_eq(wsprof_trace_module_span_at(t, 0x403000, &start, &end), 1);
	cr_expect(start == 0x400000 && end == 0x403800, "the span of both segments: 0x%llx-0x%llx",
		  (unsigned long long)start, (unsigned long long)end);
	cr_expect_eq(wsprof_trace_module_span_at(t, 0x402000, &start, &end), 0, "between the segments: no module");

	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_assert_eq(ev.type, WSPROF_EV_MODULE_LOAD);
	cr_expect_str_eq(ev.path, "/opt/plug.so");
	cr_expect_eq(ev.build_id_len, 0);
	m = wsprof_trace_module_at(t, 0x7f0000001234, &base);
	cr_expect(m && strcmp(m, "/opt/plug.so") == 0);
	cr_expect_eq(base, 0x7f0000000000);
	cr_expect_null(wsprof_trace_module_at(t, 0x7f0000000000, NULL), "vaddr is relative to the base");
	cr_expect_eq(wsprof_trace_module_span_at(t, 0x7f0000001234, &start, &end), 1);
	cr_expect(start == 0x7f0000001000 && end == 0x7f0000003000, "a span starts at its first segment");
	m = wsprof_trace_module_at(t, 0x400010, NULL);
	cr_expect(m && strcmp(m, "/lib/libfoo.so") == 0, "the first module is still there");

	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_assert_eq(ev.type, WSPROF_EV_MODULE_UNLOAD);
	cr_expect_eq(ev.addr, 0x400000);
	cr_expect_null(wsprof_trace_module_at(t, 0x400010, NULL), "gone after its unload");
	cr_expect_not_null(wsprof_trace_module_at(t, 0x7f0000001234, NULL), "the other one stays");

	cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(ev.seq, 5);
	cr_expect_eq(wsprof_trace_next(t, &ev), 0);
	wsprof_trace_status st = status_of(t);
	cr_expect(st.complete);
	cr_expect_eq(st.events, 2, "module records are not counted as events");
	wsprof_trace_close(t);
	tb_fini(&b);
}

/* ---- forward compatibility ------------------------------------------ */

/* One of every record, in a complete trace of two chunks. */
static void build_every_record(struct trace_builder *b)
{
	static const struct tb_segdesc segs[] = { { 0, 0x2000, 5 } };
	tb_header(b, NULL);
	tb_segment(b, 3, 0, 0);
	put_stack_tree(b);
	tb_ev_alloc(b, 1, 10, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x1000, 100, 3);
	tb_ev_move(b, 2, 20, WSPROF_KIND_HEAP, WSPROF_OP_REALLOC, 0x1000, 100);
	tb_ev_alloc(b, 3, 30, WSPROF_KIND_HEAP, WSPROF_OP_REALLOC, 0x2000, 200, 4);
	tb_ev_fail(b, 4, 40, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 1ull << 50, 4);
	tb_ev_free(b, 5, 50, WSPROF_KIND_HEAP, WSPROF_OP_FREE, 0x2000);
	tb_ev_module_load(b, 6, 60, 0x500000, "/lib/x.so", "\x01\x02", 2, segs, 1);
	tb_sync(b, 7, 70);
	tb_chunk(b);
	tb_segment(b, 3, 6, 60);
	tb_ev_alloc(b, 7, 70, WSPROF_KIND_MMAP, WSPROF_OP_MMAP, 0x7f0000000000, 1 << 20, 2);
	tb_ev_unmap(b, 8, 80, WSPROF_KIND_MMAP, WSPROF_OP_MUNMAP, 0x7f0000000000, 1 << 20);
	tb_ev_module_unload(b, 9, 90, 0x500000);
	tb_ev_fork(b, 10, 100, 555);
	tb_sync(b, 11, 110);
	tb_chunk(b);
	tb_footer(b, 120);
}

static void expect_same_events(const wsprof_event *got, size_t n, const wsprof_event *want, size_t nw)
{
	cr_assert_eq(n, nw, "%zu events, expected %zu", n, nw);
	for (size_t i = 0; i < n; i++) {
		const wsprof_event *g = &got[i], *w = &want[i];
		cr_expect(g->type == w->type && g->kind == w->kind && g->op == w->op && g->tid == w->tid &&
			  g->seq == w->seq && g->time_ns == w->time_ns && g->addr == w->addr &&
			  g->size == w->size && g->stack == w->stack && g->child_pid == w->child_pid &&
			  g->build_id_len == w->build_id_len,
			  "event %zu (type %d, seq %llu) differs: addr %#llx/%#llx size %llu/%llu "
			  "stack %llu/%llu kind %u/%u op %u/%u time %llu/%llu",
			  i, w->type, (unsigned long long)w->seq, (unsigned long long)g->addr,
			  (unsigned long long)w->addr, (unsigned long long)g->size,
			  (unsigned long long)w->size, (unsigned long long)g->stack,
			  (unsigned long long)w->stack, g->kind, w->kind, g->op, w->op,
			  (unsigned long long)g->time_ns, (unsigned long long)w->time_ns);
	}
}

static size_t read_every_record(const struct trace_builder *b, wsprof_event *evs,
				wsprof_trace_status *st, uint64_t ips[4])
{
	wsprof_trace *t = open_built(b);
	size_t n = read_all(t, evs, 32);
	*st = status_of(t);
	memset(ips, 0, 4 * sizeof *ips);
	wsprof_trace_stack(t, 3, ips, 4);
	wsprof_trace_close(t);
	return n;
}

Test(reader_compat, unknown_record_types_are_skipped)
{
	struct trace_builder plain, extra;
	tb_init(&plain);
	tb_init(&extra);
	build_every_record(&plain);

	/* The same trace with records of a later version between all others. */
	static const uint8_t junk[] = { 0xff, 0xff, 0x01, 0x00, 0x80, 'x', 'y' };
	static const unsigned types[] = { 0x03, 0x0a, 0x15, 0x21, 0x3e, 0x7f, 0x80, 0x4000 };
	unsigned k = 0;
#define JUNK() tb_record_bytes(&extra, types[k % 8], junk, k % sizeof junk), k++
	tb_header(&extra, NULL);
	JUNK();
	tb_segment(&extra, 3, 0, 0);
	JUNK();
	put_stack_tree(&extra);
	JUNK();
	static const struct tb_segdesc segs[] = { { 0, 0x2000, 5 } };
	tb_ev_alloc(&extra, 1, 10, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x1000, 100, 3);
	JUNK();
	tb_ev_move(&extra, 2, 20, WSPROF_KIND_HEAP, WSPROF_OP_REALLOC, 0x1000, 100);
	JUNK();
	tb_ev_alloc(&extra, 3, 30, WSPROF_KIND_HEAP, WSPROF_OP_REALLOC, 0x2000, 200, 4);
	JUNK();
	tb_ev_fail(&extra, 4, 40, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 1ull << 50, 4);
	tb_ev_free(&extra, 5, 50, WSPROF_KIND_HEAP, WSPROF_OP_FREE, 0x2000);
	JUNK();
	tb_ev_module_load(&extra, 6, 60, 0x500000, "/lib/x.so", "\x01\x02", 2, segs, 1);
	tb_sync(&extra, 7, 70);
	JUNK();
	tb_chunk(&extra);
	JUNK();
	tb_segment(&extra, 3, 6, 60);
	tb_ev_alloc(&extra, 7, 70, WSPROF_KIND_MMAP, WSPROF_OP_MMAP, 0x7f0000000000, 1 << 20, 2);
	JUNK();
	tb_ev_unmap(&extra, 8, 80, WSPROF_KIND_MMAP, WSPROF_OP_MUNMAP, 0x7f0000000000, 1 << 20);
	tb_ev_module_unload(&extra, 9, 90, 0x500000);
	JUNK();
	tb_ev_fork(&extra, 10, 100, 555);
	tb_sync(&extra, 11, 110);
	JUNK();
	tb_chunk(&extra);
	tb_footer(&extra, 120);
#undef JUNK

	wsprof_event want[32], got[32];
	wsprof_trace_status wst, gst;
	uint64_t wips[4], gips[4];
	size_t nw = read_every_record(&plain, want, &wst, wips);
	size_t ng = read_every_record(&extra, got, &gst, gips);
	cr_assert_eq(nw, 10);
	cr_expect(wst.complete);
	expect_same_events(got, ng, want, nw);
	cr_expect(gst.complete, "error: %s", wsprof_strerror(gst.error));
	cr_expect_eq(gst.events, wst.events);
	cr_expect_arr_eq(gips, wips, sizeof wips);
	tb_fini(&plain);
	tb_fini(&extra);
}

Test(reader_compat, unknown_records_in_the_header_are_skipped)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	/* Append a record of a later version to the header frame. */
	static const uint8_t rec[] = { 0x05, 0x03, 0x01, 0x02, 0x03 };
	tb_file_bytes(&b, rec, sizeof rec);
	tb_patch_le32(&b, 4, wsp_get_le32(b.data + 4) + sizeof rec);
	tb_footer(&b, 0);
	wsprof_trace *t = open_built(&b);
	cr_expect_eq(wsprof_trace_process(t)->pid, tb_process_default().pid);
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_compat, extra_trailing_fields_change_nothing)
{
	struct trace_builder plain, extra;
	tb_init(&plain);
	tb_init(&extra);
	build_every_record(&plain);
	static const uint64_t later[] = { 7, 300, UINT64_MAX };
	tb_set_trailer(&extra, later, 3);
	build_every_record(&extra);

	wsprof_event want[32], got[32];
	wsprof_trace_status wst, gst;
	uint64_t wips[4], gips[4];
	size_t nw = read_every_record(&plain, want, &wst, wips);
	size_t ng = read_every_record(&extra, got, &gst, gips);
	cr_assert_eq(nw, 10);
	expect_same_events(got, ng, want, nw);
	cr_expect(gst.complete, "error: %s", wsprof_strerror(gst.error));
	cr_expect_eq(gst.end_time_ns, wst.end_time_ns);
	cr_expect_arr_eq(gips, wips, sizeof wips);
	tb_fini(&plain);
	tb_fini(&extra);
}

Test(reader_compat, extra_fields_in_the_header_records_change_nothing)
{
	struct trace_builder plain, extra;
	tb_init(&plain);
	tb_init(&extra);
	static const uint64_t later[] = { 1, 2 };
	tb_set_trailer(&extra, later, 2);
	tb_header(&plain, NULL);
	tb_header(&extra, NULL);
	tb_footer(&plain, 0);
	tb_footer(&extra, 0);
	wsprof_trace *a = open_built(&plain), *b = open_built(&extra);
	const wsprof_process *pa = wsprof_trace_process(a), *pb = wsprof_trace_process(b);
	cr_expect_eq(pb->pid, pa->pid);
	cr_expect_eq(pb->parent_traced_pid, pa->parent_traced_pid);
	cr_expect_str_eq(pb->exe, pa->exe);
	cr_expect_str_eq(pb->cmdline, pa->cmdline);
	cr_expect_str_eq(pb->tool_version, pa->tool_version);
	cr_expect_eq(pb->stack_depth, pa->stack_depth);
	cr_expect_eq(pb->flush_ms, pa->flush_ms);
	cr_expect_eq(pb->follow, pa->follow);
	wsprof_trace_close(a);
	wsprof_trace_close(b);
	tb_fini(&plain);
	tb_fini(&extra);
}

/* ---- status: complete, truncated, corrupt --------------------------- */

Test(reader_status, matching_footer_is_complete)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	tb_footer(&b, 99999);
	wsprof_trace *t = open_built(&b);
	wsprof_event evs[16];
	size_t n = read_all(t, evs, 16);
	expect_seqs(evs, n, seqs_1_to_12, 12);
	wsprof_trace_status st = status_of(t);
	cr_expect(st.complete);
	cr_expect_not(st.ended_by_exec);
	cr_expect_eq(st.error, 0);
	cr_expect_eq(st.chunks, 3);
	cr_expect_eq(st.events, 12);
	cr_expect_eq(st.threads, 1);
	cr_expect_eq(st.end_time_ns, 99999, "the footer's time");
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_status, missing_footer_is_truncated)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	expect_stops_with(&b, seqs_1_to_12, 12, WSPROF_E_TRUNCATED);
	wsprof_trace *t = open_built(&b);
	wsprof_event evs[16];
	read_all(t, evs, 16);
	cr_expect_eq(status_of(t).chunks, 3);
	cr_expect_eq(status_of(t).end_time_ns, 8000 + 50, "the last SYNC's time, later than the last event's");
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_status, cut_inside_a_chunk_keeps_the_chunks_before)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	tb_footer(&b, 99999);
	size_t zlen = wsp_get_le32(b.data + at[2] + 16);
	b.len = at[2] + WSP_CHUNK_HEADER + zlen / 2;
	expect_stops_with(&b, seqs_1_to_8, 8, WSPROF_E_TRUNCATED);
	b.len = at[2] + 10; /* inside the chunk header */
	expect_stops_with(&b, seqs_1_to_8, 8, WSPROF_E_TRUNCATED);
	tb_fini(&b);
}

Test(reader_status, bad_chunk_magic_is_corrupt)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	tb_footer(&b, 99999);
	tb_patch_le32(&b, at[1], WSP_MAGIC_CHUNK + 0x100);
	expect_stops_with(&b, seqs_1_to_4, 4, WSPROF_E_CORRUPT);
	tb_fini(&b);
}

Test(reader_status, chunk_index_gap_is_corrupt)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	tb_footer(&b, 99999);
	tb_patch_le32(&b, at[2] + 8, 3);
	expect_stops_with(&b, seqs_1_to_8, 8, WSPROF_E_CORRUPT);
	tb_fini(&b);
}

Test(reader_status, repeated_chunk_index_is_corrupt)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	tb_footer(&b, 99999);
	tb_patch_le32(&b, at[1] + 8, 0);
	expect_stops_with(&b, seqs_1_to_4, 4, WSPROF_E_CORRUPT);
	tb_fini(&b);
}

Test(reader_status, raw_size_over_64_mib_is_corrupt)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	tb_footer(&b, 99999);
	tb_patch_le32(&b, at[1] + 12, WSP_CHUNK_RAW_MAX + 1);
	expect_stops_with(&b, seqs_1_to_4, 4, WSPROF_E_CORRUPT);
	tb_patch_le32(&b, at[1] + 12, UINT32_MAX);
	expect_stops_with(&b, seqs_1_to_4, 4, WSPROF_E_CORRUPT);
	tb_fini(&b);
}

Test(reader_status, raw_size_that_disagrees_with_the_frame_is_corrupt)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	tb_footer(&b, 99999);
	tb_patch_le32(&b, at[1] + 12, wsp_get_le32(b.data + at[1] + 12) - 1);
	expect_stops_with(&b, seqs_1_to_4, 4, WSPROF_E_CORRUPT);
	tb_fini(&b);
}

Test(reader_status, flipped_checksum_byte_is_corrupt)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	tb_footer(&b, 99999);
	/* The zstd frame ends with its 4-byte content checksum. */
	size_t end = at[1] + WSP_CHUNK_HEADER + wsp_get_le32(b.data + at[1] + 16);
	b.data[end - 2] ^= 0x10;
	expect_stops_with(&b, seqs_1_to_4, 4, WSPROF_E_CORRUPT);
	tb_fini(&b);
}

/* Records of no structure: stored raw by zstd, so a flipped byte in them
 * is caught by nothing but the checksum. */
Test(reader_status, flipped_content_byte_is_caught_by_the_checksum)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	uint8_t noise[600];
	uint32_t x = 88172645u;
	for (size_t i = 0; i < sizeof noise; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		noise[i] = (uint8_t)x;
	}
	tb_segment(&b, 7, 12, 12000);
	tb_record_bytes(&b, 0x7e, noise, sizeof noise);
	tb_sync(&b, 13, 13000);
	size_t c3 = tb_chunk(&b);
	tb_footer(&b, 99999);
	size_t zlen = wsp_get_le32(b.data + c3 + 16);
	cr_assert_gt(zlen, sizeof noise, "the noise is stored, not compressed");
	b.data[c3 + WSP_CHUNK_HEADER + zlen / 2] ^= 0x01;
	expect_stops_with(&b, seqs_1_to_12, 12, WSPROF_E_CORRUPT);
	tb_fini(&b);
}

Test(reader_status, footer_event_count_that_disagrees_is_corrupt)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	tb_footer_fields(&b, 99999, 3, 13, 0);
	expect_stops_with(&b, seqs_1_to_12, 12, WSPROF_E_CORRUPT);
	tb_fini(&b);
}

Test(reader_status, footer_chunk_count_that_disagrees_is_corrupt)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	tb_footer_fields(&b, 99999, 2, 12, 0);
	expect_stops_with(&b, seqs_1_to_12, 12, WSPROF_E_CORRUPT);
	tb_fini(&b);
}

Test(reader_status, event_before_any_segment_is_corrupt)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	tb_ev_alloc(&b, 13, 13000, 0, 0, 0x1000, 1, 0);
	tb_chunk(&b);
	tb_footer(&b, 99999);
	expect_stops_with(&b, seqs_1_to_12, 12, WSPROF_E_CORRUPT);
	tb_fini(&b);
}

Test(reader_status, record_longer_than_its_chunk_is_corrupt)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	tb_segment(&b, 7, 12, 12000);
	tb_raw_bytes(&b, "\x10\x7f\x01\x01", 4); /* an ALLOC claiming 127 bytes, 2 there */
	tb_chunk(&b);
	tb_footer(&b, 99999);
	expect_stops_with(&b, seqs_1_to_12, 12, WSPROF_E_CORRUPT);
	tb_fini(&b);
}

/* A chunk that passed its checksum but holds a malformed record (a
 * recorder bug, not damage) ends the stream there: every event of the
 * chunks before it comes out, nothing from after the bad record does, and
 * what came out of the chunk itself is what it says, in order. */
Test(reader_status, malformed_record_stops_the_stream_at_the_damage)
{
	struct trace_builder b;
	size_t at[3];
	tb_init(&b);
	build_three_chunks(&b, at);
	tb_footer(&b, 99999);
	b.len = at[2]; /* drop chunk 2 and the footer, then write chunk 2 again, damaged */
	b.chunks = 2;
	b.events = 8;
	tb_segment(&b, 7, 8, 8000);
	tb_ev_alloc(&b, 9, 8010, 0, 0, 0x10008, 16, 0);
	tb_ev_alloc(&b, 10, 8020, 0, 0, 0x20008, 32, 0);
	tb_record_bytes(&b, WSP_REC_FREE, "\x01\x80", 2); /* its time delta is cut short */
	tb_ev_free(&b, 11, 8030, 0, WSPROF_OP_FREE, 0x10008);
	tb_sync(&b, 12, 8040);
	tb_chunk(&b);
	tb_footer(&b, 99999);

	wsprof_trace *t = open_built(&b);
	wsprof_event evs[64];
	size_t n = read_all(t, evs, 64);
	cr_assert_geq(n, 8, "the events of the good chunks");
	cr_expect_leq(n, 10, "nothing from after the malformed record");
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(evs[i].seq, i + 1);
	wsprof_trace_status st = status_of(t);
	cr_expect_eq(st.error, WSPROF_E_CORRUPT, "%s", wsprof_strerror(st.error));
	cr_expect_not(st.complete);
	cr_expect_eq(st.chunks, 2, "the damaged chunk is not counted as read");
	wsprof_trace_close(t);
	tb_fini(&b);
}

/* Found by tests/fuzz: a device written as 2^31 (device INT_MAX, plus one)
 * overflowed an int on the way out. */
Test(reader_status, device_ordinal_beyond_an_int_is_corrupt)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 7, 0, 0);
	const struct tb_cuda_tag last = { INT_MAX, 0, 0 };
	tb_ev_cuda_alloc(&b, 1, 100, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC, 0x7f0000200000, 4096, 0,
			 &last);
	/* A device sample of seq 2, time 110, for device 2^32 - 1 (written plus one). */
	const uint64_t beyond[] = { 1, 10, 1ull << 32, 1, 2 };
	tb_record(&b, WSP_REC_DEVICE_MEMORY, beyond, 5);
	tb_sync(&b, 3, 120);
	tb_chunk(&b);
	tb_footer(&b, 130);

	wsprof_trace *t = open_built(&b);
	wsprof_event e[4];
	size_t n = read_all(t, e, 4);
	cr_assert_eq(n, 1, "the allocation, and not the sample after it");
	cr_expect_eq(e[0].device, INT_MAX, "the largest device an int holds");
	wsprof_trace_status st = status_of(t);
	cr_expect_eq(st.error, WSPROF_E_CORRUPT, "%s", wsprof_strerror(st.error));
	cr_expect_not(st.complete);
	wsprof_trace_close(t);
	tb_fini(&b);
}

/* ---- exec ----------------------------------------------------------- */

static void build_until_exec(struct trace_builder *b)
{
	size_t at[3];
	build_three_chunks(b, at);
	tb_segment(b, 7, 12, 12000);
	tb_ev_alloc(b, 13, 12010, 0, 0, 0x30000, 8, 0);
	tb_ev_exec(b, 14, 12020, "/usr/bin/next-program");
	tb_sync(b, 15, 12030);
	tb_chunk(b);
}

Test(reader_exec, exec_at_the_end_completes_the_trace)
{
	struct trace_builder b;
	tb_init(&b);
	build_until_exec(&b);
	wsprof_trace *t = open_built(&b);
	wsprof_event ev;
	int r;
	uint64_t last_seq = 0;
	const char *exec_path = NULL;
	while ((r = wsprof_trace_next(t, &ev)) > 0) {
		last_seq = ev.seq;
		if (ev.type == WSPROF_EV_EXEC) {
			exec_path = ev.path;
			cr_expect_str_eq(ev.path, "/usr/bin/next-program");
		}
	}
	cr_expect_eq(r, 0);
	cr_expect_not_null(exec_path, "the EXEC event comes out");
	cr_expect_eq(last_seq, 14);
	wsprof_trace_status st = status_of(t);
	cr_expect(st.complete, "error: %s", wsprof_strerror(st.error));
	cr_expect(st.ended_by_exec);
	cr_expect_eq(st.error, 0);
	cr_expect_eq(st.events, 13);
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_exec, failed_exec_then_more_events_is_truncated_without_footer)
{
	struct trace_builder b;
	tb_init(&b);
	build_until_exec(&b);
	tb_segment(&b, 7, 14, 12020);
	tb_ev_alloc(&b, 15, 12040, 0, 0, 0x40000, 8, 0);
	tb_sync(&b, 16, 12050);
	tb_chunk(&b);
	wsprof_trace *t = open_built(&b);
	wsprof_event evs[32];
	cr_expect_eq(read_all(t, evs, 32), 15);
	wsprof_trace_status st = status_of(t);
	cr_expect_not(st.complete);
	cr_expect_not(st.ended_by_exec);
	cr_expect_eq(st.error, WSPROF_E_TRUNCATED);
	wsprof_trace_close(t);
	tb_fini(&b);
}

/* The writer emits a chunk holding only a SYNC every flush interval, so a
 * program whose exec failed and that then idled and was killed leaves
 * exactly this: the EXEC is not the end. */
Test(reader_exec, failed_exec_then_a_sync_only_chunk_is_truncated)
{
	struct trace_builder b;
	tb_init(&b);
	build_until_exec(&b);
	tb_sync(&b, 15, 300000000);
	tb_chunk(&b);
	wsprof_trace *t = open_built(&b);
	wsprof_event evs[32];
	cr_expect_eq(read_all(t, evs, 32), 14);
	wsprof_trace_status st = status_of(t);
	cr_expect_not(st.complete, "a chunk came after the EXEC");
	cr_expect_not(st.ended_by_exec);
	cr_expect_eq(st.error, WSPROF_E_TRUNCATED);
	wsprof_trace_close(t);
	tb_fini(&b);
}

Test(reader_exec, failed_exec_then_footer_is_complete)
{
	struct trace_builder b;
	tb_init(&b);
	build_until_exec(&b);
	tb_segment(&b, 7, 14, 12020);
	tb_ev_alloc(&b, 15, 12040, 0, 0, 0x40000, 8, 0);
	tb_sync(&b, 16, 12050);
	tb_chunk(&b);
	tb_footer(&b, 13000);
	wsprof_trace *t = open_built(&b);
	wsprof_event evs[32];
	cr_expect_eq(read_all(t, evs, 32), 15);
	wsprof_trace_status st = status_of(t);
	cr_expect(st.complete);
	cr_expect_not(st.ended_by_exec);
	wsprof_trace_close(t);
	tb_fini(&b);
}

/* ---- a trace cut at every byte ---------------------------------------- */

#define CUT_CHUNKS 8
#define CUT_PER_CHUNK 30

struct cut_event {
	int type;
	uint32_t tid;
	uint64_t seq, time, addr, size;
	int chunk;
};

struct cut_trace {
	struct trace_builder b;
	struct cut_event ev[CUT_CHUNKS * CUT_PER_CHUNK + 8];
	size_t nev;
	size_t header_end, chunk_end[CUT_CHUNKS];
};

static uint32_t cut_rand(uint32_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 17, *x ^= *x << 5;
	return *x;
}

static void cut_write(struct trace_builder *b, const struct cut_event *e)
{
	switch (e->type) {
	case WSPROF_EV_ALLOC:
		tb_ev_alloc(b, e->seq, e->time, 0, 0, e->addr, e->size, 1 + e->seq % 2);
		break;
	case WSPROF_EV_FREE:
		tb_ev_free(b, e->seq, e->time, 0, WSPROF_OP_FREE, e->addr);
		break;
	case WSPROF_EV_UNMAP:
		tb_ev_unmap(b, e->seq, e->time, 1, WSPROF_OP_MUNMAP, e->addr, e->size);
		break;
	}
}

/* Two threads, each chunk holding thread 2's segment before thread 1's; a
 * few of thread 1's last events of a chunk are only written in the next
 * one (its buffer was not swept yet), and the SYNC stops below them. */
static void cut_trace_build(struct cut_trace *ct)
{
	static const int types[] = { WSPROF_EV_ALLOC, WSPROF_EV_ALLOC, WSPROF_EV_FREE, WSPROF_EV_UNMAP };
	struct trace_builder *b = &ct->b;
	tb_init(b);
	tb_header(b, NULL);
	ct->header_end = b->len;
	uint32_t x = 12345;
	uint64_t seq = 1, time = 1000;
	size_t carried_from = 0, carried = 0;
	for (int c = 0; c < CUT_CHUNKS; c++) {
		size_t first = ct->nev;
		for (int i = 0; i < CUT_PER_CHUNK; i++) {
			struct cut_event *e = &ct->ev[ct->nev++];
			e->type = types[cut_rand(&x) % 4];
			e->tid = cut_rand(&x) % 2 ? 1 : 2;
			e->seq = seq++;
			e->time = time += cut_rand(&x) % 5000;
			e->addr = ((uint64_t)cut_rand(&x) << 12) | (cut_rand(&x) & 0xff0);
			e->size = cut_rand(&x) % 100000;
			e->chunk = c;
		}
		/* Thread 1's events among the chunk's last four wait for the next chunk. */
		size_t defer_from = ct->nev;
		if (c < CUT_CHUNKS - 1)
			for (size_t i = ct->nev - 4; i < ct->nev; i++)
				if (ct->ev[i].tid == 1 && defer_from == ct->nev)
					defer_from = i;
		uint64_t watermark = defer_from < ct->nev ? ct->ev[defer_from].seq : seq;

		tb_segment(b, 2, 0, 0);
		if (c == 0) {
			tb_stack(b, 1, 0, 0x401000);
			tb_stack(b, 2, 1, 0x402000);
		}
		for (size_t i = first; i < ct->nev; i++)
			if (ct->ev[i].tid == 2)
				cut_write(b, &ct->ev[i]);
		tb_segment(b, 1, 0, 0);
		for (size_t i = carried_from; i < carried_from + carried; i++)
			if (ct->ev[i].tid == 1)
				cut_write(b, &ct->ev[i]), ct->ev[i].chunk = c;
		for (size_t i = first; i < defer_from; i++)
			if (ct->ev[i].tid == 1)
				cut_write(b, &ct->ev[i]);
		tb_sync(b, watermark, time);
		tb_chunk(b);
		ct->chunk_end[c] = b->len;
		carried_from = defer_from;
		carried = ct->nev - defer_from;
	}
	tb_footer(b, time + 1);
}

static int cmp_cut_seq(const void *a, const void *b)
{
	uint64_t x = ((const struct cut_event *)a)->seq, y = ((const struct cut_event *)b)->seq;
	return x < y ? -1 : x > y;
}

/* What a reader must give for a file cut at len: the events of the
 * chunks wholly before the cut, in seq order. */
static size_t cut_expected(const struct cut_trace *ct, size_t len, struct cut_event *out, int *chunks)
{
	int k = 0;
	while (k < CUT_CHUNKS && ct->chunk_end[k] <= len)
		k++;
	size_t n = 0;
	for (size_t i = 0; i < ct->nev; i++)
		if (ct->ev[i].chunk < k)
			out[n++] = ct->ev[i];
	qsort(out, n, sizeof *out, cmp_cut_seq);
	*chunks = k;
	return n;
}

Test(reader_cut, every_cut_gives_the_events_of_the_chunks_before_it, .timeout = 30)
{
	static struct cut_trace ct;
	cut_trace_build(&ct);
	cr_assert_geq(ct.b.len, 2000, "a trace of a few KB (%zu bytes)", ct.b.len);
	cr_assert_leq(ct.b.len, 16000, "a trace of a few KB (%zu bytes)", ct.b.len);

	char *path = tb_save_temp(&ct.b);
	cr_assert_not_null(path);
	static struct cut_event want[CUT_CHUNKS * CUT_PER_CHUNK + 8];
	for (size_t len = ct.b.len + 1; len-- > 0;) {
		cr_assert_eq(truncate(path, (off_t)len), 0);
		wsprof_trace *t = NULL;
		int err = wsprof_trace_open(path, &t);
		if (len < ct.header_end) {
			cr_assert_lt(err, 0, "a cut header (%zu bytes) is refused", len);
			if (len == 0)
				cr_assert_eq(err, WSPROF_E_EMPTY);
			else if (len >= 16)
				cr_assert_eq(err, WSPROF_E_TRUNCATED, "cut at %zu: %s", len, wsprof_strerror(err));
			else
				cr_assert(err == WSPROF_E_NOT_TRACE || err == WSPROF_E_TRUNCATED,
					  "cut at %zu: %s", len, wsprof_strerror(err));
			continue;
		}
		cr_assert_eq(err, 0, "cut at %zu: %s", len, wsprof_strerror(err));
		int chunks;
		size_t nwant = cut_expected(&ct, len, want, &chunks);
		wsprof_event ev;
		size_t n = 0;
		int r;
		while ((r = wsprof_trace_next(t, &ev)) > 0) {
			cr_assert_lt(n, nwant, "cut at %zu: more than the %zu events of %d chunks", len, nwant,
				     chunks);
			const struct cut_event *w = &want[n++];
			cr_assert(ev.seq == w->seq && ev.type == w->type && ev.tid == w->tid &&
				  ev.time_ns == w->time && ev.addr == w->addr &&
				  (ev.type == WSPROF_EV_FREE || ev.size == w->size),
				  "cut at %zu: event %zu is seq %llu, expected seq %llu", len, n - 1,
				  (unsigned long long)ev.seq, (unsigned long long)w->seq);
		}
		cr_assert_eq(r, 0, "cut at %zu: %s", len, wsprof_strerror(r));
		cr_assert_eq(n, nwant, "cut at %zu: %zu events, expected %zu", len, n, nwant);
		wsprof_trace_status st = status_of(t);
		cr_assert_eq(st.chunks, (uint64_t)chunks, "cut at %zu", len);
		if (len == ct.b.len) {
			cr_assert(st.complete, "the whole trace: %s", wsprof_strerror(st.error));
		} else {
			cr_assert_not(st.complete, "cut at %zu", len);
			cr_assert_eq(st.error, WSPROF_E_TRUNCATED, "cut at %zu: %s", len,
				     wsprof_strerror(st.error));
		}
		wsprof_trace_close(t);
	}
	unlink(path);
	free(path);
	tb_fini(&ct.b);
}

/* ---- names ---------------------------------------------------------- */

Test(reader_names, strerror_names_every_error)
{
	static const int errs[] = { WSPROF_E_NOT_TRACE, WSPROF_E_NEWER, WSPROF_E_CORRUPT,
				    WSPROF_E_TRUNCATED, WSPROF_E_EMPTY };
	const char *unknown = wsprof_strerror(-424242);
	for (size_t i = 0; i < sizeof errs / sizeof *errs; i++) {
		const char *s = wsprof_strerror(errs[i]);
		cr_assert_not_null(s);
		cr_expect_gt(strlen(s), 10, "%d has a message", errs[i]);
		cr_expect_str_neq(s, unknown);
		for (size_t j = 0; j < i; j++)
			cr_expect_str_neq(s, wsprof_strerror(errs[j]), "%d and %d share a message", errs[i],
					  errs[j]);
	}
	cr_expect_str_eq(wsprof_strerror(-ENOENT), strerror(ENOENT));
	cr_expect_str_eq(wsprof_strerror(-ENOMEM), strerror(ENOMEM));
	cr_expect_not_null(wsprof_strerror(0));
	cr_expect_not_null(wsprof_strerror(12345));
}

Test(reader_names, kinds_and_ops_are_named)
{
	cr_expect_str_eq(wsprof_kind_name(WSPROF_KIND_HEAP), "heap");
	cr_expect_str_eq(wsprof_kind_name(WSPROF_KIND_MMAP), "mmap");
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		cr_expect_not_null(wsprof_kind_name(k), "kind %u", k);
	cr_expect_null(wsprof_kind_name(WSPROF_KIND_COUNT));
	cr_expect_str_eq(wsprof_op_name(WSPROF_OP_MALLOC), "malloc");
	cr_expect_str_eq(wsprof_op_name(WSPROF_OP_POSIX_MEMALIGN), "posix_memalign");
	cr_expect_str_eq(wsprof_op_name(WSPROF_OP_MREMAP), "mremap");
	for (unsigned o = 0; o < WSPROF_OP_COUNT; o++)
		cr_expect_not_null(wsprof_op_name(o), "op %u", o);
	cr_expect_null(wsprof_op_name(WSPROF_OP_COUNT));
}

/* ---- reading ahead ------------------------------------------------------ */

/* A trace that keeps every part of reading ahead busy: three threads; a
 * release of more events than the reader hands over at once; chunks of
 * many small releases with stack nodes defined between them; events held
 * back across chunks; a chunk defining more stack nodes before its events
 * than a batch carries; events with strings, modules and CUDA fields; and
 * more events (43,500) than the reader may hold ahead of its caller.
 * @return the number of events; *named gets the annotations naming a
 * block (12 more events load a module: neither is counted in the status). */
static size_t build_busy(struct trace_builder *b, size_t *named)
{
	static const struct tb_segdesc segs[] = { { 0, 0x10000, 5 } };
	static const struct tb_cuda_tag tag = { 1, 0x5000, 0x77 };
	tb_init(b);
	tb_header(b, NULL);
	uint64_t seq = 1, stack = 0;
	size_t n = 0;
	*named = 0;
	for (unsigned c = 0; c < 12; c++) {
		/* chunk 3: one release of 9000; from chunk 7: ten releases of 150 */
		unsigned rounds = c >= 7 ? 10 : 1, per = c == 3 ? 3000 : c >= 7 ? 50 : 1500;
		for (unsigned round = 0; round < rounds; round++) {
			uint64_t nodes = c == 5 ? 6000 : c >= 7 ? 5 : 50;
			for (uint64_t i = 0; i < nodes; i++) { /* chains of 100 frames */
				stack++;
				tb_stack(b, stack, stack % 100 == 1 ? 0 : stack - 1, 0x400000 + stack);
			}
			for (unsigned th = 0; th < 3; th++) {
				tb_segment(b, 11 + th, 0, 0);
				for (unsigned i = 0; i < per; i++) {
					uint64_t s = seq + 3 * i + th, time = s * 100, addr = 0x10000000 + s * 64;
					if (i % 97 == 5 && th == 0) {
						tb_ev_annotate(b, s, time, WSPROF_ANN_NAME, addr, 0, 0, "buffer");
						++*named;
					} else if (i % 89 == 7 && th == 1) {
						tb_ev_cuda_alloc(b, s, time, WSPROF_KIND_CUDA_DEVICE, WSPROF_OP_CU_MEM_ALLOC,
								 addr, 512, stack, &tag);
					} else if (i == 11 && th == 2 && round == 0) {
						tb_ev_module_load(b, s, time, 0x7f0000000000 + c * 0x100000, "/lib/libx.so",
								  "\1\2", 2, segs, 1);
					} else {
						tb_ev_alloc(b, s, time, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, addr, 16 + i % 300,
							    stack - i % 40);
					}
					n++;
				}
			}
			seq += 3 * per;
			/* Every other chunk holds its last 30 events back to the next one. */
			tb_sync(b, c % 2 == 0 && round == rounds - 1 ? seq - 30 : seq, seq * 100);
		}
		tb_chunk(b);
	}
	tb_footer(b, seq * 100);
	return n;
}

/* What the caller can see at an event: the event, its stack and module,
 * the status and the position. */
struct seen {
	uint64_t seq, time, addr, size, stack, stream, handle, depth, ip0, base, chunks, events, done, end;
	unsigned type, kind, op, tid, threads;
	int device, error, complete, named;
};

/* What can be seen at every event, and after the last in out[n] (with
 * only the status and the position). @return n. */
static size_t read_seen(wsprof_trace *t, struct seen *out, size_t max)
{
	wsprof_event ev;
	size_t n = 0;
	for (;;) {
		cr_assert_lt(n, max, "more events than were written");
		struct seen *s = &out[n];
		memset(s, 0, sizeof *s);
		int r = wsprof_trace_next(t, &ev);
		cr_assert_geq(r, 0, "wsprof_trace_next failed: %s", wsprof_strerror(r));
		if (r) {
			*s = (struct seen){ .seq = ev.seq, .time = ev.time_ns, .addr = ev.addr, .size = ev.size,
					    .stack = ev.stack, .stream = ev.stream, .handle = ev.handle,
					    .type = (unsigned)ev.type, .kind = ev.kind, .op = ev.op, .tid = ev.tid,
					    .device = ev.device, .named = ev.text && !strcmp(ev.text, "buffer") };
			s->depth = wsprof_trace_stack(t, ev.stack, &s->ip0, 1);
			wsprof_trace_module_at(t, 0x7f0000000000 + 0x500000, &s->base);
		}
		wsprof_trace_status st;
		wsprof_trace_get_status(t, &st);
		s->chunks = st.chunks;
		s->events = st.events;
		s->threads = (unsigned)st.threads;
		s->error = st.error;
		s->complete = st.complete;
		s->end = st.end_time_ns;
		uint64_t size;
		wsprof_trace_position(t, &s->done, &size);
		if (!r)
			return n;
		n++;
	}
}

/* The trace through a new FIFO, written by a child process (not a thread:
 * the tests count their threads); *path gets the FIFO's path (free it).
 * @return the child. */
static pid_t feed_fifo(const struct trace_builder *b, char **path)
{
	*path = tb_save_temp(b);
	cr_assert_not_null(*path);
	unlink(*path);
	cr_assert_eq(mkfifo(*path, 0600), 0, "mkfifo: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid)
		return pid;
	signal(SIGPIPE, SIG_IGN);
	int fd = open(*path, O_WRONLY | O_CLOEXEC);
	for (size_t at = 0; fd >= 0 && at < b->len;) {
		ssize_t w = write(fd, b->data + at, b->len - at);
		if (w <= 0)
			_exit(1);
		at += (size_t)w;
	}
	_exit(fd < 0);
}

/* The threads of this process. */
static size_t threads_now(void)
{
	DIR *d = opendir("/proc/self/task");
	cr_assert_not_null(d);
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

Test(reader_ahead, a_file_read_ahead_and_a_pipe_read_on_demand_look_the_same, .timeout = 60)
{
	struct trace_builder b;
	size_t names;
	size_t want = build_busy(&b, &names);
	size_t max = want + 16;
	struct seen *a = calloc(max, sizeof *a), *p = calloc(max, sizeof *p);
	cr_assert(a && p);

	size_t before = threads_now();
	wsprof_trace *t = open_built(&b);
	size_t na = read_seen(t, a, max);
	wsprof_trace_close(t);
	cr_expect_eq(threads_now(), before, "closing ends the reading threads");

	char *fifo;
	pid_t writer = feed_fifo(&b, &fifo);
	cr_assert_eq(wsprof_trace_open(fifo, &t), 0);
	size_t np = read_seen(t, p, max);
	cr_expect_eq(threads_now(), before, "a pipe is read as events are asked for, on no thread");
	wsprof_trace_close(t);
	int status;
	cr_assert_eq(waitpid(writer, &status, 0), writer);
	cr_expect(WIFEXITED(status) && !WEXITSTATUS(status), "the writer wrote it all");
	unlink(fifo);
	free(fifo);

	cr_assert_eq(na, want, "%zu events of %zu through the file", na, want);
	cr_assert_eq(np, want, "%zu events of %zu through the pipe", np, want);
	for (size_t i = 0; i <= want; i++) {
		cr_assert_eq(a[i].seq, i < want ? i + 1 : 0, "event %zu is seq %llu", i, (unsigned long long)a[i].seq);
		cr_assert(!memcmp(&a[i], &p[i], sizeof a[i]), "event %zu (seq %llu) looks different through a pipe", i,
			  (unsigned long long)a[i].seq);
	}
	const struct seen *last = &a[want - 1], *end = &a[want];
	cr_expect(!last->complete && last->chunks == 11, "at the last event, its chunk is still being decoded");
	cr_expect_lt(last->done, b.len, "and the footer is still to be read");
	cr_expect(end->complete && !end->error, "complete at the end");
	cr_expect_eq(end->chunks, 12);
	cr_expect_eq(end->events, want - names - 12, "allocations only");
	cr_expect_eq(end->done, b.len, "the whole file read at the end");
	cr_expect_eq(end->threads, 3);
	cr_expect_eq(a[0].chunks, 0, "the first chunk is still being decoded at its first event");
	cr_expect_lt(a[0].done, b.len / 2, "position at the first event: not the end of the file");
	size_t named = 0;
	for (size_t i = 0; i < want; i++) {
		named += a[i].named;
		cr_assert_eq(a[i].tid, 11 + i % 3);
		if (a[i].type == WSPROF_EV_ALLOC)
			cr_assert(a[i].depth == (a[i].stack - 1) % 100 + 1 && a[i].ip0 == 0x400000 + a[i].stack,
				  "stack %llu at event %zu: depth %llu", (unsigned long long)a[i].stack, i,
				  (unsigned long long)a[i].depth);
		if (a[i].kind == WSPROF_KIND_CUDA_DEVICE)
			cr_assert(a[i].device == 1 && a[i].stream == 0x5000 && a[i].handle == 0x77);
		else
			cr_assert(a[i].device == -1 && !a[i].stream && !a[i].handle);
	}
	cr_expect_eq(named, names, "every annotation's text: %zu of %zu", named, names);
	free(a);
	free(p);
	tb_fini(&b);
}

Test(reader_ahead, closing_before_the_end_ends_the_reading_threads)
{
	struct trace_builder b;
	size_t names;
	size_t want = build_busy(&b, &names);
	size_t before = threads_now();
	wsprof_trace *t = open_built(&b);
	cr_expect_eq(threads_now(), before, "no thread before the first event is asked for");
	wsprof_event ev;
	for (int i = 0; i < 100; i++)
		cr_assert_eq(wsprof_trace_next(t, &ev), 1);
	cr_expect_eq(threads_now(), before + 2, "unpacking and decoding ahead of the caller, held back by the events in flight");
	wsprof_trace_close(t);
	cr_expect_eq(threads_now(), before, "closing ends both threads");
	cr_expect_gt(want, 100);
	tb_fini(&b);
}

/* Format 2.4: the process's place in a parallel job, and none before. */
Test(reader_compat, the_rank_of_a_job_and_none_before_2_4)
{
	struct trace_builder b, old;
	tb_init(&b);
	tb_init(&old);
	struct tb_process pr = tb_process_default();
	pr.rank_plus_one = 3;
	pr.job_size = 4;
	pr.job_id = "97452033";
	pr.launcher = "openmpi";
	tb_header(&b, &pr);
	tb_footer(&b, 0);
	tb_header_version(&old, 2, 3, &pr);
	tb_footer(&old, 0);
	wsprof_trace *t = open_built(&b), *o = open_built(&old);
	const wsprof_process *p = wsprof_trace_process(t), *q = wsprof_trace_process(o);
	cr_expect_eq(p->rank, 2);
	cr_expect_eq(p->job_size, 4);
	cr_expect_str_eq(p->job_id, "97452033");
	cr_expect_str_eq(p->launcher, "openmpi");
	cr_expect_eq(q->rank, -1, "a 2.3 trace has no rank");
	cr_expect_eq(q->job_size, 0);
	cr_expect_str_eq(q->job_id, "");
	cr_expect_str_eq(q->launcher, "");
	wsprof_trace_close(t);
	wsprof_trace_close(o);
	tb_fini(&b);
	tb_fini(&old);
}

/* A trace still being written (wsprof_trace_open_live): written a piece
 * at a time, cut anywhere (inside a chunk's header, its bytes, the
 * footer), each piece's events come as they are complete, WSPROF_E_AGAIN
 * in between, and all of them equal a whole read; the footer ends it. */
Test(reader_live, a_growing_trace_reads_as_a_whole_one)
{
	struct trace_builder b;
	tb_init(&b);
	build_every_record(&b);
	wsprof_event want[32], got[32];
	wsprof_trace_status wst;
	uint64_t wips[4];
	size_t nw = read_every_record(&b, want, &wst, wips);
	char *path = tb_save_temp(&b);
	cr_assert_not_null(path);
	for (size_t step = 1; step < 200; step += 37) {
		/* The header first: the live reader opens once it is there. */
		cr_assert_eq(tb_save_prefix(&b, path, b.len < 300 ? b.len : 300), 0);
		wsprof_trace *t;
		int err = wsprof_trace_open_live(path, &t);
		cr_assert_eq(err, 0, "open: %s", wsprof_strerror(err));
		size_t n = 0, again = 0;
		int r = 0;
		for (size_t len = 300; ; len += step) {
			cr_assert_eq(tb_save_prefix(&b, path, len < b.len ? len : b.len), 0);
			wsprof_event ev;
			while ((r = wsprof_trace_next(t, &ev)) > 0) {
				cr_assert_lt(n, 32);
				ev.path = NULL;
				ev.build_id = NULL;
				got[n++] = ev;
			}
			if (r != WSPROF_E_AGAIN)
				break;
			again++;
			cr_assert_lt(len, b.len + 1, "still waiting with the whole trace written");
		}
		cr_expect_eq(r, 0, "the footer ends it: %s", wsprof_strerror(r));
		cr_expect_gt(again, 0);
		expect_same_events(got, n, want, nw);
		wsprof_trace_status st;
		wsprof_trace_get_status(t, &st);
		cr_expect(st.complete);
		wsprof_trace_close(t);
	}
	unlink(path);
	free(path);
	tb_fini(&b);
}
