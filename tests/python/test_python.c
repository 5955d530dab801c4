/*
 * test_python.c - Python programs under `wsprof record`: each allocation
 * of known.py at its function's qualified name and the exact line of its
 * "#@NAME" marker, on every CPython 3.11+ found here (Debian's
 * /usr/bin/python3, which ./dev.sh installs, and pyenv's when present);
 * the recorder's line tables decoded as CPython's own PyCode_Addr2Line
 * says (linetables.py); interpreters it cannot read (an older Python, a
 * library whose layout does not validate) run unchanged, and the summary
 * says why there are no Python frames.
 */
#include "harness.h"

#include "wsprof/trace.h"

#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(python, .fini = wt_cleanup, .timeout = 240);

#define BASE 7340000 /* known.py's sizes: BASE + k */

/* The CPython 3.11+ interpreters of this machine. @return how many (paths malloc'd). */
static size_t pythons(char *out[], size_t max)
{
	size_t n = 0;
	if (access("/usr/bin/python3", X_OK) == 0)
		out[n++] = strdup("/usr/bin/python3");
	glob_t g;
	const char *home = getenv("HOME");
	char pattern[4096];
	snprintf(pattern, sizeof pattern, "%s/.pyenv/versions/3.1[1-9]*/bin/python3", home ? home : "/root");
	if (glob(pattern, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc && n < max; i++)
			out[n++] = strdup(g.gl_pathv[i]);
		globfree(&g);
	}
	return n;
}

/* pythons(), or the test skipped when there is none. */
static size_t pythons_or_skip(char *out[16])
{
	size_t n = pythons(out, 16);
	if (!n)
		cr_skip_test("no CPython 3.11+ here (./dev.sh installs python3)");
	return n;
}

static void pythons_free(char *py[], size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(py[i]);
}

static char *source(const char *name)
{
	return wt_path(getenv("WSPROF_SOURCE_ROOT"), "tests/python/%s", name);
}

/* The line of known.py holding "#@name". */
static int marker_line(const char *script, const char *name)
{
	char *text = wt_read_file(script, NULL);
	cr_assert(text, "cannot read %s", script);
	char want[128];
	snprintf(want, sizeof want, "#@%s\n", name);
	int line = 1;
	for (const char *p = text; *p; p++) {
		if (*p == '\n') {
			line++;
		} else if (*p == '#' && !strncmp(p, want, strlen(want))) {
			free(text);
			return line;
		}
	}
	free(text);
	cr_assert_fail("no marker #@%s in %s", name, script);
	return 0;
}

/* A Python frame of an allocation: what the trace says of it. */
struct pyframe {
	char name[128], file[256];
	int line;
};

struct seen {
	uint64_t size;
	unsigned kind;
	size_t nframes, npython;
	struct pyframe py[4]; /* the innermost Python frames */
	unsigned count;       /* allocations of this size */
};

struct reading {
	struct seen *v;
	size_t n, cap;
	const wsprof_python *python;
	wsprof_trace *t;
};

static void note(struct reading *r, const wsprof_trace *t, const wsprof_event *ev)
{
	uint64_t ips[1024];
	size_t depth = wsprof_trace_stack(t, ev->stack, ips, 1024);
	struct seen s = { .size = ev->size, .kind = ev->kind, .nframes = depth, .count = 1 };
	for (size_t i = 0; i < depth && i < 1024; i++) {
		if (!WSPROF_IS_PYFRAME(ips[i]))
			continue;
		const wsprof_pycode *c = wsprof_trace_pycode(t, WSPROF_PYFRAME_CODE(ips[i]));
		if (s.npython < 4) {
			struct pyframe *f = &s.py[s.npython];
			snprintf(f->name, sizeof f->name, "%s", c ? c->qualname : "?");
			snprintf(f->file, sizeof f->file, "%s", c ? c->filename : "?");
			f->line = wsprof_pycode_line(c, WSPROF_PYFRAME_INSTR(ips[i]));
		}
		s.npython++;
	}
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 256;
		r->v = realloc(r->v, r->cap * sizeof *r->v);
		cr_assert(r->v);
	}
	r->v[r->n++] = s;
}

