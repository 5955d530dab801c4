/*
 * ranks.c - the processes of a parallel job (doc/trace-format.md 2.4,
 * PROCESS): each trace says the process's rank, the job's size and id and
 * the launcher whose environment said so.
 *
 * Each launcher's environment is set here by hand (OpenMPI, PMIx,
 * MPICH/Hydra's PMI, Slurm; the first found wins, a rank that is not a
 * plain number counts as none), with every other launcher's variables
 * unset so that a test run inside a Slurm job reads the same. `-o` with %r
 * names each rank's trace (p and the pid without a rank). Ranks started
 * at once with one -o name, or recordings sharing a name another is
 * writing, each record to a name of their own; a name nobody is writing
 * is still refused. Under a real mpirun (where OpenMPI is installed,
 * tests/progs/mpi_ranks): `mpirun wsprof record` and `wsprof record
 * mpirun`, whose rank traces are child traces of mpirun's.
 */
#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(ranks, .fini = wt_cleanup, .timeout = 120);

/* env arguments unsetting every launcher variable the recorder reads. */
#define NO_LAUNCHER                                                                                          \
	"-u", "OMPI_COMM_WORLD_RANK", "-u", "OMPI_COMM_WORLD_SIZE", "-u", "OMPI_MCA_ess_base_jobid", "-u",      \
		"PMIX_RANK", "-u", "PMIX_SIZE", "-u", "PMIX_NAMESPACE", "-u", "PMI_RANK", "-u", "PMI_SIZE", "-u", \
		"PMI_JOBID", "-u", "SLURM_PROCID", "-u", "SLURM_NTASKS", "-u", "SLURM_NPROCS", "-u",             \
		"SLURM_JOB_ID", "-u", "SLURM_STEP_ID"
#define ENV_MAX 64

struct place {
	int64_t rank; /* -1: none */
	uint64_t size;
	const char *id, *launcher; /* NULL: none */
};

/* Start `env NO_LAUNCHER SET... CMD...` (set: NAME=VALUE, cmd: the
 * command; both NULL-terminated). */
static void spawn_in(struct wt_proc *p, const char *const set[], const char *const cmd[])
{
	static const char *const none[] = { NO_LAUNCHER };
	const char *argv[ENV_MAX];
	size_t n = 0;
	argv[n++] = "/usr/bin/env";
	for (size_t i = 0; i < sizeof none / sizeof *none; i++)
		argv[n++] = none[i];
	for (size_t i = 0; set && set[i]; i++)
		argv[n++] = set[i];
	for (size_t i = 0; cmd[i]; i++)
		argv[n++] = cmd[i];
	cr_assert_lt(n, ENV_MAX);
	argv[n] = NULL;
	cr_assert_eq(wt_spawn(p, argv), 0, "cannot start %s", cmd[0]);
}

static struct wt_result run_in(const char *const set[], const char *const cmd[])
{
	struct wt_proc p;
	struct wt_result r;
	spawn_in(&p, set, cmd);
	wt_wait(&p, &r);
	return r;
}

static void expect_place(const struct wt_json *s, const struct place *want, const char *what)
{
	const struct wt_json *rank = wt_json_get(s, "process.rank");
	cr_assert(rank, "%s: the summary has no process.rank", what);
	if (want->rank < 0) {
		cr_expect_eq(rank->type, WT_JSON_NULL, "%s: a rank (%s), where none was set", what,
			     rank->text ? rank->text : "?");
	} else {
		uint64_t got = UINT64_MAX;
		cr_expect(wt_json_u64(s, "process.rank", &got) && got == (uint64_t)want->rank,
			  "%s: rank %s, not %lld", what, rank->text ? rank->text : "null", (long long)want->rank);
	}
	cr_expect_eq(wt_u64(s, "process.job_size"), want->size, "%s: job size", what);
	const char *id = wt_json_str(s, "process.job_id"), *launcher = wt_json_str(s, "process.launcher");
	cr_expect(want->id ? id && strcmp(id, want->id) == 0 : !id, "%s: job id %s, not %s", what, id ? id : "null",
		  want->id ? want->id : "null");
	cr_expect(want->launcher ? launcher && strcmp(launcher, want->launcher) == 0 : !launcher,
		  "%s: launcher %s, not %s", what, launcher ? launcher : "null", want->launcher ? want->launcher : "null");
}

