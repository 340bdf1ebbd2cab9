/*
 * test_audit.c - every exported function of the library (src/libshmkv.map)
 * called on a handle of the Redis backend: each works over Redis or
 * gives its documented error, and none reads the shared-memory header
 * (a remote handle's is a zeroed, read-only buffer: a write would crash
 * the test, a read would give a wrong answer the asserts catch), the
 * locks (helper D's redis_lock.c) included.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/redis_handle.h"
#include "shmkv.h"
#include "shmkv_exec.h"
#include "shmkv_lock.h"

#define LIT(s) (s), (sizeof(s) - 1)

static struct rh_server srv;
static shmkv_t *kv;

static void setup(void)
{
	int r = rh_start(&srv, "test_audit");

	if (r == 1)
		cr_skip_test("redis-server is not installed");
	cr_assert_eq(r, 0, "redis-server would not start");
	cr_assert_eq(shmkv_open(srv.uri, 0, &kv), 0);
}

static void teardown(void)
{
	shmkv_close(kv);
	kv = NULL;
	rh_stop(&srv);
}

TestSuite(redis_audit, .init = setup, .fini = teardown);

static void fill(shmkv_t *h, int n)
{
	char k[16];

	for (int i = 0; i < n; i++) {
		int len = snprintf(k, sizeof(k), "key%d", i);

		cr_assert_eq(shmkv_set(h, k, (size_t)len, LIT("v"), 0, 0, NULL),
			     1);
	}
}

Test(redis_audit, maintenance_calls_are_enotsup)
{
	struct shmkv_recover_report rep;
	uint64_t cursor = 0, bytes;

	cr_assert_eq(shmkv_sweep(kv, &cursor, 100), -ENOTSUP);
	cr_assert_eq(shmkv_maintain(kv), -ENOTSUP);
	cr_assert_eq(shmkv_recover(kv, &rep), -ENOTSUP);
	cr_assert_eq(shmkv_check(kv, NULL, NULL), -ENOTSUP);
	cr_assert_eq(shmkv_huge_mapped(kv, &bytes), -ENOTSUP);
	cr_assert_eq(shmkv_set_max_memory(kv, 1 << 20), -ENOTSUP);
	cr_assert_eq(shmkv_set_evict_policy(kv, SHMKV_EVICT_ALLKEYS_LRU),
		     -ENOTSUP);
	/* Argument errors first, as on a shm store. */
	cr_assert_eq(shmkv_sweep(kv, NULL, 1), -EINVAL);
	cr_assert_eq(shmkv_huge_mapped(kv, NULL), -EINVAL);
	cr_assert_eq(shmkv_set_evict_policy(kv, 99), -EINVAL);
}

Test(redis_audit, config_gives_the_key_and_value_limits_only)
{
	struct shmkv_config cfg;

	cr_assert_eq(shmkv_get_config(kv, &cfg), 0);
	cr_assert_gt(cfg.key_max, 0);
	cr_assert_gt(cfg.value_max, 0);
	cr_assert_eq(cfg.slots, 0);
	cr_assert_eq(cfg.max_memory, 0);
	cr_assert_eq(cfg.mode, 0);
	cr_assert_eq(cfg.evict_policy, SHMKV_EVICT_NOEVICTION);
}

Test(redis_audit, stats_count_the_keys_and_nothing_else)
{
	struct shmkv_stats st;
	char u[256];
	shmkv_t *p;

	fill(kv, 25);
	cr_assert_eq(shmkv_stats(kv, &st), 0);
	cr_assert_eq(st.live_keys, 25);
	cr_assert_eq(st.slots, 0);
	cr_assert_eq(st.pages, 0);
	/* With a prefix: its keys only (by SCAN). */
	cr_assert_eq(
		shmkv_open(rh_uri(&srv, "?prefix=p:", u, sizeof(u)), 0, &p), 0);
	fill(p, 7);
	cr_assert_eq(shmkv_stats(p, &st), 0);
	cr_assert_eq(st.live_keys, 7);
	cr_assert_eq(shmkv_stats(kv, &st), 0);
	cr_assert_eq(st.live_keys, 32);
	shmkv_close(p);
}

struct seen {
	int n;
	int bad;
	char mark[64];
};

static int visit(const void *key, size_t klen, void *arg)
{
	struct seen *s = arg;
	int i;

	/* key<i>, the prefix stripped; each at least once. */
	if (klen < 4 || memcmp(key, "key", 3) != 0 ||
	    (i = atoi((const char *)key + 3)) < 0 || i >= 64) {
		s->bad++;
		return 0;
	}
	s->mark[i] = 1;
	s->n++;
	return 0;
}