/* Every allocation of a trace, with its innermost Python frames. */
static void read_trace(struct reading *r, const char *path)
{
	memset(r, 0, sizeof *r);
	cr_assert_eq(wsprof_trace_open(path, &r->t), 0, "cannot open %s", path);
	wsprof_event ev;
	while (wsprof_trace_next(r->t, &ev) > 0)
		if (ev.type == WSPROF_EV_ALLOC)
			note(r, r->t, &ev);
	r->python = wsprof_trace_python(r->t);
}

static void reading_free(struct reading *r)
{
	free(r->v);
	wsprof_trace_close(r->t);
}

static const struct seen *of_size(const struct reading *r, uint64_t size)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].size == size && r->v[i].kind == WSPROF_KIND_HEAP)
			return &r->v[i];
	return NULL;
}

/* The allocation of `size` has `name` at `line` as its innermost Python frame. */
static const struct seen *expect_at(const struct reading *r, const char *py, uint64_t size, const char *name,
				    const char *file_end, int line)
{
	const struct seen *s = of_size(r, size);
	cr_expect(s, "%s: no allocation of %llu bytes recorded", py, (unsigned long long)size);
	if (!s)
		return NULL;
	cr_expect_gt(s->npython, 0, "%s: the allocation of %llu bytes (%s) has no Python frames", py,
		     (unsigned long long)size, name);
	if (!s->npython)
		return s;
	const struct pyframe *f = &s->py[0];
	size_t fl = strlen(f->file), el = strlen(file_end);
	cr_expect_str_eq(f->name, name, "%s: %llu bytes at %s, not %s", py, (unsigned long long)size, f->name, name);
	cr_expect(fl >= el && !strcmp(f->file + fl - el, file_end), "%s: %s is in %s, not %s", py, name, f->file,
		  file_end);
	cr_expect_eq(f->line, line, "%s: %s allocates at line %d, the trace says %d", py, name, line, f->line);
	return s;
}

static void record_known(const char *py, const char *const env[], const char *opt, struct wt_recording *rec,
			 char **script)
{
	memset(rec, 0, sizeof *rec);
	rec->dir = wt_test_dir();
	rec->trace = wt_path(rec->dir, "t.wsp");
	rec->expect_path = wt_path(rec->dir, "expect.json");
	*script = source("known.py");
	char base[32];
	snprintf(base, sizeof base, "%d", BASE);
	const char *argv[24];
	size_t n = 0;
	if (env && env[0])
		argv[n++] = "/usr/bin/env";
	for (size_t i = 0; env && env[i]; i++)
		argv[n++] = env[i];
	argv[n++] = wt_wsprof();
	argv[n++] = "record";
	if (opt)
		argv[n++] = opt;
	const char *rest[] = { "-o", rec->trace, "--", py, *script, rec->expect_path, base, NULL };
	for (size_t i = 0; rest[i]; i++)
		argv[n++] = rest[i];
	argv[n] = NULL;
	cr_assert_eq(wt_run(&rec->run, argv), 0);
	wt_assert_status(&rec->run, 0, py);
	cr_expect(strstr(rec->run.out, "known.py done"), "%s: known.py did not finish: %s", py, rec->run.out);
	rec->expect = wt_json_load(rec->expect_path);
}

