/*
 * test_evict.c - eviction (src/evict.c): Redis's maxmemory policies.
 *
 * A store of one 64 KiB page per size class, fixed at that size: a value
 * of VALUE_LEN bytes takes a block of the 256-byte class, which holds
 * PER_PAGE of them, so the PER_PAGE+1st such key needs an eviction. Which
 * keys go is judged against what the policy promises, with margins that
 * its sampling (5 candidates an eviction) cannot miss by chance: under
 * LRU or LFU the keys in use survive thousands of evictions, under random
 * eviction they do not. Every test ends with shmkv_check finding nothing
 * and, where values were written, every key that reads holding its value.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/crash_value.h"
#include "helpers/slot_of.h"
#include "helpers/testutil.h"
#include "internal.h"
#include "shmkv_lock.h"

TestSuite(evict, .fini = tu_teardown);

#define SLOTS	  4096u
#define CLASSES	  7u   /* value_max 1024: 32 ... 1024, and 1088 */
#define VALUE_LEN 200u /* a block of the 256-byte class */
#define PER_PAGE  256u /* of those in a 64 KiB page */
#define HOT	  16u  /* keys in use while the others come and go */
#define CHURN	  3000u

static shmkv_t *make_store(int policy, uint32_t slots, uint32_t probe_limit)
{
	struct shmkv_config cfg;

	shmkv_config_init(&cfg);
	cfg.slots = slots;
	cfg.probe_limit = probe_limit;
	cfg.value_memory = (uint64_t)CLASSES * SHMKV_PAGE_MIN;
	cfg.evict_policy = (uint32_t)policy;
	tu_kv = tu_create(&cfg, tu_name);
	return tu_kv;
}

static size_t key_of(char *buf, const char *prefix, unsigned i)
{
	return (size_t)snprintf(buf, 32, "%s%u", prefix, i);
}

static size_t value_of(char *buf, const char *prefix, unsigned i)
{
	int n = snprintf(buf, VALUE_LEN + 1, "%s%u:", prefix, i);

	memset(buf + n, 'a' + (char)(i % 26), VALUE_LEN - (size_t)n);
	return VALUE_LEN;
}

/* SET <prefix><i> to its value, with a TTL of @ttl_s seconds if not 0. */
static int set_one(const char *prefix, unsigned i, int64_t ttl_s)
{
	char key[32], val[VALUE_LEN + 1];
	size_t kl = key_of(key, prefix, i);

	return shmkv_set(tu_kv, key, kl, val, value_of(val, prefix, i),
			 ttl_s ? SHMKV_SET_EX : 0, ttl_s, NULL);
}

static void must_set(const char *prefix, unsigned i, int64_t ttl_s)
{
	int rc = set_one(prefix, i, ttl_s);

	cr_assert_eq(rc, 1, "SET %s%u: %s", prefix, i, tu_rcname(rc));
}

/* SET i<i> to the integer i: held in the value word, no value memory. */
static void must_set_int(unsigned i)
{
	char key[32], digits[16];
	size_t kl = key_of(key, "i", i);
	int n = snprintf(digits, sizeof(digits), "%u", i);
	int rc = shmkv_set(tu_kv, key, kl, digits, (size_t)n, 0, 0, NULL);

	cr_assert_eq(rc, 1, "SET %s: %s", key, tu_rcname(rc));
}

/* Does <prefix><i> exist? If it does, it must hold its own value. */
static bool present(const char *prefix, unsigned i)
{
	char key[32], want[VALUE_LEN + 1], got[VALUE_LEN + 1];
	struct shmkv_value v = { got, sizeof(got), 0 };
	size_t kl = key_of(key, prefix, i);
	int rc = shmkv_get(tu_kv, key, kl, &v);

	cr_assert(rc == 0 || rc == 1, "GET %s: %s", key, tu_rcname(rc));
	if (rc == 0)
		return false;
	cr_assert(v.len == VALUE_LEN &&
			  memcmp(got, want, value_of(want, prefix, i)) == 0,
		  "%s holds another value", key);
	return true;
}

