/*
 * test_strings.c - SET (every flag), SETNX, GET and GETSET. Redis 7 is the
 * reference for every expected reply. Expiry flags are tested in
 * test_expire_set.c; GETDEL, DEL, EXISTS and DELIFEQ in
 * test_strings_del.c; bad input to every command in test_badinput.c.
 */
#include "helpers/testutil.h"
#include "helpers/ttl.h"

TestSuite(set, .init = tu_setup, .fini = tu_teardown);
TestSuite(setnx, .init = tu_setup, .fini = tu_teardown);
TestSuite(get, .init = tu_setup, .fini = tu_teardown);
TestSuite(getset, .init = tu_setup, .fini = tu_teardown);

/*
 * SET
 */

Test(set, returns_one_and_stores_the_value)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("hello"), 0, 0, NULL), 1);
	tu_assert_get_str(tu_kv, "k", "hello");
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
}

Test(set, overwrites_an_existing_value)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("first"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("2nd"), 0, 0, NULL), 1);
	tu_assert_get_str(tu_kv, "k", "2nd");
}

Test(set, stores_an_empty_value)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT(""), 0, 0, NULL), 1);
	tu_assert_get(tu_kv, LIT("k"), "", 0);
	tu_assert_rc(shmkv_exists(tu_kv, LIT("k")), 1);
}

Test(set, accepts_the_empty_key_as_a_key_of_its_own)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT(""), LIT("empty"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("\0"), LIT("nul"), 0, 0, NULL), 1);
	tu_assert_get(tu_kv, LIT(""), LIT("empty"));
	tu_assert_get(tu_kv, NULL, 0, LIT("empty"));
	tu_assert_get(tu_kv, LIT("\0"), LIT("nul"));
}

Test(set, keeps_keys_that_differ_in_one_byte_or_in_length_apart)
{
	static const char *const keys[] = { "a", "a\0", "a\0b", "a\0c",
					    "A", "ab",	"ba" };
	static const size_t lens[] = { 1, 2, 3, 3, 1, 2, 2 };
	const size_t n = sizeof(lens) / sizeof(lens[0]);
	char v[16];

	for (size_t i = 0; i < n; i++) {
		size_t vl = tu_fmt(v, sizeof(v), "v", i);

		tu_assert_rc(
			shmkv_set(tu_kv, keys[i], lens[i], v, vl, 0, 0, NULL),
			1);
	}
	for (size_t i = 0; i < n; i++) {
		size_t vl = tu_fmt(v, sizeof(v), "v", i);

		tu_assert_get(tu_kv, keys[i], lens[i], v, vl);
	}
}

Test(set, stores_values_with_any_bytes)
{
	unsigned char val[256];

	for (int i = 0; i < 256; i++)
		val[i] = (unsigned char)(255 - i);
	tu_assert_rc(shmkv_set(tu_kv, LIT("bin"), val, sizeof(val), 0, 0, NULL),
		     1);
	tu_assert_get(tu_kv, LIT("bin"), val, sizeof(val));
}

Test(set, round_trips_every_value_length_up_to_value_max)
{
	char *val = tu_fill(TU_VALUE_MAX, 0);

	for (size_t len = 0; len <= TU_VALUE_MAX; len++) {
		for (size_t i = 0; i < len; i++)
			val[i] = (char)('a' + (i + len) % 26);
		tu_assert_rc(shmkv_set(tu_kv, LIT("k"), val, len, 0, 0, NULL),
			     1);
		tu_assert_get(tu_kv, LIT("k"), val, len);
	}
}

Test(set, replaces_long_values_with_short_ones_and_back)
{
	char *lng = tu_fill(TU_VALUE_MAX, 'L');

	for (int i = 0; i < 100; i++) {
		tu_assert_rc(shmkv_set(tu_kv, LIT("k"), lng, TU_VALUE_MAX, 0, 0,
				       NULL),
			     1);
		tu_assert_get(tu_kv, LIT("k"), lng, TU_VALUE_MAX);
		tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("s"), 0, 0, NULL),
			     1);
		tu_assert_get_str(tu_kv, "k", "s");
		tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("12"), 0, 0, NULL),
			     1);
		tu_assert_get_str(tu_kv, "k", "12");
	}
}

