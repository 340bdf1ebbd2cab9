/*
 * test_redis_lock_evict.c - locks over Redis on a server that may evict
 * their keys (src/redis_policy.c, redis_lock_keys.c's evict check), and a
 * token counter someone else wrote: each test starts its own redis-server
 * (or 3-master cluster) on loopback ports, with the maxmemory-policy it
 * needs, and stops it by pid.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "helpers/redis_test.h"
#include "helpers/rl_target.h"
#include "redis.h"
#include "shmkv_lock.h"

static struct redis_server srv;
static struct rl_target target;
static shmkv_t *kv;
static redisContext *admin;

static void fini(void)
{
	if (kv)
		shmkv_close(kv);
	kv = NULL;
	if (admin)
		redisFree(admin);
	admin = NULL;
	redis_server_cleanup(&srv);
	if (target.cluster)
		rl_target_stop(&target);
}

/* A server with @extra arguments, an admin connection to it, and a
 * handle opened with @query. */
static void start_with(const char *const *extra, const char *query)
{
	struct rt_opts o = { NULL, extra };
	char uri[256];
	int rc = rt_start(&srv, "rlevict", &o);

	if (rc == -2)
		cr_skip_test("no redis-server");
	cr_assert_eq(rc, 0, "could not start redis-server");
	admin = rt_admin(&srv, NULL);
	cr_assert_not_null(admin);
	rt_uri(uri, sizeof(uri), &srv, query);
	cr_assert_eq(shmkv_open(uri, 0, &kv), 0, "%s", uri);
}

static void start_policy(const char *policy, const char *query)
{
	const char *extra[] = { "--maxmemory-policy", policy, NULL };

	start_with(extra, query);
}

static long long dbsize(void)
{
	redisReply *r = redisCommand(admin, "DBSIZE");
	long long n;

	cr_assert(r != NULL && r->type == REDIS_REPLY_INTEGER);
	n = r->integer;
	freeReplyObject(r);
	return n;
}

static int safe_acquire(const char *name)
{
	struct shmkv_lock lk;
	int rc;

	cr_assert_eq(shmkv_lock_init(kv, &lk, name), 0);
	rc = shmkv_lock_try_acquire(&lk, 600000);
	if (rc >= 0)
		cr_assert_eq(shmkv_lock_release(&lk), 0);
	return rc;
}

static int pattern_acquire(const char *name)
{
	struct shmkv_pattern pl;
	int64_t expiry;
	int rc;

	cr_assert_eq(shmkv_pattern_init(kv, &pl, name), 0);
	rc = shmkv_pattern_acquire(&pl, 600000, 0, &expiry);
	if (rc == 0)
		cr_assert_eq(shmkv_pattern_release(&pl, expiry), 0);
	return rc;
}

/* Refused with -ENOTSUP, whose text says why and how to accept, and
 * nothing written. */
static void assert_refused(int rc)
{
	const char *why = shmkv_strerror(rc);

	cr_assert_eq(rc, -ENOTSUP, "got %d (%s)", rc, why);
	cr_assert_not_null(strstr(why, "maxmemory-policy"), "%s", why);
	cr_assert_not_null(strstr(why, "locks_on_evicting_server=1"), "%s",
			   why);
}

Test(redis_lock_evict, an_allkeys_server_refuses_both_locks_and_writes_nothing,
     .fini = fini)
{
	start_policy("allkeys-lru", "");
	assert_refused(safe_acquire("job"));
	assert_refused(pattern_acquire("page"));
	cr_assert_eq(dbsize(), 0);
}

Test(redis_lock_evict,
     a_volatile_server_refuses_the_safe_lock_but_not_the_pattern_lock,
     .fini = fini)
{
	/* The safe lock's record has a PX: volatile-* may evict it. The
	 * pattern lock's key never has a TTL: volatile-* never evicts it. */
	start_policy("volatile-lru", "");
	assert_refused(safe_acquire("job"));
	cr_assert_eq(dbsize(), 0);
	cr_assert_eq(pattern_acquire("page"), 0);
}

