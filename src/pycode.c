/*
 * pycode.c - Python code objects by id, and CPython 3.11+'s location
 * table (Objects/locations.md in CPython) read back into lines.
 */
#include "pycode.h"

#include <errno.h>
#include <stdlib.h>

int wsp_pycodes_add(struct wsp_pycodes *c, uint64_t id, uint64_t firstlineno, char *qualname, char *filename,
		    uint8_t *linetable, size_t ln)
{
	int err = 0;
	wsprof_pycode **page = id && id < (uint64_t)WSP_PYCODE_PAGE * WSP_PYCODE_PAGES ? &c->page[id / WSP_PYCODE_PAGE] : NULL;
	if (!page)
		err = WSPROF_E_CORRUPT;
	else if (!qualname || !filename || !linetable || (!*page && !(*page = calloc(WSP_PYCODE_PAGE, sizeof **page))))
		err = -ENOMEM;
	wsprof_pycode *e = err ? NULL : &(*page)[id % WSP_PYCODE_PAGE];
	if (!e || e->qualname) { /* defined again (a damaged trace): the first stands, its pointers may be in use */
		free(qualname);
		free(filename);
		free(linetable);
		return err;
	}
	uint64_t **log = &c->order[c->count / WSP_PYCODE_PAGE]; /* as many as ids: it fits the directory */
	if (!*log && !(*log = malloc(WSP_PYCODE_PAGE * sizeof **log))) {
		free(qualname);
		free(filename);
		free(linetable);
		return -ENOMEM;
	}
	*e = (wsprof_pycode){ qualname, filename, firstlineno > 0x7fffffff ? 0 : (unsigned)firstlineno, linetable, ln };
	(*log)[c->count % WSP_PYCODE_PAGE] = id;
	c->count++;
	return 0;
}

uint64_t wsp_pycodes_nth(const struct wsp_pycodes *c, size_t i)
{
	return c->order[i / WSP_PYCODE_PAGE][i % WSP_PYCODE_PAGE];
}

const wsprof_pycode *wsp_pycodes_get(const struct wsp_pycodes *c, uint64_t id)
{
	if (id == 0 || id >= (uint64_t)WSP_PYCODE_PAGE * WSP_PYCODE_PAGES || !c->page[id / WSP_PYCODE_PAGE])
		return NULL;
	const wsprof_pycode *e = &c->page[id / WSP_PYCODE_PAGE][id % WSP_PYCODE_PAGE];
	return e->qualname ? e : NULL;
}

void wsp_pycodes_free(struct wsp_pycodes *c)
{
	for (size_t i = 0; i < WSP_PYCODE_PAGES; i++) {
		if (!c->page[i])
			continue;
		for (size_t j = 0; j < WSP_PYCODE_PAGE; j++) {
			free((char *)c->page[i][j].qualname);
			free((char *)c->page[i][j].filename);
			free((uint8_t *)c->page[i][j].linetable);
		}
		free(c->page[i]);
		c->page[i] = NULL;
	}
	for (size_t i = 0; i < WSP_PYCODE_PAGES && c->order[i]; i++) {
		free(c->order[i]);
		c->order[i] = NULL;
	}
	c->count = 0;
}

/* The table's varints: 6 bits a byte, low first, 0x40 saying more follow. */
static uint64_t get_varint6(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	for (unsigned shift = 0; *p < end && shift < 64; shift += 6) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 63) << shift;
		if (!(b & 64))
			break;
	}
	return v;
}

static int64_t get_svarint6(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = get_varint6(p, end);
	return v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
}

/* Each entry: a first byte with its top bit set, the form in bits 3-6 and
 * the code units it covers less one in bits 0-2, then the form's fields.
 * Forms 0-9 and 10: the same line; 11, 12: one or two lines on; 13 and
 * 14: a signed line delta first; 15: no line. */
int wsprof_pycode_line(const wsprof_pycode *c, uint64_t instr)
{
	if (!c)
		return -1;
	if (instr == 0)
		return (int)c->firstlineno; /* not started: CPython says the first line too */
	uint64_t want = instr - 1, at = 0;
	int64_t line = c->firstlineno;
	const uint8_t *p = c->linetable, *end = p + c->linetable_len;
	while (p < end) {
		uint8_t first = *p++;
		unsigned form = (first >> 3) & 15, units = (first & 7) + 1;
		if (form == 13 || form == 14)
			line += get_svarint6(&p, end);
		else if (form == 11 || form == 12)
			line += form - 10;
		while (p < end && !(*p & 128))
			p++; /* the rest of the entry: end line, columns */
		if (want < at + units)
			return form == 15 || line < 0 || line > 0x7fffffff ? -1 : (int)line;
		at += units;
	}
	return -1;
}