Test(set, accepts_a_key_of_exactly_key_max_bytes)
{
	char *key = tu_fill(TU_KEY_MAX, 'k');

	tu_assert_rc(shmkv_set(tu_kv, key, TU_KEY_MAX, LIT("v"), 0, 0, NULL),
		     1);
	tu_assert_get(tu_kv, key, TU_KEY_MAX, LIT("v"));
	tu_assert_missing(tu_kv, key, TU_KEY_MAX - 1);
}

Test(set, accepts_a_value_of_exactly_value_max_bytes)
{
	char *val = tu_fill(TU_VALUE_MAX, 'v');

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), val, TU_VALUE_MAX, 0, 0, NULL),
		     1);
	tu_assert_get(tu_kv, LIT("k"), val, TU_VALUE_MAX);
}

Test(set, nx_sets_a_missing_key)
{
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("v"), SHMKV_SET_NX, 0, NULL), 1);
	tu_assert_get_str(tu_kv, "k", "v");
}

Test(set, nx_returns_zero_and_keeps_an_existing_key)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("old"), SHMKV_SET_EX, 3600,
			       NULL),
		     1);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("new"), SHMKV_SET_NX, 0, NULL),
		0);
	tu_assert_get_str(tu_kv, "k", "old");
	tu_assert_pttl_in(tu_kv, LIT("k"), 1, 3600 * 1000);
}

Test(set, xx_returns_zero_and_does_not_create_a_missing_key)
{
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("v"), SHMKV_SET_XX, 0, NULL), 0);
	tu_assert_missing(tu_kv, LIT("k"));
}

Test(set, xx_overwrites_an_existing_key)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("old"), 0, 0, NULL), 1);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("new"), SHMKV_SET_XX, 0, NULL),
		1);
	tu_assert_get_str(tu_kv, "k", "new");
}

Test(set, get_returns_the_old_value_and_sets_the_new_one)
{
	struct shmkv_value old = tu_value_for(tu_kv);

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("old"), 0, 0, NULL), 1);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("new"), SHMKV_SET_GET, 0, &old),
		1);
	tu_assert_value_str(old, "old");
	tu_assert_get_str(tu_kv, "k", "new");
}

Test(set, get_returns_an_empty_old_value_as_existing)
{
	struct shmkv_value old = tu_value_for(tu_kv);

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT(""), 0, 0, NULL), 1);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("x"), SHMKV_SET_GET, 0, &old),
		1);
	tu_assert_value(old, "", 0);
}

/* What "k" holds before and after a SET ... GET. */
enum key_is { MISSING, OLD, EXPIRED, NEW };

static void put_k(enum key_is before)
{
	cr_assert_geq(shmkv_del(tu_kv, LIT("k")), 0);
	if (before == OLD)
		ttl_set_plain("k", "old");
	if (before == EXPIRED) {
		ttl_set_ms("k", "old", 10);
		ttl_advance(11); /* past its deadline, still in its slot */
	}
}

/* With GET, SET's result is GET's reply: 1 (an old value, in @old) or 0
 * (none; an expired key counts as missing). Whether it set the value then
 * follows from the flags, as in Redis 7: NX sets iff 0, XX iff 1, neither
 * always; an expiry option or KEEPTTL changes neither. */
