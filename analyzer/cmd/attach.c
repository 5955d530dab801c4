/*
 * attach.c - `wsprof attach [-o FILE] [--duration SECONDS] PID`: record a
 * process that is already running, from now until the duration ends,
 * Ctrl-C (or SIGTERM), or the program exits.
 *
 * The process is stopped with ptrace for two calls made on its main
 * thread, as a debugger's `call` does: dlopen(libwsprof.so) (in libc since
 * glibc 2.34), then wsprof_attach_begin(trace, fifo), which redirects the
 * program's allocation calls to the recorder (preload/life/attach.c).
 * Only the general and SSE registers are saved and restored around them
 * (gdb's inferior calls also write the extended state, which some kernels
 * refuse); a thread stopped outside a system call is let go and tried
 * again, so the calls rarely land inside the program's own allocator. The
 * end is a FIFO: the library watches it, and when this command closes it
 * (or dies) recording ends, the program's calls go back where they went,
 * the trace is finished and the FIFO removed, which this command waits
 * for. The library stays loaded, idle; a later attach starts a new trace.
 *
 * x86-64 only. Refuses, in one line saying what to do: ptrace forbidden
 * (kernel.yama.ptrace_scope; WSPROF_TEST_YAMA_SCOPE_FILE names the file to
 * read instead, for tests), a process that is not there or not ours, a
 * set-ID program, a statically linked one (no loader to dlopen with), one
 * with another C library than ours, one wsprof records already.
 */
#include "analyzer.h"
#include "recorder.h"
#include "commands.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <sys/ptrace.h>
#include <sys/user.h>
#endif

#define REFUSED 1

