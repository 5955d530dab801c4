/*
 * timeindex.c - the index of a trace's moments read (timeindex.h): found
 * beside the trace and mapped, checked against the trace, built when it
 * is not the trace's (tindex_build.c writes it), and a moment replayed
 * from the checkpoint nearest before it.
 */
#include "tindex_internal.h"

#include "check.h"
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

struct wsp_tindex {
	const char *trace_path;
	struct tindex_ident id;
	char *path;                 /* where it is kept; NULL: nowhere */
	const uint8_t *base;        /* the index's bytes */
	size_t size;
	bool mapped, built;
	struct tindex_checkpoint *cp;
	size_t ncp;
	uint64_t tables, tables_size, whole_blob, whole_size;
	wsprof_trace_status status;
	struct wsp_loaded whole;
	uint8_t *tables_raw;        /* decompressed once, on the first replay */
	size_t tables_len;
};

/* ---- reading --------------------------------------------------------------- */

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

/* The directory of the index in ix->base, if it is this version's and of
 * the trace id names. @return 0, or -EINVAL (stale, damaged) or -ENOMEM. */
static int parse(struct wsp_tindex *ix, const struct tindex_ident *id)
{
	const uint8_t *h = ix->base;
	if (ix->size < INDEX_HEADER_SIZE || memcmp(h, INDEX_MAGIC, 8) || wsp_get_le32(h + 8) != INDEX_VERSION ||
	    tindex_get_le64(h + 16) != id->size || tindex_get_le64(h + 24) != id->mtime_ns || tindex_get_le64(h + 32) != id->head ||
	    tindex_get_le64(h + 40) != id->tail)
		return -EINVAL;
	size_t len;
	uint8_t *dir = get_blob(ix, tindex_get_le64(h + 48), tindex_get_le64(h + 56), &len);
	if (!dir)
		return -EINVAL;
	struct wsp_cursor c = { dir, dir + len, false };
	uint64_t v[INDEX_STATUS_FIELDS] = { 0 };
	uint64_t nv = wsp_get_varint(&c);
	for (uint64_t i = 0; i < nv && !c.bad; i++) {
		uint64_t x = wsp_get_varint(&c);
		if (i < INDEX_STATUS_FIELDS)
			v[i] = x;
	}
	tindex_status_from(&ix->status, v);
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
			struct tindex_checkpoint *cp = &ix->cp[i];
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
static int map_index(struct wsp_tindex *ix, const char *path, const struct tindex_ident *id)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) || st.st_size < INDEX_HEADER_SIZE) {
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

/* Drop what ix holds of an index (not the trace's path, id, where it is
 * kept, nor the whole trace's figures, which a rebuilt index has alike). */
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
}

/* The bytes of an index just built (taken: *file is emptied) as ix's, kept
 * where it is kept. @return 0 or 1 after a one-line error. */
static int adopt(struct wsp_tindex *ix, struct wsp_bytes *file)
{
	ix->base = file->p;
	ix->size = file->n;
	ix->built = true;
	*file = (struct wsp_bytes){ 0 };
	int err = parse(ix, &ix->id);
	if (err < 0) {
		fprintf(stderr, "wsprof: %s: %s while indexing\n", ix->trace_path, wsprof_strerror(err));
		return 1;
	}
	/* Kept for the next report; where it cannot be, this one still has it. */
	if (ix->path && tindex_write(ix->path, ix->base, ix->size)) {
		free(ix->path);
		ix->path = NULL;
	}
	return 0;
}

/* Build the index in a pass of its own, and keep it. @return 0 or 1 after a one-line error. */
static int build_kept(struct wsp_tindex *ix)
{
	struct wsp_bytes file;
	return tindex_build(ix->trace_path, &ix->id, &file) ? 1 : adopt(ix, &file);
}

