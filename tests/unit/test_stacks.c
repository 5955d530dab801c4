/*
 * test_stacks.c - stack capture and the shared prefix tree of
 * preload/core/stacks.c, compiled into this test with preload/base/mem.c.
 *
 * The rest of the preload library is replaced by the symbols these files
 * need: wsp_addr_in_self, which here counts the preload's own functions
 * (those named wsp_*, found with dladdr) as wsprof's frames; wsp_real, of
 * which only glibc's pthread_getattr_np is used; and the thread's wsp_tls.
 * STACK records are decoded with src/format.h and checked as a reader
 * would use them: every node defined once, before use, and each stack's
 * node chain giving back its frames innermost first - also when two
 * threads intern at once, and again from id 1 after a fork.
 */
#include "core.h"

#include "format.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- stand-ins for the rest of libwsprof ------------------------------ */

static bool count_own_frames = true;

bool wsp_addr_in_self(uintptr_t ip)
{
	Dl_info info;
	return count_own_frames && dladdr((void *)ip, &info) && info.dli_sname &&
	       strncmp(info.dli_sname, "wsp_", 4) == 0;
}

struct wsp_real wsp_real = { .pthread_getattr_np = pthread_getattr_np };
WSP_TLS struct wsp_tls wsp_tls;

/* ---- decoding what interning wrote ------------------------------------ */

struct node {
	uint64_t id, parent, ip;
};

/* Decode STACK and PYFRAME records from [p, end) into out, a Python
 * frame's ip its key again. @return how many. */
static size_t decode_nodes(const uint8_t *p, const uint8_t *end, struct node *out, size_t max)
{
	struct wsp_cursor c = { p, end, false };
	size_t n = 0;
	while (c.p < c.end) {
		uint64_t type = wsp_get_varint(&c), len = wsp_get_varint(&c);
		cr_assert(!c.bad && len <= (uint64_t)(c.end - c.p), "a well-framed record");
		cr_assert(type == WSP_REC_STACK || type == WSP_REC_PYFRAME, "only STACK and PYFRAME records are written");
		cr_assert_leq(len + 2, WSP_STACK_RECORD_MAX);
		struct wsp_cursor r = { c.p, c.p + len, false };
		cr_assert_lt(n, max);
		out[n].id = wsp_get_varint(&r);
		out[n].parent = wsp_get_varint(&r);
		out[n].ip = wsp_get_varint(&r);
		if (type == WSP_REC_PYFRAME)
			out[n].ip = WSPROF_PYFRAME_IP(out[n].ip, wsp_get_varint(&r));
		cr_assert(!r.bad && r.p == r.end, "id, parent, the frame and nothing else");
		n++;
		c.p += len;
	}
	return n;
}

static const struct node *find_node(const struct node *nodes, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (nodes[i].id == id)
			return &nodes[i];
	return NULL;
}

/* The chain from id to the root gives back ips[0..depth), innermost first. */
static void expect_chain(const struct node *nodes, size_t n, uint64_t id, const uintptr_t *ips, int depth)
{
	for (int i = 0; i < depth; i++) {
		const struct node *nd = find_node(nodes, n, id);
		cr_assert_not_null(nd, "frame %d: node %llu is defined", i, (unsigned long long)id);
		cr_assert_eq(nd->ip, ips[i], "frame %d: ip %#llx, expected %#llx", i,
			     (unsigned long long)nd->ip, (unsigned long long)ips[i]);
		id = nd->parent;
	}
	cr_assert_eq(id, 0, "the chain ends at the root after %d frames", depth);
}

/* Intern into a fresh buffer; *nodes gets the records decoded. */
static uint64_t intern(struct wsp_thread *t, const uintptr_t *ips, int depth, struct node *nodes,
		       size_t *n)
{
	uint8_t buf[64 * WSP_STACK_RECORD_MAX];
	cr_assert_leq(depth, 64);
	uint8_t *p = buf;
	uint64_t id = wsp_stack_intern(t, ips, depth, &p);
	cr_assert(p >= buf && p <= buf + (size_t)depth * WSP_STACK_RECORD_MAX,
		  "records stay within depth * WSP_STACK_RECORD_MAX");
	*n = decode_nodes(buf, p, nodes, 64);
	return id;
}

#define N_OF(a) (int)(sizeof a / sizeof *a)

