/*
 * test_typed_cluster.c - the typed calls on a handle of a 3-master Redis
 * Cluster (tests/helpers/redis_cluster.c): keys without hash tags spread
 * over the masters; each call reaches its key's master, the scripts
 * (GET-then-write, DELIFEQ) load on each master by their NOSCRIPT
 * fallback, SCAN walks every master with the master in the cursor's top
 * bits, and the stats sum every master's keys.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/redis_cluster.h"
#include "helpers/redis_server.h"
#include "redis.h"
#include "shmkv.h"

#define NKEYS 200

static struct redis_cluster cl;
static shmkv_t *kv;

static shmkv_t *open_cluster(const char *query)
{
	char uri[160];
	shmkv_t *h = NULL;

	snprintf(uri, sizeof(uri), "redis+cluster://127.0.0.1:%d%s",
		 cl.node[0].port, query);
	cr_assert_eq(shmkv_open(uri, 0, &h), 0, "open %s", uri);
	return h;
}

static void up(void)
{
	if (!redis_server_find() || !redis_cluster_cli_find())
		cr_skip_test("no redis-server or redis-cli");
	cr_assert_eq(redis_cluster_start(&cl, "typed_cl"), 0, "cluster start");
	kv = open_cluster("");
}

static void down(void)
{
	shmkv_close(kv);
	kv = NULL;
	redis_cluster_cleanup(&cl);
}

TestSuite(redis_typed_cluster, .init = up, .fini = down, .timeout = 120);

static size_t key_of(int i, char *k)
{
	return (size_t)sprintf(k, "key:%d", i);
}

Test(redis_typed_cluster, every_call_reaches_its_keys_master)
{
	char k[32], buf[32];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	struct shmkv_value small = { buf, 1, 0 };
	bool on[3] = { false, false, false };
	int64_t n, ms;

	for (int i = 0; i < NKEYS; i++) {
		size_t kl = key_of(i, k);
		int owner = redis_cluster_slot_owner(
			&cl, shmkv__redis_key_slot(k, kl));

		cr_assert(owner >= 0 && owner < 3);
		on[owner] = true;
		cr_assert_eq(
			shmkv_set(kv, k, kl, k, kl, SHMKV_SET_EX, 100, NULL),
			1);
		cr_assert_eq(shmkv_get(kv, k, kl, &v), 1);
		cr_assert_eq(v.len, kl);
		cr_assert_eq(memcmp(buf, k, kl), 0);
		/* The scripts, on whichever master: -ENOBUFS first. */
		cr_assert_eq(shmkv_getset(kv, k, kl, "x", 1, &small), -ENOBUFS);
		cr_assert_eq(shmkv_getex(kv, k, kl, SHMKV_GETEX_PERSIST, 0, &v),
			     1);
		cr_assert_eq(shmkv_pttl(kv, k, kl, &ms), 0);
		cr_assert_eq(ms, -1);
		cr_assert_eq(shmkv_delifeq(kv, k, kl, "x", 1), 0);
		cr_assert_eq(shmkv_delifeq(kv, k, kl, k, kl), 1);
		cr_assert_eq(shmkv_incrby(kv, k, kl, i, &n), 0);
		cr_assert_eq(n, i);
		cr_assert_eq(shmkv_expire(kv, k, kl, SHMKV_EXPIRE_SEC,
					  SHMKV_EXPIRE_NX, 50),
			     1);
	}
	cr_assert(on[0] && on[1] && on[2], "keys on every master");
}

struct seen {
	int n;
	char mark[NKEYS];
};

static int visit(const void *key, size_t klen, void *arg)
{
	struct seen *s = arg;
	int i;

	cr_assert(klen > 4 && memcmp(key, "key:", 4) == 0);
	i = atoi((const char *)key + 4);
	cr_assert(i >= 0 && i < NKEYS);
	s->mark[i] = 1;
	s->n++;
	return 0;
}

Test(redis_typed_cluster, scan_and_stats_cover_every_master)
{
	struct seen s = { 0 };
	struct shmkv_stats st;
	uint64_t cur = 0;
	int rounds = 0;
	char k[32];
	shmkv_t *p = open_cluster("?prefix=app:");

	for (int i = 0; i < NKEYS; i++) {
		size_t kl = key_of(i, k);

		cr_assert_eq(shmkv_set(p, k, kl, "v", 1, 0, 0, NULL), 1);
	}
	cr_assert_eq(shmkv_set(kv, "other", 5, "v", 1, 0, 0, NULL), 1);
	do {
		cr_assert_eq(shmkv_scan(p, cur, 20, visit, &s, &cur), 0);
		cr_assert_lt(++rounds, 100000);
	} while (cur != 0);
	for (int i = 0; i < NKEYS; i++)
		cr_assert_eq(s.mark[i], 1, "key:%d not visited", i);
	cr_assert_geq(s.n, NKEYS);
	cr_assert_eq(shmkv_stats(p, &st), 0);
	cr_assert_eq(st.live_keys, NKEYS);
	cr_assert_eq(shmkv_stats(kv, &st), 0);
	cr_assert_eq(st.live_keys, NKEYS + 1, "DBSIZE summed over masters");
	shmkv_close(p);
}