static void check_known(const char *py)
{
	struct wt_recording rec;
	char *script;
	record_known(py, NULL, NULL, &rec, &script);
	struct reading r;
	read_trace(&r, rec.trace);
	cr_assert(r.python->seen && r.python->frames, "%s: the trace has no Python frames: %s", py,
		  r.python->note ? r.python->note : "no PYTHON record");

	const struct seen *s = expect_at(&r, py, BASE + 0, "plain", "known.py", marker_line(script, "plain"));
	if (s && s->npython >= 2) {
		cr_expect_str_eq(s->py[1].name, "<module>", "%s: plain is called from <module>", py);
		cr_expect_eq(s->py[1].line, marker_line(script, "module_plain"), "%s: <module> calls plain there", py);
	}
	expect_at(&r, py, BASE + 1, "Holder.method", "known.py", marker_line(script, "method"));
	expect_at(&r, py, BASE + 2, "generator", "known.py", marker_line(script, "generator"));
	s = expect_at(&r, py, BASE + 3, "deep", "known.py", marker_line(script, "deep"));
	if (s)
		cr_expect(s->npython >= 64 && s->npython <= 300,
			  "%s: 301 frames deep, the stack keeps its innermost ones up to the cap, not %zu", py, s->npython);
	expect_at(&r, py, BASE + 4, "on_thread", "known.py", marker_line(script, "on_thread"));
	for (int i = 0; i < 40; i++) {
		char name[32];
		snprintf(name, sizeof name, "made_%d", i);
		expect_at(&r, py, BASE + 1000 + i, name, "<string>", 2);
	}

	/* 20,000 small objects in one function: pymalloc's arenas (mmap) opened there. */
	int line = marker_line(script, "small_objects");
	uint64_t arena_bytes = 0;
	for (size_t i = 0; i < r.n; i++)
		if (r.v[i].kind == WSPROF_KIND_MMAP && r.v[i].npython && !strcmp(r.v[i].py[0].name, "small_objects") &&
		    r.v[i].py[0].line == line)
			arena_bytes += r.v[i].size;
	cr_expect_geq(arena_bytes, 1u << 20, "%s: 20,000 objects of ~110 bytes, %llu bytes of arenas at small_objects", py,
		      (unsigned long long)arena_bytes);
	reading_free(&r);

	/* The forked child's own trace. */
	char *child = wt_path(rec.dir, "t.wsp.%llu", (unsigned long long)wt_u64(rec.expect, "child_pid"));
	read_trace(&r, child);
	cr_expect(r.python->seen && r.python->frames, "%s: the child's trace has no Python frames", py);
	expect_at(&r, py, BASE + 2000, "child", "known.py", marker_line(script, "child"));
	reading_free(&r);

	/* What a user reads: the sites are the lines. */
	char label[512];
	struct wt_result cs;
	const char *argv[] = { wt_wsprof(), "report", "callsites", "--top", "0", rec.trace, NULL };
	cr_assert_eq(wt_run(&cs, argv), 0);
	wt_assert_status(&cs, 0, "wsprof report callsites");
	snprintf(label, sizeof label, "py Holder.method (known.py:%d)", marker_line(script, "method"));
	cr_expect(strstr(cs.out, label), "%s: callsites does not show %s:\n%s", py, label, cs.out);
	wt_result_free(&cs);
	free(child);
	free(script);
	wt_recording_free(&rec);
}

Test(python, each_allocation_at_its_function_and_line)
{
	char *py[16];
	size_t n = pythons_or_skip(py);
	for (size_t i = 0; i < n; i++)
		check_known(py[i]);
	pythons_free(py, n);
}

Test(python, every_object_with_pythonmalloc_malloc)
{
	char *py[16];
	size_t n = pythons_or_skip(py);
	struct wt_recording rec;
	char *script;
	record_known(py[0], (const char *[]){ "PYTHONMALLOC=malloc", NULL }, NULL, &rec, &script);
	struct reading r;
	read_trace(&r, rec.trace);
	cr_expect_eq(r.python->objects, WSPROF_PYOBJ_MALLOC, "the PYTHON record says objects are malloc'd");
	int line = marker_line(script, "small_objects");
	size_t objects = 0;
	for (size_t i = 0; i < r.n; i++)
		objects += r.v[i].kind == WSPROF_KIND_HEAP && r.v[i].npython && r.v[i].size <= 512 &&
			   !strcmp(r.v[i].py[0].name, "small_objects") && r.v[i].py[0].line == line;
	cr_expect_geq(objects, 20000, "20,000 tuples (and their strings) each a malloc at small_objects, got %zu", objects);
	reading_free(&r);
	free(script);
	wt_recording_free(&rec);
	pythons_free(py, n);
}

/* linetables.py prints, for code objects of the interpreter's own library,
 * "firstlineno hex-linetable line line ..." (PyCode_Addr2Line of every
 * instruction); each line must be what wsprof_pycode_line decodes. */
