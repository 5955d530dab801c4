/*
 * test_golden.c - the reports of small committed traces, byte for byte.
 *
 * tests/golden/server.wsp and story.wsp (written by make_golden) are
 * rendered by each report; stdout must equal tests/golden/expected/NAME.
 * The traces' modules exist nowhere, so the output is the same on every
 * machine, and each module is warned about once, when its frames are first
 * needed; reports that show no frames (summary, wss) warn about nothing.
 * After a deliberate change of output, WSPROF_GOLDEN_UPDATE=1 rewrites the
 * expected files (review the diff).
 */
#include "run.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(golden, .timeout = 60);

struct golden_trace {
	const char *file;
	const char *modules[2]; /* main program first */
};

static const struct golden_trace server = { "server.wsp", { "/opt/golden/bin/server", "/opt/golden/lib/libgolden.so" } };
static const struct golden_trace story = { "story.wsp", { "/opt/golden/bin/trainer", "/opt/golden/lib/libmodel.so" } };

/* Run `wsprof report ARGS TRACE`; its stdout must equal expected/NAME. */
static void check_trace(const struct golden_trace *g, const char *name, const char *args)
{
	const char *root = getenv("WSPROF_SOURCE_ROOT"), *wsprof = getenv("WSPROF");
	cr_assert(root && wsprof, "WSPROF_SOURCE_ROOT and WSPROF must be set (meson test does)");
	char cmd[8192];
	/* Run from the golden directory so the trace's name is the same in
	 * every checkout; the moments' index kept in memory, not written
	 * into the source tree (WSPROF_INDEX=0). */
	snprintf(cmd, sizeof cmd, "cd '%s/tests/golden' && WSPROF_INDEX=0 '%s' report %s %s", root, wsprof, args, g->file);
	struct wt_result r;
	wt_run(&r, (const char *[]){ "/bin/sh", "-c", cmd, NULL });
	cr_assert_eq(r.status, 0, "wsprof report %s exited %d:\n%s", args, r.status, r.err);
	/* Each module that could not be read is named once, when first needed. */
	for (size_t i = 0; i < 2; i++) {
		const char *at = strstr(r.err, g->modules[i]);
		cr_expect(!at || !strstr(at + 1, g->modules[i]), "%s: more than one warning about %s:\n%s", args,
			  g->modules[i], r.err);
	}
	if (!strncmp(args, "summary", 7) || !strncmp(args, "wss", 3))
		cr_expect_str_eq(r.err, "", "%s shows no frames, yet warned:\n%s", args, r.err);
	else
		cr_expect(strstr(r.err, g->modules[0]), "%s: no warning that %s cannot be read:\n%s", args,
			  g->modules[0], r.err);
	char *path = wt_path(root, "tests/golden/expected/%s", name);
	if (getenv("WSPROF_GOLDEN_UPDATE")) {
		cr_assert_eq(wt_write_file(path, r.out, strlen(r.out)), 0, "cannot write %s", path);
	} else {
		char *want = wt_read_file(path, NULL);
		cr_assert(want, "no %s: run with WSPROF_GOLDEN_UPDATE=1 to make it", path);
		cr_expect_str_eq(r.out, want, "wsprof report %s differs from %s", args, path);
		free(want);
	}
	free(path);
	wt_result_free(&r);
}

Test(golden, summary) { check_trace(&server, "summary.txt", "summary"); }
Test(golden, summary_json) { check_trace(&server, "summary.json", "summary --json"); }
Test(golden, callsites) { check_trace(&server, "callsites.txt", "callsites"); }
Test(golden, callsites_by_temporary) { check_trace(&server, "callsites-temporary.txt", "callsites --sort temporary"); }
Test(golden, callsites_full_stacks) { check_trace(&server, "callsites-full.txt", "callsites --full-stacks"); }
Test(golden, callsites_json) { check_trace(&server, "callsites.json", "callsites --json --full-stacks"); }
Test(golden, leaks) { check_trace(&server, "leaks.txt", "leaks"); }
Test(golden, leaks_json) { check_trace(&server, "leaks.json", "leaks --json"); }
Test(golden, callsites_mmap) { check_trace(&server, "callsites-mmap.txt", "callsites --kind mmap"); }
Test(golden, flame_folded) { check_trace(&server, "flame-peak.folded", "flame --format folded"); }
Test(golden, flame_folded_allocations) { check_trace(&server, "flame-allocations.folded", "flame --format folded --metric allocations"); }
Test(golden, flame_svg) { check_trace(&server, "flame-peak.svg", "flame -o -"); }
Test(golden, flame_svg_leaked) { check_trace(&server, "flame-leaked.svg", "flame --metric leaked -o -"); }

/* The story: phases, annotations, access samples, device memory and an OOM. */
Test(golden, story_summary) { check_trace(&story, "story-summary.txt", "summary"); }
Test(golden, story_summary_json) { check_trace(&story, "story-summary.json", "summary --json"); }
Test(golden, story_callsites) { check_trace(&story, "story-callsites.txt", "callsites"); }
Test(golden, story_callsites_cold) { check_trace(&story, "story-callsites-cold.txt", "callsites --sort cold"); }
Test(golden, story_callsites_device) { check_trace(&story, "story-callsites-device.txt", "callsites --kind cuda_device --full-stacks"); }
Test(golden, story_leaks) { check_trace(&story, "story-leaks.txt", "leaks"); }
Test(golden, story_state_oom) { check_trace(&story, "story-state-oom.txt", "state --at oom"); }
Test(golden, story_state_oom_json) { check_trace(&story, "story-state-oom.json", "state --at oom --json"); }
Test(golden, story_state_peak) { check_trace(&story, "story-state-peak.txt", "state --at peak"); }
Test(golden, story_state_heap_peak) { check_trace(&story, "story-state-heap-peak.txt", "state --at peak --kind heap"); }
Test(golden, story_state_snapshot) { check_trace(&story, "story-state-after-load.txt", "state --at after-load"); }
Test(golden, story_wss) { check_trace(&story, "story-wss.txt", "wss"); }
Test(golden, story_wss_json) { check_trace(&story, "story-wss.json", "wss --json"); }
Test(golden, story_wss_seconds) { check_trace(&story, "story-wss-1s.txt", "wss --window 1000"); }
