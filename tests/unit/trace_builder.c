/*
 * trace_builder.c - write wsprof traces byte by byte, for tests (see
 * trace_builder.h). Each record's payload is built in a scratch buffer,
 * then framed with wsp_record_open/close; chunks are compressed as
 * doc/trace-format.md asks: one zstd frame with content size and checksum.
 */
#include "trace_builder.h"

#include "format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

static void die(const char *what)
{
	fprintf(stderr, "trace_builder: %s\n", what);
	abort();
}

static void reserve(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	size_t n = *cap ? *cap : 256;
	while (n < need)
		n *= 2;
	uint8_t *p = realloc(*buf, n);
	if (!p)
		die("out of memory");
	*buf = p;
	*cap = n;
}

/* A payload under construction. */
struct payload {
	uint8_t *p;
	size_t len, cap;
};

static void pl_varint(struct payload *pl, uint64_t v)
{
	reserve(&pl->p, &pl->cap, pl->len + 10);
	pl->len = (size_t)(wsp_put_varint(pl->p + pl->len, v) - pl->p);
}

static void pl_bytes(struct payload *pl, const void *s, size_t n)
{
	reserve(&pl->p, &pl->cap, pl->len + 10 + n);
	pl->len = (size_t)(wsp_put_bytes(pl->p + pl->len, s, n) - pl->p);
}

static void pl_trailer(struct payload *pl, const struct trace_builder *b)
{
	reserve(&pl->p, &pl->cap, pl->len + b->trailer_len);
	memcpy(pl->p + pl->len, b->trailer, b->trailer_len);
	pl->len += b->trailer_len;
}

/* Append a framed record to buf. */
static void put_record(uint8_t **buf, size_t *len, size_t *cap, unsigned type, const void *payload,
		       size_t n)
{
	reserve(buf, cap, *len + 20 + n);
	struct wsp_record_mark m;
	uint8_t *p = wsp_record_open(*buf + *len, type, n, &m);
	memcpy(p, payload, n);
	*len = (size_t)(wsp_record_close(p + n, &m) - *buf);
}

/* Frame a finished payload into the open chunk and release it. */
static void emit(struct trace_builder *b, unsigned type, struct payload *pl)
{
	pl_trailer(pl, b);
	put_record(&b->raw, &b->raw_len, &b->raw_cap, type, pl->p, pl->len);
	free(pl->p);
}

static void append(struct trace_builder *b, const void *bytes, size_t n)
{
	reserve(&b->data, &b->cap, b->len + n);
	memcpy(b->data + b->len, bytes, n);
	b->len += n;
}

void tb_init(struct trace_builder *b)
{
	memset(b, 0, sizeof *b);
}

void tb_fini(struct trace_builder *b)
{
	free(b->data);
	free(b->raw);
	memset(b, 0, sizeof *b);
}

struct tb_process tb_process_default(void)
{
	/* Ends in a NUL, as /proc/self/cmdline does. */
	static const char cmdline[] = "./app\0--size\0" "42";
	return (struct tb_process){
		.pid = 4242, .ppid = 1, .parent_pid_traced = 0,
		.start_realtime_ns = 1700000000000000000ull, .start_monotonic_ns = 5000000000ull,
		.page_size = 4096, .exe = "/usr/bin/app", .cmdline = cmdline,
		.cmdline_len = sizeof cmdline, .tool_version = "0.1.0",
		.stack_depth = 64, .flush_ms = 200, .follow = 0,
	};
}

void tb_header(struct trace_builder *b, const struct tb_process *proc)
{
	tb_header_version(b, WSPROF_FORMAT_MAJOR, WSPROF_FORMAT_MINOR, proc);
}

