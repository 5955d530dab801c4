/*
 * rescue.c - buffers that outlive the process, for `wsprof record`.
 *
 * When WSPROF_RESCUE names the launcher's socket, each process image puts
 * its event buffers and the writer's staging area in one memfd, and sends
 * the launcher that memfd and a pidfd of itself (src/rescue.h says what
 * the launcher does with them). A process that then ends by exit_group,
 * _exit on any thread, SIGKILL or the OOM killer loses nothing: the
 * launcher finishes its trace from the memfd once the pidfd says the
 * process is gone.
 *
 * Everything here runs inside a hook (the first one starts recording):
 * raw system calls and libc functions that neither lock nor allocate
 * (socket, sendmsg, close); the descriptors live only for the call. When
 * any step fails, or in a plain LD_PRELOAD run, buffers are private pages
 * as before and a killed process's trace ends at its last complete chunk.
 * A forked child unmaps its parent's memfd before it records anything.
 */

#include "core.h"
#include "rescue.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1u
#endif

struct wsp_rescue_head *wsp_rescue;
static size_t mapped;

static void unmap(void)
{
	if (wsp_rescue)
		syscall(SYS_munmap, wsp_rescue, mapped);
	wsp_rescue = NULL;
	mapped = 0;
}

/* Send the launcher the memfd and a pidfd of this process. */
static bool hand_over(int mfd)
{
	struct sockaddr_un to;
	memset(&to, 0, sizeof to);
	to.sun_family = AF_UNIX;
	size_t n = strnlen(wsp_cfg.rescue, sizeof wsp_cfg.rescue);
	memcpy(to.sun_path + 1, wsp_cfg.rescue, n); /* abstract: no file to leave behind */
	int fds[2] = { mfd, (int)syscall(SYS_pidfd_open, getpid(), 0) };
	int nfds = fds[1] >= 0 ? 2 : 1; /* without a pidfd the launcher looks at /proc at the end */
	union {
		char buf[CMSG_SPACE(sizeof fds)];
		struct cmsghdr align;
	} control;
	memset(&control, 0, sizeof control);
	uint64_t words[2] = { WSP_RESCUE_MAGIC, (uint64_t)getpid() };
	struct iovec iov = { words, sizeof words };
	struct msghdr msg = {
		.msg_name = &to, .msg_namelen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n),
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control.buf, .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	bool sent = false;
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s >= 0) {
		ssize_t r;
		while ((r = sendmsg(s, &msg, MSG_DONTWAIT | MSG_NOSIGNAL)) < 0 && errno == EINTR)
			;
		sent = r == (ssize_t)sizeof words;
		close(s);
	}
	if (fds[1] >= 0)
		close(fds[1]);
	return sent;
}

bool wsp_rescue_open(const char *path, int trace_fd, uint64_t header_bytes, size_t buf_size, size_t nslots,
		     size_t stage_cap)
{
	unmap();
	if (!wsp_cfg.rescue[0])
		return false;
	int saved = errno;
	size_t stage_off = WSP_RESCUE_HEAD_SIZE, slots_off = stage_off + stage_cap;
	size_t size = slots_off + nslots * buf_size;
	/* Sizing a memfd counts against RLIMIT_FSIZE: past it, SIGXFSZ. */
	struct rlimit lim;
	if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < size)
		return false;
	int mfd = (int)syscall(SYS_memfd_create, "wsprof-buffers", MFD_CLOEXEC);
	struct stat st;
	if (mfd < 0 || ftruncate(mfd, (off_t)size) != 0 || fstat(trace_fd, &st) != 0) {
		if (mfd >= 0)
			close(mfd);
		errno = saved;
		return false;
	}
	long r = syscall(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (r < 0 && r > -4096) {
		close(mfd);
		errno = saved;
		return false;
	}
	struct wsp_rescue_head *h = (void *)r;
	h->magic = WSP_RESCUE_MAGIC;
	h->version = WSP_RESCUE_VERSION;
	h->head_size = sizeof *h;
	h->pid = (uint32_t)getpid();
	h->buf_struct = sizeof(struct wsp_buf);
	h->start_mono = wsp_start_mono;
	h->trace_dev = (uint64_t)st.st_dev;
	h->trace_ino = (uint64_t)st.st_ino;
	h->stage_off = stage_off;
	h->stage_cap = stage_cap;
	h->slots_off = slots_off;
	h->slot_size = buf_size;
	h->nslots = nslots;
	snprintf(h->path, sizeof h->path, "%s", path);
	atomic_store(&h->stage_gen, 1);
	atomic_store(&h->committed_bytes, header_bytes);
	wsp_rescue = h;
	mapped = size;
	if (!hand_over(mfd))
		unmap(); /* nobody to finish the trace: private buffers as before */
	close(mfd);
	errno = saved;
	return wsp_rescue != NULL;
}

struct wsp_buf *wsp_rescue_buf(void)
{
	struct wsp_rescue_head *h = wsp_rescue;
	if (!h)
		return NULL;
	uint64_t i = atomic_fetch_add(&h->slots_used, 1);
	if (i >= h->nslots)
		return NULL;
	return (struct wsp_buf *)((uint8_t *)h + h->slots_off + i * h->slot_size);
}

uint8_t *wsp_rescue_stage(void)
{
	return wsp_rescue ? (uint8_t *)wsp_rescue + wsp_rescue->stage_off : NULL;
}

bool wsp_rescue_owns(const void *p)
{
	const uint8_t *b = (const uint8_t *)wsp_rescue;
	return b && (const uint8_t *)p >= b && (const uint8_t *)p < b + mapped;
}

void wsp_rescue_set_state(unsigned state)
{
	if (wsp_rescue)
		atomic_store(&wsp_rescue->state, state);
}

void wsp_rescue_set_ending(unsigned how, unsigned value)
{
	if (wsp_rescue) {
		atomic_store(&wsp_rescue->ending_value, value);
		atomic_store(&wsp_rescue->ending, how);
	}
}

/* In a forked child: the memfd is the parent's, still being written. */
void wsp_rescue_reset_after_fork(void)
{
	unmap();
}
