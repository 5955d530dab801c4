/*
 * jobsummary.c - `wsprof report summary` of a job (several traces, or a
 * directory of them): a line per process, the tree fork and exec made of
 * them, the totals, and across the ranks (or processes) each figure's
 * least, median and most with who holds it: the imbalance users look for.
 * Printed from a job loaded by the command (cmd/summary.c).
 */
#include "analyzer.h"
#include "text.h"
#include "job.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Kinds with a column: seen in any process, address ranges told with their kind. */
static bool kind_shown(const struct wsp_job *job, unsigned k)
{
	if (wsp_kind_is_address_space(k))
		return false;
	for (size_t i = 0; i < job->n; i++)
		if (!job->procs[i].failed && job->procs[i].kinds[k].seen)
			return true;
	return false;
}

static const char *program(const struct wsp_job_proc *p)
{
	return p->cmdline[0] ? p->cmdline : p->exe;
}

/* The command line with its program's directory left out ("cc1 -quiet
 * main.c" for "/usr/lib/gcc/.../cc1 -quiet main.c"): what a table has room for. */
static const char *short_program(const struct wsp_job_proc *p)
{
	const char *s = program(p), *space = strchr(s, ' '), *slash = NULL;
	for (const char *c = s; *c && (!space || c < space); c++)
		if (*c == '/')
			slash = c;
	return slash ? slash + 1 : s;
}

/* ---- Across the ranks ------------------------------------------------- */

/* The processes compared: those with a rank when two or more have one, else all. */
static bool by_rank(const struct wsp_job *job)
{
	size_t ranked = 0;
	for (size_t i = 0; i < job->n; i++)
		ranked += !job->procs[i].failed && job->procs[i].rank >= 0;
	return ranked >= 2;
}

/* An image that ended in exec goes on as the next one: not a process of its own here. */
static bool compared(const struct wsp_job_proc *p, bool ranks)
{
	return !p->failed && !p->status.ended_by_exec && (!ranks || p->rank >= 0);
}

enum figure { FIG_PEAK, FIG_LEAKED, FIG_ALLOCATIONS, FIG_DURATION };
static const char *const figure_words[] = { "peak", "leaked", "allocations", "duration" };
static const char *const figure_keys[] = { "peak_bytes", "leaked_bytes", "allocations", "duration_s" };

static uint64_t figure_of(const struct wsp_job_proc *p, unsigned kind, enum figure f)
{
	switch (f) {
	case FIG_PEAK: return p->kinds[kind].peak_bytes;
	case FIG_LEAKED: return p->kinds[kind].live_bytes;
	case FIG_ALLOCATIONS: return p->kinds[kind].allocations;
	default: return p->duration_ns;
	}
}

struct spread {
	size_t n;
	uint64_t min, median, max;
	const struct wsp_job_proc *min_of, *max_of; /* the first with the least, the first with the most */
};

static struct spread spread_of(const struct wsp_job *job, bool ranks, unsigned kind, enum figure f)
{
	struct spread s = { 0 };
	uint64_t *v = malloc((job->n ? job->n : 1) * sizeof *v);
	if (!v)
		return s;
	for (size_t i = 0; i < job->n; i++) {
		const struct wsp_job_proc *p = &job->procs[i];
		if (!compared(p, ranks))
			continue;
		uint64_t x = figure_of(p, kind, f);
		v[s.n++] = x;
		if (!s.min_of || x < s.min)
			s.min = x, s.min_of = p;
		if (!s.max_of || x > s.max)
			s.max = x, s.max_of = p;
	}
	qsort(v, s.n, sizeof *v, wsp_cmp_u64);
	s.median = wsp_nearest_rank(v, s.n, 50);
	free(v);
	return s;
}

static const char *amount(char *buf, size_t cap, uint64_t v, enum figure f)
{
	if (f == FIG_DURATION)
		snprintf(buf, cap, "%.3f s", (double)v / 1e9);
	else if (f == FIG_ALLOCATIONS)
		wsp_group_digits(buf, cap, v);
	else
		wsp_human_bytes(buf, cap, v);
	return buf;
}

/* ---- Text -------------------------------------------------------------- */

