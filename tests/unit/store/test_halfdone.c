/*
 * test_halfdone.c - states a process killed mid-protocol leaves behind
 * are finished by the next command that meets them: nobody waits.
 *
 * The states are made by hand here (the torture tests make them by
 * killing processes at crash points): this file pins down what a command
 * does when it meets each one.
 */
#include "helpers/slot_of.h"
#include "helpers/testutil.h"

#include "../src/internal.h"

TestSuite(halfdone, .init = tu_setup, .fini = tu_teardown);

/* A recycler that made the value DEAD and died before freeing the slot. */
static void leave_half_recycled(shmkv_t *kv, const char *key)
{
	struct shmkv_slot_ref ref = tu_slot_ref(kv, key);

	tu_assert_rc(shmkv_del(kv, key, strlen(key)), 1);
	shmkv__slot(shmkv__table_cmd(kv), ref.index)->value = VAL_NONE_WORD(
		SLOT_VERSION(ref.state), 1);
}

Test(halfdone, a_half_recycled_slot_is_finished_by_the_next_write)
{
	struct shmkv_stats st;

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v1"), 0, 0, NULL), 1);
	leave_half_recycled(tu_kv, "k");
	tu_assert_missing_str(tu_kv, "k");
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v2"), 0, 0, NULL), 1);
	tu_assert_get_str(tu_kv, "k", "v2");
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.live_keys, 1);
	cr_assert_eq(st.pending, 0);
}

Test(halfdone, a_half_recycled_slot_is_finished_through_a_prepared_key)
{
	struct shmkv_keyref ref;

	tu_assert_ok(shmkv_key_prepare(tu_kv, &ref, LIT("lock.a")));
	tu_assert_rc(shmkv_key_setnx(tu_kv, &ref, LIT("1700000000")), 1);
	leave_half_recycled(tu_kv, "lock.a");
	tu_assert_rc(shmkv_key_del(tu_kv, &ref), 0);
	tu_assert_rc(shmkv_key_setnx(tu_kv, &ref, LIT("1700000001")), 1);
	tu_assert_get_str(tu_kv, "lock.a", "1700000001");
}

Test(halfdone, a_read_only_handle_reads_a_half_recycled_key_as_absent)
{
	shmkv_t *ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	int64_t ttl = 0;

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	leave_half_recycled(tu_kv, "k");
	tu_assert_rc(shmkv_get(ro, LIT("k"), NULL), 0);
	tu_assert_ok(shmkv_pttl(ro, LIT("k"), &ttl));
	cr_assert_eq(ttl, -2);
	shmkv_close(ro);
}

Test(halfdone, recovery_finishes_a_half_recycled_slot)
{
	struct shmkv_recover_report rep;

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	leave_half_recycled(tu_kv, "k");
	tu_assert_rc(shmkv_recover(tu_kv, &rep), 1);
	cr_assert_eq(rep.dead_slots, 1);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

Test(halfdone, check_reports_a_half_recycled_slot_until_it_is_finished)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	leave_half_recycled(tu_kv, "k");
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("w"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}
