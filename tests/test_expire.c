/*
 * test_expire.c - time to live: SET's EX PX EXAT PXAT KEEPTTL, GETEX's
 * modes, EXPIRE PEXPIRE EXPIREAT PEXPIREAT with NX XX GT LT, TTL and PTTL,
 * PERSIST, lazy expiry on access and active expiry with shmkv_sweep().
 *
 * Redis 7 is the reference. TTLs are asserted as ranges, never as timing
 * bounds: a key meant to expire gets 40 ms and the test sleeps 150 ms; a key
 * meant to live gets an hour, or at least 100 s.
 */
#include "helpers/testutil.h"

TestSuite(set_expiry, .init = tu_setup, .fini = tu_teardown);
TestSuite(getex, .init = tu_setup, .fini = tu_teardown);
TestSuite(expire, .init = tu_setup, .fini = tu_teardown);
TestSuite(ttl, .init = tu_setup, .fini = tu_teardown);
TestSuite(persist, .init = tu_setup, .fini = tu_teardown);
TestSuite(lazy_expiry, .init = tu_setup, .fini = tu_teardown);
TestSuite(sweep, .init = tu_setup, .fini = tu_teardown);

#define SHORT_MS      40
#define PAST_SHORT_MS 150
#define HOUR_MS	      (3600 * 1000)

static void set_ttl_ms(const char *key, const char *val, int64_t ms)
{
	tu_assert_rc(shmkv_set(tu_kv, key, strlen(key), val, strlen(val),
			       SHMKV_SET_PX, ms, NULL),
		     1);
}

static void set_plain(const char *key, const char *val)
{
	tu_assert_rc(shmkv_set(tu_kv, key, strlen(key), val, strlen(val), 0, 0,
			       NULL),
		     1);
}

static int64_t pttl_of(const char *key)
{
	int64_t ms = 0;

	tu_assert_ok(shmkv_pttl(tu_kv, key, strlen(key), &ms));
	return ms;
}

/* Redis's TTL: the PTTL rounded to the nearest second. */
static int64_t ttl_round(int64_t ms)
{
	return (ms + 500) / 1000;
}

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
	set_ttl_ms("k", "v", 100000);
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
	set_ttl_ms("k", "v", SHORT_MS);
	tu_sleep_ms(PAST_SHORT_MS);
	tu_assert_missing(tu_kv, LIT("k"));
}

Test(set_expiry, exat_in_the_past_returns_one_and_leaves_no_key)
{
	set_plain("k", "old");
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

	set_plain("k", "old");
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"),
			       SHMKV_SET_PXAT | SHMKV_SET_GET, tu_now_ms() - 1,
			       &old),
		     1 | SHMKV_SET_HAD_OLD);
	tu_assert_value_str(old, "old");
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

Test(set_expiry, plain_set_drops_the_ttl)
{
	set_ttl_ms("k", "v", HOUR_MS);
	set_plain("k", "v2");
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
}

Test(set_expiry, xx_without_an_expiry_option_drops_the_ttl)
{
	set_ttl_ms("k", "v", HOUR_MS);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("v2"), SHMKV_SET_XX, 0, NULL),
		1);
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
}

Test(set_expiry, keepttl_keeps_the_ttl_and_replaces_the_value)
{
	set_ttl_ms("k", "v", HOUR_MS);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v2"), SHMKV_SET_KEEPTTL, 0,
			       NULL),
		     1);
	tu_assert_get_str(tu_kv, "k", "v2");
	tu_assert_pttl_in(tu_kv, LIT("k"), HOUR_MS / 2, HOUR_MS);
}

Test(set_expiry, keepttl_keeps_the_ttl_across_integer_and_long_values)
{
	char *lng = tu_fill(TU_VALUE_MAX, 'x');

	set_ttl_ms("k", "v", HOUR_MS);
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
	set_plain("k", "v");
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
	set_plain("p", "v");
	tu_assert_rc(shmkv_set(tu_kv, LIT("p"), LIT("v2"),
			       SHMKV_SET_NX | SHMKV_SET_PX, 100000, NULL),
		     0);
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);
}

Test(set_expiry, xx_with_ex_replaces_the_ttl)
{
	set_ttl_ms("k", "v", HOUR_MS);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v2"),
			       SHMKV_SET_XX | SHMKV_SET_EX, 100, NULL),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("k"), 50000, 100000);
}

