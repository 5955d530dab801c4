/*
 * symbols.c - call stacks named as people read them (tests/progs/alloc_sites
 * and alloc_stripped, under `wsprof record`).
 *
 * Every known function must be reported with its name, file and line (the
 * lines marked SITE:... in the program's source) and exactly its bytes:
 * at the peak, leaked, allocated, and its temporary allocations; an
 * always-inlined function is a frame of its own, called from the line
 * marked CALL:...; C++ names are demangled, templates included; a
 * function in a dlopen'd library is named too. A program without symbols
 * gives module+offset frames, and a program rebuilt since the recording
 * gets a warning and module+offset, never another program's names.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(symbols, .fini = wt_cleanup, .timeout = 60);

/* The line of `marker` in a test program's source. */
static uint64_t line_of(const char *source, const char *marker)
{
	char *path = wt_path(getenv("WSPROF_SOURCE_ROOT"), "tests/progs/%s", source);
	uint64_t line = wt_line_of(path, marker);
	free(path);
	return line;
}

static struct wt_json *report(const char *trace, const char *const extra[], struct wt_result *r)
{
	const char *argv[16] = { wt_wsprof(), "report" };
	size_t n = 2;
	for (size_t i = 0; extra[i]; i++)
		argv[n++] = extra[i];
	argv[n++] = "--json";
	argv[n++] = trace;
	argv[n] = NULL;
	wt_run(r, argv);
	wt_assert_status(r, 0, "wsprof report");
	char err[256];
	struct wt_json *j = wt_json_parse(r->out, err, sizeof err);
	cr_assert(j, "the report is not JSON (%s):\n%s", err, r->out);
	return j;
}

/* The entry of `array` whose `key` equals `value`. */
static const struct wt_json *find(const struct wt_json *array, const char *key, const char *value)
{
	for (size_t i = 0; array && i < array->count; i++) {
		const char *v = wt_json_str(&array->items[i], key);
		if (v && strcmp(v, value) == 0)
			return &array->items[i];
	}
	return NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = s ? strlen(s) : 0, k = strlen(suffix);
	return s && n >= k && strcmp(s + n - k, suffix) == 0;
}

struct expected_site {
	const char *function, *file, *marker;
	uint64_t allocations, bytes, peak, leaked, temporary;
};

static void record_sites(struct wt_recording *rec)
{
	char *lib = wt_prog("libsites.so");
	wt_record(rec, NULL, "alloc_sites", (const char *[]){ lib, NULL });
	wt_assert_status(&rec->run, 0, "wsprof record alloc_sites");
	free(lib);
}

Test(symbols, every_known_function_with_its_file_line_and_bytes)
{
	static const struct expected_site want[] = {
		{ "churn", "alloc_sites.cc", "SITE:churn", 100, 6400, 0, 0, 100 },
		{ "alloc_plain(unsigned long)", "alloc_sites.cc", "SITE:plain", 3, 3000, 3000, 1000, 0 },
		{ "alloc_inline", "alloc_sites.cc", "SITE:inline", 2, 1000, 1000, 0, 0 },
		{ "int* make_array<int>(unsigned long)", "alloc_sites.cc", "SITE:template", 1, 400, 400, 0, 0 },
		{ "double* make_array<double>(unsigned long)", "alloc_sites.cc", "SITE:template", 1, 400, 400, 0, 0 },
		{ "sites_lib_alloc", "libsites.c", "SITE:lib", 1, 2048, 2048, 2048, 0 },
		{ "peak_holder", "alloc_sites.cc", "SITE:peak", 1, 1 << 20, 1 << 20, 0, 1 },
	};
	struct wt_recording rec;
	record_sites(&rec);
	struct wt_result r;
	struct wt_json *j = report(rec.trace, (const char *[]){ "callsites", "--top", "0", NULL }, &r);
	const struct wt_json *sites = wt_json_get(j, "sites");
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		const struct expected_site *w = &want[i];
		const struct wt_json *s = find(sites, "function", w->function);
		cr_assert(s, "no call site named %s in:\n%s", w->function, r.out);
		cr_expect(ends_with(wt_json_str(s, "file"), w->file), "%s: file %s", w->function, wt_json_str(s, "file"));
		cr_expect_eq(wt_u64(s, "line"), line_of(w->file, w->marker), "%s: line", w->function);
		cr_expect_eq(wt_u64(s, "allocations"), w->allocations, "%s: allocations", w->function);
		cr_expect_eq(wt_u64(s, "bytes"), w->bytes, "%s: bytes", w->function);
		cr_expect_eq(wt_u64(s, "peak_bytes"), w->peak, "%s: bytes at the peak", w->function);
		cr_expect_eq(wt_u64(s, "leaked_bytes"), w->leaked, "%s: leaked", w->function);
		cr_expect_eq(wt_u64(s, "temporary"), w->temporary, "%s: temporary", w->function);
	}
	const struct wt_json *lib = find(sites, "function", "sites_lib_alloc");
	cr_expect_str_eq(wt_json_str(lib, "module"), "libsites.so");
	wt_json_free(j);
	wt_result_free(&r);
	wt_recording_free(&rec);
}

