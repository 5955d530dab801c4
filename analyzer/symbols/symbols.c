/*
 * symbols.c - see symbols.h.
 *
 * Three tables, each growing only with distinct things: modules (one
 * libdwfl session each, opened on first use), addresses (a module and an
 * offset, and once named their logical frames, in one arena), and stack
 * nodes (4 bytes each: the place of the address a node's ip had in the
 * modules loaded when it was first seen). Strings are interned.
 *
 * Each module's function symbols are sorted once into an index searched
 * by bisection: libdwfl's dwfl_module_addrinfo scans the whole symbol
 * table for every address, which on libtorch_cpu.so (34,000 symbols) was
 * most of a report's time. DWARF (file:line, inlined frames) is read for
 * the addresses shown, once each.
 */
#include "symbols.h"

#include "grow.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <libelf.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progress.h"

/* libstdc++'s demangler (the C++ ABI's), linked with the analyzer. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

enum { MOD_UNTRIED, MOD_READY, MOD_UNUSABLE };

struct mod {
	char *path;
	const char *name;     /* file name part of path */
	uint8_t *build_id;
	size_t build_id_len;
	uint64_t base;
	uint64_t start, end;  /* the span of its loadable segments */
	int state;
	Dwfl *dwfl;
	Dwfl_Module *dm;
	struct sym *syms;     /* the index: function symbols by address, built on first use */
	size_t nsyms;
	bool indexed;
	uint64_t unnamed;     /* addresses in it that no symbol names */
	uint64_t resolved;    /* addresses in it looked up */
	bool absent;          /* not here, or not the file recorded (rebuilt since) */
	uint64_t lost;        /* addresses in it left as module+offset because it is absent */
	char bid[129];        /* the build-id in hex, "" without one */
	const char *key;      /* bid interned: the cache's key; NULL without a build-id */
};

/* A function symbol of a module: where it starts (as libdwfl places the
 * module), its size (0: unknown, it runs to the next one) and its name,
 * in the ELF string table libdwfl keeps open. */
struct sym {
	uint64_t addr, size;
	const char *name;
	bool global;
};


/* A distinct (module, offset) of the stacks noted, in a dense array a
 * stack node names by its place. */
struct addr_entry {
	int32_t mod;          /* -1: outside every module */
	bool named;           /* its frames are in the arena */
	bool fresh;           /* symbolized here, not found in the cache */
	bool lead_known;
	uint16_t lead;        /* its first frames that are allocator entry points (lead_known) */
	uint64_t offset;      /* ip - base, or the ip itself outside modules */
	uint32_t first, count; /* frames in the arena */
};

/* An address the cache knew: (build-id, offset) -> frames in cache_frames. */
struct cached {
	const char *bid;      /* interned; NULL: empty slot */
	uint64_t offset;
	uint32_t first, count;
};

struct wsp_syms {
	FILE *warn;
	struct mod *mods;
	size_t nmods, modcap;
	uint32_t *nodes;      /* a stack node -> its address's place in addrs + 1 (0: not noted) */
	uint32_t *parents;    /* a noted node -> its parent (0: the root), always below it */
	size_t nodecap;
	struct addr_entry *addrs;
	size_t addrs_cap, naddrs;
	uint32_t *addr_index; /* (mod, offset) -> place in addrs + 1, half full at most */
	size_t index_cap;
	struct wsp_frame *arena;
	size_t narena, arenacap;
	char **strings;       /* interned, open addressing */
	size_t strcap, nstrings;
	struct wsp_frame *out; /* the last wsp_syms_stack() answer */
	size_t outcap;
	char *cache_path;     /* where names are kept between reports; NULL: nowhere */
	char *trace_path;     /* the trace's, for advice */
	bool named_all;       /* wsp_syms_name_all has run */
	bool noted_all;       /* no stack is noted any more (wsp_syms_noted_all) */
	struct cached *cache; /* open addressing */
	size_t cache_cap, ncache;
	struct wsp_frame *cache_frames;
	size_t ncache_frames, cache_frames_cap;
	size_t fresh;         /* addresses symbolized here */
	enum wsp_stack_view view;
};

#define PY_MOD (-2)           /* an addr_entry's mod for a Python frame (its offset the frame's key) */

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ull;
	return h;
}

static void debug_places(void);

struct wsp_syms *wsp_syms_new(FILE *warn)
{
	debug_places();
	struct wsp_syms *s = calloc(1, sizeof *s);
	if (s) {
		s->warn = warn;
		const char *v = getenv("WSPROF_STACKS");
		int view = v && *v ? wsp_stack_view_parse(v) : WSP_STACKS_DEFAULT;
		s->view = view < 0 ? WSP_STACKS_DEFAULT : (enum wsp_stack_view)view;
	}
	return s;
}



/* The Debian package that installed path, from dpkg's file lists (no
 * program run); "" when none says so. Read only when names are missing. */
static void package_of(const char *path, char *pkg, size_t cap)
{
	pkg[0] = 0;
	char real[PATH_MAX], want[3][PATH_MAX + 2];
	size_t nwant = 0;
	snprintf(want[nwant++], sizeof want[0], "\n%s\n", path);
	if (realpath(path, real) && strcmp(real, path))
		snprintf(want[nwant++], sizeof want[0], "\n%s\n", real);
	if (!strncmp(path, "/usr/", 5)) /* merged /usr: the list may name /lib/... */
		snprintf(want[nwant++], sizeof want[0], "\n%s\n", path + 4);
	DIR *d = opendir("/var/lib/dpkg/info");
	for (struct dirent *de; d && !pkg[0] && (de = readdir(d));) {
		size_t n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".list"))
			continue;
		char file[PATH_MAX];
		snprintf(file, sizeof file, "/var/lib/dpkg/info/%s", de->d_name);
		FILE *f = fopen(file, "r");
		if (!f)
			continue;
		static char text[1 << 20];
		text[0] = '\n';
		size_t len = 1 + fread(text + 1, 1, sizeof text - 2, f);
		text[len] = 0;
		fclose(f);
		for (size_t i = 0; i < nwant && !pkg[0]; i++)
			if (strstr(text, want[i])) {
				snprintf(pkg, cap, "%.*s", (int)(n - 5), de->d_name);
				char *colon = strchr(pkg, ':'); /* libfoo:amd64 */
				if (colon)
					*colon = 0;
			}
	}
	if (d)
		closedir(d);
}

