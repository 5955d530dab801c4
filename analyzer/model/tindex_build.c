/*
 * tindex_build.c - the index of a trace's moments written (timeindex.h):
 * as a follower of a load (the full report's one pass, whose model it
 * checkpoints), or in a pass of its own with a state model (a report that
 * asks for a moment of a trace not indexed yet).
 *
 * Checkpoints: one before the first event, one every max(spacing,
 * SPACING_PER_LIVE x the blocks live at the last one) events, and one
 * after the last (of the finished model). Restoring a checkpoint costs
 * about what its live set holds, replaying to the next about
 * SPACING_PER_LIVE times that: a moment costs a bounded multiple of the
 * memory live around it however long the trace, and the index holds at
 * most 1/SPACING_PER_LIVE of a block per event. A checkpoint is taken
 * after an event of number S and a reader started for it hands out the
 * events from S + 1 on (src/resume.h): sequence numbers are unique.
 */
#include "tindex_internal.h"

#include "grow.h"
#include "kept.h"
#include "progress.h"
#include "resume.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define SPACING_MIN ((uint64_t)1 << 16)
#define SPACING_PER_LIVE 8
#define PROGRESS_EVERY 1024

uint64_t tindex_spacing_min = SPACING_MIN;

void wsp_tindex_set_spacing(uint64_t events)
{
	tindex_spacing_min = events ? events : SPACING_MIN;
}

/* ---- the trace's identity and where the index is kept ---------------------- */

uint64_t tindex_hash(const uint8_t *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

int tindex_ident_of(const char *path, struct tindex_ident *id)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	uint8_t *buf = malloc(INDEX_IDENT_SPAN);
	int err = 0;
	if (!buf) {
		err = -ENOMEM;
	} else if (fstat(fd, &st)) {
		err = -errno;
	} else {
		id->size = (uint64_t)st.st_size;
		id->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
		size_t n = id->size < INDEX_IDENT_SPAN ? (size_t)id->size : INDEX_IDENT_SPAN;
		ssize_t got = pread(fd, buf, n, 0);
		id->head = tindex_hash(buf, got > 0 ? (size_t)got : 0, TINDEX_HASH_SEED);
		got = pread(fd, buf, n, (off_t)(id->size - n));
		id->tail = tindex_hash(buf, got > 0 ? (size_t)got : 0, TINDEX_HASH_SEED);
	}
	free(buf);
	close(fd);
	return err;
}

char *tindex_path(const char *trace_path)
{
	const char *off = getenv("WSPROF_INDEX");
	return off && !strcmp(off, "0") ? NULL : wsp_kept_path(trace_path, "index");
}

int tindex_write(const char *path, const uint8_t *p, size_t n)
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

void tindex_status_fields(const wsprof_trace_status *s, uint64_t v[INDEX_STATUS_FIELDS])
{
	const uint64_t f[INDEX_STATUS_FIELDS] = { (uint64_t)s->complete, (uint64_t)s->ended_by_exec,
						  (uint64_t)(int64_t)s->error, s->chunks, s->events, s->end_time_ns,
						  s->threads, s->untraced_calls, (uint64_t)s->ending,
						  (uint64_t)(int64_t)s->ending_value, (uint64_t)s->finished_by_launcher, 0 };
	memcpy(v, f, sizeof f);
}

void tindex_status_from(wsprof_trace_status *s, const uint64_t v[INDEX_STATUS_FIELDS])
{
	*s = (wsprof_trace_status){ .complete = (int)v[0], .ended_by_exec = (int)v[1], .error = (int)(int64_t)v[2],
				    .chunks = v[3], .events = v[4], .end_time_ns = v[5], .threads = v[6],
				    .untraced_calls = v[7], .ending = (int)v[8], .ending_value = (int)(int64_t)v[9],
				    .finished_by_launcher = (int)v[10] };
}

/* ---- the builder ------------------------------------------------------------- */

struct wsp_tindex_build {
	const char *path;
	struct tindex_ident id;
	const struct wsp_loaded *l; /* the load followed; NULL: t and m are the builder's own pass */
	wsprof_trace *t;
	struct wsp_model *m;
	ZSTD_CCtx *z;
	struct wsp_bytes file, raw;
	struct tindex_checkpoint *cp;
	size_t ncp, cpcap;
	struct tindex_checkpoint c; /* the one being made: what has been applied */
	uint64_t next;              /* events applied at the next checkpoint */
	struct wsp_tindex *done;
};

/* Bytes compressed as one zstd frame with its checksum onto the end of file. */
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

/* The books of m and the modules loaded now (none: before the first
 * event, none is), as the checkpoint b->c. */
