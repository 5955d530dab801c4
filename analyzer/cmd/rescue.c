/*
 * rescue.c - `wsprof record` finishes the traces of processes that could
 * not: ended by exit_group (Go), _exit while the writer could not finish,
 * SIGKILL, the OOM killer.
 *
 * Every traced process image sends this command, over a datagram socket
 * with an abstract name (WSPROF_RESCUE), the memfd holding its buffers and
 * a pidfd of itself (preload/core/rescue.c; src/rescue.h has the layout). A
 * listener thread keeps them and watches the pidfds. When a process is
 * gone without its footer, what its file lacks is in the memfd: the file
 * is cut back to its last chunk written whole, the staging area and the
 * buffers still held are appended as chunks of records, then the footer,
 * which says how the process ended and that wsprof record wrote it.
 *
 * The program's own process is finished by the main thread, which knows
 * its exit status from waitpid; the listener finishes every other process
 * as it ends (how it ended is then unknown). A process still running when
 * the program has ended is left to finish its trace itself.
 */
#include "analyzer.h"
#include "recorder.h"

#include "format.h"
#include "rescue.h"

#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CHUNK_RAW (8u << 20) /* records per appended chunk at most */
#define SAID_MAX 4           /* lines about finished traces, then a count */

struct entry {
	pid_t pid;
	int memfd, pidfd; /* pidfd -1: none (an old kernel) */
};

static struct entry *entries;
static size_t nentries, cap_entries;
static int sock = -1, stop_pipe[2] = { -1, -1 };
static pthread_t listener;
static bool listening;
static pid_t program; /* the program's pid: the main thread finishes it */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned said, unsaid;
static struct rlimit child_files; /* RLIMIT_NOFILE as the program is to get it */
static bool files_raised;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void entry_close(struct entry *e)
{
	close(e->memfd);
	if (e->pidfd >= 0)
		close(e->pidfd);
	*e = entries[--nentries];
}

/* One piece of records to append, and where it came from. */
struct piece {
	const uint8_t *data;
	size_t len;
	uint64_t floor;
};

static int by_floor(const void *a, const void *b)
{
	uint64_t x = ((const struct piece *)a)->floor, y = ((const struct piece *)b)->floor;
	return x < y ? -1 : x > y;
}

/* The complete records at the start of p (a process killed mid-copy
 * leaves none half-counted: lengths are stored after the records), and
 * the events among them. */
static size_t whole_records(const uint8_t *p, size_t n, uint64_t *events)
{
	struct wsp_cursor c = { p, p + n, false };
	size_t good = 0;
	while (c.p < c.end) {
		uint64_t type = wsp_get_varint(&c), len = wsp_get_varint(&c);
		if (c.bad || len > (uint64_t)(c.end - c.p))
			break;
		c.p += len;
		good = (size_t)(c.p - p);
		if (type >= WSP_REC_ALLOC && type <= WSP_REC_UNMAP)
			++*events;
	}
	return good;
}