/* Once, at the end: which readable modules left frames unnamed, and what
 * would give them names. */
static void say_unnamed(const struct wsp_syms *s)
{
	if (!s->warn)
		return;
	const struct mod *worst[3] = { 0 };
	uint64_t total = 0;
	size_t nmods = 0;
	for (size_t i = 0; i < s->nmods; i++) {
		const struct mod *m = &s->mods[i];
		/* A stray frame or two (a loader's entry point) is no news: a
		 * module is named when a tenth of its addresses, and 16, are. */
		if (m->state == MOD_UNUSABLE || m->unnamed < 16 || m->unnamed * 10 < m->resolved)
			continue;
		total += m->unnamed;
		nmods++;
		for (size_t k = 0; k < 3; k++)
			if (!worst[k] || m->unnamed > worst[k]->unnamed) {
				memmove(worst + k + 1, worst + k, (2 - k) * sizeof *worst);
				worst[k] = m;
				break;
			}
	}
	if (!total)
		return;
	char line[2048];
	size_t o = (size_t)snprintf(line, sizeof line, "wsprof: %llu addresses in %zu module%s have no function names (their "
				     "symbol tables have none for them): ", (unsigned long long)total, nmods,
				     nmods == 1 ? "" : "s");
	for (size_t k = 0; k < 3 && worst[k] && o < sizeof line; k++) {
		char pkg[256];
		package_of(worst[k]->path, pkg, sizeof pkg);
		o += (size_t)snprintf(line + o, sizeof line - o, "%s%s (%llu", k ? "; " : "", worst[k]->name,
				      (unsigned long long)worst[k]->unnamed);
		if (pkg[0] && o < sizeof line)
			o += (size_t)snprintf(line + o, sizeof line - o, ", from %s: install its debug symbols, %s-dbgsym or "
					      "a -dbg package, for names", pkg, pkg);
		if (o < sizeof line)
			o += (size_t)snprintf(line + o, sizeof line - o, ")");
	}
	fprintf(s->warn, "%s\n", line);
}

/* Once, at the end: frames left as module+offset because their modules
 * are not here (a trace read on another machine), and how to name them. */
static void say_absent(const struct wsp_syms *s)
{
	uint64_t lost = 0;
	size_t n = 0;
	for (size_t i = 0; i < s->nmods; i++)
		if (s->mods[i].lost) {
			lost += s->mods[i].lost;
			n++;
		}
	if (!s->warn || !lost)
		return;
	const char *trace = s->trace_path ? s->trace_path : "TRACE";
	fprintf(s->warn, "wsprof: %llu addresses in %zu module%s not found here (or changed) show as module+offset: on the "
		"machine that recorded the trace, run 'wsprof symbolize %s' and copy %s.symbols beside the trace\n",
		(unsigned long long)lost, n, n == 1 ? "" : "s", trace, trace);
}

static int cache_save(struct wsp_syms *s);

void wsp_syms_free(struct wsp_syms *s)
{
	if (!s)
		return;
	say_unnamed(s);
	say_absent(s);
	cache_save(s);
	free(s->cache_path);
	free(s->trace_path);
	free(s->cache);
	free(s->cache_frames);
	for (size_t i = 0; i < s->nmods; i++) {
		if (s->mods[i].dwfl)
			dwfl_end(s->mods[i].dwfl);
		free(s->mods[i].syms);
		free(s->mods[i].path);
		free(s->mods[i].build_id);
	}
	for (size_t i = 0; i < s->strcap; i++)
		free(s->strings[i]);
	free(s->strings);
	free(s->mods);
	free(s->nodes);
	free(s->parents);
	free(s->addrs);
	free(s->addr_index);
	free(s->arena);
	free(s->out);
	free(s);
}

/* ---- strings ---------------------------------------------------------- */

static bool string_used(const void *slot)
{
	return *(char *const *)slot != NULL;
}

static size_t string_hash(const void *slot, void *ctx)
{
	(void)ctx;
	const char *str = *(const char *const *)slot;
	return (size_t)hash_bytes(str, strlen(str), 14695981039346656037ull);
}

static const char *intern(struct wsp_syms *s, const char *str)
{
	if (!str)
		return NULL;
	if (wsp_table_room(&s->strings, &s->strcap, s->nstrings, sizeof *s->strings, 1024, string_used, string_hash, NULL))
		return NULL;
	size_t j = string_hash(&str, NULL) & (s->strcap - 1);
	for (; s->strings[j]; j = (j + 1) & (s->strcap - 1))
		if (strcmp(s->strings[j], str) == 0)
			return s->strings[j];
	s->strings[j] = strdup(str);
	if (s->strings[j])
		s->nstrings++;
	return s->strings[j];
}

/* ---- modules ---------------------------------------------------------- */

/* The module of an address (at addr, as info describes it), made on first sight. */
static int32_t module_of(struct wsp_syms *s, const wsprof_trace *t, uint64_t addr, const wsprof_module_info *info)
{
	for (size_t i = 0; i < s->nmods; i++) {
		const struct mod *m = &s->mods[i];
		if (m->base == info->base && m->build_id_len == info->build_id_len &&
		    strcmp(m->path, info->path) == 0 &&
		    (!m->build_id_len || memcmp(m->build_id, info->build_id, m->build_id_len) == 0))
			return (int32_t)i;
	}
	if (wsp_grow(&s->mods, &s->modcap, s->nmods + 1, sizeof *s->mods))
		return -1;
	struct mod *m = &s->mods[s->nmods];
	memset(m, 0, sizeof *m);
	m->path = strdup(info->path);
	m->build_id = malloc(info->build_id_len + 1);
	if (!m->path || !m->build_id) {
		free(m->path);
		free(m->build_id);
		return -1;
	}
	if (info->build_id_len)
		memcpy(m->build_id, info->build_id, info->build_id_len);
	m->build_id_len = info->build_id_len;
	for (size_t i = 0; i < info->build_id_len && i < 64; i++)
		snprintf(m->bid + 2 * i, 3, "%02x", info->build_id[i]);
	m->key = m->bid[0] ? intern(s, m->bid) : NULL;
	m->base = info->base;
	wsprof_trace_module_span_at(t, addr, &m->start, &m->end);
	const char *slash = strrchr(m->path, '/');
	m->name = slash ? slash + 1 : m->path;
	return (int32_t)s->nmods++;
}

/* ---- separate debug files ------------------------------------------- */

