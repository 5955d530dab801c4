/*
 * json.c - see json.h. `key` is NULL for array elements and the top level.
 */
#include "json.h"

#include <math.h>

void wsp_json_init(struct wsp_json *j, FILE *out)
{
	j->out = out;
	j->depth = 0;
	j->need_comma[0] = false;
}

static void put_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\t': fputs("\\t", out); break;
		case '\r': fputs("\\r", out); break;
		default:
			if (*p < 0x20)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

static void member(struct wsp_json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->out);
	j->need_comma[j->depth] = true;
	if (key) {
		put_string(j->out, key);
		fputc(':', j->out);
	}
}

static void open_(struct wsp_json *j, const char *key, char c)
{
	member(j, key);
	fputc(c, j->out);
	if (j->depth < 31)
		j->need_comma[++j->depth] = false;
}

static void close_(struct wsp_json *j, char c)
{
	fputc(c, j->out);
	if (j->depth > 0)
		j->depth--;
	if (j->depth == 0)
		fputc('\n', j->out);
}

void wsp_json_begin_object(struct wsp_json *j, const char *key) { open_(j, key, '{'); }
void wsp_json_end_object(struct wsp_json *j) { close_(j, '}'); }
void wsp_json_begin_array(struct wsp_json *j, const char *key) { open_(j, key, '['); }
void wsp_json_end_array(struct wsp_json *j) { close_(j, ']'); }

void wsp_json_string(struct wsp_json *j, const char *key, const char *value)
{
	member(j, key);
	if (value)
		put_string(j->out, value);
	else
		fputs("null", j->out);
}

void wsp_json_uint(struct wsp_json *j, const char *key, uint64_t value)
{
	member(j, key);
	fprintf(j->out, "%llu", (unsigned long long)value);
}

void wsp_json_int(struct wsp_json *j, const char *key, int64_t value)
{
	member(j, key);
	fprintf(j->out, "%lld", (long long)value);
}

void wsp_json_double(struct wsp_json *j, const char *key, double value)
{
	member(j, key);
	if (isfinite(value))
		fprintf(j->out, "%.9g", value);
	else
		fputs("null", j->out);
}

void wsp_json_seconds(struct wsp_json *j, const char *key, uint64_t ns)
{
	member(j, key);
	fprintf(j->out, "%llu.%09llu", (unsigned long long)(ns / 1000000000u),
		(unsigned long long)(ns % 1000000000u));
}

void wsp_json_bool(struct wsp_json *j, const char *key, bool value)
{
	member(j, key);
	fputs(value ? "true" : "false", j->out);
}

void wsp_json_null(struct wsp_json *j, const char *key)
{
	member(j, key);
	fputs("null", j->out);
}
