/*
 * test_ttl.c - a TTL read, removed and reached: TTL and PTTL, PERSIST, lazy
 * expiry on access and active expiry with shmkv_sweep(). Redis 7 is the
 * reference; see helpers/ttl.h for how TTLs are asserted. Setting a TTL is
 * tested in test_expire.c (EXPIRE and friends) and test_expire_set.c (SET,
 * GETEX and other writes).
 */
#include "helpers/testutil.h"
#include "helpers/value_blocks.h"
#include "helpers/ttl.h"

TestSuite(ttl, .init = tu_setup, .fini = tu_teardown);
TestSuite(persist, .init = tu_setup, .fini = tu_teardown);
TestSuite(lazy_expiry, .init = tu_setup, .fini = tu_teardown);
TestSuite(sweep, .init = tu_setup, .fini = tu_teardown);

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

	ttl_set_plain("k", "v");
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
	tu_assert_ok(shmkv_ttl(tu_kv, LIT("k"), &sec));
	cr_assert_eq(sec, -1, "TTL %lld", (long long)sec);
}

Test(ttl, rounds_to_the_nearest_second_as_redis)
{
	static const int64_t ms[] = { 300, 700, 1400, 1600, 2600, 100700 };

	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
		int64_t p1, p2, sec = 0;

		ttl_set_ms("k", "v", ms[i]);
		p1 = ttl_pttl_of("k");
		tu_assert_ok(shmkv_ttl(tu_kv, LIT("k"), &sec));
		p2 = ttl_pttl_of("k");
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
	ttl_set_ms("k", "v", 5000);
	tu_assert_pttl_in(tu_kv, LIT("k"), 1, 5000);
}

/*
 * PERSIST
 */

Test(persist, removes_a_ttl_and_keeps_the_value)
{
	ttl_set_ms("k", "v", HOUR_MS);
	tu_assert_rc(shmkv_persist(tu_kv, LIT("k")), 1);
	tu_assert_pttl_is(tu_kv, LIT("k"), -1);
	tu_assert_get_str(tu_kv, "k", "v");
	tu_assert_rc(shmkv_persist(tu_kv, LIT("k")), 0);
}

Test(persist, returns_zero_for_a_key_without_ttl_or_missing)
{
	ttl_set_plain("k", "v");
	tu_assert_rc(shmkv_persist(tu_kv, LIT("k")), 0);
	tu_assert_rc(shmkv_persist(tu_kv, LIT("nope")), 0);
	tu_assert_missing(tu_kv, LIT("nope"));
}

Test(persist, leaves_nothing_for_a_later_expire_xx_to_change)
{
	ttl_set_ms("k", "v", 60000);
	tu_assert_rc(shmkv_persist(tu_kv, LIT("k")), 1);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_MSEC,
				  SHMKV_EXPIRE_XX, 0),
		     0);
	tu_assert_get_str(tu_kv, "k", "v");
}

Test(persist, keeps_a_short_lived_key_alive)
{
	ttl_set_ms("k", "v", 1000);
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

	ttl_set_ms("s", "v", SHORT_MS);
	ttl_set_ms("i", "12", SHORT_MS);
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
		ttl_set_ms(keys[i], "7", SHORT_MS);
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
		shmkv_expire(tu_kv, LIT("expire"), SHMKV_EXPIRE_SEC, 0, 100),
		0);
	tu_assert_rc(shmkv_persist(tu_kv, LIT("persist")), 0);
	tu_assert_ok(shmkv_incr(tu_kv, LIT("incr"), &n));
	cr_assert_eq(n, 1, "INCR of an expired key gave %lld", (long long)n);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("setget"), LIT("a"), SHMKV_SET_GET, 0, &v),
		0); /* GET's reply: no old value */
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

/* Redis's rule (keyIsExpired: now > when): a key is still there during
 * the millisecond of its deadline, with a PTTL of 0. */
static int count_key(const void *key, size_t klen, void *arg)
{
	(void)key, (void)klen;
	++*(unsigned *)arg;
	return 0;
}

static unsigned scan_count(void)
{
	uint64_t cursor = 0;
	unsigned n = 0;

	do
		tu_assert_ok(
			shmkv_scan(tu_kv, cursor, 64, count_key, &n, &cursor));
	while (cursor != 0);
	return n;
}

Test(lazy_expiry, a_key_lives_through_its_deadline_and_is_gone_one_ms_later)
{
	struct shmkv_stats st;
	int64_t sec = -3;

	ttl_freeze();
	ttl_set_ms("s", "v", 10);
	ttl_set_ms("i", "12", 10);
	ttl_advance(10);
	tu_assert_get_str(tu_kv, "s", "v");
	tu_assert_get_str(tu_kv, "i", "12");
	tu_assert_rc(shmkv_exists(tu_kv, LIT("s")), 1);
	tu_assert_pttl_is(tu_kv, LIT("s"), 0);
	tu_assert_ok(shmkv_ttl(tu_kv, LIT("s"), &sec));
	cr_assert_eq(sec, 0, "TTL %lld", (long long)sec);
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.live_keys, 2, "live_keys %llu",
		     (unsigned long long)st.live_keys);
	cr_assert_eq(st.expired, 0);
	cr_assert_eq(scan_count(), 2);
	ttl_advance(1);
	tu_assert_missing(tu_kv, LIT("s"));
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.live_keys, 0);
	cr_assert_eq(st.expired, 1, "\"i\", not touched since, is expired");
	cr_assert_eq(scan_count(), 0);
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

Test(sweep, leaves_a_key_whose_deadline_is_now)
{
	ttl_freeze();
	ttl_set_ms("s", "v", 10);
	ttl_advance(10);
	cr_assert_eq(sweep_pass(64), 0, "swept a key at its deadline");
	tu_assert_get_str(tu_kv, "s", "v");
	ttl_advance(1);
	cr_assert_eq(sweep_pass(64), 1);
	tu_assert_missing(tu_kv, LIT("s"));
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

/* PERSIST of a small integer stores it inline again, as SET would: no
 * value storage stays taken (the torture's accounting rule). */
Test(persist, an_integer_without_ttl_goes_back_inline)
{
	struct shmkv_stats st;

	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("123"), SHMKV_SET_EX, 100, NULL),
		1);
	tu_assert_rc(shmkv_persist(tu_kv, LIT("k")), 1);
	tu_assert_get_str(tu_kv, "k", "123");
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(mp_blocks_used(&st), 0,
		     "%llu blocks still used after PERSIST",
		     (unsigned long long)mp_blocks_used(&st));
}
