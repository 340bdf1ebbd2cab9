/*
 * test_keyref.c - prepared keys: the shmkv_key_* commands.
 *
 * A prepared key remembers the slot its key was last found in. The
 * commands must behave exactly like the plain ones, and above all must
 * notice when that slot has been recycled for another key meanwhile, and
 * never write into it.
 */
#include "helpers/rng.h"
#include "helpers/testutil.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

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

/*
 * The race the reference's validation exists for, with real processes:
 * two processes write through prepared keys (deleting them often, so
 * their slots become tombstones) while two others churn 40 keys through a
 * 16-slot table, recycling those tombstones. Every value names its key
 * ("<key>=<n>"), so a write that landed in a slot recycled for another key
 * shows up as a key holding another key's value. Children report through
 * their exit status; the parent asserts.
 */

#define RACE_OPS 200000

static bool value_names_key(const char *val, size_t vlen, const char *key,
			    size_t klen)
{
	return vlen > klen && memcmp(val, key, klen) == 0 && val[klen] == '=';
}

static int race_check_one(shmkv_t *kv, unsigned seed)
{
	char key[16], buf[128];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	size_t kl = seed & 1 ? tu_fmt(key, sizeof(key), "c", seed % 40)
			     : tu_fmt(key, sizeof(key), "hot", seed % 2);
	int rc = shmkv_get(kv, key, kl, &v);

	return rc == 1 && !value_names_key(buf, v.len, key, kl);
}

static int race_child(const char *name, int idx)
{
	shmkv_t *kv = NULL;
	struct shmkv_keyref ref;
	char key[16], val[64];
	size_t kl = tu_fmt(key, sizeof(key), "hot", idx % 2);
	uint64_t rng = (uint64_t)getpid();
	unsigned bits, bad = 0;

	if (shmkv_open(name, 0, &kv) != 0 ||
	    shmkv_key_prepare(kv, &ref, key, kl) != 0)
		return 2;
	for (int i = 0; i < RACE_OPS; i++) {
		bits = (unsigned)rng_next(&rng);
		if (idx < 2) {
			int vl = snprintf(val, sizeof(val), "%s=%d%s", key, i,
					  i & 1 ? "-long-enough-for-a-block"
						: "");
			int rc = shmkv_key_set(kv, &ref, val, (size_t)vl, 0, 0,
					       NULL);

			bad += rc < 0 && rc != -ENOSPC;
			if (i % 3 == 0)
				bad += shmkv_key_del(kv, &ref) < 0;
		} else {
			char k2[16];
			size_t k2l = tu_fmt(k2, sizeof(k2), "c",
					    (bits >> 8) % 40);
			int vl = snprintf(val, sizeof(val), "%s=%d", k2, i);
			int rc = bits & 0x10000
					 ? shmkv_set(kv, k2, k2l, val,
						     (size_t)vl, 0, 0, NULL)
					 : shmkv_del(kv, k2, k2l);

			bad += rc < 0 && rc != -ENOSPC;
		}
		bad += race_check_one(kv, bits >> 4);
	}
	shmkv_close(kv);
	return bad ? 1 : 0;
}

Test(keyref, writes_never_land_in_a_slot_recycled_by_another_process)
{
	struct shmkv_config cfg = tu_config(16, 16, 64, 0);
	char name[TU_NAME_CAP];
	shmkv_t *kv = tu_create(&cfg, name);
	pid_t pids[4];
	int status, failed = 0;

	for (int i = 0; i < 4; i++) {
		pids[i] = fork();
		cr_assert_geq(pids[i], 0, "fork");
		if (pids[i] == 0)
			_exit(race_child(name, i));
	}
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
		failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	}
	cr_assert_eq(failed, 0,
		     "%d of 4 processes saw a foreign value or an "
		     "error",
		     failed);
	shmkv_close(kv);
	tu_assert_ok(shmkv_unlink(name));
}

/* The fast path (inline integers and absent values on a remembered slot)
 * must keep every rule of the general one. */