static int checkpoint(struct wsp_tindex_build *b, const struct wsp_model *m, bool modules)
{
	if (wsp_grow(&b->cp, &b->cpcap, b->ncp + 1, sizeof *b->cp))
		return -ENOMEM;
	b->raw.n = 0;
	struct wsp_bytes mods = { 0 };
	if (modules)
		wsp_trace_each_module(b->t, put_module, &mods);
	/* The modules first, as a length and bytes: the model's books end the blob. */
	wsp_bytes_varint(&b->raw, mods.n);
	wsp_bytes_put(&b->raw, mods.p, mods.n);
	int err = mods.err;
	wsp_bytes_free(&mods);
	if (err || (err = wsp_model_save(m, false, &b->raw)) < 0)
		return err;
	struct tindex_checkpoint *at = &b->cp[b->ncp++];
	*at = b->c;
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
static int put_tables(struct wsp_tindex_build *b, uint64_t *at, uint64_t *size)
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

static void put_directory(struct wsp_bytes *o, const struct wsp_tindex_build *b, const wsprof_trace_status *st,
			  uint64_t tables, uint64_t tables_size, uint64_t whole, uint64_t whole_size)
{
	uint64_t v[INDEX_STATUS_FIELDS];
	tindex_status_fields(st, v);
	wsp_bytes_varint(o, INDEX_STATUS_FIELDS);
	for (size_t i = 0; i < INDEX_STATUS_FIELDS; i++)
		wsp_bytes_varint(o, v[i]);
	wsp_bytes_varint(o, tables);
	wsp_bytes_varint(o, tables_size);
	wsp_bytes_varint(o, whole);
	wsp_bytes_varint(o, whole_size);
	wsp_bytes_varint(o, b->ncp);
	for (size_t i = 0; i < b->ncp; i++) {
		const struct tindex_checkpoint *c = &b->cp[i];
		const uint64_t f[] = { c->last_seq, c->resume_seq, c->max_time, c->events, c->offset, c->chunk, c->blob,
				       c->blob_size };
		for (size_t j = 0; j < sizeof f / sizeof *f; j++)
			wsp_bytes_varint(o, f[j]);
	}
}

static void builder_free(struct wsp_tindex_build *b)
{
	ZSTD_freeCCtx(b->z);
	wsp_bytes_free(&b->raw);
	wsp_bytes_free(&b->file);
	free(b->cp);
	free(b);
}

/* The builder's start, once t is open: its first checkpoint, an empty
 * model of the trace's options (nothing has happened before the first
 * event). @return 0 or -ENOMEM (what it made is freed with b). */
static int builder_begin(struct wsp_tindex_build *b, wsprof_trace *t)
{
	b->t = t;
	b->next = tindex_spacing_min;
	b->z = ZSTD_createCCtx();
	const wsprof_process *proc = wsprof_trace_process(t);
	struct wsp_model *empty = wsp_model_new(&(struct wsp_model_options){
		.totals_only = true, .sample_bytes = proc->sample_bytes, .child = proc->parent_traced_pid != 0 });
	/* Each blob's checksum: a damaged index is found and built again. */
	int err = -ENOMEM;
	if (b->z && empty && !ZSTD_isError(ZSTD_CCtx_setParameter(b->z, ZSTD_c_checksumFlag, 1)) &&
	    !wsp_grow(&b->file.p, &b->file.cap, INDEX_HEADER_SIZE, 1)) {
		memset(b->file.p, 0, INDEX_HEADER_SIZE);
		b->file.n = INDEX_HEADER_SIZE;
		err = checkpoint(b, empty, false);
	}
	wsp_model_free(empty);
	return err;
}

/* A builder of the trace at path (id its identity), not begun. */
static struct wsp_tindex_build *builder_new(const char *path, const struct tindex_ident *id)
{
	struct wsp_tindex_build *b = calloc(1, sizeof *b);
	if (b) {
		b->path = path;
		b->id = *id;
	}
	return b;
}

/* After m applied ev. */
static int builder_event(struct wsp_tindex_build *b, const struct wsp_model *m, const wsprof_event *ev)
{
	b->c.last_seq = ev->seq;
	b->c.max_time = ev->time_ns > b->c.max_time ? ev->time_ns : b->c.max_time;
	if (++b->c.events < b->next)
		return 0;
	b->c.resume_seq = ev->seq + 1;
	int err = checkpoint(b, m, true);
	uint64_t live = wsp_model_live_count(m) * SPACING_PER_LIVE;
	b->next = b->c.events + (live > tindex_spacing_min ? live : tindex_spacing_min);
	return err;
}

/* After the last event, m finished: the last checkpoint, where each one
 * starts again, the tables, the whole trace's books and the directory. */
static int builder_end(struct wsp_tindex_build *b, const struct wsp_model *m)
{
	int err = 0;
	if (b->c.events != b->cp[b->ncp - 1].events) {
		b->c.resume_seq = b->c.last_seq + 1;
		if ((err = checkpoint(b, m, true)) < 0)
			return err;
	}
	const struct wsp_chunk_place *places;
	size_t nplaces = wsp_trace_chunk_places(b->t, &places);
	for (size_t i = 0; i < b->ncp; i++)
		b->cp[i].offset = wsp_chunk_places_resume_offset(places, nplaces, b->cp[i].resume_seq, &b->cp[i].chunk);
	uint64_t tables, tables_size, whole, whole_size;
	if ((err = put_tables(b, &tables, &tables_size)) < 0)
		return err;
	b->raw.n = 0;
	if ((err = wsp_model_save(m, true, &b->raw)) < 0 || (err = put_blob(b->z, &b->file, &b->raw, &whole, &whole_size)))
		return err;
	wsprof_trace_status st;
	wsprof_trace_get_status(b->t, &st);
	b->raw.n = 0;
	put_directory(&b->raw, b, &st, tables, tables_size, whole, whole_size);
	uint64_t dir, dir_size;
	if ((err = put_blob(b->z, &b->file, &b->raw, &dir, &dir_size)) < 0)
		return err;
	uint8_t *h = b->file.p;
	memcpy(h, INDEX_MAGIC, 8);
	wsp_put_le32(h + 8, INDEX_VERSION);
	wsp_put_le32(h + 12, 0);
	tindex_put_le64(h + 16, b->id.size);
	tindex_put_le64(h + 24, b->id.mtime_ns);
	tindex_put_le64(h + 32, b->id.head);
	tindex_put_le64(h + 40, b->id.tail);
	tindex_put_le64(h + 48, dir);
	tindex_put_le64(h + 56, dir_size);
	return 0;
}

/* ---- a pass of its own ------------------------------------------------------- */

int tindex_build(const char *path, const struct tindex_ident *id, struct wsp_bytes *out)
{
	wsprof_trace *t;
	int err = wsprof_trace_open(path, &t);
	if (err < 0) {
		fprintf(stderr, "wsprof: %s: %s\n", path, wsprof_strerror(err));
		return 1;
	}
	const wsprof_process *proc = wsprof_trace_process(t);
	struct wsp_model *m = wsp_model_new(&(struct wsp_model_options){
		.totals_only = true, .sample_bytes = proc->sample_bytes, .child = proc->parent_traced_pid != 0 });
	struct wsp_tindex_build *b = m ? builder_new(path, id) : NULL;
	if (!b || (err = builder_begin(b, t)) < 0) {
		err = -ENOMEM;
		goto out;
	}
	unsigned columns;
	FILE *tty = wsp_progress_tty(&columns);
	const char *name = strrchr(path, '/');
	char label[256];
	snprintf(label, sizeof label, "indexing %s", name ? name + 1 : path);
	struct wsp_progress bar;
	wsp_progress_start(&bar, tty, columns, label, tty ? wsp_progress_now() : 0);
	wsprof_event ev;
	while ((err = wsprof_trace_next(t, &ev)) > 0) {
		if (tty && b->c.events % PROGRESS_EVERY == 0) {
			uint64_t done, total;
			wsprof_trace_position(t, &done, &total);
			wsp_progress_update(&bar, wsp_progress_now(), done, total);
		}
		if ((err = wsp_model_apply(m, t, &ev)) < 0 || (err = builder_event(b, m, &ev)) < 0)
			break;
	}
	wsp_progress_end(&bar);
	if (err >= 0 && (err = wsp_model_finish(m)) >= 0)
		err = builder_end(b, m);
out:
	wsp_model_free(m);
	wsprof_trace_close(t);
	if (err < 0) {
		if (b)
			builder_free(b);
		fprintf(stderr, "wsprof: %s: %s while indexing\n", path, wsprof_strerror(err));
		return 1;
	}
	*out = b->file;
	b->file = (struct wsp_bytes){ 0 };
	builder_free(b);
	return 0;
}

/* ---- following a load -------------------------------------------------------- */

struct wsp_tindex_build *wsp_tindex_build_new(const char *path, const struct wsp_loaded *l)
{
	struct tindex_ident id;
	if (tindex_ident_of(path, &id) < 0)
		return NULL;
	/* The load's reader is opened inside it: the builder begins at its
	 * first event, or at its end for a trace without any. */
	struct wsp_tindex_build *b = builder_new(path, &id);
	if (b)
		b->l = l;
	return b;
}

static int follow_event(void *arg, wsprof_trace *t, const wsprof_event *ev)
{
	struct wsp_tindex_build *b = arg;
	int err = b->t ? 0 : builder_begin(b, t);
	return err < 0 ? err : builder_event(b, b->l->model, ev);
}

static int follow_end(void *arg, wsprof_trace *t)
{
	struct wsp_tindex_build *b = arg;
	int err = b->t ? 0 : builder_begin(b, t);
	return err < 0 ? err : builder_end(b, b->l->model);
}

struct wsp_follower wsp_tindex_build_follower(struct wsp_tindex_build *b)
{
	return (struct wsp_follower){ follow_event, follow_end, b };
}

int wsp_tindex_build_end(struct wsp_tindex_build *b, struct wsp_tindex **out)
{
	int rc = b->z ? tindex_adopt(b->path, &b->id, &b->file, out) : 1;
	builder_free(b);
	return rc;
}

void wsp_tindex_build_free(struct wsp_tindex_build *b)
{
	if (b)
		builder_free(b);
}
