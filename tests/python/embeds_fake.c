/*
 * embeds_fake.c - a program that loads a library passing for CPython
 * (libfakepython.so, whose layout does not validate), then allocates and
 * prints what it did: under wsprof it must print the same.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: embeds_fake LIBFAKEPYTHON\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "embeds_fake: %s\n", dlerror());
		return 1;
	}
	size_t total = 0;
	static char *volatile blocks[100];
	for (int i = 1; i <= 100; i++) {
		blocks[i - 1] = malloc((size_t)i * 100);
		blocks[i - 1][0] = (char)i;
		total += (size_t)i * 100;
	}
	for (int i = 0; i < 100; i++)
		free(blocks[i]);
	printf("embeds_fake: allocated %zu bytes in 100 blocks\n", total);
	dlclose(h);
	return 0;
}
