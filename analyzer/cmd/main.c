/*
 * main.c - the `wsprof` command: record programs and report on traces.
 * Sub-commands are looked up in one table. Those that draw or name
 * functions live in wsprof-reports.so (reports_module.c), loaded only
 * when one of them runs: recording and the summary start without cairo
 * and libdw.
 */
#include "analyzer.h"
#include "recorder.h"
#include "commands.h"
#include "config.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct command {
	const char *name;
	int (*run)(int argc, char **argv); /* NULL: in wsprof-reports.so */
	const char *help;
};

/* The reports (commands.h): those of the core run here, the others in the module. */
#define RUN_CORE(name) wsp_cmd_##name
#define RUN_MODULE(name) NULL
#define REPORT(name, where, help) { #name, RUN_##where(name), help },
static const struct command commands[] = { WSP_COMMANDS(REPORT) };
#undef REPORT

/* Run a command of wsprof-reports.so, its stacks shown as view says. */
static int run_module(const char *name, int argc, char **argv, enum wsp_stack_view view)
{
	char path[PATH_MAX];
	if (!wsp_find_beside_self(WSPROF_REPORTS_NAME, ".", path)) {
		fprintf(stderr, "; reinstall wsprof\n");
		return 1;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	int (*run)(const char *, int, char **, enum wsp_stack_view) = NULL;
	if (h)
		*(void **)&run = dlsym(h, "wsprof_reports_run");
	if (!run) {
		fprintf(stderr, "wsprof: cannot load %s (%s): reinstall wsprof\n", path, dlerror());
		return 1;
	}
	return run(name, argc, argv, view);
}

/* Which frames stacks show (symbols.h): WSPROF_STACKS, read here once (a
 * malformed value: one line, and the default), then --stacks, which every
 * report that shows stacks takes: taken out of argv here, and handed to
 * the reports with the view (wsprof_reports_run, wsp_load_set_stacks).
 * @return 0, or 2 after a one-line error. */
static int stacks_view(int *argc, char **argv, bool option, enum wsp_stack_view *view)
{
	const char *env = getenv("WSPROF_STACKS");
	int parsed = env && *env ? wsp_stack_view_parse(env) : WSP_STACKS_DEFAULT;
	if (parsed < 0)
		fprintf(stderr, "wsprof: warning: WSPROF_STACKS=%s is not python, native or merged: the default stacks\n", env);
	*view = parsed < 0 ? WSP_STACKS_DEFAULT : (enum wsp_stack_view)parsed;
	for (int i = 1; option && i < *argc; i++) {
		const char *v = NULL;
		int used = 0;
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--stacks")) {
			if (i + 1 >= *argc) {
				fprintf(stderr, "wsprof: --stacks needs a value: python, native or merged\n");
				return 2;
			}
			v = argv[i + 1];
			used = 2;
		} else if (!strncmp(argv[i], "--stacks=", 9)) {
			v = argv[i] + 9;
			used = 1;
		} else {
			continue;
		}
		if ((parsed = wsp_stack_view_parse(v)) <= 0) {
			fprintf(stderr, "wsprof: unknown --stacks '%s': use python, native or merged\n", v);
			return 2;
		}
		*view = (enum wsp_stack_view)parsed;
		memmove(&argv[i], &argv[i + used], (size_t)(*argc - i - used + 1) * sizeof *argv);
		*argc -= used;
		i--;
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: wsprof record [OPTIONS] [--] PROGRAM [ARGS...]\n"
		     "       wsprof attach [-o FILE] [--duration SECONDS] PID   (record a running process from now)\n"
		     "       wsprof report TRACE -o report.pdf|.svg|.png   (everything, in one document)\n"
		     "       wsprof report REPORT [OPTIONS] TRACE\n"
		     "       wsprof export --perfetto -o trace.json TRACE   (for ui.perfetto.dev, chrome://tracing)\n"
		     "       wsprof export --pprof -o heap.pb.gz [--at peak|end|SECONDS] TRACE   (for go tool pprof)\n"
		     "       wsprof symbolize TRACE   (names kept beside it: reports name frames on any machine)\n"
		     "       wsprof diff BASE NEW   (what changed between two runs: figures, call sites, -o a flame graph)\n"
		     "       wsprof check TRACE --max-peak heap=512MiB ...   (memory budgets for CI: exit status 1 when over)\n"
		     "       wsprof top TRACE   (follow a trace being written: live memory and call sites, every second)\n"
		     "       wsprof --version\n\n"
		     "Stacks of Python programs: Python frames in place of the interpreter's, each allocation at the\n"
		     "innermost line of the program's own code; any report takes --stacks python (Python frames\n"
		     "alone), native (native frames alone) or merged (the whole stack, sited at its first frame).\n\n"
		     "reports:\n");
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		if (commands[i].help)
			fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(out, "\n'wsprof record --help' and 'wsprof report REPORT --help' list the options.\n");
}

int main(int argc, char **argv)
{
	/* Arrays of a MiB or more in memory of their own, always, so that what
	 * a report frees (the load's model before the replay of the full
	 * report) goes back to the system: glibc's threshold otherwise rises
	 * with every large block freed, and the heap keeps them. The PyTorch
	 * trace's full report: 335 MB of max RSS to 294, as fast (BENCHMARKS.md). */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
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
	if (!strcmp(argv[1], "attach"))
		return wsp_cmd_attach(argc - 1, argv + 1);
	bool stacks = !strcmp(argv[1], "report") || !strcmp(argv[1], "export") || !strcmp(argv[1], "diff") ||
		      !strcmp(argv[1], "check");
	enum wsp_stack_view view;
	if (stacks_view(&argc, argv, stacks, &view))
		return 2;
	wsp_load_set_stacks(view);
	if (!strcmp(argv[1], "export") || !strcmp(argv[1], "symbolize") || !strcmp(argv[1], "diff") ||
	    !strcmp(argv[1], "check") || !strcmp(argv[1], "top"))
		return run_module(argv[1], argc - 1, argv + 1, view);
	if (!strcmp(argv[1], "report") && argc >= 3) {
		for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
			if (commands[i].help && !strcmp(argv[2], commands[i].name))
				return commands[i].run ? commands[i].run(argc - 2, argv + 2)
						       : run_module(commands[i].name, argc - 2, argv + 2, view);
		/* Not a view's name: a trace (or an option) for the whole report. */
		if (argv[2][0] == '-' || access(argv[2], F_OK) == 0)
			return run_module("report", argc - 1, argv + 1, view);
		fprintf(stderr, "wsprof: unknown report '%s' (and no such trace file)\n", argv[2]);
		usage(stderr);
		return 2;
	}
	fprintf(stderr, "wsprof: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
