/*
 * json.h - just enough JSON for the tests: parse one document (objects,
 * arrays, strings, numbers, true/false/null) and look values up by a
 * dotted path such as "kinds.heap.peak_bytes" or "children.0".
 *
 * Numbers keep their text, so 64-bit counters compare exactly instead of
 * going through a double. Strings are unescaped for the common escapes and
 * \uXXXX below 0x80; that is all wsprof's own output and the test
 * programs' expect files use. Not for untrusted input beyond that: a parse
 * error is reported, never guessed around.
 */
#ifndef WT_JSON_H
#define WT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum wt_json_type { WT_JSON_NULL, WT_JSON_BOOL, WT_JSON_NUMBER, WT_JSON_STRING, WT_JSON_ARRAY, WT_JSON_OBJECT };

struct wt_json {
	enum wt_json_type type;
	bool boolean;
	char *text;             /* string value, or a number's literal text */
	char *key;              /* member name inside an object, else NULL */
	struct wt_json *items;  /* array elements or object members */
	size_t count;
};

/* Parse a whole document. @return the root, or NULL with a message in
 * err (cap bytes) saying where parsing stopped. Free with wt_json_free(). */
struct wt_json *wt_json_parse(const char *text, char *err, size_t cap);
void wt_json_free(struct wt_json *root);

/* The value at a dotted path: object members by name, array elements by
 * index. @return NULL if any step is missing. */
const struct wt_json *wt_json_get(const struct wt_json *root, const char *path);

/* Typed look-ups: false when the path is missing or of another type.
 * wt_json_u64 accepts only non-negative integer literals. */
bool wt_json_u64(const struct wt_json *root, const char *path, uint64_t *out);
bool wt_json_bool(const struct wt_json *root, const char *path, bool *out);
const char *wt_json_str(const struct wt_json *root, const char *path);

#endif
