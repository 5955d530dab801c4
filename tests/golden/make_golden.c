/*
 * make_golden - write tests/golden/server.wsp, the small committed trace
 * the golden tests render.
 *
 * usage: make_golden OUTPUT
 *
 * A made-up program, "/opt/golden/bin/server" with "libgolden.so", whose
 * files exist nowhere, so every frame reads module+offset on any machine
 * and the reports are the same everywhere. Two threads; a realloc, a
 * failed allocation, an mmap cut in two, a fork, leaks and a temporary
 * allocation; the heap peaks at 3 KiB + 100 B. Run it again only when the
 * format changes on purpose, and commit the new trace with its outputs
 * (WSPROF_GOLDEN_UPDATE=1 meson test golden rewrites them).
 */
#include "trace_builder.h"

#include "wsprof/trace.h"

#include <stdio.h>

enum { HEAP = WSPROF_KIND_HEAP, MMAP = WSPROF_KIND_MMAP };

#define MS 1000000ull /* event times below are in milliseconds */

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_golden OUTPUT\n");
		return 2;
	}
	struct trace_builder b;
	tb_init(&b);
	struct tb_process p = tb_process_default();
	static const char cmdline[] = "/opt/golden/bin/server\0--port\0008080";
	p.pid = 4242;
	p.ppid = 1;
	p.exe = "/opt/golden/bin/server";
	p.cmdline = cmdline;
	p.cmdline_len = sizeof cmdline;
	p.start_realtime_ns = 1795939200000000000ull; /* 2026-11-29 08:00:00 UTC */
	p.tool_version = "0.1.0";
	tb_header(&b, &p);

	const uint64_t exe = 0x555555554000ull, lib = 0x7f0000000000ull;
	static const uint8_t exe_id[] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4 };
	static const uint8_t lib_id[] = { 0xfe, 0xed, 0xfa, 0xce, 5, 6, 7, 8 };
	const struct tb_segdesc exe_segs[] = { { 0, 0x1000, 4 }, { 0x1000, 0x4000, 5 } };
	const struct tb_segdesc lib_segs[] = { { 0, 0x1000, 4 }, { 0x1000, 0x8000, 5 } };

	/* Thread 100, the main thread. */
	tb_segment(&b, 100, 0, 0);
	tb_ev_module_load(&b, 1, 1 * MS, exe, "/opt/golden/bin/server", exe_id, sizeof exe_id, exe_segs, 2);
	tb_ev_module_load(&b, 2, 2 * MS, lib, "/opt/golden/lib/libgolden.so", lib_id, sizeof lib_id, lib_segs, 2);
	/* Stacks: 1 _start, 2 main, 3 handle_request, 4 parse (in the library), 5 cache_put, 6 worker */
	tb_stack(&b, 1, 0, exe + 0x1100);
	tb_stack(&b, 2, 1, exe + 0x1234);
	tb_stack(&b, 3, 2, exe + 0x1400);
	tb_stack(&b, 4, 3, lib + 0x2010);
	tb_stack(&b, 5, 2, exe + 0x1800);
	tb_stack(&b, 6, 0, exe + 0x1900);
	tb_ev_alloc(&b, 3, 10 * MS, HEAP, WSPROF_OP_MALLOC, 0x1000, 1024, 5);    /* cache entry, leaked */
	tb_ev_alloc(&b, 4, 11 * MS, HEAP, WSPROF_OP_MALLOC, 0x2000, 64, 4);      /* parse buffer */
	tb_ev_free(&b, 5, 12 * MS, HEAP, WSPROF_OP_FREE, 0x2000);                /* ... temporary */
	tb_ev_alloc(&b, 6, 13 * MS, HEAP, WSPROF_OP_CALLOC, 0x3000, 100, 3);     /* request */
	tb_ev_move(&b, 7, 14 * MS, HEAP, WSPROF_OP_REALLOC, 0x3000, 0);
	tb_ev_alloc(&b, 8, 15 * MS, HEAP, WSPROF_OP_REALLOC, 0x4000, 2048, 3);   /* request grown */
	tb_ev_alloc(&b, 9, 16 * MS, MMAP, WSPROF_OP_MMAP, 0x7e0000000000ull, 0x4000, 2);
	tb_sync(&b, 10, 16 * MS);
	tb_chunk(&b);

	/* Thread 101, a worker, and the main thread again. */
	tb_segment(&b, 101, 0, 0);
	tb_ev_alloc(&b, 10, 20 * MS, HEAP, WSPROF_OP_MALLOC, 0x5000, 100, 6);    /* the peak: 3 KiB + 100 B */
	tb_ev_free(&b, 11, 21 * MS, HEAP, WSPROF_OP_FREE, 0x4000);               /* freed on another thread */
	tb_ev_fail(&b, 12, 22 * MS, HEAP, WSPROF_OP_MALLOC, 1ull << 40, 6);
	tb_segment(&b, 100, 0, 0);
	tb_ev_unmap(&b, 13, 23 * MS, MMAP, WSPROF_OP_MUNMAP, 0x7e0000001000ull, 0x1000); /* a hole */
	tb_ev_fork(&b, 14, 24 * MS, 4343);
	tb_ev_alloc(&b, 15, 25 * MS, HEAP, WSPROF_OP_MALLOC, 0x6000, 512, 5);    /* cache entry, leaked */
	tb_sync(&b, 16, 26 * MS);
	tb_chunk(&b);
	tb_footer(&b, 30 * MS);

	if (tb_save(&b, argv[1]) < 0) {
		perror(argv[1]);
		return 1;
	}
	tb_fini(&b);
	return 0;
}
