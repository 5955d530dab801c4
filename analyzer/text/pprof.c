/*
 * pprof.c - `wsprof export --pprof` (pprof.h): one kind's memory as a
 * profile.proto, gzipped, for `go tool pprof`, gperftools' and jeprof's
 * pprof, Grafana Pyroscope.
 *
 * One sample per call stack of the kind, its values in the order of Go's
 * heap profiles:
 *   alloc_objects/count, alloc_space/bytes  what the stack allocated over
 *        the whole trace (the model's per-stack figures);
 *   inuse_objects/count, inuse_space/bytes  what of it was live at the
 *        moment chosen: the blocks of a replay up to it (state.c), by stack;
 * so that inuse_space adds up to the summary's peak_bytes at the peak and
 * to its leaked_bytes at the end, alloc_space to total_bytes and
 * alloc_objects to allocations. default_sample_type is inuse_space. A
 * sampled trace's heap figures are the model's estimates (a comment says
 * so; period is the trace's sample_bytes), every other figure is exact
 * (period 1). Comments name the program, the trace and the moment.
 *
 * Locations: one per machine address. A stack's logical frames (symbols.h,
 * in the view --stacks chose) come innermost first, each inlined one
 * before the frame it was inlined into: such a run is one Location with a
 * Line each, innermost first, as pprof wants. Its address is the return
 * address less one (inside the call, where its names were looked up), its
 * Mapping its module's (path, build-id, the span of its loadable segments;
 * the first of them holds the ELF header, so file offset 0). A frame
 * without a name is a Location with its address alone (pprof shows module
 * and address); a Python frame one of its own, without mapping or address,
 * with one Line at its function and line.
 *
 * The encoder is what profile.proto needs of protobuf's wire format:
 * varints, length-delimited messages, packed repeated integers (field
 * numbers from github.com/google/pprof, proto/profile.proto). zlib writes
 * it gzipped, as profile.proto files are on disk.
 */
#include "pprof.h"
#include "text.h"

#include "config.h"
#include "format.h"
#include "grow.h"
#include "state.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- protobuf's wire format -------------------------------------------- */

enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12, PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};
enum { VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2 };
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2 };
enum {
	MAPPING_ID = 1, MAPPING_MEMORY_START = 2, MAPPING_MEMORY_LIMIT = 3, MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7, MAPPING_HAS_FILENAMES = 8, MAPPING_HAS_LINE_NUMBERS = 9, MAPPING_HAS_INLINE_FRAMES = 10,
};
enum { LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4 };
enum { LINE_FUNCTION_ID = 1, LINE_LINE = 2 };
enum { FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4 };
enum { WIRE_VARINT = 0, WIRE_BYTES = 2 };

/* Bytes being encoded; without memory it stops growing and says so. */
struct pb {
	uint8_t *p;
	size_t n, cap;
	bool oom;
};

static void pb_put(struct pb *b, const void *p, size_t n)
{
	if (b->oom || wsp_grow(&b->p, &b->cap, b->n + n, 1)) {
		b->oom = true;
		return;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

/* Protobuf's varints are the trace format's (format.h). */
static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t buf[10];
	pb_put(b, buf, (size_t)(wsp_put_varint(buf, v) - buf));
}

/* An integer field; 0, proto3's default, is left out. */
static void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_varint(b, (uint64_t)field << 3 | WIRE_VARINT);
	pb_varint(b, v);
}

static void pb_bytes(struct pb *b, unsigned field, const void *p, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | WIRE_BYTES);
	pb_varint(b, n);
	pb_put(b, p, n);
}

/* A message built in sub, as a field of b; sub is emptied for the next. */
static void pb_message(struct pb *b, unsigned field, struct pb *sub)
{
	b->oom |= sub->oom;
	pb_bytes(b, field, sub->p, sub->n);
	sub->n = 0;
}

