/*
 * test_table.c - the table and value storage as a whole: running out of
 * slots (-ENOSPC) and of value storage (-ENOMEM) without changing anything,
 * getting both back on delete, many keys, shmkv_stats() and shmkv_scan().
 */
#include "helpers/testutil.h"
#include "helpers/value_blocks.h"

#include <stdlib.h>

TestSuite(table, .fini = tu_teardown);
TestSuite(stats, .init = tu_setup, .fini = tu_teardown);
TestSuite(scan, .init = tu_setup, .fini = tu_teardown);

static shmkv_t *create_small(uint32_t slots, uint32_t value_max,
			     uint64_t value_memory)
{
	struct shmkv_config cfg = tu_config(slots, 16, value_max, value_memory);

	tu_kv = tu_create(&cfg, tu_name);
	return tu_kv;
}

static uint64_t live_keys(shmkv_t *kv)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(kv, &st));
	return st.live_keys;
}

/* Every command that would insert @key: all must give @want. */
static void assert_inserts_fail(shmkv_t *kv, const char *key, int want)
{
	size_t kl = strlen(key);
	struct shmkv_value v = tu_value_for(kv);
	int64_t n = 0;

	tu_assert_rc(shmkv_set(kv, key, kl, LIT("v"), 0, 0, NULL), want);
	tu_assert_rc(shmkv_set(kv, key, kl, LIT("v"), SHMKV_SET_NX, 0, NULL),
		     want);
	tu_assert_rc(shmkv_set(kv, key, kl, LIT("v"), SHMKV_SET_GET, 0, &v),
		     want);
	tu_assert_rc(shmkv_setnx(kv, key, kl, LIT("v")), want);
	tu_assert_rc(shmkv_getset(kv, key, kl, LIT("v"), &v), want);
	tu_assert_rc(shmkv_incr(kv, key, kl, &n), want);
	tu_assert_rc(shmkv_decrby(kv, key, kl, 7, &n), want);
}

/* Fills the table with "key<i>" until -ENOSPC; returns how many fit. */
static unsigned fill_table(shmkv_t *kv, unsigned slots)
{
	char k[32];
	unsigned i;

	for (i = 0; i <= slots; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "key", i);
		int rc = shmkv_set(kv, k, kl, LIT("v"), 0, 0, NULL);

		if (rc == -ENOSPC)
			return i;
		cr_assert_eq(rc, 1, "SET %s: %s", k, tu_rcname(rc));
	}
	cr_assert_fail("%u keys fit in a table of %u slots", i, slots);
	return i;
}

Test(table, a_full_table_gives_enospc_and_changes_nothing)
{
	shmkv_t *kv = create_small(16, 64, 0);
	unsigned fit = fill_table(kv, 16);
	struct tu_snap *snap;
	char k[32];

	cr_assert_geq(fit, 8, "only %u keys fit in 16 slots", fit);
	cr_assert_eq(live_keys(kv), fit);
	snap = tu_snap_take(kv);
	cr_assert_eq(tu_snap_count(snap), fit);
	for (unsigned i = 100; i < 140; i++) {
		tu_fmt(k, sizeof(k), "new", i);
		assert_inserts_fail(kv, k, -ENOSPC);
	}
	tu_assert_unchanged(kv, snap);
	/* Keys already in the table need no new slot. */
	tu_assert_rc(shmkv_set(kv, LIT("key0"), LIT("changed"), 0, 0, NULL), 1);
	tu_assert_get_str(kv, "key0", "changed");
	tu_assert_missing_str(kv, "new100");
}

Test(table, a_delete_in_a_full_table_makes_room_for_a_new_key)
{
	shmkv_t *kv = create_small(16, 64, 0);
	unsigned fit = fill_table(kv, 16);

	for (unsigned round = 0; round < 50; round++) {
		char old[32], k[32];
		size_t ol = tu_fmt(old, sizeof(old), "key", round);
		size_t kl = tu_fmt(k, sizeof(k), "key", fit + round);

		tu_assert_rc(shmkv_set(kv, k, kl, LIT("v"), 0, 0, NULL),
			     -ENOSPC);
		tu_assert_rc(shmkv_del(kv, old, ol), 1);
		tu_assert_rc(shmkv_set(kv, k, kl, LIT("v"), 0, 0, NULL), 1);
	}
	cr_assert_eq(live_keys(kv), fit);
}

