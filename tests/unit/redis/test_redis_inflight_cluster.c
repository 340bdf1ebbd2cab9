/*
 * test_redis_inflight_cluster.c - a master of a 3-master Redis Cluster
 * (tests/helpers/redis_cluster.c) killed with a call in flight, as
 * test_redis_inflight.c does to one server: the call's error, nothing in
 * its outputs, and the live masters serving the same handle; and calls
 * over every master (the lock list, a scan) killed at a later master,
 * after the earlier ones answered. Held in flight as inflight.h says.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers/inflight.h"
#include "helpers/redis_cluster.h"
#include "helpers/redis_server.h"
#include "redis.h"
#include "shmkv.h"
#include "shmkv_lock.h"

/* What the caller's outputs hold before a call. */
#define SENT_BYTE 0xA5
#define SENT_LEN  ((size_t)0xA5A5)
#define SENT_I64  ((int64_t)-0x5A5A5A5A)

struct ctx {
	shmkv_t *kv;
	const char *key; /* the call's */
	char buf[64];
	struct shmkv_value v; /* .buf = buf */
	int64_t i64;
	uint64_t cursor; /* shmkv_scan's argument */
	uint64_t next;	 /* and its output */
	int visits;	 /* callbacks run (scan, lock list) */
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
}

static int outputs_untouched(const struct ctx *x)
{
	for (size_t i = 0; i < sizeof(x->buf); i++)
		if ((unsigned char)x->buf[i] != SENT_BYTE)
			return 0;
	return x->v.len == SENT_LEN && x->i64 == SENT_I64 &&
	       x->next == (uint64_t)SENT_I64 && x->visits == 0;
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

typedef int (*call_fn)(struct ctx *x);

static int run_get(struct ctx *x)
{
	return shmkv_get(x->kv, x->key, strlen(x->key), &x->v);
}

static int run_incr(struct ctx *x)
{
	return shmkv_incr(x->kv, x->key, strlen(x->key), &x->i64);
}

static int run_set_get(struct ctx *x)
{
	return shmkv_set(x->kv, x->key, strlen(x->key), "v", 1, SHMKV_SET_GET,
			 0, &x->v);
}

static int run_lock_list(struct ctx *x)
{
	return shmkv_lock_list(x->kv, count_lock, x);
}

static int run_scan(struct ctx *x)
{
	return shmkv_scan(x->kv, x->cursor, 100, count_key, x, &x->next);
}

struct flight {
	call_fn fn;
	struct ctx *x;
	int rc;
	atomic_int done; /* the call returned (seq_cst: read by the waiter) */
};

static void *flight_thread(void *arg)
{
	struct flight *f = arg;

	f->rc = f->fn(f->x);
	atomic_store(&f->done, 1);
	return NULL;
}

static struct redis_cluster cl;

/* Runs @fn on @x with node @i stopped, kills the node once the request
 * sits unread at its port, and returns the call's return. */
static int run_killed(call_fn fn, struct ctx *x, int i)
{
	struct flight f = { .fn = fn, .x = x };
	pthread_t t;
	long sent;

	cr_assert_eq(inflight_unread_at(cl.node[i].port), 0);
	cr_assert_eq(inflight_stop(cl.node[i].pid), 0);
	cr_assert_eq(pthread_create(&t, NULL, flight_thread, &f), 0);
	while ((sent = inflight_unread_at(cl.node[i].port)) <= 0 &&
	       !atomic_load(&f.done))
		usleep(1000);
	redis_cluster_kill_node(&cl, i); /* SIGKILL ends a stopped one */
	pthread_join(t, NULL);
	cr_assert(sent > 0, "returned %d with nothing in flight", f.rc);
	return f.rc;
}

static void cluster_down(void)
{
	for (int i = 0; i < REDIS_CLUSTER_NODES; i++)
		if (cl.node[i].pid > 0)
			kill(cl.node[i].pid, SIGCONT);
	redis_cluster_cleanup(&cl);
}

TestSuite(redis_inflight_cluster, .fini = cluster_down, .timeout = 120);

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
		cr_assert_eq(shmkv_set(x->kv, keys[i], strlen(keys[i]), "hello",
				       5, 0, 0, NULL),
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

		for (; j > 0 && cl.node[order[j - 1]].port > cl.node[i].port;
		     j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	return order[ord];
}

Test(redis_inflight_cluster,
     a_master_killed_with_a_call_in_flight_is_an_error_and_the_others_serve)
{
	/* Node i dies under call i; the nodes after it still serve. */
	static const struct {
		const char *name;
		call_fn fn;
	} calls[REDIS_CLUSTER_NODES] = {
		{ "get", run_get },
		{ "incr", run_incr },
		{ "set_get", run_set_get },
	};
	static struct ctx x;
	char keys[REDIS_CLUSTER_NODES][16], counters[REDIS_CLUSTER_NODES][16];

	cluster_up(&x, keys, counters);
	for (int i = 0; i < REDIS_CLUSTER_NODES; i++) {
		int rc;

		x.key = calls[i].fn == run_incr ? counters[i] : keys[i];
		outputs_reset(&x);
		rc = run_killed(calls[i].fn, &x, i);
		cr_assert_eq(rc, -ECONNRESET, "%s on node %d: %d",
			     calls[i].name, i, rc);
		cr_assert(outputs_untouched(&x), "%s wrote its outputs",
			  calls[i].name);
		/* The dead master's keys: an error, never an answer. */
		outputs_reset(&x);
		x.key = keys[i];
		rc = run_get(&x);
		cr_assert(rc < 0 && outputs_untouched(&x),
			  "a key of the dead node %d: %d", i, rc);
		/* The live masters' keys: their values, on the same handle. */
		for (int j = i + 1; j < REDIS_CLUSTER_NODES; j++) {
			outputs_reset(&x);
			x.key = keys[j];
			cr_assert_eq(run_get(&x), 1, "node %d", j);
			cr_assert(value_is(&x, "hello"));
			x.key = counters[j];
			cr_assert_eq(run_incr(&x), 0, "node %d", j);
			cr_assert_eq(x.i64, 42 + i, "node %d", j);
		}
	}
	shmkv_close(x.kv);
}

/* Scan calls from cursor 0 until the cursor names master @ord (its top
 * bits: 58 is redis_admin.c's MASTER_SHIFT). Return: that cursor;
 * x->visits: the keys seen on the way. */
static uint64_t scan_to(struct ctx *x, int ord)
{
	int seen = 0;

	x->cursor = 0;
	do {
		outputs_reset(x);
		cr_assert_eq(run_scan(x), 0);
		seen += x->visits;
		x->cursor = x->next;
	} while (x->cursor != 0 && (int)(x->cursor >> 58) < ord);
	cr_assert_eq((int)(x->cursor >> 58), ord, "the scan ended early");
	x->visits = seen;
	return x->cursor;
}

/* Calls that visit every master in turn, killed at a later master's round
 * trip after the earlier masters' were answered: the lock list at the
 * last master, then a scan at the middle one. */
Test(redis_inflight_cluster,
     a_call_over_every_master_killed_at_a_later_master_is_an_error)
{
	static struct ctx x;
	char keys[REDIS_CLUSTER_NODES][16], counters[REDIS_CLUSTER_NODES][16];
	struct shmkv_lock lk;
	int rc, on0;

	cluster_up(&x, keys, counters);
	cr_assert_eq(shmkv__redis_masters(shmkv__redis_of(x.kv)), 3);
	cr_assert_eq(shmkv_lock_init(x.kv, &lk, "listed"), 0);
	cr_assert_eq(shmkv_lock_try_acquire(&lk, 60000), SHMKV_LOCK_ACQUIRED);

	/* The lock list: SCAN on masters 0 and 1 answered, 2's in flight. */
	outputs_reset(&x);
	rc = run_killed(run_lock_list, &x, master_at(2));
	cr_assert_eq(rc, -ECONNRESET, "lock list: %d", rc);
	cr_assert_leq(x.visits, 1, "only the one lock, if on master 0 or 1");

	/* The scan over masters: master 0's batches answered, master 1's
	 * first in flight. Master 0 holds two seeded keys, and the lock's
	 * two if their slot is its. */
	on0 = 2 + 2 * (redis_cluster_slot_owner(
			       &cl, shmkv__redis_key_slot("lock.{listed}",
							  13)) == master_at(0));
	scan_to(&x, 1);
	cr_assert_eq(x.visits, on0, "master 0's keys: %d", x.visits);
	outputs_reset(&x);
	rc = run_killed(run_scan, &x, master_at(1));
	cr_assert_eq(rc, -ECONNRESET, "scan at master 1: %d", rc);
	cr_assert(outputs_untouched(&x), "the scan wrote its outputs");
	/* Master 0 still answers the scan from the start. */
	x.cursor = 0;
	outputs_reset(&x);
	cr_assert_eq(run_scan(&x), 0);
	cr_assert_eq(x.visits, on0);
	shmkv_close(x.kv);
}