static unsigned count_present(const char *prefix, unsigned from,
			      unsigned to)
{
	unsigned n = 0;

	for (unsigned i = from; i < to; i++)
		n += present(prefix, i);
	return n;
}

static struct shmkv_stats stats(void)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(tu_kv, &st));
	return st;
}

/* shmkv_check finds nothing wrong. */
static void assert_clean(void)
{
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

/*
 * HOT keys written first, then CHURN new keys, each SET followed by a GET
 * of two hot keys in turn (so each is used every HOT/2 SETs, while a new
 * key is used once). Return: how many hot keys are left.
 */
static unsigned churn_around_hot_keys(void)
{
	for (unsigned i = 0; i < HOT; i++)
		must_set("hot", i, 0);
	for (unsigned i = 0; i < CHURN; i++) {
		must_set("new", i, 0);
		(void)present("hot", (2 * i) % HOT);
		(void)present("hot", (2 * i + 1) % HOT);
	}
	return count_present("hot", 0, HOT);
}

Test(evict, policies_have_redis_names_in_any_case)
{
	static const char *const names[] = {
		"noeviction",	  "allkeys-lru",     "allkeys-lfu",
		"allkeys-random", "volatile-lru",    "volatile-lfu",
		"volatile-random", "volatile-ttl",
	};

	for (int p = 0; p < 8; p++) {
		char upper[32];

		cr_assert_str_eq(shmkv_evict_policy_name(p), names[p]);
		cr_assert_eq(shmkv_evict_policy_parse(names[p]), p);
		for (size_t i = 0; i <= strlen(names[p]); i++)
			upper[i] = (char)toupper((unsigned char)names[p][i]);
		cr_assert_eq(shmkv_evict_policy_parse(upper), p);
	}
	cr_assert_eq(SHMKV_EVICT_VOLATILE_TTL, 7);
	cr_assert_null(shmkv_evict_policy_name(-1));
	cr_assert_null(shmkv_evict_policy_name(8));
	cr_assert_eq(shmkv_evict_policy_parse("allkeys-lru "), -EINVAL);
	cr_assert_eq(shmkv_evict_policy_parse("lru"), -EINVAL);
	cr_assert_eq(shmkv_evict_policy_parse(""), -EINVAL);
	cr_assert_eq(shmkv_evict_policy_parse(NULL), -EINVAL);
}

Test(evict, an_unknown_policy_is_refused_and_changes_nothing)
{
	struct shmkv_config cfg;
	char name[TU_NAME_CAP];
	shmkv_t *kv = NULL, *ro;

	shmkv_config_init(&cfg);
	cfg.slots = SLOTS;
	cfg.evict_policy = 8;
	tu_make_name(name, "bad");
	cr_assert_eq(shmkv_create(name, &cfg, &kv), -EINVAL);
	cr_assert_null(kv);
	cr_assert_eq(shmkv_open(name, 0, &kv), -ENOENT, "nothing was made");

	make_store(SHMKV_EVICT_ALLKEYS_LRU, SLOTS, 0);
	cr_assert_eq(shmkv_set_evict_policy(tu_kv, 8), -EINVAL);
	cr_assert_eq(shmkv_set_evict_policy(tu_kv, -1), -EINVAL);
	cr_assert_eq(shmkv_set_evict_policy(NULL, 1), -EINVAL);
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	cr_assert_eq(shmkv_set_evict_policy(ro, SHMKV_EVICT_NOEVICTION),
		     -EROFS);
	shmkv_close(ro);
	cr_assert_eq(stats().evict_policy, SHMKV_EVICT_ALLKEYS_LRU);
	cr_assert_eq(tu_get_config(tu_kv).evict_policy,
		     SHMKV_EVICT_ALLKEYS_LRU);
}

Test(evict, noeviction_fails_a_write_that_finds_no_room_and_evicts_nothing)
{
	unsigned i;
	int rc = 1;

	make_store(SHMKV_EVICT_NOEVICTION, SLOTS, 0);
	for (i = 0; i < CLASSES * PER_PAGE && rc == 1; i++)
		rc = set_one("k", i, 0);
	cr_assert_eq(rc, -ENOMEM, "SET %u: %s", i - 1, tu_rcname(rc));
	cr_assert_eq(stats().evicted, 0);
	cr_assert_eq(count_present("k", 0, i - 1), i - 1, "nothing went");
	cr_assert_not(present("k", i - 1), "the failed SET left nothing");
	assert_clean();
}

Test(evict, a_full_store_keeps_taking_writes_and_counts_what_it_evicted)
{
	const unsigned n = 5000;
	struct shmkv_stats st;

	make_store(SHMKV_EVICT_ALLKEYS_RANDOM, SLOTS, 0);
	for (unsigned i = 0; i < n; i++)
		must_set("k", i, 0);
	st = stats();
	/* Every SET made a new key; each one not here was evicted, once. */
	cr_assert_eq(st.live_keys + st.evicted, n, "%llu live, %llu evicted",
		     (unsigned long long)st.live_keys,
		     (unsigned long long)st.evicted);
	cr_assert_eq(count_present("k", 0, n), st.live_keys);
	/* Values of one size stay in their class: all of it is in use, and
	 * nothing else took room for them. */
	cr_assert_eq(st.live_keys, PER_PAGE);
	cr_assert_eq(st.pages, CLASSES, "the store did not grow");
	assert_clean();
}

/* Under @policy, the churn leaves (all but at most one of) the keys in
 * use. */
static void assert_keeps_keys_in_use(int policy)
{
	unsigned left;

	make_store(policy, SLOTS, 0);
	left = churn_around_hot_keys();
	cr_assert_geq(left, HOT - 1, "%s: %u of %u keys in use survived",
		      shmkv_evict_policy_name(policy), left, HOT);
	cr_assert_geq(stats().evicted, CHURN + HOT - PER_PAGE);
	assert_clean();
}

Test(evict, allkeys_lru_keeps_the_keys_in_use)
{
	assert_keeps_keys_in_use(SHMKV_EVICT_ALLKEYS_LRU);
}

Test(evict, allkeys_lfu_keeps_the_keys_in_use)
{
	assert_keeps_keys_in_use(SHMKV_EVICT_ALLKEYS_LFU);
}

/* The same with the keys in use read through prepared keys, whose
 * straight-line paths record the use after their answer (evict.h). */
Test(evict, allkeys_lru_keeps_the_keys_in_use_through_prepared_keys)
{
	struct shmkv_keyref refs[HOT];
	char keys[HOT][32], got[VALUE_LEN + 1]; /* refs keep pointers */
	unsigned left, hits = 0;

	make_store(SHMKV_EVICT_ALLKEYS_LRU, SLOTS, 0);
	for (unsigned i = 0; i < HOT; i++) {
		size_t kl = key_of(keys[i], "hot", i);

		must_set("hot", i, 0);
		tu_assert_ok(shmkv_key_prepare(tu_kv, &refs[i], keys[i], kl));
	}
	for (unsigned i = 0; i < CHURN; i++) {
		must_set("new", i, 0);
		for (unsigned j = 2 * i; j < 2 * i + 2; j++) {
			struct shmkv_value v = { got, sizeof(got), 0 };
			int rc = shmkv_key_get(tu_kv, &refs[j % HOT], &v);

			cr_assert(rc == 0 || rc == 1, "%s", tu_rcname(rc));
			hits += rc;
		}
	}
	cr_assert_geq(hits, 2 * CHURN * 9 / 10, "%u hits", hits);
	left = count_present("hot", 0, HOT);
	cr_assert_geq(left, HOT - 1, "%u of %u keys in use survived", left,
		      HOT);
	assert_clean();
}

/* The control: the same churn under random eviction loses the keys in
 * use (each survives an eviction with odds 255/256, thousands of times),
 * so the two tests above measure the policies, not the workload. */
Test(evict, allkeys_random_does_not_keep_the_keys_in_use)
{
	unsigned left;

	make_store(SHMKV_EVICT_ALLKEYS_RANDOM, SLOTS, 0);
	left = churn_around_hot_keys();
	cr_assert_leq(left, HOT / 4, "%u of %u keys in use survived", left,
		      HOT);
	assert_clean();
}

Test(evict, volatile_policies_evict_only_keys_with_a_ttl)
{
	static const int policies[] = { SHMKV_EVICT_VOLATILE_LRU,
					SHMKV_EVICT_VOLATILE_LFU,
					SHMKV_EVICT_VOLATILE_RANDOM,
					SHMKV_EVICT_VOLATILE_TTL };

	for (size_t p = 0; p < sizeof(policies) / sizeof(policies[0]); p++) {
		const unsigned kept = PER_PAGE / 2;
		unsigned i;
		int rc = 1;

		make_store(policies[p], SLOTS, 0);
		for (i = 0; i < kept; i++)
			must_set("keep", i, 0);
		for (i = 0; i < 4 * PER_PAGE; i++)
			must_set("ttl", i, 3600);
		cr_assert_eq(count_present("keep", 0, kept), kept,
			     "%s evicted a key without a TTL",
			     shmkv_evict_policy_name(policies[p]));
		/* Once no key with a TTL is left, a write fails as with
		 * noeviction, and nothing more goes. */
		for (i = 0; i < PER_PAGE && rc == 1; i++)
			rc = set_one("more", i, 0);
		cr_assert_eq(rc, -ENOMEM, "%s: %s",
			     shmkv_evict_policy_name(policies[p]),
			     tu_rcname(rc));
		cr_assert_eq(count_present("keep", 0, kept), kept);
		cr_assert_eq(count_present("ttl", 0, 4 * PER_PAGE), 0);
		assert_clean();
		tu_teardown();
	}
}

/* Keys written with TTLs that shrink as they come: volatile-ttl evicts the
 * newest (expiring first), where LRU or random would keep them. */
Test(evict, volatile_ttl_evicts_the_keys_that_expire_first)
{
	const unsigned first = PER_PAGE / 2;
	unsigned left;

	make_store(SHMKV_EVICT_VOLATILE_TTL, SLOTS, 0);
	for (unsigned i = 0; i < 2 * PER_PAGE; i++)
		must_set("t", i, 100000 - (int64_t)i * 10);
	left = count_present("t", 0, first);
	/* Random eviction would keep about 37% of them. */
	cr_assert_geq(left, first * 3 / 4, "%u of the %u longest TTLs left",
		      left, first);
	assert_clean();
}

/* A table of 64 slots and a probe window of all of them: integers need no
 * value memory, so every new key past the 64th evicts from its window. */
Test(evict, a_full_probe_window_evicts_from_it)
{
	const unsigned n = 2000;
	struct shmkv_stats st;

	make_store(SHMKV_EVICT_ALLKEYS_LRU, 64, 64);
	for (unsigned i = 0; i < n; i++)
		must_set_int(i);
	st = stats();
	cr_assert_leq(st.live_keys, 64);
	cr_assert_eq(st.live_keys + st.evicted, n);
	assert_clean();
}

Test(evict, lock_keys_are_never_evicted)
{
	struct shmkv_lock lk;
	struct shmkv_pattern pl;
	int64_t expiry;

	make_store(SHMKV_EVICT_ALLKEYS_RANDOM, 64, 64);
	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "safe"));
	cr_assert_geq(shmkv_lock_try_acquire(&lk, 600000), 0);
	tu_assert_ok(shmkv_pattern_init(tu_kv, &pl, "pattern"));
	tu_assert_ok(shmkv_pattern_acquire(&pl, 600000, 0, &expiry));
	for (unsigned i = 0; i < 5000; i++)
		must_set_int(i);
	cr_assert_geq(stats().evicted, 5000 - 64);
	cr_assert_eq(shmkv_lock_held(&lk), 1);
	cr_assert_eq(shmkv_exists(tu_kv, "lock.pattern", 12), 1);
	tu_assert_ok(shmkv_lock_release(&lk));
	tu_assert_ok(shmkv_pattern_release(&pl, expiry));
	assert_clean();
}

