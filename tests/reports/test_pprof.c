/*
 * test_pprof.c - `wsprof export --pprof`: a gzipped profile.proto.
 *
 * Each export is inflated and decoded here by a protobuf reader of the
 * test's own (the wire format: varints and length-delimited fields,
 * repeated integers packed or not) and checked as pprof would use it: the
 * four sample types in Go's order, inuse_space the default, string 0 "",
 * every id a sample, location or line names defined. Its figures add up
 * to the summary's, for every kind of the golden story: inuse_space at the
 * peak to peak_bytes, at the end to leaked_bytes (inuse_objects to
 * leaked_blocks), alloc_space to total_bytes and alloc_objects to
 * allocations; at a time, to what `report state` finds live then. A
 * recording of tests/progs/alloc_sites gives its known functions, the
 * always-inlined one a Line of the location of its caller; a Python
 * program its functions at their lines, in locations without mappings;
 * a mapping cut in two counts once. `go tool pprof` reads the files where
 * Go is installed. Bad input gets one line.
 */
#include "harness.h"
#include "pictures.h"
#include "trace_builder.h"

#include "wsprof/trace.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

TestSuite(pprof, .fini = wt_cleanup, .timeout = 120);

#define MiB (1024ull * 1024)

/* ---- reading profile.proto --------------------------------------------- */

struct line {
	uint64_t function, line;
};

struct location {
	uint64_t id, mapping, address;
	struct line *lines;
	size_t nlines;
};

struct mapping {
	uint64_t id, start, limit, filename, build_id, has_functions;
};

struct function {
	uint64_t id, name, system_name, filename;
};

struct sample {
	uint64_t *locations, *values;
	size_t nlocations, nvalues;
};

struct value_type {
	uint64_t type, unit;
};

struct profile {
	char **strings;
	size_t nstrings;
	struct value_type *types, period_type;
	size_t ntypes;
	struct sample *samples;
	size_t nsamples;
	struct mapping *mappings;
	size_t nmappings;
	struct location *locations;
	size_t nlocations;
	struct function *functions;
	size_t nfunctions;
	uint64_t *comments;
	size_t ncomments;
	uint64_t default_type, period, time_nanos, duration_nanos;
};

/* A message being read; `bad` once it is not protobuf. */
struct reader {
	const uint8_t *p, *end;
	bool bad;
};

/* One field: its number, and its varint or its bytes. */
struct field {
	unsigned number, wire;
	uint64_t v;
	struct reader bytes;
};

