/*
 * redis_typed.c - each typed call of shmkv.h as a Redis command (or one
 * short script), its reply mapped to the return the shared-memory store
 * gives (redis_typed.h). The expire family is in redis_expire.c, what
 * the calls share to talk to the server in redis_typed_rc.c.
 *
 * A call that hands a value back into the caller's buffer and also writes
 * (SET ... GET, GETSET, GETDEL, GETEX with a new TTL) runs as a script
 * that reads the value first and writes nothing when it does not fit the
 * buffer: the shm store's -ENOBUFS promises an unchanged store, and a
 * plain "SET k v GET" would have written before we could see the length.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "intconv.h"
#include "keyref.h"
#include "redis.h"
#include "redis_typed_impl.h"

/* An integer reply into *@v: 0, or -EPROTO (a reply of another type: a
 * server that does not speak this command as we do). */
static int reply_int(const redisReply *rep, int64_t *v)
{
	if (rep->type != REDIS_REPLY_INTEGER)
		return -EPROTO;
	*v = rep->integer;
	return 0;
}

/* What any call on @kv's key checks first (shmkv__key_args already made
 * the handle and length checks on the plain calls' way): the handle. */
static struct shmkv_redis *redis_of(shmkv_t *kv)
{
	return shmkv__redis_of(kv);
}

/* The shm store's check_args for a value and a buffer, in its order. */
static int value_args(const shmkv_t *kv, const void *val, size_t vlen,
		      const struct shmkv_value *buf, bool write)
{
	if (val == NULL && vlen > 0)
		return -EINVAL;
	if (vlen > kv->geo.value_max)
		return -E2BIG;
	if (buf != NULL && buf->buf == NULL && buf->cap > 0)
		return -EINVAL;
	if (write && kv->readonly)
		return -EROFS;
	return 0;
}

/* ---- the calls ---- */

/* A command's first two arguments: its name and a place for the key. */
static void rc_start(struct shmkv__rc *c, const char *name)
{
	shmkv__rc_str(c, name);
	shmkv__rc_arg(c, NULL, 0);
}

int shmkv__redis_get(shmkv_t *kv, const void *key, size_t klen,
		     struct shmkv_value *out)
{
	struct shmkv_redis *r = redis_of(kv);
	struct shmkv__rc c = { 0 };
	struct shmkv__rk k;
	redisReply *rep;
	int err;

	/* A NULL @out asks only whether the key exists. */
	if (out == NULL)
		return shmkv__redis_exists(kv, key, klen);
	err = value_args(kv, NULL, 0, out, false);
	if (err == 0)
		err = shmkv__rk_make(r, key, klen, &k);
	if (err)
		return err;
	shmkv__rc_str(&c, "GET");
	shmkv__rc_arg(&c, k.p, k.len);
	err = shmkv__rc_run(r, &k, &c, &rep);
	if (err == 0) {
		err = shmkv__rc_value(rep, out, false);
		freeReplyObject(rep);
	}
	shmkv__rk_free(&k);
	return err;
}

int shmkv__redis_exists(shmkv_t *kv, const void *key, size_t klen)
{
	struct shmkv__rc c = { 0 };

	rc_start(&c, "EXISTS");
	return shmkv__rc_key_int(kv, key, klen, &c, NULL);
}

int shmkv__redis_get_int(shmkv_t *kv, const void *key, size_t klen,
			 int64_t *out)
{
	/* Longer than any integer: told apart by its length (-EDOM). */
	char digits[SHMKV_INT_STRLEN + 1];
	struct shmkv_value v = { digits, sizeof(digits), 0 };
	int64_t i;
	int r;

	if (out == NULL)
		return -EINVAL;
	r = shmkv__redis_get(kv, key, klen, &v);
	if (r == -ENOBUFS)
		return -EDOM; /* too long to be an integer */
	if (r <= 0)
		return r;
	if (!shmkv__string2ll(digits, v.len, &i))
		return -EDOM;
	*out = i;
	return 1;
}

/* SET's option rules, as the shm store's set_deadline (strings.c). */
#define SET_EXPIRY                                                             \
	(SHMKV_SET_EX | SHMKV_SET_PX | SHMKV_SET_EXAT | SHMKV_SET_PXAT |       \
	 SHMKV_SET_KEEPTTL)
#define SET_ALL (SET_EXPIRY | SHMKV_SET_NX | SHMKV_SET_XX | SHMKV_SET_GET)

