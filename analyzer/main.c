/*
 * main.c - the `wsprof` command: record programs and report on traces.
 * Sub-commands are looked up in one table.
 */
#include "analyzer.h"
#include "config.h"
#include "views.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
};

static const struct command reports[] = {
	{ "summary", wsp_cmd_summary, "program, duration, allocations, peaks and leaks per kind" },
	{ "callsites", wsp_cmd_callsites, "allocation sites by peak, allocations, bytes, leaks or temporaries" },
	{ "leaks", wsp_cmd_leaks, "blocks live at the end, grouped by call stack" },
	{ "flame", wsp_cmd_flame, "a flame graph (SVG, PDF, PNG) or folded stacks of the allocations" },
	{ "state", wsp_cmd_state, "every live block at a moment, and what could be given back" },
	{ "wss", wsp_cmd_wss, "the working set: memory accessed per window, its distribution" },
	{ "heatmap", wsp_cmd_heatmap, "memory over time by address, call site or name: access rate or live bytes" },
	{ "timeline", wsp_cmd_timeline, "memory over time: allocated, in use, working set, RSS, device free" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: wsprof record [OPTIONS] [--] PROGRAM [ARGS...]\n"
		     "       wsprof report TRACE -o report.pdf|.svg|.png   (everything, in one document)\n"
		     "       wsprof report REPORT [OPTIONS] TRACE\n"
		     "       wsprof export --perfetto -o trace.json TRACE   (for ui.perfetto.dev, chrome://tracing)\n"
		     "       wsprof --version\n\nreports:\n");
	for (size_t i = 0; i < sizeof reports / sizeof *reports; i++)
		fprintf(out, "  %-10s %s\n", reports[i].name, reports[i].help);
	fprintf(out, "\n'wsprof record --help' and 'wsprof report REPORT --help' list the options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("wsprof %s (trace format %d.%d)\n", WSPROF_VERSION, WSPROF_FORMAT_MAJOR, WSPROF_FORMAT_MINOR);
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "record"))
		return wsp_cmd_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "export"))
		return wsp_cmd_export(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report") && argc >= 3) {
		for (size_t i = 0; i < sizeof reports / sizeof *reports; i++)
			if (!strcmp(argv[2], reports[i].name))
				return reports[i].run(argc - 2, argv + 2);
		/* Not a view's name: a trace (or an option) for the whole report. */
		if (argv[2][0] == '-' || access(argv[2], F_OK) == 0)
			return wsp_cmd_report(argc - 1, argv + 1);
		fprintf(stderr, "wsprof: unknown report '%s' (and no such trace file)\n", argv[2]);
		usage(stderr);
		return 2;
	}
	fprintf(stderr, "wsprof: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