void tb_header_version(struct trace_builder *b, unsigned major, unsigned minor,
		       const struct tb_process *proc)
{
	struct tb_process def = tb_process_default();
	const struct tb_process *pr = proc ? proc : &def;

	uint8_t *recs = NULL;
	size_t rlen = 0, rcap = 0;
	struct payload pl = { 0 };
	pl_varint(&pl, pr->pid);
	pl_varint(&pl, pr->ppid);
	pl_varint(&pl, pr->start_realtime_ns);
	pl_varint(&pl, pr->start_monotonic_ns);
	pl_bytes(&pl, pr->exe, strlen(pr->exe));
	pl_bytes(&pl, pr->cmdline, pr->cmdline_len);
	pl_bytes(&pl, pr->tool_version, strlen(pr->tool_version));
	pl_varint(&pl, pr->page_size);
	pl_varint(&pl, pr->parent_pid_traced);
	if (major > 2 || (major == 2 && minor >= 4)) {
		const char *id = pr->job_id ? pr->job_id : "", *launcher = pr->launcher ? pr->launcher : "";
		pl_varint(&pl, pr->rank_plus_one);
		pl_varint(&pl, pr->job_size);
		pl_bytes(&pl, id, strlen(id));
		pl_bytes(&pl, launcher, strlen(launcher));
	}
	pl_trailer(&pl, b);
	put_record(&recs, &rlen, &rcap, WSP_REC_PROCESS, pl.p, pl.len);
	pl.len = 0;
	pl_varint(&pl, pr->stack_depth);
	pl_varint(&pl, pr->flush_ms);
	pl_varint(&pl, pr->follow);
	if (pr->access_sources || pr->access_note || pr->sample_bytes) {
		pl_varint(&pl, pr->access_sources);
		pl_varint(&pl, pr->wp_pages);
		pl_varint(&pl, pr->window_ms);
		pl_varint(&pl, pr->max_regions);
		const char *note = pr->access_note ? pr->access_note : "";
		pl_bytes(&pl, note, strlen(note));
	}
	if (pr->sample_bytes)
		pl_varint(&pl, pr->sample_bytes);
	pl_trailer(&pl, b);
	put_record(&recs, &rlen, &rcap, WSP_REC_CONFIG, pl.p, pl.len);
	free(pl.p);

	uint8_t fixed[WSP_HEADER_FIXED];
	wsp_put_le32(fixed, WSP_MAGIC_HEADER);
	wsp_put_le32(fixed + 4, (uint32_t)(WSP_HEADER_FIXED - 8 + rlen));
	memcpy(fixed + 8, WSP_SIGNATURE, WSP_SIGNATURE_LEN);
	wsp_put_le16(fixed + 16, (uint16_t)major);
	wsp_put_le16(fixed + 18, (uint16_t)minor);
	wsp_put_le32(fixed + 20, 0);
	append(b, fixed, sizeof fixed);
	append(b, recs, rlen);
	free(recs);
}

void tb_set_trailer(struct trace_builder *b, const uint64_t *fields, size_t n)
{
	uint8_t *p = b->trailer;
	for (size_t i = 0; i < n; i++) {
		if (p + 10 > b->trailer + sizeof b->trailer)
			die("trailer too long");
		p = wsp_put_varint(p, fields[i]);
	}
	b->trailer_len = (size_t)(p - b->trailer);
}

void tb_record(struct trace_builder *b, unsigned type, const uint64_t *fields, size_t n)
{
	struct payload pl = { 0 };
	for (size_t i = 0; i < n; i++)
		pl_varint(&pl, fields[i]);
	emit(b, type, &pl);
}

void tb_record_bytes(struct trace_builder *b, unsigned type, const void *payload, size_t len)
{
	put_record(&b->raw, &b->raw_len, &b->raw_cap, type, payload, len);
}

void tb_raw_bytes(struct trace_builder *b, const void *bytes, size_t len)
{
	reserve(&b->raw, &b->raw_cap, b->raw_len + len);
	memcpy(b->raw + b->raw_len, bytes, len);
	b->raw_len += len;
}

void tb_file_bytes(struct trace_builder *b, const void *bytes, size_t len)
{
	append(b, bytes, len);
}

void tb_segment(struct trace_builder *b, uint32_t tid, uint64_t seq_base, uint64_t time_base)
{
	tb_record(b, WSP_REC_SEGMENT, (const uint64_t[]){ tid, seq_base, time_base }, 3);
	b->seq = seq_base;
	b->time = time_base;
	b->addr = 0;
}

void tb_sync(struct trace_builder *b, uint64_t watermark, uint64_t time)
{
	tb_record(b, WSP_REC_SYNC, (const uint64_t[]){ watermark, time }, 2);
}

void tb_stack(struct trace_builder *b, uint64_t id, uint64_t parent, uint64_t ip)
{
	tb_record(b, WSP_REC_STACK, (const uint64_t[]){ id, parent, ip }, 3);
}

/* Start an event's payload with its seq and time deltas. */
static struct payload stamp(struct trace_builder *b, uint64_t seq, uint64_t time)
{
	struct payload pl = { 0 };
	pl_varint(&pl, seq - b->seq);
	pl_varint(&pl, time - b->time);
	b->seq = seq;
	b->time = time;
	return pl;
}

static void put_addr(struct trace_builder *b, struct payload *pl, uint64_t addr)
{
	pl_varint(pl, wsp_zigzag((int64_t)(addr - b->addr)));
	b->addr = addr;
}

void tb_ev_alloc(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		 uint64_t addr, uint64_t size, uint64_t stack)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, kind);
	pl_varint(&pl, op);
	put_addr(b, &pl, addr);
	pl_varint(&pl, size);
	pl_varint(&pl, stack);
	emit(b, WSP_REC_ALLOC, &pl);
	b->events++;
}

void tb_ev_free(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		uint64_t addr)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, kind);
	pl_varint(&pl, op);
	put_addr(b, &pl, addr);
	emit(b, WSP_REC_FREE, &pl);
	b->events++;
}

