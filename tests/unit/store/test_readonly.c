/*
 * test_readonly.c - read-only handles: every read works, every write is
 * -EROFS (even one that would change nothing), an expired key reads as
 * missing without a write, and writes through other handles show.
 */
#include "helpers/testutil.h"
#include "helpers/ttl.h"

TestSuite(readonly, .init = tu_setup, .fini = tu_teardown);

Test(readonly, reads_work_and_every_write_is_erofs)
{
	shmkv_t *ro;
	struct shmkv_value v = tu_value_for(tu_kv);
	struct tu_snap *snap;
	uint64_t cursor = 0;
	int64_t n = 0;

	tu_populate(tu_kv, 10);
	snap = tu_snap_take(tu_kv);
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY);

	tu_assert_get_str(ro, "base1", "value1");
	tu_assert_rc(shmkv_exists(ro, LIT("base2")), 1);
	tu_assert_ok(shmkv_pttl(ro, LIT("base0"), &n));
	cr_assert_gt(n, 0);
	tu_assert_ok(shmkv_ttl(ro, LIT("base1"), &n));
	cr_assert_eq(n, -1);
	tu_assert_rc(shmkv_getex(ro, LIT("base1"), SHMKV_GETEX_KEEP, 0, &v), 1);
	tu_assert_value_str(v, "value1");
	tu_assert_unchanged(ro, snap);

	tu_assert_rc(shmkv_set(ro, LIT("base1"), LIT("x"), 0, 0, NULL), -EROFS);
	tu_assert_rc(shmkv_set(ro, LIT("new"), LIT("x"), 0, 0, NULL), -EROFS);
	tu_assert_rc(shmkv_setnx(ro, LIT("new"), LIT("x")), -EROFS);
	tu_assert_rc(shmkv_getset(ro, LIT("base1"), LIT("x"), &v), -EROFS);
	tu_assert_rc(shmkv_getdel(ro, LIT("base1"), &v), -EROFS);
	tu_assert_rc(shmkv_getex(ro, LIT("base0"), SHMKV_GETEX_PERSIST, 0, &v),
		     -EROFS);
	tu_assert_rc(shmkv_getex(ro, LIT("base1"), SHMKV_GETEX_EX, 10, &v),
		     -EROFS);
	tu_assert_rc(shmkv_del(ro, LIT("base1")), -EROFS);
	tu_assert_rc(shmkv_delifeq(ro, LIT("base1"), LIT("value1")), -EROFS);
	tu_assert_rc(shmkv_expire(ro, LIT("base1"), SHMKV_EXPIRE_SEC, 0, 10),
		     -EROFS);
	tu_assert_rc(shmkv_expire(ro, LIT("base1"), SHMKV_EXPIRE_SEC, 0, 0),
		     -EROFS);
	tu_assert_rc(shmkv_persist(ro, LIT("base0")), -EROFS);
	tu_assert_rc(shmkv_incr(ro, LIT("n"), &n), -EROFS);
	tu_assert_rc(shmkv_incrby(ro, LIT("n"), 5, &n), -EROFS);
	tu_assert_rc(shmkv_decr(ro, LIT("n"), &n), -EROFS);
	tu_assert_rc(shmkv_decrby(ro, LIT("n"), 5, &n), -EROFS);
	tu_assert_rc(shmkv_sweep(ro, &cursor, 64), -EROFS);
	tu_assert_rc(shmkv_recover(ro, NULL), -EROFS);
	tu_assert_unchanged(tu_kv, snap);
	shmkv_close(ro);
}

/* shmkv.h: -EROFS is "a write on a handle opened with READONLY". Redis
 * refuses write commands on a read-only replica whatever the data; here a
 * write command that would happen to change nothing must not answer as if
 * the handle could write either. */
Test(readonly, write_commands_are_erofs_even_when_they_would_change_nothing)
{
	struct shmkv_value v = tu_value_for(tu_kv);
	shmkv_t *ro;

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	tu_assert_rc(shmkv_set(ro, LIT("k"), LIT("x"), SHMKV_SET_NX, 0, NULL),
		     -EROFS);
	tu_assert_rc(shmkv_set(ro, LIT("m"), LIT("x"), SHMKV_SET_XX, 0, NULL),
		     -EROFS);
	tu_assert_rc(shmkv_setnx(ro, LIT("k"), LIT("x")), -EROFS);
	tu_assert_rc(shmkv_del(ro, LIT("missing")), -EROFS);
	tu_assert_rc(shmkv_getdel(ro, LIT("missing"), &v), -EROFS);
	tu_assert_rc(shmkv_delifeq(ro, LIT("k"), LIT("other")), -EROFS);
	tu_assert_rc(shmkv_expire(ro, LIT("missing"), SHMKV_EXPIRE_SEC, 0, 10),
		     -EROFS);
	tu_assert_rc(shmkv_persist(ro, LIT("k")), -EROFS);
	tu_assert_rc(shmkv_getex(ro, LIT("k"), SHMKV_GETEX_PERSIST, 0, &v),
		     -EROFS);
	tu_assert_get_str(tu_kv, "k", "v");
	shmkv_close(ro);
}

Test(readonly, an_expired_key_reads_as_missing_without_writing)
{
	shmkv_t *ro;
	struct shmkv_stats st;

	ttl_set_ms("k", "v", SHORT_MS);
	ttl_set_ms("i", "5", SHORT_MS);
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	tu_sleep_ms(PAST_SHORT_MS);
	/* The mapping is read-only: any attempt to delete would crash. */
	tu_assert_missing(ro, LIT("k"));
	tu_assert_missing(ro, LIT("i"));
	tu_assert_ok(shmkv_stats(ro, &st));
	cr_assert_eq(st.live_keys, 0);
	shmkv_close(ro);
}

Test(readonly, sees_writes_made_through_other_handles)
{
	shmkv_t *ro = tu_open(tu_name, SHMKV_OPEN_READONLY);

	tu_assert_missing_str(ro, "k");
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v1"), 0, 0, NULL), 1);
	tu_assert_get_str(ro, "k", "v1");
	tu_assert_rc(shmkv_del(tu_kv, LIT("k")), 1);
	tu_assert_missing_str(ro, "k");
	shmkv_close(ro);
}
