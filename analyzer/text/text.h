/*
 * text.h - the text and JSON renderers: what they share (the heading of a
 * report, the "~" of estimates, the JSON fields of a sampled trace) and
 * the reports they print. A renderer is handed a loaded trace and what
 * compute made of it (compute.h), and prints; it never parses options nor
 * reads a trace itself (cmd/ does).
 */
#ifndef WSP_TEXT_H
#define WSP_TEXT_H

#include "analyzer.h"
#include "json.h"
#include "units.h"

/* ---- heading.c: what every report says first ------------------------------ */

/* The lines that open a text report: what, of which trace, which program
 * (and, for a sampled trace, wsp_sampled_text). */
void wsp_print_heading(const struct wsp_loaded *l, const char *what);

/* A sampled trace (WSPROF_SAMPLE_BYTES) says so wherever its heap figures
 * appear. "sampled: 1 in 524,288 bytes; heap figures are estimates" (or,
 * at 1 byte, that every allocation was recorded; or, its totals counted
 * whole, "heap totals counted, heap call sites estimated"), into buf; "" when the
 * trace is not sampled. @return buf. */
const char *wsp_sampled_text(const struct wsp_loaded *l, char *buf, size_t cap);
/* "recorded 0.500 s to 1.200 s, 3.000 s to 3.500 s (2 spans)" or "" when the
 * whole run was recorded (wsp_recorded_spans). @return buf. */
const char *wsp_spans_text(const struct wsp_loaded *l, char *buf, size_t cap);
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
void wsp_json_sampled(struct wsp_json *j, const struct wsp_loaded *l);
void wsp_json_estimated(struct wsp_json *j, const struct wsp_loaded *l, unsigned kind);
/* A kind's totals: "estimated": true, or for a sampled heap counted whole
 * "counted": true and "usable_share" (wsp_model_heap_counted). */
void wsp_json_total_estimated(struct wsp_json *j, const struct wsp_loaded *l, unsigned kind);

/* ---- summary.c, jobsummary.c ---------------------------------------------- */

/* The summary of one trace loaded with totals_only; filtered: --caller
 * picked the allocations counted. */
void wsp_summary_print_text(const struct wsp_loaded *l, bool filtered);
void wsp_summary_print_json(const struct wsp_loaded *l);
/* How the process ended, as the summary says it ("exit status 0",
 * "killed by SIGKILL ..."); "" where an older trace does not say. @return buf. */
const char *wsp_ending_text(const struct wsp_loaded *l, char *buf, size_t cap);
struct wsp_job;
/* The summary of a job loaded from its n traces (jobsummary.c). */
void wsp_job_summary_print(const struct wsp_job *job, char *const *paths, size_t n, bool json);

/* ---- callsites.c, jobsites.c: call-site rows (compute.h) -------------------- */

struct wsp_site_row;
struct wsp_job;
struct wsp_job_rows;
/* How callsites and leaks show their rows. */
struct wsp_sites_report {
	unsigned kind;
	enum wsp_site_figure sort;
	size_t top;          /* rows shown at most */
	bool json, leaks;
	bool by_stack;       /* a row per whole stack, its frames shown */
};
/* One trace's rows, the top ones, as text or JSON. */
void wsp_callsites_print(struct wsp_loaded *l, const struct wsp_site_row *rows, size_t n, const struct wsp_sites_report *o);
/* One trace's stacks still holding blocks (wsp_site_rows_leaked), with
 * their sums. */
void wsp_leaks_print(struct wsp_loaded *l, const struct wsp_site_row *rows, size_t n, uint64_t bytes, uint64_t blocks,
		     const struct wsp_sites_report *o);
/* A job's merged rows (wsp_job_site_rows). */
void wsp_job_sites_print(const struct wsp_job *job, const struct wsp_job_rows *rows, const struct wsp_sites_report *o);

/* ---- heattext.c: the heatmap's grid (model/heatgrid.h) --------------------- */

