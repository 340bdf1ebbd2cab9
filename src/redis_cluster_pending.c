/*
 * redis_cluster_pending.c - PLACEHOLDER until branch s15-cluster lands:
 * the cluster layer's calls of redis.h, each refusing with -ENOTSUP, so
 * that s15-core links and redis+cluster:// fails its open cleanly.
 * The merge of s15-cluster deletes this file (redis_slot.c and
 * redis_cluster.c define these symbols).
 */
#include <errno.h>

#include "redis.h"

unsigned shmkv__redis_key_slot(const void *key, size_t len)
{
	(void)key;
	(void)len;
	return 0;
}

int shmkv__redis_redirect_parse(const char *err, size_t len, unsigned *slot,
				struct shmkv_redis_addr *to)
{
	(void)err;
	(void)len;
	(void)slot;
	(void)to;
	return 0;
}

int shmkv__redis_cluster_open(struct shmkv_redis *r)
{
	(void)r;
	return -ENOTSUP;
}

void shmkv__redis_cluster_close(struct shmkv_redis *r)
{
	(void)r;
}

int shmkv__redis_cluster_call(struct shmkv_redis *r, const void *key,
			      size_t klen, int argc, const char **argv,
			      const size_t *argvlen, redisReply **rep)
{
	(void)r;
	(void)key;
	(void)klen;
	(void)argc;
	(void)argv;
	(void)argvlen;
	*rep = NULL;
	return -ENOTSUP;
}

int shmkv__redis_cluster_masters(struct shmkv_redis *r)
{
	(void)r;
	return 0;
}

int shmkv__redis_cluster_call_master(struct shmkv_redis *r, int i, int argc,
				     const char **argv, const size_t *argvlen,
				     redisReply **rep)
{
	(void)r;
	(void)i;
	(void)argc;
	(void)argv;
	(void)argvlen;
	*rep = NULL;
	return -ENOTSUP;
}
