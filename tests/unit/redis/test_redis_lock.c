/*
 * test_redis_lock.c - the safe lock and the pattern lock on a Redis store
 * (src/redis_lock*.c), each test on one redis-server and again on a
 * 3-master cluster, both started by the test on loopback ports and
 * stopped by pid. Children are real processes (fork) with their own
 * handles; they never assert: they report through their exit status or a
 * pipe, and the parent asserts. No assertion depends on how long anything
 * took; waits for a lease to end poll the server, bounded by a count.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "helpers/rl_target.h"
#include "lock_record.h"
#include "redis.h"
#include "redis_lock.h"
#include "shmkv_lock.h"

static struct rl_target target;
static shmkv_t *kv;

static void fini(void)
{
	if (kv)
		shmkv_close(kv);
	kv = NULL;
	rl_target_stop(&target);
}

static void start(bool cluster)
{
	if (redis_server_find() == NULL)
		cr_skip_test("no redis-server");
	cr_assert_eq(rl_target_start(&target, cluster, "rlock"), 0,
		     "could not start the Redis target");
	cr_assert_eq(rl_target_open(&target, "", &kv), 0);
}

/* Each test body runs on both targets. */
#define RL_TEST(name)                                                          \
	static void name##_body(void);                                         \
	Test(redis_lock, name, .fini = fini)                                   \
	{                                                                      \
		start(false);                                                  \
		name##_body();                                                 \
	}                                                                      \
	Test(redis_lock_cluster, name, .fini = fini, .timeout = 120)           \
	{                                                                      \
		start(true);                                                   \
		name##_body();                                                 \
	}                                                                      \
	static void name##_body(void)

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static long long int_reply(redisReply *r)
{
	long long v;

	cr_assert_not_null(r, "transport error");
	cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "not an integer: %d %s",
		     r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
	v = r->integer;
	freeReplyObject(r);
	return v;
}

/* Polls until @key no longer exists (its PX ran out): bounded by a count
 * of polls, not a time. */
static void wait_gone(const char *key)
{
	for (int i = 0; i < 20000; i++) {
		if (int_reply(rl_cmd(kv, "EXISTS", key, NULL)) == 0)
			return;
		sleep_ms(1);
	}
	cr_assert_fail("%s never expired", key);
}

Test(redis_lock, script_shas_are_the_servers, .fini = fini)
{
	start(false);
	for (int i = 0; i < SHMKV__RL_SCRIPTS; i++) {
		redisReply *r = rl_cmd(kv, "SCRIPT", "LOAD",
				       shmkv__rl_script_body[i], NULL);

		cr_assert_not_null(r);
		cr_assert_eq(r->type, REDIS_REPLY_STRING);
		cr_assert_str_eq(r->str, shmkv__rl_script_sha[i],
				 "script %d's SHA1 is %s", i, r->str);
		freeReplyObject(r);
	}
}

RL_TEST(grants_tokens_and_refuses_a_second_holder)
{
	struct shmkv_lock a, b;

	cr_assert_eq(shmkv_lock_init(kv, &a, "job"), 0);
	cr_assert_eq(shmkv_lock_init(kv, &b, "job"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_token(&a), 1);
	cr_assert_eq(shmkv_lock_held(&a), 1);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), -EDEADLK);
	cr_assert_eq(shmkv_lock_try_acquire(&b, 60000), -EBUSY);
	cr_assert_eq(shmkv_lock_held(&b), 0);
	cr_assert_eq(shmkv_lock_release(&a), 0);
	cr_assert_eq(shmkv_lock_held(&a), 0);
	cr_assert_eq(shmkv_lock_release(&a), SHMKV_LOCK_NOT_HELD);
	cr_assert_eq(shmkv_lock_try_acquire(&b, 60000), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_token(&b), 2);
	cr_assert_eq(shmkv_lock_release(&b), 0);
	/* The record is gone, the counter stays: the token goes on. */
	cr_assert_eq(int_reply(rl_cmd(kv, "EXISTS", "lock.{job}", NULL)), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_token(&a), 3);
	cr_assert_eq(shmkv_lock_release(&a), 0);
}

