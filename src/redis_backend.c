/*
 * redis_backend.c - the backend rows "redis", "redis+unix" and
 * "redis+cluster" (backend.h): a handle on a Redis database, and
 * shmkv__redis_call, the one way a command reaches it (redis.h).
 *
 * Open, create, open-or-create: a Redis database always exists, so all
 * three connect to it (and PING, so that a server that is not there, a
 * refused password or a database the server does not have fail the open
 * with their errno, not the first command). A config is checked as
 * shmkv_create checks one (unknown options: -EINVAL) and then ignored:
 * a store's geometry, memory and eviction policy are the server's
 * (maxmemory, maxmemory-policy), and code written for shared memory that
 * creates its store with a sizing config must run unchanged.
 * Unlink: -ENOTSUP. Removing a store there would be FLUSHDB (or a scan and
 * delete of the prefix), a data loss no name-based call should risk.
 *
 * The mutex serialises the handle's connections: one request and its
 * reply at a time (redis.h). Fork: a child inherits the mutex in whatever
 * state the parent's threads left it, possibly held by a thread the child
 * does not have. The child's first call sees r->pid is not its pid and
 * initialises a fresh mutex (under a process-wide lock, so two threads of
 * the child cannot both do it); the links then drop the parent's sockets
 * unwritten (redis_link.c). The parent's r->pid never changes, so its
 * calls read it without that lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic.h"
#include "backend.h"
#include "layout.h"
#include "redis.h"
#include "redis_exec.h"
#include "segment.h"

/* What a key or a value may be on Redis: proto-max-bulk-len's default,
 * 512 MiB (a server configured higher still accepts these). */
#define REDIS_BULK_MAX (512u << 20)

/* Zeroed: life word 0, which no remote handle's life_cached (below)
 * equals. The header's alignment, so its atomics may be read. */
_Alignas(64) const unsigned char shmkv__redis_no_segment[SHMKV_HEADER_SIZE];

/* A remote handle's life_cached: never the zeroed header's life word (0),
 * so shmkv__table_now is always NULL and every command takes its slow
 * path, where shmkv__tables answers SHMKV__REMOTE (and, being odd, never
 * a value shmkv__tables itself would cache). */
#define REMOTE_LIFE_CACHED SHMKV_LIFE_REMOVED

/* Guards the fork child's re-initialisation of a handle's mutex. */
static pthread_mutex_t fork_fix = PTHREAD_MUTEX_INITIALIZER;

