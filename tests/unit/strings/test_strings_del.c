/*
 * test_strings_del.c - the commands that delete or test a key: GETDEL,
 * DEL, EXISTS and DELIFEQ. Redis 7 is the reference for every expected
 * reply (DELIFEQ, which Redis lacks, behaves as its script in
 * tests/programs/diff_redis.c).
 */
#include "helpers/testutil.h"

TestSuite(getdel, .init = tu_setup, .fini = tu_teardown);
TestSuite(del, .init = tu_setup, .fini = tu_teardown);
TestSuite(exists, .init = tu_setup, .fini = tu_teardown);
TestSuite(delifeq, .init = tu_setup, .fini = tu_teardown);

/*
 * GETDEL
 */

Test(getdel, returns_the_value_and_deletes_the_key)
{
	struct shmkv_value old = tu_value_for(tu_kv);

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_getdel(tu_kv, LIT("k"), &old), 1);
	tu_assert_value_str(old, "v");
	tu_assert_missing(tu_kv, LIT("k"));
	tu_assert_rc(shmkv_getdel(tu_kv, LIT("k"), &old), 0);
}

Test(getdel, returns_zero_for_a_missing_key)
{
	struct shmkv_value old = tu_value_for(tu_kv);

	tu_assert_rc(shmkv_getdel(tu_kv, LIT("k"), &old), 0);
	tu_assert_missing(tu_kv, LIT("k"));
}

Test(getdel, with_a_small_buffer_gives_enobufs_and_does_not_delete)
{
	struct shmkv_value old = tu_value(4);
	char *val = tu_fill(100, 'z');

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), val, 100, 0, 0, NULL), 1);
	tu_assert_rc(shmkv_getdel(tu_kv, LIT("k"), &old), -ENOBUFS);
	cr_assert_eq(old.len, 100, "len %zu, expected 100", old.len);
	tu_assert_get(tu_kv, LIT("k"), val, 100);
}

Test(getdel, with_a_null_zero_capacity_buffer_does_not_delete)
{
	struct shmkv_value old = { NULL, 0, 0 };

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("7"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_getdel(tu_kv, LIT("k"), &old), -ENOBUFS);
	cr_assert_eq(old.len, 1, "len %zu, expected 1", old.len);
	tu_assert_get_str(tu_kv, "k", "7");
}

/*
 * DEL and EXISTS
 */

Test(del, returns_one_then_zero)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_del(tu_kv, LIT("k")), 1);
	tu_assert_missing(tu_kv, LIT("k"));
	tu_assert_rc(shmkv_del(tu_kv, LIT("k")), 0);
}

Test(del, returns_zero_for_a_key_never_set)
{
	tu_assert_rc(shmkv_del(tu_kv, LIT("never")), 0);
}

Test(del, deletes_only_the_key_named)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("1"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k1"), LIT("2"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k\0"), LIT("3"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_del(tu_kv, LIT("k")), 1);
	tu_assert_missing(tu_kv, LIT("k"));
	tu_assert_get(tu_kv, LIT("k1"), LIT("2"));
	tu_assert_get(tu_kv, LIT("k\0"), LIT("3"));
}

Test(del, lets_the_key_be_set_again)
{
	for (int i = 0; i < 50; i++) {
		tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL),
			     1);
		tu_assert_rc(shmkv_del(tu_kv, LIT("k")), 1);
	}
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("last"), 0, 0, NULL), 1);
	tu_assert_get_str(tu_kv, "k", "last");
}

/* A value in a block: freed by the DEL (its straight-line path, or the
 * engine's when the block has a deadline: DEL's answer depends on it). */
Test(del, deletes_a_block_value_and_frees_its_block)
{
	struct shmkv_stats st;

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT(TU_BLOCK_TEXT), 0, 0, NULL),
		     1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("t"), LIT(TU_BLOCK_TEXT),
			       SHMKV_SET_PX, 60000, NULL),
		     1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("x"), LIT(TU_BLOCK_TEXT),
			       SHMKV_SET_PX, 1, NULL),
		     1);
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.block_values, 3);
	tu_assert_rc(shmkv_del(tu_kv, LIT("k")), 1);
	tu_assert_rc(shmkv_del(tu_kv, LIT("k")), 0);
	tu_assert_rc(shmkv_del(tu_kv, LIT("t")), 1);
	tu_assert_missing_str(tu_kv, "t");
	/* An expired key is no key: DEL says 0, and frees it all the same. */
	tu_sleep_ms(5);
	tu_assert_rc(shmkv_del(tu_kv, LIT("x")), 0);
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.block_values, 0);
	cr_assert_eq(st.live_keys, 0);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

/* A token in the slot or in a block, with or without a TTL: equal bytes
 * delete it (and free its block), others keep it. */
