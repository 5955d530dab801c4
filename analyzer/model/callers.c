/*
 * callers.c - the --caller filter: whether an allocation counts, asked
 * by the event dispatch (model.c) before the model takes the block. A
 * block that does not count is kept (its free must find it) but adds to
 * no figure (excluded). The answer is the stack's first frame outside
 * the C++ runtime, matched against the modules asked for, kept per stack.
 */
#include "model_internal.h"

#include "grow.h"

#include <string.h>

static bool module_matches(const char *path, const char *want)
{
	if (strchr(want, '/'))
		return strcmp(path, want) == 0;
	const char *base = strrchr(path, '/');
	return strcmp(base ? base + 1 : path, want) == 0;
}

static bool is_cxx_runtime(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, "libstdc++.so", 12) == 0 || strncmp(base, "libc++.so", 9) == 0;
}

static bool caller_check(struct wsp_model *m, wsprof_trace *t, uint64_t stack)
{
	uint64_t ips[64];
	size_t depth = wsprof_trace_stack(t, stack, ips, 64);
	if (depth > 64)
		depth = 64;
	for (size_t i = 0; i < depth; i++) {
		/* Return addresses point after the call: look up the call itself. */
		const char *mod = wsprof_trace_module_at(t, i ? ips[i] - 1 : ips[i], NULL);
		if (!mod)
			return false;
		if (is_cxx_runtime(mod))
			continue;
		for (const char *const *c = m->callers; *c; c++)
			if (module_matches(mod, *c))
				return true;
		return false;
	}
	return false;
}

static bool caller_used(const void *slot)
{
	return ((const struct caller_slot *)slot)->stack != 0;
}

static size_t caller_hash(const void *slot, void *ctx)
{
	(void)ctx;
	return hash64(((const struct caller_slot *)slot)->stack, 0); /* unmasked */
}

bool model_caller_counts(struct wsp_model *m, wsprof_trace *t, uint64_t stack)
{
	if (!m->callers)
		return true;
	if (!stack)
		return false;
	if (wsp_table_room(&m->ccache, &m->ccache_cap, m->ccache_used, sizeof *m->ccache, 256, caller_used,
			   caller_hash, NULL))
		return caller_check(m, t, stack);
	size_t j = hash64(stack, m->ccache_cap);
	for (; m->ccache[j].stack; j = (j + 1) & (m->ccache_cap - 1))
		if (m->ccache[j].stack == stack)
			return m->ccache[j].ok;
	m->ccache[j].stack = stack;
	m->ccache[j].ok = caller_check(m, t, stack);
	m->ccache_used++;
	return m->ccache[j].ok;
}
