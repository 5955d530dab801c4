/*
 * symbols.c - the wsp_syms object (symbols.h): its strings, interned; its
 * addresses, each a (module, offset) named once into one arena of frames;
 * naming one address, from the cache or its module; what was named.
 * The tables are described in symbols_internal.h.
 */
#include "symbols_internal.h"

#include "grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t syms_hash_bytes(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ull;
	return h;
}

struct wsp_syms *wsp_syms_new(FILE *warn, enum wsp_stack_view view)
{
	syms_debug_places();
	struct wsp_syms *s = calloc(1, sizeof *s);
	if (s) {
		s->warn = warn;
		s->view = view;
	}
	return s;
}

void wsp_syms_free(struct wsp_syms *s)
{
	if (!s)
		return;
	syms_say_unnamed(s);
	syms_say_absent(s);
	syms_cache_save(s);
	syms_cache_free(s);
	free(s->trace_path);
	syms_modules_free(s);
	for (size_t i = 0; i < s->strcap; i++)
		free(s->strings[i]);
	free(s->strings);
	free(s->nodes);
	free(s->parents);
	free(s->addrs);
	free(s->addr_index);
	free(s->arena);
	free(s->out);
	free(s);
}

/* ---- strings ---------------------------------------------------------- */

static bool string_used(const void *slot)
{
	return *(char *const *)slot != NULL;
}

static size_t string_hash(const void *slot, void *ctx)
{
	(void)ctx;
	const char *str = *(const char *const *)slot;
	return (size_t)syms_hash_bytes(str, strlen(str), SYMS_HASH_SEED);
}

const char *syms_intern(struct wsp_syms *s, const char *str)
{
	if (!str)
		return NULL;
	if (wsp_table_room(&s->strings, &s->strcap, s->nstrings, sizeof *s->strings, 1024, string_used, string_hash, NULL))
		return NULL;
	size_t j = string_hash(&str, NULL) & (s->strcap - 1);
	for (; s->strings[j]; j = (j + 1) & (s->strcap - 1))
		if (strcmp(s->strings[j], str) == 0)
			return s->strings[j];
	s->strings[j] = strdup(str);
	if (s->strings[j])
		s->nstrings++;
	return s->strings[j];
}


/* ---- addresses and their frames ------------------------------------- */

int syms_arena_add(struct wsp_syms *s, struct wsp_frame f)
{
	if (wsp_grow(&s->arena, &s->arenacap, s->narena + 1, sizeof *s->arena))
		return -ENOMEM;
	s->arena[s->narena++] = f;
	return 0;
}

static size_t addr_hash(size_t i, void *ctx)
{
	const struct addr_entry *e = &((const struct wsp_syms *)ctx)->addrs[i];
	return (size_t)syms_hash_bytes(&e->offset, 8, (uint64_t)e->mod);
}

/* The place of (mod, offset) in addrs, made (not yet named) if new; -1
 * without memory. Once per stack node, as it is noted: a stack is then
 * read without a probe (wsp_syms_stack). */
int64_t syms_entry_of(struct wsp_syms *s, int32_t mod, uint64_t offset)
{
	if (s->naddrs >= UINT32_MAX - 1 ||
	    wsp_index_fit(&s->addr_index, &s->index_cap, s->naddrs + 1, 1024, 0, s->naddrs, addr_hash, NULL, s))
		return -1;
	size_t j = syms_hash_bytes(&offset, 8, (uint64_t)mod) & (s->index_cap - 1);
	for (; s->addr_index[j]; j = (j + 1) & (s->index_cap - 1)) {
		const struct addr_entry *e = &s->addrs[s->addr_index[j] - 1];
		if (e->mod == mod && e->offset == offset)
			return s->addr_index[j] - 1;
	}
	if (wsp_grow(&s->addrs, &s->addrs_cap, s->naddrs + 1, sizeof *s->addrs))
		return -1;
	s->addrs[s->naddrs] = (struct addr_entry){ .mod = mod, .offset = offset };
	s->addr_index[j] = (uint32_t)++s->naddrs;
	return (int64_t)s->naddrs - 1;
}

