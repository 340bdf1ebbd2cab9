/*
 * test_redis_inflight.c - every public call of a Redis handle, with the
 * server killed while the call's request is in flight: an error, never a
 * success code or a wrong answer, nothing written into the caller's
 * output, and the same handle's next call works once a server is back on
 * the port.
 *
 * How a request is held in flight, deterministically: the server is
 * stopped (SIGSTOP), the call runs in a thread, and once its bytes sit
 * unread in the server's socket (/proc/net/tcp's rx_queue) the server is
 * killed (SIGKILL). The kernel resets a socket closed with unread data,
 * so the call sees its connection reset with the request sent and
 * unanswered: exactly "a server that died mid-command". With ?timeout=0
 * only the kill can end the wait, so the answer must be -ECONNRESET.
 * Calls of several round trips are also killed at a later one, through a
 * relay (inflight.h); and every call is also timed out (?timeout=200 on a
 * stopped server): -ETIMEDOUT, and the late reply is not the next call's.
 *
 * shmkv_lock_held() is the one call without an errno: it answers 1 or 0,
 * and a call that cannot ask the server must answer 0 ("not known to be
 * mine"); a negative return would read as true in `if (held(lk))`.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/inflight.h"
#include "helpers/redis_test.h"
#include "redis.h"
#include "shmkv.h"
#include "shmkv_exec.h"
#include "shmkv_lock.h"

/* What the caller's outputs hold before a call: a call that failed must
 * leave them so. */
#define SENT_BYTE 0xA5
#define SENT_LEN  ((size_t)0xA5A5)
#define SENT_I64  ((int64_t)-0x5A5A5A5A)

struct ctx {
	shmkv_t *kv;
	char buf[64];
	struct shmkv_value v; /* .buf = buf */
	int64_t i64;	      /* every int64_t out */
	uint64_t next;	      /* shmkv_scan's */
	int visits;	      /* callbacks run (scan, lock list) */
	struct shmkv_keyref ref;
	struct shmkv_lock lk;
	struct shmkv_pattern pl;
	int64_t expiry; /* pattern_release's argument */
	struct shmkv_stats st;
	struct shmkv_reply reply;
	uint64_t token; /* shmkv_lock_token(&lk) before the call */
};

static void outputs_reset(struct ctx *x)
{
	memset(x->buf, SENT_BYTE, sizeof(x->buf));
	x->v.buf = x->buf;
	x->v.cap = sizeof(x->buf);
	x->v.len = SENT_LEN;
	x->i64 = SENT_I64;
	x->next = (uint64_t)SENT_I64;
	x->visits = 0;
	memset(&x->st, SENT_BYTE, sizeof(x->st));
	memset(&x->reply, 0, sizeof(x->reply));
	x->token = shmkv_lock_token(&x->lk);
}

/* Nothing claimed: no byte of the buffer, no length, no integer. */
static int outputs_untouched(const struct ctx *x)
{
	for (size_t i = 0; i < sizeof(x->buf); i++)
		if ((unsigned char)x->buf[i] != SENT_BYTE)
			return 0;
	/* shmkv_stats zeroes its struct before it asks: a 0 is no claim
	 * (its return says so), a count would be. */
	return x->v.len == SENT_LEN && x->i64 == SENT_I64 &&
	       x->next == (uint64_t)SENT_I64 && x->visits == 0 &&
	       (x->st.live_keys == 0 ||
		x->st.live_keys == (uint64_t)0xA5A5A5A5A5A5A5A5ull) &&
	       shmkv_lock_token(&x->lk) == x->token;
}

/* The known data every case starts from. */
static void seed(struct ctx *x)
{
	cr_assert_eq(shmkv_set(x->kv, "k", 1, "hello", 5, 0, 0, NULL), 1);
	cr_assert_eq(shmkv_set(x->kv, "n", 1, "41", 2, 0, 0, NULL), 1);
	cr_assert_eq(
		shmkv_set(x->kv, "t", 1, "tv", 2, SHMKV_SET_EX, 1000, NULL), 1);
}

static int value_is(const struct ctx *x, const char *want)
{
	return x->v.len == strlen(want) && memcmp(x->buf, want, x->v.len) == 0;
}

static int count_key(const void *key, size_t klen, void *arg)
{
	(void)key;
	(void)klen;
	++((struct ctx *)arg)->visits;
	return 0;
}