/* As in Redis, a key starts at LFU_INIT_VAL (5): the SET that creates it
 * is no use of it; the first GET raises a counter of 5 for sure. */
Test(evict, a_new_lfu_key_starts_at_five_and_its_first_use_counts)
{
	make_store(SHMKV_EVICT_ALLKEYS_LFU, SLOTS, 0);
	must_set("k", 0, 0);
	cr_assert_eq(tu_slot_of(tu_kv, "k0")->access >> 8, 5);
	cr_assert(present("k", 0));
	cr_assert_eq(tu_slot_of(tu_kv, "k0")->access >> 8, 6);
}

/* A read-only handle reads an LRU store (its uses are not recorded: its
 * mapping cannot be written) and evicts nothing. */
Test(evict, a_read_only_handle_reads_a_store_that_tracks_use)
{
	shmkv_t *ro;
	char got[VALUE_LEN + 1];
	struct shmkv_value v = { got, sizeof(got), 0 };

	make_store(SHMKV_EVICT_ALLKEYS_LRU, SLOTS, 0);
	for (unsigned i = 0; i < PER_PAGE; i++)
		must_set("k", i, 0);
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	for (unsigned i = 0; i < PER_PAGE; i++) {
		char key[32];
		size_t kl = key_of(key, "k", i);

		cr_assert_eq(shmkv_get(ro, key, kl, &v), 1);
		cr_assert_eq(shmkv_exists(ro, key, kl), 1);
	}
	cr_assert_eq(shmkv_set(ro, "x", 1, "y", 1, 0, 0, NULL), -EROFS);
	shmkv_close(ro);
	cr_assert_eq(stats().evicted, 0);
	assert_clean();
}