/* An address's frames into the arena (symbols_internal.h). */
int syms_adopt(struct wsp_syms *s, struct addr_entry *e, struct raw *r, size_t n)
{
	struct mod *m = e->mod >= 0 ? &s->mods[e->mod] : NULL;
	struct wsp_frame base = { .offset = e->offset, .module_id = m ? (uint32_t)e->mod + 1 : 0,
				  .module = m ? syms_intern(s, m->name) : NULL };
	e->first = (uint32_t)s->narena;
	int err = 0;
	for (size_t i = 0; i < n; i++) {
		struct wsp_frame f = base;
		f.function = syms_intern(s, r[i].function);
		f.file = syms_intern(s, r[i].file);
		f.line = r[i].line;
		f.inlined = r[i].inlined;
		free(r[i].owned);
		r[i].owned = NULL;
		if (!err)
			err = syms_arena_add(s, f);
	}
	if (!n && !err)
		err = syms_arena_add(s, base);
	e->count = (uint32_t)(s->narena - e->first);
	e->named = !err;
	if (m && !n && m->absent)
		m->lost++;
	if (m && n) {
		m->resolved++;
		m->unnamed += !r[0].function;
		e->fresh = m->key != NULL;
		s->fresh += e->fresh;
	}
	return err;
}

/* Whether a new address needs its module read: not in the cache, in a
 * module that can be read (opened here, once). Those that don't are
 * named at once. @return 1 (read it), 0 (named) or -ENOMEM. */
int syms_needs_module(struct wsp_syms *s, struct addr_entry *e)
{
	int hit = syms_from_cache(s, e);
	if (hit)
		return hit < 0 ? hit : 0;
	struct mod *m = e->mod >= 0 ? &s->mods[e->mod] : NULL;
	if (m && m->state == MOD_UNTRIED)
		syms_module_open(s, m);
	if (m && m->state == MOD_READY)
		return 1;
	return syms_adopt(s, e, NULL, 0);
}

/* Symbolize one new address. @return 0 or -ENOMEM. */
int syms_symbolize(struct wsp_syms *s, struct addr_entry *e)
{
	int need = syms_needs_module(s, e);
	if (need <= 0)
		return need;
	struct raws r = { 0 };
	int err = syms_name_offset(&s->mods[e->mod], e->offset, &r);
	err = err ? err : syms_adopt(s, e, r.v, r.n);
	syms_raws_free(&r);
	return err;
}


void wsp_syms_stats(const struct wsp_syms *s, struct wsp_syms_stats *st)
{
	*st = (struct wsp_syms_stats){ 0 };
	for (size_t i = 0; i < s->naddrs; i++) {
		const struct addr_entry *e = &s->addrs[i];
		if (!e->named || !e->count || e->mod == PY_MOD)
			continue; /* Python frames are named from the trace itself */
		st->addresses++;
		st->unnamed += !s->arena[e->first].function;
		st->uncached += e->mod >= 0 && !s->mods[e->mod].key;
		st->outside += e->mod < 0;
	}
	for (size_t i = 0; i < s->nmods; i++) {
		st->lost += s->mods[i].lost;
		st->absent += s->mods[i].lost > 0;
		st->modules += s->mods[i].resolved > 0 || s->mods[i].lost > 0;
	}
}


const char *wsp_frame_label(const struct wsp_frame *f, char *buf, size_t cap)
{
	const char *file = f->file ? strrchr(f->file, '/') : NULL;
	file = file ? file + 1 : f->file;
	if (f->python)
		snprintf(buf, cap, "py %s (%s:%u)", f->function, file ? file : "?", f->line);
	else if (f->function && file && f->line)
		snprintf(buf, cap, "%s (%s:%u)", f->function, file, f->line);
	else if (f->function && f->module)
		snprintf(buf, cap, "%s (%s)", f->function, f->module);
	else if (f->function)
		snprintf(buf, cap, "%s", f->function);
	else if (f->module)
		snprintf(buf, cap, "%s+0x%llx", f->module, (unsigned long long)f->offset);
	else
		snprintf(buf, cap, "0x%llx", (unsigned long long)f->offset);
	return buf;
}
