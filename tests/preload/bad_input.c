/*
 * bad_input.c - `wsprof report summary` on files that are not good traces.
 *
 * Nothing readable (missing, empty, not a trace, header cut short, written
 * by a newer major format): one line on stderr, nothing on stdout, exit
 * status 1. Partly readable (cut in the middle of a chunk, a damaged
 * chunk): a one-line warning, the report of what came before, exit 0.
 * Never a crash.
 */
#include "harness.h"
#include "wsprof/trace.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

TestSuite(bad_input, .fini = wt_cleanup, .timeout = 60);

#define MAGIC_HEADER 0x184D2A57u
#define MAGIC_CHUNK 0x184D2A58u
#define MAGIC_FOOTER 0x184D2A59u

static uint32_t le32(const unsigned char *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Where each chunk frame starts in a whole trace (doc/trace-format.md):
 * a header frame, chunks of a 24-byte header plus compressed bytes, a footer. */
static size_t chunk_offsets(const unsigned char *data, size_t len, size_t *out, size_t max)
{
	size_t n = 0, at = 0;
	cr_assert(len >= 8 && le32(data) == MAGIC_HEADER, "the recorded trace does not start with a header frame");
	at = 8 + le32(data + 4);
	while (at + 8 <= len && le32(data + at) == MAGIC_CHUNK) {
		cr_assert(at + 24 <= len, "chunk header cut short in a complete trace");
		if (n < max)
			out[n++] = at;
		at += 24 + le32(data + at + 16);
	}
	cr_assert(at + 8 <= len && le32(data + at) == MAGIC_FOOTER, "the recorded trace does not end with a footer");
	return n;
}

/* A complete trace of several chunks: flushing every millisecond. */
static char *record_several_chunks(unsigned char **data, size_t *len)
{
	struct wt_recording rec;
	wt_record(&rec, (const char *[]){ "--flush-ms", "1", NULL }, "alloc_threads",
		  (const char *[]){ "2", "4", "2000", NULL });
	wt_assert_status(&rec.run, 0, "wsprof record alloc_threads");
	*data = (unsigned char *)wt_read_file(rec.trace, len);
	cr_assert(*data, "cannot read %s", rec.trace);
	char *trace = strdup(rec.trace);
	wt_recording_free(&rec);
	return trace;
}

/* `wsprof report summary --json FILE`, which must end in `status`. */
static void summarize(struct wt_result *r, const char *path, int status, const char *what)
{
	wt_run(r, (const char *[]){ wt_wsprof(), "report", "summary", "--json", path, NULL });
	cr_assert(!r->signaled, "wsprof report summary crashed on %s (signal %d)", what, r->status - 128);
	wt_assert_status(r, status, what);
	cr_expect_eq(wt_count_lines(r->err), 1, "%s: one line on stderr, not:\n%s", what, r->err);
}

/* Nothing readable: the one line must be an error, and nothing printed. */
static void expect_refused(const char *path, const char *what, const char *says)
{
	struct wt_result r;
	summarize(&r, path, 1, what);
	cr_expect_str_empty(r.out, "%s: nothing on stdout, not:\n%s", what, r.out);
	cr_expect(strstr(r.err, says) != NULL, "%s: the error should say \"%s\":\n%s", what, says, r.err);
	wt_result_free(&r);
}

/* Partly readable: a warning, and a summary of what was read. */
static struct wt_json *expect_partial(const char *path, const char *what)
{
	struct wt_result r;
	summarize(&r, path, 0, what);
	cr_expect(strstr(r.err, "warning") != NULL, "%s: stderr should warn:\n%s", what, r.err);
	char why[256];
	struct wt_json *s = wt_json_parse(r.out, why, sizeof why);
	cr_assert(s, "%s: the summary is not JSON (%s):\n%s", what, why, r.out);
	bool complete = true;
	cr_expect(wt_json_bool(s, "complete", &complete) && !complete, "%s: \"complete\" must be false", what);
	wt_result_free(&r);
	return s;
}

static char *write_variant(const char *name, const void *data, size_t len)
{
	char *path = wt_path(wt_test_dir(), "%s", name);
	cr_assert_eq(wt_write_file(path, data, len), 0, "cannot write %s", path);
	return path;
}

Test(bad_input, missing_file)
{
	char *path = wt_path(wt_test_dir(), "absent.wsp");
	expect_refused(path, "a missing file", "absent.wsp");
	free(path);
}

Test(bad_input, empty_file)
{
	char *path = write_variant("empty.wsp", "", 0);
	expect_refused(path, "an empty file", "empty");
	free(path);
}

Test(bad_input, not_a_trace)
{
	static const char text[] = "{\"heap\": {\"allocations\": 1}}\nnot a trace, just text that is long enough\n";
	char *path = write_variant("text.wsp", text, sizeof text - 1);
	expect_refused(path, "a text file", "not a wsprof trace");
	free(path);
}

Test(bad_input, header_cut_short)
{
	unsigned char *data;
	size_t len;
	char *full = record_several_chunks(&data, &len);
	char *path = write_variant("header.wsp", data, 20);
	expect_refused(path, "a trace cut inside its header", "header.wsp");
	free(path);
	free(full);
	free(data);
}

Test(bad_input, newer_major_version)
{
	unsigned char *data;
	size_t len;
	char *full = record_several_chunks(&data, &len);
	cr_assert_eq(data[16], WSPROF_FORMAT_MAJOR, "the recorded trace is not of this format major");
	data[16] = WSPROF_FORMAT_MAJOR + 1;
	char *path = write_variant("newer.wsp", data, len);
	expect_refused(path, "a trace of the next format major", "newer");
	free(path);
	free(full);
	free(data);
}

Test(bad_input, cut_in_the_middle_of_a_chunk)
{
	unsigned char *data;
	size_t len, chunks[4096];
	char *full = record_several_chunks(&data, &len);
	size_t n = chunk_offsets(data, len, chunks, 4096);
	cr_assert_geq(n, 2, "flushing every millisecond gave only %zu chunk", n);
	struct wt_json *whole = wt_summary(full, NULL);

	size_t k = n / 2, start = chunks[k];
	size_t cut = start + 24 + le32(data + start + 16) / 2;
	char *path = write_variant("cut.wsp", data, cut);
	struct wt_json *s = expect_partial(path, "a trace cut in the middle of a chunk");
	cr_expect_eq(wt_u64(s, "chunks"), k, "the %zu chunks before the cut are readable, the summary read %llu", k,
		     (unsigned long long)wt_u64(s, "chunks"));
	cr_expect_lt(wt_u64(s, "events"), wt_u64(whole, "events"), "the cut trace has fewer events");
	/* The chunks before the cut may hold no allocation at all (under load
	 * the first milliseconds are the loader's), and a kind never seen is
	 * left out of the summary: absent means none. */
	uint64_t before = 0;
	wt_json_u64(s, "kinds.heap.allocations", &before);
	cr_expect_leq(before, wt_u64(whole, "kinds.heap.allocations"),
		      "a prefix of the trace cannot hold more allocations than all of it");

	wt_json_free(s);
	wt_json_free(whole);
	free(path);
	free(full);
	free(data);
}

Test(bad_input, damaged_chunk)
{
	unsigned char *data;
	size_t len, chunks[4096];
	char *full = record_several_chunks(&data, &len);
	size_t n = chunk_offsets(data, len, chunks, 4096);
	cr_assert_geq(n, 2, "flushing every millisecond gave only %zu chunk", n);

	/* Flip bytes inside the last chunk's compressed data: its checksum fails. */
	size_t k = n - 1, start = chunks[k], clen = le32(data + start + 16);
	for (size_t i = clen / 3; i < clen / 3 + 8 && i < clen; i++)
		data[start + 24 + i] ^= 0x5a;
	char *path = write_variant("damaged.wsp", data, len);
	struct wt_json *s = expect_partial(path, "a trace with a damaged chunk");
	cr_expect_eq(wt_u64(s, "chunks"), k, "the %zu chunks before the damage are readable, the summary read %llu", k,
		     (unsigned long long)wt_u64(s, "chunks"));
	wt_json_free(s);
	free(path);
	free(full);
	free(data);
}
