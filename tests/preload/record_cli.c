/*
 * record_cli.c - `wsprof record` as a command: it runs the program as if
 * wsprof were not there and reports like a shell would.
 *
 * The program's exit status comes back unchanged, its stdout is the same
 * byte for byte as in a plain run, `-o` never overwrites an existing file
 * (and then does not run the program at all), and a program that cannot
 * be found gives 127.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

TestSuite(record, .fini = wt_cleanup, .timeout = 60);

Test(record, exit_status_is_the_programs)
{
	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_basic", (const char *[]){ "--exit", "3", NULL });
	wt_assert_status(&rec.run, 3, "wsprof record of a program exiting with 3");
	cr_expect(!rec.run.signaled, "wsprof record itself was killed");
	cr_expect(wt_file_exists(rec.trace), "no trace was written for a program exiting with 3");
	wt_recording_free(&rec);
}

Test(record, stdout_is_unchanged)
{
	const char *dir = wt_test_dir();
	char *prog = wt_prog("alloc_basic"), *plain_expect = wt_path(dir, "plain.json");
	struct wt_result plain;
	wt_run(&plain, (const char *[]){ prog, plain_expect, NULL });
	wt_assert_status(&plain, 0, "alloc_basic run on its own");
	cr_assert(plain.out[0], "alloc_basic printed nothing on its own");

	struct wt_recording rec;
	wt_record(&rec, NULL, "alloc_basic", NULL);
	wt_assert_status(&rec.run, 0, "wsprof record alloc_basic");
	cr_expect_str_eq(rec.run.out, plain.out, "the program's stdout changed under wsprof record");

	wt_recording_free(&rec);
	wt_result_free(&plain);
	free(plain_expect);
	free(prog);
}

Test(record, refuses_to_overwrite_an_existing_trace)
{
	const char *dir = wt_test_dir();
	char *trace = wt_path(dir, "t.wsp"), *expect = wt_path(dir, "expect.json");
	char *prog = wt_prog("alloc_basic");
	static const char precious[] = "not to be overwritten\n";
	cr_assert_eq(wt_write_file(trace, precious, sizeof precious - 1), 0, "cannot write %s", trace);

	struct wt_result r;
	wt_run(&r, (const char *[]){ wt_wsprof(), "record", "-o", trace, "--", prog, expect, NULL });
	wt_assert_status(&r, 1, "wsprof record -o EXISTING");
	cr_expect_eq(wt_count_lines(r.err), 1, "one line says why, not:\n%s", r.err);
	cr_expect(!wt_file_exists(expect), "the program ran although there was nowhere to record it");
	char *after = wt_read_file(trace, NULL);
	cr_expect(after && strcmp(after, precious) == 0, "the existing file was changed");

	free(after);
	wt_result_free(&r);
	free(prog);
	free(expect);
	free(trace);
}

Test(record, a_missing_program_gives_127)
{
	const char *dir = wt_test_dir();
	char *trace = wt_path(dir, "t.wsp"), *missing = wt_path(dir, "no-such-program");
	struct wt_result r;
	wt_run(&r, (const char *[]){ wt_wsprof(), "record", "-o", trace, "--", missing, NULL });
	wt_assert_status(&r, 127, "wsprof record of a program that does not exist");
	cr_expect(strstr(r.err, "no-such-program") != NULL, "the error does not name the program:\n%s", r.err);
	wt_result_free(&r);
	free(missing);
	free(trace);
}
