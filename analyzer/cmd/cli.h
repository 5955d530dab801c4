/*
 * cli.h - the command-line layer: the options every report shares, parsed
 * and checked in one place.
 *
 * A report names the shared options it takes (-o FILE, --kind KIND,
 * --json) and lists its own; wsp_cli_parse reads them all, with --help,
 * then the one trace operand (two with WSP_CLI_PAIR). The rules are the same for every report:
 * -o and --json both name the output, so a report given both says so and
 * stops (unless it does both, WSP_CLI_BOTH); --kind names a kind as reports name it; a usage error prints the
 * report's usage and exits 2.
 */
#ifndef WSP_CLI_H
#define WSP_CLI_H

#include <stdbool.h>
#include <stdio.h>

enum wsp_cli_shared {
	WSP_CLI_OUTPUT = 1, /* -o FILE, --output FILE */
	WSP_CLI_KIND = 2,   /* --kind KIND */
	WSP_CLI_JSON = 4,   /* --json (and -j) */
	WSP_CLI_BOTH = 8,   /* -o and --json together: draw it, and print the JSON (heatmap) */
	WSP_CLI_PAIR = 16,  /* two trace operands, BASE then TRACE (diff) */
	WSP_CLI_MANY = 32,  /* one trace, or several or a directory: a job (job.h); --process RANK|PID */
};

struct wsp_cli {
	const char *trace;  /* the trace operand (with WSP_CLI_PAIR, the second) */
	const char *base;   /* with WSP_CLI_PAIR, the first */
	/* With WSP_CLI_MANY: the traces of a job (wsp_job_paths), NULL when
	 * the operand is one trace (or --process picked one: then trace). */
	char **job;
	size_t njob;
	bool picked;        /* trace is --process's pick (wsp_cli_free frees it) */
	const char *out;    /* -o, NULL when not given */
	int kind;           /* --kind, -1 when not given */
	bool json;
};

/* An option of the report's own: its long name, whether it takes an
 * argument (getopt's has_arg), its short letter (0: none) and the value
 * the handler gets. */
struct wsp_cli_option {
	const char *name;
	int has_arg;
	char letter;
	int val;
};

/* Handles one option of the report's own. @return 0, or an exit status
 * after saying what is wrong. */
typedef int (*wsp_cli_own_fn)(void *ctx, int val, const char *arg);

/* Parse argv (argv[0] is the report's name). own: NULL-name terminated
 * list, or NULL. @return -1 to go on with c filled, or the exit status to
 * return now (0 after --help, 2 after a usage error). */
int wsp_cli_parse(int argc, char **argv, unsigned shared, const struct wsp_cli_option *own, wsp_cli_own_fn fn,
		  void *ctx, void (*usage)(FILE *), struct wsp_cli *c);

/* What wsp_cli_parse allocated (the job's paths). */
void wsp_cli_free(struct wsp_cli *c);

/* --top N: a whole number, 0 meaning all (SIZE_MAX), with a one-line
 * error. @return 0 or -1. */
int wsp_parse_top(const char *s, size_t *top);

/* A kind by name ("heap"), with a one-line error. @return 0 or -1. */
int wsp_parse_kind(const char *s, unsigned *kind);

#endif
