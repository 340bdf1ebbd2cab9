/*
 * test_typed.c - the typed calls of shmkv.h on a handle of the Redis
 * backend (src/redis_typed.c, redis_expire.c): each call and each option
 * gives the shared-memory store's return, -ENOBUFS changes nothing,
 * read-only handles send no write, prefixes keep handles apart, prepared
 * keys are plain calls. Each test runs its own redis-server.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <string.h>

#include "helpers/redis_handle.h"
#include "shmkv.h"
#include "shmkv_exec.h"

#define LIT(s) (s), (sizeof(s) - 1)

static struct rh_server srv;
static shmkv_t *kv;

static void setup(void)
{
	int r = rh_start(&srv, "test_typed");

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

TestSuite(redis_typed, .init = setup, .fini = teardown);

/* GET into a buffer of @cap: the return; the value in @buf, NUL-ended. */
static int get_str(shmkv_t *h, const char *key, char *buf, size_t cap)
{
	struct shmkv_value v = { buf, cap - 1, 0 };
	int r = shmkv_get(h, key, strlen(key), &v);

	buf[r == 1 ? v.len : 0] = '\0';
	return r;
}

/* A raw command through shmkv_exec (the server's own view). */
static int64_t exec_int(shmkv_t *h, const char *a0, const char *a1)
{
	const char *argv[] = { a0, a1 };
	size_t len[] = { strlen(a0), strlen(a1) };
	struct shmkv_reply rep;
	int64_t v;

	cr_assert_eq(shmkv_exec(h, 2, argv, len, &rep), 0);
	cr_assert_eq(rep.type, SHMKV_REPLY_INTEGER, "%s: type %d", a0,
		     (int)rep.type);
	v = rep.integer;
	shmkv_reply_free(&rep);
	return v;
}

Test(redis_typed, set_then_get_gives_the_value_and_a_missing_key_zero)
{
	char buf[64];

	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("hello"), 0, 0, NULL), 1);
	cr_assert_eq(get_str(kv, "k", buf, sizeof(buf)), 1);
	cr_assert_str_eq(buf, "hello");
	cr_assert_eq(get_str(kv, "nope", buf, sizeof(buf)), 0);
	cr_assert_eq(shmkv_exists(kv, LIT("k")), 1);
	cr_assert_eq(shmkv_exists(kv, LIT("nope")), 0);
	cr_assert_eq(shmkv_get(kv, LIT("k"), NULL), 1);
	/* Binary-safe, empty values included. */
	cr_assert_eq(shmkv_set(kv, LIT("b"), "a\0b", 3, 0, 0, NULL), 1);
	cr_assert_eq(shmkv_set(kv, LIT("e"), "", 0, 0, 0, NULL), 1);
	{
		char raw[8];
		struct shmkv_value v = { raw, sizeof(raw), 0 };

		cr_assert_eq(shmkv_get(kv, LIT("b"), &v), 1);
		cr_assert_eq(v.len, 3);
		cr_assert_eq(memcmp(raw, "a\0b", 3), 0);
		cr_assert_eq(shmkv_get(kv, LIT("e"), &v), 1);
		cr_assert_eq(v.len, 0);
	}
}

Test(redis_typed, a_short_buffer_is_enobufs_with_the_length_needed)
{
	char buf[4];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	struct shmkv_value none = { NULL, 0, 0 };
	struct shmkv_value bad = { NULL, 5, 0 };

	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("hello"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_get(kv, LIT("k"), &v), -ENOBUFS);
	cr_assert_eq(v.len, 5);
	cr_assert_eq(shmkv_get(kv, LIT("k"), &none), -ENOBUFS);
	cr_assert_eq(none.len, 5);
	cr_assert_eq(shmkv_get(kv, LIT("k"), &bad), -EINVAL);
}

