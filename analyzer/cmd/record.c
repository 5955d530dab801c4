/*
 * record.c - `wsprof record`: run a program with libwsprof.so preloaded.
 *
 * Settings travel to the preload library as WSPROF_* environment
 * variables; the library lists every trace it writes (one per process:
 * forked children and exec'd programs get their own) in a manifest file,
 * which is how this command can say where the traces are. The exit status
 * is the program's, or 128+signal if it was killed. A program the loader
 * will not preload into (set-ID, file capabilities) still runs, as asked,
 * with one line saying it is not traced.
 *
 * `-o FILE` never replaces a file, and refuses to run the program when
 * FILE is already there, unless it is one of many started at once that
 * share the name: a rank of a parallel job (src/launch.h), or a trace some
 * process is writing right now (it holds a lock on it). Each such process
 * records under a name of its own, which the end of the run says.
 */
#include "analyzer.h"
#include "recorder.h"
#include "commands.h"
#include "config.h"
#include "launch.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

/* The program, once started; 0 before (and in the child until it execs). */
static volatile sig_atomic_t child_pid;

/* SIGINT, SIGQUIT, SIGHUP and SIGTERM sent to wsprof alone (kill, a job
 * runner's timeout: si_code SI_USER, SI_QUEUE, SI_TKILL) are the
 * program's: passed on, and wsprof waits for it to end. The terminal's
 * (si_code SI_KERNEL) already reach the program, which is in the same
 * foreground process group, and are not sent twice. */
static void pass_on(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int saved = errno;
	if (child_pid > 0 && si->si_code <= 0)
		kill((pid_t)child_pid, sig);
	errno = saved;
}

static void pass_signals_on(void)
{
	static const int sigs[] = { SIGINT, SIGQUIT, SIGHUP, SIGTERM };
	struct sigaction sa = { .sa_sigaction = pass_on, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
		sigaction(sigs[i], &sa, NULL);
}

static void usage(FILE *out)
{
	fputs("usage: wsprof record [-o FILE] [--no-follow] [--follow PATTERN]... [--stack-depth N] [--flush-ms N]\n"
	      "                     [--sample-bytes N] [--python-objects] [--no-python] [--paused]\n"
	      "                     [--toggle-signal SIG] [--] PROGRAM [ARGS...]\n"
	      "  -o, --output FILE   trace file (default wsprof.PROGRAM.PID.wsp; %p = pid, %e = program name,\n"
	      "                      %r = rank in a parallel job, p and the pid without one)\n"
	      "      --no-follow     do not trace forked children and exec'd programs (WSPROF_FOLLOW=0)\n"
	      "      --follow PATTERN  trace only the processes whose program matches PATTERN (fnmatch, as\n"
	      "                      cc1 or 'python3*', on the name of the file exec'd or of the executable\n"
	      "                      running it, or on their paths when PATTERN has a '/'); the others run\n"
	      "                      untraced, their children still followed. Repeatable\n"
	      "                      (WSPROF_FOLLOW_PATTERN, patterns separated by ':')\n"
	      "      --stack-depth N frames per call stack, 1..256 (default 64)\n"
	      "      --flush-ms N    write what was recorded at least every N ms (default 200)\n"
	      "      --sample-bytes N  record one heap allocation in about every N bytes allocated, as\n"
	      "                      tcmalloc and jemalloc sample (524288 is jemalloc's rate), 1..1073741824;\n"
	      "                      the reports' heap figures are then estimates (WSPROF_SAMPLE_BYTES)\n"
	      "      --python-objects  a CPython 3.11+ program: record each object of 512 bytes or less\n"
	      "                      (a pool block inside pymalloc's arenas), not only the arenas, at a\n"
	      "                      cost for every object made (WSPROF_PYTHON_OBJECTS=1)\n"
	      "      --no-python     record native stacks only, without the Python frames of a CPython\n"
	      "                      3.11+ program (WSPROF_PYTHON=0)\n"
	      "      --paused        start with recording off: no allocation is recorded until the\n"
	      "                      program calls wsprof_start() (include/wsprof.h) or gets the toggle\n"
	      "                      signal; frees are always recorded (WSPROF_START=paused)\n"
	      "      --toggle-signal SIG  the signal SIG (USR2, SIGUSR2 or a number) turns recording on and\n"
	      "                      off; it is wsprof's then, the program's own handler for it is not\n"
	      "                      installed (WSPROF_TOGGLE_SIGNAL)\n"
	      "environment: WSPROF_PRELOAD names the preload library to use instead of the one found\n"
	      "next to this program. NVTX_INJECTION64_PATH is set to it too, so NVTX memory heaps and\n"
	      "ranges reach wsprof, unless it is already set (another NVTX tool keeps it).\n"
	      "A process's rank in a parallel job (%r, and in its trace) comes from the first of: OpenMPI\n"
	      "(OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_MCA_ess_base_jobid), PMIx (PMIX_RANK,\n"
	      "PMIX_SIZE, PMIX_NAMESPACE), MPICH/Hydra (PMI_RANK, PMI_SIZE, PMI_JOBID), Slurm\n"
	      "(SLURM_PROCID, SLURM_NTASKS or SLURM_NPROCS, SLURM_JOB_ID.SLURM_STEP_ID). Ranks started\n"
	      "at once with one -o FILE each record to a name of their own (FILE.PID), said at the end.\n", out);
}

static bool is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

bool wsp_find_beside_self(const char *name, const char *build_dir, char out[PATH_MAX])
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return false;
	self[n] = 0;
	char *slash = strrchr(self, '/');
	*slash = 0;
	const char *dirs[] = { build_dir, WSPROF_PRELOAD_FROM_BINDIR };
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
		char try[PATH_MAX * 2];
		snprintf(try, sizeof try, "%s/%s/%s", self, dirs[i], name);
		if (is_file(try) && realpath(try, out))
			return true;
	}
	fprintf(stderr, "wsprof: cannot find %s next to %s (looked in %s and %s)", name, self, build_dir,
		WSPROF_PRELOAD_FROM_BINDIR);
	return false;
}