/* A policy word no library wrote (corruption) evicts nothing, and
 * shmkv_check says so. */
Test(evict, a_corrupt_policy_word_evicts_nothing_and_is_reported)
{
	const uint32_t words[] = { 8, 0xffffffffu, 1 /* lru, untracked */,
				   3 | (1u << 8) /* random, tracked */ };

	for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
		unsigned i;
		int rc = 1;

		make_store(SHMKV_EVICT_ALLKEYS_LRU, SLOTS, 0);
		tu_shm_pwrite(tu_name, &words[w], sizeof(words[w]),
			      offsetof(struct shmkv_header_shm, evict_policy));
		cr_assert_eq(shmkv_check(tu_kv, NULL, NULL), 1,
			     "word %#x not reported", words[w]);
		if ((words[w] & 0xffu) > 7) /* no policy */
			cr_assert_eq(stats().evict_policy,
				     SHMKV_EVICT_NOEVICTION);
		tu_assert_ok(shmkv_set_evict_policy(tu_kv,
						    SHMKV_EVICT_ALLKEYS_LRU));
		tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
		tu_shm_pwrite(tu_name, &words[0], sizeof(words[0]),
			      offsetof(struct shmkv_header_shm, evict_policy));
		for (i = 0; i < 2 * PER_PAGE && rc == 1; i++)
			rc = set_one("k", i, 0);
		cr_assert_eq(rc, -ENOMEM, "word 8: %s", tu_rcname(rc));
		cr_assert_eq(stats().evicted, 0);
		tu_teardown();
	}
}