Test(python, lines_are_pycode_addr2line)
{
	char *py[16];
	size_t n = pythons_or_skip(py);
	char *script = source("linetables.py");
	for (size_t k = 0; k < n; k++) {
		struct wt_result res;
		const char *argv[] = { py[k], script, NULL };
		cr_assert_eq(wt_run(&res, argv), 0);
		wt_assert_status(&res, 0, "linetables.py");
		size_t codes = 0, checked = 0;
		for (char *line = strtok(res.out, "\n"); line; line = strtok(NULL, "\n")) {
			char *p = line;
			unsigned first = (unsigned)strtoul(p, &p, 10);
			while (*p == ' ')
				p++;
			size_t hexlen = strcspn(p, " ");
			uint8_t *table = malloc(hexlen / 2 + 1);
			for (size_t i = 0; i + 1 < hexlen; i += 2) {
				unsigned b;
				sscanf(p + i, "%2x", &b);
				table[i / 2] = (uint8_t)b;
			}
			p += hexlen;
			wsprof_pycode c = { "code", "file", first, table, hexlen / 2 };
			for (uint64_t instr = 1; *p; instr++) {
				long want = strtol(p, &p, 10);
				cr_assert_eq(wsprof_pycode_line(&c, instr), want,
					     "%s: code at line %u, instruction %llu: PyCode_Addr2Line says %ld, wsprof %d",
					     py[k], first, (unsigned long long)(instr - 1), want, wsprof_pycode_line(&c, instr));
				checked++;
				while (*p == ' ')
					p++;
			}
			cr_assert_eq(wsprof_pycode_line(&c, 0), (int)first, "before its first instruction: the first line");
			free(table);
			codes++;
		}
		cr_expect_gt(codes, 1000, "%s: linetables.py gave %zu code objects", py[k], codes);
		cr_log_info("%s: %zu instructions of %zu code objects", py[k], checked, codes);
		wt_result_free(&res);
	}
	pythons_free(py, n);
	free(script);
}

/* A program that loads something exporting CPython's names whose layout
 * does not validate: no Python frames, one line saying why, and the
 * program's own output and books as without wsprof. */
Test(python, a_layout_that_does_not_validate_is_left_alone)
{
	char *prog = wt_prog("embeds_fake"), *lib = wt_prog("libfakepython.so");
	struct wt_result plain;
	cr_assert_eq(wt_run(&plain, (const char *[]){ prog, lib, NULL }), 0);
	wt_assert_status(&plain, 0, "embeds_fake");
	const char *dir = wt_test_dir();
	char *trace = wt_path(dir, "fake.wsp");
	struct wt_result traced;
	cr_assert_eq(wt_run(&traced, (const char *[]){ wt_wsprof(), "record", "-o", trace, "--", prog, lib, NULL }), 0);
	wt_assert_status(&traced, 0, "wsprof record embeds_fake");
	cr_expect_str_eq(traced.out, plain.out, "the program prints the same under wsprof");

	struct reading r;
	read_trace(&r, trace);
	cr_expect(r.python->seen && !r.python->frames, "the fake interpreter is found and refused");
	cr_expect(r.python->note && strstr(r.python->note, "not laid out"), "it says why: %s", r.python->note);
	size_t blocks = 0;
	for (size_t i = 0; i < r.n; i++) {
		blocks += r.v[i].kind == WSPROF_KIND_HEAP && r.v[i].size % 100 == 0 && r.v[i].size <= 10000 && r.v[i].size;
		cr_expect_eq(r.v[i].npython, 0, "no Python frames from a layout that did not validate");
	}
	cr_expect_geq(blocks, 100, "its 100 blocks are recorded as ever");
	reading_free(&r);

	struct wt_result sum;
	cr_assert_eq(wt_run(&sum, (const char *[]){ wt_wsprof(), "report", "summary", trace, NULL }), 0);
	cr_expect(strstr(sum.out, "python    3.11.2 (libfakepython.so): no Python frames, its objects are not laid out"),
		  "the summary says it in one line:\n%s", sum.out);
	wt_result_free(&sum);
	wt_result_free(&traced);
	wt_result_free(&plain);
	free(trace);
	free(prog);
	free(lib);
}

/* CPython before 3.11 (pyenv's, when there is one): it runs as it does
 * without wsprof, and the summary says there are no Python frames. */