/* The preload library: $WSPROF_PRELOAD, the build tree, or the install prefix. */
bool wsp_find_preload(char out[PATH_MAX])
{
	const char *env = getenv("WSPROF_PRELOAD");
	if (env && *env) {
		if (!realpath(env, out) || !is_file(out)) {
			fprintf(stderr, "wsprof: WSPROF_PRELOAD=%s is not a file: point it at libwsprof.so\n", env);
			return false;
		}
		return true;
	}
	if (wsp_find_beside_self(WSPROF_PRELOAD_NAME, "../preload", out))
		return true;
	fprintf(stderr, "; set WSPROF_PRELOAD to its path\n");
	return false;
}

/* Resolve PROGRAM the way execvp will, to check it before running. */
static bool find_program(const char *prog, char *out, size_t cap)
{
	if (strchr(prog, '/')) {
		snprintf(out, cap, "%s", prog);
		return access(out, X_OK) == 0;
	}
	const char *path = getenv("PATH");
	for (const char *s = path ? path : "/usr/bin:/bin"; *s;) {
		size_t len = strcspn(s, ":");
		snprintf(out, cap, "%.*s/%s", (int)len, len ? s : ".", prog);
		if (access(out, X_OK) == 0 && is_file(out))
			return true;
		s += len + (s[len] == ':');
	}
	return false;
}

/* Whether the kernel will run prog in secure-execution mode for us
 * (AT_SECURE), in which the loader ignores LD_PRELOAD: set-user-ID to
 * another user, set-group-ID to another group, or file capabilities for a
 * user other than root. Not where the kernel ignores those bits (a nosuid
 * mount, no_new_privs). why gets what makes it so. */