void tb_ev_move(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		uint64_t addr, uint64_t old_size)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, kind);
	pl_varint(&pl, op);
	put_addr(b, &pl, addr);
	pl_varint(&pl, old_size);
	emit(b, WSP_REC_MOVE, &pl);
	b->events++;
}

void tb_ev_fail(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		uint64_t size, uint64_t stack)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, kind);
	pl_varint(&pl, op);
	pl_varint(&pl, size);
	pl_varint(&pl, stack);
	emit(b, WSP_REC_FAIL, &pl);
	b->events++;
}

void tb_ev_unmap(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		 uint64_t addr, uint64_t length)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, kind);
	pl_varint(&pl, op);
	put_addr(b, &pl, addr);
	pl_varint(&pl, length);
	emit(b, WSP_REC_UNMAP, &pl);
	b->events++;
}

void tb_ev_module_load(struct trace_builder *b, uint64_t seq, uint64_t time, uint64_t base,
		       const char *path, const void *build_id, size_t build_id_len,
		       const struct tb_segdesc *segs, size_t nsegs)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, base);
	pl_bytes(&pl, path, strlen(path));
	pl_bytes(&pl, build_id, build_id_len);
	pl_varint(&pl, nsegs);
	for (size_t i = 0; i < nsegs; i++) {
		pl_varint(&pl, segs[i].vaddr);
		pl_varint(&pl, segs[i].memsz);
		pl_varint(&pl, segs[i].flags);
	}
	emit(b, WSP_REC_MODULE_LOAD, &pl);
}

void tb_ev_module_unload(struct trace_builder *b, uint64_t seq, uint64_t time, uint64_t base)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, base);
	emit(b, WSP_REC_MODULE_UNLOAD, &pl);
}

void tb_ev_fork(struct trace_builder *b, uint64_t seq, uint64_t time, uint64_t child_pid)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, child_pid);
	emit(b, WSP_REC_FORK, &pl);
}

void tb_ev_recording(struct trace_builder *b, uint64_t seq, uint64_t time, bool on, unsigned cause)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, on);
	pl_varint(&pl, cause);
	emit(b, WSP_REC_RECORDING, &pl);
}

void tb_ev_heap_totals(struct trace_builder *b, uint64_t seq, uint64_t time, const struct wsprof_heap_totals *h)
{
	struct payload pl = stamp(b, seq, time);
	const uint64_t f[] = { h->allocations, h->frees, h->requested, h->given, h->given_back, h->peak, h->peak_ns };
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		pl_varint(&pl, f[i]);
	emit(b, WSP_REC_HEAP_TOTALS, &pl);
}

void tb_ev_exec(struct trace_builder *b, uint64_t seq, uint64_t time, const char *path)
{
	struct payload pl = stamp(b, seq, time);
	pl_bytes(&pl, path, strlen(path));
	emit(b, WSP_REC_EXEC, &pl);
}

static void put_tag(struct payload *pl, const struct tb_cuda_tag *tag, bool handle)
{
	pl_varint(pl, (uint64_t)((int64_t)tag->device + 1));
	pl_varint(pl, tag->stream);
	if (handle)
		pl_varint(pl, tag->handle);
}

void tb_ev_cuda_alloc(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		      uint64_t addr, uint64_t size, uint64_t stack, const struct tb_cuda_tag *tag)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, kind);
	pl_varint(&pl, op);
	put_addr(b, &pl, addr);
	pl_varint(&pl, size);
	pl_varint(&pl, stack);
	put_tag(&pl, tag, true);
	emit(b, WSP_REC_ALLOC, &pl);
	b->events++;
}

void tb_ev_cuda_fail(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		     uint64_t size, uint64_t stack, const struct tb_cuda_tag *tag)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, kind);
	pl_varint(&pl, op);
	pl_varint(&pl, size);
	pl_varint(&pl, stack);
	put_tag(&pl, tag, true);
	emit(b, WSP_REC_FAIL, &pl);
	b->events++;
}

void tb_ev_cuda_free(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
		     uint64_t addr, const struct tb_cuda_tag *tag)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, kind);
	pl_varint(&pl, op);
	put_addr(b, &pl, addr);
	put_tag(&pl, tag, false);
	emit(b, WSP_REC_FREE, &pl);
	b->events++;
}

void tb_ev_stream_reached(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned kind, unsigned op,
			  uint64_t addr, uint64_t stream)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, kind);
	pl_varint(&pl, op);
	put_addr(b, &pl, addr);
	pl_varint(&pl, stream);
	emit(b, WSP_REC_STREAM_REACHED, &pl);
}