Test(python, an_older_python_runs_unchanged)
{
	glob_t g;
	const char *home = getenv("HOME");
	char pattern[4096];
	snprintf(pattern, sizeof pattern, "%s/.pyenv/versions/3.10*/bin/python3", home ? home : "/root");
	if (glob(pattern, 0, NULL, &g) != 0)
		cr_skip_test("no CPython 3.10 here (pyenv)");
	const char *py = g.gl_pathv[0];
	const char *code = "import json; print(json.dumps(sorted({str(i): i for i in range(1000)}.items())[:3]))";
	struct wt_result plain, traced, sum;
	cr_assert_eq(wt_run(&plain, (const char *[]){ py, "-c", code, NULL }), 0);
	char *trace = wt_path(wt_test_dir(), "old.wsp");
	cr_assert_eq(wt_run(&traced, (const char *[]){ wt_wsprof(), "record", "-o", trace, "--", py, "-c", code, NULL }), 0);
	wt_assert_status(&traced, 0, py);
	cr_expect_str_eq(traced.out, plain.out, "%s prints the same under wsprof", py);
	cr_assert_eq(wt_run(&sum, (const char *[]){ wt_wsprof(), "report", "summary", trace, NULL }), 0);
	cr_expect(strstr(sum.out, "python    older than 3.11 (libpython3.10") &&
			  strstr(sum.out, "no Python frames (3.11 or later has them)"),
		  "the summary says why there are no Python frames:\n%s", sum.out);
	wt_result_free(&sum);
	wt_result_free(&traced);
	wt_result_free(&plain);
	free(trace);
	globfree(&g);
}

/* --python-objects (WSPROF_PYTHON_OBJECTS=1): every object pymalloc serves is a pool block
 * at its line, on every CPython here; the program runs as ever. */
Test(python, every_small_object_with_python_objects)
{
	char *py[16];
	size_t n = pythons_or_skip(py);
	for (size_t k = 0; k < n; k++) {
		struct wt_recording rec;
		char *script;
		record_known(py[k], NULL, "--python-objects", &rec, &script);
		struct reading r;
		read_trace(&r, rec.trace);
		cr_expect_eq(r.python->objects, WSPROF_PYOBJ_HOOKED, "%s: the PYTHON record says objects are hooked", py[k]);
		int line = marker_line(script, "small_objects");
		size_t objects = 0;
		for (size_t i = 0; i < r.n; i++)
			objects += r.v[i].kind == WSPROF_KIND_POOL && r.v[i].npython && r.v[i].size <= 512 &&
				   !strcmp(r.v[i].py[0].name, "small_objects") && r.v[i].py[0].line == line;
		cr_expect_geq(objects, 20000, "%s: 20,000 tuples and their strings, pool blocks at small_objects: %zu",
			      py[k], objects);
		/* Larger objects stay heap blocks, recorded once: plain's bytearray. */
		size_t heap = 0, pool = 0;
		for (size_t i = 0; i < r.n; i++) {
			heap += r.v[i].size == BASE && r.v[i].kind == WSPROF_KIND_HEAP;
			pool += r.v[i].size == BASE - 1 && r.v[i].kind == WSPROF_KIND_POOL;
		}
		cr_expect(heap == 1 && pool == 0, "%s: plain's block is one heap block, not a pool one too (%zu, %zu)", py[k],
			  heap, pool);
		reading_free(&r);
		free(script);
		wt_recording_free(&rec);
	}
	pythons_free(py, n);
}

/* --no-python (WSPROF_PYTHON=0): native stacks only, and the summary says so. */
Test(python, no_python_records_native_stacks_only)
{
	char *py[16];
	size_t n = pythons_or_skip(py);
	struct wt_recording rec;
	char *script;
	record_known(py[0], NULL, "--no-python", &rec, &script);
	struct reading r;
	read_trace(&r, rec.trace);
	cr_expect(r.python->seen && !r.python->frames, "the interpreter is found, its frames not recorded");
	cr_expect(r.python->note && strstr(r.python->note, "WSPROF_PYTHON=0"), "it says why: %s", r.python->note);
	size_t with = 0;
	for (size_t i = 0; i < r.n; i++)
		with += r.v[i].npython > 0;
	cr_expect_eq(with, 0, "no stack has Python frames");
	cr_expect(of_size(&r, BASE), "plain's block is there, with its native stack");
	reading_free(&r);
	free(script);
	wt_recording_free(&rec);
	pythons_free(py, n);
}

