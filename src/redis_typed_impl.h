/*
 * redis_typed_impl.h - what the typed layer's files (redis_typed.c,
 * redis_expire.c, redis_admin.c) share: the key as sent, a command's
 * arguments, the scripts, the reply mappings. Not for other layers.
 */
#ifndef SHMKV_SRC_REDIS_TYPED_IMPL_H
#define SHMKV_SRC_REDIS_TYPED_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "intconv.h"
#include "redis.h"
#include "redis_typed.h"

/* A key with the handle's prefix in front: on the stack when short. */
struct shmkv__rk {
	char *p;
	size_t len;
	char small[256];
};

/* @key as sent (shmkv__redis_key) into @k. Return: 0, -ENAMETOOLONG,
 * -ENOMEM. Free with shmkv__rk_free. */
int shmkv__rk_make(struct shmkv_redis *r, const void *key, size_t klen,
		   struct shmkv__rk *k);
void shmkv__rk_free(struct shmkv__rk *k);

/* One command's arguments: the typed calls' shapes are fixed and short
 * (SET k v NX GET PXAT t is 7; the getcmd script's EVAL 13). */
#define SHMKV__RC_ARGS 16
struct shmkv__rc {
	int argc;
	int nnum;
	const char *argv[SHMKV__RC_ARGS];
	size_t len[SHMKV__RC_ARGS];
	char num[4][SHMKV_INT_STRLEN + 1]; /* the integers' text */
};

void shmkv__rc_arg(struct shmkv__rc *c, const void *p, size_t n);
void shmkv__rc_str(struct shmkv__rc *c, const char *s);
void shmkv__rc_int(struct shmkv__rc *c, int64_t v);

/* shmkv__redis_call and shmkv__redis_call_master, with a reply always
 * there on success (a NULL one is -EPROTO): the one way to the server of
 * the typed layer's files. */
int shmkv__rc_call(struct shmkv_redis *r, const void *key, size_t klen,
		   int argc, const char **argv, const size_t *argvlen,
		   redisReply **rep);
int shmkv__rc_call_master(struct shmkv_redis *r, int m, int argc,
			  const char **argv, const size_t *argvlen,
			  redisReply **rep);

/* A command @c on one key whose reply is an integer: the call's return
 * (EXISTS, DEL, SETNX, PERSIST: 1 or 0) when @v is NULL, else into *@v
 * (0 returned). A reply that is not an integer: -EPROTO. */
int shmkv__rc_key_int(shmkv_t *kv, const void *key, size_t klen,
		      struct shmkv__rc *c, int64_t *v);

/* Sends @c to @k's node. Return: 0 and *@rep (never an error reply: that
 * is mapped to its errno and freed), or the link's error. */
int shmkv__rc_run(struct shmkv_redis *r, const struct shmkv__rk *k,
		  struct shmkv__rc *c, redisReply **rep);

/* A value reply into @out (1, 0, -ENOBUFS with out->len, -EPROTO); an
 * integer is a length only @from_script (shmkv__script_getcmd's). */
int shmkv__rc_value(const redisReply *rep, struct shmkv_value *out,
		    bool from_script);

struct shmkv__script {
	const char *sha; /* SHA1 of body, hex: EVALSHA's name for it */
	const char *body;
};
extern const struct shmkv__script shmkv__script_getcmd;
extern const struct shmkv__script shmkv__script_delifeq;

/* Runs script @s on @k with ARGV @args (EVALSHA, EVAL on NOSCRIPT). */
int shmkv__rc_script(struct shmkv_redis *r, const struct shmkv__rk *k,
		     const struct shmkv__script *s,
		     const struct shmkv__rc *args, redisReply **rep);

/* GET-then-@cmd by script: 1 and the value, 0, -ENOBUFS (nothing done). */
int shmkv__rc_get_then(struct shmkv_redis *r, const struct shmkv__rk *k,
		       const char *cmd, const struct shmkv__rc *opts,
		       struct shmkv_value *out);

/*
 * The -EINVAL cases of the shm store's shmkv__deadline (Redis 7's
 * "invalid expire time"), without a clock offset or a deadline: @t in
 * seconds if @seconds (times 1000 must fit), relative unless @absolute
 * (now on this host's wall clock plus @t must fit), and > 0 if
 * @positive (SET's and GETEX's rule). The server checks again with its
 * clock; its refusal maps to -EINVAL too.
 */
int shmkv__redis_time_check(int64_t t, bool seconds, bool absolute,
			    bool positive);

#endif /* SHMKV_SRC_REDIS_TYPED_IMPL_H */
