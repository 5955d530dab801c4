/*
 * alloc_dlopen - allocations made by libraries loaded at run time.
 *
 * usage: alloc_dlopen EXPECT LIBTESTALLOC [LIBTESTINIT]
 *
 * dlopens libtestalloc.so (by the path given), has it allocate, reallocate
 * and free, frees one of its blocks itself and has it free one of the
 * program's, leaves one of its blocks live, dlcloses it, and allocates on
 * its own before and after. With LIBTESTINIT, it also loads and unloads
 * libtestinit.so, whose constructor allocates during dlopen.
 *
 * A block belongs to whoever allocated it, wherever it is freed, so the
 * books are kept per module, plus one book for all of them together:
 *   {"heap": all, "prog": {"heap": ...}, "lib": {"heap": ...}, "init": {"heap": ...}}
 */
#include "account.h"
#include "testalloc.h"

#include <dlfcn.h>
#include <stdlib.h>

static struct account all, prog, lib, init;

static void booked_alloc(struct account *own, size_t size)
{
	account_alloc(own, size);
	account_alloc(&all, size);
}

static void booked_free(struct account *own, size_t size)
{
	account_free(own, size);
	account_free(&all, size);
}

static void *need(void *handle, const char *name)
{
	void *f = dlsym(handle, name);
	if (!f) {
		complain("alloc_dlopen: %s", dlerror());
		exit(2);
	}
	return f;
}

static void with_testalloc(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		complain("alloc_dlopen: %s", dlerror());
		exit(2);
	}
	testalloc_make_fn *make = need(h, "testalloc_make");
	testalloc_resize_fn *resize = need(h, "testalloc_resize");
	testalloc_release_fn *release = need(h, "testalloc_release");

	void *q = make(256);
	booked_alloc(&lib, 256);
	void *r = make(1024);
	booked_alloc(&lib, 1024);
	r = resize(r, 2048);
	booked_free(&lib, 1024);
	booked_alloc(&lib, 2048);
	release(q);
	booked_free(&lib, 256);
	free(r);                       /* the library's block, freed here */
	booked_free(&lib, 2048);

	void *mine = malloc(64);
	booked_alloc(&prog, 64);
	release(mine);                 /* the program's block, freed there */
	booked_free(&prog, 64);

	account_keep(make(77));        /* outlives the library */
	booked_alloc(&lib, 77);
	dlclose(h);
}

static void with_testinit(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		complain("alloc_dlopen: %s", dlerror());
		exit(2);
	}
	testinit_block_size_fn *block_size = need(h, "testinit_block_size");
	size_t size = block_size();
	booked_alloc(&init, size);     /* by the constructor, inside dlopen */
	dlclose(h);
	booked_free(&init, size);      /* by the destructor, inside dlclose */
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		complain("usage: alloc_dlopen EXPECT LIBTESTALLOC [LIBTESTINIT]");
		return 2;
	}
	void *p = malloc(100);
	booked_alloc(&prog, 100);
	account_keep(p);
	with_testalloc(argv[2]);
	if (argc > 3)
		with_testinit(argv[3]);
	free(p);
	booked_free(&prog, 100);
	account_keep(malloc(50));      /* leaked, after the libraries are gone */
	booked_alloc(&prog, 50);

	struct expect e;
	expect_init(&e);
	expect_account(&e, "heap", &all);
	expect_uint(&e, "threads", 1);
	expect_open(&e, "prog");
	expect_account(&e, "heap", &prog);
	expect_close(&e);
	expect_open(&e, "lib");
	expect_account(&e, "heap", &lib);
	expect_close(&e);
	if (argc > 3) {
		expect_open(&e, "init");
		expect_account(&e, "heap", &init);
		expect_close(&e);
	}
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
