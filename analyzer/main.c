/*
 * main.c - the `wsprof` command: record programs and report on traces.
 * Sub-commands are looked up in one table. Those that draw or name
 * functions live in wsprof-reports.so (reports_module.c), loaded only
 * when one of them runs: recording and the summary start without cairo
 * and libdw.
 */
#include "analyzer.h"
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct command {
	const char *name;
	int (*run)(int argc, char **argv); /* NULL: in wsprof-reports.so */
	const char *help;
};

static const struct command reports[] = {
	{ "summary", wsp_cmd_summary, "program, duration, allocations, peaks and leaks per kind" },
	{ "callsites", NULL, "allocation sites by peak, allocations, bytes, leaks or temporaries" },
	{ "leaks", NULL, "blocks live at the end, grouped by call stack" },
	{ "flame", NULL, "a flame graph (SVG, PDF, PNG) or folded stacks of the allocations" },
	{ "state", NULL, "every live block at a moment, and what could be given back" },
	{ "wss", NULL, "the working set: memory accessed per window, its distribution" },
	{ "heatmap", NULL, "memory over time by address, call site or name: access rate or live bytes" },
	{ "timeline", NULL, "memory over time: allocated, in use, working set, RSS, device free" },
};

/* Run a command of wsprof-reports.so. */
static int run_module(const char *name, int argc, char **argv)
{
	char path[PATH_MAX];
	if (!wsp_find_beside_self(WSPROF_REPORTS_NAME, ".", path)) {
		fprintf(stderr, "; reinstall wsprof\n");
		return 1;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	int (*run)(const char *, int, char **) = NULL;
	if (h)
		*(void **)&run = dlsym(h, "wsprof_reports_run");
	if (!run) {
		fprintf(stderr, "wsprof: cannot load %s (%s): reinstall wsprof\n", path, dlerror());
		return 1;
	}
	return run(name, argc, argv);
}

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
		return run_module("export", argc - 1, argv + 1);
	if (!strcmp(argv[1], "report") && argc >= 3) {
		for (size_t i = 0; i < sizeof reports / sizeof *reports; i++)
			if (!strcmp(argv[2], reports[i].name))
				return reports[i].run ? reports[i].run(argc - 2, argv + 2)
						      : run_module(reports[i].name, argc - 2, argv + 2);
		/* Not a view's name: a trace (or an option) for the whole report. */
		if (argv[2][0] == '-' || access(argv[2], F_OK) == 0)
			return run_module("report", argc - 1, argv + 1);
		fprintf(stderr, "wsprof: unknown report '%s' (and no such trace file)\n", argv[2]);
		usage(stderr);
		return 2;
	}
	fprintf(stderr, "wsprof: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
