/*
 * real.c - real, unmodified programs under `wsprof record`, compared with
 * plain runs of the same.
 *
 * Each scenario prepares a scratch directory, runs its steps there plainly,
 * keeps what they printed, how they exited and the files they wrote, then
 * prepares the directory afresh and runs the same steps, each under
 * `wsprof record`. The recorded run must print the same (stderr once
 * wsprof's closing lines about where the traces are are set aside), exit
 * the same way and write the same files. Every trace written must be
 * complete and read by `wsprof report summary`; the root one is the
 * program's own (its executable), saw allocations, and never a free of a
 * block it did not see allocated; `wsprof record` names every trace
 * written. The programs are Debian's (./dev.sh installs them): python3
 * running part of its own test suite (libpython3.11-testsuite), perl, git
 * on a scratch repository, gcc compiling and linking a C file, sqlite3
 * running a scripted workload, zstd compressing and decompressing, rustc
 * building a threaded Rust program that then runs, javac and java with
 * threads and a garbage collection, node with a worker thread, a Go
 * program with goroutines and cgo (golang-go), and a tree of many short
 * processes: make -j2 building a small C project (tests/real/make_project),
 * whose program a shell loop then runs 200 times.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(real, .fini = wt_cleanup, .timeout = 180);

#define MAX_STEPS 8
#define MAX_FILES 4

struct step {
	const char *argv[16];          /* argv[0]: a full path, or one in the scratch directory */
	void (*normalize)(char *text); /* for output that differs from run to run (timings) */
};

struct scenario {
	const char *name;
	const char *env[16];              /* NAME=VALUE for every step */
	void (*prepare)(const char *work);
	struct step steps[MAX_STEPS];
	const char *files[MAX_FILES];     /* written by the steps, compared byte for byte */
	void (*verify)(const char *work); /* checks of the recorded run's results */
};

struct outcome {
	struct wt_result run;
	char *stderr_program;  /* stderr without wsprof's closing lines */
	size_t traces_named;   /* traces `wsprof record` said it wrote */
};