Test(symbols, an_inlined_function_is_a_frame_called_from_its_line)
{
	struct wt_recording rec;
	record_sites(&rec);
	struct wt_result r;
	struct wt_json *j = report(rec.trace, (const char *[]){ "callsites", "--full-stacks", "--top", "0", NULL }, &r);
	const struct wt_json *s = find(wt_json_get(j, "sites"), "function", "alloc_inline");
	cr_assert(s, "no stack through alloc_inline in:\n%s", r.out);
	const struct wt_json *f0 = wt_json_get(s, "stack.0"), *f1 = wt_json_get(s, "stack.1");
	cr_assert(f0 && f1, "the stack has fewer than two frames");
	bool inlined = false;
	cr_expect(wt_json_bool(f0, "inlined", &inlined) && inlined, "alloc_inline is not marked inlined");
	cr_expect_eq(wt_u64(f0, "line"), line_of("alloc_sites.cc", "SITE:inline"));
	cr_expect_str_eq(wt_json_str(f1, "function"), "inline_caller(void**)");
	cr_expect_eq(wt_u64(f1, "line"), line_of("alloc_sites.cc", "CALL:inline"), "the call site of the inlined function");
	cr_expect(wt_json_bool(f1, "inlined", &inlined) && !inlined);
	wt_json_free(j);
	wt_result_free(&r);
	wt_recording_free(&rec);
}

Test(symbols, leaks_are_grouped_by_stack_largest_first)
{
	struct wt_recording rec;
	record_sites(&rec);
	struct wt_result r;
	struct wt_json *j = report(rec.trace, (const char *[]){ "leaks", "--top", "0", NULL }, &r);
	const struct wt_json *stacks = wt_json_get(j, "stacks");
	cr_assert(stacks && stacks->count >= 2, "leaks:\n%s", r.out);
	uint64_t previous = UINT64_MAX, lib = 0, plain = 0;
	for (size_t i = 0; i < stacks->count; i++) {
		const struct wt_json *s = &stacks->items[i];
		uint64_t bytes = wt_u64(s, "leaked_bytes");
		cr_expect_leq(bytes, previous, "leaks are not largest first");
		previous = bytes;
		const char *fn = wt_json_str(s, "stack.0.function");
		if (fn && strcmp(fn, "sites_lib_alloc") == 0)
			lib += bytes;
		if (fn && strcmp(fn, "alloc_plain(unsigned long)") == 0) {
			plain += bytes;
			cr_expect_eq(wt_u64(s, "leaked_blocks"), 1);
			cr_expect_eq(wt_u64(s, "allocations"), 3);
		}
	}
	cr_expect_eq(lib, 2048);
	cr_expect_eq(plain, 1000);
	wt_json_free(j);
	wt_result_free(&r);
	wt_recording_free(&rec);
}

Test(symbols, a_program_without_symbols_gives_module_and_offset)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_stripped", NULL);
	wt_assert_status(&rec.run, 0, "wsprof record alloc_stripped");
	struct wt_result r;
	struct wt_json *j = report(rec.trace, (const char *[]){ "callsites", "--top", "0", NULL }, &r);
	const struct wt_json *sites = wt_json_get(j, "sites");
	const struct wt_json *s = NULL;
	for (size_t i = 0; sites && i < sites->count && !s; i++)
		if (wt_u64(&sites->items[i], "bytes") == 4242)
			s = &sites->items[i];
	cr_assert(s, "no site with the program's 4242 bytes:\n%s", r.out);
	const struct wt_json *fn = wt_json_get(s, "function");
	cr_expect(fn && fn->type == WT_JSON_NULL, "a stripped function got a name");
	cr_expect_str_eq(wt_json_str(s, "module"), "alloc_stripped");
	const char *label = wt_json_str(s, "label");
	cr_expect(label && strncmp(label, "alloc_stripped+0x", 17) == 0, "label %s", label);
	wt_json_free(j);
	wt_result_free(&r);
	wt_recording_free(&rec);
}

