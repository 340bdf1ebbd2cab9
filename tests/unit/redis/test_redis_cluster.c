/*
 * test_redis_cluster.c - redis_cluster.c on a private 3-master cluster
 * (helpers/redis_cluster.h): keys on all three masters, MOVED after a
 * slot migration done by hand behind a handle's back, ASK during one, a
 * killed master, the masters' enumeration; and, on a fake node (a RESP
 * server in a thread of the test) that answers what a test needs, the
 * redirection limit, TRYAGAIN's bounded retries and a dropped connection
 * with the command in flight (never resent).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/redis_cluster.h"
#include "helpers/redis_server.h"
#include "helpers/resp.h"
#include "redis.h"
#include "shmkv.h"
#include "shmkv_exec.h"

static struct redis_cluster cl;

static void cluster_up(void)
{
	if (!redis_server_find() || !redis_cluster_cli_find())
		cr_skip_test("no redis-server or redis-cli");
	cr_assert_eq(redis_cluster_start(&cl, "rcl"), 0, "cluster start");
}

static void cluster_down(void)
{
	redis_cluster_cleanup(&cl);
}

TestSuite(redis_cluster, .init = cluster_up, .fini = cluster_down,
	  .timeout = 120);

/* A handle on the cluster, seeded by node @seed only. */
static struct shmkv_redis *open_on(int seed)
{
	char uri[128];
	shmkv_t *kv = NULL;
	int err;

	snprintf(uri, sizeof(uri), "redis+cluster://127.0.0.1:%d",
		 cl.node[seed].port);
	err = shmkv_open(uri, 0, &kv);
	cr_assert_eq(err, 0, "open %s: %d", uri, err);
	return shmkv__redis_of(kv);
}

/* @argc words (NUL-terminated) as one command for @key's node. Return:
 * the link error, or 0 and the reply in *@rep. */
static int call(struct shmkv_redis *r, redisReply **rep, const char *key,
		int argc, ...)
{
	const char *argv[8];
	size_t len[8];
	va_list ap;
	int i;

	va_start(ap, argc);
	for (i = 0; i < argc; i++) {
		argv[i] = va_arg(ap, const char *);
		len[i] = strlen(argv[i]);
	}
	va_end(ap);
	return shmkv__redis_call(r, key, key ? strlen(key) : 0, argc, argv, len,
				 rep);
}

/* GET @key through @r: its value, "(nil)", or "error <errno>". */
static const char *get(struct shmkv_redis *r, const char *key)
{
	static __thread char out[256]; /* threads call it too */
	redisReply *rep;
	int err = call(r, &rep, key, 2, "GET", key);

	if (err) {
		snprintf(out, sizeof(out), "error %d", err);
		return out;
	}
	if (rep->type == REDIS_REPLY_STRING)
		snprintf(out, sizeof(out), "%s", rep->str);
	else if (rep->type == REDIS_REPLY_NIL)
		snprintf(out, sizeof(out), "(nil)");
	else
		snprintf(out, sizeof(out), "reply %d %s", rep->type,
			 rep->str ? rep->str : "");
	freeReplyObject(rep);
	return out;
}

static void set(struct shmkv_redis *r, const char *key, const char *val)
{
	redisReply *rep;

	cr_assert_eq(call(r, &rep, key, 3, "SET", key, val), 0, "SET %s", key);
	cr_assert_eq(rep->type, REDIS_REPLY_STATUS, "SET %s: %s", key,
		     rep->str);
	freeReplyObject(rep);
}

/* Node @i's answer to @cmd (words split at spaces), straight. */
static const char *node_says(int i, const char *cmd)
{
	static char out[4096];

	cr_assert_eq(resp_simple(cl.node[i].port, cmd, out, sizeof(out)), 0,
		     "node %d: %s", i, cmd);
	return out;
}

/* How many @kind errors ("MOVED", "ASK") node @i has replied since its
 * CONFIG RESETSTAT (INFO errorstats' count). */