/* Churn through @rounds distinct keys, keeping at most @live alive, and
 * assert no insert ever finds the table full. */
static void churn(shmkv_t *kv, unsigned rounds, unsigned live)
{
	char k[32];

	for (unsigned i = 0; i < rounds; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "churn", i);
		int rc = shmkv_set(kv, k, kl, LIT("v"), 0, 0, NULL);

		cr_assert_eq(rc, 1, "SET #%u with %u live: %s", i, live,
			     tu_rcname(rc));
		if (i >= live) {
			kl = tu_fmt(k, sizeof(k), "churn", i - live);
			tu_assert_rc(shmkv_del(kv, k, kl), 1);
		}
	}
}

Test(table, deleting_gives_slots_back_over_many_distinct_keys)
{
	shmkv_t *kv = create_small(64, 64, 0);
	char k[32];

	churn(kv, 100000, 20);
	cr_assert_eq(live_keys(kv), 20);
	for (unsigned i = 100000 - 20; i < 100000; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "churn", i);

		tu_assert_get(kv, k, kl, LIT("v"));
	}
}

Test(table, every_kind_of_delete_gives_slots_back)
{
	shmkv_t *kv = create_small(64, 64, 0);
	struct shmkv_value v = tu_value_for(kv);
	char k[32];

	for (unsigned i = 0; i < 20000; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "k", i);

		tu_assert_rc(shmkv_set(kv, k, kl, LIT("12"), 0, 0, NULL), 1);
		switch (i % 4) {
		case 0:
			tu_assert_rc(shmkv_getdel(kv, k, kl, &v), 1);
			break;
		case 1:
			tu_assert_rc(shmkv_delifeq(kv, k, kl, LIT("12")), 1);
			break;
		case 2:
			tu_assert_rc(
				shmkv_expire(kv, k, kl, SHMKV_EXPIRE_SEC, 0, 0),
				1);
			break;
		default:
			tu_assert_rc(
				shmkv_getex(kv, k, kl, SHMKV_GETEX_EXAT, 1, &v),
				1);
		}
	}
	cr_assert_eq(live_keys(kv), 0);
}

/* Stores value_max-byte values under "big<i>" until -ENOMEM. */
static unsigned fill_storage(shmkv_t *kv, const char *val, size_t vlen,
			     unsigned max)
{
	char k[32];

	for (unsigned i = 0; i < max; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "big", i);
		int rc = shmkv_set(kv, k, kl, val, vlen, 0, 0, NULL);

		if (rc == -ENOMEM)
			return i;
		cr_assert_eq(rc, 1, "SET %s: %s", k, tu_rcname(rc));
	}
	cr_assert_fail("value storage never ran out after %u values", max);
	return max;
}

Test(table, exhausted_value_storage_gives_enomem_and_changes_nothing)
{
	shmkv_t *kv = create_small(256, 1024, 7 * 64 * 1024);
	char *big = tu_fill(1024, 'B'), *big2 = tu_fill(1024, 'C');
	struct shmkv_value old = tu_value_for(kv);
	unsigned fit = fill_storage(kv, big, 1024, 200);
	struct tu_snap *snap;

	cr_assert_gt(fit, 0, "not even one value of value_max fits");
	snap = tu_snap_take(kv);
	tu_assert_rc(shmkv_set(kv, LIT("fresh"), big2, 1024, 0, 0, NULL),
		     -ENOMEM);
	tu_assert_rc(shmkv_set(kv, LIT("big0"), big2, 1024, 0, 0, NULL),
		     -ENOMEM);
	tu_assert_rc(
		shmkv_set(kv, LIT("big0"), big2, 1024, SHMKV_SET_GET, 0, &old),
		-ENOMEM);
	tu_assert_rc(shmkv_set(kv, LIT("big1"), big2, 1024, SHMKV_SET_KEEPTTL,
			       0, NULL),
		     -ENOMEM);
	tu_assert_rc(shmkv_getset(kv, LIT("big0"), big2, 1024, &old), -ENOMEM);
	tu_assert_rc(shmkv_setnx(kv, LIT("fresh"), big2, 1024), -ENOMEM);
	tu_assert_unchanged(kv, snap);
	tu_assert_get(kv, LIT("big0"), big, 1024);
	tu_assert_missing(kv, LIT("fresh"));
}

