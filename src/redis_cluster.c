/*
 * redis_cluster.c - Redis Cluster routing (redis.h): the slot map, a link
 * per master, and the redirections, as cluster clients do it (hiredis-
 * cluster's redis_cluster_command_execute, redis-py's
 * RedisCluster._execute_command), with one rule of our own: a command
 * that may have run is never sent again.
 *
 * - The map (redis_cluster_map.c) is CLUSTER SLOTS of the first node that
 *   answers: at open the URI's seeds in order; later the current masters,
 *   then the seeds.
 * - A key's slot is CRC16 of its hash tag (redis_slot.c), its node the
 *   slot's master in the map. A key-less command goes to the first master
 *   (masters are kept sorted by address: a stable order, by which SCAN
 *   visits them; a map that changes between two SCAN calls may make it
 *   miss or repeat keys).
 * - MOVED: the slot's owner becomes the node named, the command is sent
 *   there, and the whole map is read again before the next command (a
 *   resharding moves many slots: one CLUSTER SLOTS instead of a MOVED per
 *   slot). ASK: ASKING and then the command on the target's link, the map
 *   unchanged (the slot is still the source's until the migration ends).
 *   At most REDIRECTS_MAX of both per call, then -ELOOP.
 * - TRYAGAIN (a multi-key command during a slot's migration) and
 *   CLUSTERDOWN (no quorum, or a slot nobody serves): the command did not
 *   run, so it is retried after 10, 20, 40, 80 and 160 ms (310 ms in
 *   all; CLUSTERDOWN reads the map again first), then the error reply is
 *   the caller's.
 * - A node that cannot be connected to (nothing was sent): the map is read
 *   from another node and the command sent once more to the slot's owner
 *   in it (a key-less one: to another master). A connection that drops or
 *   times out with the command in flight (-ECONNRESET, -ETIMEDOUT) may
 *   have run it: the error is returned and nothing is resent (a resent
 *   INCR would count twice); the map is read again before the next
 *   command.
 *
 * Failover is followed, not forced: when a replica takes over a dead
 * master's slots, the dead master's link fails to connect, the map read
 * from another node names the new master, and the command goes there. A
 * command in flight when its master died is an error, never resent.
 *
 * Costs: a handle holds about 120 KB (the map, room for 64 nodes, the
 * scratch of a map being read). Everything runs under the handle's mutex
 * (redis_backend.c), the waits and map reads included: other threads on
 * the same handle wait for them too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "redis_cluster_map.h"

#define REDIRECTS_MAX 5	 /* as hiredis-cluster's default retry count */
#define BUSY_RETRIES  5	 /* TRYAGAIN / CLUSTERDOWN waits */
#define BUSY_FIRST_MS 10 /* doubled at each wait: 10 .. 160 ms */

/* ---- open, close ---- */

int shmkv__redis_cluster_open(struct shmkv_redis *r)
{
	int err;

	/* A brace in the prefix would be part of every key's hash tag
	 * rule: "{app}:" would put all keys in one slot and make the
	 * caller's own tags ("{user1}:a") meaningless; "app{" would turn
	 * them into other tags. Refused rather than half-honoured. */
	if (memchr(r->uri.prefix, '{', r->uri.prefix_len) ||
	    memchr(r->uri.prefix, '}', r->uri.prefix_len))
		return -EINVAL;
	r->cluster = calloc(1, sizeof(*r->cluster));
	if (!r->cluster)
		return -ENOMEM;
	err = shmkv__redis_cluster_refresh(r, -1);
	if (err) {
		shmkv__redis_cluster_close(r);
		return err;
	}
	return 0;
}

void shmkv__redis_cluster_close(struct shmkv_redis *r)
{
	struct shmkv_redis_cluster *cl = r->cluster;
	int i;

	if (!cl)
		return;
	for (i = 0; i < cl->nnodes; i++)
		shmkv__redis_link_close(&cl->node[i].link);
	free(cl);
	r->cluster = NULL;
}

/* ---- calls ---- */

/* The node for @slot (-1: key-less): its owner, else the first master;
 * -EHOSTUNREACH if the map has none. */