void tb_ev_annotate(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned what, uint64_t addr,
		    uint64_t size, uint64_t pool, const char *text)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, what);
	put_addr(b, &pl, addr);
	pl_varint(&pl, size);
	pl_varint(&pl, pool);
	pl_bytes(&pl, text ? text : "", text ? strlen(text) : 0);
	emit(b, WSP_REC_ANNOTATE, &pl);
}

void tb_ev_access(struct trace_builder *b, uint64_t seq, uint64_t time, unsigned source, uint64_t window_ns,
		  const struct tb_region *regions, size_t n)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, source);
	pl_varint(&pl, window_ns);
	pl_varint(&pl, n);
	uint64_t end = 0;
	for (size_t i = 0; i < n; i++) {
		/* Each start is written as its distance from the previous end. */
		if (regions[i].start < end)
			die("access regions must be sorted and apart");
		pl_varint(&pl, regions[i].start - end);
		pl_varint(&pl, regions[i].len);
		end = regions[i].start + regions[i].len;
	}
	emit(b, WSP_REC_ACCESS, &pl);
}

void tb_ev_rss(struct trace_builder *b, uint64_t seq, uint64_t time, uint64_t resident)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, resident);
	emit(b, WSP_REC_RSS, &pl);
}

void tb_ev_device_memory(struct trace_builder *b, uint64_t seq, uint64_t time, int device, uint64_t free_bytes,
			 uint64_t total_bytes)
{
	struct payload pl = stamp(b, seq, time);
	pl_varint(&pl, (uint64_t)((int64_t)device + 1));
	pl_varint(&pl, free_bytes);
	pl_varint(&pl, total_bytes);
	emit(b, WSP_REC_DEVICE_MEMORY, &pl);
}

size_t tb_chunk(struct trace_builder *b)
{
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	if (!cctx)
		die("out of memory");
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
	size_t bound = ZSTD_compressBound(b->raw_len);
	size_t at = b->len;
	reserve(&b->data, &b->cap, at + WSP_CHUNK_HEADER + bound);
	uint8_t *z = b->data + at + WSP_CHUNK_HEADER;
	size_t zlen = ZSTD_compress2(cctx, z, bound, b->raw, b->raw_len);
	ZSTD_freeCCtx(cctx);
	if (ZSTD_isError(zlen))
		die(ZSTD_getErrorName(zlen));
	uint8_t *h = b->data + at;
	wsp_put_le32(h, WSP_MAGIC_CHUNK);
	wsp_put_le32(h + 4, WSP_CHUNK_HEADER - 8);
	wsp_put_le32(h + 8, b->chunks);
	wsp_put_le32(h + 12, (uint32_t)b->raw_len);
	wsp_put_le32(h + 16, (uint32_t)zlen);
	wsp_put_le32(h + 20, 0);
	b->len = at + WSP_CHUNK_HEADER + zlen;
	b->chunks++;
	b->raw_len = 0;
	return at;
}

void tb_footer(struct trace_builder *b, uint64_t end_time)
{
	tb_footer_fields(b, end_time, b->chunks, b->events, 0);
}

void tb_footer_fields(struct trace_builder *b, uint64_t end_time, uint64_t chunks, uint64_t events,
		      uint64_t stack_nodes)
{
	struct payload pl = { 0 };
	pl_varint(&pl, end_time);
	pl_varint(&pl, chunks);
	pl_varint(&pl, events);
	pl_varint(&pl, stack_nodes);
	pl_trailer(&pl, b);
	uint8_t *rec = NULL;
	size_t rlen = 0, rcap = 0;
	put_record(&rec, &rlen, &rcap, WSP_REC_FOOTER, pl.p, pl.len);
	free(pl.p);
	uint8_t h[8];
	wsp_put_le32(h, WSP_MAGIC_FOOTER);
	wsp_put_le32(h + 4, (uint32_t)rlen);
	append(b, h, sizeof h);
	append(b, rec, rlen);
	free(rec);
}

void tb_patch_le32(struct trace_builder *b, size_t offset, uint32_t value)
{
	if (offset + 4 > b->len)
		die("patch past the end");
	wsp_put_le32(b->data + offset, value);
}

int tb_save_prefix(const struct trace_builder *b, const char *path, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, b->data + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int err = w < 0 ? -errno : -EIO;
			close(fd);
			return err;
		}
		done += (size_t)w;
	}
	return close(fd) < 0 ? -errno : 0;
}

int tb_save(const struct trace_builder *b, const char *path)
{
	return tb_save_prefix(b, path, b->len);
}

char *tb_save_temp(const struct trace_builder *b)
{
	const char *dir = getenv("TMPDIR");
	char *path;
	if (asprintf(&path, "%s/wsprof-test-XXXXXX", dir && *dir ? dir : "/tmp") < 0)
		return NULL;
	int fd = mkstemp(path);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	close(fd);
	if (tb_save(b, path) < 0) {
		unlink(path);
		free(path);
		return NULL;
	}
	return path;
}
