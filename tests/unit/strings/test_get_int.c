/*
 * test_get_int.c - shmkv_get_int() and shmkv_key_get_int(): GET of a value
 * as the integer it is, with INCR's test of what an integer is.
 *
 * The store keeps a canonical integer of 48 bits without a TTL inline in
 * the value word and every other value (larger integers, any value with a
 * TTL) in a value block, so each answer is checked on both sides, on the
 * plain and on the prepared-key path (whose fast path reads the word).
 */
#include "helpers/rng.h"
#include "helpers/testutil.h"
#include "helpers/ttl.h"
#include "helpers/value_blocks.h"

#include <stdio.h>

TestSuite(get_int, .init = tu_setup, .fini = tu_teardown);

/* Something no test stores: shows that *out was left alone. */
#define UNTOUCHED ((int64_t)0x5eed5eed5eed5eedLL)

static void set_str(const char *key, const char *val)
{
	tu_assert_rc(shmkv_set(tu_kv, key, strlen(key), val, strlen(val), 0, 0,
			       NULL),
		     1);
}

/* Values kept as their digits (a string: in the slot or a block), not
 * as an integer in the value word. */
static uint64_t strings_kept(void)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(tu_kv, &st));
	return st.inline_values + st.block_values;
}

/* Values in value blocks. */
static uint64_t blocks_used(void)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(tu_kv, &st));
	return mp_blocks_used(&st);
}

/* Both calls, plain and prepared (twice: the second one with the slot
 * remembered, so on the fast path when it applies), give @rc and, for 1,
 * *out == @want; for anything else *out untouched. */
static void assert_get_int(const char *key, int rc, int64_t want)
{
	struct shmkv_keyref ref;
	int64_t got = UNTOUCHED;

	tu_assert_rc(shmkv_get_int(tu_kv, key, strlen(key), &got), rc);
	cr_assert_eq(got, rc == 1 ? want : UNTOUCHED,
		     "%s: shmkv_get_int gave %lld", key, (long long)got);
	tu_assert_ok(shmkv_key_prepare(tu_kv, &ref, key, strlen(key)));
	for (int i = 0; i < 2; i++) {
		got = UNTOUCHED;
		tu_assert_rc(shmkv_key_get_int(tu_kv, &ref, &got), rc);
		cr_assert_eq(got, rc == 1 ? want : UNTOUCHED,
			     "%s: shmkv_key_get_int gave %lld (call %d)", key,
			     (long long)got, i);
	}
}

Test(get_int, returns_an_inline_integer_without_a_value_block)
{
	static const int64_t vals[] = { 0,   1,	     -1,	 42,
					-42, 123456, INLINE_MAX, INLINE_MIN };

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		char s[32];

		snprintf(s, sizeof(s), "%lld", (long long)vals[i]);
		set_str("k", s);
		cr_assert_eq(strings_kept(), 0, "%s is not inline", s);
		assert_get_int("k", 1, vals[i]);
	}
}

Test(get_int, returns_an_integer_kept_as_a_string)
{
	static const struct {
		const char *s;
		int64_t v;
	} vals[] = {
		{ "140737488355328", INLINE_MAX + 1 },
		{ "-140737488355329", INLINE_MIN - 1 },
		{ "9223372036854775807", INT64_MAX },
		{ "-9223372036854775808", INT64_MIN },
	};

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		set_str("k", vals[i].s);
		cr_assert_eq(strings_kept(), 1, "%s is not kept as a string",
			     vals[i].s);
		assert_get_int("k", 1, vals[i].v);
	}
}

Test(get_int, returns_what_incr_left)
{
	int64_t n = 0;

	tu_assert_ok(shmkv_incrby(tu_kv, LIT("c"), 41, &n));
	tu_assert_ok(shmkv_incr(tu_kv, LIT("c"), &n));
	assert_get_int("c", 1, 42);
	tu_assert_ok(shmkv_incrby(tu_kv, LIT("c"), INLINE_MAX, &n));
	assert_get_int("c", 1, INLINE_MAX + 42);
}

Test(get_int, returns_zero_for_a_missing_key)
{
	assert_get_int("nope", 0, 0);
	set_str("k", "5");
	tu_assert_rc(shmkv_del(tu_kv, LIT("k")), 1);
	assert_get_int("k", 0, 0);
}

