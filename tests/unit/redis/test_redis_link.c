/*
 * test_redis_link.c - a Redis handle's connection (src/redis_link.c)
 * when things go wrong: the server killed with a command in flight, a
 * server that stops answering, a fork child and threads on one handle.
 * The rule under test: an error, never a wrong answer, and the next call
 * works once the server does.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/inflight.h"
#include "helpers/redis_test.h"
#include "redis.h"
#include "shmkv.h"
#include "shmkv_exec.h"

static struct redis_server srv;

static void stop(void)
{
	if (srv.pid > 0)
		kill(srv.pid, SIGCONT); /* a stopped one dies of SIGKILL too */
	redis_server_cleanup(&srv);
}

TestSuite(redis_link, .fini = stop);

static void start(void)
{
	int rc = rt_start(&srv, "redis-link", NULL);

	if (rc == -2)
		cr_skip_test("no redis-server (apt-get install redis-server)");
	cr_assert_eq(rc, 0, "redis-server did not start (%s)", srv.log_path);
}

static shmkv_t *open_ok(const char *tail)
{
	char uri[256];
	shmkv_t *kv = NULL;
	int rc;

	rt_uri(uri, sizeof(uri), &srv, tail);
	rc = shmkv_open(uri, 0, &kv);
	cr_assert_eq(rc, 0, "%s: %s", uri, shmkv_strerror(rc));
	return kv;
}

/* One command through shmkv__redis_call (the layer under test); its
 * reply's integer, or its string compared to @want. Return: the call's
 * errno, or 1 for a reply that is not what was expected. */
static int call(shmkv_t *kv, const char *a0, const char *a1, const char *a2,
		const char *want, long long *integer)
{
	const char *argv[3] = { a0, a1, a2 };
	size_t len[3] = { strlen(a0), a1 ? strlen(a1) : 0,
			  a2 ? strlen(a2) : 0 };
	int argc = a2 ? 3 : a1 ? 2 : 1;
	redisReply *rep;
	int rc = shmkv__redis_call(shmkv__redis_of(kv), a1, len[1], argc, argv,
				   len, &rep);

	if (rc)
		return rc;
	if (integer != NULL && rep->type == REDIS_REPLY_INTEGER)
		*integer = rep->integer;
	else if (want != NULL && !((rep->type == REDIS_REPLY_STRING ||
				    rep->type == REDIS_REPLY_STATUS) &&
				   strcmp(rep->str, want) == 0))
		rc = 1;
	else if (want == NULL && integer == NULL &&
		 rep->type != REDIS_REPLY_NIL)
		rc = 1;
	freeReplyObject(rep);
	return rc;
}

/* Is a client of @s blocked in @cmd now (CLIENT LIST)? */
static int client_in(const struct redis_server *s, const char *cmd)
{
	redisContext *admin = rt_admin(s, NULL);
	redisReply *r;
	char want[64];
	int yes;

	if (admin == NULL)
		return 0;
	snprintf(want, sizeof(want), "cmd=%s ", cmd);
	r = redisCommand(admin, "CLIENT LIST");
	yes = r && r->type == REDIS_REPLY_STRING && strstr(r->str, want);
	if (r)
		freeReplyObject(r);
	redisFree(admin);
	return yes;
}

struct inflight {
	shmkv_t *kv;
	int rc;
};

static void *blpop_thread(void *arg)
{
	struct inflight *f = arg;

	/* Blocks until a push that never comes: the command is in flight
	 * for as long as the test wants. */
	f->rc = call(f->kv, "BLPOP", "list", "0", NULL, NULL);
	return NULL;
}

Test(redis_link, a_server_killed_with_a_command_in_flight_is_econnreset)
{
	struct inflight f;
	pthread_t t;

	start();
	f.kv = open_ok("?timeout=0"); /* only the kill can end the wait */
	cr_assert_eq(call(f.kv, "SET", "k", "before", "OK", NULL), 0);
	cr_assert_eq(pthread_create(&t, NULL, blpop_thread, &f), 0);
	/* In flight: the server has it, and has not answered. */
	while (!client_in(&srv, "blpop"))
		usleep(1000);
	redis_server_stop(&srv); /* SIGKILL */
	pthread_join(t, NULL);
	cr_assert_eq(f.rc, -ECONNRESET, "%d", f.rc);
	/* Down: the next call cannot connect (nothing was sent). */
	cr_assert_eq(call(f.kv, "GET", "k", NULL, NULL, NULL), -ECONNREFUSED);
	/* Back on the same port: the next call reconnects. A fresh server
	 * (no persistence) has no k. */
	cr_assert_eq(rt_restart(&srv, NULL), 0);
	cr_assert_eq(call(f.kv, "GET", "k", NULL, NULL, NULL), 0);
	cr_assert_eq(call(f.kv, "SET", "k", "after", "OK", NULL), 0);
	cr_assert_eq(call(f.kv, "GET", "k", NULL, "after", NULL), 0);
	shmkv_close(f.kv);
}