/*
 * Value storage is handed out a page at a time to whichever size class
 * needs it, so a store holding values of one size only can fill nearly
 * all of value_memory with them (not an equal share per class).
 */
Test(table, one_value_size_can_use_almost_all_value_memory)
{
	const uint64_t memory = 4u << 20;
	shmkv_t *kv = create_small(8192, 1024, memory);
	char *big = tu_fill(1024, 'B');
	unsigned fit = fill_storage(kv, big, 1024, 8192);
	/* 1088-byte blocks (1048 bytes in whole cache lines): 60 to a 64 KiB
	 * page, 64 pages less the 6 kept for the classes that have none. */
	unsigned ideal = (unsigned)(memory / (64 * 1024) - 6) * (65536 / 1088);

	cr_assert_eq(fit, ideal, "%u values of 1 KiB fit in 4 MiB, expected %u",
		     fit, ideal);
}

/* A class with no page always finds one kept for it: small values still
 * fit after large ones took every page they could, whatever the order
 * (a dump restored in another order must not fail). */
Test(table, small_values_still_find_room_after_large_ones_took_the_pool)
{
	shmkv_t *kv = create_small(8192, 1024, 1u << 20);
	char *big = tu_fill(1024, 'B');
	unsigned fit = fill_storage(kv, big, 1024, 8192);
	char k[32];

	static const size_t sizes[] = { 5, 30, 100, 200, 400, 900 };
	char *val = tu_fill(1000, 's');

	cr_assert_gt(fit, 1);
	/* One value of each smaller class, with nothing deleted first. */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t kl = tu_fmt(k, sizeof(k), "small", i);

		tu_assert_rc(shmkv_set(kv, k, kl, val, sizes[i], 0, 0, NULL),
			     1);
		tu_assert_get(kv, k, kl, val, sizes[i]);
	}
}

Test(table, deleting_gives_value_storage_back)
{
	shmkv_t *kv = create_small(256, 1024, 7 * 64 * 1024);
	char *big = tu_fill(1024, 'B');
	unsigned fit = fill_storage(kv, big, 1024, 200);
	char k[32];

	for (unsigned round = 0; round < 1000; round++) {
		size_t kl = tu_fmt(k, sizeof(k), "big", round % fit);

		tu_assert_rc(shmkv_del(kv, k, kl), 1);
		tu_assert_rc(shmkv_set(kv, k, kl, big, 1024, 0, 0, NULL), 1);
	}
	/* Overwrites free the value they replace, too. Values are never
	 * written in place, so an overwrite needs one spare block. */
	cr_assert_geq(fit, 2, "only %u values fit", fit);
	tu_assert_rc(shmkv_del(kv, k, tu_fmt(k, sizeof(k), "big", fit - 1)), 1);
	for (unsigned round = 0; round < 1000; round++) {
		size_t kl = tu_fmt(k, sizeof(k), "big", round % (fit - 1));

		big[0] = (char)round;
		tu_assert_rc(shmkv_set(kv, k, kl, big, 1024, 0, 0, NULL), 1);
		tu_assert_get(kv, k, kl, big, 1024);
	}
}