/* Where libdwfl looks for a module's separate debug file, by build-id
 * (DIR/.build-id/xx/yyyy.debug) and by .gnu_debuglink: the directories in
 * WSPROF_DEBUG_PATH (colon-separated, laid out like /usr/lib/debug) first,
 * then its own places (beside the module, its .debug directory,
 * /usr/lib/debug, where Debian's -dbgsym and -dbg packages install).
 * Set once, by wsp_syms_new. */
static char *debuginfo_path;

/* The debuginfod client's cache (DEBUGINFOD_CACHE_PATH, else
 * $XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client):
 * BUILDID/debuginfo, what `debuginfod-find` and gdb left there. Read only:
 * nothing is ever fetched. */
static int from_debuginfod_cache(Dwfl_Module *mod, char **name)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(mod, &bits, &vaddr);
	const char *env = getenv("DEBUGINFOD_CACHE_PATH"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char dir[PATH_MAX], path[PATH_MAX + 160];
	if (n <= 0 || n > 64)
		return -1;
	if (env && *env)
		snprintf(dir, sizeof dir, "%s", env);
	else if (xdg && *xdg)
		snprintf(dir, sizeof dir, "%s/debuginfod_client", xdg);
	else if (home && *home)
		snprintf(dir, sizeof dir, "%s/.cache/debuginfod_client", home);
	else
		return -1;
	size_t o = (size_t)snprintf(path, sizeof path, "%s/", dir);
	for (int i = 0; i < n && o + 3 < sizeof path; i++)
		o += (size_t)snprintf(path + o, sizeof path - o, "%02x", bits[i]);
	snprintf(path + o, sizeof path - o, "/debuginfo");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	/* Only the file of this build: its build-id must be the module's. */
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *id = NULL;
	ssize_t idn = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
	bool same = idn == n && memcmp(id, bits, (size_t)n) == 0;
	if (elf)
		elf_end(elf);
	if (!same || !(*name = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
			  const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			  char **debuginfo_file_name)
{
	int fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
					      debuginfo_file_name);
	return fd >= 0 ? fd : from_debuginfod_cache(mod, debuginfo_file_name);
}

static const Dwfl_Callbacks callbacks = {
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

static void find_debug_places(void)
{
	/* libdwfl would ask a debuginfod server where DEBUGINFOD_URLS names
	 * one: a report never goes to the network (the cache is read above). */
	unsetenv("DEBUGINFOD_URLS");
	const char *mine = getenv("WSPROF_DEBUG_PATH");
	size_t n = (mine ? strlen(mine) : 0) + 64;
	if ((debuginfo_path = malloc(n)))
		snprintf(debuginfo_path, n, "%s%s:.debug:/usr/lib/debug", mine && *mine ? mine : "", mine && *mine ? ":" : "");
}

/* Once a process: the readers of a job's traces start on threads of their own. */
static void debug_places(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, find_debug_places);
}

/* Open a module's file with libdwfl and check that it is the file that
 * was recorded. Anything else leaves it unusable, once, with a warning. */
static void module_open(struct wsp_syms *s, struct mod *m)
{
	m->state = MOD_UNUSABLE;
	if (m->path[0] != '/')
		return; /* the vdso and the like: no file to read */
	m->dwfl = dwfl_begin(&callbacks);
	if (!m->dwfl)
		return;
	dwfl_report_begin(m->dwfl);
	m->dm = dwfl_report_elf(m->dwfl, m->name, m->path, -1, m->base, false);
	dwfl_report_end(m->dwfl, NULL, NULL);
	m->absent = true; /* until it is found to be the file recorded */
	if (!m->dm) {
		if (s->warn)
			fprintf(s->warn, "wsprof: warning: cannot read %s (%s); its frames show as %s+0xOFFSET\n",
				m->path, dwfl_errmsg(-1), m->name);
		return;
	}
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(m->dm, &bits, &vaddr);
	if (m->build_id_len && (n != (int)m->build_id_len || memcmp(bits, m->build_id, (size_t)n) != 0)) {
		if (s->warn)
			fprintf(s->warn, "wsprof: warning: %s has changed since it was recorded (its build-id differs); "
				"its frames show as %s+0xOFFSET\n", m->path, m->name);
		return;
	}
	m->absent = false;
	m->state = MOD_READY;
}

/* A module read, closed: opened again on first use (module_open). */
static void module_close(struct mod *m)
{
	if (m->state != MOD_READY)
		return;
	dwfl_end(m->dwfl);
	m->dwfl = NULL;
	m->dm = NULL;
	free(m->syms); /* its names were libdwfl's */
	m->syms = NULL;
	m->nsyms = 0;
	m->indexed = false;
	m->state = MOD_UNTRIED;
}

/* ---- stack nodes ------------------------------------------------------- */

static int64_t entry_of(struct wsp_syms *s, int32_t mod, uint64_t offset);
static int arena_add(struct wsp_syms *s, struct wsp_frame f);

/* Is a Python file the interpreter's library or an installed package's
 * rather than the program's own? (frozen modules, .../lib/python3.X/...,
 * site-packages, dist-packages) */
static bool python_library(const char *file)
{
	if (!file)
		return false;
	if (!strncmp(file, "<frozen ", 8) || strstr(file, "/site-packages/") || strstr(file, "/dist-packages/"))
		return true;
	for (const char *p = strstr(file, "/lib/python3"); p; p = strstr(p + 1, "/lib/python3")) {
		const char *q = p + 12;
		if (*q != '.' || !q[1])
			continue;
		for (q++; *q >= '0' && *q <= '9'; q++)
			;
		if (*q == '/')
			return true;
	}
	return false;
}

/* A Python frame is named from the trace's code table as it is noted
 * (the code is defined before any frame using it is handed out). */
static int name_python(struct wsp_syms *s, const wsprof_trace *t, struct addr_entry *e, uint64_t key)
{
	const wsprof_pycode *c = wsprof_trace_pycode(t, WSPROF_PYFRAME_CODE(key));
	int line = wsprof_pycode_line(c, WSPROF_PYFRAME_INSTR(key));
	struct wsp_frame f = { .function = intern(s, c ? c->qualname : "<unknown Python code>"),
			       .file = c ? intern(s, c->filename) : NULL,
			       .line = line > 0 ? (unsigned)line : 0,
			       .offset = key,
			       .python = true,
			       .library = c && python_library(c->filename) };
	e->first = (uint32_t)s->narena;
	if (arena_add(s, f))
		return -ENOMEM;
	e->count = 1;
	e->named = e->lead_known = true;
	return 0;
}

int wsp_syms_note_stack(struct wsp_syms *s, const wsprof_trace *t, uint64_t node)
{
	uint64_t parent, ip;
	for (; node && wsprof_trace_stack_node(t, node, &parent, &ip); node = parent) {
		if (node >= UINT32_MAX)
			return 0; /* past 2^32 nodes: named no further */
		if (node >= s->nodecap) {
			/* The two grow alike (wsp_grow doubles), apart: one array of
			 * both took 8 MB more at the peak of the PyTorch trace's report. */
			size_t old = s->nodecap, pcap = s->nodecap;
			if (wsp_grow(&s->parents, &pcap, (size_t)node + 1, sizeof *s->parents) ||
			    wsp_grow(&s->nodes, &s->nodecap, (size_t)node + 1, sizeof *s->nodes))
				return -ENOMEM;
			memset(s->nodes + old, 0, (s->nodecap - old) * sizeof *s->nodes);
		}
		if (s->nodes[node])
			break; /* and so are its parents */
		wsprof_module_info info;
		int32_t mod = -1;
		uint64_t offset = ip;
		/* A return address may be just past its function's end: look up the call. */
		if (WSPROF_IS_PYFRAME(ip))
			mod = PY_MOD;
		else if (wsprof_trace_module_info_at(t, ip - 1, &info) && (mod = module_of(s, t, ip - 1, &info)) >= 0)
			offset = ip - info.base;
		int64_t e = entry_of(s, mod, offset);
		if (e < 0 || (mod == PY_MOD && !s->addrs[e].named && name_python(s, t, &s->addrs[e], ip)))
			return -ENOMEM;
		/* Parents come first: one that does not (a damaged trace) ends the stack. */
		s->nodes[node] = (uint32_t)e + 1;
		s->parents[node] = parent < node ? (uint32_t)parent : 0;
	}
	return 0;
}

/* ---- symbolizing an address ------------------------------------------ */

/* A frame as a module names it, before its strings are interned: names
 * point into libdw's tables (open as long as the module is), a demangled
 * C++ name is the frame's own. Workers naming modules in parallel make
 * these; the caller interns them (adopt), so nothing is shared. */
struct raw {
	const char *function, *file;
	char *owned;          /* function, demangled: freed once interned */
	unsigned line;
	bool inlined;
};

struct raws {
	struct raw *v;
	size_t n, cap;
};

/* A C++ name demangled, anything else as it is. @return 0 or -ENOMEM. */
static int raw_add(struct raws *out, const char *function, const char *file, unsigned line, bool inlined)
{
	if (wsp_grow(&out->v, &out->cap, out->n + 1, sizeof *out->v))
		return -ENOMEM;
	struct raw r = { .function = function, .file = file, .line = line, .inlined = inlined };
	if (function && function[0] == '_' && function[1] == 'Z') {
		int status = -1;
		char *d = __cxa_demangle(function, NULL, NULL, &status);
		if (d && status == 0)
			r.function = r.owned = d;
		else
			free(d);
	}
	out->v[out->n++] = r;
	return 0;
}

static void raws_free(struct raws *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].owned);
	free(r->v);
	*r = (struct raws){ 0 };
}

