/*
 * test_flame.c - flame graphs of allocation stacks (analyzer/draw/flame.c),
 * fed stacks of labels directly.
 *
 * What is pinned: stacks sharing outer frames share their boxes with the
 * values summed; the exact folded text (escaping, merging of labels that
 * fold alike, order); the SVG is well-formed XML (checked here, and by
 * xmllint too where it is installed), has a <title> per frame with the
 * full label, value and share, boxes as wide as their values, labels cut
 * with ".." or left out in narrow boxes, tiny boxes skipped, markup in
 * labels escaped, a valid picture for an empty tree; and output that does
 * not depend on the order stacks were added in.
 */
#include "flame.h"
#include "text.h" /* wsp_flame_write_folded */

#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STACK(...) ((const char *const[]){ __VA_ARGS__ }), (sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(char *))

static struct wsp_flame *f;

static void setup(void)
{
	f = wsp_flame_new();
	cr_assert_not_null(f);
}

static void teardown(void)
{
	wsp_flame_free(f);
}

TestSuite(flame, .init = setup, .fini = teardown);

static char *folded(const struct wsp_flame *flame)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	cr_assert_eq(wsp_flame_write_folded(flame, out), 0);
	fclose(out);
	return text;
}

static char *svg(const struct wsp_flame *flame, const struct wsp_flame_svg_options *opt)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	cr_assert_eq(wsp_flame_write_svg(flame, opt, out), 0);
	fclose(out);
	return text;
}

/* ---- A small well-formedness check, so the test needs no XML library. */

static bool valid_utf8_text(const unsigned char *s)
{
	while (*s) {
		size_t len = *s < 0x80 ? 1 : *s >= 0xc2 && *s <= 0xdf ? 2 : *s >= 0xe0 && *s <= 0xef ? 3 : *s >= 0xf0 && *s <= 0xf4 ? 4 : 0;
		if (!len || (*s < 0x20 && *s != '\n' && *s != '\t' && *s != '\r'))
			return false;
		for (size_t i = 1; i < len; i++)
			if ((s[i] & 0xc0) != 0x80)
				return false;
		s += len;
	}
	return true;
}