static const struct {
	const char *what;
	const char *set[8];
	struct place want;
} launchers[] = {
	{ "OpenMPI (which sets PMIx's too)",
	  { "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=4", "OMPI_MCA_ess_base_jobid=3735879681", "PMIX_RANK=7",
	    "PMIX_NAMESPACE=other", "SLURM_PROCID=9", NULL },
	  { 2, 4, "3735879681", "openmpi" } },
	{ "PMIx without a size", { "PMIX_RANK=1", "PMIX_NAMESPACE=prterun-node-4242@1", "PMI_RANK=5", NULL },
	  { 1, 0, "prterun-node-4242@1", "pmix" } },
	{ "PMIx with a size", { "PMIX_RANK=3", "PMIX_SIZE=8", "PMIX_NAMESPACE=ns", NULL }, { 3, 8, "ns", "pmix" } },
	{ "MPICH's PMI", { "PMI_RANK=5", "PMI_SIZE=6", "PMI_JOBID=kvs_4242_0", "SLURM_PROCID=1", NULL },
	  { 5, 6, "kvs_4242_0", "pmi" } },
	{ "PMI without a job id", { "PMI_RANK=0", "PMI_SIZE=2", NULL }, { 0, 2, NULL, "pmi" } },
	{ "Slurm", { "SLURM_PROCID=7", "SLURM_NTASKS=16", "SLURM_JOB_ID=4242", "SLURM_STEP_ID=3", NULL },
	  { 7, 16, "4242.3", "slurm" } },
	{ "Slurm's older size, no step", { "SLURM_PROCID=0", "SLURM_NPROCS=2", "SLURM_JOB_ID=77", NULL },
	  { 0, 2, "77", "slurm" } },
	{ "ranks that are no plain numbers",
	  { "OMPI_COMM_WORLD_RANK=-1", "OMPI_COMM_WORLD_SIZE=4", "PMIX_RANK=1x", "PMI_RANK= 3", "SLURM_PROCID=",
	    NULL },
	  { -1, 0, NULL, NULL } },
	{ "a malformed rank, then a good one", { "OMPI_COMM_WORLD_RANK=+2", "PMI_RANK=12", "PMI_SIZE=x", NULL },
	  { 12, 0, NULL, "pmi" } },
	{ "no launcher", { NULL }, { -1, 0, NULL, NULL } },
};

/* The one file in dir whose name starts with prefix; NULL if there is
 * not exactly one. */
static char *only_file(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	cr_assert(d, "cannot list %s", dir);
	char *found = NULL;
	int n = 0;
	for (struct dirent *de; (de = readdir(d));) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0 && n++ == 0)
			found = wt_path(dir, "%s", de->d_name);
	}
	closedir(d);
	if (n != 1) {
		free(found);
		return NULL;
	}
	return found;
}

/* wsprof record -o DIR/PATTERN -- alloc_basic DIR/EXPECT, started with
 * the launcher variables set (NAME=VALUE, NULL-terminated) and no other. */
static void spawn_record(struct wt_proc *p, const char *dir, const char *pattern, const char *expect,
			 const char *const set[])
{
	char *out = wt_path(dir, "%s", pattern), *prog = wt_prog("alloc_basic"), *books = wt_path(dir, "%s", expect);
	spawn_in(p, set, (const char *[]){ wt_wsprof(), "record", "-o", out, "--", prog, books, NULL });
	free(books);
	free(prog);
	free(out);
}

static struct wt_result record_as(const char *dir, const char *pattern, const char *const set[])
{
	struct wt_proc p;
	struct wt_result r;
	spawn_record(&p, dir, pattern, "expect.json", set);
	wt_wait(&p, &r);
	return r;
}

Test(ranks, each_launchers_environment_gives_the_rank)
{
	for (size_t i = 0; i < sizeof launchers / sizeof *launchers; i++) {
		const char *dir = wt_test_dir();
		struct wt_result r = record_as(dir, "t.wsp", launchers[i].set);
		wt_assert_status(&r, 0, launchers[i].what);
		char *trace = wt_path(dir, "t.wsp");
		struct wt_json *s = wt_summary(trace, NULL);
		expect_place(s, &launchers[i].want, launchers[i].what);
		wt_json_free(s);
		free(trace);
		wt_result_free(&r);
	}
}

