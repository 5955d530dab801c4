/*
 * run.h - run commands and handle files for the integration tests.
 *
 * wt_run() runs a command to completion with its stdout and stderr in
 * temporary files, read back into strings; wt_spawn()/wt_wait() do the
 * same in two steps, for a test that must act while the command runs
 * (kill it, say). Exit statuses are reported the way a shell does: the
 * exit code, or 128 + signal number for a command killed by a signal.
 *
 * Temporary directories are made under $TMPDIR (or /tmp) and removed with
 * everything in them; set WSPROF_TEST_KEEP=1 to keep them for a look.
 */
#ifndef WT_RUN_H
#define WT_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct wt_proc {
	pid_t pid;
	char out_path[4096], err_path[4096];
};

struct wt_result {
	int status;       /* exit code, or 128 + signal */
	bool signaled;    /* killed by a signal */
	char *out, *err;  /* everything written to stdout and stderr */
};

/* Start argv (argv[0] a path) with stdout/stderr captured and stdin from
 * /dev/null. @return 0, or -errno if it could not be started. */
int wt_spawn(struct wt_proc *p, const char *const argv[]);
/* Wait for a spawned command and collect its output. */
int wt_wait(struct wt_proc *p, struct wt_result *r);
/* Both at once. A command that cannot be started gets status 127. */
int wt_run(struct wt_result *r, const char *const argv[]);
void wt_result_free(struct wt_result *r);

/* A fresh private directory. @return its path (malloc'd) or NULL. */
char *wt_tmpdir(void);
/* Remove a directory made by wt_tmpdir and everything in it, unless
 * WSPROF_TEST_KEEP is set; frees dir. */
void wt_tmpdir_remove(char *dir);

/* dir + "/" + name, formatted; malloc'd. */
char *wt_path(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A whole file, NUL-terminated; *len (if given) without the NUL. NULL if unreadable. */
char *wt_read_file(const char *path, size_t *len);
int wt_write_file(const char *path, const void *data, size_t len);
bool wt_file_exists(const char *path);
/* Lines in s: newline characters, plus one for unterminated text. */
size_t wt_count_lines(const char *s);

#endif
