/*
 * commands.h - every command of `wsprof`, once: its name, where it runs,
 * and the line `wsprof --help` shows for it. main.c and reports_module.c
 * both expand this list, so the two can never disagree.
 *
 * X(name, where, help): where is CORE (in the `wsprof` program itself,
 * which links neither cairo nor libdw) or MODULE (in wsprof-reports.so,
 * loaded when such a command runs). help NULL: not a report of its own
 * (`wsprof report TRACE -o FILE`, `wsprof export`). Each runs as
 * int wsp_cmd_<name>(int argc, char **argv), declared here. A command
 * parses its options, loads the trace, calls compute and hands the
 * results to a renderer: it prints nothing of its own.
 */
#ifndef WSP_COMMANDS_H
#define WSP_COMMANDS_H

#define WSP_COMMANDS(X)                                                                                    \
	X(summary, CORE, "program, duration, allocations, peaks and leaks per kind")                       \
	X(callsites, MODULE, "allocation sites by peak, allocations, bytes, leaks or temporaries")         \
	X(leaks, MODULE, "blocks live at the end, grouped by call stack")                                  \
	X(flame, MODULE, "a flame graph (SVG, PDF, PNG) or folded stacks of the allocations")              \
	X(state, MODULE, "every live block at a moment, and what could be given back")                     \
	X(wss, MODULE, "the working set: memory accessed per window, its distribution")                    \
	X(heatmap, MODULE, "memory over time by address, call site or name: access rate or live bytes")    \
	X(timeline, MODULE, "memory over time: allocated, in use, working set, RSS, device free")          \
	X(report, MODULE, NULL)                                                                            \
	X(export, MODULE, NULL)                                                                            \
	X(diff, MODULE, NULL)                                                                              \
	X(check, MODULE, NULL)                                                                             \
	X(top, MODULE, NULL)                                                                               \
	X(symbolize, MODULE, NULL)

/* The commands of the table, and the two of the recorder's side. */
#define WSP_COMMAND_DECLARE(name, where, help) int wsp_cmd_##name(int argc, char **argv);
WSP_COMMANDS(WSP_COMMAND_DECLARE)
#undef WSP_COMMAND_DECLARE
/* `wsprof record` (record.c): run a program under the recorder. */
int wsp_cmd_record(int argc, char **argv);
/* `wsprof attach` (attach.c): record a running process for a while. */
int wsp_cmd_attach(int argc, char **argv);

#endif
