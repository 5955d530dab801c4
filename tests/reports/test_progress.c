/*
 * test_progress.c - the progress bar of a long read (analyzer/model/progress.c,
 * analyzer/model/load.c) and the reader's position that feeds it
 * (wsprof_trace_position).
 *
 * The bar is pinned with made-up times, byte for byte: quiet for the first
 * second, then a line at most every 100 ms, erased at the end. The reader's
 * position is checked against a trace built here: the header after open,
 * each chunk as it is read, the whole file at the end; a pipe has no size.
 * End to end, a trace is fed through a named pipe with a pause of 1.3 s
 * in the middle, so reading it takes more than a second: under a
 * pseudo-terminal the bar shows and is erased; with stderr a file, nothing
 * is printed but the report.
 */
#include "harness.h"
#include "progress.h"
#include "trace_builder.h"

#include "wsprof/trace.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

TestSuite(progress, .fini = wt_cleanup, .timeout = 60);

#define S 1000000000ull
#define T0 (5 * S)

static char *drawn(void (*steps)(struct wsp_progress *, FILE *))
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	struct wsp_progress p;
	steps(&p, out);
	fclose(out);
	return text;
}

static void steps_with_size(struct wsp_progress *p, FILE *out)
{
	wsp_progress_start(p, out, 80, "reading app.wsp", T0);
	wsp_progress_update(p, T0 + S / 2, 20000000, 100000000);     /* too soon */
	wsp_progress_update(p, T0 + S + S / 5, 50000000, 100000000); /* 1.2 s: drawn */
	wsp_progress_update(p, T0 + S + S / 4, 55000000, 100000000); /* 50 ms later: not yet */
	wsp_progress_update(p, T0 + S + 3 * S / 10, 60000000, 100000000);
	wsp_progress_end(p);
	wsp_progress_end(p); /* once erased, nothing more */
}

Test(progress, quiet_for_a_second_then_ten_times_a_second_then_erased)
{
	char *text = drawn(steps_with_size);
	cr_expect_str_eq(text, "\rwsprof: reading app.wsp [===============>              ]  50%  41.7 MB/s\033[K"
			       "\rwsprof: reading app.wsp [==================>           ]  60%  46.2 MB/s\033[K"
			       "\r\033[K");
	free(text);
}

static void steps_without_size(struct wsp_progress *p, FILE *out)
{
	wsp_progress_start(p, out, 80, "reading t.wsp", T0);
	wsp_progress_update(p, T0 + 2 * S, 12000000, 0);
	wsp_progress_end(p);
}

Test(progress, a_pipe_shows_bytes_and_rate)
{
	char *text = drawn(steps_without_size);
	cr_expect_str_eq(text, "\rwsprof: reading t.wsp  12.0 MB  6.0 MB/s\033[K\r\033[K");
	free(text);
}

static void steps_narrow(struct wsp_progress *p, FILE *out)
{
	wsp_progress_start(p, out, 40, "reading a-trace-with-a-long-name.wsp", T0);
	wsp_progress_update(p, T0 + 2 * S, 100000000, 100000000);
	wsp_progress_update(p, T0 + 3 * S, 100000000, 100000000);
}

Test(progress, a_narrow_terminal_cuts_the_name_and_drops_the_bar)
{
	char *text = drawn(steps_narrow);
	/* 39 columns: "wsprof: " and " 100%  50.0 MB/s" leave 15 for the name, no room for a bar. */
	cr_expect_str_eq(text, "\rwsprof: reading a-trace 100%  50.0 MB/s\033[K"
			       "\rwsprof: reading a-trace 100%  33.3 MB/s\033[K");
	free(text);
}

static void steps_counting(struct wsp_progress *p, FILE *out)
{
	wsp_progress_start(p, out, 80, "naming frames of app.wsp", T0);
	wsp_progress_count(p, "addresses");
	wsp_progress_update(p, T0 + S / 2, 100, 4000); /* too soon */
	wsp_progress_update(p, T0 + 3 * S / 2, 1000, 4000);
	wsp_progress_end(p);
}

