/*
 * record_cli.c - `wsprof record` as a command: it runs the program as if
 * wsprof were not there and reports like a shell would.
 *
 * The program's exit status comes back unchanged, its stdout is the same
 * byte for byte as in a plain run, `-o` never overwrites an existing file
 * (and then, unless it is one of many ranks given that name, does not run
 * the program at all), and a program that cannot
 * be found gives 127. A signal sent to wsprof record (SIGTERM, SIGHUP,
 * SIGINT, SIGQUIT with kill) is passed on to the program, whose end wsprof
 * reports; wsprof record killed outright takes the program with it.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

	/* Not as a rank of a parallel job, which shares its -o name with the
	 * others (tests/preload/ranks.c), should the tests run inside one. */
	struct wt_result r;
	wt_run(&r, (const char *[]){ "/usr/bin/env", "-u", "OMPI_COMM_WORLD_RANK", "-u", "PMIX_RANK", "-u", "PMI_RANK",
				     "-u", "SLURM_PROCID", wt_wsprof(), "record", "-o", trace, "--", prog, expect, NULL });
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

/* wsprof record of `sleep 30`, started in the background: its pid, and
 * the sleep's (the child it waits for) once it runs. */
static pid_t record_sleep(const char *trace, pid_t *sleeper)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		execl(wt_wsprof(), wt_wsprof(), "record", "-o", trace, "--", "/bin/sleep", "30", (char *)NULL);
		_exit(127);
	}
	char path[64], text[64] = "";
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	for (int i = 0; i < 500 && !text[0]; i++) { /* up to 5 s */
		FILE *f = fopen(path, "r");
		if (f) {
			if (!fgets(text, sizeof text, f))
				text[0] = 0;
			fclose(f);
		}
		if (!text[0])
			usleep(10000);
	}
	*sleeper = (pid_t)atoi(text);
	cr_assert_gt(*sleeper, 0, "wsprof record started no program");
	usleep(200000); /* the program past exec, under the preload */
	return pid;
}

static bool gone_within(pid_t pid, int ms)
{
	for (int i = 0; i < ms / 10; i++, usleep(10000))
		if (kill(pid, 0) != 0 && errno == ESRCH)
			return true;
	return false;
}

static void expect_passed_on(int sig)
{
	char *trace = wt_path(wt_test_dir(), "t.wsp");
	pid_t sleeper, record = record_sleep(trace, &sleeper);
	cr_assert_eq(kill(record, sig), 0);
	int status;
	cr_assert_eq(waitpid(record, &status, 0), record);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig,
		  "wsprof record did not pass on signal %d and report it (status %#x)", sig, status);
	cr_expect(gone_within(sleeper, 2000), "the program outlived wsprof record");
	struct wt_json *s = wt_summary(trace, NULL);
	bool complete = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "the trace is not complete");
	wt_json_free(s);
	free(trace);
}

Test(record, sigterm_sent_to_wsprof_record_reaches_the_program)
{
	expect_passed_on(SIGTERM);
}

Test(record, sighup_sent_to_wsprof_record_reaches_the_program)
{
	expect_passed_on(SIGHUP);
}

Test(record, sigint_sent_to_wsprof_record_reaches_the_program)
{
	expect_passed_on(SIGINT);
}

Test(record, a_program_never_outlives_wsprof_record_killed_outright)
{
	char *trace = wt_path(wt_test_dir(), "t.wsp");
	pid_t sleeper, record = record_sleep(trace, &sleeper);
	cr_assert_eq(kill(record, SIGKILL), 0);
	int status;
	cr_assert_eq(waitpid(record, &status, 0), record);
	cr_expect(gone_within(sleeper, 2000), "the program is left running after wsprof record was killed");
	kill(sleeper, SIGKILL);
	free(trace);
}