static uint64_t varint(struct reader *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			break;
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

static bool next_field(struct reader *r, struct field *f)
{
	if (r->bad || r->p >= r->end)
		return false;
	uint64_t key = varint(r);
	*f = (struct field){ .number = (unsigned)(key >> 3), .wire = (unsigned)(key & 7) };
	if (f->wire == 0) {
		f->v = varint(r);
	} else if (f->wire == 2) {
		uint64_t n = varint(r);
		r->bad |= n > (uint64_t)(r->end - r->p);
		f->bytes = (struct reader){ r->p, r->bad ? r->p : r->p + n, false };
		r->p = f->bytes.end;
	} else {
		r->bad = true; /* profile.proto has no fixed-width fields */
	}
	cr_assert(!r->bad, "not protobuf: a bad field");
	return true;
}

static void *more(void *v, size_t *n, size_t size)
{
	v = realloc(v, (*n + 1) * size);
	cr_assert(v);
	memset((char *)v + *n * size, 0, size);
	(*n)++;
	return v;
}

/* A repeated integer field, packed or one at a time. */
static void ints(const struct field *f, uint64_t **v, size_t *n)
{
	struct reader r = f->bytes;
	if (f->wire == 0) {
		*v = more(*v, n, sizeof **v);
		(*v)[*n - 1] = f->v;
		return;
	}
	while (r.p < r.end) {
		*v = more(*v, n, sizeof **v);
		(*v)[*n - 1] = varint(&r);
	}
	cr_assert(!r.bad, "not protobuf: a bad packed field");
}

/* A message of integer fields: field k into *at[k] (NULL: not read). */
static void read_fields(struct reader r, uint64_t *const at[], size_t n)
{
	struct field f;
	while (next_field(&r, &f))
		if (f.number < n && at[f.number])
			*at[f.number] = f.v;
}

static struct value_type read_value_type(struct reader r)
{
	struct value_type vt = { 0 };
	read_fields(r, (uint64_t *const[]){ NULL, &vt.type, &vt.unit }, 3);
	return vt;
}

static void read_sample(struct profile *p, struct reader r)
{
	p->samples = more(p->samples, &p->nsamples, sizeof *p->samples);
	struct sample *s = &p->samples[p->nsamples - 1];
	struct field f;
	while (next_field(&r, &f))
		if (f.number == 1)
			ints(&f, &s->locations, &s->nlocations);
		else if (f.number == 2)
			ints(&f, &s->values, &s->nvalues);
}

static void read_mapping(struct profile *p, struct reader r)
{
	p->mappings = more(p->mappings, &p->nmappings, sizeof *p->mappings);
	struct mapping *m = &p->mappings[p->nmappings - 1];
	read_fields(r, (uint64_t *const[]){ NULL, &m->id, &m->start, &m->limit, NULL, &m->filename, &m->build_id,
					    &m->has_functions }, 8);
}

static void read_location(struct profile *p, struct reader r)
{
	p->locations = more(p->locations, &p->nlocations, sizeof *p->locations);
	struct location *l = &p->locations[p->nlocations - 1];
	struct field f;
	while (next_field(&r, &f)) {
		if (f.number == 1)
			l->id = f.v;
		else if (f.number == 2)
			l->mapping = f.v;
		else if (f.number == 3)
			l->address = f.v;
		else if (f.number == 4) {
			l->lines = more(l->lines, &l->nlines, sizeof *l->lines);
			struct line *ln = &l->lines[l->nlines - 1];
			read_fields(f.bytes, (uint64_t *const[]){ NULL, &ln->function, &ln->line }, 3);
		}
	}
}

static void read_function(struct profile *p, struct reader r)
{
	p->functions = more(p->functions, &p->nfunctions, sizeof *p->functions);
	struct function *fn = &p->functions[p->nfunctions - 1];
	read_fields(r, (uint64_t *const[]){ NULL, &fn->id, &fn->name, &fn->system_name, &fn->filename }, 5);
}

static void read_profile(struct profile *p, struct reader r)
{
	struct field f;
	while (next_field(&r, &f)) {
		switch (f.number) {
		case 1:
			p->types = more(p->types, &p->ntypes, sizeof *p->types);
			p->types[p->ntypes - 1] = read_value_type(f.bytes);
			break;
		case 2: read_sample(p, f.bytes); break;
		case 3: read_mapping(p, f.bytes); break;
		case 4: read_location(p, f.bytes); break;
		case 5: read_function(p, f.bytes); break;
		case 6:
			p->strings = more(p->strings, &p->nstrings, sizeof *p->strings);
			p->strings[p->nstrings - 1] = strndup((const char *)f.bytes.p, (size_t)(f.bytes.end - f.bytes.p));
			break;
		case 9: p->time_nanos = f.v; break;
		case 10: p->duration_nanos = f.v; break;
		case 11: p->period_type = read_value_type(f.bytes); break;
		case 12: p->period = f.v; break;
		case 13: ints(&f, &p->comments, &p->ncomments); break;
		case 14: p->default_type = f.v; break;
		}
	}
}

/* A gzipped file, inflated. */
static uint8_t *gunzip(const char *path, size_t *n)
{
	size_t len;
	char *gz = wt_read_file(path, &len);
	cr_assert(gz, "cannot read %s", path);
	cr_assert(len > 2 && (uint8_t)gz[0] == 0x1f && (uint8_t)gz[1] == 0x8b, "%s is not gzipped", path);
	z_stream z = { .next_in = (Bytef *)gz, .avail_in = (uInt)len };
	cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
	size_t cap = 1 << 16;
	uint8_t *out = malloc(cap);
	int zr;
	do {
		if (z.total_out == cap)
			cr_assert(out = realloc(out, cap *= 2));
		z.next_out = out + z.total_out;
		z.avail_out = (uInt)(cap - z.total_out);
		zr = inflate(&z, Z_NO_FLUSH);
	} while (zr == Z_OK);
	cr_assert_eq(zr, Z_STREAM_END, "%s: the gzip stream does not end (zlib %d)", path, zr);
	*n = z.total_out;
	inflateEnd(&z);
	free(gz);
	return out;
}

static struct profile *profile_load(const char *path)
{
	size_t n;
	uint8_t *bytes = gunzip(path, &n);
	struct profile *p = calloc(1, sizeof *p);
	read_profile(p, (struct reader){ bytes, bytes + n, false });
	free(bytes);
	return p;
}

static void profile_free(struct profile *p)
{
	for (size_t i = 0; i < p->nstrings; i++)
		free(p->strings[i]);
	for (size_t i = 0; i < p->nsamples; i++)
		free(p->samples[i].locations), free(p->samples[i].values);
	for (size_t i = 0; i < p->nlocations; i++)
		free(p->locations[i].lines);
	free(p->strings), free(p->types), free(p->samples), free(p->mappings), free(p->locations);
	free(p->functions), free(p->comments), free(p);
}

/* ---- what a profile says ----------------------------------------------- */

static const char *str(const struct profile *p, uint64_t i)
{
	cr_assert_lt(i, p->nstrings, "string %llu of a table of %zu", (unsigned long long)i, p->nstrings);
	return p->strings[i];
}

static const struct location *location(const struct profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->nlocations; i++)
		if (p->locations[i].id == id)
			return &p->locations[i];
	return NULL;
}

