/*
 * timeindex.c - the index of a trace's moments (timeindex.h): built in
 * one pass, kept beside the trace, read back by mapping it.
 *
 * Checkpoints: one before the first event, one every max(SPACING_MIN,
 * SPACING_PER_LIVE x the blocks live at the last one) events, and one
 * after the last. Restoring a checkpoint costs about what its live set
 * holds, replaying to the next about SPACING_PER_LIVE times that: a moment
 * costs a bounded multiple of the memory live around it, however long the
 * trace, and the index holds at most 1/SPACING_PER_LIVE of a block per
 * event.
 */
#include "timeindex.h"

#include "checkpoint.h"
#include "format.h"
#include "grow.h"
#include "progress.h"
#include "resume.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#pragma weak wsp_syms_new
#pragma weak wsp_syms_free
#pragma weak wsp_syms_note_stack
#pragma weak wsp_syms_cache
#pragma weak wsp_syms_noted_all

#define INDEX_MAGIC "WSPINDEX"
/* Goes up with any change of the layout, the checkpoint's included. */
#define INDEX_VERSION 1
#define HEADER_SIZE 64
#define IDENT_SPAN ((size_t)64 << 10)
#define SPACING_MIN ((uint64_t)1 << 16)
static uint64_t spacing_min = SPACING_MIN; /* wsp_tindex_set_spacing */
#define SPACING_PER_LIVE 8
#define PROGRESS_EVERY 1024

struct ident {
	uint64_t size, mtime_ns, head, tail;
};

struct checkpoint {
	uint64_t last_seq;   /* the last event applied (0 with none) */
	uint64_t resume_seq; /* the first event not applied */
	uint64_t max_time;   /* the latest time of the events applied */
	uint64_t events;     /* events applied */
	uint64_t offset;     /* where a reader starts again for it */
	uint32_t chunk;
	uint64_t blob, blob_size;
};

struct wsp_tindex {
	const char *trace_path;
	struct ident id;
	char *path;                 /* where it is kept; NULL: nowhere */
	const uint8_t *base;        /* the index's bytes */
	size_t size;
	bool mapped, built;
	struct checkpoint *cp;
	size_t ncp;
	uint64_t tables, tables_size, whole_blob, whole_size;
	wsprof_trace_status status;
	struct wsp_loaded whole;
	uint8_t *tables_raw;        /* decompressed once, on the first replay */
	size_t tables_len;
};

/* ---- identity ------------------------------------------------------------ */

static uint64_t fnv(const uint8_t *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static int trace_ident(const char *path, struct ident *id)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	uint8_t *buf = malloc(IDENT_SPAN);
	int err = 0;
	if (!buf) {
		err = -ENOMEM;
	} else if (fstat(fd, &st)) {
		err = -errno;
	} else {
		id->size = (uint64_t)st.st_size;
		id->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
		size_t n = id->size < IDENT_SPAN ? (size_t)id->size : IDENT_SPAN;
		ssize_t got = pread(fd, buf, n, 0);
		id->head = fnv(buf, got > 0 ? (size_t)got : 0, 0xcbf29ce484222325ull);
		got = pread(fd, buf, n, (off_t)(id->size - n));
		id->tail = fnv(buf, got > 0 ? (size_t)got : 0, 0xcbf29ce484222325ull);
	}
	free(buf);
	close(fd);
	return err;
}

/* Where the index of trace_path is kept: beside it, else in the user's
 * cache directory, named after the trace's whole path; NULL when nowhere
 * (WSPROF_INDEX=0, no cache directory). */
static char *index_path(const char *trace_path)
{
	const char *off = getenv("WSPROF_INDEX");
	if (off && !strcmp(off, "0"))
		return NULL;
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", trace_path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(dir, sizeof dir, ".");
	char path[2 * PATH_MAX + 64];
	if (access(dir, W_OK) == 0) {
		snprintf(path, sizeof path, "%s.index", trace_path);
		return strdup(path);
	}
	char real[PATH_MAX], base[PATH_MAX];
	const char *home = getenv("HOME"), *xdg = getenv("XDG_CACHE_HOME");
	if (!realpath(trace_path, real) || ((!xdg || !*xdg) && !home))
		return NULL;
	if (xdg && *xdg) {
		snprintf(base, sizeof base, "%s/wsprof", xdg);
	} else {
		snprintf(base, sizeof base, "%s/.cache", home);
		mkdir(base, 0700);
		size_t n = strlen(base);
		snprintf(base + n, sizeof base - n, "/wsprof");
	}
	mkdir(base, 0700);
	const char *name = strrchr(real, '/');
	snprintf(path, sizeof path, "%s/%s.%016llx.index", base, name ? name + 1 : real,
		 (unsigned long long)fnv((const uint8_t *)real, strlen(real), 0xcbf29ce484222325ull));
	return strdup(path);
}

