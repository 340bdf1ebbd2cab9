/*
 * test_incr.c - INCR, INCRBY, DECR, DECRBY.
 *
 * Redis 7 is the reference: a value is an integer only in its canonical
 * decimal form ("007", "-0", "+1", " 1" are not), the result must fit in 64
 * bits, and the key's TTL is kept (tested in tests/unit/ttl/test_expire_set.c,
 * with the other writes' effect on a TTL). The core keeps integers that fit in 48
 * bits inline in the value word and larger ones in value storage, so every
 * behaviour is checked on both sides of +-2^47.
 */
#include "helpers/testutil.h"
#include "helpers/value_blocks.h"

#include <stdio.h>

TestSuite(incr, .init = tu_setup, .fini = tu_teardown);

/* INLINE_MAX, INLINE_MIN: the ends of the inline range (value_blocks.h). */

static void set_str(const char *key, const char *val)
{
	tu_assert_rc(shmkv_set(tu_kv, key, strlen(key), val, strlen(val), 0, 0,
			       NULL),
		     1);
}

/* GET of @key returns the decimal form of @want, byte for byte. */
static void assert_holds(const char *key, long long want)
{
	char s[32];

	snprintf(s, sizeof(s), "%lld", want);
	tu_assert_get_str(tu_kv, key, s);
}

static void assert_incrby(const char *key, int64_t delta, long long want)
{
	int64_t got = 0;

	tu_assert_ok(shmkv_incrby(tu_kv, key, strlen(key), delta, &got));
	cr_assert_eq(got, want, "INCRBY %s %lld: %lld, expected %lld", key,
		     (long long)delta, (long long)got, want);
	assert_holds(key, want);
}

Test(incr, creates_a_missing_key_at_one_without_ttl)
{
	int64_t n = 0;

	tu_assert_ok(shmkv_incr(tu_kv, LIT("k"), &n));
	cr_assert_eq(n, 1);
	tu_assert_get_str(tu_kv, "k", "1");
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
}

Test(incr, each_wrapper_adds_what_its_name_says)
{
	int64_t n = 0;

	set_str("k", "10");
	tu_assert_ok(shmkv_incr(tu_kv, LIT("k"), &n));
	cr_assert_eq(n, 11);
	tu_assert_ok(shmkv_decr(tu_kv, LIT("k"), &n));
	cr_assert_eq(n, 10);
	tu_assert_ok(shmkv_incrby(tu_kv, LIT("k"), 32, &n));
	cr_assert_eq(n, 42);
	tu_assert_ok(shmkv_decrby(tu_kv, LIT("k"), 50, &n));
	cr_assert_eq(n, -8);
	tu_assert_ok(shmkv_decrby(tu_kv, LIT("k"), -9, &n));
	cr_assert_eq(n, 1);
	tu_assert_ok(shmkv_incrby(tu_kv, LIT("k"), -1, &n));
	cr_assert_eq(n, 0);
	tu_assert_get_str(tu_kv, "k", "0");
}

Test(incr, decr_of_a_missing_key_gives_minus_one)
{
	int64_t n = 0;

	tu_assert_ok(shmkv_decr(tu_kv, LIT("k"), &n));
	cr_assert_eq(n, -1);
	tu_assert_get_str(tu_kv, "k", "-1");
}

Test(incr, incrby_zero_rewrites_nothing_visible)
{
	set_str("k", "-17");
	assert_incrby("k", 0, -17);
}

Test(incr, counts_up_many_times)
{
	int64_t n = 0;

	for (int i = 1; i <= 1000; i++) {
		tu_assert_ok(shmkv_incr(tu_kv, LIT("k"), &n));
		cr_assert_eq(n, i);
	}
	tu_assert_get_str(tu_kv, "k", "1000");
}