/* Naming frames counts addresses, not bytes: no rate in MB/s. */
Test(progress, naming_frames_counts_addresses)
{
	char *text = drawn(steps_counting);
	cr_expect_str_eq(text, "\rwsprof: naming frames of app.wsp [===>           ]  25%  1000 of 4000 addresses"
			       "\033[K\r\033[K");
	free(text);
}

static void steps_without_terminal(struct wsp_progress *p, FILE *out)
{
	(void)out;
	wsp_progress_start(p, NULL, 80, "reading app.wsp", T0);
	wsp_progress_update(p, T0 + 5 * S, 1, 2);
	wsp_progress_end(p);
}

Test(progress, no_terminal_no_bar)
{
	char *text = drawn(steps_without_terminal);
	cr_expect_str_eq(text, "");
	free(text);
}

/* ---- the reader's position ------------------------------------------ */

#define CHUNKS 40
#define PER_CHUNK 1000

/* CHUNKS chunks of PER_CHUNK allocations and frees each; offsets[i] is
 * where chunk i starts, offsets[CHUNKS] where the footer does. */
static void build(struct trace_builder *b, size_t offsets[CHUNKS + 1])
{
	tb_init(b);
	tb_header(b, NULL);
	uint64_t seq = 1;
	for (size_t c = 0; c < CHUNKS; c++) {
		tb_segment(b, 100, 0, 0);
		for (size_t i = 0; i < PER_CHUNK / 2; i++, seq += 2) {
			uint64_t t = seq * 1000;
			tb_ev_alloc(b, seq, t, WSPROF_KIND_HEAP, WSPROF_OP_MALLOC, 0x1000 + 16 * i, 16 + i, 0);
			tb_ev_free(b, seq + 1, t + 500, WSPROF_KIND_HEAP, WSPROF_OP_FREE, 0x1000 + 16 * i);
		}
		tb_sync(b, seq, seq * 1000);
		offsets[c] = tb_chunk(b);
	}
	offsets[CHUNKS] = b->len;
	tb_footer(b, seq * 1000);
}

Test(progress, the_reader_says_how_far_it_has_read)
{
	struct trace_builder b;
	size_t at[CHUNKS + 1];
	build(&b, at);
	char *path = wt_path(wt_test_dir(), "t.wsp");
	cr_assert_eq(tb_save(&b, path), 0);
	wsprof_trace *t;
	cr_assert_eq(wsprof_trace_open(path, &t), 0);
	uint64_t done, size;
	wsprof_trace_position(t, &done, &size);
	cr_expect_eq(size, b.len, "the file's size");
	cr_expect_eq(done, at[0], "after open: the header, %llu bytes, not %llu", (unsigned long long)at[0],
		     (unsigned long long)done);
	wsprof_event ev;
	for (size_t c = 0; c < CHUNKS; c++) {
		for (size_t i = 0; i < PER_CHUNK; i++)
			cr_assert_eq(wsprof_trace_next(t, &ev), 1);
		wsprof_trace_position(t, &done, &size);
		cr_expect_eq(done, at[c + 1], "after chunk %zu's events: %llu bytes, not %llu", c,
			     (unsigned long long)done, (unsigned long long)at[c + 1]);
	}
	cr_assert_eq(wsprof_trace_next(t, &ev), 0);
	wsprof_trace_position(t, &done, &size);
	cr_expect_eq(done, b.len, "at the end: the whole file");
	wsprof_trace_close(t);
	tb_fini(&b);
	free(path);
}

/* ---- a slow read through a named pipe -------------------------------- */

/* Open the pipe for writing once its reader has (never blocks for good:
 * a reader that died leaves the test failing, not hanging). */