/* A copy of a test program at `to`, runnable. */
static void copy_program(const char *from, const char *to)
{
	size_t len;
	char *bytes = wt_read_file(from, &len);
	cr_assert(bytes && wt_write_file(to, bytes, len) == 0, "cannot copy %s", from);
	free(bytes);
	cr_assert_eq(chmod(to, 0755), 0);
}

/* `wsprof record -o trace -- prog expect lib`, which must succeed. */
static void record_program(const char *prog, const char *trace, const char *expect, const char *lib, const char *what)
{
	struct wt_result r;
	wt_run(&r, (const char *[]){ wt_wsprof(), "record", "-o", trace, "--", prog, expect, lib, NULL });
	wt_assert_status(&r, 0, what);
	wt_result_free(&r);
}

Test(symbols, a_rebuilt_program_is_reported_not_misnamed)
{
	const char *dir = wt_test_dir();
	char *orig = wt_prog("alloc_sites"), *copy = wt_path(dir, "sites_copy"), *other = wt_prog("alloc_stripped");
	char *lib = wt_prog("libsites.so"), *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json");
	copy_program(orig, copy);
	record_program(copy, trace, expect, lib, "wsprof record of a copy of alloc_sites");
	copy_program(other, copy); /* "rebuild" it: another program, another build-id */
	struct wt_result r;
	struct wt_json *j = report(trace, (const char *[]){ "callsites", "--top", "0", NULL }, &r);
	cr_expect(strstr(r.err, "sites_copy has changed since it was recorded") != NULL, "no warning:\n%s", r.err);
	/* Once, and what would name its frames: symbolize where it was recorded. */
	cr_expect(strstr(r.err, "run 'wsprof symbolize ") != NULL, "no advice:\n%s", r.err);
	cr_expect_eq(wt_count_lines(r.err), 2, "one warning and the advice, not:\n%s", r.err);
	const struct wt_json *sites = wt_json_get(j, "sites");
	cr_expect_null(find(sites, "function", "peak_holder"), "frames of a rebuilt program were named");
	bool offset_frame = false;
	for (size_t i = 0; sites && i < sites->count; i++) {
		const char *label = wt_json_str(&sites->items[i], "label");
		offset_frame |= label && strncmp(label, "sites_copy+0x", 13) == 0 &&
				wt_u64(&sites->items[i], "peak_bytes") == 1 << 20;
	}
	cr_expect(offset_frame, "the 1 MiB site is not shown as sites_copy+offset:\n%s", r.out);
	wt_json_free(j);
	wt_result_free(&r);
	free(expect);
	free(trace);
	free(lib);
	free(other);
	free(copy);
	free(orig);
}

Test(symbols, the_flame_graph_names_functions_and_sums_their_bytes)
{
	struct wt_recording rec;
	record_sites(&rec);
	char *svg = wt_path(rec.dir, "flame.svg");
	struct wt_result folded, drawn;
	wt_run(&folded, (const char *[]){ wt_wsprof(), "report", "flame", "--format", "folded", rec.trace, NULL });
	wt_assert_status(&folded, 0, "wsprof report flame --format folded");
	cr_expect(strstr(folded.out, ";main;peak_holder 1048576\n"), "no 1 MiB line for peak_holder:\n%s", folded.out);
	cr_expect(strstr(folded.out, ";main;inline_caller(void**);alloc_inline 1000\n"),
		  "the inlined function is not a frame of its own:\n%s", folded.out);
	wt_run(&drawn, (const char *[]){ wt_wsprof(), "report", "flame", rec.trace, "-o", svg, NULL });
	wt_assert_status(&drawn, 0, "wsprof report flame -o flame.svg");
	char *text = wt_read_file(svg, NULL);
	cr_assert(text, "no SVG written");
	cr_expect(strncmp(text, "<?xml", 5) == 0 || strncmp(text, "<svg", 4) == 0, "not an SVG:\n%.200s", text);
	cr_expect(strstr(text, "<title>peak_holder — 1.00 MiB,"), "no tooltip for peak_holder in the SVG");
	cr_expect(strstr(text, "<script") == NULL, "the SVG carries a script");
	free(text);
	wt_result_free(&drawn);
	wt_result_free(&folded);
	free(svg);
	wt_recording_free(&rec);
}

