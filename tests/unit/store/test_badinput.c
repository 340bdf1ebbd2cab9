/*
 * test_badinput.c - the bad input every string command must refuse
 * without changing the store: keys and values over their limits, NULL
 * keys, values, handles and result pointers.
 */
#include "helpers/testutil.h"

TestSuite(badinput, .init = tu_setup, .fini = tu_teardown);

/*
 * Bad input: each call fails with the documented error and the store keeps
 * exactly what it held.
 */

/* Runs every keyed command on (@key, @klen) and asserts each returns @want. */
static void assert_every_command_fails(const void *key, size_t klen, int want)
{
	struct shmkv_value v = tu_value_for(tu_kv);
	int64_t n = 0;

	tu_assert_rc(shmkv_set(tu_kv, key, klen, LIT("v"), 0, 0, NULL), want);
	tu_assert_rc(
		shmkv_set(tu_kv, key, klen, LIT("v"), SHMKV_SET_GET, 0, &v),
		want);
	tu_assert_rc(shmkv_setnx(tu_kv, key, klen, LIT("v")), want);
	tu_assert_rc(shmkv_get(tu_kv, key, klen, &v), want);
	tu_assert_rc(shmkv_getset(tu_kv, key, klen, LIT("v"), &v), want);
	tu_assert_rc(shmkv_getdel(tu_kv, key, klen, &v), want);
	tu_assert_rc(shmkv_getex(tu_kv, key, klen, SHMKV_GETEX_PERSIST, 0, &v),
		     want);
	tu_assert_rc(shmkv_del(tu_kv, key, klen), want);
	tu_assert_rc(shmkv_exists(tu_kv, key, klen), want);
	tu_assert_rc(shmkv_delifeq(tu_kv, key, klen, LIT("v")), want);
	tu_assert_rc(shmkv_expire(tu_kv, key, klen, SHMKV_EXPIRE_SEC, 0, 10),
		     want);
	tu_assert_rc(shmkv_pttl(tu_kv, key, klen, &n), want);
	tu_assert_rc(shmkv_ttl(tu_kv, key, klen, &n), want);
	tu_assert_rc(shmkv_persist(tu_kv, key, klen), want);
	tu_assert_rc(shmkv_incrby(tu_kv, key, klen, 5, &n), want);
	tu_assert_rc(shmkv_incr(tu_kv, key, klen, &n), want);
	tu_assert_rc(shmkv_decr(tu_kv, key, klen, &n), want);
	tu_assert_rc(shmkv_decrby(tu_kv, key, klen, 5, &n), want);
}

Test(badinput, a_key_longer_than_key_max_is_enametoolong_everywhere)
{
	char *key = tu_fill(TU_KEY_MAX + 1, 'k');
	struct tu_snap *snap;

	tu_populate(tu_kv, 20);
	/* The key's first key_max bytes exist: no truncation may reach it. */
	tu_assert_rc(
		shmkv_set(tu_kv, key, TU_KEY_MAX, LIT("short"), 0, 0, NULL), 1);
	snap = tu_snap_take(tu_kv);
	assert_every_command_fails(key, TU_KEY_MAX + 1, -ENAMETOOLONG);
	assert_every_command_fails(key, SIZE_MAX, -ENAMETOOLONG);
	tu_assert_unchanged(tu_kv, snap);
	tu_assert_get(tu_kv, key, TU_KEY_MAX, LIT("short"));
}