int tindex_adopt(const char *path, const struct tindex_ident *id, struct wsp_bytes *file, struct wsp_tindex **out)
{
	struct wsp_tindex *ix = calloc(1, sizeof *ix);
	if (!ix) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	ix->trace_path = path;
	ix->id = *id;
	ix->path = tindex_path(path);
	if (adopt(ix, file)) {
		wsp_tindex_close(ix);
		return 1;
	}
	*out = ix;
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
	int err = tindex_ident_of(path, &ix->id);
	if (err < 0) {
		fprintf(stderr, "wsprof: %s: %s\n", path, wsprof_strerror(err));
		free(ix);
		return 1;
	}
	/* The whole trace's figures are where the moments are: an index
	 * whose own do not read is built again. */
	ix->path = tindex_path(path);
	if (!ix->path || map_index(ix, ix->path, &ix->id) || open_whole(ix)) {
		forget(ix);
		wsp_loaded_free(&ix->whole);
		if (build_kept(ix) || (err = open_whole(ix)) < 0) {
			if (err < 0)
				fprintf(stderr, "wsprof: %s: %s while indexing\n", path, wsprof_strerror(err));
			wsp_tindex_close(ix);
			return 1;
		}
	}
	wsp_load_warn(path, &ix->status);
	*out = ix;
	return 0;
}