/* A child that opens the store by name, sets @policy and fills it. */
static void fill_in_child(int policy, unsigned from, unsigned n)
{
	shmkv_t *kv = NULL;
	int bad = 0;

	if (shmkv_open(tu_name, 0, &kv) != 0)
		_exit(2);
	if (policy >= 0 && shmkv_set_evict_policy(kv, policy) != 0)
		_exit(3);
	for (unsigned i = from; i < from + n; i++) {
		char key[32], val[VALUE_LEN + 1], got[VALUE_LEN + 1];
		struct shmkv_value v = { got, sizeof(got), 0 };
		size_t kl = key_of(key, "mp", i), vl = value_of(val, "mp", i);
		int rc = shmkv_set(kv, key, kl, val, vl, 0, 0, NULL);

		if (rc != 1)
			bad++;
		/* A key of ours read back: absent (evicted) or its value. */
		key_of(key, "mp", from + (i - from) / 2);
		rc = shmkv_get(kv, key, strlen(key), &v);
		value_of(val, "mp", from + (i - from) / 2);
		if (rc < 0 || (rc == 1 && (v.len != VALUE_LEN ||
					   memcmp(got, val, VALUE_LEN) != 0)))
			bad++;
	}
	shmkv_close(kv);
	_exit(bad ? 1 : 0);
}

