/*
 * redis.h - the Redis and Redis Cluster backends (backend.h): a store
 * name that is a URI,
 *
 *   redis://[user:password@]host:port[/db][?prefix=app:&...]
 *   redis+unix://[user:password@]/path/to/socket[?db=N&prefix=...]
 *   redis+cluster://[user:password@]host:port[,host:port...][?prefix=...]
 *
 * opens a handle (struct shmkv_redis, whose first member is the struct
 * shmkv every public call takes) on which the data commands, shmkv_exec
 * and the locks run as Redis commands and scripts, with the returns the
 * shared-memory store gives.
 *
 * The layers, each one file (each calls only those below it):
 *
 *   redis_lock.c     the safe lock and the pattern lock as scripts
 *   redis_typed.c    each typed call (shmkv_get ...) as a Redis command,
 *                    its reply mapped to the shm call's return
 *   redis_backend.c  the backend's row (open, unlink, close, exec) and
 *                    shmkv__redis_call: one command to the node that holds
 *                    its key
 *   redis_policy.c   the masters' maxmemory-policy, for the locks
 *   redis_cluster.c  the slot map, MOVED / ASK / TRYAGAIN (redis_slot.c:
 *                    CRC16 key slots with hash tags, redirection parsing)
 *   redis_link.c     one connection to one node (hiredis): timeouts, AUTH,
 *                    SELECT, reconnect, fork
 *   redis_uri.c      the URI, parsed and printed with its password masked
 *
 * How a remote handle meets the shared-memory code: its ->backend is set,
 * its ->base points at a zeroed header that no life word matches, so
 * every command's shmkv__table_now() is NULL and its slow path
 * (shmkv__life_error, tables.c) answers SHMKV__REMOTE. The public calls
 * test for that code on their error path only (the shared-memory store's
 * straight-line paths gain no instruction) and call the backend; a path
 * that does not dispatch returns SHMKV__REMOTE's -EREMOTE, never a wrong
 * answer or a read of memory the handle does not have.
 *
 * Threads: a handle may be shared by threads; its commands are serialised
 * on its connections by the handle's mutex (process-local: a killed
 * process takes it with it), held for one request and its reply, never
 * across a lock's wait. For parallel commands open one handle per thread.
 * Fork: a child's first command on an inherited handle drops the parent's
 * connections (without writing to them) and connects its own.
 */
#ifndef SHMKV_SRC_REDIS_H
#define SHMKV_SRC_REDIS_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "internal.h"

/* ---- redis_uri.c ---- */

enum shmkv_redis_kind {
	SHMKV_REDIS_TCP = 1, /* redis:// */
	SHMKV_REDIS_UNIX,    /* redis+unix:// */
	SHMKV_REDIS_CLUSTER, /* redis+cluster:// */
};

#define SHMKV_REDIS_HOST_MAX   255
#define SHMKV_REDIS_SEEDS_MAX  16
#define SHMKV_REDIS_CRED_MAX   255
#define SHMKV_REDIS_PREFIX_MAX 128
#define SHMKV_REDIS_PATH_MAX   107 /* sun_path, less its NUL */

struct shmkv_redis_addr {
	char host[SHMKV_REDIS_HOST_MAX + 1]; /* IPv6 without its brackets */
	int port;
};

struct shmkv_redis_uri {
	enum shmkv_redis_kind kind;
	char user[SHMKV_REDIS_CRED_MAX + 1];	 /* "": none (AUTH password) */
	char password[SHMKV_REDIS_CRED_MAX + 1]; /* "": no AUTH */
	struct shmkv_redis_addr seeds[SHMKV_REDIS_SEEDS_MAX]; /* TCP, CLUSTER */
	int nseeds;
	char path[SHMKV_REDIS_PATH_MAX + 1]; /* UNIX */
	int db; /* SELECT; 0 on a cluster (it has only 0) */
	/* Prepended to every key the handle sends (and stripped from every
	 * key it reads back: SCAN, the lock list). */
	char prefix[SHMKV_REDIS_PREFIX_MAX + 1];
	size_t prefix_len;
	int connect_timeout_ms; /* ?connect_timeout=, default 2000 */
	int command_timeout_ms; /* ?timeout=, default 5000; 0: none */
	/* ?locks_on_evicting_server=1: grant locks on a server whose
	 * maxmemory-policy may evict their keys (redis_policy.c). */
	bool locks_on_evicting;
};

/*
 * shmkv__redis_uri_parse - @uri into @u. Percent-decoding in user,
 * password and prefix; default port 6379.
 * Return: 0, or -EINVAL with a reason in @why (static text) when @why is
 * not NULL.
 */
int shmkv__redis_uri_parse(const char *uri, struct shmkv_redis_uri *u,
			   const char **why);