static int count_lock(const struct shmkv_lock_info *info, void *arg)
{
	(void)info;
	++((struct ctx *)arg)->visits;
	return 0;
}

/* ---- the calls ----
 *
 * Each is one line: the call on the seeded server, its return there (rc)
 * and what it hands back there (val: the value; i64: the integer, 0 for
 * none; ok: other checks). One line each reads as a table, so the
 * formatter is off for them.
 */

/* A call's checks after the restart: return and outputs as on a seeded
 * server. */
struct call_case {
	const char *name;
	void (*prep)(struct ctx *x); /* after seed(), on a live server */
	int (*run)(struct ctx *x);
	int rc;
	const char *val;
	int64_t i64;
	int (*ok)(struct ctx *x);
	bool held; /* shmkv_lock_held: 0, not an errno, when it cannot ask */
};

static int case_ok(const struct call_case *c, struct ctx *x, int rc)
{
	return rc == c->rc && (c->val == NULL || value_is(x, c->val)) &&
	       (c->i64 == 0 || x->i64 == c->i64) && (c->ok == NULL || c->ok(x));
}

/* Prepared keys: the key outlives the ref (a literal). */
static void prep_ref(struct ctx *x)
{
	cr_assert_eq(shmkv_key_prepare(x->kv, &x->ref, "k", 1), 0);
}

static void prep_ref_n(struct ctx *x)
{
	cr_assert_eq(shmkv_key_prepare(x->kv, &x->ref, "n", 1), 0);
}

/* The DELIFEQ calls and the safe lock ask the server once whether it has
 * Valkey's DELIFEQ (COMMAND INFO) before their script: without these
 * preps the kill hits that first round trip, with them the second. */
static void prep_known(struct ctx *x)
{
	cr_assert_eq(shmkv_delifeq(x->kv, "other", 5, "v", 1), 0);
}

static void prep_ref_known(struct ctx *x)
{
	prep_known(x);
	prep_ref(x);
}

/* The safe lock: init binds, nothing is sent. */
static void prep_lock(struct ctx *x)
{
	cr_assert_eq(shmkv_lock_init(x->kv, &x->lk, "L"), 0);
}

static void prep_lock_held(struct ctx *x)
{
	prep_lock(x);
	cr_assert_eq(shmkv_lock_try_acquire(&x->lk, 60000),
		     SHMKV_LOCK_ACQUIRED);
}

/* A grant and its release: the token counter is at 1, the question
 * asked. */
static void prep_lock_known(struct ctx *x)
{
	prep_lock_held(x);
	cr_assert_eq(shmkv_lock_release(&x->lk), 0);
}

/* A lock to list, on its own lock handle (ctx's stays grant-free). */
static void prep_lock_other(struct ctx *x)
{
	struct shmkv_lock other;

	cr_assert_eq(shmkv_lock_init(x->kv, &other, "listed"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&other, 60000),
		     SHMKV_LOCK_ACQUIRED);
}

/* The pattern lock: its output is the expiry it wrote. */
static void prep_pattern(struct ctx *x)
{
	cr_assert_eq(shmkv_pattern_init(x->kv, &x->pl, "P"), 0);
}

static void prep_pattern_held(struct ctx *x)
{
	int64_t e = 0;

	prep_pattern(x);
	cr_assert_eq(shmkv_pattern_acquire(&x->pl, 60000, 0, &e), 0);
	x->expiry = e;
}

/* shmkv_exec: a failure is a negative return with an error reply, never
 * a reply of the command's own type (1: counted as wrong). */
static int exec(struct ctx *x, int argc, const char *a1, const char *a2,
		const char *a3)
{
	const char *argv[3] = { a1, a2, a3 };
	size_t len[3] = { strlen(a1), strlen(a2), a3 ? strlen(a3) : 0 };
	int rc = shmkv_exec(x->kv, argc, argv, len, &x->reply);

	return rc < 0 && x->reply.type != SHMKV_REPLY_ERROR ? 1 : rc;
}

static int reply_is(const struct ctx *x, enum shmkv_reply_type t, const char *s)
{
	return x->reply.type == t && x->reply.len == strlen(s) &&
	       memcmp(x->reply.str, s, x->reply.len) == 0;
}