Test(set_expiry, getset_drops_the_ttl)
{
	struct shmkv_value old = tu_value_for(tu_kv);

	set_ttl_ms("k", "v", HOUR_MS);
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
 * GETEX
 */

Test(getex, keep_returns_the_value_and_keeps_the_ttl)
{
	struct shmkv_value v = tu_value_for(tu_kv);

	set_ttl_ms("k", "v", HOUR_MS);
	set_plain("p", "w");
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

	set_plain("a", "1");
	set_plain("b", "two");
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

	set_plain("a", "1");
	set_plain("b", "2");
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

	set_ttl_ms("k", "v", HOUR_MS);
	tu_assert_rc(shmkv_getex(tu_kv, LIT("k"), SHMKV_GETEX_PERSIST, 0, &v),
		     1);
	tu_assert_value_str(v, "v");
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
	tu_assert_get_str(tu_kv, "k", "v");
}

Test(getex, a_deadline_in_the_past_returns_the_value_and_deletes)
{
	struct shmkv_value v = tu_value_for(tu_kv);

	set_ttl_ms("a", "va", HOUR_MS);
	set_plain("b", "vb");
	tu_assert_rc(shmkv_getex(tu_kv, LIT("a"), SHMKV_GETEX_EXAT, 1, &v), 1);
	tu_assert_value_str(v, "va");
	tu_assert_missing(tu_kv, LIT("a"));
	tu_assert_rc(shmkv_getex(tu_kv, LIT("b"), SHMKV_GETEX_PXAT,
				 tu_now_ms() - 1000, &v),
		     1);
	tu_assert_value_str(v, "vb");
	tu_assert_missing(tu_kv, LIT("b"));
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

	set_plain("k", "v");
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

	set_ttl_ms("k", "value", HOUR_MS);
	set_plain("p", "value");
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

/*
 * EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT
 */

Test(expire, returns_zero_for_a_missing_key_in_every_unit)
{
	int64_t future_s = tu_now_ms() / 1000 + 100;

	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), 100, SHMKV_EXPIRE_SEC, 0),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), 100, SHMKV_EXPIRE_MSEC, 0),
		     0);
	tu_assert_rc(
		shmkv_expire(tu_kv, LIT("k"), future_s, SHMKV_EXPIRE_AT_SEC, 0),
		0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), future_s * 1000,
				  SHMKV_EXPIRE_AT_MSEC, 0),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), 0, SHMKV_EXPIRE_SEC, 0), 0);
	tu_assert_missing(tu_kv, LIT("k"));
}

Test(expire, sets_a_ttl_in_each_unit_and_keeps_the_value)
{
	int64_t now = tu_now_ms();

	set_plain("s", "1");
	set_plain("ms", "2");
	set_plain("at", "3");
	set_plain("pat", "4");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("s"), 100, SHMKV_EXPIRE_SEC, 0),
		     1);
	tu_assert_rc(
		shmkv_expire(tu_kv, LIT("ms"), 100000, SHMKV_EXPIRE_MSEC, 0),
		1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("at"), now / 1000 + 100,
				  SHMKV_EXPIRE_AT_SEC, 0),
		     1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("pat"), now + 100000,
				  SHMKV_EXPIRE_AT_MSEC, 0),
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
	set_ttl_ms("k", "v", HOUR_MS);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), 100, SHMKV_EXPIRE_SEC, 0),
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
		set_ttl_ms("k", "v", HOUR_MS);
		set_plain("p", "v");
		tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), past[i].t,
					  past[i].unit, 0),
			     1);
		tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), past[i].t,
					  past[i].unit, 0),
			     1);
		tu_assert_missing(tu_kv, LIT("k"));
		tu_assert_missing(tu_kv, LIT("p"));
	}
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
		tu_assert_rc(shmkv_expire(tu_kv, LIT("base0"), bad[i].t,
					  bad[i].unit, 0),
			     -EINVAL);
		tu_assert_rc(shmkv_expire(tu_kv, LIT("base1"), bad[i].t,
					  bad[i].unit, 0),
			     -EINVAL);
		tu_assert_rc(shmkv_expire(tu_kv, LIT("missing"), bad[i].t,
					  bad[i].unit, 0),
			     -EINVAL);
	}
	tu_assert_unchanged(tu_kv, snap);
}

