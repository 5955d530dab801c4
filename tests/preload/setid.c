/*
 * setid.c - programs the loader will not preload into
 * (tests/progs/secure_probe, copied with set-ID bits).
 *
 * Run set-user-ID to another user, or set-group-ID to another group, a
 * program gets AT_SECURE and the loader ignores LD_PRELOAD: `wsprof
 * record` runs it anyway, as asked, says in one line that it is not
 * traced and why, writes no trace and exits with the program's status.
 * The probe prints what the kernel told its loader, so the test knows the
 * case is real. A set-user-ID program of the caller's own is no such
 * case: it is traced like any other, without a word. Neither is a
 * statically linked program (no loader runs in it): said the same way.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

TestSuite(setid, .fini = wt_cleanup, .timeout = 60);

#define NOBODY 65534

/* A copy of secure_probe in dir, owned by uid:gid, with mode. */
static char *probe_copy(const char *dir, uid_t uid, gid_t gid, mode_t mode)
{
	struct statvfs vfs;
	if (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_NOSUID))
		cr_skip_test("%s is on a nosuid mount: set-ID bits have no effect there", dir);
	char *from = wt_prog("secure_probe"), *to = wt_path(dir, "probe");
	size_t len;
	char *data = wt_read_file(from, &len);
	cr_assert(data, "cannot read %s", from);
	cr_assert_eq(wt_write_file(to, data, len), 0, "cannot write %s", to);
	/* chown first: it clears the set-ID bits. */
	cr_assert_eq(chown(to, uid, gid), 0, "cannot chown %s", to);
	cr_assert_eq(chmod(to, mode), 0, "cannot chmod %s", to);
	free(data);
	free(from);
	return to;
}

static void expect_untraced(uid_t uid, gid_t gid, mode_t mode, const char *why)
{
	struct wt_recording rec;
	const char *dir = wt_test_dir();
	char *probe = probe_copy(dir, uid, gid, mode);
	wt_record_with(&rec, NULL, NULL, probe, NULL);
	wt_assert_status(&rec.run, 5, "wsprof record of a set-ID program");
	cr_expect_str_eq(rec.run.out, "AT_SECURE=1 traced=0\n", "the probe did not run privileged and untraced");
	cr_expect_eq(wt_count_lines(rec.run.err), 1, "one line says why, not:\n%s", rec.run.err);
	cr_expect(strstr(rec.run.err, why) && strstr(rec.run.err, "runs untraced"),
		  "the line does not say it runs untraced because it %s:\n%s", why, rec.run.err);
	cr_expect(!wt_file_exists(rec.trace), "an untraced program left a trace %s", rec.trace);
	wt_recording_free(&rec);
	free(probe);
}

Test(setid, a_program_set_user_id_to_another_user_runs_untraced)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: only root can give a program another owner");
	expect_untraced(NOBODY, 0, 04755, "is set-user-ID (it runs as uid 65534)");
}

Test(setid, a_program_set_group_id_to_another_group_runs_untraced)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: only root can give a program a group it is not in");
	expect_untraced(0, NOBODY, 02755, "is set-group-ID (it runs as gid 65534)");
}

Test(setid, a_set_user_id_program_of_the_callers_own_is_traced)
{
	struct wt_recording rec;
	const char *dir = wt_test_dir();
	char *probe = probe_copy(dir, getuid(), getgid(), 06755);
	wt_record_with(&rec, NULL, NULL, probe, NULL);
	wt_assert_status(&rec.run, 5, "wsprof record of a set-ID program of the caller's own");
	cr_expect_str_eq(rec.run.out, "AT_SECURE=0 traced=1\n", "the probe ran privileged or untraced");
	cr_expect(!strstr(rec.run.err, "untraced"), "wsprof said it runs untraced:\n%s", rec.run.err);
	struct wt_json *s = wt_summary(rec.trace, (const char *[]){ "probe", NULL });
	bool complete = false;
	cr_expect(wt_json_bool(s, "complete", &complete) && complete, "the trace is complete");
	cr_expect_eq(wt_u64(s, "kinds.heap.allocations"), 1, "the probe's one allocation");
	wt_json_free(s);
	wt_recording_free(&rec);
	free(probe);
}

Test(setid, a_statically_linked_program_runs_untraced)
{
	if (!getenv("WSPROF_TEST_STATIC") || !*getenv("WSPROF_TEST_STATIC"))
		cr_skip_test("no static C library to link static_probe with (Debian package libc6-dev)");
	struct wt_recording rec;
	wt_record(&rec, NULL, "static_probe", NULL);
	wt_assert_status(&rec.run, 7, "static_probe under wsprof record");
	cr_expect_str_eq(rec.run.out, "static probe\n");
	cr_expect(strstr(rec.run.err, "is statically linked") && strstr(rec.run.err, "runs untraced"),
		  "the line does not say it runs untraced because it is statically linked:\n%s", rec.run.err);
	cr_expect_eq(wt_count_lines(rec.run.err), 1, "more than the one line:\n%s", rec.run.err);
	cr_expect(!wt_file_exists(rec.trace), "an untraced program left a trace %s", rec.trace);
	wt_recording_free(&rec);
}
