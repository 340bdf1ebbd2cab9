/*
 * test_expire_set.c - a TTL set, kept or dropped by a write: SET's EX PX
 * EXAT PXAT KEEPTTL options and their errors, GETEX's modes, and what
 * plain SET, GETSET, SETNX and INCR do to a key's TTL. Redis 7 is the
 * reference; see helpers/ttl.h for how TTLs are asserted.
 * EXPIRE and friends are in test_expire.c; reading a TTL, PERSIST and the
 * expiry itself (lazy and swept) in test_ttl.c.
 */
#include "helpers/testutil.h"
#include "helpers/ttl.h"
#include "helpers/value_blocks.h"

TestSuite(set_expiry, .init = tu_setup, .fini = tu_teardown);
TestSuite(getex, .init = tu_setup, .fini = tu_teardown);
TestSuite(incr_ttl, .init = tu_setup, .fini = tu_teardown);

/*
 * SET with expiry options
 */

Test(set_expiry, ex_sets_a_ttl_in_seconds)
{
	int64_t sec = 0;

	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("v"), SHMKV_SET_EX, 100, NULL),
		1);
	tu_assert_pttl_in(tu_kv, LIT("k"), 50000, 100000);
	tu_assert_ok(shmkv_ttl(tu_kv, LIT("k"), &sec));
	cr_assert(sec >= 50 && sec <= 100, "TTL %lld", (long long)sec);
	tu_assert_get_str(tu_kv, "k", "v");
}

Test(set_expiry, px_sets_a_ttl_in_milliseconds)
{
	ttl_set_ms("k", "v", 100000);
	tu_assert_pttl_in(tu_kv, LIT("k"), 50000, 100000);
}

Test(set_expiry, exat_sets_a_deadline_in_unix_seconds)
{
	int64_t at = tu_now_ms() / 1000 + 100;

	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("v"), SHMKV_SET_EXAT, at, NULL),
		1);
	tu_assert_pttl_in(tu_kv, LIT("k"), 50000, 101000);
}

Test(set_expiry, pxat_sets_a_deadline_in_unix_milliseconds)
{
	int64_t at = tu_now_ms() + 100000;

	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("v"), SHMKV_SET_PXAT, at, NULL),
		1);
	/* Up to 5 ms of clock-offset lag: see getex's PXAT test. */
	tu_assert_pttl_in(tu_kv, LIT("k"), 50000, 100005);
}

Test(set_expiry, px_key_is_gone_once_its_time_passed)
{
	ttl_set_ms("k", "v", SHORT_MS);
	tu_sleep_ms(PAST_SHORT_MS);
	tu_assert_missing(tu_kv, LIT("k"));
}

Test(set_expiry, exat_in_the_past_returns_one_and_leaves_no_key)
{
	ttl_set_plain("k", "old");
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("v"), SHMKV_SET_EXAT, 1, NULL),
		1);
	tu_assert_missing(tu_kv, LIT("k"));
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("new"), LIT("v"), SHMKV_SET_EXAT, 1, NULL),
		1);
	tu_assert_missing(tu_kv, LIT("new"));
}

Test(set_expiry, pxat_in_the_past_with_get_returns_the_old_value)
{
	struct shmkv_value old = tu_value_for(tu_kv);

	ttl_set_plain("k", "old");
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"),
			       SHMKV_SET_PXAT | SHMKV_SET_GET, tu_now_ms() - 1,
			       &old),
		     1);
	tu_assert_value_str(old, "old");
	tu_assert_missing(tu_kv, LIT("k"));
}

/* Redis 7 SET keeps a PXAT/EXAT of exactly now (it is not yet past:
 * now > when is false), unlike EXPIREAT and GETEX, which delete. */
Test(set_expiry, pxat_and_exat_of_exactly_now_set_a_key_for_this_ms)
{
	int64_t now = ttl_freeze();

	tu_assert_rc(
		shmkv_set(tu_kv, LIT("p"), LIT("v"), SHMKV_SET_PXAT, now, NULL),
		1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("e"), LIT("v"), SHMKV_SET_EXAT,
			       now / 1000, NULL),
		     1);
	tu_assert_get_str(tu_kv, "p", "v");
	tu_assert_get_str(tu_kv, "e", "v");
	tu_assert_pttl_is(tu_kv, LIT("p"), 0);
	tu_assert_pttl_is(tu_kv, LIT("e"), 0);
	tu_assert_rc(shmkv_set(tu_kv, LIT("o"), LIT("v"), SHMKV_SET_PXAT,
			       now - 1, NULL),
		     1);
	tu_assert_missing(tu_kv, LIT("o"));
	ttl_advance(1);
	tu_assert_missing(tu_kv, LIT("p"));
	tu_assert_missing(tu_kv, LIT("e"));
}

