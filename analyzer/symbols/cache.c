/*
 * cache.c - the names kept beside a trace between reports (TRACE.symbols,
 * or in the user's cache directory where the trace's cannot be written),
 * so that a report names frames without reading a module again, and on
 * a machine without the modules at all. doc/symbol-cache.md specifies the
 * file.
 *
 * Guarantees: names are keyed by each module's build-id and the offset,
 * so a module rebuilt (another build-id) is never named from them; a file
 * is used whole or not at all: one of another trace, another version, or
 * damaged anywhere (its checksum, its records) gives no name, is said in
 * one line, and is written anew. Written whole to a temporary file and
 * renamed, so two reports at once each leave a whole file.
 */
#include "symbols_internal.h"

#include "grow.h"
#include "kept.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_MAGIC "wsprof symbols "
#define CACHE_VERSION 2
/* An address's frames at most (inlined calls): more is damage. */
#define CACHE_MAX_FRAMES 4096

/* ---- the table of names read ------------------------------------------ */

static size_t cached_hash(const char *bid, uint64_t offset, size_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)bid * 0x9e3779b97f4a7c15ull ^ offset * 0xbf58476d1ce4e5b9ull;
	h ^= h >> 31;
	return (size_t)h & (cap - 1);
}

static bool cached_used(const void *slot)
{
	return ((const struct cached *)slot)->bid != NULL;
}

static size_t cached_rehash(const void *slot, void *ctx)
{
	(void)ctx;
	const struct cached *c = slot;
	return cached_hash(c->bid, c->offset, 0);
}

static const struct cached *cache_find(const struct wsp_syms *s, const char *bid, uint64_t offset)
{
	if (!s->cache_cap)
		return NULL;
	for (size_t j = cached_hash(bid, offset, s->cache_cap); s->cache[j].bid; j = (j + 1) & (s->cache_cap - 1))
		if (s->cache[j].bid == bid && s->cache[j].offset == offset)
			return &s->cache[j];
	return NULL;
}

static int cache_add(struct wsp_syms *s, const char *bid, uint64_t offset, uint32_t first, uint32_t count)
{
	if (wsp_table_room(&s->cache, &s->cache_cap, s->ncache, sizeof *s->cache, 1024, cached_used, cached_rehash, NULL))
		return -ENOMEM;
	size_t j = cached_hash(bid, offset, s->cache_cap);
	while (s->cache[j].bid)
		j = (j + 1) & (s->cache_cap - 1);
	s->cache[j] = (struct cached){ bid, offset, first, count };
	s->ncache++;
	return 0;
}

/* Nothing read is used: a file found wrong is ignored whole. */
static void cache_forget(struct wsp_syms *s)
{
	if (s->cache_cap)
		memset(s->cache, 0, s->cache_cap * sizeof *s->cache);
	s->ncache = 0;
	s->ncache_frames = 0;
}

void syms_cache_free(struct wsp_syms *s)
{
	free(s->cache_path);
	free(s->cache);
	free(s->cache_frames);
}

int syms_from_cache(struct wsp_syms *s, struct addr_entry *e)
{
	struct mod *m = e->mod >= 0 ? &s->mods[e->mod] : NULL;
	const struct cached *hit = m && m->key ? cache_find(s, m->key, e->offset) : NULL;
	if (!hit)
		return 0;
	const char *module = syms_intern(s, m->name);
	e->first = (uint32_t)s->narena;
	m->resolved++;
	for (uint32_t k = 0; k < hit->count; k++) {
		struct wsp_frame f = s->cache_frames[hit->first + k];
		f.module = module;
		f.module_id = (uint32_t)e->mod + 1;
		f.offset = e->offset;
		if (syms_arena_add(s, f))
			return -ENOMEM;
	}
	m->unnamed += hit->count == 1 && !s->cache_frames[hit->first].function;
	e->count = hit->count;
	e->named = true;
	return 1;
}

/* ---- reading ----------------------------------------------------------- */

/* The next line of text (its '\n' made a NUL), NULL at the end or for
 * a last line without its '\n' (a file cut short). */
static char *next_line(char **at, char *end)
{
	char *line = *at, *nl = line < end ? memchr(line, '\n', (size_t)(end - line)) : NULL;
	if (!nl)
		return NULL;
	*nl = 0;
	*at = nl + 1;
	return line;
}

/* The next tab-separated field of a line; NULL past its last. */
static char *field(char **at)
{
	char *f = *at;
	if (!f)
		return NULL;
	char *tab = strchr(f, '\t');
	if (tab)
		*tab = 0;
	*at = tab ? tab + 1 : NULL;
	return f;
}