static const struct function *function(const struct profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->nfunctions; i++)
		if (p->functions[i].id == id)
			return &p->functions[i];
	return NULL;
}

static const struct mapping *mapping(const struct profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->nmappings; i++)
		if (p->mappings[i].id == id)
			return &p->mappings[i];
	return NULL;
}

static const char *line_function(const struct profile *p, const struct line *l)
{
	return str(p, function(p, l->function)->name);
}

/* The place of a sample type among the values. */
static size_t type_index(const struct profile *p, const char *type)
{
	for (size_t i = 0; i < p->ntypes; i++)
		if (!strcmp(str(p, p->types[i].type), type))
			return i;
	cr_assert_fail("no sample type %s", type);
	return 0;
}

/* Does one of the sample's locations have a line in `fn` (NULL: any sample)? */
static bool passes_through(const struct profile *p, const struct sample *s, const char *fn)
{
	for (size_t i = 0; fn && i < s->nlocations; i++) {
		const struct location *l = location(p, s->locations[i]);
		for (size_t k = 0; k < l->nlines; k++)
			if (!strcmp(line_function(p, &l->lines[k]), fn))
				return true;
	}
	return !fn;
}

/* The sum of one value over the samples through fn (NULL: all). */
static uint64_t total(const struct profile *p, const char *type, const char *fn)
{
	size_t v = type_index(p, type);
	uint64_t sum = 0;
	for (size_t i = 0; i < p->nsamples; i++)
		if (passes_through(p, &p->samples[i], fn))
			sum += p->samples[i].values[v];
	return sum;
}

static bool has_comment(const struct profile *p, const char *text)
{
	for (size_t i = 0; i < p->ncomments; i++)
		if (strstr(str(p, p->comments[i]), text))
			return true;
	return false;
}

/* What pprof relies on: the types and their order, the default, string 0,
 * every id defined and every value there. */
static void expect_well_formed(const struct profile *p)
{
	static const char *const types[][2] = {
		{ "alloc_objects", "count" }, { "alloc_space", "bytes" }, { "inuse_objects", "count" }, { "inuse_space", "bytes" },
	};
	cr_assert_gt(p->nstrings, 0, "no string table");
	cr_expect_str_eq(p->strings[0], "", "string_table[0] must be \"\"");
	cr_assert_eq(p->ntypes, 4, "%zu sample types", p->ntypes);
	for (size_t i = 0; i < 4; i++) {
		cr_expect_str_eq(str(p, p->types[i].type), types[i][0], "sample type %zu", i);
		cr_expect_str_eq(str(p, p->types[i].unit), types[i][1], "sample type %zu's unit", i);
	}
	cr_expect_str_eq(str(p, p->default_type), "inuse_space");
	cr_expect_str_eq(str(p, p->period_type.type), "space");
	cr_expect_str_eq(str(p, p->period_type.unit), "bytes");
	for (size_t i = 0; i < p->nsamples; i++) {
		cr_expect_eq(p->samples[i].nvalues, 4, "sample %zu has %zu values", i, p->samples[i].nvalues);
		for (size_t k = 0; k < p->samples[i].nlocations; k++)
			cr_assert(location(p, p->samples[i].locations[k]), "sample %zu: no location %llu", i,
				  (unsigned long long)p->samples[i].locations[k]);
	}
	for (size_t i = 0; i < p->nlocations; i++) {
		const struct location *l = &p->locations[i];
		cr_expect_neq(l->id, 0, "a location's id is nonzero");
		cr_expect_eq(location(p, l->id), l, "location %llu twice", (unsigned long long)l->id);
		const struct mapping *m = l->mapping ? mapping(p, l->mapping) : NULL;
		cr_assert(!l->mapping || m, "location %llu: no mapping %llu", (unsigned long long)l->id,
			  (unsigned long long)l->mapping);
		cr_expect(!m || (l->address >= m->start && l->address < m->limit),
			  "location %llu at 0x%llx, outside its mapping", (unsigned long long)l->id,
			  (unsigned long long)l->address);
		for (size_t k = 0; k < l->nlines; k++)
			cr_assert(function(p, l->lines[k].function), "location %llu: no function %llu",
				  (unsigned long long)l->id, (unsigned long long)l->lines[k].function);
	}
	for (size_t i = 0; i < p->nfunctions; i++)
		str(p, p->functions[i].name), str(p, p->functions[i].filename);
	for (size_t i = 0; i < p->nmappings; i++)
		str(p, p->mappings[i].filename), str(p, p->mappings[i].build_id);
}