/* A repeated integer field, packed (proto3's way). */
static void pb_packed(struct pb *b, unsigned field, const uint64_t *v, size_t n)
{
	if (!n)
		return;
	size_t len = 0;
	uint8_t buf[10];
	for (size_t i = 0; i < n; i++)
		len += (size_t)(wsp_put_varint(buf, v[i]) - buf);
	pb_varint(b, (uint64_t)field << 3 | WIRE_BYTES);
	pb_varint(b, len);
	for (size_t i = 0; i < n; i++)
		pb_varint(b, v[i]);
}

/* ---- what is written once, by key ------------------------------------- */

/* A string (s), a function (a, b: the strings of its name and file) or a
 * location (a: its module, frames and whether it is Python's; b: its offset). */
struct key {
	uint64_t a, b;
	const char *s; /* the dict's own copy, or NULL */
};

/* Keys by their ids, 1 up, in the order they came. */
struct dict {
	struct key *v;
	size_t n, cap;
	uint32_t *index; /* id, 0: empty slot */
	size_t index_cap;
	bool oom;
};

static size_t key_hash(const struct key *k)
{
	uint64_t h = k->a * 0x9e3779b97f4a7c15ull ^ k->b * 0xbf58476d1ce4e5b9ull;
	for (const char *c = k->s; c && *c; c++)
		h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
	return (size_t)(h ^ h >> 31);
}

static size_t item_hash(size_t i, void *ctx)
{
	return key_hash(&((const struct dict *)ctx)->v[i]);
}

static bool key_eq(const struct key *x, const struct key *y)
{
	return x->a == y->a && x->b == y->b && (x->s == y->s || (x->s && y->s && !strcmp(x->s, y->s)));
}

/* The id of k, given one if new (*fresh then). @return 0 without memory. */
static uint64_t dict_id(struct dict *d, struct key k, bool *fresh)
{
	*fresh = false;
	if (!d->oom && (d->n >= UINT32_MAX - 1 ||
			wsp_index_fit(&d->index, &d->index_cap, d->n + 1, 256, 0, d->n, item_hash, NULL, d)))
		d->oom = true;
	if (d->oom)
		return 0;
	size_t j = key_hash(&k) & (d->index_cap - 1);
	for (; d->index[j]; j = (j + 1) & (d->index_cap - 1))
		if (key_eq(&d->v[d->index[j] - 1], &k))
			return d->index[j];
	if (wsp_grow(&d->v, &d->cap, d->n + 1, sizeof *d->v) || (k.s && !(k.s = strdup(k.s)))) {
		d->oom = true;
		return 0;
	}
	d->v[d->n] = k;
	d->index[j] = (uint32_t)++d->n;
	*fresh = true;
	return d->n;
}

static void dict_free(struct dict *d)
{
	for (size_t i = 0; i < d->n; i++)
		free((char *)d->v[i].s);
	free(d->v);
	free(d->index);
}

/* ---- the profile ------------------------------------------------------- */

/* A stack's figures: one sample. */
struct row {
	uint64_t stack;
	uint64_t values[4]; /* as the sample types: alloc_objects, alloc_space, inuse_objects, inuse_space */
};

/* A module's mapping, and what its locations were named with. */
struct mapping {
	uint32_t module_id;
	bool named, lined; /* every location has function names; and files and lines */
};

struct builder {
	const struct wsp_pprof *src;
	struct wsp_syms *syms;
	struct dict strings, functions, locations;
	struct pb head, samples, mappings, locations_pb, functions_pb, strings_pb;
	struct pb sample_msg, location_msg, line_msg, function_msg, mapping_msg; /* one being built */
	struct mapping *maps;
	size_t nmaps, maps_cap;
	uint32_t *mapping_of; /* module id -> mapping id, 0: none yet */
	size_t mapping_of_cap;
	uint64_t *ids;        /* a sample's locations */
	size_t ids_cap;
	bool oom;
};

/* A string's place in the string table: "" (and NULL) is the first, 0. */
static uint64_t str(struct builder *b, const char *s)
{
	bool fresh;
	uint64_t id = dict_id(&b->strings, (struct key){ .s = s ? s : "" }, &fresh);
	return id ? id - 1 : 0;
}

