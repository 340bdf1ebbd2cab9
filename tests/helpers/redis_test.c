/*
 * redis_test.c - the Redis backend tests' server and connections (see
 * redis_test.h).
 */
#include "helpers/redis_test.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *rt_bin;

redisContext *rt_admin(const struct redis_server *s, const char *password)
{
	struct timeval tv = { 5, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
	redisReply *r;

	if (c == NULL || c->err || redisSetTimeout(c, tv) != REDIS_OK)
		goto fail;
	if (password != NULL) {
		r = redisCommand(c, "AUTH %s", password);
		if (r == NULL || r->type != REDIS_REPLY_STATUS) {
			if (r != NULL)
				freeReplyObject(r);
			goto fail;
		}
		freeReplyObject(r);
	}
	return c;
fail:
	if (c != NULL)
		redisFree(c);
	return NULL;
}

/* Answers, and is the process we started (INFO's process_id). */
static int probe(const struct redis_server *s, void *arg)
{
	const struct rt_opts *o = arg;
	redisContext *c = rt_admin(s, o->password);
	redisReply *r;
	const char *p = NULL;
	long pid = -1;

	if (c == NULL)
		return 0;
	r = redisCommand(c, "INFO server");
	if (r != NULL && r->type == REDIS_REPLY_STRING)
		p = strstr(r->str, "process_id:");
	if (p != NULL)
		pid = strtol(p + strlen("process_id:"), NULL, 10);
	if (r != NULL)
		freeReplyObject(r);
	redisFree(c);
	return pid == (long)s->pid;
}

int rt_start(struct redis_server *s, const char *tag, const struct rt_opts *o)
{
	static const struct rt_opts none = { NULL, NULL };

	rt_bin = redis_server_find();
	if (rt_bin == NULL)
		return -2;
	o = o != NULL ? o : &none;
	return redis_server_start_with(s, rt_bin, tag, o->extra, probe,
				       (void *)o);
}

int rt_restart(struct redis_server *s, const struct rt_opts *o)
{
	static const struct rt_opts none = { NULL, NULL };

	o = o != NULL ? o : &none;
	return redis_server_restart(s, rt_bin, o->extra, probe, (void *)o);
}

int rt_cmd_type(redisContext *c, int type, const char *fmt, ...)
{
	va_list ap;
	redisReply *r;
	int ok;

	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	ok = r != NULL && r->type == type;
	if (r != NULL)
		freeReplyObject(r);
	return ok ? 0 : -1;
}

void rt_uri(char *buf, size_t n, const struct redis_server *s, const char *tail)
{
	snprintf(buf, n, "redis://127.0.0.1:%d%s", s->port,
		 tail != NULL ? tail : "");
}
