/*
 * symbolize.c - `wsprof symbolize TRACE`: name every address the trace's
 * reports can show, where the modules are (the machine that recorded it),
 * and keep the names beside the trace (TRACE.symbols, symbols.h's cache),
 * so that every report of it names its frames anywhere, even where none of
 * its modules exist: a trace recorded on a GPU node, read on a laptop.
 */
#include "analyzer.h"
#include "commands.h"
#include "cli.h"
#include "progress.h"
#include "symbols.h"
#include "units.h"

#include "wsprof/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out, "usage: wsprof symbolize TRACE\n"
		     "  names every frame of the trace's allocations from the modules it ran (run it where\n"
		     "  the trace was recorded), and keeps the names in TRACE.symbols: copy that file\n"
		     "  beside the trace, and reports name every frame on any machine\n");
}

/* Every stack a report can show: those of allocations and failed ones
 * (the events reports name frames for), noted as the stream has them. */
static int note_stacks(const char *path, struct wsp_syms *s, wsprof_trace **out)
{
	int err = wsprof_trace_open(path, out);
	if (err < 0) {
		fprintf(stderr, "wsprof: %s: %s\n", path, wsprof_strerror(err));
		return 1;
	}
	wsprof_event ev;
	while ((err = wsprof_trace_next(*out, &ev)) > 0)
		if ((ev.type == WSPROF_EV_ALLOC || ev.type == WSPROF_EV_FAIL) &&
		    (err = wsp_syms_note_stack(s, *out, ev.stack)) < 0)
			break;
	wsprof_trace_status st;
	wsprof_trace_get_status(*out, &st);
	if (err == -ENOMEM) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	if (st.error == WSPROF_E_TRUNCATED)
		fprintf(stderr, "wsprof: warning: %s is truncated (no footer); naming the frames of its %llu complete "
			"chunks\n", path, (unsigned long long)st.chunks);
	else if (st.error)
		fprintf(stderr, "wsprof: warning: %s: %s after %llu chunks; naming the frames of what came before\n", path,
			wsprof_strerror(st.error), (unsigned long long)st.chunks);
	return 0;
}

int wsp_cmd_symbolize(int argc, char **argv)
{
	struct wsp_cli cli;
	int parsed = wsp_cli_parse(argc, argv, 0, NULL, NULL, NULL, usage, &cli);
	if (parsed >= 0)
		return parsed;
	const char *off = getenv("WSPROF_SYMBOL_CACHE");
	if (off && !strcmp(off, "0")) {
		fprintf(stderr, "wsprof: WSPROF_SYMBOL_CACHE=0 keeps no names: unset it to symbolize %s\n", cli.trace);
		return 2;
	}
	uint64_t start = wsp_progress_now();
	struct wsp_syms *s = wsp_syms_new(stderr, wsp_load_stacks());
	if (!s) {
		fprintf(stderr, "wsprof: out of memory\n");
		return 1;
	}
	wsp_syms_cache(s, cli.trace);
	wsprof_trace *t = NULL;
	int rc = note_stacks(cli.trace, s, &t);
	wsp_syms_noted_all(s);
	char label[4200];
	snprintf(label, sizeof label, "naming frames of %s", cli.trace);
	long named = rc ? 0 : wsp_syms_name_all(s, label);
	if (!rc && named < 0) {
		fprintf(stderr, "wsprof: out of memory\n");
		rc = 1;
	}
	struct wsp_syms_stats st;
	wsp_syms_stats(s, &st);
	/* Names are kept by build-id: of addresses in modules that have one. */
	if (!rc && st.addresses == st.uncached + st.outside) {
		/* Nothing a file could keep: say so, and why. */
		if (!st.addresses)
			printf("wsprof: %s has no allocation stacks: nothing to name\n", cli.trace);
		else
			printf("wsprof: the %llu addresses of %s are all outside modules (JIT code) or in modules without a "
			       "build-id (link with --build-id): their names cannot be kept\n",
			       (unsigned long long)st.addresses, cli.trace);
		wsp_syms_free(s);
		wsprof_trace_close(t);
		return 0;
	}
	const char *kept = NULL;
	int err = rc ? 0 : wsp_syms_save(s, &kept);
	if (!rc && err == -ENOENT && st.lost) {
		/* Nothing named to keep: the modules are elsewhere. */
		fprintf(stderr, "wsprof: the modules of %s are not here (or changed since it was recorded): run wsprof "
			"symbolize on the machine that recorded it\n", cli.trace);
		rc = 1;
	} else if (!rc && err) {
		fprintf(stderr, "wsprof: cannot keep the names of %s in %s: %s\n", cli.trace, kept ? kept : "(nowhere)",
			strerror(-err));
		rc = 1;
	}
	if (!rc) {
		char a[32], u[32], m[32];
		printf("wsprof: %s addresses in %s modules named in %.1f s (%s of them without a function name",
		       wsp_group_digits(a, sizeof a, st.addresses), wsp_group_digits(m, sizeof m, st.modules),
		       (double)(wsp_progress_now() - start) / 1e9, wsp_group_digits(u, sizeof u, st.unnamed));
		if (st.lost) {
			char l[32];
			printf(", %s in %zu module%s not found here", wsp_group_digits(l, sizeof l, st.lost), st.absent,
			       st.absent == 1 ? "" : "s");
		}
		char beside[4200];
		snprintf(beside, sizeof beside, "%s.symbols", cli.trace);
		if (!strcmp(kept, beside))
			printf(")\nwsprof: kept in %s: with it beside the trace, every report names these frames, on any "
			       "machine\n", kept);
		else /* the trace's directory is read-only: the user's cache */
			printf(")\nwsprof: kept in %s (the trace's directory cannot be written): copy it as %s.symbols "
			       "beside the trace, and every report names these frames, on any machine\n", kept,
			       strrchr(cli.trace, '/') ? strrchr(cli.trace, '/') + 1 : cli.trace);
		if (st.uncached) {
			char n[32];
			printf("wsprof: %s addresses are in modules without a build-id: their names are not kept (link with "
			       "--build-id to keep them)\n", wsp_group_digits(n, sizeof n, st.uncached));
		}
		if (st.lost)
			printf("wsprof: modules not found here are named only on the machine that recorded the trace: run "
			       "this there\n");
	}
	wsp_syms_free(s);
	wsprof_trace_close(t);
	return rc;
}