/* Character data up to `end` (a quote or '<'): no '<', entities only known ones. */
static const char *xml_chars(const char *p, char end)
{
	static const char *const entities[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&apos;" };
	while (*p && *p != end) {
		if (*p == '<')
			return NULL;
		if (*p == '&') {
			size_t i = 0;
			while (i < 5 && strncmp(p, entities[i], strlen(entities[i])))
				i++;
			if (i == 5)
				return NULL;
			p += strlen(entities[i]);
		} else {
			p++;
		}
	}
	return p;
}

static const char *xml_name(const char *p)
{
	while (*p && (strchr(":_-.", *p) || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
		p++;
	return p;
}

static bool well_formed(const char *doc)
{
	const char *names[64];
	size_t lens[64], depth = 0, roots = 0;
	const char *p = doc;
	if (!valid_utf8_text((const unsigned char *)doc))
		return false;
	if (!strncmp(p, "<?xml ", 6)) {
		p = strstr(p, "?>");
		if (!p)
			return false;
		p += 2;
	}
	while (*p) {
		if (*p != '<') {
			const char *q = xml_chars(p, '<');
			if (!q)
				return false;
			for (; p < q; p++)
				if (!depth && !strchr(" \n\t\r", *p))
					return false;
			continue;
		}
		if (p[1] == '/') {
			const char *e = xml_name(p + 2);
			if (!depth || *e != '>' || (size_t)(e - p - 2) != lens[depth - 1] || strncmp(p + 2, names[depth - 1], lens[depth - 1]))
				return false;
			depth--;
			p = e + 1;
			continue;
		}
		const char *name = p + 1, *e = xml_name(name);
		if (e == name || (!depth && roots++) || depth == 64)
			return false;
		const char *attrs[32];
		size_t nattrs = 0;
		p = e;
		for (;;) {
			while (*p == ' ' || *p == '\n')
				p++;
			if (!strncmp(p, "/>", 2) || *p == '>')
				break;
			const char *a = p;
			p = xml_name(p);
			if (p == a || p[0] != '=' || (p[1] != '"' && p[1] != '\'') || nattrs == 32)
				return false;
			for (size_t i = 0; i < nattrs; i++)
				if (!strncmp(attrs[i], a, (size_t)(p - a) + 1))
					return false;
			attrs[nattrs++] = a;
			char quote = p[1];
			p = xml_chars(p + 2, quote);
			if (!p || *p != quote)
				return false;
			p++;
			if (*p != ' ' && *p != '\n' && *p != '/' && *p != '>')
				return false;
		}
		if (*p == '>') {
			names[depth] = name;
			lens[depth++] = (size_t)(e - name);
			p++;
		} else {
			p += 2;
		}
	}
	return depth == 0 && roots == 1;
}

static void expect_xml(const char *doc)
{
	cr_expect(well_formed(doc), "not well-formed XML:\n%s", doc);
	if (access("/usr/bin/xmllint", X_OK))
		return;
	char path[] = "/tmp/test_flame_XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
	close(fd);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "/usr/bin/xmllint --noout %s", path);
	cr_expect_eq(system(cmd), 0, "xmllint rejects the SVG");
	unlink(path);
}

/* ---- Reading frames back out of the SVG. */

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The <g> of the frame whose (escaped) label is `label`, or NULL. */
static const char *frame(const char *doc, const char *label)
{
	char head[512];
	snprintf(head, sizeof head, "<g><title>%s \xe2\x80\x94 ", label);
	const char *g = strstr(doc, head);
	if (g)
		cr_expect_null(strstr(g + 1, head), "frame %s drawn twice", label);
	return g;
}

/* Copy of what lies between `open` and `close` inside the frame's <g>, or "" when absent. */
static char *frame_part(const char *doc, const char *label, const char *open, const char *close)
{
	static char buf[512];
	const char *g = frame(doc, label);
	cr_assert_not_null(g, "no frame %s", label);
	const char *end = strstr(g, "</g>"), *a = strstr(g, open);
	buf[0] = 0;
	if (a && a < end) {
		a += strlen(open);
		const char *b = strstr(a, close);
		cr_assert(b && b <= end);
		snprintf(buf, sizeof buf, "%.*s", (int)(b - a), a);
	}
	return buf;
}

static char *title(const char *doc, const char *label)
{
	return frame_part(doc, label, "<title>", "</title>");
}

static char *text(const char *doc, const char *label)
{
	return frame_part(doc, label, "\">", "</text>");
}

static double rect_width(const char *doc, const char *label)
{
	return strtod(frame_part(doc, label, "width=\"", "\""), NULL);
}

static const struct wsp_flame_svg_options allocs = { .title = "t", .unit = "allocations" };

Test(flame, shared_outer_frames_are_one_box_with_the_sum)
{
	cr_assert_eq(wsp_flame_add(f, STACK("main", "a", "x"), 10), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "a", "y"), 5), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "b"), 3), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "a", "x"), 2), 0);
	cr_expect_eq(wsp_flame_total(f), 20);

	char *doc = svg(f, &allocs);
	expect_xml(doc);
	cr_expect_eq(count(doc, "<title>"), 6); /* all, main, a, b, x, y */
	cr_expect_str_eq(title(doc, "all"), "all \xe2\x80\x94 20 allocations, 100.0%");
	cr_expect_str_eq(title(doc, "main"), "main \xe2\x80\x94 20 allocations, 100.0%");
	cr_expect_str_eq(title(doc, "a"), "a \xe2\x80\x94 17 allocations, 85.0%");
	cr_expect_str_eq(title(doc, "x"), "x \xe2\x80\x94 12 allocations, 60.0%");
	cr_expect_str_eq(title(doc, "b"), "b \xe2\x80\x94 3 allocations, 15.0%");
	free(doc);

	char *text = folded(f);
	cr_expect_str_eq(text, "main;a;x 12\nmain;a;y 5\nmain;b 3\n");
	free(text);
}

