/*
 * cuda_harness.h - what the CUDA tests add to tests/support: run a program
 * of tests/cuda, with the test driver (fakecuda.c) as its libcuda.so.1,
 * under `wsprof record`, and compare the cuda kinds of the summary with
 * the program's books.
 *
 * The programs and the test driver live in one build directory, which
 * meson compiles in (FAKECUDA_DIR); the programs that dlopen the driver
 * find it through LD_LIBRARY_PATH, set for every recording here.
 */
#ifndef TESTS_CUDA_HARNESS_H
#define TESTS_CUDA_HARNESS_H

#include "harness.h"

/* The device capacity every recording gets unless the test says otherwise:
 * small, so that asking for more than is free is cheap. */
#define CT_CAPACITY "67108864"

/* Run `env LD_LIBRARY_PATH=FAKECUDA_DIR FAKECUDA_CAPACITY=64MiB ENV...
 * wsprof record -o DIR/t.wsp -- FAKECUDA_DIR/prog DIR/expect.json ARGS...`
 * in a fresh directory and read the expect file if there is one. env
 * (NAME=VALUE strings, later ones winning) and args are NULL-terminated
 * lists, or NULL. The exit status is the test's to check. */
void ct_record(struct wt_recording *r, const char *prog, const char *const env[], const char *const args[]);

/* Record `prog` and assert that it ran to the end and wrote its books. */
void ct_record_ok(struct wt_recording *r, const char *prog, const char *const env[], const char *const args[]);

/* The summary counts every cuda kind the program counted, figure for
 * figure (cuda_device, cuda_managed, cuda_host, cuda_vmm); a cuda kind
 * the program never used has no allocations and no failures. Other kinds
 * are not compared: the programs also use the heap. */
void ct_assert_cuda_counted(const struct wt_json *summary, const struct wt_json *books, const char *who);

/* kinds.cuda_vmm of the summary has every figure of the books'
 * "vmm_mapping" (maps, unmaps, mapped and reserved bytes). */
void ct_assert_vmm_mapping(const struct wt_json *summary, const struct wt_json *books, const char *who);

#endif
