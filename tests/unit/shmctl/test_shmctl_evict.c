/*
 * test_shmctl_evict.c - shmctl and eviction: config get/set
 * maxmemory-policy, create --maxmemory-policy, the policy and the count
 * of evictions in info and watch, and dump/restore carrying the policy.
 * shmctl runs as a real process; what it did is read back through the
 * library in this one.
 */
#include "helpers/shmctl_run.h"
#include "helpers/testutil.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

TestSuite(shmctl_evict, .init = tu_setup, .fini = ctl_teardown);

/* What a refused policy name is told: every valid one. */
#define POLICY_LIST                                                            \
	"expected one of noeviction, allkeys-lru, allkeys-lfu, "               \
	"allkeys-random, volatile-lru, volatile-lfu, volatile-random, "        \
	"volatile-ttl\n"

static uint32_t stats_policy(shmkv_t *kv)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(kv, &st));
	return st.evict_policy;
}

static uint64_t stats_evicted(shmkv_t *kv)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(kv, &st));
	return st.evicted;
}

/* The number after @label in @s (which must hold it). */
static uint64_t number_after(const char *s, const char *label)
{
	const char *at = strstr(s, label);

	cr_assert_not_null(at, "expected \"%s\" in:\n%s", label, s);
	return strtoull(at + strlen(label), NULL, 10);
}

/*
 * config get/set maxmemory-policy.
 */

/* Each policy set by shmctl (in an odd case, as Redis accepts it) is the
 * one this process's handle follows, and get prints its name. */
Test(shmctl_evict, config_set_policy_rules_another_process_and_get_shows_it)
{
	static const char *const typed[] = {
		"ALLKEYS-LRU",	"allkeys-lfu",	"AllKeys-Random",
		"volatile-lru", "Volatile-LFU", "volatile-random",
		"volatile-TTL", "NoEviction",
	};
	static const uint32_t want[] = {
		SHMKV_EVICT_ALLKEYS_LRU,    SHMKV_EVICT_ALLKEYS_LFU,
		SHMKV_EVICT_ALLKEYS_RANDOM, SHMKV_EVICT_VOLATILE_LRU,
		SHMKV_EVICT_VOLATILE_LFU,   SHMKV_EVICT_VOLATILE_RANDOM,
		SHMKV_EVICT_VOLATILE_TTL,   SHMKV_EVICT_NOEVICTION,
	};
	char out[64];

	cr_assert_eq(stats_policy(tu_kv), SHMKV_EVICT_NOEVICTION);
	assert_reply(RUN("config", tu_name, "get", "maxmemory-policy"), 0,
		     "maxmemory-policy\nnoeviction\n");
	for (size_t i = 0; i < sizeof(typed) / sizeof(typed[0]); i++) {
		assert_reply(RUN("config", tu_name, "set", "maxmemory-policy",
				 typed[i]),
			     0, "OK\n");
		cr_assert_eq(stats_policy(tu_kv), want[i], "%s", typed[i]);
		cr_assert_eq(tu_get_config(tu_kv).evict_policy, want[i]);
		snprintf(out, sizeof(out), "maxmemory-policy\n%s\n",
			 shmkv_evict_policy_name((int)want[i]));
		assert_reply(RUN("config", tu_name, "GET", "MAXMEMORY-POLICY"),
			     0, out);
	}
}

/* Redis's form, CONFIG on the store ("shmctl NAME config ..."), and the
 * same words typed at the store's prompt. */
Test(shmctl_evict, config_works_in_the_data_form_and_at_the_prompt)
{
	assert_reply(RUN(tu_name, "config", "set", "maxmemory-policy",
			 "allkeys-lru"),
		     0, "OK\n");
	cr_assert_eq(stats_policy(tu_kv), SHMKV_EVICT_ALLKEYS_LRU);
	assert_reply(RUN(tu_name, "CONFIG", "GET", "maxmemory-policy"), 0,
		     "maxmemory-policy\nallkeys-lru\n");
	assert_reply(RUN_STDIN("config set maxmemory-policy volatile-ttl\n"
			       "config get maxmemory-policy\n",
			       tu_name),
		     0, "OK\nmaxmemory-policy\nvolatile-ttl\n");
	cr_assert_eq(stats_policy(tu_kv), SHMKV_EVICT_VOLATILE_TTL);
}

/* And the other way: a policy this process sets is what get prints. */
Test(shmctl_evict, config_get_lists_the_policy_a_process_set)
{
	char want[128];

	tu_assert_ok(shmkv_set_evict_policy(tu_kv, SHMKV_EVICT_VOLATILE_LFU));
	snprintf(want, sizeof(want),
		 "maxmemory\n%" PRIu64 "\nmaxmemory-policy\nvolatile-lfu\n",
		 tu_get_config(tu_kv).max_memory);
	assert_reply(RUN("config", tu_name, "get"), 0, want);
}