Test(flame, the_same_label_under_different_parents_is_different_boxes)
{
	cr_assert_eq(wsp_flame_add(f, STACK("main", "a", "malloc_wrapper"), 1), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "b", "malloc_wrapper"), 1), 0);
	char *doc = svg(f, &allocs);
	const char *head = "<g><title>malloc_wrapper \xe2\x80\x94 1 allocation, 50.0%</title>";
	cr_expect_eq(count(doc, head), 2);
	free(doc);
}

Test(flame, folded_text_is_escaped_merged_and_sorted)
{
	cr_assert_eq(wsp_flame_add(f, STACK("main", "b;c", "x\ny"), 3), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("zeta"), 1), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "a"), 5), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main"), 2), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "b:c", "x y"), 4), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "a", "deep\tone"), 6), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "a b"), 7), 0);
	char *text = folded(f);
	cr_expect_str_eq(text, "main 2\n"
			       "main;a 5\n"
			       "main;a;deep one 6\n"
			       "main;a b 7\n"
			       "main;b:c;x y 7\n"
			       "zeta 1\n");
	free(text);
}

Test(flame, zero_values_and_empty_stacks)
{
	cr_expect_eq(wsp_flame_add(f, STACK("main"), 0), 0);
	cr_expect_eq(wsp_flame_add(f, NULL, 0, 5), -EINVAL);
	cr_expect_eq(wsp_flame_add(f, STACK("main", NULL), 5), -EINVAL);
	cr_expect_eq(wsp_flame_total(f), 0);
	char *text = folded(f);
	cr_expect_str_eq(text, "");
	free(text);
}

Test(flame, svg_titles_show_full_label_size_and_share)
{
	const char *app = "main (app.c:10)", *lib = "very_long_function_name_that_cannot_fit (lib.c:3)";
	cr_assert_eq(wsp_flame_add(f, STACK(app, lib), 1572864), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("other (app.c:20)"), 2621440), 0);
	struct wsp_flame_svg_options opt = { .title = "Peak heap", .subtitle = "metric: bytes", .unit = "bytes" };
	char *doc = svg(f, &opt);
	expect_xml(doc);
	cr_expect_eq(count(doc, "<title>"), 4);
	cr_expect_str_eq(title(doc, "all"), "all \xe2\x80\x94 4.00 MiB, 100.0%");
	cr_expect_str_eq(title(doc, "main (app.c:10)"), "main (app.c:10) \xe2\x80\x94 1.50 MiB, 37.5%");
	cr_expect_str_eq(title(doc, "other (app.c:20)"), "other (app.c:20) \xe2\x80\x94 2.50 MiB, 62.5%");
	cr_expect_not_null(frame(doc, lib));
	cr_expect_not_null(strstr(doc, ">Peak heap</text>"));
	cr_expect_not_null(strstr(doc, ">metric: bytes</text>"));
	cr_expect_not_null(strstr(doc, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	cr_expect_null(strstr(doc, "<script"));
	cr_expect_null(strstr(doc, "href"));
	free(doc);
}

Test(flame, byte_values_read_as_sizes)
{
	cr_assert_eq(wsp_flame_add(f, STACK("tiny"), 200), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("b"), 1000), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("k"), 10234), 0);   /* 9.994 KiB */
	cr_assert_eq(wsp_flame_add(f, STACK("r"), 10239), 0);   /* 9.999 KiB */
	cr_assert_eq(wsp_flame_add(f, STACK("m"), 1048575), 0); /* 1023.999 KiB */
	char *doc = svg(f, NULL);
	expect_xml(doc);
	cr_expect_str_eq(title(doc, "tiny"), "tiny \xe2\x80\x94 200 B, &lt;0.1%");
	cr_expect_str_eq(title(doc, "b"), "b \xe2\x80\x94 1000 B, 0.1%");
	cr_expect_str_eq(title(doc, "k"), "k \xe2\x80\x94 9.99 KiB, 1.0%");
	cr_expect_str_eq(title(doc, "r"), "r \xe2\x80\x94 10.0 KiB, 1.0%");
	cr_expect_str_eq(title(doc, "m"), "m \xe2\x80\x94 1.00 MiB, 98.0%");
	free(doc);

	struct wsp_flame *g = wsp_flame_new();
	cr_assert_eq(wsp_flame_add(g, STACK("g"), 3ull << 30), 0);
	cr_assert_eq(wsp_flame_add(g, STACK("h"), 1ull << 30), 0);
	doc = svg(g, NULL);
	cr_expect_str_eq(title(doc, "all"), "all \xe2\x80\x94 4.00 GiB, 100.0%");
	cr_expect_str_eq(title(doc, "g"), "g \xe2\x80\x94 3.00 GiB, 75.0%");
	free(doc);
	wsp_flame_free(g);
}