Test(set_expiry, keepttl_at_the_deadline_keeps_the_ttl_of_the_live_key)
{
	ttl_freeze();
	ttl_set_ms("k", "v", 10);
	ttl_advance(10);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("w"), SHMKV_SET_KEEPTTL, 0,
			       NULL),
		     1);
	tu_assert_get_str(tu_kv, "k", "w");
	tu_assert_pttl_is(tu_kv, LIT("k"), 0);
	ttl_advance(1);
	tu_assert_missing(tu_kv, LIT("k"));
}

Test(set_expiry, far_future_deadlines_are_accepted)
{
	int64_t before = tu_now_ms(), after;

	tu_assert_rc(shmkv_set(tu_kv, LIT("px"), LIT("v"), SHMKV_SET_PXAT,
			       INT64_MAX, NULL),
		     1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("ex"), LIT("v"), SHMKV_SET_EXAT,
			       INT64_MAX / 1000, NULL),
		     1);
	after = tu_now_ms();
	tu_assert_pttl_in(tu_kv, LIT("px"), INT64_MAX - after - 1000,
			  INT64_MAX - before + 1000);
	tu_assert_pttl_in(tu_kv, LIT("ex"),
			  INT64_MAX / 1000 * 1000 - after - 1000,
			  INT64_MAX / 1000 * 1000 - before + 1000);
	tu_assert_get_str(tu_kv, "px", "v");
}

Test(set_expiry, invalid_expire_times_are_einval_and_change_nothing)
{
	static const struct {
		unsigned flag;
		int64_t t;
	} bad[] = {
		{ SHMKV_SET_EX, 0 },
		{ SHMKV_SET_EX, -1 },
		{ SHMKV_SET_EX, INT64_MIN },
		{ SHMKV_SET_PX, 0 },
		{ SHMKV_SET_PX, -1 },
		{ SHMKV_SET_EXAT, 0 },
		{ SHMKV_SET_EXAT, -1 },
		{ SHMKV_SET_PXAT, 0 },
		{ SHMKV_SET_PXAT, -100 },
		/* seconds * 1000 overflows */
		{ SHMKV_SET_EX, INT64_MAX },
		{ SHMKV_SET_EXAT, INT64_MAX },
		{ SHMKV_SET_EXAT, INT64_MAX / 1000 + 1 },
		/* now + t overflows */
		{ SHMKV_SET_EX, INT64_MAX / 1000 },
		{ SHMKV_SET_PX, INT64_MAX },
		{ SHMKV_SET_PX, INT64_MAX - 1000 },
	};
	struct shmkv_value old = tu_value_for(tu_kv);
	struct tu_snap *snap;

	tu_populate(tu_kv, 10);
	snap = tu_snap_take(tu_kv);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_log_info("flag %u t %lld", bad[i].flag, (long long)bad[i].t);
		tu_assert_rc(shmkv_set(tu_kv, LIT("base1"), LIT("new"),
				       bad[i].flag, bad[i].t, NULL),
			     -EINVAL);
		tu_assert_rc(shmkv_set(tu_kv, LIT("fresh"), LIT("new"),
				       bad[i].flag | SHMKV_SET_GET, bad[i].t,
				       &old),
			     -EINVAL);
	}
	tu_assert_unchanged(tu_kv, snap);
}

Test(set_expiry, two_expiry_options_are_einval)
{
	static const unsigned both[] = {
		SHMKV_SET_EX | SHMKV_SET_PX,
		SHMKV_SET_EX | SHMKV_SET_EXAT,
		SHMKV_SET_PX | SHMKV_SET_PXAT,
		SHMKV_SET_EXAT | SHMKV_SET_PXAT,
		SHMKV_SET_KEEPTTL | SHMKV_SET_EX,
		SHMKV_SET_KEEPTTL | SHMKV_SET_PX,
		SHMKV_SET_KEEPTTL | SHMKV_SET_EXAT,
		SHMKV_SET_KEEPTTL | SHMKV_SET_PXAT,
	};
	struct tu_snap *snap;

	tu_populate(tu_kv, 10);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	snap = tu_snap_take(tu_kv);
	for (size_t i = 0; i < sizeof(both) / sizeof(both[0]); i++) {
		tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("new"), both[i],
				       10000, NULL),
			     -EINVAL);
		tu_assert_rc(shmkv_set(tu_kv, LIT("new"), LIT("new"), both[i],
				       10000, NULL),
			     -EINVAL);
	}
	tu_assert_unchanged(tu_kv, snap);
}

