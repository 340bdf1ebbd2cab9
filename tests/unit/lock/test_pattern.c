/*
 * test_pattern.c - the pattern lock (the Redis SETNX page's algorithm) in
 * one process, step by step: what SETNX stores, busy and timed-out
 * attempts, release before and after the timeout, taking an expired lock
 * with GETSET, bad input, and keys that hold another kind of lock. A
 * waiter woken from another process is in test_lock_mp.c.
 */
#include <stdlib.h>
#include <time.h>

#include "helpers/testutil.h"
#include "lock_record.h"
#include "shmkv_lock.h"

TestSuite(pattern, .init = tu_setup, .fini = tu_teardown);

static struct shmkv_pattern handle(const char *name)
{
	struct shmkv_pattern pl;

	tu_assert_ok(shmkv_pattern_init(tu_kv, &pl, name));
	return pl;
}

static int64_t stored_time(const char *key)
{
	char buf[32];
	struct shmkv_value v = { .buf = buf, .cap = sizeof(buf) - 1 };

	tu_assert_rc(shmkv_get(tu_kv, key, strlen(key), &v), 1);
	buf[v.len] = '\0';
	return strtoll(buf, NULL, 10);
}

Test(pattern, setnx_stores_now_plus_timeout_plus_one_in_unix_ms)
{
	struct shmkv_pattern pl = handle("p");
	struct timespec coarse;
	int64_t before, after, expiry, margin = shmkv__coarse_margin_slow();

	/* "now" is the coarse wall clock + margin: no earlier than the coarse
	 * clock before the call (which the kernel keeps within a tick of the
	 * precise one, except under heavy VM steal: README), no later than
	 * the precise clock after it + margin. */
	clock_gettime(CLOCK_REALTIME_COARSE, &coarse);
	before = (int64_t)coarse.tv_sec * 1000 + coarse.tv_nsec / 1000000;
	tu_assert_ok(shmkv_pattern_acquire(&pl, 1000, 0, &expiry));
	after = shmkv__unix_ms();
	cr_assert_eq(stored_time("lock.p"), expiry);
	cr_assert_geq(expiry, before + margin + 1000 + 1);
	cr_assert_leq(expiry, after + margin + 1000 + 1);
}

Test(pattern, two_handles_of_one_name_are_the_same_lock)
{
	struct shmkv_pattern a = handle("p"), b = handle("p");
	int64_t expiry, other;

	tu_assert_ok(shmkv_pattern_acquire(&a, 1000, 0, &expiry));
	cr_assert_eq(stored_time("lock.p"), expiry);
	tu_assert_rc(shmkv_pattern_acquire(&b, 1000, 0, &other), -EBUSY);
	tu_assert_ok(shmkv_pattern_release(&a, expiry));
	tu_assert_rc(shmkv_pattern_release(&a, expiry), -ENOLCK);
	tu_assert_ok(shmkv_pattern_acquire(&b, 1000, 0, &other));
	tu_assert_rc(shmkv_pattern_acquire(&a, 1000, 0, &expiry), -EBUSY);
	tu_assert_ok(shmkv_pattern_release(&b, other));
}

Test(pattern, a_valid_lock_is_busy_then_times_out_and_is_left_alone)
{
	struct shmkv_pattern a = handle("p"), b = handle("p");
	int64_t expiry, other = 0;
	struct tu_snap *snap;

	tu_assert_ok(shmkv_pattern_acquire(&a, 60000, 0, &expiry));
	snap = tu_snap_take(tu_kv);
	tu_assert_rc(shmkv_pattern_acquire(&b, 60000, 0, &other), -EBUSY);
	tu_assert_rc(shmkv_pattern_acquire(&b, 60000, 12, &other), -ETIMEDOUT);
	tu_assert_unchanged(tu_kv, snap);
	cr_assert_eq(stored_time("lock.p"), expiry);
}

Test(pattern, release_deletes_and_a_second_release_finds_nothing)
{
	struct shmkv_pattern pl = handle("p");
	int64_t expiry;

	tu_assert_ok(shmkv_pattern_acquire(&pl, 60000, 0, &expiry));
	tu_assert_ok(shmkv_pattern_release(&pl, expiry));
	tu_assert_missing(tu_kv, LIT("lock.p"));
	tu_assert_rc(shmkv_pattern_release(&pl, expiry), -ENOLCK);
}