Test(redis_typed, set_options_follow_redis_7)
{
	char buf[64];
	struct shmkv_value old = { buf, sizeof(buf), 0 };
	int64_t ms;

	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("1"), SHMKV_SET_XX, 0, NULL),
		     0);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("1"), SHMKV_SET_NX, 0, NULL),
		     1);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("2"), SHMKV_SET_NX, 0, NULL),
		     0);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("3"), SHMKV_SET_XX, 0, NULL),
		     1);
	/* GET: the old value; NX with GET sets iff there was none. */
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("4"), SHMKV_SET_GET, 0, &old),
		     1);
	cr_assert_eq(old.len, 1);
	cr_assert_eq(buf[0], '3');
	cr_assert_eq(shmkv_set(kv, LIT("n"), LIT("x"),
			       SHMKV_SET_GET | SHMKV_SET_NX, 0, &old),
		     0);
	cr_assert_eq(old.len, 0);
	cr_assert_eq(get_str(kv, "n", buf, sizeof(buf)), 1);
	cr_assert_str_eq(buf, "x");
	/* EX, then KEEPTTL keeps it and a plain SET drops it. */
	cr_assert_eq(shmkv_set(kv, LIT("t"), LIT("v"), SHMKV_SET_EX, 100, NULL),
		     1);
	cr_assert_eq(shmkv_pttl(kv, LIT("t"), &ms), 0);
	cr_assert(ms > 98000 && ms <= 100000, "pttl %lld", (long long)ms);
	cr_assert_eq(
		shmkv_set(kv, LIT("t"), LIT("w"), SHMKV_SET_KEEPTTL, 0, NULL),
		1);
	cr_assert_eq(shmkv_pttl(kv, LIT("t"), &ms), 0);
	cr_assert(ms > 0);
	cr_assert_eq(shmkv_set(kv, LIT("t"), LIT("w"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_pttl(kv, LIT("t"), &ms), 0);
	cr_assert_eq(ms, -1);
	/* PX, and a PXAT in the past: the key is gone. */
	cr_assert_eq(
		shmkv_set(kv, LIT("t"), LIT("w"), SHMKV_SET_PX, 50000, NULL),
		1);
	cr_assert_eq(shmkv_pttl(kv, LIT("t"), &ms), 0);
	cr_assert(ms > 48000 && ms <= 50000);
	cr_assert_eq(
		shmkv_set(kv, LIT("t"), LIT("w"), SHMKV_SET_PXAT, 1000, NULL),
		1);
	cr_assert_eq(shmkv_exists(kv, LIT("t")), 0);
	cr_assert_eq(shmkv_set(kv, LIT("t"), LIT("w"), SHMKV_SET_EXAT,
			       4000000000LL, NULL),
		     1);
	cr_assert_eq(shmkv_pttl(kv, LIT("t"), &ms), 0);
	cr_assert(ms > 0);
}

Test(redis_typed, set_refuses_what_the_shm_store_refuses)
{
	char buf[8];
	struct shmkv_value old = { buf, sizeof(buf), 0 };

	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("v"),
			       SHMKV_SET_NX | SHMKV_SET_XX, 0, NULL),
		     -EINVAL);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("v"),
			       SHMKV_SET_EX | SHMKV_SET_PX, 5, NULL),
		     -EINVAL);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("v"),
			       SHMKV_SET_EX | SHMKV_SET_KEEPTTL, 5, NULL),
		     -EINVAL);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("v"), SHMKV_SET_EX, 0, NULL),
		     -EINVAL);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("v"), SHMKV_SET_PX, -1, NULL),
		     -EINVAL);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("v"), SHMKV_SET_EX,
			       INT64_MAX / 100, NULL),
		     -EINVAL);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("v"), SHMKV_SET_GET, 0, NULL),
		     -EINVAL);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("v"), 1u << 20, 0, NULL),
		     -EINVAL);
	cr_assert_eq(shmkv_set(kv, LIT("k"), NULL, 3, 0, 0, &old), -EINVAL);
	cr_assert_eq(shmkv_exists(kv, LIT("k")), 0, "nothing was written");
	cr_assert_eq(shmkv_set(kv, NULL, 3, LIT("v"), 0, 0, NULL), -EINVAL);
	cr_assert_eq(shmkv_set(NULL, LIT("k"), LIT("v"), 0, 0, NULL), -EINVAL);
}

