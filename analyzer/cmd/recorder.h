/*
 * recorder.h - what `wsprof record` and `wsprof attach` share: finding
 * the recorder and wsprof's other files beside the program, and the
 * launcher's side of finishing traces (rescue.c).
 */
#ifndef WSP_RECORDER_H
#define WSP_RECORDER_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

/* The preload library, from $WSPROF_PRELOAD, the build tree or the
 * install prefix (record.c); says why not on stderr. */
bool wsp_find_preload(char out[PATH_MAX]);

/* rescue.c: wsprof record finishes the traces of processes that end
 * without their footer (src/rescue.h). listen: before the program starts
 * (sets WSPROF_RESCUE; false when it cannot, and traces then end as the
 * processes leave them); in_child: in the forked child before exec;
 * program: its pid; done: once waitpid has its status. */
bool wsp_rescue_listen(void);
void wsp_rescue_in_child(void);
void wsp_rescue_program(pid_t pid);
void wsp_rescue_done(pid_t pid, int status);

/* A file of wsprof's own found from this program's path: in build_dir
 * (the build tree) or where it is installed (WSPROF_PRELOAD_FROM_BINDIR),
 * its real path in out. If neither has it, says so on stderr without
 * ending the line (the caller ends it with what to do). */
bool wsp_find_beside_self(const char *name, const char *build_dir, char out[PATH_MAX]);

#endif
