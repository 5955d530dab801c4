/*
 * analyzer.h - the pieces of the `wsprof` command.
 *
 * Pipeline: the reader (src/) streams events -> the model (model.c) keeps
 * the live set and figures -> a renderer (summary.c, ...) prints them.
 * Commands are picked by name in main.c.
 */
#ifndef WSP_ANALYZER_H
#define WSP_ANALYZER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "model.h"
#include "symbols.h"
#include "units.h"
#include "wsprof/trace.h"

/* A trace read to its end into a model. */
struct wsp_loaded {
	const char *path;
	wsprof_trace *trace;
	struct wsp_model *model;
	struct wsp_syms *syms;     /* with symbols */
	wsprof_trace_status status;
	bool borrowed;             /* trace and syms are another wsp_loaded's: only the model is this one's */
};

/* Something that follows a pass over a trace, event by event: a page of
 * the full report that needs the events themselves (a heatmap's grid, the
 * state at a moment), so that one pass serves them all. */
struct wsp_follower {
	/* Each event, in order. @return 0 to go on, 1 when it needs no more,
	 * or a negative error, which ends the pass. */
	int (*event)(void *arg, wsprof_trace *t, const wsprof_event *ev);
	/* Once, after its last event (the trace's end, or it returned 1). */
	int (*end)(void *arg, wsprof_trace *t);
	void *arg;
};

/* Read the whole trace at path, binding stacks to modules for
 * symbolization when `symbols`. Prints a one-line error and returns
 * nonzero when nothing could be read; warns (once) when the trace is
 * truncated or damaged but partly readable. */
int wsp_load(const char *path, const struct wsp_model_options *opt, bool symbols, struct wsp_loaded *out);
/* Loads from now on draw no progress bar and name frames without warnings
 * (the readers of a job's traces, side by side). */
void wsp_load_set_quiet(bool quiet);
/* Which frames the stacks of loads show from now on (symbols.h): set once
 * by the command line (cli/main.c: --stacks, WSPROF_STACKS), before any
 * load; the default until then. */
void wsp_load_set_stacks(enum wsp_stack_view view);
enum wsp_stack_view wsp_load_stacks(void);
void wsp_loaded_free(struct wsp_loaded *l);
/* One event read from l->trace into its model, its stack bound to the
 * modules loaded now when l has symbols. @return 0 or a negative error. */
int wsp_loaded_apply(struct wsp_loaded *l, const wsprof_event *ev);
/* The same, stopping after the event numbered stop_seq, or before the
 * first event later than stop_time_ns (UINT64_MAX: no stop). */
int wsp_load_until(const char *path, const struct wsp_model_options *opt, bool symbols, uint64_t stop_seq,
		   uint64_t stop_time_ns, struct wsp_loaded *out);
/* wsp_load, with followers fed every event after the model. */
int wsp_load_following(const char *path, const struct wsp_model_options *opt, bool symbols,
		       const struct wsp_follower *f, size_t nf, struct wsp_loaded *out);
/* Another pass over a trace (already loaded once: no warnings again), for
 * followers alone. Its reader keeps no stacks: followers find them in the
 * load they borrow. @return 0, or 1 after a one-line error. */
int wsp_follow(const char *path, const struct wsp_follower *f, size_t nf);

/* An allocation site: the first frame outside the allocator, and the
 * figures of every stack of one kind that allocates there. */
struct wsp_site_row {
	struct wsp_frame site;
	uint64_t stack;          /* one of the stacks grouped here */
	struct wsp_site_stats sum;
};
/* The sites of one kind in a trace loaded with per_stack and symbols,
 * largest first by sort (peak, allocations, bytes, leaked, temporary,
 * accessed, cold). @return 0 (free *rows), or -1 (unknown sort, no memory). */
int wsp_callsites_rows(struct wsp_loaded *l, unsigned kind, const char *sort, struct wsp_site_row **rows, size_t *n);

/* callsites and leaks of a job (jobsites.c): the rows of every process
 * merged by their text, with how many processes each is in. */
struct wsp_job_report {
	unsigned kind;
	const char *sort;   /* callsites' --sort name */
	size_t top;
	bool json, leaks, by_stack;
};
/* @return the exit status. */
int wsp_job_sites(char *const *paths, size_t n, const struct wsp_job_report *o);

/* The call sites of one kind in two runs, paired (sitematch.c): by
 * function, source file and line; then, of those left, a function and
 * file with as many sites in both runs in line order (the code moved);
 * a frame without a function name by module and offset (one build only).
 * Both traces loaded with per_stack and symbols. */
struct wsp_site_pair {
	const struct wsp_site_row *base, *now; /* NULL: the site is in the other run only */
	bool moved;                            /* paired by function and file: its line moved */
};
struct wsp_site_match {
	struct wsp_site_row *base_rows, *new_rows;
	size_t nbase, nnew;
	struct wsp_site_pair *pairs; /* the new run's sites in its order, then the base's alone */
	size_t npairs;
	size_t matched, moved;       /* pairs, and of them those whose line moved */
	size_t only_base, only_new;  /* sites of one run only */
	size_t unnamed;              /* of those, without a function name (known by address alone) */
};
/* @return 0 (free with wsp_site_match_free), or -1 out of memory. */
int wsp_site_match(struct wsp_loaded *base, struct wsp_loaded *now, unsigned kind, struct wsp_site_match *m);
void wsp_site_match_free(struct wsp_site_match *m);


