/*
 * process.c - the life of a traced process: start, exit, fork, exec.
 *
 * Start happens on the first hook call or in the constructor, whichever
 * comes first. Exit writes the footer (destructor, or _exit). A forked
 * child starts its own trace (pid in the file name) or, when not following,
 * stops recording. Before exec, everything recorded is written and an EXEC
 * record ends the trace; when not following, LD_PRELOAD loses libwsprof in
 * the new program's environment. With WSPROF_FOLLOW_PATTERN, a program
 * that matches none of the patterns records nothing: it starts no thread,
 * takes no buffer, its hooks pass straight through (wsp_ready finds it
 * off), and it keeps LD_PRELOAD for its children, each of which (and each
 * program it execs) decides again as it starts.
 *
 * Reentrancy: every entry point here holds the guard while it works. A
 * vfork child shares our memory, so exec and _exit do nothing to the
 * recorder unless getpid() is the pid being traced.
 */

#include "life.h"
#include "base.h"
#include "core.h"
#include "access.h"
#include "hooks.h"
#include "python.h"
#include <dlfcn.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

_Atomic int wsp_state = WSP_UNINIT;
WSP_TLS struct wsp_tls wsp_tls;
pid_t wsp_pid;
_Atomic unsigned wsp_ending, wsp_ending_value;

void wsp_set_ending(unsigned how, unsigned value)
{
	atomic_store(&wsp_ending_value, value);
	atomic_store(&wsp_ending, how);
	wsp_rescue_set_ending(how, value);
}

/* exit(status), or a return from main: the status is what the parent
 * will see. */
static void exit_status(int status, void *arg)
{
	(void)arg;
	if (wsp_is_traced_process())
		wsp_set_ending(WSPROF_END_EXIT, (unsigned)status & 0xffu);
}

/* The exit handler is registered as main starts: libc registers the
 * loader's handler, which runs the destructors (on_unload writes the
 * footer), just before calling main, and exit handlers run last first. A
 * handler registered from our constructor would run after the footer. */
typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);
static main_fn program_main;

static int main_traced(int argc, char **argv, char **envp)
{
	on_exit(exit_status, NULL); /* glibc's first 32 handlers are static: no allocation */
	return program_main(argc, argv, envp);
}

