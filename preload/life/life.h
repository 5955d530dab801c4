/*
 * life.h - the life of a traced process: start, exit, fork, exec, and the fatal signals that finish its trace.
 * wsp.h has what every file shares and the rule every hook follows.
 */
#ifndef WSP_LIFE_H
#define WSP_LIFE_H

#include "wsp.h"
#include "hooks.h" /* the layer below */

/* ---- signals.c ------------------------------------------------------ */

/* Catch the fatal signals the program leaves at their default action, to
 * finish the trace before the default action happens. */
void wsp_signals_install(void);

/* ---- process.c ------------------------------------------------------ */

extern pid_t wsp_pid;            /* pid whose trace this is */
/* Start recording a process already running (attach.c): a new trace at
 * output. @return 0, -EBUSY when it records already (or was preloaded). */
int wsp_process_attach(const char *output);
/* End it: the trace finished, wsprof's threads gone (with the guard held). */
void wsp_process_detach(void);
/* Remove libwsprof from an environment (for not following exec). */
char **wsp_env_without_preload(char *const envp[]);

#endif
