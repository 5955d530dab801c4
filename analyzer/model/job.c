/*
 * job.c - see job.h. The readers are threads taking the next trace from a
 * shared counter; each loads one, copies its figures, lets the view visit
 * it and frees it before taking another.
 */
#include "job.h"

#include "analyzer.h"
#include "grow.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Which files -------------------------------------------------------- */

/* The first 16 bytes of a trace: a zstd skippable frame holding WSPROF. */
static bool is_trace(const char *path)
{
	unsigned char head[16];
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(head, 1, sizeof head, f);
	fclose(f);
	return n == sizeof head && head[0] == 0x57 && head[1] == 0x2a && head[2] == 0x4d && head[3] == 0x18 &&
	       !memcmp(head + 8, "WSPROF\0\x1a", 8);
}

static int cmp_names(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b); /* t.2.wsp before t.10.wsp */
}

static int add_path(char ***paths, size_t *n, size_t *cap, const char *dir, const char *name)
{
	char *p;
	if (dir ? asprintf(&p, "%s/%s", dir, name) < 0 : !(p = strdup(name)))
		return -1;
	if (wsp_grow(paths, cap, *n + 1, sizeof **paths)) {
		free(p);
		return -1;
	}
	(*paths)[(*n)++] = p;
	return 0;
}

/* The traces in dir, by name, appended. @return how many, or -1 (errno). */
static long traces_in(const char *dir, char ***paths, size_t *n, size_t *cap)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	size_t first = *n;
	struct dirent *e;
	int err = 0;
	while (!err && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *p;
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0) {
			err = ENOMEM;
			break;
		}
		struct stat st;
		if (!stat(p, &st) && S_ISREG(st.st_mode) && is_trace(p) && add_path(paths, n, cap, dir, e->d_name))
			err = ENOMEM;
		free(p);
	}
	closedir(d);
	if (err) {
		errno = err;
		return -1;
	}
	qsort(*paths + first, *n - first, sizeof **paths, cmp_names);
	return (long)(*n - first);
}

int wsp_job_paths(char *const *operands, size_t n, char ***paths, size_t *npaths)
{
	size_t cap = 0;
	*paths = NULL;
	*npaths = 0;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (!stat(operands[i], &st) && S_ISDIR(st.st_mode)) {
			long k = traces_in(operands[i], paths, npaths, &cap);
			if (k < 0) {
				fprintf(stderr, "wsprof: cannot read the directory %s: %s\n", operands[i], strerror(errno));
				break;
			}
			if (k == 0) {
				fprintf(stderr, "wsprof: %s holds no wsprof trace\n", operands[i]);
				break;
			}
		} else if (add_path(paths, npaths, &cap, NULL, operands[i])) {
			fprintf(stderr, "wsprof: out of memory\n");
			break;
		}
		if (i + 1 == n)
			return 0;
	}
	wsp_job_paths_free(*paths, *npaths);
	*paths = NULL;
	*npaths = 0;
	return 2;
}

void wsp_job_paths_free(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

/* ---- Reading them -------------------------------------------------------- */

struct readers {
	char *const *paths;
	size_t n;
	const struct wsp_model_options *opt;
	bool symbols;
	wsp_job_visit_fn visit;
	void *ctx;
	struct wsp_job_proc *procs;
	atomic_size_t next;
	atomic_bool visit_failed;
};

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

static int take_figures(struct wsp_job_proc *p, const struct wsp_loaded *l)
{
	const wsprof_process *pr = wsprof_trace_process(l->trace);
	p->pid = pr->pid;
	p->ppid = pr->ppid;
	p->parent_traced_pid = pr->parent_traced_pid;
	p->rank = pr->rank;
	p->job_size = pr->job_size;
	p->start_realtime_ns = pr->start_realtime_ns;
	p->status = l->status;
	p->duration_ns = l->status.end_time_ns;
	p->estimated = wsp_model_totals_estimated(l->model, WSPROF_KIND_HEAP);
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		p->kinds[k] = *wsp_model_kind(l->model, k);
	p->exe = dup_or_empty(pr->exe);
	p->cmdline = dup_or_empty(pr->cmdline);
	p->job_id = dup_or_empty(pr->job_id);
	p->launcher = dup_or_empty(pr->launcher);
	return p->exe && p->cmdline && p->job_id && p->launcher ? 0 : -1;
}

static void *reader_main(void *arg)
{
	struct readers *r = arg;
	for (;;) {
		size_t i = atomic_fetch_add(&r->next, 1);
		if (i >= r->n || atomic_load(&r->visit_failed))
			return NULL;
		struct wsp_job_proc *p = &r->procs[i];
		struct wsp_loaded l;
		if (wsp_load(r->paths[i], r->opt, r->symbols, &l)) {
			p->failed = true;
			continue;
		}
		if (take_figures(p, &l) || (r->visit && r->visit(p, &l, r->ctx))) {
			if (!p->exe)
				fprintf(stderr, "wsprof: out of memory\n");
			atomic_store(&r->visit_failed, true);
		}
		wsp_loaded_free(&l);
	}
}

static int cmp_start(const void *pa, const void *pb)
{
	const struct wsp_job_proc *a = pa, *b = pb;
	if (a->failed != b->failed)
		return a->failed ? 1 : -1;
	if (a->start_realtime_ns != b->start_realtime_ns)
		return a->start_realtime_ns < b->start_realtime_ns ? -1 : 1;
	return strverscmp(a->path, b->path);
}

/* Each process's parent in the job: the image it replaced (same pid,
 * started before), else the newest image of its parent's pid started
 * before it. */
static void link_parents(struct wsp_job *job)
{
	for (size_t i = 0; i < job->n; i++) {
		struct wsp_job_proc *p = &job->procs[i];
		p->parent = -1;
		if (p->failed)
			continue;
		for (size_t j = i; j-- > 0;) {
			const struct wsp_job_proc *q = &job->procs[j];
			if (q->pid == p->pid) {
				p->parent = (int)j;
				p->exec_of_parent = true;
				break;
			}
			if (p->parent < 0 && q->pid == p->ppid)
				p->parent = (int)j;
		}
	}
}

static size_t cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (size_t)n : 1;
}

