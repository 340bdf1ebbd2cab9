/*
 * redis_lock_pattern.c - the pattern lock (shmkv_lock.h) on a Redis store:
 * the SETNX page's algorithm as the page writes it, one command per step
 * (SETNX, GET, GETSET, DEL) on the key "lock.{<name>}" (redis_lock.h), the
 * steps and their quotes as lock_pattern.c has them. Times are Unix
 * milliseconds on this host's wall clock, as the page's are Unix seconds
 * on each client's: the clients' clocks must agree (the page's own
 * assumption). A busy acquirer polls (redis_lock.h's backoff, cut to the
 * holder's expiry): no release wakes it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "intconv.h"
#include "lock_record.h"
#include "redis_lock_call.h"
#include "redis_lock.h"

enum {
	ROUND_ACQUIRED = 0,
	ROUND_BUSY = 1,
	ROUND_AGAIN = 2,
};

struct rpattern {
	struct shmkv_redis *r;
	struct shmkv__rl_keys k;
	int64_t timeout_ms;
	int64_t expiry; /* what we wrote last */
	int64_t holder; /* the valid expiry found, when busy */
};

int shmkv__redis_pattern_init(shmkv_t *kv, struct shmkv_pattern *pl,
			      const char *name)
{
	struct shmkv__pattern *h = shmkv__pattern_of(pl);
	struct shmkv__rl_keys k;
	size_t n;
	int err;

	memset(pl, 0, sizeof(*pl));
	err = shmkv__rl_name_check(name, &n);
	if (err)
		return err;
	if (kv->readonly || shmkv__redis_of(kv)->readonly)
		return -EROFS;
	err = shmkv__rl_keys(shmkv__redis_of(kv), name, n, &k);
	if (err)
		return err;
	memcpy(h->key, name, n);
	h->remote_name_len = (uint32_t)n;
	h->kv = kv;
	return 0;
}

static void step(enum shmkv__pattern_step s)
{
	if (shmkv__pattern_hook)
		shmkv__pattern_hook(s);
}

/* One command on the lock key, with up to one value. */
static int cmd(struct rpattern *p, const char *name, const char *val,
	       size_t vlen, redisReply **rep)
{
	const char *av[3] = { name, p->k.rec, val };
	size_t al[3] = { strlen(name), p->k.rec_len, vlen };
	int rc = shmkv__rl_call(p->r, p->k.rec, p->k.rec_len, val ? 3 : 2, av,
				al, rep);

	if (rc == 0 && (*rep)->type == REDIS_REPLY_ERROR) {
		rc = shmkv__rl_err(*rep);
		freeReplyObject(*rep);
		*rep = NULL;
		return rc < 0 ? rc : -EIO; /* (for the analyzer: never 0) */
	}
	return rc;
}

/* A string reply as a lock time. Return: 1 and *@t, 0 (nil), -EEXIST. */
static int time_of(const redisReply *rep, int64_t *t)
{
	if (rep->type == REDIS_REPLY_NIL)
		return 0;
	if (rep->type != REDIS_REPLY_STRING ||
	    !shmkv__string2ll(rep->str, rep->len, t) || *t <= 0)
		return -EEXIST;
	return 1;
}

/* "SETNX" / "GETSET" @t, or "GET" (@t unused): 1 set or the old time,
 * 0 not set or nil, -errno. */
static int run(struct rpattern *p, const char *name, int64_t t, int64_t *old)
{
	char nv[SHMKV_INT_STRLEN];
	size_t n = shmkv__ll2string(nv, t);
	bool setnx = strcmp(name, "SETNX") == 0;
	redisReply *rep;
	int rc = cmd(p, name, strcmp(name, "GET") ? nv : NULL, n, &rep);

	if (rc)
		return rc;
	if (setnx)
		rc = rep->type == REDIS_REPLY_INTEGER ? (rep->integer == 1)
						      : -EPROTO;
	else
		rc = time_of(rep, old);
	freeReplyObject(rep);
	return rc;
}

