/*
 * redis_cluster.c - Redis Cluster routing (redis.h): the slot map, a link
 * per master, and the redirections, as cluster clients do it (hiredis-
 * cluster's redis_cluster_command_execute, redis-py's
 * RedisCluster._execute_command), with one rule of our own: a command
 * that may have run is never sent again.
 *
 * - The map is CLUSTER SLOTS of the first node that answers: at open the
 *   URI's seeds in order; later the current masters, then the seeds.
 *   CLUSTER SLOTS (deprecated in 7.0 but served by every version) rather
 *   than CLUSTER SHARDS (7.0+ only): one parser for every server.
 * - A key's slot is CRC16 of its hash tag (redis_slot.c), its node the
 *   slot's master in the map. A key-less command goes to the first master
 *   (masters are kept sorted by address: a stable order).
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
 *   in it. A connection that drops or times out with the command in
 *   flight (-ECONNRESET, -ETIMEDOUT) may have run it: the error is
 *   returned and nothing is resent (a resent INCR would count twice); the
 *   map is read again before the next command.
 *
 * Failover is followed, not forced: when a replica takes over a dead
 * master's slots, the dead master's link fails to connect, the map read
 * from another node names the new master, and the command goes there. A
 * command in flight when its master died is an error, never resent.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "redis.h"

#define NO_OWNER      0xff /* owner[]: a slot no node serves */
#define REDIRECTS_MAX 5	   /* as hiredis-cluster's default retry count */
#define BUSY_RETRIES  5	   /* TRYAGAIN / CLUSTERDOWN waits */
#define BUSY_FIRST_MS 10   /* doubled at each wait: 10 .. 160 ms */

struct node {
	struct shmkv_redis_addr addr;
	struct shmkv_redis_link link;
};

/* A map read from a node, before it replaces the handle's. */
struct map {
	struct shmkv_redis_addr addr[SHMKV_REDIS_NODES_MAX];
	int naddr;
	unsigned char owner[SHMKV_REDIS_SLOTS];
};

struct shmkv_redis_cluster {
	struct node node[SHMKV_REDIS_NODES_MAX];
	int nnodes;
	/* Each slot's master: an index into node[] (NODES_MAX < NO_OWNER). */
	unsigned char owner[SHMKV_REDIS_SLOTS];
	/* The nodes that own a slot, sorted by address. */
	unsigned char master[SHMKV_REDIS_NODES_MAX];
	int nmasters;
	bool stale; /* read the map again before the next command */
	/* Scratch for a map being read and installed: the handle's, as
	 * its mutex serialises us (not thread-local: every thread of
	 * every process linking us would carry ~70 KB of it). */
	struct map next;
	struct node old[SHMKV_REDIS_NODES_MAX];
};

_Static_assert(SHMKV_REDIS_NODES_MAX < NO_OWNER, "owner[] holds an index");

static bool addr_eq(const struct shmkv_redis_addr *a,
		    const struct shmkv_redis_addr *b)
{
	return a->port == b->port && strcmp(a->host, b->host) == 0;
}

static int addr_cmp(const struct shmkv_redis_addr *a,
		    const struct shmkv_redis_addr *b)
{
	int c = strcmp(a->host, b->host);

	return c ? c : (a->port > b->port) - (a->port < b->port);
}

/* ---- the node table ---- */

static int node_find(const struct shmkv_redis_cluster *cl,
		     const struct shmkv_redis_addr *a)
{
	int i;

	for (i = 0; i < cl->nnodes; i++)
		if (addr_eq(&cl->node[i].addr, a))
			return i;
	return -1;
}

/* masters[]: the nodes that own a slot now, sorted by address. */
static void masters_update(struct shmkv_redis_cluster *cl)
{
	bool owns[SHMKV_REDIS_NODES_MAX] = { false };
	int i, j, n = 0;

	for (i = 0; i < SHMKV_REDIS_SLOTS; i++)
		if (cl->owner[i] != NO_OWNER)
			owns[cl->owner[i]] = true;
	for (i = 0; i < cl->nnodes; i++) {
		if (!owns[i])
			continue;
		/* Insertion sort: at most NODES_MAX entries, rarely run. */
		for (j = n; j > 0 && addr_cmp(&cl->node[cl->master[j - 1]].addr,
					      &cl->node[i].addr) > 0;
		     j--)
			cl->master[j] = cl->master[j - 1];
		cl->master[j] = (unsigned char)i;
		n++;
	}
	cl->nmasters = n;
}

