/*
 * test_expire.c - a TTL given to an existing key: EXPIRE PEXPIRE EXPIREAT
 * PEXPIREAT with NX XX GT LT, and the store's clock that deadlines are
 * kept in (expire_clock). Redis 7 is the reference; see helpers/ttl.h for
 * how TTLs are asserted. A TTL set by a write (SET, GETEX, INCR) is tested
 * in test_expire_set.c; reading a TTL, PERSIST and the expiry itself (lazy
 * and swept) in test_ttl.c.
 */
#include <time.h>

#include "helpers/testutil.h"
#include "helpers/ttl.h"
#include "internal.h"

TestSuite(expire, .init = tu_setup, .fini = tu_teardown);
TestSuite(expire_clock, .init = tu_setup, .fini = tu_teardown);

/*
 * EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT
 */

Test(expire, returns_zero_for_a_missing_key_in_every_unit)
{
	int64_t future_s = tu_now_ms() / 1000 + 100;

	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_SEC, 0, 100),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_MSEC, 0, 100),
		     0);
	tu_assert_rc(
		shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_SEC, 0, future_s),
		0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_MSEC, 0,
				  future_s * 1000),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_SEC, 0, 0), 0);
	tu_assert_missing(tu_kv, LIT("k"));
}

Test(expire, sets_a_ttl_in_each_unit_and_keeps_the_value)
{
	int64_t now = tu_now_ms();

	ttl_set_plain("s", "1");
	ttl_set_plain("ms", "2");
	ttl_set_plain("at", "3");
	ttl_set_plain("pat", "4");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("s"), SHMKV_EXPIRE_SEC, 0, 100),
		     1);
	tu_assert_rc(
		shmkv_expire(tu_kv, LIT("ms"), SHMKV_EXPIRE_MSEC, 0, 100000),
		1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("at"), SHMKV_EXPIRE_AT_SEC, 0,
				  now / 1000 + 100),
		     1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("pat"), SHMKV_EXPIRE_AT_MSEC, 0,
				  now + 100000),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("s"), 50000, 100000);
	tu_assert_pttl_in(tu_kv, LIT("ms"), 50000, 100000);
	tu_assert_pttl_in(tu_kv, LIT("at"), 50000, 101000);
	/* Up to 5 ms of clock-offset lag: see getex's PXAT test. */
	tu_assert_pttl_in(tu_kv, LIT("pat"), 50000, 100005);
	tu_assert_get_str(tu_kv, "s", "1");
	tu_assert_get_str(tu_kv, "pat", "4");
}

Test(expire, replaces_an_existing_ttl)
{
	ttl_set_ms("k", "v", HOUR_MS);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_SEC, 0, 100),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("k"), 50000, 100000);
}

Test(expire, a_deadline_at_or_before_now_deletes_the_key)
{
	static const struct {
		int64_t t;
		enum shmkv_expire_unit unit;
	} past[] = {
		{ 0, SHMKV_EXPIRE_SEC },
		{ -5, SHMKV_EXPIRE_SEC },
		{ 0, SHMKV_EXPIRE_MSEC },
		{ INT64_MIN, SHMKV_EXPIRE_MSEC },
		{ 1, SHMKV_EXPIRE_AT_SEC },
		{ -1, SHMKV_EXPIRE_AT_SEC },
		{ 0, SHMKV_EXPIRE_AT_MSEC },
		{ INT64_MIN, SHMKV_EXPIRE_AT_MSEC },
	};

	for (size_t i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
		cr_log_info("t %lld unit %d", (long long)past[i].t,
			    past[i].unit);
		ttl_set_ms("k", "v", HOUR_MS);
		ttl_set_plain("p", "v");
		tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), past[i].unit, 0,
					  past[i].t),
			     1);
		tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), past[i].unit, 0,
					  past[i].t),
			     1);
		tu_assert_missing(tu_kv, LIT("k"));
		tu_assert_missing(tu_kv, LIT("p"));
	}
}

/* Redis's checkAlreadyExpired (when <= now) for the EXPIRE family: a
 * deadline of exactly now deletes at once; one ms later is a TTL. */
