/*
 * test_treap.c - the ordered sets of analyzer/model/treap.c, against a
 * sorted array doing the same: keys inserted (some again, in place of
 * themselves), taken out (some absent), in increasing, decreasing and
 * random orders, with floor, ceil and walks over ranges after each step
 * of a few; a key's node stays its own while it is in the tree; a tree
 * made at once (wsp_treap_build) takes inserts and removals like any.
 */
#include "treap.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 4096

struct ref {
	uint64_t k[MAXN];
	size_t n;
};

static size_t ref_lower(const struct ref *r, uint64_t key)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->k[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void ref_insert(struct ref *r, uint64_t key)
{
	size_t i = ref_lower(r, key);
	if (i < r->n && r->k[i] == key)
		return;
	memmove(r->k + i + 1, r->k + i, (r->n - i) * sizeof *r->k);
	r->k[i] = key;
	r->n++;
}

static bool ref_remove(struct ref *r, uint64_t key)
{
	size_t i = ref_lower(r, key);
	if (i >= r->n || r->k[i] != key)
		return false;
	memmove(r->k + i, r->k + i + 1, (r->n - i - 1) * sizeof *r->k);
	r->n--;
	return true;
}

struct walk {
	const struct wsp_tpool *p;
	uint64_t got[MAXN];
	size_t n;
};

static void collect(uint32_t node, void *arg)
{
	struct walk *w = arg;
	cr_assert_lt(w->n, MAXN);
	w->got[w->n++] = wsp_treap_key(w->p, node);
}

/* Every question the tree answers, against the reference. */
static void check(const struct wsp_tpool *p, uint32_t root, const struct ref *r, uint64_t probe)
{
	struct walk w = { .p = p };
	wsp_treap_each(p, root, 0, UINT64_MAX, collect, &w);
	cr_assert_eq(w.n, r->n, "the tree has %zu keys, not %zu", w.n, r->n);
	for (size_t i = 0; i < r->n; i++)
		cr_assert_eq(w.got[i], r->k[i], "key %zu in order", i);
	size_t i = ref_lower(r, probe);
	uint32_t c = wsp_treap_ceil(p, root, probe), f = wsp_treap_floor(p, root, probe);
	cr_assert_eq(c ? wsp_treap_key(p, c) : 0, i < r->n ? r->k[i] : 0, "ceil(%llu)", (unsigned long long)probe);
	uint64_t want_floor = i < r->n && r->k[i] == probe ? probe : i ? r->k[i - 1] : 0;
	cr_assert_eq(f ? wsp_treap_key(p, f) : 0, want_floor, "floor(%llu)", (unsigned long long)probe);
	uint64_t from = probe / 2, below = probe > UINT64_MAX / 3 * 2 ? UINT64_MAX : probe + probe / 2;
	w.n = 0;
	wsp_treap_each(p, root, from, below, collect, &w);
	size_t a = ref_lower(r, from), b = ref_lower(r, below);
	cr_assert_eq(w.n, b - a, "the keys in [%llu, %llu)", (unsigned long long)from, (unsigned long long)below);
	for (size_t k = 0; k < w.n; k++)
		cr_assert_eq(w.got[k], r->k[a + k]);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void churn(uint64_t (*next_key)(uint64_t *state, size_t i), uint64_t seed)
{
	struct wsp_tpool p = { .seed = 12345 };
	uint32_t root = 0;
	struct ref *r = calloc(1, sizeof *r);
	uint32_t node_of[1024] = { 0 }; /* the node a key (below 1024) got, while it is in */
	uint64_t s = seed;
	for (size_t i = 0; i < 6000; i++) {
		uint64_t key = next_key(&s, i);
		if (rnd(&s) % 3 == 0) {
			uint32_t was = wsp_treap_remove(&p, &root, key);
			cr_assert_eq(was != 0, ref_remove(r, key), "remove %llu", (unsigned long long)key);
			if (key < 1024)
				node_of[key] = 0;
		} else if (r->n < MAXN) {
			uint32_t node = wsp_treap_insert(&p, &root, key);
			cr_assert_neq(node, 0);
			cr_assert_eq(wsp_treap_key(&p, node), key);
			if (key < 1024 && node_of[key])
				cr_assert_eq(node, node_of[key], "key %llu moved to another node", (unsigned long long)key);
			if (key < 1024)
				node_of[key] = node;
			ref_insert(r, key);
		}
		if (i % 97 == 0)
			check(&p, root, r, next_key(&s, i));
	}
	check(&p, root, r, 0);
	check(&p, root, r, UINT64_MAX);
	wsp_tpool_free(&p);
	free(r);
}

static uint64_t small_random(uint64_t *s, size_t i)
{
	(void)i;
	return rnd(s) % 1000 + 1;
}

static uint64_t increasing(uint64_t *s, size_t i)
{
	return i % 4 == 3 ? rnd(s) % (i + 1) + 1 : i + 1;
}

static uint64_t decreasing(uint64_t *s, size_t i)
{
	return i % 4 == 3 ? rnd(s) % 7000 + 1 : 7000 - i;
}

static uint64_t wide(uint64_t *s, size_t i)
{
	(void)i;
	uint64_t k = rnd(s);
	return k ? k : 1;
}

Test(treap, agrees_with_a_sorted_array_in_random_order)
{
	churn(small_random, 88172645463325252ull);
}

Test(treap, agrees_with_a_sorted_array_in_increasing_order)
{
	churn(increasing, 7);
}

Test(treap, agrees_with_a_sorted_array_in_decreasing_order)
{
	churn(decreasing, 9);
}

Test(treap, agrees_with_a_sorted_array_over_all_64_bits)
{
	churn(wide, 11);
}

Test(treap, a_tree_made_at_once_takes_inserts_and_removals)
{
	struct wsp_tpool p = { .seed = 1 };
	uint32_t root = 0;
	struct ref *r = calloc(1, sizeof *r);
	uint64_t keys[1000];
	uint32_t nodes[1000];
	for (size_t i = 0; i < 1000; i++) {
		keys[i] = 10 * (i + 1);
		ref_insert(r, keys[i]);
	}
	cr_assert_eq(wsp_treap_build(&p, &root, keys, 1000, nodes), 0);
	for (size_t i = 0; i < 1000; i++)
		cr_assert_eq(wsp_treap_key(&p, nodes[i]), keys[i]);
	check(&p, root, r, 5005);
	uint64_t s = 3;
	for (size_t i = 0; i < 3000; i++) {
		uint64_t key = rnd(&s) % 12000 + 1;
		if (i % 2) {
			cr_assert_eq(wsp_treap_remove(&p, &root, key) != 0, ref_remove(r, key));
		} else {
			cr_assert_neq(wsp_treap_insert(&p, &root, key), 0);
			ref_insert(r, key);
		}
	}
	check(&p, root, r, 6000);
	wsp_tpool_free(&p);
	free(r);
}