static const char *die_function(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		name = dwarf_formstring(&attr);
	if (!name && dwarf_attr_integrate(die, DW_AT_name, &attr))
		name = dwarf_formstring(&attr);
	return name;
}

static int arena_add(struct wsp_syms *s, struct wsp_frame f)
{
	if (wsp_grow(&s->arena, &s->arenacap, s->narena + 1, sizeof *s->arena))
		return -ENOMEM;
	s->arena[s->narena++] = f;
	return 0;
}

/* The logical frames of pc, innermost first, from the DWARF scopes: each
 * inlined call is a frame whose line is where the next one called it.
 * @return frames added or -ENOMEM. */
static int frames_from_dwarf(struct mod *m, Dwarf_Addr pc, struct raws *out)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(m->dm, pc, &bias);
	if (!cu)
		return 0;
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes(cu, pc - bias, &scopes);
	if (n <= 0)
		return 0;
	/* Past an inlined instance, dwarf_getscopes follows its abstract
	 * definition; the chain of calls is the DIE's physical parents. */
	Dwarf_Die inner = scopes[0];
	free(scopes);
	scopes = NULL;
	n = dwarf_getscopes_die(&inner, &scopes);
	if (n <= 0)
		return 0;
	Dwfl_Line *line = dwfl_module_getsrc(m->dm, pc);
	int lineno = 0;
	const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	dwarf_getsrcfiles(cu, &files, &nfiles);
	int added = 0;
	for (int i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		if (raw_add(out, die_function(&scopes[i]), file, lineno > 0 ? (unsigned)lineno : 0,
			    tag == DW_TAG_inlined_subroutine)) {
			free(scopes);
			return -ENOMEM;
		}
		added++;
		if (tag == DW_TAG_subprogram)
			break;
		/* The next frame out is at this inlined call's call site. */
		Dwarf_Attribute attr;
		Dwarf_Word cfile = 0, cline = 0;
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &cfile) == 0 && files &&
		    cfile < nfiles)
			file = dwarf_filesrc(files, cfile, NULL, NULL);
		else
			file = NULL;
		lineno = dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &cline) == 0 ? (int)cline : 0;
	}
	free(scopes);
	return added;
}

/* ---- the cache of names between reports -------------------------------- */

/* Names are kept beside the trace (TRACE.symbols), or, where its directory
 * cannot be written, in the user's cache directory, keyed by each module's
 * build-id and the address's offset: a module rebuilt has another build-id,
 * so nothing stale is ever found. Written whole to a temporary file and
 * renamed, so two reports at once each leave a whole file. */

#define CACHE_MAGIC "wsprof symbols 1"

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

static char *field(char **at)
{
	char *f = *at, *tab = strchr(f, '\t');
	if (tab) {
		*tab = 0;
		*at = tab + 1;
	} else {
		*at = f + strlen(f);
	}
	return f;
}

