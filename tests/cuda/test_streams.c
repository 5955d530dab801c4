/*
 * test_streams.c - stream-ordered allocation and threads under
 * `wsprof record`.
 *
 * cuda_stream_times is counted the same with WSPROF_CUDA_STREAM_TIMES=1,
 * when the recorder also learns through host functions of its own when
 * each stream reached each call, as without it; and the program's own
 * host functions still run, each once. cuda_threads allocates on two
 * threads at once, each freeing what the other allocated; its peak is
 * fixed by barriers, so it must be counted exactly.
 */
#include "cuda_harness.h"

#include <criterion/criterion.h>

TestSuite(cuda_streams, .fini = wt_cleanup, .timeout = 60);

static void check_stream_times(const char *const env[], const char *who)
{
	struct wt_recording rec;
	ct_record_ok(&rec, "cuda_stream_times", env, NULL);
	cr_expect_eq(wt_u64(rec.expect, "host_func_calls"), 3, "%s: the program's own host functions ran %llu times, "
		     "not 3", who, (unsigned long long)wt_u64(rec.expect, "host_func_calls"));
	struct wt_json *mine = wt_summary(rec.trace, (const char *[]){ "cuda_stream_times", NULL });
	ct_assert_cuda_counted(mine, rec.expect, who);
	wt_json_free(mine);
	wt_recording_free(&rec);
}

Test(cuda_streams, counted_at_the_call_without_stream_times)
{
	check_stream_times(NULL, "cuda_stream_times");
}

Test(cuda_streams, counted_the_same_with_stream_times)
{
	check_stream_times((const char *[]){ "WSPROF_CUDA_STREAM_TIMES=1", NULL },
			   "cuda_stream_times with WSPROF_CUDA_STREAM_TIMES=1");
}

Test(cuda_streams, two_threads_free_each_others_device_memory)
{
	struct wt_recording rec;
	ct_record_ok(&rec, "cuda_threads", NULL, NULL);
	struct wt_json *mine = wt_summary(rec.trace, (const char *[]){ "cuda_threads", NULL });
	ct_assert_cuda_counted(mine, rec.expect, "cuda_threads");
	wt_json_free(mine);
	wt_recording_free(&rec);
}
