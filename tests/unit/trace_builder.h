/*
 * trace_builder.h - write wsprof traces byte by byte, for tests.
 *
 * A test-only writer that follows doc/trace-format.md directly (header
 * frame, zstd chunks with content size and checksum, footer frame) using
 * the encoders of src/format.h, but none of the recorder's code: what the
 * reader gets from it is what the specification says, not what libwsprof
 * happens to write. Events take absolute values (seq, time, address) and
 * the builder writes the deltas, so tests state what the reader must give
 * back. The bytes stay in memory (`data`, `len`) until saved, so a test
 * can cut, flip or patch them to build a damaged trace; it is also how
 * golden traces are made.
 *
 * Every function aborts on out-of-memory or a zstd error: a builder that
 * cannot build has no useful way to go on.
 */
#ifndef WSP_TEST_TRACE_BUILDER_H
#define WSP_TEST_TRACE_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The PROCESS and CONFIG records of the header; tb_process_default() fills
 * plausible values. cmdline holds cmdline_len bytes (NUL-separated).
 * The access fields (format 1.1) are written only when access_sources is
 * not 0 or access_note is set, so a builder that leaves them alone writes
 * the 1.0 CONFIG record, as older traces have it; sample_bytes (format
 * 2.0) only when it is not 0, after them. */
struct tb_process {
	uint32_t pid, ppid, parent_pid_traced;
	uint64_t start_realtime_ns, start_monotonic_ns, page_size;
	const char *exe;
	const char *cmdline;
	size_t cmdline_len;
	const char *tool_version;
	unsigned stack_depth, flush_ms, follow;
	unsigned access_sources, wp_pages, window_ms, max_regions; /* WSPROF_SOURCE_* bits, ... */
	const char *access_note;
	uint64_t sample_bytes; /* WSPROF_SAMPLE_BYTES */
	/* The place in a job (format 2.4; written from 2.4 on): rank + 1 (0: none), ... */
	uint64_t rank_plus_one, job_size;
	const char *job_id, *launcher; /* NULL: "" */
};

struct tb_segdesc {
	uint64_t vaddr, memsz, flags;
};

/* The fields CUDA events (and pool sub-allocations) append to ALLOC, FAIL
 * and FREE: the device ordinal (-1: none, written as device + 1), the
 * stream (0: none) and the handle (a VMM mapping's physical allocation, a
 * sub-allocation's pool; not written for FREE). */
struct tb_cuda_tag {
	int device;
	uint64_t stream, handle;
};

/* A region of an ACCESS sample: [start, start + len). */
struct tb_region {
	uint64_t start, len;
};

struct trace_builder {
	uint8_t *data;            /* the file so far */
	size_t len, cap;
	uint8_t *raw;             /* records of the chunk being built */
	size_t raw_len, raw_cap;
	uint32_t chunks;          /* chunks written (the next chunk's index) */
	uint64_t events;          /* event records written (ALLOC .. UNMAP) */
	uint64_t seq, time, addr; /* delta bases of the open segment */
	uint8_t trailer[64];      /* appended to every record's payload: fields of a later minor version */
	size_t trailer_len;
};

void tb_init(struct trace_builder *b);
void tb_fini(struct trace_builder *b);
struct tb_process tb_process_default(void);

/* The header frame, format 1.0, or any version. proc NULL: the defaults. */
void tb_header(struct trace_builder *b, const struct tb_process *proc);
void tb_header_version(struct trace_builder *b, unsigned major, unsigned minor,
		       const struct tb_process *proc);

/* Append these varints to the payload of every record written from now on
 * (n 0: stop). Records of a later minor version look like this. */
void tb_set_trailer(struct trace_builder *b, const uint64_t *fields, size_t n);

/* A record of varint fields (plus the trailer) in the open chunk. */
void tb_record(struct trace_builder *b, unsigned type, const uint64_t *fields, size_t n);
/* A record with exactly this payload, no trailer (unknown or malformed records). */
void tb_record_bytes(struct trace_builder *b, unsigned type, const void *payload, size_t len);
/* Bytes as they are, not even framed as a record, in the open chunk. */
void tb_raw_bytes(struct trace_builder *b, const void *bytes, size_t len);
/* Bytes as they are, at the end of the file (outside any chunk). */
void tb_file_bytes(struct trace_builder *b, const void *bytes, size_t len);

