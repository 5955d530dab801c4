/*
 * reports_module.c - wsprof-reports.so: the reports that draw (cairo) or
 * name functions (libdw, the C++ demangler), which `wsprof` loads when
 * one of them is asked for. `wsprof record` and `wsprof report summary`
 * start without those libraries: loading them took 8 of the 11 ms that
 * starting `wsprof` cost (BENCHMARKS.md, Profiles).
 */
#include "analyzer.h"
#include "commands.h"
#include "views.h"

#include <string.h>

/* The module's commands (commands.h); the core's run in `wsprof` itself. */
#define RUN_CORE(name) NULL
#define RUN_MODULE(name) wsp_cmd_##name
#define COMMAND(name, where, help) { #name, RUN_##where(name) },
static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = { WSP_COMMANDS(COMMAND) };
#undef COMMAND

/* Run the command `name` with the arguments main() would give it, its
 * stacks shown as stacks says (main.c parsed --stacks and WSPROF_STACKS;
 * the module's loads are its own copy of the core's).
 * @return its exit status, or -1 if there is no such command here. */
__attribute__((visibility("default"))) int wsprof_reports_run(const char *name, int argc, char **argv,
							       enum wsp_stack_view stacks)
{
	wsp_load_set_stacks(stacks);
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		if (commands[i].run && !strcmp(name, commands[i].name))
			return commands[i].run(argc, argv);
	return -1;
}
