/*
 * redis_expire.c - the expire family, TTL/PTTL, PERSIST and GETEX on a
 * Redis handle (redis_typed.h). The server keeps the deadlines on its own
 * clock: a TTL here is the server's, and an EXPIREAT is judged by the
 * server's wall clock, not this host's (the shm store converts Unix
 * times by this host's clocks).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "redis_typed_impl.h"

int shmkv__redis_time_check(int64_t t, bool seconds, bool absolute,
			    bool positive)
{
	int64_t ms = t;

	/* The checks and their order are shmkv__deadline's (expire.c). */
	if (positive && t <= 0)
		return -EINVAL;
	if (seconds) {
		if (t > INT64_MAX / 1000 || t < INT64_MIN / 1000)
			return -EINVAL;
		ms = t * 1000;
	}
	if (!absolute && ms > INT64_MAX - shmkv__unix_ms())
		return -EINVAL;
	return 0;
}

/* The key checks the shm store's calls make when they prepare the key
 * (shmkv__key_args), here after the option checks as there. */
static int key_args(const shmkv_t *kv, const void *key, size_t klen)
{
	if (key == NULL && klen > 0)
		return -EINVAL;
	return klen > kv->geo.key_max ? -ENAMETOOLONG : 0;
}

int shmkv__redis_expire(shmkv_t *kv, const void *key, size_t klen,
			enum shmkv_expire_unit unit, unsigned flags, int64_t t)
{
	static const char *const names[] = { "EXPIRE", "PEXPIRE", "EXPIREAT",
					     "PEXPIREAT" };
	static const char *const conds[] = { "NX", "XX", "GT", "LT" };
	unsigned cmp = flags &
		       (SHMKV_EXPIRE_XX | SHMKV_EXPIRE_GT | SHMKV_EXPIRE_LT);
	struct shmkv__rc c = { 0 };
	int64_t n = 0;
	int err;

	/* shmkv_expire's checks, in its order (expire.c). */
	if ((unsigned)unit > SHMKV_EXPIRE_AT_MSEC || (flags & ~0xfu) ||
	    ((flags & SHMKV_EXPIRE_NX) && cmp) ||
	    ((flags & SHMKV_EXPIRE_GT) && (flags & SHMKV_EXPIRE_LT)))
		return -EINVAL;
	err = shmkv__redis_time_check(
		t, unit == SHMKV_EXPIRE_SEC || unit == SHMKV_EXPIRE_AT_SEC,
		unit >= SHMKV_EXPIRE_AT_SEC, false);
	if (err == 0)
		err = key_args(kv, key, klen);
	if (err)
		return err;
	if (kv->readonly)
		return -EROFS;
	shmkv__rc_str(&c, names[unit]);
	shmkv__rc_arg(&c, NULL, 0);
	shmkv__rc_int(&c, t);
	for (unsigned i = 0; i < 4; i++)
		if (flags & (1u << i))
			shmkv__rc_str(&c, conds[i]);
	err = shmkv__rc_key_int(kv, key, klen, &c, &n);
	return err ? err : (int)(n != 0);
}

int shmkv__redis_pttl(shmkv_t *kv, const void *key, size_t klen, int64_t *ms)
{
	struct shmkv__rc c = { 0 };
	int64_t v = 0;
	int err;

	if (ms == NULL)
		return -EINVAL;
	err = key_args(kv, key, klen);
	if (err)
		return err;
	shmkv__rc_str(&c, "PTTL");
	shmkv__rc_arg(&c, NULL, 0);
	err = shmkv__rc_key_int(kv, key, klen, &c, &v);
	if (err == 0)
		*ms = v;
	return err;
}

int shmkv__redis_persist(shmkv_t *kv, const void *key, size_t klen)
{
	struct shmkv__rc c = { 0 };
	int64_t n = 0;
	int err = key_args(kv, key, klen);

	if (err)
		return err;
	if (kv->readonly)
		return -EROFS;
	shmkv__rc_str(&c, "PERSIST");
	shmkv__rc_arg(&c, NULL, 0);
	err = shmkv__rc_key_int(kv, key, klen, &c, &n);
	return err ? err : (int)(n != 0);
}

int shmkv__redis_getex(shmkv_t *kv, const void *key, size_t klen,
		       enum shmkv_getex_mode mode, int64_t t,
		       struct shmkv_value *out)
{
	static const char *const words[] = { "",     "EX",   "PX",
					     "EXAT", "PXAT", "PERSIST" };
	struct shmkv_redis *r = shmkv__redis_of(kv);
	struct shmkv__rc c = { 0 };
	struct shmkv__rk k;
	int err = 0;

	/* shmkv_getex's checks, in its order, then check_args'. */
	if ((unsigned)mode > SHMKV_GETEX_PERSIST)
		return -EINVAL;
	if (mode >= SHMKV_GETEX_EX && mode <= SHMKV_GETEX_PXAT)
		err = shmkv__redis_time_check(
			t, mode == SHMKV_GETEX_EX || mode == SHMKV_GETEX_EXAT,
			mode >= SHMKV_GETEX_EXAT, true);
	if (err == 0)
		err = key_args(kv, key, klen);
	if (err == 0 && out != NULL && out->buf == NULL && out->cap > 0)
		err = -EINVAL;
	if (err == 0 && mode != SHMKV_GETEX_KEEP && kv->readonly)
		err = -EROFS;
	if (err)
		return err;
	if (mode == SHMKV_GETEX_KEEP)
		return out != NULL ? shmkv__redis_get(kv, key, klen, out)
				   : shmkv__redis_exists(kv, key, klen);
	err = shmkv__rk_make(r, key, klen, &k);
	if (err)
		return err;
	/* By the script even without a buffer: GETEX on a missing key with
	 * a time is nil, and changes nothing, as the shm store's. */
	shmkv__rc_str(&c, words[mode]);
	if (mode != SHMKV_GETEX_PERSIST)
		shmkv__rc_int(&c, t);
	err = shmkv__rc_get_then(r, &k, "GETEX", &c, out);
	shmkv__rk_free(&k);
	return err;
}