static int reply_int(const struct ctx *x, long long n)
{
	return x->reply.type == SHMKV_REPLY_INTEGER && x->reply.integer == n;
}

/* clang-format off */
#define CALL(name, expr) static int run_##name(struct ctx *x) { return expr; }
#define OK(name, expr) static int ok_##name(struct ctx *x) { return expr; }

CALL(get, shmkv_get(x->kv, "k", 1, &x->v))
CALL(get_null, shmkv_get(x->kv, "k", 1, NULL))
CALL(get_int, shmkv_get_int(x->kv, "n", 1, &x->i64))
CALL(set, shmkv_set(x->kv, "k", 1, "v2", 2, 0, 0, NULL))
CALL(set_nx, shmkv_set(x->kv, "new", 3, "v", 1, SHMKV_SET_NX, 0, NULL))
CALL(set_xx_px, shmkv_set(x->kv, "k", 1, "v", 1, SHMKV_SET_XX | SHMKV_SET_PX, 5000, NULL))
CALL(set_get, shmkv_set(x->kv, "k", 1, "v", 1, SHMKV_SET_GET, 0, &x->v))
CALL(set_nx_get, shmkv_set(x->kv, "k", 1, "v", 1, SHMKV_SET_NX | SHMKV_SET_GET, 0, &x->v))
CALL(set_keepttl_get, shmkv_set(x->kv, "t", 1, "v", 1, SHMKV_SET_KEEPTTL | SHMKV_SET_GET, 0, &x->v))
CALL(setnx, shmkv_setnx(x->kv, "new", 3, "v", 1))
CALL(getset, shmkv_getset(x->kv, "k", 1, "v", 1, &x->v))
CALL(getdel, shmkv_getdel(x->kv, "k", 1, &x->v))
CALL(getex_ex, shmkv_getex(x->kv, "k", 1, SHMKV_GETEX_EX, 100, &x->v))
CALL(getex_keep, shmkv_getex(x->kv, "k", 1, SHMKV_GETEX_KEEP, 0, &x->v))
CALL(del, shmkv_del(x->kv, "k", 1))
CALL(exists, shmkv_exists(x->kv, "k", 1))
CALL(delifeq, shmkv_delifeq(x->kv, "k", 1, "hello", 5))
CALL(expire, shmkv_expire(x->kv, "k", 1, SHMKV_EXPIRE_SEC, 0, 100))
CALL(pexpireat_nx, shmkv_expire(x->kv, "k", 1, SHMKV_EXPIRE_AT_MSEC, SHMKV_EXPIRE_NX, INT64_C(4102444800000)))
CALL(pttl, shmkv_pttl(x->kv, "t", 1, &x->i64))
OK(pttl, x->i64 > 0 && x->i64 <= 1000000)
CALL(ttl, shmkv_ttl(x->kv, "t", 1, &x->i64))
OK(ttl, x->i64 > 0 && x->i64 <= 1000)
CALL(persist, shmkv_persist(x->kv, "t", 1))
CALL(incr, shmkv_incr(x->kv, "n", 1, &x->i64))
CALL(decr, shmkv_decr(x->kv, "n", 1, &x->i64))
CALL(incrby, shmkv_incrby(x->kv, "n", 1, 10, &x->i64))
CALL(decrby, shmkv_decrby(x->kv, "n", 1, 11, &x->i64))
CALL(key_set, shmkv_key_set(x->kv, &x->ref, "v", 1, SHMKV_SET_GET, 0, &x->v))
CALL(key_setnx, shmkv_key_setnx(x->kv, &x->ref, "v", 1))
CALL(key_get, shmkv_key_get(x->kv, &x->ref, &x->v))
CALL(key_get_int, shmkv_key_get_int(x->kv, &x->ref, &x->i64))
CALL(key_getset, shmkv_key_getset(x->kv, &x->ref, "v", 1, &x->v))
CALL(key_getdel, shmkv_key_getdel(x->kv, &x->ref, &x->v))
CALL(key_del, shmkv_key_del(x->kv, &x->ref))
CALL(key_delifeq, shmkv_key_delifeq(x->kv, &x->ref, "hello", 5))
CALL(key_incrby, shmkv_key_incrby(x->kv, &x->ref, 2, &x->i64))
CALL(scan, shmkv_scan(x->kv, 0, 100, count_key, x, &x->next))
OK(scan, x->next == 0 && x->visits == 3)
CALL(stats, shmkv_stats(x->kv, &x->st))
OK(stats, x->st.live_keys == 3)
CALL(exec_get, exec(x, 2, "GET", "k", NULL))
OK(exec_get, reply_is(x, SHMKV_REPLY_BULK, "hello"))
CALL(exec_incr, exec(x, 2, "INCR", "n", NULL))
OK(exec_incr, reply_int(x, 42))
CALL(exec_set, exec(x, 3, "SET", "k", "v"))
OK(exec_set, reply_is(x, SHMKV_REPLY_STATUS, "OK"))
CALL(exec_delifeq, exec(x, 3, "DELIFEQ", "k", "hello"))
OK(exec_delifeq, reply_int(x, 1))
/* A grant's output is the lock's token: a cut-short one claims none. */
CALL(lock_try_acquire, shmkv_lock_try_acquire(&x->lk, 60000))
OK(token1, shmkv_lock_token(&x->lk) == 1)
OK(token2, shmkv_lock_token(&x->lk) == 2)
CALL(lock_timed_acquire, shmkv_lock_timed_acquire(&x->lk, 60000, 1000))
CALL(lock_release, shmkv_lock_release(&x->lk))
CALL(lock_extend, shmkv_lock_extend(&x->lk, SHMKV_LOCK_EXTEND_ADD, 1000))
CALL(lock_held, shmkv_lock_held(&x->lk))
CALL(lock_list, shmkv_lock_list(x->kv, count_lock, x))
OK(lock_list, x->visits == 1)
CALL(pattern_acquire, shmkv_pattern_acquire(&x->pl, 60000, 0, &x->i64))
OK(pattern_acquire, x->i64 > 0)
CALL(pattern_release, shmkv_pattern_release(&x->pl, x->expiry))

