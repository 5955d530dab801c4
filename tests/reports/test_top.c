/*
 * test_top.c - `wsprof top` on a trace being written, in a pseudo-terminal
 * as a user would run it: tests/progs/service.c recorded by `wsprof record`
 * while top follows its trace. What it draws: the program, its heap live
 * and peak, the site that allocates (tick), redrawn more than once, and
 * the end of the trace; q quits at once and leaves the terminal as it
 * was; a trace that does not exist is one line and status 1.
 */
#include "harness.h"
#include "pictures.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

TestSuite(top, .fini = wt_cleanup, .timeout = 120);

/* `wsprof record -o trace -- service EXPECT ticks ms`, started. */
static void start_service(struct wt_proc *p, const char *trace, const char *ticks, const char *ms)
{
	char *prog = wt_prog("service"), *expect = wt_path(wt_test_dir(), "expect.json");
	const char *argv[] = { wt_wsprof(), "record", "-o", trace, "--", prog, expect, ticks, ms, NULL };
	cr_assert_eq(wt_spawn(p, argv), 0);
	free(prog), free(expect);
}

struct pty_run {
	pid_t pid;
	int master;
	char *out;
	size_t len, cap;
};

/* `wsprof top ARGS...` on a new pseudo-terminal of 120 x 40. */
static void start_top(struct pty_run *t, const char *const args[])
{
	struct winsize ws = { .ws_row = 40, .ws_col = 120 };
	*t = (struct pty_run){ 0 };
	t->pid = forkpty(&t->master, NULL, NULL, &ws);
	cr_assert_neq(t->pid, -1, "forkpty: %s", strerror(errno));
	if (t->pid == 0) {
		const char *argv[16] = { wt_wsprof(), "top" };
		size_t n = 2;
		for (size_t i = 0; args[i] && n < 15; i++)
			argv[n++] = args[i];
		argv[n] = NULL;
		execv(argv[0], (char **)argv);
		_exit(127);
	}
}

/* Read what top draws for up to ms (or until it exits). @return true when it exited. */
static bool read_for(struct pty_run *t, int ms, int *status)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { t->master, POLLIN, 0 };
		if (poll(&p, 1, 50) > 0) {
			char buf[4096];
			ssize_t n = read(t->master, buf, sizeof buf);
			if (n > 0) {
				if (t->len + (size_t)n + 1 > t->cap) {
					t->cap = (t->len + (size_t)n + 1) * 2;
					t->out = realloc(t->out, t->cap);
					cr_assert(t->out);
				}
				memcpy(t->out + t->len, buf, (size_t)n);
				t->len += (size_t)n;
				t->out[t->len] = 0;
			}
		}
		if (waitpid(t->pid, status, WNOHANG) == t->pid)
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			return false;
	}
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;
	for (const char *p = s; p && (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

Test(top, follows_a_growing_trace_to_its_end)
{
	char *trace = wt_path(wt_test_dir(), "svc.wsp");
	struct wt_proc rec;
	start_service(&rec, trace, "40", "50");
	/* Wait for the header, as a user starting top in another terminal would. */
	for (int i = 0; i < 100 && !wt_file_exists(trace); i++)
		usleep(20000);
	struct pty_run t;
	start_top(&t, (const char *[]){ "--interval", "0.3", trace, NULL });
	int status = 0;
	bool exited = read_for(&t, 30000, &status);
	struct wt_result r;
	wt_wait(&rec, &r);
	wt_assert_status(&r, 0, "wsprof record service");
	cr_expect(strstr(r.out, "ticks 40"), "the program's output is its own: %s", r.out);
	wt_result_free(&r);
	cr_assert(exited, "top did not end with the trace; it drew:\n%s", t.out ? t.out : "");
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "top's status %d", status);
	const char *out = t.out ? t.out : "";
	cr_expect(strstr(out, "wsprof top  "), "%s", out);
	cr_expect(strstr(out, "service"), "names the program");
	cr_expect(count(out, "\033[H\033[2J") >= 2, "redrawn: %s", out);
	cr_expect(strstr(out, "heap call sites by live bytes"));
	cr_expect(strstr(out, "tick (service.c:"), "the site that allocates: %s", out);
	cr_expect(strstr(out, "q quits"));
	cr_expect(strstr(out, "the trace has ended"));
	/* At the end: 8 blocks of 64 KiB live, the peak at least that. */
	cr_expect(strstr(out, "512 KiB  ") || strstr(out, "512 KiB "), "%s", out);
	close(t.master);
	free(t.out);
	free(trace);
}

Test(top, q_quits_and_the_terminal_is_as_it_was)
{
	char *trace = wt_path(wt_test_dir(), "long.wsp");
	struct wt_proc rec;
	start_service(&rec, trace, "100", "50"); /* 5 s */
	for (int i = 0; i < 100 && !wt_file_exists(trace); i++)
		usleep(20000);
	struct pty_run t;
	start_top(&t, (const char *[]){ "--interval", "0.2", trace, NULL });
	int status = 0;
	cr_assert_not(read_for(&t, 800, &status), "top ended early:\n%s", t.out ? t.out : "");
	cr_assert_eq(write(t.master, "q", 1), 1);
	bool exited = read_for(&t, 3000, &status);
	cr_expect(exited, "q did not quit");
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	struct termios tio;
	cr_assert_eq(tcgetattr(t.master, &tio), 0);
	cr_expect(tio.c_lflag & ICANON, "the terminal is line by line again");
	cr_expect(tio.c_lflag & ECHO, "and echoes again");
	close(t.master);
	free(t.out);
	/* The recording goes on, unchanged by top coming and going. */
	struct wt_result r;
	wt_wait(&rec, &r);
	wt_assert_status(&r, 0, "wsprof record service");
	cr_expect(strstr(r.out, "ticks 100"));
	wt_result_free(&r);
	free(trace);
}

Test(top, a_trace_that_is_not_there)
{
	char *trace = wt_path(wt_test_dir(), "none.wsp");
	const char *argv[] = { wt_wsprof(), "top", trace, NULL };
	struct wt_result r;
	cr_assert_eq(wt_run(&r, argv), 0);
	wt_assert_status(&r, 1, "wsprof top of no trace");
	cr_expect(strstr(r.err, "none.wsp: No such file or directory"), "%s", r.err);
	cr_expect_eq(wt_count_lines(r.err), 1);
	wt_result_free(&r);
	static const struct {
		const char *option, *value, *says;
	} bad[] = { { "--interval", "0", "--interval wants seconds between 0.05 and 3600, not '0'" },
		    { "--top", "-1", "--top wants a whole number up to 1000, not '-1'" } };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		const char *args[] = { wt_wsprof(), "top", bad[i].option, bad[i].value, trace, NULL };
		cr_assert_eq(wt_run(&r, args), 0);
		wt_assert_status(&r, 2, bad[i].says);
		cr_expect(strstr(r.err, bad[i].says), "%s", r.err);
		wt_result_free(&r);
	}
	free(trace);
}
