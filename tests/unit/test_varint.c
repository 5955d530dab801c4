/*
 * test_varint.c - the encoders and decoders of src/format.h.
 *
 * Varints (LEB128), zigzag, fixed-width padded varints, the bounds-checked
 * cursor and record framing are the bottom of both the recorder and the
 * reader; these tests pin them at their edges: the largest values, the
 * widths where a varint gains a byte, and malformed or short input.
 */
#include "format.h"

#include <criterion/criterion.h>
#include <stdlib.h>

static const uint64_t edge_values[] = {
	0, 1, 127, 128, 255, 16383, 16384, 2097151, 2097152,
	UINT32_MAX, (uint64_t)1 << 32, (uint64_t)1 << 63, UINT64_MAX - 1, UINT64_MAX,
};

/* Bytes a varint of v takes: one per 7 bits, at least one. */
static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >>= 7)
		n++;
	return n;
}

Test(varint, round_trips_edge_values)
{
	for (size_t i = 0; i < sizeof edge_values / sizeof *edge_values; i++) {
		uint64_t v = edge_values[i];
		uint8_t buf[16];
		uint8_t *end = wsp_put_varint(buf, v);
		cr_expect_eq((size_t)(end - buf), varint_len(v), "%llu takes %zu bytes, not %zu",
			     (unsigned long long)v, varint_len(v), (size_t)(end - buf));
		struct wsp_cursor c = { buf, end, false };
		cr_expect_eq(wsp_get_varint(&c), v, "%llu does not read back", (unsigned long long)v);
		cr_expect_not(c.bad);
		cr_expect_eq(c.p, end, "the decoder stops right after the varint");
	}
}

Test(varint, encodes_low_bits_first)
{
	uint8_t buf[16];
	cr_assert_eq(wsp_put_varint(buf, 0) - buf, 1);
	cr_expect_eq(buf[0], 0x00);
	cr_assert_eq(wsp_put_varint(buf, 127) - buf, 1);
	cr_expect_eq(buf[0], 0x7f);
	cr_assert_eq(wsp_put_varint(buf, 128) - buf, 2);
	cr_expect_arr_eq(buf, ((uint8_t[]){ 0x80, 0x01 }), 2);
	cr_assert_eq(wsp_put_varint(buf, 300) - buf, 2);
	cr_expect_arr_eq(buf, ((uint8_t[]){ 0xac, 0x02 }), 2);
	cr_assert_eq(wsp_put_varint(buf, (uint64_t)1 << 32) - buf, 5);
	cr_expect_arr_eq(buf, ((uint8_t[]){ 0x80, 0x80, 0x80, 0x80, 0x10 }), 5);
	cr_assert_eq(wsp_put_varint(buf, UINT64_MAX) - buf, 10, "64 bits take at most 10 bytes");
	cr_expect_eq(buf[9], 0x01);
}

Test(varint, zigzag_round_trips_signed_extremes)
{
	static const int64_t values[] = { 0, 1, -1, 2, -2, 63, -64, 64, -65, INT32_MAX, INT32_MIN,
					  INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1 };
	for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
		int64_t v = values[i];
		cr_expect_eq(wsp_unzigzag(wsp_zigzag(v)), v, "%lld", (long long)v);
		uint8_t buf[16];
		struct wsp_cursor c = { buf, wsp_put_varint(buf, wsp_zigzag(v)), false };
		cr_expect_eq(wsp_unzigzag(wsp_get_varint(&c)), v, "%lld through a varint", (long long)v);
	}
}

Test(varint, zigzag_keeps_small_magnitudes_small)
{
	cr_expect_eq(wsp_zigzag(0), 0);
	cr_expect_eq(wsp_zigzag(-1), 1);
	cr_expect_eq(wsp_zigzag(1), 2);
	cr_expect_eq(wsp_zigzag(-2), 3);
	cr_expect_eq(wsp_zigzag(INT64_MAX), UINT64_MAX - 1);
	cr_expect_eq(wsp_zigzag(INT64_MIN), UINT64_MAX);
}

Test(varint, fixed_width_padding_decodes_to_the_same_value)
{
	for (int width = 1; width <= 10; width++) {
		for (size_t i = 0; i < sizeof edge_values / sizeof *edge_values; i++) {
			uint64_t v = edge_values[i];
			if ((int)varint_len(v) > width)
				continue;
			uint8_t buf[16];
			memset(buf, 0xee, sizeof buf);
			wsp_put_varint_fixed(buf, v, width);
			cr_expect_eq(buf[width], 0xee, "width %d writes exactly %d bytes", width, width);
			struct wsp_cursor c = { buf, buf + sizeof buf, false };
			cr_expect_eq(wsp_get_varint(&c), v, "%llu padded to %d bytes",
				     (unsigned long long)v, width);
			cr_expect_not(c.bad);
			cr_expect_eq(c.p, buf + width, "%llu padded to %d bytes is read as %d bytes",
				     (unsigned long long)v, width, width);
		}
	}
}