static int route(const struct shmkv_redis_cluster *cl, int slot)
{
	if (slot >= 0 && cl->owner[slot] != SHMKV_REDIS_NO_OWNER)
		return cl->owner[slot];
	return cl->nmasters ? cl->master[0] : -EHOSTUNREACH;
}

/* Errors only a connect gives: the command was not sent. */
static bool cannot_connect(int err)
{
	return err == -ECONNREFUSED || err == -EHOSTUNREACH;
}

/*
 * Connects @n's link if it is not connected, with a PING: a connect that
 * fails or times out, or an AUTH that drops, then happens before the
 * command is sent (the link's -ETIMEDOUT does not say which). Return: 0,
 * or the link's error (nothing of the command was sent).
 */
static int node_connect(struct shmkv_redis_cluster *cl, int n)
{
	struct shmkv_redis_link *l = &cl->node[n].link;
	const char *argv[] = { "PING" };
	const size_t len[] = { 4 };
	redisReply *rep;
	int err;

	if (l->c && l->pid == (pid_t)shmkv__self_pid())
		return 0;
	err = shmkv__redis_link_call(l, 1, argv, len, &rep);
	if (err == 0)
		freeReplyObject(rep);
	return err;
}

/* ASKING on @n's link: the next command there may touch a slot it is
 * importing. An error from it means the command was not sent. */
static int asking(struct shmkv_redis_cluster *cl, int n)
{
	const char *argv[] = { "ASKING" };
	const size_t len[] = { 6 };
	redisReply *rep;
	int err = shmkv__redis_link_call(&cl->node[n].link, 1, argv, len, &rep);

	if (err)
		return err;
	err = rep->type == REDIS_REPLY_STATUS ? 0 : -EPROTO;
	freeReplyObject(rep);
	return err;
}