static void print_tree(const struct wsp_job *job)
{
	printf("\n  tree (fork and exec)\n");
	/* Depth-first from each process without a parent; an exec'd image is
	 * told on its process's line. */
	size_t *stack = malloc((job->n + 1) * sizeof *stack), *depth = malloc((job->n + 1) * sizeof *depth);
	if (!stack || !depth) {
		free(stack), free(depth);
		return;
	}
	for (size_t r = 0; r < job->n; r++) {
		const struct wsp_job_proc *rp = &job->procs[r];
		if (rp->failed || rp->parent >= 0)
			continue;
		size_t top = 0;
		stack[top] = r, depth[top++] = 0;
		while (top) {
			size_t i = stack[--top], d = depth[top];
			const struct wsp_job_proc *p = &job->procs[i];
			printf("    %*s%u %.100s", (int)(2 * (d < 20 ? d : 20)), "", p->pid, short_program(p));
			/* the images it became by exec, on its line */
			size_t last = i;
			for (bool more = true; more;) {
				more = false;
				for (size_t j = last + 1; j < job->n; j++)
					if (job->procs[j].parent == (int)last && job->procs[j].exec_of_parent) {
						printf(" -> %.100s", short_program(&job->procs[j]));
						last = j;
						more = true;
						break;
					}
			}
			const struct wsp_job_proc *image = &job->procs[last];
			if (image->rank >= 0)
				printf(" (rank %lld)", (long long)image->rank);
			printf("\n");
			/* its children: forked by any of its images, pushed last first */
			for (size_t j = job->n; j-- > i + 1;) {
				const struct wsp_job_proc *c = &job->procs[j];
				if (c->failed || c->parent < 0 || c->exec_of_parent)
					continue;
				bool mine = false;
				for (size_t k = i; k <= last && !mine; k++)
					mine = c->parent == (int)k &&
					       (k == i || (job->procs[k].exec_of_parent && job->procs[k].pid == p->pid));
				if (mine)
					stack[top] = j, depth[top++] = d + 1;
			}
		}
	}
	free(stack), free(depth);
}

/* The table's order: by rank where both have one, else as they started. */
static int cmp_shown(const void *pa, const void *pb, void *arg)
{
	const struct wsp_job *job = arg;
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	const struct wsp_job_proc *x = &job->procs[a], *y = &job->procs[b];
	if (x->rank >= 0 && y->rank >= 0 && x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (a > b) - (a < b);
}

static void print_processes(const struct wsp_job *job)
{
	size_t *order = malloc((job->n ? job->n : 1) * sizeof *order);
	if (!order)
		return;
	for (size_t i = 0; i < job->n; i++)
		order[i] = i;
	qsort_r(order, job->n, sizeof *order, cmp_shown, (void *)job);
	printf("\n  %-10s %8s %8s %-32s %10s", "process", "pid", "parent", "program", "duration");
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		if (kind_shown(job, k))
		{
			char peak[24], leaked[24];
			snprintf(peak, sizeof peak, "%s peak", wsprof_kind_name(k));
			snprintf(leaked, sizeof leaked, "%s leaked", wsprof_kind_name(k));
			printf(" %11.11s %11.11s", peak, leaked);
		}
	printf(" %7s\n", "failed");
	for (size_t o = 0; o < job->n; o++) {
		const struct wsp_job_proc *p = &job->procs[order[o]];
		if (p->failed)
			continue;
		char name[32], parent[16] = "-", a[32];
		if (p->rank >= 0)
			snprintf(name, sizeof name, "rank %lld", (long long)p->rank);
		else
			snprintf(name, sizeof name, "-");
		if (p->exec_of_parent)
			snprintf(parent, sizeof parent, "exec");
		else if (p->parent >= 0)
			snprintf(parent, sizeof parent, "%u", job->procs[p->parent].pid);
		printf("  %-10s %8u %8s %-32.32s %8.3f s", name, p->pid, parent, short_program(p), (double)p->duration_ns / 1e9);
		uint64_t failed = 0;
		for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
			failed += p->kinds[k].failed;
			if (!kind_shown(job, k))
				continue;
			const char *est = k == WSPROF_KIND_HEAP && p->estimated ? "~" : "";
			char peak[40], leaked[40];
			snprintf(peak, sizeof peak, "%s%s", est, wsp_human_bytes(a, sizeof a, p->kinds[k].peak_bytes));
			snprintf(leaked, sizeof leaked, "%s%s", est, wsp_human_bytes(a, sizeof a, p->kinds[k].live_bytes));
			printf(" %11s %11s", peak, leaked);
		}
		printf(" %7s%s\n", wsp_group_digits(a, sizeof a, failed), p->status.complete ? "" : "  (trace incomplete)");
	}
	free(order);
}