Test(symbols, debug_info_in_a_separate_debuglink_file_is_found)
{
	const char *dir = wt_test_dir();
	char *orig = wt_prog("alloc_sites"), *copy = wt_path(dir, "sites_split"), *debug = wt_path(dir, "sites_split.debug");
	char *lib = wt_prog("libsites.so"), *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json");
	size_t len;
	char *bytes = wt_read_file(orig, &len);
	cr_assert(bytes && wt_write_file(copy, bytes, len) == 0);
	free(bytes);
	cr_assert_eq(chmod(copy, 0755), 0);
	/* As distributions ship it: the debug info apart, the program pointing at it by name. */
	struct wt_result r;
	wt_run(&r, (const char *[]){ "/usr/bin/objcopy", "--only-keep-debug", copy, debug, NULL });
	wt_assert_status(&r, 0, "objcopy --only-keep-debug");
	wt_result_free(&r);
	char *link = wt_path(dir, "sites_split.debug");
	char arg[4200];
	snprintf(arg, sizeof arg, "--add-gnu-debuglink=%s", link);
	wt_run(&r, (const char *[]){ "/usr/bin/objcopy", "--strip-debug", "--strip-unneeded", arg, copy, NULL });
	wt_assert_status(&r, 0, "objcopy --strip-debug --add-gnu-debuglink");
	wt_result_free(&r);

	wt_run(&r, (const char *[]){ wt_wsprof(), "record", "-o", trace, "--", copy, expect, lib, NULL });
	wt_assert_status(&r, 0, "wsprof record of the split program");
	wt_result_free(&r);
	struct wt_json *j = report(trace, (const char *[]){ "callsites", "--top", "0", NULL }, &r);
	const struct wt_json *s = find(wt_json_get(j, "sites"), "function", "peak_holder");
	cr_assert(s, "peak_holder not named from the debuglink file:\n%s", r.out);
	cr_expect_eq(wt_u64(s, "line"), line_of("alloc_sites.cc", "SITE:peak"));
	cr_expect_str_eq(r.err, "", "warnings:\n%s", r.err);
	wt_json_free(j);
	wt_result_free(&r);
	free(link);
	free(expect);
	free(trace);
	free(lib);
	free(debug);
	free(copy);
	free(orig);
}

/* The 20 bytes of a program's GNU build-id in its file's bytes. */
static unsigned char *build_id_in(unsigned char *bytes, size_t len, const char *path)
{
	/* The note: namesz 4, descsz 20, type 3 (NT_GNU_BUILD_ID), "GNU\0", then the id. */
	static const unsigned char note[] = { 4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0 };
	unsigned char *at = memmem(bytes, len, note, sizeof note);
	cr_assert(at && at + sizeof note + 20 <= bytes + len, "%s has no build-id note", path);
	return at + sizeof note;
}

/* Copy a program to `to` with the first byte of its build-id changed:
 * the same code, as another build would be. */
static void copy_as_another_build(const char *from, const char *to)
{
	size_t len;
	unsigned char *bytes = (unsigned char *)wt_read_file(from, &len);
	cr_assert(bytes, "cannot read %s", from);
	build_id_in(bytes, len, from)[0] ^= 0xff;
	cr_assert_eq(wt_write_file(to, (const char *)bytes, len), 0);
	cr_assert_eq(chmod(to, 0755), 0);
	free(bytes);
}

/* mkdir -p */
static void make_dirs(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(buf, 0755);
			*p = '/';
		}
	mkdir(buf, 0755);
}

/* A copy of alloc_sites whose debug info is apart, with no debuglink: a
 * report finds it only where it looks by build-id. `place` gets the
 * build-id in hex and returns where the debug file goes. Records the copy
 * and reports its call sites with env (NULL-terminated VAR=VALUE list):
 * whether peak_holder had its file and line. */