Test(shmctl_evict, config_refuses_a_bad_policy_and_leaves_the_store_as_it_was)
{
	static const char *const bad[] = { "lru", "", "allkeys-lru ",
					   "allkeys_lru", "3" };
	char want[TU_NAME_CAP + 300];

	tu_assert_ok(shmkv_set_evict_policy(tu_kv, SHMKV_EVICT_ALLKEYS_LFU));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct run r = RUN("config", tu_name, "set", "maxmemory-policy",
				   bad[i]);

		snprintf(want, sizeof(want),
			 "shmctl: %s: maxmemory-policy '%s': " POLICY_LIST,
			 tu_name, bad[i]);
		assert_code(r, 2);
		assert_out(r, "");
		cr_assert_str_eq(r.err, want);
		cr_assert_eq(stats_policy(tu_kv), SHMKV_EVICT_ALLKEYS_LFU);
	}
	assert_reply(RUN("config", tu_name, "get", "maxmemory-policy"), 0,
		     "maxmemory-policy\nallkeys-lfu\n");
}

/* get needs read permission only; set needs write permission, and a
 * reader's set is refused with the store kept as it was. */
Test(shmctl_evict, config_set_policy_needs_write_permission)
{
	struct shmkv_config cfg = tu_config(TU_SLOTS, 0, 0, 0);
	char want[TU_NAME_CAP + 64];
	struct run r;

	if (!ctl_is_root())
		cr_skip_test("needs root to run shmctl as another uid");
	cfg.mode = 0644;
	cfg.evict_policy = SHMKV_EVICT_VOLATILE_TTL;
	ctl_recreate(&cfg);
	assert_reply(
		RUN_AS(NOBODY, "config", tu_name, "get", "maxmemory-policy"), 0,
		"maxmemory-policy\nvolatile-ttl\n");
	r = RUN_AS(NOBODY, "config", tu_name, "set", "maxmemory-policy",
		   "allkeys-lru");
	assert_code(r, 3);
	snprintf(want, sizeof(want), "shmctl: %s: permission denied\n",
		 tu_name);
	cr_assert_str_eq(r.err, want);
	cr_assert_eq(stats_policy(tu_kv), SHMKV_EVICT_VOLATILE_TTL);
}

/*
 * create --maxmemory-policy.
 */

Test(shmctl_evict, create_takes_a_policy_and_defaults_to_noeviction)
{
	char name[TU_NAME_CAP], plain[TU_NAME_CAP];
	shmkv_t *kv;
	struct run r;

	tu_make_name(name, "lfu");
	r = RUN("create", name, "--slots", "64", "--maxmemory-policy",
		"Volatile-LFU");
	assert_code(r, 0);
	assert_has(r.out, ", maxmemory-policy volatile-lfu, mode 0600\n");
	kv = tu_open(name, 0);
	cr_assert_eq(tu_get_config(kv).evict_policy, SHMKV_EVICT_VOLATILE_LFU);
	cr_assert_eq(stats_policy(kv), SHMKV_EVICT_VOLATILE_LFU);
	shmkv_close(kv);
	tu_make_name(plain, "plain");
	r = RUN("create", plain, "--slots", "64");
	assert_has(r.out, ", maxmemory-policy noeviction, mode 0600\n");
	kv = tu_open(plain, 0);
	cr_assert_eq(tu_get_config(kv).evict_policy, SHMKV_EVICT_NOEVICTION);
	shmkv_close(kv);
}

/* The short option too; a bad name is a usage error and creates nothing. */
Test(shmctl_evict, create_refuses_a_bad_policy_and_creates_nothing)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv;
	struct run r;

	tu_make_name(name, "bad");
	r = RUN("create", name, "--maxmemory-policy", "lru");
	assert_code(r, 2);
	assert_out(r, "");
	assert_has(r.err,
		   "shmctl create: --maxmemory-policy 'lru': " POLICY_LIST);
	cr_assert(!ctl_shm_exists(name), "%s was created", name);
	assert_code(RUN("create", name, "--maxmemory-policy"), 2);
	cr_assert(!ctl_shm_exists(name), "%s was created", name);
	assert_code(
		RUN("create", name, "-E", "allkeys-random", "--slots", "64"),
		0);
	kv = tu_open(name, 0);
	cr_assert_eq(stats_policy(kv), SHMKV_EVICT_ALLKEYS_RANDOM);
	shmkv_close(kv);
}

/*
 * info and watch: the policy and the count of evictions.
 */

/* A store that may not grow, under allkeys-lru, written well past its
 * room with 200-byte values: every write succeeds and some keys go. */
