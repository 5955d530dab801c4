/*
 * state.c - `wsprof report state`: what memory looked like at one moment
 * (the peak, the end, the first failed allocation, a time, a snapshot
 * label). Parses the options, opens the state at that moment (model/
 * state.c), lays out its memories (compute/layout.c) and hands them to
 * the text or JSON (text/statetext.c) or the map (draw/statemap.c).
 */
#include "commands.h"

#include "cli.h"
#include "statemap.h"
#include "text.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
	fputs("usage: wsprof report state [--at peak|end|oom|SECONDS|LABEL] [--kind KIND] [--json | -o FILE] TRACE\n"
	      "  every live block at that moment (default: the peak of the largest kind), with its name,\n"
	      "  holders, validity and last use from the program's annotations (wsprof.h); then the\n"
	      "  collectable blocks, least recently used first, with what evicting them would free; per\n"
	      "  memory, the holes between its blocks, the largest and how fragmented they are\n"
	      "  --at peak     when the kind (--kind, else the largest) peaked\n"
	      "  --at oom      at the first failed allocation (of --kind, else any): the request against\n"
	      "                the largest hole\n"
	      "  --at SECONDS  that many seconds after the start; --at LABEL: at wsprof_snapshot(LABEL)\n"
	      "  -o FILE       draw the memory map: a page per memory (heap, mmap, each CUDA device, ...;\n"
	      "                --kind picks one kind), as .pdf, .svg or .png\n", out);
}

/* A map needs addresses: say what to draw instead. */
static bool drawable_kind(unsigned kind)
{
	if (wsp_memory_kind(kind))
		return true;
	if (kind == WSPROF_KIND_POOL)
		fprintf(stderr, "wsprof: pool sub-allocations are drawn inside the blocks they are carved from: "
				"use --kind with the kind of those blocks (heap, cuda_device, ...)\n");
	else
		fprintf(stderr, "wsprof: --kind %s has no addresses to draw (CUDA VMM allocations are handles): "
				"draw the mapped memory's kind, or leave -o out for the text\n", wsprof_kind_name(kind));
	return false;
}

static int draw(struct wsp_state *st, const struct wsp_memory *mem, size_t nmem, const char *out)
{
	struct wsp_doc *doc = wsp_doc_open(out, nmem > 1);
	if (!doc)
		return 1;
	wsp_statemap_draw_state(doc, st, mem, nmem);
	return wsp_doc_finish(doc, true);
}

static int state_option(void *ctx, int val, const char *arg)
{
	(void)val; /* --at, the only one */
	*(const char **)ctx = arg;
	return 0;
}

int wsp_cmd_state(int argc, char **argv)
{
	static const struct wsp_cli_option own[] = { { "at", required_argument, 0, 'a' }, { 0 } };
	const char *at = "peak";
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_OUTPUT | WSP_CLI_KIND | WSP_CLI_JSON, own, state_option, &at, usage,
			       &cli);
	if (rc >= 0)
		return rc;
	const char *path = cli.trace, *out = cli.out;
	bool json = cli.json;
	enum wsp_doc_format format;
	if (out && (wsp_doc_format_of(out, &format) || (cli.kind >= 0 && !drawable_kind((unsigned)cli.kind))))
		return 2;
	struct wsp_state st;
	rc = wsp_state_open(path, at, cli.kind, &st);
	if (rc)
		return rc;
	struct wsp_memory *mem;
	size_t nmem;
	if (wsp_memories(&st, st.kind, &mem, &nmem)) {
		fprintf(stderr, "wsprof: out of memory\n");
		wsp_state_free(&st);
		return 1;
	}
	if (out)
		rc = draw(&st, mem, nmem, out);
	else if (json)
		wsp_state_print_json(&st, mem, nmem);
	else
		wsp_state_print_text(&st, mem, nmem);
	wsp_memories_free(mem, nmem);
	wsp_state_free(&st);
	return rc;
}
