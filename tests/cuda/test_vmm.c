/*
 * test_vmm.c - the CUDA virtual memory API under `wsprof record`
 * (cuda_vmm): cuMemCreate and cuMemRelease are the `cuda_vmm` kind's
 * allocations and frees, a cuMemCreate beyond the device's capacity is
 * one failed call, and mappings and address reservations are counted
 * apart, as kinds.cuda_vmm's maps, unmaps and mapped and reserved bytes.
 *
 * The program calls the entry points it is linked with, or looks them up
 * with cuGetProcAddress_v2 by base name (as PyTorch does); both count alike.
 */
#include "cuda_harness.h"

#include <criterion/criterion.h>

TestSuite(cuda_vmm, .fini = wt_cleanup, .timeout = 60);

static void check(const char *const args[], const char *who)
{
	struct wt_recording rec;
	ct_record_ok(&rec, "cuda_vmm", NULL, args);
	struct wt_json *mine = wt_summary(rec.trace, (const char *[]){ "cuda_vmm", NULL });
	ct_assert_cuda_counted(mine, rec.expect, who);
	ct_assert_vmm_mapping(mine, rec.expect, who);
	wt_json_free(mine);
	wt_recording_free(&rec);
}

Test(cuda_vmm, create_map_unmap_release_and_leak)
{
	check(NULL, "cuda_vmm");
}

Test(cuda_vmm, entry_points_from_cuGetProcAddress)
{
	check((const char *[]){ "procaddr", NULL }, "cuda_vmm procaddr");
}
