/*
 * signals.c - a fatal signal does not cost the trace its last events.
 *
 * For the signals whose default action ends the process (SIGSEGV, SIGABRT,
 * SIGTERM, SIGINT, SIGPIPE, ...), and only while the program leaves them
 * at that default, wsprof catches them: its handler has the writer thread
 * finish the trace (everything recorded, then the footer) and waits for
 * that, at most WSP_FINISH_TIMEOUT_MS, then restores the default action and
 * lets the signal take the process as it would have: same signal, same
 * exit status, same core dump. The handler takes no lock and calls only
 * async-signal-safe functions; the work is the writer thread's, which
 * takes the locks as always. If the signal struck while the thread held
 * one of wsprof's locks, the writer cannot finish and the wait times out:
 * the reader still gets every event up to the last complete chunk.
 *
 * The program never sees the handler: sigaction() and signal() on these
 * signals report SIG_DFL while wsprof holds them, and a handler of the
 * program's own replaces wsprof's (SIG_DFL set again hands the signal back
 * to wsprof). SIGKILL and SIGSTOP cannot be caught: SIGKILL loses at most
 * one flush interval (WSPROF_FLUSH_MS). A stack overflow's SIGSEGV cannot
 * run a handler on the exhausted stack and kills the process as before.
 *
 * WSPROF_TOGGLE_SIGNAL names a signal that toggles recording
 * (core/recording.c): its handler only flips the switch, which is
 * async-signal-safe. While it is set the signal is wsprof's: the program's
 * sigaction() and signal() on it succeed, change nothing, and report
 * SIG_DFL (a program that needs the signal for itself is given another).
 */

#include "life.h"
#include "core.h"
#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>


static const int fatal[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGUSR1, SIGSEGV,
	SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGXCPU, SIGXFSZ, SIGSYS,
};

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static sigaction_fn real_sigaction;
/* Signals whose handler is wsprof's: the program's view is SIG_DFL. */
static _Atomic bool held[NSIG];

static bool is_fatal(int sig)
{
	for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
		if (fatal[i] == sig)
			return true;
	return false;
}

static bool resolve(void)
{
	if (!real_sigaction)
		real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
	return real_sigaction != NULL;
}

static void on_fatal(int sig, siginfo_t *info, void *uctx)
{
	(void)uctx;
	int saved = errno;
	if (atomic_load(&wsp_state) == WSP_ACTIVE && wsp_is_traced_process()) {
		wsp_set_ending(WSPROF_END_SIGNAL, (unsigned)sig);
		wsp_writer_finish_from_signal(WSP_FINISH_TIMEOUT_MS);
	}
	/* The default action, as if wsprof had never been here. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	atomic_store(&held[sig], false);
	real_sigaction(sig, &dfl, NULL);
	/* Sent (kill, raise, abort): send it again, delivered as the handler
	 * returns. A fault (SIGSEGV from an access, ...) happens again when
	 * the instruction runs again. */
	if (info->si_code <= 0 || sig == SIGABRT || sig == SIGPIPE || sig == SIGXFSZ || sig == SIGXCPU)
		raise(sig);
	errno = saved;
}

static void on_toggle(int sig)
{
	(void)sig;
	int saved = errno;
	wsp_recording_toggle_from_signal();
	errno = saved;
}

static void install_toggle(int sig)
{
	struct sigaction act;
	memset(&act, 0, sizeof act);
	act.sa_handler = on_toggle;
	act.sa_flags = SA_RESTART;
	sigemptyset(&act.sa_mask);
	if (real_sigaction(sig, &act, NULL) != 0)
		wsp_warn("cannot catch the toggle signal %d (%s); recording is not toggled by it", sig,
			 wsp_strerror(errno));
}

static int hold(int sig)
{
	struct sigaction act;
	memset(&act, 0, sizeof act);
	act.sa_sigaction = on_fatal;
	act.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&act.sa_mask);
	if (real_sigaction(sig, &act, NULL) != 0)
		return -1;
	atomic_store(&held[sig], true);
	return 0;
}

void wsp_signals_install(void)
{
	if (!resolve())
		return;
	if (wsp_cfg.toggle_signal)
		install_toggle(wsp_cfg.toggle_signal);
	for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++) {
		struct sigaction old;
		if (fatal[i] != wsp_cfg.toggle_signal && real_sigaction(fatal[i], NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
		    old.sa_handler == SIG_DFL)
			hold(fatal[i]);
	}
}

static void report_default(struct sigaction *old)
{
	memset(old, 0, sizeof *old);
	old->sa_handler = SIG_DFL;
	sigemptyset(&old->sa_mask);
}

WSPROF_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!resolve()) {
		errno = ENOSYS;
		return -1;
	}
	if (sig > 0 && sig == wsp_cfg.toggle_signal && atomic_load(&wsp_state) == WSP_ACTIVE) {
		if (old) /* wsprof's while WSPROF_TOGGLE_SIGNAL names it */
			report_default(old);
		return 0;
	}
	if (sig <= 0 || sig >= NSIG || !is_fatal(sig))
		return real_sigaction(sig, act, old);
	bool ours = atomic_load(&held[sig]);
	bool to_default = act && !(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_DFL;
	if (ours && (!act || to_default)) { /* it stays as the program sees it: SIG_DFL */
		if (old)
			report_default(old);
		return 0;
	}
	if (ours) {
		struct sigaction ignored;
		if (real_sigaction(sig, act, old ? &ignored : NULL) != 0)
			return -1;
		atomic_store(&held[sig], false);
		if (old)
			report_default(old);
		return 0;
	}
	if (real_sigaction(sig, act, old) != 0)
		return -1;
	if (to_default && atomic_load(&wsp_state) == WSP_ACTIVE)
		hold(sig); /* back at the default: wsprof's again */
	return 0;
}

/* glibc's signal(): BSD semantics (the handler stays, calls restart). */
WSPROF_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction act, old;
	memset(&act, 0, sizeof act);
	act.sa_handler = handler;
	sigemptyset(&act.sa_mask);
	if (sig > 0 && sig < NSIG)
		sigaddset(&act.sa_mask, sig);
	act.sa_flags = SA_RESTART;
	if (sigaction(sig, &act, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}