Test(incr, get_returns_exactly_the_bytes_set_around_the_inline_boundary)
{
	static const char *const vals[] = {
		"0",
		"-1",
		"140737488355327",
		"140737488355328",
		"-140737488355328",
		"-140737488355329",
		"9223372036854775807",
		"-9223372036854775808",
		/* not canonical: must come back as written, not as numbers */
		"007",
		"-0",
		"+1",
		" 1",
		"1 ",
		"0140737488355328",
		"9223372036854775808",
		"-9223372036854775809",
		"18446744073709551616",
		"1.5",
		"1e3",
		"0x10",
	};

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		set_str("k", vals[i]);
		tu_assert_get_str(tu_kv, "k", vals[i]);
		set_str(vals[i], "as a key");
		tu_assert_get_str(tu_kv, vals[i], "as a key");
	}
}

Test(incr, crosses_the_inline_boundary_upwards_and_back)
{
	set_str("k", "140737488355326");
	assert_incrby("k", 1, INLINE_MAX);
	assert_incrby("k", 1, INLINE_MAX + 1);
	assert_incrby("k", 1, INLINE_MAX + 2);
	assert_incrby("k", -1, INLINE_MAX + 1);
	assert_incrby("k", -1, INLINE_MAX);
	assert_incrby("k", -INLINE_MAX, 0);
}

Test(incr, crosses_the_inline_boundary_downwards_and_back)
{
	set_str("k", "-140737488355327");
	assert_incrby("k", -1, INLINE_MIN);
	assert_incrby("k", -1, INLINE_MIN - 1);
	assert_incrby("k", -1, INLINE_MIN - 2);
	assert_incrby("k", 1, INLINE_MIN - 1);
	assert_incrby("k", 1, INLINE_MIN);
	assert_incrby("k", -INLINE_MIN, 0);
}

Test(incr, jumps_across_the_whole_range)
{
	set_str("k", "0");
	assert_incrby("k", INT64_MAX, INT64_MAX);
	assert_incrby("k", INT64_MIN, -1);
	assert_incrby("k", INT64_MIN + 1, INT64_MIN);
	assert_incrby("k", INT64_MAX, -1);
	assert_incrby("k", 1, 0);
}

Test(incr, reads_large_values_that_were_set_as_strings)
{
	set_str("a", "140737488355328");
	assert_incrby("a", 5, INLINE_MAX + 6);
	set_str("b", "-140737488355329");
	assert_incrby("b", -5, INLINE_MIN - 6);
	set_str("c", "9223372036854775806");
	assert_incrby("c", 1, INT64_MAX);
	set_str("d", "-9223372036854775807");
	assert_incrby("d", -1, INT64_MIN);
}

Test(incr, reaches_the_64_bit_limits_from_a_missing_key)
{
	assert_incrby("max", INT64_MAX, INT64_MAX);
	assert_incrby("min", INT64_MIN, INT64_MIN);
}

Test(incr, overflow_is_eoverflow_and_changes_nothing)
{
	static const struct {
		const char *val;
		int64_t delta;
	} cases[] = {
		{ "9223372036854775807", 1 },
		{ "9223372036854775807", INT64_MAX },
		{ "1", INT64_MAX },
		{ "-9223372036854775808", -1 },
		{ "-9223372036854775808", INT64_MIN },
		{ "-1", INT64_MIN },
		{ "140737488355328", INT64_MAX - INLINE_MAX },
	};
	struct tu_snap *snap;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t n = 12345;

		cr_log_info("%s + %lld", cases[i].val,
			    (long long)cases[i].delta);
		tu_assert_rc(shmkv_set(tu_kv, LIT("k"), cases[i].val,
				       strlen(cases[i].val), SHMKV_SET_EX, 3600,
				       NULL),
			     1);
		snap = tu_snap_take(tu_kv);
		tu_assert_rc(shmkv_incrby(tu_kv, LIT("k"), cases[i].delta, &n),
			     -EOVERFLOW);
		tu_assert_unchanged(tu_kv, snap);
		tu_assert_get_str(tu_kv, "k", cases[i].val);
	}
}

