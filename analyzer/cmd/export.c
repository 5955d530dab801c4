/*
 * export.c - `wsprof export`: --perfetto, a trace as Chrome trace-event
 * JSON (text/export.c writes it); --pprof, one kind's memory by call
 * stack as a profile.proto (text/pprof.c), from the trace replayed to the
 * moment here. Parses the options, loads the trace, opens the output
 * only once the trace could be read, and says what became of it.
 */
#include "commands.h"

#include "cli.h"
#include "pprof.h"
#include "text.h"
#include "timeindex.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_trace(void *arg, FILE *out)
{
	return wsp_perfetto_write(arg, out);
}

static int write_pprof(void *arg, FILE *out)
{
	return wsp_pprof_write(arg, out);
}

/* ---- the command ----------------------------------------------------------- */

static void usage(FILE *out)
{
	fputs("usage: wsprof export --perfetto -o FILE TRACE\n"
	      "       wsprof export --pprof -o FILE [--at peak|end|SECONDS] [--kind KIND] TRACE\n"
	      "  --perfetto   Chrome trace-event JSON, for ui.perfetto.dev and chrome://tracing:\n"
	      "               memory per kind as counters (allocated, in use, working set), RSS,\n"
	      "               device free memory, phases as slices, failed allocations as events\n"
	      "  --pprof      a gzipped profile.proto, for go tool pprof, Pyroscope and the like: per\n"
	      "               call stack alloc_objects and alloc_space (the whole trace), inuse_objects\n"
	      "               and inuse_space (live at --at; the default sample)\n"
	      "  --at peak    when the kind's live bytes peaked (the default); end: what was leaked;\n"
	      "               SECONDS since the program started (oom, LABEL as report state takes them)\n"
	      "  --kind KIND  the memory profiled (default heap)\n"
	      "  -o FILE      where to write (- for stdout)\n", out);
}

enum format { NONE, PERFETTO, PPROF };

struct export_options {
	enum format format;
	bool twice;         /* both formats asked for */
	const char *at;     /* --at, NULL when not given */
};

static int export_option(void *ctx, int val, const char *arg)
{
	struct export_options *o = ctx;
	if (val == 'a') {
		o->at = arg;
		return 0;
	}
	enum format f = val == 'p' ? PERFETTO : PPROF;
	o->twice |= o->format != NONE && o->format != f;
	o->format = f;
	return 0;
}

/* Write with `write` to output (- for stdout), and say what became of it.
 * @return the exit status. */
static int write_output(const char *output, int (*write)(void *arg, FILE *out), void *arg)
{
	bool to_stdout = !strcmp(output, "-");
	FILE *out = to_stdout ? stdout : fopen(output, "we");
	if (!out) {
		fprintf(stderr, "wsprof: cannot write %s: %s\n", output, strerror(errno));
		return 1;
	}
	int err = write(arg, out);
	if (fflush(out) || ferror(out))
		err = err ? err : -(errno ? errno : EIO);
	if (!to_stdout && fclose(out) && !err)
		err = -errno;
	if (err == -ENOMEM) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	if (err) {
		fprintf(stderr, "wsprof: cannot write %s: %s\n", to_stdout ? "the output" : output, strerror(-err));
		return 1;
	}
	if (!to_stdout)
		fprintf(stderr, "wsprof: wrote %s\n", output);
	return 0;
}

static int export_perfetto(const char *trace, const char *output)
{
	struct wsp_loaded l;
	if (wsp_load(trace, NULL, true, &l))
		return 1;
	int rc = write_output(output, write_trace, &l);
	wsp_loaded_free(&l);
	return rc;
}

/* ---- --pprof: the trace read and replayed to the moment ----------------- */

static void pprof_free(struct wsp_pprof *p)
{
	if (!p)
		return;
	wsp_state_free(&p->state); /* borrows the whole trace's names */
	if (p->whole.trace)
		wsp_loaded_free(&p->whole);
	free(p);
}