Test(ranks, percent_r_names_the_trace_by_rank)
{
	const char *dir = wt_test_dir();
	struct wt_result r = record_as(dir, "t.%r.wsp", (const char *[]){ "OMPI_COMM_WORLD_RANK=4", NULL });
	wt_assert_status(&r, 0, "wsprof record -o t.%r.wsp as rank 4");
	char *trace = wt_path(dir, "t.4.wsp");
	cr_assert(wt_file_exists(trace), "rank 4 wrote no %s; wsprof said:\n%s", trace, r.err);
	struct wt_json *s = wt_summary(trace, NULL);
	expect_place(s, &(struct place){ 4, 0, NULL, "openmpi" }, "t.4.wsp");
	wt_json_free(s);
	free(trace);
	wt_result_free(&r);
}

Test(ranks, percent_r_without_a_rank_is_p_and_the_pid)
{
	const char *dir = wt_test_dir();
	struct wt_result r = record_as(dir, "t.%r.wsp", NULL);
	wt_assert_status(&r, 0, "wsprof record -o t.%r.wsp without a rank");
	char *trace = only_file(dir, "t.p");
	cr_assert(trace, "no one trace t.pPID.wsp in %s; wsprof said:\n%s", dir, r.err);
	struct wt_json *s = wt_summary(trace, NULL);
	char want[64];
	snprintf(want, sizeof want, "/t.p%llu.wsp", (unsigned long long)wt_u64(s, "process.pid"));
	cr_expect(strstr(trace, want) && strlen(strstr(trace, want)) == strlen(want), "%s is not named %s", trace, want);
	wt_json_free(s);
	free(trace);
	wt_result_free(&r);
}

/* The traces with a rank in dir whose names start with base: one of each
 * rank 0..n-1, each complete, with the launcher and job size given, all
 * of one job id; books, if given, checks each trace's figures. */
static void expect_ranks_in(const char *dir, const char *base, size_t n, const char *launcher,
			    void (*books)(const char *dir, const char *trace))
{
	DIR *d = opendir(dir);
	cr_assert(d, "cannot list %s", dir);
	bool seen[16] = { false };
	size_t found = 0;
	char *job = NULL;
	for (struct dirent *de; (de = readdir(d));) {
		if (strncmp(de->d_name, base, strlen(base)) != 0)
			continue;
		char *trace = wt_path(dir, "%s", de->d_name);
		struct wt_json *s = wt_summary(trace, NULL);
		uint64_t rank = UINT64_MAX;
		bool complete = false;
		cr_expect(wt_json_bool(s, "complete", &complete) && complete, "%s is not complete", trace);
		if (wt_json_get(s, "process.rank")->type == WT_JSON_NULL) {
			wt_json_free(s);
			free(trace);
			continue;
		}
		cr_assert(wt_json_u64(s, "process.rank", &rank) && rank < n, "%s: no rank below %zu", trace, n);
		cr_expect(!seen[rank], "two traces of rank %llu", (unsigned long long)rank);
		seen[rank] = true;
		found++;
		expect_place(s, &(struct place){ (int64_t)rank, n, wt_json_str(s, "process.job_id"), launcher }, trace);
		const char *id = wt_json_str(s, "process.job_id");
		cr_expect(id && *id, "%s has no job id", trace);
		if (!job && id)
			job = strdup(id);
		cr_expect(!id || !job || strcmp(id, job) == 0, "%s: job %s, the others' %s", trace, id, job);
		if (books)
			books(dir, trace);
		wt_json_free(s);
		free(trace);
	}
	closedir(d);
	free(job);
	cr_expect_eq(found, n, "%zu traces %s* in %s, not one for each of %zu ranks", found, base, dir, n);
}

/* Three ranks of one job given one name: the first runs to its end (the
 * name is then taken), the other two start together; each records. */