/* `wsprof export --pprof ARGS... TRACE`, read and checked. */
static struct profile *export_pprof(const char *trace, const char *const args[])
{
	char *out = wt_path(wt_test_dir(), "p-%u.pb.gz", (unsigned)rand());
	const char *argv[16] = { "export", "--pprof", "-o", out };
	size_t n = 4;
	for (size_t i = 0; args && args[i]; i++)
		argv[n++] = args[i];
	argv[n++] = trace;
	char *err = wt_wsprof_ok(argv, 0);
	free(err);
	struct profile *p = profile_load(out);
	expect_well_formed(p);
	free(out);
	return p;
}

/* inuse at the peak and at the end, alloc: the summary's figures of kind
 * (of a sampled heap counted whole, the estimates beside them: a profile
 * sums its samples, and any moment's estimate is at most their peak). */
static void expect_summary_figures(const char *trace, const struct wt_json *kind)
{
	cr_assert(kind && kind->key, "%s: no such kind in the summary", trace);
	const struct wt_json *est = wt_json_get(kind, "estimated_from_samples"), *k = est ? est : kind;
	struct profile *peak = export_pprof(trace, (const char *[]){ "--kind", kind->key, NULL });
	struct profile *end = export_pprof(trace, (const char *[]){ "--kind", kind->key, "--at", "end", NULL });
	if (est)
		cr_expect_leq(total(peak, "inuse_space", NULL), wt_u64(k, "peak_bytes"), "%s: inuse_space at the peak %llu",
			      kind->key, (unsigned long long)total(peak, "inuse_space", NULL));
	else
		cr_expect_eq(total(peak, "inuse_space", NULL), wt_u64(k, "peak_bytes"), "%s: inuse_space at the peak %llu",
			     kind->key, (unsigned long long)total(peak, "inuse_space", NULL));
	cr_expect_eq(total(end, "inuse_space", NULL), wt_u64(k, "leaked_bytes"), "%s: inuse_space at the end", kind->key);
	cr_expect_eq(total(end, "inuse_objects", NULL), wt_u64(k, "leaked_blocks"), "%s: inuse_objects at the end",
		     kind->key);
	for (struct profile *p = peak; p; p = p == peak ? end : NULL) {
		cr_expect_eq(total(p, "alloc_space", NULL), wt_u64(k, "total_bytes"), "%s: alloc_space", kind->key);
		cr_expect_eq(total(p, "alloc_objects", NULL), wt_u64(k, "allocations"), "%s: alloc_objects", kind->key);
	}
	profile_free(peak);
	profile_free(end);
}

/* ---- the golden traces ------------------------------------------------- */

Test(pprof, every_kind_of_the_story_adds_up_to_the_summary)
{
	char *trace = wt_golden("story");
	struct wt_json *summary = wt_summary(trace, NULL);
	const struct wt_json *kinds = wt_json_get(summary, "kinds");
	cr_assert(kinds && kinds->count >= 4, "the story has heap, mmap and CUDA memory");
	for (size_t i = 0; i < kinds->count; i++)
		expect_summary_figures(trace, &kinds->items[i]);
	wt_json_free(summary);
	free(trace);
}

Test(pprof, the_story_says_which_trace_program_and_moment)
{
	char *trace = wt_golden("story");
	wsprof_trace *t;
	cr_assert_eq(wsprof_trace_open(trace, &t), 0);
	wsprof_event ev;
	while (wsprof_trace_next(t, &ev) > 0)
		;
	wsprof_trace_status st;
	wsprof_trace_get_status(t, &st);
	struct profile *p = export_pprof(trace, NULL);
	cr_expect_eq(p->time_nanos, wsprof_trace_process(t)->start_realtime_ns);
	cr_expect_eq(p->duration_nanos, st.end_time_ns);
	cr_expect_eq(p->period, 1, "every block recorded: period 1");
	char text[4200];
	snprintf(text, sizeof text, "trace: %s", trace);
	cr_expect(has_comment(p, text), "no comment \"%s\"", text);
	cr_expect(has_comment(p, "program: /opt/golden/bin/trainer --steps 4 (pid 5151)"));
	cr_expect(has_comment(p, "the heap blocks live at the heap peak (5.018 s)"));
	cr_expect(!has_comment(p, "estimates"));

	/* Its modules exist nowhere: locations of addresses alone, in mappings
	 * of the recorded paths and build-ids, the main program's first. */
	cr_assert_geq(p->nmappings, 2);
	cr_expect_str_eq(str(p, p->mappings[0].filename), "/opt/golden/bin/trainer");
	cr_expect_str_eq(str(p, p->mappings[0].build_id), "7a11e50101020304");
	for (size_t i = 0; i < p->nmappings; i++)
		cr_expect(!p->mappings[i].has_functions, "%s has no names here", str(p, p->mappings[i].filename));
	for (size_t i = 0; i < p->nlocations; i++) {
		cr_expect_eq(p->locations[i].nlines, 0, "a nameless address has no lines");
		cr_expect_neq(p->locations[i].mapping, 0, "every frame of the story is in a module");
	}
	profile_free(p);
	wsprof_trace_close(t);
	free(trace);
}