Test(set, get_replies_as_get_and_nx_or_xx_decide_whether_it_set)
{
	int64_t now = ttl_freeze();
	const unsigned nx = SHMKV_SET_NX | SHMKV_SET_GET,
		       xx = SHMKV_SET_XX | SHMKV_SET_GET, get = SHMKV_SET_GET,
		       past = SHMKV_SET_PXAT, keep = SHMKV_SET_KEEPTTL;
	static const enum key_is all[] = { MISSING, OLD, EXPIRED };
	const struct {
		unsigned flags;
		int64_t expire;
		enum key_is after[3]; /* from MISSING, OLD, EXPIRED */
	} cases[] = {
		{ get, 0, { NEW, NEW, NEW } },
		{ nx, 0, { NEW, OLD, NEW } },
		{ xx, 0, { MISSING, NEW, MISSING } },
		{ get | keep, 0, { NEW, NEW, NEW } },
		{ xx | keep, 0, { MISSING, NEW, MISSING } },
		/* Set already expired: gone either way. */
		{ get | past, now - 1, { MISSING, MISSING, MISSING } },
		{ nx | past, now - 1, { MISSING, OLD, MISSING } },
		{ xx | past, now - 1, { MISSING, MISSING, MISSING } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int b = 0; b < 3; b++) {
			struct shmkv_value old = tu_value_for(tu_kv);
			enum key_is after = cases[i].after[b];
			int rc;

			put_k(all[b]);
			rc = shmkv_set(tu_kv, LIT("k"), LIT("new"),
				       cases[i].flags, cases[i].expire, &old);
			cr_assert_eq(rc, all[b] == OLD, "case %zu from %d: %d",
				     i, b, rc);
			if (rc == 1)
				tu_assert_value_str(old, "old");
			if (after == MISSING)
				tu_assert_missing(tu_kv, LIT("k"));
			else
				tu_assert_get_str(tu_kv, "k",
						  after == NEW ? "new" : "old");
		}
	}
}

Test(set, get_with_a_small_buffer_gives_enobufs_and_does_not_set)
{
	struct shmkv_value old = tu_value(3);
	const unsigned char *b;

	old.cap = 2;
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("hello"), 0, 0, NULL), 1);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("new"), SHMKV_SET_GET, 0, &old),
		-ENOBUFS);
	cr_assert_eq(old.len, 5, "old.len %zu, expected the needed 5", old.len);
	b = old.buf;
	cr_assert_eq(b[2], TU_CANARY, "wrote past the buffer's capacity");
	tu_assert_get_str(tu_kv, "k", "hello");
}

Test(set, get_without_an_old_buffer_is_einval)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("new"), SHMKV_SET_GET, 0, NULL),
		-EINVAL);
	tu_assert_get_str(tu_kv, "k", "v");
}

Test(set, nx_with_xx_is_einval)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"),
			       SHMKV_SET_NX | SHMKV_SET_XX, 0, NULL),
		     -EINVAL);
	tu_assert_missing(tu_kv, LIT("k"));
}

Test(set, unknown_flag_bits_are_einval)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 1u << 8, 0, NULL),
		     -EINVAL);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 1u << 31, 0, NULL),
		     -EINVAL);
	tu_assert_missing(tu_kv, LIT("k"));
}

/*
 * SETNX
 */

Test(setnx, returns_one_and_sets_a_missing_key)
{
	tu_assert_rc(shmkv_setnx(tu_kv, LIT("k"), LIT("v")), 1);
	tu_assert_get_str(tu_kv, "k", "v");
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
}

Test(setnx, returns_zero_when_key_exists)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("old"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_setnx(tu_kv, LIT("k"), LIT("new")), 0);
	tu_assert_get_str(tu_kv, "k", "old");
}

Test(setnx, returns_zero_when_key_holds_an_empty_value)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT(""), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_setnx(tu_kv, LIT("k"), LIT("new")), 0);
	tu_assert_get(tu_kv, LIT("k"), "", 0);
}

Test(setnx, sets_again_after_the_key_was_deleted)
{
	tu_assert_rc(shmkv_setnx(tu_kv, LIT("k"), LIT("1")), 1);
	tu_assert_rc(shmkv_del(tu_kv, LIT("k")), 1);
	tu_assert_rc(shmkv_setnx(tu_kv, LIT("k"), LIT("2")), 1);
	tu_assert_get_str(tu_kv, "k", "2");
}

/*
 * GET
 */

Test(get, returns_zero_for_a_missing_key)
{
	struct shmkv_value v = tu_value_for(tu_kv);

	tu_assert_rc(shmkv_get(tu_kv, LIT("nope"), &v), 0);
	tu_assert_rc(shmkv_set(tu_kv, LIT("nope2"), LIT("v"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_get(tu_kv, LIT("nope"), &v), 0);
}

Test(get, with_null_out_reports_existence)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("value"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_get(tu_kv, LIT("k"), NULL), 1);
	tu_assert_rc(shmkv_get(tu_kv, LIT("other"), NULL), 0);
}

Test(get, with_a_null_zero_capacity_buffer_reports_the_length)
{
	struct shmkv_value v = { NULL, 0, 0 };

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("value"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_get(tu_kv, LIT("k"), &v), -ENOBUFS);
	cr_assert_eq(v.len, 5, "len %zu, expected 5", v.len);
}

Test(get, with_a_null_zero_capacity_buffer_returns_an_empty_value)
{
	struct shmkv_value v = { NULL, 0, 99 };

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT(""), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_get(tu_kv, LIT("k"), &v), 1);
	cr_assert_eq(v.len, 0, "len %zu, expected 0", v.len);
}