static bool write_all(int fd, const void *data, size_t n)
{
	const uint8_t *p = data;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* Append pieces as chunks from index *chunk on. */
static bool append_chunks(int fd, ZSTD_CCtx *cctx, const struct piece *pieces, size_t n, uint32_t *chunk)
{
	uint8_t *raw = malloc(CHUNK_RAW), *z = malloc(ZSTD_compressBound(CHUNK_RAW));
	bool ok = raw && z;
	for (size_t i = 0; ok && i < n;) {
		size_t len = 0;
		/* A piece is at most a buffer or the staging area: both fit. */
		while (i < n && len + pieces[i].len <= CHUNK_RAW) {
			memcpy(raw + len, pieces[i].data, pieces[i].len);
			len += pieces[i++].len;
		}
		if (!len) { /* larger than a chunk: not of this recorder */
			i++;
			continue;
		}
		size_t zn = ZSTD_compress2(cctx, z, ZSTD_compressBound(CHUNK_RAW), raw, len);
		if (ZSTD_isError(zn)) {
			ok = false;
			break;
		}
		uint8_t h[WSP_CHUNK_HEADER];
		wsp_put_le32(h, WSP_MAGIC_CHUNK);
		wsp_put_le32(h + 4, WSP_CHUNK_HEADER - 8);
		wsp_put_le32(h + 8, *chunk);
		wsp_put_le32(h + 12, (uint32_t)len);
		wsp_put_le32(h + 16, (uint32_t)zn);
		wsp_put_le32(h + 20, 0);
		ok = write_all(fd, h, sizeof h) && write_all(fd, z, zn);
		++*chunk;
	}
	free(raw);
	free(z);
	return ok;
}

static bool append_footer(int fd, const struct wsp_rescue_head *h, uint64_t end_ns, uint32_t chunks,
			  uint64_t events, unsigned how, unsigned value)
{
	uint8_t frame[128], *p;
	struct wsp_record_mark m;
	p = wsp_record_open(frame + 8, WSP_REC_FOOTER, 100, &m);
	p = wsp_put_varint(p, end_ns);
	p = wsp_put_varint(p, chunks);
	p = wsp_put_varint(p, events);
	p = wsp_put_varint(p, 0);
	p = wsp_put_varint(p, atomic_load(&h->untraced));
	p = wsp_put_varint(p, how);
	p = wsp_put_varint(p, value);
	p = wsp_put_varint(p, 1); /* finished by wsprof record */
	p = wsp_record_close(p, &m);
	wsp_put_le32(frame, WSP_MAGIC_FOOTER);
	wsp_put_le32(frame + 4, (uint32_t)(p - frame - 8));
	return write_all(fd, frame, (size_t)(p - frame));
}

static bool head_valid(const struct wsp_rescue_head *h, size_t size, pid_t pid)
{
	return size >= sizeof *h && h->magic == WSP_RESCUE_MAGIC && h->version == WSP_RESCUE_VERSION &&
	       h->head_size == sizeof *h && h->buf_struct == sizeof(struct wsp_buf) && (pid_t)h->pid == pid &&
	       h->stage_off >= sizeof *h && h->stage_cap <= CHUNK_RAW && h->stage_off + h->stage_cap <= size &&
	       h->slot_size > sizeof(struct wsp_buf) && h->slot_size <= CHUNK_RAW && h->nslots <= size / h->slot_size &&
	       h->slots_off + h->nslots * h->slot_size <= size && memchr(h->path, 0, sizeof h->path);
}

/* Whether a buffer's records are already in the staging area or the
 * file (src/rescue.h). */
static bool buf_written(const struct wsp_buf *b, const struct wsp_rescue_head *h, uint64_t stage_len)
{
	uint64_t gen = b->staged_gen;
	return gen && (gen <= atomic_load(&h->committed_gen) ||
		       (gen == atomic_load(&h->stage_gen) && b->staged_end <= stage_len));
}

/* Finish the trace of a process that is gone. @return the events added,
 * or -1 when there was nothing to finish (it finished itself, exec'd,
 * stopped recording) or it could not be done (*why says). */
static long finish(const struct entry *e, uint64_t end_mono, unsigned how, unsigned value, const char **why)
{
	*why = NULL;
	struct stat st;
	if (fstat(e->memfd, &st) != 0 || st.st_size <= 0)
		return -1;
	size_t size = (size_t)st.st_size;
	void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, e->memfd, 0);
	if (map == MAP_FAILED)
		return -1;
	const struct wsp_rescue_head *h = map;
	long added = -1;
	if (!head_valid(h, size, e->pid) || atomic_load(&h->state) != WSP_RESCUE_RECORDING)
		goto out;
	int fd = open(h->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	struct stat ts;
	if (fd < 0 || fstat(fd, &ts) != 0 || (uint64_t)ts.st_dev != h->trace_dev || (uint64_t)ts.st_ino != h->trace_ino) {
		*why = "its trace file is gone or was replaced";
		if (fd >= 0)
			close(fd);
		goto out;
	}
	uint64_t committed = atomic_load(&h->committed_bytes);
	if ((uint64_t)ts.st_size < committed) {
		*why = "its trace file is shorter than the process wrote it";
		close(fd);
		goto out;
	}
	/* Cut back to the last chunk written whole, then append. */
	size_t nslots = atomic_load(&h->slots_used);
	if (nslots > h->nslots)
		nslots = h->nslots;
	struct piece *pieces = calloc(nslots + 1, sizeof *pieces);
	size_t n = 0;
	uint64_t events = 0;
	uint64_t stage_len = atomic_load(&h->stage_len);
	if (pieces && atomic_load(&h->stage_gen) != atomic_load(&h->committed_gen) && stage_len <= h->stage_cap) {
		const uint8_t *stage = (const uint8_t *)map + h->stage_off;
		pieces[n] = (struct piece){ stage, whole_records(stage, stage_len, &events), 0 };
		n += pieces[n].len > 0;
	}
	size_t first_buf = n;
	for (size_t i = 0; pieces && i < nslots; i++) {
		const struct wsp_buf *b = (const void *)((const uint8_t *)map + h->slots_off + i * h->slot_size);
		if (atomic_load(&b->held) != WSP_BUF_HELD || !b->len || buf_written(b, h, stage_len))
			continue;
		size_t room = h->slot_size - sizeof *b, len = b->len < room ? b->len : room;
		pieces[n] = (struct piece){ b->data, whole_records(b->data, len, &events), b->floor };
		n += pieces[n].len > 0;
	}
	/* The writer stages buffers in the order of their floors. */
	qsort(pieces + first_buf, n - first_buf, sizeof *pieces, by_floor);
	uint32_t chunk = (uint32_t)atomic_load(&h->committed_chunks);
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	bool ok = pieces && cctx;
	if (ok) {
		ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
		ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
		ok = ftruncate(fd, (off_t)committed) == 0 && lseek(fd, (off_t)committed, SEEK_SET) == (off_t)committed &&
		     append_chunks(fd, cctx, pieces, n, &chunk);
	}
	uint64_t alive = atomic_load(&h->alive_ns);
	uint64_t end_ns = end_mono > h->start_mono ? end_mono - h->start_mono : 0;
	if (end_ns < alive)
		end_ns = alive;
	uint64_t total = atomic_load(&h->committed_events) + events;
	ok = ok && append_footer(fd, h, end_ns, chunk, total, how, value);
	if (close(fd) != 0)
		ok = false;
	ZSTD_freeCCtx(cctx);
	free(pieces);
	if (ok)
		added = (long)events;
	else
		*why = strerror(errno ? errno : EIO);
out:
	munmap(map, size);
	return added;
}

static void describe(char *out, size_t cap, unsigned how, unsigned value)
{
	if (how == WSPROF_END_SIGNAL)
		snprintf(out, cap, "killed by signal %u (%s)", value, sigabbrev_np((int)value) ? sigabbrev_np((int)value) : "?");
	else if (how == WSPROF_END_EXIT)
		snprintf(out, cap, "exited with status %u", value);
	else
		snprintf(out, cap, "ended");
}

/* Finish e's trace if it needs it, and say so. Lock held. */
static void finish_and_say(const struct entry *e, uint64_t end_mono, unsigned how, unsigned value)
{
	const char *why;
	/* A file size limit fails the write (EFBIG) rather than kill wsprof
	 * with SIGXFSZ: blocked here, and taken back if it came. */
	sigset_t xfsz, old;
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &xfsz, &old);
	long added = finish(e, end_mono, how, value, &why);
	struct timespec now = { 0, 0 };
	while (sigtimedwait(&xfsz, NULL, &now) == SIGXFSZ)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	char ended[64];
	describe(ended, sizeof ended, how, value);
	if (added < 0 && !why)
		return;
	if (said >= SAID_MAX) {
		unsaid++;
		return;
	}
	said++;
	if (added >= 0)
		fprintf(stderr, "wsprof: pid %d %s without finishing its trace; wsprof finished it from the "
			"process's buffers (%ld more events)\n", (int)e->pid, ended, added);
	else
		fprintf(stderr, "wsprof: pid %d %s without finishing its trace, and %s: it ends at its last "
			"complete chunk\n", (int)e->pid, ended, why);
}

