/*
 * shortproc.c - a short process for bench/short_procs.sh: what a program
 * of a build (a compiler pass, a code generator) does in little time, in
 * miniature: 200 blocks of 16 B to 64 KiB allocated and written, half
 * freed as it goes, the rest before it exits. Prints nothing; the exit
 * status depends on what it wrote, so the compiler keeps every block.
 */
#include <stdlib.h>
#include <string.h>

int main(void)
{
	unsigned char *kept[100];
	unsigned sum = 0;
	for (int i = 0; i < 200; i++) {
		size_t size = (size_t)16 << (i % 13);
		unsigned char *p = malloc(size);
		if (!p)
			return 1;
		memset(p, i, size);
		sum += p[size - 1];
		if (i % 2)
			free(p);
		else
			kept[i / 2] = p;
	}
	for (int i = 0; i < 100; i++) {
		sum += kept[i][0];
		free(kept[i]);
	}
	return sum == 1 ? 2 : 0;
}
