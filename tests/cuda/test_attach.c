/*
 * test_attach.c - wsprof attach to a CUDA program that set the driver up
 * long before (tests/cuda/cuda_service: its entry points looked up
 * through cuGetProcAddress and kept in a table of its own, as cudart
 * does): the device allocations of the attached span are recorded, with
 * tick in their stack, the frees of older blocks untracked; the program's
 * output and exit status are unchanged, and after the attach its table
 * leads to the driver again. Skips where this machine does not let a
 * process ptrace another.
 */
#include "cuda_harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

TestSuite(cuda_attach, .fini = wt_cleanup, .timeout = 60);

Test(cuda_attach, a_running_cuda_program_is_recorded_from_the_attach)
{
	setenv("LD_LIBRARY_PATH", FAKECUDA_DIR, 1);
	setenv("FAKECUDA_CAPACITY", CT_CAPACITY, 1);
	char *prog = wt_path(FAKECUDA_DIR, "cuda_service");
	struct wt_proc p;
	cr_assert_eq(wt_spawn(&p, (const char *[]){ prog, "-", "60", "50", NULL }), 0, "cannot start cuda_service");
	free(prog);
	struct timespec settle = { 0, 300 * 1000000 };
	nanosleep(&settle, NULL);
	char *trace = wt_path(wt_test_dir(), "c.wsp");
	if (!wt_attach(p.pid, "1", trace)) {
		free(trace);
		cr_skip_test("this machine does not let a process ptrace another");
	}

	struct wt_json *s = wt_summary(trace, NULL);
	uint64_t n = wt_u64(s, "kinds.cuda_device.allocations");
	cr_expect(n >= 10 && n <= 30, "about 20 device allocations in 1 s of 50 ms ticks, found %llu", (unsigned long long)n);
	cr_expect_geq(wt_u64(s, "untracked_frees"), 1, "frees of device blocks allocated before the attach are untracked");
	wt_json_free(s);
	struct wt_json *c =
		wt_wsprof_json((const char *[]){ "report", "callsites", "--json", "--kind", "cuda_device", trace, NULL });
	cr_expect_str_eq(wt_json_str(c, "sites.0.function"), "tick", "the device allocations are tick's");
	wt_json_free(c);

	struct wt_result r;
	wt_wait(&p, &r);
	wt_assert_status(&r, 0, "cuda_service");
	cr_expect(strstr(r.out, "ticks 60\n"), "cuda_service's output is unchanged: %s", r.out);
	cr_expect(strstr(r.out, "table leads to the driver\n"), "after the attach, cuda_service's table is as it was: %s",
		  r.out);
	wt_result_free(&r);
	free(trace);
}
