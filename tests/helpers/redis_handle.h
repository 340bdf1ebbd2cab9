/*
 * redis_handle.h - a private redis-server (redis_server.h) and its URI,
 * for tests of the library's Redis backend: started with its probe
 * (PING answered by the pid we started), stopped and reaped at the end.
 */
#ifndef SHMKV_TEST_REDIS_HANDLE_H
#define SHMKV_TEST_REDIS_HANDLE_H

#include <stddef.h>

#include "helpers/redis_server.h"

struct rh_server {
	struct redis_server s;
	char uri[128]; /* "redis://127.0.0.1:<port>" */
};

/* Starts a server into @h (zeroed by the caller). Return: 0; 1 when no
 * redis-server is installed (the caller skips, and says so); -1 if it
 * would not start. */
int rh_start(struct rh_server *h, const char *tag);

/* "<h->uri><suffix>" into @buf (@n bytes), e.g. suffix "?prefix=a:". */
const char *rh_uri(const struct rh_server *h, const char *suffix, char *buf,
		   size_t n);

/* Stops the server, reaps it and removes its log. */
void rh_stop(struct rh_server *h);

#endif
