/*
 * lock_pattern.c - the locking pattern of the Redis SETNX page, step by
 * step, on the public commands SETNX, GET, GETSET and DEL only (see
 * shmkv_lock.h). Times are Unix milliseconds on the wall clock, as the
 * page's are Unix seconds. The page's comments are quoted where each step
 * happens.
 *
 * The only additions are how a busy acquirer waits (asleep on the name's
 * futex word, woken by an unlock, at most SHMKV_LOCK_NAP_MS at a time,
 * where the page just says "sleep for some time") and a test seam.
 */
#include <errno.h>
#include <stdio.h>

#include "intconv.h"
#include "lock_record.h"

void (*shmkv__pattern_hook)(enum shmkv__pattern_step step);

/* What one round found. */
enum {
	ROUND_ACQUIRED = 0,
	ROUND_BUSY = 1,	 /* a valid lock is held: p->holder is its expiry */
	ROUND_AGAIN = 2, /* released between SETNX and GET: start over */
};

struct pattern {
	struct shmkv *kv;
	int64_t timeout_ms;
	int64_t expiry; /* what we wrote last */
	int64_t holder; /* the valid expiry found, when busy */
	uint32_t wait_index;
	uint32_t klen;
	char key[SHMKV_LOCK_PREFIX_LEN + SHMKV_LOCK_NAME_MAX + 1];
};

static int pattern_init(struct pattern *p, struct shmkv *kv, const char *name)
{
	int err;

	if (kv == NULL)
		return -EINVAL;
	err = shmkv__lock_key(kv, name, p->key, &p->klen);
	if (err)
		return err;
	/* Before the header's wait words are written to (mapped read-only). */
	if (kv->readonly)
		return -EROFS;
	p->kv = kv;
	p->wait_index = shmkv__lock_wait_index(kv, p->key, p->klen);
	return 0;
}

static void step(enum shmkv__pattern_step s)
{
	if (shmkv__pattern_hook)
		shmkv__pattern_hook(s);
}

/* Parses a lock value: a positive decimal time. Return: 0, -EEXIST. */
static int parse_time(const char *s, size_t len, int64_t *t)
{
	return shmkv__string2ll(s, len, t) && *t > 0 ? 0 : -EEXIST;
}

/* GET lock.<name> as a time. Return: 1 and *@t, 0 (missing), -errno. */
static int get_time(const struct pattern *p, int64_t *t)
{
	char buf[32];
	struct shmkv_value v = { .buf = buf, .cap = sizeof(buf) };
	int r = shmkv_get(p->kv, p->key, p->klen, &v);

	if (r == -ENOBUFS)
		return -EEXIST;
	if (r <= 0)
		return r;
	return parse_time(buf, v.len, t) ? -EEXIST : 1;
}

/* GETSET lock.<name> @t. Return: 1 and the old time, 0 (was missing). */
static int getset_time(const struct pattern *p, int64_t t, int64_t *old)
{
	char nv[24], buf[32];
	struct shmkv_value v = { .buf = buf, .cap = sizeof(buf) };
	int n = snprintf(nv, sizeof(nv), "%lld", (long long)t);
	int r = shmkv_getset(p->kv, p->key, p->klen, nv, (size_t)n, &v);

	if (r == -ENOBUFS)
		return -EEXIST;
	if (r <= 0)
		return r;
	return parse_time(buf, v.len, old) ? -EEXIST : 1;
}

static int setnx_time(const struct pattern *p, int64_t t)
{
	char nv[24];
	int n = snprintf(nv, sizeof(nv), "%lld", (long long)t);

	return shmkv_setnx(p->kv, p->key, p->klen, nv, (size_t)n);
}

