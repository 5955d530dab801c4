/*
 * dwarf.c - what one module names: an offset's logical frames from its
 * DWARF (file:line, each inlined call a frame), else its function from
 * the module's symbol table, C++ names demangled. Touches only the module
 * and the frames it makes, so that modules are named in parallel.
 *
 * Each module's function symbols are sorted once into an index searched
 * by bisection: libdwfl's dwfl_module_addrinfo scans the whole symbol
 * table for every address, which on libtorch_cpu.so (34,000 symbols) was
 * most of a report's time. DWARF is read for the addresses shown, once each.
 */
#include "symbols_internal.h"

#include "grow.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler (the C++ ABI's), linked with the analyzer. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

/* A C++ name demangled, anything else as it is. @return 0 or -ENOMEM. */
static int raw_add(struct raws *out, const char *function, const char *file, unsigned line, bool inlined)
{
	if (wsp_grow(&out->v, &out->cap, out->n + 1, sizeof *out->v))
		return -ENOMEM;
	struct raw r = { .function = function, .file = file, .line = line, .inlined = inlined };
	if (function && function[0] == '_' && function[1] == 'Z') {
		int status = -1;
		char *d = __cxa_demangle(function, NULL, NULL, &status);
		if (d && status == 0)
			r.function = r.owned = d;
		else
			free(d);
	}
	out->v[out->n++] = r;
	return 0;
}

void syms_raws_free(struct raws *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].owned);
	free(r->v);
	*r = (struct raws){ 0 };
}

static const char *die_function(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		name = dwarf_formstring(&attr);
	if (!name && dwarf_attr_integrate(die, DW_AT_name, &attr))
		name = dwarf_formstring(&attr);
	return name;
}

/* The logical frames of pc, innermost first, from the DWARF scopes: each
 * inlined call is a frame whose line is where the next one called it.
 * @return frames added or -ENOMEM. */
static int frames_from_dwarf(struct mod *m, Dwarf_Addr pc, struct raws *out)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(m->dm, pc, &bias);
	if (!cu)
		return 0;
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes(cu, pc - bias, &scopes);
	if (n <= 0)
		return 0;
	/* Past an inlined instance, dwarf_getscopes follows its abstract
	 * definition; the chain of calls is the DIE's physical parents. */
	Dwarf_Die inner = scopes[0];
	free(scopes);
	scopes = NULL;
	n = dwarf_getscopes_die(&inner, &scopes);
	if (n <= 0)
		return 0;
	Dwfl_Line *line = dwfl_module_getsrc(m->dm, pc);
	int lineno = 0;
	const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	dwarf_getsrcfiles(cu, &files, &nfiles);
	int added = 0;
	for (int i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		if (raw_add(out, die_function(&scopes[i]), file, lineno > 0 ? (unsigned)lineno : 0,
			    tag == DW_TAG_inlined_subroutine)) {
			free(scopes);
			return -ENOMEM;
		}
		added++;
		if (tag == DW_TAG_subprogram)
			break;
		/* The next frame out is at this inlined call's call site. */
		Dwarf_Attribute attr;
		Dwarf_Word cfile = 0, cline = 0;
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &cfile) == 0 && files &&
		    cfile < nfiles)
			file = dwarf_filesrc(files, cfile, NULL, NULL);
		else
			file = NULL;
		lineno = dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &cline) == 0 ? (int)cline : 0;
	}
	free(scopes);
	return added;
}

/* ---- the symbol index ------------------------------------------------ */

static int by_address(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address, the one to keep first: global, then sized. */
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return (x->size > 0) == (y->size > 0) ? 0 : x->size ? -1 : 1;
}

/* The module's function symbols (.symtab, or .dynsym, and those of the
 * separate debug file libdwfl found), sorted, one per address. */
static int index_build(struct mod *m)
{
	m->indexed = true;
	int n = dwfl_module_getsymtab(m->dm);
	if (n <= 0)
		return 0;
	struct sym *v = malloc((size_t)n * sizeof *v);
	if (!v)
		return -ENOMEM;
	size_t k = 0;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(m->dm, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		if (!name || !*name || sym.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		v[k++] = (struct sym){ addr, sym.st_size, name, GELF_ST_BIND(sym.st_info) != STB_LOCAL };
	}
	qsort(v, k, sizeof *v, by_address);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (!u || v[i].addr != v[u - 1].addr)
			v[u++] = v[i];
	m->syms = v;
	m->nsyms = u;
	return 0;
}

/* The function containing pc: the last symbol starting at or before it,
 * if pc is within its size (a symbol of unknown size runs to the next). */
static const char *index_lookup(const struct mod *m, uint64_t pc)
{
	size_t lo = 0, hi = m->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->syms[mid].addr <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct sym *f = &m->syms[lo - 1];
	return !f->size || pc < f->addr + f->size ? f->name : NULL;
}

/* The frames of an offset in a ready module: from DWARF, else one named
 * by the symbol index (its function NULL when none covers it). Touches
 * nothing but the module and out, so modules can be named in parallel.
 * @return 0 or -ENOMEM. */
int syms_name_offset(struct mod *m, uint64_t offset, struct raws *out)
{
	Dwarf_Addr pc = m->base + offset - 1;
	int added = frames_from_dwarf(m, pc, out);
	if (added)
		return added < 0 ? added : 0;
	if (!m->indexed && index_build(m))
		return -ENOMEM;
	return raw_add(out, index_lookup(m, pc), NULL, 0, false);
}

void syms_index_free(struct mod *m)
{
	free(m->syms);
	m->syms = NULL;
	m->nsyms = 0;
	m->indexed = false;
}