Test(expire, pexpireat_int64_max_is_accepted)
{
	int64_t before = tu_now_ms(), after;

	set_plain("k", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), INT64_MAX,
				  SHMKV_EXPIRE_AT_MSEC, 0),
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
		tu_assert_rc(shmkv_expire(tu_kv, LIT("base0"), 10,
					  SHMKV_EXPIRE_SEC, bad[i]),
			     -EINVAL);
		tu_assert_rc(shmkv_expire(tu_kv, LIT("base1"), 10,
					  SHMKV_EXPIRE_SEC, bad[i]),
			     -EINVAL);
		tu_assert_rc(shmkv_expire(tu_kv, LIT("missing"), 10,
					  SHMKV_EXPIRE_SEC, bad[i]),
			     -EINVAL);
	}
	tu_assert_rc(shmkv_expire(tu_kv, LIT("base1"), 10,
				  (enum shmkv_expire_unit)4, 0),
		     -EINVAL);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("base1"), 10,
				  (enum shmkv_expire_unit) - 1, 0),
		     -EINVAL);
	tu_assert_unchanged(tu_kv, snap);
}

Test(expire, nx_sets_only_a_key_without_ttl)
{
	set_plain("p", "v");
	set_ttl_ms("t", "v", HOUR_MS);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), 100, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_NX),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("p"), 50000, 100000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), 100, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_NX),
		     0);
	tu_assert_pttl_in(tu_kv, LIT("t"), HOUR_MS / 2, HOUR_MS);
}

Test(expire, xx_sets_only_a_key_with_a_ttl)
{
	set_plain("p", "v");
	set_ttl_ms("t", "v", HOUR_MS);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), 100, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX),
		     0);
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), 100, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("t"), 50000, 100000);
}

Test(expire, gt_treats_no_ttl_as_infinite_and_never_shortens)
{
	set_plain("p", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), 100, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_GT),
		     0);
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);

	set_ttl_ms("t", "v", 100000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), 50, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_GT),
		     0);
	tu_assert_pttl_in(tu_kv, LIT("t"), 60000, 100000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), 200, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_GT),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("t"), 150000, 200000);
}

Test(expire, lt_treats_no_ttl_as_infinite_and_never_lengthens)
{
	set_plain("p", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), 200, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_LT),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("p"), 150000, 200000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), 300, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_LT),
		     0);
	tu_assert_pttl_in(tu_kv, LIT("p"), 150000, 200000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), 100, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_LT),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("p"), 50000, 100000);
}

Test(expire, gt_and_lt_fail_on_an_equal_deadline)
{
	int64_t at = tu_now_ms() + 100000;

	set_plain("k", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), at, SHMKV_EXPIRE_AT_MSEC, 0),
		     1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), at, SHMKV_EXPIRE_AT_MSEC,
				  SHMKV_EXPIRE_GT),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), at, SHMKV_EXPIRE_AT_MSEC,
				  SHMKV_EXPIRE_LT),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), at + 1, SHMKV_EXPIRE_AT_MSEC,
				  SHMKV_EXPIRE_GT),
		     1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), at, SHMKV_EXPIRE_AT_MSEC,
				  SHMKV_EXPIRE_LT),
		     1);
}

Test(expire, xx_with_gt_needs_a_ttl_and_a_later_deadline)
{
	set_plain("p", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), 100, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX | SHMKV_EXPIRE_GT),
		     0);
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);
	set_ttl_ms("t", "v", 100000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), 200, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX | SHMKV_EXPIRE_GT),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("t"), 150000, 200000);
}

Test(expire, xx_with_lt_needs_a_ttl_and_an_earlier_deadline)
{
	set_plain("p", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), 100, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX | SHMKV_EXPIRE_LT),
		     0);
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);
	set_ttl_ms("t", "v", 200000);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), 100, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX | SHMKV_EXPIRE_LT),
		     1);
	tu_assert_pttl_in(tu_kv, LIT("t"), 50000, 100000);
}