/* ---- the layout ---------------------------------------------------------- */

static void put_le64(uint8_t *p, uint64_t v)
{
	wsp_put_le32(p, (uint32_t)v);
	wsp_put_le32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t get_le64(const uint8_t *p)
{
	return wsp_get_le32(p) | (uint64_t)wsp_get_le32(p + 4) << 32;
}

/* Bytes compressed as one zstd frame onto the end of file. */
static int put_blob(ZSTD_CCtx *z, struct wsp_bytes *file, const struct wsp_bytes *raw, uint64_t *at, uint64_t *size)
{
	size_t bound = ZSTD_compressBound(raw->n);
	if (raw->err || wsp_grow(&file->p, &file->cap, file->n + bound, 1))
		return -ENOMEM;
	size_t n = ZSTD_compress2(z, file->p + file->n, bound, raw->p, raw->n);
	if (ZSTD_isError(n))
		return -ENOMEM;
	*at = file->n;
	*size = n;
	file->n += n;
	return 0;
}

/* A blob of the index decompressed, malloc'd. @return NULL if damaged. */
static uint8_t *get_blob(const struct wsp_tindex *ix, uint64_t at, uint64_t size, size_t *len)
{
	if (at > ix->size || size > ix->size - at)
		return NULL;
	unsigned long long raw = ZSTD_getFrameContentSize(ix->base + at, size);
	if (raw == ZSTD_CONTENTSIZE_ERROR || raw == ZSTD_CONTENTSIZE_UNKNOWN || raw > ((uint64_t)1 << 40))
		return NULL;
	uint8_t *p = malloc(raw ? (size_t)raw : 1);
	if (!p)
		return NULL;
	size_t n = ZSTD_decompress(p, (size_t)raw, ix->base + at, size);
	if (ZSTD_isError(n) || n != raw) {
		free(p);
		return NULL;
	}
	*len = n;
	return p;
}

static const uint64_t *status_fields(const wsprof_trace_status *s, uint64_t v[12])
{
	const uint64_t f[12] = { (uint64_t)s->complete, (uint64_t)s->ended_by_exec, (uint64_t)(int64_t)s->error,
				 s->chunks, s->events, s->end_time_ns, s->threads, s->untraced_calls,
				 (uint64_t)s->ending, (uint64_t)(int64_t)s->ending_value, (uint64_t)s->finished_by_launcher, 0 };
	memcpy(v, f, sizeof f);
	return v;
}

/* ---- building -------------------------------------------------------------- */

struct builder {
	wsprof_trace *t;
	struct wsp_model *m;
	ZSTD_CCtx *z;
	struct wsp_bytes file, raw;
	struct checkpoint *cp;
	size_t ncp, cpcap;
};

static int put_module(void *arg, uint64_t base, const char *path, const uint8_t *build_id, size_t build_id_len,
		      size_t nsegs, const uint64_t (*segs)[2])
{
	struct wsp_bytes *o = arg;
	wsp_bytes_varint(o, base);
	wsp_bytes_string(o, path);
	wsp_bytes_varint(o, build_id_len);
	wsp_bytes_put(o, build_id, build_id_len);
	wsp_bytes_varint(o, nsegs);
	for (size_t i = 0; i < nsegs; i++) {
		wsp_bytes_varint(o, segs[i][0]);
		wsp_bytes_varint(o, segs[i][1]);
	}
	return o->err;
}

/* The model's books and the modules loaded now, as checkpoint `c`. */
static int checkpoint(struct builder *b, const struct checkpoint *c)
{
	if (wsp_grow(&b->cp, &b->cpcap, b->ncp + 1, sizeof *b->cp))
		return -ENOMEM;
	b->raw.n = 0;
	struct wsp_bytes mods = { 0 };
	wsp_trace_each_module(b->t, put_module, &mods);
	/* The modules first, as a length and bytes: the model's books end the blob. */
	wsp_bytes_varint(&b->raw, mods.n);
	wsp_bytes_put(&b->raw, mods.p, mods.n);
	int err = mods.err;
	wsp_bytes_free(&mods);
	if (err || (err = wsp_model_save(b->m, false, &b->raw)) < 0)
		return err;
	struct checkpoint *at = &b->cp[b->ncp++];
	*at = *c;
	return put_blob(b->z, &b->file, &b->raw, &at->blob, &at->blob_size);
}

/* Items of a table, counted. */
struct table {
	struct wsp_bytes b;
	uint64_t n;
};

static int put_node(void *arg, uint64_t id, uint64_t parent, uint64_t ip)
{
	struct table *o = arg;
	o->n++;
	wsp_bytes_varint(&o->b, id);
	wsp_bytes_varint(&o->b, parent);
	wsp_bytes_varint(&o->b, ip);
	return o->b.err;
}

static int put_pycode(void *arg, uint64_t id, const wsprof_pycode *c)
{
	struct table *t = arg;
	struct wsp_bytes *o = &t->b;
	t->n++;
	wsp_bytes_varint(o, id);
	wsp_bytes_varint(o, c->firstlineno);
	wsp_bytes_string(o, c->qualname);
	wsp_bytes_string(o, c->filename);
	wsp_bytes_varint(o, c->linetable_len);
	wsp_bytes_put(o, c->linetable, c->linetable_len);
	return o->err;
}

/* The tables a reader started in the middle lacks: the stack tree, the
 * Python code objects and the interpreter. */
static int put_tables(struct builder *b, uint64_t *at, uint64_t *size)
{
	struct table nodes = { 0 }, codes = { 0 };
	wsp_trace_each_stack_node(b->t, put_node, &nodes);
	wsp_trace_each_pycode(b->t, put_pycode, &codes);
	b->raw.n = 0;
	wsp_bytes_varint(&b->raw, nodes.n);
	wsp_bytes_put(&b->raw, nodes.b.p, nodes.b.n);
	wsp_bytes_varint(&b->raw, codes.n);
	wsp_bytes_put(&b->raw, codes.b.p, codes.b.n);
	const wsprof_python *py = wsprof_trace_python(b->t);
	wsp_bytes_varint(&b->raw, py && py->seen);
	if (py && py->seen) {
		wsp_bytes_varint(&b->raw, py->version);
		wsp_bytes_varint(&b->raw, (uint64_t)py->frames);
		wsp_bytes_varint(&b->raw, py->objects);
		wsp_bytes_string(&b->raw, py->path);
		wsp_bytes_string(&b->raw, py->note);
	}
	int err = nodes.b.err ? nodes.b.err : codes.b.err;
	wsp_bytes_free(&nodes.b);
	wsp_bytes_free(&codes.b);
	return err ? err : put_blob(b->z, &b->file, &b->raw, at, size);
}

static void put_directory(struct wsp_bytes *o, const struct builder *b, const wsprof_trace_status *st,
			  uint64_t tables, uint64_t tables_size, uint64_t whole, uint64_t whole_size)
{
	uint64_t v[12];
	status_fields(st, v);
	wsp_bytes_varint(o, 12);
	for (size_t i = 0; i < 12; i++)
		wsp_bytes_varint(o, v[i]);
	wsp_bytes_varint(o, tables);
	wsp_bytes_varint(o, tables_size);
	wsp_bytes_varint(o, whole);
	wsp_bytes_varint(o, whole_size);
	wsp_bytes_varint(o, b->ncp);
	for (size_t i = 0; i < b->ncp; i++) {
		const struct checkpoint *c = &b->cp[i];
		const uint64_t f[] = { c->last_seq, c->resume_seq, c->max_time, c->events, c->offset, c->chunk, c->blob,
				       c->blob_size };
		for (size_t j = 0; j < sizeof f / sizeof *f; j++)
			wsp_bytes_varint(o, f[j]);
	}
}

/* One pass over the trace at path into the bytes of its index. Prints a
 * one-line error and returns 1 when nothing can be read. */
static int build(const char *path, const struct ident *id, struct wsp_bytes *out)
{
	struct builder b = { 0 };
	int err = wsprof_trace_open(path, &b.t);
	if (err < 0) {
		fprintf(stderr, "wsprof: %s: %s\n", path, wsprof_strerror(err));
		return 1;
	}
	const wsprof_process *proc = wsprof_trace_process(b.t);
	b.m = wsp_model_new(&(struct wsp_model_options){ .totals_only = true, .sample_bytes = proc->sample_bytes,
							  .child = proc->parent_traced_pid != 0 });
	b.z = ZSTD_createCCtx();
	/* Each blob's checksum: a damaged index is found and built again. */
	if (b.z)
		ZSTD_CCtx_setParameter(b.z, ZSTD_c_checksumFlag, 1);
	if (!b.m || !b.z || wsp_grow(&b.file.p, &b.file.cap, HEADER_SIZE, 1)) {
		err = -ENOMEM;
		goto out;
	}
	memset(b.file.p, 0, HEADER_SIZE);
	b.file.n = HEADER_SIZE;

	unsigned columns;
	FILE *tty = wsp_progress_tty(&columns);
	const char *name = strrchr(path, '/');
	char label[256];
	snprintf(label, sizeof label, "indexing %s", name ? name + 1 : path);
	struct wsp_progress bar;
	wsp_progress_start(&bar, tty, columns, label, tty ? wsp_progress_now() : 0);

	struct checkpoint c = { 0 };
	uint64_t next = spacing_min;
	wsprof_event ev;
	err = checkpoint(&b, &c);
	while (err >= 0 && (err = wsprof_trace_next(b.t, &ev)) > 0) {
		if (tty && c.events % PROGRESS_EVERY == 0) {
			uint64_t done, total;
			wsprof_trace_position(b.t, &done, &total);
			wsp_progress_update(&bar, wsp_progress_now(), done, total);
		}
		/* Between two events of different numbers: a reader started at
		 * this number gives exactly the events not applied yet. */
		if (c.events >= next && ev.seq > c.last_seq) {
			c.resume_seq = ev.seq;
			if ((err = checkpoint(&b, &c)) < 0)
				break;
			uint64_t live = wsp_model_live_count(b.m) * SPACING_PER_LIVE;
			next = c.events + (live > spacing_min ? live : spacing_min);
		}
		if ((err = wsp_model_apply(b.m, b.t, &ev)) < 0)
			break;
		c.last_seq = ev.seq;
		c.max_time = ev.time_ns > c.max_time ? ev.time_ns : c.max_time;
		c.events++;
	}
	wsp_progress_end(&bar);
	if (err < 0)
		goto out;
	c.resume_seq = c.last_seq + 1;
	if ((err = checkpoint(&b, &c)) < 0)
		goto out;

	/* Where a reader starts again for each, now that every chunk is known. */
	const struct wsp_chunk_place *places;
	size_t nplaces = wsp_trace_chunk_places(b.t, &places);
	for (size_t i = 0; i < b.ncp; i++)
		b.cp[i].offset = wsp_chunk_places_resume_offset(places, nplaces, b.cp[i].resume_seq, &b.cp[i].chunk);

	uint64_t tables, tables_size, whole, whole_size;
	if ((err = put_tables(&b, &tables, &tables_size)) < 0 || (err = wsp_model_finish(b.m)) < 0)
		goto out;
	b.raw.n = 0;
	if ((err = wsp_model_save(b.m, true, &b.raw)) < 0 || (err = put_blob(b.z, &b.file, &b.raw, &whole, &whole_size)))
		goto out;
	wsprof_trace_status st;
	wsprof_trace_get_status(b.t, &st);
	b.raw.n = 0;
	put_directory(&b.raw, &b, &st, tables, tables_size, whole, whole_size);
	uint64_t dir, dir_size;
	if ((err = put_blob(b.z, &b.file, &b.raw, &dir, &dir_size)) < 0)
		goto out;
	memcpy(b.file.p, INDEX_MAGIC, 8);
	wsp_put_le32(b.file.p + 8, INDEX_VERSION);
	wsp_put_le32(b.file.p + 12, 0);
	put_le64(b.file.p + 16, id->size);
	put_le64(b.file.p + 24, id->mtime_ns);
	put_le64(b.file.p + 32, id->head);
	put_le64(b.file.p + 40, id->tail);
	put_le64(b.file.p + 48, dir);
	put_le64(b.file.p + 56, dir_size);
out:
	wsp_model_free(b.m);
	ZSTD_freeCCtx(b.z);
	wsp_bytes_free(&b.raw);
	free(b.cp);
	wsprof_trace_close(b.t);
	if (err < 0) {
		wsp_bytes_free(&b.file);
		fprintf(stderr, "wsprof: %s: %s while indexing\n", path, wsprof_strerror(err));
		return 1;
	}
	*out = b.file;
	return 0;
}

/* The bytes at path, written whole or not at all. @return 0 or -errno. */
static int write_whole(const char *path, const uint8_t *p, size_t n)
{
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(fd, p + done, n - done);
		if (w <= 0) {
			int err = w < 0 ? -errno : -EIO;
			close(fd);
			unlink(tmp);
			return err;
		}
		done += (size_t)w;
	}
	if (close(fd) || rename(tmp, path)) {
		int err = -errno;
		unlink(tmp);
		return err;
	}
	return 0;
}