RL_TEST(bad_arguments_are_refused_and_change_nothing)
{
	struct shmkv_lock a;
	char long_name[SHMKV_LOCK_NAME_MAX + 2];

	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	cr_assert_eq(shmkv_lock_init(kv, &a, ""), -EINVAL);
	cr_assert_eq(shmkv_lock_init(kv, &a, NULL), -EINVAL);
	cr_assert_eq(shmkv_lock_init(kv, &a, long_name), -ENAMETOOLONG);
	cr_assert_eq(shmkv_lock_init(kv, &a, "x"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 0), -EINVAL);
	cr_assert_eq(shmkv_lock_try_acquire(&a, SHMKV_LOCK_LEASE_MAX + 1),
		     -EINVAL);
	cr_assert_eq(shmkv_lock_timed_acquire(&a, 1000, -2), -EINVAL);
	cr_assert_eq(shmkv_lock_extend(&a, 7, 1000), -EINVAL);
	cr_assert_eq(shmkv_lock_extend(&a, SHMKV_LOCK_EXTEND_ADD, 0), -EINVAL);
	cr_assert_eq(int_reply(rl_cmd(kv, "EXISTS", "lock.{x}", NULL)), 0);
	/* A key that is not an owner record. */
	freeReplyObject(rl_cmd(kv, "SET", "lock.{x}", "hello", NULL));
	cr_assert_eq(shmkv_lock_try_acquire(&a, 1000), -EEXIST);
}

RL_TEST(release_by_a_non_owner_is_not_owner_and_changes_nothing)
{
	struct shmkv_lock a, b;

	cr_assert_eq(shmkv_lock_init(kv, &a, "r"), 0);
	cr_assert_eq(shmkv_lock_init(kv, &b, "r"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_release(&b), SHMKV_LOCK_NOT_OWNER);
	cr_assert_eq(shmkv_lock_extend(&b, SHMKV_LOCK_EXTEND_ADD, 10),
		     SHMKV_LOCK_NOT_OWNER);
	cr_assert_eq(shmkv_lock_held(&a), 1);
	cr_assert_eq(shmkv_lock_release(&a), 0);
}

RL_TEST(lease_expiry_frees_the_lock_and_is_reported)
{
	struct shmkv_lock a, b;

	cr_assert_eq(shmkv_lock_init(kv, &a, "lease"), 0);
	cr_assert_eq(shmkv_lock_init(kv, &b, "lease"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 30), SHMKV_LOCK_ACQUIRED);
	wait_gone("lock.{lease}");
	cr_assert_eq(shmkv_lock_held(&a), 0);
	/* Expired, nobody took it: extend cannot renew it. */
	cr_assert_eq(shmkv_lock_extend(&a, SHMKV_LOCK_EXTEND_ADD, 1000),
		     SHMKV_LOCK_NOT_HELD);
	cr_assert_eq(shmkv_lock_try_acquire(&b, 60000),
		     SHMKV_LOCK_LEASE_EXPIRED);
	cr_assert_eq(shmkv_lock_token(&b), 2);
	/* a's grant was overlapped: its release must say so, and leave
	 * b's grant alone. */
	cr_assert_eq(shmkv_lock_release(&a), SHMKV_LOCK_NOT_OWNER);
	cr_assert_eq(shmkv_lock_held(&b), 1);
	cr_assert_eq(shmkv_lock_release(&b), 0);
	/* Released: the next grant is plain ACQUIRED. */
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_token(&a), 3);
}

RL_TEST(release_after_the_lease_ran_out_unclaimed_is_not_held)
{
	struct shmkv_lock a;

	cr_assert_eq(shmkv_lock_init(kv, &a, "late"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 20), SHMKV_LOCK_ACQUIRED);
	wait_gone("lock.{late}");
	cr_assert_eq(shmkv_lock_release(&a), SHMKV_LOCK_NOT_HELD);
}

