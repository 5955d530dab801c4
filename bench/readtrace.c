/*
 * readtrace - read a trace to its end and do nothing with its events: the
 * floor under any report, which reads the same way and then models what
 * it read (bench/floors.py times it beside `wsprof report summary`).
 *
 * usage: readtrace TRACE
 *
 * Prints `events N complete C`: the events read (every kind, samples and
 * annotations too) and whether the trace read to its footer (1) or not (0).
 * Exit status 0 when it did, 1 when it did not or could not be opened.
 */
#include "wsprof/trace.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: readtrace TRACE\n");
		return 2;
	}
	wsprof_trace *t;
	int err = wsprof_trace_open(argv[1], &t);
	if (err) {
		fprintf(stderr, "readtrace: %s: %s\n", argv[1], wsprof_strerror(err));
		return 1;
	}
	wsprof_event ev;
	uint64_t n = 0;
	while ((err = wsprof_trace_next(t, &ev)) > 0)
		n++;
	wsprof_trace_status st;
	wsprof_trace_get_status(t, &st);
	bool complete = err == 0 && st.complete;
	printf("events %" PRIu64 " complete %d\n", n, complete);
	wsprof_trace_close(t);
	return complete ? 0 : 1;
}