WSPROF_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
				    void (*rtld_fini)(void), void *stack_end)
{
	start_main_fn real = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
	program_main = main;
	return real(main_traced, argc, argv, init, fini, rtld_fini, stack_end);
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Set up recording for this process image (or forked child), or from
 * the middle of its life (attached: no signal of the program's taken). */
static void start(pid_t parent_traced, bool attached)
{
	wsp_start_mono = clock_ns(CLOCK_MONOTONIC);
	wsp_start_real = clock_ns(CLOCK_REALTIME);
	wsp_pid = getpid();
	wsp_sampler_probe();
	if (wsp_writer_open(parent_traced) < 0) {
		wsp_sampler_finish();
		atomic_store(&wsp_state, WSP_OFF);
		return;
	}
	atomic_store(&wsp_state, WSP_ACTIVE);
	if (attached)
		wsp_recording_mark(true, WSPROF_REC_ATTACH);
	else if (!wsp_recording_on()) /* WSPROF_START=paused, or a child forked while off */
		wsp_recording_mark(false, WSPROF_REC_START);
	wsp_modules_on_load(wsp_python_module); /* a CPython among them: Python frames from then on */
	wsp_modules_init();
	wsp_writer_on_flush(wsp_cuda_sample);     /* device memory samples go out with each flush */
	wsp_writer_on_flush(wsp_recording_catch_up); /* a toggle by signal, while nothing else is recorded */
	wsp_writer_on_flush(wsp_tally_record);   /* a sampled heap's totals, with each flush */
	wsp_writer_on_finish(wsp_sampler_finish); /* the sampler's last windows before the footer */
	wsp_writer_on_finish(wsp_tally_record);   /* and the last totals */
	wsp_writer_start_thread();
	wsp_sampler_start();
	if (!attached)
		wsp_signals_install();
}

/* Loaded by the dynamic loader ahead of the program (LD_PRELOAD or
 * /etc/ld.so.preload), not dlopen'd by something else (NVTX injection). A
 * preloaded wsprof comes before libc in the global scope, so the global
 * "dlopen" is ours. (Looking up one of our own names would not tell: a
 * library's dlsym also searches the library's own scope.) */
static bool is_preloaded(void)
{
	/* In the first hook or the constructor, holding no wsprof lock:
	 * dlsym and dladdr take only the loader's recursive lock. */
	const char *env = getenv("LD_PRELOAD");
	if (env && strstr(env, "libwsprof"))
		return true;
	Dl_info found, self;
	void *p = dlsym(RTLD_DEFAULT, "dlopen");
	return p && dladdr(p, &found) && dladdr((void *)is_preloaded, &self) && found.dli_fbase == self.dli_fbase;
}

/* Whether pattern (a '/' in it: the whole path) matches path. Called
 * before main, in the C locale, where glibc's fnmatch allocates nothing. */
static bool path_matches(const char *pattern, const char *path)
{
	const char *base = strrchr(path, '/');
	return fnmatch(pattern, strchr(pattern, '/') || !base ? path : base + 1, 0) == 0;
}

/* Whether this program is one WSPROF_FOLLOW_PATTERN asks for (any, when
 * unset): one of its ':'-separated patterns matches the file exec'd (a
 * script's own path: AT_EXECFN) or the executable running
 * (/proc/self/exe, the interpreter of a script, links resolved). */
static bool program_followed(void)
{
	const char *patterns = wsp_cfg.follow_pattern;
	if (!patterns[0])
		return true;
	static char exe[4096], one[sizeof wsp_cfg.follow_pattern]; /* one thread starts */
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = 0;
	const char *execfn = (const char *)getauxval(AT_EXECFN);
	for (const char *s = patterns; *s;) {
		size_t len = strcspn(s, ":");
		memcpy(one, s, len);
		one[len] = 0;
		if (len && ((execfn && path_matches(one, execfn)) || path_matches(one, exe)))
			return true;
		s += len + (s[len] == ':');
	}
	return false;
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

bool wsp_ready(void)
{
	int s = atomic_load_explicit(&wsp_state, memory_order_acquire);
	if (__builtin_expect(s == WSP_ACTIVE, 1))
		return true;
	if (s != WSP_UNINIT)
		return false;
	int expected = WSP_UNINIT;
	if (!atomic_compare_exchange_strong(&wsp_state, &expected, WSP_STARTING))
		return false; /* another thread is starting: pass through meanwhile */
	wsp_real_resolve();
	if (!is_preloaded()) { /* its hooks see nothing: a trace would be empty */
		atomic_store(&wsp_state, WSP_OFF);
		return false;
	}
	wsp_config_load();
	atomic_store(&wsp_recording, !wsp_cfg.start_paused);
	if (!program_followed()) {
		atomic_store(&wsp_state, WSP_OFF);
		return false;
	}
	wsp_stacks_init();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	start(0, false);
	return atomic_load(&wsp_state) == WSP_ACTIVE;
}

/* ---- attach (attach.c) ---------------------------------------------- */

int wsp_process_attach(const char *output)
{
	if (is_preloaded())
		return -EBUSY; /* recording from the start, or told not to */
	int s = atomic_load(&wsp_state);
	if ((s != WSP_OFF && s != WSP_UNINIT) || !atomic_compare_exchange_strong(&wsp_state, &s, WSP_STARTING))
		return -EBUSY;
	wsp_real_resolve_global();
	wsp_config_load();
	if (snprintf(wsp_cfg.output, sizeof wsp_cfg.output, "%s", output) >= (int)sizeof wsp_cfg.output) {
		atomic_store(&wsp_state, WSP_OFF);
		return -ENAMETOOLONG;
	}
	/* The program's environment has no settings of wsprof record's; a
	 * child it forks is not followed. Written pages are sampled as under
	 * record: the sampler's userfaultfd write-protects the program's
	 * memory while the attach lasts, and closing it at the end gives every
	 * page back unprotected (the kernel clears the marks). */
	wsp_cfg.manifest[0] = wsp_cfg.rescue[0] = wsp_cfg.follow_pattern[0] = 0;
	wsp_cfg.follow = wsp_cfg.start_paused = false;
	wsp_cfg.toggle_signal = 0;
	static bool once; /* only ever one attach at a time */
	if (!once) {
		wsp_stacks_init();
		pthread_atfork(fork_prepare, fork_parent, fork_child);
		once = true;
	} else { /* an earlier attach's trace is finished: start anew */
		wsp_sampler_reset();
		wsp_events_discard();
		wsp_stacks_reset_after_fork();
		wsp_modules_reset();
		wsp_writer_reset_after_fork();
	}
	atomic_store(&wsp_ending, WSPROF_END_UNKNOWN);
	start(0, true);
	return atomic_load(&wsp_state) == WSP_ACTIVE ? 0 : -EIO;
}

void wsp_process_detach(void)
{
	if (!wsp_writer_finish_from_signal(WSP_FINISH_TIMEOUT_MS) && !wsp_writer_thread_running()) {
		wsp_writer_finish_tasks(); /* the sampler's last windows, the last totals */
		wsp_writer_finish();
	}
	wsp_sampler_wait_gone(WSP_FINISH_TIMEOUT_MS);
}

bool wsp_is_traced_process(void)
{
	return atomic_load(&wsp_state) == WSP_ACTIVE && getpid() == wsp_pid;
}

__attribute__((constructor)) static void on_load(void)
{
	wsp_tls.guard++;
	wsp_real_resolve();
	wsp_ready();
	wsp_tls.guard--;
}

__attribute__((destructor)) static void on_unload(void)
{
	wsp_tls.guard++;
	if (wsp_is_traced_process()) {
		wsp_recording_catch_up();
		wsp_writer_finish_tasks(); /* the sampler's last windows, the last totals */
		wsp_writer_finish();
	}
	wsp_tls.guard--;
}

/* ---- fork ----------------------------------------------------------- */

static bool fork_locked;

static void fork_prepare(void)
{
	wsp_tls.guard++;
	fork_locked = atomic_load(&wsp_state) == WSP_ACTIVE;
	if (fork_locked) {
		wsp_writer_lock();
		wsp_modules_lock();
		wsp_events_lock_all();
		wsp_sample_lock_all();
		wsp_tally_lock();
	}
}

static void fork_parent(void)
{
	if (fork_locked) {
		wsp_tally_unlock(false);
		wsp_sample_unlock_all();
		wsp_events_unlock_all();
		wsp_modules_unlock();
		wsp_writer_unlock();
	}
	wsp_tls.guard--;
}

static void fork_child(void)
{
	if (fork_locked) {
		pid_t parent = wsp_pid;
		wsp_threads_reset_after_fork();
		wsp_events_reset_after_fork();
		wsp_stacks_reset_after_fork();
		wsp_python_reset_after_fork();
		wsp_modules_reset();
		wsp_writer_reset_after_fork();
		wsp_rescue_reset_after_fork(); /* after the buffers: they ask which are the parent's */
		wsp_sampler_reset_after_fork();
		atomic_store(&wsp_ending, WSPROF_END_UNKNOWN);
		wsp_tally_unlock(true); /* the child's totals go on from the parent's: it has its blocks */
		wsp_sample_unlock_all(); /* the child's frees of inherited sampled blocks stay untracked frees */
		if (wsp_cfg.follow)
			start(parent, false);
		else
			atomic_store(&wsp_state, WSP_OFF);
	}
	wsp_tls.guard--;
}

WSPROF_EXPORT pid_t fork(void)
{
	static pid_t (*real_fork)(void);
	if (!real_fork)
		real_fork = (pid_t(*)(void))dlsym(RTLD_NEXT, "fork");
	pid_t pid = real_fork();
	if (pid > 0 && !wsp_tls.guard && wsp_is_traced_process()) {
		wsp_tls.guard++;
		wsp_record_fork(pid);
		wsp_tls.guard--;
	}
	return pid;
}

/* ---- exec ----------------------------------------------------------- */

/* Write everything, then the EXEC record alone in the last chunk, and keep
 * the writer locked until exec returns: if it succeeds nothing follows the
 * EXEC chunk (a reader's sign that the trace is complete); if it fails,
 * recording goes on. @return whether after_exec() must be called. */
static bool before_exec(const char *path)
{
	if (wsp_tls.guard || !wsp_is_traced_process())
		return false;
	wsp_tls.guard++;
	wsp_writer_finish_tasks(); /* the sampler's last windows (the new image starts its own kdamond), the totals */
	wsp_writer_lock();
	wsp_writer_flush_locked();
	wsp_tls.writing = true; /* a buffer for the record must not wait for the writer */
	wsp_record_exec(path);
	wsp_tls.writing = false;
	wsp_writer_flush_locked();
	wsp_rescue_set_state(WSP_RESCUE_EXEC); /* the trace is complete if exec succeeds */
	return true;
}

static void after_exec(bool held)
{
	if (!held)
		return;
	wsp_rescue_set_state(WSP_RESCUE_RECORDING); /* it failed: recording goes on */
	wsp_writer_unlock();
	wsp_tls.guard--;
}

static bool is_wsprof_entry(const char *s, size_t n)
{
	static const char name[] = "libwsprof.so";
	size_t k = sizeof name - 1;
	return n >= k && memcmp(s + n - k, name, k) == 0 && (n == k || s[n - k - 1] == '/');
}

/* A copy of envp whose LD_PRELOAD no longer names libwsprof (dropped when
 * that empties it), without an NVTX_INJECTION64_PATH naming libwsprof.
 * In buf when it fits (cap bytes), else one block of our own pages: free
 * with env_free(). */
static char **env_without_preload_in(char *const envp[], size_t *buf, size_t cap)
{
	size_t n = 0, bytes = 0;
	for (; envp && envp[n]; n++)
		if (strncmp(envp[n], "LD_PRELOAD=", 11) == 0)
			bytes += strlen(envp[n]) + 1;
	size_t size = sizeof(size_t) + (n + 1) * sizeof(char *) + bytes;
	size_t *block = size <= cap ? buf : wsp_pages_alloc(size);
	if (!block)
		return (char **)envp;
	*block = block == buf ? 0 : size; /* 0: not ours to free */
	char **out = (char **)(block + 1), *text = (char *)(out + n + 1);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (strncmp(envp[i], "NVTX_INJECTION64_PATH=", 22) == 0 &&
		    is_wsprof_entry(envp[i] + 22, strlen(envp[i] + 22)))
			continue;
		if (strncmp(envp[i], "LD_PRELOAD=", 11) != 0) {
			out[k++] = envp[i];
			continue;
		}
		char *start = text;
		text += sprintf(text, "LD_PRELOAD=");
		const char *s = envp[i] + 11;
		bool first = true;
		while (*s) {
			size_t len = strcspn(s, ": ");
			if (len && !is_wsprof_entry(s, len)) {
				if (!first)
					*text++ = ':';
				memcpy(text, s, len);
				text += len;
				first = false;
			}
			s += len + (s[len] != 0);
		}
		*text++ = 0;
		if (!first)
			out[k++] = start;
	}
	out[k] = NULL;
	return out;
}

char **wsp_env_without_preload(char *const envp[])
{
	return env_without_preload_in(envp, NULL, 0);
}

static void env_free(char **env, char *const orig[])
{
	if ((char *const *)env != orig) {
		size_t *block = (size_t *)env - 1;
		if (*block)
			wsp_pages_free(block, *block);
	}
}

/* The environment to exec with. On the caller's stack when it fits: a
 * vfork child shares our memory, and pages it took would stay taken in
 * the parent once exec succeeds. */
#define ENV_ON_STACK 16384
static char **exec_env(char *const envp[], size_t *buf)
{
	return wsp_cfg.follow ? (char **)envp : env_without_preload_in(envp, buf, ENV_ON_STACK);
}

enum exec_by { BY_PATH, BY_FILE, BY_FD };

static int exec_traced(enum exec_by by, const char *name, int fd, char *const argv[], char *const envp[])
{
	wsp_real_resolve();
	bool held = before_exec(name);
	size_t buf[ENV_ON_STACK / sizeof(size_t)];
	char **env = exec_env(envp, buf);
	int r = by == BY_PATH ? wsp_real.execve(name, argv, env)
	      : by == BY_FILE ? wsp_real.execvpe(name, argv, env)
			      : wsp_real.fexecve(fd, argv, env);
	int saved = errno;
	after_exec(held);
	env_free(env, envp);
	errno = saved;
	return r;
}

WSPROF_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_traced(BY_PATH, path, -1, argv, envp);
}

WSPROF_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_traced(BY_FILE, file, -1, argv, envp);
}