static uint64_t mapping_id(struct builder *b, uint32_t module_id)
{
	if (!module_id)
		return 0;
	size_t old = b->mapping_of_cap;
	if (wsp_grow(&b->mapping_of, &b->mapping_of_cap, (size_t)module_id + 1, sizeof *b->mapping_of)) {
		b->oom = true;
		return 0;
	}
	memset(b->mapping_of + old, 0, (b->mapping_of_cap - old) * sizeof *b->mapping_of);
	if (!b->mapping_of[module_id]) {
		if (wsp_grow(&b->maps, &b->maps_cap, b->nmaps + 1, sizeof *b->maps)) {
			b->oom = true;
			return 0;
		}
		b->maps[b->nmaps] = (struct mapping){ module_id, true, true };
		b->mapping_of[module_id] = (uint32_t)++b->nmaps;
	}
	return b->mapping_of[module_id];
}

static uint64_t function_id(struct builder *b, const struct wsp_frame *f)
{
	uint64_t name = str(b, f->function), file = str(b, f->file);
	bool fresh;
	uint64_t id = dict_id(&b->functions, (struct key){ name << 1 | f->python, file, NULL }, &fresh);
	if (fresh) {
		struct pb *m = &b->function_msg;
		pb_uint(m, FUNCTION_ID, id);
		pb_uint(m, FUNCTION_NAME, name);
		/* The symbols keep a native function's demangled name alone: the
		 * system's too, which pprof shortens as it does C++ names it
		 * demangles (-symbolize=demangle=full keeps them whole). A
		 * Python name has none, so that pprof takes it as it is: as a C++
		 * name "<module>" would be shortened to nothing. */
		pb_uint(m, FUNCTION_SYSTEM_NAME, f->python ? 0 : name);
		pb_uint(m, FUNCTION_FILENAME, file);
		pb_message(&b->functions_pb, PROFILE_FUNCTION, m);
	}
	return id;
}

/* The address pprof gets: the return address less one, in the call. */
static uint64_t frame_address(const struct builder *b, const struct wsp_frame *f)
{
	struct wsp_module mod;
	uint64_t ip = wsp_syms_module(b->syms, f->module_id, &mod) ? mod.base + f->offset : f->offset;
	return ip ? ip - 1 : 0;
}

/* The Location of one machine address: its n frames from f, the inlined
 * ones and the one they were inlined into. @return its id (0: no memory). */
static uint64_t location_id(struct builder *b, const struct wsp_frame *f, size_t n)
{
	bool fresh;
	uint64_t a = (uint64_t)f->module_id | (uint64_t)n << 32 | (uint64_t)f->python << 63;
	uint64_t id = dict_id(&b->locations, (struct key){ a, f->offset, NULL }, &fresh);
	if (!fresh)
		return id;
	uint64_t mapping = f->python ? 0 : mapping_id(b, f->module_id);
	struct pb *loc = &b->location_msg;
	pb_uint(loc, LOCATION_ID, id);
	pb_uint(loc, LOCATION_MAPPING_ID, mapping);
	if (!f->python)
		pb_uint(loc, LOCATION_ADDRESS, frame_address(b, f));
	bool named = true, lined = true;
	for (size_t i = 0; i < n; i++) {
		named &= f[i].function != NULL;
		lined &= f[i].file && f[i].line;
		if (!f[i].function)
			continue;
		pb_uint(&b->line_msg, LINE_FUNCTION_ID, function_id(b, &f[i]));
		pb_uint(&b->line_msg, LINE_LINE, f[i].line);
		pb_message(loc, LOCATION_LINE, &b->line_msg);
	}
	if (mapping) {
		b->maps[mapping - 1].named &= named;
		b->maps[mapping - 1].lined &= lined;
	}
	pb_message(&b->locations_pb, PROFILE_LOCATION, loc);
	return id;
}

/* Where the machine address whose first frame is f[i] ends: after the
 * first frame not inlined into the next one (a frame of a damaged debug
 * info, inlined into nothing, ends where the next has another address). */