Test(flame, box_widths_are_proportional_to_values)
{
	cr_assert_eq(wsp_flame_add(f, STACK("main", "a"), 300), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "b"), 100), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("other"), 600), 0);
	struct wsp_flame_svg_options opt = { .title = "w", .unit = "allocations", .width = 1020 };
	char *doc = svg(f, &opt);
	cr_expect(strstr(doc, "width=\"1020\""));
	/* 1000 px between the 10 px margins for a total of 1000 */
	cr_expect_float_eq(rect_width(doc, "all"), 1000.0, 0.01);
	cr_expect_float_eq(rect_width(doc, "main"), 400.0, 0.01);
	cr_expect_float_eq(rect_width(doc, "a"), 300.0, 0.01);
	cr_expect_float_eq(rect_width(doc, "b"), 100.0, 0.01);
	cr_expect_float_eq(rect_width(doc, "other"), 600.0, 0.01);
	/* siblings by label from the left: main at 10, other right after it; a then b */
	cr_expect_str_eq(frame_part(doc, "main", "<rect x=\"", "\""), "10.00");
	cr_expect_str_eq(frame_part(doc, "other", "<rect x=\"", "\""), "410.00");
	cr_expect_str_eq(frame_part(doc, "b", "<rect x=\"", "\""), "310.00");
	/* the root at the bottom, each depth one row above */
	double y_all = strtod(frame_part(doc, "all", "y=\"", "\""), NULL);
	double y_main = strtod(frame_part(doc, "main", "y=\"", "\""), NULL);
	double y_a = strtod(frame_part(doc, "a", "y=\"", "\""), NULL);
	cr_expect_float_eq(y_all - y_main, 16.0, 0.01);
	cr_expect_float_eq(y_main - y_a, 16.0, 0.01);
	free(doc);
}

Test(flame, labels_are_cut_to_their_boxes)
{
	/* 1180 px for a total of 1,000,000: 1 px is about 847 */
	cr_assert_eq(wsp_flame_add(f, STACK("abcdefghijklmnop"), 50000), 0); /* 59 px: 8 characters */
	cr_assert_eq(wsp_flame_add(f, STACK("fits"), 50000), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("narrow_box"), 15000), 0);      /* 17.7 px */
	cr_assert_eq(wsp_flame_add(f, STACK("parent", "seen"), 834950), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("parent", "hidden"), 50), 0);   /* 0.06 px */
	cr_assert_eq(wsp_flame_add(f, STACK("\xc3\xa9t\xc3\xa9_\xc3\xa9t\xc3\xa9_\xc3\xa9t\xc3\xa9"), 50000), 0);
	char *doc = svg(f, &allocs);
	expect_xml(doc);
	cr_expect_str_eq(text(doc, "abcdefghijklmnop"), "abcdef..");
	cr_expect_str_eq(text(doc, "fits"), "fits");
	cr_expect_str_eq(text(doc, "narrow_box"), "");
	cr_expect_str_eq(text(doc, "\xc3\xa9t\xc3\xa9_\xc3\xa9t\xc3\xa9_\xc3\xa9t\xc3\xa9"), "\xc3\xa9t\xc3\xa9_\xc3\xa9t..");
	cr_expect_null(frame(doc, "hidden"));
	cr_expect_str_eq(title(doc, "parent"), "parent \xe2\x80\x94 835,000 allocations, 83.5%");
	free(doc);
}

