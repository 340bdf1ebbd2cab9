/*
 * test_redis_lock_mp.c - the locks over Redis under contention from real
 * processes, the pattern lock's SETNX-page behaviour, and the lock list;
 * each on one redis-server and on a 3-master cluster started by the test.
 * Children never assert: they exit with a code the parent checks.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "helpers/rl_target.h"
#include "lock_record.h"
#include "redis.h"
#include "redis_lock.h"
#include "shmkv_lock.h"

#define NPROC 4
#define ITERS 150

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
	cr_assert_eq(rl_target_start(&target, cluster, "rlockmp"), 0,
		     "could not start the Redis target");
	cr_assert_eq(rl_target_open(&target, "", &kv), 0);
}

#define RL_TEST(name)                                                          \
	static void name##_body(void);                                         \
	Test(redis_lock_mp, name, .fini = fini, .timeout = 300)                \
	{                                                                      \
		start(false);                                                  \
		name##_body();                                                 \
	}                                                                      \
	Test(redis_lock_mp_cluster, name, .fini = fini, .timeout = 300)        \
	{                                                                      \
		start(true);                                                   \
		name##_body();                                                 \
	}                                                                      \
	static void name##_body(void)

static long long int_of(redisReply *r)
{
	long long v = -1;

	if (r && r->type == REDIS_REPLY_STRING)
		v = strtoll(r->str, NULL, 10);
	else if (r && r->type == REDIS_REPLY_INTEGER)
		v = r->integer;
	if (r)
		freeReplyObject(r);
	return v;
}

/*
 * A child: ITERS times, take the lock, read the counter, yield, write it
 * back plus one (a lost update if two were inside), and append the grant's
 * token to a list (the order of grants). Exit 0, or the step that failed.
 */
static int counter_child(bool pattern)
{
	char key[] = "ctr{x}", toks[] = "toks{x}", buf[32];
	struct shmkv_lock lk;
	struct shmkv_pattern pl;
	shmkv_t *c;

	if (rl_target_open(&target, "", &c) != 0)
		return 10;
	if (pattern ? shmkv_pattern_init(c, &pl, "ctr")
		    : shmkv_lock_init(c, &lk, "ctr"))
		return 11;
	for (int i = 0; i < ITERS; i++) {
		int64_t expiry;
		long long v;

		if (pattern ? shmkv_pattern_acquire(&pl, 60000, -1, &expiry)
			    : shmkv_lock_acquire(&lk, 60000) < 0)
			return 12;
		v = int_of(rl_cmd(c, "GET", key, NULL));
		sched_yield();
		snprintf(buf, sizeof(buf), "%lld", v < 0 ? 1 : v + 1);
		freeReplyObject(rl_cmd(c, "SET", key, buf, NULL));
		if (!pattern) {
			snprintf(buf, sizeof(buf), "%llu",
				 (unsigned long long)shmkv_lock_token(&lk));
			freeReplyObject(rl_cmd(c, "RPUSH", toks, buf, NULL));
		}
		if (pattern ? shmkv_pattern_release(&pl, expiry)
			    : shmkv_lock_release(&lk))
			return 13;
	}
	shmkv_close(c);
	return 0;
}

static void run_counter(bool pattern)
{
	pid_t pid[NPROC];
	redisReply *r;

	for (int i = 0; i < NPROC; i++) {
		pid[i] = fork();
		cr_assert_geq(pid[i], 0);
		if (pid[i] == 0)
			_exit(counter_child(pattern));
	}
	for (int i = 0; i < NPROC; i++) {
		int st;

		cr_assert_eq(waitpid(pid[i], &st, 0), pid[i]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "child %d: status %d", i, st);
	}
	cr_assert_eq(int_of(rl_cmd(kv, "GET", "ctr{x}", NULL)), NPROC * ITERS,
		     "lost updates: not mutually exclusive");
	if (pattern)
		return;
	/* Tokens strictly increase in the order the grants happened. */
	r = rl_cmd(kv, "LRANGE", "toks{x}", "0", "-1", NULL);
	cr_assert_not_null(r);
	cr_assert_eq(r->elements, NPROC * ITERS);
	for (size_t i = 1; i < r->elements; i++)
		cr_assert_lt(strtoull(r->element[i - 1]->str, NULL, 10),
			     strtoull(r->element[i]->str, NULL, 10),
			     "token %zu not above the one before", i);
	freeReplyObject(r);
}

RL_TEST(safe_lock_excludes_under_contention_with_rising_tokens)
{
	run_counter(false);
}

RL_TEST(pattern_lock_excludes_under_contention)
{
	run_counter(true);
}

/* The pattern hook's writer: a fresh holder's time, written between our
 * GET and GETSET (the page's "C5 was faster"). */
static shmkv_t *hook_kv;

static void c5_was_faster(enum shmkv__pattern_step s)
{
	char t[32];

	if (s != SHMKV__PATTERN_SAW_EXPIRED)
		return;
	snprintf(t, sizeof(t), "%lld", (long long)shmkv__unix_ms() + 600000);
	freeReplyObject(rl_cmd(hook_kv, "SET", "lock.{pg}", t, NULL));
}