static int round_once(struct rpattern *p)
{
	int64_t now, old = 0;
	int r;

	/* "SETNX lock.foo <current Unix time + lock timeout + 1>" */
	p->expiry = shmkv__unix_ms() + p->timeout_ms + 1;
	r = run(p, "SETNX", p->expiry, NULL);
	if (r != 0)
		return r < 0 ? r : ROUND_ACQUIRED;
	/* "C4 sends GET lock.foo to check if the lock expired." */
	r = run(p, "GET", 0, &old);
	if (r <= 0)
		return r < 0 ? r : ROUND_AGAIN;
	now = shmkv__unix_ms();
	if (old > now) {
		p->holder = old;
		return ROUND_BUSY;
	}
	step(SHMKV__PATTERN_SAW_EXPIRED);
	/* "GETSET lock.foo <current Unix timestamp + lock timeout + 1>" */
	now = shmkv__unix_ms();
	p->expiry = now + p->timeout_ms + 1;
	r = run(p, "GETSET", p->expiry, &old);
	if (r < 0)
		return r;
	/* "C4 can check if the old value stored at key is still an expired
	 * timestamp. If it is, the lock was acquired." */
	if (r == 0 || old <= now)
		return ROUND_ACQUIRED;
	/* "C5 was faster": "C4 will simply restart from the first step." */
	step(SHMKV__PATTERN_GETSET_LOST);
	p->holder = old;
	return ROUND_BUSY;
}

static int rounds(struct rpattern *p)
{
	/* Before each try (a cached reading, unless a connection is to be
	 * made again: redis_policy.c). volatile-* is no risk here: the key
	 * never has a TTL (SETNX, GETSET). */
	int rc = shmkv__rl_evict_check(p->r, SHMKV_REDIS_EVICTS_TTL);

	if (rc)
		return rc;
	for (uint32_t n = 0; n < SHMKV_RETRY_MAX; n++) {
		int r = round_once(p);

		if (r != ROUND_AGAIN)
			return r;
	}
	return -EAGAIN;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* "It will sleep for some time and retry from the start": polls with the
 * backoff, not past the holder's expiry or our deadline (@end, BOOTTIME;
 * -1 none). */
static int wait_rounds(struct rpattern *p, int64_t end)
{
	for (unsigned round = 0;; round++) {
		int64_t now = shmkv__now_ms(), unix_now = shmkv__unix_ms();
		int64_t nap = shmkv__rl_backoff(round);
		int rc;

		if (end >= 0 && now >= end)
			return -ETIMEDOUT;
		/* Compared before subtracting: the holder's time is the
		 * key's content, anything. */
		if (p->holder < unix_now)
			nap = 1;
		else if (p->holder - unix_now + 1 < nap)
			nap = p->holder - unix_now + 1;
		if (end >= 0 && end - now < nap)
			nap = end - now;
		sleep_ms(nap);
		rc = rounds(p);
		if (rc != ROUND_BUSY)
			return rc;
	}
}

int shmkv__redis_pattern_acquire(struct shmkv_pattern *pl, int64_t timeout_ms,
				 int64_t wait_ms, int64_t *expiry)
{
	struct shmkv__pattern *h = shmkv__pattern_of(pl);
	struct rpattern p = { .timeout_ms = timeout_ms };
	int64_t start, end = -1;
	int rc;

	if (h->kv == NULL || expiry == NULL || timeout_ms < 1 ||
	    timeout_ms > SHMKV_LOCK_LEASE_MAX || wait_ms < SHMKV_LOCK_FOREVER)
		return -EINVAL;
	p.r = shmkv__redis_of(h->kv);
	rc = shmkv__rl_keys(p.r, h->key, h->remote_name_len, &p.k);
	if (rc)
		return rc;
	start = wait_ms > 0 ? shmkv__now_ms() : 0;
	rc = rounds(&p);
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

int shmkv__redis_pattern_release(struct shmkv_pattern *pl, int64_t expiry)
{
	struct shmkv__pattern *h = shmkv__pattern_of(pl);
	struct rpattern p = { 0 };
	redisReply *rep;
	int rc;

	if (h->kv == NULL)
		return -EINVAL;
	p.r = shmkv__redis_of(h->kv);
	rc = shmkv__rl_keys(p.r, h->key, h->remote_name_len, &p.k);
	if (rc)
		return rc;
	/* "A client holding a lock should always check the timeout didn't
	 * expire before unlocking the key with DEL." */
	if (shmkv__unix_ms() >= expiry)
		return -ETIMEDOUT;
	rc = cmd(&p, "DEL", NULL, 0, &rep);
	if (rc)
		return rc;
	rc = rep->type != REDIS_REPLY_INTEGER ? -EPROTO
	     : rep->integer == 1	      ? 0
					      : -ENOLCK;
	freeReplyObject(rep);
	return rc;
}