/* ---- redis_link.c ---- */

/* One connection to one node. Not thread-safe: its owner serialises. */
struct shmkv_redis_link {
	redisContext *c;		   /* NULL: not connected */
	pid_t pid;			   /* the process that connected */
	const struct shmkv_redis_uri *uri; /* auth, db, timeouts */
	bool unix_socket;		   /* then uri->path */
	struct shmkv_redis_addr addr;	   /* TCP: the node */
	uint32_t *connects; /* counted up at each connect made (or NULL) */
	/* redis_policy.c read this connection's maxmemory-policy (cleared
	 * at each connect). */
	bool policy_read;
};

/* Binds @l to a node (nothing connects until the first call); each
 * connect it makes counts *@connects up (the handle's, redis_policy.c;
 * NULL: none). */
void shmkv__redis_link_init(struct shmkv_redis_link *l,
			    const struct shmkv_redis_uri *u, bool unix_socket,
			    const struct shmkv_redis_addr *addr,
			    uint32_t *connects);

/*
 * shmkv__redis_link_call - sends one command on @l and reads its reply,
 * connecting first if it is not connected (AUTH and SELECT as the URI
 * says).
 * Return: 0 and *@rep (the caller's: freeReplyObject; an error reply is a
 * reply), or -ECONNREFUSED / -EHOSTUNREACH / -ETIMEDOUT (could not
 * connect; nothing was sent), -EACCES (AUTH refused), -ECONNRESET (the
 * connection dropped with the command in flight: it may or may not have
 * run; the link is closed and the next call reconnects), -ETIMEDOUT (no
 * reply within the command timeout; likewise may have run, link closed),
 * -EPROTO (a reply hiredis could not parse), -ENOMEM.
 */
int shmkv__redis_link_call(struct shmkv_redis_link *l, int argc,
			   const char **argv, const size_t *argvlen,
			   redisReply **rep);

/* Closes @l's connection, if any (a fork child's inherited one is
 * dropped without a write). @l stays bound and may be called again. */
void shmkv__redis_link_close(struct shmkv_redis_link *l);

/* Would @l's next call connect anew (none, a fork child's inherited one,
 * or one the server closed while idle)? A poll, no I/O. */
bool shmkv__redis_link_would_connect(const struct shmkv_redis_link *l);

/* ---- redis_cluster.c, redis_slot.c ---- */

#define SHMKV_REDIS_SLOTS     16384
#define SHMKV_REDIS_NODES_MAX 64

/* CRC16 (XMODEM) of @key's hash tag ("{...}", non-empty) or of the whole
 * key, mod 16384: Redis Cluster's key slot. */
unsigned shmkv__redis_key_slot(const void *key, size_t len);

/*
 * A "MOVED <slot> <host>:<port>" or "ASK <slot> <host>:<port>" error
 * reply's parts. Return: 1 (MOVED), 2 (ASK), 0 (not a redirection), or
 * -EPROTO (malformed).
 */
int shmkv__redis_redirect_parse(const char *err, size_t len, unsigned *slot,
				struct shmkv_redis_addr *to);

struct shmkv_redis_cluster; /* redis_cluster.c's: nodes, the slot map */
struct shmkv_redis;

/* The cluster half of redis_backend.c's calls (called with the handle's
 * mutex held): open reads the slot map from the URI's seeds (the first
 * that answers CLUSTER SLOTS) into r->cluster; close frees it. Open's
 * errors: -EINVAL (a '{' or '}' in the prefix: it would change every
 * key's hash tag), -EPROTO (no seed is a cluster node, or its map is
 * malformed), -ENOSPC (more than SHMKV_REDIS_NODES_MAX masters), -ENOMEM,
 * or the last seed's link error. call_master's @i out of range: -EINVAL. */
int shmkv__redis_cluster_open(struct shmkv_redis *r);
void shmkv__redis_cluster_close(struct shmkv_redis *r);
int shmkv__redis_cluster_call(struct shmkv_redis *r, const void *key,
			      size_t klen, int argc, const char **argv,
			      const size_t *argvlen, redisReply **rep);
int shmkv__redis_cluster_masters(struct shmkv_redis *r);
int shmkv__redis_cluster_call_master(struct shmkv_redis *r, int i, int argc,
				     const char **argv, const size_t *argvlen,
				     redisReply **rep);
/* Master @i's link (0 <= i < shmkv__redis_cluster_masters), or NULL. */
struct shmkv_redis_link *shmkv__redis_cluster_master_link(struct shmkv_redis *r,
							  int i);

/* ---- redis_policy.c ---- */

/* What the masters' maxmemory-policy lets the server evict, the worst
 * master's (ordered: each evicts more, or says less, than the last). */
