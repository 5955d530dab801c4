/*
 * launch.h - a process's place in a parallel job (an MPI program, a Slurm
 * step), read from the environment its launcher gave it.
 *
 * Both sides use it: the recorder (preload/base/config.c) writes it into
 * the trace's PROCESS record (doc/trace-format.md, 2.4) and names files
 * by it (%r); `wsprof record` asks it whether it is one of many ranks
 * started at once, which may share one output name. The launchers are
 * looked for in a fixed order, the first with a rank wins (OpenMPI also
 * sets PMIx's variables, and a Slurm step running mpirun Slurm's): a
 * rank that is not a plain decimal number counts as not set.
 *
 * Header-only and allocation-free (getenv and snprintf of strings): the
 * recorder reads it as the process starts, inside its first hook.
 */
#ifndef WSP_LAUNCH_H
#define WSP_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct wsp_launch {
	int64_t rank;         /* -1: none */
	uint64_t size;        /* processes in the job; 0: not known */
	char id[128];         /* the job's id; "" not known */
	const char *launcher; /* "openmpi", "pmix", "pmi", "slurm"; "" none */
};

/* Where each launcher keeps the rank, the job's size and its id; Slurm
 * adds the step to the job's id (JOB.STEP), and names its size twice. */
struct wsp_launcher {
	const char *name, *rank, *size, *size_alt, *id, *id_step;
};

static const struct wsp_launcher wsp_launchers[] = {
	{ "openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", NULL, "OMPI_MCA_ess_base_jobid", NULL },
	{ "pmix", "PMIX_RANK", "PMIX_SIZE", NULL, "PMIX_NAMESPACE", NULL },
	{ "pmi", "PMI_RANK", "PMI_SIZE", NULL, "PMI_JOBID", NULL },
	{ "slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_JOB_ID", "SLURM_STEP_ID" },
};

/* A plain decimal number (digits only, below 2^63). @return whether s is one. */
static inline bool wsp_launch_number(const char *s, uint64_t *out)
{
	uint64_t n = 0;
	if (!s || !*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || n > (UINT64_C(1) << 63) / 10 - 1)
			return false;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	*out = n;
	return true;
}

/* Fill *j from the environment: rank -1 and launcher "" when no
 * launcher's rank is set. */
static inline void wsp_launch_from_env(struct wsp_launch *j)
{
	*j = (struct wsp_launch){ .rank = -1, .launcher = "" };
	for (size_t i = 0; i < sizeof wsp_launchers / sizeof *wsp_launchers; i++) {
		const struct wsp_launcher *l = &wsp_launchers[i];
		uint64_t rank;
		if (!wsp_launch_number(getenv(l->rank), &rank))
			continue;
		j->rank = (int64_t)rank;
		j->launcher = l->name;
		if (!wsp_launch_number(getenv(l->size), &j->size) && !(l->size_alt && wsp_launch_number(getenv(l->size_alt), &j->size)))
			j->size = 0;
		const char *id = getenv(l->id), *step = l->id_step ? getenv(l->id_step) : NULL;
		if (id && *id)
			snprintf(j->id, sizeof j->id, "%s%s%s", id, step && *step ? "." : "", step && *step ? step : "");
		return;
	}
}

#endif
