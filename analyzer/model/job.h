/*
 * job.h - the traces of a job read as one: the ranks of an MPI run, a
 * program and the children it forked, a build's compilers.
 *
 * A job is a list of trace files (given one by one, or a directory whose
 * files are traces). Each is read by a reader of its own, as many at once
 * as there are cores, each freeing its model before it takes the next, so
 * memory stays that of a few traces whatever the job's size. What a view
 * wants of each trace it takes from the loaded trace in a visit callback,
 * on the reader's thread; the job keeps every process's figures.
 */
#ifndef WSP_JOB_H
#define WSP_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "wsprof/trace.h"

struct wsp_loaded;

/* One trace of the job: one process image (an exec starts another). */
struct wsp_job_proc {
	char *path;
	uint32_t pid, ppid, parent_traced_pid;
	int64_t rank;              /* -1: none */
	uint64_t job_size;
	char *exe, *cmdline, *job_id, *launcher;
	uint64_t start_realtime_ns, duration_ns;
	wsprof_trace_status status;
	struct wsp_kind_stats kinds[WSPROF_KIND_COUNT];
	bool estimated;            /* a sampled trace: its heap totals are estimates (not counted) */
	int parent;                /* the job's process this one's parent is (fork or exec), -1: none */
	bool exec_of_parent;       /* parent is the image this one replaced (same pid) */
	void *extra;               /* what a view's visit kept of it */
	bool failed;               /* could not be read (said on stderr) */
};

struct wsp_job {
	struct wsp_job_proc *procs; /* in the order of their start, a process before the ones it started */
	size_t n;
	size_t unread;              /* traces that could not be read */
};

/* The traces named by operands: files as they are, and of a directory
 * each file in it that is a wsprof trace (by its first bytes), by name.
 * @return 0 with *paths (malloc'd, each malloc'd), or 2 after a one-line
 * error (nothing readable, no trace in a directory). */
int wsp_job_paths(char *const *operands, size_t n, char ***paths, size_t *npaths);
void wsp_job_paths_free(char **paths, size_t n);

/* Called on a reader's thread with each trace loaded (opt, symbols);
 * p's own figures are filled already. @return 0, or -1 to fail the job
 * (out of memory, after a one-line error). */
typedef int (*wsp_job_visit_fn)(struct wsp_job_proc *p, struct wsp_loaded *l, void *ctx);

/* Read every trace of paths, in parallel. A trace that cannot be read is
 * said on stderr and kept as failed. @return 0, or 1 when none could be
 * read or a visit failed. */
int wsp_job_load(char *const *paths, size_t n, const struct wsp_model_options *opt, bool symbols,
		 wsp_job_visit_fn visit, void *ctx, struct wsp_job *job);
void wsp_job_free(struct wsp_job *job, void (*free_extra)(void *));

/* The trace of paths that a --process operand names: a rank, else a pid
 * (the last image of that pid), from the traces' headers alone.
 * @return its index, or -1 after a one-line error. */
int wsp_job_pick(char *const *paths, size_t n, const char *which);

/* "rank 2", "pid 1234": how reports name a process. @return buf. */
const char *wsp_job_proc_name(const struct wsp_job_proc *p, char *buf, size_t cap);

#endif
