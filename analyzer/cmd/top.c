/*
 * top.c - `wsprof top TRACE`: a trace followed while it is written (by
 * `wsprof record` or a process it runs, here or in another terminal),
 * redrawn in the terminal every second: how long the program has run,
 * each kind's live bytes and peak, the device's free memory, the call
 * sites holding the most, and the rate of allocations. The trace is read
 * live (wsprof_trace_open_live): each redraw reads only what was appended
 * since the last, into one model kept for the whole run. It quits when
 * the trace ends (its footer, or an exec), when the program is gone
 * without one, or on q. The command reads and keeps the terminal;
 * text/top.c prints each screen.
 */
#include "commands.h"

#include "cli.h"
#include "compute.h"
#include "text.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define SITES_SHOWN 10

struct top_options {
	double interval_s;
	size_t sites;
	unsigned kind;
};

static void usage(FILE *out)
{
	fputs("usage: wsprof top [--interval SECONDS] [--top N] [--kind KIND] TRACE\n"
	      "  follow a trace while it is being written (by wsprof record, perhaps in another terminal),\n"
	      "  redrawn every second: time, live bytes and peak per kind, device free memory, the call\n"
	      "  sites holding the most, the rate of allocations. Quits when the trace ends, or on q.\n"
	      "  --interval S  seconds between redraws (default 1)\n"
	      "  --top N       call sites shown (default 10)\n"
	      "  --kind KIND   the kind whose call sites are shown (default heap)\n", out);
}

static int top_option(void *ctx, int val, const char *arg)
{
	struct top_options *o = ctx;
	char *end;
	if (val == 'i') {
		double v = strtod(arg, &end);
		if (*end || !(v >= 0.05 && v <= 3600)) {
			fprintf(stderr, "wsprof: --interval wants seconds between 0.05 and 3600, not '%s'\n", arg);
			return 2;
		}
		o->interval_s = v;
		return 0;
	}
	unsigned long n = strtoul(arg, &end, 10);
	if (*arg == '-' || !*arg || *end || n > 1000) {
		fprintf(stderr, "wsprof: --top wants a whole number up to 1000, not '%s'\n", arg);
		return 2;
	}
	o->sites = n;
	return 0;
}

/* ---- The terminal ------------------------------------------------------ */

static struct termios saved;
static bool raw_mode;
static volatile sig_atomic_t stop_signal;

static void restore_terminal(void)
{
	if (raw_mode)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	raw_mode = false;
}

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* Keys without Enter and without echo, when stdin is a terminal. */
static void keys_raw(void)
{
	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved))
		return;
	struct termios t = saved;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	raw_mode = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
	atexit(restore_terminal);
}

/* Wait up to ms for a key: true when it was q (or the input ended). */
static bool wait_for_quit(int ms)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	int64_t deadline = ms;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop_signal) {
		int r = poll(&p, 1, (int)deadline);
		if (r < 0 && errno != EINTR)
			return false;
		if (r > 0) {
			char c;
			ssize_t n = read(STDIN_FILENO, &c, 1);
			if (n == 1 && (c == 'q' || c == 'Q'))
				return true;
			if (n == 0 && raw_mode)
				return true;
			if (n <= 0)
				p.fd = -1; /* not a terminal, and nothing to read: only the time counts */
		}
		struct timespec t1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		int64_t spent = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
		if (spent >= ms)
			return false;
		deadline = ms - spent;
	}
	return true;
}

/* ---- Reading what was appended ------------------------------------------ */

struct follow {
	struct wsp_loaded l;
	bool ended;       /* the footer (or an exec) was read */
	int error;        /* reading stopped at damage */
	uint64_t last_ns; /* the newest event's time */
	uint64_t allocs_then, then_ns;
	double rate;      /* allocations a second over the last interval */
};

