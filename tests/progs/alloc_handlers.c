/*
 * alloc_handlers - signal handlers that allocate.
 *
 * usage: alloc_handlers EXPECT [MS]   (default 300)
 *
 * First, synchronously: between allocations of its own, the program
 * raises SIGUSR1 RAISES times; the handler mallocs, callocs, reallocs and
 * frees, and keeps one block per call, which the main code later frees in
 * part. raise() delivers the signal before it returns, outside any
 * allocator call, so every call of the handler is recorded: the books
 * ("heap") are exact.
 *
 * Then, asynchronously: for MS milliseconds an interval timer sends
 * SIGALRM every millisecond while the main code maps and unmaps memory
 * ("mmap", exact). The handler mallocs ASYNC_SIZE bytes and frees them.
 * A signal that lands while the thread is inside wsprof is handled
 * untraced, as a whole (its malloc and free both pass through), so of the
 * "async_calls" handler calls some number m are recorded, 0 < m <= calls:
 * the summary's heap then has m more allocations and frees, m*ASYNC_SIZE
 * more bytes, and, once m > 0, the peak "async_peak_bytes". The main code
 * never allocates from the heap meanwhile: a handler may interrupt the
 * mmap hook, never glibc's malloc.
 */
#include "account.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>

#define RAISES 100
#define ASYNC_SIZE 555

static struct account heap, maps;
static void *kept[RAISES];
static volatile sig_atomic_t nkept;
static volatile sig_atomic_t async_calls;

static void on_usr1(int sig)
{
	(void)sig;
	void *a = malloc(111);
	account_keep(a);
	account_alloc(&heap, 111);
	void *b = calloc(2, 111);
	account_keep(b);
	account_alloc(&heap, 222);
	b = realloc(b, 333);
	account_keep(b);
	account_resize(&heap, 222, 333);
	free(a);
	account_free(&heap, 111);
	kept[nkept++] = b;
}

static void on_alrm(int sig)
{
	(void)sig;
	void *p = malloc(ASYNC_SIZE);
	account_keep(p);
	free(p);
	async_calls++;
}

static void handle(int sig, void (*fn)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fn;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void synchronous(void)
{
	handle(SIGUSR1, on_usr1);
	for (int i = 0; i < RAISES; i++) {
		void *p = malloc(64 + i);
		account_keep(p);
		account_alloc(&heap, 64 + i);
		raise(SIGUSR1);
		free(p);
		account_free(&heap, 64 + i);
	}
	for (int i = 0; i < nkept; i += 2) { /* half of the handler's blocks stay */
		free(kept[i]);
		account_free(&heap, 333);
	}
}

static void asynchronous(unsigned ms)
{
	handle(SIGALRM, on_alrm);
	struct itimerval every_ms = { { 0, 1000 }, { 0, 1000 } }, off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &every_ms, NULL);
	for (uint64_t end = now_ms() + ms; now_ms() < end;) {
		size_t len = 65536;
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			account_fail(&maps);
			continue;
		}
		account_alloc(&maps, len);
		munmap(p, len);
		account_free(&maps, len);
	}
	setitimer(ITIMER_REAL, &off, NULL);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: alloc_handlers EXPECT [MS]");
		return 2;
	}
	unsigned ms = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 300;
	synchronous();
	asynchronous(ms);

	uint64_t async_peak = heap.live_bytes + ASYNC_SIZE;
	struct expect e;
	expect_init(&e);
	expect_account(&e, "heap", &heap);
	expect_account(&e, "mmap", &maps);
	expect_uint(&e, "async_calls", (uint64_t)async_calls);
	expect_uint(&e, "async_size", ASYNC_SIZE);
	expect_uint(&e, "async_peak_bytes", async_peak > heap.peak_bytes ? async_peak : heap.peak_bytes);
	expect_uint(&e, "threads", 1);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