/* ---- reading --------------------------------------------------------------- */

/* The directory of the index in ix->base, if it is this version's and of
 * the trace id names. @return 0, or -EINVAL (stale, damaged) or -ENOMEM. */
static int parse(struct wsp_tindex *ix, const struct ident *id)
{
	const uint8_t *h = ix->base;
	if (ix->size < HEADER_SIZE || memcmp(h, INDEX_MAGIC, 8) || wsp_get_le32(h + 8) != INDEX_VERSION ||
	    get_le64(h + 16) != id->size || get_le64(h + 24) != id->mtime_ns || get_le64(h + 32) != id->head ||
	    get_le64(h + 40) != id->tail)
		return -EINVAL;
	size_t len;
	uint8_t *dir = get_blob(ix, get_le64(h + 48), get_le64(h + 56), &len);
	if (!dir)
		return -EINVAL;
	struct wsp_cursor c = { dir, dir + len, false };
	uint64_t v[12] = { 0 };
	uint64_t nv = wsp_get_varint(&c);
	for (uint64_t i = 0; i < nv && !c.bad; i++) {
		uint64_t x = wsp_get_varint(&c);
		if (i < 12)
			v[i] = x;
	}
	ix->status = (wsprof_trace_status){ .complete = (int)v[0], .ended_by_exec = (int)v[1], .error = (int)(int64_t)v[2],
					     .chunks = v[3], .events = v[4], .end_time_ns = v[5], .threads = v[6],
					     .untraced_calls = v[7], .ending = (int)v[8], .ending_value = (int)(int64_t)v[9],
					     .finished_by_launcher = (int)v[10] };
	ix->tables = wsp_get_varint(&c);
	ix->tables_size = wsp_get_varint(&c);
	ix->whole_blob = wsp_get_varint(&c);
	ix->whole_size = wsp_get_varint(&c);
	uint64_t n = wsp_get_varint(&c);
	int err = 0;
	if (c.bad || !n || n > len / 8) {
		err = -EINVAL;
	} else if (!(ix->cp = calloc((size_t)n, sizeof *ix->cp))) {
		err = -ENOMEM;
	} else {
		ix->ncp = (size_t)n;
		for (size_t i = 0; i < ix->ncp; i++) {
			struct checkpoint *cp = &ix->cp[i];
			cp->last_seq = wsp_get_varint(&c);
			cp->resume_seq = wsp_get_varint(&c);
			cp->max_time = wsp_get_varint(&c);
			cp->events = wsp_get_varint(&c);
			cp->offset = wsp_get_varint(&c);
			cp->chunk = (uint32_t)wsp_get_varint(&c);
			cp->blob = wsp_get_varint(&c);
			cp->blob_size = wsp_get_varint(&c);
			if (cp->blob > ix->size || cp->blob_size > ix->size - cp->blob)
				c.bad = true;
		}
		if (c.bad)
			err = -EINVAL;
	}
	free(dir);
	return err;
}