Test(varint, truncated_varint_is_bad_and_reads_zero)
{
	const uint8_t bytes[] = { 0xff, 0xff, 0x80 };
	struct wsp_cursor c = { bytes, bytes + sizeof bytes, false };
	cr_expect_eq(wsp_get_varint(&c), 0);
	cr_expect(c.bad);
	cr_expect_eq(c.p, c.end, "the cursor never passes its end");

	struct wsp_cursor empty = { bytes, bytes, false };
	cr_expect_eq(wsp_get_varint(&empty), 0);
	cr_expect(empty.bad, "reading a varint at the end is an error");
}

Test(varint, eleven_byte_varint_is_bad_and_reads_zero)
{
	uint8_t bytes[11];
	memset(bytes, 0x80, 10);
	bytes[10] = 0x01;
	struct wsp_cursor c = { bytes, bytes + sizeof bytes, false };
	cr_expect_eq(wsp_get_varint(&c), 0);
	cr_expect(c.bad);
	cr_expect(c.p <= c.end);
}

/* format.h: "Once a read runs past the end or finds a malformed varint,
 * `bad` is set and every further read returns 0". */
Test(varint, reads_after_a_malformed_varint_return_zero)
{
	uint8_t bytes[13];
	memset(bytes, 0x80, 10);
	bytes[10] = 0x01; /* the 11th byte of an over-long varint */
	bytes[11] = 0x05;
	bytes[12] = 0x06;
	struct wsp_cursor c = { bytes, bytes + sizeof bytes, false };
	wsp_get_varint(&c);
	cr_assert(c.bad);
	cr_expect_eq(wsp_get_varint(&c), 0, "a varint read after a malformed one");
	cr_expect_eq(wsp_get_field(&c), 0, "a field read after a malformed varint");
	cr_expect(c.bad, "bad stays set");
}

Test(varint, field_past_the_end_reads_zero_without_error)
{
	uint8_t buf[4];
	struct wsp_cursor c = { buf, wsp_put_varint(buf, 300), false };
	cr_expect_eq(wsp_get_field(&c), 300);
	cr_expect_eq(wsp_get_field(&c), 0, "a field a later version appended is absent here");
	cr_expect_eq(wsp_get_field(&c), 0);
	cr_expect_not(c.bad, "missing trailing fields are not an error");
}

Test(varint, bytes_within_the_payload_are_returned_in_place)
{
	uint8_t buf[32];
	uint8_t *end = wsp_put_bytes(buf, "libc.so", 7);
	end = wsp_put_bytes(end, "", 0);
	struct wsp_cursor c = { buf, end, false };
	size_t n;
	const uint8_t *s = wsp_get_bytes(&c, &n);
	cr_assert_not_null(s);
	cr_expect_eq(n, 7);
	cr_expect_eq(memcmp(s, "libc.so", 7), 0);
	s = wsp_get_bytes(&c, &n);
	cr_expect_not_null(s, "an empty string is a string");
	cr_expect_eq(n, 0);
	cr_expect_not(c.bad);
	cr_expect_eq(c.p, end);
}

Test(varint, bytes_longer_than_what_is_left_are_rejected)
{
	uint8_t buf[32];
	uint8_t *p = wsp_put_varint(buf, 5);
	memcpy(p, "abc", 3);
	struct wsp_cursor c = { buf, p + 3, false };
	size_t n = 99;
	cr_expect_null(wsp_get_bytes(&c, &n));
	cr_expect(c.bad);
	cr_expect_eq(n, 0);

	p = wsp_put_varint(buf, UINT64_MAX);
	struct wsp_cursor huge = { buf, p + 3, false };
	cr_expect_null(wsp_get_bytes(&huge, &n), "a length near 2^64 does not wrap the pointer");
	cr_expect(huge.bad);
}

/* Frame a record of `size` payload bytes with room reserved for `max`. */
static void check_record(size_t size, size_t max)
{
	uint8_t *buf = malloc(size + 32);
	cr_assert_not_null(buf);
	struct wsp_record_mark m;
	uint8_t *p = wsp_record_open(buf, WSP_REC_MODULE_LOAD, max, &m);
	for (size_t i = 0; i < size; i++)
		*p++ = (uint8_t)(i * 7 + 1);
	uint8_t *end = wsp_record_close(p, &m);
	cr_expect_eq(end, p, "close returns the end of the record");

	struct wsp_cursor c = { buf, end, false };
	cr_expect_eq(wsp_get_varint(&c), WSP_REC_MODULE_LOAD);
	uint64_t len = wsp_get_varint(&c);
	cr_expect_not(c.bad);
	cr_expect_eq(len, size, "length field %llu for a payload of %zu bytes (room for %zu)",
		     (unsigned long long)len, size, max);
	cr_expect_eq((size_t)(end - c.p), size, "the payload follows the length directly");
	cr_expect(size == 0 || (c.p[0] == 1 && c.p[size - 1] == (uint8_t)((size - 1) * 7 + 1)));
	free(buf);
}

Test(varint, record_length_matches_the_payload)
{
	static const size_t sizes[] = { 0, 1, 127, 128, 16383, 16384, 20000, 2097152 };
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
		check_record(sizes[i], sizes[i]);
}

Test(varint, record_reserved_larger_than_its_payload_still_reads_right)
{
	check_record(1, 127);
	check_record(1, 128);
	check_record(127, 20000);
	check_record(128, 20000);
	check_record(20000, 3000000);
}