/* Read the cache file; a damaged one is read up to the damage. */
static void cache_load(struct wsp_syms *s)
{
	FILE *f = fopen(s->cache_path, "re");
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	bool ok = n > 0 && !strncmp(line, CACHE_MAGIC "\n", (size_t)n);
	while (ok && (n = getline(&line, &cap, f)) > 0) {
		line[strcspn(line, "\n")] = 0;
		char *at = line;
		const char *bid = intern(s, field(&at));
		uint64_t offset = strtoull(field(&at), NULL, 16);
		unsigned long count = strtoul(field(&at), NULL, 10);
		if (!bid || !*bid || count > 256)
			break;
		uint32_t first = (uint32_t)s->ncache_frames;
		for (unsigned long k = 0; ok && k < count; k++) {
			if (getline(&line, &cap, f) <= 0 || line[0] != '\t') {
				ok = false;
				break;
			}
			line[strcspn(line, "\n")] = 0;
			at = line + 1;
			struct wsp_frame fr = { 0 };
			fr.inlined = field(&at)[0] == '1';
			fr.line = (unsigned)strtoul(field(&at), NULL, 10);
			const char *fn = field(&at), *file = field(&at);
			fr.function = *fn ? intern(s, fn) : NULL;
			fr.file = *file ? intern(s, file) : NULL;
			if (wsp_grow(&s->cache_frames, &s->cache_frames_cap, s->ncache_frames + 1, sizeof *s->cache_frames))
				ok = false;
			else
				s->cache_frames[s->ncache_frames++] = fr;
		}
		if (ok && cache_add(s, bid, offset, first, (uint32_t)count))
			ok = false;
	}
	free(line);
	fclose(f);
}

static void write_frames(FILE *f, const char *bid, uint64_t offset, const struct wsp_frame *v, size_t n)
{
	fprintf(f, "%s\t%llx\t%zu\n", bid, (unsigned long long)offset, n);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "\t%d\t%u\t%s\t%s\n", v[i].inlined, v[i].line, v[i].function ? v[i].function : "",
			v[i].file ? v[i].file : "");
}

/* What was known before and what this report added, to a temporary file
 * renamed into place. A cache that cannot be written is simply not kept
 * (reports say nothing; symbolize says why). @return 0 or -errno. */
static int cache_save(struct wsp_syms *s)
{
	if (!s->cache_path || !s->fresh)
		return 0;
	s->fresh = 0; /* written once */
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof tmp, "%s.%d.tmp", s->cache_path, (int)getpid());
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, CACHE_MAGIC "\n");
	for (size_t i = 0; i < s->cache_cap; i++)
		if (s->cache[i].bid)
			write_frames(f, s->cache[i].bid, s->cache[i].offset, s->cache_frames + s->cache[i].first,
				     s->cache[i].count);
	for (size_t i = 0; i < s->naddrs; i++) {
		const struct addr_entry *e = &s->addrs[i];
		if (e->named && e->fresh)
			write_frames(f, s->mods[e->mod].bid, e->offset, s->arena + e->first, e->count);
	}
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
	int err = cache_save(s);
	return err ? err : access(s->cache_path, F_OK) ? -errno : 0;
}

void wsp_syms_stats(const struct wsp_syms *s, struct wsp_syms_stats *st)
{
	*st = (struct wsp_syms_stats){ 0 };
	for (size_t i = 0; i < s->naddrs; i++) {
		const struct addr_entry *e = &s->addrs[i];
		if (!e->named || !e->count || e->mod == PY_MOD)
			continue; /* Python frames are named from the trace itself */
		st->addresses++;
		st->unnamed += !s->arena[e->first].function;
		st->uncached += e->mod >= 0 && !s->mods[e->mod].key;
		st->outside += e->mod < 0;
	}
	for (size_t i = 0; i < s->nmods; i++) {
		st->lost += s->mods[i].lost;
		st->absent += s->mods[i].lost > 0;
		st->modules += s->mods[i].resolved > 0 || s->mods[i].lost > 0;
	}
}

