/*
 * pycode.h - the Python code objects of a trace (PY_CODE records), kept
 * by id for the reader, and their location tables decoded.
 *
 * The table is written by the reader's decoding side and read by its
 * caller: entries never move once made (pages of entries under a fixed
 * directory), and an id is handed out only after its record was decoded,
 * so the caller reads entries the decoding side no longer touches.
 */
#ifndef WSP_PYCODE_H
#define WSP_PYCODE_H

#include <stddef.h>
#include <stdint.h>

#include "wsprof/trace.h"

#define WSP_PYCODE_PAGE 1024
#define WSP_PYCODE_PAGES 16384 /* 16 M code objects at most */

struct wsp_pycodes {
	wsprof_pycode *page[WSP_PYCODE_PAGES];
	uint64_t *order[WSP_PYCODE_PAGES]; /* the ids in the order they were defined, in pages too */
	size_t count;                      /* ids defined */
};

/* Keep a code object: its strings and table (malloc'd; NULL: out of
 * memory) become the table's, or are freed when it cannot take them.
 * @return 0, -ENOMEM, or WSPROF_E_CORRUPT for an id out of range. */
int wsp_pycodes_add(struct wsp_pycodes *c, uint64_t id, uint64_t firstlineno, char *qualname, char *filename,
		    uint8_t *linetable, size_t ln);
const wsprof_pycode *wsp_pycodes_get(const struct wsp_pycodes *c, uint64_t id);
/* The id defined i-th (i < count): a reader of count as it was when
 * ids 0..i were defined reads what their writer no longer touches. */
uint64_t wsp_pycodes_nth(const struct wsp_pycodes *c, size_t i);
void wsp_pycodes_free(struct wsp_pycodes *c);

#endif
