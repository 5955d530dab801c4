/*
 * reports_module.c - wsprof-reports.so: the reports that draw (cairo) or
 * name functions (libdw, the C++ demangler), which `wsprof` loads when
 * one of them is asked for. `wsprof record` and `wsprof report summary`
 * start without those libraries: loading them took 8 of the 11 ms that
 * starting `wsprof` cost (BENCHMARKS.md, Profiles).
 */
#include "analyzer.h"
#include "views.h"

#include <string.h>

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "callsites", wsp_cmd_callsites }, { "leaks", wsp_cmd_leaks },       { "flame", wsp_cmd_flame },
	{ "state", wsp_cmd_state },         { "wss", wsp_cmd_wss },           { "heatmap", wsp_cmd_heatmap },
	{ "timeline", wsp_cmd_timeline },   { "report", wsp_cmd_report },     { "export", wsp_cmd_export },
};

/* Run the command `name` with the arguments main() would give it.
 * @return its exit status, or -1 if there is no such command here. */
__attribute__((visibility("default"))) int wsprof_reports_run(const char *name, int argc, char **argv)
{
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		if (!strcmp(name, commands[i].name))
			return commands[i].run(argc, argv);
	return -1;
}
