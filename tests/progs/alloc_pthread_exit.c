/*
 * alloc_pthread_exit.c - a program whose threads all end with
 * pthread_exit, the main one first: the process then exits with status 0
 * once the last one is gone (glibc calls exit(0)), and so it must under
 * wsprof, whose own threads stay behind.
 *
 * usage: alloc_pthread_exit EXPECT_JSON   (writes {"blocks": N})
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *expect_path;

static void *worker(void *arg)
{
	(void)arg;
	usleep(300 * 1000); /* past wsprof's flush interval: the main thread is long gone */
	void *keep[16];
	int made = 0;
	for (int i = 0; i < 16; i++)
		made += (keep[i] = malloc(1000 + (size_t)i)) != NULL;
	FILE *f = fopen(expect_path, "w");
	if (f) {
		fprintf(f, "{\"blocks\": %d}\n", made);
		fclose(f);
	}
	for (int i = 0; i < 16; i++)
		free(keep[i]);
	pthread_exit(NULL);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: alloc_pthread_exit EXPECT_JSON\n");
		return 2;
	}
	expect_path = argv[1];
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 1;
	pthread_exit(NULL);
}
