/*
 * format.h - the wire format of wsprof traces, shared by the recorder
 * (preload/) and the reader (src/reader.c). doc/trace-format.md is the
 * specification; this file is its transcription into constants and small
 * inline encoders/decoders.
 *
 * Encoders write into caller-provided memory and never allocate, so the
 * recorder can use them inside malloc hooks. Decoders are bounds-checked
 * and report malformed input instead of reading past the end.
 */
#ifndef WSP_FORMAT_H
#define WSP_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wsprof/trace.h" /* WSPROF_FORMAT_MAJOR/MINOR, kinds, ops */

#define WSP_MAGIC_HEADER 0x184D2A57u
#define WSP_MAGIC_CHUNK 0x184D2A58u
#define WSP_MAGIC_FOOTER 0x184D2A59u
#define WSP_SIGNATURE "WSPROF\0\x1a"
#define WSP_SIGNATURE_LEN 8
#define WSP_HEADER_FIXED 24 /* frame header + signature + versions + flags */
#define WSP_CHUNK_HEADER 24
#define WSP_CHUNK_RAW_MAX (64u << 20)
#define WSP_HEADER_MAX (1u << 20)

enum wsp_record_type {
	WSP_REC_PROCESS = 0x01,
	WSP_REC_CONFIG = 0x02,
	WSP_REC_SEGMENT = 0x08,
	WSP_REC_SYNC = 0x09,
	WSP_REC_ALLOC = 0x10,
	WSP_REC_FREE = 0x11,
	WSP_REC_MOVE = 0x12,
	WSP_REC_FAIL = 0x13,
	WSP_REC_UNMAP = 0x14,
	WSP_REC_STREAM_REACHED = 0x19,
	WSP_REC_STACK = 0x20,
	WSP_REC_PYFRAME = 0x21,
	WSP_REC_PY_CODE = 0x22,
	WSP_REC_PYTHON = 0x23,
	WSP_REC_MODULE_LOAD = 0x28,
	WSP_REC_MODULE_UNLOAD = 0x29,
	WSP_REC_FORK = 0x30,
	WSP_REC_EXEC = 0x31,
	WSP_REC_RECORDING = 0x32,
	WSP_REC_DEVICE_MEMORY = 0x40,
	WSP_REC_ANNOTATE = 0x50,
	WSP_REC_ACCESS = 0x60,
	WSP_REC_RSS = 0x61,
	WSP_REC_HEAP_TOTALS = 0x62,
	WSP_REC_FOOTER = 0x3F,
};

/* Largest encoded event record (type, length and 10 varints of 10 bytes). */
#define WSP_EVENT_RECORD_MAX 110

/* The most an ANNOTATE's payload takes with a text of n bytes: six
 * varints, the text's length and the text. */
#define WSP_ANNOTATE_PAYLOAD_MAX(n) (6 * 10 + 2 + (size_t)(n))

static inline void wsp_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t wsp_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void wsp_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline uint16_t wsp_get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint64_t wsp_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t wsp_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Append v as a varint at p. @return the byte after it. */
static inline uint8_t *wsp_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Write v in exactly width bytes (padding with continuation bytes), so a
 * length can be filled in after the payload it measures. */
static inline void wsp_put_varint_fixed(uint8_t *p, uint64_t v, int width)
{
	for (int i = 0; i < width - 1; i++) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p = (uint8_t)(v & 0x7f);
}

/* A bounds-checked cursor over encoded bytes. Once a read runs past the
 * end or finds a malformed varint, `bad` is set and every further read
 * returns 0: callers check it once, after reading a whole record. */
struct wsp_cursor {
	const uint8_t *p, *end;
	bool bad;
};

static inline uint64_t wsp_get_varint(struct wsp_cursor *c)
{
	if (c->bad)
		return 0;
	const uint8_t *p = c->p; /* a local: the bytes read cannot move it */
	if (p < c->end && *p < 0x80) { /* most fields take one byte */
		c->p = p + 1;
		return *p;
	}
	if (c->end - p >= 2 && p[1] < 0x80) { /* most others two (sizes, stack ids) */
		c->p = p + 2;
		return (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
	}
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (p >= c->end) {
			c->p = p;
			c->bad = true;
			return 0;
		}
		uint8_t b = *p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			c->p = p;
			return v;
		}
	}
	c->bad = true; /* more than 10 bytes */
	c->p = c->end;
	return 0;
}

/* A varint field that is absent reads as 0 (fields appended by later minor versions). */
static inline uint64_t wsp_get_field(struct wsp_cursor *c)
{
	return c->p < c->end ? wsp_get_varint(c) : 0;
}

/* A length-prefixed byte string; *len gets its length. NULL if malformed. */
static inline const uint8_t *wsp_get_bytes(struct wsp_cursor *c, size_t *len)
{
	uint64_t n = wsp_get_field(c);
	if (c->bad || n > (uint64_t)(c->end - c->p)) {
		c->bad = true;
		*len = 0;
		return NULL;
	}
	const uint8_t *s = c->p;
	c->p += n;
	*len = (size_t)n;
	return s;
}

/* Record framing on the writing side: open reserves room for the length. */
struct wsp_record_mark {
	uint8_t *len_at;
	int width;
};

static inline uint8_t *wsp_record_open(uint8_t *p, unsigned type, size_t max_payload,
				       struct wsp_record_mark *m)
{
	p = wsp_put_varint(p, type);
	m->len_at = p;
	m->width = max_payload < 0x80 ? 1 : max_payload < 0x4000 ? 2 : max_payload < 0x200000 ? 3 : 4;
	return p + m->width;
}

static inline uint8_t *wsp_record_close(uint8_t *p, const struct wsp_record_mark *m)
{
	wsp_put_varint_fixed(m->len_at, (uint64_t)(p - (m->len_at + m->width)), m->width);
	return p;
}

static inline uint8_t *wsp_put_bytes(uint8_t *p, const void *s, size_t n)
{
	p = wsp_put_varint(p, n);
	memcpy(p, s, n);
	return p + n;
}

#endif
