/*
 * tables.c - the caller's tables (reader_internal.h): stack nodes and
 * modules, kept in step with the events handed out, and what the public
 * API reads of them; with Python's codes (pycode.h), seeded and read out
 * for a reader opened in the middle (resume.h).
 */
#include "reader_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int reader_stack_set(wsprof_trace *t, const struct stack_def *d)
{
	if (t->forget_stacks)
		return 0;
	if (d->id >= t->nstacks) {
		size_t cap = t->nstacks, need = (size_t)d->id + 1;
		if (wsp_grow(&t->stacks, &cap, need, sizeof *t->stacks))
			return -ENOMEM;
		memset(t->stacks + t->nstacks, 0, (cap - t->nstacks) * sizeof *t->stacks);
		t->nstacks = cap;
	}
	/* A parent past every id (a damaged trace) stays one, whatever its top bit. */
	uint64_t parent = d->parent < NODE_DEFINED ? d->parent : NODE_DEFINED - 1;
	t->stacks[d->id] = (struct stack_node){ parent | NODE_DEFINED, d->ip };
	return 0;
}

/* Keep the module table in step with the events handed out; the module
 * moves from the event into the table. */
int reader_apply_module(wsprof_trace *t, int type, uint64_t base, struct extra *x)
{
	if (type == WSPROF_EV_MODULE_UNLOAD) {
		for (size_t i = 0; i < t->nmods; i++) {
			if (t->mods[i].base != base)
				continue;
			reader_module_free(&t->mods[i]);
			t->mods[i] = t->mods[--t->nmods];
			break;
		}
		return 0;
	}
	if (wsp_grow(&t->mods, &t->modcap, t->nmods + 1, sizeof *t->mods))
		return -ENOMEM;
	t->mods[t->nmods++] = *x->mod;
	free(x->mod);
	x->mod = NULL;
	return 0;
}

void wsprof_trace_forget_stacks(wsprof_trace *t)
{
	t->forget_stacks = true;
	free(t->stacks);
	t->stacks = NULL;
	t->nstacks = 0;
}

size_t wsprof_trace_stack(const wsprof_trace *t, uint64_t stack, uint64_t *ips, size_t max)
{
	size_t depth = 0;
	/* The depth bound also stops a cycle in a corrupt trace. */
	while (stack && stack < t->nstacks && (t->stacks[stack].parent & NODE_DEFINED) && depth < 4096) {
		if (depth < max)
			ips[depth] = t->stacks[stack].ip;
		depth++;
		uint64_t parent = t->stacks[stack].parent & ~NODE_DEFINED;
		if (parent >= stack && parent != 0)
			break; /* parents are always defined first */
		stack = parent;
	}
	return depth;
}

int wsprof_trace_stack_node(const wsprof_trace *t, uint64_t node, uint64_t *parent, uint64_t *ip)
{
	if (!node || node >= t->nstacks || !(t->stacks[node].parent & NODE_DEFINED))
		return 0;
	*parent = t->stacks[node].parent & ~NODE_DEFINED;
	*ip = t->stacks[node].ip;
	return 1;
}

static const struct module *module_covering(const wsprof_trace *t, uint64_t addr)
{
	for (size_t i = 0; i < t->nmods; i++) {
		const struct module *m = &t->mods[i];
		for (size_t s = 0; s < m->nsegs; s++) {
			uint64_t lo = m->base + m->segs[s][0];
			if (addr >= lo && addr - lo < m->segs[s][1])
				return m;
		}
	}
	return NULL;
}

const char *wsprof_trace_module_at(const wsprof_trace *t, uint64_t addr, uint64_t *base)
{
	const struct module *m = module_covering(t, addr);
	if (m && base)
		*base = m->base;
	return m ? m->path : NULL;
}

int wsprof_trace_module_info_at(const wsprof_trace *t, uint64_t addr, wsprof_module_info *info)
{
	const struct module *m = module_covering(t, addr);
	if (!m)
		return 0;
	info->path = m->path;
	info->base = m->base;
	info->build_id = m->build_id_len ? m->build_id : NULL;
	info->build_id_len = m->build_id_len;
	return 1;
}

int wsprof_trace_module_span_at(const wsprof_trace *t, uint64_t addr, uint64_t *start, uint64_t *end)
{
	const struct module *m = module_covering(t, addr);
	if (!m)
		return 0;
	*start = UINT64_MAX;
	*end = 0;
	for (size_t s = 0; s < m->nsegs; s++) {
		uint64_t lo = m->base + m->segs[s][0];
		*start = lo < *start ? lo : *start;
		*end = lo + m->segs[s][1] > *end ? lo + m->segs[s][1] : *end;
	}
	return 1;
}