#include "cli.h" /* wsp_parse_kind, the shared options */

/* The one operand left after getopt: the trace. NULL after a one-line
 * error and the usage (argv[0] names the report). */
const char *wsp_trace_operand(int argc, char **argv, void (*usage)(FILE *));

/* The lines that open a text report: what, of which trace, which program
 * (and, for a sampled trace, wsp_sampled_text). */
void wsp_print_heading(const struct wsp_loaded *l, const char *what);

/* A sampled trace (WSPROF_SAMPLE_BYTES) says so wherever its heap figures
 * appear. "sampled: 1 in 524,288 bytes; heap figures are estimates" (or,
 * at 1 byte, that every allocation was recorded; or, its totals counted
 * whole, "heap totals counted, heap call sites estimated"), into buf; "" when the
 * trace is not sampled. @return buf. */
/* The spans of time recorded, from the trace's RECORDING events (model.h):
 * [start_ns, end_ns) each; a run recorded whole has one, from 0 to the
 * end. @return how many (at most cap), and *attached when the trace
 * began with wsprof attach. */
struct wsp_span {
	uint64_t start_ns, end_ns;
};
size_t wsp_recorded_spans(const struct wsp_loaded *l, struct wsp_span *spans, size_t cap, bool *attached);
/* "recorded 0.500 s to 1.200 s, 3.000 s to 3.500 s (2 spans)" or "" when the
 * whole run was recorded. @return buf. */
const char *wsp_spans_text(const struct wsp_loaded *l, char *buf, size_t cap);

/* How the process ended, as the summary says it ("exit status 0",
 * "killed by SIGKILL ..."); "" where an older trace does not say. @return buf. */
const char *wsp_ending_text(const struct wsp_loaded *l, char *buf, size_t cap);
const char *wsp_sampled_text(const struct wsp_loaded *l, char *buf, size_t cap);
/* "~" before the figures of a kind that are estimates, else "": its call
 * sites', its blocks', and its totals' unless they were counted. */
const char *wsp_est(const struct wsp_loaded *l, unsigned kind);
/* ... before a kind's totals (allocations, peak, live): "" for a sampled
 * heap whose totals were counted (wsp_model_heap_counted). */
const char *wsp_est_total(const struct wsp_loaded *l, unsigned kind);
/* est (wsp_est) then text, in buf; text may be buf itself. @return buf. */
const char *wsp_estimate_text(char *buf, size_t cap, const char *est, const char *text);
/* A report's JSON object: "sampled": true and "sample_bytes" when the
 * trace is sampled (nothing otherwise); a kind's object: "estimated":
 * true when its figures are estimates. */
struct wsp_json;
void wsp_json_sampled(struct wsp_json *j, const struct wsp_loaded *l);
void wsp_json_estimated(struct wsp_json *j, const struct wsp_loaded *l, unsigned kind);
/* A kind's totals: "estimated": true, or for a sampled heap counted whole
 * "counted": true and "usable_share" (wsp_model_heap_counted). */
void wsp_json_total_estimated(struct wsp_json *j, const struct wsp_loaded *l, unsigned kind);


int wsp_cmd_record(int argc, char **argv);
/* `wsprof attach` (attach.c): record a running process for a while. */
int wsp_cmd_attach(int argc, char **argv);
/* The preload library, from $WSPROF_PRELOAD, the build tree or the
 * install prefix (record.c); says why not on stderr. */
bool wsp_find_preload(char out[PATH_MAX]);

/* rescue.c: wsprof record finishes the traces of processes that end
 * without their footer (src/rescue.h). listen: before the program starts
 * (sets WSPROF_RESCUE; false when it cannot, and traces then end as the
 * processes leave them); in_child: in the forked child before exec;
 * program: its pid; done: once waitpid has its status. */
bool wsp_rescue_listen(void);
void wsp_rescue_in_child(void);
void wsp_rescue_program(pid_t pid);
void wsp_rescue_done(pid_t pid, int status);

/* A file of wsprof's own found from this program's path: in build_dir
 * (the build tree) or where it is installed (WSPROF_PRELOAD_FROM_BINDIR),
 * its real path in out. If neither has it, says so on stderr without
 * ending the line (the caller ends it with what to do). */
bool wsp_find_beside_self(const char *name, const char *build_dir, char out[PATH_MAX]);
int wsp_cmd_export(int argc, char **argv);
int wsp_cmd_symbolize(int argc, char **argv);
int wsp_cmd_summary(int argc, char **argv);
/* The summary of a job's traces (jobsummary.c). @return the exit status. */
int wsp_job_summary(char *const *paths, size_t n, const char *const *callers, bool json);
int wsp_cmd_callsites(int argc, char **argv);
int wsp_cmd_leaks(int argc, char **argv);
int wsp_cmd_flame(int argc, char **argv);
int wsp_cmd_state(int argc, char **argv);
int wsp_cmd_wss(int argc, char **argv);
int wsp_cmd_heatmap(int argc, char **argv);
int wsp_cmd_diff(int argc, char **argv);
int wsp_cmd_check(int argc, char **argv);
int wsp_cmd_top(int argc, char **argv);

#endif