#define V(name, rc, val) { #name, NULL, run_##name, rc, val, 0, NULL, false }
#define I(name, rc, i64) { #name, NULL, run_##name, rc, NULL, i64, NULL, false }
#define P(name, prep, rc, val, i64) { #name, prep, run_##name, rc, val, i64, NULL, false }
#define K(name, prep, rc, ok) { #name, prep, run_##name, rc, NULL, 0, ok_##ok, false }

static const struct call_case cases[] = {
	V(get, 1, "hello"),
	V(get_null, 1, NULL),
	I(get_int, 1, 41),
	V(set, 1, NULL),
	V(set_nx, 1, NULL),
	V(set_xx_px, 1, NULL),
	V(set_get, 1, "hello"),
	V(set_nx_get, 1, "hello"),
	V(set_keepttl_get, 1, "tv"),
	V(setnx, 1, NULL),
	V(getset, 1, "hello"),
	V(getdel, 1, "hello"),
	V(getex_ex, 1, "hello"),
	V(getex_keep, 1, "hello"),
	V(del, 1, NULL),
	V(exists, 1, NULL),
	V(delifeq, 1, NULL),
	{ "delifeq_known", prep_known, run_delifeq, 1, NULL, 0, NULL, false },
	V(expire, 1, NULL),
	V(pexpireat_nx, 1, NULL),
	K(pttl, NULL, 0, pttl),
	K(ttl, NULL, 0, ttl),
	V(persist, 1, NULL),
	I(incr, 0, 42),
	I(decr, 0, 40),
	I(incrby, 0, 51),
	I(decrby, 0, 30),
	P(key_set, prep_ref, 1, "hello", 0),
	P(key_setnx, prep_ref, 0, NULL, 0),
	P(key_get, prep_ref, 1, "hello", 0),
	P(key_get_int, prep_ref_n, 1, NULL, 41),
	P(key_getset, prep_ref, 1, "hello", 0),
	P(key_getdel, prep_ref, 1, "hello", 0),
	P(key_del, prep_ref, 1, NULL, 0),
	P(key_delifeq, prep_ref, 1, NULL, 0),
	{ "key_delifeq_known", prep_ref_known, run_key_delifeq, 1, NULL, 0, NULL, false },
	P(key_incrby, prep_ref_n, 0, NULL, 43),
	K(scan, NULL, 0, scan),
	K(stats, NULL, 0, stats),
	K(exec_get, NULL, 0, exec_get),
	K(exec_incr, NULL, 0, exec_incr),
	K(exec_set, NULL, 0, exec_set),
	K(exec_delifeq, NULL, 0, exec_delifeq),
	K(lock_try_acquire, prep_lock, SHMKV_LOCK_ACQUIRED, token1),
	{ "lock_try_acquire_known", prep_lock_known, run_lock_try_acquire, SHMKV_LOCK_ACQUIRED, NULL, 0, ok_token2, false },
	K(lock_timed_acquire, prep_lock, SHMKV_LOCK_ACQUIRED, token1),
	P(lock_release, prep_lock_held, 0, NULL, 0),
	P(lock_extend, prep_lock_held, 0, NULL, 0),
	{ "lock_held", prep_lock_held, run_lock_held, 1, NULL, 0, NULL, true },
	K(lock_list, prep_lock_other, 1, lock_list),
	K(pattern_acquire, prep_pattern, 0, pattern_acquire),
	P(pattern_release, prep_pattern_held, 0, NULL, 0),
};
/* clang-format on */
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* ---- holding a request in flight ---- */