/* ---- interning ---------------------------------------------------------- */

Test(stacks, first_stack_gets_ids_from_one_outermost_first)
{
	struct wsp_thread t = { 0 };
	const uintptr_t ips[] = { 0x401010, 0x402020, 0x403030 };
	struct node nodes[64];
	size_t n;
	uint64_t id = intern(&t, ips, N_OF(ips), nodes, &n);
	cr_assert_eq(n, 3, "one node per frame");
	cr_expect_eq(nodes[0].id, 1);
	cr_expect_eq(nodes[0].parent, 0);
	cr_expect_eq(nodes[0].ip, 0x403030, "the outermost frame hangs from the root");
	cr_expect_eq(nodes[1].id, 2);
	cr_expect_eq(nodes[2].id, 3);
	cr_expect_eq(id, 3, "the stack is its innermost node");
	expect_chain(nodes, n, id, ips, N_OF(ips));
	wsp_stack_cache_free(t.cache);
}

Test(stacks, same_stack_twice_gets_the_same_id_and_is_written_once)
{
	struct wsp_thread t = { 0 }, other = { 0 };
	const uintptr_t ips[] = { 0x1111, 0x2222, 0x3333, 0x4444 };
	struct node nodes[64];
	size_t n;
	uint64_t id = intern(&t, ips, N_OF(ips), nodes, &n);
	cr_assert_eq(n, 4);
	cr_expect_eq(intern(&t, ips, N_OF(ips), nodes, &n), id, "the thread's cache knows it");
	cr_expect_eq(n, 0, "nothing written the second time");
	cr_expect_eq(intern(&other, ips, N_OF(ips), nodes, &n), id, "another thread finds it in the tree");
	cr_expect_eq(n, 0, "nothing written by the other thread either");
	wsp_stack_cache_free(t.cache);
	wsp_stack_cache_free(other.cache);
}

Test(stacks, empty_stack_is_zero_and_writes_nothing)
{
	struct wsp_thread t = { 0 };
	uint8_t buf[8], *p = buf;
	cr_expect_eq(wsp_stack_intern(&t, NULL, 0, &p), 0);
	cr_expect_eq(p, buf);
}

Test(stacks, stacks_sharing_outer_frames_share_their_nodes)
{
	struct wsp_thread t = { 0 };
	const uintptr_t a[] = { 0xa0, 0x51, 0x52, 0x53 };       /* a0 <- s1 <- s2 <- s3 */
	const uintptr_t b[] = { 0xb0, 0xb1, 0x51, 0x52, 0x53 }; /* b0 <- b1 <- s1 <- s2 <- s3 */
	const uintptr_t outer[] = { 0x51, 0x52, 0x53 };
	struct node all[128], *na = all, *nb;
	size_t n_a, n_b, n_o;
	uint64_t ida = intern(&t, a, N_OF(a), na, &n_a);
	cr_assert_eq(n_a, 4);
	nb = all + n_a;
	uint64_t idb = intern(&t, b, N_OF(b), nb, &n_b);
	cr_assert_eq(n_b, 2, "only the two frames not shared are new");
	cr_expect_neq(idb, ida);
	const struct node *s1 = NULL;
	for (size_t i = 0; i < n_a; i++)
		if (na[i].ip == 0x51)
			s1 = &na[i];
	cr_assert_not_null(s1);
	cr_expect_eq(nb[0].ip, 0xb1);
	cr_expect_eq(nb[0].parent, s1->id, "the new part hangs from the shared node");
	cr_expect_eq(nb[1].ip, 0xb0);
	cr_expect_eq(nb[1].parent, nb[0].id);
	expect_chain(all, n_a + n_b, ida, a, N_OF(a));
	expect_chain(all, n_a + n_b, idb, b, N_OF(b));

	uint64_t ido = intern(&t, outer, N_OF(outer), all + n_a + n_b, &n_o);
	cr_expect_eq(n_o, 0, "a stack that is the outer part of known ones is known");
	cr_expect_eq(ido, s1->id);
	wsp_stack_cache_free(t.cache);
}

