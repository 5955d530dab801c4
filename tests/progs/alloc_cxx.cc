/*
 * alloc_cxx - C++ allocation through libstdc++'s operator new/delete.
 *
 * usage: alloc_cxx EXPECT
 *
 * new/delete, new[]/delete[], aligned new, a std::vector growing by
 * push_back and a std::string too long for its inline buffer. libstdc++
 * implements operator new with malloc (aligned new with aligned_alloc), so
 * wsprof sees these calls made from libstdc++ and, looking through it,
 * counts them for this program. The books use what the containers report
 * (capacity), which is exactly what they asked operator new for.
 */
#include "account.h"

#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "wsprof.h" /* the annotation header compiles as C++ too */

static account heap;

struct alignas(64) line {
	unsigned char bytes[100]; /* sizeof(line) is 128: a multiple of its alignment */
};

struct node {
	node *next;
	long value;
};

static void objects()
{
	node *n = new node{nullptr, 42};
	account_alloc(&heap, sizeof(node));
	account_keep(n);
	delete n;
	account_free(&heap, sizeof(node));

	char *text = new char[300];
	account_alloc(&heap, 300);
	account_keep(text);
	delete[] text;
	account_free(&heap, 300);

	line *l = new line;
	account_alloc(&heap, sizeof(line));
	account_keep(l);
	delete l;
	account_free(&heap, sizeof(line));

	line *ls = new line[3];
	account_alloc(&heap, 3 * sizeof(line));
	account_keep(ls);
	delete[] ls;
	account_free(&heap, 3 * sizeof(line));
}

/* A vector's buffer grows by a new allocation, a copy, then the free of
 * the old buffer: both are live for a moment, which the peak must see. */
static void vector_growth()
{
	std::vector<std::uint32_t> v;
	std::size_t cap = v.capacity();
	for (std::uint32_t i = 0; i < 1000; i++) {
		v.push_back(i);
		if (v.capacity() != cap) {
			account_alloc(&heap, v.capacity() * sizeof(std::uint32_t));
			if (cap)
				account_free(&heap, cap * sizeof(std::uint32_t));
			cap = v.capacity();
		}
	}
	account_keep(v.data());
	account_free(&heap, cap * sizeof(std::uint32_t)); /* when v goes out of scope */
}

static void strings()
{
	std::string s(200, 'x');
	account_alloc(&heap, s.capacity() + 1); /* the text and its terminating NUL */
	account_keep(s.data());
	account_free(&heap, s.capacity() + 1);
}

/* Left live at exit. */
static node *leak()
{
	account_alloc(&heap, sizeof(node));
	return new node{nullptr, 7};
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		complain("usage: alloc_cxx EXPECT");
		return 2;
	}
	objects();
	vector_growth();
	strings();
	void *kept = leak();
	wsprof_name(kept, "kept on purpose"); /* an annotation changes no count */
	account_keep(kept);

	expect e;
	expect_init(&e);
	expect_account(&e, "heap", &heap);
	expect_uint(&e, "threads", 1);
	return expect_write(&e, argv[1]) < 0 ? 2 : 0;
}