/* One pass of the page's algorithm. Return: ROUND_*, or -errno. */
static int round_once(struct pattern *p)
{
	int64_t now = shmkv__unix_ms(), old;
	int r;

	/* "SETNX lock.foo <current Unix time + lock timeout + 1>" */
	p->expiry = now + p->timeout_ms + 1;
	r = setnx_time(p, p->expiry);
	if (r != 0)
		return r < 0 ? r : ROUND_ACQUIRED;
	/* "C4 sends GET lock.foo to check if the lock expired." */
	r = get_time(p, &old);
	if (r <= 0)
		return r < 0 ? r : ROUND_AGAIN;
	/* "If such a timestamp is equal to the current Unix time the lock
	 * is no longer valid": valid while now < value. */
	now = shmkv__unix_ms();
	if (old > now) {
		p->holder = old;
		return ROUND_BUSY;
	}
	step(SHMKV__PATTERN_SAW_EXPIRED);
	/* "GETSET lock.foo <current Unix timestamp + lock timeout + 1>" */
	now = shmkv__unix_ms();
	p->expiry = now + p->timeout_ms + 1;
	r = getset_time(p, p->expiry, &old);
	if (r < 0)
		return r;
	/* "C4 can check if the old value stored at key is still an expired
	 * timestamp. If it is, the lock was acquired." Missing: deleted by
	 * its holder just now, so nobody else holds it either. */
	if (r == 0 || old <= now)
		return ROUND_ACQUIRED;
	/* "C5 was faster": we wrote a slightly later time over C5's, which
	 * the page accepts. "C4 will simply restart from the first step." */
	step(SHMKV__PATTERN_GETSET_LOST);
	p->holder = old;
	return ROUND_BUSY;
}

/* Rounds until one acquires or finds the lock validly held. ROUND_AGAIN
 * needs an unlock between our SETNX and GET, so it is bounded like any
 * lost race (SHMKV_RETRY_MAX). */
static int rounds(struct pattern *p)
{
	for (uint32_t n = 0; n < SHMKV_RETRY_MAX; n++) {
		int r = round_once(p);

		if (r != ROUND_AGAIN)
			return r;
	}
	return -EAGAIN;
}

/* "It will sleep for some time and retry from the start": asleep on the
 * futex word, woken by an unlock, at most a nap, and not past the
 * holder's expiry or our own deadline (@end, BOOTTIME; -1: none). */
static int wait_rounds(struct pattern *p, int64_t end)
{
	struct shmkv *kv = p->kv;
	int rc;

	shmkv__lock_wait_enter(kv, p->wait_index);
	for (;;) {
		uint32_t seq = shmkv__lock_wait_seq(kv, p->wait_index);
		int64_t now, nap = SHMKV_LOCK_NAP_MS;

		rc = rounds(p);
		if (rc != ROUND_BUSY)
			break;
		now = shmkv__now_ms();
		if (end >= 0 && now >= end) {
			rc = -ETIMEDOUT;
			break;
		}
		if (p->holder - shmkv__unix_ms() + 1 < nap)
			nap = p->holder - shmkv__unix_ms() + 1;
		if (end >= 0 && end - now < nap)
			nap = end - now;
		if (nap > 0)
			shmkv__lock_wait_sleep(kv, p->wait_index, seq, nap);
	}
	shmkv__lock_wait_leave(kv, p->wait_index);
	if (rc == -ETIMEDOUT)
		shmkv__lock_wake(kv, p->wait_index);
	return rc;
}

int shmkv_pattern_lock(shmkv_t *kv, const char *name, int64_t timeout_ms,
		       int64_t wait_ms, int64_t *expiry)
{
	struct pattern p = { .timeout_ms = timeout_ms };
	int64_t end;
	int rc = pattern_init(&p, kv, name);

	if (rc)
		return rc;
	if (expiry == NULL || timeout_ms < 1 ||
	    timeout_ms > SHMKV_LOCK_LEASE_MAX || wait_ms < SHMKV_LOCK_FOREVER)
		return -EINVAL;
	end = wait_ms < 0 ? -1 : shmkv__now_ms() + wait_ms;
	rc = rounds(&p);
	if (rc == ROUND_BUSY && wait_ms != 0)
		rc = wait_rounds(&p, end);
	if (rc == ROUND_BUSY)
		return -EBUSY;
	if (rc == ROUND_ACQUIRED)
		*expiry = p.expiry;
	return rc;
}

int shmkv_pattern_unlock(shmkv_t *kv, const char *name, int64_t expiry)
{
	struct pattern p = { 0 };
	int rc = pattern_init(&p, kv, name);

	if (rc)
		return rc;
	/* "A client holding a lock should always check the timeout didn't
	 * expire before unlocking the key with DEL." */
	if (shmkv__unix_ms() >= expiry)
		return -ETIMEDOUT;
	rc = shmkv_del(kv, p.key, p.klen);
	if (rc < 0)
		return rc;
	shmkv__lock_wake(kv, p.wait_index);
	return rc == 1 ? 0 : -ENOLCK;
}
