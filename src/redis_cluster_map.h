/*
 * redis_cluster_map.h - the slot map of a Redis Cluster handle and its
 * nodes, shared by redis_cluster_map.c (reading, installing and editing
 * the map) and redis_cluster.c (routing a call by it). Internal: only
 * those two files include it.
 */
#ifndef SHMKV_SRC_REDIS_CLUSTER_MAP_H
#define SHMKV_SRC_REDIS_CLUSTER_MAP_H

#include <stdbool.h>
#include <string.h>

#include "redis.h"

#define SHMKV_REDIS_NO_OWNER 0xff /* owner[]: a slot no node serves */

struct shmkv_redis_node {
	struct shmkv_redis_addr addr;
	struct shmkv_redis_link link;
};

/* A map read from a node, before it replaces the handle's. */
struct shmkv_redis_map {
	struct shmkv_redis_addr addr[SHMKV_REDIS_NODES_MAX];
	int naddr;
	unsigned char owner[SHMKV_REDIS_SLOTS];
};

struct shmkv_redis_cluster {
	struct shmkv_redis_node node[SHMKV_REDIS_NODES_MAX];
	int nnodes;
	/* Each slot's master: an index into node[] (NODES_MAX < SHMKV_REDIS_NO_OWNER). */
	unsigned char owner[SHMKV_REDIS_SLOTS];
	/* The nodes that own a slot, sorted by address. */
	unsigned char master[SHMKV_REDIS_NODES_MAX];
	int nmasters;
	bool stale; /* read the map again before the next command */
	/* Scratch for a map being read and installed: the handle's, as
	 * its mutex serialises us (not thread-local: every thread of
	 * every process linking us would carry ~70 KB of it). */
	struct shmkv_redis_map next;
	struct shmkv_redis_node old[SHMKV_REDIS_NODES_MAX];
};

_Static_assert(SHMKV_REDIS_NODES_MAX < SHMKV_REDIS_NO_OWNER,
	       "owner[] holds an index");

static inline bool shmkv__redis_addr_eq(const struct shmkv_redis_addr *a,
					const struct shmkv_redis_addr *b)
{
	return a->port == b->port && strcmp(a->host, b->host) == 0;
}

/* The index of the node at @a, added (unconnected) if new: its link is
 * made when first used. Return: the index, or -ENOSPC if
 * SHMKV_REDIS_NODES_MAX nodes all own slots. May renumber the nodes. */
int shmkv__redis_cluster_node(struct shmkv_redis *r,
			      const struct shmkv_redis_addr *a);

/* @slot is node @n's from now on (a MOVED), and the whole map is to be
 * read again before the next command. */
void shmkv__redis_cluster_own(struct shmkv_redis_cluster *cl, unsigned slot,
			      int n);

/*
 * shmkv__redis_cluster_refresh - reads the map again: CLUSTER SLOTS from
 * the current masters but @avoid (a node index that just failed, or -1),
 * connected ones first, then from the URI's seeds; the first answer
 * replaces the map (the nodes it names keep their links, the others are
 * closed; the nodes are renumbered). Return: 0, or the last node's error
 * (-EPROTO: an error reply or a malformed map; -ENOSPC: too many masters;
 * or a link error), the old map kept and marked stale.
 */
int shmkv__redis_cluster_refresh(struct shmkv_redis *r, int avoid);

#endif /* SHMKV_SRC_REDIS_CLUSTER_MAP_H */