Test(stacks, same_frame_from_different_callers_are_different_nodes)
{
	struct wsp_thread t = { 0 };
	const uintptr_t a[] = { 0x77, 0x10 };
	const uintptr_t b[] = { 0x77, 0x20 };
	struct node all[16];
	size_t n_a, n_b;
	uint64_t ida = intern(&t, a, 2, all, &n_a);
	uint64_t idb = intern(&t, b, 2, all + n_a, &n_b);
	cr_expect_eq(n_a, 2);
	cr_expect_eq(n_b, 2);
	cr_expect_neq(ida, idb);
	expect_chain(all, n_a + n_b, ida, a, 2);
	expect_chain(all, n_a + n_b, idb, b, 2);
	wsp_stack_cache_free(t.cache);
}

Test(stacks, extreme_ips_round_trip)
{
	struct wsp_thread t = { 0 };
	/* Every address a program has (the top bit is a Python frame's, below). */
	const uintptr_t ips[] = { ((uintptr_t)1 << 63) - 1, 0, 1, (uintptr_t)1 << 62 };
	struct node nodes[64];
	size_t n;
	uint64_t id = intern(&t, ips, N_OF(ips), nodes, &n);
	cr_assert_eq(n, 4);
	expect_chain(nodes, n, id, ips, N_OF(ips));
	wsp_stack_cache_free(t.cache);
}

Test(stacks, python_frames_are_pyframe_records_in_the_same_tree)
{
	struct wsp_thread t = { 0 };
	/* A native frame, two Python frames (the largest code id and
	 * instruction a key holds, and the first), then native ones again. */
	const uintptr_t ips[] = { 0x1000, WSPROF_PYFRAME_IP((1ull << 39) - 1, 0xffffff), WSPROF_PYFRAME_IP(1, 0), 0x2000,
				  0x3000 };
	struct node nodes[64];
	size_t n;
	uint64_t id = intern(&t, ips, N_OF(ips), nodes, &n);
	cr_assert_eq(n, 5);
	expect_chain(nodes, n, id, ips, N_OF(ips));
	cr_expect_eq(WSPROF_PYFRAME_CODE(ips[1]), (1ull << 39) - 1);
	cr_expect_eq(WSPROF_PYFRAME_INSTR(ips[1]), 0xffffff);
	cr_expect(!WSPROF_IS_PYFRAME(ips[0]) && WSPROF_IS_PYFRAME(ips[2]));
	wsp_stack_cache_free(t.cache);
}

/* A stack sharing its outer frames with the thread's last one starts from
 * the last one's nodes, and still gets exactly its own path; one sharing
 * nothing, or after a fork, gets its own from the root. */
Test(stacks, a_stack_sharing_outer_frames_with_the_last_reuses_their_nodes)
{
	struct wsp_thread t = { 0 }, u = { 0 };
	const uintptr_t a[] = { 0x11, 0x22, 0x33, 0x44 }, b[] = { 0x55, 0x22, 0x33, 0x44 }, c[] = { 0x66, 0x77 };
	struct node nodes[64];
	size_t n;
	uint64_t ida = intern(&t, a, N_OF(a), nodes, &n);
	cr_assert_eq(n, 4);
	uint64_t idb = intern(&t, b, N_OF(b), nodes, &n);
	cr_assert_eq(n, 1, "b differs from a in its innermost frame only");
	cr_expect_eq(nodes[0].ip, 0x55);
	cr_expect_neq(idb, ida);
	/* Another thread, without a path of its own, finds the same nodes. */
	cr_expect_eq(intern(&u, b, N_OF(b), nodes, &n), idb);
	cr_expect_eq(n, 0);
	uint64_t idc = intern(&t, c, N_OF(c), nodes, &n);
	cr_assert_eq(n, 2, "c shares nothing with b");
	expect_chain(nodes, n, idc, c, N_OF(c));
	/* b again after c: from b's outer frames, which c's path does not hold. */
	cr_expect_eq(intern(&t, (const uintptr_t[]){ 0x88, 0x22, 0x33, 0x44 }, 4, nodes, &n) > idc, 1);
	cr_expect_eq(n, 1);
	wsp_stack_cache_free(t.cache);
	wsp_stack_cache_free(u.cache);
	wsp_stack_path_free(t.path);
	wsp_stack_path_free(u.path);
}

/* ---- fork ----------------------------------------------------------- */