/* Redis checks the condition before deleting for a past deadline. */
Test(expire, a_failed_condition_keeps_the_key_even_for_a_past_deadline)
{
	set_plain("p", "v");
	set_ttl_ms("t", "v", HOUR_MS);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), -1, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_GT),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), -1, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), -1, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_GT),
		     0);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), -1, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_NX),
		     0);
	tu_assert_get_str(tu_kv, "p", "v");
	tu_assert_pttl_is(tu_kv, LIT("p"), -1);
	tu_assert_get_str(tu_kv, "t", "v");
	tu_assert_pttl_in(tu_kv, LIT("t"), HOUR_MS / 2, HOUR_MS);
}

Test(expire, a_met_condition_with_a_past_deadline_deletes)
{
	set_plain("p", "v");
	set_ttl_ms("t", "v", HOUR_MS);
	set_plain("n", "v");
	tu_assert_rc(shmkv_expire(tu_kv, LIT("p"), -1, SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_LT),
		     1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("t"), 0, SHMKV_EXPIRE_MSEC,
				  SHMKV_EXPIRE_XX | SHMKV_EXPIRE_LT),
		     1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("n"), 1, SHMKV_EXPIRE_AT_SEC,
				  SHMKV_EXPIRE_NX),
		     1);
	tu_assert_missing(tu_kv, LIT("p"));
	tu_assert_missing(tu_kv, LIT("t"));
	tu_assert_missing(tu_kv, LIT("n"));
}

Test(expire, pexpire_expires_the_key)
{
	set_plain("k", "v");
	tu_assert_rc(
		shmkv_expire(tu_kv, LIT("k"), SHORT_MS, SHMKV_EXPIRE_MSEC, 0),
		1);
	tu_sleep_ms(PAST_SHORT_MS);
	tu_assert_missing(tu_kv, LIT("k"));
}

/*
 * TTL and PTTL
 */

Test(ttl, is_minus_two_for_a_missing_key)
{
	int64_t sec = 0;

	tu_assert_pttl_is(tu_kv, LIT("k"), -2);
	tu_assert_ok(shmkv_ttl(tu_kv, LIT("k"), &sec));
	cr_assert_eq(sec, -2, "TTL %lld", (long long)sec);
}

Test(ttl, is_minus_one_for_a_key_without_ttl)
{
	int64_t sec = 0;

	set_plain("k", "v");
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
	tu_assert_ok(shmkv_ttl(tu_kv, LIT("k"), &sec));
	cr_assert_eq(sec, -1, "TTL %lld", (long long)sec);
}

Test(ttl, rounds_to_the_nearest_second_as_redis)
{
	static const int64_t ms[] = { 300, 700, 1400, 1600, 2600, 100700 };

	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
		int64_t p1, p2, sec = 0;

		set_ttl_ms("k", "v", ms[i]);
		p1 = pttl_of("k");
		tu_assert_ok(shmkv_ttl(tu_kv, LIT("k"), &sec));
		p2 = pttl_of("k");
		/* A short TTL may run out on a stalled machine: no timing
		 * bound is asserted, that case just proves nothing. */
		if (p2 < 0 && ms[i] < 100000)
			continue;
		cr_assert(sec >= ttl_round(p2) && sec <= ttl_round(p1),
			  "PX %lld: TTL %lld, PTTL went %lld -> %lld",
			  (long long)ms[i], (long long)sec, (long long)p1,
			  (long long)p2);
	}
}

Test(ttl, never_exceeds_the_ttl_set)
{
	set_ttl_ms("k", "v", 5000);
	tu_assert_pttl_in(tu_kv, LIT("k"), 1, 5000);
}

/*
 * PERSIST
 */

Test(persist, removes_a_ttl_and_keeps_the_value)
{
	set_ttl_ms("k", "v", HOUR_MS);
	tu_assert_rc(shmkv_persist(tu_kv, LIT("k")), 1);
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
	tu_assert_get_str(tu_kv, "k", "v");
	tu_assert_rc(shmkv_persist(tu_kv, LIT("k")), 0);
}

Test(persist, returns_zero_for_a_key_without_ttl_or_missing)
{
	set_plain("k", "v");
	tu_assert_rc(shmkv_persist(tu_kv, LIT("k")), 0);
	tu_assert_rc(shmkv_persist(tu_kv, LIT("nope")), 0);
	tu_assert_missing(tu_kv, LIT("nope"));
}

