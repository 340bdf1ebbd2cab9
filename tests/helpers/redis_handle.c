/*
 * redis_handle.c - see redis_handle.h.
 */
#include "helpers/redis_handle.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* PING answered, by the process we started (a server that lost the race
 * for the port may be another's). */
static int probe(const struct redis_server *s, void *arg)
{
	struct timeval tv = { 1, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
	redisReply *r = NULL;
	const char *p;
	int ok = 0;

	(void)arg;
	if (c != NULL && c->err == 0)
		r = redisCommand(c, "INFO server");
	if (r != NULL && r->type == REDIS_REPLY_STRING &&
	    (p = strstr(r->str, "process_id:")) != NULL)
		ok = strtol(p + strlen("process_id:"), NULL, 10) ==
		     (long)s->pid;
	if (r != NULL)
		freeReplyObject(r);
	if (c != NULL)
		redisFree(c);
	return ok;
}

int rh_start(struct rh_server *h, const char *tag)
{
	const char *bin = redis_server_find();

	if (bin == NULL)
		return 1;
	if (redis_server_start(&h->s, bin, tag, probe, NULL) != 0)
		return -1;
	snprintf(h->uri, sizeof(h->uri), "redis://127.0.0.1:%d", h->s.port);
	return 0;
}

const char *rh_uri(const struct rh_server *h, const char *suffix, char *buf,
		   size_t n)
{
	snprintf(buf, n, "%s%s", h->uri, suffix);
	return buf;
}

void rh_stop(struct rh_server *h)
{
	redis_server_cleanup(&h->s);
}