static void fill_past_the_room(void)
{
	struct shmkv_config cfg = tu_config(1024, 16, 512, 0);
	char k[16], v[200];

	cfg.evict_policy = SHMKV_EVICT_ALLKEYS_LRU;
	ctl_recreate(&cfg); /* max_memory: its initial size */
	memset(v, 'v', sizeof(v));
	for (unsigned i = 0; i < 3000; i++)
		tu_assert_rc(shmkv_set(tu_kv, k, tu_fmt(k, sizeof(k), "k", i),
				       v, sizeof(v), 0, 0, NULL),
			     1);
	cr_assert_gt(stats_evicted(tu_kv), 0, "nothing was evicted");
}

Test(shmctl_evict, info_shows_the_policy_and_the_keys_evicted)
{
	char want[96];
	uint64_t n;
	struct run r;

	r = RUN("info", tu_name);
	assert_has(r.out, "\n  eviction  maxmemory-policy noeviction, 0 keys "
			  "evicted since creation\n");
	fill_past_the_room();
	n = stats_evicted(tu_kv);
	r = RUN("info", tu_name);
	assert_code(r, 0);
	snprintf(want, sizeof(want),
		 "\n  eviction  maxmemory-policy allkeys-lru, %" PRIu64
		 " keys evicted since creation\n",
		 n);
	assert_has(r.out, want);
	r = RUN("info", "--json", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "\"evict_policy\":\"allkeys-lru\"},");
	cr_assert_eq(number_after(r.out, "\"evicted\":"), n, "%s", r.out);
}

Test(shmctl_evict, watch_shows_the_policy_and_the_keys_evicted)
{
	char want[96];
	struct run r;

	fill_past_the_room();
	r = RUN("watch", tu_name, "--count", "1");
	assert_code(r, 0);
	snprintf(want, sizeof(want),
		 "\nevicted  %" PRIu64
		 " keys (+0.0/s), maxmemory-policy allkeys-lru\n",
		 stats_evicted(tu_kv));
	assert_has(r.out, want);
}

/*
 * dump and restore carry the policy.
 */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* Every policy but noeviction (whose dump has no field) goes to the
 * store restore creates. */
Test(shmctl_evict, dump_and_restore_keep_the_policy)
{
	char path[64], copy[TU_NAME_CAP], field[64];
	shmkv_t *kv;
	struct run r;

	SET("a", "1");
	ctl_set_kv(LIT("b"), LIT("two"), 600000);
	for (int p = SHMKV_EVICT_ALLKEYS_LRU; p <= SHMKV_EVICT_VOLATILE_TTL;
	     p++) {
		const char *name = shmkv_evict_policy_name(p);

		tu_assert_ok(shmkv_set_evict_policy(tu_kv, p));
		ctl_temp_path(path, sizeof(path));
		assert_reply(RUN("dump", tu_name, "--output", path), 0, "");
		r = RUN("dump", tu_name);
		snprintf(field, sizeof(field), " evict_policy=%s mode=0600\n",
			 name);
		assert_has(r.out, field);
		tu_make_name(copy, name);
		r = RUN("restore", copy, path);
		assert_code(r, 0);
		assert_has(r.out, "restored 2 keys into ");
		assert_lacks(r.out, "evicted");
		kv = tu_open(copy, 0);
		cr_assert_eq(tu_get_config(kv).evict_policy, (uint32_t)p);
		cr_assert_eq(stats_policy(kv), (uint32_t)p, "%s", name);
		cr_assert_eq(stats_evicted(kv), 0);
		tu_assert_get_str(kv, "a", "1");
		tu_assert_get_str(kv, "b", "two");
		shmkv_close(kv);
	}
}

/* A store that has evicted under LRU (its access clock moved, so a use
 * recorded now would change a key's stamp) dumps on a read-only handle,
 * which records no use, and the dump restores whole. */
Test(shmctl_evict, an_lru_store_that_evicted_dumps_and_restores_whole)
{
	struct shmkv_stats st, copied;
	char path[64], copy[TU_NAME_CAP];
	shmkv_t *kv;
	struct run r;

	fill_past_the_room();
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	ctl_temp_path(path, sizeof(path));
	assert_reply(RUN("dump", tu_name, "--output", path), 0, "");
	tu_make_name(copy, "lru");
	r = RUN("restore", copy, path);
	assert_code(r, 0);
	assert_has(r.out, "(created)\n");
	kv = tu_open(copy, 0);
	tu_assert_ok(shmkv_stats(kv, &copied));
	cr_assert_eq(copied.live_keys, st.live_keys);
	cr_assert_eq(copied.evicted, 0);
	cr_assert_eq(copied.evict_policy, SHMKV_EVICT_ALLKEYS_LRU);
	shmkv_close(kv);
}