/* Drops the nodes that own no slot (their links closed), to make room. */
static void nodes_compact(struct shmkv_redis_cluster *cl)
{
	unsigned char to[SHMKV_REDIS_NODES_MAX];
	bool owns[SHMKV_REDIS_NODES_MAX] = { false };
	int i, n = 0;

	for (i = 0; i < SHMKV_REDIS_SLOTS; i++)
		if (cl->owner[i] != NO_OWNER)
			owns[cl->owner[i]] = true;
	for (i = 0; i < cl->nnodes; i++) {
		if (!owns[i]) {
			shmkv__redis_link_close(&cl->node[i].link);
			continue;
		}
		to[i] = (unsigned char)n;
		cl->node[n++] = cl->node[i]; /* a link has no self-pointer */
	}
	cl->nnodes = n;
	for (i = 0; i < SHMKV_REDIS_SLOTS; i++)
		if (cl->owner[i] != NO_OWNER)
			cl->owner[i] = to[cl->owner[i]];
	masters_update(cl);
}

/* The index of the node at @a, added (unconnected) if new; -ENOSPC if
 * NODES_MAX nodes all own slots. */
static int node_get(struct shmkv_redis *r, const struct shmkv_redis_addr *a)
{
	struct shmkv_redis_cluster *cl = r->cluster;
	int i = node_find(cl, a);

	if (i >= 0)
		return i;
	if (cl->nnodes == SHMKV_REDIS_NODES_MAX)
		nodes_compact(cl);
	if (cl->nnodes == SHMKV_REDIS_NODES_MAX)
		return -ENOSPC;
	i = cl->nnodes++;
	cl->node[i].addr = *a;
	shmkv__redis_link_init(&cl->node[i].link, &r->uri, false, a);
	return i;
}

static bool is_master(const struct shmkv_redis_cluster *cl, int n)
{
	int i;

	for (i = 0; i < cl->nmasters; i++)
		if (cl->master[i] == n)
			return true;
	return false;
}

/* ---- the map ---- */

/* A CLUSTER SLOTS endpoint that is nil, "" or "?" (the node has none it
 * may announce) means the node that answered. */
static int map_addr(struct map *m, const redisReply *host,
		    const redisReply *port, const struct shmkv_redis_addr *from)
{
	struct shmkv_redis_addr a;
	int i;

	if (port->type != REDIS_REPLY_INTEGER || port->integer < 1 ||
	    port->integer > 65535)
		return -EPROTO;
	if (host->type == REDIS_REPLY_NIL ||
	    (host->type == REDIS_REPLY_STRING &&
	     (host->len == 0 || strcmp(host->str, "?") == 0)))
		snprintf(a.host, sizeof(a.host), "%s", from->host);
	else if (host->type == REDIS_REPLY_STRING &&
		 host->len <= SHMKV_REDIS_HOST_MAX)
		memcpy(a.host, host->str, host->len + 1);
	else
		return -EPROTO;
	a.port = (int)port->integer;
	for (i = 0; i < m->naddr; i++)
		if (addr_eq(&m->addr[i], &a))
			return i;
	if (m->naddr == SHMKV_REDIS_NODES_MAX)
		return -ENOSPC;
	m->addr[m->naddr] = a;
	return m->naddr++;
}

/* One range of CLUSTER SLOTS, [lo, hi, [host, port, id...], replicas...],
 * into @m. */
static int map_range(struct map *m, const redisReply *rg,
		     const struct shmkv_redis_addr *from)
{
	const redisReply *who;
	long long lo, hi;
	int n;

	if (rg->type != REDIS_REPLY_ARRAY || rg->elements < 3 ||
	    rg->element[0]->type != REDIS_REPLY_INTEGER ||
	    rg->element[1]->type != REDIS_REPLY_INTEGER)
		return -EPROTO;
	lo = rg->element[0]->integer;
	hi = rg->element[1]->integer;
	who = rg->element[2];
	if (lo < 0 || hi < lo || hi >= SHMKV_REDIS_SLOTS ||
	    who->type != REDIS_REPLY_ARRAY || who->elements < 2)
		return -EPROTO;
	n = map_addr(m, who->element[0], who->element[1], from);
	if (n < 0)
		return n;
	memset(m->owner + lo, n, (size_t)(hi - lo + 1));
	return 0;
}

/* CLUSTER SLOTS' reply (an array of ranges) into @m. */
static int map_parse(struct map *m, const redisReply *rep,
		     const struct shmkv_redis_addr *from)
{
	size_t i;
	int err = 0;

	memset(m->owner, NO_OWNER, sizeof(m->owner));
	m->naddr = 0;
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements == 0)
		return -EPROTO; /* no slot served: not a usable cluster */
	for (i = 0; i < rep->elements && err == 0; i++)
		err = map_range(m, rep->element[i], from);
	return err;
}