static void need_program(const char *path, const char *package)
{
	if (access(path, F_OK) != 0)
		cr_skip_test("%s is not installed: ./dev.sh installs it (Debian package %s)", path, package);
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char *path = wt_path(dir, "%s", name);
	cr_assert_eq(wt_write_file(path, text, strlen(text)), 0, "cannot write %s", path);
	free(path);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* The plain run's scratch directory goes, whatever WSPROF_TEST_KEEP says:
 * the recorded run needs the same path. */
static void remove_tree(const char *dir)
{
	cr_assert_eq(nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0, "cannot remove %s", dir);
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* wsprof record's word that it finished the trace of a process that could
 * not (a Go program ends by exit_group): said before where the traces are. */
static bool is_finishing_line(const char *line)
{
	unsigned long more;
	return (starts_with(line, "wsprof: pid ") && strstr(line, " without finishing its trace")) ||
	       sscanf(line, "wsprof: ... and %lu more traces finished by wsprof", &more) == 1;
}

/* `wsprof record` ends its stderr with lines saying where the traces are;
 * cut them off (they follow everything the program wrote) and count the
 * traces they name. Anything else from wsprof stays and fails the
 * comparison: the preload library has nothing to say about a healthy run. */
static char *split_wsprof_lines(const char *err, size_t *named)
{
	char *text = strdup(err);
	size_t len = strlen(text);
	*named = 0;
	while (len) {
		size_t start = len - 1;
		while (start && text[start - 1] != '\n')
			start--;
		const char *line = text + start;
		unsigned long more;
		if (starts_with(line, "wsprof: trace of ")) {
			(*named)++;
		} else if (sscanf(line, "wsprof: ... and %lu more traces of", &more) == 1) {
			*named += more;
		} else if (!starts_with(line, "wsprof: see it with: ") && !is_finishing_line(line) &&
			   !(starts_with(line, "wsprof: all ") && strstr(line, " as one job: wsprof report summary "))) {
			break;
		}
		text[start] = 0;
		len = start;
	}
	return text;
}

static void run_step(const struct scenario *s, const struct step *st, const char *work, const char *trace,
		     struct outcome *out)
{
	const char *argv[64];
	size_t n = 0;
	argv[n++] = "/usr/bin/env";
	argv[n++] = "-C";
	argv[n++] = work;
	for (size_t i = 0; s->env[i]; i++)
		argv[n++] = s->env[i];
	if (trace) {
		argv[n++] = wt_wsprof();
		argv[n++] = "record";
		argv[n++] = "-o";
		argv[n++] = trace;
		argv[n++] = "--";
	}
	for (size_t i = 0; st->argv[i]; i++)
		argv[n++] = st->argv[i];
	argv[n] = NULL;
	int err = wt_run(&out->run, argv);
	cr_assert_eq(err, 0, "%s: cannot run %s: %s", s->name, st->argv[0], strerror(-err));
	out->stderr_program = trace ? split_wsprof_lines(out->run.err, &out->traces_named) : strdup(out->run.err);
	if (st->normalize) {
		st->normalize(out->run.out);
		st->normalize(out->stderr_program);
	}
}

static void outcome_free(struct outcome *o)
{
	wt_result_free(&o->run);
	free(o->stderr_program);
}

static const char *step_text(const struct step *st, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	for (size_t i = 0; st->argv[i] && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? " " : "", st->argv[i]);
	return buf;
}

/* The traces of one recorded step: `base` and `base.*` in `dir`. */
static size_t check_traces(const char *dir, const char *base, const char *work, const struct step *st,
			   const char *what)
{
	char *program = st->argv[0][0] == '/' ? strdup(st->argv[0]) : wt_path(work, "%s", st->argv[0]);
	DIR *d = opendir(dir);
	cr_assert(d, "cannot list %s", dir);
	size_t found = 0, baselen = strlen(base);
	bool root_seen = false;
	for (struct dirent *de; (de = readdir(d));) {
		if (strncmp(de->d_name, base, baselen) != 0 || (de->d_name[baselen] && de->d_name[baselen] != '.'))
			continue;
		found++;
		char *trace = wt_path(dir, "%s", de->d_name);
		struct wt_json *s = wt_summary(trace, NULL);
		bool complete = false;
		cr_expect(wt_json_bool(s, "complete", &complete) && complete, "%s: trace %s is not complete", what,
			  trace);
		uint64_t allocations = 0, frees = 0;
		wt_json_u64(s, "kinds.heap.allocations", &allocations);
		wt_json_u64(s, "kinds.heap.frees", &frees);
		cr_expect_leq(frees, allocations, "%s: trace %s has more heap frees than allocations", what, trace);
		if (!de->d_name[baselen]) {
			root_seen = true;
			char exe[PATH_MAX];
			const char *got = wt_json_str(s, "process.exe");
			cr_expect(realpath(program, exe) && got && strcmp(got, exe) == 0,
				  "%s: the root trace is of %s, not of the program (%s)", what, got ? got : "(none)",
				  st->argv[0]);
			cr_expect_gt(allocations, 0, "%s: the root trace saw no heap allocation", what);
			cr_expect_eq(wt_u64(s, "untracked_frees"), 0,
				     "%s: the program freed blocks whose allocation wsprof missed", what);
		}
		wt_json_free(s);
		free(trace);
	}
	closedir(d);
	free(program);
	cr_expect(root_seen, "%s: no trace %s/%s was written", what, dir, base);
	return found;
}

static char *read_or_null(const char *dir, const char *name, size_t *len)
{
	char *path = wt_path(dir, "%s", name);
	char *data = wt_read_file(path, len);
	free(path);
	return data;
}

static void run_scenario(const struct scenario *s)
{
	const char *base = wt_test_dir();
	char *work = wt_path(base, "work"), *traces = wt_path(base, "traces");
	cr_assert_eq(mkdir(traces, 0755), 0);
	struct outcome plain[MAX_STEPS] = { 0 }, recorded[MAX_STEPS] = { 0 };
	char *plain_files[MAX_FILES] = { 0 };
	size_t plain_len[MAX_FILES] = { 0 };

	cr_assert_eq(mkdir(work, 0755), 0);
	s->prepare(work);
	for (size_t i = 0; s->steps[i].argv[0]; i++)
		run_step(s, &s->steps[i], work, NULL, &plain[i]);
	for (size_t f = 0; s->files[f]; f++) {
		plain_files[f] = read_or_null(work, s->files[f], &plain_len[f]);
		cr_assert(plain_files[f], "%s: the plain run wrote no %s", s->name, s->files[f]);
	}
	remove_tree(work);

	cr_assert_eq(mkdir(work, 0755), 0);
	s->prepare(work);
	for (size_t i = 0; s->steps[i].argv[0]; i++) {
		char base_name[32], *trace, what[512];
		snprintf(base_name, sizeof base_name, "step%zu.wsp", i + 1);
		trace = wt_path(traces, "%s", base_name);
		step_text(&s->steps[i], what, sizeof what);
		run_step(s, &s->steps[i], work, trace, &recorded[i]);

		cr_expect_eq(recorded[i].run.status, plain[i].run.status,
			     "%s: exit status %d under wsprof, %d without; stderr:\n%s", what, recorded[i].run.status,
			     plain[i].run.status, recorded[i].run.err);
		cr_expect_str_eq(recorded[i].run.out, plain[i].run.out, "%s: stdout differs under wsprof", what);
		cr_expect_str_eq(recorded[i].stderr_program, plain[i].stderr_program,
				 "%s: stderr differs under wsprof", what);
		size_t found = check_traces(traces, base_name, work, &s->steps[i], what);
		cr_expect_eq(found, recorded[i].traces_named, "%s: %zu traces written, wsprof record named %zu", what,
			     found, recorded[i].traces_named);
		free(trace);
	}
	for (size_t f = 0; s->files[f]; f++) {
		size_t len = 0;
		char *data = read_or_null(work, s->files[f], &len);
		cr_expect(data && len == plain_len[f] && memcmp(data, plain_files[f], len) == 0,
			  "%s: %s differs from the plain run's", s->name, s->files[f]);
		free(data);
		free(plain_files[f]);
	}
	if (s->verify)
		s->verify(work);
	for (size_t i = 0; s->steps[i].argv[0]; i++) {
		outcome_free(&plain[i]);
		outcome_free(&recorded[i]);
	}
	free(work);
	free(traces);
}

/* ---- python3 ---------------------------------------------------------- */

/* unittest's "Ran N tests in 0.123s": the time is the only thing allowed
 * to differ. */
static void drop_test_time(char *text)
{
	for (char *p = text; (p = strstr(p, "Ran ")); p += 4) {
		char *in = strstr(p, " tests in ");
		if (!in || memchr(p, '\n', (size_t)(in - p)))
			continue;
		char *num = in + strlen(" tests in "), *end = num;
		while ((*end >= '0' && *end <= '9') || *end == '.')
			end++;
		if (end > num && *end == 's')
			memmove(num, end, strlen(end) + 1);
	}
}

static void no_preparation(const char *work)
{
	(void)work;
}

Test(real, python3_runs_part_of_its_own_test_suite)
{
	need_program("/usr/bin/python3", "python3");
	need_program("/usr/lib/python3.11/test/test_bisect.py", "libpython3.11-testsuite");
	/* Test modules of Python's own suite that run in a second, one of
	 * which starts a child interpreter through subprocess (vfork, and
	 * close_range over every descriptor in the child). */
	struct scenario s = {
		.name = "python3",
		.env = { "PYTHONDONTWRITEBYTECODE=1", "PYTHONHASHSEED=0", NULL },
		.prepare = no_preparation,
		.steps = { { { "/usr/bin/python3", "-m", "unittest", "test.test_bisect", "test.test_textwrap",
			       "test.test_fractions", "test.test_json.test_tool.TestTool.test_stdin_stdout", NULL },
			     drop_test_time } },
	};
	run_scenario(&s);
}

/* ---- perl ------------------------------------------------------------- */

static const char perl_script[] =
	"use strict; use warnings;\n"
	"my %h;\n"
	"for my $i (1 .. 40000) { $h{\"key$i\"} = join(',', map { $_ * $i } 1 .. 5); }\n"
	"my @k = sort { length($a) <=> length($b) || $a cmp $b } keys %h;\n"
	"(my $t = join('', map { $h{$_} } @k[0 .. 1999])) =~ s/(\\d+)/<$1>/g;\n"
	"my %count; $count{$_}++ for split //, $t;\n"
	"printf \"%d keys, %d characters, %d distinct\\n\", scalar(@k), length($t), scalar(keys %count);\n"
	"print join(' ', map { \"$_=$count{$_}\" } sort keys %count), \"\\n\";\n"
	"my @rows = map { [$_, 'x' x ($_ % 300)] } 1 .. 20000;\n"
	"my $sum = 0; $sum += length($_->[1]) for @rows;\n"
	"print \"$sum\\n\";\n"
	"open(my $out, '>', 'words.txt') or die; print $out \"$_\\n\" for @k[0 .. 999]; close $out;\n"
	"warn \"perl: done\\n\";\n"
	"exit 3;\n";

static void perl_prepare(const char *work)
{
	write_text(work, "work.pl", perl_script);
}

Test(real, perl_hashes_sorts_and_regexes)
{
	need_program("/usr/bin/perl", "perl-base");
	struct scenario s = {
		.name = "perl",
		.env = { "PERL_HASH_SEED=0", "PERL_PERTURB_KEYS=0", NULL },
		.prepare = perl_prepare,
		.steps = { { { "/usr/bin/perl", "work.pl", NULL } } },
		.files = { "words.txt", NULL },
	};
	run_scenario(&s);
}

/* ---- git -------------------------------------------------------------- */

static void git_prepare(const char *work)
{
	char *repo = wt_path(work, "repo");
	cr_assert_eq(mkdir(repo, 0755), 0);
	for (int f = 1; f <= 40; f++) {
		char name[32], text[8192];
		size_t n = 0;
		for (int line = f; line <= 600 && n < sizeof text - 16; line++)
			n += (size_t)snprintf(text + n, sizeof text - n, "%d\n", line);
		snprintf(name, sizeof name, "f%d.txt", f);
		write_text(repo, name, text);
	}
	free(repo);
}

Test(real, git_on_a_scratch_repository)
{
	need_program("/usr/bin/git", "git");
	struct scenario s = {
		.name = "git",
		/* Fixed names and dates: the same commits, the same hashes. */
		.env = { "HOME=.", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=t@example.org",
			 "GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=t@example.org",
			 "GIT_AUTHOR_DATE=2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z", NULL },
		.prepare = git_prepare,
		.steps = {
			{ { "/usr/bin/git", "-C", "repo", "init", "-b", "main", NULL } },
			{ { "/usr/bin/git", "-C", "repo", "add", ".", NULL } },
			{ { "/usr/bin/git", "-C", "repo", "commit", "-m", "first", NULL } },
			{ { "/usr/bin/git", "-C", "repo", "mv", "f1.txt", "one.txt", NULL } },
			{ { "/usr/bin/git", "-C", "repo", "commit", "-m", "second", NULL } },
			{ { "/usr/bin/git", "-C", "repo", "log", "--stat", "--format=%H %an %s", NULL } },
			{ { "/usr/bin/git", "-C", "repo", "show", "HEAD~1:f2.txt", NULL } },
			{ { "/usr/bin/git", "-C", "repo", "cat-file", "-p", "HEAD^{tree}", NULL } },
		},
	};
	run_scenario(&s);
}

/* ---- gcc -------------------------------------------------------------- */

static const char c_program[] =
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"\n"
	"struct node {\n"
	"	struct node *next;\n"
	"	char name[24];\n"
	"};\n"
	"\n"
	"static int twice(int x)\n"
	"{\n"
	"	int unused; /* a warning, so that stderr has something to compare */\n"
	"	return 2 * x;\n"
	"}\n"
	"\n"
	"int main(void)\n"
	"{\n"
	"	struct node *head = NULL;\n"
	"	for (int i = 0; i < 1000; i++) {\n"
	"		struct node *n = malloc(sizeof *n);\n"
	"		snprintf(n->name, sizeof n->name, \"node-%d\", i);\n"
	"		n->next = head;\n"
	"		head = n;\n"
	"	}\n"
	"	unsigned long sum = 0;\n"
	"	for (struct node *n = head; n; n = n->next)\n"
	"		sum += strlen(n->name);\n"
	"	printf(\"%lu characters in 1000 names\\n\", sum);\n"
	"	while (head) {\n"
	"		struct node *next = head->next;\n"
	"		free(head);\n"
	"		head = next;\n"
	"	}\n"
	"	return twice(2);\n"
	"}\n";

static void gcc_prepare(const char *work)
{
	write_text(work, "names.c", c_program);
}

Test(real, gcc_compiles_and_links_a_c_file)
{
	need_program("/usr/bin/gcc", "gcc");
	/* The driver runs cc1, as and collect2, which runs ld: a trace each.
	 * The program built under wsprof is the same, and runs the same. */
	struct scenario s = {
		.name = "gcc",
		.env = { "LC_ALL=C", NULL },
		.prepare = gcc_prepare,
		.steps = {
			{ { "/usr/bin/gcc", "-O2", "-Wall", "-c", "names.c", "-o", "names.o", NULL } },
			{ { "/usr/bin/gcc", "names.o", "-o", "names", NULL } },
			{ { "./names", NULL } },
		},
		.files = { "names.o", "names", NULL },
	};
	run_scenario(&s);
}

/* ---- make, and a shell loop ----------------------------------------- */

/* make -j2 prints its commands in the order the jobs start. */
static int by_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void sort_lines(char *text)
{
	char *copy = strdup(text), *lines[256], *save = NULL;
	size_t n = 0;
	for (char *l = strtok_r(copy, "\n", &save); l && n < 256; l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	qsort(lines, n, sizeof *lines, by_text);
	size_t at = 0;
	for (size_t i = 0; i < n; i++)
		at += (size_t)sprintf(text + at, "%s\n", lines[i]);
	free(copy);
}

static void make_project_prepare(const char *work)
{
	static const char *const files[] = { "Makefile", "project.h", "main.c", "words.c", "table.c", "order.c" };
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		char *from = wt_path(getenv("WSPROF_SOURCE_ROOT"), "tests/real/make_project/%s", files[i]);
		char *text = wt_read_file(from, NULL);
		cr_assert(text, "cannot read %s", from);
		write_text(work, files[i], text);
		free(text);
		free(from);
	}
}

Test(real, make_builds_in_parallel_then_a_shell_runs_200_programs)
{
	need_program("/usr/bin/make", "make");
	need_program("/usr/bin/gcc", "gcc");
	/* make, its shells, cc, cc1, as, collect2, ld: a trace each; then the
	 * shell and 200 short processes. */
	struct scenario s = {
		.name = "make",
		.env = { "LC_ALL=C", NULL },
		.prepare = make_project_prepare,
		.steps = {
			{ { "/usr/bin/make", "-j2", NULL }, sort_lines },
			{ { "./app", NULL } },
			{ { "/bin/sh", "-c", "i=0; while [ $i -lt 200 ]; do ./app --quiet || exit 1; i=$((i + 1)); done",
			    NULL } },
		},
		.files = { "main.o", "order.o", "app", NULL },
	};
	run_scenario(&s);
}

/* ---- sqlite3 ---------------------------------------------------------- */

static const char sql_script[] =
	"CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL);\n"
	"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)\n"
	"INSERT INTO t(name, score) SELECT printf('row-%05d', i), (i * 7919) % 1000 / 10.0 FROM n;\n"
	"CREATE INDEX t_score ON t(score);\n"
	"SELECT count(*), sum(score), min(name), max(name) FROM t;\n"
	"SELECT name, score FROM t WHERE score > 99.5 ORDER BY score DESC, name LIMIT 5;\n"
	"UPDATE t SET score = score + 1 WHERE id % 3 = 0;\n"
	"DELETE FROM t WHERE id % 5 = 0;\n"
	"SELECT count(*), round(avg(score), 3) FROM t;\n"
	"SELECT substr(name, 1, 5) AS p, count(*) FROM t GROUP BY p;\n"
	"SELECT * FROM no_such_table;\n";

static void sqlite_prepare(const char *work)
{
	write_text(work, "work.sql", sql_script);
}

Test(real, sqlite3_runs_a_scripted_workload)
{
	need_program("/usr/bin/sqlite3", "sqlite3");
	/* The last statement fails: an error on stderr and a nonzero exit. */
	struct scenario s = {
		.name = "sqlite3",
		.env = { "HOME=.", NULL },
		.prepare = sqlite_prepare,
		.steps = { { { "/usr/bin/sqlite3", "-batch", "work.db", ".read work.sql", NULL } } },
		.files = { "work.db", NULL },
	};
	run_scenario(&s);
}

/* ---- zstd ------------------------------------------------------------- */

#define ZSTD_INPUT_LINES 100000

/* Text that compresses like text: words picked by a fixed generator. */
static void zstd_prepare(const char *work)
{
	static const char *const words[] = { "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta" };
	char *path = wt_path(work, "data");
	FILE *f = fopen(path, "w");
	cr_assert(f, "cannot write %s", path);
	uint64_t x = 7;
	for (int line = 0; line < ZSTD_INPUT_LINES; line++) {
		for (int w = 0; w < 6; w++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			fprintf(f, "%s ", words[x >> 61]);
		}
		fprintf(f, "%d\n", line);
	}
	cr_assert_eq(fclose(f), 0);
	free(path);
}

static void zstd_verify(const char *work)
{
	size_t a, b;
	char *data = read_or_null(work, "data", &a), *back = read_or_null(work, "back", &b);
	cr_expect(data && back && a == b && memcmp(data, back, a) == 0,
		  "zstd under wsprof did not give back the data it compressed");
	free(data);
	free(back);
}

Test(real, zstd_compresses_and_decompresses)
{
	need_program("/usr/bin/zstd", "zstd");
	/* -T2: compression on worker threads of zstd's own. */
	struct scenario s = {
		.name = "zstd",
		.env = { NULL },
		.prepare = zstd_prepare,
		.steps = {
			{ { "/usr/bin/zstd", "-q", "-T2", "-6", "data", "-o", "data.zst", NULL } },
			{ { "/usr/bin/zstd", "-q", "-d", "data.zst", "-o", "back", NULL } },
			{ { "/usr/bin/zstd", "-l", "data.zst", NULL } },
			{ { "/usr/bin/zstd", "-t", "no-such-file.zst", NULL } },
		},
		.files = { "data.zst", "back", NULL },
		.verify = zstd_verify,
	};
	run_scenario(&s);
}

/* ---- Rust, Java, node: runtimes that hung or lost their end -----------
 * Every Rust program (std's start-up asks glibc for the main thread's
 * stack, which allocates holding a lock) and the JVM's threads hung under
 * wsprof before it interposed pthread_getattr_np (tests/preload/locks.c). */

static const char rust_program[] =
	"use std::collections::{BTreeMap, HashMap};\n"
	"use std::sync::{Arc, Mutex};\n"
	"use std::thread;\n"
	"fn main() {\n"
	"    let totals = Arc::new(Mutex::new(BTreeMap::new()));\n"
	"    let workers: Vec<_> = (0..4u64).map(|id| {\n"
	"        let totals = Arc::clone(&totals);\n"
	"        thread::spawn(move || {\n"
	"            let mut words: HashMap<String, u64> = HashMap::new();\n"
	"            for i in 0..50000u64 { *words.entry(format!(\"w{}\", (i * 7919 + id) % 5000)).or_insert(0) += i; }\n"
	"            let mut v: Vec<u64> = words.values().cloned().collect();\n"
	"            v.sort();\n"
	"            totals.lock().unwrap().insert(id, (words.len(), v[v.len() / 2]));\n"
	"        })\n"
	"    }).collect();\n"
	"    for w in workers { w.join().unwrap(); }\n"
	"    for (id, (n, median)) in totals.lock().unwrap().iter() { println!(\"worker {} words {} median {}\", id, n, median); }\n"
	"}\n";

static void rust_prepare(const char *work)
{
	write_text(work, "words.rs", rust_program);
}

/* The summary of a recorded step's trace (work/../traces/stepN.wsp). */
static struct wt_json *step_summary(const char *work, int step)
{
	char *trace = wt_path(work, "../traces/step%d.wsp", step);
	struct wt_json *s = wt_summary(trace, NULL);
	free(trace);
	return s;
}

static void expect_exit_0(const struct wt_json *s, const char *who)
{
	const char *how = wt_json_str(s, "ended.how");
	cr_expect(how && strcmp(how, "exit") == 0 && wt_u64(s, "ended.exit_status") == 0,
		  "%s: the trace does not say the program exited with status 0", who);
}

/* Each worker formats 50,000 keys, a String each (dropped at once when
 * the key is there already): at least 200,000 heap allocations. */
static void rust_verify(const char *work)
{
	struct wt_json *s = step_summary(work, 2);
	cr_expect_geq(wt_u64(s, "kinds.heap.allocations"), 200000, "the Rust program formats 200,000 keys");
	cr_expect_geq(wt_u64(s, "kinds.heap.frees"), 190000, "most formatted keys are dropped");
	expect_exit_0(s, "words");
	wt_json_free(s);
}

/* A runtime's heap: the JVM reserves it (PROT_NONE) and commits what it
 * uses, which is then mmap "in reservations", the rest mmap_reserved. */
static void expect_runtime_heap(const char *work, int step, const char *who)
{
	struct wt_json *s = step_summary(work, step);
	cr_expect_gt(wt_u64(s, "kinds.mmap.reservations"), 0, "%s reserved no address space", who);
	cr_expect_gt(wt_u64(s, "kinds.mmap.reserved_peak_bytes"), wt_u64(s, "kinds.mmap.peak_bytes"),
		     "%s: reserved address space is not larger than what it committed", who);
	cr_expect_gt(wt_u64(s, "kinds.mmap.in_reservations_bytes_at_end"), 0,
		     "%s committed nothing inside its reservations", who);
	expect_exit_0(s, who);
	wt_json_free(s);
}

static void java_verify(const char *work)
{
	expect_runtime_heap(work, 2, "java Words");
}

/* V8 reserves its pointer cage and code range and commits pages of them. */
static void node_verify(const char *work)
{
	expect_runtime_heap(work, 1, "node work.js");
}

Test(real, rust_compiles_and_runs_threads_and_collections)
{
	need_program("/usr/bin/rustc", "rustc");
	/* rustc is itself a Rust program (with LLVM inside); the program it
	 * builds has four threads, hash maps and a B-tree. */
	struct scenario s = {
		.name = "rust",
		.env = { "LC_ALL=C", NULL },
		.prepare = rust_prepare,
		.steps = {
			{ { "/usr/bin/rustc", "-O", "-C", "codegen-units=1", "words.rs", "-o", "words", NULL } },
			{ { "./words", NULL } },
		},
		.files = { NULL },
		.verify = rust_verify,
	};
	run_scenario(&s);
}

static const char java_program[] =
	"import java.util.*;\n"
	"public class Words {\n"
	"  public static void main(String[] args) throws Exception {\n"
	"    Map<Integer, Integer> sizes = Collections.synchronizedMap(new TreeMap<>());\n"
	"    Thread[] t = new Thread[4];\n"
	"    for (int k = 0; k < 4; k++) {\n"
	"      final int id = k;\n"
	"      t[k] = new Thread(() -> {\n"
	"        Map<String, Integer> m = new HashMap<>();\n"
	"        for (int i = 0; i < 200000; i++) m.merge(\"w\" + ((i * 7919 + id) % 50000), 1, Integer::sum);\n"
	"        sizes.put(id, m.size());\n"
	"      });\n"
	"      t[k].start();\n"
	"    }\n"
	"    for (Thread x : t) x.join();\n"
	"    System.gc();\n"
	"    System.out.println(sizes);\n"
	"  }\n"
	"}\n";

static void java_prepare(const char *work)
{
	write_text(work, "Words.java", java_program);
}

Test(real, java_compiles_and_runs_threads_and_gc)
{
	need_program("/usr/bin/javac", "openjdk-17-jdk-headless");
	/* javac and java are both the JVM: dozens of threads, a garbage
	 * collector, memory reserved and committed piecemeal. */
	struct scenario s = {
		.name = "java",
		.env = { "LC_ALL=C", NULL },
		.prepare = java_prepare,
		.steps = {
			{ { "/usr/bin/javac", "Words.java", NULL } },
			{ { "/usr/bin/java", "-Xmx256m", "-cp", ".", "Words", NULL } },
			{ { "/usr/bin/java", "-version", NULL } },
		},
		.files = { "Words.class", NULL },
		.verify = java_verify,
	};
	run_scenario(&s);
}

static const char node_program[] =
	"const { Worker, isMainThread, parentPort } = require('worker_threads');\n"
	"if (isMainThread) {\n"
	"  const w = new Worker(__filename);\n"
	"  w.on('message', (n) => { const m = new Map(); for (let i = 0; i < 100000; i++) m.set('k' + i, i);\n"
	"    console.log('worker', n, 'main', m.size); });\n"
	"} else {\n"
	"  const a = []; for (let i = 0; i < 200000; i++) a.push({ i, s: 'v' + i });\n"
	"  parentPort.postMessage(a.length);\n"
	"}\n";

static void node_prepare(const char *work)
{
	write_text(work, "work.js", node_program);
}

Test(real, node_runs_a_worker_thread)
{
	need_program("/usr/bin/node", "nodejs");
	struct scenario s = {
		.name = "node",
		.env = { "LC_ALL=C", NULL },
		.prepare = node_prepare,
		.steps = {
			{ { "/usr/bin/node", "work.js", NULL } },
		},
		.files = { NULL },
		.verify = node_verify,
	};
	run_scenario(&s);
}

/* ---- Go: a runtime that ends its process with exit_group ---------------
 * Go's runtime never calls exit: its process ends by the raw exit_group
 * system call, so only wsprof record can finish the trace (from the
 * buffers the process shares with it, src/rescue.h). With cgo, its
 * threads are pthreads and C.malloc is the traced malloc. */

static const char go_program[] =
	"package main\n"
	"\n"
	"/*\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"static void *keep(size_t n) { void *p = malloc(n); memset(p, 1, n); return p; }\n"
	"*/\n"
	"import \"C\"\n"
	"\n"
	"import (\n"
	"\t\"fmt\"\n"
	"\t\"sync\"\n"
	")\n"
	"\n"
	"func main() {\n"
	"\tvar wg sync.WaitGroup\n"
	"\twords := make([]int, 4)\n"
	"\tfor id := 0; id < 4; id++ {\n"
	"\t\twg.Add(1)\n"
	"\t\tgo func(id int) {\n"
	"\t\t\tdefer wg.Done()\n"
	"\t\t\tm := map[string]int{}\n"
	"\t\t\tfor i := 0; i < 100000; i++ {\n"
	"\t\t\t\tm[fmt.Sprint(\"w\", (i*7919+id)%5000)] += i\n"
	"\t\t\t}\n"
	"\t\t\tfor i := 0; i < 100; i++ {\n"
	"\t\t\t\tC.free(C.malloc(C.size_t(1000 + id)))\n"
	"\t\t\t}\n"
	"\t\t\twords[id] = len(m)\n"
	"\t\t}(id)\n"
	"\t}\n"
	"\twg.Wait()\n"
	"\tC.keep(1 << 20) // live when the process ends\n"
	"\tfmt.Println(\"words\", words)\n"
	"}\n";

/* Built untraced, with a build cache shared by the plain and the recorded
 * run's preparations (the go command runs a compiler per package). */
static void go_prepare(const char *work)
{
	write_text(work, "words.go", go_program);
	char *cache = wt_path(work, "../gocache"), *gopath = wt_path(work, "../gopath"); /* beside work: kept */
	char *cache_env = wt_path("", "GOCACHE=%s", cache), *gopath_env = wt_path("", "GOPATH=%s", gopath);
	struct wt_result r;
	wt_run(&r, (const char *[]){ "/usr/bin/env", "-C", work, cache_env + 1, gopath_env + 1, "GO111MODULE=off",
				     "CGO_ENABLED=1", "/usr/bin/go", "build", "-o", "words", "words.go", NULL });
	wt_assert_status(&r, 0, "go build");
	wt_result_free(&r);
	free(cache_env), free(gopath_env), free(cache), free(gopath);
}

/* What the program knows of its C allocations: 400 blocks freed and 1 MiB
 * live at the end, however Go's own start-up allocates besides. */
static void go_verify(const char *work)
{
	struct wt_json *s = step_summary(work, 1);
	cr_expect_geq(wt_u64(s, "kinds.heap.allocations"), 401, "C.malloc was called 401 times");
	cr_expect_geq(wt_u64(s, "kinds.heap.frees"), 400, "C.free was called 400 times");
	cr_expect_geq(wt_u64(s, "kinds.heap.leaked_bytes"), 1u << 20, "1 MiB is live when the program ends");
	expect_exit_0(s, "the Go program");
	bool by_record = false;
	cr_expect(wt_json_bool(s, "ended.finished_by_wsprof_record", &by_record) && by_record,
		  "exit_group left the trace to wsprof record, which should say it finished it");
	wt_json_free(s);
}

Test(real, go_runs_goroutines_with_cgo)
{
	need_program("/usr/bin/go", "golang-go");
	struct scenario s = {
		.name = "go",
		.env = { "LC_ALL=C", NULL },
		.prepare = go_prepare,
		.steps = {
			{ { "./words", NULL } },
		},
		.files = { NULL },
		.verify = go_verify,
	};
	run_scenario(&s);
}