static int refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int refuse(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("wsprof: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return REFUSED;
}

static void usage(FILE *out)
{
	fputs("usage: wsprof attach [-o FILE] [--duration SECONDS] PID\n"
	      "Record the process PID, already running, from now until SECONDS have passed, Ctrl-C, or the\n"
	      "program exits; then leave it running as before (wsprof's library stays loaded, idle).\n"
	      "Only what is allocated from now on is in the trace: frees of older blocks count as\n"
	      "untracked frees. Needs ptrace (kernel.yama.ptrace_scope 0, or root); x86-64 only.\n"
	      "  -o, --output FILE     trace file (default wsprof.PROGRAM.PID.wsp, numbered if it exists)\n"
	      "      --duration SECONDS  stop recording after SECONDS (default: at Ctrl-C)\n", out);
}

/* ---- what may be attached to ------------------------------------------ */

static int yama_check(void)
{
	const char *file = getenv("WSPROF_TEST_YAMA_SCOPE_FILE");
	FILE *f = fopen(file && *file ? file : "/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = 0;
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	bool root = geteuid() == 0;
	if (scope >= 3)
		return refuse("ptrace is disabled on this system (kernel.yama.ptrace_scope = 3, until a reboot): "
			      "record the program from its start with wsprof record");
	if (scope == 2 && !root)
		return refuse("attaching needs CAP_SYS_PTRACE here (kernel.yama.ptrace_scope = 2): run wsprof attach as root");
	if (scope == 1 && !root)
		return refuse("only a process's ancestors may ptrace it here (kernel.yama.ptrace_scope = 1): run "
			      "'sudo sysctl kernel.yama.ptrace_scope=0', or wsprof attach as root");
	return 0;
}

/* A line "Key:\tv1\tv2..." of /proc/PID/status. */
static bool status_ids(pid_t pid, const char *key, long ids[4])
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	bool found = false;
	size_t klen = strlen(key);
	while (f && !found && fgets(line, sizeof line, f))
		found = !strncmp(line, key, klen) && line[klen] == ':' &&
			sscanf(line + klen + 1, "%ld %ld %ld %ld", &ids[0], &ids[1], &ids[2], &ids[3]) == 4;
	if (f)
		fclose(f);
	return found;
}

static bool alive(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *close_paren = strrchr(buf, ')');
	return close_paren && close_paren[1] == ' ' && close_paren[2] != 'Z' && close_paren[2] != 'X';
}

static int process_check(pid_t pid)
{
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return refuse("no process %d", (int)pid);
	long uid[4], gid[4];
	if (!status_ids(pid, "Uid", uid) || !status_ids(pid, "Gid", gid))
		return refuse("cannot read /proc/%d/status: %s", (int)pid, strerror(errno));
	if (uid[0] != uid[1] || uid[0] != uid[2] || gid[0] != gid[1] || gid[0] != gid[2])
		return refuse("process %d runs a set-ID program: it cannot be attached to (record it with wsprof record)",
			      (int)pid);
	if (geteuid() != 0 && (uid_t)uid[0] != geteuid())
		return refuse("process %d is not yours: attach as its user, or as root", (int)pid);
	return 0;
}

/* The file holding `local` (in this process) is mapped in the process at:
 * the address of `local` there, 0 if it is not. By device and inode, as
 * paths may differ (/lib and /usr/lib). */
static uint64_t remote_address(pid_t pid, const void *local)
{
	Dl_info info;
	struct stat st;
	if (!dladdr(local, &info) || !info.dli_fname || stat(info.dli_fname, &st) != 0)
		return 0;
	char path[64], line[PATH_MAX + 256];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	uint64_t found = 0;
	while (f && !found && fgets(line, sizeof line, f)) {
		unsigned long long lo, off, ino;
		unsigned maj, min;
		if (sscanf(line, "%llx-%*x %*s %llx %x:%x %llu", &lo, &off, &maj, &min, &ino) == 5 && off == 0 &&
		    ino == st.st_ino && maj == major(st.st_dev) && min == minor(st.st_dev))
			found = lo + ((uintptr_t)local - (uintptr_t)info.dli_fbase);
	}
	if (f)
		fclose(f);
	return found;
}

static bool maps_hold(pid_t pid, const char *what)
{
	char path[64], line[PATH_MAX + 256];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	bool found = false;
	while (f && !found && fgets(line, sizeof line, f))
		found = strstr(line, what) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* Started under wsprof record (or LD_PRELOAD): recording from its start. */
static bool preloaded(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char var[8192];
	bool found = false;
	size_t n;
	while (!found && (n = fread(var, 1, sizeof var - 1, f)) > 0) {
		var[n] = 0;
		for (size_t i = 0; i < n && !found; i += strlen(var + i) + 1)
			found = !strncmp(var + i, "LD_PRELOAD=", 11) && strstr(var + i, "libwsprof");
	}
	fclose(f);
	return found;
}

/* ---- the trace's name -------------------------------------------------- */

static bool trace_path(pid_t pid, const char *output, char out[PATH_MAX])
{
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return false;
	if (output) {
		int n = snprintf(out, PATH_MAX, "%s%s%s", output[0] == '/' ? "" : cwd, output[0] == '/' ? "" : "/", output);
		if (n >= PATH_MAX || access(out, F_OK) == 0) {
			refuse("%s exists: choose another -o", output);
			return false;
		}
		return true;
	}
	char exe[PATH_MAX], link[64];
	snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
	ssize_t len = readlink(link, exe, sizeof exe - 1);
	exe[len > 0 ? len : 0] = 0;
	const char *name = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : "program";
	for (int i = 1; i < 1000; i++) {
		int n = i == 1 ? snprintf(out, PATH_MAX, "%s/wsprof.%s.%d.wsp", cwd, name, (int)pid)
			       : snprintf(out, PATH_MAX, "%s/wsprof.%s.%d.%d.wsp", cwd, name, (int)pid, i);
		if (n < PATH_MAX && access(out, F_OK) != 0)
			return true;
	}
	return false;
}

/* The library reads its output as a pattern (%p, %e): a literal path. */
static void as_pattern(const char *path, char *out, size_t cap)
{
	size_t k = 0;
	for (const char *s = path; *s && k + 2 < cap; s++) {
		if (*s == '%')
			out[k++] = '%';
		out[k++] = *s;
	}
	out[k] = 0;
}

/* ---- the calls, made with ptrace --------------------------------------- */

#if defined(__x86_64__)

static bool poke(pid_t pid, uint64_t addr, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i += sizeof(long)) {
		long word = 0;
		if (len - i < sizeof(long)) {
			errno = 0;
			word = ptrace(PTRACE_PEEKDATA, pid, (void *)(addr + i), NULL);
			if (errno)
				return false;
		}
		memcpy(&word, p + i, len - i < sizeof(long) ? len - i : sizeof(long));
		if (ptrace(PTRACE_POKEDATA, pid, (void *)(addr + i), (void *)word) != 0)
			return false;
	}
	return true;
}

struct tracee {
	pid_t pid;
	struct user_regs_struct regs;
	struct user_fpregs_struct fp;
	bool have_fp;
	int pending; /* a signal that arrived meanwhile, delivered at the end */
	uint64_t strings; /* where the next string goes, below the thread's stack */
};

static bool wait_stop(struct tracee *t, int *sig)
{
	int st;
	while (waitpid(t->pid, &st, __WALL) < 0)
		if (errno != EINTR)
			return false;
	if (!WIFSTOPPED(st))
		return false;
	*sig = WSTOPSIG(st);
	return true;
}

/* Stop the main thread, where it is in a system call if it can be had
 * there. */
static int stop_tracee(struct tracee *t)
{
	for (int tries = 0;; tries++) {
		if (ptrace(PTRACE_ATTACH, t->pid, NULL, NULL) != 0)
			return refuse("cannot ptrace process %d: %s (kernel.yama.ptrace_scope, or run as root)", (int)t->pid,
				      strerror(errno));
		int sig;
		while (wait_stop(t, &sig) && sig != SIGSTOP)
			if (ptrace(PTRACE_CONT, t->pid, NULL, (void *)(long)sig) != 0)
				return refuse("process %d ended", (int)t->pid);
		if (ptrace(PTRACE_GETREGS, t->pid, NULL, &t->regs) != 0)
			return refuse("process %d ended", (int)t->pid);
		if ((long long)t->regs.orig_rax >= 0 || tries == 50)
			break;
		ptrace(PTRACE_DETACH, t->pid, NULL, NULL); /* busy in user code: a moment later */
		struct timespec ms = { 0, 20 * 1000000 };
		nanosleep(&ms, NULL);
	}
	t->have_fp = ptrace(PTRACE_GETFPREGS, t->pid, NULL, &t->fp) == 0;
	t->strings = (t->regs.rsp - 128 - 4096 * 3) & ~15ull; /* below the red zone */
	return 0;
}

static uint64_t put_string(struct tracee *t, const char *s)
{
	size_t n = strlen(s) + 1;
	uint64_t at = t->strings;
	if (!poke(t->pid, at, s, n))
		return 0;
	t->strings += (n + 15) & ~(size_t)15;
	return at;
}

/* fn(a0, a1) on the stopped thread, returning to address 0: the fault
 * there ends the call. @return 0 and *ret, or -1. */
static int remote_call(struct tracee *t, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t *ret)
{
	struct user_regs_struct r = t->regs;
	uint64_t sp = ((t->regs.rsp - 128 - 4096 * 4) & ~15ull) - 8, zero = 0;
	if (!poke(t->pid, sp, &zero, sizeof zero))
		return -1;
	r.rsp = sp;
	r.rip = fn;
	r.rdi = a0;
	r.rsi = a1;
	r.rax = 0;
	r.orig_rax = (unsigned long long)-1; /* not in a system call: nothing restarted */
	if (ptrace(PTRACE_SETREGS, t->pid, NULL, &r) != 0)
		return -1;
	for (;;) {
		int sig;
		if (ptrace(PTRACE_CONT, t->pid, NULL, NULL) != 0 || !wait_stop(t, &sig))
			return -1;
		if (sig == SIGSEGV && ptrace(PTRACE_GETREGS, t->pid, NULL, &r) == 0 && r.rip == 0) {
			*ret = r.rax;
			return 0;
		}
		if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL)
			return -1; /* the call itself faulted */
		if (sig != SIGSTOP)
			t->pending = sig;
	}
}

