/*
 * rescue.h - the memory a traced process shares with `wsprof record`, so
 * that a trace is finished however the process ends.
 *
 * Under `wsprof record`, each traced process image keeps its event
 * buffers and the writer's staging area in one memfd (preload/core/rescue.c)
 * and hands that memfd, with a pidfd of itself, to the launcher over a
 * datagram socket named in WSPROF_RESCUE. A process that ends without
 * writing its footer (exit_group, SIGKILL, the OOM killer) leaves its
 * buffers to the launcher, which appends what the file does not hold yet
 * and the footer (analyzer/cmd/rescue.c).
 *
 * What the file already holds is told by generations: the staging area's
 * contents are generation stage_gen; once a chunk made from them is
 * written whole, committed_gen becomes that generation. A buffer copied
 * into the staging area is marked with the generation and the staging
 * length that include it, before the length is published. So at any
 * instant, whatever instruction a thread was killed at, each event is in
 * exactly one of: the file (up to committed_bytes), the staging area, a
 * buffer still held. Stores are ordered with compiler fences: a killed
 * process's stores all reach memory, in program order for what the
 * launcher reads after the process is gone.
 *
 * The layout is shared by one build of the preload library and of the
 * analyzer, on one machine: plain C structures, checked by magic, version
 * and size.
 */
#ifndef WSP_RESCUE_H
#define WSP_RESCUE_H

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define WSP_RESCUE_MAGIC 0x6575637365727377ull /* "wsrescue" */
#define WSP_RESCUE_VERSION 1
#define WSP_RESCUE_ENV "WSPROF_RESCUE"   /* the launcher's socket, an abstract name */
#define WSP_RESCUE_NAME_MAX 100

/* One thread's event buffer (preload/core/events.c). In the shared memory when
 * there is one, so its fields are the launcher's to read too. */
enum wsp_buf_held {
	WSP_BUF_FREE = 0,    /* in the pool: nothing of it to write */
	WSP_BUF_HELD = 1,    /* a thread's, or queued for the writer: data[0, len) not yet written */
};

struct wsp_buf {
	struct wsp_buf *next;
	size_t len, cap;  /* len: complete records; stored after them */
	uint64_t events;  /* event records in it, for the footer */
	/* The thread's floor when it was installed: no event in it, and no
	 * event of any thread using a stack node defined in it, has a lower
	 * number (a node is made after, and found after, this). */
	uint64_t floor;
	_Atomic uint32_t held;  /* enum wsp_buf_held */
	uint32_t unused;
	/* Copied into the staging area of this generation, which then ended
	 * at staged_end (0: not copied since it was taken from the pool). */
	uint64_t staged_gen, staged_end;
	uint8_t data[];
};

enum wsp_rescue_state {
	WSP_RESCUE_RECORDING = 0,
	WSP_RESCUE_FINISHED = 1, /* the process wrote its footer */
	WSP_RESCUE_STOPPED = 2,  /* recording stopped (write error): nothing to add */
	WSP_RESCUE_EXEC = 3,     /* ended in exec: the trace is complete with its EXEC record */
};

struct wsp_rescue_head {
	uint64_t magic;
	uint32_t version, head_size;
	uint32_t pid, buf_struct; /* sizeof(struct wsp_buf) */
	uint64_t start_mono;      /* the process's clock origin (CLOCK_MONOTONIC ns) */
	uint64_t trace_dev, trace_ino; /* the trace file, to be sure it is that one */
	uint64_t stage_off, stage_cap;
	uint64_t slots_off, slot_size, nslots;
	char path[PATH_MAX];      /* the trace file */
	_Atomic uint64_t slots_used; /* slots handed out so far, from the first */
	_Atomic uint64_t stage_len, stage_gen;
	/* The file: complete up to committed_bytes, which end with the chunk
	 * of generation committed_gen; chunks and events in it. */
	_Atomic uint64_t committed_gen, committed_bytes, committed_chunks, committed_events;
	_Atomic uint64_t untraced;   /* FOOTER.untraced so far */
	_Atomic uint64_t alive_ns;   /* the writer's last flush, on the process's clock */
	_Atomic uint32_t state;      /* enum wsp_rescue_state */
	_Atomic uint32_t ending, ending_value; /* enum wsprof_ending and its value, set by the process's exit paths */
};

#define WSP_RESCUE_HEAD_SIZE 8192 /* the head's room in the memfd: slots start page aligned */

#endif