static bool secure_exec(const char *prog, char *why, size_t cap)
{
	struct stat st;
	struct statvfs vfs;
	if (stat(prog, &st) != 0 || (statvfs(prog, &vfs) == 0 && (vfs.f_flag & ST_NOSUID)) ||
	    prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1)
		return false;
	if ((st.st_mode & S_ISUID) && st.st_uid != getuid())
		snprintf(why, cap, "is set-user-ID (it runs as uid %u)", (unsigned)st.st_uid);
	else if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != getgid())
		snprintf(why, cap, "is set-group-ID (it runs as gid %u)", (unsigned)st.st_gid);
	else if (getuid() != 0 && getxattr(prog, "security.capability", NULL, 0) > 0)
		snprintf(why, cap, "has file capabilities");
	else
		return false;
	return true;
}

/* An ELF executable without an interpreter (static, static-pie): no
 * loader runs in it, so nothing preloads. A script or an unreadable file
 * is not judged here. */
static bool statically_linked(const char *prog)
{
	int fd = open(prog, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	Elf64_Ehdr eh;
	bool is_static = false;
	if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 4096) {
		is_static = true;
		for (unsigned i = 0; i < eh.e_phnum && is_static; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph ||
			    ph.p_type == PT_INTERP)
				is_static = false;
		}
	}
	close(fd);
	return is_static;
}

static bool set_number(const char *name, const char *value, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long v = strtoul(value, &end, 10);
	if (*value == '-' || *end || v < lo || v > hi) {
		fprintf(stderr, "wsprof: %s must be a whole number from %u to %u, not '%s'\n",
			name, lo, hi, value);
		return false;
	}
	return true;
}

/* Say where the traces are. The program's own trace is the last one its
 * pid wrote: a launcher that execs the real program (a shell script, a
 * version shim) writes one per image. output: the file -o named (absolute),
 * NULL for none or a pattern; follow: the --follow patterns, "" none. */
static void report_traces(const char *manifest, pid_t root, bool said_untraced, const char *output, const char *follow)
{
	FILE *f = fopen(manifest, "r");
	char line[PATH_MAX + 32], main_trace[PATH_MAX] = "", first[PATH_MAX] = "", dir[PATH_MAX] = "";
	int count = 0, shown = 0;
	bool root_got_output = false, one_dir = true;
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = 0;
		if (!count++)
			snprintf(first, sizeof first, "%s", tab + 1);
		/* The traces' directory, when they share one: a job's reports read it whole. */
		const char *slash = strrchr(tab + 1, '/');
		size_t len = slash ? (size_t)(slash - (tab + 1)) : 0;
		if (count == 1)
			snprintf(dir, sizeof dir, "%.*s", (int)len, tab + 1);
		else if (strlen(dir) != len || strncmp(dir, tab + 1, len))
			one_dir = false;
		if (atoi(line) == root) {
			snprintf(main_trace, sizeof main_trace, "%s", tab + 1);
			root_got_output |= output && strcmp(tab + 1, output) == 0;
		} else if (shown++ < 4) {
			fprintf(stderr, "wsprof: trace of child pid %s: %s\n", line, tab + 1);
		}
	}
	if (f)
		fclose(f);
	if (shown > 4)
		fprintf(stderr, "wsprof: ... and %d more traces of child processes\n", shown - 4);
	if (!count && said_untraced)
		return;
	if (!count && follow[0]) {
		fprintf(stderr, "wsprof: no process's program matched --follow %s, so no trace was written\n", follow);
		return;
	}
	if (!count) {
		fprintf(stderr, "wsprof: no trace was written: the program may be statically linked or setuid "
			"(the loader then ignores LD_PRELOAD), or the output directory is not writable\n");
		return;
	}
	if (main_trace[0]) {
		if (output && !root_got_output)
			fprintf(stderr, "wsprof: %s is another process's trace; this program's has a name of its own:\n",
				output);
		fprintf(stderr, "wsprof: trace of the program (pid %d): %s\n"
			"wsprof: see it with: wsprof report summary %s\n", (int)root, main_trace, main_trace);
	} else if (follow[0]) {
		fprintf(stderr, "wsprof: the program (pid %d) did not match --follow %s, so it has no trace; "
			"%d process%s did\nwsprof: see one with: wsprof report summary %s\n", (int)root, follow, count,
			count == 1 ? "" : "es", first);
	}
	if (count > 1 && one_dir && dir[0])
		fprintf(stderr, "wsprof: all %d as one job: wsprof report summary %s (every trace in that directory)\n", count,
			dir);
}