Test(stacks, reset_after_fork_restarts_ids_and_forgets_every_cache)
{
	struct wsp_thread t = { 0 }, u = { 0 };
	const uintptr_t x[] = { 0x10, 0x20, 0x30 };
	const uintptr_t y[] = { 0x40, 0x50 };
	struct node nodes[64];
	size_t n;
	uint64_t before = intern(&t, x, N_OF(x), nodes, &n);
	cr_assert_eq(n, 3);
	cr_assert_eq(intern(&u, x, N_OF(x), nodes, &n), before);
	cr_assert_eq(n, 0);

	wsp_stacks_reset_after_fork();

	uint64_t idy = intern(&t, y, N_OF(y), nodes, &n);
	cr_assert_eq(n, 2);
	cr_expect_eq(nodes[0].id, 1, "the child's trace numbers its nodes from 1 again");
	cr_expect_eq(nodes[1].id, 2);
	cr_expect_eq(idy, 2);
	expect_chain(nodes, n, idy, y, N_OF(y));

	uint64_t again = intern(&u, x, N_OF(x), nodes, &n);
	cr_expect_eq(n, 3, "a stack known before the fork is defined again in the child's trace");
	cr_expect_eq(nodes[0].id, 3);
	expect_chain(nodes, n, again, x, N_OF(x));
	cr_expect_eq(intern(&t, x, N_OF(x), nodes, &n), again, "and the other cache agrees");
	cr_expect_eq(n, 0);
	wsp_stack_cache_free(t.cache);
	wsp_stack_cache_free(u.cache);
}

/* ---- two threads at once -------------------------------------------- */

#define RACE_STACKS 4000
#define RACE_DEPTH 12

/* Stack k: 1..RACE_DEPTH frames drawn from small per-level sets, so that
 * stacks share outer frames often and inner ones sometimes. */
static int race_stack(int k, uintptr_t *ips)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(k + 1);
	int depth = 1 + (int)(x >> 60) % RACE_DEPTH;
	for (int level = 0; level < depth; level++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		unsigned choices = 2u + (unsigned)level * 3u;
		ips[depth - 1 - level] = 0x400000 + (uintptr_t)level * 0x10000 + ((x >> 33) % choices) * 0x10;
	}
	return depth;
}

struct racer {
	pthread_barrier_t *start;
	bool backwards;
	struct wsp_thread thread;
	uint8_t *buf, *end;
	uint64_t ids[RACE_STACKS];
};

/* The threads meet at the start and again half-way: each has interned
 * its own half (from opposite ends) before either goes on into the
 * other's, so both make nodes however they are scheduled (on a loaded
 * machine one could otherwise do everything before the other ran). */
static void *race(void *arg)
{
	struct racer *r = arg;
	uint8_t *p = r->buf;
	pthread_barrier_wait(r->start);
	for (int i = 0; i < RACE_STACKS; i++) {
		if (i == RACE_STACKS / 2)
			pthread_barrier_wait(r->start);
		int k = r->backwards ? RACE_STACKS - 1 - i : i;
		uintptr_t ips[RACE_DEPTH];
		int depth = race_stack(k, ips);
		r->ids[k] = wsp_stack_intern(&r->thread, ips, depth, &p);
	}
	r->end = p;
	return NULL;
}