static long errors_of(int i, const char *kind)
{
	char tag[64];
	const char *p;

	snprintf(tag, sizeof(tag), "errorstat_%s:count=", kind);
	p = strstr(node_says(i, "INFO errorstats"), tag);
	return p ? atol(p + strlen(tag)) : 0;
}

Test(redis_cluster, keys_spread_over_all_three_masters)
{
	struct shmkv_redis *r = open_on(1);
	int per_node[REDIS_CLUSTER_NODES] = { 0 };
	char key[32], val[32], cmd[64], want[40];
	int i, owner;

	for (i = 0; i < 60; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		snprintf(val, sizeof(val), "v%d", i);
		set(r, key, val);
	}
	for (i = 0; i < 60; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		snprintf(val, sizeof(val), "v%d", i);
		cr_assert_str_eq(get(r, key), val);
		/* The key is where the cluster says its slot is. */
		owner = redis_cluster_slot_owner(
			&cl, shmkv__redis_key_slot(key, strlen(key)));
		cr_assert_geq(owner, 0);
		snprintf(cmd, sizeof(cmd), "GET %s", key);
		snprintf(want, sizeof(want), "%s\n", val);
		cr_assert_str_eq(node_says(owner, cmd), want, "%s", key);
		per_node[owner]++;
	}
	for (i = 0; i < REDIS_CLUSTER_NODES; i++)
		cr_assert_gt(per_node[i], 0, "node %d got no key", i);
	for (i = 0; i < REDIS_CLUSTER_NODES; i++)
		cr_assert_eq(errors_of(i, "MOVED"), 0, "a fresh map: no MOVED");
	shmkv_close(&r->kv);
}

Test(redis_cluster, masters_are_the_three_in_a_stable_order)
{
	struct shmkv_redis *r = open_on(0);
	const char *argv[] = { "CLUSTER", "MYID" };
	size_t len[] = { 7, 4 };
	bool seen[REDIS_CLUSTER_NODES] = { false };
	int i, j, last_port = 0;
	redisReply *rep;

	cr_assert_eq(shmkv__redis_masters(r), 3);
	for (i = 0; i < 3; i++) {
		cr_assert_eq(shmkv__redis_call_master(r, i, 2, argv, len, &rep),
			     0);
		for (j = 0; j < REDIS_CLUSTER_NODES; j++)
			if (!strcmp(rep->str, cl.node[j].id))
				break;
		freeReplyObject(rep);
		cr_assert_lt(j, REDIS_CLUSTER_NODES, "master %d: unknown id",
			     i);
		cr_assert(!seen[j], "master %d twice", j);
		seen[j] = true;
		/* Sorted by address: one host, so by port. */
		cr_assert_gt(cl.node[j].port, last_port);
		last_port = cl.node[j].port;
	}
	cr_assert_eq(shmkv__redis_call_master(r, 3, 2, argv, len, &rep),
		     -EINVAL);
	shmkv_close(&r->kv);
}

/* Two nodes other than @src: the first is @dst. */
static int other_than(int src)
{
	return (src + 1) % REDIS_CLUSTER_NODES;
}

/* Starts moving @slot from @src to @dst (IMPORTING, MIGRATING) and moves
 * @key's value over with MIGRATE, as redis-cli --cluster reshard does. */
static void migrate_key(unsigned slot, int src, int dst, const char *key)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "CLUSTER SETSLOT %u IMPORTING %s", slot,
		 cl.node[src].id);
	cr_assert_str_eq(node_says(dst, cmd), "+OK\n");
	snprintf(cmd, sizeof(cmd), "CLUSTER SETSLOT %u MIGRATING %s", slot,
		 cl.node[dst].id);
	cr_assert_str_eq(node_says(src, cmd), "+OK\n");
	snprintf(cmd, sizeof(cmd), "MIGRATE 127.0.0.1 %d %s 0 5000",
		 cl.node[dst].port, key);
	cr_assert_str_eq(node_says(src, cmd), "+OK\n");
}