Test(ranks, ranks_given_one_name_each_get_a_trace)
{
	const char *dir = wt_test_dir();
	struct wt_result first = record_as(dir, "same.wsp",
					   (const char *[]){ "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=3",
							     "OMPI_MCA_ess_base_jobid=99", NULL });
	wt_assert_status(&first, 0, "rank 0");
	struct wt_proc procs[2];
	for (int rank = 1; rank <= 2; rank++) {
		char set_rank[64], expect[64];
		snprintf(set_rank, sizeof set_rank, "OMPI_COMM_WORLD_RANK=%d", rank);
		snprintf(expect, sizeof expect, "expect.%d.json", rank);
		spawn_record(&procs[rank - 1], dir, "same.wsp", expect,
			     (const char *[]){ set_rank, "OMPI_COMM_WORLD_SIZE=3", "OMPI_MCA_ess_base_jobid=99", NULL });
	}
	for (int i = 0; i < 2; i++) {
		struct wt_result r;
		wt_wait(&procs[i], &r);
		wt_assert_status(&r, 0, "a rank started beside another, its -o name taken");
		cr_expect(strstr(r.err, "is another process's trace"), "rank %d does not say its name was taken:\n%s",
			  i + 1, r.err);
		cr_expect(strstr(r.err, "trace of the program (pid "), "rank %d does not say where its trace is:\n%s",
			  i + 1, r.err);
		wt_result_free(&r);
	}
	expect_ranks_in(dir, "same.wsp", 3, "openmpi", NULL);
	wt_result_free(&first);
}

static bool wait_for_files(const char *dir, const char *prefix, int n)
{
	for (int tries = 0; tries < 2000; tries++, usleep(10000)) { /* 20 s at most */
		DIR *d = opendir(dir);
		int found = 0;
		for (struct dirent *de; d && (de = readdir(d));)
			found += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
		if (d)
			closedir(d);
		if (found >= n)
			return true;
	}
	return false;
}

/* Without a launcher: recordings started while another writes the name
 * share it (the writer holds a lock on its trace); once nobody writes it,
 * the name is refused again, as any existing file is. */
Test(ranks, a_name_being_written_is_shared_a_finished_one_refused)
{
	const char *dir = wt_test_dir();
	char *out = wt_path(dir, "same.wsp"), *go = wt_path(dir, "go");
	char script[4200];
	snprintf(script, sizeof script, "while [ ! -e '%s' ]; do sleep 0.01; done", go);
	struct wt_proc procs[3];
	for (int i = 0; i < 3; i++) {
		spawn_in(&procs[i], NULL,
			 (const char *[]){ wt_wsprof(), "record", "--no-follow", "-o", out, "--", "/bin/sh", "-c", script, NULL });
		/* The first is writing its trace before the others start. */
		cr_assert(wait_for_files(dir, "same.wsp", i + 1), "recording %d wrote no trace", i + 1);
	}
	cr_assert_eq(wt_write_file(go, "", 0), 0);
	for (int i = 0; i < 3; i++) {
		struct wt_result r;
		wt_wait(&procs[i], &r);
		wt_assert_status(&r, 0, "a recording sharing a name another is writing");
		wt_result_free(&r);
	}
	struct wt_result late = record_as(dir, "same.wsp", NULL);
	wt_assert_status(&late, 1, "wsprof record -o a name no process is writing");
	cr_expect(strstr(late.err, "already exists"), "the refusal does not say why:\n%s", late.err);
	wt_result_free(&late);
	free(go);
	free(out);
}

/* ---- a real mpirun ----------------------------------------------------- */

static const char *mpirun_or_skip(void)
{
	const char *m = getenv("WSPROF_TEST_MPIRUN");
	if (!m || !*m)
		cr_skip_test("OpenMPI is not installed (mpirun and an MPI to build tests/progs/mpi_ranks with): "
			     "./dev.sh installs it (openmpi-bin, libopenmpi-dev)");
	return m;
}

/* BEFORE... mpirun --oversubscribe -np 3 TAIL... (both NULL-terminated),
 * with no launcher's variables but what mpirun sets (and its leave to run
 * as root). */
static struct wt_result run_mpirun(const char *const before[], const char *const tail[])
{
	const char *cmd[32];
	size_t n = 0;
	for (size_t i = 0; before && before[i]; i++)
		cmd[n++] = before[i];
	const char *mpi[] = { mpirun_or_skip(), "--oversubscribe", "-np", "3" };
	for (size_t i = 0; i < sizeof mpi / sizeof *mpi; i++)
		cmd[n++] = mpi[i];
	for (size_t i = 0; tail[i]; i++)
		cmd[n++] = tail[i];
	cmd[n] = NULL;
	return run_in((const char *[]){ "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", NULL }, cmd);
}

/* Each rank's trace counts exactly what mpi_ranks allocated itself (MPI_Init
 * allocates from its libraries). */
