/*
 * rl_target.h - a private Redis target for the lock tests over Redis: one
 * redis-server (redis_server.h) or a 3-master cluster (redis_cluster.h),
 * started by the test, its URI, and raw commands on it (through the
 * handle's own routing, so a cluster's keys reach their node).
 */
#ifndef SHMKV_RL_TARGET_H
#define SHMKV_RL_TARGET_H

#include <stdbool.h>

#include <hiredis/hiredis.h>

#include "helpers/redis_cluster.h"
#include "helpers/redis_server.h"
#include "shmkv.h"

struct rl_target {
	bool cluster;
	struct redis_server s;
	struct redis_cluster c;
	char uri[256]; /* without a query */
};

/* Starts @t (zeroed by the caller). Return: 0, -1. */
int rl_target_start(struct rl_target *t, bool cluster, const char *tag);
void rl_target_stop(struct rl_target *t);

/* "redis[+cluster]://127.0.0.1:<port>" plus @query ("" or "?prefix=..."),
 * opened. Return: 0 or shmkv_open's error. */
int rl_target_open(const struct rl_target *t, const char *query, shmkv_t **out);

/*
 * One command on @kv's connection(s): NULL-terminated string arguments;
 * the second (when there is one) is the key that routes it on a cluster,
 * taken as sent (prefix included). Return: the reply (free it), or NULL
 * on a transport error.
 */
redisReply *rl_cmd(shmkv_t *kv, const char *cmd, ...);

/* rl_cmd on every master (FLUSHALL, SCRIPT FLUSH...): 0, or -1. */
int rl_cmd_all(shmkv_t *kv, const char *cmd, const char *arg);

#endif /* SHMKV_RL_TARGET_H */