/* The index at path mapped, if it is the trace's. @return 0 or -errno. */
static int map_index(struct wsp_tindex *ix, const char *path, const struct ident *id)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) || st.st_size < HEADER_SIZE) {
		close(fd);
		return -EINVAL;
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	ix->base = p;
	ix->size = (size_t)st.st_size;
	ix->mapped = true;
	int err = parse(ix, id);
	if (err) {
		munmap(p, ix->size);
		ix->base = NULL;
		ix->size = 0;
		ix->mapped = false;
		free(ix->cp);
		ix->cp = NULL;
		ix->ncp = 0;
	}
	return err;
}

static void warn_status(const char *path, const wsprof_trace_status *s)
{
	if (s->error == WSPROF_E_TRUNCATED)
		fprintf(stderr, "wsprof: warning: %s is truncated (no footer: the program was killed or is still running); "
			"this report covers the %llu events of its %llu complete chunks\n",
			path, (unsigned long long)s->events, (unsigned long long)s->chunks);
	else if (s->error)
		fprintf(stderr, "wsprof: warning: %s: %s after %llu chunks; this report covers what came before\n", path,
			wsprof_strerror(s->error), (unsigned long long)s->chunks);
}

/* The whole trace's figures: the finished model saved last. */
static int open_whole(struct wsp_tindex *ix)
{
	ix->whole = (struct wsp_loaded){ .path = ix->trace_path, .status = ix->status };
	int err = wsprof_trace_open(ix->trace_path, &ix->whole.trace);
	if (err < 0)
		return err;
	size_t len;
	uint8_t *raw = get_blob(ix, ix->whole_blob, ix->whole_size, &len);
	if (!raw)
		return -EINVAL;
	const wsprof_process *proc = wsprof_trace_process(ix->whole.trace);
	struct wsp_model_options o = { .sample_bytes = proc->sample_bytes, .child = proc->parent_traced_pid != 0 };
	ix->whole.model = wsp_model_restore(&o, raw, len, &err);
	free(raw);
	return ix->whole.model ? 0 : err;
}