RL_TEST(pattern_lock_follows_the_setnx_page)
{
	struct shmkv_pattern a, b;
	int64_t ea, eb, now;
	char t[32];

	cr_assert_eq(shmkv_pattern_init(kv, &a, "pg"), 0);
	cr_assert_eq(shmkv_pattern_init(kv, &b, "pg"), 0);
	now = shmkv__unix_ms();
	cr_assert_eq(shmkv_pattern_acquire(&a, 60000, 0, &ea), 0);
	/* SETNX wrote now + timeout + 1. */
	cr_assert_geq(ea, now + 60001);
	cr_assert_eq(int_of(rl_cmd(kv, "GET", "lock.{pg}", NULL)), ea);
	cr_assert_eq(shmkv_pattern_acquire(&b, 60000, 0, &eb), -EBUSY);
	cr_assert_eq(shmkv_pattern_acquire(&b, 60000, 30, &eb), -ETIMEDOUT);
	cr_assert_eq(shmkv_pattern_release(&a, ea), 0);
	cr_assert_eq(shmkv_pattern_release(&a, ea), -ENOLCK);
	/* A crashed holder's expired time: taken over by GETSET. */
	snprintf(t, sizeof(t), "%lld", (long long)shmkv__unix_ms() - 1000);
	freeReplyObject(rl_cmd(kv, "SET", "lock.{pg}", t, NULL));
	cr_assert_eq(shmkv_pattern_acquire(&b, 60000, 0, &eb), 0);
	cr_assert_eq(int_of(rl_cmd(kv, "GET", "lock.{pg}", NULL)), eb);
	/* A release past the expiry deletes nothing. */
	cr_assert_eq(shmkv_pattern_release(&b, shmkv__unix_ms() - 1),
		     -ETIMEDOUT);
	cr_assert_eq(int_of(rl_cmd(kv, "GET", "lock.{pg}", NULL)), eb);
	/* Expired again, but another client's GETSET comes first: ours
	 * reads its valid time back and we are busy. */
	freeReplyObject(rl_cmd(kv, "SET", "lock.{pg}", t, NULL));
	hook_kv = kv;
	shmkv__pattern_hook = c5_was_faster;
	cr_assert_eq(shmkv_pattern_acquire(&a, 60000, 0, &ea), -EBUSY);
	shmkv__pattern_hook = NULL;
	/* Not a time: another kind of lock. */
	freeReplyObject(
		rl_cmd(kv, "SET", "lock.{pg}", "1:x:1:1:1:1:1:h", NULL));
	cr_assert_eq(shmkv_pattern_acquire(&a, 60000, 0, &ea), -EEXIST);
}

RL_TEST(safe_lock_and_pattern_lock_of_one_name_refuse_each_other)
{
	struct shmkv_pattern p;
	struct shmkv_lock l;
	int64_t e;

	cr_assert_eq(shmkv_pattern_init(kv, &p, "both"), 0);
	cr_assert_eq(shmkv_lock_init(kv, &l, "both"), 0);
	cr_assert_eq(shmkv_pattern_acquire(&p, 60000, 0, &e), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&l, 60000), -EEXIST);
	cr_assert_eq(shmkv_pattern_release(&p, e), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&l, 60000), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_pattern_acquire(&p, 60000, 0, &e), -EEXIST);
}

struct seen {
	int n;
	char names[8][32];
	struct shmkv_lock_info info[8];
};

static int collect(const struct shmkv_lock_info *info, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%.*s",
			 (int)info->name_len, info->name);
		s->info[s->n++] = *info;
	}
	return 0;
}

static const struct shmkv_lock_info *find(const struct seen *s,
					  const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->names[i], name) == 0)
			return &s->info[i];
	return NULL;
}

RL_TEST(lock_list_finds_every_lock_on_every_master_under_the_prefix)
{
	static const char *names[] = { "alpha", "b{r}ace", "gamma", "d%lt" };
	struct shmkv_lock lk[4], other;
	struct seen s = { 0 };
	const struct shmkv_lock_info *i;
	shmkv_t *pk;

	cr_assert_eq(rl_target_open(&target, "?prefix=app:", &pk), 0);
	for (int n = 0; n < 4; n++) {
		cr_assert_eq(shmkv_lock_init(pk, &lk[n], names[n]), 0);
		cr_assert_eq(shmkv_lock_try_acquire(&lk[n], 60000), 0);
	}
	cr_assert_eq(shmkv_lock_release(&lk[2]), 0);
	/* Another prefix's lock is not ours to list. */
	cr_assert_eq(shmkv_lock_init(kv, &other, "alpha"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&other, 60000), 0);
	cr_assert_eq(shmkv_lock_list(pk, collect, &s), 4);
	for (int n = 0; n < 4; n++)
		cr_assert_not_null(find(&s, names[n]), "%s not listed",
				   names[n]);
	i = find(&s, "b{r}ace");
	cr_assert_eq(i->held, 1);
	cr_assert_eq(i->alive, 1);
	cr_assert_eq(i->pid, (uint32_t)getpid());
	cr_assert_eq(i->token, 1);
	cr_assert(i->lease_left_ms > 0 && i->lease_left_ms <= 60000);
	i = find(&s, "gamma");
	cr_assert_eq(i->held, 0);
	cr_assert_eq(i->alive, -1);
	cr_assert_eq(i->token, 1);
	shmkv_close(pk);
}