Test(expire, a_deadline_of_exactly_now_deletes_and_one_ms_later_does_not)
{
	int64_t now = ttl_freeze();

	ttl_set_ms("k", "v", HOUR_MS);
	tu_assert_rc(
		shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_MSEC, 0, now), 1);
	tu_assert_missing(tu_kv, LIT("k"));
	ttl_set_plain("k", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_SEC, 0,
				  now / 1000),
		     1);
	tu_assert_missing(tu_kv, LIT("k"));
	ttl_set_plain("k", "v");
	tu_assert_rc(
		shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_MSEC, 0, now + 1),
		1);
	tu_assert_pttl_is(tu_kv, LIT("k"), 1);
	ttl_advance(1);
	tu_assert_pttl_is(tu_kv, LIT("k"), 0);
	tu_assert_get_str(tu_kv, "k", "v");
	ttl_advance(1);
	tu_assert_missing(tu_kv, LIT("k"));
}

Test(expire, times_that_overflow_are_einval_and_change_nothing)
{
	static const struct {
		int64_t t;
		enum shmkv_expire_unit unit;
	} bad[] = {
		{ INT64_MAX, SHMKV_EXPIRE_SEC },
		{ INT64_MAX / 1000 + 1, SHMKV_EXPIRE_SEC },
		{ -INT64_MAX, SHMKV_EXPIRE_SEC },
		{ INT64_MIN / 1000 - 1, SHMKV_EXPIRE_SEC },
		{ INT64_MAX / 1000, SHMKV_EXPIRE_SEC }, /* + now overflows */
		{ INT64_MAX, SHMKV_EXPIRE_MSEC },
		{ INT64_MAX - 1000, SHMKV_EXPIRE_MSEC },
		{ INT64_MAX, SHMKV_EXPIRE_AT_SEC },
		{ INT64_MIN, SHMKV_EXPIRE_AT_SEC },
	};
	struct tu_snap *snap;

	tu_populate(tu_kv, 10);
	snap = tu_snap_take(tu_kv);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_log_info("t %lld unit %d", (long long)bad[i].t, bad[i].unit);
		tu_assert_rc(shmkv_expire(tu_kv, LIT("base0"), bad[i].unit, 0,
					  bad[i].t),
			     -EINVAL);
		tu_assert_rc(shmkv_expire(tu_kv, LIT("base1"), bad[i].unit, 0,
					  bad[i].t),
			     -EINVAL);
		tu_assert_rc(shmkv_expire(tu_kv, LIT("missing"), bad[i].unit, 0,
					  bad[i].t),
			     -EINVAL);
	}
	tu_assert_unchanged(tu_kv, snap);
}

Test(expire, pexpireat_int64_max_is_accepted)
{
	int64_t before = tu_now_ms(), after;

	ttl_set_plain("k", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_MSEC, 0,
				  INT64_MAX),
		     1);
	after = tu_now_ms();
	tu_assert_pttl_in(tu_kv, LIT("k"), INT64_MAX - after - 1000,
			  INT64_MAX - before + 1000);
}

Test(expire, incompatible_or_unknown_options_are_einval)
{
	static const unsigned bad[] = {
		SHMKV_EXPIRE_NX | SHMKV_EXPIRE_XX,
		SHMKV_EXPIRE_NX | SHMKV_EXPIRE_GT,
		SHMKV_EXPIRE_NX | SHMKV_EXPIRE_LT,
		SHMKV_EXPIRE_GT | SHMKV_EXPIRE_LT,
		SHMKV_EXPIRE_XX | SHMKV_EXPIRE_GT | SHMKV_EXPIRE_LT,
		1u << 4,
		1u << 31,
	};
	struct tu_snap *snap;

	tu_populate(tu_kv, 10);
	snap = tu_snap_take(tu_kv);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_log_info("flags %#x", bad[i]);
		tu_assert_rc(shmkv_expire(tu_kv, LIT("base0"), SHMKV_EXPIRE_SEC,
					  bad[i], 10),
			     -EINVAL);
		tu_assert_rc(shmkv_expire(tu_kv, LIT("base1"), SHMKV_EXPIRE_SEC,
					  bad[i], 10),
			     -EINVAL);
		tu_assert_rc(shmkv_expire(tu_kv, LIT("missing"),
					  SHMKV_EXPIRE_SEC, bad[i], 10),
			     -EINVAL);
	}
	tu_assert_rc(shmkv_expire(tu_kv, LIT("base1"),
				  (enum shmkv_expire_unit)4, 0, 10),
		     -EINVAL);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("base1"),
				  (enum shmkv_expire_unit) - 1, 0, 10),
		     -EINVAL);
	tu_assert_unchanged(tu_kv, snap);
}