Test(get_int, refuses_a_value_that_incr_refuses_with_edom)
{
	static const char *const bad[] = {
		"",
		"abc",
		"042",
		"-0",
		"+1",
		" 1",
		"1 ",
		"1.0",
		"0x10",
		"-",
		"9223372036854775808",
		"-9223372036854775809",
		"00000000000000000001",
		"123456789012345678901234567890",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t n = 0;

		set_str("k", bad[i]);
		tu_assert_rc(shmkv_incrby(tu_kv, LIT("k"), 0, &n), -EDOM);
		assert_get_int("k", -EDOM, 0);
		tu_assert_get_str(tu_kv, "k", bad[i]); /* unchanged */
	}
}

Test(get_int, returns_an_integer_with_a_ttl_and_keeps_the_ttl)
{
	ttl_freeze();
	ttl_set_ms("t", "77", HOUR_MS);
	ttl_set_ms("big", "-9223372036854775808", HOUR_MS);
	/* A TTL needs the block's deadline: both values live in blocks. */
	cr_assert_eq(blocks_used(), 2);
	assert_get_int("t", 1, 77);
	assert_get_int("big", 1, INT64_MIN);
	tu_assert_pttl_is(tu_kv, LIT("t"), HOUR_MS);
	tu_assert_get_str(tu_kv, "t", "77");
	ttl_set_ms("s", "seven", HOUR_MS);
	assert_get_int("s", -EDOM, 0);
}

Test(get_int, returns_zero_for_an_expired_integer_and_deletes_it)
{
	ttl_freeze();
	ttl_set_ms("t", "77", 10);
	ttl_set_ms("u", "78", 10);
	ttl_set_ms("s", "not a number", 10);
	ttl_advance(11); /* past the deadlines, still in their slots */
	cr_assert_eq(blocks_used(), 3);
	assert_get_int("t", 0, 0);
	assert_get_int("s", 0, 0); /* missing wins over not an integer */
	/* Met expired, the values were deleted, as GET does. */
	cr_assert_eq(blocks_used(), 1);
	tu_assert_missing_str(tu_kv, "t");
	tu_assert_missing_str(tu_kv, "s");
}

Test(get_int, checks_its_arguments_and_changes_nothing)
{
	struct shmkv_config cfg = tu_get_config(tu_kv);
	char *longkey = tu_fill(cfg.key_max + 1, 'k');
	struct shmkv_keyref ref, other_ref;
	char other_name[TU_NAME_CAP];
	shmkv_t *other = tu_create(NULL, other_name);
	int64_t got = UNTOUCHED;
	struct tu_snap *snap;

	set_str("k", "5");
	snap = tu_snap_take(tu_kv);
	tu_assert_rc(shmkv_get_int(NULL, LIT("k"), &got), -EINVAL);
	tu_assert_rc(shmkv_get_int(tu_kv, LIT("k"), NULL), -EINVAL);
	tu_assert_rc(shmkv_get_int(tu_kv, NULL, 1, &got), -EINVAL);
	tu_assert_rc(shmkv_get_int(tu_kv, longkey, cfg.key_max + 1, &got),
		     -ENAMETOOLONG);
	tu_assert_ok(shmkv_key_prepare(tu_kv, &ref, LIT("k")));
	tu_assert_ok(shmkv_key_prepare(other, &other_ref, LIT("k")));
	tu_assert_rc(shmkv_key_get_int(tu_kv, &ref, NULL), -EINVAL);
	tu_assert_rc(shmkv_key_get_int(NULL, &ref, &got), -EINVAL);
	tu_assert_rc(shmkv_key_get_int(tu_kv, NULL, &got), -EINVAL);
	tu_assert_rc(shmkv_key_get_int(tu_kv, &other_ref, &got), -EINVAL);
	cr_assert_eq(got, UNTOUCHED);
	tu_assert_unchanged(tu_kv, snap);
	/* The empty key is a key like any other. */
	tu_assert_rc(shmkv_get_int(tu_kv, NULL, 0, &got), 0);
	shmkv_close(other);
}