static void reap_ok(pid_t pid)
{
	int status;

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "child %d: status %#x", (int)pid, status);
}

Test(evict, a_policy_set_by_one_process_rules_the_others)
{
	pid_t pid;
	int rc = 1;

	make_store(SHMKV_EVICT_NOEVICTION, SLOTS, 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		fill_in_child(SHMKV_EVICT_ALLKEYS_LFU, 0, 2 * PER_PAGE);
	reap_ok(pid);
	cr_assert_eq(stats().evict_policy, SHMKV_EVICT_ALLKEYS_LFU);
	cr_assert_geq(stats().evicted, PER_PAGE);
	/* And back: this process's writes fail again. */
	tu_assert_ok(shmkv_set_evict_policy(tu_kv, SHMKV_EVICT_NOEVICTION));
	for (unsigned i = 0; i < PER_PAGE && rc == 1; i++)
		rc = set_one("after", i, 0);
	cr_assert_eq(rc, -ENOMEM);
	assert_clean();
}

Test(evict, four_processes_write_and_evict_at_once)
{
	const unsigned each = 1500;
	pid_t pids[4];
	struct shmkv_stats st;

	make_store(SHMKV_EVICT_ALLKEYS_LRU, SLOTS, 0);
	fflush(NULL);
	for (unsigned w = 0; w < 4; w++) {
		pids[w] = fork();
		cr_assert_geq(pids[w], 0);
		if (pids[w] == 0)
			fill_in_child(-1, w * each, each);
	}
	for (unsigned w = 0; w < 4; w++)
		reap_ok(pids[w]);
	st = stats();
	cr_assert_eq(st.live_keys + st.evicted, 4 * each,
		     "%llu live, %llu evicted",
		     (unsigned long long)st.live_keys,
		     (unsigned long long)st.evicted);
	cr_assert_eq(count_present("mp", 0, 4 * each), st.live_keys);
	assert_clean();
}

/* Starts crash_worker SETting block values <prefix><i>, i in [0, @n),
 * armed (in a build with crash points) to die right after its @armed-th
 * eviction's CAS if @armed is not 0. Return: its pid. */
static pid_t spawn_writer(const char *prefix, unsigned n, unsigned armed)
{
	char path[4096], count[16], after[16];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/tests/crash_worker", SHMKV_BUILD_DIR);
	snprintf(count, sizeof(count), "%u", n);
	snprintf(after, sizeof(after), "%u", armed);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (armed) {
			setenv("SHMKV_CRASH_AT", "evicted", 1);
			setenv("SHMKV_CRASH_AFTER", after, 1);
		}
		execl(path, path, tu_name, "block", prefix, "0", count,
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

#define LANES	  4
#define LANE_KEYS 6000u
#define KILLS_MAX 100

/* Writers SIGKILLed at random (and, where crash points exist, armed to
 * die right after an eviction's CAS) while they evict one another's keys:
 * every key there holds its value, the store checks clean with no repair
 * step, and it goes on evicting. */
/* Lane @lane's writer, from its first key again, armed (where crash
 * points exist) on every other restart. */
static pid_t restart_lane(unsigned lane, unsigned n, void *ctx)
{
	char (*prefix)[8] = ctx;

	return spawn_writer(prefix[lane], LANE_KEYS, n % 2 == 1 ? 3 : 0);
}

Test(evict, writers_killed_at_random_while_they_evict_leave_a_sound_store)
{
	char prefix[LANES][8];
	unsigned deaths;

	make_store(SHMKV_EVICT_ALLKEYS_LRU, SLOTS, 0);
	for (unsigned l = 0; l < LANES; l++)
		snprintf(prefix[l], sizeof(prefix[l]), "L%u-", l);
	deaths = tu_kill_lanes(LANES, KILLS_MAX, 2000, restart_lane, prefix);
	for (unsigned l = 0; l < LANES; l++)
		for (unsigned i = 0; i < LANE_KEYS; i++) {
			char key[32], want[CRASH_VALUE_CAP],
				got[CRASH_VALUE_CAP];
			struct shmkv_value v = { got, sizeof(got), 0 };
			size_t kl = key_of(key, prefix[l], i);
			size_t wl = crash_value(want, CRASH_BLOCK, prefix[l], i);
			int rc = shmkv_get(tu_kv, key, kl, &v);

			cr_assert(rc == 0 || (rc == 1 && v.len == wl &&
					      memcmp(got, want, wl) == 0),
				  "%s: %s, or another value", key,
				  tu_rcname(rc));
		}
	assert_clean();
	cr_assert_gt(stats().evicted, 0);
	for (unsigned i = 0; i < 2 * PER_PAGE; i++)
		must_set("after", i, 0);
	assert_clean();
	cr_log_info("%u deaths", deaths);
}

/*
 * An evictor killed between its eviction's CAS and its count (FAULT=1
 * builds): the key is gone, the block it freed is in the dead thread's
 * cache, and the store goes on evicting and reclaims that block.
 */
#ifdef SHMKV_FAULT_INJECTION
#define NEED_CRASH_POINTS() ((void)0)
#else
#define NEED_CRASH_POINTS()                                                    \
	cr_skip_test("no crash points in this build: make FAULT=1, then "      \
		     "build-fault/tests/unit --filter 'crashpoint_evict/*'")
#endif

TestSuite(crashpoint_evict, .fini = tu_teardown);

Test(crashpoint_evict, an_evictor_killed_after_its_cas_leaves_a_usable_store)
{
	NEED_CRASH_POINTS();
	const unsigned n = 4 * PER_PAGE;
	unsigned last = 0, here = 0;
	struct shmkv_stats st;
	int status;
	pid_t pid;

	make_store(SHMKV_EVICT_ALLKEYS_LRU, SLOTS, 0);
	pid = spawn_writer("c", n, 1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "crash_worker did not die at evicted: %#x", status);
	/* Keys c0 .. c<last> were written; the SET after c<last> evicted
	 * one of them and died before counting it or writing its own. */
	for (unsigned i = 0; i < n; i++) {
		char key[32];
		size_t kl = key_of(key, "c", i);

		if (shmkv_exists(tu_kv, key, kl) == 1) {
			last = i;
			here++;
		}
	}
	st = stats();
	cr_assert_eq(st.evicted, 0);
	cr_assert_eq(here, last, "%u of c0..c%u left: one evicted", here,
		     last);
	cr_assert_eq(st.live_keys, here);
	assert_clean();
	/* Eviction goes on in the other processes, nothing is lost. */
	for (unsigned i = 0; i < 2 * PER_PAGE; i++)
		must_set("after", i, 0);
	cr_assert_geq(stats().evicted, PER_PAGE);
	cr_assert_geq(count_present("after", PER_PAGE, 2 * PER_PAGE),
		      PER_PAGE / 2);
	assert_clean();
}