Test(stacks, two_threads_interning_at_once_agree_on_every_node, .timeout = 20)
{
	static struct racer r[2];
	static struct node nodes[2 * RACE_STACKS * RACE_DEPTH];
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, 2);
	size_t cap = (size_t)RACE_STACKS * RACE_DEPTH * WSP_STACK_RECORD_MAX;
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		r[i].start = &start;
		r[i].backwards = i == 1;
		r[i].buf = malloc(cap);
		cr_assert_not_null(r[i].buf);
		cr_assert_eq(pthread_create(&th[i], NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);

	size_t n0 = decode_nodes(r[0].buf, r[0].end, nodes, sizeof nodes / sizeof *nodes);
	size_t n1 = decode_nodes(r[1].buf, r[1].end, nodes + n0, sizeof nodes / sizeof *nodes - n0);
	size_t n = n0 + n1;
	cr_expect_gt(n0, 0, "both threads made nodes");
	cr_expect_gt(n1, 0, "both threads made nodes");
	cr_assert_gt(n, 4096, "enough nodes that the tree grew while both threads used it");

	/* Ids 1..n, each defined by exactly one of the threads. */
	static uint8_t defined[2 * RACE_STACKS * RACE_DEPTH + 1];
	static struct node by_id[2 * RACE_STACKS * RACE_DEPTH + 1];
	for (size_t i = 0; i < n; i++) {
		uint64_t id = nodes[i].id;
		cr_assert(id >= 1 && id <= n, "id %llu of %zu nodes", (unsigned long long)id, n);
		cr_assert_eq(defined[id], 0, "node %llu defined twice", (unsigned long long)id);
		defined[id] = 1;
		by_id[id] = nodes[i];
		cr_assert_lt(nodes[i].parent, id, "a parent is defined before its child");
	}
	for (int k = 0; k < RACE_STACKS; k++) {
		uintptr_t ips[RACE_DEPTH];
		int depth = race_stack(k, ips);
		cr_assert_eq(r[0].ids[k], r[1].ids[k], "stack %d: ids %llu and %llu", k,
			     (unsigned long long)r[0].ids[k], (unsigned long long)r[1].ids[k]);
		uint64_t id = r[0].ids[k];
		for (int i = 0; i < depth; i++) {
			cr_assert(id >= 1 && id <= n && defined[id], "stack %d frame %d: node %llu", k, i,
				  (unsigned long long)id);
			cr_assert_eq(by_id[id].ip, ips[i], "stack %d frame %d", k, i);
			id = by_id[id].parent;
		}
		cr_assert_eq(id, 0, "stack %d ends at the root", k);
	}
	for (int i = 0; i < 2; i++) {
		free(r[i].buf);
		wsp_stack_cache_free(r[i].thread.cache);
	}
	pthread_barrier_destroy(&start);
}

/* ---- capture -------------------------------------------------------- */

/* The thread whose unwind memo the captures use; NULL: none. */
static struct wsp_thread *capture_thread;
static uint32_t capture_id;

/* Exported (see meson.build) so that dladdr can name them. */
__attribute__((noinline)) int capture_inner(uintptr_t *ips, int max)
{
	int n = wsp_stack_capture(capture_thread, ips, max, &capture_id);
	__asm__ volatile("" : : "r"(n) : "memory"); /* no tail call: keep this frame */
	return n;
}

__attribute__((noinline)) int capture_outer(uintptr_t *ips, int max)
{
	int n = capture_inner(ips, max);
	__asm__ volatile("" : : "r"(n) : "memory");
	return n;
}

/* The same depth as capture_outer, from another function. */
__attribute__((noinline)) int capture_other(uintptr_t *ips, int max)
{
	int n = capture_inner(ips, max);
	__asm__ volatile("" : : "r"(n) : "memory");
	return n;
}

/* As the recorder captures: into an array of the caller's own frame,
 * between the capture's frame and the return addresses it finds. */
__attribute__((noinline)) int capture_into_local(uintptr_t *out, int max)
{
	uintptr_t ips[max + WSP_STACK_SLACK];
	int n = wsp_stack_capture(capture_thread, ips, max, &capture_id);
	memcpy(out, ips, (size_t)n * sizeof *ips);
	__asm__ volatile("" : : "r"(n) : "memory");
	return n;
}

static const char *name_of(uintptr_t ip)
{
	Dl_info info;
	if (!dladdr((void *)(ip - 1), &info) || !info.dli_sname)
		return "?";
	return info.dli_sname;
}

Test(stacks, capture_starts_at_its_caller)
{
	wsp_stacks_init();
	uintptr_t ips[64 + WSP_STACK_SLACK];
	int n = capture_outer(ips, 64);
	cr_assert_geq(n, 3, "depth %d", n);
	cr_expect_str_eq(name_of(ips[0]), "capture_inner", "innermost frame");
	cr_expect_str_eq(name_of(ips[1]), "capture_outer");
	for (int i = 0; i < n; i++)
		cr_expect(!wsp_addr_in_self(ips[i]), "frame %d (%s) is wsprof's own", i, name_of(ips[i]));
}

Test(stacks, capture_stops_at_max)
{
	wsp_stacks_init();
	/* Room for max + WSP_STACK_SLACK (wsprof's own frames, dropped
	 * after), and a guard word past it. */
	uintptr_t ips[1 + WSP_STACK_SLACK + 1];
	ips[1 + WSP_STACK_SLACK] = 0xdead;
	cr_assert_eq(capture_outer(ips, 1), 1);
	cr_expect_str_eq(name_of(ips[0]), "capture_inner");
	cr_expect_eq(ips[1 + WSP_STACK_SLACK], 0xdead, "nothing written beyond the room the caller gave");
	uintptr_t deep[64 + WSP_STACK_SLACK];
	int all = capture_outer(deep, 64);
	uintptr_t some[64 + WSP_STACK_SLACK];
	cr_expect_eq(capture_outer(some, all - 1), all - 1);
}

