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
#include <string.h>

#include "engine.h"
#include "intconv.h"
#include "lock_handle.h"
#include "lock_record.h"
#include "redis_lock.h"

void (*shmkv__pattern_hook)(enum shmkv__pattern_step step);

/* What one round found. */
enum {
	ROUND_ACQUIRED = 0,
	ROUND_BUSY = 1,	 /* a valid lock is held: p->holder is its expiry */
	ROUND_AGAIN = 2, /* released between SETNX and GET: start over */
};

struct pattern {
	struct shmkv__pattern *pl;
	int64_t timeout_ms;
	int64_t expiry; /* what we wrote last */
	int64_t holder; /* the valid expiry found, when busy */
};

int shmkv_pattern_init(shmkv_t *kv, struct shmkv_pattern *pl, const char *name)
{
	struct shmkv__pattern *h = shmkv__pattern_of(pl);
	int err;

	if (kv == NULL || h == NULL)
		return -EINVAL;
	if (shmkv__lock_remote(kv))
		return shmkv__redis_pattern_init(kv, pl, name);
	memset(pl, 0, sizeof(*pl));
	err = shmkv__lock_key(kv, name, h->key, &h->key_len);
	if (err)
		return err;
	/* Before the header's wait words are written to (mapped read-only). */
	if (kv->readonly)
		return -EROFS;
	err = shmkv_key_prepare(kv, &h->ref, h->key, h->key_len);
	if (err)
		return err;
	h->kv = kv;
	h->wait_index = shmkv__wait_index(kv, h->key, h->key_len);
	return 0;
}

/* The handle's prepared key (it may have been copied since). */
static struct shmkv_keyref *ref_of(struct shmkv__pattern *pl)
{
	shmkv__kref(&pl->ref)->key = pl->key;
	return &pl->ref;
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
	int r = shmkv_key_get(p->pl->kv, ref_of(p->pl), &v);

	if (r == -ENOBUFS)
		return -EEXIST;
	if (r <= 0)
		return r;
	return parse_time(buf, v.len, t) ? -EEXIST : 1;
}

/* GETSET lock.<name> @t. Return: 1 and the old time, 0 (was missing). */
static int getset_time(const struct pattern *p, int64_t t, int64_t *old)
{
	char nv[SHMKV_INT_STRLEN], buf[32];
	struct shmkv_value v = { .buf = buf, .cap = sizeof(buf) };
	size_t n = shmkv__ll2string(nv, t);
	int r = shmkv_key_getset(p->pl->kv, ref_of(p->pl), nv, n, &v);

	if (r == -ENOBUFS)
		return -EEXIST;
	if (r <= 0)
		return r;
	return parse_time(buf, v.len, old) ? -EEXIST : 1;
}

static int setnx_time(const struct pattern *p, int64_t t)
{
	char nv[SHMKV_INT_STRLEN];
	size_t n;
	int r = shmkv__key_setnx_int(p->pl->kv, ref_of(p->pl), t);

	if (r != -EAGAIN)
		return r;
	n = shmkv__ll2string(nv, t);
	return shmkv_key_setnx(p->pl->kv, ref_of(p->pl), nv, n);
}

/* One pass of the page's algorithm. Return: ROUND_*, or -errno. */
static int round_once(struct pattern *p)
{
	int64_t now, old;
	int r;

	/* "SETNX lock.foo <current Unix time + lock timeout + 1>", the time
	 * from the coarse clock's upper bound: the lock lasts at least the
	 * timeout, at a quarter of a precise clock read. */
	p->expiry = shmkv__unix_upper_ms() + p->timeout_ms + 1;
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
	uint32_t *word = shmkv__wait_header(p->pl->kv, p->pl->wait_index);
	int rc;

	for (;;) {
		/* wait.h's waiter: marked before each try. */
		uint32_t seq = shmkv__wait_mark(word);
		int64_t now, unix_now, nap = SHMKV_LOCK_NAP_MS;

		rc = rounds(p);
		if (rc != ROUND_BUSY)
			break;
		now = shmkv__now_ms();
		if (end >= 0 && now >= end) {
			rc = -ETIMEDOUT;
			break;
		}
		/* The holder's time is the key's content: compared before
		 * subtracting, so that no value can overflow. */
		unix_now = shmkv__unix_ms();
		if (p->holder < unix_now)
			nap = 1;
		else if (p->holder - unix_now + 1 < nap)
			nap = p->holder - unix_now + 1;
		if (end >= 0 && end - now < nap)
			nap = end - now;
		if (nap > 0)
			shmkv__wait_sleep(word, seq, nap);
	}
	if (rc == -ETIMEDOUT)
		shmkv__wake(word);
	return rc;
}

int shmkv_pattern_acquire(struct shmkv_pattern *pl, int64_t timeout_ms,
			  int64_t wait_ms, int64_t *expiry)
{
	struct shmkv__pattern *h = shmkv__pattern_of(pl);
	struct pattern p = { .pl = h, .timeout_ms = timeout_ms };
	int64_t start, end = -1;
	int rc;

	if (h == NULL || h->kv == NULL || expiry == NULL ||
	    h->key_len <= SHMKV_LOCK_PREFIX_LEN || timeout_ms < 1 ||
	    timeout_ms > SHMKV_LOCK_LEASE_MAX || wait_ms < SHMKV_LOCK_FOREVER)
		/* A Redis handle is "not initialised" here (redis_lock.h). */
		return shmkv__pattern_h_remote(h)
			       ? shmkv__redis_pattern_acquire(pl, timeout_ms,
							      wait_ms, expiry)
			       : -EINVAL;
	/* The clock is read for the deadline only when it can be needed:
	 * an attempt that does not wait reads none of its own. */
	start = wait_ms > 0 ? shmkv__now_ms() : 0;
	rc = rounds(&p);
	/* A limit past the end of time is no limit. */
	if (wait_ms > 0 && wait_ms <= INT64_MAX - start)
		end = start + wait_ms;
	if (rc == ROUND_BUSY && wait_ms != 0)
		rc = wait_rounds(&p, end);
	if (rc == ROUND_BUSY)
		return -EBUSY;
	if (rc == ROUND_ACQUIRED)
		*expiry = p.expiry;
	return rc;
}

int shmkv_pattern_release(struct shmkv_pattern *pl, int64_t expiry)
{
	struct shmkv__pattern *h = shmkv__pattern_of(pl);
	int rc;

	if (h == NULL || h->kv == NULL || h->key_len <= SHMKV_LOCK_PREFIX_LEN)
		return shmkv__pattern_h_remote(h)
			       ? shmkv__redis_pattern_release(pl, expiry)
			       : -EINVAL;
	/* "A client holding a lock should always check the timeout didn't
	 * expire before unlocking the key with DEL." The coarse clock's upper
	 * bound settles it unless the expiry is near; then the precise one. */
	if (shmkv__unix_upper_ms() >= expiry && shmkv__unix_ms() >= expiry)
		return -ETIMEDOUT;
	rc = shmkv_key_del(h->kv, ref_of(h));
	if (rc < 0)
		return rc;
	shmkv__wake(shmkv__wait_header(h->kv, h->wait_index));
	return rc == 1 ? 0 : -ENOLCK;
}