void wsp_syms_cache(struct wsp_syms *s, const char *trace_path)
{
	free(s->trace_path);
	s->trace_path = strdup(trace_path);
	char dir[PATH_MAX], path[2 * PATH_MAX + 64];
	snprintf(dir, sizeof dir, "%s", trace_path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(dir, sizeof dir, ".");
	const char *off = getenv("WSPROF_SYMBOL_CACHE");
	if (off && !strcmp(off, "0"))
		return;
	if (access(dir, W_OK) == 0) {
		snprintf(path, sizeof path, "%s.symbols", trace_path);
	} else {
		/* Elsewhere, named after the trace's whole path. */
		char real[PATH_MAX], base[PATH_MAX];
		const char *home = getenv("HOME"), *xdg = getenv("XDG_CACHE_HOME");
		if (!realpath(trace_path, real) || (!xdg && !home))
			return;
		if (xdg && *xdg)
			snprintf(base, sizeof base, "%s/wsprof", xdg);
		else
			snprintf(base, sizeof base, "%s/.cache", home);
		mkdir(base, 0700);
		if (!xdg || !*xdg) {
			size_t n = strlen(base);
			snprintf(base + n, sizeof base - n, "/wsprof");
		}
		mkdir(base, 0700);
		const char *name = strrchr(real, '/');
		snprintf(path, sizeof path, "%s/%s.%016llx.symbols", base, name ? name + 1 : real,
			 (unsigned long long)hash_bytes(real, strlen(real), 14695981039346656037ull));
	}
	s->cache_path = strdup(path);
	if (s->cache_path)
		cache_load(s);
}

/* ---- the symbol index ------------------------------------------------ */

static int by_address(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address, the one to keep first: global, then sized. */
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return (x->size > 0) == (y->size > 0) ? 0 : x->size ? -1 : 1;
}

/* The module's function symbols (.symtab, or .dynsym, and those of the
 * separate debug file libdwfl found), sorted, one per address. */
static int index_build(struct mod *m)
{
	m->indexed = true;
	int n = dwfl_module_getsymtab(m->dm);
	if (n <= 0)
		return 0;
	struct sym *v = malloc((size_t)n * sizeof *v);
	if (!v)
		return -ENOMEM;
	size_t k = 0;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(m->dm, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		if (!name || !*name || sym.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		v[k++] = (struct sym){ addr, sym.st_size, name, GELF_ST_BIND(sym.st_info) != STB_LOCAL };
	}
	qsort(v, k, sizeof *v, by_address);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (!u || v[i].addr != v[u - 1].addr)
			v[u++] = v[i];
	m->syms = v;
	m->nsyms = u;
	return 0;
}

/* The function containing pc: the last symbol starting at or before it,
 * if pc is within its size (a symbol of unknown size runs to the next). */
static const char *index_lookup(const struct mod *m, uint64_t pc)
{
	size_t lo = 0, hi = m->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->syms[mid].addr <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct sym *f = &m->syms[lo - 1];
	return !f->size || pc < f->addr + f->size ? f->name : NULL;
}

/* The frames of an offset in a ready module: from DWARF, else one named
 * by the symbol index (its function NULL when none covers it). Touches
 * nothing but the module and out, so modules can be named in parallel.
 * @return 0 or -ENOMEM. */
static int name_offset(struct mod *m, uint64_t offset, struct raws *out)
{
	Dwarf_Addr pc = m->base + offset - 1;
	int added = frames_from_dwarf(m, pc, out);
	if (added)
		return added < 0 ? added : 0;
	if (!m->indexed && index_build(m))
		return -ENOMEM;
	return raw_add(out, index_lookup(m, pc), NULL, 0, false);
}

/* An address's frames into the arena: n raw frames (none: only its module
 * and offset are known), their strings interned. @return 0 or -ENOMEM. */
static int adopt(struct wsp_syms *s, struct addr_entry *e, struct raw *r, size_t n)
{
	struct mod *m = e->mod >= 0 ? &s->mods[e->mod] : NULL;
	struct wsp_frame base = { .offset = e->offset, .module_id = m ? (uint32_t)e->mod + 1 : 0,
				  .module = m ? intern(s, m->name) : NULL };
	e->first = (uint32_t)s->narena;
	int err = 0;
	for (size_t i = 0; i < n; i++) {
		struct wsp_frame f = base;
		f.function = intern(s, r[i].function);
		f.file = intern(s, r[i].file);
		f.line = r[i].line;
		f.inlined = r[i].inlined;
		free(r[i].owned);
		r[i].owned = NULL;
		if (!err)
			err = arena_add(s, f);
	}
	if (!n && !err)
		err = arena_add(s, base);
	e->count = (uint32_t)(s->narena - e->first);
	e->named = !err;
	if (m && !n && m->absent)
		m->lost++;
	if (m && n) {
		m->resolved++;
		m->unnamed += !r[0].function;
		e->fresh = m->key != NULL;
		s->fresh += e->fresh;
	}
	return err;
}

/* A new address named from the cache an earlier report kept, if it has
 * it: the module need not even be opened. @return 1 if so, 0, or -ENOMEM. */
static int from_cache(struct wsp_syms *s, struct addr_entry *e)
{
	struct mod *m = e->mod >= 0 ? &s->mods[e->mod] : NULL;
	const struct cached *hit = m && m->key ? cache_find(s, m->key, e->offset) : NULL;
	if (!hit)
		return 0;
	const char *module = intern(s, m->name);
	e->first = (uint32_t)s->narena;
	m->resolved++;
	for (uint32_t k = 0; k < hit->count; k++) {
		struct wsp_frame f = s->cache_frames[hit->first + k];
		f.module = module;
		f.module_id = (uint32_t)e->mod + 1;
		f.offset = e->offset;
		if (arena_add(s, f))
			return -ENOMEM;
	}
	m->unnamed += hit->count == 1 && !s->cache_frames[hit->first].function;
	e->count = hit->count;
	e->named = true;
	return 1;
}

/* Whether a new address needs its module read: not in the cache, in a
 * module that can be read (opened here, once). Those that don't are
 * named at once. @return 1 (read it), 0 (named) or -ENOMEM. */
static int needs_module(struct wsp_syms *s, struct addr_entry *e)
{
	int hit = from_cache(s, e);
	if (hit)
		return hit < 0 ? hit : 0;
	struct mod *m = e->mod >= 0 ? &s->mods[e->mod] : NULL;
	if (m && m->state == MOD_UNTRIED)
		module_open(s, m);
	if (m && m->state == MOD_READY)
		return 1;
	return adopt(s, e, NULL, 0);
}

/* Symbolize one new address. @return 0 or -ENOMEM. */
static int symbolize(struct wsp_syms *s, struct addr_entry *e)
{
	int need = needs_module(s, e);
	if (need <= 0)
		return need;
	struct raws r = { 0 };
	int err = name_offset(&s->mods[e->mod], e->offset, &r);
	err = err ? err : adopt(s, e, r.v, r.n);
	raws_free(&r);
	return err;
}

static size_t addr_hash(size_t i, void *ctx)
{
	const struct addr_entry *e = &((const struct wsp_syms *)ctx)->addrs[i];
	return (size_t)hash_bytes(&e->offset, 8, (uint64_t)e->mod);
}

/* The place of (mod, offset) in addrs, made (not yet named) if new; -1
 * without memory. Once per stack node, as it is noted: a stack is then
 * read without a probe (wsp_syms_stack). */
static int64_t entry_of(struct wsp_syms *s, int32_t mod, uint64_t offset)
{
	if (s->naddrs >= UINT32_MAX - 1 ||
	    wsp_index_fit(&s->addr_index, &s->index_cap, s->naddrs + 1, 1024, 0, s->naddrs, addr_hash, NULL, s))
		return -1;
	size_t j = hash_bytes(&offset, 8, (uint64_t)mod) & (s->index_cap - 1);
	for (; s->addr_index[j]; j = (j + 1) & (s->index_cap - 1)) {
		const struct addr_entry *e = &s->addrs[s->addr_index[j] - 1];
		if (e->mod == mod && e->offset == offset)
			return s->addr_index[j] - 1;
	}
	if (wsp_grow(&s->addrs, &s->addrs_cap, s->naddrs + 1, sizeof *s->addrs))
		return -1;
	s->addrs[s->naddrs] = (struct addr_entry){ .mod = mod, .offset = offset };
	s->addr_index[j] = (uint32_t)++s->naddrs;
	return (int64_t)s->naddrs - 1;
}

void wsp_syms_noted_all(struct wsp_syms *s)
{
	s->noted_all = true;
}

/* ---- naming every address at once, modules in parallel ------------------ */

/* A module's addresses to name, and what its worker found. */
struct mod_job {
	struct mod *m;
	struct addr_entry **e;
	size_t n, cap;
	uint32_t *first, *count; /* each address's frames in raws */
	struct raws raws;
	int err;
};

struct naming {
	struct mod_job *jobs;
	size_t njobs, pending;
	struct wsp_progress *bar; /* drawn by the worker when it is the only one (this thread) */
	atomic_size_t next;   /* the next job to take */
	atomic_size_t done;   /* addresses named */
	atomic_size_t finished; /* threads that have left name_jobs */
};

static void *name_jobs(void *arg)
{
	struct naming *nm = arg;
	for (size_t j; (j = atomic_fetch_add(&nm->next, 1)) < nm->njobs;) {
		struct mod_job *job = &nm->jobs[j];
		for (size_t i = 0; i < job->n && !job->err; i++) {
			job->first[i] = (uint32_t)job->raws.n;
			job->err = name_offset(job->m, job->e[i]->offset, &job->raws);
			job->count[i] = (uint32_t)(job->raws.n - job->first[i]);
			size_t done = atomic_fetch_add(&nm->done, 1) + 1;
			if (nm->bar && done % 64 == 0)
				wsp_progress_update(nm->bar, wsp_progress_now(), done, nm->pending);
		}
	}
	atomic_fetch_add(&nm->finished, 1);
	return NULL;
}

static int by_size_desc(const void *a, const void *b)
{
	const struct mod_job *x = a, *y = b;
	return x->n > y->n ? -1 : x->n < y->n;
}

/* Worth threads: fewer addresses are named faster than threads start. */
#define PARALLEL_FROM 2048

/* The addresses to read from their modules, a job per module with any,
 * in *jobs (*njobs of them, free with jobs_free); the others named at
 * once from the cache, or as module+offset. @return how many to read, or
 * -ENOMEM. */
static long gather_jobs(struct wsp_syms *s, struct mod_job **jobs, size_t *njobs)
{
	*jobs = NULL;
	*njobs = 0;
	struct mod_job *v = s->nmods ? calloc(s->nmods, sizeof *v) : NULL;
	if (s->nmods && !v)
		return -ENOMEM;
	int err = 0;
	long pending = 0;
	/* Naming one from the cache adds none to addrs: the places stay put. */
	for (size_t i = 0; i < s->naddrs && !err; i++) {
		struct addr_entry *e = &s->addrs[i];
		int need = e->named ? 0 : needs_module(s, e);
		if (need <= 0) {
			err = need;
			continue;
		}
		struct mod_job *job = &v[e->mod];
		job->m = &s->mods[e->mod];
		if (wsp_grow(&job->e, &job->cap, job->n + 1, sizeof *job->e))
			err = -ENOMEM;
		else
			job->e[job->n++] = e;
		pending++;
	}
	size_t n = 0;
	for (size_t i = 0; i < s->nmods && v; i++) {
		if (!v[i].n)
			continue;
		struct mod_job job = v[i];
		v[i] = (struct mod_job){ 0 };
		v[n++] = job;
	}
	for (size_t j = 0; j < n && !err; j++) {
		v[j].first = malloc(v[j].n * sizeof *v[j].first);
		v[j].count = malloc(v[j].n * sizeof *v[j].count);
		if (!v[j].first || !v[j].count)
			err = -ENOMEM;
	}
	*jobs = v;
	*njobs = n;
	return err ? err : pending;
}

static void jobs_free(struct mod_job *jobs, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		raws_free(&jobs[j].raws);
		free(jobs[j].e);
		free(jobs[j].first);
		free(jobs[j].count);
	}
	free(jobs);
}

/* Run the jobs: a thread per core when there are many addresses, else
 * here; the progress line (label) drawn here either way. */
static void run_jobs(struct naming *nm, const char *label)
{
	qsort(nm->jobs, nm->njobs, sizeof *nm->jobs, by_size_desc); /* the largest first: they finish last */
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nthreads = nm->pending < PARALLEL_FROM || cores < 2 ? 0 : (size_t)cores;
	nthreads = nthreads > nm->njobs ? nm->njobs : nthreads;
	pthread_t *threads = nthreads ? calloc(nthreads, sizeof *threads) : NULL;
	size_t started = 0;
	for (; threads && started < nthreads; started++)
		if (pthread_create(&threads[started], NULL, name_jobs, nm))
			break;
	unsigned columns = 80;
	FILE *tty = wsp_progress_tty(&columns);
	struct wsp_progress bar;
	wsp_progress_start(&bar, tty, columns, label, tty ? wsp_progress_now() : 0);
	wsp_progress_count(&bar, "addresses");
	if (!started) {
		nm->bar = &bar;
		name_jobs(nm); /* here, in this thread */
	}
	while (atomic_load(&nm->finished) < started) {
		wsp_progress_update(&bar, wsp_progress_now(), atomic_load(&nm->done), nm->pending);
		nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
	}
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	wsp_progress_end(&bar);
	free(threads);
}

long wsp_syms_name_all(struct wsp_syms *s, const char *label)
{
	s->named_all = true;
	struct mod_job *jobs;
	size_t njobs;
	long pending = gather_jobs(s, &jobs, &njobs);
	int err = pending < 0 ? (int)pending : 0;
	struct naming nm = { .jobs = jobs, .njobs = err ? 0 : njobs, .pending = err ? 0 : (size_t)pending };
	if (nm.njobs)
		run_jobs(&nm, label);
	/* What the workers found, interned here, module by module. */
	for (size_t j = 0; j < nm.njobs; j++) {
		struct mod_job *job = &jobs[j];
		err = err ? err : job->err;
		for (size_t i = 0; i < job->n && !err; i++)
			err = adopt(s, job->e[i], job->raws.v + job->first[i], job->count[i]);
	}
	jobs_free(jobs, njobs);
	/* Every frame there will be is named and its strings copied: the
	 * modules' files, debug info and symbol indexes go (a PyTorch program's
	 * take tens of MB). While stacks are still noted, they stay: opening a
	 * module again reads its debug info again. */
	for (size_t i = 0; i < s->nmods && !err && s->noted_all; i++)
		module_close(&s->mods[i]);
	return err ? err : pending;
}

/* ---- stacks ------------------------------------------------------------ */

static bool is_allocator_entry(const char *fn)
{
	static const char *const names[] = {
		"malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign", "aligned_alloc",
		"memalign", "valloc", "pvalloc", "mmap", "mmap64", "mremap", "munmap",
	};
	if (!fn)
		return false;
	if (strncmp(fn, "operator new", 12) == 0 || strncmp(fn, "__libc_", 7) == 0)
		return true;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strcmp(fn, names[i]) == 0)
			return true;
	return false;
}