/* Makes @m the handle's map: the nodes it names keep their links (moved
 * over), the others are closed. */
static void map_install(struct shmkv_redis *r, const struct map *m)
{
	struct shmkv_redis_cluster *cl = r->cluster;
	struct node *old = cl->old;
	bool kept[SHMKV_REDIS_NODES_MAX] = { false };
	int i, j, nold = cl->nnodes;

	memcpy(old, cl->node, sizeof(old[0]) * (size_t)nold);
	for (i = 0; i < m->naddr; i++) {
		cl->node[i].addr = m->addr[i];
		shmkv__redis_link_init(&cl->node[i].link, &r->uri, false,
				       &m->addr[i]);
		for (j = 0; j < nold; j++)
			if (!kept[j] && addr_eq(&old[j].addr, &m->addr[i])) {
				cl->node[i].link = old[j].link;
				kept[j] = true;
				break;
			}
	}
	for (j = 0; j < nold; j++)
		if (!kept[j])
			shmkv__redis_link_close(&old[j].link);
	cl->nnodes = m->naddr;
	memcpy(cl->owner, m->owner, sizeof(cl->owner));
	masters_update(cl);
	cl->stale = false;
}

/* CLUSTER SLOTS on @l (at @from) into @m. Return: 0, a link error, or
 * -EPROTO (an error reply: not a cluster node, or a malformed map). */
static int map_read(struct shmkv_redis_link *l,
		    const struct shmkv_redis_addr *from, struct map *m)
{
	const char *argv[] = { "CLUSTER", "SLOTS" };
	const size_t len[] = { 7, 5 };
	redisReply *rep;
	int err = shmkv__redis_link_call(l, 2, argv, len, &rep);

	if (err)
		return err;
	err = map_parse(m, rep, from);
	freeReplyObject(rep);
	return err;
}

/* A seed's link that just read the map: kept as its node's if the seed is
 * a master without a connection (saves a connect and AUTH at open), else
 * closed. */
static void adopt(struct shmkv_redis_cluster *cl, struct shmkv_redis_link *l)
{
	int n = node_find(cl, &l->addr);

	if (n >= 0 && cl->node[n].link.c == NULL)
		cl->node[n].link = *l;
	else
		shmkv__redis_link_close(l);
}

/*
 * Reads the map again: from the current masters but @avoid (a node index
 * that just failed, or -1), those connected first, then from the URI's
 * seeds. Return: 0, or the last node's error (the old map stays, marked
 * stale).
 */
static int map_refresh(struct shmkv_redis *r, int avoid)
{
	struct shmkv_redis_cluster *cl = r->cluster;
	struct map *m = &cl->next;
	struct shmkv_redis_link seed;
	int i, n, pass, err = -EHOSTUNREACH;

	/* Connected masters first: one that is not may be the dead one,
	 * and a connect to a dead host costs the connect timeout. */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < cl->nmasters; i++) {
			n = cl->master[i];
			if (n == avoid || (cl->node[n].link.c == NULL) != pass)
				continue;
			err = map_read(&cl->node[n].link, &cl->node[n].addr, m);
			if (err == 0)
				goto found;
		}
	for (i = 0; i < r->uri.nseeds; i++) {
		n = node_find(cl, &r->uri.seeds[i]);
		if (n >= 0 && (n == avoid || is_master(cl, n)))
			continue; /* failed just now, or tried above */
		shmkv__redis_link_init(&seed, &r->uri, false, &r->uri.seeds[i]);
		err = map_read(&seed, &r->uri.seeds[i], m);
		if (err == 0) {
			map_install(r, m);
			adopt(cl, &seed);
			return 0;
		}
		shmkv__redis_link_close(&seed);
	}
	cl->stale = true;
	return err;
found:
	map_install(r, m);
	return 0;
}

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
	err = map_refresh(r, -1);
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
	if (slot >= 0 && cl->owner[slot] != NO_OWNER)
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

	if (l->c && l->pid == getpid())
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
	n = node_get(r, &a);
	if (n < 0)
		return n;
	t->ask = kind == 2;
	if (kind == 1) { /* MOVED: the slot is the node's from now on */
		cl->owner[slot] = (unsigned char)n;
		masters_update(cl);
		cl->stale = true;
	}
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
		map_refresh(r, -1); /* failed: the old map, still stale */
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
	int err = node_connect(cl, t->node);

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
	map_refresh(r, t->node);
	err = route(cl, t->slot);
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
		map_refresh(r, -1); /* failed: the old map, still stale */
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
