/*
 * test_golden.c - the reports of a small committed trace, byte for byte.
 *
 * tests/golden/server.wsp (written by make_golden) is rendered by each
 * report; stdout must equal tests/golden/expected/NAME. The trace's
 * modules exist nowhere, so the output is the same on every machine, and
 * each module is warned about once, when its frames are first needed. After a deliberate change of output,
 * WSPROF_GOLDEN_UPDATE=1 rewrites the expected files (review the diff).
 */
#include "run.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(golden, .timeout = 60);

static void check(const char *name, const char *args)
{
	const char *root = getenv("WSPROF_SOURCE_ROOT"), *wsprof = getenv("WSPROF");
	cr_assert(root && wsprof, "WSPROF_SOURCE_ROOT and WSPROF must be set (meson test does)");
	char cmd[8192];
	/* Run from the golden directory so the trace's name is the same in every checkout. */
	snprintf(cmd, sizeof cmd, "cd '%s/tests/golden' && '%s' report %s", root, wsprof, args);
	struct wt_result r;
	wt_run(&r, (const char *[]){ "/bin/sh", "-c", cmd, NULL });
	cr_assert_eq(r.status, 0, "wsprof report %s exited %d:\n%s", args, r.status, r.err);
	/* Each module that could not be read is named once, when first needed. */
	static const char *const modules[] = { "/opt/golden/bin/server", "/opt/golden/lib/libgolden.so" };
	for (size_t i = 0; i < 2; i++) {
		const char *at = strstr(r.err, modules[i]);
		cr_expect(!at || !strstr(at + 1, modules[i]), "%s: more than one warning about %s:\n%s", args,
			  modules[i], r.err);
	}
	if (strstr(args, "summary"))
		cr_expect_str_eq(r.err, "", "summary does not symbolize, yet warned:\n%s", r.err);
	else
		cr_expect(strstr(r.err, modules[0]), "%s: no warning that %s cannot be read:\n%s", args, modules[0], r.err);
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

Test(golden, summary) { check("summary.txt", "summary server.wsp"); }
Test(golden, summary_json) { check("summary.json", "summary --json server.wsp"); }
Test(golden, callsites) { check("callsites.txt", "callsites server.wsp"); }
Test(golden, callsites_by_temporary) { check("callsites-temporary.txt", "callsites --sort temporary server.wsp"); }
Test(golden, callsites_full_stacks) { check("callsites-full.txt", "callsites --full-stacks server.wsp"); }
Test(golden, callsites_json) { check("callsites.json", "callsites --json --full-stacks server.wsp"); }
Test(golden, leaks) { check("leaks.txt", "leaks server.wsp"); }
Test(golden, leaks_json) { check("leaks.json", "leaks --json server.wsp"); }
Test(golden, callsites_mmap) { check("callsites-mmap.txt", "callsites --kind mmap server.wsp"); }
Test(golden, flame_folded) { check("flame-peak.folded", "flame --format folded server.wsp"); }
Test(golden, flame_folded_allocations) { check("flame-allocations.folded", "flame --format folded --metric allocations server.wsp"); }
Test(golden, flame_svg) { check("flame-peak.svg", "flame server.wsp -o -"); }
Test(golden, flame_svg_leaked) { check("flame-leaked.svg", "flame --metric leaked server.wsp -o -"); }
