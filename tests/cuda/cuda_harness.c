/*
 * cuda_harness.c - recording the CUDA test programs and comparing their
 * cuda kinds (cuda_harness.h).
 */
#include "cuda_harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cuda_kinds[] = { "cuda_device", "cuda_managed", "cuda_host", "cuda_vmm" };


void ct_record(struct wt_recording *r, const char *prog, const char *const env[], const char *const args[])
{
	const char *full_env[16] = { "LD_LIBRARY_PATH=" FAKECUDA_DIR, "FAKECUDA_CAPACITY=" CT_CAPACITY };
	size_t n = 2;
	for (size_t i = 0; env && env[i] && n < 15; i++)
		full_env[n++] = env[i];
	char *prog_path = wt_path(FAKECUDA_DIR, "%s", prog);
	wt_record_with(r, full_env, NULL, prog_path, args);
	free(prog_path);
}

void ct_record_ok(struct wt_recording *r, const char *prog, const char *const env[], const char *const args[])
{
	ct_record(r, prog, env, args);
	char what[256];
	snprintf(what, sizeof what, "wsprof record %s", prog);
	wt_assert_status(&r->run, 0, what);
	cr_assert(r->expect, "%s wrote no expect file", prog);
}

static bool summary_has_kind(const struct wt_json *summary, const char *kind)
{
	const struct wt_json *kinds = wt_json_get(summary, "kinds");
	return kinds && wt_json_get(kinds, kind);
}

void ct_assert_cuda_counted(const struct wt_json *summary, const struct wt_json *books, const char *who)
{
	for (size_t k = 0; k < sizeof cuda_kinds / sizeof *cuda_kinds; k++) {
		const char *kind = cuda_kinds[k];
		const struct wt_json *mine = wt_json_get(books, kind);
		char path[256];
		if (!mine) {
			static const char *const nonzero_if_used[] = { "allocations", "failed" };
			for (size_t f = 0; f < sizeof nonzero_if_used / sizeof *nonzero_if_used; f++) {
				snprintf(path, sizeof path, "kinds.%s.%s", kind, nonzero_if_used[f]);
				uint64_t got = 0;
				wt_json_u64(summary, path, &got);
				cr_expect_eq(got, 0, "%s uses no %s memory, yet wsprof counted %s = %llu", who, kind, path,
					     (unsigned long long)got);
			}
			continue;
		}
		cr_assert(summary_has_kind(summary, kind),
			  "%s used %s memory, yet the summary has no kinds.%s: the recorder saw none of its "
			  "CUDA driver calls", who, kind, kind);
		for (size_t f = 0; f < mine->count; f++) {
			const char *figure = mine->items[f].key;
			uint64_t want, got;
			snprintf(path, sizeof path, "%s.%s", kind, figure);
			cr_assert(wt_json_u64(books, path, &want), "%s's books have no number at %s", who, path);
			snprintf(path, sizeof path, "kinds.%s.%s", kind, figure);
			cr_assert(wt_json_u64(summary, path, &got), "the summary has no number at %s", path);
			cr_expect_eq(got, want, "%s %s.%s: the program counted %llu, wsprof %llu", who, kind, figure,
				     (unsigned long long)want, (unsigned long long)got);
		}
	}
}

void ct_assert_vmm_mapping(const struct wt_json *summary, const struct wt_json *books, const char *who)
{
	const struct wt_json *mine = wt_json_get(books, "vmm_mapping");
	cr_assert(mine && mine->type == WT_JSON_OBJECT, "%s's books have no vmm_mapping", who);
	cr_assert(summary_has_kind(summary, "cuda_vmm"),
		  "%s mapped cuMemCreate memory, yet the summary has no kinds.cuda_vmm", who);
	for (size_t f = 0; f < mine->count; f++) {
		const char *figure = mine->items[f].key;
		char path[256];
		uint64_t want, got;
		snprintf(path, sizeof path, "vmm_mapping.%s", figure);
		cr_assert(wt_json_u64(books, path, &want), "%s's books have no number at %s", who, path);
		snprintf(path, sizeof path, "kinds.cuda_vmm.%s", figure);
		cr_assert(wt_json_u64(summary, path, &got), "the summary has no number at %s", path);
		cr_expect_eq(got, want, "%s cuda_vmm.%s: the program counted %llu, wsprof %llu", who, figure,
			     (unsigned long long)want, (unsigned long long)got);
	}
}
