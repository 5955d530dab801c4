/*
 * resume.h - open a trace in its middle: where each chunk lies, a reader
 * that starts at one, and the tables it would have built by then.
 *
 * For the analyzer's time-travel index: one pass notes the chunks'
 * places and, at checkpoints, the tables below; a later reader opens at
 * the place for a sequence number, is given the tables back, and hands
 * out exactly the events a reader from the start would have handed out
 * from that number on, in the same order. Private to wsprof (the reader's
 * static library), implemented in reader.c, which owns the reader's state.
 *
 * The seeds are complete for a checkpoint taken between two events
 * handed out, the first of seq S: resume it with seq S + 1 (one before
 * any event: seq 0). The caller's stack table then holds every node
 * defined up to the SYNC that released the event of seq S (nodes join
 * the table at such marks, on the caller's side, before the events that
 * follow them), and so do the code objects and the PYTHON record read
 * out (the decoding side reads those into its tables as it goes; the
 * marks say how far the caller may read). The place
 * wsp_chunk_places_resume_offset gives for S + 1 is that SYNC's chunk or
 * an earlier one, so whatever was defined after it is read again
 * (defined again is accepted). Modules follow the events handed out
 * exactly: MODULE_LOAD and MODULE_UNLOAD change the table as the caller
 * gets them.
 */
#ifndef WSP_RESUME_H
#define WSP_RESUME_H

#include <stddef.h>
#include <stdint.h>

#include "wsprof/trace.h"

/* A chunk of the file, as a pass read it. */
struct wsp_chunk_place {
	uint64_t offset;    /* file offset of the chunk's frame header */
	uint32_t index;     /* chunk index */
	uint64_t max_seq;   /* the highest seq of a record stamped in it (anything wsprof_trace_next hands
			     * out; a PYTHON record after a segment's last event may count too); 0 if none */
	uint64_t watermark; /* the highest SYNC watermark in it; 0 if none */
};

/* The chunks a pass read whole, in file order, then one place more for
 * the end, max_seq and watermark 0: the footer's offset and the count of
 * chunks as its index; without a footer the last chunk again (a reader
 * opened there sees how the trace ended: an exec, a cut), or the frame
 * where reading failed.
 * Valid once wsprof_trace_next has returned 0, until the trace is closed;
 * a reader opened at a place lists the chunks from there on.
 * @return the number of places, *places the first. */
size_t wsp_trace_chunk_places(const wsprof_trace *t, const struct wsp_chunk_place **places);

/* Where to open a reader to hand out the events from seq on: the first
 * place in file order whose max_seq or watermark is seq or more (the file
 * order is not the seq order: a chunk written before a SYNC may hold later
 * events; and a SYNC that names seq is where the stack nodes a checkpoint
 * before seq lacks begin), else the last (the end). p[0..n) as
 * wsp_trace_chunk_places gave them (saved and loaded back is fine).
 * @return its offset, *index its chunk index; 0 and 0 when n is 0. */
uint64_t wsp_chunk_places_resume_offset(const struct wsp_chunk_place *p, size_t n, uint64_t seq, uint32_t *index);

/* A place to open at: a chunk's offset and index (or the end's), and the
 * first seq to hand out. */
struct wsp_resume {
	uint64_t offset;
	uint32_t chunk;
	uint64_t seq;
};

/* Open the regular file path as wsprof_trace_open does (header, PROCESS,
 * CONFIG), then read chunks from r->offset, the frame of chunk r->chunk
 * (or the footer, or the end of a truncated file), handing out only the
 * events of seq r->seq or more, in the order a reader from the start
 * would. Seed the tables (below) before the first wsprof_trace_next.
 * wsprof_trace_position counts from the file's start. At the end the
 * status checks what a part can: the chunks counted (from r->chunk) equal
 * the footer's, the events decoded (some of them below r->seq, dropped)
 * are no more than its events; status.events counts those decoded.
 * @return 0, wsprof_trace_open's errors, -EINVAL when r->offset is
 * neither chunk r->chunk's frame, the footer's nor the end of the file
 * (or lies in the header), -ESPIPE when path cannot seek. */
int wsp_trace_open_at(const char *path, const struct wsp_resume *r, wsprof_trace **out);

/* ---- the tables: seeded before the first wsprof_trace_next ----------- */

/* Stack node id as frame ip called from parent (a Python frame's ip as
 * WSPROF_PYFRAME_IP makes it); a STACK or PYFRAME record that defines it
 * again later is accepted. Ids as the trace numbers them (each at most
 * 2^20 past the count seeded, as a trace's).
 * @return 0, -EINVAL (id 0 or too far), -EBUSY (reading has begun), -ENOMEM. */
int wsp_trace_seed_stack(wsprof_trace *t, uint64_t id, uint64_t parent, uint64_t ip);

/* A PY_CODE record's fields (copied). @return 0, -EBUSY, -ENOMEM, or
 * WSPROF_E_CORRUPT for an id out of the table's range. */
int wsp_trace_seed_pycode(wsprof_trace *t, uint64_t id, unsigned firstlineno, const char *qualname,
			  const char *filename, const uint8_t *linetable, size_t linetable_len);

/* The PYTHON record, as wsprof_trace_python gave it at the checkpoint
 * (seen or not: seed it only when seen; strings copied); the trace's own,
 * when read later, is then ignored as a second one. @return 0, -EBUSY, -ENOMEM. */
int wsp_trace_seed_python(wsprof_trace *t, const wsprof_python *py);

/* A loaded module, as a MODULE_LOAD event makes it: load bias, path,
 * build id (may be NULL with length 0) and segments (vaddr, memsz), all
 * copied. @return 0, -EBUSY, -ENOMEM. */
int wsp_trace_seed_module(wsprof_trace *t, uint64_t base, const char *path, const uint8_t *build_id,
			  size_t build_id_len, size_t nsegs, const uint64_t (*segs)[2]);

/* ---- the tables read out, on the caller's thread, at any time --------- */

/* Each defined stack node in id order, as the caller's table has it (the
 * nodes of the marks applied so far: those defined before the last SYNC
 * that released an event handed out); nothing after
 * wsprof_trace_forget_stacks. fn returning nonzero stops.
 * @return 0, or what fn returned. */
int wsp_trace_each_stack_node(const wsprof_trace *t, int (*fn)(void *arg, uint64_t id, uint64_t parent, uint64_t ip),
			      void *arg);

/* Each PY_CODE the reader had decoded as of the events handed out (its
 * decoding side may be further on; those wait for the next mark), in the
 * order they were defined. @return 0, or what fn returned. */
int wsp_trace_each_pycode(const wsprof_trace *t, int (*fn)(void *arg, uint64_t id, const wsprof_pycode *code),
			  void *arg);

/* Each module loaded by the events handed out so far (the table changes
 * as MODULE_LOAD and MODULE_UNLOAD events are handed out), segments as
 * (vaddr, memsz). The pointers hold until the next wsprof_trace_next.
 * @return 0, or what fn returned. */
int wsp_trace_each_module(const wsprof_trace *t,
			  int (*fn)(void *arg, uint64_t base, const char *path, const uint8_t *build_id,
				    size_t build_id_len, size_t nsegs, const uint64_t (*segs)[2]),
			  void *arg);

#endif
