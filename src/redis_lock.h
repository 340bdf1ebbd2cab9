/*
 * redis_lock.h - the locks of shmkv_lock.h on a Redis handle (redis.h):
 * what lock.c, lock_pattern.c and lock_list.c call on their cold paths,
 * and what the redis_lock*.c files share.
 *
 * A lock handle bound to a Redis store keeps key_len 0, so every
 * shared-memory path of the lock files takes its "not initialised" branch
 * (-EINVAL) first; only there do they ask shmkv__lock_remote() and
 * dispatch here. The straight-line paths gain no instruction.
 *
 * Keys (the handle's URI prefix P in front of both):
 *   P lock.{<name>}        the owner record (safe lock) or the SETNX page's
 *                          expiry time (pattern lock); '{', '}' and '%' in
 *                          the name are written %7B, %7D, %25, so the hash
 *                          tag is the whole name and never ends early
 *   P lock.{<name>}:token  the safe lock's hash {t: last token granted,
 *                          r: last token released}: never expires
 * Both are in one cluster slot: the second is the first plus a suffix and
 * the first ends in the '}' that closes its tag.
 */
#ifndef SHMKV_SRC_REDIS_LOCK_H
#define SHMKV_SRC_REDIS_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"
#include "lock_handle.h"

struct shmkv_redis;

/* Is @kv a handle of another backend than the shared-memory store? */
static inline bool shmkv__lock_remote(const struct shmkv *kv)
{
	return kv != NULL && kv->backend != NULL;
}

/* Is lock handle @h bound to a Redis store (redis_lock.c's init)? */
static inline bool shmkv__lock_h_remote(const struct shmkv__lock *h)
{
	return h != NULL && h->remote != 0;
}

static inline bool shmkv__pattern_h_remote(const struct shmkv__pattern *h)
{
	return h != NULL && h->remote_name_len != 0;
}

/* The public calls of shmkv_lock.h, for a handle on a Redis store, with
 * the same contracts (differences: README "Locks over Redis"). */
int shmkv__redis_lock_init(shmkv_t *kv, struct shmkv_lock *lk,
			   const char *name);
int shmkv__redis_lock_timed_acquire(struct shmkv_lock *lk, int64_t lease_ms,
				    int64_t timeout_ms);
int shmkv__redis_lock_release(struct shmkv_lock *lk);
int shmkv__redis_lock_extend(struct shmkv_lock *lk, unsigned mode, int64_t ms);
int shmkv__redis_lock_held(struct shmkv_lock *lk);
int shmkv__redis_pattern_init(shmkv_t *kv, struct shmkv_pattern *pl,
			      const char *name);
int shmkv__redis_pattern_acquire(struct shmkv_pattern *pl, int64_t timeout_ms,
				 int64_t wait_ms, int64_t *expiry);
int shmkv__redis_pattern_release(struct shmkv_pattern *pl, int64_t expiry);
int shmkv__redis_lock_list(shmkv_t *kv, shmkv_lock_list_fn fn, void *arg);

/* ---- redis_lock_keys.c: names, keys, identity, records, scripts ---- */

/* Longest wire key: prefix (SHMKV_REDIS_PREFIX_MAX, asserted in
 * redis_lock_keys.c), "lock.{", an escaped name, "}:token". */
#define SHMKV__RL_KEY_CAP (128 + 6 + 3 * SHMKV_LOCK_NAME_MAX + 8)

/* A lock's two keys as sent (prefix included). */
struct shmkv__rl_keys {
	char rec[SHMKV__RL_KEY_CAP];
	size_t rec_len;
	char ctr[SHMKV__RL_KEY_CAP];
	size_t ctr_len;
};

/* Checks @name as shmkv__lock_key does (-EINVAL, -ENAMETOOLONG). */
int shmkv__rl_name_check(const char *name, size_t *len);

/*
 * The keys of lock @name (@len bytes) on @r. Return: 0, -ENAMETOOLONG
 * (the prefix leaves no room), -EINVAL (a cluster handle whose prefix
 * opens an empty hash tag "{}": the two keys could not share a slot).
 */
int shmkv__rl_keys(const struct shmkv_redis *r, const char *name, size_t len,
		   struct shmkv__rl_keys *k);