/* The acceptance run of issue 19, where Debian's python3-torch is here:
 * a CPU PyTorch training loop's top sites are lines of the script, and
 * its flame graph runs from <module> through the script and PyTorch's
 * Python down to c10::alloc_cpu. */
Test(python, a_pytorch_training_loop_is_sited_at_its_script)
{
	struct wt_result probe;
	cr_assert_eq(wt_run(&probe, (const char *[]){ "/usr/bin/python3", "-c", "import torch", NULL }), 0);
	bool have = probe.status == 0;
	wt_result_free(&probe);
	if (!have)
		cr_skip_test("no python3-torch here (apt-get install python3-torch)");
	char *script = wt_path(getenv("WSPROF_SOURCE_ROOT"), "bench/torch_cpu_loop.py");
	char *trace = wt_path(wt_test_dir(), "torch.wsp"), *folded = wt_path(wt_test_dir(), "torch.folded");
	struct wt_result rec, cs, fl;
	cr_assert_eq(wt_run(&rec, (const char *[]){ wt_wsprof(), "record", "-o", trace, "--", "/usr/bin/python3", script,
						 "2", NULL }),
		     0);
	wt_assert_status(&rec, 0, "wsprof record torch_cpu_loop.py");
	cr_assert_eq(wt_run(&cs, (const char *[]){ wt_wsprof(), "report", "callsites", "--top", "10", trace, NULL }), 0);
	wt_assert_status(&cs, 0, "wsprof report callsites");
	size_t lines = 0;
	for (const char *p = cs.out; (p = strstr(p, "py <module> (torch_cpu_loop.py:")); p++)
		lines++;
	cr_expect_geq(lines, 3, "the top 10 sites hold at least 3 lines of the script:\n%s", cs.out);
	cr_assert_eq(wt_run(&fl, (const char *[]){ wt_wsprof(), "report", "flame", "--format", "folded", "-o", folded,
						trace, NULL }),
		     0);
	wt_assert_status(&fl, 0, "wsprof report flame --format folded");
	char *text = wt_read_file(folded, NULL);
	cr_assert(text, "no folded stacks written");
	bool found = false;
	for (char *line = strtok(text, "\n"); line && !found; line = strtok(NULL, "\n")) {
		char *module = strstr(line, "py <module> (torch_cpu_loop.py:"), *torch = module ? strstr(module, ".py:") : NULL;
		char *inner = torch ? strstr(torch + 4, "py ") : NULL, *alloc = inner ? strstr(inner, "c10::alloc_cpu") : NULL;
		found = alloc != NULL;
	}
	cr_expect(found, "a flame stack from the script's <module> through PyTorch's Python to c10::alloc_cpu");
	free(text);
	wt_result_free(&fl);
	wt_result_free(&cs);
	wt_result_free(&rec);
	free(folded);
	free(trace);
	free(script);
}

/* libpython loaded with dlopen by a C program, after recording began:
 * found then, and its Python frames recorded (Debian's libpython3.11,
 * pyenv's libpython3.X, as found). */
Test(python, an_interpreter_loaded_later_by_dlopen)
{
	glob_t g;
	const char *home = getenv("HOME");
	char pattern[4096];
	snprintf(pattern, sizeof pattern, "{/usr/lib/x86_64-linux-gnu/libpython3.1[1-9].so.1.0,%s/.pyenv/versions/3.1[1-9]*/lib/libpython3.1[1-9].so.1.0}",
		 home ? home : "/root");
	if (glob(pattern, GLOB_BRACE, NULL, &g) != 0)
		cr_skip_test("no libpython 3.11+ here (apt-get install libpython3.11)");
	char *prog = wt_prog("embeds_python");
	for (size_t k = 0; k < g.gl_pathc; k++) {
		const char *lib = g.gl_pathv[k];
		char *trace = wt_path(wt_test_dir(), "embedded.%zu.wsp", k), size[32];
		snprintf(size, sizeof size, "%d", BASE + 50);
		struct wt_result res;
		cr_assert_eq(wt_run(&res, (const char *[]){ wt_wsprof(), "record", "-o", trace, "--", prog, lib, size, NULL }), 0);
		wt_assert_status(&res, 0, lib);
		cr_expect(strstr(res.out, "embeds_python: made"), "%s: the script ran: %s", lib, res.out);
		struct reading r;
		read_trace(&r, trace);
		cr_expect(r.python->seen && r.python->frames, "%s: found after its dlopen, with Python frames", lib);
		expect_at(&r, lib, BASE + 50, "embedded", "<string>", 2);
		reading_free(&r);
		wt_result_free(&res);
		free(trace);
	}
	free(prog);
	globfree(&g);
}