static void print_totals(const struct wsp_job *job)
{
	printf("\n  %-12s %13s %13s %11s %11s %8s\n", "totals", "allocations", "frees", "peaks, sum", "leaked", "failed");
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		if (!kind_shown(job, k))
			continue;
		uint64_t allocs = 0, frees = 0, peaks = 0, leaked = 0, failed = 0;
		for (size_t i = 0; i < job->n; i++) {
			const struct wsp_kind_stats *s = &job->procs[i].kinds[k];
			if (job->procs[i].failed)
				continue;
			allocs += s->allocations, frees += s->frees, peaks += s->peak_bytes;
			leaked += s->live_bytes, failed += s->failed;
		}
		char a[32], b[32], c[32], d[32], e[32];
		printf("  %-12s %13s %13s %11s %11s %8s\n", wsprof_kind_name(k), wsp_group_digits(a, sizeof a, allocs),
		       wsp_group_digits(b, sizeof b, frees), wsp_human_bytes(c, sizeof c, peaks),
		       wsp_human_bytes(d, sizeof d, leaked), wsp_group_digits(e, sizeof e, failed));
	}
	printf("  (peaks, sum: what the processes would hold if each peaked at once, at most)\n");
}

static void print_spread_row(const struct wsp_job *job, bool ranks, unsigned kind, enum figure f, const char *label)
{
	struct spread s = spread_of(job, ranks, kind, f);
	if (!s.n)
		return;
	char mn[32], md[32], mx[32], wmin[32], wmax[32];
	printf("  %-22s %12s %-10s %12s %12s %s\n", label, amount(mn, sizeof mn, s.min, f),
	       wsp_job_proc_name(s.min_of, wmin, sizeof wmin), amount(md, sizeof md, s.median, f),
	       amount(mx, sizeof mx, s.max, f), wsp_job_proc_name(s.max_of, wmax, sizeof wmax));
}

static void print_spread(const struct wsp_job *job)
{
	bool ranks = by_rank(job);
	size_t n = 0;
	for (size_t i = 0; i < job->n; i++)
		n += compared(&job->procs[i], ranks);
	if (n < 2)
		return;
	printf("\n  across the %zu %s %12s %-10s %12s %12s\n", n, ranks ? "ranks    " : "processes", "least", "", "median", "most");
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		if (!kind_shown(job, k))
			continue;
		for (enum figure f = FIG_PEAK; f <= FIG_ALLOCATIONS; f++) {
			char label[64];
			snprintf(label, sizeof label, "%s %s", wsprof_kind_name(k), figure_words[f]);
			print_spread_row(job, ranks, k, f, label);
		}
	}
	print_spread_row(job, ranks, 0, FIG_DURATION, "duration");
}

static void print_text(const struct wsp_job *job, char *const *paths, size_t npaths)
{
	size_t read = job->n - job->unread;
	printf("wsprof summary of a job: %zu trace%s", read, read == 1 ? "" : "s");
	if (job->unread)
		printf(" (%zu more could not be read)", job->unread);
	printf(", from %s%s\n", paths[0], npaths > 1 ? " ..." : "");
	const struct wsp_job_proc *first = NULL;
	uint64_t end = 0;
	for (size_t i = 0; i < job->n; i++) {
		const struct wsp_job_proc *p = &job->procs[i];
		if (p->failed)
			continue;
		if (!first)
			first = p;
		uint64_t e = p->start_realtime_ns + p->duration_ns;
		end = e > end ? e : end;
	}
	for (size_t i = 0; i < job->n; i++)
		if (!job->procs[i].failed && job->procs[i].job_id[0]) {
			const struct wsp_job_proc *p = &job->procs[i];
			printf("  job       %s (%s)", p->job_id, p->launcher);
			if (p->job_size)
				printf(", %llu ranks", (unsigned long long)p->job_size);
			printf("\n");
			break;
		}
	time_t start = (time_t)(first->start_realtime_ns / 1000000000u);
	struct tm tm;
	char when[64] = "?";
	if (gmtime_r(&start, &tm))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("  recorded  %s, %.3f s from the first start to the last end\n", when,
	       (double)(end - first->start_realtime_ns) / 1e9);
	print_processes(job);
	print_tree(job);
	print_totals(job);
	print_spread(job);
}

/* ---- JSON -------------------------------------------------------------- */

static void json_spread(struct wsp_json *j, const char *key, const struct spread *s, bool ranks, bool seconds)
{
	wsp_json_begin_object(j, key);
	if (seconds) {
		wsp_json_seconds(j, "min", s->min);
		wsp_json_seconds(j, "median", s->median);
		wsp_json_seconds(j, "max", s->max);
	} else {
		wsp_json_uint(j, "min", s->min);
		wsp_json_uint(j, "median", s->median);
		wsp_json_uint(j, "max", s->max);
	}
	if (ranks) {
		wsp_json_int(j, "min_rank", s->min_of->rank);
		wsp_json_int(j, "max_rank", s->max_of->rank);
	} else {
		wsp_json_uint(j, "min_pid", s->min_of->pid);
		wsp_json_uint(j, "max_pid", s->max_of->pid);
	}
	wsp_json_end_object(j);
}