Test(badinput, a_value_longer_than_value_max_is_e2big_and_sets_nothing)
{
	char *val = tu_fill(TU_VALUE_MAX + 1, 'v');
	struct shmkv_value old = tu_value_for(tu_kv);
	struct tu_snap *snap;

	tu_populate(tu_kv, 20);
	snap = tu_snap_take(tu_kv);
	/* base0 exists, "fresh" does not: both paths must refuse. */
	tu_assert_rc(shmkv_set(tu_kv, LIT("base0"), val, TU_VALUE_MAX + 1, 0, 0,
			       NULL),
		     -E2BIG);
	tu_assert_rc(shmkv_set(tu_kv, LIT("fresh"), val, TU_VALUE_MAX + 1, 0, 0,
			       NULL),
		     -E2BIG);
	tu_assert_rc(shmkv_set(tu_kv, LIT("base1"), val, TU_VALUE_MAX + 1,
			       SHMKV_SET_XX | SHMKV_SET_GET, 0, &old),
		     -E2BIG);
	tu_assert_rc(shmkv_set(tu_kv, LIT("fresh"), val, TU_VALUE_MAX + 1,
			       SHMKV_SET_NX | SHMKV_SET_PX, 100000, NULL),
		     -E2BIG);
	tu_assert_rc(shmkv_set(tu_kv, LIT("fresh"), val, SIZE_MAX, 0, 0, NULL),
		     -E2BIG);
	tu_assert_rc(shmkv_setnx(tu_kv, LIT("fresh"), val, TU_VALUE_MAX + 1),
		     -E2BIG);
	tu_assert_rc(
		shmkv_getset(tu_kv, LIT("base2"), val, TU_VALUE_MAX + 1, &old),
		-E2BIG);
	tu_assert_rc(
		shmkv_getset(tu_kv, LIT("fresh"), val, TU_VALUE_MAX + 1, &old),
		-E2BIG);
	tu_assert_unchanged(tu_kv, snap);
	tu_assert_missing(tu_kv, LIT("fresh"));
}

/* shmkv.h lists -E2BIG among the errors common to every command. */
Test(badinput, delifeq_with_a_value_longer_than_value_max_is_e2big)
{
	char *val = tu_fill(TU_VALUE_MAX + 1, 'v');
	char *key = tu_fill(TU_KEY_MAX + 1, 'k');

	tu_assert_rc(shmkv_set(tu_kv, val, 3, val, TU_VALUE_MAX, 0, 0, NULL),
		     1);
	tu_assert_rc(shmkv_delifeq(tu_kv, val, 3, val, TU_VALUE_MAX + 1),
		     -E2BIG);
	tu_assert_rc(
		shmkv_delifeq(tu_kv, LIT("missing"), val, TU_VALUE_MAX + 1),
		-E2BIG);
	/* A bad key is refused whatever the value. */
	tu_assert_rc(shmkv_delifeq(tu_kv, key, TU_KEY_MAX + 1, val,
				   TU_VALUE_MAX + 1),
		     -ENAMETOOLONG);
	tu_assert_get(tu_kv, val, 3, val, TU_VALUE_MAX);
}

Test(badinput, a_null_key_with_a_length_is_einval_everywhere)
{
	struct tu_snap *snap;

	tu_populate(tu_kv, 20);
	snap = tu_snap_take(tu_kv);
	assert_every_command_fails(NULL, 1, -EINVAL);
	assert_every_command_fails(NULL, 5, -EINVAL);
	tu_assert_unchanged(tu_kv, snap);
}

Test(badinput, a_null_value_with_a_length_is_einval)
{
	struct shmkv_value old = tu_value_for(tu_kv);
	struct tu_snap *snap;

	tu_populate(tu_kv, 20);
	snap = tu_snap_take(tu_kv);
	tu_assert_rc(shmkv_set(tu_kv, LIT("base0"), NULL, 3, 0, 0, NULL),
		     -EINVAL);
	tu_assert_rc(shmkv_set(tu_kv, LIT("fresh"), NULL, 3, 0, 0, NULL),
		     -EINVAL);
	tu_assert_rc(shmkv_setnx(tu_kv, LIT("fresh"), NULL, 1), -EINVAL);
	tu_assert_rc(shmkv_getset(tu_kv, LIT("base1"), NULL, 1, &old), -EINVAL);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("base2"), NULL, 6), -EINVAL);
	tu_assert_unchanged(tu_kv, snap);
}

