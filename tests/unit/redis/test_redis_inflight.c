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
 *
 * shmkv_lock_held() is the one call without an errno: it answers 1 or 0,
 * and a call that cannot ask the server must answer 0 ("not known to be
 * mine"); a negative return would read as true in `if (held(lk))`.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helpers/redis_cluster.h"
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
	int64_t expiry;	     /* pattern_release's argument */
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
	cr_assert_eq(shmkv_set(x->kv, "t", 1, "tv", 2, SHMKV_SET_EX, 1000,
			       NULL),
		     1);
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

/* ---- the calls: each returns the call's return; ok() says whether a
 * return and its outputs are right on the seeded server ---- */

#define CALL(name) static int run_##name(struct ctx *x)
#define OK(name)   static int ok_##name(struct ctx *x, int rc)

CALL(get) { return shmkv_get(x->kv, "k", 1, &x->v); }
OK(get) { return rc == 1 && value_is(x, "hello"); }
CALL(get_null) { return shmkv_get(x->kv, "k", 1, NULL); }
OK(get_null) { (void)x; return rc == 1; }
CALL(get_int) { return shmkv_get_int(x->kv, "n", 1, &x->i64); }
OK(get_int) { return rc == 1 && x->i64 == 41; }
CALL(set) { return shmkv_set(x->kv, "k", 1, "v2", 2, 0, 0, NULL); }
OK(set) { (void)x; return rc == 1; }
CALL(set_nx) { return shmkv_set(x->kv, "new", 3, "v", 1, SHMKV_SET_NX, 0, NULL); }
OK(set_nx) { (void)x; return rc == 1; }
CALL(set_xx_px)
{
	return shmkv_set(x->kv, "k", 1, "v", 1, SHMKV_SET_XX | SHMKV_SET_PX,
			 5000, NULL);
}
OK(set_xx_px) { (void)x; return rc == 1; }
CALL(set_get) { return shmkv_set(x->kv, "k", 1, "v", 1, SHMKV_SET_GET, 0, &x->v); }
OK(set_get) { return rc == 1 && value_is(x, "hello"); }
CALL(set_nx_get)
{
	return shmkv_set(x->kv, "k", 1, "v", 1, SHMKV_SET_NX | SHMKV_SET_GET,
			 0, &x->v);
}
OK(set_nx_get) { return rc == 1 && value_is(x, "hello"); }
CALL(set_keepttl_get)
{
	return shmkv_set(x->kv, "t", 1, "v", 1,
			 SHMKV_SET_KEEPTTL | SHMKV_SET_GET, 0, &x->v);
}
OK(set_keepttl_get) { return rc == 1 && value_is(x, "tv"); }
CALL(setnx) { return shmkv_setnx(x->kv, "new", 3, "v", 1); }
OK(setnx) { (void)x; return rc == 1; }
CALL(getset) { return shmkv_getset(x->kv, "k", 1, "v", 1, &x->v); }
OK(getset) { return rc == 1 && value_is(x, "hello"); }
CALL(getdel) { return shmkv_getdel(x->kv, "k", 1, &x->v); }
OK(getdel) { return rc == 1 && value_is(x, "hello"); }
CALL(getex_ex) { return shmkv_getex(x->kv, "k", 1, SHMKV_GETEX_EX, 100, &x->v); }
OK(getex_ex) { return rc == 1 && value_is(x, "hello"); }
CALL(getex_keep) { return shmkv_getex(x->kv, "k", 1, SHMKV_GETEX_KEEP, 0, &x->v); }
OK(getex_keep) { return rc == 1 && value_is(x, "hello"); }
CALL(del) { return shmkv_del(x->kv, "k", 1); }
OK(del) { (void)x; return rc == 1; }
CALL(exists) { return shmkv_exists(x->kv, "k", 1); }
OK(exists) { (void)x; return rc == 1; }
CALL(delifeq) { return shmkv_delifeq(x->kv, "k", 1, "hello", 5); }
OK(delifeq) { (void)x; return rc == 1; }
CALL(expire) { return shmkv_expire(x->kv, "k", 1, SHMKV_EXPIRE_SEC, 0, 100); }
OK(expire) { (void)x; return rc == 1; }
CALL(pexpireat_nx)
{
	return shmkv_expire(x->kv, "k", 1, SHMKV_EXPIRE_AT_MSEC,
			    SHMKV_EXPIRE_NX, INT64_C(4102444800000));
}
OK(pexpireat_nx) { (void)x; return rc == 1; }
CALL(pttl) { return shmkv_pttl(x->kv, "t", 1, &x->i64); }
OK(pttl) { return rc == 0 && x->i64 > 0 && x->i64 <= 1000000; }
CALL(ttl) { return shmkv_ttl(x->kv, "t", 1, &x->i64); }
OK(ttl) { return rc == 0 && x->i64 > 0 && x->i64 <= 1000; }
CALL(persist) { return shmkv_persist(x->kv, "t", 1); }
OK(persist) { (void)x; return rc == 1; }
CALL(incr) { return shmkv_incr(x->kv, "n", 1, &x->i64); }
OK(incr) { return rc == 0 && x->i64 == 42; }
CALL(decr) { return shmkv_decr(x->kv, "n", 1, &x->i64); }
OK(decr) { return rc == 0 && x->i64 == 40; }
CALL(incrby) { return shmkv_incrby(x->kv, "n", 1, 10, &x->i64); }
OK(incrby) { return rc == 0 && x->i64 == 51; }
CALL(decrby) { return shmkv_decrby(x->kv, "n", 1, 11, &x->i64); }
OK(decrby) { return rc == 0 && x->i64 == 30; }

/* Prepared keys: the key outlives the ref (a literal). */
static void prep_ref(struct ctx *x)
{
	cr_assert_eq(shmkv_key_prepare(x->kv, &x->ref, "k", 1), 0);
}
static void prep_ref_n(struct ctx *x)
{
	cr_assert_eq(shmkv_key_prepare(x->kv, &x->ref, "n", 1), 0);
}
CALL(key_set) { return shmkv_key_set(x->kv, &x->ref, "v", 1, SHMKV_SET_GET, 0, &x->v); }
OK(key_set) { return rc == 1 && value_is(x, "hello"); }
CALL(key_setnx) { return shmkv_key_setnx(x->kv, &x->ref, "v", 1); }
OK(key_setnx) { (void)x; return rc == 0; }
CALL(key_get) { return shmkv_key_get(x->kv, &x->ref, &x->v); }
OK(key_get) { return rc == 1 && value_is(x, "hello"); }
CALL(key_get_int) { return shmkv_key_get_int(x->kv, &x->ref, &x->i64); }
OK(key_get_int) { return rc == 1 && x->i64 == 41; }
CALL(key_getset) { return shmkv_key_getset(x->kv, &x->ref, "v", 1, &x->v); }
OK(key_getset) { return rc == 1 && value_is(x, "hello"); }
CALL(key_getdel) { return shmkv_key_getdel(x->kv, &x->ref, &x->v); }
OK(key_getdel) { return rc == 1 && value_is(x, "hello"); }
CALL(key_del) { return shmkv_key_del(x->kv, &x->ref); }
OK(key_del) { (void)x; return rc == 1; }
CALL(key_delifeq) { return shmkv_key_delifeq(x->kv, &x->ref, "hello", 5); }
OK(key_delifeq) { (void)x; return rc == 1; }
CALL(key_incrby) { return shmkv_key_incrby(x->kv, &x->ref, 2, &x->i64); }
OK(key_incrby) { return rc == 0 && x->i64 == 43; }

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

/* Whole-keyspace calls. */
CALL(scan) { return shmkv_scan(x->kv, 0, 100, count_key, x, &x->next); }
OK(scan) { return rc == 0 && x->next == 0 && x->visits == 3; }
CALL(stats) { return shmkv_stats(x->kv, &x->st); }
OK(stats) { return rc == 0 && x->st.live_keys == 3; }

/* shmkv_exec: a failure is a negative return with an error reply, never
 * a reply of the command's own type. */
static int exec3(struct ctx *x, const char *a0, const char *a1,
		 const char *a2)
{
	const char *argv[3] = { a0, a1, a2 };
	size_t len[3] = { strlen(a0), strlen(a1), a2 ? strlen(a2) : 0 };
	int rc = shmkv_exec(x->kv, a2 ? 3 : 2, argv, len, &x->reply);

	if (rc < 0 && x->reply.type != SHMKV_REPLY_ERROR)
		return 1; /* an answer with an error: counted as wrong */
	return rc;
}
static int reply_is(const struct ctx *x, enum shmkv_reply_type t,
		    const char *s)
{
	return x->reply.type == t && x->reply.len == strlen(s) &&
	       memcmp(x->reply.str, s, x->reply.len) == 0;
}
CALL(exec_get) { return exec3(x, "GET", "k", NULL); }
OK(exec_get) { return rc == 0 && reply_is(x, SHMKV_REPLY_BULK, "hello"); }
CALL(exec_incr) { return exec3(x, "INCR", "n", NULL); }
OK(exec_incr) { return rc == 0 && x->reply.type == SHMKV_REPLY_INTEGER && x->reply.integer == 42; }
CALL(exec_set) { return exec3(x, "SET", "k", "v"); }
OK(exec_set) { return rc == 0 && reply_is(x, SHMKV_REPLY_STATUS, "OK"); }
CALL(exec_delifeq)
{
	const char *argv[3] = { "DELIFEQ", "k", "hello" };
	size_t len[3] = { 7, 1, 5 };
	int rc = shmkv_exec(x->kv, 3, argv, len, &x->reply);

	return rc < 0 && x->reply.type != SHMKV_REPLY_ERROR ? 1 : rc;
}
OK(exec_delifeq) { return rc == 0 && x->reply.type == SHMKV_REPLY_INTEGER && x->reply.integer == 1; }

/* The safe lock: init binds, nothing is sent. */
static void prep_lock(struct ctx *x)
{
	cr_assert_eq(shmkv_lock_init(x->kv, &x->lk, "L"), 0);
}
static void prep_lock_known(struct ctx *x)
{
	prep_lock(x);
	cr_assert_eq(shmkv_lock_try_acquire(&x->lk, 60000), SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_release(&x->lk), 0);
}
static void prep_lock_held(struct ctx *x)
{
	prep_lock(x);
	cr_assert_eq(shmkv_lock_try_acquire(&x->lk, 60000), SHMKV_LOCK_ACQUIRED);
}
/* The token of a grant the kill cut short must not be claimed: its
 * outputs are the lock's token, and that reads 0 for a fresh handle. */
CALL(lock_try_acquire) { return shmkv_lock_try_acquire(&x->lk, 60000); }
OK(lock_try_acquire) { return rc == SHMKV_LOCK_ACQUIRED && shmkv_lock_token(&x->lk) == 1; }
/* After an acquire and a release: the token counter is at 1. */
OK(lock_try_acquire_known) { return rc == SHMKV_LOCK_ACQUIRED && shmkv_lock_token(&x->lk) == 2; }
CALL(lock_timed_acquire) { return shmkv_lock_timed_acquire(&x->lk, 60000, 1000); }
OK(lock_timed_acquire) { return rc == SHMKV_LOCK_ACQUIRED && shmkv_lock_token(&x->lk) == 1; }
CALL(lock_release) { return shmkv_lock_release(&x->lk); }
OK(lock_release) { (void)x; return rc == 0; }
CALL(lock_extend) { return shmkv_lock_extend(&x->lk, SHMKV_LOCK_EXTEND_ADD, 1000); }
OK(lock_extend) { (void)x; return rc == 0; }
CALL(lock_held) { return shmkv_lock_held(&x->lk); }
OK(lock_held) { (void)x; return rc == 1; }

/* A lock to list, on its own lock handle (ctx's stays grant-free). */
static void prep_lock_other(struct ctx *x)
{
	struct shmkv_lock other;

	cr_assert_eq(shmkv_lock_init(x->kv, &other, "listed"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&other, 60000),
		     SHMKV_LOCK_ACQUIRED);
}
CALL(lock_list) { return shmkv_lock_list(x->kv, count_lock, x); }
OK(lock_list) { return rc == 1 && x->visits == 1; }

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
CALL(pattern_acquire) { return shmkv_pattern_acquire(&x->pl, 60000, 0, &x->i64); }
OK(pattern_acquire) { return rc == 0 && x->i64 > 0; }
CALL(pattern_release) { return shmkv_pattern_release(&x->pl, x->expiry); }
OK(pattern_release) { (void)x; return rc == 0; }

struct call_case {
	const char *name;
	void (*prep)(struct ctx *x); /* after seed(), on a live server */
	int (*run)(struct ctx *x);
	int (*ok)(struct ctx *x, int rc);
	bool held; /* shmkv_lock_held: 0, not an errno, when it cannot ask */
};

#define CASE(n)		{ #n, NULL, run_##n, ok_##n, false }
#define CASE_P(n, p)	{ #n, p, run_##n, ok_##n, false }

static const struct call_case cases[] = {
	CASE(get),
	CASE(get_null),
	CASE(get_int),
	CASE(set),
	CASE(set_nx),
	CASE(set_xx_px),
	CASE(set_get),
	CASE(set_nx_get),
	CASE(set_keepttl_get),
	CASE(setnx),
	CASE(getset),
	CASE(getdel),
	CASE(getex_ex),
	CASE(getex_keep),
	CASE(del),
	CASE(exists),
	CASE(delifeq),
	{ "delifeq_known", prep_known, run_delifeq, ok_delifeq, false },
	CASE(expire),
	CASE(pexpireat_nx),
	CASE(pttl),
	CASE(ttl),
	CASE(persist),
	CASE(incr),
	CASE(decr),
	CASE(incrby),
	CASE(decrby),
	CASE_P(key_set, prep_ref),
	CASE_P(key_setnx, prep_ref),
	CASE_P(key_get, prep_ref),
	CASE_P(key_get_int, prep_ref_n),
	CASE_P(key_getset, prep_ref),
	CASE_P(key_getdel, prep_ref),
	CASE_P(key_del, prep_ref),
	CASE_P(key_delifeq, prep_ref),
	{ "key_delifeq_known", prep_ref_known, run_key_delifeq, ok_key_delifeq,
	  false },
	CASE_P(key_incrby, prep_ref_n),
	CASE(scan),
	CASE(stats),
	CASE(exec_get),
	CASE(exec_incr),
	CASE(exec_set),
	CASE(exec_delifeq),
	CASE_P(lock_try_acquire, prep_lock),
	{ "lock_try_acquire_known", prep_lock_known, run_lock_try_acquire,
	  ok_lock_try_acquire_known, false },
	CASE_P(lock_timed_acquire, prep_lock),
	CASE_P(lock_release, prep_lock_held),
	CASE_P(lock_extend, prep_lock_held),
	{ "lock_held", prep_lock_held, run_lock_held, ok_lock_held, true },
	CASE_P(lock_list, prep_lock_other),
	CASE_P(pattern_acquire, prep_pattern),
	CASE_P(pattern_release, prep_pattern_held),
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* ---- holding a request in flight ---- */

/* Bytes that arrived at @port's accepted connections and that nobody
 * has read yet (/proc/net/tcp's rx_queue of the server's side). */
static long unread_at(int port)
{
	FILE *f = fopen("/proc/net/tcp", "r");
	char line[512];
	long total = 0;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned lport, rport, st;
		unsigned long tx, rx;

		if (sscanf(line, " %*d: %*x:%x %*x:%x %x %lx:%lx", &lport,
			   &rport, &st, &tx, &rx) == 5 &&
		    (int)lport == port && rport != 0)
			total += (long)rx;
	}
	fclose(f);
	return total;
}

/* Is @pid stopped (state T in /proc/<pid>/stat)? kill(SIGSTOP) returns
 * before the target stops: until it has, it may still answer a request. */
static int stopped(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command may hold spaces and parens */
	return p != NULL && p[1] == ' ' && p[2] == 'T';
}

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

	cr_assert_eq(unread_at(port), 0, "%s: bytes unread before the call",
		     c->name);
	cr_assert_eq(kill(pid, SIGSTOP), 0);
	while (!stopped(pid))
		usleep(1000);
	cr_assert_eq(pthread_create(&t, NULL, flight_thread, &f), 0);
	while (unread_at(port) <= 0 && !atomic_load(&f.done))
		usleep(1000);
	kill_fn(kill_arg); /* SIGKILL works on a stopped process */
	pthread_join(t, NULL);
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
	rt_uri(uri, sizeof(uri), &srv, "?timeout=0"); /* only the kill ends it */
	cr_assert_eq(shmkv_open(uri, 0, &x.kv), 0);
	prepare(c, &x);
	rc = run_killed(c, &x, srv.pid, srv.port, kill_srv, &srv);
	if (c->held)
		cr_assert_eq(rc, 0, "%s: %d while the server died", c->name, rc);
	else
		cr_assert_eq(rc, -ECONNRESET, "%s: %d (%s)", c->name, rc,
			     rc < 0 ? shmkv_strerror(rc) : "not an error");
	cr_assert(outputs_untouched(&x), "%s wrote its outputs", c->name);
	shmkv_reply_free(&x.reply);

	/* A fresh server on the port: the same handle's next call works. */
	cr_assert_eq(rt_restart(&srv, NULL), 0);
	prepare(c, &x);
	rc = c->run(&x);
	cr_assert(c->ok(&x, rc), "%s after the restart: %d", c->name, rc);
	shmkv_reply_free(&x.reply);
	shmkv_close(x.kv);
}

