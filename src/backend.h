/*
 * backend.h - where a handle dispatches by backend.
 *
 * A store name is a POSIX shm name ("/orders", or "orders" for short:
 * this library's own shared-memory store) or a URI, "scheme://...",
 * naming a store that lives elsewhere: redis://, redis+unix:// and
 * redis+cluster:// (redis.h). shmkv_open, shmkv_create, shmkv_open_or_create and
 * shmkv_unlink route a URI to the backend registered for its scheme
 * (backend.c's table); the handle it returns carries ->backend, and
 * shmkv_close and shmkv_exec dispatch on it. A handle of the
 * shared-memory store has backend NULL: its paths pay at most one
 * predictable branch, and the typed commands none today (a backend that
 * lands adds its dispatch to their entry, strings.c's WITH_REF and its
 * peers, in the same way).
 *
 * A backend's handle is a struct shmkv with ->backend set; the backend
 * may embed it at the start of a larger struct of its own.
 */
#ifndef SHMKV_SRC_BACKEND_H
#define SHMKV_SRC_BACKEND_H

#include <stddef.h>

#include "shmkv.h"
#include "shmkv_exec.h"

/* What shmkv_open_or_create and its peers ask of a backend's open. */
enum shmkv_backend_open_how {
	SHMKV_BACKEND_OPEN,
	SHMKV_BACKEND_CREATE,
	SHMKV_BACKEND_OPEN_OR_CREATE,
};

struct shmkv_backend {
	const char *scheme; /* lower case, without "://" */
	/* As shmkv_open (@cfg NULL) or shmkv_create, per @how. */
	int (*open)(const char *uri, enum shmkv_backend_open_how how,
		    unsigned flags, const struct shmkv_config *cfg,
		    shmkv_t **out);
	int (*unlink)(const char *uri);
	void (*close)(shmkv_t *kv);
	int (*exec)(shmkv_t *kv, int argc, const char *const *argv,
		    const size_t *argvlen, struct shmkv_reply *reply);
};

/* The rows (redis_backend.c). */
extern const struct shmkv_backend shmkv__backend_redis;
extern const struct shmkv_backend shmkv__backend_redis_unix;
extern const struct shmkv_backend shmkv__backend_redis_cluster;

/*
 * shmkv__backend_route - which store @name names.
 * Return: 0 with *@be NULL for anything that is not a URI (the caller
 * validates it as a shm name), 0 with *@be the backend of the URI's
 * scheme, or -EAFNOSUPPORT: a URI whose scheme this build has no backend
 * for.
 */
int shmkv__backend_route(const char *name, const struct shmkv_backend **be);

#endif /* SHMKV_SRC_BACKEND_H */