/* @return 0, or 2 after saying which kinds the trace has instead. */
static int check_kind(const struct wsp_pprof *p)
{
	if (wsp_model_kind(p->whole.model, p->kind)->seen)
		return 0;
	char names[512] = "";
	size_t n = 0;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		if (wsp_model_kind(p->whole.model, k)->seen)
			n += (size_t)snprintf(names + n, n < sizeof names ? sizeof names - n : 0, "%s%s", n ? ", " : "",
					      wsprof_kind_name(k));
	if (n)
		fprintf(stderr, "wsprof: %s has no %s memory: use --kind with one of %s\n", p->whole.path,
			wsprof_kind_name(p->kind), names);
	else
		fprintf(stderr, "wsprof: %s has no allocations to export\n", p->whole.path);
	return 2;
}

/* @return 0, or 2 after saying the moment is past the trace's end. */
static int check_moment(const struct wsp_pprof *p, const char *at)
{
	uint64_t end = p->whole.status.end_time_ns;
	if (p->state.stop_time_ns == UINT64_MAX || p->state.stop_time_ns <= end)
		return 0;
	fprintf(stderr, "wsprof: --at %s is after the end of %s (%.3f s): use a time up to that, or --at end\n", at,
		p->whole.path, (double)end / 1e9);
	return 2;
}

/* The profile of kind in the trace at path, in use at the moment `at`
 * ("peak": when the kind's live bytes peaked, "end", SECONDS since the
 * program started; oom and snapshot labels as `report state` takes them).
 * @return 0 with *out set, or the exit status after a one-line error (2:
 * a moment or kind the trace does not have, 1: the trace cannot be read). */
static int pprof_open(const char *path, unsigned kind, const char *at, struct wsp_pprof **out)
{
	struct wsp_pprof *p = calloc(1, sizeof *p);
	if (!p) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	p->kind = kind;
	struct wsp_tindex *ix;
	int rc = wsp_load_indexed(path, &(struct wsp_model_options){ .per_stack = true }, true, NULL, 0, &p->whole, &ix);
	if (!rc && !(rc = check_kind(p))) {
		rc = wsp_state_at(ix, &p->whole, at, (int)kind, &p->state);
		p->state.ix = ix; /* closed with the state */
		ix = NULL;
		if (!rc)
			rc = check_moment(p, at);
	}
	wsp_tindex_close(ix);
	if (rc) {
		pprof_free(p);
		return rc;
	}
	*out = p;
	return 0;
}


static int export_pprof(const char *trace, const char *output, unsigned kind, const char *at)
{
	struct wsp_pprof *p;
	int rc = pprof_open(trace, kind, at, &p);
	if (rc)
		return rc;
	rc = write_output(output, write_pprof, p);
	pprof_free(p);
	return rc;
}

int wsp_cmd_export(int argc, char **argv)
{
	static const struct wsp_cli_option own[] = {
		{ "perfetto", no_argument, 0, 'p' }, { "pprof", no_argument, 0, 'P' }, { "at", required_argument, 0, 'a' },
		{ 0 },
	};
	struct export_options o = { NONE, false, NULL };
	struct wsp_cli cli;
	int parsed = wsp_cli_parse(argc, argv, WSP_CLI_OUTPUT | WSP_CLI_KIND, own, export_option, &o, usage, &cli);
	if (parsed >= 0)
		return parsed;
	const char *output = cli.out, *trace = cli.trace;
	if (o.format == NONE || o.twice) {
		fprintf(stderr, "wsprof: say what to export, one of: wsprof export --perfetto -o trace.json %s, "
				"or --pprof -o heap.pb.gz\n", trace);
		return 2;
	}
	if (o.format == PERFETTO && (o.at || cli.kind >= 0)) {
		fprintf(stderr, "wsprof: --perfetto exports every kind over the whole trace: --at and --kind are --pprof's\n");
		return 2;
	}
	if (!output) {
		if (o.format == PERFETTO)
			fprintf(stderr, "wsprof: say where the JSON goes: wsprof export --perfetto -o trace.json %s "
					"(- for stdout)\n", trace);
		else
			fprintf(stderr, "wsprof: say where the profile goes: wsprof export --pprof -o heap.pb.gz %s "
					"(- for stdout)\n", trace);
		return 2;
	}
	if (o.format == PERFETTO)
		return export_perfetto(trace, output);
	return export_pprof(trace, output, cli.kind >= 0 ? (unsigned)cli.kind : WSPROF_KIND_HEAP, o.at ? o.at : "peak");
}