/* Ends the move: the slot is @dst's on every node. */
static void settle_slot(unsigned slot, int dst)
{
	char cmd[256];
	int i;

	snprintf(cmd, sizeof(cmd), "CLUSTER SETSLOT %u NODE %s", slot,
		 cl.node[dst].id);
	/* The destination first, then the others (as redis-cli does). */
	cr_assert_str_eq(node_says(dst, cmd), "+OK\n");
	for (i = 0; i < REDIS_CLUSTER_NODES; i++)
		if (i != dst)
			cr_assert_str_eq(node_says(i, cmd), "+OK\n");
	cr_assert_eq(redis_cluster_wait_agreed(&cl, 0), 0);
}

Test(redis_cluster, moved_after_a_migration_updates_the_stale_map)
{
	struct shmkv_redis *r = open_on(0);
	const char *key = "{mv}a", *key2 = "{mv}b";
	unsigned slot = shmkv__redis_key_slot(key, strlen(key));
	int src = redis_cluster_slot_owner(&cl, slot), dst = other_than(src);
	redisReply *rep;
	char cmd[128];

	set(r, key, "before");
	set(r, key2, "7");
	migrate_key(slot, src, dst, key);
	snprintf(cmd, sizeof(cmd), "MIGRATE 127.0.0.1 %d %s 0 5000",
		 cl.node[dst].port, key2);
	cr_assert_str_eq(node_says(src, cmd), "+OK\n");
	settle_slot(slot, dst);
	node_says(src, "CONFIG RESETSTAT");
	/* The handle still maps the slot to src: src says MOVED, once. */
	cr_assert_str_eq(get(r, key), "before");
	cr_assert_eq(errors_of(src, "MOVED"), 1);
	/* An INCR after the move counts once, on dst. */
	cr_assert_eq(call(r, &rep, key2, 2, "INCR", key2), 0);
	cr_assert_eq(rep->type, REDIS_REPLY_INTEGER);
	cr_assert_eq(rep->integer, 8);
	freeReplyObject(rep);
	cr_assert_str_eq(node_says(dst, "GET {mv}b"), "8\n");
	cr_assert_eq(errors_of(src, "MOVED"), 1, "the map was updated");
	shmkv_close(&r->kv);
}

Test(redis_cluster, ask_during_a_migration_leaves_the_map_alone)
{
	struct shmkv_redis *r = open_on(2);
	const char *moved = "{ak}moved", *stays = "{ak}stays";
	unsigned slot = shmkv__redis_key_slot(moved, strlen(moved));
	int src = redis_cluster_slot_owner(&cl, slot), dst = other_than(src);
	char cmd[128];

	set(r, moved, "m");
	set(r, stays, "s");
	migrate_key(slot, src, dst, moved);
	node_says(src, "CONFIG RESETSTAT");
	/* src no longer has it and the slot is MIGRATING: ASK to dst. */
	cr_assert_str_eq(get(r, moved), "m");
	cr_assert_eq(errors_of(src, "ASK"), 1);
	/* The slot is still src's: the key still there is read there. */
	cr_assert_str_eq(get(r, stays), "s");
	cr_assert_eq(errors_of(src, "ASK"), 1);
	cr_assert_eq(errors_of(src, "MOVED"), 0);
	/* A new key of the slot goes where the migration puts it. */
	set(r, "{ak}new", "n");
	cr_assert_eq(errors_of(src, "ASK"), 2);
	/* (A plain GET on dst would be MOVED: count the slot's keys.) */
	snprintf(cmd, sizeof(cmd), "CLUSTER COUNTKEYSINSLOT %u", slot);
	cr_assert_str_eq(node_says(dst, cmd), ":2\n", "moved and new");
	cr_assert_str_eq(node_says(src, cmd), ":1\n", "stays");
	/* And after the move ends, the next call on its key gets MOVED. */
	snprintf(cmd, sizeof(cmd), "MIGRATE 127.0.0.1 %d %s 0 5000",
		 cl.node[dst].port, stays);
	cr_assert_str_eq(node_says(src, cmd), "+OK\n");
	settle_slot(slot, dst);
	cr_assert_str_eq(get(r, stays), "s");
	cr_assert_eq(errors_of(src, "MOVED"), 1);
	shmkv_close(&r->kv);
}