enum shmkv_redis_evicts {
	SHMKV_REDIS_EVICTS_NONE = 0, /* noeviction */
	SHMKV_REDIS_EVICTS_TTL,	     /* volatile-*: keys with a TTL */
	SHMKV_REDIS_EVICTS_ALL,	     /* allkeys-*, or a policy not known here */
	SHMKV_REDIS_EVICTS_UNKNOWN,  /* neither CONFIG GET nor INFO answered */
};

/*
 * shmkv__redis_policy - what @r's masters may evict: each master's
 * CONFIG GET maxmemory-policy, or INFO memory's maxmemory_policy where
 * CONFIG is renamed, disabled or not granted. Read again when a master
 * that answered the last reading would connect anew, when one of the
 * handle's links connected since (a reconnect, a new master), or after a
 * minute; else the last reading. A master that cannot be reached is left
 * out (its next connect makes the next call read again). Called with
 * @r's mutex held.
 * Return: an enum shmkv_redis_evicts, or the link error of the last
 * master tried when none answered.
 */
int shmkv__redis_policy(struct shmkv_redis *r);

/* ---- redis_backend.c ---- */

struct shmkv_redis {
	struct shmkv kv; /* first: the handle the public calls take */
	struct shmkv_redis_uri uri;
	pthread_mutex_t mu;	      /* serialises the connections' use */
	pid_t pid;		      /* the process mu was initialised in */
	struct shmkv_redis_link link; /* TCP, UNIX */
	struct shmkv_redis_cluster *cluster; /* CLUSTER: else NULL */
	bool readonly; /* SHMKV_OPEN_READONLY: writes are -EROFS */
	/* redis_typed.c's: does the server have Valkey's native DELIFEQ?
	 * 0 not asked yet, 1 yes, 2 no (relaxed atomics: idempotent). */
	uint32_t typed_delifeq;
	/* Connects made by the handle's links, and redis_policy.c's reading
	 * of the masters' maxmemory-policy: all under mu. */
	uint32_t connects;
	struct {
		bool known;
		uint32_t connects; /* ->connects when it was read */
		int64_t read_ms;   /* shmkv__mono_ms() when it was read */
		int evicts;	   /* enum shmkv_redis_evicts */
	} policy;
};

static inline struct shmkv_redis *shmkv__redis_of(shmkv_t *kv)
{
	return (struct shmkv_redis *)(void *)kv;
}

/* The zeroed header remote handles' ->base points at. */
extern const unsigned char shmkv__redis_no_segment[];

/*
 * shmkv__redis_call - runs one command on the node that holds @key (the
 * key as sent, prefix included; NULL: any node), under @r's mutex. On a
 * cluster it follows MOVED and ASK (at most 5 redirections, then -ELOOP),
 * retries TRYAGAIN and CLUSTERDOWN with a bounded backoff, and refreshes
 * its slot map on MOVED. Errors as shmkv__redis_link_call, plus -ELOOP.
 * A Redis error reply (other than a redirection) is a reply.
 */
int shmkv__redis_call(struct shmkv_redis *r, const void *key, size_t klen,
		      int argc, const char **argv, const size_t *argvlen,
		      redisReply **rep);

/* The masters a whole-keyspace command visits (SCAN, DBSIZE, the lock
 * list): 1 for one server; a cluster's masters in its current map. */
int shmkv__redis_masters(struct shmkv_redis *r);

/* As shmkv__redis_call, on master @i (0 <= i < shmkv__redis_masters):
 * no redirection is followed (a MOVED reply is returned as a reply). */
int shmkv__redis_call_master(struct shmkv_redis *r, int i, int argc,
			     const char **argv, const size_t *argvlen,
			     redisReply **rep);

/* shmkv__redis_policy under @r's mutex. */
int shmkv__redis_evicts(struct shmkv_redis *r);

/* @key with the handle's prefix in front, into @buf (@cap bytes).
 * Return: its length, or -ENAMETOOLONG if it does not fit. */
ssize_t shmkv__redis_key(const struct shmkv_redis *r, const void *key,
			 size_t klen, char *buf, size_t cap);

/* A server error reply ("-ERR ...", "-WRONGTYPE ...") as a negative
 * errno, for the typed calls: WRONGTYPE -EPROTOTYPE, "not an integer"
 * -EINVAL, "overflow" -EOVERFLOW, NOSCRIPT -ENOENT, READONLY -EROFS,
 * NOAUTH/NOPERM -EACCES, OOM -ENOMEM, LOADING/BUSY -EBUSY, else -EIO. */
int shmkv__redis_err(const redisReply *rep);

#endif /* SHMKV_SRC_REDIS_H */