/* Whether FILE, already there, is one of many processes' started at once:
 * this one is a rank of a parallel job, or some process is writing that
 * trace right now (the recorder holds a lock on it while it writes). */
static bool name_shared(const char *file)
{
	struct wsp_launch job;
	wsp_launch_from_env(&job);
	if (job.rank >= 0)
		return true;
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return false;
	bool busy = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	close(fd);
	return busy;
}

/* Add --follow's pattern to the list for WSPROF_FOLLOW_PATTERN. */
static bool add_follow(char *list, size_t cap, const char *pattern)
{
	size_t used = strlen(list);
	if (!*pattern || strchr(pattern, ':')) {
		fprintf(stderr, "wsprof: --follow needs a pattern without ':' (it separates patterns in "
			"WSPROF_FOLLOW_PATTERN), not '%s'\n", pattern);
		return false;
	}
	if (used + strlen(pattern) + 2 > cap) {
		fprintf(stderr, "wsprof: --follow patterns longer than %zu bytes in all\n", cap - 1);
		return false;
	}
	snprintf(list + used, cap - used, "%s%s", used ? ":" : "", pattern);
	return true;
}

int wsp_cmd_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "no-follow", no_argument, NULL, 'F' },
		{ "follow", required_argument, NULL, 'w' },
		{ "stack-depth", required_argument, NULL, 'd' },
		{ "flush-ms", required_argument, NULL, 'f' },
		{ "sample-bytes", required_argument, NULL, 's' },
		{ "python-objects", no_argument, NULL, 'P' },
		{ "no-python", no_argument, NULL, 'N' },
		{ "paused", no_argument, NULL, 'S' },
		{ "toggle-signal", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *output = NULL;
	static char follow[4096]; /* the preload library's limit (wsp_cfg.follow_pattern) */
	follow[0] = 0;
	int o;
	optind = 1;
	while ((o = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
		switch (o) {
		case 'o': output = optarg; break;
		case 'F': setenv("WSPROF_FOLLOW", "0", 1); break;
		case 'w':
			if (!add_follow(follow, sizeof follow, optarg))
				return 2;
			break;
		case 'd':
			if (!set_number("--stack-depth", optarg, 1, 256))
				return 2;
			setenv("WSPROF_STACK_DEPTH", optarg, 1);
			break;
		case 'f':
			if (!set_number("--flush-ms", optarg, 1, 60000))
				return 2;
			setenv("WSPROF_FLUSH_MS", optarg, 1);
			break;
		case 's':
			if (!set_number("--sample-bytes", optarg, 1, 1u << 30))
				return 2;
			setenv("WSPROF_SAMPLE_BYTES", optarg, 1);
			break;
		case 'P': setenv("WSPROF_PYTHON_OBJECTS", "1", 1); break;
		case 'N': setenv("WSPROF_PYTHON", "0", 1); break;
		case 'S': setenv("WSPROF_START", "paused", 1); break;
		case 'T': setenv("WSPROF_TOGGLE_SIGNAL", optarg, 1); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "wsprof: record needs a program to run\n");
		usage(stderr);
		return 2;
	}
	char preload[PATH_MAX], prog[PATH_MAX];
	if (!wsp_find_preload(preload))
		return 1;
	if (!find_program(argv[optind], prog, sizeof prog)) {
		fprintf(stderr, "wsprof: cannot run %s: not found or not executable\n", argv[optind]);
		return 127;
	}
	if (follow[0])
		setenv("WSPROF_FOLLOW_PATTERN", follow, 1);
	else if (getenv("WSPROF_FOLLOW_PATTERN"))
		snprintf(follow, sizeof follow, "%s", getenv("WSPROF_FOLLOW_PATTERN"));
	char cwd[PATH_MAX], pattern[PATH_MAX * 2];
	if (!getcwd(cwd, sizeof cwd))
		snprintf(cwd, sizeof cwd, ".");
	if (output) {
		if (access(output, F_OK) == 0 && !name_shared(output)) {
			fprintf(stderr, "wsprof: %s already exists; remove it or pick another name with -o\n", output);
			return 1;
		}
		snprintf(pattern, sizeof pattern, "%s%s%s", output[0] == '/' ? "" : cwd, output[0] == '/' ? "" : "/", output);
	} else {
		snprintf(pattern, sizeof pattern, "%s/wsprof.%%e.%%p.wsp", cwd);
	}
	setenv("WSPROF_OUTPUT", pattern, 1);

	char manifest[] = "/tmp/wsprof-manifest-XXXXXX";
	int mfd = mkstemp(manifest);
	if (mfd < 0) {
		fprintf(stderr, "wsprof: cannot create a temporary file in /tmp: %s\n", strerror(errno));
		return 1;
	}
	close(mfd);
	setenv("WSPROF_MANIFEST", manifest, 1);

	const char *old = getenv("LD_PRELOAD");
	char *ld = malloc(strlen(preload) + (old ? strlen(old) : 0) + 2);
	sprintf(ld, "%s%s%s", preload, old && *old ? ":" : "", old && *old ? old : "");
	setenv("LD_PRELOAD", ld, 1);
	free(ld);
	/* NVTX loads one tool, named here; one the user chose (Nsight) wins. */
	const char *nvtx = getenv("NVTX_INJECTION64_PATH");
	if (nvtx && *nvtx)
		fprintf(stderr, "wsprof: NVTX_INJECTION64_PATH is already set (%s); NVTX pools and ranges go to that tool, "
			"not to wsprof\n", nvtx);
	else
		setenv("NVTX_INJECTION64_PATH", preload, 1);

	char why[96];
	bool untraced = secure_exec(prog, why, sizeof why);
	if (!untraced && statically_linked(prog)) {
		snprintf(why, sizeof why, "is statically linked");
		fprintf(stderr, "wsprof: %s %s: no dynamic loader runs in it to preload wsprof, so it runs untraced\n",
			prog, why);
		untraced = true;
	} else if (untraced) {
		fprintf(stderr, "wsprof: %s %s: the loader ignores LD_PRELOAD for it, so it runs untraced "
			"(to trace it, record a copy without the set-ID bit or capabilities)\n", prog, why);
	}
	/* Handlers before the fork, so no signal falls between; exec resets
	 * them in the program. */
	pass_signals_on();
	bool rescue = !untraced && wsp_rescue_listen();
	pid_t parent = getpid(), pid = fork();
	if (pid < 0) {
		fprintf(stderr, "wsprof: cannot fork: %s\n", strerror(errno));
		unlink(manifest);
		return 1;
	}
	if (pid == 0) {
		/* Never left running after wsprof: killed with it, even by SIGKILL. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(128 + SIGKILL);
		wsp_rescue_in_child();
		execv(prog, argv + optind);
		fprintf(stderr, "wsprof: cannot run %s: %s\n", prog, strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	wsp_rescue_program(pid);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (rescue)
		wsp_rescue_done(pid, status);
	report_traces(manifest, pid, untraced, output && !strchr(output, '%') ? pattern : NULL, follow);
	unlink(manifest);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "wsprof: %s was killed by signal %d\n", argv[optind], WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}