static int stop_at_first(const void *key, size_t klen, void *arg)
{
	(void)key;
	(void)klen;
	(void)arg;
	return 7;
}

Test(redis_audit, scan_visits_each_key_of_the_prefix_stripped)
{
	struct seen s = { 0 };
	uint64_t cur = 0, next;
	char u[256];
	shmkv_t *p;
	int rounds = 0;

	cr_assert_eq(
		shmkv_open(rh_uri(&srv, "?prefix=a*[x]:", u, sizeof(u)), 0, &p),
		0);
	fill(p, 50);
	fill(kv, 10); /* outside the prefix: never visited */
	do {
		cr_assert_eq(shmkv_scan(p, cur, 5, visit, &s, &cur), 0);
		cr_assert_lt(++rounds, 10000);
	} while (cur != 0);
	cr_assert_eq(s.bad, 0);
	for (int i = 0; i < 50; i++)
		cr_assert_eq(s.mark[i], 1, "key%d not visited", i);
	cr_assert_geq(s.n, 50);
	/* A stop returns what @fn returned; the next cursor revisits. */
	cr_assert_eq(shmkv_scan(p, 0, 100, stop_at_first, NULL, &next), 7);
	cr_assert_eq(shmkv_scan(p, 0, 1, NULL, NULL, &next), -EINVAL);
	shmkv_close(p);
}

Test(redis_audit, exec_and_the_command_table_work)
{
	const char *argv[] = { "SET", "k", "v" };
	size_t len[] = { 3, 1, 1 };
	struct shmkv_reply rep;

	cr_assert_eq(shmkv_exec(kv, 3, argv, len, &rep), 0);
	cr_assert_eq(rep.type, SHMKV_REPLY_STATUS);
	shmkv_reply_free(&rep);
	cr_assert_gt(shmkv_command_count(), 0);
	cr_assert_not_null(shmkv_command_at(0));
	cr_assert_not_null(shmkv_command_find("get", 3));
	cr_assert_str_not_empty(shmkv_strerror(-EREMOTE));
	cr_assert_not_null(shmkv_version(NULL, NULL, NULL));
}

Test(redis_audit, create_open_or_create_and_unlink_of_a_uri)
{
	shmkv_t *h = NULL;
	int r;

	r = shmkv_open_or_create(srv.uri, NULL, &h);
	cr_assert(r == 0 || r == -ENOTSUP, "open_or_create: %d", r);
	shmkv_close(h);
	h = NULL;
	r = shmkv_create(srv.uri, NULL, &h);
	cr_assert(r == 0 || r == -ENOTSUP || r == -EEXIST, "create: %d", r);
	shmkv_close(h);
	cr_assert_eq(shmkv_unlink(srv.uri), -ENOTSUP);
	shmkv_close(NULL);
}

static int count_lock(const struct shmkv_lock_info *info, void *arg)
{
	(void)info;
	(void)arg;
	return 0;
}

/* The locks (redis_lock.c, helper D's) on a remote handle: each call
 * answers as documented (their own tests, test_redis_lock*.c, say how
 * they behave; here only that every exported one runs). */
Test(redis_audit, lock_calls_work_on_a_remote_handle)
{
	struct shmkv_lock lk;
	struct shmkv_pattern pl;
	int64_t expiry = 0;
	uint64_t token;

	cr_assert_eq(shmkv_lock_init(kv, &lk, "a"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&lk, 10000), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_held(&lk), 1);
	token = shmkv_lock_token(&lk);
	cr_assert_gt(token, 0);
	cr_assert_eq(shmkv_lock_extend(&lk, SHMKV_LOCK_EXTEND_ADD, 100), 0);
	cr_assert_eq(shmkv_lock_list(kv, count_lock, NULL), 1);
	cr_assert_eq(shmkv_lock_release(&lk), 0);
	cr_assert_geq(shmkv_lock_timed_acquire(&lk, 10000, 10), 0);
	cr_assert_gt(shmkv_lock_token(&lk), token, "tokens increase");
	cr_assert_eq(shmkv_lock_acquire(&lk, 10000), -EDEADLK,
		     "already ours: as the shm lock says");
	cr_assert_eq(shmkv_lock_release(&lk), 0);
	cr_assert_eq(shmkv_pattern_init(kv, &pl, "b"), 0);
	cr_assert_eq(shmkv_pattern_acquire(&pl, 10000, 10, &expiry), 0);
	cr_assert_eq(shmkv_pattern_release(&pl, expiry), 0);
}
