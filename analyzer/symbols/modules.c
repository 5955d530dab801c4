/*
 * modules.c - the modules of the noted stacks, as the trace recorded them
 * (path, build-id, where loaded), and reading them: each opened with
 * libdwfl on first use and checked to be the file recorded (a rebuilt or
 * missing module is never read: one warning, its frames module+offset),
 * its debug file found where distributions and debuginfod's client put
 * them (never fetched), the modules named in parallel, a thread per core,
 * and closed once every frame is named. What one module names is dwarf.c's.
 */
#include "symbols_internal.h"

#include "grow.h"
#include "progress.h"

#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the module table ------------------------------------------------- */

/* The module of an address (at addr, as info describes it), made on first sight. */
int32_t syms_module_of(struct wsp_syms *s, const wsprof_trace *t, uint64_t addr, const wsprof_module_info *info)
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
	m->key = m->bid[0] ? syms_intern(s, m->bid) : NULL;
	m->base = info->base;
	wsprof_trace_module_span_at(t, addr, &m->start, &m->end);
	const char *slash = strrchr(m->path, '/');
	m->name = slash ? slash + 1 : m->path;
	return (int32_t)s->nmods++;
}

void syms_modules_free(struct wsp_syms *s)
{
	for (size_t i = 0; i < s->nmods; i++) {
		if (s->mods[i].dwfl)
			dwfl_end(s->mods[i].dwfl);
		free(s->mods[i].syms);
		free(s->mods[i].path);
		free(s->mods[i].build_id);
	}
	free(s->mods);
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

/* ---- separate debug files ------------------------------------------- */

/* Where libdwfl looks for a module's separate debug file, by build-id
 * (DIR/.build-id/xx/yyyy.debug) and by .gnu_debuglink: the directories in
 * WSPROF_DEBUG_PATH (colon-separated, laid out like /usr/lib/debug) first,
 * then its own places (beside the module, its .debug directory,
 * /usr/lib/debug, where Debian's -dbgsym and -dbg packages install).
 * Set once, by the first wsp_syms_new. */
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
void syms_debug_places(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, find_debug_places);
}

/* Open a module's file with libdwfl and check that it is the file that
 * was recorded. Anything else leaves it unusable, once, with a warning. */
void syms_module_open(struct wsp_syms *s, struct mod *m)
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
	syms_index_free(m); /* its names were libdwfl's */
	m->state = MOD_UNTRIED;
}

/* ---- what could not be named, said once ------------------------------ */

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
void syms_say_unnamed(const struct wsp_syms *s)
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
void syms_say_absent(const struct wsp_syms *s)
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
			job->err = syms_name_offset(job->m, job->e[i]->offset, &job->raws);
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
		int need = e->named ? 0 : syms_needs_module(s, e);
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
		syms_raws_free(&jobs[j].raws);
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
			err = syms_adopt(s, job->e[i], job->raws.v + job->first[i], job->count[i]);
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