Test(stacks, capture_skips_wsprofs_own_frames)
{
	wsp_stacks_init();
	uintptr_t ips[64 + WSP_STACK_SLACK];
	count_own_frames = false;
	int n = capture_outer(ips, 64);
	count_own_frames = true;
	cr_assert_geq(n, 3);
	cr_expect_str_eq(name_of(ips[0]), "wsp_stack_capture",
			 "with nothing counted as wsprof's own, the capture itself shows");
	cr_expect_str_eq(name_of(ips[1]), "capture_inner");
}

Test(stacks, captured_stack_interns_and_reads_back)
{
	wsp_stacks_init();
	struct wsp_thread t = { 0 };
	uintptr_t ips[2][64 + WSP_STACK_SLACK];
	int n[2];
	/* One call site (a loop the compiler cannot unroll): the same stack twice. */
	for (volatile int round = 0; round < 2; round++)
		n[round] = capture_outer(ips[round], 64);
	cr_assert_geq(n[0], 2);
	cr_assert_eq(n[1], n[0], "the same call path has the same depth");
	cr_assert_arr_eq(ips[1], ips[0], (size_t)n[0] * sizeof ips[0][0], "and the same frames");
	struct node nodes[64];
	size_t nn;
	uint64_t id = intern(&t, ips[0], n[0], nodes, &nn);
	cr_expect_eq(nn, (size_t)n[0]);
	expect_chain(nodes, nn, id, ips[0], n[0]);
	cr_expect_eq(intern(&t, ips[1], n[1], nodes, &nn), id, "and the same id");
	cr_expect_eq(nn, 0);
	wsp_stack_cache_free(t.cache);
}

/* The unwind memo gives what unwinding gives, for the same path only. */
Test(stacks, the_unwind_memo_repeats_only_the_same_path)
{
	wsp_stacks_init();
	struct wsp_thread t = { 0 };
	capture_thread = &t;
	uintptr_t ips[2][64 + WSP_STACK_SLACK], other[64 + WSP_STACK_SLACK];
	int depth[2];
	uint32_t ids[2];
	/* One call site (a loop the compiler cannot unroll): the same path twice. */
	for (volatile int round = 0; round < 2; round++) {
		depth[round] = capture_outer(ips[round], 64);
		ids[round] = capture_id;
		if (round == 0)
			wsp_stack_remember_id(&t, 42);
	}
	int n = depth[0], k;
	cr_expect_eq(ids[0], 0, "nothing is known the first time");
	cr_assert_eq(depth[1], n);
	cr_expect_arr_eq(ips[1], ips[0], (size_t)n * sizeof ips[0][0], "the memo's frames are the unwind's");
	cr_expect_eq(ids[1], 42, "the same path is known, with its id");
	k = capture_other(other, 64);
	cr_assert_eq(k, n, "the other path has the same depth");
	cr_expect_str_eq(name_of(other[1]), "capture_other", "and its own caller, not the memo's");
	cr_expect_eq(capture_id, 0, "another path is not taken for the memo's");
	capture_thread = NULL;
	wsp_unwind_memo_free(t.memo);
}

/* The memo finds the return addresses where they live, not their copies
 * in the array the capture wrote (which the next capture rewrites). */
Test(stacks, the_memo_is_not_fooled_by_the_capture_array)
{
	wsp_stacks_init();
	struct wsp_thread t = { 0 };
	capture_thread = &t;
	uintptr_t out[2][64];
	int depth[2];
	uint32_t ids[2];
	for (volatile int round = 0; round < 2; round++) {
		depth[round] = capture_into_local(out[round], 32);
		ids[round] = capture_id;
		if (round == 0)
			wsp_stack_remember_id(&t, 7);
	}
	cr_assert_eq(depth[1], depth[0]);
	cr_expect_arr_eq(out[1], out[0], (size_t)depth[0] * sizeof out[0][0]);
	cr_expect_eq(ids[1], 7, "the same path again is the memo's");
	capture_thread = NULL;
	wsp_unwind_memo_free(t.memo);
}