/* ---- a 3-master cluster: one master killed with a call in flight ---- */

static struct redis_cluster cl;

static void cluster_down(void)
{
	for (int i = 0; i < REDIS_CLUSTER_NODES; i++)
		if (cl.node[i].pid > 0)
			kill(cl.node[i].pid, SIGCONT);
	redis_cluster_cleanup(&cl);
}

TestSuite(redis_inflight_cluster, .fini = cluster_down, .timeout = 120);

struct node_kill {
	struct redis_cluster *c;
	int i;
};

static void kill_node(void *arg)
{
	struct node_kill *k = arg;

	redis_cluster_kill_node(k->c, k->i);
}

/* The cluster, a handle on it (?timeout=0: only a kill ends a wait), and
 * per master a key it holds, seeded ("hello" and "41"), so that the
 * handle is connected to every master before anything is stopped (a
 * first connect's PING is not the call under test). */
static void cluster_up(struct ctx *x, char keys[][16], char counters[][16])
{
	char uri[160];
	int found = 0;

	if (!redis_server_find() || !redis_cluster_cli_find())
		cr_skip_test("no redis-server or redis-cli");
	cr_assert_eq(redis_cluster_start(&cl, "inflight_cl"), 0);
	snprintf(uri, sizeof(uri), "redis+cluster://127.0.0.1:%d?timeout=0",
		 cl.node[0].port);
	cr_assert_eq(shmkv_open(uri, 0, &x->kv), 0, "open %s", uri);
	for (int i = 0; i < REDIS_CLUSTER_NODES; i++)
		keys[i][0] = counters[i][0] = '\0';
	for (int n = 0; found < 2 * REDIS_CLUSTER_NODES && n < 10000; n++) {
		char k[16];
		int len = snprintf(k, sizeof(k), "k%d", n);
		int o = redis_cluster_slot_owner(
			&cl, shmkv__redis_key_slot(k, (size_t)len));

		cr_assert(o >= 0 && o < REDIS_CLUSTER_NODES);
		if (keys[o][0] == '\0') {
			strcpy(keys[o], k);
			found++;
		} else if (counters[o][0] == '\0') {
			strcpy(counters[o], k);
			found++;
		}
	}
	cr_assert_eq(found, 2 * REDIS_CLUSTER_NODES);
	for (int i = 0; i < REDIS_CLUSTER_NODES; i++) {
		cr_assert_eq(shmkv_set(x->kv, keys[i], strlen(keys[i]),
				       "hello", 5, 0, 0, NULL),
			     1);
		cr_assert_eq(shmkv_set(x->kv, counters[i], strlen(counters[i]),
				       "41", 2, 0, 0, NULL),
			     1);
	}
}

