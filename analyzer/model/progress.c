/*
 * progress.c - a one-line progress bar on a terminal (progress.h).
 *
 * The line starts with a carriage return and ends by clearing the rest of
 * the terminal line (ESC [K), so each drawing replaces the last whatever
 * its length, and erasing is one more of the same with nothing on it. It
 * stays a column short of the terminal's width: a line that fills the
 * last column wraps on some terminals, and the next carriage return would
 * then redraw below instead of over it.
 */
#include "progress.h"

#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define BAR_MAX 30 /* cells of the bar at most */
#define BAR_MIN 5  /* fewer and it is left out */
#define LINE_MAX 512

FILE *wsp_progress_tty(unsigned *columns)
{
	*columns = 80;
	if (!isatty(STDERR_FILENO))
		return NULL;
	struct winsize ws;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
		*columns = ws.ws_col;
	return stderr;
}

uint64_t wsp_progress_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void wsp_progress_start(struct wsp_progress *p, FILE *out, unsigned columns, const char *label, uint64_t now_ns)
{
	*p = (struct wsp_progress){ .out = out, .label = label, .start_ns = now_ns };
	p->columns = columns < 40 ? 40 : columns > LINE_MAX - 1 ? LINE_MAX - 1 : columns;
}

void wsp_progress_count(struct wsp_progress *p, const char *unit)
{
	p->unit = unit;
}

void wsp_progress_update(struct wsp_progress *p, uint64_t now_ns, uint64_t done, uint64_t total)
{
	if (!p->out || now_ns - p->start_ns < WSP_PROGRESS_DELAY_NS ||
	    (p->shown && now_ns - p->drawn_ns < WSP_PROGRESS_PERIOD_NS))
		return;
	double rate = (double)done / 1e6 / ((double)(now_ns - p->start_ns) / 1e9);
	char tail[64];
	unsigned pct = 0;
	if (total && p->unit) {
		pct = done >= total ? 100 : (unsigned)(done * 100.0 / (double)total);
		snprintf(tail, sizeof tail, " %3u%%  %llu of %llu %s", pct, (unsigned long long)done,
			 (unsigned long long)total, p->unit);
	} else if (total) {
		pct = done >= total ? 100 : (unsigned)(done * 100.0 / (double)total);
		snprintf(tail, sizeof tail, " %3u%%  %.1f MB/s", pct, rate);
	} else {
		snprintf(tail, sizeof tail, "  %.1f MB  %.1f MB/s", (double)done / 1e6, rate);
	}
	size_t room = p->columns - 1, tail_len = strlen(tail);
	size_t label_len = strlen(p->label), head = strlen("wsprof: ");
	if (head + label_len + tail_len > room)
		label_len = room > head + tail_len ? room - head - tail_len : 0;
	size_t left = room - head - label_len - tail_len;
	size_t cells = left >= BAR_MIN + 3 ? left - 3 : 0; /* " [" and "]" */
	if (cells > BAR_MAX)
		cells = BAR_MAX;
	if (!total)
		cells = 0;

	char bar[BAR_MAX + 4] = "";
	if (cells >= BAR_MIN) {
		size_t full = cells * pct / 100, o = 0;
		bar[o++] = ' ';
		bar[o++] = '[';
		for (size_t i = 0; i < cells; i++)
			bar[o++] = i < full ? '=' : i == full ? '>' : ' ';
		bar[o++] = ']';
		bar[o] = 0;
	}
	fprintf(p->out, "\rwsprof: %.*s%s%s\033[K", (int)label_len, p->label, bar, tail);
	fflush(p->out);
	p->shown = true;
	p->drawn_ns = now_ns;
}

void wsp_progress_end(struct wsp_progress *p)
{
	if (!p->out || !p->shown)
		return;
	fputs("\r\033[K", p->out);
	fflush(p->out);
	p->shown = false;
}
