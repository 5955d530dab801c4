/*
 * test_routes.c - CUDA device, managed and pinned host memory under
 * `wsprof record`, by each route a program takes to the driver: linked
 * with libcuda.so.1 (cuda_direct), dlsym of the versioned names
 * (cuda_dlsym), cuGetProcAddress_v2 by base name and version as cudart
 * does (cuda_procaddr), and the older four-argument cuGetProcAddress
 * (cuda_procaddr_v1).
 *
 * All four run the same workload (cuda_work.c) on the test driver and must
 * be counted alike: the summary of the program's own calls (--caller) has
 * each cuda kind exactly as the program's books, failed calls included.
 */
#include "cuda_harness.h"

#include <criterion/criterion.h>
#include <stdlib.h>

TestSuite(cuda_routes, .fini = wt_cleanup, .timeout = 60);

static void check_route(const char *prog)
{
	struct wt_recording rec;
	ct_record_ok(&rec, prog, NULL, NULL);
	struct wt_json *mine = wt_summary(rec.trace, (const char *[]){ prog, NULL });
	ct_assert_cuda_counted(mine, rec.expect, prog);
	bool complete = false;
	cr_expect(wt_json_bool(mine, "complete", &complete) && complete, "the trace of a program that exited is complete");
	/* The workload runs out of device memory once: the device's memory was sampled then. */
	uint64_t device = 99, total = 0, free_min = 0;
	cr_expect(wt_json_u64(mine, "devices.0.device", &device) && device == 0, "no sample of device 0");
	cr_expect(wt_json_u64(mine, "devices.0.total_bytes", &total) && total == strtoull(CT_CAPACITY, NULL, 10),
		  "device 0 total %llu, the test driver has %s", (unsigned long long)total, CT_CAPACITY);
	cr_expect(wt_json_u64(mine, "devices.0.free_min_bytes", &free_min) && free_min < total,
		  "the least free memory %llu is not below the total", (unsigned long long)free_min);
	wt_json_free(mine);
	wt_recording_free(&rec);
}

Test(cuda_routes, a_program_linked_with_libcuda)
{
	check_route("cuda_direct");
}

Test(cuda_routes, dlsym_of_the_versioned_names)
{
	check_route("cuda_dlsym");
}

Test(cuda_routes, cuGetProcAddress_v2_by_base_name_and_version)
{
	check_route("cuda_procaddr");
}

Test(cuda_routes, the_four_argument_cuGetProcAddress)
{
	check_route("cuda_procaddr_v1");
}