static void child_reinit(void)
{
	/* The child's own copy of fork_fix may be held by a parent thread
	 * that does not exist here: re-made at each fork. */
	pthread_mutex_init(&fork_fix, NULL);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_register(void)
{
	pthread_atfork(NULL, NULL, child_reinit);
}

_Static_assert(sizeof(pid_t) == sizeof(uint32_t),
	       "r->pid is read and written by atomic.h's 32-bit wrappers");

/* Takes @r's mutex, first making it this process's if @r was inherited
 * across fork. */
static void redis_lock(struct shmkv_redis *r)
{
	pid_t me = (pid_t)shmkv__self_pid();

	/* Acquire, paired with the release below: r->pid changes only in a
	 * fork child, under fork_fix; a thread that reads the new pid sees
	 * the new mutex, one that reads the old takes fork_fix and reads it
	 * again. In the parent it never changes. */
	if ((pid_t)shmkv__load32_acquire((const uint32_t *)&r->pid) != me) {
		pthread_mutex_lock(&fork_fix);
		if (r->pid != me) {
			pthread_mutex_init(&r->mu, NULL);
			/* Release: pairs with the acquire above, so a thread
			 * that sees the new pid sees the new mutex. */
			shmkv__store32_release((uint32_t *)&r->pid,
					       (uint32_t)me);
		}
		pthread_mutex_unlock(&fork_fix);
	}
	pthread_mutex_lock(&r->mu);
}

int shmkv__redis_call(struct shmkv_redis *r, const void *key, size_t klen,
		      int argc, const char **argv, const size_t *argvlen,
		      redisReply **rep)
{
	int err;

	*rep = NULL;
	redis_lock(r);
	if (r->cluster != NULL)
		err = shmkv__redis_cluster_call(r, key, klen, argc, argv,
						argvlen, rep);
	else
		err = shmkv__redis_link_call(&r->link, argc, argv, argvlen,
					     rep);
	pthread_mutex_unlock(&r->mu);
	return err;
}

int shmkv__redis_masters(struct shmkv_redis *r)
{
	int n;

	if (r->cluster == NULL)
		return 1;
	redis_lock(r);
	n = shmkv__redis_cluster_masters(r);
	pthread_mutex_unlock(&r->mu);
	return n;
}

int shmkv__redis_call_master(struct shmkv_redis *r, int i, int argc,
			     const char **argv, const size_t *argvlen,
			     redisReply **rep)
{
	int err;

	*rep = NULL;
	if (r->cluster == NULL && i != 0)
		return -EINVAL;
	redis_lock(r);
	if (r->cluster != NULL)
		err = shmkv__redis_cluster_call_master(r, i, argc, argv,
						       argvlen, rep);
	else
		err = shmkv__redis_link_call(&r->link, argc, argv, argvlen,
					     rep);
	pthread_mutex_unlock(&r->mu);
	return err;
}

int shmkv__redis_evicts(struct shmkv_redis *r)
{
	int rc;

	redis_lock(r);
	rc = shmkv__redis_policy(r);
	pthread_mutex_unlock(&r->mu);
	return rc;
}

ssize_t shmkv__redis_key(const struct shmkv_redis *r, const void *key,
			 size_t klen, char *buf, size_t cap)
{
	size_t n = r->uri.prefix_len;

	if (klen > cap || n > cap - klen)
		return -ENAMETOOLONG;
	memcpy(buf, r->uri.prefix, n);
	if (klen > 0)
		memcpy(buf + n, key, klen);
	return (ssize_t)(n + klen);
}

static bool starts(const redisReply *rep, const char *word)
{
	size_t n = strlen(word);

	return rep->len >= n && memcmp(rep->str, word, n) == 0 &&
	       (rep->len == n || rep->str[n] == ' ');
}

int shmkv__redis_err(const redisReply *rep)
{
	static const struct {
		const char *word;
		int err;
	} codes[] = {
		{ "WRONGTYPE", -EPROTOTYPE }, { "NOSCRIPT", -ENOENT },
		{ "READONLY", -EROFS },	      { "NOAUTH", -EACCES },
		{ "NOPERM", -EACCES },	      { "WRONGPASS", -EACCES },
		{ "OOM", -ENOMEM },	      { "LOADING", -EBUSY },
		{ "BUSY", -EBUSY },
	};

	if (rep == NULL || rep->type != REDIS_REPLY_ERROR || rep->str == NULL)
		return -EIO;
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (starts(rep, codes[i].word))
			return codes[i].err;
	/* "ERR value is not an integer or out of range", "ERR increment or
	 * decrement would overflow" (t_string.c's texts). */
	if (strstr(rep->str, "not an integer") != NULL)
		return -EINVAL;
	if (strstr(rep->str, "overflow") != NULL)
		return -EOVERFLOW;
	return -EIO;
}

/* The handle's fields that the shared-memory code reads (redis.h). */
static void handle_fields(struct shmkv_redis *r, const struct shmkv_backend *be,
			  const char *uri, bool readonly)
{
	struct shmkv *kv = &r->kv;

	kv->backend = be;
	/* The handle's base is writable for a segment; nothing writes
	 * through it for a remote handle (and a stray write would fault:
	 * the zeroed header is read-only data). */
	kv->base = (unsigned char *)shmkv__redis_no_segment;
	kv->life_cached = REMOTE_LIFE_CACHED;
	kv->serial = shmkv__serial_next();
	kv->readonly = readonly;
	r->readonly = readonly;
	kv->fd = -1; /* no file: fstat fails, as it should */
	/* shmkv__key_args's test is on the key as the caller gives it: what
	 * the prefix leaves of a bulk string. */
	kv->geo.key_max = REDIS_BULK_MAX - (uint32_t)r->uri.prefix_len;
	kv->geo.value_max = REDIS_BULK_MAX;
	/* The name: the URI as every message shows it, its password
	 * masked, cut if need be (the password stays in r->uri only). */
	shmkv_name_redact(uri, kv->name, sizeof(kv->name));
}

/* Connects (a cluster: reads its slot map) and PINGs. */
static int first_contact(struct shmkv_redis *r)
{
	const char *ping[1] = { "PING" };
	size_t len[1] = { 4 };
	redisReply *rep;
	int err;

	if (r->uri.kind == SHMKV_REDIS_CLUSTER) {
		redis_lock(r);
		err = shmkv__redis_cluster_open(r);
		pthread_mutex_unlock(&r->mu);
		if (err)
			return err;
	}
	err = shmkv__redis_call(r, NULL, 0, 1, ping, len, &rep);
	if (err)
		return err;
	if (rep->type == REDIS_REPLY_ERROR)
		err = shmkv__redis_err(rep);
	freeReplyObject(rep);
	return err;
}

static void redis_free(struct shmkv_redis *r)
{
	if (r->cluster != NULL)
		shmkv__redis_cluster_close(r);
	shmkv__redis_link_close(&r->link);
	pthread_mutex_destroy(&r->mu);
	/* The password leaves no copy in freed memory. */
	explicit_bzero(r, sizeof(*r));
	free(r);
}

static int redis_open(const char *uri, enum shmkv_backend_open_how how,
		      unsigned flags, const struct shmkv_config *cfg,
		      shmkv_t **out);

static void redis_close(shmkv_t *kv)
{
	struct shmkv_redis *r = shmkv__redis_of(kv);

	if (kv->ext != NULL)
		kv->ext->close(kv, kv->ext);
	/* A fork child's handle: its mutex may be held by a thread it does
	 * not have. Take it as any call does, then free. */
	redis_lock(r);
	pthread_mutex_unlock(&r->mu);
	redis_free(r);
}

static int redis_unlink(const char *uri)
{
	(void)uri;
	return -ENOTSUP;
}

const struct shmkv_backend shmkv__backend_redis = {
	"redis", redis_open, redis_unlink, redis_close, shmkv__redis_exec,
};
const struct shmkv_backend shmkv__backend_redis_unix = {
	"redis+unix", redis_open, redis_unlink, redis_close, shmkv__redis_exec,
};
const struct shmkv_backend shmkv__backend_redis_cluster = {
	"redis+cluster", redis_open,	    redis_unlink,
	redis_close,	 shmkv__redis_exec,
};

static const struct shmkv_backend *row_of(enum shmkv_redis_kind kind)
{
	switch (kind) {
	case SHMKV_REDIS_UNIX:
		return &shmkv__backend_redis_unix;
	case SHMKV_REDIS_CLUSTER:
		return &shmkv__backend_redis_cluster;
	default:
		return &shmkv__backend_redis;
	}
}

static int redis_open(const char *uri, enum shmkv_backend_open_how how,
		      unsigned flags, const struct shmkv_config *cfg,
		      shmkv_t **out)
{
	struct shmkv_redis *r;
	int err;

	(void)how; /* the database always exists: see the top */
	if (flags & ~(unsigned)(SHMKV_OPEN_READONLY | SHMKV_OPEN_POPULATE))
		return -EINVAL;
	if (cfg != NULL && !shmkv__config_known(cfg))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	err = shmkv__redis_uri_parse(uri, &r->uri, NULL);
	if (err) {
		free(r);
		return err;
	}
	pthread_once(&atfork_once, atfork_register);
	pthread_mutex_init(&r->mu, NULL);
	r->pid = (pid_t)shmkv__self_pid();
	shmkv__redis_link_init(&r->link, &r->uri,
			       r->uri.kind == SHMKV_REDIS_UNIX,
			       &r->uri.seeds[0], &r->connects);
	handle_fields(r, row_of(r->uri.kind), uri, flags & SHMKV_OPEN_READONLY);
	err = first_contact(r);
	if (err) {
		redis_free(r);
		return err;
	}
	*out = &r->kv;
	return 0;
}