Test(redis_typed, enobufs_on_a_writing_call_changes_nothing)
{
	char buf[2];
	struct shmkv_value old = { buf, sizeof(buf), 0 };
	int64_t ms;
	char got[16];

	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("long"), 0, 0, NULL), 1);
	cr_assert_eq(
		shmkv_set(kv, LIT("k"), LIT("new"), SHMKV_SET_GET, 0, &old),
		-ENOBUFS);
	cr_assert_eq(old.len, 4);
	cr_assert_eq(shmkv_getset(kv, LIT("k"), LIT("new"), &old), -ENOBUFS);
	cr_assert_eq(shmkv_getdel(kv, LIT("k"), &old), -ENOBUFS);
	cr_assert_eq(shmkv_getex(kv, LIT("k"), SHMKV_GETEX_EX, 10, &old),
		     -ENOBUFS);
	cr_assert_eq(get_str(kv, "k", got, sizeof(got)), 1);
	cr_assert_str_eq(got, "long");
	cr_assert_eq(shmkv_pttl(kv, LIT("k"), &ms), 0);
	cr_assert_eq(ms, -1);
}

Test(redis_typed, getset_getdel_getex_give_the_old_value)
{
	char buf[16];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	int64_t ms;

	cr_assert_eq(shmkv_getset(kv, LIT("k"), LIT("a"), &v), 0);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("a"), SHMKV_SET_EX, 100, NULL),
		     1);
	cr_assert_eq(shmkv_getset(kv, LIT("k"), LIT("b"), &v), 1);
	cr_assert_eq(v.len, 1);
	cr_assert_eq(buf[0], 'a');
	cr_assert_eq(shmkv_pttl(kv, LIT("k"), &ms), 0);
	cr_assert_eq(ms, -1, "GETSET drops the TTL");
	/* GETSET is SET ... GET: without a buffer, -EINVAL, as the shm
	 * store's engine says for a string. */
	cr_assert_eq(shmkv_getset(kv, LIT("k"), LIT("c"), NULL), -EINVAL);
	cr_assert_eq(shmkv_getset(kv, LIT("k"), LIT("c"), &v), 1);
	cr_assert_eq(shmkv_getex(kv, LIT("k"), SHMKV_GETEX_PX, 60000, &v), 1);
	cr_assert_eq(buf[0], 'c');
	cr_assert_eq(shmkv_pttl(kv, LIT("k"), &ms), 0);
	cr_assert(ms > 0 && ms <= 60000);
	cr_assert_eq(shmkv_getex(kv, LIT("k"), SHMKV_GETEX_PERSIST, 0, &v), 1);
	cr_assert_eq(shmkv_pttl(kv, LIT("k"), &ms), 0);
	cr_assert_eq(ms, -1);
	cr_assert_eq(shmkv_getex(kv, LIT("k"), SHMKV_GETEX_KEEP, 0, &v), 1);
	cr_assert_eq(shmkv_getex(kv, LIT("k"), SHMKV_GETEX_EX, 0, &v), -EINVAL);
	cr_assert_eq(shmkv_getex(kv, LIT("k"), 99, 1, &v), -EINVAL);
	cr_assert_eq(shmkv_getex(kv, LIT("k"), SHMKV_GETEX_PXAT, 1000, &v), 1);
	cr_assert_eq(shmkv_exists(kv, LIT("k")), 0, "a past time deletes");
	cr_assert_eq(shmkv_getex(kv, LIT("k"), SHMKV_GETEX_EX, 5, &v), 0);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("d"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_getdel(kv, LIT("k"), &v), 1);
	cr_assert_eq(buf[0], 'd');
	cr_assert_eq(shmkv_getdel(kv, LIT("k"), &v), 0);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("d"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_getdel(kv, LIT("k"), NULL), 1);
	cr_assert_eq(shmkv_exists(kv, LIT("k")), 0);
}

