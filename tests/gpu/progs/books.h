/*
 * books.h - how the GPU test programs keep their own books.
 *
 * Each program under tests/gpu/progs counts its CUDA allocations with the
 * rules wsprof's summary uses (doc/reports.md) and writes the figures it
 * expects, one JSON line, to the file named by its first argument. run.sh
 * compares them with `wsprof report summary --json` (compare.py).
 *
 * The rules, as a program applies them:
 *   books_alloc  one successful allocation call of `size` requested bytes
 *                (a pitched allocation asks for pitch x height);
 *   books_free   one release of a block of `size` bytes;
 *   books_fail   one allocation call that returned an error.
 * A kind's peak is the largest sum of live requested bytes, taken in the
 * order the program made its calls (stream-ordered calls count when they
 * are made, not when the stream runs them).
 *
 * A call the platform may refuse (pinning host memory under a sandbox)
 * is counted as failed when it fails, with a note saying so: the books
 * stay exact either way, and the note reaches the table.
 *
 * Header only, so each program builds with one nvcc command. stdio is
 * fine here: only the CUDA kinds are compared, never the heap.
 */
#ifndef GPU_PROGS_BOOKS_H
#define GPU_PROGS_BOOKS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct book {
	const char *kind; /* "cuda_device", "cuda_managed", "cuda_host", "cuda_vmm" */
	uint64_t allocations, frees, failed;
	uint64_t total_bytes;
	uint64_t live_bytes, live_blocks, peak_bytes;
};

/* static struct book device = BOOK("cuda_device"); */
#define BOOK(kind) { kind, 0, 0, 0, 0, 0, 0, 0 }

static inline void books_alloc(struct book *b, uint64_t size)
{
	b->allocations++;
	b->total_bytes += size;
	b->live_blocks++;
	b->live_bytes += size;
	if (b->live_bytes > b->peak_bytes)
		b->peak_bytes = b->live_bytes;
}

static inline void books_free(struct book *b, uint64_t size)
{
	b->frees++;
	b->live_blocks--;
	b->live_bytes -= size;
}

static inline void books_fail(struct book *b)
{
	b->failed++;
}

/* A quantity with a running peak (mapped or reserved address space). */
struct level {
	uint64_t now, peak;
};

static inline void level_add(struct level *l, uint64_t bytes)
{
	l->now += bytes;
	if (l->now > l->peak)
		l->peak = l->now;
}

static inline void level_sub(struct level *l, uint64_t bytes)
{
	l->now -= bytes;
}

/* Notes for the table, written as "notes": [...]. */
static char books_notes[2048];

static inline void books_note(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "note: %s\n", line);
	size_t len = strlen(books_notes);
	char *out = books_notes + len;
	size_t room = sizeof books_notes - len;
	int n = snprintf(out, room, "%s\"", len ? ", " : "");
	for (const char *c = line; *c && n > 0 && (size_t)n + 4 < room; c++)
		if (*c != '"' && *c != '\\' && (unsigned char)*c >= ' ')
			out[n++] = *c;
	if (n > 0 && (size_t)n + 2 < room) {
		out[n++] = '"';
		out[n] = '\0';
	} else {
		out[0] = '\0';
	}
}

/* Write {"kind": {figures}, ..., extra, "notes": [...]} to path, whole or
 * not at all (it goes to path.partial first and is renamed). `extra` is NULL or more
 * members, already formatted ("\"name\": {...}"). @return 0 or -1. */
static inline int books_write(const char *path, struct book *const *books, int n, const char *extra)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.partial", path);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		perror(tmp);
		return -1;
	}
	fputc('{', f);
	for (int i = 0; i < n; i++) {
		const struct book *b = books[i];
		fprintf(f,
			"%s\"%s\": {\"allocations\": %llu, \"frees\": %llu, \"failed\": %llu, "
			"\"peak_bytes\": %llu, \"leaked_bytes\": %llu, \"leaked_blocks\": %llu, "
			"\"total_bytes\": %llu}",
			i ? ", " : "", b->kind, (unsigned long long)b->allocations,
			(unsigned long long)b->frees, (unsigned long long)b->failed,
			(unsigned long long)b->peak_bytes, (unsigned long long)b->live_bytes,
			(unsigned long long)b->live_blocks, (unsigned long long)b->total_bytes);
	}
	if (extra)
		fprintf(f, "%s%s", n ? ", " : "", extra);
	if (books_notes[0])
		fprintf(f, "%s\"notes\": [%s]", n || extra ? ", " : "", books_notes);
	fputs("}\n", f);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

/* Stop the program on an unexpected error: exit status 2, one line saying
 * where. Expected failures are tested without these. */
#define DIE(...)                                                                     \
	do {                                                                         \
		fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                      \
		fprintf(stderr, __VA_ARGS__);                                        \
		fputc('\n', stderr);                                                 \
		exit(2);                                                             \
	} while (0)

#ifdef __CUDA_RUNTIME_H__
#define RT_CHECK(call)                                                               \
	do {                                                                         \
		cudaError_t rt_err_ = (call);                                        \
		if (rt_err_ != cudaSuccess)                                          \
			DIE("%s: %s (%s)", #call, cudaGetErrorString(rt_err_),       \
			    cudaGetErrorName(rt_err_));                              \
	} while (0)
#endif

#ifdef __cuda_cuda_h__
static inline const char *cu_error_name(CUresult r)
{
	const char *s = NULL;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || !s)
		s = "unknown CUresult";
	return s;
}
#define CU_CHECK(call)                                                               \
	do {                                                                         \
		CUresult cu_err_ = (call);                                           \
		if (cu_err_ != CUDA_SUCCESS)                                         \
			DIE("%s: %s (%d)", #call, cu_error_name(cu_err_), (int)cu_err_); \
	} while (0)
#endif

#endif