Test(get, with_a_buffer_of_exactly_the_value_length_succeeds)
{
	struct shmkv_value v = tu_value(5);

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("value"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_get(tu_kv, LIT("k"), &v), 1);
	tu_assert_value_str(v, "value");
}

Test(get, with_a_buffer_one_byte_short_gives_enobufs_within_capacity)
{
	char *val = tu_fill(300, 'x');
	struct shmkv_value v = tu_value(300);
	const unsigned char *b = v.buf;

	v.cap = 299;
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), val, 300, 0, 0, NULL), 1);
	tu_assert_rc(shmkv_get(tu_kv, LIT("k"), &v), -ENOBUFS);
	cr_assert_eq(v.len, 300, "len %zu, expected 300", v.len);
	cr_assert_eq(b[299], TU_CANARY, "wrote past the buffer's capacity");
	tu_assert_get(tu_kv, LIT("k"), val, 300);
}

Test(get, reports_the_length_of_an_integer_value_through_enobufs)
{
	struct shmkv_value v = tu_value(2);

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("12345"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_get(tu_kv, LIT("k"), &v), -ENOBUFS);
	cr_assert_eq(v.len, 5, "len %zu, expected 5", v.len);
}

Test(get, with_a_null_buffer_of_nonzero_capacity_is_einval)
{
	struct shmkv_value v = { NULL, 16, 0 };

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("value"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_get(tu_kv, LIT("k"), &v), -EINVAL);
}

Test(get, does_not_change_the_value)
{
	for (int i = 0; i < 3; i++) {
		tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL),
			     1);
		tu_assert_get_str(tu_kv, "k", "v");
		tu_assert_get_str(tu_kv, "k", "v");
	}
}

/*
 * GETSET
 */

Test(getset, returns_zero_and_sets_a_missing_key)
{
	struct shmkv_value old = tu_value_for(tu_kv);

	tu_assert_rc(shmkv_getset(tu_kv, LIT("k"), LIT("new"), &old), 0);
	tu_assert_get_str(tu_kv, "k", "new");
}

Test(getset, returns_one_and_the_old_value)
{
	struct shmkv_value old = tu_value_for(tu_kv);

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("old"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_getset(tu_kv, LIT("k"), LIT("new"), &old), 1);
	tu_assert_value_str(old, "old");
	tu_assert_get_str(tu_kv, "k", "new");
}

Test(getset, of_integers_replies_the_old_one_and_stores_the_new)
{
	struct shmkv_value old = tu_value_for(tu_kv);

	tu_assert_rc(shmkv_getset(tu_kv, LIT("k"), LIT("-42"), &old), 0);
	cr_assert_eq(old.len, 0);
	tu_assert_rc(
		shmkv_getset(tu_kv, LIT("k"), LIT("140737488355327"), &old), 1);
	tu_assert_value_str(old, "-42");
	tu_assert_get_str(tu_kv, "k", "140737488355327");
}

Test(getset, of_integers_with_a_small_buffer_gives_enobufs_and_does_not_set)
{
	struct shmkv_value old = tu_value(2);

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("12345"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_getset(tu_kv, LIT("k"), LIT("7"), &old), -ENOBUFS);
	cr_assert_eq(old.len, 5, "len %zu, expected 5", old.len);
	tu_assert_get_str(tu_kv, "k", "12345");
}

Test(getset, with_a_small_buffer_gives_enobufs_and_does_not_set)
{
	struct shmkv_value old = tu_value(2);

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("old"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_getset(tu_kv, LIT("k"), LIT("new"), &old), -ENOBUFS);
	cr_assert_eq(old.len, 3, "len %zu, expected 3", old.len);
	tu_assert_get_str(tu_kv, "k", "old");
}