Test(incr, incr_and_decr_stop_at_the_limits)
{
	int64_t n = 0;

	set_str("max", "9223372036854775807");
	set_str("min", "-9223372036854775808");
	tu_assert_rc(shmkv_incr(tu_kv, LIT("max"), &n), -EOVERFLOW);
	tu_assert_rc(shmkv_decr(tu_kv, LIT("min"), &n), -EOVERFLOW);
	tu_assert_rc(shmkv_decrby(tu_kv, LIT("min"), 1, &n), -EOVERFLOW);
	tu_assert_rc(shmkv_decrby(tu_kv, LIT("max"), -1, &n), -EOVERFLOW);
	tu_assert_get_str(tu_kv, "max", "9223372036854775807");
	tu_assert_get_str(tu_kv, "min", "-9223372036854775808");
}

Test(incr, decrby_int64_min_is_eoverflow_even_on_a_missing_key)
{
	int64_t n = 0;

	set_str("k", "0");
	tu_assert_rc(shmkv_decrby(tu_kv, LIT("k"), INT64_MIN, &n), -EOVERFLOW);
	tu_assert_get_str(tu_kv, "k", "0");
	tu_assert_rc(shmkv_decrby(tu_kv, LIT("missing"), INT64_MIN, &n),
		     -EOVERFLOW);
	tu_assert_missing(tu_kv, LIT("missing"));
}

Test(incr, values_that_are_not_canonical_integers_are_edom)
{
	static const char *const bad[] = {
		"",
		"abc",
		"007",
		"00",
		"-0",
		"-01",
		"+1",
		" 1",
		"1 ",
		"1.5",
		"1e3",
		"0x10",
		"-",
		"--1",
		"9223372036854775808",
		"-9223372036854775809",
		"12345678901234567890",
		"123456789012345678901",
		"18446744073709551616",
	};
	char with_nul[] = { '1', '\0' };
	char *lng = tu_fill(TU_VALUE_MAX, '1');

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t n = 777;

		cr_log_info("value \"%s\"", bad[i]);
		tu_assert_rc(shmkv_set(tu_kv, LIT("k"), bad[i], strlen(bad[i]),
				       SHMKV_SET_EX, 3600, NULL),
			     1);
		tu_assert_rc(shmkv_incr(tu_kv, LIT("k"), &n), -EDOM);
		tu_assert_rc(shmkv_decrby(tu_kv, LIT("k"), 3, &n), -EDOM);
		tu_assert_get_str(tu_kv, "k", bad[i]);
		tu_assert_pttl_in(tu_kv, LIT("k"), 1800 * 1000, 3600 * 1000);
	}
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), with_nul, sizeof(with_nul), 0,
			       0, NULL),
		     1);
	tu_assert_rc(shmkv_incrby(tu_kv, LIT("k"), 1, &(int64_t){ 0 }), -EDOM);
	tu_assert_get(tu_kv, LIT("k"), with_nul, sizeof(with_nul));
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), lng, TU_VALUE_MAX, 0, 0, NULL),
		     1);
	tu_assert_rc(shmkv_incr(tu_kv, LIT("k"), &(int64_t){ 0 }), -EDOM);
	tu_assert_get(tu_kv, LIT("k"), lng, TU_VALUE_MAX);
}

Test(incr, edge_integers_are_accepted)
{
	static const struct {
		const char *val;
		long long after;
	} ok[] = {
		{ "0", 1 },
		{ "-1", 0 },
		{ "9", 10 },
		{ "-9223372036854775808", -9223372036854775807LL },
		{ "9223372036854775806", 9223372036854775807LL },
		{ "-140737488355329", -140737488355328LL },
		{ "140737488355327", 140737488355328LL },
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		set_str("k", ok[i].val);
		assert_incrby("k", 1, ok[i].after);
	}
}

Test(incr, reaches_int64_min_from_a_twenty_byte_value)
{
	int64_t n = 0;

	/* 20 bytes: the longest canonical integer. */
	set_str("k", "-9223372036854775807");
	tu_assert_ok(shmkv_decr(tu_kv, LIT("k"), &n));
	cr_assert_eq(n, INT64_MIN);
	tu_assert_get_str(tu_kv, "k", "-9223372036854775808");
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
}