static int open_writer(const char *fifo)
{
	for (int i = 0; i < 1000; i++) {
		int fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			fcntl(fd, F_SETFL, 0);
			return fd;
		}
		cr_assert_eq(errno, ENXIO, "open %s: %s", fifo, strerror(errno));
		usleep(10000);
	}
	cr_assert_fail("nobody opened %s for reading in 10 s", fifo);
	return -1;
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		cr_assert_gt(w, 0, "write to the pipe: %s", strerror(errno));
		p += w;
		n -= (size_t)w;
	}
}

/* The trace into the pipe: half, a pause of 1.3 s, the rest. */
static void feed(const char *fifo)
{
	struct trace_builder b;
	size_t at[CHUNKS + 1];
	build(&b, at);
	signal(SIGPIPE, SIG_IGN);
	int fd = open_writer(fifo);
	write_all(fd, b.data, b.len / 2);
	nanosleep(&(struct timespec){ 1, 300000000 }, NULL);
	write_all(fd, b.data + b.len / 2, b.len - b.len / 2);
	close(fd);
	tb_fini(&b);
}

static char *make_fifo(void)
{
	char *fifo = wt_path(wt_test_dir(), "t.wsp");
	cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo: %s", strerror(errno));
	return fifo;
}

Test(progress, a_slow_read_on_a_terminal_shows_the_bar_and_erases_it)
{
	char *fifo = make_fifo();
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	cr_assert_geq(master, 0, "posix_openpt: %s", strerror(errno));
	cr_assert_eq(grantpt(master), 0);
	cr_assert_eq(unlockpt(master), 0);
	char slave[256];
	cr_assert_eq(ptsname_r(master, slave, sizeof slave), 0);
	const char *wsprof = wt_wsprof(); /* asserts: never in the child */
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		int tty = open(slave, O_RDWR);
		int null = open("/dev/null", O_RDWR);
		if (tty < 0 || null < 0)
			_exit(126);
		dup2(null, 0);
		dup2(null, 1);
		dup2(tty, 2);
		execl(wsprof, "wsprof", "report", "summary", fifo, (char *)NULL);
		_exit(127);
	}
	cr_assert_gt(pid, 0);
	feed(fifo);

	/* Everything the terminal got, until the program is gone. */
	char out[16384];
	size_t len = 0;
	for (;;) {
		struct pollfd pfd = { master, POLLIN, 0 };
		int r = poll(&pfd, 1, 10000);
		cr_assert_gt(r, 0, "nothing from the terminal for 10 s");
		ssize_t n = read(master, out + len, sizeof out - 1 - len);
		if (n <= 0) /* EIO: the last holder of the other side closed it */
			break;
		len += (size_t)n;
		cr_assert_lt(len, sizeof out - 1, "too much on the terminal");
	}
	out[len] = 0;
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "wsprof report summary: status %d", status);

	const char *bar = "\rwsprof: reading t.wsp  ";
	cr_expect_eq(strncmp(out, bar, strlen(bar)), 0, "the terminal got:\n%s", out);
	cr_expect(strstr(out, " MB/s\033[K"), "no rate on the terminal:\n%s", out);
	cr_expect(len >= 4 && !strcmp(out + len - 4, "\r\033[K"), "the bar is not erased at the end:\n%s", out);
	cr_expect(!strchr(out, '\n'), "more than the bar's line on the terminal:\n%s", out);
	close(master);
	free(fifo);
}

Test(progress, a_slow_read_into_a_file_prints_nothing_new)
{
	char *fifo = make_fifo();
	struct wt_proc p;
	cr_assert_eq(wt_spawn(&p, (const char *[]){ wt_wsprof(), "report", "summary", fifo, NULL }), 0);
	feed(fifo);
	struct wt_result r;
	cr_assert_eq(wt_wait(&p, &r), 0);
	wt_assert_status(&r, 0, "report summary");
	cr_expect_str_eq(r.err, "", "stderr is not a terminal, yet:\n%s", r.err);
	cr_expect(strstr(r.out, "wsprof summary of"), "%s", r.out);
	wt_result_free(&r);
	free(fifo);
}