Test(redis_cluster, a_killed_master_fails_its_keys_only)
{
	struct shmkv_redis *r = open_on(0);
	char key[REDIS_CLUSTER_NODES][32], val[32];
	int i, found = 0, owner;
	const char *got;

	/* One key on each master. */
	for (i = 0; found != (1 << REDIS_CLUSTER_NODES) - 1 && i < 1000; i++) {
		snprintf(val, sizeof(val), "x%d", i);
		owner = redis_cluster_slot_owner(
			&cl, shmkv__redis_key_slot(val, strlen(val)));
		if (owner < 0 || (found & (1 << owner)))
			continue;
		found |= 1 << owner;
		snprintf(key[owner], sizeof(key[owner]), "%s", val);
		set(r, val, val);
	}
	cr_assert_eq(found, 7);
	redis_cluster_kill_node(&cl, 2);
	got = get(r, key[2]);
	cr_assert(!strncmp(got, "error ", 6), "the dead master's key: %s", got);
	cr_assert_eq(atoi(got + 6), -ECONNREFUSED);
	for (i = 0; i < 2; i++)
		cr_assert_str_eq(get(r, key[i]), key[i], "a live master's key");
	/* Still so on the next calls (each reads the map again). */
	cr_assert_str_eq(get(r, key[2]), got);
	cr_assert_str_eq(get(r, key[0]), key[0]);
	shmkv_close(&r->kv);
}

Test(redis_cluster, a_brace_in_the_prefix_is_refused)
{
	char uri[128];
	shmkv_t *kv = NULL;

	snprintf(uri, sizeof(uri), "redis+cluster://127.0.0.1:%d?prefix=%%7Ba",
		 cl.node[0].port);
	cr_assert_eq(shmkv_open(uri, 0, &kv), -EINVAL);
	snprintf(uri, sizeof(uri), "redis+cluster://127.0.0.1:%d?prefix=a%%7D",
		 cl.node[0].port);
	cr_assert_eq(shmkv_open(uri, 0, &kv), -EINVAL);
	cr_assert_null(kv);
	snprintf(uri, sizeof(uri),
		 "redis+cluster://127.0.0.1:%d?prefix=app:", cl.node[0].port);
	cr_assert_eq(shmkv_open(uri, 0, &kv), 0);
	shmkv_close(kv);
}

Test(redis_cluster, the_fixture_leaves_no_process_or_file_behind)
{
	pid_t pid[REDIS_CLUSTER_NODES];
	char dir[sizeof(cl.dir)];
	struct stat st;
	int i;

	for (i = 0; i < REDIS_CLUSTER_NODES; i++) {
		pid[i] = cl.node[i].pid;
		cr_assert_gt(pid[i], 0);
		cr_assert_eq(kill(pid[i], 0), 0);
	}
	snprintf(dir, sizeof(dir), "%s", cl.dir);
	cr_assert_eq(stat(dir, &st), 0);
	redis_cluster_cleanup(&cl);
	for (i = 0; i < REDIS_CLUSTER_NODES; i++) {
		/* Reaped: not even a zombie holds the pid. */
		cr_assert_eq(kill(pid[i], 0), -1);
		cr_assert_eq(errno, ESRCH);
	}
	cr_assert_eq(stat(dir, &st), -1);
	cr_assert_eq(errno, ENOENT);
}

/* shmkv_exec of @line (words split at spaces) on @kv: its reply. */
static struct shmkv_reply exec_line(shmkv_t *kv, const char *line)
{
	const char *argv[8];
	size_t len[8];
	char copy[256], *save = NULL, *w;
	struct shmkv_reply rep;
	int argc = 0;

	snprintf(copy, sizeof(copy), "%s", line);
	for (w = strtok_r(copy, " ", &save); w && argc < 8;
	     w = strtok_r(NULL, " ", &save)) {
		argv[argc] = w;
		len[argc++] = strlen(w);
	}
	cr_assert_eq(shmkv_exec(kv, argc, argv, len, &rep), 0, "%s", line);
	return rep;
}