Test(table, many_keys_are_all_found)
{
	struct shmkv_config cfg = tu_config(4096, 32, 256, 0);
	shmkv_t *kv = tu_kv = tu_create(&cfg, tu_name);
	const unsigned n = 3000;
	char k[32], v[300];

	for (unsigned i = 0; i < n; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "many:", i);
		size_t vl = (i * 37) % 200;

		memset(v, 'a' + i % 26, vl);
		tu_assert_rc(shmkv_set(kv, k, kl, v, vl, 0, 0, NULL), 1);
	}
	for (unsigned i = 0; i < n; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "many:", i);
		size_t vl = (i * 37) % 200;

		memset(v, 'a' + i % 26, vl);
		tu_assert_get(kv, k, kl, v, vl);
		kl = tu_fmt(k, sizeof(k), "none:", i);
		tu_assert_rc(shmkv_exists(kv, k, kl), 0);
	}
	cr_assert_eq(live_keys(kv), n);
}

Test(table, keys_of_every_length_up_to_key_max_are_distinct)
{
	struct shmkv_config cfg = tu_config(1024, 200, 64, 0);
	shmkv_t *kv = tu_kv = tu_create(&cfg, tu_name);
	char *key = tu_fill(200, 'x');
	char v[32];

	for (unsigned len = 0; len <= 200; len++) {
		size_t vl = tu_fmt(v, sizeof(v), "len", len);

		tu_assert_rc(shmkv_set(kv, key, len, v, vl, 0, 0, NULL), 1);
	}
	for (unsigned len = 0; len <= 200; len++) {
		size_t vl = tu_fmt(v, sizeof(v), "len", len);

		tu_assert_get(kv, key, len, v, vl);
	}
	tu_assert_rc(shmkv_set(kv, key, 201, LIT("v"), 0, 0, NULL),
		     -ENAMETOOLONG);
	cr_assert_eq(live_keys(kv), 201);
}

/*
 * shmkv_stats
 */

Test(stats, counts_an_empty_store)
{
	struct shmkv_stats st;
	char path[TU_PATH_CAP];

	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.slots, TU_SLOTS);
	cr_assert_eq(st.live_keys, 0);
	cr_assert_eq(st.volatile_keys, 0);
	cr_assert_eq(st.pending, 0);
	cr_assert_eq(st.corrupt, 0);
	cr_assert_eq(mp_blocks_used(&st), 0);
	cr_assert(st.classes >= 1 && st.classes <= 24, "classes %u",
		  st.classes);
	tu_shm_path(tu_name, path);
	cr_assert_eq(st.segment_bytes, (uint64_t)tu_shm_size(tu_name),
		     "segment_bytes %llu, file %s",
		     (unsigned long long)st.segment_bytes, path);
}

Test(stats, counts_live_and_volatile_keys)
{
	struct shmkv_stats st;
	char k[32];

	tu_populate(tu_kv, 99); /* 33 of them with a TTL */
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.live_keys, 99, "live_keys %llu",
		     (unsigned long long)st.live_keys);
	cr_assert_eq(st.volatile_keys, 33, "volatile_keys %llu",
		     (unsigned long long)st.volatile_keys);
	for (unsigned i = 0; i < 30; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "base", i);

		tu_assert_rc(shmkv_del(tu_kv, k, kl), 1);
	}
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.live_keys, 69);
	cr_assert_eq(st.volatile_keys, 23);
	cr_assert_eq(st.pending, 0);
	cr_assert_eq(st.corrupt, 0);
	cr_assert_leq(st.live_keys + st.tombstones + st.pending, st.slots);
	cr_assert(st.longest_probe <= tu_get_config(tu_kv).probe_limit,
		  "longest_probe %u", st.longest_probe);
}

Test(stats, counts_value_blocks_taken_and_given_back)
{
	struct shmkv_stats st;
	char *val = tu_fill(500, 'v');
	uint64_t before;
	char k[32];

	tu_assert_ok(shmkv_stats(tu_kv, &st));
	before = mp_blocks_used(&st);
	for (unsigned i = 0; i < 10; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "v", i);

		tu_assert_rc(shmkv_set(tu_kv, k, kl, val, 500, 0, 0, NULL), 1);
	}
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_geq(mp_blocks_used(&st), before + 10);
	for (unsigned i = 0; i < 10; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "v", i);

		tu_assert_rc(shmkv_set(tu_kv, k, kl, val, 400, 0, 0, NULL), 1);
		tu_assert_rc(shmkv_del(tu_kv, k, kl), 1);
	}
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(mp_blocks_used(&st), before, "%llu blocks leaked",
		     (unsigned long long)(mp_blocks_used(&st) - before));
	for (uint32_t c = 0; c < st.classes && c < 24; c++)
		cr_assert_leq(st.cls[c].used, st.cls[c].blocks);
}

