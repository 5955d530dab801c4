/*
 * json.h - a small streaming JSON writer for the analyzer's --json output.
 * Keeps track of commas; strings are escaped per RFC 8259.
 */
#ifndef WSP_JSON_H
#define WSP_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct wsp_json {
	FILE *out;
	int depth;
	bool need_comma[32];
};

void wsp_json_init(struct wsp_json *j, FILE *out);
void wsp_json_begin_object(struct wsp_json *j, const char *key);
void wsp_json_end_object(struct wsp_json *j);
void wsp_json_begin_array(struct wsp_json *j, const char *key);
void wsp_json_end_array(struct wsp_json *j);
void wsp_json_string(struct wsp_json *j, const char *key, const char *value); /* NULL: null */
void wsp_json_uint(struct wsp_json *j, const char *key, uint64_t value);
void wsp_json_int(struct wsp_json *j, const char *key, int64_t value);
void wsp_json_double(struct wsp_json *j, const char *key, double value);
/* Nanoseconds written as exact decimal seconds ("1795943670.123456789"). */
void wsp_json_seconds(struct wsp_json *j, const char *key, uint64_t ns);
void wsp_json_bool(struct wsp_json *j, const char *key, bool value);
void wsp_json_null(struct wsp_json *j, const char *key);

#endif