RL_TEST(extend_adds_or_replaces_the_lease)
{
	struct shmkv_lock a;
	long long left;

	cr_assert_eq(shmkv_lock_init(kv, &a, "ext"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 10000), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_extend(&a, SHMKV_LOCK_EXTEND_ADD, 100000), 0);
	left = int_reply(rl_cmd(kv, "PTTL", "lock.{ext}", NULL));
	cr_assert(left > 100000 && left <= 110000, "PTTL %lld", left);
	cr_assert_eq(shmkv_lock_extend(&a, SHMKV_LOCK_EXTEND_REPLACE, 5000), 0);
	left = int_reply(rl_cmd(kv, "PTTL", "lock.{ext}", NULL));
	cr_assert(left > 0 && left <= 5000, "PTTL %lld", left);
	cr_assert_eq(shmkv_lock_extend(&a, SHMKV_LOCK_EXTEND_ADD,
				       SHMKV_LOCK_LEASE_MAX),
		     -EINVAL);
	cr_assert_eq(shmkv_lock_token(&a), 1);
	cr_assert_eq(shmkv_lock_held(&a), 1);
	cr_assert_eq(shmkv_lock_release(&a), 0);
	cr_assert_eq(shmkv_lock_extend(&a, SHMKV_LOCK_EXTEND_ADD, 10),
		     SHMKV_LOCK_NOT_HELD);
}

RL_TEST(timed_acquire_times_out_and_try_says_busy)
{
	struct shmkv_lock a, b;

	cr_assert_eq(shmkv_lock_init(kv, &a, "t"), 0);
	cr_assert_eq(shmkv_lock_init(kv, &b, "t"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_timed_acquire(&b, 1000, 0), -EBUSY);
	cr_assert_eq(shmkv_lock_timed_acquire(&b, 1000, 50), -ETIMEDOUT);
	cr_assert_eq(shmkv_lock_held(&a), 1);
}

RL_TEST(a_blocked_acquire_gets_the_lock_when_its_lease_ends)
{
	struct shmkv_lock a, b;

	cr_assert_eq(shmkv_lock_init(kv, &a, "blk"), 0);
	cr_assert_eq(shmkv_lock_init(kv, &b, "blk"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 100), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_acquire(&b, 60000), SHMKV_LOCK_LEASE_EXPIRED);
	cr_assert_eq(shmkv_lock_token(&b), 2);
}

RL_TEST(scripts_flushed_between_calls_are_loaded_again)
{
	struct shmkv_lock a;

	cr_assert_eq(shmkv_lock_init(kv, &a, "ns"), 0);
	cr_assert_eq(rl_cmd_all(kv, "SCRIPT", "FLUSH"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(rl_cmd_all(kv, "SCRIPT", "FLUSH"), 0);
	cr_assert_eq(shmkv_lock_extend(&a, SHMKV_LOCK_EXTEND_ADD, 10), 0);
	cr_assert_eq(rl_cmd_all(kv, "SCRIPT", "FLUSH"), 0);
	cr_assert_eq(shmkv_lock_release(&a), 0);
}

RL_TEST(names_with_braces_keep_both_keys_in_one_slot)
{
	static const char *names[] = { "{", "}", "}x{", "a{b}c", "%7B", "{}" };
	struct shmkv__rl_keys k1, k2;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct shmkv_lock a;

		cr_assert_eq(shmkv__rl_keys(shmkv__redis_of(kv), names[i],
					    strlen(names[i]), &k1),
			     0);
		cr_assert_eq(shmkv__redis_key_slot(k1.rec, k1.rec_len),
			     shmkv__redis_key_slot(k1.ctr, k1.ctr_len), "%s",
			     names[i]);
		cr_assert_eq(shmkv_lock_init(kv, &a, names[i]), 0);
		cr_assert_eq(shmkv_lock_try_acquire(&a, 60000),
			     SHMKV_LOCK_ACQUIRED, "%s", names[i]);
		cr_assert_eq(shmkv_lock_release(&a), 0);
	}
	/* Distinct names, distinct keys ("%7B" is not "{"). */
	cr_assert_eq(shmkv__rl_keys(shmkv__redis_of(kv), "{", 1, &k1), 0);
	cr_assert_eq(shmkv__rl_keys(shmkv__redis_of(kv), "%7B", 3, &k2), 0);
	cr_assert(k1.rec_len != k2.rec_len ||
		  memcmp(k1.rec, k2.rec, k1.rec_len) != 0);
}

/* A child that takes lock @name on its own handle, reports its token on
 * @fd, and waits to be killed. Never returns. */
static void holder_child(const char *name, int64_t lease, const char *boot,
			 int fd)
{
	struct shmkv_lock lk;
	shmkv_t *c;
	uint64_t token = 0;

	if (boot)
		snprintf(shmkv__redis_fake_boot_id,
			 sizeof(shmkv__redis_fake_boot_id), "%s", boot);
	if (rl_target_open(&target, "", &c) == 0 &&
	    shmkv_lock_init(c, &lk, name) == 0 &&
	    shmkv_lock_try_acquire(&lk, lease) >= 0)
		token = shmkv_lock_token(&lk);
	if (write(fd, &token, sizeof(token)) != sizeof(token))
		_exit(2);
	for (;;)
		pause();
}

/* Forks a holder of @name and returns its pid; its token in *@token. */
static pid_t spawn_holder(const char *name, int64_t lease, const char *boot,
			  uint64_t *token)
{
	int p[2];
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		holder_child(name, lease, boot, p[1]);
	}
	close(p[1]);
	cr_assert_eq(read(p[0], token, sizeof(*token)), sizeof(*token));
	close(p[0]);
	cr_assert_gt(*token, 0, "the child could not take the lock");
	return pid;
}

static void kill9(pid_t pid)
{
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
}

RL_TEST(killed_holder_on_this_host_is_taken_over_at_once)
{
	struct shmkv_lock a;
	uint64_t token;
	pid_t pid = spawn_holder("dead", 3600000, NULL, &token);

	cr_assert_eq(shmkv_lock_init(kv, &a, "dead"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), -EBUSY);
	kill9(pid);
	/* An hour of lease left: only the dead-owner rule can grant it. */
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), SHMKV_LOCK_OWNER_DEAD);
	cr_assert_gt(shmkv_lock_token(&a), token);
	cr_assert_eq(shmkv_lock_release(&a), 0);
}