Test(get_int, works_on_a_read_only_handle)
{
	shmkv_t *ro;
	struct shmkv_keyref ref;
	int64_t got = 0;

	set_str("i", "12");
	set_str("b", "140737488355328");
	set_str("s", "str");
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	tu_assert_rc(shmkv_get_int(ro, LIT("i"), &got), 1);
	cr_assert_eq(got, 12);
	tu_assert_rc(shmkv_get_int(ro, LIT("b"), &got), 1);
	cr_assert_eq(got, INLINE_MAX + 1);
	tu_assert_rc(shmkv_get_int(ro, LIT("s"), &got), -EDOM);
	tu_assert_rc(shmkv_get_int(ro, LIT("none"), &got), 0);
	tu_assert_ok(shmkv_key_prepare(ro, &ref, LIT("i")));
	tu_assert_rc(shmkv_key_get_int(ro, &ref, &got), 1);
	tu_assert_rc(shmkv_key_get_int(ro, &ref, &got), 1);
	cr_assert_eq(got, 12);
	shmkv_close(ro);
}

/* A prepared key follows its key through every kind of value, and
 * through a slot given back and taken again. */
Test(get_int, a_prepared_key_follows_its_value_through_changes)
{
	struct shmkv_keyref ref;
	int64_t got = 0;
	char key[16];

	tu_assert_ok(shmkv_key_prepare(tu_kv, &ref, LIT("k")));
	tu_assert_rc(shmkv_key_get_int(tu_kv, &ref, &got), 0);
	set_str("k", "1");
	tu_assert_rc(shmkv_key_get_int(tu_kv, &ref, &got), 1);
	cr_assert_eq(got, 1);
	set_str("k", "2");
	tu_assert_rc(shmkv_key_get_int(tu_kv, &ref, &got), 1);
	cr_assert_eq(got, 2);
	set_str("k", "two");
	tu_assert_rc(shmkv_key_get_int(tu_kv, &ref, &got), -EDOM);
	set_str("k", "140737488355328");
	tu_assert_rc(shmkv_key_get_int(tu_kv, &ref, &got), 1);
	cr_assert_eq(got, INLINE_MAX + 1);
	tu_assert_rc(shmkv_del(tu_kv, LIT("k")), 1);
	tu_assert_rc(shmkv_key_get_int(tu_kv, &ref, &got), 0);
	/* Other keys may take the slot; then "k" comes back elsewhere. */
	for (unsigned long i = 0; i < TU_SLOTS / 2; i++) {
		size_t n = tu_fmt(key, sizeof(key), "o", i);

		tu_assert_rc(shmkv_set(tu_kv, key, n, LIT("9"), 0, 0, NULL), 1);
	}
	tu_assert_rc(shmkv_key_get_int(tu_kv, &ref, &got), 0);
	set_str("k", "3");
	tu_assert_rc(shmkv_key_get_int(tu_kv, &ref, &got), 1);
	cr_assert_eq(got, 3);
}

/* Random values, biased to near-misses of integers: shmkv_get_int takes
 * exactly those INCR takes, as the same number. */
Test(get_int, agrees_with_incr_on_random_values)
{
	static const char odd[] = "0123456789-+ .a";
	uint64_t x = rng_env_seed("SHMKV_TEST_SEED");

	cr_log_info("seed %llu (SHMKV_TEST_SEED)", (unsigned long long)x);
	for (int i = 0; i < 3000; i++) {
		char s[32];
		uint64_t u = rng_next(&x) >> rng_below(&x, 64);
		int64_t v = (int64_t)(rng_next(&x) & 1 ? u : 0 - u);
		size_t len = (size_t)snprintf(s, sizeof(s), "%lld",
					      (long long)v);
		int64_t by_incr = 0, got = UNTOUCHED;
		int rc_incr, rc;

		if (rng_below(&x, 2))
			s[rng_below(&x, len)] = odd[rng_below(&x, 15)];
		tu_assert_rc(shmkv_set(tu_kv, LIT("a"), s, len, 0, 0, NULL), 1);
		tu_assert_rc(shmkv_set(tu_kv, LIT("b"), s, len, 0, 0, NULL), 1);
		rc_incr = shmkv_incrby(tu_kv, LIT("a"), 0, &by_incr);
		rc = shmkv_get_int(tu_kv, LIT("b"), &got);
		cr_assert(rc_incr == 0 || rc_incr == -EDOM);
		cr_assert(rc == (rc_incr == 0 ? 1 : -EDOM) &&
				  (rc != 1 || got == by_incr),
			  "\"%.*s\": INCR %d/%lld, get_int %d/%lld", (int)len,
			  s, rc_incr, (long long)by_incr, rc, (long long)got);
	}
}