Test(delifeq, compares_a_string_in_the_slot_or_in_a_block)
{
	static const char *const tokens[] = { "tok-in-slot-16b!",
					      TU_BLOCK_TEXT };
	struct shmkv_stats st;

	for (int i = 0; i < 2; i++) {
		const char *t = tokens[i];
		size_t n = strlen(t);

		for (int ttl = 0; ttl < 2; ttl++) {
			tu_assert_rc(shmkv_set(tu_kv, LIT("lock"), t, n,
					       ttl ? SHMKV_SET_PX : 0,
					       ttl ? 60000 : 0, NULL),
				     1);
			tu_assert_rc(
				shmkv_delifeq(tu_kv, LIT("lock"), t, n - 1), 0);
			tu_assert_rc(shmkv_delifeq(tu_kv, LIT("lock"), "X", 1),
				     0);
			tu_assert_get(tu_kv, LIT("lock"), t, n);
			tu_assert_rc(shmkv_delifeq(tu_kv, LIT("lock"), t, n),
				     1);
			tu_assert_missing_str(tu_kv, "lock");
		}
	}
	/* An integer equals no other form of itself. */
	tu_assert_rc(shmkv_set(tu_kv, LIT("lock"), LIT("7"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("lock"), LIT("07")), 0);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("lock"), LIT("7")), 1);
	/* An expired token equals nothing. */
	tu_assert_rc(shmkv_set(tu_kv, LIT("lock"), LIT(TU_BLOCK_TEXT),
			       SHMKV_SET_PX, 1, NULL),
		     1);
	tu_sleep_ms(5);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("lock"), LIT(TU_BLOCK_TEXT)), 0);
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.block_values, 0);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

Test(exists, returns_one_for_a_key_and_zero_otherwise)
{
	tu_assert_rc(shmkv_exists(tu_kv, LIT("k")), 0);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT(""), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_exists(tu_kv, LIT("k")), 1);
	tu_assert_rc(shmkv_exists(tu_kv, LIT("K")), 0);
	tu_assert_rc(shmkv_del(tu_kv, LIT("k")), 1);
	tu_assert_rc(shmkv_exists(tu_kv, LIT("k")), 0);
}

/*
 * DELIFEQ
 */

Test(delifeq, deletes_when_the_value_matches)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("lock"), LIT("owner-1"), 0, 0, NULL),
		     1);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("lock"), LIT("owner-1")), 1);
	tu_assert_missing(tu_kv, LIT("lock"));
}

Test(delifeq, keeps_the_key_when_the_value_differs)
{
	static const char *const others[] = {
		"owner-2", "owner-", "owner-11", "", "OWNER-1", "owner-1\0"
	};
	static const size_t lens[] = { 7, 6, 8, 0, 7, 8 };

	tu_assert_rc(shmkv_set(tu_kv, LIT("lock"), LIT("owner-1"), 0, 0, NULL),
		     1);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		tu_assert_rc(
			shmkv_delifeq(tu_kv, LIT("lock"), others[i], lens[i]),
			0);
	tu_assert_get_str(tu_kv, "lock", "owner-1");
}

Test(delifeq, returns_zero_for_a_missing_key)
{
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("lock"), LIT("x")), 0);
	tu_assert_missing(tu_kv, LIT("lock"));
}

Test(delifeq, matches_an_empty_value)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("lock"), LIT(""), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("lock"), LIT("x")), 0);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("lock"), NULL, 0), 1);
	tu_assert_missing(tu_kv, LIT("lock"));
}

Test(delifeq, matches_integer_and_long_values_byte_for_byte)
{
	char *lng = tu_fill(TU_VALUE_MAX, 'q');

	tu_assert_rc(shmkv_set(tu_kv, LIT("i"), LIT("123"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("i"), LIT("0123")), 0);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("i"), LIT("123")), 1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("l"), lng, TU_VALUE_MAX, 0, 0, NULL),
		     1);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("l"), lng, TU_VALUE_MAX - 1), 0);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("l"), lng, TU_VALUE_MAX), 1);
	tu_assert_missing(tu_kv, LIT("l"));
}

Test(delifeq, compares_integers_by_value_whatever_their_storage)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("i"), LIT("-77"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("i"), LIT("-78")), 0);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("i"), LIT("77")), 0);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("i"), LIT("-77 ")), 0);
	tu_assert_get_str(tu_kv, "i", "-77");
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("i"), LIT("-77")), 1);
	tu_assert_missing(tu_kv, LIT("i"));
	/* With a TTL the same integer lives in a block: same answers. */
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("i"), LIT("5"), SHMKV_SET_PX, 60000, NULL),
		1);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("i"), LIT("6")), 0);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("i"), LIT("5")), 1);
	tu_assert_missing(tu_kv, LIT("i"));
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("i"), LIT("5")), 0);
}