/* The live memory of a kind at --at `at`, as `report state --json` finds it. */
static void state_at(const char *trace, const char *at, const char *kind, uint64_t *bytes, uint64_t *blocks)
{
	char *json = wt_wsprof_ok((const char *[]){ "report", "state", "--json", "--at", at, "--kind", kind, trace, NULL }, 0);
	char err[256];
	struct wt_json *j = wt_json_parse(json, err, sizeof err);
	cr_assert(j, "report state --json: %s", err);
	const struct wt_json *mem = wt_json_get(j, "memories");
	*bytes = *blocks = 0;
	for (size_t i = 0; mem && i < mem->count; i++) {
		*bytes += wt_u64(&mem->items[i], "live_bytes");
		*blocks += wt_u64(&mem->items[i], "blocks");
	}
	wt_json_free(j);
	free(json);
}

Test(pprof, at_seconds_holds_what_report_state_finds_live)
{
	char *trace = wt_golden("story");
	static const char *const times[] = { "0", "2.5", "6.1", "9.99" };
	for (size_t i = 0; i < sizeof times / sizeof *times; i++) {
		uint64_t bytes, blocks;
		state_at(trace, times[i], "heap", &bytes, &blocks);
		struct profile *p = export_pprof(trace, (const char *[]){ "--at", times[i], NULL });
		cr_expect_eq(total(p, "inuse_space", NULL), bytes, "at %s s: %llu bytes in use, state says %llu", times[i],
			     (unsigned long long)total(p, "inuse_space", NULL), (unsigned long long)bytes);
		cr_expect_eq(total(p, "inuse_objects", NULL), blocks, "at %s s", times[i]);
		char moment[64];
		snprintf(moment, sizeof moment, "live at %.3f s", strtod(times[i], NULL));
		cr_expect(has_comment(p, moment), "no comment \"%s\"", moment);
		profile_free(p);
	}
	free(trace);
}

/* ---- recordings --------------------------------------------------------- */

/* The line of `marker` in alloc_sites.cc. */
static uint64_t sites_line(const char *marker)
{
	char *source = wt_path(getenv("WSPROF_SOURCE_ROOT"), "tests/progs/alloc_sites.cc");
	uint64_t line = wt_line_of(source, marker);
	free(source);
	return line;
}