void wsp_tindex_close(struct wsp_tindex *ix)
{
	if (!ix)
		return;
	forget(ix);
	wsp_loaded_free(&ix->whole);
	free(ix->path);
	free(ix);
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

/* The tables into a reader started at a checkpoint. @return 0 or -errno. */
static int seed_tables(struct wsp_tindex *ix, wsprof_trace *t)
{
	if (!ix->tables_raw && !(ix->tables_raw = get_blob(ix, ix->tables, ix->tables_size, &ix->tables_len)))
		return -EINVAL;
	struct wsp_cursor c = { ix->tables_raw, ix->tables_raw + ix->tables_len, false };
	int err = 0;
	size_t nn = wsp_cursor_count(&c, 3);
	for (size_t i = 0; i < nn && !err && !c.bad; i++) {
		uint64_t id = wsp_get_varint(&c), parent = wsp_get_varint(&c), ip = wsp_get_varint(&c);
		err = wsp_trace_seed_stack(t, id, parent, ip);
	}
	size_t nc = wsp_cursor_count(&c, 5);
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
		size_t nsegs = wsp_cursor_count(&m, 2);
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
static const struct tindex_checkpoint *nearest(const struct wsp_tindex *ix, uint64_t stop_seq, uint64_t stop_time_ns)
{
	const struct tindex_checkpoint *best = &ix->cp[0];
	for (size_t i = 1; i < ix->ncp; i++) {
		const struct tindex_checkpoint *c = &ix->cp[i];
		if (c->last_seq > stop_seq || c->max_time > stop_time_ns)
			break;
		best = c;
	}
	return best;
}

static int replay(struct wsp_tindex *ix, uint64_t stop_seq, uint64_t stop_time_ns, bool symbols,
		  struct wsp_syms *borrow, struct wsp_loaded *out)
{
	const struct tindex_checkpoint *cp = nearest(ix, stop_seq, stop_time_ns);
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
	if (borrow) {
		out->syms = borrow; /* every stack of the trace is noted in it */
	} else if (symbols && wsp_syms_new) {
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
	if (out->syms && !borrow)
		wsp_syms_noted_all(out->syms);
	return wsp_model_finish(out->model);
}

static int replay_once(struct wsp_tindex *ix, uint64_t stop_seq, uint64_t stop_time_ns, bool symbols,
		       struct wsp_syms *borrow, struct wsp_loaded *out)
{
	*out = (struct wsp_loaded){ .path = ix->trace_path, .status = ix->status };
	int err = replay(ix, stop_seq, stop_time_ns, symbols, borrow, out);
	if (err == -EINVAL && !ix->built) {
		/* A kept index damaged since it was written: built again, once. */
		if (borrow)
			out->syms = NULL;
		wsp_loaded_free(out);
		forget(ix);
		if (build_kept(ix))
			return 1;
		*out = (struct wsp_loaded){ .path = ix->trace_path, .status = ix->status };
		err = replay(ix, stop_seq, stop_time_ns, symbols, borrow, out);
	}
	if (err < 0) {
		if (borrow)
			out->syms = NULL;
		wsp_loaded_free(out);
		fprintf(stderr, "wsprof: %s: %s while replaying it from its index (remove %s to build it again)\n",
			ix->trace_path, wsprof_strerror(err), ix->path ? ix->path : "the index");
		return 1;
	}
	return 0;
}

/* The checked build's proof that the index agrees with a replay from the
 * start: the same figures and the same number of live blocks. */
static void count_live(const struct wsp_block *b, void *arg)
{
	(void)b;
	++*(size_t *)arg;
}

static void check_against_replay(struct wsp_tindex *ix, uint64_t stop_seq, uint64_t stop_time_ns,
				 const struct wsp_model *got)
{
	struct wsp_loaded a;
	if (wsp_load_until(ix->trace_path, &(struct wsp_model_options){ .totals_only = true }, false, stop_seq,
			   stop_time_ns, &a))
		return;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		const struct wsp_kind_stats *x = wsp_model_kind(a.model, k), *y = wsp_model_kind(got, k);
		WSP_ASSERT_MSG(x->live_bytes == y->live_bytes && x->live_blocks == y->live_blocks &&
				       x->collectable_bytes == y->collectable_bytes && x->peak_bytes == y->peak_bytes &&
				       x->allocations == y->allocations && x->frees == y->frees,
			       "%s, kind %u at seq %llu, %llu ns: a replay has %llu bytes live, the index %llu",
			       ix->trace_path, k, (unsigned long long)stop_seq, (unsigned long long)stop_time_ns,
			       (unsigned long long)x->live_bytes, (unsigned long long)y->live_bytes);
	}
	size_t na = 0, nb = 0;
	wsp_model_each_live(a.model, count_live, &na);
	wsp_model_each_live(got, count_live, &nb);
	WSP_ASSERT_MSG(na == nb, "%s: a replay has %zu blocks live, the index %zu", ix->trace_path, na, nb);
	wsp_loaded_free(&a);
}

int wsp_tindex_replay(struct wsp_tindex *ix, uint64_t stop_seq, uint64_t stop_time_ns, bool symbols,
		      struct wsp_loaded *out)
{
	int rc = replay_once(ix, stop_seq, stop_time_ns, symbols, NULL, out);
	if (WSP_CHECKED && !rc)
		check_against_replay(ix, stop_seq, stop_time_ns, out->model);
	return rc;
}

int wsp_tindex_replay_named(struct wsp_tindex *ix, uint64_t stop_seq, uint64_t stop_time_ns, struct wsp_syms *syms,
			    struct wsp_loaded *out)
{
	int rc = replay_once(ix, stop_seq, stop_time_ns, syms != NULL, syms, out);
	if (WSP_CHECKED && !rc)
		check_against_replay(ix, stop_seq, stop_time_ns, out->model);
	return rc;
}

int wsp_tindex_find(const char *path, struct wsp_tindex **out)
{
	struct wsp_tindex *ix = calloc(1, sizeof *ix);
	if (!ix)
		return -ENOMEM;
	ix->trace_path = path;
	int err = tindex_ident_of(path, &ix->id);
	if (!err && !(ix->path = tindex_path(path)))
		err = -ENOENT;
	/* Not the whole trace's figures: whoever finds it has loaded them. */
	if (!err && (err = map_index(ix, ix->path, &ix->id)))
		err = err == -EINVAL ? -ENOENT : err;
	if (err) {
		wsp_tindex_close(ix);
		return err;
	}
	*out = ix;
	return 0;
}

int wsp_load_indexed(const char *path, const struct wsp_model_options *opt, bool symbols, const struct wsp_follower *f,
		     size_t nf, struct wsp_loaded *out, struct wsp_tindex **ix)
{
	*ix = NULL;
	if (wsp_tindex_find(path, ix) == 0)
		return wsp_load_following(path, opt, symbols, f, nf, out);
	struct wsp_tindex_build *b = opt && opt->callers ? NULL : wsp_tindex_build_new(path, out);
	struct wsp_follower *all = calloc(nf + 1, sizeof *all);
	if (!all) {
		wsp_tindex_build_free(b);
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	if (nf)
		memcpy(all, f, nf * sizeof *f);
	if (b)
		all[nf] = wsp_tindex_build_follower(b);
	int rc = wsp_load_following(path, opt, symbols, all, nf + (b != NULL), out);
	free(all);
	if (rc) {
		wsp_tindex_build_free(b);
		return rc;
	}
	/* No index of this load (a --caller filter): one of its own. */
	rc = b ? wsp_tindex_build_end(b, ix) : wsp_tindex_open(path, ix);
	if (rc)
		wsp_loaded_free(out);
	return rc;
}
