/*
 * alloc_signal - allocate, then die of a signal (or handle one itself).
 *
 * usage: alloc_signal EXPECT segv|abort|term|pipe|own
 *
 * Allocates 1000 blocks (half of them freed), writes EXPECT with its
 * books, then:
 *   segv   writes through a null pointer (SIGSEGV, a fault)
 *   abort  calls abort() (SIGABRT)
 *   term   raises SIGTERM
 *   pipe   writes to a pipe whose read end is closed (SIGPIPE)
 *   own    handles SIGTERM itself and exits 0: its handler must run, and
 *          sigaction()/signal() must show what it set, and SIG_DFL for
 *          the signals it never touched (wsprof's handler is not the
 *          program's business)
 * Exit status 3 with a message on stderr: the program saw something wrong.
 */
#include "account.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct account heap;
static volatile sig_atomic_t handled;

static void on_term(int sig)
{
	(void)sig;
	handled = 1;
}

static int check_default(int sig)
{
	struct sigaction old;
	if (sigaction(sig, NULL, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) {
		complain("signal %d: sigaction reports a handler the program never set", sig);
		return -1;
	}
	return 0;
}

static int own(void)
{
	if (check_default(SIGSEGV) || check_default(SIGTERM))
		return 3;
	if (signal(SIGTERM, on_term) != SIG_DFL) {
		complain("signal(SIGTERM) did not return SIG_DFL");
		return 3;
	}
	struct sigaction now;
	if (sigaction(SIGTERM, NULL, &now) != 0 || now.sa_handler != on_term) {
		complain("sigaction does not report the program's SIGTERM handler");
		return 3;
	}
	raise(SIGTERM);
	if (!handled) {
		complain("the program's SIGTERM handler did not run");
		return 3;
	}
	if (signal(SIGTERM, SIG_DFL) != on_term) {
		complain("signal(SIGTERM, SIG_DFL) did not return the program's handler");
		return 3;
	}
	return check_default(SIGTERM) ? 3 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		complain("usage: alloc_signal EXPECT segv|abort|term|pipe|own");
		return 2;
	}
	for (int i = 0; i < 1000; i++) {
		size_t size = 16 + (size_t)i % 200;
		void *p = malloc(size);
		account_alloc(&heap, size);
		if (i % 2) {
			free(p);
			account_free(&heap, size);
		} else {
			account_keep(p);
		}
	}
	struct expect e;
	expect_init(&e);
	expect_account(&e, "heap", &heap);
	if (expect_write(&e, argv[1]) < 0)
		return 2;
	const char *mode = argv[2];
	if (!strcmp(mode, "segv")) {
		volatile int *null = NULL;
		*null = 1;
	} else if (!strcmp(mode, "abort")) {
		abort();
	} else if (!strcmp(mode, "term")) {
		raise(SIGTERM);
	} else if (!strcmp(mode, "pipe")) {
		int fds[2];
		if (pipe(fds) != 0)
			return 2;
		close(fds[0]);
		ssize_t w = write(fds[1], "x", 1);
		(void)w;
	} else if (!strcmp(mode, "own")) {
		return own();
	}
	complain("still alive after '%s'", mode);
	return 3;
}
