/*
 * membound - a memory-bound workload for the access-sampling overhead.
 *
 * usage: membound [MIB [SWEEPS]]   (default 256 MiB, 20 sweeps)
 *
 * Writes one word per cache line of a MIB-sized buffer, SWEEPS times:
 * every page is written in every sweep, the worst case for write tracking
 * (each window, every page takes one write-protect fault again). Prints
 * the seconds the sweeps took.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
	int sweeps = argc > 2 ? atoi(argv[2]) : 20;
	if (!mib || sweeps < 1) {
		fprintf(stderr, "usage: membound [MIB [SWEEPS]]\n");
		return 2;
	}
	size_t size = mib << 20;
	volatile char *p = malloc(size);
	if (!p)
		return 1;
	memset((char *)p, 1, size);
	double t0 = now();
	for (int s = 0; s < sweeps; s++)
		for (size_t i = 0; i < size; i += 64)
			p[i] = (char)(p[i] + 1);
	printf("%.3f\n", now() - t0);
	free((char *)p);
	return 0;
}