/*
 * shmkv_scan
 */

struct seen {
	unsigned *count;  /* visits per "scan<i>" key */
	unsigned n;	  /* keys "scan0" .. "scan<n-1>" */
	unsigned foreign; /* visits of keys not of that form */
	unsigned calls;
	unsigned stop_at; /* return 7 at this call (0: never) */
};

static int record_key(const void *key, size_t klen, void *arg)
{
	struct seen *s = arg;
	char buf[32];
	char *end;
	unsigned long i;

	s->calls++;
	if (klen < 5 || klen >= sizeof(buf) || memcmp(key, "scan", 4)) {
		s->foreign++;
	} else {
		memcpy(buf, (const char *)key + 4, klen - 4);
		buf[klen - 4] = '\0';
		i = strtoul(buf, &end, 10);
		if (*end || i >= s->n)
			s->foreign++;
		else
			s->count[i]++;
	}
	return s->stop_at && s->calls == s->stop_at ? 7 : 0;
}

static void put_scan_keys(unsigned n)
{
	char k[32];

	for (unsigned i = 0; i < n; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "scan", i);

		tu_assert_rc(shmkv_set(tu_kv, k, kl, LIT("v"), 0, 0, NULL), 1);
	}
}

/* Scans the whole store @count slots at a time; returns the calls made. */
static unsigned scan_all(struct seen *s, uint32_t count)
{
	uint64_t cursor = 0, next = 0;
	unsigned calls = 0;

	do {
		tu_assert_ok(
			shmkv_scan(tu_kv, cursor, count, record_key, s, &next));
		cursor = next;
		cr_assert_lt(++calls, 10 * TU_SLOTS, "scan never completes");
	} while (cursor != 0);
	return calls;
}

Test(scan, visits_every_live_key_at_least_once)
{
	unsigned count[600] = { 0 };
	struct seen s = { count, 600, 0, 0, 0 };
	char k[32];

	put_scan_keys(600);
	for (unsigned i = 0; i < 600; i += 6) {
		size_t kl = tu_fmt(k, sizeof(k), "scan", i);

		tu_assert_rc(shmkv_del(tu_kv, k, kl), 1);
	}
	scan_all(&s, 10);
	for (unsigned i = 0; i < 600; i++) {
		if (i % 6 == 0)
			cr_assert_eq(count[i], 0, "deleted scan%u visited", i);
		else
			cr_assert_geq(count[i], 1, "scan%u never visited", i);
	}
	cr_assert_eq(s.foreign, 0, "%u visits of keys never set", s.foreign);
}

Test(scan, finds_nothing_in_an_empty_store)
{
	struct seen s = { NULL, 0, 0, 0, 0 };

	scan_all(&s, 64);
	cr_assert_eq(s.calls, 0);
}

Test(scan, completes_in_one_call_when_count_covers_the_table)
{
	unsigned count[50] = { 0 };
	struct seen s = { count, 50, 0, 0, 0 };
	uint64_t next = 1;

	put_scan_keys(50);
	tu_assert_ok(shmkv_scan(tu_kv, 0, TU_SLOTS, record_key, &s, &next));
	cr_assert_eq(next, 0, "next cursor %llu", (unsigned long long)next);
	for (unsigned i = 0; i < 50; i++)
		cr_assert_geq(count[i], 1, "scan%u never visited", i);
}

Test(scan, stops_and_returns_what_the_callback_returned)
{
	unsigned count[50] = { 0 };
	struct seen s = { count, 50, 0, 0, 3 };
	uint64_t next = 0;

	put_scan_keys(50);
	tu_assert_rc(shmkv_scan(tu_kv, 0, TU_SLOTS, record_key, &s, &next), 7);
	cr_assert_eq(s.calls, 3, "callback called %u times", s.calls);
}