Test(flame, markup_in_labels_and_titles_is_escaped)
{
	const char *tricky = "operator<<(std::ostream&, \"quoted\" 'single')";
	cr_assert_eq(wsp_flame_add(f, STACK("main", tricky), 7), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "tab\there\nnewline;semi", "bad\xff" "byte"), 3), 0);
	struct wsp_flame_svg_options opt = { .title = "a<b & 'c'", .subtitle = "\"q\" > p", .unit = "allocations" };
	char *doc = svg(f, &opt);
	expect_xml(doc);
	const char *escaped = "operator&lt;&lt;(std::ostream&amp;, &quot;quoted&quot; &apos;single&apos;)";
	cr_expect_not_null(frame(doc, escaped));
	cr_expect_str_eq(title(doc, escaped), "operator&lt;&lt;(std::ostream&amp;, &quot;quoted&quot; &apos;single&apos;) \xe2\x80\x94 7 allocations, 70.0%");
	cr_expect_not_null(frame(doc, "tab here newline;semi"));
	cr_expect_not_null(frame(doc, "bad\xef\xbf\xbd" "byte"));
	cr_expect_not_null(strstr(doc, ">a&lt;b &amp; &apos;c&apos;</text>"));
	cr_expect_not_null(strstr(doc, ">&quot;q&quot; &gt; p</text>"));
	free(doc);
}

Test(flame, an_empty_tree_is_a_picture_that_says_so)
{
	struct wsp_flame_svg_options opt = { .title = "Peak heap: ./app", .subtitle = "metric: bytes", .unit = "bytes" };
	char *doc = svg(f, &opt);
	expect_xml(doc);
	cr_expect_not_null(strstr(doc, ">Peak heap: ./app</text>"));
	cr_expect_not_null(strstr(doc, ">metric: bytes</text>"));
	cr_expect_not_null(strstr(doc, "Nothing to show"));
	cr_expect_eq(count(doc, "<title>"), 0);
	free(doc);
	doc = svg(f, NULL);
	expect_xml(doc);
	free(doc);
}

static void add_in_order(struct wsp_flame *flame, bool reversed)
{
	static const char *const stacks[][3] = {
		{ "main", "parse", "strdup" }, { "main", "run", "grow" }, { "main", "parse", "xmalloc" },
		{ "worker", "run", "grow" },    { "main", "run", "new" },   { "init", "setup", "calloc" },
	};
	size_t n = sizeof stacks / sizeof *stacks;
	for (size_t i = 0; i < n; i++) {
		size_t k = reversed ? n - 1 - i : i;
		cr_assert_eq(wsp_flame_add(flame, stacks[k], 3 - k % 3, 1000 * (k + 1)), 0);
	}
}

Test(flame, output_does_not_depend_on_insertion_order)
{
	struct wsp_flame *g = wsp_flame_new();
	add_in_order(f, false);
	add_in_order(g, true);
	struct wsp_flame_svg_options opt = { .title = "same", .subtitle = "twice", .unit = "bytes" };
	char *a = svg(f, &opt), *b = svg(g, &opt), *c = svg(f, &opt);
	cr_expect_str_eq(a, b);
	cr_expect_str_eq(a, c);
	expect_xml(a);
	char *fa = folded(f), *fb = folded(g);
	cr_expect_str_eq(fa, fb);
	free(a);
	free(b);
	free(c);
	free(fa);
	free(fb);
	wsp_flame_free(g);
}

Test(flame, a_hundred_thousand_nodes)
{
	char mid[32], leaf[32];
	for (unsigned i = 0; i < 100000; i++) {
		snprintf(mid, sizeof mid, "module_%u", i % 97);
		snprintf(leaf, sizeof leaf, "fn_%u", i);
		cr_assert_eq(wsp_flame_add(f, STACK("main", mid, leaf), i + 1), 0);
	}
	cr_expect_eq(wsp_flame_total(f), 100000ull * 100001 / 2);
	char *text = folded(f);
	cr_expect_eq(count(text, "\n"), 100000);
	free(text);
	char *doc = svg(f, &allocs);
	cr_expect(well_formed(doc));
	free(doc);
}

Test(flame, deep_recursion_is_walked_without_recursing)
{
	enum { DEPTH = 20000 };
	static const char *frames[DEPTH];
	for (size_t i = 0; i < DEPTH; i++)
		frames[i] = "recurse";
	cr_assert_eq(wsp_flame_add(f, frames, DEPTH, 1), 0);
	cr_assert_eq(wsp_flame_add(f, frames, DEPTH / 2, 1), 0);
	char *text = folded(f);
	cr_expect_eq(count(text, ";"), DEPTH - 1 + DEPTH / 2 - 1);
	free(text);
	char *doc = svg(f, &allocs);
	cr_expect(well_formed(doc));
	cr_expect_eq(count(doc, "<title>"), DEPTH + 1);
	free(doc);
}