/* Drop what ix holds of an index (not the trace's path, id or where it is kept). */
static void forget(struct wsp_tindex *ix)
{
	if (ix->mapped)
		munmap((void *)ix->base, ix->size);
	else
		free((void *)ix->base);
	ix->base = NULL;
	ix->size = 0;
	ix->mapped = ix->built = false;
	free(ix->cp);
	ix->cp = NULL;
	ix->ncp = 0;
	free(ix->tables_raw);
	ix->tables_raw = NULL;
	wsp_loaded_free(&ix->whole);
}

/* Build the index, and keep it where it is kept. @return 0 or 1 after a one-line error. */
static int build_kept(struct wsp_tindex *ix)
{
	struct wsp_bytes file;
	if (build(ix->trace_path, &ix->id, &file))
		return 1;
	ix->base = file.p;
	ix->size = file.n;
	ix->built = true;
	int err = parse(ix, &ix->id);
	if (!err)
		err = open_whole(ix);
	if (err < 0) {
		fprintf(stderr, "wsprof: %s: %s while indexing\n", ix->trace_path, wsprof_strerror(err));
		return 1;
	}
	/* Kept for the next report; where it cannot be, this one still has it. */
	if (ix->path && write_whole(ix->path, file.p, file.n)) {
		free(ix->path);
		ix->path = NULL;
	}
	return 0;
}