Test(persist, leaves_nothing_for_a_later_expire_xx_to_change)
{
	set_ttl_ms("k", "v", 60000);
	tu_assert_rc(shmkv_persist(tu_kv, LIT("k")), 1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), 0, SHMKV_EXPIRE_MSEC,
				  SHMKV_EXPIRE_XX),
		     0);
	tu_assert_get_str(tu_kv, "k", "v");
}

Test(persist, keeps_a_short_lived_key_alive)
{
	set_ttl_ms("k", "v", 1000);
	tu_assert_rc(shmkv_persist(tu_kv, LIT("k")), 1);
	tu_sleep_ms(1200);
	tu_assert_get_str(tu_kv, "k", "v");
}

/*
 * Lazy expiry: an expired key is absent to every command before any sweep.
 */

Test(lazy_expiry, an_expired_key_is_absent_to_readers)
{
	char *lng = tu_fill(500, 'l');
	int64_t sec = 0;

	set_ttl_ms("s", "v", SHORT_MS);
	set_ttl_ms("i", "12", SHORT_MS);
	tu_assert_rc(shmkv_set(tu_kv, LIT("l"), lng, 500, SHMKV_SET_PX,
			       SHORT_MS, NULL),
		     1);
	tu_sleep_ms(PAST_SHORT_MS);
	tu_assert_missing(tu_kv, LIT("s"));
	tu_assert_missing(tu_kv, LIT("i"));
	tu_assert_missing(tu_kv, LIT("l"));
	tu_assert_ok(shmkv_ttl(tu_kv, LIT("s"), &sec));
	cr_assert_eq(sec, -2, "TTL %lld", (long long)sec);
}

Test(lazy_expiry, an_expired_key_is_absent_to_writers)
{
	static const char *const keys[] = { "setnx",   "xx",	 "nx",
					    "getset",  "getdel", "del",
					    "delifeq", "expire", "persist",
					    "incr",    "setget", "getex" };
	struct shmkv_value v = tu_value_for(tu_kv);
	int64_t n = -1;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		set_ttl_ms(keys[i], "7", SHORT_MS);
	tu_sleep_ms(PAST_SHORT_MS);

	tu_assert_rc(shmkv_setnx(tu_kv, LIT("setnx"), LIT("a")), 1);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("xx"), LIT("a"), SHMKV_SET_XX, 0, NULL),
		0);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("nx"), LIT("a"), SHMKV_SET_NX, 0, NULL),
		1);
	tu_assert_rc(shmkv_getset(tu_kv, LIT("getset"), LIT("a"), &v), 0);
	tu_assert_rc(shmkv_getdel(tu_kv, LIT("getdel"), &v), 0);
	tu_assert_rc(shmkv_del(tu_kv, LIT("del")), 0);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("delifeq"), LIT("7")), 0);
	tu_assert_rc(
		shmkv_expire(tu_kv, LIT("expire"), 100, SHMKV_EXPIRE_SEC, 0),
		0);
	tu_assert_rc(shmkv_persist(tu_kv, LIT("persist")), 0);
	tu_assert_ok(shmkv_incr(tu_kv, LIT("incr"), &n));
	cr_assert_eq(n, 1, "INCR of an expired key gave %lld", (long long)n);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("setget"), LIT("a"), SHMKV_SET_GET, 0, &v),
		1);
	tu_assert_rc(
		shmkv_getex(tu_kv, LIT("getex"), SHMKV_GETEX_PERSIST, 0, &v),
		0);

	tu_assert_get_str(tu_kv, "setnx", "a");
	tu_assert_pttl_is(tu_kv, LIT("setnx"), -1);
	tu_assert_missing_str(tu_kv, "xx");
	tu_assert_pttl_is(tu_kv, LIT("nx"), -1);
	tu_assert_get_str(tu_kv, "getset", "a");
	tu_assert_pttl_is(tu_kv, LIT("getset"), -1);
	tu_assert_missing_str(tu_kv, "expire");
	tu_assert_missing_str(tu_kv, "persist");
	tu_assert_get_str(tu_kv, "incr", "1");
	tu_assert_pttl_is(tu_kv, LIT("incr"), -1);
	tu_assert_pttl_is(tu_kv, LIT("setget"), -1);
	tu_assert_missing_str(tu_kv, "getex");
}