Test(set_expiry, ignores_the_expire_argument_without_an_expiry_flag)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, -5, NULL), 1);
	tu_assert_get_str(tu_kv, "k", "v");
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
}

Test(set_expiry, plain_set_drops_the_ttl)
{
	ttl_set_ms("k", "v", HOUR_MS);
	ttl_set_plain("k", "v2");
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
}

Test(set_expiry, xx_without_an_expiry_option_drops_the_ttl)
{
	ttl_set_ms("k", "v", HOUR_MS);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("v2"), SHMKV_SET_XX, 0, NULL),
		1);
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
}

Test(set_expiry, keepttl_keeps_the_ttl_and_replaces_the_value)
{
	ttl_set_ms("k", "v", HOUR_MS);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v2"), SHMKV_SET_KEEPTTL, 0,
			       NULL),
		     1);
	tu_assert_get_str(tu_kv, "k", "v2");
	tu_assert_pttl_in(tu_kv, LIT("k"), HOUR_MS / 2, HOUR_MS);
}

Test(set_expiry, keepttl_keeps_the_ttl_across_integer_and_long_values)
{
	char *lng = tu_fill(TU_VALUE_MAX, 'x');

	ttl_set_ms("k", "v", HOUR_MS);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("42"), SHMKV_SET_KEEPTTL, 0,
			       NULL),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("k"), HOUR_MS / 2, HOUR_MS);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), lng, TU_VALUE_MAX,
			       SHMKV_SET_KEEPTTL, 0, NULL),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("k"), HOUR_MS / 2, HOUR_MS);
	tu_assert_get(tu_kv, LIT("k"), lng, TU_VALUE_MAX);
}

Test(set_expiry, keepttl_on_a_key_without_ttl_keeps_it_persistent)
{
	ttl_set_plain("k", "v");
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v2"), SHMKV_SET_KEEPTTL, 0,
			       NULL),
		     1);
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("new"), LIT("v"), SHMKV_SET_KEEPTTL,
			       0, NULL),
		     1);
	tu_assert_pttl_is(tu_kv, LIT("new"), -1);
}

Test(set_expiry, nx_with_px_sets_the_ttl_only_when_it_sets)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"),
			       SHMKV_SET_NX | SHMKV_SET_PX, 100000, NULL),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("k"), 50000, 100000);
	ttl_set_plain("p", "v");
	tu_assert_rc(shmkv_set(tu_kv, LIT("p"), LIT("v2"),
			       SHMKV_SET_NX | SHMKV_SET_PX, 100000, NULL),
		     0);
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);
}

Test(set_expiry, xx_with_ex_replaces_the_ttl)
{
	ttl_set_ms("k", "v", HOUR_MS);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v2"),
			       SHMKV_SET_XX | SHMKV_SET_EX, 100, NULL),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("k"), 50000, 100000);
}

Test(set_expiry, getset_drops_the_ttl)
{
	struct shmkv_value old = tu_value_for(tu_kv);

	ttl_set_ms("k", "v", HOUR_MS);
	tu_assert_rc(shmkv_getset(tu_kv, LIT("k"), LIT("v2"), &old), 1);
	tu_assert_value_str(old, "v");
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
}

Test(set_expiry, setnx_sets_no_ttl)
{
	tu_assert_rc(shmkv_setnx(tu_kv, LIT("k"), LIT("v")), 1);
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
}

/*
 * INCR and friends keep the TTL, as Redis does
 */

Test(incr_ttl, keeps_the_ttl)
{
	int64_t n = 0;

	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("5"), SHMKV_SET_EX, 3600, NULL),
		1);
	tu_assert_ok(shmkv_incr(tu_kv, LIT("k"), &n));
	cr_assert_eq(n, 6);
	tu_assert_pttl_in(tu_kv, LIT("k"), 1800 * 1000, 3600 * 1000);
	tu_assert_ok(shmkv_incrby(tu_kv, LIT("k"), -10, &n));
	cr_assert_eq(n, -4);
	tu_assert_pttl_in(tu_kv, LIT("k"), 1800 * 1000, 3600 * 1000);
}