Test(redis_cluster, exec_and_a_prefix_route_by_the_key_as_sent)
{
	char uri[128], cmd[64];
	shmkv_t *kv = NULL;
	struct shmkv_reply rep;
	const char *keys[] = { "a", "b", "c", "d", "e", "f" };
	int owners = 0, i, owner;

	snprintf(uri, sizeof(uri),
		 "redis+cluster://127.0.0.1:%d?prefix=app:", cl.node[0].port);
	cr_assert_eq(shmkv_open(uri, 0, &kv), 0);
	for (i = 0; i < 6; i++) {
		snprintf(cmd, sizeof(cmd), "SET %s %s", keys[i], keys[i]);
		rep = exec_line(kv, cmd);
		cr_assert_eq(rep.type, SHMKV_REPLY_STATUS, "%s", rep.str);
		shmkv_reply_free(&rep);
		/* On the node of "app:<key>"'s slot, under that name. */
		snprintf(cmd, sizeof(cmd), "app:%s", keys[i]);
		owner = redis_cluster_slot_owner(
			&cl, shmkv__redis_key_slot(cmd, strlen(cmd)));
		owners |= 1 << owner;
		snprintf(cmd, sizeof(cmd), "GET app:%s", keys[i]);
		cr_assert_eq(node_says(owner, cmd)[0], keys[i][0], "%s", cmd);
	}
	cr_assert_gt(__builtin_popcount(owners), 1, "keys on several nodes");
	rep = exec_line(kv, "GET d");
	cr_assert_eq(rep.type, SHMKV_REPLY_BULK);
	cr_assert_str_eq(rep.str, "d");
	shmkv_reply_free(&rep);
	rep = exec_line(kv, "DEL a b c d e f nokey");
	cr_assert_eq(rep.type, SHMKV_REPLY_INTEGER);
	cr_assert_eq(rep.integer, 6);
	shmkv_reply_free(&rep);
	for (i = 0; i < REDIS_CLUSTER_NODES; i++)
		cr_assert_eq(errors_of(i, "MOVED"), 0);
	shmkv_close(kv);
}

/* @n rounds of INCR @counter and GET of the three keys k0..k2 (values
 * "v0".."v2") through @r. Return: 0 if every reply was right. */
static int incr_and_read(struct shmkv_redis *r, const char *counter, int n)
{
	char key[8], want[8];
	redisReply *rep;
	int i, k, bad = 0;

	for (i = 1; i <= n && !bad; i++) {
		if (call(r, &rep, counter, 2, "INCR", counter) != 0)
			return -1;
		bad = rep->type != REDIS_REPLY_INTEGER || rep->integer != i;
		freeReplyObject(rep);
		for (k = 0; k < 3 && !bad; k++) {
			snprintf(key, sizeof(key), "k%d", k);
			snprintf(want, sizeof(want), "v%d", k);
			bad = strcmp(get(r, key), want) != 0;
		}
	}
	return bad ? -1 : 0;
}

Test(redis_cluster, a_fork_child_and_its_parent_each_get_their_replies)
{
	struct shmkv_redis *r = open_on(0);
	char key[8], val[8];
	int k, status;
	pid_t pid;

	for (k = 0; k < 3; k++) {
		snprintf(key, sizeof(key), "k%d", k);
		snprintf(val, sizeof(val), "v%d", k);
		set(r, key, val); /* the links are connected when we fork */
	}
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) /* no cr_assert in the child: its exit says */
		_exit(incr_and_read(r, "child", 300) == 0 ? 0 : 1);
	cr_assert_eq(incr_and_read(r, "parent", 300), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child's replies were wrong");
	cr_assert_str_eq(get(r, "child"), "300");
	cr_assert_str_eq(get(r, "parent"), "300");
	shmkv_close(&r->kv);
}

struct worker {
	struct shmkv_redis *r;
	char counter[16];
	int result;
};

static void *work(void *arg)
{
	struct worker *w = arg;

	w->result = incr_and_read(w->r, w->counter, 200);
	return NULL;
}