static void release_tracee(struct tracee *t)
{
	ptrace(PTRACE_SETREGS, t->pid, NULL, &t->regs);
	if (t->have_fp)
		ptrace(PTRACE_SETFPREGS, t->pid, NULL, &t->fp);
	ptrace(PTRACE_DETACH, t->pid, NULL, (void *)(long)t->pending);
}

/* dlopen(lib) and wsprof_attach_begin(pattern, fifo) in the process. */
static int inject(pid_t pid, const char *lib, const char *pattern, const char *fifo)
{
	void *self_lib = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
	void *begin = self_lib ? dlsym(self_lib, "wsprof_attach_begin") : NULL;
	if (!begin)
		return refuse("%s has no wsprof_attach_begin: %s", lib, dlerror());
	uint64_t remote_dlopen = remote_address(pid, (const void *)dlopen);
	if (!remote_dlopen)
		return refuse("process %d does not use this C library (or is statically linked): wsprof cannot be "
			      "loaded into it; record it with wsprof record", (int)pid);
	struct tracee t = { .pid = pid };
	if (stop_tracee(&t))
		return REFUSED;
	uint64_t ret = 0, at_lib = put_string(&t, lib);
	int err = at_lib && remote_call(&t, remote_dlopen, at_lib, RTLD_NOW | RTLD_GLOBAL, &ret) == 0 && ret ? 0 : -1;
	uint64_t remote_begin = err ? 0 : remote_address(pid, begin);
	uint64_t at_out = put_string(&t, pattern), at_fifo = put_string(&t, fifo);
	if (!err && remote_begin && at_out && at_fifo && remote_call(&t, remote_begin, at_out, at_fifo, &ret) == 0) {
		err = (int)ret;
	} else {
		err = -1;
	}
	release_tracee(&t);
	if (err == -EBUSY)
		return refuse("process %d is already recorded by wsprof (started under wsprof record, or attached to now)",
			      (int)pid);
	if (err)
		return refuse("could not start recording in process %d (%s)", (int)pid,
			      err == -1 ? "the call into it failed" : strerror(-err));
	return 0;
}

