/*
 * test_symcache.c - the names kept beside a trace (TRACE.symbols,
 * analyzer/symbols/cache.c, doc/symbol-cache.md): written by one report
 * and read by the next, which then names from it alone; a file damaged
 * anywhere, or kept for another trace at the same path, names nothing,
 * is said in one line, and is written anew.
 *
 * The traces are built here with one module, this test program itself
 * (its build-id, where it is loaded), and one stack in it, so that a
 * first report reads the real file.
 */
#include "analyzer.h"
#include "trace_builder.h"

#include <criterion/criterion.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <libelf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The frame the traces' stack holds. */
__attribute__((noinline, used)) int symcache_marker(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

struct self {
	char path[4096];
	uint8_t build_id[64];
	size_t build_id_len;
	uint64_t base;
	struct tb_segdesc segs[8];
	size_t nsegs;
};

static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct self *me = arg;
	me->base = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum && me->nsegs < 8; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD)
			me->segs[me->nsegs++] = (struct tb_segdesc){ info->dlpi_phdr[i].p_vaddr, info->dlpi_phdr[i].p_memsz,
								     info->dlpi_phdr[i].p_flags };
	return 1; /* the program is the first */
}

/* This program as the trace records a module. Skips without a build-id. */
static void find_self(struct self *me)
{
	memset(me, 0, sizeof *me);
	ssize_t n = readlink("/proc/self/exe", me->path, sizeof me->path - 1);
	cr_assert_gt(n, 0);
	dl_iterate_phdr(first_object, me);
	elf_version(EV_CURRENT);
	int fd = open(me->path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	const void *id = NULL;
	ssize_t len = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
	if (len > 0 && len <= 64) {
		memcpy(me->build_id, id, (size_t)len);
		me->build_id_len = (size_t)len;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	if (!me->build_id_len)
		cr_skip_test("this test program has no build-id: nothing is cached without one");
}

/* A trace of process pid started at start_ns: this program loaded, one
 * allocation at symcache_marker. */
static void write_trace(const char *path, uint32_t pid, uint64_t start_ns)
{
	struct self me;
	find_self(&me);
	struct tb_process proc = tb_process_default();
	proc.pid = pid;
	proc.start_realtime_ns = start_ns;
	struct trace_builder b;
	tb_init(&b);
	tb_header(&b, &proc);
	tb_segment(&b, 1, 0, 0);
	tb_ev_module_load(&b, 1, 1, me.base, me.path, me.build_id, me.build_id_len, me.segs, me.nsegs);
	tb_stack(&b, 1, 0, (uint64_t)(uintptr_t)&symcache_marker + 4);
	tb_ev_alloc(&b, 2, 2, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x1000, 64, 1);
	tb_sync(&b, 3, 3);
	tb_chunk(&b);
	tb_footer(&b, 4);
	cr_assert_eq(tb_save(&b, path), 0);
	tb_fini(&b);
}

/* What one report names: the function of the stack's first frame (NULL:
 * none), with the warnings it wrote in *warned (free it). */
static char *name_once(const char *trace, char **warned)
{
	size_t wlen;
	FILE *warn = open_memstream(warned, &wlen);
	struct wsp_syms *s = wsp_syms_new(warn, WSP_STACKS_DEFAULT);
	cr_assert_not_null(s);
	wsp_syms_cache(s, trace);
	wsprof_trace *t;
	cr_assert_geq(wsprof_trace_open(trace, &t), 0);
	wsprof_event ev;
	while (wsprof_trace_next(t, &ev) > 0)
		if (ev.type == WSPROF_EV_ALLOC)
			cr_assert_eq(wsp_syms_note_stack(s, t, ev.stack), 0);
	wsp_syms_noted_all(s);
	const struct wsp_frame *f;
	size_t n = wsp_syms_stack(s, t, 1, &f);
	char *function = n && f[0].function ? strdup(f[0].function) : NULL;
	wsp_syms_free(s); /* writes the cache */
	wsprof_trace_close(t);
	fclose(warn);
	return function;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "no %s", path);
	char *text = NULL;
	size_t cap = 0;
	ssize_t n = getdelim(&text, &cap, '\0', f);
	fclose(f);
	cr_assert_geq(n, 0);
	return text;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

/* The checksum the end line holds: FNV-1a 64 of all the text before it. */
static uint64_t fnv1a(const char *p, size_t n)
{
	uint64_t h = 14695981039346656037ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
	return h;
}

/* The file with every "symcache_marker" named "from_the_cache" instead,
 * and its end line written for what it now holds: a whole, valid file
 * whose names can only come from it. */
static void rename_in_cache(const char *path)
{
	char *text = read_text(path), *end = strstr(text, "\nend\t");
	cr_assert_not_null(end, "no end line:\n%s", text);
	end[1] = 0;
	char *out = calloc(1, strlen(text) * 2 + 64), *o = out;
	const char *from = "symcache_marker", *to = "from_the_cache";
	for (const char *at = text; *at;) {
		if (!strncmp(at, from, strlen(from))) {
			o = stpcpy(o, to);
			at += strlen(from);
		} else {
			*o++ = *at++;
		}
	}
	unsigned records = 0;
	for (const char *l = out; (l = strchr(l, '\n')) && l[1]; l++)
		records += l[1] != '\t' && strncmp(l + 1, "trace\t", 6) != 0;
	snprintf(o, 64, "end\t%u\t%016llx\n", records, (unsigned long long)fnv1a(out, (size_t)(o - out)));
	write_text(path, out);
	free(out);
	free(text);
}

struct place {
	char dir[64], trace[128], cache[160];
};

static void make_place(struct place *p)
{
	snprintf(p->dir, sizeof p->dir, "/tmp/wsprof-symcache-XXXXXX");
	cr_assert_not_null(mkdtemp(p->dir));
	snprintf(p->trace, sizeof p->trace, "%s/t.wsp", p->dir);
	snprintf(p->cache, sizeof p->cache, "%s.symbols", p->trace);
	setenv("WSPROF_SYMBOL_CACHE", "1", 1);
}

static void remove_place(struct place *p)
{
	unlink(p->cache);
	unlink(p->trace);
	rmdir(p->dir);
}

Test(symcache, what_one_report_names_the_next_reads)
{
	struct place p;
	make_place(&p);
	write_trace(p.trace, 4242, 1700000000000000000ull);
	char *warned, *fn = name_once(p.trace, &warned);
	cr_assert_str_eq(fn ? fn : "(none)", "symcache_marker");
	cr_expect_str_empty(warned);
	free(fn), free(warned);

	char *text = read_text(p.cache);
	cr_expect(!strncmp(text, "wsprof symbols 2\ntrace\t4242\t1700000000000000000\n", 46), "%s", text);
	cr_expect(strstr(text, "\tsymcache_marker\t"), "%s", text);
	free(text);

	/* Read back without a word, the same names. */
	fn = name_once(p.trace, &warned);
	cr_expect_str_eq(fn ? fn : "(none)", "symcache_marker");
	cr_expect_str_empty(warned);
	free(fn), free(warned);

	/* And it is the file that names them, not the module. */
	rename_in_cache(p.cache);
	fn = name_once(p.trace, &warned);
	cr_expect_str_eq(fn ? fn : "(none)", "from_the_cache");
	cr_expect_str_empty(warned);
	free(fn), free(warned);
	remove_place(&p);
}

/* Damage of every sort: the file says so in one line, names nothing, and
 * the next report finds a whole file again. */
static void damaged(void (*damage)(char *text, const char *path), const char *why)
{
	struct place p;
	make_place(&p);
	write_trace(p.trace, 4242, 1700000000000000000ull);
	char *warned, *fn = name_once(p.trace, &warned);
	free(fn), free(warned);
	rename_in_cache(p.cache); /* any name from it would be "from_the_cache" */
	char *text = read_text(p.cache);
	damage(text, p.cache);
	free(text);

	fn = name_once(p.trace, &warned);
	cr_expect_str_eq(fn ? fn : "(none)", "symcache_marker", "named from a damaged cache (%s)", why);
	cr_expect(strstr(warned, p.cache) && strstr(warned, why), "the warning: %s", warned);
	cr_expect(strchr(warned, '\n') == warned + strlen(warned) - 1, "more than one line: %s", warned);
	free(fn), free(warned);

	fn = name_once(p.trace, &warned);
	cr_expect_str_eq(fn ? fn : "(none)", "symcache_marker");
	cr_expect_str_empty(warned, "not written anew: %s", warned);
	free(fn), free(warned);
	remove_place(&p);
}

/* A letter of a name changed, the checksum left as it was. */
static void flip_a_letter(char *text, const char *path)
{
	char *at = strstr(text, "from_the_cache");
	cr_assert_not_null(at);
	at[0] = 'F';
	write_text(path, text);
}

/* Cut in the middle of a name: no end line. */
static void cut_short(char *text, const char *path)
{
	char *at = strstr(text, "from_the_cache");
	cr_assert_not_null(at);
	at[4] = 0;
	write_text(path, text);
}

static void not_a_cache(char *text, const char *path)
{
	(void)text;
	write_text(path, "\x7f" "ELF garbage\n");
}

static void older_version(char *text, const char *path)
{
	text[strlen("wsprof symbols ")] = '1';
	write_text(path, text);
}

Test(symcache, a_changed_name_is_damage) { damaged(flip_a_letter, "checksum"); }
Test(symcache, a_file_cut_short_is_damage) { damaged(cut_short, "cut short"); }
Test(symcache, another_file_is_damage) { damaged(not_a_cache, "damaged"); }
Test(symcache, another_version_is_not_read) { damaged(older_version, "another version"); }

/* A trace recorded again at the same path (another process): the names
 * kept for the first one are not used, and the file is the new one's. */
Test(symcache, the_cache_of_another_trace_is_not_used)
{
	struct place p;
	make_place(&p);
	write_trace(p.trace, 4242, 1700000000000000000ull);
	char *warned, *fn = name_once(p.trace, &warned);
	free(fn), free(warned);
	rename_in_cache(p.cache);

	write_trace(p.trace, 4343, 1700000000000000000ull); /* another process */
	fn = name_once(p.trace, &warned);
	cr_expect_str_eq(fn ? fn : "(none)", "symcache_marker", "named from another trace's cache");
	cr_expect(strstr(warned, "another trace"), "the warning: %s", warned);
	free(fn), free(warned);
	char *text = read_text(p.cache);
	cr_expect(!strncmp(text, "wsprof symbols 2\ntrace\t4343\t", 28), "not the new trace's: %s", text);
	free(text);

	rename_in_cache(p.cache);
	write_trace(p.trace, 4343, 1700000000000000001ull); /* the same pid, started later */
	fn = name_once(p.trace, &warned);
	cr_expect_str_eq(fn ? fn : "(none)", "symcache_marker", "named from another trace's cache");
	cr_expect(strstr(warned, "another trace"), "the warning: %s", warned);
	free(fn), free(warned);
	remove_place(&p);
}