Test(badinput, a_null_key_or_value_of_length_zero_is_empty)
{
	tu_assert_rc(shmkv_set(tu_kv, NULL, 0, NULL, 0, 0, 0, NULL), 1);
	tu_assert_get(tu_kv, LIT(""), "", 0);
	tu_assert_rc(shmkv_delifeq(tu_kv, NULL, 0, NULL, 0), 1);
	tu_assert_missing(tu_kv, LIT(""));
}

Test(badinput, a_null_handle_is_einval_everywhere)
{
	struct shmkv_value v = tu_value(64);
	struct shmkv_stats st;
	struct shmkv_config cfg;
	uint64_t cursor = 0;
	int64_t n = 0;

	tu_assert_rc(shmkv_set(NULL, LIT("k"), LIT("v"), 0, 0, NULL), -EINVAL);
	tu_assert_rc(shmkv_setnx(NULL, LIT("k"), LIT("v")), -EINVAL);
	tu_assert_rc(shmkv_get(NULL, LIT("k"), &v), -EINVAL);
	tu_assert_rc(shmkv_getset(NULL, LIT("k"), LIT("v"), &v), -EINVAL);
	tu_assert_rc(shmkv_getdel(NULL, LIT("k"), &v), -EINVAL);
	tu_assert_rc(shmkv_getex(NULL, LIT("k"), SHMKV_GETEX_KEEP, 0, &v),
		     -EINVAL);
	tu_assert_rc(shmkv_del(NULL, LIT("k")), -EINVAL);
	tu_assert_rc(shmkv_exists(NULL, LIT("k")), -EINVAL);
	tu_assert_rc(shmkv_delifeq(NULL, LIT("k"), LIT("v")), -EINVAL);
	tu_assert_rc(shmkv_expire(NULL, LIT("k"), SHMKV_EXPIRE_SEC, 0, 1),
		     -EINVAL);
	tu_assert_rc(shmkv_pttl(NULL, LIT("k"), &n), -EINVAL);
	tu_assert_rc(shmkv_ttl(NULL, LIT("k"), &n), -EINVAL);
	tu_assert_rc(shmkv_persist(NULL, LIT("k")), -EINVAL);
	tu_assert_rc(shmkv_incrby(NULL, LIT("k"), 1, &n), -EINVAL);
	tu_assert_rc(shmkv_incr(NULL, LIT("k"), &n), -EINVAL);
	tu_assert_rc(shmkv_decr(NULL, LIT("k"), &n), -EINVAL);
	tu_assert_rc(shmkv_decrby(NULL, LIT("k"), 1, &n), -EINVAL);
	tu_assert_rc(shmkv_sweep(NULL, &cursor, 16), -EINVAL);
	tu_assert_rc(shmkv_recover(NULL, NULL), -EINVAL);
	tu_assert_rc(shmkv_stats(NULL, &st), -EINVAL);
	tu_assert_rc(shmkv_get_config(NULL, &cfg), -EINVAL);
	tu_assert_rc(shmkv_scan(NULL, 0, 16, NULL, NULL, &cursor), -EINVAL);
}

Test(badinput, null_result_pointers_are_einval)
{
	struct tu_snap *snap;

	tu_populate(tu_kv, 10);
	snap = tu_snap_take(tu_kv);
	tu_assert_rc(shmkv_pttl(tu_kv, LIT("base0"), NULL), -EINVAL);
	tu_assert_rc(shmkv_ttl(tu_kv, LIT("base0"), NULL), -EINVAL);
	tu_assert_rc(shmkv_get_config(tu_kv, NULL), -EINVAL);
	tu_assert_rc(shmkv_stats(tu_kv, NULL), -EINVAL);
	tu_assert_rc(shmkv_sweep(tu_kv, NULL, 16), -EINVAL);
	tu_assert_unchanged(tu_kv, snap);
}