Test(keyref, the_fast_path_keeps_the_argument_and_handle_rules)
{
	struct shmkv_config cfg = tu_config(64, 16, 4, 0);
	char name[TU_NAME_CAP];
	shmkv_t *kv = tu_create(&cfg, name), *ro;
	struct shmkv_keyref ref, roref;

	tu_assert_ok(shmkv_key_prepare(kv, &ref, LIT("k")));
	tu_assert_rc(shmkv_key_setnx(kv, &ref, LIT("12")), 1);
	/* value_max 4: a longer integer is too long, even if the key exists */
	tu_assert_rc(shmkv_key_setnx(kv, &ref, LIT("123456")), -E2BIG);
	tu_assert_rc(shmkv_key_del(kv, &ref), 1);
	tu_assert_rc(shmkv_key_setnx(kv, &ref, LIT("123456")), -E2BIG);
	tu_assert_missing_str(kv, "k");
	tu_assert_rc(shmkv_key_setnx(kv, &ref, NULL, 3), -EINVAL);
	tu_assert_rc(shmkv_key_setnx(kv, &ref, LIT("7")), 1);
	/* A read-only handle refuses writes whatever the key holds. */
	ro = tu_open(name, SHMKV_OPEN_READONLY);
	tu_assert_ok(shmkv_key_prepare(ro, &roref, LIT("k")));
	tu_assert_rc(shmkv_key_get(ro, &roref, NULL), 1);
	tu_assert_rc(shmkv_key_setnx(ro, &roref, LIT("8")), -EROFS);
	tu_assert_rc(shmkv_key_del(ro, &roref), -EROFS);
	tu_assert_get_str(kv, "k", "7");
	/* A non-integer goes through the general path and still works. */
	tu_assert_rc(shmkv_key_del(kv, &ref), 1);
	tu_assert_rc(shmkv_key_setnx(kv, &ref, LIT("abc")), 1);
	tu_assert_rc(shmkv_key_setnx(kv, &ref, LIT("9")), 0);
	tu_assert_rc(shmkv_key_del(kv, &ref), 1);
	tu_assert_rc(shmkv_key_del(kv, &ref), 0);
	shmkv_close(ro);
	shmkv_close(kv);
	tu_assert_ok(shmkv_unlink(name));
}

/*
 * A SETNX/DEL lock through prepared keys with integer values: the fast
 * path under contention. Two processes per key take the lock, mark a
 * shared in-section flag (which must have been clear), unmark it and
 * release; one more process churns other keys through the small table so
 * that released locks' slots get recycled under the references.
 */
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/mman.h>

#define LOCK_ROUNDS 3000

struct lock_area {
	_Atomic int inside[2];
	_Atomic long overlaps;
	_Atomic long grants;
};

static int lock_child(const char *name, int idx, struct lock_area *a)
{
	shmkv_t *kv = NULL;
	struct shmkv_keyref ref;
	char key[16], val[24];
	size_t kl = tu_fmt(key, sizeof(key), "lock.", idx % 2);
	int vl = snprintf(val, sizeof(val), "%d", getpid());

	if (shmkv_open(name, 0, &kv) != 0 ||
	    shmkv_key_prepare(kv, &ref, key, kl) != 0)
		return 2;
	for (long got = 0, spins = 0; got < LOCK_ROUNDS && spins < 1L << 25;
	     spins++) {
		int rc = shmkv_key_setnx(kv, &ref, val, (size_t)vl);

		if (rc < 0)
			return 3;
		if (rc != 1) {
			/* The holder may be waiting for a core: on a loaded
			 * machine spinning alone can starve it for seconds. */
			if (spins % 64 == 63)
				nanosleep(&(struct timespec){ 0, 1000 }, NULL);
			else
				sched_yield();
			continue;
		}
		if (atomic_fetch_add(&a->inside[idx % 2], 1) != 0)
			atomic_fetch_add(&a->overlaps, 1);
		/* Hold the lock across a yield: a second holder, if the lock
		 * let one in, gets the time to show up. */
		sched_yield();
		atomic_fetch_sub(&a->inside[idx % 2], 1);
		atomic_fetch_add(&a->grants, 1);
		if (shmkv_key_del(kv, &ref) != 1)
			return 4;
		got++;
	}
	shmkv_close(kv);
	return 0;
}

static int churn_child(const char *name, struct lock_area *a)
{
	shmkv_t *kv = NULL;
	char key[16];

	if (shmkv_open(name, 0, &kv) != 0)
		return 2;
	for (unsigned i = 0;
	     atomic_load(&a->grants) < 4L * LOCK_ROUNDS && i < 1u << 26; i++) {
		/* 10 keys + 2 locks never fill the 16 slots (so a lock always
		 * finds room), yet recycle every tombstone they pass. */
		size_t kl = tu_fmt(key, sizeof(key), "churn", i % 10);

		if (i & 1)
			shmkv_set(kv, key, kl, LIT("1"), 0, 0, NULL);
		else
			shmkv_del(kv, key, kl);
	}
	shmkv_close(kv);
	return 0;
}

Test(keyref, a_setnx_lock_on_prepared_keys_excludes_under_contention)
{
	struct shmkv_config cfg = tu_config(16, 16, 64, 0);
	char name[TU_NAME_CAP];
	shmkv_t *kv = tu_create(&cfg, name);
	struct lock_area *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pids[5];
	int status, failed = 0;

	cr_assert_neq(a, MAP_FAILED);
	for (int i = 0; i < 5; i++) {
		pids[i] = fork();
		cr_assert_geq(pids[i], 0, "fork");
		if (pids[i] == 0)
			_exit(i < 4 ? lock_child(name, i, a)
				    : churn_child(name, a));
	}
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
		failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	}
	cr_assert_eq(failed, 0, "%d of 5 processes failed", failed);
	cr_assert_eq(atomic_load(&a->overlaps), 0, "%ld overlapping holders",
		     atomic_load(&a->overlaps));
	cr_assert_eq(atomic_load(&a->grants), 4L * LOCK_ROUNDS);
	munmap(a, sizeof(*a));
	shmkv_close(kv);
	tu_assert_ok(shmkv_unlink(name));
}