RL_TEST(killed_holder_on_another_host_is_waited_out_to_its_lease)
{
	struct shmkv_lock a;
	uint64_t token;
	pid_t pid = spawn_holder("far", 3000, "another-host-boot-id", &token);
	long long left;

	kill9(pid);
	cr_assert_eq(shmkv_lock_init(kv, &a, "far"), 0);
	/* Its pid is dead here, but it is another host's pid. */
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), -EBUSY);
	left = int_reply(rl_cmd(kv, "PTTL", "lock.{far}", NULL));
	cr_assert_gt(left, 0);
	cr_assert_eq(shmkv_lock_acquire(&a, 60000), SHMKV_LOCK_LEASE_EXPIRED);
	cr_assert_gt(shmkv_lock_token(&a), token);
}

RL_TEST(holder_in_another_pid_namespace_is_not_judged)
{
	struct shmkv_lock a;
	struct shmkv__rl_self me;
	char rec[256];

	/* A record of this host, a dead pid, another namespace. */
	shmkv__rl_self(&me);
	snprintf(rec, sizeof(rec), "7:%s:%u:%u:0:1:1:h", me.boot, me.ns + 1,
		 (unsigned)0x3ffffff0);
	freeReplyObject(
		rl_cmd(kv, "SET", "lock.{pidns}", rec, "PX", "60000", NULL));
	cr_assert_eq(shmkv_lock_init(kv, &a, "pidns"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), -EBUSY);
	/* The same record in our namespace: dead, taken over. */
	snprintf(rec, sizeof(rec), "7:%s:%u:%u:0:1:1:h", me.boot, me.ns,
		 (unsigned)0x3ffffff0);
	freeReplyObject(
		rl_cmd(kv, "SET", "lock.{pidns}", rec, "PX", "60000", NULL));
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), SHMKV_LOCK_OWNER_DEAD);
}

RL_TEST(forked_child_does_not_own_its_parents_grant)
{
	struct shmkv_lock a;
	pid_t pid;
	int st;

	cr_assert_eq(shmkv_lock_init(kv, &a, "fork"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), SHMKV_LOCK_ACQUIRED);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* The inherited handle: a fresh connection, not the grant. */
		int held = shmkv_lock_held(&a);
		int rc = shmkv_lock_release(&a);

		_exit(held == 0 && rc == SHMKV_LOCK_NOT_OWNER ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(shmkv_lock_held(&a), 1);
	cr_assert_eq(shmkv_lock_release(&a), 0);
}

/* Starts redis-server again on @port with its data in @dir (the RDB the
 * old one saved), dying with us; waits until it answers. Return: pid. */
static pid_t restart_on(int port, const char *dir)
{
	char ports[16];
	pid_t parent = getpid(), pid;

	snprintf(ports, sizeof(ports), "%d", port);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 ||
		    getppid() != parent)
			_exit(127);
		dup2(fd, 1);
		dup2(fd, 2);
		execlp(redis_server_find(), "redis-server", "--port", ports,
		       "--bind", "127.0.0.1", "--dir", dir, "--save", "",
		       "--appendonly", "no", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 3000; i++) {
		struct timeval tv = { 1, 0 };
		redisContext *c = redisConnectWithTimeout("127.0.0.1", port,
							  tv);
		redisReply *r = c && !c->err ? redisCommand(c, "PING") : NULL;
		bool up = r && r->type == REDIS_REPLY_STATUS;

		if (r)
			freeReplyObject(r);
		if (c)
			redisFree(c);
		if (up)
			return pid;
		sleep_ms(10);
	}
	cr_assert_fail("redis-server did not come back on port %d", port);
	return -1;
}