Test(incr_ttl, keeps_the_ttl_across_the_inline_boundary)
{
	int64_t n = 0;

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("140737488355327"),
			       SHMKV_SET_EX, 3600, NULL),
		     1);
	tu_assert_ok(shmkv_incr(tu_kv, LIT("k"), &n));
	cr_assert_eq(n, INLINE_MAX + 1);
	tu_assert_pttl_in(tu_kv, LIT("k"), 1800 * 1000, 3600 * 1000);
	tu_assert_ok(shmkv_decr(tu_kv, LIT("k"), &n));
	cr_assert_eq(n, INLINE_MAX);
	tu_assert_pttl_in(tu_kv, LIT("k"), 1800 * 1000, 3600 * 1000);
	tu_assert_get_str(tu_kv, "k", "140737488355327");
}

Test(incr_ttl, a_key_with_ttl_still_expires_after_incr)
{
	int64_t n = 0;

	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("5"), SHMKV_SET_PX, 1000, NULL),
		1);
	tu_assert_ok(shmkv_incr(tu_kv, LIT("k"), &n));
	cr_assert_eq(n, 6);
	tu_sleep_ms(1300);
	tu_assert_missing(tu_kv, LIT("k"));
}

/*
 * GETEX
 */

Test(getex, keep_returns_the_value_and_keeps_the_ttl)
{
	struct shmkv_value v = tu_value_for(tu_kv);

	ttl_set_ms("k", "v", HOUR_MS);
	ttl_set_plain("p", "w");
	tu_assert_rc(shmkv_getex(tu_kv, LIT("k"), SHMKV_GETEX_KEEP, 0, &v), 1);
	tu_assert_value_str(v, "v");
	tu_assert_pttl_in(tu_kv, LIT("k"), HOUR_MS / 2, HOUR_MS);
	tu_assert_rc(shmkv_getex(tu_kv, LIT("p"), SHMKV_GETEX_KEEP, 0, &v), 1);
	tu_assert_value_str(v, "w");
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);
}

Test(getex, returns_zero_for_a_missing_key_and_creates_nothing)
{
	struct shmkv_value v = tu_value_for(tu_kv);

	tu_assert_rc(shmkv_getex(tu_kv, LIT("k"), SHMKV_GETEX_EX, 10, &v), 0);
	tu_assert_rc(shmkv_getex(tu_kv, LIT("k"), SHMKV_GETEX_PERSIST, 0, &v),
		     0);
	tu_assert_missing(tu_kv, LIT("k"));
}

Test(getex, ex_and_px_set_a_relative_ttl)
{
	struct shmkv_value v = tu_value_for(tu_kv);

	ttl_set_plain("a", "1");
	ttl_set_plain("b", "two");
	tu_assert_rc(shmkv_getex(tu_kv, LIT("a"), SHMKV_GETEX_EX, 100, &v), 1);
	tu_assert_value_str(v, "1");
	tu_assert_pttl_in(tu_kv, LIT("a"), 50000, 100000);
	tu_assert_rc(shmkv_getex(tu_kv, LIT("b"), SHMKV_GETEX_PX, 100000, &v),
		     1);
	tu_assert_value_str(v, "two");
	/* Absolute times map through the store's clock offset, which may
	 * lag the clocks by up to 5 ms before it is re-synced. */
	tu_assert_pttl_in(tu_kv, LIT("b"), 50000, 100005);
}

Test(getex, exat_and_pxat_set_a_deadline)
{
	struct shmkv_value v = tu_value_for(tu_kv);
	int64_t now = tu_now_ms();

	ttl_set_plain("a", "1");
	ttl_set_plain("b", "2");
	tu_assert_rc(shmkv_getex(tu_kv, LIT("a"), SHMKV_GETEX_EXAT,
				 now / 1000 + 100, &v),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("a"), 50000, 101000);
	tu_assert_rc(shmkv_getex(tu_kv, LIT("b"), SHMKV_GETEX_PXAT,
				 now + 100000, &v),
		     1);
	/* Absolute times map through the store's clock offset, which may
	 * lag the clocks by up to 5 ms before it is re-synced. */
	tu_assert_pttl_in(tu_kv, LIT("b"), 50000, 100005);
}

Test(getex, persist_removes_the_ttl)
{
	struct shmkv_value v = tu_value_for(tu_kv);

	ttl_set_ms("k", "v", HOUR_MS);
	tu_assert_rc(shmkv_getex(tu_kv, LIT("k"), SHMKV_GETEX_PERSIST, 0, &v),
		     1);
	tu_assert_value_str(v, "v");
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
	tu_assert_get_str(tu_kv, "k", "v");
}