static size_t address_end(const struct wsp_frame *f, size_t n, size_t i)
{
	while (i + 1 < n && f[i].inlined && !f[i].python && !f[i + 1].python && f[i + 1].module_id == f[i].module_id &&
	       f[i + 1].offset == f[i].offset)
		i++;
	return i + 1;
}

static void sample(struct builder *b, const struct row *r)
{
	const struct wsp_frame *f;
	size_t nf = wsp_syms_stack(b->syms, b->src->whole.trace, r->stack, &f), n = 0;
	for (size_t i = 0, end; i < nf; i = end) {
		end = address_end(f, nf, i);
		if (wsp_grow(&b->ids, &b->ids_cap, n + 1, sizeof *b->ids)) {
			b->oom = true;
			return;
		}
		b->ids[n++] = location_id(b, f + i, end - i);
	}
	pb_packed(&b->sample_msg, SAMPLE_LOCATION_ID, b->ids, n);
	pb_packed(&b->sample_msg, SAMPLE_VALUE, r->values, 4);
	pb_message(&b->samples, PROFILE_SAMPLE, &b->sample_msg);
}

/* The mappings, the main program's first (pprof takes mapping[0] for it). */
static void mappings(struct builder *b)
{
	const char *exe = wsprof_trace_process(b->src->whole.trace)->exe;
	for (int main_first = 1; main_first >= 0; main_first--) {
		for (size_t i = 0; i < b->nmaps; i++) {
			const struct mapping *m = &b->maps[i];
			struct wsp_module mod;
			if (!wsp_syms_module(b->syms, m->module_id, &mod) || (strcmp(mod.path, exe) == 0) != (main_first == 1))
				continue;
			struct pb *msg = &b->mapping_msg;
			pb_uint(msg, MAPPING_ID, i + 1);
			pb_uint(msg, MAPPING_MEMORY_START, mod.start);
			pb_uint(msg, MAPPING_MEMORY_LIMIT, mod.end);
			pb_uint(msg, MAPPING_FILENAME, str(b, mod.path));
			pb_uint(msg, MAPPING_BUILD_ID, str(b, mod.build_id));
			pb_uint(msg, MAPPING_HAS_FUNCTIONS, m->named);
			pb_uint(msg, MAPPING_HAS_FILENAMES, m->named && m->lined);
			pb_uint(msg, MAPPING_HAS_LINE_NUMBERS, m->named && m->lined);
			pb_uint(msg, MAPPING_HAS_INLINE_FRAMES, m->named && m->lined); /* read from the DWARF scopes */
			pb_message(&b->mappings, PROFILE_MAPPING, msg);
		}
	}
}

/* ---- the figures, by stack --------------------------------------------- */

struct rows {
	struct row *v;
	size_t n, cap;
	unsigned kind;
	bool oom;
};

static struct row *row_add(struct rows *r, uint64_t stack)
{
	if (wsp_grow(&r->v, &r->cap, r->n + 1, sizeof *r->v)) {
		r->oom = true;
		return NULL;
	}
	r->v[r->n] = (struct row){ .stack = stack };
	return &r->v[r->n++];
}

static void site_row(const struct wsp_site_stats *s, void *arg)
{
	struct rows *r = arg;
	struct row *row = s->kind == r->kind && s->allocations ? row_add(r, s->stack) : NULL;
	if (row) {
		row->values[0] = s->allocations;
		row->values[1] = s->bytes;
	}
}

/* A live block of the kind: the mapping it is a piece of (a range), or itself. */
struct live {
	uint64_t stack, key, count, bytes;
};

struct lives {
	struct live *v;
	size_t n, cap;
	unsigned kind;
	const struct wsp_model *m;
	bool oom;
};

