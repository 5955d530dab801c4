/*
 * fuzz_decode.c - a libFuzzer target for the reader's record decoder
 * (src/decode.c) and the merge behind it (src/merge.c), without a file,
 * zstd or threads: each input is one chunk's records as they are once
 * unpacked.
 *
 * Input: a byte of flags (bit 0: the records are in the column layout,
 * src/columns.h; the rest ignored), then the records. They are decoded
 * the way the reader's decoding side does (reader_chunk_begin, then
 * reader_decode_some), each release emptied as it begins, and what is
 * pending at the chunk's end (or at damage) released as at the end of a
 * file. Whatever the bytes, this must end without a crash, undefined
 * behaviour, a hang or an allocation out of proportion to the input; the
 * checked build's invariants (src/check.h) are live: events go out in seq
 * order unless the trace broke it, and every pending event goes out.
 *
 * The seeds (corpus-decode/) are the first and last chunks of the traces
 * of corpus/, unpacked, in both layouts. Inside a whole trace the same
 * code is fuzzed by fuzz_reader.c, where zstd's checksums keep most
 * mutations away from it; here every mutation reaches it.
 */
#include "reader_internal.h"

#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The release under way, out in batches as the reader hands them over. */
static void drain(wsprof_trace *t)
{
	struct pending out[256];
	while (t->nheap) {
		size_t n = reader_release_emit(t, out, sizeof out / sizeof *out);
		WSP_ASSERT(n > 0);
		for (size_t i = 0; i < n; i++) {
			WSP_ASSERT(out[i].kind < WSPROF_KIND_COUNT);
			reader_extra_free(out[i].x);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	wsprof_trace *t = calloc(1, sizeof *t);
	/* The records in a buffer of their own, as unpack_chunk leaves them:
	 * ASan sees any read past their end. */
	uint8_t *records = malloc(size);
	if (!t || !records) {
		free(t);
		free(records);
		return 0;
	}
	memcpy(records, data + 1, size - 1);
	t->proc.format_major = 2;
	t->filling = &t->batches[0];
	int r = reader_chunk_begin(t, records, size - 1, data[0] & 1);
	while (r == 1) {
		r = reader_decode_some(t);
		if (r == 2) { /* the batch's stack nodes handed over */
			t->batches[0].ndefs = 0;
			r = 1;
		} else if (r == 1) {
			drain(t);
		}
	}
	/* The end of the chunk, or damage: the reader stops there and releases
	 * everything pending. */
	if (r != -ENOMEM && !reader_release_begin(t, 0, true)) {
		drain(t);
		WSP_ASSERT_MSG(t->nlive == 0, "%zu events pending after the last release", t->nlive);
	}
	wsprof_trace_close(t);
	free(records);
	return 0;
}
