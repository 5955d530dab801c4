/*
 * statetext.c - `wsprof report state`: what memory looked like at one moment
 * (the peak, the end, the first failed allocation, a time, a snapshot
 * label), block by block, with what the program said about each block -
 * and which blocks could be given back, least recently used first, with
 * the running total evicting them would free; per memory, the holes
 * between its blocks, and at a failed allocation the request against the
 * largest hole, as text or JSON. The command is cmd/state.c; the map of
 * -o is draw/statemap.c's.
 *
 * The state itself is model/state.c's, its layout compute/layout.c's.
 */
#include "layout.h"
#include "text.h"

#include "grow.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *validity_word(const struct wsp_ann_state *a)
{
	if (!a || a->validity == WSP_VALIDITY_UNKNOWN)
		return "-";
	return a->validity == WSP_VALIDITY_VALID ? "valid" : "invalid";
}

/* The rows printed: every kind, or --kind. */
static bool shown(const struct wsp_state *st, const struct wsp_state_block *r)
{
	return st->kind < 0 || r->b->kind == (unsigned)st->kind;
}

static const char *site_of(struct wsp_state *st, const struct wsp_block *b, char *buf, size_t cap)
{
	uint32_t id;
	const struct wsp_frame *site = wsp_syms_site(st->l.syms, st->l.trace, b->stack, &id);
	return site ? wsp_frame_label(site, buf, cap) : "(no stack)";
}

/* ---- output ------------------------------------------------------------- */

static void print_layout(const struct wsp_memory *m)
{
	char name[32], a[32], b[32], c[32], frag[32];
	printf("  %-12s %s", m->device >= 0 ? wsp_memory_name(m, name, sizeof name) : "",
	       m->estimated ? "(of the sampled blocks) " : "");
	if (!m->n)
		printf("no live blocks");
	else
		printf("0x%llx-0x%llx: ", (unsigned long long)m->lo, (unsigned long long)m->hi);
	if (m->holes)
		printf("%s free in %s, largest hole %s at 0x%llx, fragmentation %s",
		       wsp_human_bytes(a, sizeof a, m->free_bytes), wsp_counted(b, sizeof b, m->holes, "hole"),
		       wsp_human_bytes(c, sizeof c, m->largest_hole), (unsigned long long)m->largest_hole_addr,
		       wsp_memory_fragmentation(m, frag, sizeof frag));
	else if (m->n)
		printf("no holes between its blocks");
	if (m->breaks)
		printf("; %s apart in %s", wsp_human_bytes(a, sizeof a, m->break_total),
		       wsp_counted(b, sizeof b, m->breaks, "break"));
	if (m->sampled)
		printf("; %s of %s free on the device at the last sample", wsp_human_bytes(a, sizeof a, m->device_free),
		       wsp_human_bytes(c, sizeof c, m->device_total));
	printf("\n");
}

static void print_failure(const struct wsp_state *st, const struct wsp_memory *mem, size_t nmem)
{
	const struct wsp_state_failure *f = &st->failure;
	char a[32], b[32], device[32] = "";
	if (f->device >= 0)
		snprintf(device, sizeof device, " on device %d", f->device);
	printf("\n  failed       %s of %s (%s%s)", wsp_state_failed_call(f), wsp_human_bytes(a, sizeof a, f->size),
	       wsprof_kind_name(f->kind), device);
	for (size_t i = 0; i < nmem; i++) {
		if (wsp_memory_failed(st, &mem[i])) {
			printf(": requested %s, largest hole %s; %s", a, wsp_human_bytes(b, sizeof b, mem[i].largest_hole),
			       wsp_memory_verdict(&mem[i], f->size));
			break;
		}
	}
	printf("\n");
}