struct flight {
	const struct call_case *c;
	struct ctx *x;
	int rc;
	atomic_int done; /* the call returned (seq_cst: read by the waiter) */
};

static void *flight_thread(void *arg)
{
	struct flight *f = arg;

	f->rc = f->c->run(f->x);
	atomic_store(&f->done, 1);
	return NULL;
}

/*
 * Runs @c on @x with @pid (listening on @port) stopped, kills @kill once
 * the request sits unread at @port, and returns the call's return. @kill
 * kills and reaps the stopped server. A call that returns before its
 * request reached the server (it sent nothing) fails the test: there
 * would be nothing in flight to test.
 */
static int run_killed(const struct call_case *c, struct ctx *x, pid_t pid,
		      int port, void (*kill_fn)(void *), void *kill_arg)
{
	struct flight f = { .c = c, .x = x };
	pthread_t t;
	long sent;

	cr_assert_eq(inflight_unread_at(port), 0,
		     "%s: bytes unread before the call", c->name);
	cr_assert_eq(inflight_stop(pid), 0);
	cr_assert_eq(pthread_create(&t, NULL, flight_thread, &f), 0);
	while ((sent = inflight_unread_at(port)) <= 0 && !atomic_load(&f.done))
		usleep(1000);
	kill_fn(kill_arg); /* SIGKILL works on a stopped process */
	pthread_join(t, NULL);
	cr_assert(sent > 0, "%s returned %d with nothing in flight", c->name,
		  f.rc);
	return f.rc;
}

/* ---- one server ---- */

static struct redis_server srv;

static void stop(void)
{
	if (srv.pid > 0)
		kill(srv.pid, SIGCONT);
	redis_server_cleanup(&srv);
}

static void kill_srv(void *arg)
{
	redis_server_stop(arg);
}

static void start(void)
{
	int rc = rt_start(&srv, "redis-inflight", NULL);

	if (rc == -2)
		cr_skip_test("no redis-server (apt-get install redis-server)");
	cr_assert_eq(rc, 0, "redis-server did not start (%s)", srv.log_path);
}

static void prepare(const struct call_case *c, struct ctx *x)
{
	memset(&x->lk, 0, sizeof(x->lk)); /* a lock case's prep binds it */
	seed(x);
	if (c->prep)
		c->prep(x);
	outputs_reset(x);
}

TestSuite(redis_inflight, .fini = stop, .timeout = 120);

ParameterizedTestParameters(redis_inflight, every_call)
{
	static int idx[sizeof(cases) / sizeof(cases[0])];

	for (int i = 0; i < NCASES; i++)
		idx[i] = i;
	return cr_make_param_array(int, idx, NCASES);
}