static void *incr_thread(void *arg)
{
	struct inflight *f = arg;
	long long n = 0;

	f->rc = call(f->kv, "INCR", "n", NULL, NULL, &n);
	return NULL;
}

/* The brief's other way to hold a command in flight: the server stopped
 * (SIGSTOP) holds the INCR unread in its socket, then dies (SIGKILL). */
Test(redis_link, an_incr_sent_to_a_stopped_server_then_killed_is_econnreset)
{
	struct inflight f;
	pthread_t t;
	long long n = 0;

	start();
	f.kv = open_ok("?timeout=0");
	cr_assert_eq(call(f.kv, "INCR", "n", NULL, NULL, &n), 0);
	cr_assert_eq(kill(srv.pid, SIGSTOP), 0);
	cr_assert_eq(pthread_create(&t, NULL, incr_thread, &f), 0);
	/* Sent: its bytes wait in the stopped server's socket. */
	while (inflight_unread_at(srv.port) <= 0)
		usleep(1000);
	redis_server_stop(&srv); /* SIGKILL works on a stopped process */
	pthread_join(t, NULL);
	cr_assert_eq(f.rc, -ECONNRESET, "%d", f.rc);
	cr_assert_eq(rt_restart(&srv, NULL), 0);
	cr_assert_eq(call(f.kv, "INCR", "n", NULL, NULL, &n), 0);
	cr_assert_eq(n, 1, "a fresh server: %lld", n);
	shmkv_close(f.kv);
}

Test(redis_link, a_server_restarted_while_idle_costs_no_error)
{
	shmkv_t *kv;

	start();
	kv = open_ok("");
	cr_assert_eq(call(kv, "SET", "k", "v", "OK", NULL), 0);
	/* The handle's connection is now to a dead server: its EOF is seen
	 * before the next command is sent, which then goes on a new one. */
	cr_assert_eq(rt_restart(&srv, NULL), 0);
	cr_assert_eq(call(kv, "SET", "k", "w", "OK", NULL), 0);
	cr_assert_eq(call(kv, "GET", "k", NULL, "w", NULL), 0);
	shmkv_close(kv);
}

Test(redis_link, a_stopped_server_times_out_and_the_link_recovers)
{
	shmkv_t *kv;
	long long n = 0;

	start();
	kv = open_ok("?timeout=200");
	cr_assert_eq(call(kv, "SET", "k", "v1", "OK", NULL), 0);
	cr_assert_eq(kill(srv.pid, SIGSTOP), 0);
	/* Sent, never answered while stopped. */
	cr_assert_eq(call(kv, "INCR", "n", NULL, NULL, &n), -ETIMEDOUT);
	cr_assert_eq(kill(srv.pid, SIGCONT), 0);
	/* The late reply of the INCR goes to the closed socket: the next
	 * replies are each their own command's. */
	cr_assert_eq(call(kv, "GET", "k", NULL, "v1", NULL), 0);
	cr_assert_eq(call(kv, "INCR", "n", NULL, NULL, &n), 0);
	cr_assert_eq(n, 2, "the timed-out INCR ran too: %lld", n);
	cr_assert_eq(call(kv, "SET", "k", "v2", "OK", NULL), 0);
	cr_assert_eq(call(kv, "GET", "k", NULL, "v2", NULL), 0);
	shmkv_close(kv);
}

#define ROUNDS 2000

/* @who's keys and values, checked as they are read back. Return: 0, or
 * the round that went wrong + 1. */
static int interleave(shmkv_t *kv, const char *who)
{
	char key[64], val[64];
	long long n;

	for (int i = 0; i < ROUNDS; i++) {
		snprintf(key, sizeof(key), "%s:%d", who, i % 50);
		snprintf(val, sizeof(val), "%s-%d", who, i);
		if (call(kv, "SET", key, val, "OK", NULL) != 0 ||
		    call(kv, "GET", key, NULL, val, NULL) != 0)
			return i + 1;
		n = -1;
		snprintf(key, sizeof(key), "%s:count", who);
		if (call(kv, "INCR", key, NULL, NULL, &n) != 0 || n != i + 1)
			return i + 1;
	}
	return 0;
}

