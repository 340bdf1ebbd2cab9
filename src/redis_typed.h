/*
 * redis_typed.h - the typed calls of shmkv.h on a Redis handle (redis.h),
 * for the public calls' slow paths to dispatch to: strings_plain.c's
 * error branch, strings.c's *_run functions, expire.c, engine.c's
 * shmkv_key_prepare, maint.c's whole-store passes. No hiredis type
 * appears here, so those files stay free of it.
 *
 * Each takes the caller's key (the handle's prefix is added here) and
 * gives the return the shared-memory store gives for the same call and
 * the same data, with the same argument checks in the same order; what
 * only a network can give comes on top: -ECONNREFUSED, -ECONNRESET (the
 * connection dropped with the command in flight: it may or may not have
 * run), -ETIMEDOUT, -EACCES, -ELOOP, -EPROTO (redis.h), and a server's
 * error reply as shmkv__redis_err maps it (WRONGTYPE: -EPROTOTYPE).
 * A read-only handle's writes are -EROFS, and nothing is sent.
 */
#ifndef SHMKV_SRC_REDIS_TYPED_H
#define SHMKV_SRC_REDIS_TYPED_H

#include <stddef.h>
#include <stdint.h>

#include "shmkv.h"

/* Is @kv a handle of another backend (the Redis one)? For the slow paths
 * only: the shared-memory store's fast paths never ask. */
static inline int shmkv__is_remote(const shmkv_t *kv);

int shmkv__redis_get(shmkv_t *kv, const void *key, size_t klen,
		     struct shmkv_value *out);
int shmkv__redis_exists(shmkv_t *kv, const void *key, size_t klen);
int shmkv__redis_get_int(shmkv_t *kv, const void *key, size_t klen,
			 int64_t *out);
int shmkv__redis_set(shmkv_t *kv, const void *key, size_t klen, const void *val,
		     size_t vlen, unsigned flags, int64_t expire,
		     struct shmkv_value *old);
int shmkv__redis_setnx(shmkv_t *kv, const void *key, size_t klen,
		       const void *val, size_t vlen);
int shmkv__redis_getdel(shmkv_t *kv, const void *key, size_t klen,
			struct shmkv_value *old);
int shmkv__redis_del(shmkv_t *kv, const void *key, size_t klen);
int shmkv__redis_delifeq(shmkv_t *kv, const void *key, size_t klen,
			 const void *val, size_t vlen);
int shmkv__redis_incrby(shmkv_t *kv, const void *key, size_t klen,
			int64_t delta, int64_t *result);

/* expire.c's: the checks of the shm call are made here too. */
int shmkv__redis_expire(shmkv_t *kv, const void *key, size_t klen,
			enum shmkv_expire_unit unit, unsigned flags, int64_t t);
int shmkv__redis_pttl(shmkv_t *kv, const void *key, size_t klen, int64_t *ms);
int shmkv__redis_persist(shmkv_t *kv, const void *key, size_t klen);
int shmkv__redis_getex(shmkv_t *kv, const void *key, size_t klen,
		       enum shmkv_getex_mode mode, int64_t t,
		       struct shmkv_value *out);

/* A prepared key on a remote handle keeps the key (pointer and length)
 * and its handle, nothing else: each shmkv_key_* call sends it as the
 * plain call does. */
int shmkv__redis_key_prepare(shmkv_t *kv, struct shmkv_keyref *ref,
			     const void *key, size_t klen);
/* The key of @ref, if it was prepared for @kv: 0, or -EINVAL. */
int shmkv__redis_ref_key(const shmkv_t *kv, struct shmkv_keyref *ref,
			 const void **key, size_t *klen);

/* redis_admin.c: the whole-store calls (SCAN over every master, the
 * stats and config a Redis can honestly give). */
int shmkv__redis_scan(shmkv_t *kv, uint64_t cursor, uint32_t count,
		      shmkv_scan_fn fn, void *arg, uint64_t *next);
int shmkv__redis_stats(shmkv_t *kv, struct shmkv_stats *st);
int shmkv__redis_get_config(const shmkv_t *kv, struct shmkv_config *cfg);

/* The struct is internal.h's; included late so this header stays light
 * for the files that only declare. */
#include "internal.h"

static inline int shmkv__is_remote(const shmkv_t *kv)
{
	return kv != NULL && kv->backend != NULL;
}

#endif /* SHMKV_SRC_REDIS_TYPED_H */
