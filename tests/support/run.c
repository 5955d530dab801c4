/*
 * run.c - command running and file helpers for the tests (see run.h).
 * Plain POSIX: fork/execv with the output redirected to files, because
 * files never block a command the way a full pipe would.
 */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *tmp_root(void)
{
	const char *t = getenv("TMPDIR");
	return t && *t ? t : "/tmp";
}

static int capture_file(char *path, size_t cap, const char *what)
{
	snprintf(path, cap, "%s/wsprof-test-%s-XXXXXX", tmp_root(), what);
	return mkstemp(path);
}

int wt_spawn(struct wt_proc *p, const char *const argv[])
{
	int out = capture_file(p->out_path, sizeof p->out_path, "out");
	int err = capture_file(p->err_path, sizeof p->err_path, "err");
	if (out < 0 || err < 0) {
		int e = errno;
		if (out >= 0)
			close(out), unlink(p->out_path);
		if (err >= 0)
			close(err), unlink(p->err_path);
		return -e;
	}
	fflush(NULL); /* criterion's buffered output must not be written twice */
	p->pid = fork();
	if (p->pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		dup2(in, 0);
		dup2(out, 1);
		dup2(err, 2);
		execv(argv[0], (char *const *)argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	int e = errno;
	close(out);
	close(err);
	return p->pid < 0 ? -e : 0;
}

int wt_wait(struct wt_proc *p, struct wt_result *r)
{
	int st;
	memset(r, 0, sizeof *r);
	while (waitpid(p->pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	r->signaled = WIFSIGNALED(st);
	r->status = r->signaled ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	r->out = wt_read_file(p->out_path, NULL);
	r->err = wt_read_file(p->err_path, NULL);
	unlink(p->out_path);
	unlink(p->err_path);
	return r->out && r->err ? 0 : -EIO;
}

int wt_run(struct wt_result *r, const char *const argv[])
{
	struct wt_proc p;
	int e = wt_spawn(&p, argv);
	if (e < 0) {
		memset(r, 0, sizeof *r);
		r->status = 127;
		return e;
	}
	return wt_wait(&p, r);
}

void wt_result_free(struct wt_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

char *wt_tmpdir(void)
{
	char *dir = wt_path(tmp_root(), "wsprof-test-XXXXXX");
	if (dir && !mkdtemp(dir)) {
		free(dir);
		return NULL;
	}
	return dir;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void wt_tmpdir_remove(char *dir)
{
	const char *keep = getenv("WSPROF_TEST_KEEP");
	if (dir && !(keep && *keep && strcmp(keep, "0")))
		nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

char *wt_path(const char *dir, const char *fmt, ...)
{
	char name[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof name, fmt, ap);
	va_end(ap);
	char *out;
	return asprintf(&out, "%s/%s", dir, name) < 0 ? NULL : out;
}

char *wt_read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	size_t n = 0, cap = 4096;
	char *buf = malloc(cap + 1);
	for (ssize_t got; buf; n += (size_t)got) {
		if (n == cap) {
			char *bigger = realloc(buf, (cap *= 2) + 1);
			if (!bigger) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = bigger;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			got = 0;
		else if (got <= 0)
			break;
	}
	close(fd);
	if (buf) {
		buf[n] = 0;
		if (len)
			*len = n;
	}
	return buf;
}

int wt_write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	const char *p = data;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		p += w;
		len -= (size_t)w;
	}
	return close(fd) < 0 ? -errno : 0;
}

bool wt_file_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

size_t wt_count_lines(const char *s)
{
	size_t n = 0;
	for (const char *p = s; *p; p++)
		n += *p == '\n';
	return n + (*s && s[strlen(s) - 1] != '\n');
}