/* ---- seeded and read out (src/resume.h) --------------------------------- */

int wsp_trace_seed_stack(wsprof_trace *t, uint64_t id, uint64_t parent, uint64_t ip)
{
	if (t->started)
		return -EBUSY;
	/* reader_add_stack's bound, and the batch it notes the node in (no thread yet: it is ours). */
	t->filling = &t->batches[0];
	int err = reader_add_stack(t, id, parent, ip);
	if (err)
		return err == WSPROF_E_CORRUPT ? -EINVAL : err;
	struct batch *b = &t->batches[0];
	return reader_stack_set(t, &b->defs[--b->ndefs]);
}

static char *dup_string(const char *s)
{
	return reader_dup_bytes((const uint8_t *)(s ? s : ""), s ? strlen(s) : 0);
}

int wsp_trace_seed_pycode(wsprof_trace *t, uint64_t id, unsigned firstlineno, const char *qualname,
			  const char *filename, const uint8_t *linetable, size_t linetable_len)
{
	if (t->started)
		return -EBUSY;
	int err = wsp_pycodes_add(&t->pycodes, id, firstlineno, dup_string(qualname), dup_string(filename),
				  (uint8_t *)reader_dup_bytes(linetable ? linetable : (const uint8_t *)"", linetable_len),
				  linetable_len);
	t->w.pycodes = t->seen.pycodes = t->pycodes.count;
	return err;
}

int wsp_trace_seed_python(wsprof_trace *t, const wsprof_python *py)
{
	if (t->started)
		return -EBUSY;
	char *path = dup_string(py->path), *note = dup_string(py->note);
	if (!path || !note) {
		free(path);
		free(note);
		return -ENOMEM;
	}
	free((char *)t->python.path);
	free((char *)t->python.note);
	t->python = *py;
	t->python.seen = 1;
	t->python.path = path;
	t->python.note = note;
	t->w.python = t->seen.python = true;
	return 0;
}

int wsp_trace_seed_module(wsprof_trace *t, uint64_t base, const char *path, const uint8_t *build_id,
			  size_t build_id_len, size_t nsegs, const uint64_t (*segs)[2])
{
	if (t->started)
		return -EBUSY;
	if (wsp_grow(&t->mods, &t->modcap, t->nmods + 1, sizeof *t->mods))
		return -ENOMEM;
	struct module m = { .base = base, .build_id_len = build_id_len, .nsegs = nsegs };
	m.path = dup_string(path);
	m.build_id = (uint8_t *)reader_dup_bytes(build_id ? build_id : (const uint8_t *)"", build_id_len);
	m.segs = nsegs <= SIZE_MAX / sizeof *m.segs ? malloc((nsegs ? nsegs : 1) * sizeof *m.segs) : NULL;
	if (!m.path || !m.build_id || !m.segs) {
		reader_module_free(&m);
		return -ENOMEM;
	}
	if (nsegs)
		memcpy(m.segs, segs, nsegs * sizeof *m.segs);
	t->mods[t->nmods++] = m;
	return 0;
}

int wsp_trace_each_stack_node(const wsprof_trace *t, int (*fn)(void *arg, uint64_t id, uint64_t parent, uint64_t ip),
			      void *arg)
{
	for (size_t id = 1; id < t->nstacks; id++) {
		const struct stack_node *n = &t->stacks[id];
		if (!(n->parent & NODE_DEFINED))
			continue;
		int r = fn(arg, id, n->parent & ~NODE_DEFINED, n->ip);
		if (r)
			return r;
	}
	return 0;
}

/* Up to the count of the last mark applied: those entries were written
 * before the mark was (pycode.h). */
int wsp_trace_each_pycode(const wsprof_trace *t, int (*fn)(void *arg, uint64_t id, const wsprof_pycode *code),
			  void *arg)
{
	for (size_t i = 0; i < t->seen.pycodes; i++) {
		uint64_t id = wsp_pycodes_nth(&t->pycodes, i);
		int r = fn(arg, id, wsp_pycodes_get(&t->pycodes, id));
		if (r)
			return r;
	}
	return 0;
}

int wsp_trace_each_module(const wsprof_trace *t,
			  int (*fn)(void *arg, uint64_t base, const char *path, const uint8_t *build_id,
				    size_t build_id_len, size_t nsegs, const uint64_t (*segs)[2]),
			  void *arg)
{
	for (size_t i = 0; i < t->nmods; i++) {
		const struct module *m = &t->mods[i];
		int r = fn(arg, m->base, m->path, m->build_id_len ? m->build_id : NULL, m->build_id_len, m->nsegs,
			   (const uint64_t (*)[2])m->segs);
		if (r)
			return r;
	}
	return 0;
}