int wsp_tindex_open(const char *path, struct wsp_tindex **out)
{
	struct wsp_tindex *ix = calloc(1, sizeof *ix);
	if (!ix) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	ix->trace_path = path;
	int err = trace_ident(path, &ix->id);
	if (err < 0) {
		fprintf(stderr, "wsprof: %s: %s\n", path, wsprof_strerror(err));
		free(ix);
		return 1;
	}
	ix->path = index_path(path);
	if (!ix->path || map_index(ix, ix->path, &ix->id) || open_whole(ix)) {
		forget(ix);
		if (build_kept(ix)) {
			wsp_tindex_close(ix);
			return 1;
		}
	}
	warn_status(path, &ix->status);
	*out = ix;
	return 0;
}

void wsp_tindex_close(struct wsp_tindex *ix)
{
	if (!ix)
		return;
	forget(ix);
	free(ix->path);
	free(ix);
}

void wsp_tindex_set_spacing(uint64_t events)
{
	spacing_min = events ? events : SPACING_MIN;
}

void wsp_tindex_info(const struct wsp_tindex *ix, struct wsp_tindex_info *info)
{
	*info = (struct wsp_tindex_info){ ix->built, ix->path, ix->size, ix->ncp };
}

const struct wsp_loaded *wsp_tindex_whole(const struct wsp_tindex *ix)
{
	return &ix->whole;
}