Test(redis_link, a_fork_child_and_its_parent_never_get_each_others_replies)
{
	shmkv_t *kv;
	pid_t pid;
	int status, rc;

	start();
	kv = open_ok("");
	/* Connected before the fork: the child inherits the socket. */
	cr_assert_eq(call(kv, "PING", NULL, NULL, "PONG", NULL), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		rc = interleave(kv, "child");
		shmkv_close(kv);
		_exit(rc == 0 ? 0 : 1);
	}
	rc = interleave(kv, "parent");
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(rc, 0, "parent: round %d", rc);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child got a wrong reply (status %d)", status);
	cr_assert_eq(call(kv, "GET", "child:count", NULL, "2000", NULL), 0);
	shmkv_close(kv);
}

struct worker {
	shmkv_t *kv;
	char who[16];
	int rc;
};

static void *worker_thread(void *arg)
{
	struct worker *w = arg;

	w->rc = interleave(w->kv, w->who);
	return NULL;
}

Test(redis_link, threads_sharing_a_handle_each_get_their_own_replies)
{
	struct worker w[4];
	pthread_t t[4];
	shmkv_t *kv;

	start();
	kv = open_ok("");
	for (int i = 0; i < 4; i++) {
		w[i].kv = kv;
		snprintf(w[i].who, sizeof(w[i].who), "t%d", i);
		cr_assert_eq(pthread_create(&t[i], NULL, worker_thread, &w[i]),
			     0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(w[i].rc, 0, "%s: round %d", w[i].who, w[i].rc);
	}
	shmkv_close(kv);
}

/* A SET of a value the server refuses part-way (it drops a client whose
 * query buffer passes client-query-buffer-limit, 1 MiB): it closes our
 * connection while we are still writing, so the rest of the write meets
 * a closed socket. Return: the call's errno. */
static int set_cut_short(shmkv_t *kv)
{
	enum { BIG = 32 << 20 };
	char *big = malloc(BIG);
	const char *argv[3] = { "SET", "k", big };
	size_t len[3] = { 3, 1, BIG };
	redisReply *rep;
	int rc;

	cr_assert_not_null(big);
	memset(big, 'x', BIG);
	rc = shmkv__redis_call(shmkv__redis_of(kv), "k", 1, 3, argv, len, &rep);
	free(big);
	if (rc == 0)
		freeReplyObject(rep);
	return rc;
}

/* On a unix socket a write after the peer's close is EPIPE at once, and
 * raises SIGPIPE (TCP answers the first write after a reset with
 * ECONNRESET, no signal, and only a later one with EPIPE). */
Test(redis_link, a_write_to_a_closed_connection_does_not_kill_with_sigpipe)
{
	char sock[64], uri[128];
	const char *extra[] = { "--unixsocket", sock, "--unixsocketperm", "700",
				NULL };
	struct rt_opts o = { NULL, extra };
	redisContext *admin;
	sigset_t pending;
	shmkv_t *kv, *tcp;
	int rc;

	snprintf(sock, sizeof(sock), "/tmp/shmkv-redis-link-%d.sock",
		 (int)getpid());
	/* SIGPIPE's default action (die) is what the test runs under. */
	signal(SIGPIPE, SIG_DFL);
	rc = rt_start(&srv, "redis-link", &o);
	if (rc == -2)
		cr_skip_test("no redis-server (apt-get install redis-server)");
	cr_assert_eq(rc, 0, "redis-server did not start (%s)", srv.log_path);
	admin = rt_admin(&srv, NULL);
	cr_assert_not_null(admin);
	cr_assert_eq(rt_cmd_type(admin, REDIS_REPLY_STATUS,
				 "CONFIG SET client-query-buffer-limit 1mb"),
		     0);
	redisFree(admin);
	snprintf(uri, sizeof(uri), "redis+unix://%s?timeout=0", sock);
	cr_assert_eq(shmkv_open(uri, 0, &kv), 0);
	tcp = open_ok("?timeout=0");
	cr_assert_eq(set_cut_short(kv), -ECONNRESET);
	cr_assert_eq(set_cut_short(tcp), -ECONNRESET);
	/* Alive, and no SIGPIPE of ours left pending for later. */
	cr_assert_eq(sigpending(&pending), 0);
	cr_assert_eq(sigismember(&pending, SIGPIPE), 0);
	cr_assert_eq(call(kv, "SET", "k", "small", "OK", NULL), 0);
	cr_assert_eq(call(tcp, "GET", "k", NULL, "small", NULL), 0);
	shmkv_close(kv);
	shmkv_close(tcp);
	unlink(sock);
}