Test(lazy_expiry, expired_keys_are_not_counted_or_scanned)
{
	struct shmkv_stats st;
	struct tu_snap *snap;
	char k[32];

	for (unsigned i = 0; i < 20; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "short", i);

		tu_assert_rc(shmkv_set(tu_kv, k, kl, LIT("v"), SHMKV_SET_PX,
				       SHORT_MS, NULL),
			     1);
	}
	tu_populate(tu_kv, 9); /* 3 with an hour's TTL */
	tu_sleep_ms(PAST_SHORT_MS);
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.live_keys, 9, "live_keys %llu",
		     (unsigned long long)st.live_keys);
	cr_assert_eq(st.volatile_keys, 3, "volatile_keys %llu",
		     (unsigned long long)st.volatile_keys);
	snap = tu_snap_take(tu_kv);
	cr_assert_eq(tu_snap_count(snap), 9, "scan found %zu keys",
		     tu_snap_count(snap));
}

/*
 * shmkv_sweep
 */

static uint64_t live_keys_now(void)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(tu_kv, &st));
	return st.live_keys;
}

/* Sweeps one full pass, @max_slots at a time; returns the keys deleted. */
static int sweep_pass(uint32_t max_slots)
{
	uint64_t cursor = 0;
	unsigned calls = 0;
	int total = 0;

	do {
		int rc = shmkv_sweep(tu_kv, &cursor, max_slots);

		cr_assert(rc >= 0, "shmkv_sweep: %s", tu_rcname(rc));
		total += rc;
		cr_assert_lt(++calls, 4 * TU_SLOTS, "sweep never wraps");
	} while (cursor != 0);
	return total;
}

Test(sweep, deletes_expired_keys_and_counts_them)
{
	struct shmkv_stats st;
	char k[32];

	tu_populate(tu_kv, 10);
	for (unsigned i = 0; i < 30; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "short", i);

		tu_assert_rc(shmkv_set(tu_kv, k, kl, LIT("v"), SHMKV_SET_PX,
				       SHORT_MS, NULL),
			     1);
	}
	tu_sleep_ms(PAST_SHORT_MS);
	cr_assert_eq(sweep_pass(64), 30, "a full sweep must delete all 30");
	cr_assert_eq(sweep_pass(64), 0, "a second sweep finds nothing");
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.live_keys, 10, "live_keys %llu",
		     (unsigned long long)st.live_keys);
	for (unsigned i = 0; i < 10; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "base", i);

		tu_assert_rc(shmkv_exists(tu_kv, k, kl), 1);
	}
}

Test(sweep, leaves_keys_that_have_not_expired)
{
	struct tu_snap *snap;

	tu_populate(tu_kv, 30);
	snap = tu_snap_take(tu_kv);
	cr_assert_eq(sweep_pass(TU_SLOTS), 0);
	tu_assert_unchanged(tu_kv, snap);
}

Test(sweep, cursor_advances_and_wraps_to_zero)
{
	uint64_t cursor = 0;
	unsigned calls = 0;

	do {
		tu_assert_rc(shmkv_sweep(tu_kv, &cursor, 100), 0);
		calls++;
		cr_assert_leq(calls, TU_SLOTS / 100 + 2,
			      "cursor %llu after %u calls of 100 slots",
			      (unsigned long long)cursor, calls);
	} while (cursor != 0);
	cr_assert_geq(calls, TU_SLOTS / 100,
		      "a pass of %u slots took only %u calls of 100", TU_SLOTS,
		      calls);
}

Test(sweep, frees_the_slots_of_what_it_deletes)
{
	char k[32];

	/* Many rounds of short-lived keys: without the sweep giving slots
	 * back (and lazy expiry on lookups of other keys), the table fills. */
	for (unsigned round = 0; round < 4; round++) {
		for (unsigned i = 0; i < TU_SLOTS / 2; i++) {
			size_t kl = tu_fmt(k, sizeof(k), "r",
					   round * TU_SLOTS + i);

			tu_assert_rc(shmkv_set(tu_kv, k, kl, LIT("v"),
					       SHMKV_SET_PX, SHORT_MS, NULL),
				     1);
		}
		tu_sleep_ms(PAST_SHORT_MS);
		cr_assert_leq(sweep_pass(TU_SLOTS), (int)TU_SLOTS / 2);
		cr_assert_eq(live_keys_now(), 0);
	}
}