ParameterizedTest(int *i, redis_inflight, every_call)
{
	const struct call_case *c = &cases[*i];
	static struct ctx x;
	char uri[256];
	int rc;

	start();
	/* No command timeout: only the kill can end the wait. */
	rt_uri(uri, sizeof(uri), &srv, "?timeout=0");
	cr_assert_eq(shmkv_open(uri, 0, &x.kv), 0);
	prepare(c, &x);
	rc = run_killed(c, &x, srv.pid, srv.port, kill_srv, &srv);
	if (c->held)
		cr_assert_eq(rc, 0, "%s: %d while the server died", c->name,
			     rc);
	else
		cr_assert_eq(rc, -ECONNRESET, "%s: %d (%s)", c->name, rc,
			     rc < 0 ? shmkv_strerror(rc) : "not an error");
	cr_assert(outputs_untouched(&x), "%s wrote its outputs", c->name);
	shmkv_reply_free(&x.reply);

	/* A fresh server on the port: the same handle's next call works. */
	cr_assert_eq(rt_restart(&srv, NULL), 0);
	prepare(c, &x);
	rc = c->run(&x);
	cr_assert(case_ok(c, &x, rc), "%s after the restart: %d", c->name, rc);
	shmkv_reply_free(&x.reply);
	shmkv_close(x.kv);
}

/* The other way a call loses its reply: a server that stops answering
 * (stopped, not killed) and a short ?timeout=. -ETIMEDOUT, nothing in the
 * outputs; the server, resumed, runs the request and answers to a closed
 * socket, so the handle's next call (after FLUSHALL: what the late
 * request did is not the point) gets its own reply, not that one. */
ParameterizedTestParameters(redis_inflight, every_call_timed_out)
{
	static int idx[sizeof(cases) / sizeof(cases[0])];

	for (int i = 0; i < NCASES; i++)
		idx[i] = i;
	return cr_make_param_array(int, idx, NCASES);
}

ParameterizedTest(int *i, redis_inflight, every_call_timed_out)
{
	const struct call_case *c = &cases[*i];
	static struct ctx x;
	redisContext *admin;
	char uri[256];
	int rc;

	start();
	rt_uri(uri, sizeof(uri), &srv, "?timeout=200");
	cr_assert_eq(shmkv_open(uri, 0, &x.kv), 0);
	prepare(c, &x);
	cr_assert_eq(inflight_stop(srv.pid), 0);
	rc = c->run(&x);
	cr_assert_eq(kill(srv.pid, SIGCONT), 0);
	if (c->held)
		cr_assert_eq(rc, 0, "%s: %d with no answer", c->name, rc);
	else
		cr_assert_eq(rc, -ETIMEDOUT, "%s: %d (%s)", c->name, rc,
			     rc < 0 ? shmkv_strerror(rc) : "not an error");
	cr_assert(outputs_untouched(&x), "%s wrote its outputs", c->name);
	shmkv_reply_free(&x.reply);

	admin = rt_admin(&srv, NULL);
	cr_assert_not_null(admin);
	cr_assert_eq(rt_cmd_type(admin, REDIS_REPLY_STATUS, "FLUSHALL"), 0);
	redisFree(admin);
	prepare(c, &x);
	rc = c->run(&x);
	cr_assert(case_ok(c, &x, rc), "%s after the timeout: %d", c->name, rc);
	shmkv_reply_free(&x.reply);
	shmkv_close(x.kv);
}

/* ---- a later round trip of one call, on one server ----
 *
 * A call of several round trips (a script the server lost: EVALSHA,
 * NOSCRIPT, then SCRIPT LOAD or EVAL; the pattern lock's takeover: SETNX,
 * GET, GETSET) cannot be held at its n-th request by stopping the server:
 * it must answer the first ones. So the handle talks to the server
 * through a relay in this process that counts the requests: the client
 * sends a request only after the reply to the last (no pipelining), so a
 * request begins with the first bytes from the client after bytes from
 * the server. At request @hold_at the relay stops the server (SIGSTOP,
 * waited for), then passes the request on, where it sits unread as
 * above; the test kills the server, and the relay passes the death on as
 * a reset of the client's connection (SO_LINGER 0), as the kernel does
 * for a server killed with bytes unread.
 */

/* Scripts the server no longer has (as after a restart or a failover). */
static void script_flush(void)
{
	redisContext *admin = rt_admin(&srv, NULL);

	cr_assert_not_null(admin);
	cr_assert_eq(rt_cmd_type(admin, REDIS_REPLY_STATUS, "SCRIPT FLUSH"), 0);
	redisFree(admin);
}

static void prep_lock_flushed(struct ctx *x)
{
	prep_lock_known(x);
	script_flush();
}