/* Every address noted so far named at once, the first time a stack is read. */
static void name_all_once(struct wsp_syms *s)
{
	if (s->named_all)
		return;
	char label[PATH_MAX + 32];
	snprintf(label, sizeof label, "naming frames of %s", s->trace_path ? s->trace_path : "the trace");
	wsp_syms_name_all(s, label); /* without memory, each is named as it comes */
}

/* The address of a noted node, named (NULL without memory), and how many
 * of its first frames are the allocator's entry points (counted once). */
static struct addr_entry *named_at(struct wsp_syms *s, uint64_t node, uint32_t *lead)
{
	struct addr_entry *e = &s->addrs[s->nodes[node] - 1];
	if (!e->named && symbolize(s, e))
		return NULL;
	if (!e->lead_known) {
		e->lead_known = true;
		while (e->lead < e->count && is_allocator_entry(s->arena[e->first + e->lead].function))
			e->lead++;
	}
	*lead = e->lead;
	return e;
}

/* Does this view keep a native frame of a stack with Python frames?
 * Merged: not the evaluation call that runs a block of Python frames (the
 * native frame just outside the block's outermost: so its nameless cold
 * parts are known too), nor, outside the innermost Python frame, any
 * other frame of the interpreter's module (the call machinery between
 * blocks); C code of other modules stays where it ran. */