Test(redis_cluster, threads_sharing_a_handle_each_get_their_replies)
{
	struct shmkv_redis *r = open_on(1);
	struct worker w[4];
	pthread_t t[4];
	char key[8], val[8];
	int i;

	for (i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		snprintf(val, sizeof(val), "v%d", i);
		set(r, key, val);
	}
	for (i = 0; i < 4; i++) {
		w[i].r = r;
		snprintf(w[i].counter, sizeof(w[i].counter), "t%d", i);
		cr_assert_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(w[i].result, 0, "thread %d's replies", i);
		cr_assert_str_eq(get(r, w[i].counter), "200");
	}
	shmkv_close(&r->kv);
}

Test(redis_cluster, a_keyless_command_goes_to_a_live_master)
{
	struct shmkv_redis *r = open_on(0);
	int i, first = 0;
	char id[64];
	redisReply *rep;

	/* The first master (by address: the lowest port) is killed. */
	for (i = 1; i < REDIS_CLUSTER_NODES; i++)
		if (cl.node[i].port < cl.node[first].port)
			first = i;
	cr_assert_eq(call(r, &rep, NULL, 2, "CLUSTER", "MYID"), 0);
	cr_assert_str_eq(rep->str, cl.node[first].id);
	freeReplyObject(rep);
	redis_cluster_kill_node(&cl, first);
	cr_assert_eq(call(r, &rep, NULL, 2, "CLUSTER", "MYID"), 0);
	snprintf(id, sizeof(id), "%s", rep->str);
	freeReplyObject(rep);
	cr_assert_str_neq(id, cl.node[first].id);
	cr_assert_eq(call(r, &rep, NULL, 1, "PING"), 0);
	cr_assert_str_eq(rep->str, "PONG");
	freeReplyObject(rep);
	shmkv_close(&r->kv);
}

/* The fixture's own promise, without a cluster started by the suite. */
TestSuite(redis_cluster_fixture, .timeout = 120);

struct started {
	pid_t pid[REDIS_CLUSTER_NODES];
	char dir[sizeof(cl.dir)];
};

Test(redis_cluster_fixture, a_killed_test_takes_its_nodes_and_dir_with_it)
{
	struct redis_cluster mine;
	struct started s;
	int fd[2], i, k, status;
	char path[512];
	bool gone;
	pid_t child;

	if (!redis_server_find() || !redis_cluster_cli_find())
		cr_skip_test("no redis-server or redis-cli");
	cr_assert_eq(pipe(fd), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) { /* a test program that dies without cleaning up */
		memset(&mine, 0, sizeof(mine));
		memset(&s, 0, sizeof(s));
		if (redis_cluster_start(&mine, "rcl-killed") == 0) {
			for (i = 0; i < REDIS_CLUSTER_NODES; i++)
				s.pid[i] = mine.node[i].pid;
			memcpy(s.dir, mine.dir, sizeof(s.dir));
		}
		if (write(fd[1], &s, sizeof(s)) != (ssize_t)sizeof(s))
			_exit(1);
		pause();
		_exit(0);
	}
	close(fd[1]);
	cr_assert_eq(read(fd[0], &s, sizeof(s)), (ssize_t)sizeof(s));
	close(fd[0]);
	cr_assert_gt(s.pid[0], 0, "the child's cluster did not start");
	kill(child, SIGKILL);
	cr_assert_eq(waitpid(child, &status, 0), child);
	/* PR_SET_PDEATHSIG kills each node (a zombie until a reaper takes
	 * it). Polled, not timed: up to 1000 looks 10 ms apart. */
	for (i = 0; i < REDIS_CLUSTER_NODES; i++) {
		for (k = 0; k < 1000 && !redis_cluster_pid_gone(s.pid[i]); k++)
			usleep(10000);
		cr_assert(redis_cluster_pid_gone(s.pid[i]),
			  "node %d outlived its test", i);
	}
	/* And its janitor removes the temp dir: polled likewise. */
	for (k = 0; k < 1000 && access(s.dir, F_OK) == 0; k++)
		usleep(10000);
	gone = access(s.dir, F_OK) != 0 && errno == ENOENT;
	if (!gone) { /* not left behind by this test, whatever happens */
		for (i = 0; i < REDIS_CLUSTER_NODES; i++) {
			snprintf(path, sizeof(path), "%s/nodes-%d.conf", s.dir,
				 i);
			unlink(path);
			snprintf(path, sizeof(path), "%s/node-%d.log", s.dir,
				 i);
			unlink(path);
		}
		snprintf(path, sizeof(path), "%s/create.log", s.dir);
		unlink(path);
		rmdir(s.dir);
	}
	cr_assert(gone, "%s outlived its test", s.dir);
}