static void record_sites(struct wt_recording *rec)
{
	char *lib = wt_prog("libsites.so");
	wt_record(rec, NULL, "alloc_sites", (const char *[]){ lib, NULL });
	wt_assert_status(&rec->run, 0, "wsprof record alloc_sites");
	free(lib);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

/* The location whose lines are these functions, innermost first. */
static const struct location *location_of(const struct profile *p, const char *inner, const char *outer)
{
	for (size_t i = 0; i < p->nlocations; i++) {
		const struct location *l = &p->locations[i];
		if (l->nlines == (outer ? 2u : 1u) && !strcmp(line_function(p, &l->lines[0]), inner) &&
		    (!outer || !strcmp(line_function(p, &l->lines[1]), outer)))
			return l;
	}
	return NULL;
}

Test(pprof, a_recording_names_its_functions_and_keeps_its_books)
{
	struct wt_recording rec;
	record_sites(&rec);
	struct wt_json *summary = wt_summary(rec.trace, NULL);
	expect_summary_figures(rec.trace, wt_json_get(summary, "kinds.heap"));
	struct profile *peak = export_pprof(rec.trace, NULL);
	struct profile *end = export_pprof(rec.trace, (const char *[]){ "--at", "end", NULL });
	/* alloc_sites.cc's books: peak_holder's 1 MiB is the peak; one of
	 * alloc_plain's three 1000 B blocks and the library's 2048 B leak. */
	cr_expect_eq(total(peak, "inuse_space", "peak_holder"), MiB);
	cr_expect_eq(total(end, "inuse_space", "peak_holder"), 0);
	cr_expect_eq(total(peak, "alloc_objects", "alloc_plain(unsigned long)"), 3);
	cr_expect_eq(total(peak, "alloc_space", "alloc_plain(unsigned long)"), 3000);
	cr_expect_eq(total(peak, "inuse_space", "alloc_plain(unsigned long)"), 3000);
	cr_expect_eq(total(end, "inuse_space", "alloc_plain(unsigned long)"), 1000);
	cr_expect_eq(total(end, "inuse_objects", "alloc_plain(unsigned long)"), 1);
	cr_expect_eq(total(end, "inuse_space", "sites_lib_alloc"), 2048);
	cr_expect_eq(total(peak, "alloc_space", "churn"), 6400);
	cr_expect_eq(total(peak, "inuse_space", "churn"), 0);

	const struct location *plain = location_of(peak, "alloc_plain(unsigned long)", NULL);
	cr_assert(plain, "no location of alloc_plain alone");
	cr_expect_eq(plain->lines[0].line, sites_line("SITE:plain"));
	const struct function *fn = function(peak, plain->lines[0].function);
	cr_expect(ends_with(str(peak, fn->filename), "tests/progs/alloc_sites.cc"), "%s", str(peak, fn->filename));
	const struct mapping *m = mapping(peak, plain->mapping);
	cr_assert(m, "alloc_plain's location has no mapping");
	cr_expect(ends_with(str(peak, m->filename), "/alloc_sites"), "mapping %s", str(peak, m->filename));
	const char *bid = str(peak, m->build_id);
	cr_expect(strlen(bid) >= 16 && strspn(bid, "0123456789abcdef") == strlen(bid), "build-id \"%s\"", bid);
	cr_expect(m->has_functions);
	cr_expect_str_eq(str(peak, peak->mappings[0].filename), str(peak, m->filename), "the program's mapping first");
	wt_json_free(summary);
	profile_free(peak);
	profile_free(end);
	wt_recording_free(&rec);
}

Test(pprof, an_inlined_function_is_a_line_of_its_callers_location)
{
	struct wt_recording rec;
	record_sites(&rec);
	struct profile *p = export_pprof(rec.trace, NULL);
	/* alloc_inline, inlined twice into inline_caller (on the line marked
	 * CALL:inline and two lines below): two addresses, of two lines each. */
	uint64_t calls = 0, call = sites_line("CALL:inline");
	size_t found = 0;
	for (size_t i = 0; i < p->nlocations; i++) {
		const struct location *l = &p->locations[i];
		if (l->nlines < 1 || strcmp(line_function(p, &l->lines[0]), "alloc_inline"))
			continue;
		found++;
		cr_assert_eq(l->nlines, 2, "alloc_inline's address has %zu lines", l->nlines);
		cr_expect_eq(l->lines[0].line, sites_line("SITE:inline"));
		cr_expect_str_eq(line_function(p, &l->lines[1]), "inline_caller(void**)");
		cr_expect_neq(l->mapping, 0);
		calls |= l->lines[1].line == call ? 1 : l->lines[1].line == call + 2 ? 2 : 4;
	}
	cr_expect_eq(found, 2, "%zu locations of alloc_inline", found);
	cr_expect_eq(calls, 3, "inline_caller calls it on its two lines");
	cr_expect_eq(total(p, "alloc_space", "alloc_inline"), 1000);
	cr_expect_eq(total(p, "inuse_space", "alloc_inline"), 1000);
	cr_expect(!location_of(p, "inline_caller(void**)", NULL), "inline_caller has no address of its own");
	profile_free(p);
	wt_recording_free(&rec);
}

#define PY_SCRIPT                                                                                                  \
	"keep = []\n"                                                                                              \
	"\n"                                                                                                       \
	"def grow(n):\n"                                                                                           \
	"    keep.append(bytearray(n))  #@grow\n"                                                                  \
	"\n"                                                                                                       \
	"grow(3000000)\n"

Test(pprof, python_frames_are_locations_of_their_own)
{
	if (access("/usr/bin/python3", X_OK))
		cr_skip_test("no /usr/bin/python3 (./dev.sh installs it)");
	const char *dir = wt_test_dir();
	char *script = wt_path(dir, "grow.py"), *trace = wt_path(dir, "py.wsp");
	cr_assert_eq(wt_write_file(script, PY_SCRIPT, strlen(PY_SCRIPT)), 0);
	free(wt_wsprof_ok((const char *[]){ "record", "-o", trace, "--", "/usr/bin/python3", script, NULL }, 0));
	struct wt_json *summary = wt_summary(trace, NULL);
	bool frames = false;
	if (!wt_json_bool(summary, "python.frames", &frames) || !frames)
		cr_skip_test("this python3 gives no Python frames: %s", wt_json_str(summary, "python.note"));
	struct profile *p = export_pprof(trace, NULL);
	const struct location *grow = location_of(p, "grow", NULL);
	cr_assert(grow, "no location of grow");
	cr_expect_eq(grow->mapping, 0, "a Python frame has no mapping");
	cr_expect_eq(grow->address, 0);
	cr_expect_eq(grow->lines[0].line, wt_line_of(script, "#@grow"));
	cr_expect_str_eq(str(p, function(p, grow->lines[0].function)->filename), script);
	/* bytearray(n) is one malloc of n + 1 bytes, live at the heap's peak
	 * (the interpreter frees it as it exits). */
	cr_expect_eq(total(p, "alloc_space", "grow"), 3000001);
	cr_expect_eq(total(p, "alloc_objects", "grow"), 1);
	cr_expect_eq(total(p, "inuse_space", "grow"), 3000001);
	cr_expect(location_of(p, "<module>", NULL), "the script's own code, named as Python names it");
	profile_free(p);

	/* With --stacks python a sample's stack is its Python frames alone. */
	char *out = wt_path(dir, "python.pb.gz");
	free(wt_wsprof_ok((const char *[]){ "export", "--stacks", "python", "--pprof", "-o", out, trace, NULL }, 0));
	p = profile_load(out);
	expect_well_formed(p);
	bool leaf = false;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct location *l = location(p, p->samples[i].locations[0]);
		leaf |= l->nlines && !strcmp(line_function(p, &l->lines[0]), "grow");
	}
	cr_expect(leaf, "grow is the innermost frame of a sample");
	profile_free(p);
	wt_json_free(summary);
	free(out), free(script), free(trace);
}

