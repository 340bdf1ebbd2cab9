/*
 * redis_cluster_map.c - a Redis Cluster handle's slot map and nodes
 * (redis_cluster_map.h): CLUSTER SLOTS read and checked, installed with
 * the links of the nodes it keeps, a slot given to another node on a
 * MOVED, and the node table kept within SHMKV_REDIS_NODES_MAX.
 *
 * CLUSTER SLOTS (deprecated in 7.0 but served by every version) rather
 * than CLUSTER SHARDS (7.0+ only): one parser for every server. Its reply
 * is checked whole before it replaces anything: a malformed map is
 * -EPROTO and the handle keeps the map it had.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_cluster_map.h"

#define addr_eq shmkv__redis_addr_eq

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
		if (cl->owner[i] != SHMKV_REDIS_NO_OWNER)
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
		if (cl->owner[i] != SHMKV_REDIS_NO_OWNER)
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
		if (cl->owner[i] != SHMKV_REDIS_NO_OWNER)
			cl->owner[i] = to[cl->owner[i]];
	masters_update(cl);
}

/* (redis_cluster_map.h) Room is made by dropping the nodes that own no
 * slot. */
int shmkv__redis_cluster_node(struct shmkv_redis *r,
			      const struct shmkv_redis_addr *a)
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
	shmkv__redis_link_init(&cl->node[i].link, &r->uri, false, a,
			       &r->connects);
	return i;
}

void shmkv__redis_cluster_own(struct shmkv_redis_cluster *cl, unsigned slot,
			      int n)
{
	cl->owner[slot] = (unsigned char)n;
	masters_update(cl);
	cl->stale = true;
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
static int map_addr(struct shmkv_redis_map *m, const redisReply *host,
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
static int map_range(struct shmkv_redis_map *m, const redisReply *rg,
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
static int map_parse(struct shmkv_redis_map *m, const redisReply *rep,
		     const struct shmkv_redis_addr *from)
{
	size_t i;
	int err = 0;

	memset(m->owner, SHMKV_REDIS_NO_OWNER, sizeof(m->owner));
	m->naddr = 0;
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements == 0)
		return -EPROTO; /* no slot served: not a usable cluster */
	for (i = 0; i < rep->elements && err == 0; i++)
		err = map_range(m, rep->element[i], from);
	return err;
}

/* Makes @m the handle's map: the nodes it names keep their links (moved
 * over), the others are closed. */
static void map_install(struct shmkv_redis *r, const struct shmkv_redis_map *m)
{
	struct shmkv_redis_cluster *cl = r->cluster;
	struct shmkv_redis_node *old = cl->old;
	bool kept[SHMKV_REDIS_NODES_MAX] = { false };
	int i, j, nold = cl->nnodes;

	memcpy(old, cl->node, sizeof(old[0]) * (size_t)nold);
	for (i = 0; i < m->naddr; i++) {
		cl->node[i].addr = m->addr[i];
		shmkv__redis_link_init(&cl->node[i].link, &r->uri, false,
				       &m->addr[i], &r->connects);
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
		    const struct shmkv_redis_addr *from,
		    struct shmkv_redis_map *m)
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

/* (redis_cluster_map.h) */
int shmkv__redis_cluster_refresh(struct shmkv_redis *r, int avoid)
{
	struct shmkv_redis_cluster *cl = r->cluster;
	struct shmkv_redis_map *m = &cl->next;
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
		shmkv__redis_link_init(&seed, &r->uri, false, &r->uri.seeds[i],
				       &r->connects);
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