int wsp_job_load(char *const *paths, size_t n, const struct wsp_model_options *opt, bool symbols,
		 wsp_job_visit_fn visit, void *ctx, struct wsp_job *job)
{
	*job = (struct wsp_job){ calloc(n ? n : 1, sizeof *job->procs), n, 0 };
	struct readers r = { .paths = paths, .n = n, .opt = opt, .symbols = symbols, .visit = visit, .ctx = ctx,
			     .procs = job->procs };
	if (!job->procs) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		if (!(job->procs[i].path = strdup(paths[i]))) {
			fprintf(stderr, "wsprof: out of memory\n");
			wsp_job_free(job, NULL);
			return 1;
		}
	size_t nthreads = cores() < n ? cores() : n;
	wsp_load_set_quiet(true);
	pthread_t *threads = calloc(nthreads ? nthreads : 1, sizeof *threads);
	size_t started = 0;
	for (size_t t = 0; threads && t + 1 < nthreads; t++, started++)
		if (pthread_create(&threads[t], NULL, reader_main, &r))
			break;
	reader_main(&r); /* this thread reads too */
	for (size_t t = 0; t < started; t++)
		pthread_join(threads[t], NULL);
	free(threads);
	wsp_load_set_quiet(false);
	for (size_t i = 0; i < n; i++)
		job->unread += job->procs[i].failed;
	qsort(job->procs, n, sizeof *job->procs, cmp_start);
	link_parents(job);
	if (atomic_load(&r.visit_failed) || job->unread == n) {
		wsp_job_free(job, NULL);
		return 1;
	}
	return 0;
}

void wsp_job_free(struct wsp_job *job, void (*free_extra)(void *))
{
	for (size_t i = 0; job->procs && i < job->n; i++) {
		struct wsp_job_proc *p = &job->procs[i];
		free(p->path), free(p->exe), free(p->cmdline), free(p->job_id), free(p->launcher);
		if (free_extra && p->extra)
			free_extra(p->extra);
	}
	free(job->procs);
	*job = (struct wsp_job){ 0 };
}

int wsp_job_pick(char *const *paths, size_t n, const char *which)
{
	char *end;
	long long want = strtoll(which, &end, 10);
	if (!*which || *end || want < 0) {
		fprintf(stderr, "wsprof: --process takes a rank or a pid, not '%s'\n", which);
		return -1;
	}
	int by_rank = -1, by_pid = -1;
	uint64_t pid_start = 0;
	for (size_t i = 0; i < n; i++) {
		wsprof_trace *t;
		if (wsprof_trace_open(paths[i], &t) < 0)
			continue;
		const wsprof_process *p = wsprof_trace_process(t);
		if (p->rank == want && by_rank < 0)
			by_rank = (int)i;
		if (p->pid == want && (by_pid < 0 || p->start_realtime_ns >= pid_start)) {
			by_pid = (int)i; /* an exec chain: its last image */
			pid_start = p->start_realtime_ns;
		}
		wsprof_trace_close(t);
	}
	int pick = by_rank >= 0 ? by_rank : by_pid;
	if (pick < 0)
		fprintf(stderr, "wsprof: no trace of rank or pid %s among the %zu given\n", which, n);
	return pick;
}

const char *wsp_job_proc_name(const struct wsp_job_proc *p, char *buf, size_t cap)
{
	if (p->rank >= 0)
		snprintf(buf, cap, "rank %lld", (long long)p->rank);
	else
		snprintf(buf, cap, "pid %u", p->pid);
	return buf;
}