WSPROF_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	return exec_traced(BY_FD, "(fexecve)", fd, argv, envp);
}

WSPROF_EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

WSPROF_EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

/* Collect execl-style arguments; *envp gets the environment after the
 * terminating NULL when with_env. */
#define COLLECT_ARGS(arg, argv, with_env, envp)                                  \
	size_t argc_ = 1;                                                         \
	va_list ap_;                                                              \
	va_start(ap_, arg);                                                       \
	while (va_arg(ap_, char *))                                               \
		argc_++;                                                          \
	va_end(ap_);                                                              \
	char *argv[argc_ + 1];                                                    \
	argv[0] = (char *)(arg);                                                  \
	va_start(ap_, arg);                                                       \
	for (size_t i_ = 1; i_ <= argc_; i_++)                                    \
		argv[i_] = va_arg(ap_, char *);                                   \
	if (with_env)                                                             \
		envp = va_arg(ap_, char *const *);                                \
	va_end(ap_)

WSPROF_EXPORT int execl(const char *path, const char *arg, ...)
{
	char *const *envp = environ;
	COLLECT_ARGS(arg, argv, false, envp);
	return execve(path, argv, envp);
}

WSPROF_EXPORT int execle(const char *path, const char *arg, ...)
{
	char *const *envp = NULL;
	COLLECT_ARGS(arg, argv, true, envp);
	return execve(path, argv, envp);
}