Test(pattern, release_after_the_timeout_is_refused_and_keeps_the_key)
{
	struct shmkv_pattern pl = handle("p");
	int64_t expiry;

	tu_assert_ok(shmkv_pattern_acquire(&pl, 1, 0, &expiry));
	while (shmkv__unix_ms() < expiry)
		tu_sleep_ms(1);
	tu_assert_rc(shmkv_pattern_release(&pl, expiry), -ETIMEDOUT);
	cr_assert_eq(stored_time("lock.p"), expiry);
}

Test(pattern, an_expired_lock_is_taken_with_getset)
{
	struct shmkv_pattern pl = handle("p");
	int64_t before, expiry;

	/* C3 crashed holding the lock long ago. */
	tu_assert_rc(shmkv_set(tu_kv, LIT("lock.p"), LIT("1"), 0, 0, NULL), 1);
	before = shmkv__unix_ms();
	tu_assert_ok(shmkv_pattern_acquire(&pl, 5000, 0, &expiry));
	cr_assert_geq(expiry, before + 5001);
	cr_assert_eq(stored_time("lock.p"), expiry);
	/* GETSET drops any TTL, as on the page. */
	tu_assert_pttl_is(tu_kv, LIT("lock.p"), -1);
}

Test(pattern, bad_arguments_are_refused_and_change_nothing)
{
	char *past_name = tu_fill(SHMKV_LOCK_NAME_MAX + 2, 'n');
	struct shmkv_pattern pl = handle("p"), failed;
	struct tu_snap *snap;
	int64_t e;

	past_name[SHMKV_LOCK_NAME_MAX + 1] = '\0';
	tu_populate(tu_kv, 10);
	snap = tu_snap_take(tu_kv);
	tu_assert_rc(shmkv_pattern_acquire(&pl, 0, 0, &e), -EINVAL);
	tu_assert_rc(shmkv_pattern_acquire(&pl, -1, 0, &e), -EINVAL);
	tu_assert_rc(
		shmkv_pattern_acquire(&pl, SHMKV_LOCK_LEASE_MAX + 1, 0, &e),
		-EINVAL);
	tu_assert_rc(shmkv_pattern_acquire(&pl, 10, -2, &e), -EINVAL);
	tu_assert_rc(shmkv_pattern_acquire(&pl, 10, 0, NULL), -EINVAL);
	tu_assert_rc(shmkv_pattern_acquire(NULL, 10, 0, &e), -EINVAL);
	tu_assert_rc(shmkv_pattern_release(NULL, INT64_MAX), -EINVAL);
	tu_assert_rc(shmkv_pattern_init(tu_kv, &failed, ""), -EINVAL);
	tu_assert_rc(shmkv_pattern_init(tu_kv, &failed, NULL), -EINVAL);
	tu_assert_rc(shmkv_pattern_init(NULL, &failed, "p"), -EINVAL);
	tu_assert_rc(shmkv_pattern_init(tu_kv, NULL, "p"), -EINVAL);
	tu_assert_rc(shmkv_pattern_init(tu_kv, &failed, past_name),
		     -ENAMETOOLONG);
	/* A failed init leaves a handle both calls refuse. */
	tu_assert_rc(shmkv_pattern_acquire(&failed, 10, 0, &e), -EINVAL);
	tu_assert_rc(shmkv_pattern_release(&failed, INT64_MAX), -EINVAL);
	tu_assert_unchanged(tu_kv, snap);
}

Test(pattern, read_only_handle_cannot_init_a_pattern_lock)
{
	shmkv_t *ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	struct shmkv_pattern pl;

	tu_assert_rc(shmkv_pattern_init(ro, &pl, "p"), -EROFS);
	shmkv_close(ro);
}

Test(pattern, a_value_that_is_not_a_time_is_eexist_and_left_alone)
{
	struct shmkv_pattern p = handle("p"), s = handle("s");
	struct shmkv_lock lk;
	struct tu_snap *snap;
	int64_t e;

	tu_assert_rc(shmkv_set(tu_kv, LIT("lock.p"), LIT("abc"), 0, 0, NULL),
		     1);
	snap = tu_snap_take(tu_kv);
	tu_assert_rc(shmkv_pattern_acquire(&p, 10, 0, &e), -EEXIST);
	tu_assert_unchanged(tu_kv, snap);
	/* A free safe lock ("-<token>") is not a pattern lock either. */
	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "s"));
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 10), 0);
	tu_assert_ok(shmkv_lock_release(&lk));
	tu_assert_rc(shmkv_pattern_acquire(&s, 10, 0, &e), -EEXIST);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 10), 0);
	tu_assert_rc(shmkv_pattern_acquire(&s, 10, 0, &e), -EEXIST);
}
