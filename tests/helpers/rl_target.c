/*
 * rl_target.c - a private Redis target for the lock tests (rl_target.h).
 */
#include "helpers/rl_target.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "redis.h"

static int probe(const struct redis_server *s, void *arg)
{
	struct timeval tv = { 1, 0 };
	redisContext *ctx = redisConnectWithTimeout("127.0.0.1", s->port, tv);
	redisReply *r = NULL;
	int ok = 0;

	(void)arg;
	if (ctx && !ctx->err)
		r = redisCommand(ctx, "INFO server");
	if (r && r->type == REDIS_REPLY_STRING) {
		char want[32];

		/* Ours, not another that holds the port. */
		snprintf(want, sizeof(want), "process_id:%d\r", (int)s->pid);
		ok = strstr(r->str, want) != NULL;
	}
	if (r)
		freeReplyObject(r);
	if (ctx)
		redisFree(ctx);
	return ok;
}

int rl_target_start(struct rl_target *t, bool cluster, const char *tag)
{
	const char *bin = redis_server_find();

	t->cluster = cluster;
	if (bin == NULL)
		return -1;
	if (cluster) {
		if (redis_cluster_start(&t->c, tag) != 0)
			return -1;
		snprintf(t->uri, sizeof(t->uri), "redis+cluster://127.0.0.1:%d",
			 t->c.node[0].port);
		return 0;
	}
	if (redis_server_start(&t->s, bin, tag, probe, NULL) != 0)
		return -1;
	snprintf(t->uri, sizeof(t->uri), "redis://127.0.0.1:%d", t->s.port);
	return 0;
}

void rl_target_stop(struct rl_target *t)
{
	if (t->cluster)
		redis_cluster_cleanup(&t->c);
	else
		redis_server_cleanup(&t->s);
}

int rl_target_open(const struct rl_target *t, const char *query, shmkv_t **out)
{
	char uri[512];

	snprintf(uri, sizeof(uri), "%s%s", t->uri, query);
	return shmkv_open(uri, 0, out);
}

redisReply *rl_cmd(shmkv_t *kv, const char *cmd, ...)
{
	const char *av[16] = { cmd };
	size_t al[16] = { strlen(cmd) };
	redisReply *rep = NULL;
	va_list ap;
	int n = 1;

	va_start(ap, cmd);
	for (const char *a; n < 16 && (a = va_arg(ap, const char *));) {
		av[n] = a;
		al[n++] = strlen(a);
	}
	va_end(ap);
	if (shmkv__redis_call(shmkv__redis_of(kv), n > 1 ? av[1] : NULL,
			      n > 1 ? al[1] : 0, n, av, al, &rep) != 0)
		return NULL;
	return rep;
}

int rl_cmd_all(shmkv_t *kv, const char *cmd, const char *arg)
{
	struct shmkv_redis *r = shmkv__redis_of(kv);
	int m = shmkv__redis_masters(r);

	for (int i = 0; i < m; i++) {
		const char *av[2] = { cmd, arg };
		size_t al[2] = { strlen(cmd), arg ? strlen(arg) : 0 };
		redisReply *rep;

		if (shmkv__redis_call_master(r, i, arg ? 2 : 1, av, al, &rep))
			return -1;
		freeReplyObject(rep);
	}
	return m > 0 ? 0 : -1;
}