static bool err_is(const redisReply *rep, const char *word)
{
	size_t n = strlen(word);

	return rep->type == REDIS_REPLY_ERROR && rep->len >= n &&
	       memcmp(rep->str, word, n) == 0 &&
	       (rep->len == n || rep->str[n] == ' ');
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* What one call has been through: its bounds. */
struct trip {
	int slot;      /* -1: key-less */
	int node;      /* where the command goes next */
	int redirects; /* MOVED + ASK followed */
	int waits;     /* TRYAGAIN / CLUSTERDOWN waits */
	bool ask;      /* send ASKING first */
	bool remapped; /* the one re-route after a node could not connect */
};

/*
 * A MOVED or ASK reply @rep from trip->node: where to go. Return: 1 (go
 * on), -ELOOP (too many), -EPROTO (malformed), -ENOSPC (no room for the
 * node).
 */
static int redirect(struct shmkv_redis *r, struct trip *t, int kind,
		    const struct shmkv_redis_addr *to, unsigned slot)
{
	struct shmkv_redis_cluster *cl = r->cluster;
	struct shmkv_redis_addr a = *to;
	int n;

	if (++t->redirects > REDIRECTS_MAX)
		return -ELOOP;
	/* An empty endpoint (or "?"): the node that answered. */
	if (!a.host[0] || !strcmp(a.host, "?"))
		snprintf(a.host, sizeof(a.host), "%s",
			 cl->node[t->node].addr.host);
	n = shmkv__redis_cluster_node(r, &a);
	if (n < 0)
		return n;
	t->ask = kind == 2;
	if (kind == 1) /* MOVED: the slot is the node's from now on */
		shmkv__redis_cluster_own(cl, slot, n);
	t->node = n;
	return 1;
}

/*
 * What to do with @rep, the reply trip->node gave. Return: 0 (it is the
 * caller's), 1 (send again: trip updated, @rep freed), or a negative
 * errno (@rep freed).
 */
static int judge(struct shmkv_redis *r, struct trip *t, redisReply *rep)
{
	struct shmkv_redis_addr to;
	unsigned slot;
	int kind, err;

	if (rep->type != REDIS_REPLY_ERROR)
		return 0;
	kind = shmkv__redis_redirect_parse(rep->str, rep->len, &slot, &to);
	if (kind != 0) {
		err = kind < 0 ? kind : redirect(r, t, kind, &to, slot);
		freeReplyObject(rep);
		return err;
	}
	if ((!err_is(rep, "TRYAGAIN") && !err_is(rep, "CLUSTERDOWN")) ||
	    t->waits == BUSY_RETRIES)
		return 0;
	/* Neither ran the command: safe to send again after a wait. */
	sleep_ms((long)BUSY_FIRST_MS << t->waits++);
	if (err_is(rep, "CLUSTERDOWN"))
		shmkv__redis_cluster_refresh(
			r, -1); /* failed: the old map, still stale */
	freeReplyObject(rep);
	err = route(r->cluster, t->slot);
	if (err < 0)
		return err;
	t->node = err;
	t->ask = false;
	return 1;
}

/* One try on trip->node. Return: 0 (a reply in *@rep), 1 (try again), or
 * a negative errno. */
static int attempt(struct shmkv_redis *r, struct trip *t, int argc,
		   const char **argv, const size_t *argvlen, redisReply **rep)
{
	struct shmkv_redis_cluster *cl = r->cluster;
	struct shmkv_redis_addr failed;
	int i, err = node_connect(cl, t->node);

	if (err == 0 && t->ask)
		err = asking(cl, t->node);
	if (err == 0) {
		err = shmkv__redis_link_call(&cl->node[t->node].link, argc,
					     argv, argvlen, rep);
		if (err == 0)
			return judge(r, t, *rep);
		if (!cannot_connect(err)) {
			/* In flight: it may have run. Never resent. */
			cl->stale = true;
			return err;
		}
	}
	/* Nothing was sent. A refused AUTH or no memory would be the same
	 * on any node; an ASK target is not in the map to re-route by;
	 * and one re-route per call. Else: the map another node gives,
	 * and one more try. */
	if (err == -EACCES || err == -ENOMEM)
		return err;
	cl->stale = true;
	if (t->remapped || t->ask)
		return err;
	t->remapped = true;
	failed = cl->node[t->node].addr;
	shmkv__redis_cluster_refresh(r, t->node);
	err = route(cl, t->slot);
	/* A key-less command may go to any master: another one. */
	for (i = 0; t->slot < 0 && i < cl->nmasters; i++)
		if (!shmkv__redis_addr_eq(&cl->node[cl->master[i]].addr,
					  &failed)) {
			err = cl->master[i];
			break;
		}
	if (err < 0)
		return err;
	t->node = err;
	return 1;
}

int shmkv__redis_cluster_call(struct shmkv_redis *r, const void *key,
			      size_t klen, int argc, const char **argv,
			      const size_t *argvlen, redisReply **rep)
{
	struct trip t = { .slot = -1 };
	int err;

	*rep = NULL;
	if (r->cluster->stale)
		shmkv__redis_cluster_refresh(
			r, -1); /* failed: the old map, still stale */
	if (key)
		t.slot = (int)shmkv__redis_key_slot(key, klen);
	err = route(r->cluster, t.slot);
	if (err < 0)
		return err;
	t.node = err;
	do {
		*rep = NULL;
		err = attempt(r, &t, argc, argv, argvlen, rep);
	} while (err == 1);
	if (err < 0)
		*rep = NULL;
	return err;
}

int shmkv__redis_cluster_masters(struct shmkv_redis *r)
{
	return r->cluster->nmasters;
}

int shmkv__redis_cluster_call_master(struct shmkv_redis *r, int i, int argc,
				     const char **argv, const size_t *argvlen,
				     redisReply **rep)
{
	struct shmkv_redis_cluster *cl = r->cluster;
	int err;

	*rep = NULL;
	if (i < 0 || i >= cl->nmasters)
		return -EINVAL;
	err = shmkv__redis_link_call(&cl->node[cl->master[i]].link, argc, argv,
				     argvlen, rep);
	if (err && err != -EACCES)
		cl->stale = true; /* a master gone: the map may have moved */
	return err;
}

struct shmkv_redis_link *shmkv__redis_cluster_master_link(struct shmkv_redis *r,
							  int i)
{
	struct shmkv_redis_cluster *cl = r->cluster;

	if (cl == NULL || i < 0 || i >= cl->nmasters)
		return NULL;
	return &cl->node[cl->master[i]].link;
}