/* Everything readable now, into the model. @return 0 or an exit status. */
static int read_more(struct follow *f)
{
	wsprof_event ev;
	int r;
	while ((r = wsprof_trace_next(f->l.trace, &ev)) > 0) {
		if (wsp_loaded_apply(&f->l, &ev) < 0) {
			fprintf(stderr, "wsprof: out of memory\n");
			return 1;
		}
		if (ev.time_ns > f->last_ns)
			f->last_ns = ev.time_ns;
	}
	if (r == 0)
		f->ended = true;
	else if (r != WSPROF_E_AGAIN)
		f->error = r;
	return 0;
}

static uint64_t all_allocations(const struct wsp_model *m)
{
	uint64_t n = 0;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++)
		if (!wsp_kind_is_address_space(k))
			n += wsp_model_kind(m, k)->allocations;
	return n;
}

/* ---- The command ---------------------------------------------------------- */

/* Open the trace live, waiting a little for a header still being written. */
static int open_live(const char *path, wsprof_trace **t)
{
	int err = 0;
	for (int tries = 0; tries < 50 && !stop_signal; tries++) {
		err = wsprof_trace_open_live(path, t);
		if (err != WSPROF_E_EMPTY && err != WSPROF_E_TRUNCATED)
			break;
		wait_for_quit(100);
	}
	if (err)
		fprintf(stderr, "wsprof: %s: %s\n", path, wsprof_strerror(err));
	return err ? 1 : 0;
}

int wsp_cmd_top(int argc, char **argv)
{
	static const struct wsp_cli_option own[] = {
		{ "interval", required_argument, 0, 'i' },
		{ "top", required_argument, 0, 't' },
		{ 0 },
	};
	struct top_options o = { .interval_s = 1, .sites = SITES_SHOWN, .kind = WSPROF_KIND_HEAP };
	struct wsp_cli cli;
	int rc = wsp_cli_parse(argc, argv, WSP_CLI_KIND, own, top_option, &o, usage, &cli);
	if (rc >= 0)
		return rc;
	if (cli.kind >= 0)
		o.kind = (unsigned)cli.kind;
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	struct follow f = { .l.path = cli.trace };
	if (open_live(cli.trace, &f.l.trace))
		return 1;
	struct wsp_model_options mo = { .per_stack = true, .sample_bytes = wsprof_trace_process(f.l.trace)->sample_bytes };
	f.l.model = wsp_model_new(&mo);
	f.l.syms = wsp_syms_new(NULL, wsp_load_stacks());
	if (!f.l.model || !f.l.syms) {
		fprintf(stderr, "wsprof: out of memory\n");
		wsp_loaded_free(&f.l);
		return 1;
	}
	wsp_syms_cache(f.l.syms, cli.trace);
	bool tty = isatty(STDOUT_FILENO);
	keys_raw();
	uint32_t pid = wsprof_trace_process(f.l.trace)->pid;
	int quiet_rounds = 0;
	for (;;) {
		if ((rc = read_more(&f)))
			break;
		uint64_t allocs = all_allocations(f.l.model);
		if (f.last_ns > f.then_ns)
			f.rate = (double)(allocs - f.allocs_then) * 1e9 / (double)(f.last_ns - f.then_ns);
		f.allocs_then = allocs;
		f.then_ns = f.last_ns;
		struct wsp_top_view view = { .last_ns = f.last_ns, .rate = f.rate, .ended = f.ended, .error = f.error,
					     .kind = o.kind, .sites = o.sites };
		struct wsp_site_row *rows, *shown = NULL;
		if (o.sites && f.l.syms && !wsp_callsites_rows(&f.l, o.kind, "leaked", &rows, &view.nrows))
			view.rows = shown = rows;
		wsp_top_print(&f.l, &view, tty);
		free(shown);
		if (f.ended || f.error)
			break;
		/* A program gone without finishing its trace (killed, and no
		 * wsprof record to finish it) writes no more: after a few quiet
		 * rounds, stop. */
		bool gone = kill((pid_t)pid, 0) != 0 && errno == ESRCH;
		quiet_rounds = gone ? quiet_rounds + 1 : 0;
		if (quiet_rounds > 3) {
			wsp_top_print_gone(pid);
			break;
		}
		if (wait_for_quit((int)(o.interval_s * 1000)))
			break;
	}
	restore_terminal();
	wsp_loaded_free(&f.l);
	return rc;
}