void wsp_state_print_text(struct wsp_state *st, const struct wsp_memory *mem, size_t nmem)
{
	wsp_print_heading(&st->l, "memory state");
	printf("  at %s\n\n", st->what);
	size_t shown_rows = 0;
	for (unsigned k = 0; k < WSPROF_KIND_COUNT; k++) {
		uint64_t live = 0, collectable = 0, blocks = 0;
		for (size_t i = 0; i < st->n; i++) {
			if (st->v[i].b->kind != k || !shown(st, &st->v[i]))
				continue;
			blocks++;
			uint64_t bytes = wsp_model_block_bytes(st->l.model, st->v[i].b);
			live += bytes;
			collectable += st->v[i].ann && st->v[i].ann->collectable ? bytes : 0;
		}
		shown_rows += blocks;
		if (blocks) { /* a sampled heap: estimated bytes, and only the sampled blocks listed */
			char a[32], b[32], c[32], d[32];
			const char *est = wsp_est(&st->l, k);
			printf("  %-12s %s%s live in %s: %s%s in use, %s%s collectable\n", wsprof_kind_name(k), est,
			       wsp_human_bytes(a, sizeof a, live), wsp_counted(b, sizeof b, blocks, *est ? "sampled block" : "block"),
			       est, wsp_human_bytes(c, sizeof c, live - collectable), est, wsp_human_bytes(d, sizeof d, collectable));
		}
		/* Devices in order, whichever the moment put first. */
		for (int device = -1, next; device != INT_MAX; device = next) {
			next = INT_MAX;
			for (size_t i = 0; i < nmem; i++) {
				if (mem[i].kind != k)
					continue;
				if (mem[i].device == device && (blocks || device >= 0))
					print_layout(&mem[i]);
				if (mem[i].device > device && mem[i].device < next)
					next = mem[i].device;
			}
		}
	}
	if (st->failed)
		print_failure(st, mem, nmem);
	if (!shown_rows) {
		printf("  (no live blocks)\n");
		return;
	}
	printf("\n  %-12s %-18s %11s %5s %-8s %10s  %-24s %s\n", "kind", "address", "size", "refs", "validity", "last use",
	       "name", "site");
	for (size_t i = 0; i < st->n; i++) {
		const struct wsp_state_block *row = &st->v[i];
		if (!shown(st, row))
			continue;
		char size[32], site[1024], refs[24];
		snprintf(refs, sizeof refs, "%lld", row->ann ? (long long)row->ann->refs : 0LL);
		printf("  %-12s 0x%016llx %11s %5s %-8s %8.3f s  %-24s %s\n", wsprof_kind_name(row->b->kind),
		       (unsigned long long)wsp_block_addr(row->b), wsp_human_bytes(size, sizeof size, row->b->size),
		       row->ann && row->ann->annotated ? refs : "-", validity_word(row->ann), (double)wsp_state_last_use(row) / 1e9,
		       row->ann && row->ann->name ? row->ann->name : "-", site_of(st, row->b, site, sizeof site));
	}
	struct wsp_state_block *lru;
	size_t nlru = wsp_state_collectable(st, &lru);
	bool any = false;
	uint64_t total = 0;
	for (size_t i = 0; i < nlru; i++) {
		const struct wsp_state_block *row = &lru[i];
		if (!shown(st, row))
			continue;
		if (!any)
			printf("\n  collectable, least recently used first (evicting down to a row frees the running total):\n"
			       "  %-12s %-18s %11s %10s %13s  %s\n", "kind", "address", "size", "last use", "running total", "name");
		any = true;
		total += row->b->size;
		char size[32], sum[32];
		printf("  %-12s 0x%016llx %11s %8.3f s %13s  %s\n", wsprof_kind_name(row->b->kind),
		       (unsigned long long)wsp_block_addr(row->b), wsp_human_bytes(size, sizeof size, row->b->size),
		       (double)wsp_state_last_use(row) / 1e9, wsp_human_bytes(sum, sizeof sum, total),
		       row->ann->name ? row->ann->name : "-");
	}
	free(lru);
	if (!any)
		printf("\n  nothing is collectable: no block was released or invalidated without another holder\n");
}

static void json_block(struct wsp_json *j, struct wsp_state *st, const struct wsp_state_block *row, uint64_t running)
{
	char site[1024];
	wsp_json_begin_object(j, NULL);
	wsp_json_string(j, "kind", wsprof_kind_name(row->b->kind));
	wsp_json_uint(j, "address", wsp_block_addr(row->b));
	wsp_json_uint(j, "size", row->b->size);
	if (row->device >= 0)
		wsp_json_int(j, "device", row->device);
	wsp_json_string(j, "name", row->ann ? row->ann->name : NULL);
	wsp_json_int(j, "refs", row->ann ? row->ann->refs : 0);
	wsp_json_string(j, "validity", row->ann && row->ann->validity ? validity_word(row->ann) : NULL);
	wsp_json_bool(j, "annotated", row->ann && row->ann->annotated);
	wsp_json_bool(j, "collectable", row->ann && row->ann->collectable);
	wsp_json_seconds(j, "allocated_s", row->b->time_ns);
	wsp_json_seconds(j, "last_use_s", wsp_state_last_use(row));
	wsp_json_string(j, "site", site_of(st, row->b, site, sizeof site));
	if (running)
		wsp_json_uint(j, "running_total_bytes", running);
	wsp_json_end_object(j);
}

