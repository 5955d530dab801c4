/*
 * timeline.h - the figures of memory over time (timeline.c), for the text
 * (text/timelinetext.c) and the charts (draw/timeline.c).
 */
#ifndef WSP_TIMELINE_H
#define WSP_TIMELINE_H

#include "analyzer.h"

/* Kinds worth a chart: every kind that allocated (kind -1), or kind, but
 * the address space CUDA VMM reserves (no memory behind it). @return how
 * many in kinds (WSPROF_KIND_COUNT at most). */
size_t wsp_timeline_kinds(const struct wsp_loaded *l, int kind, unsigned *kinds);

/* The points of a series as step lines: x in seconds; value: hi (or
 * hi_b; or hi_b - hi: the least free of a device). The last point is
 * carried to the end of the trace. */
struct wsp_line {
	double *x, *y;
	size_t n;
};
enum wsp_line_pick { WSP_PICK_HI, WSP_PICK_HI_B, WSP_PICK_B_MINUS_HI };
/* @return 0 or -ENOMEM (ln empty). */
int wsp_line_of_series(const struct wsp_series *s, enum wsp_line_pick pick, uint64_t end_ns, struct wsp_line *ln);
void wsp_line_free(struct wsp_line *ln);
double wsp_line_max(const struct wsp_line *ln);

/* Everything one kind's chart shows. */
struct wsp_kind_lines {
	struct wsp_line allocated, in_use, wss, rss, device_free;
	bool has_in_use;  /* the program said some of it could be given back */
	int device;       /* of device_free */
};
/* @return 0 or -ENOMEM. */
int wsp_kind_lines(const struct wsp_loaded *l, unsigned k, struct wsp_kind_lines *kl);
void wsp_kind_lines_free(struct wsp_kind_lines *kl);
/* The heap and mmap: the kinds the resident set goes with. */
bool wsp_is_cpu_kind(unsigned k);
/* The kind the resident set is drawn with: the heap, else mmap. */
unsigned wsp_rss_kind(const struct wsp_loaded *l);

/* A job: each process's live bytes of one kind as a line (in its
 * proc->extra), x in seconds since it started. */
struct wsp_job_line {
	struct wsp_line live;          /* x: seconds since the process started */
	uint64_t peak, peak_ns;
};
struct wsp_job;
struct wsp_job_proc;
/* Read the job's traces side by side (job.h), a line each.
 * @return 0 (free with wsp_job_free(job, wsp_job_line_free)), or 1 after a one-line error. */
int wsp_timeline_job_load(char *const *paths, size_t n, unsigned kind, struct wsp_job *job);
void wsp_job_line_free(void *extra);
/* The processes drawn: read, and holding memory of the kind. */
bool wsp_job_line_drawn(const struct wsp_job_proc *p);
/* When the job's first process started (wall clock, ns). */
uint64_t wsp_job_start(const struct wsp_job *job);
/* Where a process's clock starts on the job's, in seconds. */
double wsp_job_offset_s(const struct wsp_job_proc *p, uint64_t start);

#endif