Test(pprof, a_sampled_trace_says_its_figures_are_estimates)
{
	struct wt_recording rec;
	char *prog = wt_prog("alloc_sampled");
	wt_record_with(&rec, (const char *[]){ "WSPROF_SAMPLE_SEED=20261129", NULL },
		       (const char *[]){ "--sample-bytes", "65536", NULL }, prog, (const char *[]){ "20000", NULL });
	wt_assert_status(&rec.run, 0, "wsprof record --sample-bytes alloc_sampled");
	struct wt_json *summary = wt_summary(rec.trace, NULL);
	expect_summary_figures(rec.trace, wt_json_get(summary, "kinds.heap"));
	struct profile *p = export_pprof(rec.trace, NULL);
	cr_expect_eq(p->period, 65536);
	cr_expect(has_comment(p, "sampled: 1 in 65,536 bytes; heap totals counted, heap call sites estimated"));
	profile_free(p);
	wt_json_free(summary);
	free(prog);
	wt_recording_free(&rec);
}

/* ---- traces built here ------------------------------------------------- */

/* A mapping of three pages whose middle page is unmapped, from stack 3
 * (nodes 1 <- 2 <- 3 at addresses no module holds), and a heap block. */
static char *cut_mapping_trace(void)
{
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, NULL);
	tb_segment(&b, 1, 0, 0);
	for (uint64_t node = 1; node <= 3; node++)
		tb_stack(&b, node, node - 1, 0x400000 + node * 0x1000);
	tb_ev_alloc(&b, 1, 10, WSPROF_KIND_MMAP, WSPROF_OP_MMAP, 0x7f0000000000ull, 3 * 4096, 3);
	tb_ev_unmap(&b, 2, 20, WSPROF_KIND_MMAP, WSPROF_OP_MUNMAP, 0x7f0000001000ull, 4096);
	tb_ev_alloc(&b, 3, 30, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x1000, 100, 2);
	tb_sync(&b, 4, 40);
	tb_chunk(&b);
	tb_footer(&b, 50);
	return wt_built_trace(&b, "cut.wsp");
}

Test(pprof, a_mapping_cut_in_two_is_one_object)
{
	char *trace = cut_mapping_trace();
	struct wt_json *summary = wt_summary(trace, NULL);
	expect_summary_figures(trace, wt_json_get(summary, "kinds.mmap"));
	struct profile *p = export_pprof(trace, (const char *[]){ "--kind", "mmap", "--at", "end", NULL });
	cr_assert_eq(p->nsamples, 1);
	cr_expect_eq(p->samples[0].values[2], 1, "one mapping in two pieces");
	cr_expect_eq(p->samples[0].values[3], 2 * 4096);
	/* Outside every module: no mapping, the return address less one. */
	cr_assert_eq(p->samples[0].nlocations, 3);
	static const uint64_t ips[] = { 0x403000, 0x402000, 0x401000 };
	for (size_t i = 0; i < 3; i++) {
		const struct location *l = location(p, p->samples[0].locations[i]);
		cr_expect_eq(l->address, ips[i] - 1, "frame %zu at 0x%llx", i, (unsigned long long)l->address);
		cr_expect_eq(l->mapping, 0);
		cr_expect_eq(l->nlines, 0);
	}
	profile_free(p);
	wt_json_free(summary);
	free(trace);
}