/* The checker above must catch what it is there to catch. */
Test(flame, the_xml_check_rejects_broken_documents)
{
	cr_expect(well_formed("<?xml version=\"1.0\"?>\n<svg a=\"1\" b='2'><g><title>x &amp; y</title></g><rect/></svg>\n"));
	cr_expect_not(well_formed("<svg><g></svg></g>"));
	cr_expect_not(well_formed("<svg><title>a < b</title></svg>"));
	cr_expect_not(well_formed("<svg><title>a & b</title></svg>"));
	cr_expect_not(well_formed("<svg a=\"x\" a=\"y\"/>"));
	cr_expect_not(well_formed("<svg a=\"x<\"/>"));
	cr_expect_not(well_formed("<svg/><svg/>"));
	cr_expect_not(well_formed("<svg>\xff</svg>"));
	cr_expect_not(well_formed("<svg>\x01</svg>"));
}

/* A differential graph: widths from the drawn run, the base's values in
 * every tooltip with the change, red for growth, blue for shrinkage, grey
 * for no change; a stack only in the base adds no box of width. */
Test(flame, a_differential_graph_colours_and_names_each_change)
{
	cr_assert_eq(wsp_flame_add(f, STACK("main", "grows"), 2048), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "shrinks"), 1024), 0);
	cr_assert_eq(wsp_flame_add(f, STACK("main", "same"), 1024), 0);
	cr_assert_eq(wsp_flame_add_base(f, STACK("main", "grows"), 1024), 0);
	cr_assert_eq(wsp_flame_add_base(f, STACK("main", "shrinks"), 4096), 0);
	cr_assert_eq(wsp_flame_add_base(f, STACK("main", "same"), 1024), 0);
	cr_assert_eq(wsp_flame_add_base(f, STACK("main", "gone"), 512), 0);
	cr_expect_eq(wsp_flame_total(f), 4096);
	cr_expect_eq(wsp_flame_base_total(f), 6656);
	const struct wsp_flame_svg_options opt = { .title = "diff", .unit = "bytes" };
	char *doc = svg(f, &opt);
	cr_expect(well_formed(doc));
	cr_expect(strstr(doc, "<title>grows \xe2\x80\x94 2.00 KiB, 50.0% (base 1.00 KiB, +1.00 KiB)</title>"), "%s", doc);
	cr_expect(strstr(doc, "<title>shrinks \xe2\x80\x94 1.00 KiB, 25.0% (base 4.00 KiB, -3.00 KiB)</title>"));
	cr_expect(strstr(doc, "<title>same \xe2\x80\x94 1.00 KiB, 25.0% (base 1.00 KiB, 0 B)</title>"));
	cr_expect_null(strstr(doc, "<title>gone"), "a stack only in the base has no width");
	/* grows: +50% of its larger value; shrinks -75%; same: grey */
	const char *g = strstr(doc, "<title>grows"), *s = strstr(doc, "<title>shrinks"), *e = strstr(doc, "<title>same");
	unsigned r, gr, b;
	cr_assert(sscanf(strstr(g, "fill=\"rgb(") + 10, "%u,%u,%u", &r, &gr, &b) == 3);
	cr_expect(r > 230 && gr < 120 && gr == b, "growth is red: %u,%u,%u", r, gr, b);
	cr_assert(sscanf(strstr(s, "fill=\"rgb(") + 10, "%u,%u,%u", &r, &gr, &b) == 3);
	cr_expect(b > 230 && r < 120 && r == gr, "shrinkage is blue: %u,%u,%u", r, gr, b);
	cr_assert(sscanf(strstr(e, "fill=\"rgb(") + 10, "%u,%u,%u", &r, &gr, &b) == 3);
	cr_expect(r == gr && gr == b, "no change is grey: %u,%u,%u", r, gr, b);
	free(doc);
}