static int set_check(unsigned flags, int64_t expire)
{
	unsigned ex = flags & SET_EXPIRY;

	if ((flags & ~SET_ALL) || (ex & (ex - 1)) ||
	    ((flags & SHMKV_SET_NX) && (flags & SHMKV_SET_XX)))
		return -EINVAL;
	if (ex == 0 || ex == SHMKV_SET_KEEPTTL)
		return 0;
	return shmkv__redis_time_check(
		expire, ex == SHMKV_SET_EX || ex == SHMKV_SET_EXAT,
		ex == SHMKV_SET_EXAT || ex == SHMKV_SET_PXAT, true);
}

/* SET's options after its value: each flag's word, the time after the
 * one that takes it. */
static void set_opts(struct shmkv__rc *c, unsigned flags, int64_t expire)
{
	static const struct {
		unsigned flag;
		const char *word;
	} words[] = {
		{ SHMKV_SET_NX, "NX" },		  { SHMKV_SET_XX, "XX" },
		{ SHMKV_SET_KEEPTTL, "KEEPTTL" }, { SHMKV_SET_EX, "EX" },
		{ SHMKV_SET_PX, "PX" },		  { SHMKV_SET_EXAT, "EXAT" },
		{ SHMKV_SET_PXAT, "PXAT" },
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (!(flags & words[i].flag))
			continue;
		shmkv__rc_str(c, words[i].word);
		if (words[i].flag & (SET_EXPIRY & ~SHMKV_SET_KEEPTTL))
			shmkv__rc_int(c, expire);
	}
}

int shmkv__redis_set(shmkv_t *kv, const void *key, size_t klen, const void *val,
		     size_t vlen, unsigned flags, int64_t expire,
		     struct shmkv_value *old)
{
	struct shmkv_redis *r = redis_of(kv);
	struct shmkv__rc c = { 0 };
	struct shmkv__rk k;
	redisReply *rep;
	int err = set_check(flags, expire);

	if (err == 0 && (flags & SHMKV_SET_GET) && old == NULL)
		err = -EINVAL;
	if (err == 0)
		err = value_args(kv, val, vlen,
				 (flags & SHMKV_SET_GET) ? old : NULL, true);
	if (err == 0)
		err = shmkv__rk_make(r, key, klen, &k);
	if (err)
		return err;
	if (flags & SHMKV_SET_GET) {
		/* GET's reply; the value set or not as NX/XX say (Redis 7). */
		shmkv__rc_arg(&c, val, vlen);
		set_opts(&c, flags, expire);
		err = shmkv__rc_get_then(r, &k, "SET", &c, old);
		shmkv__rk_free(&k);
		return err;
	}
	shmkv__rc_str(&c, "SET");
	shmkv__rc_arg(&c, k.p, k.len);
	shmkv__rc_arg(&c, val, vlen);
	set_opts(&c, flags, expire);
	err = shmkv__rc_run(r, &k, &c, &rep);
	if (err == 0) {
		/* +OK: set; nil: NX or XX prevented it. */
		err = rep->type == REDIS_REPLY_STATUS ? 1
		      : rep->type == REDIS_REPLY_NIL  ? 0
						      : -EPROTO;
		freeReplyObject(rep);
	}
	shmkv__rk_free(&k);
	return err;
}

int shmkv__redis_setnx(shmkv_t *kv, const void *key, size_t klen,
		       const void *val, size_t vlen)
{
	struct shmkv__rc c = { 0 };
	int err = value_args(kv, val, vlen, NULL, true);

	if (err)
		return err;
	rc_start(&c, "SETNX");
	shmkv__rc_arg(&c, val, vlen);
	return shmkv__rc_key_int(kv, key, klen, &c, NULL);
}

/* GETDEL (and its kin): the GET-then-write script; with no buffer to respect,
 * the native command. */
static int get_then(shmkv_t *kv, const void *key, size_t klen,
		    const char *script_cmd, const char *native, const void *val,
		    size_t vlen, bool has_val, struct shmkv_value *old)
{
	struct shmkv_redis *r = redis_of(kv);
	struct shmkv__rc c = { 0 };
	struct shmkv__rk k;
	redisReply *rep;
	int err = value_args(kv, val, vlen, old, true);

	if (err == 0)
		err = shmkv__rk_make(r, key, klen, &k);
	if (err)
		return err;
	if (has_val)
		shmkv__rc_arg(&c, val, vlen);
	if (old != NULL) {
		err = shmkv__rc_get_then(r, &k, script_cmd, &c, old);
		shmkv__rk_free(&k);
		return err;
	}
	c.argc = 0;
	shmkv__rc_str(&c, native);
	shmkv__rc_arg(&c, k.p, k.len);
	if (has_val)
		shmkv__rc_arg(&c, val, vlen);
	err = shmkv__rc_run(r, &k, &c, &rep);
	if (err == 0) {
		err = shmkv__rc_value(rep, NULL, false);
		freeReplyObject(rep);
	}
	shmkv__rk_free(&k);
	return err;
}