/* A field's escapes undone in place (\\ \t \n): false for any other. */
static bool unescape(char *f)
{
	char *o = f;
	for (const char *i = f; *i; i++) {
		if (*i != '\\') {
			*o++ = *i;
			continue;
		}
		switch (*++i) {
		case '\\': *o++ = '\\'; break;
		case 't': *o++ = '\t'; break;
		case 'n': *o++ = '\n'; break;
		default: return false;
		}
	}
	*o = 0;
	return true;
}

/* A whole number of the given base, all of the field. */
static bool number(const char *f, int base, uint64_t *v)
{
	char *end;
	if (!f || !*f || *f == '-' || *f == '+' || *f == ' ')
		return false;
	errno = 0;
	unsigned long long n = strtoull(f, &end, base);
	*v = n;
	return !*end && !errno;
}

/* One record: its address line, then its frames. @return 0, -EINVAL
 * (damaged) or -ENOMEM. */
static int read_record(struct wsp_syms *s, char *line, char **at, char *end)
{
	char *f = line;
	const char *bid = field(&f), *off = field(&f), *cnt = field(&f);
	uint64_t offset, count;
	if (!cnt || f || !*bid || strspn(bid, "0123456789abcdef") != strlen(bid) || !number(off, 16, &offset) ||
	    !number(cnt, 10, &count) || count > CACHE_MAX_FRAMES)
		return -EINVAL;
	if (!(bid = syms_intern(s, bid)))
		return -ENOMEM;
	uint32_t first = (uint32_t)s->ncache_frames;
	for (uint64_t k = 0; k < count; k++) {
		char *fl = next_line(at, end);
		if (!fl || fl[0] != '\t')
			return -EINVAL;
		f = fl + 1;
		char *inl = field(&f), *ln = field(&f), *fn = field(&f), *file = field(&f);
		uint64_t lineno;
		if (!file || f || strlen(inl) != 1 || (inl[0] != '0' && inl[0] != '1') || !number(ln, 10, &lineno) ||
		    lineno > UINT_MAX || !unescape(fn) || !unescape(file))
			return -EINVAL;
		struct wsp_frame fr = { .inlined = inl[0] == '1', .line = (unsigned)lineno };
		fr.function = *fn ? syms_intern(s, fn) : NULL;
		fr.file = *file ? syms_intern(s, file) : NULL;
		if ((*fn && !fr.function) || (*file && !fr.file) ||
		    wsp_grow(&s->cache_frames, &s->cache_frames_cap, s->ncache_frames + 1, sizeof *s->cache_frames))
			return -ENOMEM;
		s->cache_frames[s->ncache_frames++] = fr;
	}
	return cache_add(s, bid, offset, first, (uint32_t)count);
}

/* Why a file is not used, or NULL when it is. */
static const char *cache_parse(struct wsp_syms *s, char *text, size_t len)
{
	char *end = text + len, *at = text;
	if (strncmp(text, CACHE_MAGIC, strlen(CACHE_MAGIC)))
		return "is damaged (not a file of names)";
	/* The end line: the records counted and the checksum of all before it,
	 * checked before anything is read. */
	char *last = len ? end - 1 : end;
	while (last > text && last[-1] != '\n')
		last--;
	uint64_t sum = syms_hash_bytes(text, (size_t)(last - text), SYMS_HASH_SEED);
	char *line = next_line(&at, end);
	uint64_t version;
	if (!line || !number(line + strlen(CACHE_MAGIC), 10, &version) || version != CACHE_VERSION)
		return "was written by another version of wsprof";
	if (last < at || end[-1] != '\n')
		return "is damaged (cut short)";
	end[-1] = 0;
	char *f = last;
	uint64_t records, want;
	const char *tag = field(&f), *nrec = field(&f), *check = field(&f);
	if (!check || f || strcmp(tag, "end") || !number(nrec, 10, &records) || strlen(check) != 16 ||
	    !number(check, 16, &want))
		return "is damaged (cut short)";
	if (want != sum)
		return "is damaged (its checksum differs)";
	end = last;
	line = next_line(&at, end);
	f = line;
	const char *tr = field(&f), *pid = field(&f), *start = field(&f);
	uint64_t p, t;
	if (!start || f || strcmp(tr, "trace") || !number(pid, 10, &p) || !number(start, 10, &t))
		return "is damaged (no trace line)";
	if (p != s->trace_pid || t != s->trace_start_ns)
		return "holds the names of another trace (one recorded before at this path?)";
	uint64_t n = 0;
	while ((line = next_line(&at, end))) {
		int err = read_record(s, line, &at, end);
		if (err == -ENOMEM)
			return NULL; /* what was read is right: named from modules past it */
		if (err)
			return "is damaged (a malformed record)";
		n++;
	}
	if (at != end || n != records)
		return "is damaged (records missing)";
	return NULL;
}

