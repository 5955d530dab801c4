/*
 * test_units.c - numbers for people (analyzer/units.c): sizes as
 * users write them (wsprof check's budgets) and signed changes (wsprof
 * diff).
 */
#include "units.h"

#include <criterion/criterion.h>
#include <stdint.h>

static uint64_t size_of(const char *s)
{
	uint64_t v = 0;
	cr_assert_eq(wsp_parse_size(s, &v), 0, "'%s' is a size", s);
	return v;
}

Test(units, sizes_as_people_write_them)
{
	cr_expect_eq(size_of("4096"), 4096);
	cr_expect_eq(size_of("0"), 0);
	cr_expect_eq(size_of("512MiB"), 512ull << 20);
	cr_expect_eq(size_of("512 MiB"), 512ull << 20);
	cr_expect_eq(size_of("512mb"), 512ull << 20);
	cr_expect_eq(size_of("1.5G"), 3ull << 29);
	cr_expect_eq(size_of("1.5GiB"), 3ull << 29);
	cr_expect_eq(size_of("64K"), 65536);
	cr_expect_eq(size_of("64kb"), 65536);
	cr_expect_eq(size_of("100B"), 100);
	cr_expect_eq(size_of("2T"), 2ull << 40);
	cr_expect_eq(size_of(".5K"), 512);
	cr_expect_eq(size_of("15E"), 15ull << 60);
}

Test(units, what_is_not_a_size)
{
	static const char *const bad[] = { "", "MiB", "-5", "12XB", "1.5Gx", "0x10", "1e3", "inf", "nan", "5 M B",
					   "16E", "1..5M", "K5" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		uint64_t v = 7;
		cr_expect_eq(wsp_parse_size(bad[i], &v), -1, "'%s' is not a size", bad[i]);
		cr_expect_eq(v, 7, "nothing is written for '%s'", bad[i]);
	}
}

Test(units, signed_changes)
{
	char buf[32];
	cr_expect_str_eq(wsp_human_change(buf, sizeof buf, 8 << 20), "+8.00 MiB");
	cr_expect_str_eq(wsp_human_change(buf, sizeof buf, -512), "-512 B");
	cr_expect_str_eq(wsp_human_change(buf, sizeof buf, 0), "0 B");
	cr_expect_str_eq(wsp_human_change(buf, sizeof buf, INT64_MIN), "-8.00 EiB");
	cr_expect_str_eq(wsp_count_change(buf, sizeof buf, 1000), "+1,000");
	cr_expect_str_eq(wsp_count_change(buf, sizeof buf, -3), "-3");
	cr_expect_str_eq(wsp_count_change(buf, sizeof buf, 0), "0");
}