/* ---- a moment -------------------------------------------------------------- */

/* A count of items of at least min_bytes each: no more than the bytes left. */
static size_t get_count_of(struct wsp_cursor *c, size_t min_bytes)
{
	uint64_t n = wsp_get_varint(c);
	if (c->bad || n > (uint64_t)(c->end - c->p) / min_bytes) {
		c->bad = true;
		return 0;
	}
	return (size_t)n;
}

/* The tables into a reader started at a checkpoint. @return 0 or -errno. */
static int seed_tables(struct wsp_tindex *ix, wsprof_trace *t)
{
	if (!ix->tables_raw && !(ix->tables_raw = get_blob(ix, ix->tables, ix->tables_size, &ix->tables_len)))
		return -EINVAL;
	struct wsp_cursor c = { ix->tables_raw, ix->tables_raw + ix->tables_len, false };
	int err = 0;
	size_t nn = get_count_of(&c, 3);
	for (size_t i = 0; i < nn && !err && !c.bad; i++) {
		uint64_t id = wsp_get_varint(&c), parent = wsp_get_varint(&c), ip = wsp_get_varint(&c);
		err = wsp_trace_seed_stack(t, id, parent, ip);
	}
	size_t nc = get_count_of(&c, 5);
	for (size_t i = 0; i < nc && !err && !c.bad; i++) {
		wsprof_pycode code = { 0 };
		size_t ql, fl;
		uint64_t id = wsp_get_varint(&c);
		code.firstlineno = (unsigned)wsp_get_varint(&c);
		const uint8_t *q = wsp_get_bytes(&c, &ql), *f = wsp_get_bytes(&c, &fl);
		code.linetable = wsp_get_bytes(&c, &code.linetable_len);
		if (c.bad)
			break;
		char *qs = strndup((const char *)q, ql), *fs = strndup((const char *)f, fl);
		err = qs && fs ? wsp_trace_seed_pycode(t, id, code.firstlineno, qs, fs, code.linetable, code.linetable_len) : -ENOMEM;
		free(qs);
		free(fs);
	}
	if (!err && !c.bad && wsp_get_varint(&c)) {
		wsprof_python py = { .seen = 1 };
		size_t pl, nl;
		py.version = (uint32_t)wsp_get_varint(&c);
		py.frames = (int)wsp_get_varint(&c);
		py.objects = (unsigned)wsp_get_varint(&c);
		const uint8_t *p = wsp_get_bytes(&c, &pl), *n = wsp_get_bytes(&c, &nl);
		if (!c.bad) {
			char *ps = strndup((const char *)p, pl), *ns = strndup((const char *)n, nl);
			py.path = ps;
			py.note = ns;
			err = ps && ns ? wsp_trace_seed_python(t, &py) : -ENOMEM;
			free(ps);
			free(ns);
		}
	}
	return err ? err : c.bad ? -EINVAL : 0;
}

/* The modules of a checkpoint's blob into t; *c is left at the model's books. */
static int seed_modules(wsprof_trace *t, struct wsp_cursor *c)
{
	size_t len;
	const uint8_t *mods = wsp_get_bytes(c, &len);
	if (!mods)
		return -EINVAL;
	struct wsp_cursor m = { mods, mods + len, false };
	int err = 0;
	while (!err && !m.bad && m.p < m.end) {
		uint64_t base = wsp_get_varint(&m);
		size_t pl, bl;
		const uint8_t *path = wsp_get_bytes(&m, &pl), *bid = wsp_get_bytes(&m, &bl);
		size_t nsegs = get_count_of(&m, 2);
		uint64_t(*segs)[2] = nsegs ? calloc(nsegs, sizeof *segs) : NULL;
		if (nsegs && !segs)
			return -ENOMEM;
		for (size_t i = 0; i < nsegs; i++) {
			segs[i][0] = wsp_get_varint(&m);
			segs[i][1] = wsp_get_varint(&m);
		}
		char *ps = m.bad ? NULL : strndup((const char *)path, pl);
		if (ps)
			err = wsp_trace_seed_module(t, base, ps, bid, bl, nsegs, (const uint64_t(*)[2])segs);
		else if (!m.bad)
			err = -ENOMEM;
		free(ps);
		free(segs);
	}
	return err ? err : m.bad ? -EINVAL : 0;
}