static void take_message(void)
{
	uint64_t words[2];
	struct iovec iov = { words, sizeof words };
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} control;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
			      .msg_controllen = sizeof control.buf };
	ssize_t r = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (r < 0)
		return;
	int fds[2] = { -1, -1 };
	size_t nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(c) + i * sizeof fd, sizeof fd);
				if (nfds < 2)
					fds[nfds++] = fd;
				else
					close(fd);
			}
		}
	if (r != (ssize_t)sizeof words || words[0] != WSP_RESCUE_MAGIC || !nfds || (msg.msg_flags & MSG_CTRUNC)) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		return;
	}
	pid_t pid = (pid_t)words[1];
	pthread_mutex_lock(&lock);
	/* The same pid again: its earlier image exec'd (a raw exec leaves
	 * that image's buffers to finish). */
	for (size_t i = 0; i < nentries; i++)
		if (entries[i].pid == pid) {
			finish_and_say(&entries[i], mono_ns(), WSPROF_END_UNKNOWN, 0);
			entry_close(&entries[i]);
			break;
		}
	if (nentries == cap_entries) {
		size_t cap = cap_entries ? 2 * cap_entries : 64;
		struct entry *grown = realloc(entries, cap * sizeof *grown);
		if (grown)
			entries = grown, cap_entries = cap;
	}
	if (nentries < cap_entries)
		entries[nentries++] = (struct entry){ pid, fds[0], fds[1] };
	else
		close(fds[0]), close(fds[1]);
	pthread_mutex_unlock(&lock);
}