int shmkv__redis_getdel(shmkv_t *kv, const void *key, size_t klen,
			struct shmkv_value *old)
{
	return get_then(kv, key, klen, "DEL", "GETDEL", NULL, 0, false, old);
}

int shmkv__redis_del(shmkv_t *kv, const void *key, size_t klen)
{
	struct shmkv__rc c = { 0 };

	if (kv->readonly)
		return -EROFS;
	rc_start(&c, "DEL");
	return shmkv__rc_key_int(kv, key, klen, &c, NULL);
}

/*
 * Does the server have Valkey's native DELIFEQ? Asked once per handle by
 * COMMAND INFO (an unknown command's entry is nil), on the node that
 * holds the key. Relaxed atomics: the answer is idempotent (every thread
 * that asks finds the same), so a race only asks twice.
 * Return: 1, 0, or the question's link error, which is the call's: a
 * question lost in flight is -ECONNRESET / -ETIMEDOUT, where going on to
 * the script would answer -ECONNREFUSED ("nothing was sent") and hide it.
 */
static int delifeq_native(struct shmkv_redis *r, const struct shmkv__rk *k)
{
	static const char *argv[] = { "COMMAND", "INFO", "DELIFEQ" };
	static const size_t len[] = { 7, 4, 7 };
	/* Relaxed: a process-local answer that every asker finds the same;
	 * a race only asks twice, and no other word is published with it. */
	uint32_t known = shmkv__load32_relaxed(&r->typed_delifeq);
	redisReply *rep;
	int err;

	if (known != 0)
		return known == 1;
	err = shmkv__rc_call(r, k->p, k->len, 3, argv, len, &rep);
	if (err)
		return err;
	known = rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
				rep->element[0]->type == REDIS_REPLY_ARRAY
			? 1
			: 2;
	freeReplyObject(rep);
	/* Relaxed: as the load above. */
	shmkv__store32_relaxed(&r->typed_delifeq, known);
	return known == 1;
}

int shmkv__redis_delifeq(shmkv_t *kv, const void *key, size_t klen,
			 const void *val, size_t vlen)
{
	struct shmkv_redis *r = redis_of(kv);
	struct shmkv__rc c = { 0 };
	struct shmkv__rk k;
	redisReply *rep;
	int64_t n = 0;
	int err = value_args(kv, val, vlen, NULL, true);

	if (err == 0)
		err = shmkv__rk_make(r, key, klen, &k);
	if (err)
		return err;
	err = delifeq_native(r, &k);
	if (err < 0) {
		shmkv__rk_free(&k);
		return err;
	}
	if (err == 1) {
		shmkv__rc_str(&c, "DELIFEQ");
		shmkv__rc_arg(&c, k.p, k.len);
		shmkv__rc_arg(&c, val, vlen);
		err = shmkv__rc_run(r, &k, &c, &rep);
	} else {
		shmkv__rc_arg(&c, val, vlen);
		err = shmkv__rc_script(r, &k, &shmkv__script_delifeq, &c, &rep);
	}
	if (err == 0) {
		err = reply_int(rep, &n);
		freeReplyObject(rep);
	}
	shmkv__rk_free(&k);
	return err ? err : (int)(n != 0);
}

int shmkv__redis_incrby(shmkv_t *kv, const void *key, size_t klen,
			int64_t delta, int64_t *result)
{
	struct shmkv__rc c = { 0 };
	int64_t v;
	int err;

	if (kv->readonly)
		return -EROFS;
	rc_start(&c, "INCRBY");
	shmkv__rc_int(&c, delta);
	err = shmkv__rc_key_int(kv, key, klen, &c, &v);
	if (err == 0 && result != NULL)
		*result = v;
	return err;
}

/* ---- prepared keys ---- */

int shmkv__redis_key_prepare(shmkv_t *kv, struct shmkv_keyref *ref,
			     const void *key, size_t klen)
{
	struct shmkv__keyref *kr = shmkv__kref(ref);

	memset(ref, 0, sizeof(*ref));
	kr->key = key;
	kr->len = klen;
	kr->owner = kv;
	return 0;
}

int shmkv__redis_ref_key(const shmkv_t *kv, struct shmkv_keyref *ref,
			 const void **key, size_t *klen)
{
	const struct shmkv__keyref *kr = shmkv__kref(ref);

	if (kv == NULL || ref == NULL || kr->owner != kv)
		return -EINVAL;
	*key = kr->key;
	*klen = kr->len;
	return 0;
}