/* The node that is master @ord in the order calls over every master
 * visit them (by address: one host, so by port). */
static int master_at(int ord)
{
	int order[REDIS_CLUSTER_NODES];

	for (int i = 0; i < REDIS_CLUSTER_NODES; i++) {
		int j = i;

		for (; j > 0 && cl.node[order[j - 1]].port > cl.node[i].port; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	return order[ord];
}

static const char *cl_key;
CALL(cl_get) { return shmkv_get(x->kv, cl_key, strlen(cl_key), &x->v); }
CALL(cl_incr) { return shmkv_incr(x->kv, cl_key, strlen(cl_key), &x->i64); }
CALL(cl_set_get)
{
	return shmkv_set(x->kv, cl_key, strlen(cl_key), "v", 1, SHMKV_SET_GET,
			 0, &x->v);
}

Test(redis_inflight_cluster, a_master_killed_with_a_call_in_flight_is_an_error_and_the_others_serve)
{
	static const struct call_case calls[] = {
		{ "get", NULL, run_cl_get, NULL, false },
		{ "incr", NULL, run_cl_incr, NULL, false },
		{ "set_get", NULL, run_cl_set_get, NULL, false },
	};
	static struct ctx x;
	char keys[REDIS_CLUSTER_NODES][16], counters[REDIS_CLUSTER_NODES][16];

	cluster_up(&x, keys, counters);
	/* Node i dies under call i; the later nodes still serve. */
	for (int i = 0; i < REDIS_CLUSTER_NODES; i++) {
		struct node_kill nk = { &cl, i };
		int rc;

		cl_key = calls[i].run == run_cl_incr ? counters[i] : keys[i];
		outputs_reset(&x);
		rc = run_killed(&calls[i], &x, cl.node[i].pid, cl.node[i].port,
				kill_node, &nk);
		cr_assert_eq(rc, -ECONNRESET, "%s on node %d: %d", calls[i].name,
			     i, rc);
		cr_assert(outputs_untouched(&x), "%s wrote its outputs",
			  calls[i].name);
		/* The dead master's keys: an error, never an answer. */
		outputs_reset(&x);
		rc = run_cl_get(&x);
		cr_assert(rc < 0 && outputs_untouched(&x),
			  "a key of the dead node %d: %d", i, rc);
		/* The live masters' keys: their values, on the same handle. */
		for (int j = i + 1; j < REDIS_CLUSTER_NODES; j++) {
			outputs_reset(&x);
			cl_key = keys[j];
			cr_assert_eq(run_cl_get(&x), 1, "node %d", j);
			cr_assert(value_is(&x, "hello"));
			cl_key = counters[j];
			cr_assert_eq(run_cl_incr(&x), 0, "node %d", j);
			cr_assert_eq(x.i64, 42 + i, "node %d", j);
		}
	}
	shmkv_close(x.kv);
}

/* Scan calls with @x's handle from cursor 0 until the cursor names
 * master @ord. Return: that cursor; x->visits: the keys seen. */
static uint64_t scan_to(struct ctx *x, int ord)
{
	uint64_t cursor = 0, next = 0;
	int seen = 0;

	do {
		outputs_reset(x);
		cr_assert_eq(shmkv_scan(x->kv, cursor, 100, count_key, x, &next),
			     0);
		seen += x->visits;
		cursor = next;
	} while (cursor != 0 && (int)(cursor >> 58) < ord);
	cr_assert_eq((int)(cursor >> 58), ord, "the scan ended early");
	x->visits = seen;
	return cursor;
}

static uint64_t scan_cursor;
CALL(scan_at) { return shmkv_scan(x->kv, scan_cursor, 100, count_key, x, &x->next); }

/* Calls that visit every master in turn, killed at a later master's round
 * trip, after the earlier masters' have been answered: the lock list at
 * the last master, then a scan at the middle one (the scan's cursor
 * carries the master: 58 is redis_admin.c's MASTER_SHIFT). */
Test(redis_inflight_cluster, a_call_over_every_master_killed_at_a_later_master_is_an_error)
{
	static const struct call_case list = { "lock_list", NULL, run_lock_list,
					       NULL, false };
	static const struct call_case scan = { "scan", NULL, run_scan_at, NULL,
					       false };
	static struct ctx x;
	char keys[REDIS_CLUSTER_NODES][16], counters[REDIS_CLUSTER_NODES][16];
	struct node_kill nk = { &cl, 0 };
	int rc, on0;

	cluster_up(&x, keys, counters);
	cr_assert_eq(shmkv__redis_masters(shmkv__redis_of(x.kv)), 3);
	prep_lock_other(&x); /* one lock to list */

	/* The lock list: SCAN on masters 0 and 1 answered, 2's in flight. */
	nk.i = master_at(2);
	outputs_reset(&x);
	rc = run_killed(&list, &x, cl.node[nk.i].pid, cl.node[nk.i].port,
			kill_node, &nk);
	cr_assert_eq(rc, -ECONNRESET, "lock list: %d", rc);
	cr_assert_leq(x.visits, 1, "only the one lock, if on master 0 or 1");

	/* The scan over masters: master 0's batches answered, master 1's
	 * first in flight. Master 0 holds two seeded keys, and the lock's
	 * two if their slot is its. */
	on0 = 2 + 2 * (redis_cluster_slot_owner(&cl, shmkv__redis_key_slot(
						      "lock.{listed}", 13)) ==
		       master_at(0));
	scan_cursor = scan_to(&x, 1);
	cr_assert_eq(x.visits, on0, "master 0's keys: %d", x.visits);
	nk.i = master_at(1);
	outputs_reset(&x);
	rc = run_killed(&scan, &x, cl.node[nk.i].pid, cl.node[nk.i].port,
			kill_node, &nk);
	cr_assert_eq(rc, -ECONNRESET, "scan at master 1: %d", rc);
	cr_assert(outputs_untouched(&x), "the scan wrote its outputs");
	/* Master 0 still answers the scan from the start. */
	outputs_reset(&x);
	cr_assert_eq(shmkv_scan(x.kv, 0, 100, count_key, &x, &x.next), 0);
	cr_assert_eq(x.visits, on0);
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

struct relay {
	int lfd;	   /* listening, on port */
	int port;
	int upstream_port; /* the server's */
	pid_t server;	   /* stopped at request hold_at */
	int hold_at;	   /* 0: never */
	atomic_int held;   /* request hold_at was passed on */
	atomic_int quit;
	pthread_t t;
};

static int listen_any(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(fd >= 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(fd, 4), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static int connect_port(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

static void close_reset(int fd)
{
	struct linger l = { 1, 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

/* One client connection, relayed until either side ends. */
static void relay_one(struct relay *rl, int cfd, int *count)
{
	int sfd = connect_port(rl->upstream_port);
	bool server_spoke = true; /* the next client bytes begin a request */
	char buf[65536];

	if (sfd < 0) {
		close_reset(cfd);
		return;
	}
	while (!atomic_load(&rl->quit)) {
		struct pollfd p[2] = { { cfd, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		ssize_t n;

		if (poll(p, 2, 50) <= 0)
			continue;
		if (p[0].revents) {
			n = read(cfd, buf, sizeof(buf));
			if (n <= 0)
				break; /* the client closed */
			if (server_spoke && ++*count == rl->hold_at) {
				kill(rl->server, SIGSTOP);
				while (!stopped(rl->server))
					usleep(1000);
				atomic_store(&rl->held, 1);
			}
			server_spoke = false;
			if (write(sfd, buf, (size_t)n) != n)
				break;
		}
		if (p[1].revents) {
			n = read(sfd, buf, sizeof(buf));
			if (n <= 0) {
				/* The server died: so does the client's link. */
				close(sfd);
				close_reset(cfd);
				return;
			}
			server_spoke = true;
			if (write(cfd, buf, (size_t)n) != n)
				break;
		}
	}
	close(sfd);
	close(cfd);
}

static void *relay_thread(void *arg)
{
	struct relay *rl = arg;
	int count = 0;

	while (!atomic_load(&rl->quit)) {
		struct pollfd p = { rl->lfd, POLLIN, 0 };
		int cfd;

		if (poll(&p, 1, 50) <= 0)
			continue;
		cfd = accept4(rl->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd >= 0)
			relay_one(rl, cfd, &count);
	}
	return NULL;
}

/* The relay counts from its start: start it just before the call. */
static void relay_start(struct relay *rl, int lfd, int port, int hold_at)
{
	memset(rl, 0, sizeof(*rl));
	rl->lfd = lfd;
	rl->port = port;
	rl->upstream_port = srv.port;
	rl->server = srv.pid;
	rl->hold_at = hold_at;
	cr_assert_eq(pthread_create(&rl->t, NULL, relay_thread, rl), 0);
}

static void relay_stop(struct relay *rl)
{
	atomic_store(&rl->quit, 1);
	pthread_join(rl->t, NULL);
}

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

static const struct later_case later[] = {
	/* EVALSHA (NOSCRIPT), SCRIPT LOAD, EVALSHA */
	{ { "lock_try_acquire_flushed", prep_lock_flushed, run_lock_try_acquire,
	    ok_lock_try_acquire_known, false }, 2 },
	{ { "lock_try_acquire_flushed", prep_lock_flushed, run_lock_try_acquire,
	    ok_lock_try_acquire_known, false }, 3 },
	/* EVALSHA (NOSCRIPT), EVAL: the GET-then-write script */
	{ { "set_get_flushed", prep_flushed, run_set_get, ok_set_get, false },
	  2 },
	{ { "getdel_flushed", prep_flushed, run_getdel, ok_getdel, false }, 2 },
	/* SETNX (0), GET (a passed time), GETSET */
	{ { "pattern_takeover", prep_pattern_expired, run_pattern_acquire,
	    ok_pattern_acquire, false }, 2 },
	{ { "pattern_takeover", prep_pattern_expired, run_pattern_acquire,
	    ok_pattern_acquire, false }, 3 },
};
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
	struct relay rl;
	struct flight f = { .c = c, .x = &x };
	pthread_t t;
	char uri[128];
	int port, lfd, rc;

	start();
	lfd = listen_any(&port);
	snprintf(uri, sizeof(uri), "redis://127.0.0.1:%d?timeout=0", port);
	relay_start(&rl, lfd, port, 0);
	cr_assert_eq(shmkv_open(uri, 0, &x.kv), 0);
	prepare(c, &x);
	relay_stop(&rl);
	/* The handle's connection ends with the old relay: the new one
	 * counts from the reconnect, whose requests are the call's. */
	relay_start(&rl, lfd, port, lc->hold_at);
	cr_assert_eq(pthread_create(&t, NULL, flight_thread, &f), 0);
	while (!(atomic_load(&rl.held) && unread_at(srv.port) > 0) &&
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
	relay_stop(&rl);
	relay_start(&rl, lfd, port, 0);
	prepare(c, &x);
	rc = c->run(&x);
	cr_assert(c->ok(&x, rc), "%s after the restart: %d", c->name, rc);
	shmkv_close(x.kv);
	relay_stop(&rl);
	close(lfd);
}
