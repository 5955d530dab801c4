/*
 * embeds_python.c - a C program that loads a CPython library with dlopen
 * (after it started: the recorder finds the interpreter then) and runs a
 * Python function that allocates a known size from a known line.
 *
 * usage: embeds_python LIBPYTHON SIZE
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: embeds_python LIBPYTHON SIZE\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		fprintf(stderr, "embeds_python: %s\n", dlerror());
		return 1;
	}
	void (*init)(int) = (void (*)(int))dlsym(h, "Py_InitializeEx");
	int (*run)(const char *) = (int (*)(const char *))dlsym(h, "PyRun_SimpleString");
	int (*fini)(void) = (int (*)(void))dlsym(h, "Py_FinalizeEx");
	if (!init || !run || !fini) {
		fprintf(stderr, "embeds_python: %s is not a CPython library\n", argv[1]);
		return 1;
	}
	init(0);
	char code[512];
	snprintf(code, sizeof code,
		 "def embedded(n):\n"
		 "    return bytearray(n)\n"
		 "keep = embedded(%ld - 1)\n"
		 "print('embeds_python: made', len(keep) + 1)\n",
		 strtol(argv[2], NULL, 10));
	int rc = run(code);
	fflush(stdout);
	return fini() < 0 || rc != 0;
}