static void live_block(const struct wsp_block *b, void *arg)
{
	struct lives *l = arg;
	if (b->excluded || b->kind != l->kind)
		return;
	if (wsp_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
		l->oom = true;
		return;
	}
	l->v[l->n++] = (struct live){ b->stack, wsp_kind_is_range(b->kind) ? b->origin : b->addr,
				      wsp_model_block_count(l->m, b), wsp_model_block_bytes(l->m, b) };
}

static int by_stack_then_key(const void *a, const void *b)
{
	const struct live *x = a, *y = b;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int by_stack(const void *a, const void *b)
{
	uint64_t x = ((const struct row *)a)->stack, y = ((const struct row *)b)->stack;
	return x < y ? -1 : x > y;
}

/* What each stack holds at the moment, into its row (one made if none):
 * a mapping cut in pieces counts once. @return 0 or -ENOMEM. */
static int inuse_rows(const struct wsp_pprof *p, struct rows *r)
{
	struct lives l = { .kind = p->kind, .m = p->state.l.model };
	wsp_model_each_live(p->state.l.model, live_block, &l);
	if (l.n)
		qsort(l.v, l.n, sizeof *l.v, by_stack_then_key);
	if (r->n)
		qsort(r->v, r->n, sizeof *r->v, by_stack);
	size_t sites = r->n;
	for (size_t i = 0; i < l.n && !l.oom && !r->oom;) {
		struct row probe = { .stack = l.v[i].stack };
		struct row *row = sites ? bsearch(&probe, r->v, sites, sizeof *r->v, by_stack) : NULL;
		row = row ? row : row_add(r, l.v[i].stack);
		for (size_t first = i; row && i < l.n && l.v[i].stack == probe.stack; i++) {
			row->values[2] += i == first || l.v[i].key != l.v[i - 1].key ? l.v[i].count : 0;
			row->values[3] += l.v[i].bytes;
		}
	}
	free(l.v);
	return l.oom || r->oom ? -ENOMEM : 0;
}

/* ---- the document ------------------------------------------------------ */

static void value_type(struct builder *b, struct pb *m, unsigned field, const char *type, const char *unit)
{
	struct pb vt = { 0 };
	pb_uint(&vt, VALUE_TYPE_TYPE, str(b, type));
	pb_uint(&vt, VALUE_TYPE_UNIT, str(b, unit));
	pb_message(m, field, &vt);
	free(vt.p);
}

/* What pprof shows with -comments: which trace, program and moment. */
static void comments(struct builder *b)
{
	const struct wsp_pprof *p = b->src;
	const wsprof_process *proc = wsprof_trace_process(p->whole.trace);
	const char *kind = wsprof_kind_name(p->kind);
	char text[4352], sampled[128];
	uint64_t ids[6];
	size_t n = 0;
	snprintf(text, sizeof text, "trace: %s%s", p->whole.path,
		 p->whole.status.complete ? "" : " (cut short: this covers what was read)");
	ids[n++] = str(b, text);
	snprintf(text, sizeof text, "program: %s (pid %u)", proc->cmdline[0] ? proc->cmdline : proc->exe, proc->pid);
	ids[n++] = str(b, text);
	snprintf(text, sizeof text, "alloc_objects, alloc_space: every %s allocation of the trace (%.3f s)", kind,
		 (double)p->whole.status.end_time_ns / 1e9);
	ids[n++] = str(b, text);
	snprintf(text, sizeof text, "inuse_objects, inuse_space: the %s blocks live at %s", kind, p->state.what);
	ids[n++] = str(b, text);
	if (wsp_model_estimated(p->whole.model, p->kind) && *wsp_sampled_text(&p->whole, sampled, sizeof sampled))
		ids[n++] = str(b, sampled);
	ids[n++] = str(b, "exported by wsprof " WSPROF_VERSION);
	pb_packed(&b->head, PROFILE_COMMENT, ids, n);
}

static void head(struct builder *b)
{
	static const char *const types[][2] = {
		{ "alloc_objects", "count" }, { "alloc_space", "bytes" }, { "inuse_objects", "count" }, { "inuse_space", "bytes" },
	};
	str(b, ""); /* string_table[0] */
	for (size_t i = 0; i < 4; i++)
		value_type(b, &b->head, PROFILE_SAMPLE_TYPE, types[i][0], types[i][1]);
	pb_uint(&b->head, PROFILE_DEFAULT_SAMPLE_TYPE, str(b, "inuse_space"));
	value_type(b, &b->head, PROFILE_PERIOD_TYPE, "space", "bytes");
	const struct wsp_pprof *p = b->src;
	const wsprof_process *proc = wsprof_trace_process(p->whole.trace);
	pb_uint(&b->head, PROFILE_PERIOD, wsp_model_estimated(p->whole.model, p->kind) ? proc->sample_bytes : 1);
	pb_uint(&b->head, PROFILE_TIME_NANOS, proc->start_realtime_ns);
	pb_uint(&b->head, PROFILE_DURATION_NANOS, p->whole.status.end_time_ns);
	comments(b);
}

static int build(struct builder *b)
{
	const struct wsp_pprof *p = b->src;
	struct rows r = { .kind = p->kind };
	wsp_model_each_site(p->whole.model, site_row, &r);
	int err = r.oom ? -ENOMEM : inuse_rows(p, &r);
	head(b);
	for (size_t i = 0; !err && i < r.n; i++)
		sample(b, &r.v[i]);
	free(r.v);
	mappings(b);
	for (size_t i = 0; i < b->strings.n; i++) /* the last: every string is in by now */
		pb_bytes(&b->strings_pb, PROFILE_STRING_TABLE, b->strings.v[i].s, strlen(b->strings.v[i].s));
	struct pb *all[] = { &b->head, &b->samples, &b->mappings, &b->locations_pb, &b->functions_pb, &b->strings_pb };
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		b->oom |= all[i]->oom;
	return err ? err : b->oom || b->strings.oom || b->functions.oom || b->locations.oom ? -ENOMEM : 0;
}

/* The parts, one after the other, gzipped into out. @return 0 or -errno. */
static int gzip_parts(FILE *out, struct pb *const *parts, size_t n)
{
	z_stream z = { 0 };
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	uint8_t buf[1 << 16];
	int err = 0;
	for (size_t i = 0; i <= n && !err; i++) {
		bool finish = i == n;
		size_t left = finish ? 0 : parts[i]->n;
		const uint8_t *at = finish ? NULL : parts[i]->p;
		do { /* in pieces that avail_in (32 bits) holds */
			size_t piece = left < (1u << 30) ? left : 1u << 30;
			z.next_in = (Bytef *)at;
			z.avail_in = (uInt)piece;
			at += piece;
			left -= piece;
			int flush = finish ? Z_FINISH : Z_NO_FLUSH;
			do {
				z.next_out = buf;
				z.avail_out = sizeof buf;
				deflate(&z, flush);
				size_t have = sizeof buf - z.avail_out;
				if (have && fwrite(buf, 1, have, out) != have)
					err = -(errno ? errno : EIO);
			} while (!err && z.avail_out == 0);
		} while (!err && left);
	}
	deflateEnd(&z);
	return err;
}

static void builder_free(struct builder *b)
{
	dict_free(&b->strings);
	dict_free(&b->functions);
	dict_free(&b->locations);
	struct pb *all[] = { &b->head, &b->samples, &b->mappings, &b->locations_pb, &b->functions_pb, &b->strings_pb,
			     &b->sample_msg, &b->location_msg, &b->line_msg, &b->function_msg, &b->mapping_msg };
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		free(all[i]->p);
	free(b->maps);
	free(b->mapping_of);
	free(b->ids);
}

int wsp_pprof_write(struct wsp_pprof *p, FILE *out)
{
	struct builder b = { .src = p, .syms = p->whole.syms };
	int err = build(&b);
	struct pb *parts[] = { &b.head, &b.samples, &b.mappings, &b.locations_pb, &b.functions_pb, &b.strings_pb };
	if (!err)
		err = gzip_parts(out, parts, sizeof parts / sizeof *parts);
	builder_free(&b);
	return err;
}