struct noting {
	struct wsp_loaded *l;
	int err;
};

static void note_block(const struct wsp_block *b, void *arg)
{
	struct noting *n = arg;
	if (!n->err && b->stack)
		n->err = wsp_syms_note_stack(n->l->syms, n->l->trace, b->stack);
}

/* The last checkpoint a replay from the start would pass through before
 * stopping. */
static const struct checkpoint *nearest(const struct wsp_tindex *ix, uint64_t stop_seq, uint64_t stop_time_ns)
{
	const struct checkpoint *best = &ix->cp[0];
	for (size_t i = 1; i < ix->ncp; i++) {
		const struct checkpoint *c = &ix->cp[i];
		if (c->last_seq > stop_seq || c->max_time > stop_time_ns)
			break;
		best = c;
	}
	return best;
}

static int replay(struct wsp_tindex *ix, uint64_t stop_seq, uint64_t stop_time_ns, bool symbols,
		  struct wsp_loaded *out)
{
	const struct checkpoint *cp = nearest(ix, stop_seq, stop_time_ns);
	struct wsp_resume r = { cp->offset, cp->chunk, cp->resume_seq };
	int err = wsp_trace_open_at(ix->trace_path, &r, &out->trace);
	if (err < 0)
		return err;
	if ((err = seed_tables(ix, out->trace)) < 0)
		return err;
	size_t len;
	uint8_t *raw = get_blob(ix, cp->blob, cp->blob_size, &len);
	if (!raw)
		return -EINVAL;
	struct wsp_cursor c = { raw, raw + len, false };
	if ((err = seed_modules(out->trace, &c)) < 0) {
		free(raw);
		return err;
	}
	const wsprof_process *proc = wsprof_trace_process(out->trace);
	struct wsp_model_options o = { .sample_bytes = proc->sample_bytes, .child = proc->parent_traced_pid != 0 };
	out->model = wsp_model_restore(&o, c.p, (size_t)(c.end - c.p), &err);
	free(raw);
	if (!out->model)
		return err;
	if (symbols && wsp_syms_new) {
		if (!(out->syms = wsp_syms_new(stderr, wsp_load_stacks())))
			return -ENOMEM;
		wsp_syms_cache(out->syms, ix->trace_path);
		struct noting n = { out, 0 };
		wsp_model_each_live(out->model, note_block, &n);
		if (n.err)
			return n.err;
	}
	if (cp->last_seq <= stop_seq || !cp->last_seq) {
		wsprof_event ev;
		while ((err = wsprof_trace_next(out->trace, &ev)) > 0) {
			if (ev.seq > stop_seq || ev.time_ns > stop_time_ns)
				break;
			if ((err = wsp_loaded_apply(out, &ev)) < 0)
				return err;
		}
		if (err < 0)
			return err;
	}
	if (out->syms)
		wsp_syms_noted_all(out->syms);
	return wsp_model_finish(out->model);
}

int wsp_tindex_replay(struct wsp_tindex *ix, uint64_t stop_seq, uint64_t stop_time_ns, bool symbols,
		      struct wsp_loaded *out)
{
	*out = (struct wsp_loaded){ .path = ix->trace_path, .status = ix->status };
	int err = replay(ix, stop_seq, stop_time_ns, symbols, out);
	if (err == -EINVAL && !ix->built) {
		/* A kept index damaged since it was written: built again, once. */
		wsp_loaded_free(out);
		forget(ix);
		if (build_kept(ix))
			return 1;
		*out = (struct wsp_loaded){ .path = ix->trace_path, .status = ix->status };
		err = replay(ix, stop_seq, stop_time_ns, symbols, out);
	}
	if (err < 0) {
		wsp_loaded_free(out);
		fprintf(stderr, "wsprof: %s: %s while replaying it from its index (remove %s to build it again)\n",
			ix->trace_path, wsprof_strerror(err), ix->path ? ix->path : "the index");
		return 1;
	}
	return 0;
}