void tb_segment(struct trace_builder *b, uint32_t tid, uint64_t seq_base, uint64_t time_base);
void tb_sync(struct trace_builder *b, uint64_t watermark, uint64_t time);
void tb_stack(struct trace_builder *b, uint64_t id, uint64_t parent, uint64_t ip);

/* Events of the open segment, with absolute seq, time and address. */
void tb_ev_alloc(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		 uint64_t addr, uint64_t size, uint64_t stack);
void tb_ev_free(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		uint64_t addr);
void tb_ev_move(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		uint64_t addr, uint64_t old_size);
void tb_ev_fail(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		uint64_t size, uint64_t stack);
void tb_ev_unmap(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		 uint64_t addr, uint64_t length);
void tb_ev_module_load(struct trace_builder *b, uint64_t seq, uint64_t time, uint64_t base,
		       const char *path, const void *build_id, size_t build_id_len,
		       const struct tb_segdesc *segs, size_t nsegs);
void tb_ev_module_unload(struct trace_builder *b, uint64_t seq, uint64_t time, uint64_t base);
void tb_ev_fork(struct trace_builder *b, uint64_t seq, uint64_t time, uint64_t child_pid);
/* Recording turned on or off (format 2.4): cause is an enum wsprof_recording_cause. */
void tb_ev_recording(struct trace_builder *b, uint64_t seq, uint64_t time, bool on, unsigned cause);
void tb_ev_exec(struct trace_builder *b, uint64_t seq, uint64_t time, const char *path);

/* CUDA allocations, failures and frees (and pool sub-allocations, kind
 * WSPROF_KIND_POOL with the pool as the handle): the events above with
 * the tag's fields appended. Counted in the footer like them. */
void tb_ev_cuda_alloc(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		      uint64_t addr, uint64_t size, uint64_t stack, const struct tb_cuda_tag *tag);
void tb_ev_cuda_fail(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		     uint64_t size, uint64_t stack, const struct tb_cuda_tag *tag);
void tb_ev_cuda_free(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		     uint64_t addr, const struct tb_cuda_tag *tag);
void tb_ev_stream_reached(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
			  uint64_t addr, uint64_t stream);

/* Samples and annotations: stamped like events, not counted in the footer.
 * tb_ev_annotate writes what the program said (enum wsprof_annotation):
 * addr goes through the segment's address delta like an allocation's;
 * text NULL is the empty string. tb_ev_access takes regions sorted by
 * address and apart (touching is fine); anything else aborts, since the
 * format cannot say it. device is the ordinal (-1: unknown). */
void tb_ev_annotate(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned what, uint64_t addr,
		    uint64_t size, uint64_t pool, const char *text);
void tb_ev_access(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned source, uint64_t window_ns,
		  const struct tb_region *regions, size_t n);
void tb_ev_rss(struct trace_builder *b, uint64_t seq, uint64_t time, uint64_t resident);
/* A sampled heap's totals (format 2.5): the fields of wsprof_heap_totals. */
struct wsprof_heap_totals;
void tb_ev_heap_totals(struct trace_builder *b, uint64_t seq, uint64_t time, const struct wsprof_heap_totals *h);
void tb_ev_device_memory(struct trace_builder *b, uint64_t seq, uint64_t time, int device, uint64_t free_bytes,
			 uint64_t total_bytes);

/* Compress the open chunk's records into the next chunk frame.
 * @return the offset of the frame in data. */
size_t tb_chunk(struct trace_builder *b);

/* The footer frame, with the counts of what was built, or with any values. */
void tb_footer(struct trace_builder *b, uint64_t end_time);
void tb_footer_fields(struct trace_builder *b, uint64_t end_time, uint64_t chunks, uint64_t events,
		      uint64_t stack_nodes);

/* Overwrite 4 bytes of the file, little-endian (chunk header fields). */
void tb_patch_le32(struct trace_builder *b, size_t offset, uint32_t value);

/* Write the first len bytes of the file to path. @return 0 or -errno. */
int tb_save_prefix(const struct trace_builder *b, const char *path, size_t len);
int tb_save(const struct trace_builder *b, const char *path);
/* Save to a new temporary file. @return its path (free it), or NULL. */
char *tb_save_temp(const struct trace_builder *b);

#endif
