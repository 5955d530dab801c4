/*
 * json.c - the tests' JSON reader (see json.h): recursive descent over a
 * NUL-terminated document, one heap node per value.
 */
#include "json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	const char *start, *p;
	char *err;
	size_t cap;
	bool failed;
};

static bool fail(struct parser *ps, const char *fmt, ...)
{
	if (ps->failed)
		return false;
	ps->failed = true;
	int n = snprintf(ps->err, ps->cap, "at byte %zu: ", (size_t)(ps->p - ps->start));
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < ps->cap)
		vsnprintf(ps->err + n, ps->cap - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

static void skip_space(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
		ps->p++;
}

static bool parse_value(struct parser *ps, struct wt_json *v, int depth);

static char *parse_string_text(struct parser *ps)
{
	ps->p++; /* the opening quote */
	size_t len = 0;
	/* Never longer than its text up to the closing quote (escapes only
	 * shrink); not the whole rest of the document, which would make
	 * parsing quadratic. */
	const char *end = ps->p;
	while (*end && *end != '"')
		end += end[0] == '\\' && end[1] ? 2 : 1;
	char *s = malloc((size_t)(end - ps->p) + 1);
	if (!s)
		return fail(ps, "out of memory"), NULL;
	while (*ps->p != '"') {
		char c = *ps->p++;
		if (!c || (unsigned char)c < 0x20) {
			free(s);
			return fail(ps, "unterminated string"), NULL;
		}
		if (c == '\\') {
			c = *ps->p++;
			switch (c) {
			case '"': case '\\': case '/': break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u': {
				unsigned code;
				if (sscanf(ps->p, "%4x", &code) != 1 || code >= 0x80) {
					free(s);
					return fail(ps, "unsupported \\u escape"), NULL;
				}
				ps->p += 4;
				c = (char)code;
				break;
			}
			default:
				free(s);
				return fail(ps, "bad escape \\%c", c), NULL;
			}
		}
		s[len++] = c;
	}
	ps->p++;
	s[len] = 0;
	return s;
}

static bool parse_number(struct parser *ps, struct wt_json *v)
{
	const char *begin = ps->p;
	errno = 0;
	char *end;
	strtod(begin, &end);
	if (end == begin || errno == EINVAL)
		return fail(ps, "expected a value");
	v->type = WT_JSON_NUMBER;
	v->text = strndup(begin, (size_t)(end - begin));
	ps->p = end;
	return v->text ? true : fail(ps, "out of memory");
}

static bool add_item(struct parser *ps, struct wt_json *parent, struct wt_json **item)
{
	struct wt_json *items = realloc(parent->items, (parent->count + 1) * sizeof *items);
	if (!items)
		return fail(ps, "out of memory");
	parent->items = items;
	*item = &items[parent->count++];
	memset(*item, 0, sizeof **item);
	return true;
}

/* Members or elements up to the closing bracket; objects have keys. */
static bool parse_container(struct parser *ps, struct wt_json *v, char close, int depth)
{
	v->type = close == '}' ? WT_JSON_OBJECT : WT_JSON_ARRAY;
	ps->p++;
	skip_space(ps);
	if (*ps->p == close) {
		ps->p++;
		return true;
	}
	for (;;) {
		struct wt_json *item = NULL;
		if (!add_item(ps, v, &item))
			return false;
		if (close == '}') {
			skip_space(ps);
			if (*ps->p != '"')
				return fail(ps, "expected a member name");
			if (!(item->key = parse_string_text(ps)))
				return false;
			skip_space(ps);
			if (*ps->p++ != ':')
				return fail(ps, "expected ':' after member \"%s\"", item->key);
		}
		if (!parse_value(ps, item, depth + 1))
			return false;
		skip_space(ps);
		if (*ps->p == close) {
			ps->p++;
			return true;
		}
		if (*ps->p++ != ',')
			return fail(ps, "expected ',' or '%c'", close);
	}
}

static bool parse_word(struct parser *ps, const char *word)
{
	size_t n = strlen(word);
	if (strncmp(ps->p, word, n) != 0)
		return fail(ps, "expected a value");
	ps->p += n;
	return true;
}

static bool parse_value(struct parser *ps, struct wt_json *v, int depth)
{
	if (depth > 64)
		return fail(ps, "nested too deeply");
	skip_space(ps);
	switch (*ps->p) {
	case '{': return parse_container(ps, v, '}', depth);
	case '[': return parse_container(ps, v, ']', depth);
	case '"':
		v->type = WT_JSON_STRING;
		return (v->text = parse_string_text(ps)) != NULL;
	case 't': v->type = WT_JSON_BOOL; v->boolean = true; return parse_word(ps, "true");
	case 'f': v->type = WT_JSON_BOOL; return parse_word(ps, "false");
	case 'n': v->type = WT_JSON_NULL; return parse_word(ps, "null");
	default: return parse_number(ps, v);
	}
}

static void free_value(struct wt_json *v)
{
	for (size_t i = 0; i < v->count; i++)
		free_value(&v->items[i]);
	free(v->items);
	free(v->text);
	free(v->key);
}

void wt_json_free(struct wt_json *root)
{
	if (root) {
		free_value(root);
		free(root);
	}
}

struct wt_json *wt_json_parse(const char *text, char *err, size_t cap)
{
	struct parser ps = { text, text, err, cap, false };
	struct wt_json *root = calloc(1, sizeof *root);
	if (!root) {
		snprintf(err, cap, "out of memory");
		return NULL;
	}
	if (parse_value(&ps, root, 0)) {
		skip_space(&ps);
		if (!*ps.p)
			return root;
		fail(&ps, "text after the document");
	}
	wt_json_free(root);
	return NULL;
}

const struct wt_json *wt_json_get(const struct wt_json *v, const char *path)
{
	while (v && *path) {
		size_t len = strcspn(path, ".");
		const struct wt_json *next = NULL;
		if (v->type == WT_JSON_OBJECT) {
			for (size_t i = 0; i < v->count && !next; i++)
				if (strlen(v->items[i].key) == len && !strncmp(v->items[i].key, path, len))
					next = &v->items[i];
		} else if (v->type == WT_JSON_ARRAY) {
			char *end;
			unsigned long i = strtoul(path, &end, 10);
			if (end == path + len && i < v->count)
				next = &v->items[i];
		}
		v = next;
		path += len + (path[len] == '.');
	}
	return v;
}

bool wt_json_u64(const struct wt_json *root, const char *path, uint64_t *out)
{
	const struct wt_json *v = wt_json_get(root, path);
	if (!v || v->type != WT_JSON_NUMBER || v->text[0] == '-' || strpbrk(v->text, ".eE"))
		return false;
	errno = 0;
	*out = strtoull(v->text, NULL, 10);
	return errno == 0;
}

bool wt_json_bool(const struct wt_json *root, const char *path, bool *out)
{
	const struct wt_json *v = wt_json_get(root, path);
	if (!v || v->type != WT_JSON_BOOL)
		return false;
	*out = v->boolean;
	return true;
}

const char *wt_json_str(const struct wt_json *root, const char *path)
{
	const struct wt_json *v = wt_json_get(root, path);
	return v && v->type == WT_JSON_STRING ? v->text : NULL;
}