Test(expire, nx_sets_only_a_key_without_ttl)
{
	ttl_set_plain("p", "v");
	ttl_set_ms("t", "v", HOUR_MS);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_NX, 100),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("p"), 50000, 100000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_NX, 100),
		     0);
	tu_assert_pttl_in(tu_kv, LIT("t"), HOUR_MS / 2, HOUR_MS);
}

Test(expire, xx_sets_only_a_key_with_a_ttl)
{
	ttl_set_plain("p", "v");
	ttl_set_ms("t", "v", HOUR_MS);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX, 100),
		     0);
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX, 100),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("t"), 50000, 100000);
}

Test(expire, gt_treats_no_ttl_as_infinite_and_never_shortens)
{
	ttl_set_plain("p", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_GT, 100),
		     0);
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);

	ttl_set_ms("t", "v", 100000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_GT, 50),
		     0);
	tu_assert_pttl_in(tu_kv, LIT("t"), 60000, 100000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_GT, 200),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("t"), 150000, 200000);
}

Test(expire, lt_treats_no_ttl_as_infinite_and_never_lengthens)
{
	ttl_set_plain("p", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_LT, 200),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("p"), 150000, 200000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_LT, 300),
		     0);
	tu_assert_pttl_in(tu_kv, LIT("p"), 150000, 200000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_LT, 100),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("p"), 50000, 100000);
}

Test(expire, gt_and_lt_fail_on_an_equal_deadline)
{
	int64_t at = tu_now_ms() + 100000;

	ttl_set_plain("k", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_MSEC, 0, at),
		     1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_MSEC,
				  SHMKV_EXPIRE_GT, at),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_MSEC,
				  SHMKV_EXPIRE_LT, at),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_MSEC,
				  SHMKV_EXPIRE_GT, at + 1),
		     1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_MSEC,
				  SHMKV_EXPIRE_LT, at),
		     1);
}

Test(expire, xx_with_gt_needs_a_ttl_and_a_later_deadline)
{
	ttl_set_plain("p", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX | SHMKV_EXPIRE_GT, 100),
		     0);
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);
	ttl_set_ms("t", "v", 100000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX | SHMKV_EXPIRE_GT, 200),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("t"), 150000, 200000);
}

Test(expire, xx_with_lt_needs_a_ttl_and_an_earlier_deadline)
{
	ttl_set_plain("p", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX | SHMKV_EXPIRE_LT, 100),
		     0);
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);
	ttl_set_ms("t", "v", 200000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX | SHMKV_EXPIRE_LT, 100),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("t"), 50000, 100000);
}

/* Redis checks the condition before deleting for a past deadline. */
Test(expire, a_failed_condition_keeps_the_key_even_for_a_past_deadline)
{
	ttl_set_plain("p", "v");
	ttl_set_ms("t", "v", HOUR_MS);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_GT, -1),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX, -1),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_GT, -1),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_NX, -1),
		     0);
	tu_assert_get_str(tu_kv, "p", "v");
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);
	tu_assert_get_str(tu_kv, "t", "v");
	tu_assert_pttl_in(tu_kv, LIT("t"), HOUR_MS / 2, HOUR_MS);
}

Test(expire, a_met_condition_with_a_past_deadline_deletes)
{
	ttl_set_plain("p", "v");
	ttl_set_ms("t", "v", HOUR_MS);
	ttl_set_plain("n", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_LT, -1),
		     1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), SHMKV_EXPIRE_MSEC,
				  SHMKV_EXPIRE_XX | SHMKV_EXPIRE_LT, 0),
		     1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("n"), SHMKV_EXPIRE_AT_SEC,
				  SHMKV_EXPIRE_NX, 1),
		     1);
	tu_assert_missing(tu_kv, LIT("p"));
	tu_assert_missing(tu_kv, LIT("t"));
	tu_assert_missing(tu_kv, LIT("n"));
}

Test(expire, pexpire_expires_the_key)
{
	ttl_set_plain("k", "v");
	tu_assert_rc(
		shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_MSEC, 0, SHORT_MS),
		1);
	tu_sleep_ms(PAST_SHORT_MS);
	tu_assert_missing(tu_kv, LIT("k"));
}

/*
 * Clocks and offsets at the edges: each must come out sane (and, under
 * UBSan, without a signed overflow on the way).
 */

static int64_t *header_offset(void)
{
	return &((struct shmkv_header_shm *)tu_kv->base)->clock_offset_ms;
}