/* The server restarted between two calls, its data back from its RDB
 * and its script cache empty: the handle reconnects, NOSCRIPT loads the
 * scripts again, and the tokens go on from the saved counter. */
Test(redis_lock, a_restarted_server_keeps_the_lock_and_reloads_scripts,
     .fini = fini)
{
	struct shmkv_lock a, b;
	char dir[] = "/tmp/rlock-restart-XXXXXX", path[64];
	redisReply *r;
	int rc;

	start(false);
	cr_assert_not_null(mkdtemp(dir));
	/* Our own server on the target's port, its data in @dir: the
	 * helper's writes its RDB to /tmp, shared, and Redis 7 refuses
	 * CONFIG SET dir. */
	redis_server_stop(&target.s);
	target.s.pid = restart_on(target.s.port, dir);
	cr_assert_eq(shmkv_lock_init(kv, &a, "rs"), 0);
	cr_assert_eq(shmkv_lock_init(kv, &b, "rs"), 0);
	rc = shmkv_lock_try_acquire(&a, 60000);
	cr_assert_eq(rc, 0, "%d", rc);
	cr_assert_eq(shmkv_lock_release(&a), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), 0);
	cr_assert_eq(shmkv_lock_token(&a), 2);
	r = rl_cmd(kv, "SAVE", NULL);
	cr_assert(r && r->type == REDIS_REPLY_STATUS);
	freeReplyObject(r);
	redis_server_stop(&target.s);
	target.s.pid = restart_on(target.s.port, dir);
	rc = shmkv_lock_try_acquire(&b, 60000);
	cr_assert_eq(rc, -EBUSY, "%d", rc);
	cr_assert_eq(shmkv_lock_extend(&a, SHMKV_LOCK_EXTEND_ADD, 10), 0);
	cr_assert_eq(shmkv_lock_release(&a), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&b, 60000), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_token(&b), 3);
	snprintf(path, sizeof(path), "%s/dump.rdb", dir);
	unlink(path);
	rmdir(dir);
}

/* A server that lost everything (no persistence): the grant is gone, and
 * so is the counter; documented, not hidden. */
Test(redis_lock, a_server_that_lost_its_data_loses_the_grant, .fini = fini)
{
	struct shmkv_lock a;

	start(false);
	cr_assert_eq(shmkv_lock_init(kv, &a, "lost"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), 0);
	cr_assert_eq(rl_cmd_all(kv, "FLUSHALL", NULL), 0);
	cr_assert_eq(rl_cmd_all(kv, "SCRIPT", "FLUSH"), 0);
	cr_assert_eq(shmkv_lock_held(&a), 0);
	cr_assert_eq(shmkv_lock_release(&a), SHMKV_LOCK_NOT_HELD);
}

RL_TEST(tokens_rise_across_releases_expiries_and_kills)
{
	struct shmkv_lock a;
	uint64_t last = 0, token;

	cr_assert_eq(shmkv_lock_init(kv, &a, "mix"), 0);
	for (int round = 0; round < 8; round++) {
		pid_t pid = spawn_holder("mix", 3600000, NULL, &token);

		cr_assert_gt(token, last);
		kill9(pid);
		cr_assert_eq(shmkv_lock_try_acquire(&a, 60000),
			     SHMKV_LOCK_OWNER_DEAD);
		cr_assert_gt(shmkv_lock_token(&a), token);
		last = shmkv_lock_token(&a);
		if (round % 2) {
			cr_assert_eq(shmkv_lock_release(&a), 0);
		} else { /* a short lease, left to run out */
			cr_assert_eq(shmkv_lock_extend(
					     &a, SHMKV_LOCK_EXTEND_REPLACE, 5),
				     0);
			wait_gone("lock.{mix}");
		}
		cr_assert_eq(shmkv_lock_try_acquire(&a, 60000),
			     round % 2 ? SHMKV_LOCK_ACQUIRED
				       : SHMKV_LOCK_LEASE_EXPIRED);
		cr_assert_gt(shmkv_lock_token(&a), last);
		last = shmkv_lock_token(&a);
		cr_assert_eq(shmkv_lock_release(&a), 0);
	}
}

