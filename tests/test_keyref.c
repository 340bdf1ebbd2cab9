/*
 * test_keyref.c - prepared keys: the shmkv_key_* commands.
 *
 * A prepared key remembers the slot its key was last found in. The
 * commands must behave exactly like the plain ones, and above all must
 * notice when that slot has been recycled for another key meanwhile, and
 * never write into it.
 */
#include "helpers/testutil.h"

TestSuite(keyref, .init = tu_setup, .fini = tu_teardown);

static struct shmkv_keyref prepared(const char *key)
{
	struct shmkv_keyref ref;

	tu_assert_ok(shmkv_key_prepare(tu_kv, &ref, key, strlen(key)));
	return ref;
}

Test(keyref, commands_on_a_prepared_key_behave_as_the_plain_ones)
{
	struct shmkv_keyref ref = prepared("lock.foo");
	struct shmkv_value v = tu_value_for(tu_kv);
	int64_t n = 0;

	tu_assert_rc(shmkv_key_setnx(tu_kv, &ref, LIT("1700000000")), 1);
	tu_assert_rc(shmkv_key_setnx(tu_kv, &ref, LIT("1800000000")), 0);
	tu_assert_get_str(tu_kv, "lock.foo", "1700000000");
	tu_assert_rc(shmkv_key_getset(tu_kv, &ref, LIT("a string value"), &v),
		     1);
	tu_assert_value_str(v, "1700000000");
	tu_assert_rc(shmkv_key_get(tu_kv, &ref, &v), 1);
	tu_assert_value_str(v, "a string value");
	tu_assert_rc(shmkv_key_delifeq(tu_kv, &ref, LIT("another value")), 0);
	tu_assert_rc(shmkv_key_delifeq(tu_kv, &ref, LIT("a string value")), 1);
	tu_assert_missing_str(tu_kv, "lock.foo");
	tu_assert_ok(shmkv_key_incrby(tu_kv, &ref, 5, &n));
	cr_assert_eq(n, 5);
	tu_assert_rc(
		shmkv_key_set(tu_kv, &ref, LIT("x"), SHMKV_SET_PX, 60000, NULL),
		1);
	tu_assert_pttl_in(tu_kv, LIT("lock.foo"), 1, 60000);
	tu_assert_rc(shmkv_key_getdel(tu_kv, &ref, &v), 1);
	tu_assert_value_str(v, "x");
	tu_assert_rc(shmkv_key_del(tu_kv, &ref), 0);
	tu_assert_rc(shmkv_key_get(tu_kv, &ref, &v), 0);
}

/*
 * The remembered slot is recycled: the key is deleted, and a table with
 * no other room gives its slot to a new key. A write through the old
 * reference must land on the prepared key (re-probed and re-inserted), and
 * the new key that took the slot must keep its value.
 */
Test(keyref, notices_its_slot_was_recycled_for_another_key)
{
	struct shmkv_config cfg = tu_config(16, 16, 64, 0);
	char name[TU_NAME_CAP], k[32];
	shmkv_t *kv = tu_create(&cfg, name);
	struct shmkv_keyref ref;
	unsigned filled = 0;

	tu_assert_ok(shmkv_key_prepare(kv, &ref, LIT("victim")));
	tu_assert_rc(shmkv_key_set(kv, &ref, LIT("v1"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_key_del(kv, &ref), 1);
	/* Fill every slot: one of the new keys must take the victim's. */
	for (unsigned i = 0; i < 64; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "other", i);
		int rc = shmkv_set(kv, k, kl, k, kl, 0, 0, NULL);

		if (rc == -ENOSPC)
			break;
		tu_assert_rc(rc, 1);
		filled++;
	}
	cr_assert_eq(filled, 16, "the 16-slot table took %u keys", filled);
	/* The table is full of live keys: the prepared key has no slot. */
	tu_assert_rc(shmkv_key_set(kv, &ref, LIT("v2"), 0, 0, NULL), -ENOSPC);
	tu_assert_rc(shmkv_key_get(kv, &ref, NULL), 0);
	for (unsigned i = 0; i < filled; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "other", i);

		tu_assert_get(kv, k, kl, k, kl);
	}
	/* Room again: the reference re-probes and inserts. */
	tu_assert_rc(shmkv_del(kv, LIT("other3")), 1);
	tu_assert_rc(shmkv_key_set(kv, &ref, LIT("v3"), 0, 0, NULL), 1);
	tu_assert_get_str(kv, "victim", "v3");
	tu_assert_rc(shmkv_key_setnx(kv, &ref, LIT("v4")), 0);
	shmkv_close(kv);
	tu_assert_ok(shmkv_unlink(name));
}

Test(keyref, a_reference_prepared_for_another_handle_is_einval)
{
	shmkv_t *other = tu_open(tu_name, 0);
	struct shmkv_keyref ref = prepared("k");

	tu_assert_rc(shmkv_key_set(other, &ref, LIT("v"), 0, 0, NULL), -EINVAL);
	tu_assert_rc(shmkv_key_get(other, &ref, NULL), -EINVAL);
	tu_assert_missing_str(tu_kv, "k");
	shmkv_close(other);
}

Test(keyref, preparing_a_bad_key_fails_clearly)
{
	struct shmkv_keyref ref;
	char *long_key = tu_fill(TU_KEY_MAX + 1, 'k');

	tu_assert_rc(shmkv_key_prepare(tu_kv, &ref, long_key, TU_KEY_MAX + 1),
		     -ENAMETOOLONG);
	tu_assert_rc(shmkv_key_prepare(tu_kv, &ref, NULL, 3), -EINVAL);
	tu_assert_rc(shmkv_key_prepare(NULL, &ref, LIT("k")), -EINVAL);
	tu_assert_rc(shmkv_key_prepare(tu_kv, NULL, LIT("k")), -EINVAL);
	tu_assert_ok(shmkv_key_prepare(tu_kv, &ref, NULL, 0));
	tu_assert_rc(shmkv_key_set(tu_kv, &ref, LIT("empty key"), 0, 0, NULL),
		     1);
	tu_assert_get(tu_kv, "", 0, LIT("empty key"));
}