Test(getex, a_deadline_in_the_past_returns_the_value_and_deletes)
{
	struct shmkv_value v = tu_value_for(tu_kv);

	ttl_set_ms("a", "va", HOUR_MS);
	ttl_set_plain("b", "vb");
	tu_assert_rc(shmkv_getex(tu_kv, LIT("a"), SHMKV_GETEX_EXAT, 1, &v), 1);
	tu_assert_value_str(v, "va");
	tu_assert_missing(tu_kv, LIT("a"));
	tu_assert_rc(shmkv_getex(tu_kv, LIT("b"), SHMKV_GETEX_PXAT,
				 tu_now_ms() - 1000, &v),
		     1);
	tu_assert_value_str(v, "vb");
	tu_assert_missing(tu_kv, LIT("b"));
}

/* GETEX uses checkAlreadyExpired (when <= now): PXAT of exactly now
 * returns the value and deletes. */
Test(getex, pxat_of_exactly_now_returns_the_value_and_deletes)
{
	struct shmkv_value v = tu_value_for(tu_kv);
	int64_t now = ttl_freeze();

	ttl_set_plain("k", "v");
	tu_assert_rc(shmkv_getex(tu_kv, LIT("k"), SHMKV_GETEX_PXAT, now, &v),
		     1);
	tu_assert_value_str(v, "v");
	tu_assert_missing(tu_kv, LIT("k"));
	ttl_set_plain("k", "v");
	tu_assert_rc(
		shmkv_getex(tu_kv, LIT("k"), SHMKV_GETEX_PXAT, now + 1, &v), 1);
	tu_assert_pttl_is(tu_kv, LIT("k"), 1);
}

Test(getex, invalid_times_are_einval_and_change_nothing)
{
	static const struct {
		enum shmkv_getex_mode mode;
		int64_t t;
	} bad[] = {
		{ SHMKV_GETEX_EX, 0 },
		{ SHMKV_GETEX_EX, -1 },
		{ SHMKV_GETEX_PX, 0 },
		{ SHMKV_GETEX_PX, -1 },
		{ SHMKV_GETEX_EXAT, 0 },
		{ SHMKV_GETEX_EXAT, -5 },
		{ SHMKV_GETEX_PXAT, 0 },
		{ SHMKV_GETEX_PXAT, INT64_MIN },
		{ SHMKV_GETEX_EX, INT64_MAX },
		{ SHMKV_GETEX_EX, INT64_MAX / 1000 },
		{ SHMKV_GETEX_PX, INT64_MAX },
		{ SHMKV_GETEX_EXAT, INT64_MAX },
	};
	struct shmkv_value v = tu_value_for(tu_kv);
	struct tu_snap *snap;

	tu_populate(tu_kv, 10);
	snap = tu_snap_take(tu_kv);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_log_info("mode %d t %lld", bad[i].mode, (long long)bad[i].t);
		tu_assert_rc(shmkv_getex(tu_kv, LIT("base0"), bad[i].mode,
					 bad[i].t, &v),
			     -EINVAL);
		tu_assert_rc(shmkv_getex(tu_kv, LIT("base1"), bad[i].mode,
					 bad[i].t, &v),
			     -EINVAL);
	}
	tu_assert_unchanged(tu_kv, snap);
}

Test(getex, an_unknown_mode_is_einval)
{
	struct shmkv_value v = tu_value_for(tu_kv);

	ttl_set_plain("k", "v");
	tu_assert_rc(
		shmkv_getex(tu_kv, LIT("k"), (enum shmkv_getex_mode)99, 10, &v),
		-EINVAL);
	tu_assert_rc(shmkv_getex(tu_kv, LIT("k"), (enum shmkv_getex_mode) - 1,
				 10, &v),
		     -EINVAL);
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
}

Test(getex, a_small_buffer_gives_enobufs_and_changes_no_ttl)
{
	struct shmkv_value v = tu_value(1);

	ttl_set_ms("k", "value", HOUR_MS);
	ttl_set_plain("p", "value");
	tu_assert_rc(shmkv_getex(tu_kv, LIT("k"), SHMKV_GETEX_PERSIST, 0, &v),
		     -ENOBUFS);
	cr_assert_eq(v.len, 5, "len %zu, expected 5", v.len);
	tu_assert_pttl_in(tu_kv, LIT("k"), HOUR_MS / 2, HOUR_MS);
	tu_assert_rc(shmkv_getex(tu_kv, LIT("p"), SHMKV_GETEX_EX, 100, &v),
		     -ENOBUFS);
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);
	tu_assert_rc(shmkv_getex(tu_kv, LIT("p"), SHMKV_GETEX_EXAT, 1, &v),
		     -ENOBUFS);
	tu_assert_get_str(tu_kv, "p", "value");
}