Test(redis_lock_evict, the_uri_opt_in_grants_on_an_evicting_server,
     .fini = fini)
{
	start_policy("allkeys-lru", "?locks_on_evicting_server=1");
	cr_assert_eq(safe_acquire("job"), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(pattern_acquire("page"), 0);
}

Test(redis_lock_evict, a_noeviction_server_grants_both_locks, .fini = fini)
{
	start_policy("noeviction", "");
	cr_assert_eq(safe_acquire("job"), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(pattern_acquire("page"), 0);
}

Test(redis_lock_evict, a_renamed_config_command_is_answered_by_info,
     .fini = fini)
{
	const char *extra[] = { "--rename-command",   "CONFIG",	     "",
				"--maxmemory-policy", "allkeys-lfu", NULL };

	start_with(extra, "");
	assert_refused(safe_acquire("job"));
}

Test(redis_lock_evict, a_policy_nobody_may_read_is_refused_unless_accepted,
     .fini = fini)
{
	char uri[256];
	shmkv_t *ok;

	start_policy("noeviction", "");
	/* An ACL user that may run the locks but neither CONFIG nor INFO. */
	cr_assert_eq(rt_cmd_type(admin, REDIS_REPLY_STATUS,
				 "ACL SETUSER locker on >pw ~* &* +@all "
				 "-config -info"),
		     0);
	shmkv_close(kv);
	snprintf(uri, sizeof(uri), "redis://locker:pw@127.0.0.1:%d", srv.port);
	cr_assert_eq(shmkv_open(uri, 0, &kv), 0);
	assert_refused(safe_acquire("job"));
	snprintf(uri, sizeof(uri),
		 "redis://locker:pw@127.0.0.1:%d?locks_on_evicting_server=1",
		 srv.port);
	cr_assert_eq(shmkv_open(uri, 0, &ok), 0);
	shmkv_close(kv);
	kv = ok;
	cr_assert_eq(safe_acquire("job"), SHMKV_LOCK_ACQUIRED);
}

Test(redis_lock_evict, a_policy_set_while_open_is_read_again_at_reconnect,
     .fini = fini)
{
	start_policy("noeviction", "");
	cr_assert_eq(safe_acquire("job"), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(rt_cmd_type(admin, REDIS_REPLY_STATUS,
				 "CONFIG SET maxmemory-policy allkeys-lru"),
		     0);
	/* The handle's connection dropped (a restart, a failover, the
	 * server's client timeout): its next call reconnects, and reads
	 * the policy again. */
	cr_assert_eq(rt_cmd_type(admin, REDIS_REPLY_INTEGER,
				 "CLIENT KILL TYPE normal SKIPME yes"),
		     0);
	assert_refused(safe_acquire("job"));
	cr_assert_eq(rt_cmd_type(admin, REDIS_REPLY_STATUS,
				 "CONFIG SET maxmemory-policy noeviction"),
		     0);
	cr_assert_eq(rt_cmd_type(admin, REDIS_REPLY_INTEGER,
				 "CLIENT KILL TYPE normal SKIPME yes"),
		     0);
	cr_assert_eq(safe_acquire("job"), SHMKV_LOCK_ACQUIRED);
}

struct waiter {
	shmkv_t *kv;
	int rc;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	struct shmkv_lock lk;

	w->rc = shmkv_lock_init(w->kv, &lk, "job");
	if (w->rc == 0)
		w->rc = shmkv_lock_timed_acquire(&lk, 60000, 20000);
	/* A machine stalled past the waiter's sleep lets the kill land on a
	 * request in flight: that call's answer, and a user's cue to call
	 * again, whose first try reads the policy after the reconnect. */
	if (w->rc == -ECONNRESET)
		w->rc = shmkv_lock_timed_acquire(&lk, 60000, 20000);
	return NULL;
}

/* INFO commandstats' count of EVALSHA calls. */
static long evalsha_calls(void)
{
	redisReply *r = redisCommand(admin, "INFO commandstats");
	const char *p;
	long n = 0;

	cr_assert(r != NULL && r->type == REDIS_REPLY_STRING);
	p = strstr(r->str, "cmdstat_evalsha:calls=");
	if (p != NULL)
		n = strtol(p + strlen("cmdstat_evalsha:calls="), NULL, 10);
	freeReplyObject(r);
	return n;
}

Test(redis_lock_evict, a_waiter_reads_the_policy_again_when_it_reconnects,
     .fini = fini)
{
	struct shmkv_lock a;
	struct waiter w = { NULL, 1 };
	char uri[256];
	pthread_t t;
	long calls;
	int i;

	start_policy("noeviction", "");
	rt_uri(uri, sizeof(uri), &srv, "");
	cr_assert_eq(shmkv_lock_init(kv, &a, "job"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 600000), SHMKV_LOCK_ACQUIRED);
	/* Our grant's calls (a NOSCRIPT, then the script loaded). */
	calls = evalsha_calls();
	cr_assert_eq(shmkv_open(uri, 0, &w.kv), 0);
	cr_assert_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
	/* The waiter has tried 8 times, so it sleeps 16 to 32 ms between
	 * tries now (redis_lock.h's backoff) and the kill lands in a sleep,
	 * not on a request in flight (which would be its -ECONNRESET: the
	 * check and the try are two requests). */
	for (i = 0; i < 20000 && evalsha_calls() < calls + 8; i++)
		usleep(1000);
	cr_assert_lt(i, 20000, "the waiter never tried");
	cr_assert_eq(rt_cmd_type(admin, REDIS_REPLY_STATUS,
				 "CONFIG SET maxmemory-policy allkeys-lru"),
		     0);
	cr_assert_eq(rt_cmd_type(admin, REDIS_REPLY_INTEGER,
				 "CLIENT KILL TYPE normal SKIPME yes"),
		     0);
	pthread_join(t, NULL);
	shmkv_close(w.kv);
	assert_refused(w.rc);
}

/* "CONFIG SET maxmemory-policy @policy" on master @m of @c's handle. */
static void set_policy_on_master(shmkv_t *c, int m, const char *policy)
{
	const char *av[4] = { "CONFIG", "SET", "maxmemory-policy", policy };
	size_t al[4] = { 6, 3, 16, strlen(policy) };
	redisReply *rep;

	cr_assert_eq(shmkv__redis_call_master(shmkv__redis_of(c), m, 4, av, al,
					      &rep),
		     0);
	cr_assert_eq(rep->type, REDIS_REPLY_STATUS, "%s",
		     rep->type == REDIS_REPLY_ERROR ? rep->str : "");
	freeReplyObject(rep);
}

Test(redis_lock_evict, a_cluster_with_one_evicting_master_refuses_every_lock,
     .fini = fini, .timeout = 120)
{
	shmkv_t *setup;

	if (redis_server_find() == NULL)
		cr_skip_test("no redis-server");
	cr_assert_eq(rl_target_start(&target, true, "rlevict"), 0);
	cr_assert_eq(rl_target_open(&target, "", &setup), 0);
	cr_assert_eq(shmkv__redis_masters(shmkv__redis_of(setup)), 3);
	set_policy_on_master(setup, 2, "allkeys-lru");
	shmkv_close(setup);
	cr_assert_eq(rl_target_open(&target, "", &kv), 0);
	/* Names on each master, whichever holds the evicting one's slots
	 * (a slot may move there: a failover, a resharding). */
	for (int i = 0; i < 8; i++) {
		char name[16];

		snprintf(name, sizeof(name), "job%d", i);
		assert_refused(safe_acquire(name));
		assert_refused(pattern_acquire(name));
	}
	shmkv_close(kv);
	cr_assert_eq(
		rl_target_open(&target, "?locks_on_evicting_server=1", &kv), 0);
	cr_assert_eq(safe_acquire("job0"), SHMKV_LOCK_ACQUIRED);
}

Test(redis_lock_evict, a_cluster_of_noeviction_masters_grants, .fini = fini,
     .timeout = 120)
{
	if (redis_server_find() == NULL)
		cr_skip_test("no redis-server");
	cr_assert_eq(rl_target_start(&target, true, "rlevict"), 0);
	cr_assert_eq(rl_target_open(&target, "", &kv), 0);
	for (int i = 0; i < 8; i++) {
		char name[16];

		snprintf(name, sizeof(name), "job%d", i);
		cr_assert_eq(safe_acquire(name), SHMKV_LOCK_ACQUIRED);
		cr_assert_eq(pattern_acquire(name), 0);
	}
}

/* The counter hash of lock "job" with @field set to @value, then each
 * safe-lock call that reads it: -EBADMSG, whose text names the counter. */
static void assert_bad_counter(const char *field, const char *value)
{
	struct shmkv_lock lk;
	const char *why;
	int rc;

	cr_assert_eq(rt_cmd_type(admin, REDIS_REPLY_INTEGER,
				 "HSET lock.{job}:token %s %s", field, value),
		     0);
	cr_assert_eq(shmkv_lock_init(kv, &lk, "job"), 0);
	rc = shmkv_lock_try_acquire(&lk, 60000);
	why = shmkv_strerror(rc);
	cr_assert_eq(rc, -EBADMSG, "%s=%s: got %d (%s)", field, value, rc, why);
	cr_assert_not_null(strstr(why, "token counter"), "%s", why);
	cr_assert_eq(shmkv_lock_release(&lk), -EBADMSG);
	cr_assert_eq(shmkv_lock_extend(&lk, SHMKV_LOCK_EXTEND_ADD, 1000),
		     -EBADMSG);
	/* Nothing was granted. */
	cr_assert_eq(rt_cmd_type(admin, REDIS_REPLY_NIL, "GET lock.{job}"), 0);
	cr_assert_eq(
		rt_cmd_type(admin, REDIS_REPLY_INTEGER, "DEL lock.{job}:token"),
		0);
}

Test(redis_lock_evict,
     a_token_counter_field_that_is_not_a_number_is_ebadmsg_saying_so,
     .fini = fini)
{
	start_policy("noeviction", "");
	assert_bad_counter("t", "abc");
	assert_bad_counter("t", "-1");
	assert_bad_counter("t", "1.5");
	assert_bad_counter("r", "x");
	/* A counter in order still works. */
	cr_assert_eq(safe_acquire("job"), SHMKV_LOCK_ACQUIRED);
}