struct view_walk {
	bool python_seen, after_python;
	int32_t interp;       /* the interpreter's module, once an evaluation frame showed it */
};

static bool view_keeps(enum wsp_stack_view view, struct view_walk *w, const struct addr_entry *e)
{
	bool python = e->mod == PY_MOD, after = w->after_python;
	w->after_python = python;
	if (python) {
		w->python_seen = true;
		return view != WSP_STACKS_NATIVE;
	}
	if (view == WSP_STACKS_PYTHON) /* of a stack with Python frames */
		return false;
	if (view == WSP_STACKS_NATIVE || !w->python_seen)
		return true;
	if (after) {
		w->interp = e->mod;
		return false;
	}
	return e->mod < 0 || e->mod != w->interp;
}

/* Does the stack at node have Python frames (which the Python view shows alone)? */
static bool has_python(const struct wsp_syms *s, uint64_t node)
{
	for (; node && node < s->nodecap && s->nodes[node]; node = s->parents[node])
		if (s->addrs[s->nodes[node] - 1].mod == PY_MOD)
			return true;
	return false;
}

size_t wsp_syms_stack(struct wsp_syms *s, const wsprof_trace *t, uint64_t node, const struct wsp_frame **frames)
{
	(void)t; /* the stack as noted: the trace may keep none by now */
	name_all_once(s);
	size_t n = 0;
	bool top = true;
	struct view_walk w = { .interp = INT32_MIN };
	enum wsp_stack_view view = s->view;
	if (view == WSP_STACKS_PYTHON && !has_python(s, node))
		view = WSP_STACKS_NATIVE; /* nothing else to show */
	for (; node && node < s->nodecap && s->nodes[node]; node = s->parents[node]) {
		uint32_t lead;
		const struct addr_entry *e = named_at(s, node, &lead);
		if (!e)
			break; /* without memory */
		if (!view_keeps(view, &w, e))
			continue;
		/* The allocator's entry points are left out, from the top only. */
		for (uint32_t i = top ? lead : 0; i < e->count; i++, top = false) {
			if (wsp_grow(&s->out, &s->outcap, n + 1, sizeof *s->out))
				break;
			s->out[n++] = s->arena[e->first + i];
		}
	}
	*frames = s->out;
	return n;
}

size_t wsp_syms_site_at(const struct wsp_syms *s, const struct wsp_frame *frames, size_t n)
{
	size_t python = n;
	if (s->view == WSP_STACKS_DEFAULT || s->view == WSP_STACKS_PYTHON)
		for (size_t i = 0; i < n; i++) {
			if (!frames[i].python)
				continue;
			if (s->view == WSP_STACKS_PYTHON || !frames[i].library)
				return i;
			if (python == n)
				python = i;
		}
	return python < n ? python : 0;
}

const struct wsp_frame *wsp_syms_site(struct wsp_syms *s, const wsprof_trace *t, uint64_t node, uint32_t *id)
{
	(void)t;
	name_all_once(s);
	bool python_first = s->view == WSP_STACKS_DEFAULT || s->view == WSP_STACKS_PYTHON;
	if (python_first) {
		const struct addr_entry *innermost = NULL;
		for (uint64_t at = node; at && at < s->nodecap && s->nodes[at]; at = s->parents[at]) {
			const struct addr_entry *e = &s->addrs[s->nodes[at] - 1];
			if (e->mod != PY_MOD)
				continue;
			if (!innermost)
				innermost = e;
			if (s->view == WSP_STACKS_PYTHON || !s->arena[e->first].library) {
				innermost = e;
				break;
			}
		}
		if (innermost) {
			*id = innermost->first;
			return &s->arena[*id];
		}
	}
	for (; node && node < s->nodecap && s->nodes[node]; node = s->parents[node]) {
		uint32_t lead;
		const struct addr_entry *e = named_at(s, node, &lead);
		if (!e)
			return NULL;
		if (e->mod == PY_MOD && s->view == WSP_STACKS_NATIVE)
			continue;
		if (lead < e->count) {
			*id = e->first + lead;
			return &s->arena[*id];
		}
	}
	return NULL;
}

bool wsp_syms_module(const struct wsp_syms *s, uint32_t id, struct wsp_module *out)
{
	if (!id || id > s->nmods)
		return false;
	const struct mod *m = &s->mods[id - 1];
	*out = (struct wsp_module){ .path = m->path, .build_id = m->bid, .base = m->base, .start = m->start,
				    .end = m->end };
	return true;
}

const char *wsp_frame_label(const struct wsp_frame *f, char *buf, size_t cap)
{
	const char *file = f->file ? strrchr(f->file, '/') : NULL;
	file = file ? file + 1 : f->file;
	if (f->python)
		snprintf(buf, cap, "py %s (%s:%u)", f->function, file ? file : "?", f->line);
	else if (f->function && file && f->line)
		snprintf(buf, cap, "%s (%s:%u)", f->function, file, f->line);
	else if (f->function && f->module)
		snprintf(buf, cap, "%s (%s)", f->function, f->module);
	else if (f->function)
		snprintf(buf, cap, "%s", f->function);
	else if (f->module)
		snprintf(buf, cap, "%s+0x%llx", f->module, (unsigned long long)f->offset);
	else
		snprintf(buf, cap, "0x%llx", (unsigned long long)f->offset);
	return buf;
}