WSPROF_EXPORT int execlp(const char *file, const char *arg, ...)
{
	char *const *envp = environ;
	COLLECT_ARGS(arg, argv, false, envp);
	return execvpe(file, argv, envp);
}

/* posix_spawn children get their own trace by inheriting LD_PRELOAD;
 * when not following, they get an environment without it. */
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			const posix_spawnattr_t *, char *const[], char *const[]);

static int spawn_with(spawn_fn *real, const char *name, pid_t *pid, const char *path,
		      const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
		      char *const argv[], char *const envp[])
{
	if (!*real)
		*real = (spawn_fn)dlsym(RTLD_NEXT, name);
	size_t buf[ENV_ON_STACK / sizeof(size_t)];
	char **env = exec_env(envp, buf);
	pid_t child = 0;
	int r = (*real)(&child, path, fa, attr, argv, env);
	env_free(env, envp);
	if (pid)
		*pid = child;
	/* A child like a forked one: the parent's trace lists it. */
	if (r == 0 && child > 0 && !wsp_tls.guard && wsp_is_traced_process()) {
		wsp_tls.guard++;
		wsp_record_fork(child);
		wsp_tls.guard--;
	}
	return r;
}

WSPROF_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			      const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	static spawn_fn real;
	return spawn_with(&real, "posix_spawn", pid, path, fa, attr, argv, envp);
}

WSPROF_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	static spawn_fn real;
	return spawn_with(&real, "posix_spawnp", pid, file, fa, attr, argv, envp);
}

/* ---- exit without destructors ---------------------------------------- */

WSPROF_EXPORT void _exit(int status)
{
	wsp_real_resolve();
	if (!wsp_tls.guard && wsp_is_traced_process()) {
		wsp_tls.guard++;
		wsp_set_ending(WSPROF_END_EXIT, (unsigned)status & 0xffu);
		/* _exit may be called from a signal handler that interrupted
		 * this thread inside wsprof: the writer thread finishes, as for
		 * a fatal signal, and a lock it cannot take costs a timeout, not
		 * a hang (under wsprof record the launcher finishes then). */
		if (!wsp_writer_finish_from_signal(WSP_FINISH_TIMEOUT_MS) && !wsp_writer_thread_running()) {
			wsp_writer_finish_tasks();
			wsp_writer_finish();
		}
	}
	wsp_real._exit(status);
	__builtin_unreachable();
}

WSPROF_EXPORT void _Exit(int status)
{
	_exit(status);
}