struct heat;
struct view;
/* One view of a computed grid: a strip of characters a row, or every
 * cell's figure in JSON. */
void wsp_heat_print_text(const struct heat *h, const struct view *v);
void wsp_heat_print_json(const struct heat *h, const struct view *v);

/* ---- flamefold.c: a flame graph's tree (flametree.h) as folded text -------- */

struct wsp_flame;
/* The folded-stack text flamegraph.pl and speedscope read: one line per
 * distinct stack, "frame1;frame2;...;frameN VALUE\n", outermost first.
 * In labels ';' becomes ':' and control characters become ' '; stacks that
 * become the same text are written once, summed. Lines are sorted frame by
 * frame (a stack before the stacks that extend it); stacks with value 0
 * are omitted. @return 0 or -errno. */
int wsp_flame_write_folded(const struct wsp_flame *f, FILE *out);

/* ---- statetext.c: the state at a moment (state.h), its memories laid out
 * (layout.h) ------------------------------------------------------------ */

struct wsp_state;
struct wsp_memory;
void wsp_state_print_text(struct wsp_state *st, const struct wsp_memory *mem, size_t nmem);
void wsp_state_print_json(struct wsp_state *st, const struct wsp_memory *mem, size_t nmem);

/* ---- timelinetext.c: memory over time (timeline.h) ------------------------- */

/* kind -1: every kind charted (wsp_timeline_kinds). */
void wsp_timeline_print_text(const struct wsp_loaded *l, int kind);
void wsp_timeline_print_json(const struct wsp_loaded *l, int kind);
/* A job's lines (wsp_timeline_job_load). */
void wsp_timeline_job_text(const struct wsp_job *job, unsigned kind);
void wsp_timeline_job_json(const struct wsp_job *job, unsigned kind);

/* ---- wssreport.c: the working set (wss.h) ----------------------------------- */

/* The windows of kind (-1: all) and their distribution, as text or JSON;
 * window_ms: the windows asked for (0: the recorder's). */
void wsp_wss_print(const struct wsp_loaded *l, int kind, uint64_t window_ms, bool json);

/* ---- diff.c: `wsprof diff`, two runs compared (compute.h's wsp_diff) ------- */

struct wsp_diff;
/* The runs, each kind's figures side by side and the top changed sites
 * (0: all), as text or one JSON object. */
void wsp_diff_print(const struct wsp_diff *d, size_t top, bool json);

/* ---- check.c: `wsprof check`, budgets held (compute.h's wsp_verdict) -------- */

struct wsp_verdict;
/* Each of n verdicts on l (baseline: the trace --max-growth compared
 * with, or NULL) and the sites behind the exceeded, as text or JSON. */
void wsp_check_print(const struct wsp_verdict *v, size_t n, const struct wsp_loaded *l, const char *baseline, bool json);

/* ---- top.c: `wsprof top`, one screen of a trace read live ------------------- */

struct wsp_site_row;
/* What the command read so far, beside its model. */
struct wsp_top_view {
	uint64_t last_ns;                 /* the newest event's time */
	double rate;                      /* allocations a second over the last interval */
	bool ended;                       /* the footer (or an exec) was read */
	int error;                        /* reading stopped at damage */
	unsigned kind;                    /* the call sites' kind */
	size_t sites;                     /* at most this many shown */
	const struct wsp_site_row *rows;  /* by live bytes, or NULL: no call sites shown */
	size_t nrows;
};
/* A screen (tty: cleared first, and "q quits"), flushed. */
void wsp_top_print(const struct wsp_loaded *l, const struct wsp_top_view *v, bool tty);
/* The program ended without its trace's end: said once, last. */
void wsp_top_print_gone(uint32_t pid);

/* ---- export.c: `wsprof export --perfetto` ---------------------------------- */

/* l (loaded with symbols) as Chrome trace-event JSON into out: counters
 * per kind, RSS, device memory, phases, failed allocations.
 * @return 0 or a negative errno. */
int wsp_perfetto_write(const struct wsp_loaded *l, FILE *out);

#endif