static bool line_found_by_build_id(char *(*place)(const char *dir, const char *hex), const char *const *env_fmt)
{
	const char *dir = wt_test_dir();
	char *orig = wt_prog("alloc_sites"), *copy = wt_path(dir, "sites_bid"), *lib = wt_prog("libsites.so");
	char *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json"), *full = wt_path(dir, "sites_full");
	size_t len;
	unsigned char *bytes = (unsigned char *)wt_read_file(orig, &len);
	cr_assert(bytes);
	char hex[41];
	const unsigned char *id = build_id_in(bytes, len, orig);
	for (int i = 0; i < 20; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	cr_assert(wt_write_file(full, (const char *)bytes, len) == 0);
	free(bytes);
	char *debug = place(dir, hex);
	char *slash = strrchr(debug, '/');
	*slash = 0;
	make_dirs(debug);
	*slash = '/';
	struct wt_result r;
	wt_run(&r, (const char *[]){ "/usr/bin/objcopy", "--only-keep-debug", full, debug, NULL });
	wt_assert_status(&r, 0, "objcopy --only-keep-debug");
	wt_result_free(&r);
	wt_run(&r, (const char *[]){ "/usr/bin/objcopy", "--strip-debug", full, copy, NULL });
	wt_assert_status(&r, 0, "objcopy --strip-debug");
	wt_result_free(&r);
	cr_assert_eq(chmod(copy, 0755), 0);
	record_program(copy, trace, expect, lib, "wsprof record of the stripped copy");
	const char *argv[16] = { "/usr/bin/env", "WSPROF_SYMBOL_CACHE=0" };
	size_t n = 2;
	char envs[4][4200];
	for (size_t i = 0; env_fmt && env_fmt[i]; i++) {
		snprintf(envs[i], sizeof envs[i], env_fmt[i], dir);
		argv[n++] = envs[i];
	}
	const char *rest[] = { wt_wsprof(), "report", "callsites", "--top", "0", "--json", trace, NULL };
	for (size_t i = 0; rest[i]; i++)
		argv[n++] = rest[i];
	argv[n] = NULL;
	wt_run(&r, argv);
	wt_assert_status(&r, 0, "wsprof report callsites");
	char err[256];
	struct wt_json *j = wt_json_parse(r.out, err, sizeof err);
	cr_assert(j, "not JSON (%s):\n%s", err, r.out);
	/* From DWARF, "peak_holder"; from the symbol table alone, its demangled "peak_holder()". */
	const struct wt_json *s = find(wt_json_get(j, "sites"), "function", "peak_holder");
	s = s ? s : find(wt_json_get(j, "sites"), "function", "peak_holder()");
	cr_assert(s, "peak_holder not named (the symbol table is kept):\n%s", r.out);
	bool found = wt_u64(s, "line") == line_of("alloc_sites.cc", "SITE:peak");
	wt_json_free(j);
	wt_result_free(&r);
	free(debug), free(full), free(expect), free(trace), free(lib), free(copy), free(orig);
	return found;
}

static char *in_build_id_tree(const char *dir, const char *hex)
{
	return wt_path(dir, "debug/.build-id/%.2s/%s.debug", hex, hex + 2);
}

static char *in_debuginfod_cache(const char *dir, const char *hex)
{
	return wt_path(dir, "dcache/%s/debuginfo", hex);
}

/* As Debian's -dbgsym packages install it: DIR/.build-id/xx/yyyy.debug,
 * found by the module's build-id in WSPROF_DEBUG_PATH (as in /usr/lib/debug). */
Test(symbols, a_debug_file_is_found_by_build_id)
{
	cr_expect(line_found_by_build_id(in_build_id_tree, (const char *[]){ "WSPROF_DEBUG_PATH=%s/debug", NULL }),
		  "peak_holder's line not found from DIR/.build-id/xx/yyyy.debug");
	cr_expect(!line_found_by_build_id(in_build_id_tree, NULL), "a line found without the debug file's directory");
}

/* What a debuginfod client (gdb, debuginfod-find) left in its cache:
 * read, never fetched (DEBUGINFOD_URLS set to nowhere changes nothing). */
Test(symbols, a_debug_file_is_found_in_the_debuginfod_cache)
{
	cr_expect(line_found_by_build_id(in_debuginfod_cache,
					 (const char *[]){ "DEBUGINFOD_CACHE_PATH=%s/dcache", "DEBUGINFOD_URLS=http://127.0.0.1:9/",
							   NULL }),
		  "peak_holder's line not found in the debuginfod client's cache");
	cr_expect(!line_found_by_build_id(in_debuginfod_cache, (const char *[]){ "DEBUGINFOD_CACHE_PATH=%s/elsewhere", NULL }),
		  "a line found without the cache");
}

/* Names kept beside a trace (TRACE.symbols) are for the builds it
 * recorded: the same path recorded again with another build of the
 * program (the same code, another build-id, its symbols stripped) is not
 * named from the names the first build left, though every offset is the
 * same; the first build's trace still is. */
Test(symbols, names_kept_for_one_build_are_not_given_to_another)
{
	const char *dir = wt_test_dir();
	char *orig = wt_prog("alloc_sites"), *copy = wt_path(dir, "sites_copy"), *lib = wt_prog("libsites.so");
	char *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json"), *cache = wt_path(dir, "t.wsp.symbols");
	copy_program(orig, copy);
	record_program(copy, trace, expect, lib, "wsprof record of the first build");
	struct wt_result r;
	struct wt_json *j = report(trace, (const char *[]){ "callsites", "--top", "0", NULL }, &r);
	cr_expect(find(wt_json_get(j, "sites"), "function", "peak_holder"), "the first build is not named:\n%s", r.out);
	cr_assert(wt_file_exists(cache), "no %s after the first report", cache);
	wt_json_free(j);
	wt_result_free(&r);

	/* Another build, stripped, recorded to the same trace path beside the names kept. */
	char *other = wt_path(dir, "other_build");
	copy_as_another_build(orig, other);
	wt_run(&r, (const char *[]){ "/usr/bin/objcopy", "--strip-all", other, copy, NULL });
	wt_assert_status(&r, 0, "objcopy --strip-all");
	wt_result_free(&r);
	unlink(trace);
	record_program(copy, trace, expect, lib, "wsprof record of the other build");
	j = report(trace, (const char *[]){ "callsites", "--top", "0", NULL }, &r);
	const struct wt_json *sites = wt_json_get(j, "sites");
	cr_expect_null(find(sites, "function", "peak_holder"), "the other build was named from the first one's names");
	bool offset_frame = false;
	for (size_t i = 0; sites && i < sites->count; i++) {
		const char *label = wt_json_str(&sites->items[i], "label");
		offset_frame |= label && strncmp(label, "sites_copy+0x", 13) == 0;
	}
	cr_expect(offset_frame, "the stripped build's frames are not module+offset:\n%s", r.out);
	wt_json_free(j);
	wt_result_free(&r);
	free(other), free(cache), free(expect), free(trace), free(lib), free(copy), free(orig);
}

/* A library of 4,000 functions without debug info (tests/progs/gen_many.c):
 * each allocation is named by the function that made it, found in the
 * symbol table by the index (analyzer/symbols/symbols.c), exactly. */
Test(symbols, a_module_of_thousands_of_symbols_names_each_exactly)
{
	static const long picks[] = { 0, 1, 1234, 1999, 2000, 3998, 3999 };
	const char *args[16];
	char text[sizeof picks / sizeof *picks][16];
	size_t n = 0;
	for (size_t i = 0; i < sizeof picks / sizeof *picks; i++) {
		snprintf(text[i], sizeof text[i], "%ld", picks[i]);
		args[n++] = text[i];
	}
	args[n] = NULL;
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_many", args);
	wt_assert_status(&rec.run, 0, "wsprof record alloc_many");
	struct wt_result r;
	struct wt_json *leaks = report(rec.trace, (const char *[]){ "leaks", "--top", "0", NULL }, &r);
	const struct wt_json *stacks = wt_json_get(leaks, "stacks");
	cr_assert(stacks, "no stacks in the leaks report");
	for (size_t i = 0; i < sizeof picks / sizeof *picks; i++) {
		char want[32];
		snprintf(want, sizeof want, "many_%ld", picks[i]);
		bool found = false;
		for (size_t k = 0; k < stacks->count && !found; k++) {
			uint64_t bytes = 0;
			wt_json_u64(&stacks->items[k], "leaked_bytes", &bytes);
			if (bytes != (uint64_t)(16 + 8 * picks[i]))
				continue;
			found = true;
			const char *fn = wt_json_str(&stacks->items[k], "stack.0.function");
			cr_expect(fn && strcmp(fn, want) == 0, "the %llu-byte block is named %s, not %s",
				  (unsigned long long)bytes, fn ? fn : "(nothing)", want);
		}
		cr_expect(found, "no leaked block of %ld bytes (from %s)", 16 + 8 * picks[i], want);
	}
	wt_json_free(leaks);
	wt_result_free(&r);
	wt_recording_free(&rec);
}
