/*
 * secure_probe - does the loader treat this run as privileged?
 *
 * usage: secure_probe
 *
 * Prints "AT_SECURE=N" (the kernel's word to the loader: 1 when the
 * program runs with privileges its caller does not have, and LD_PRELOAD
 * is then ignored) and "traced=N" (whether a preloaded libwsprof.so is
 * in this process), allocates a little, and exits with status 5, so a
 * test can tell the program ran and its status came back. Writes no file:
 * run set-user-ID to another user, it may not be allowed to.
 */
#include "account.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <sys/auxv.h>

int main(void)
{
	void *p = malloc(100);
	account_keep(p);
	free(p);
	/* wsprof exports this for the annotation header (include/wsprof.h). */
	bool traced = dlsym(RTLD_DEFAULT, "wsprof_get_annotation_api_v1") != NULL;
	say("AT_SECURE=%lu traced=%d", getauxval(AT_SECURE), traced);
	return 5;
}
