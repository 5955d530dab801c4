/*
 * alloc_sites - allocations from known functions, for symbolization.
 *
 * usage: alloc_sites EXPECT LIBSITES
 *
 * Each function allocates known bytes; the lines marked SITE:name (and
 * CALL:name, where an inlined function is called) are what the call-site
 * report must name, found by the test in this very file. The order makes
 * the global peak deterministic: every block below is live when
 * peak_holder allocates 1 MiB, and freed (or leaked) after it:
 *
 *   churn           100 x 64 B, each freed at once      temporary 100
 *   alloc_plain       3 x 1000 B, one leaked            peak 3000
 *   alloc_inline      2 x 500 B (always inlined)        peak 1000
 *   make_array<int>   100 ints (new[])                  peak 400
 *   make_array<double> 50 doubles (new[])               peak 400
 *   sites_lib_alloc   2048 B in a dlopen'd library      peak 2048, leaked
 *   peak_holder       1 MiB, freed at once              peak 1 MiB, temporary 1
 *
 * account_keep() after each allocation also stops the compiler from
 * turning `return malloc(n)` into a tail call, which would leave the
 * function out of the stack.
 */
#include "account.h"

#include <dlfcn.h>
#include <stdlib.h>

typedef void *sites_lib_alloc_fn(size_t);

__attribute__((noinline)) static void churn(void)
{
	for (int i = 0; i < 100; i++) {
		void *p = malloc(64); /* SITE:churn */
		account_keep(p);
		free(p);
	}
}

__attribute__((noinline)) void *alloc_plain(size_t n)
{
	void *p = malloc(n); /* SITE:plain */
	account_keep(p);
	return p;
}

static inline __attribute__((always_inline)) void *alloc_inline(size_t n)
{
	void *p = malloc(n); /* SITE:inline */
	account_keep(p);
	return p;
}

__attribute__((noinline)) void inline_caller(void **out)
{
	out[0] = alloc_inline(500); /* CALL:inline */
	account_keep(out[0]);
	out[1] = alloc_inline(500);
	account_keep(out[1]);
}

template <typename T> __attribute__((noinline)) T *make_array(size_t n)
{
	T *p = new T[n]; /* SITE:template */
	account_keep(p);
	return p;
}

__attribute__((noinline)) static void peak_holder(void)
{
	void *p = malloc(1 << 20); /* SITE:peak */
	account_keep(p);
	free(p);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		complain("usage: alloc_sites EXPECT LIBSITES");
		return 2;
	}
	churn();
	void *plain[3];
	for (int i = 0; i < 3; i++)
		account_keep(plain[i] = alloc_plain(1000));
	void *inl[2];
	inline_caller(inl);
	int *ints = make_array<int>(100);
	double *doubles = make_array<double>(50);
	account_keep(ints);
	account_keep(doubles);

	void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	sites_lib_alloc_fn *lib_alloc = h ? (sites_lib_alloc_fn *)dlsym(h, "sites_lib_alloc") : NULL;
	if (!lib_alloc) {
		complain("alloc_sites: %s", dlerror());
		return 2;
	}
	account_keep(lib_alloc(2048));

	peak_holder();

	free(plain[0]);
	free(plain[1]);
	free(inl[0]);
	free(inl[1]);
	delete[] ints;
	delete[] doubles;

	struct expect e;
	expect_init(&e);
	expect_uint(&e, "done", 1);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