/* The whole file, NUL-terminated; NULL when there is none (or no memory). */
static char *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	struct stat st;
	if (!f)
		return NULL;
	char *text = NULL;
	if (!fstat(fileno(f), &st) && st.st_size >= 0 && (text = malloc((size_t)st.st_size + 1))) {
		*len = fread(text, 1, (size_t)st.st_size, f);
		text[*len] = 0;
	}
	fclose(f);
	return text;
}

void syms_cache_read(struct wsp_syms *s, const wsprof_trace *t)
{
	s->cache_read = true;
	const wsprof_process *p = wsprof_trace_process(t);
	s->trace_pid = p->pid;
	s->trace_start_ns = p->start_realtime_ns;
	size_t len = 0;
	char *text = s->cache_path ? read_whole(s->cache_path, &len) : NULL;
	if (!text)
		return;
	const char *wrong = cache_parse(s, text, len);
	free(text);
	if (!wrong)
		return;
	cache_forget(s);
	s->cache_rewrite = true;
	if (s->warn)
		fprintf(s->warn, "wsprof: %s %s: its names are not used, and it is written again\n", s->cache_path,
			wrong);
}

/* ---- writing ----------------------------------------------------------- */

/* A name, its tabs, newlines and backslashes escaped. */
static void put_name(FILE *f, const char *v)
{
	for (; v && *v; v++) {
		if (*v == '\\' || *v == '\t' || *v == '\n') {
			fputc('\\', f);
			fputc(*v == '\\' ? '\\' : *v == '\t' ? 't' : 'n', f);
		} else {
			fputc(*v, f);
		}
	}
}

static void write_frames(FILE *f, const char *bid, uint64_t offset, const struct wsp_frame *v, size_t n)
{
	fprintf(f, "%s\t%" PRIx64 "\t%zu\n", bid, offset, n);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "\t%d\t%u\t", v[i].inlined, v[i].line);
		put_name(f, v[i].function);
		fputc('\t', f);
		put_name(f, v[i].file);
		fputc('\n', f);
	}
}

/* The file's text, all but its end line: what was known before and what
 * this report added. @return the records, or -ENOMEM. */
static long cache_text(struct wsp_syms *s, char **text, size_t *len)
{
	FILE *f = open_memstream(text, len);
	if (!f)
		return -ENOMEM;
	long records = 0;
	fprintf(f, CACHE_MAGIC "%d\ntrace\t%" PRIu32 "\t%" PRIu64 "\n", CACHE_VERSION, s->trace_pid, s->trace_start_ns);
	for (size_t i = 0; i < s->cache_cap; i++)
		if (s->cache[i].bid) {
			write_frames(f, s->cache[i].bid, s->cache[i].offset, s->cache_frames + s->cache[i].first,
				     s->cache[i].count);
			records++;
		}
	for (size_t i = 0; i < s->naddrs; i++) {
		const struct addr_entry *e = &s->addrs[i];
		if (e->named && e->fresh) {
			write_frames(f, s->mods[e->mod].bid, e->offset, s->arena + e->first, e->count);
			records++;
		}
	}
	bool bad = ferror(f);
	if (fclose(f) || bad) {
		free(*text);
		*text = NULL;
		return -ENOMEM;
	}
	return records;
}

/* To a temporary file renamed into place. A cache that cannot be written
 * is simply not kept (reports say nothing; symbolize says why). */
int syms_cache_save(struct wsp_syms *s)
{
	if (!s->cache_path || !s->cache_read || (!s->fresh && !s->cache_rewrite))
		return 0;
	s->fresh = 0; /* written once */
	s->cache_rewrite = false;
	char *text;
	size_t len;
	long records = cache_text(s, &text, &len);
	if (records < 0)
		return (int)records;
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof tmp, "%s.%d.tmp", s->cache_path, (int)getpid());
	FILE *f = fopen(tmp, "we");
	if (!f) {
		int err = -errno;
		free(text);
		return err;
	}
	fwrite(text, 1, len, f);
	fprintf(f, "end\t%ld\t%016" PRIx64 "\n", records, syms_hash_bytes(text, len, SYMS_HASH_SEED));
	free(text);
	int err = ferror(f) ? -EIO : 0;
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, s->cache_path) != 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int wsp_syms_save(struct wsp_syms *s, const char **path)
{
	*path = s->cache_path;
	if (!s->cache_path)
		return -ENOENT;
	int err = syms_cache_save(s);
	return err ? err : access(s->cache_path, F_OK) ? -errno : 0;
}

/* ---- where ------------------------------------------------------------- */

void wsp_syms_cache(struct wsp_syms *s, const char *trace_path)
{
	free(s->trace_path);
	s->trace_path = strdup(trace_path);
	const char *off = getenv("WSPROF_SYMBOL_CACHE");
	if (off && !strcmp(off, "0"))
		return;
	free(s->cache_path);
	s->cache_path = wsp_kept_path(trace_path, "symbols");
}