struct waiter {
	struct shmkv_lock *lk;
	int rc;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->rc = shmkv_lock_acquire(w->lk, 60000);
	return NULL;
}

/* A waiter blocked on one handle must not hold its mutex while it
 * sleeps: the holder releases through the same handle meanwhile. */
RL_TEST(a_blocked_waiter_leaves_the_shared_handle_usable)
{
	struct shmkv_lock a, b;
	struct waiter w = { .lk = &b, .rc = -1 };
	pthread_t th;

	cr_assert_eq(shmkv_lock_init(kv, &a, "share"), 0);
	cr_assert_eq(shmkv_lock_init(kv, &b, "share"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 3600000), 0);
	cr_assert_eq(pthread_create(&th, NULL, wait_thread, &w), 0);
	/* Until the waiter has polled a few times (it cannot have won). */
	sleep_ms(50);
	cr_assert_eq(shmkv_lock_held(&a), 1);
	cr_assert_eq(shmkv_lock_release(&a), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(w.rc, SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_token(&b), 2);
}

static int count_lock(const struct shmkv_lock_info *info, void *arg)
{
	(void)info;
	(void)arg;
	return 0;
}

/* No server: every call is an error (never a grant, a "busy" or a
 * release that did not happen), and the holder still holds after. */
Test(redis_lock, a_dead_server_gives_errors_never_answers, .fini = fini)
{
	struct shmkv_lock a, b;
	struct shmkv_pattern p;
	int64_t e;
	int rc;

	start(false);
	cr_assert_eq(shmkv_lock_init(kv, &a, "gone"), 0);
	cr_assert_eq(shmkv_lock_init(kv, &b, "gone"), 0);
	cr_assert_eq(shmkv_pattern_init(kv, &p, "pgone"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), 0);
	redis_server_stop(&target.s);
	rc = shmkv_lock_try_acquire(&b, 60000);
	cr_assert(rc < 0 && rc != -EBUSY, "%d", rc);
	rc = shmkv_lock_timed_acquire(&b, 60000, 100);
	cr_assert(rc < 0 && rc != -ETIMEDOUT, "%d", rc);
	rc = shmkv_lock_release(&a);
	cr_assert(rc < 0 && rc != SHMKV_LOCK_NOT_OWNER &&
			  rc != SHMKV_LOCK_NOT_HELD,
		  "%d", rc);
	rc = shmkv_lock_extend(&a, SHMKV_LOCK_EXTEND_ADD, 10);
	cr_assert(rc < 0 && rc != SHMKV_LOCK_NOT_OWNER &&
			  rc != SHMKV_LOCK_NOT_HELD,
		  "%d", rc);
	cr_assert_eq(shmkv_lock_held(&a), 0);
	rc = shmkv_pattern_acquire(&p, 1000, 0, &e);
	cr_assert(rc < 0 && rc != -EBUSY, "%d", rc);
	cr_assert_lt(shmkv_lock_list(kv, count_lock, NULL), 0);
	/* The grant is still the handle's: it was never given back. */
	cr_assert_gt(shmkv_lock_token(&a), 0);
}

RL_TEST(stopped_holder_on_this_host_is_alive)
{
	struct shmkv_lock a;
	uint64_t token;
	pid_t pid = spawn_holder("stop", 3600000, NULL, &token);

	cr_assert_eq(kill(pid, SIGSTOP), 0);
	cr_assert_eq(shmkv_lock_init(kv, &a, "stop"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), -EBUSY);
	kill9(pid);
	cr_assert_eq(shmkv_lock_try_acquire(&a, 60000), SHMKV_LOCK_OWNER_DEAD);
}
