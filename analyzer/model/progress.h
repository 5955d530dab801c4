/*
 * progress.h - a one-line progress bar on a terminal, for work that takes
 * a while (reading a long trace).
 *
 * Nothing is drawn during the first second, so a quick run prints what it
 * always did; after that the line is redrawn at most ten times a second
 * and erased at the end, leaving the terminal as it was. Nothing is ever
 * drawn on anything but a terminal (wsp_progress_tty): pipes, files and
 * the tests see no new output. Times are passed in, so the behaviour can
 * be tested without waiting.
 */
#ifndef WSP_PROGRESS_H
#define WSP_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define WSP_PROGRESS_DELAY_NS 1000000000u /* quiet for the first second */
#define WSP_PROGRESS_PERIOD_NS 100000000u /* then at most ten lines a second */

struct wsp_progress {
	FILE *out;         /* NULL: draws nothing */
	const char *label; /* "reading app.wsp" */
	unsigned columns;  /* of the terminal */
	uint64_t start_ns, drawn_ns;
	bool shown;        /* a line is on the terminal */
	const char *unit;  /* what done and total count ("addresses"); NULL: bytes */
};

/* stderr if it is a terminal, with its width in *columns; else NULL. */
FILE *wsp_progress_tty(unsigned *columns);
/* Monotonic nanoseconds, for the times below. */
uint64_t wsp_progress_now(void);

/* Start timing; out NULL makes every other call a no-op. label must
 * outlive the bar. */
void wsp_progress_start(struct wsp_progress *p, FILE *out, unsigned columns, const char *label, uint64_t now_ns);
/* Count things (unit: "addresses") instead of bytes, after start:
 * "wsprof: LABEL [=====>    ]  52%  36,210 of 70,000 addresses". */
void wsp_progress_count(struct wsp_progress *p, const char *unit);
/* done of total bytes at now (total 0: unknown, the bar shows bytes and
 * rate only): "wsprof: LABEL [=====>    ]  52%  143.2 MB/s". */
void wsp_progress_update(struct wsp_progress *p, uint64_t now_ns, uint64_t done, uint64_t total);
/* Erase the line, if one was drawn. */
void wsp_progress_end(struct wsp_progress *p);

#endif