/* Keep what processes send; finish each (but the program) as it ends. */
static void *listen_main(void *arg)
{
	(void)arg;
	struct pollfd *pfd = NULL;
	size_t pcap = 0;
	for (;;) {
		pthread_mutex_lock(&lock);
		size_t want = nentries + 2;
		if (want > pcap) {
			struct pollfd *grown = realloc(pfd, want * sizeof *grown);
			if (grown)
				pfd = grown, pcap = want;
		}
		size_t n = 0;
		pfd[n++] = (struct pollfd){ .fd = stop_pipe[0], .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = sock, .events = POLLIN };
		for (size_t i = 0; i < nentries && n < pcap; i++)
			pfd[n++] = (struct pollfd){ .fd = entries[i].pid == program ? -1 : entries[i].pidfd, .events = POLLIN };
		pthread_mutex_unlock(&lock);
		if (poll(pfd, n, -1) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;
		/* Ends first, while entries are where pfd saw them (only this
		 * thread adds and removes them; from the last, as entry_close
		 * moves the last into the gap). */
		pthread_mutex_lock(&lock);
		for (size_t k = n; k-- > 2;) {
			struct entry *e = &entries[k - 2];
			if (!(pfd[k].revents & (POLLIN | POLLHUP)) || e->pid == program)
				continue;
			finish_and_say(e, mono_ns(), WSPROF_END_UNKNOWN, 0);
			entry_close(e);
		}
		pthread_mutex_unlock(&lock);
		if (pfd[1].revents & POLLIN)
			take_message();
	}
	free(pfd);
	return NULL;
}

bool wsp_rescue_listen(void)
{
	char name[WSP_RESCUE_NAME_MAX];
	unsigned salt = (unsigned)mono_ns() ^ (unsigned)getpid() * 2654435761u;
	snprintf(name, sizeof name, "wsprof-%d-%08x", (int)getpid(), salt);
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	size_t len = strlen(name);
	memcpy(a.sun_path + 1, name, len);
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || bind(sock, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) != 0 ||
	    pipe2(stop_pipe, O_CLOEXEC) != 0) {
		if (sock >= 0)
			close(sock);
		sock = -1;
		return false;
	}
	/* Room for a memfd and a pidfd per process: many at once in a build. */
	struct rlimit lim;
	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
		struct rlimit more = { lim.rlim_max, lim.rlim_max };
		if (setrlimit(RLIMIT_NOFILE, &more) == 0)
			child_files = lim, files_raised = true;
	}
	if (pthread_create(&listener, NULL, listen_main, NULL) != 0) {
		close(sock);
		sock = -1;
		return false;
	}
	listening = true;
	setenv(WSP_RESCUE_ENV, name, 1);
	return true;
}

void wsp_rescue_in_child(void)
{
	if (files_raised)
		setrlimit(RLIMIT_NOFILE, &child_files);
}

void wsp_rescue_program(pid_t pid)
{
	pthread_mutex_lock(&lock);
	program = pid;
	pthread_mutex_unlock(&lock);
}

/* The program has ended with wait status `status`: finish its trace if it
 * could not, and those of other processes that are gone. */
void wsp_rescue_done(pid_t pid, int status)
{
	uint64_t end = mono_ns();
	if (!listening)
		return;
	while (write(stop_pipe[1], "x", 1) < 0 && errno == EINTR)
		;
	pthread_join(listener, NULL);
	listening = false;
	/* What came after the listener's last look. */
	for (int i = 0; i < 4096; i++) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		if (poll(&p, 1, 0) <= 0)
			break;
		take_message();
	}
	unsigned how = WIFSIGNALED(status) ? WSPROF_END_SIGNAL : WSPROF_END_EXIT;
	unsigned value = WIFSIGNALED(status) ? (unsigned)WTERMSIG(status) : (unsigned)WEXITSTATUS(status);
	pthread_mutex_lock(&lock);
	while (nentries) {
		struct entry *e = &entries[nentries - 1];
		struct pollfd p = { .fd = e->pidfd, .events = POLLIN };
		if (e->pid == pid)
			finish_and_say(e, end, how, value);
		else if (e->pidfd >= 0 && poll(&p, 1, 0) == 1)
			finish_and_say(e, mono_ns(), WSPROF_END_UNKNOWN, 0);
		entry_close(e); /* one still running finishes its own trace */
	}
	if (unsaid)
		fprintf(stderr, "wsprof: ... and %u more traces finished by wsprof\n", unsaid);
	pthread_mutex_unlock(&lock);
	free(entries);
	entries = NULL;
	cap_entries = 0;
	close(sock);
	sock = -1;
}