/* A noeviction store's dump has no evict_policy field (as dumps had
 * before eviction), and a dump without one restores as noeviction. */
Test(shmctl_evict, a_dump_without_a_policy_restores_as_noeviction)
{
	char path[64], copy[TU_NAME_CAP];
	shmkv_t *kv;
	struct run r;

	SET("a", "1");
	r = RUN("dump", tu_name);
	assert_code(r, 0);
	assert_lacks(r.out, "evict_policy");
	ctl_temp_path(path, sizeof(path));
	write_file(path, "SHMKV-DUMP 1 slots=64 key_max=16 value_max=64 "
			 "probe_limit=64 value_memory=196608 "
			 "max_memory=1048576 mode=0600\n"
			 "\"k\" \"v\" -1\nEND 1\n");
	tu_make_name(copy, "old");
	assert_code(RUN("restore", copy, path), 0);
	kv = tu_open(copy, 0);
	cr_assert_eq(stats_policy(kv), SHMKV_EVICT_NOEVICTION);
	tu_assert_get_str(kv, "k", "v");
	shmkv_close(kv);
}

/* An unknown policy in a header is a malformed header: nothing made. */
Test(shmctl_evict, restore_refuses_an_unknown_policy_in_the_header)
{
	char path[64], copy[TU_NAME_CAP];
	struct run r;

	ctl_temp_path(path, sizeof(path));
	write_file(path, "SHMKV-DUMP 1 slots=64 key_max=16 value_max=64 "
			 "probe_limit=64 value_memory=65536 "
			 "evict_policy=lru mode=0600\n\"k\" \"v\" -1\nEND 1\n");
	tu_make_name(copy, "bad");
	r = RUN("restore", copy, path);
	assert_code(r, 6);
	assert_has(r.err, ":1: malformed header field");
	cr_assert(!ctl_shm_exists(copy), "%s was created", copy);
}

/* A table of 16 slots cannot take 24 keys. Restored into a new store,
 * the dump's allkeys-random does not make room by evicting the dump's
 * own keys: the restore fails as under noeviction, and, all or nothing,
 * the store it made is removed. */
static void write_24_keys(const char *path, const char *policy)
{
	struct shmkv_config cfg = tu_config(16, 16, 64, 16);
	FILE *f = fopen(path, "w");

	/* A store of this config created from the dump stays at its initial
	 * size: its table cannot grow, and 16 slots hold fewer than 24. */
	cfg.value_memory = 196608;
	cr_assert_not_null(f);
	fprintf(f,
		"SHMKV-DUMP 1 slots=16 key_max=16 value_max=64 probe_limit=16 "
		"value_memory=196608 max_memory=%" PRIu64 " evict_policy=%s "
		"mode=0600\n",
		tu_initial_footprint(&cfg), policy);
	for (int i = 0; i < 24; i++)
		fprintf(f, "\"k%d\" \"v\" -1\n", i);
	fprintf(f, "END 24\n");
	cr_assert_eq(fclose(f), 0);
}

Test(shmctl_evict, restore_into_a_new_store_evicts_none_of_the_dump)
{
	char path[64], copy[TU_NAME_CAP];
	struct run r;

	ctl_temp_path(path, sizeof(path));
	write_24_keys(path, "allkeys-random");
	tu_make_name(copy, "small");
	r = RUN("restore", copy, path);
	assert_code(r, 3);
	assert_has(r.err, "table full");
	assert_has(r.err, ": nothing restored (the dump does not fit; the "
			  "store restore created is removed)");
	cr_assert(!ctl_shm_exists(copy), "%s stayed", copy);
}

/* An existing store keeps its own policy, and restore says how many keys
 * it evicted meanwhile. */
Test(shmctl_evict, restore_into_an_evicting_store_says_what_it_evicted)
{
	struct shmkv_config cfg = tu_config(16, 16, 64, 0);
	char path[64], want[96];
	uint64_t n;
	struct run r;

	cfg.evict_policy = SHMKV_EVICT_ALLKEYS_LRU;
	ctl_recreate(&cfg);
	ctl_temp_path(path, sizeof(path));
	write_24_keys(path, "volatile-ttl");
	r = RUN("restore", tu_name, path);
	assert_code(r, 0);
	n = stats_evicted(tu_kv);
	cr_assert_geq(n, 8, "16 slots took 24 keys evicting %" PRIu64, n);
	snprintf(want, sizeof(want),
		 "; the store evicted %" PRIu64
		 " keys meanwhile (maxmemory-policy allkeys-lru)\n",
		 n);
	assert_has(r.out, "restored 24 keys into ");
	assert_has(r.out, want);
	cr_assert_eq(stats_policy(tu_kv), SHMKV_EVICT_ALLKEYS_LRU);
}
