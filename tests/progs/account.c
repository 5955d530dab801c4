/*
 * account.c - the test programs' books and expect files (see account.h).
 * No malloc, no stdio streams: snprintf into fixed buffers, write(2).
 */
#include "account.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void account_alloc(struct account *a, uint64_t size)
{
	a->allocations++;
	a->total_bytes += size;
	a->live_blocks++;
	a->live_bytes += size;
	if (a->live_bytes > a->peak_bytes)
		a->peak_bytes = a->live_bytes;
}

void account_free(struct account *a, uint64_t size)
{
	a->frees++;
	a->live_blocks--;
	a->live_bytes -= size;
}

void account_fail(struct account *a)
{
	a->failed++;
}

void account_resize(struct account *a, uint64_t old_size, uint64_t new_size)
{
	account_free(a, old_size);
	account_alloc(a, new_size);
}

void account_trim(struct account *a, uint64_t bytes)
{
	a->live_bytes -= bytes;
}

static void append(struct expect *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(struct expect *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(e->text + e->len, sizeof e->text - e->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof e->text - e->len)
		e->overflow = true;
	else
		e->len += (size_t)n;
}

static void member(struct expect *e, const char *name)
{
	append(e, "%s\"%s\":", e->need_comma ? "," : "", name);
	e->need_comma = true;
}

void expect_init(struct expect *e)
{
	memset(e, 0, sizeof *e);
	append(e, "{");
	e->depth = 1;
}

void expect_open(struct expect *e, const char *name)
{
	member(e, name);
	append(e, "{");
	e->depth++;
	e->need_comma = false;
}

void expect_close(struct expect *e)
{
	append(e, "}");
	e->depth--;
	e->need_comma = true;
}

void expect_uint(struct expect *e, const char *name, uint64_t value)
{
	member(e, name);
	append(e, "%llu", (unsigned long long)value);
}

void expect_string(struct expect *e, const char *name, const char *value)
{
	member(e, name);
	append(e, "\"");
	for (const char *s = value; *s; s++)
		append(e, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
	append(e, "\"");
}

void expect_account(struct expect *e, const char *kind, const struct account *a)
{
	expect_open(e, kind);
	expect_uint(e, "allocations", a->allocations);
	expect_uint(e, "frees", a->frees);
	expect_uint(e, "failed", a->failed);
	expect_uint(e, "peak_bytes", a->peak_bytes);
	expect_uint(e, "leaked_bytes", a->live_bytes);
	expect_uint(e, "leaked_blocks", a->live_blocks);
	expect_uint(e, "total_bytes", a->total_bytes);
	expect_close(e);
}

void expect_raw(struct expect *e, const char *name, const char *json)
{
	member(e, name);
	size_t n = strlen(json);
	while (n && (json[n - 1] == '\n' || json[n - 1] == ' '))
		n--;
	append(e, "%.*s", (int)n, json);
}

int expect_write_fd(struct expect *e, int fd)
{
	while (e->depth > 0)
		expect_close(e);
	append(e, "\n");
	if (e->overflow) {
		complain("expect: the document does not fit in %zu bytes", sizeof e->text);
		return -ENOSPC;
	}
	for (size_t done = 0; done < e->len;) {
		ssize_t w = write(fd, e->text + done, e->len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		done += (size_t)w;
	}
	return 0;
}

int expect_write(struct expect *e, const char *path)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.partial", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	int err = expect_write_fd(e, fd);
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		complain("expect: cannot write %s", path);
	return err;
}

static void line_to(int fd, const char *fmt, va_list ap)
{
	char line[1024];
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof line - 2)
		n = sizeof line - 2;
	line[n++] = '\n';
	for (ssize_t done = 0, w; done < n; done += w)
		if ((w = write(fd, line + done, (size_t)(n - done))) <= 0)
			return;
}

void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	line_to(STDOUT_FILENO, fmt, ap);
	va_end(ap);
}

void complain(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	line_to(STDERR_FILENO, fmt, ap);
	va_end(ap);
}