/* What a user reads and sees: --stacks picks the frames every report
 * shows, the heatmap by call site and the flame graph name the lines, and
 * Python boxes are blue where native ones are warm. */
static char *report(const char *const argv[])
{
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0);
	wt_assert_status(&r, 0, argv[2]);
	char *out = r.out;
	r.out = NULL;
	wt_result_free(&r);
	return out;
}

Test(python, the_views_and_pictures_show_python_frames)
{
	char *py[16];
	size_t n = pythons_or_skip(py);
	struct wt_recording rec;
	char *script;
	record_known(py[0], NULL, NULL, &rec, &script);
	char want[256];
	snprintf(want, sizeof want, "py Holder.method (known.py:%d)", marker_line(script, "method"));
	const char *w = wt_wsprof(), *t = rec.trace;

	char *native = report((const char *[]){ w, "report", "callsites", "--stacks", "native", "--full-stacks", t, NULL });
	cr_expect(!strstr(native, "at py "), "--stacks native shows no Python frame");
	char *python = report((const char *[]){ w, "report", "callsites", "--stacks=python", "--full-stacks", "--top", "0",
						 t, NULL });
	cr_expect(strstr(python, want), "--stacks python sites at %s", want);
	/* The row of Holder.method: only Python frames under it. */
	const char *row = strstr(python, want), *line = row ? strchr(row, '\n') : NULL;
	size_t frames = 0;
	for (; line && !strncmp(line + 1, "      at ", 9); line = strchr(line + 1, '\n'), frames++)
		cr_expect(!strncmp(line + 10, "py ", 3), "--stacks python shows Python frames alone: %.60s", line + 1);
	cr_expect_geq(frames, 2, "Holder.method's stack: itself and <module>");
	char *merged = report((const char *[]){ w, "report", "callsites", "--stacks", "merged", "--top", "0", t, NULL });
	cr_expect(!strstr(merged, "py Holder.method"), "--stacks merged sites at the first frame, native code");
	struct wt_result bad;
	cr_assert_eq(wt_run(&bad, (const char *[]){ w, "report", "callsites", "--stacks", "java", t, NULL }), 0);
	cr_expect_eq(bad.status, 2, "an unknown view is refused");
	cr_expect(strstr(bad.err, "use python, native or merged"), "in one line that says what to use: %s", bad.err);

	char *heat = report((const char *[]){ w, "report", "heatmap", "--by", "callsite", "--top", "45", t, NULL });
	cr_expect(strstr(heat, "py made_") && strstr(heat, " (<string>:2) "), "the heatmap by call site names Python lines:\n%s", heat);
	char *svg_path = wt_path(rec.dir, "flame.svg");
	free(report((const char *[]){ w, "report", "flame", "--metric", "bytes", "-o", svg_path, t, NULL }));
	char *svg = wt_read_file(svg_path, NULL);
	cr_assert(svg, "no flame graph written");
	/* The box whose title is a Python line: its fill is blue (b > r). */
	const char *title = strstr(svg, "<title>py Holder.method");
	cr_assert(title, "the flame graph has a box for Holder.method");
	const char *fill = strstr(title, "fill=\"rgb(");
	unsigned r = 0, g = 0, b = 0;
	cr_assert(fill && sscanf(fill, "fill=\"rgb(%u,%u,%u)", &r, &g, &b) == 3, "its box has a fill");
	cr_expect_gt(b, r, "a Python box is blue: rgb(%u,%u,%u)", r, g, b);
	free(svg);
	free(svg_path);
	free(heat);
	wt_result_free(&bad);
	free(merged);
	free(python);
	free(native);
	free(script);
	wt_recording_free(&rec);
	pythons_free(py, n);
}
