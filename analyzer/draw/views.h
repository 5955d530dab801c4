/*
 * views.h - the pictures drawn from a loaded trace: memory over time, the
 * working set, the summary and the top allocation sites; and the whole
 * report that puts them, and the other views, in one document.
 *
 * Each draw function adds its pages to an open document (plot.h), so the
 * single views and the report share one drawing path.
 */
#ifndef WSP_VIEWS_H
#define WSP_VIEWS_H

#include "analyzer.h"
#include "heatmap.h"
#include "plot.h"

/* "program (pid N) - trace - 12.3 s": the line under every page title. */
void wsp_view_subtitle(const struct wsp_loaded *l, char *buf, size_t cap);

/* The program's phases shaded on a chart whose x is seconds (a phase still
 * open runs to the end). @return how many. */
size_t wsp_view_phases(const struct wsp_chart *c, const struct wsp_loaded *l);

/* Memory over time: a chart per kind (timeline.h), WSP_TIMELINE_CHARTS_PER_PAGE to a page. @return pages drawn. */
#define WSP_TIMELINE_CHARTS_PER_PAGE 2
size_t wsp_timeline_draw(struct wsp_doc *doc, const struct wsp_loaded *l, int kind);
/* The working set over time and its distribution, one page; kind -1:
 * all kinds. @return pages drawn (0: no access samples). */
size_t wsp_wss_draw(struct wsp_doc *doc, const struct wsp_loaded *l, int kind);

/* ---- heatmap.c: the heatmap's pages (model/heatmap.h) ---------------------- */

/* Draw a page per view asked for into doc (a view with nothing to show,
 * such as named buffers in a trace that names none, is left out when
 * other views are asked for too).
 * @return the pages drawn, or -1 after a one-line error. */
int wsp_heatmap_draw(struct wsp_doc *doc, const char *trace_path, const struct wsp_heatmap_options *opt);

/* The pages of a heatmap computed by a follower of the load (wsp_heat_new). @return the pages drawn. */
int wsp_heat_pages(struct wsp_doc *doc, struct wsp_heat *h);

struct wsp_job;
/* A job's processes, a line each on the job's clock (wsp_timeline_job_load),
 * first naming its first trace of ntraces. */
void wsp_timeline_job_draw(struct wsp_doc *doc, const struct wsp_job *job, unsigned kind, const char *first, size_t ntraces);

/* ---- report.c: the full report's own pages (the command: cmd/report.c) ------ */

/* The summary: program, duration, peaks per kind, leaks, failed
 * allocations, the access sources there were. */
void wsp_report_draw_summary(struct wsp_doc *doc, const struct wsp_loaded *l);
struct wsp_site_row;
/* The top allocation sites of kind, rows by bytes at the peak (compute.h). */
void wsp_report_draw_sites(struct wsp_doc *doc, const struct wsp_loaded *l, unsigned kind, const struct wsp_site_row *rows,
			   size_t n);

#endif