static void expect_rank_books(const char *dir, const char *trace)
{
	struct wt_json *s = wt_summary(trace, (const char *[]){ "mpi_ranks", NULL });
	uint64_t rank = wt_u64(s, "process.rank");
	char *books_path = wt_path(dir, "rank.%llu.json", (unsigned long long)rank);
	struct wt_json *books = wt_json_load(books_path);
	cr_expect_eq(wt_u64(books, "pid"), wt_u64(s, "process.pid"), "%s is not rank %llu's", trace,
		     (unsigned long long)rank);
	wt_assert_counted(s, books, trace);
	wt_json_free(books);
	wt_json_free(s);
	free(books_path);
}

/* mpirun -np 3 wsprof record -o DIR/PATTERN -- mpi_ranks DIR. @return DIR. */
static const char *mpirun_wsprof_record(const char *pattern)
{
	const char *dir = wt_test_dir();
	char *out = wt_path(dir, "%s", pattern), *prog = wt_prog("mpi_ranks");
	struct wt_result r = run_mpirun(NULL, (const char *[]){ wt_wsprof(), "record", "-o", out, "--", prog, dir, NULL });
	wt_assert_status(&r, 0, pattern);
	wt_result_free(&r);
	free(prog);
	free(out);
	return dir;
}

Test(ranks, mpirun_wsprof_record_percent_r)
{
	const char *dir = mpirun_wsprof_record("t.%r.wsp");
	for (int rank = 0; rank < 3; rank++) {
		char *trace = wt_path(dir, "t.%d.wsp", rank);
		cr_expect(wt_file_exists(trace), "mpirun wsprof record -o t.%%r.wsp wrote no %s", trace);
		free(trace);
	}
	expect_ranks_in(dir, "t.", 3, "openmpi", expect_rank_books);
}

Test(ranks, mpirun_wsprof_record_one_name)
{
	const char *dir = mpirun_wsprof_record("t.wsp");
	expect_ranks_in(dir, "t.wsp", 3, "openmpi", expect_rank_books);
}

/* wsprof record of mpirun: mpirun's trace, and among its child traces
 * (each rank forked by mpirun, then exec'd) one of each rank. */
Test(ranks, wsprof_record_mpirun)
{
	const char *dir = wt_test_dir();
	char *out = wt_path(dir, "t.wsp"), *prog = wt_prog("mpi_ranks");
	struct wt_result r = run_mpirun((const char *[]){ wt_wsprof(), "record", "-o", out, "--", NULL },
					(const char *[]){ prog, dir, NULL });
	wt_assert_status(&r, 0, "wsprof record -o t.wsp mpirun -np 3 mpi_ranks");
	struct wt_json *root = wt_summary(out, NULL);
	uint64_t launcher_pid = wt_u64(root, "process.pid");
	cr_expect(wt_json_get(root, "process.rank")->type == WT_JSON_NULL, "mpirun itself has a rank");
	wt_json_free(root);

	DIR *d = opendir(dir);
	cr_assert(d);
	size_t ranks = 0, children = 0;
	uint64_t forked_pids[64], rank_pids[3];
	for (struct dirent *de; (de = readdir(d));) {
		if (strncmp(de->d_name, "t.wsp.", 6) != 0)
			continue;
		char *trace = wt_path(dir, "%s", de->d_name);
		struct wt_json *s = wt_summary(trace, NULL);
		uint64_t from = 0;
		if (wt_json_u64(s, "process.forked_from", &from) && from == launcher_pid && children < 64)
			forked_pids[children++] = wt_u64(s, "process.pid");
		const char *launcher = wt_json_str(s, "process.launcher");
		if (launcher && strcmp(launcher, "openmpi") == 0) {
			cr_assert_lt(ranks, 3, "more than three rank traces");
			rank_pids[ranks++] = wt_u64(s, "process.pid");
		}
		wt_json_free(s);
		free(trace);
	}
	closedir(d);
	expect_ranks_in(dir, "t.wsp.", 3, "openmpi", expect_rank_books);
	for (size_t i = 0; i < ranks; i++) {
		bool forked = false;
		for (size_t k = 0; k < children; k++)
			forked |= forked_pids[k] == rank_pids[i];
		cr_expect(forked, "rank pid %llu is no child trace of mpirun's (pid %llu)",
			  (unsigned long long)rank_pids[i], (unsigned long long)launcher_pid);
	}
	wt_result_free(&r);
	free(prog);
	free(out);
}
