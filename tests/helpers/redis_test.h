/*
 * redis_test.h - what the Redis backend's tests share: a private
 * redis-server (redis_server.h) started and probed with hiredis, an
 * admin connection to it, and its URIs.
 */
#ifndef SHMKV_REDIS_TEST_H
#define SHMKV_REDIS_TEST_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "helpers/redis_server.h"

/* What the probe logs in with (NULL: no AUTH), and the server's extra
 * arguments (NULL-terminated, or NULL). */
struct rt_opts {
	const char *password;
	const char *const *extra;
};

/* Starts a server into @s (zeroed by the caller) with @o (NULL: none).
 * Return: 0; -1 if none could be started; -2 if there is no
 * redis-server (the caller skips). */
int rt_start(struct redis_server *s, const char *tag, const struct rt_opts *o);

/* Restarts @s on its port with @o. Return: 0 or -1. */
int rt_restart(struct redis_server *s, const struct rt_opts *o);

/* A connection to @s for the test's own commands (AUTH @password if not
 * NULL), 5 s timeouts. NULL if it fails. */
redisContext *rt_admin(const struct redis_server *s, const char *password);

/* One command on @c, its reply's type checked: 0 if it is @type. */
int rt_cmd_type(redisContext *c, int type, const char *fmt, ...);

/* "redis://127.0.0.1:<port><tail>" into @buf. */
void rt_uri(char *buf, size_t n, const struct redis_server *s,
	    const char *tail);

#endif /* SHMKV_REDIS_TEST_H */