Test(redis_cluster, one_moved_rereads_the_whole_map)
{
	struct shmkv_redis *r = open_on(0);
	char k1[16] = "{m1}x", k2[16];
	unsigned s1 = shmkv__redis_key_slot(k1, strlen(k1)), s2 = s1;
	int src = redis_cluster_slot_owner(&cl, s1), dst = other_than(src);
	int i;

	/* A second key on another slot of the same master. */
	for (i = 0; s2 == s1 || redis_cluster_slot_owner(&cl, s2) != src; i++) {
		snprintf(k2, sizeof(k2), "{m%d}y", i + 2);
		s2 = shmkv__redis_key_slot(k2, strlen(k2));
	}
	set(r, k1, "one");
	set(r, k2, "two");
	/* Both slots move behind the handle's back. */
	migrate_key(s1, src, dst, k1);
	settle_slot(s1, dst);
	migrate_key(s2, src, dst, k2);
	settle_slot(s2, dst);
	node_says(src, "CONFIG RESETSTAT");
	cr_assert_str_eq(get(r, k1), "one");
	cr_assert_eq(errors_of(src, "MOVED"), 1);
	/* The MOVED for s1 made the next call read the map: s2 is known. */
	cr_assert_str_eq(get(r, k2), "two");
	cr_assert_eq(errors_of(src, "MOVED"), 1, "no MOVED for the 2nd slot");
	shmkv_close(&r->kv);
}

Test(redis_cluster, an_incr_that_times_out_in_flight_runs_once)
{
	char uri[160];
	shmkv_t *kv = NULL;
	struct shmkv_redis *r;
	const char *key = "{stopped}n";
	int owner = redis_cluster_slot_owner(
		&cl, shmkv__redis_key_slot(key, strlen(key)));
	redisReply *rep;

	/* A 300 ms command timeout, so the test does not wait long. */
	snprintf(uri, sizeof(uri), "redis+cluster://127.0.0.1:%d?timeout=300",
		 cl.node[0].port);
	cr_assert_eq(shmkv_open(uri, 0, &kv), 0);
	r = shmkv__redis_of(kv);
	cr_assert_str_eq(get(r, key), "(nil)"); /* its link is connected */
	cr_assert_eq(kill(cl.node[owner].pid, SIGSTOP), 0);
	cr_assert_eq(call(r, &rep, key, 2, "INCR", key), -ETIMEDOUT);
	cr_assert_eq(kill(cl.node[owner].pid, SIGCONT), 0);
	/* The node ran the INCR it had read; the handle did not send it
	 * again, and its next call connects afresh. */
	cr_assert_str_eq(get(r, key), "1");
	cr_assert_str_eq(node_says(owner, "GET {stopped}n"), "1\n");
	shmkv_close(kv);
}

Test(redis_cluster, open_takes_the_first_seed_that_answers)
{
	char uri[160];
	shmkv_t *kv = NULL;
	int dead = cl.node[2].port; /* nobody listens there once killed */

	redis_cluster_kill_node(&cl, 2);
	snprintf(uri, sizeof(uri), "redis+cluster://127.0.0.1:%d,127.0.0.1:%d",
		 dead, cl.node[1].port);
	cr_assert_eq(shmkv_open(uri, 0, &kv), 0, "the second seed answers");
	cr_assert_eq(shmkv__redis_masters(shmkv__redis_of(kv)), 3,
		     "the map still names the dead master");
	shmkv_close(kv);
	snprintf(uri, sizeof(uri), "redis+cluster://127.0.0.1:%d", dead);
	kv = NULL;
	cr_assert_eq(shmkv_open(uri, 0, &kv), -ECONNREFUSED);
	cr_assert_null(kv);
}