#endif

/* ---- recording, then its end ------------------------------------------- */

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static int record_for(pid_t pid, const char *fifo, const char *trace, double duration)
{
	int ctl = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (ctl < 0)
		return refuse("recording started in process %d, but its control FIFO cannot be opened: %s", (int)pid,
			      strerror(errno));
	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	fprintf(stderr, "wsprof: recording process %d to %s%s\n", (int)pid, trace,
		duration > 0 ? "" : " (Ctrl-C to stop)");
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop_signal && (duration <= 0 || seconds_since(&t0) < duration) && alive(pid))
		nap_ms(20);
	double took = seconds_since(&t0);
	bool exited = !alive(pid);
	close(ctl); /* the library's sign to stop */
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	while (access(fifo, F_OK) == 0 && alive(pid) && seconds_since(&t1) < 10)
		nap_ms(10);
	bool finished = access(fifo, F_OK) != 0;
	unlink(fifo);
	if (exited || !alive(pid))
		fprintf(stderr, "wsprof: process %d exited after %.1f s; its trace was finished at exit: %s\n", (int)pid,
			took, trace);
	else if (!finished)
		return refuse("process %d did not finish its trace within 10 s: %s may be incomplete", (int)pid, trace);
	else
		fprintf(stderr, "wsprof: recorded process %d for %.1f s: %s\n", (int)pid, took, trace);
	return 0;
}

int wsp_cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *output = NULL;
	double duration = 0;
	int o;
	optind = 1;
	while ((o = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
		char *end;
		switch (o) {
		case 'o': output = optarg; break;
		case 'd':
			duration = strtod(optarg, &end);
			if (*end || !(duration > 0)) {
				fprintf(stderr, "wsprof: --duration takes a number of seconds above 0, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	char *end = NULL;
	long pid = optind == argc - 1 ? strtol(argv[optind], &end, 10) : 0;
	if (!end || *end || pid <= 0 || pid > INT_MAX) {
		usage(stderr);
		return 2;
	}
#if !defined(__x86_64__)
	return refuse("wsprof attach works on x86-64 only: record the program with wsprof record");
#else
	char lib[PATH_MAX], trace[PATH_MAX], pattern[PATH_MAX * 2];
	if (yama_check() || process_check((pid_t)pid))
		return REFUSED;
	if (!maps_hold((pid_t)pid, "/ld-linux") && !maps_hold((pid_t)pid, "/libc.so"))
		return refuse("process %d is statically linked (no loader to load wsprof with): record it with wsprof record",
			      (int)pid);
	if (preloaded((pid_t)pid))
		return refuse("process %d is already recorded by wsprof (started under wsprof record)", (int)pid);
	if (!wsp_find_preload(lib) || !trace_path((pid_t)pid, output, trace))
		return REFUSED;
	as_pattern(trace, pattern, sizeof pattern);
	char dir[] = "/tmp/wsprof-attach.XXXXXX", fifo[sizeof dir + 16];
	if (!mkdtemp(dir))
		return refuse("cannot make a directory in /tmp: %s", strerror(errno));
	snprintf(fifo, sizeof fifo, "%s/control", dir);
	int r = mkfifo(fifo, 0600) != 0 ? refuse("cannot make a FIFO in %s: %s", dir, strerror(errno))
	      : inject((pid_t)pid, lib, pattern, fifo) ? REFUSED
						       : record_for((pid_t)pid, fifo, trace, duration);
	unlink(fifo);
	rmdir(dir);
	return r;
#endif
}