Test(redis_typed, setnx_del_and_delifeq_answer_one_or_zero)
{
	cr_assert_eq(shmkv_setnx(kv, LIT("k"), LIT("me")), 1);
	cr_assert_eq(shmkv_setnx(kv, LIT("k"), LIT("you")), 0);
	cr_assert_eq(shmkv_delifeq(kv, LIT("k"), LIT("you")), 0);
	cr_assert_eq(shmkv_exists(kv, LIT("k")), 1);
	cr_assert_eq(shmkv_delifeq(kv, LIT("k"), LIT("me")), 1);
	cr_assert_eq(shmkv_delifeq(kv, LIT("k"), LIT("me")), 0);
	cr_assert_eq(shmkv_delifeq(kv, LIT("k"), NULL, 2), -EINVAL);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("x"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_del(kv, LIT("k")), 1);
	cr_assert_eq(shmkv_del(kv, LIT("k")), 0);
}

Test(redis_typed, incr_family_and_its_errors)
{
	int64_t v = 0;

	cr_assert_eq(shmkv_incr(kv, LIT("n"), &v), 0);
	cr_assert_eq(v, 1);
	cr_assert_eq(shmkv_incrby(kv, LIT("n"), 41, &v), 0);
	cr_assert_eq(v, 42);
	cr_assert_eq(shmkv_decr(kv, LIT("n"), &v), 0);
	cr_assert_eq(v, 41);
	cr_assert_eq(shmkv_decrby(kv, LIT("n"), 50, &v), 0);
	cr_assert_eq(v, -9);
	cr_assert_eq(shmkv_incrby(kv, LIT("n"), 1, NULL), 0);
	cr_assert_eq(shmkv_decrby(kv, LIT("n"), INT64_MIN, &v), -EOVERFLOW);
	cr_assert_eq(
		shmkv_set(kv, LIT("m"), LIT("9223372036854775807"), 0, 0, NULL),
		1);
	cr_assert_eq(shmkv_incr(kv, LIT("m"), &v), -EOVERFLOW);
	cr_assert_eq(shmkv_set(kv, LIT("s"), LIT("12a"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_incr(kv, LIT("s"), &v), -EDOM);
	cr_assert_eq(shmkv_set(kv, LIT("s"), LIT("042"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_incr(kv, LIT("s"), &v), -EDOM);
}

Test(redis_typed, get_int_takes_what_incr_takes)
{
	int64_t v = 7;

	cr_assert_eq(shmkv_get_int(kv, LIT("n"), &v), 0);
	cr_assert_eq(shmkv_get_int(kv, LIT("n"), NULL), -EINVAL);
	cr_assert_eq(shmkv_set(kv, LIT("n"), LIT("-9223372036854775808"), 0, 0,
			       NULL),
		     1);
	cr_assert_eq(shmkv_get_int(kv, LIT("n"), &v), 1);
	cr_assert_eq(v, INT64_MIN);
	cr_assert_eq(shmkv_set(kv, LIT("n"), LIT("+1"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_get_int(kv, LIT("n"), &v), -EDOM);
	cr_assert_eq(shmkv_set(kv, LIT("n"), LIT("123456789012345678901234"), 0,
			       0, NULL),
		     1);
	cr_assert_eq(shmkv_get_int(kv, LIT("n"), &v), -EDOM);
	cr_assert_eq(shmkv_set(kv, LIT("n"), LIT(""), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_get_int(kv, LIT("n"), &v), -EDOM);
}

Test(redis_typed, expire_family_with_the_redis_7_conditions)
{
	int64_t ms, s;

	cr_assert_eq(shmkv_expire(kv, LIT("k"), SHMKV_EXPIRE_SEC, 0, 10), 0);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_expire(kv, LIT("k"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_XX, 10),
		     0);
	cr_assert_eq(shmkv_expire(kv, LIT("k"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_GT, 10),
		     0, "no TTL is an infinite one");
	cr_assert_eq(shmkv_expire(kv, LIT("k"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_LT, 100),
		     1);
	cr_assert_eq(shmkv_expire(kv, LIT("k"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_NX, 10),
		     0);
	cr_assert_eq(shmkv_expire(kv, LIT("k"), SHMKV_EXPIRE_MSEC,
				  SHMKV_EXPIRE_GT | SHMKV_EXPIRE_XX, 200000),
		     1);
	cr_assert_eq(shmkv_ttl(kv, LIT("k"), &s), 0);
	cr_assert_eq(s, 200);
	cr_assert_eq(shmkv_expire(kv, LIT("k"), SHMKV_EXPIRE_AT_SEC, 0,
				  4000000000LL),
		     1);
	cr_assert_eq(shmkv_pttl(kv, LIT("k"), &ms), 0);
	cr_assert(ms > 1000000000LL);
	cr_assert_eq(shmkv_persist(kv, LIT("k")), 1);
	cr_assert_eq(shmkv_persist(kv, LIT("k")), 0);
	cr_assert_eq(shmkv_ttl(kv, LIT("k"), &s), 0);
	cr_assert_eq(s, -1);
	cr_assert_eq(shmkv_ttl(kv, LIT("nope"), &s), 0);
	cr_assert_eq(s, -2);
	cr_assert_eq(shmkv_expire(kv, LIT("k"), SHMKV_EXPIRE_AT_MSEC, 0, 1000),
		     1);
	cr_assert_eq(shmkv_exists(kv, LIT("k")), 0, "a past time deletes");
	/* The refusals, before anything is sent. */
	cr_assert_eq(shmkv_expire(kv, LIT("k"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_NX | SHMKV_EXPIRE_XX, 1),
		     -EINVAL);
	cr_assert_eq(shmkv_expire(kv, LIT("k"), SHMKV_EXPIRE_SEC,
				  SHMKV_EXPIRE_GT | SHMKV_EXPIRE_LT, 1),
		     -EINVAL);
	cr_assert_eq(shmkv_expire(kv, LIT("k"), 9, 0, 1), -EINVAL);
	cr_assert_eq(
		shmkv_expire(kv, LIT("k"), SHMKV_EXPIRE_SEC, 0, INT64_MAX / 10),
		-EINVAL);
	cr_assert_eq(shmkv_pttl(kv, LIT("k"), NULL), -EINVAL);
	cr_assert_eq(shmkv_ttl(kv, NULL, 1, &s), -EINVAL);
}

Test(redis_typed, another_type_is_eprototype)
{
	/* shmkv_exec knows only string commands: a list by hiredis. */
	redisContext *c = redisConnect("127.0.0.1", srv.s.port);
	redisReply *rep;
	char buf[8];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	int64_t n;

	cr_assert(c != NULL && c->err == 0);
	rep = redisCommand(c, "LPUSH l x");
	cr_assert(rep != NULL && rep->type == REDIS_REPLY_INTEGER);
	freeReplyObject(rep);
	redisFree(c);
	cr_assert_eq(shmkv_get(kv, LIT("l"), &v), -EPROTOTYPE);
	cr_assert_eq(shmkv_incr(kv, LIT("l"), &n), -EPROTOTYPE);
	cr_assert_eq(shmkv_set(kv, LIT("l"), LIT("v"), SHMKV_SET_GET, 0, &v),
		     -EPROTOTYPE);
	cr_assert_eq(shmkv_delifeq(kv, LIT("l"), LIT("x")), -EPROTOTYPE);
	cr_assert_eq(shmkv_exists(kv, LIT("l")), 1);
}

Test(redis_typed, prefixes_keep_handles_apart)
{
	char u[256], buf[16];
	shmkv_t *a, *b;
	int64_t n;

	cr_assert_eq(
		shmkv_open(rh_uri(&srv, "?prefix=a:", u, sizeof(u)), 0, &a), 0);
	cr_assert_eq(
		shmkv_open(rh_uri(&srv, "?prefix=b:", u, sizeof(u)), 0, &b), 0);
	cr_assert_eq(shmkv_set(a, LIT("k"), LIT("A"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_set(b, LIT("k"), LIT("B"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_incr(a, LIT("n"), &n), 0);
	cr_assert_eq(get_str(a, "k", buf, sizeof(buf)), 1);
	cr_assert_str_eq(buf, "A");
	cr_assert_eq(get_str(b, "k", buf, sizeof(buf)), 1);
	cr_assert_str_eq(buf, "B");
	cr_assert_eq(get_str(kv, "a:k", buf, sizeof(buf)), 1);
	cr_assert_str_eq(buf, "A");
	cr_assert_eq(shmkv_exists(kv, LIT("k")), 0);
	cr_assert_eq(shmkv_exists(b, LIT("n")), 0);
	cr_assert_eq(exec_int(kv, "EXISTS", "a:n"), 1);
	cr_assert_eq(shmkv_del(b, LIT("k")), 1);
	cr_assert_eq(shmkv_exists(a, LIT("k")), 1);
	shmkv_close(a);
	shmkv_close(b);
}

Test(redis_typed, a_read_only_handle_reads_and_sends_no_write)
{
	shmkv_t *ro;
	char buf[16];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	struct shmkv_keyref ref;
	int64_t n;

	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("7"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_open(srv.uri, SHMKV_OPEN_READONLY, &ro), 0);
	cr_assert_eq(get_str(ro, "k", buf, sizeof(buf)), 1);
	cr_assert_eq(shmkv_get_int(ro, LIT("k"), &n), 1);
	cr_assert_eq(shmkv_pttl(ro, LIT("k"), &n), 0);
	cr_assert_eq(shmkv_set(ro, LIT("k"), LIT("8"), 0, 0, NULL), -EROFS);
	cr_assert_eq(shmkv_setnx(ro, LIT("x"), LIT("8")), -EROFS);
	cr_assert_eq(shmkv_getset(ro, LIT("k"), LIT("8"), &v), -EROFS);
	cr_assert_eq(shmkv_getdel(ro, LIT("k"), &v), -EROFS);
	cr_assert_eq(shmkv_del(ro, LIT("k")), -EROFS);
	cr_assert_eq(shmkv_delifeq(ro, LIT("k"), LIT("7")), -EROFS);
	cr_assert_eq(shmkv_incr(ro, LIT("k"), &n), -EROFS);
	cr_assert_eq(shmkv_expire(ro, LIT("k"), SHMKV_EXPIRE_SEC, 0, 5),
		     -EROFS);
	cr_assert_eq(shmkv_persist(ro, LIT("k")), -EROFS);
	cr_assert_eq(shmkv_getex(ro, LIT("k"), SHMKV_GETEX_EX, 5, &v), -EROFS);
	cr_assert_eq(shmkv_getex(ro, LIT("k"), SHMKV_GETEX_KEEP, 0, &v), 1);
	cr_assert_eq(shmkv_key_prepare(ro, &ref, LIT("k")), 0);
	cr_assert_eq(shmkv_key_set(ro, &ref, LIT("9"), 0, 0, NULL), -EROFS);
	cr_assert_eq(shmkv_key_incrby(ro, &ref, 1, &n), -EROFS);
	cr_assert_eq(shmkv_key_get_int(ro, &ref, &n), 1);
	cr_assert_eq(n, 7);
	/* Nothing changed: the value and no TTL. */
	cr_assert_eq(get_str(kv, "k", buf, sizeof(buf)), 1);
	cr_assert_str_eq(buf, "7");
	cr_assert_eq(exec_int(kv, "PTTL", "k"), -1);
	cr_assert_eq(exec_int(kv, "EXISTS", "x"), 0);
	shmkv_close(ro);
}

Test(redis_typed, prepared_keys_are_plain_calls)
{
	struct shmkv_keyref ref, other;
	char buf[16];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	int64_t n;
	shmkv_t *kv2;

	cr_assert_eq(shmkv_key_prepare(kv, &ref, LIT("ctr")), 0);
	cr_assert_eq(shmkv_key_incrby(kv, &ref, 5, &n), 0);
	cr_assert_eq(n, 5);
	cr_assert_eq(shmkv_key_get_int(kv, &ref, &n), 1);
	cr_assert_eq(n, 5);
	cr_assert_eq(shmkv_key_set(kv, &ref, LIT("tok"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_key_setnx(kv, &ref, LIT("x")), 0);
	cr_assert_eq(shmkv_key_get(kv, &ref, &v), 1);
	cr_assert_eq(v.len, 3);
	cr_assert_eq(shmkv_key_getset(kv, &ref, LIT("t2"), &v), 1);
	cr_assert_eq(memcmp(buf, "tok", 3), 0);
	cr_assert_eq(shmkv_key_delifeq(kv, &ref, LIT("tok")), 0);
	cr_assert_eq(shmkv_key_delifeq(kv, &ref, LIT("t2")), 1);
	cr_assert_eq(shmkv_key_setnx(kv, &ref, LIT("42")), 1);
	cr_assert_eq(shmkv_key_getdel(kv, &ref, &v), 1);
	cr_assert_eq(shmkv_key_del(kv, &ref), 0);
	cr_assert_eq(
		shmkv_key_set(kv, &ref, LIT("a"), SHMKV_SET_PX, 30000, NULL),
		1);
	cr_assert(exec_int(kv, "PTTL", "ctr") > 0);
	/* A reference of another handle is -EINVAL. */
	cr_assert_eq(shmkv_open(srv.uri, 0, &kv2), 0);
	cr_assert_eq(shmkv_key_prepare(kv2, &other, LIT("ctr")), 0);
	cr_assert_eq(shmkv_key_get(kv, &other, &v), -EINVAL);
	cr_assert_eq(shmkv_key_incrby(kv, &other, 1, &n), -EINVAL);
	shmkv_close(kv2);
	cr_assert_eq(shmkv_key_prepare(kv, NULL, LIT("k")), -EINVAL);
	cr_assert_eq(shmkv_key_prepare(kv, &ref, NULL, 1), -EINVAL);
}

/* The scripts' SHA1s in the source are those of their bodies (else every
 * call would pay a NOSCRIPT round trip): SCRIPT LOAD says so. */
Test(redis_typed, a_script_runs_by_evalsha_after_its_first_eval)
{
	const char *argv[] = { "SCRIPT", "FLUSH" };
	size_t len[] = { 6, 5 };
	struct shmkv_reply rep;
	char buf[8];
	struct shmkv_value v = { buf, sizeof(buf), 0 };

	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("a"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_getset(kv, LIT("k"), LIT("b"), &v), 1);
	cr_assert_eq(shmkv_delifeq(kv, LIT("k"), LIT("b")), 1);
	/* After a flush (as after a restart): NOSCRIPT, then EVAL. */
	cr_assert_eq(shmkv_exec(kv, 2, argv, len, &rep), 0);
	shmkv_reply_free(&rep);
	cr_assert_eq(shmkv_set(kv, LIT("k"), LIT("a"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_getset(kv, LIT("k"), LIT("c"), &v), 1);
	cr_assert_eq(buf[0], 'a');
	cr_assert_eq(shmkv_delifeq(kv, LIT("k"), LIT("c")), 1);
}