static void print_json(const struct wsp_job *job)
{
	struct wsp_json j;
	wsp_json_init(&j, stdout);
	wsp_json_begin_object(&j, NULL);
	wsp_json_string(&j, "report", "summary");
	wsp_json_bool(&j, "job", true);
	wsp_json_uint(&j, "traces", job->n - job->unread);
	wsp_json_uint(&j, "unread", job->unread);
	wsp_json_begin_array(&j, "processes");
	size_t *index = calloc(job->n + 1, sizeof *index), shown = 0; /* place in this array */
	for (size_t i = 0; i < job->n; i++) {
		const struct wsp_job_proc *p = &job->procs[i];
		if (index)
			index[i] = shown;
		if (p->failed)
			continue;
		shown++;
		wsp_json_begin_object(&j, NULL);
		wsp_json_string(&j, "trace", p->path);
		wsp_json_uint(&j, "pid", p->pid);
		wsp_json_uint(&j, "ppid", p->ppid);
		p->rank >= 0 ? wsp_json_int(&j, "rank", p->rank) : wsp_json_null(&j, "rank");
		wsp_json_string(&j, "job_id", p->job_id[0] ? p->job_id : NULL);
		wsp_json_string(&j, "launcher", p->launcher[0] ? p->launcher : NULL);
		wsp_json_string(&j, "program", program(p));
		wsp_json_string(&j, "exe", p->exe);
		if (p->parent >= 0 && index)
			wsp_json_uint(&j, "parent", index[p->parent]);
		else
			wsp_json_null(&j, "parent");
		wsp_json_bool(&j, "exec_of_parent", p->exec_of_parent);
		wsp_json_bool(&j, "complete", p->status.complete);
		wsp_json_seconds(&j, "start_unix_s", p->start_realtime_ns);
		wsp_json_seconds(&j, "duration_s", p->duration_ns);
		wsp_json_begin_object(&j, "kinds");
		for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
			const struct wsp_kind_stats *s = &p->kinds[k];
			if (!kind_shown(job, k))
				continue;
			wsp_json_begin_object(&j, wsprof_kind_name(k));
			wsp_json_bool(&j, "estimated", k == WSPROF_KIND_HEAP && p->estimated);
			wsp_json_uint(&j, "allocations", s->allocations);
			wsp_json_uint(&j, "frees", s->frees);
			wsp_json_uint(&j, "failed", s->failed);
			wsp_json_uint(&j, "peak_bytes", s->peak_bytes);
			wsp_json_uint(&j, "leaked_bytes", s->live_bytes);
			wsp_json_uint(&j, "total_bytes", s->total_bytes);
			wsp_json_end_object(&j);
		}
		wsp_json_end_object(&j);
		wsp_json_end_object(&j);
	}
	free(index);
	wsp_json_end_array(&j);
	wsp_json_begin_object(&j, "totals");
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		if (!kind_shown(job, k))
			continue;
		uint64_t allocs = 0, peaks = 0, leaked = 0, failed = 0;
		for (size_t i = 0; i < job->n; i++) {
			if (job->procs[i].failed)
				continue;
			const struct wsp_kind_stats *s = &job->procs[i].kinds[k];
			allocs += s->allocations, peaks += s->peak_bytes, leaked += s->live_bytes, failed += s->failed;
		}
		wsp_json_begin_object(&j, wsprof_kind_name(k));
		wsp_json_uint(&j, "allocations", allocs);
		wsp_json_uint(&j, "peak_bytes_sum", peaks);
		wsp_json_uint(&j, "leaked_bytes", leaked);
		wsp_json_uint(&j, "failed", failed);
		wsp_json_end_object(&j);
	}
	wsp_json_end_object(&j);
	bool ranks = by_rank(job);
	struct spread d = spread_of(job, ranks, 0, FIG_DURATION);
	wsp_json_begin_object(&j, "across");
	wsp_json_string(&j, "by", ranks ? "rank" : "process");
	wsp_json_uint(&j, "count", d.n);
	if (d.n) {
		for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
			if (!kind_shown(job, k))
				continue;
			wsp_json_begin_object(&j, wsprof_kind_name(k));
			for (enum figure f = FIG_PEAK; f <= FIG_ALLOCATIONS; f++) {
				struct spread s = spread_of(job, ranks, k, f);
				json_spread(&j, figure_keys[f], &s, ranks, false);
			}
			wsp_json_end_object(&j);
		}
		json_spread(&j, "duration_s", &d, ranks, true);
	}
	wsp_json_end_object(&j);
	wsp_json_end_object(&j);
}

void wsp_job_summary_print(const struct wsp_job *job, char *const *paths, size_t n, bool json)
{
	if (json)
		print_json(job);
	else
		print_text(job, paths, n);
}
