/*
 * redis_lock_call.h - shmkv__redis_call and its master variant for the
 * redis_lock*.c files, with the contract "0 means a reply" checked where
 * the caller (and clang's analyzer) can see it.
 */
#ifndef SHMKV_SRC_REDIS_LOCK_CALL_H
#define SHMKV_SRC_REDIS_LOCK_CALL_H

#include <string.h>

#include "redis.h"

static inline int shmkv__rl_call(struct shmkv_redis *r, const void *key,
				 size_t klen, int argc, const char **argv,
				 const size_t *argvlen, redisReply **rep)
{
	int rc;

	*rep = NULL;
	rc = shmkv__redis_call(r, key, klen, argc, argv, argvlen, rep);
	return rc == 0 && *rep == NULL ? -EPROTO : rc;
}

static inline int shmkv__rl_call_master(struct shmkv_redis *r, int m, int argc,
					const char **argv,
					const size_t *argvlen, redisReply **rep)
{
	int rc;

	*rep = NULL;
	rc = shmkv__redis_call_master(r, m, argc, argv, argvlen, rep);
	return rc == 0 && *rep == NULL ? -EPROTO : rc;
}

/* An error reply as a lock call's error: a lock key of another type is
 * no lock (-EEXIST); a token counter whose field is not a number, the
 * scripts' BADCOUNTER (redis_lock_script.c), is -EBADMSG; anything else
 * as shmkv__redis_err, never 0. */
static inline int shmkv__rl_err(const redisReply *rep)
{
	int e = shmkv__redis_err(rep);

	if (rep != NULL && rep->type == REDIS_REPLY_ERROR && rep->len >= 10 &&
	    memcmp(rep->str, "BADCOUNTER", 10) == 0)
		return -EBADMSG;

	if (e == -EPROTOTYPE)
		return -EEXIST;
	return e < 0 ? e : -EIO;
}

#endif /* SHMKV_SRC_REDIS_LOCK_CALL_H */