Test(scan, visits_keys_present_throughout_despite_changes_between_calls)
{
	unsigned count[300] = { 0 };
	struct seen s = { count, 300, 0, 0, 0 };
	uint64_t cursor = 0, next = 0;
	unsigned calls = 0;
	char k[32];

	put_scan_keys(200);
	do {
		size_t kl;

		tu_assert_ok(
			shmkv_scan(tu_kv, cursor, 16, record_key, &s, &next));
		cursor = next;
		/* Churn between calls: new keys come, odd old keys go. */
		kl = tu_fmt(k, sizeof(k), "scan", 200 + calls % 100);
		tu_assert_rc(shmkv_set(tu_kv, k, kl, LIT("v"), 0, 0, NULL), 1);
		if (calls < 100) {
			kl = tu_fmt(k, sizeof(k), "scan", 2 * calls + 1);
			tu_assert_rc(shmkv_del(tu_kv, k, kl), 1);
		}
		cr_assert_lt(++calls, 10 * TU_SLOTS, "scan never completes");
	} while (cursor != 0);
	for (unsigned i = 0; i < 200; i += 2)
		cr_assert_geq(count[i], 1, "scan%u never visited", i);
	cr_assert_eq(s.foreign, 0);
}

/* Keys written during the scan make the table grow (several times, past
 * growths begun and ended between two calls): every key present for the
 * whole scan is still visited, at least once. */
Test(scan, visits_every_key_while_the_table_grows_under_it)
{
	enum { KEYS = 400, MORE = 20000 };
	unsigned count[KEYS] = { 0 };
	struct seen s = { count, KEYS, 0, 0, 0 };
	uint64_t cursor = 0, next = 0;
	struct shmkv_stats before, after;
	unsigned calls = 0, more = 0;
	char k[32];

	struct shmkv_config cfg = tu_config(512, 16, 64, 0);

	tu_teardown();
	tu_kv = tu_create_growing(&cfg, tu_name);
	put_scan_keys(KEYS);
	tu_assert_ok(shmkv_stats(tu_kv, &before));
	do {
		tu_assert_ok(shmkv_scan(tu_kv, cursor, 16, record_key, &s,
					&next));
		cursor = next;
		/* Between calls: more keys, of another form (foreign). */
		for (unsigned j = 0; j < 100 && more < MORE; j++, more++) {
			size_t kl = tu_fmt(k, sizeof(k), "more", more);

			tu_assert_rc(shmkv_set(tu_kv, k, kl, LIT("v"), 0, 0,
					       NULL),
				     1);
		}
		cr_assert_lt(++calls, 100000, "scan never completes");
	} while (cursor != 0);
	tu_assert_ok(shmkv_stats(tu_kv, &after));
	cr_assert_gt(after.growths, before.growths, "the table never grew");
	for (unsigned i = 0; i < KEYS; i++)
		cr_assert_geq(count[i], 1, "scan%u never visited", i);
}

/* A probe limit of 1 (every key at its home slot): each collision grows
 * the table, every growth's copies must land (a key written during a
 * growth moves its old window first), and every key fits in the end. */
Test(table, a_probe_limit_of_one_grows_until_every_key_fits)
{
	struct shmkv_config cfg = tu_config(64, 16, 64, 0);
	struct shmkv_stats st;
	char k[32];

	cfg.probe_limit = 1;
	tu_kv = tu_create_growing(&cfg, tu_name);
	for (unsigned i = 0; i < 300; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "key", i);

		tu_assert_rc(shmkv_set(tu_kv, k, kl, LIT("v"), 0, 0, NULL), 1);
	}
	for (unsigned i = 0; i < 300; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "key", i);

		tu_assert_get_(tu_kv, k, kl, "v", 1);
	}
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.live_keys, 300);
	cr_assert_geq(st.growths, 3, "%llu growths",
		      (unsigned long long)st.growths);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}