/* The GET-then-write script loaded (GETEX ... EX runs it), then lost. */
static void prep_flushed(struct ctx *x)
{
	cr_assert_eq(shmkv_getex(x->kv, "t", 1, SHMKV_GETEX_EX, 1000, NULL), 1);
	script_flush();
}

/* A pattern lock whose holder's time passed long ago: a takeover. */
static void prep_pattern_expired(struct ctx *x)
{
	cr_assert_eq(shmkv_set(x->kv, "lock.{P}", 8, "1000", 4, 0, 0, NULL), 1);
	prep_pattern(x);
}

struct later_case {
	struct call_case c;
	int hold_at; /* the request killed, counted from 1 */
};

/* clang-format off */
static const struct later_case later[] = {
	/* EVALSHA (NOSCRIPT), SCRIPT LOAD, EVALSHA */
	{ K(lock_try_acquire, prep_lock_flushed, SHMKV_LOCK_ACQUIRED, token2), 2 },
	{ K(lock_try_acquire, prep_lock_flushed, SHMKV_LOCK_ACQUIRED, token2), 3 },
	/* EVALSHA (NOSCRIPT), EVAL: the GET-then-write script */
	{ P(set_get, prep_flushed, 1, "hello", 0), 2 },
	{ P(getdel, prep_flushed, 1, "hello", 0), 2 },
	/* SETNX (0), GET (a passed time), GETSET */
	{ K(pattern_acquire, prep_pattern_expired, 0, pattern_acquire), 2 },
	{ K(pattern_acquire, prep_pattern_expired, 0, pattern_acquire), 3 },
};
/* clang-format on */
#define NLATER ((int)(sizeof(later) / sizeof(later[0])))

ParameterizedTestParameters(redis_inflight, a_later_round_trip)
{
	static int idx[sizeof(later) / sizeof(later[0])];

	for (int i = 0; i < NLATER; i++)
		idx[i] = i;
	return cr_make_param_array(int, idx, NLATER);
}

ParameterizedTest(int *i, redis_inflight, a_later_round_trip)
{
	const struct later_case *lc = &later[*i];
	const struct call_case *c = &lc->c;
	static struct ctx x;
	struct inflight_relay rl;
	struct flight f = { .c = c, .x = &x };
	pthread_t t;
	char uri[128];
	int port, lfd, rc;

	start();
	lfd = inflight_listen(&port);
	cr_assert_geq(lfd, 0);
	snprintf(uri, sizeof(uri), "redis://127.0.0.1:%d?timeout=0", port);
	cr_assert_eq(inflight_relay_start(&rl, lfd, port, srv.port, srv.pid, 0),
		     0);
	cr_assert_eq(shmkv_open(uri, 0, &x.kv), 0);
	prepare(c, &x);
	inflight_relay_stop(&rl);
	/* The handle's connection ends with the old relay: the new one
	 * counts from the reconnect, whose requests are the call's. */
	cr_assert_eq(inflight_relay_start(&rl, lfd, port, srv.port, srv.pid,
					  lc->hold_at),
		     0);
	cr_assert_eq(pthread_create(&t, NULL, flight_thread, &f), 0);
	while (!(atomic_load(&rl.held) && inflight_unread_at(srv.port) > 0) &&
	       !atomic_load(&f.done))
		usleep(1000);
	cr_assert(atomic_load(&rl.held), "%s returned %d before request %d",
		  c->name, f.rc, lc->hold_at);
	redis_server_stop(&srv);
	pthread_join(t, NULL);
	rc = f.rc;
	cr_assert_eq(rc, -ECONNRESET, "%s at request %d: %d (%s)", c->name,
		     lc->hold_at, rc,
		     rc < 0 ? shmkv_strerror(rc) : "not an error");
	cr_assert(outputs_untouched(&x), "%s wrote its outputs", c->name);

	cr_assert_eq(rt_restart(&srv, NULL), 0);
	inflight_relay_stop(&rl);
	cr_assert_eq(inflight_relay_start(&rl, lfd, port, srv.port, srv.pid, 0),
		     0);
	prepare(c, &x);
	rc = c->run(&x);
	cr_assert(case_ok(c, &x, rc), "%s after the restart: %d", c->name, rc);
	shmkv_close(x.kv);
	inflight_relay_stop(&rl);
	close(lfd);
}