/* Unix ms minus CLOCK_BOOTTIME ms, as the library would compute it. */
static int64_t real_offset(void)
{
	struct timespec u, b;

	clock_gettime(CLOCK_REALTIME, &u);
	clock_gettime(CLOCK_BOOTTIME, &b);
	return ((int64_t)u.tv_sec - b.tv_sec) * 1000 +
	       (u.tv_nsec / 1000000 - b.tv_nsec / 1000000);
}

Test(expire_clock, a_corrupt_clock_offset_in_the_header_is_resynced)
{
	static const int64_t bad[] = {
		INT64_MIN,	     INT64_MIN + 1,	  INT64_MAX,
		INT64_MAX - 1,	     -(INT64_C(1) << 62), INT64_C(1) << 62,
		-(INT64_C(1) << 44), INT64_C(1) << 44,
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t now, off;

		cr_log_info("offset %lld", (long long)bad[i]);
		*header_offset() = bad[i];
		now = tu_now_ms();
		tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"),
				       SHMKV_SET_PXAT, now + 60000, NULL),
			     1);
		tu_assert_pttl_in(tu_kv, LIT("k"), 50000, 60000);
		off = *header_offset() - real_offset();
		cr_assert(off >= -1000 && off <= 1000,
			  "offset %lld from the clocks' after a resync",
			  (long long)off);
		*header_offset() = bad[i];
		tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_MSEC,
					  0, INT64_MAX),
			     1);
		tu_assert_pttl_in(tu_kv, LIT("k"), INT64_C(1) << 62, INT64_MAX);
		*header_offset() = bad[i];
		tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_SEC,
					  0, now / 1000 + 100),
			     1);
		tu_assert_pttl_in(tu_kv, LIT("k"), 90000, 101000);
	}
}

/* A host without a real-time clock boots in 1970: CLOCK_BOOTTIME is then
 * ahead of the wall clock, and the offset is negative. The largest times
 * Redis accepts end at the largest deadline instead of wrapping. */
Test(expire_clock, boot_time_ahead_of_wall_time_saturates_far_deadlines)
{
	const int64_t unix_ms = 1000, rel_max = INT64_MAX - unix_ms;
	struct shmkv_value v = tu_value_for(tu_kv);
	int64_t sec = 0;

	shmkv__fake_unix_ms = unix_ms;
	shmkv__fake_now_ms = INT64_C(1000000000); /* up 11.6 days */
	ttl_set_plain("a", "v");
	ttl_set_plain("g", "v");
	ttl_set_plain("x", "v");
	tu_assert_rc(
		shmkv_expire(tu_kv, LIT("a"), SHMKV_EXPIRE_MSEC, 0, rel_max),
		1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("s"), LIT("v"), SHMKV_SET_PX, rel_max,
			       NULL),
		     1);
	tu_assert_rc(shmkv_getex(tu_kv, LIT("g"), SHMKV_GETEX_PX, rel_max, &v),
		     1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("x"), SHMKV_EXPIRE_AT_MSEC, 0,
				  INT64_MAX),
		     1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("p"), LIT("v"), SHMKV_SET_PXAT,
			       INT64_MAX, NULL),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("a"), INT64_C(1) << 62, INT64_MAX);
	tu_assert_pttl_in(tu_kv, LIT("s"), INT64_C(1) << 62, INT64_MAX);
	tu_assert_pttl_in(tu_kv, LIT("g"), INT64_C(1) << 62, INT64_MAX);
	tu_assert_pttl_in(tu_kv, LIT("x"), INT64_C(1) << 62, INT64_MAX);
	tu_assert_pttl_in(tu_kv, LIT("p"), INT64_C(1) << 62, INT64_MAX);
	tu_assert_ok(shmkv_ttl(tu_kv, LIT("x"), &sec));
	cr_assert_gt(sec, INT64_C(1) << 52, "TTL %lld", (long long)sec);
}

/* Redis's own rounding, (ms + 500) / 1000, would overflow here. */
Test(expire_clock, ttl_of_a_pttl_near_int64_max_rounds_without_overflow)
{
	int64_t sec = 0;

	shmkv__fake_now_ms = 1;
	shmkv__fake_unix_ms = 2;
	ttl_set_plain("k", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_AT_MSEC, 0,
				  INT64_MAX),
		     1);
	tu_assert_pttl_is(tu_kv, LIT("k"), INT64_MAX - 2);
	tu_assert_ok(shmkv_ttl(tu_kv, LIT("k"), &sec));
	cr_assert_eq(sec, INT64_MAX / 1000 + 1, "TTL %lld", (long long)sec);
}