/* The name of record key @key (as SCAN gives it, prefix included), or of
 * counter key @key when @counter, unescaped into @buf (@cap bytes).
 * Return: its length, or -1 if @key is not such a key of @r. */
ssize_t shmkv__rl_name_of(const struct shmkv_redis *r, const char *key,
			  size_t klen, bool counter, char *buf, size_t cap);

/* A safe lock's owner record, parsed:
 * "<token>:<boot id>:<pid ns>:<pid>:<start>:<nonce>:<grant ms>:<host>". */
struct shmkv__rl_rec {
	uint64_t token;
	char boot[40];
	uint32_t ns;
	uint32_t pid;
	uint64_t start;
	uint64_t nonce;
	int64_t grant_ms; /* the server's TIME at the grant, Unix ms */
	char host[65];
};

/* Return: 0, or -EEXIST (not an owner record). */
int shmkv__rl_rec_parse(const char *s, size_t len, struct shmkv__rl_rec *rec);

/* This process (the cache is refreshed after a fork). */
struct shmkv__rl_self {
	char boot[40]; /* "-": unknown, never equal to anyone's */
	uint32_t ns;   /* the pid namespace's inode; 0: unknown */
	uint32_t pid;
	uint64_t start;
	char host[65];
};

void shmkv__rl_self(struct shmkv__rl_self *me);

/* A nonce no other grant attempt of this process has used. */
uint64_t shmkv__rl_nonce(void);

/* Is the holder @h on this host, in this pid namespace, and gone? Only
 * then may a waiter take over before the lease ends. */
bool shmkv__rl_holder_dead(const struct shmkv__rl_rec *h,
			   const struct shmkv__rl_self *me);

/* Test seam: a boot id to use instead of the host's (tests of "another
 * host"). Not exported from the shared library. */
extern char shmkv__redis_fake_boot_id[40];

/* The lock scripts (redis_lock_keys.c). */
enum shmkv__rl_script {
	SHMKV__RL_ACQUIRE,
	SHMKV__RL_RELEASE,
	SHMKV__RL_EXTEND,
	SHMKV__RL_SCRIPTS,
};

struct redisReply;

/*
 * shmkv__rl_eval - EVALSHA of script @s on keys @k (rec, ctr) with @argc
 * arguments; on NOSCRIPT (a restarted or flushed server, or a node that
 * never saw it) SCRIPT LOAD on the keys' node and once more.
 * Return: 0 and *@rep (the caller frees it; never an error reply), a
 * server error as shmkv__redis_err (WRONGTYPE: -EEXIST), or an error of
 * shmkv__redis_call.
 */
int shmkv__rl_eval(struct shmkv_redis *r, enum shmkv__rl_script s,
		   const struct shmkv__rl_keys *k, int argc, const char **argv,
		   const size_t *argvlen, struct redisReply **rep);

/* The scripts' bodies and their SHA1s (a test checks them against SCRIPT
 * LOAD). */
extern const char *const shmkv__rl_script_body[SHMKV__RL_SCRIPTS];
extern const char *const shmkv__rl_script_sha[SHMKV__RL_SCRIPTS];

/*
 * shmkv__rl_evict_check - may a lock be granted on @r? Not when a master's
 * maxmemory-policy may evict more than @tolerated (an enum
 * shmkv_redis_evicts: the safe lock's record has a PX and its counter
 * none, so it tolerates NONE; the pattern lock's one key never has a TTL,
 * so TTL), unless the URI says locks_on_evicting_server=1: an evicted
 * record hands the lock to a second holder, an evicted counter starts
 * the tokens again at 1.
 * Return: 0, -ENOTSUP (refused), or the link error of shmkv__redis_policy.
 */
int shmkv__rl_evict_check(struct shmkv_redis *r, int tolerated);

/* Waiters poll: the sleep before poll @round (0, 1, ...): 1 ms doubling
 * to SHMKV__RL_POLL_MAX_MS, drawn uniformly in [d/2, d] (jitter: waiters
 * that started together do not poll together), in ms. */
#define SHMKV__RL_POLL_MAX_MS 32
int64_t shmkv__rl_backoff(unsigned round);

#endif /* SHMKV_SRC_REDIS_LOCK_H */
