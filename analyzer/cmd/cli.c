/*
 * cli.c - the options every report shares (cli.h).
 */
#include "cli.h"

#include "analyzer.h"

#include "job.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_OPTIONS 24

void wsp_cli_free(struct wsp_cli *c)
{
	wsp_job_paths_free(c->job, c->njob);
	c->job = NULL;
	c->njob = 0;
	if (c->picked)
		free((char *)c->trace);
	c->picked = false;
}

int wsp_parse_top(const char *s, size_t *top)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (*s == '-' || *end || !*s) {
		fprintf(stderr, "wsprof: --top wants a whole number, not '%s'\n", s);
		return -1;
	}
	*top = v ? v : SIZE_MAX;
	return 0;
}

int wsp_parse_kind(const char *s, unsigned *kind)
{
	char names[512];
	size_t n = 0;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		if (strcmp(s, wsprof_kind_name(k)) == 0) {
			*kind = k;
			return 0;
		}
		n += (size_t)snprintf(names + n, n < sizeof names ? sizeof names - n : 0, "%s%s", k ? ", " : "",
				      wsprof_kind_name(k));
	}
	fprintf(stderr, "wsprof: unknown kind '%s': use one of %s\n", s, names);
	return -1;
}

enum { OPT_OUTPUT = 0x10000, OPT_KIND, OPT_JSON, OPT_HELP, OPT_PROCESS };

/* The one operand left after getopt: the trace. NULL after a one-line
 * error and the usage (argv[0] names the report). */
static const char *trace_operand(int argc, char **argv, void (*usage)(FILE *))
{
	if (optind == argc - 1)
		return argv[optind];
	/* argv[0] is a report's name, export or symbolize */
	bool report = strcmp(argv[0], "export") && strcmp(argv[0], "symbolize") && strcmp(argv[0], "check");
	fprintf(stderr, "wsprof: %s%s needs exactly one trace file\n", report ? "report " : "", argv[0]);
	usage(stderr);
	return NULL;
}


int wsp_cli_parse(int argc, char **argv, unsigned shared, const struct wsp_cli_option *own, wsp_cli_own_fn fn,
		  void *ctx, void (*usage)(FILE *), struct wsp_cli *c)
{
	*c = (struct wsp_cli){ .kind = -1 };
	struct option opts[MAX_OPTIONS + 1];
	char letters[2 * MAX_OPTIONS + 8] = "h";
	size_t n = 0, nl = 1;
	if (shared & WSP_CLI_OUTPUT) {
		opts[n++] = (struct option){ "output", required_argument, NULL, OPT_OUTPUT };
		nl += (size_t)snprintf(letters + nl, sizeof letters - nl, "o:");
	}
	if (shared & WSP_CLI_KIND)
		opts[n++] = (struct option){ "kind", required_argument, NULL, OPT_KIND };
	if (shared & WSP_CLI_JSON) {
		opts[n++] = (struct option){ "json", no_argument, NULL, OPT_JSON };
		nl += (size_t)snprintf(letters + nl, sizeof letters - nl, "j");
	}
	opts[n++] = (struct option){ "help", no_argument, NULL, OPT_HELP };
	if (shared & WSP_CLI_MANY)
		opts[n++] = (struct option){ "process", required_argument, NULL, OPT_PROCESS };
	const char *process = NULL;
	for (size_t i = 0; own && own[i].name && n < MAX_OPTIONS; i++) {
		opts[n++] = (struct option){ own[i].name, own[i].has_arg, NULL, own[i].val };
		if (own[i].letter && nl + 3 < sizeof letters) {
			letters[nl++] = own[i].letter;
			if (own[i].has_arg == required_argument)
				letters[nl++] = ':';
			letters[nl] = 0;
		}
	}
	opts[n] = (struct option){ 0 };
	int o;
	optind = 1;
	while ((o = getopt_long(argc, argv, letters, opts, NULL)) != -1) {
		if (o == 'o')
			o = OPT_OUTPUT;
		else if (o == 'j')
			o = OPT_JSON;
		else if (o == 'h')
			o = OPT_HELP;
		for (size_t i = 0; own && own[i].name; i++)
			if (own[i].letter && o == own[i].letter)
				o = own[i].val;
		unsigned kind;
		int status;
		switch (o) {
		case OPT_OUTPUT: c->out = optarg; break;
		case OPT_KIND:
			if (wsp_parse_kind(optarg, &kind))
				return 2;
			c->kind = (int)kind;
			break;
		case OPT_JSON: c->json = true; break;
		case OPT_PROCESS: process = optarg; break;
		case OPT_HELP: usage(stdout); return 0;
		case '?': usage(stderr); return 2;
		default:
			if (!fn || (status = fn(ctx, o, optarg)) != 0)
				return fn ? status : 2;
			break;
		}
	}
	if (shared & WSP_CLI_PAIR) {
		if (optind != argc - 2) {
			fprintf(stderr, "wsprof: %s needs two trace files: the base, then the new one\n", argv[0]);
			usage(stderr);
			return 2;
		}
		c->base = argv[optind];
		c->trace = argv[optind + 1];
	} else if (shared & WSP_CLI_MANY) {
		if (optind >= argc) {
			fprintf(stderr, "wsprof: report %s needs a trace file, several, or a directory of them\n", argv[0]);
			usage(stderr);
			return 2;
		}
		struct stat st;
		bool dir = optind == argc - 1 && !stat(argv[optind], &st) && S_ISDIR(st.st_mode);
		c->trace = argv[optind];
		if ((optind < argc - 1 || dir || process) && wsp_job_paths(argv + optind, (size_t)(argc - optind), &c->job, &c->njob))
			return 2;
		if (process) {
			int pick = wsp_job_pick(c->job, c->njob, process);
			if (pick < 0) {
				wsp_cli_free(c);
				return 2;
			}
			c->trace = strdup(c->job[pick]);
			wsp_job_paths_free(c->job, c->njob);
			c->job = NULL;
			c->njob = 0;
			c->picked = true;
		}
	} else if (!(c->trace = trace_operand(argc, argv, usage))) {
		return 2;
	}
	if (c->out && c->json && !(shared & WSP_CLI_BOTH)) {
		fprintf(stderr, "wsprof: --json and -o both name the output: use one of them\n");
		return 2;
	}
	return -1;
}