/* ---- go tool pprof ------------------------------------------------------ */

/* `go` on PATH, or NULL. */
static char *go_path(void)
{
	const char *path = getenv("PATH");
	char *dirs = strdup(path ? path : "/usr/bin:/bin"), *save = NULL;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char *go = wt_path(d, "go");
		if (access(go, X_OK) == 0) {
			free(dirs);
			return go;
		}
		free(go);
	}
	free(dirs);
	return NULL;
}

/* `go tool pprof ARGS... FILE`'s output, asserting it reads the file. */
static char *go_pprof(const char *go, const char *option, const char *file)
{
	struct wt_result r;
	cr_assert_eq(wt_run(&r, (const char *[]){ go, "tool", "pprof", "-unit=B", "-sample_index=inuse_space", option,
						file, NULL }), 0);
	cr_assert_eq(r.status, 0, "go tool pprof %s exited %d:\n%s", option, r.status, r.err);
	char *out = r.out;
	r.out = NULL;
	wt_result_free(&r);
	return out;
}

Test(pprof, go_tool_pprof_reads_it)
{
	char *go = go_path();
	if (!go)
		cr_skip_test("no go on PATH (Debian's golang-go, which ./dev.sh installs, has go tool pprof)");
	struct wt_recording rec;
	record_sites(&rec);
	char *file = wt_path(rec.dir, "heap.pb.gz");
	free(wt_wsprof_ok((const char *[]){ "export", "--pprof", "-o", file, rec.trace, NULL }, 0));
	struct wt_json *summary = wt_summary(rec.trace, NULL);
	char want[96];
	snprintf(want, sizeof want, "Total samples = %lluB", (unsigned long long)wt_u64(summary, "kinds.heap.peak_bytes"));

	char *top = go_pprof(go, "-top", file);
	cr_expect(strstr(top, want), "no \"%s\" in:\n%s", want, top);
	cr_expect(strstr(top, "Type: inuse_space"), "%s", top);
	cr_expect(strstr(top, "1048576B") && strstr(top, "peak_holder"), "peak_holder's 1 MiB is not shown:\n%s", top);
	char *traces = go_pprof(go, "-traces", file);
	cr_expect(strstr(traces, "alloc_inline (inline)\n") && strstr(traces, "inline_caller(void**)\n"), "%s", traces);
	char *raw = go_pprof(go, "-raw", file);
	cr_expect(strstr(raw, "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]"),
		  "%s", raw);
	cr_expect(strstr(raw, "PeriodType: space bytes\nPeriod: 1\n"), "%s", raw);
	free(top), free(traces), free(raw);
	wt_json_free(summary);
	free(file), free(go);
	wt_recording_free(&rec);
}

/* ---- bad input ---------------------------------------------------------- */

/* wsprof export ARGS exits with status and one line on stderr holding words. */
static void expect_one_line_error(const char *const args[], int status, const char *words)
{
	wt_expect_failure("export", args, status, words, true);
}

Test(pprof, bad_input_gets_one_line)
{
	char *out = wt_path(wt_test_dir(), "x.pb.gz"), *trace = cut_mapping_trace();
	expect_one_line_error((const char *[]){ "--pprof", trace, NULL }, 2, "-o heap.pb.gz");
	expect_one_line_error((const char *[]){ "--pprof", "-o", out, "--at", "soon", trace, NULL }, 2, "--at soon is not peak");
	expect_one_line_error((const char *[]){ "--pprof", "-o", out, "--at", "1", trace, NULL }, 2,
			      "--at 1 is after the end of");
	expect_one_line_error((const char *[]){ "--pprof", "-o", out, "--kind", "stack", trace, NULL }, 2,
			      "unknown kind 'stack'");
	expect_one_line_error((const char *[]){ "--pprof", "-o", out, "--kind", "cuda_device", trace, NULL }, 2,
			      "has no cuda_device memory: use --kind with one of heap, mmap");
	expect_one_line_error((const char *[]){ "--pprof", "--perfetto", "-o", out, trace, NULL }, 2, "say what to export");
	expect_one_line_error((const char *[]){ "--perfetto", "--at", "end", "-o", out, trace, NULL }, 2,
			      "--at and --kind are --pprof's");
	expect_one_line_error((const char *[]){ "--pprof", "-o", out, "/nonexistent/t.wsp", NULL }, 1,
			      "/nonexistent/t.wsp: No such file or directory");
	cr_expect(!wt_file_exists(out), "nothing is written for bad input");
	expect_one_line_error((const char *[]){ "--pprof", "-o", "/nonexistent/x.pb.gz", trace, NULL }, 1,
			      "cannot write /nonexistent/x.pb.gz: No such file or directory");
	free(trace);
	free(out);
}