static void json_memory(struct wsp_json *j, const struct wsp_memory *m)
{
	wsp_json_begin_object(j, NULL);
	wsp_json_string(j, "kind", wsprof_kind_name(m->kind));
	if (m->device >= 0)
		wsp_json_int(j, "device", m->device);
	else
		wsp_json_null(j, "device");
	if (m->estimated)
		wsp_json_bool(j, "estimated", true);
	wsp_json_uint(j, "span_start", m->lo);
	wsp_json_uint(j, "span_end", m->hi);
	wsp_json_uint(j, "live_bytes", m->live_bytes);
	wsp_json_uint(j, "blocks", m->n);
	wsp_json_uint(j, "collectable_bytes", m->collectable_bytes);
	wsp_json_uint(j, "holes", m->holes);
	wsp_json_uint(j, "free_bytes", m->free_bytes);
	wsp_json_uint(j, "largest_hole_bytes", m->largest_hole);
	if (m->largest_hole)
		wsp_json_uint(j, "largest_hole_address", m->largest_hole_addr);
	else
		wsp_json_null(j, "largest_hole_address");
	wsp_json_double(j, "fragmentation", m->fragmentation);
	wsp_json_uint(j, "slack_bytes", m->slack);
	wsp_json_uint(j, "break_bytes", m->break_bytes);
	wsp_json_uint(j, "breaks", m->breaks);
	wsp_json_uint(j, "break_total_bytes", m->break_total);
	wsp_json_uint(j, "pools", m->pools);
	wsp_json_uint(j, "pooled_bytes", m->pooled_bytes);
	if (m->sampled) {
		wsp_json_uint(j, "device_free_bytes", m->device_free);
		wsp_json_uint(j, "device_total_bytes", m->device_total);
	}
	wsp_json_end_object(j);
}

static void json_failure(struct wsp_json *j, const struct wsp_state *st, const struct wsp_memory *mem, size_t nmem)
{
	if (!st->failed) {
		wsp_json_null(j, "failed_request");
		return;
	}
	const struct wsp_state_failure *f = &st->failure;
	wsp_json_begin_object(j, "failed_request");
	wsp_json_string(j, "kind", wsprof_kind_name(f->kind));
	wsp_json_string(j, "op", wsprof_op_name(f->op)); /* null: the event could not be read */
	if (f->device >= 0)
		wsp_json_int(j, "device", f->device);
	else
		wsp_json_null(j, "device");
	wsp_json_uint(j, "size", f->size);
	wsp_json_seconds(j, "time_s", f->time_ns);
	const struct wsp_memory *m = NULL;
	for (size_t i = 0; i < nmem && !m; i++)
		if (wsp_memory_failed(st, &mem[i]))
			m = &mem[i];
	if (m) {
		wsp_json_uint(j, "largest_hole_bytes", m->largest_hole);
		wsp_json_uint(j, "free_bytes", m->free_bytes);
		wsp_json_bool(j, "fits_largest_hole", f->size <= m->largest_hole);
	}
	wsp_json_end_object(j);
}

void wsp_state_print_json(struct wsp_state *st, const struct wsp_memory *mem, size_t nmem)
{
	const wsprof_process *p = wsprof_trace_process(st->l.trace);
	struct wsp_json j;
	wsp_json_init(&j, stdout);
	wsp_json_begin_object(&j, NULL);
	wsp_json_string(&j, "report", "state");
	wsp_json_string(&j, "trace", st->l.path);
	wsp_json_string(&j, "program", p->cmdline[0] ? p->cmdline : p->exe);
	wsp_json_string(&j, "at", st->what);
	wsp_json_seconds(&j, "time_s", wsp_model_last_time(st->l.model));
	wsp_json_sampled(&j, &st->l);
	wsp_json_begin_array(&j, "memories");
	for (size_t i = 0; i < nmem; i++)
		json_memory(&j, &mem[i]);
	wsp_json_end_array(&j);
	json_failure(&j, st, mem, nmem);
	wsp_json_begin_array(&j, "blocks");
	for (size_t i = 0; i < st->n; i++)
		if (shown(st, &st->v[i]))
			json_block(&j, st, &st->v[i], 0);
	wsp_json_end_array(&j);
	struct wsp_state_block *lru;
	size_t nlru = wsp_state_collectable(st, &lru);
	wsp_json_begin_array(&j, "collectable");
	uint64_t total = 0;
	for (size_t i = 0; i < nlru; i++)
		if (shown(st, &lru[i]))
			json_block(&j, st, &lru[i], total += lru[i].b->size);
	free(lru);
	wsp_json_end_array(&j);
	wsp_json_end_object(&j);
}
