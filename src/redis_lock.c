/*
 * redis_lock.c - the safe lock (shmkv_lock.h) on a Redis store: every
 * state change is one script on the lock's record and counter
 * (redis_lock_script.c), and a waiter polls (README "Locks over Redis").
 *
 * The handle (struct shmkv__lock) keeps kv, token, flags and pid where
 * lock.c reads them (shmkv_lock_held's first test, shmkv_lock_token),
 * key_len 0 (redis_lock.h), the name in key[], and the exact record of
 * its grant in rec[]: release and extend compare the whole record, which
 * names the token, this host's boot, this pid and a per-attempt nonce.
 * deadline_ms is the lease end on our CLOCK_MONOTONIC, counted from the
 * moment the request was sent: the server's PX started later, so ours
 * ends first (unless the two clocks' rates differ).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "intconv.h"
#include "redis_lock_call.h"
#include "redis_lock.h"

#define RL_REMOTE	1u /* h->remote: bound to a Redis store */
#define RL_NATIVE_KNOWN 2u /* the server was asked for DELIFEQ */
#define RL_NATIVE	4u /* and has it (Valkey 9) */

_Static_assert(SHMKV__LOCK_HOLDING == 1u, "lock.c's holding bit");

static struct shmkv_redis *redis_of(const struct shmkv__lock *h)
{
	return shmkv__redis_of(h->kv);
}

int shmkv__redis_lock_init(shmkv_t *kv, struct shmkv_lock *lk, const char *name)
{
	struct shmkv__lock *h = shmkv__lock_of(lk);
	struct shmkv__rl_keys k;
	size_t n;
	int err;

	memset(lk, 0, sizeof(*lk));
	err = shmkv__rl_name_check(name, &n);
	if (err)
		return err;
	/* The keys must be formable (prefix room, one cluster slot). */
	err = shmkv__rl_keys(shmkv__redis_of(kv), name, n, &k);
	if (err)
		return err;
	memcpy(h->key, name, n);
	h->remote_name_len = (uint16_t)n;
	h->remote = RL_REMOTE;
	h->kv = kv;
	return 0;
}

/* Checks @h (a Redis-bound handle) and forms its keys. */
static int handle_keys(const struct shmkv__lock *h, struct shmkv__rl_keys *k,
		       bool write)
{
	if (!(h->remote & RL_REMOTE) || h->remote_name_len == 0)
		return -EINVAL;
	if (write && (h->kv->readonly || redis_of(h)->readonly))
		return -EROFS;
	return shmkv__rl_keys(redis_of(h), h->key, h->remote_name_len, k);
}

/* Does @h hold a grant it may act on (made by this very process: a fork
 * child's copy owns nothing)? */
static bool holding(const struct shmkv__lock *h)
{
	return (h->flags & SHMKV__LOCK_HOLDING) && h->pid == shmkv__self_pid();
}

/*
 * Does the lock's server have Valkey's native DELIFEQ? Asked once per
 * handle (COMMAND INFO, on the lock's node); a failed question is asked
 * again next time. With it, release is DELIFEQ, which cannot mark the
 * token released, so acquire cannot tell an expiry from a release and
 * never reports LEASE_EXPIRED (every client of one server asks the same).
 * Return: 1, 0, or the question's link error, which ends the caller's
 * call: a connection lost with the question in flight is that call's
 * -ECONNRESET / -ETIMEDOUT, not a guess followed by a reconnect within
 * the same call (whose -ECONNREFUSED would hide that a request died).
 */
static int native_delifeq(struct shmkv__lock *h, const struct shmkv__rl_keys *k)
{
	const char *av[3] = { "COMMAND", "INFO", "DELIFEQ" };
	size_t al[3] = { 7, 4, 7 };
	redisReply *rep;
	int rc;

	if (h->remote & RL_NATIVE_KNOWN)
		return (h->remote & RL_NATIVE) != 0;
	rc = shmkv__rl_call(redis_of(h), k->rec, k->rec_len, 3, av, al, &rep);
	if (rc != 0)
		return rc < 0 ? rc : -EPROTO;
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1) {
		h->remote |= RL_NATIVE_KNOWN;
		/* An unknown command's entry is nil. */
		if (rep->element[0]->type == REDIS_REPLY_ARRAY)
			h->remote |= RL_NATIVE;
	}
	freeReplyObject(rep);
	return (h->remote & RL_NATIVE) != 0;
}

/* What one busy attempt found. */
struct busy {
	int64_t pttl; /* the holder's lease left, ms */
};

static int granted(struct shmkv__lock *h, const redisReply *rep, int64_t sent,
		   int64_t lease)
{
	const redisReply *rec = rep->element[1], *kind = rep->element[2];
	struct shmkv__rl_rec r;

	if (rec->type != REDIS_REPLY_STRING ||
	    kind->type != REDIS_REPLY_INTEGER || kind->integer < 0 ||
	    kind->integer > 2 || rec->len > sizeof(h->rec) ||
	    shmkv__rl_rec_parse(rec->str, rec->len, &r) != 0)
		return -EPROTO;
	memcpy(h->rec, rec->str, rec->len);
	h->rec_len = (uint16_t)rec->len;
	h->token = r.token;
	h->deadline_ms = sent + lease;
	h->pid = shmkv__self_pid();
	h->flags |= SHMKV__LOCK_HOLDING;
	return (int)kind->integer;
}

/*
 * The reply of an ACQUIRE whose reply was lost (the connection dropped or
 * timed out with it in flight): if the server granted it, the record
 * carries our nonce; give that grant back rather than leave the lock held
 * by nobody who knows it until its lease ends. Best effort.
 */
static void drop_lost_grant(struct shmkv_redis *r,
			    const struct shmkv__rl_keys *k,
			    const struct shmkv__rl_self *me, uint64_t nonce)
{
	const char *get[2] = { "GET", k->rec };
	size_t gl[2] = { 3, k->rec_len };
	struct shmkv__rl_rec rec;
	redisReply *rep = NULL, *rel = NULL;

	if (shmkv__rl_call(r, k->rec, k->rec_len, 2, get, gl, &rep) != 0)
		return;
	if (rep->type == REDIS_REPLY_STRING &&
	    shmkv__rl_rec_parse(rep->str, rep->len, &rec) == 0 &&
	    rec.nonce == nonce && rec.pid == me->pid &&
	    rec.start == me->start && strcmp(rec.boot, me->boot) == 0) {
		char tok[24];
		const char *av[2] = { rep->str, tok };
		size_t al[2] = { rep->len, 0 };

		al[1] = (size_t)snprintf(tok, sizeof(tok), "%llu",
					 (unsigned long long)rec.token);
		if (shmkv__rl_eval(r, SHMKV__RL_RELEASE, k, 2, av, al, &rel) ==
		    0)
			freeReplyObject(rel);
	}
	freeReplyObject(rep);
}

/* One ACQUIRE; @take: the exact record to replace ("" none).
 * Return: a grant kind, -EBUSY (*@cur: the holder's record, parsed), or
 * -errno. */
static int acquire_once(struct shmkv__lock *h, const struct shmkv__rl_keys *k,
			int64_t lease, const char *take, size_t take_len,
			struct shmkv__rl_rec *cur, char *cur_raw,
			size_t *cur_len, struct busy *b)
{
	struct shmkv_redis *r = redis_of(h);
	struct shmkv__rl_self me;
	char ls[24], ident[160];
	const char *av[5] = { ls, ident, NULL, take, "0" };
	size_t al[5];
	redisReply *rep;
	uint64_t nonce = shmkv__rl_nonce();
	int64_t sent;
	int rc = native_delifeq(h, k);

	if (rc < 0)
		return rc;
	av[4] = rc ? "1" : "0";
	shmkv__rl_self(&me);
	al[0] = (size_t)snprintf(ls, sizeof(ls), "%lld", (long long)lease);
	al[1] = (size_t)snprintf(ident, sizeof(ident), "%s:%u:%u:%llu:%llu",
				 me.boot, me.ns, me.pid,
				 (unsigned long long)me.start,
				 (unsigned long long)nonce);
	av[2] = me.host;
	al[2] = strlen(me.host);
	al[3] = take_len;
	al[4] = 1;
	sent = shmkv__mono_ms();
	rc = shmkv__rl_eval(r, SHMKV__RL_ACQUIRE, k, 5, av, al, &rep);
	if (rc == -ECONNRESET || rc == -ETIMEDOUT)
		drop_lost_grant(r, k, &me, nonce);
	if (rc)
		return rc;
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 ||
	    rep->element[0]->type != REDIS_REPLY_INTEGER) {
		rc = -EPROTO;
	} else if (rep->element[0]->integer == 1) {
		rc = granted(h, rep, sent, lease);
	} else {
		const redisReply *c = rep->element[1], *p = rep->element[2];

		rc = -EBUSY;
		if (c->type != REDIS_REPLY_STRING ||
		    p->type != REDIS_REPLY_INTEGER)
			rc = -EPROTO;
		else if (shmkv__rl_rec_parse(c->str, c->len, cur) != 0)
			rc = -EEXIST; /* a pattern lock, or anything else */
		else {
			/* Longer than any record we write: busy, never
			 * taken over (*cur_len 0). */
			*cur_len = 0;
			if (c->len <= SHMKV__LOCK_REC_CAP) {
				memcpy(cur_raw, c->str, c->len);
				*cur_len = c->len;
			}
			b->pttl = p->integer;
		}
	}
	freeReplyObject(rep);
	return rc;
}

/*
 * One try: acquire; if busy with a holder on this host that is dead,
 * replace exactly the record judged (so of several waiters that judged it,
 * one wins). Return: a grant kind, -EBUSY, -EDEADLK, or -errno.
 */
static int attempt(struct shmkv__lock *h, const struct shmkv__rl_keys *k,
		   int64_t lease, struct busy *b)
{
	struct shmkv__rl_rec cur;
	struct shmkv__rl_self me;
	char raw[sizeof(h->rec)];
	size_t raw_len = 0;
	int rc = acquire_once(h, k, lease, "", 0, &cur, raw, &raw_len, b);

	if (rc != -EBUSY)
		return rc;
	/* Our own grant, its lease running (the record exists). */
	if (holding(h) && raw_len == h->rec_len &&
	    memcmp(raw, h->rec, raw_len) == 0)
		return -EDEADLK;
	shmkv__rl_self(&me);
	if (raw_len == 0 || !shmkv__rl_holder_dead(&cur, &me))
		return -EBUSY;
	return acquire_once(h, k, lease, raw, raw_len, &cur, raw, &raw_len, b);
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int shmkv__redis_lock_timed_acquire(struct shmkv_lock *lk, int64_t lease_ms,
				    int64_t timeout_ms)
{
	struct shmkv__lock *h = shmkv__lock_of(lk);
	struct shmkv__rl_keys k;
	struct busy b = { 0 };
	int64_t end = -1;
	int rc = handle_keys(h, &k, true);

	if (rc)
		return rc;
	if (lease_ms < 1 || lease_ms > SHMKV_LOCK_LEASE_MAX ||
	    timeout_ms < SHMKV_LOCK_FOREVER)
		return -EINVAL;
	if (timeout_ms > 0 && timeout_ms <= INT64_MAX - shmkv__mono_ms())
		end = shmkv__mono_ms() + timeout_ms;
	for (unsigned round = 0;; round++) {
		int64_t nap, now;

		/* Before each try (a cached reading, unless a connection is
		 * to be made again: redis_policy.c). */
		rc = shmkv__rl_evict_check(redis_of(h),
					   SHMKV_REDIS_EVICTS_NONE);
		if (rc == 0)
			rc = attempt(h, &k, lease_ms, &b);
		if (rc != -EBUSY || timeout_ms == 0)
			return rc;
		/* Poll (no handle mutex is held here: each call takes it
		 * for its request alone): the backoff, cut to just past
		 * the holder's lease end and to our deadline. */
		nap = shmkv__rl_backoff(round);
		if (b.pttl >= 0 && b.pttl + 1 < nap)
			nap = b.pttl + 1;
		now = shmkv__mono_ms();
		if (end >= 0) {
			if (now >= end)
				return -ETIMEDOUT;
			if (end - now < nap)
				nap = end - now;
		}
		sleep_ms(nap);
	}
}

/* Maps NOT_MINE's codes. */
static int not_mine(long long code)
{
	return code == 1 ? SHMKV_LOCK_NOT_OWNER : SHMKV_LOCK_NOT_HELD;
}

/* Our record and token as script arguments ("", "0" if we hold none). */
static void mine_args(const struct shmkv__lock *h, const char **av, size_t *al,
		      char *tok, size_t cap)
{
	bool mine = holding(h);

	av[0] = h->rec;
	al[0] = mine ? h->rec_len : 0;
	av[1] = tok;
	al[1] = (size_t)snprintf(tok, cap, "%llu",
				 mine ? (unsigned long long)h->token : 0ull);
}

/* After a DELIFEQ that deleted nothing, whose is it? Two reads, not one
 * step: only the error's kind can be stale (the lock may change between
 * them), never the outcome, which DELIFEQ decided atomically. */
static int classify(struct shmkv__lock *h, const struct shmkv__rl_keys *k)
{
	const char *av[3] = { "EXISTS", k->rec, NULL };
	size_t al[3] = { 6, k->rec_len, 0 };
	redisReply *rep;
	int64_t t = 0;
	int rc = shmkv__rl_call(redis_of(h), k->rec, k->rec_len, 2, av, al,
				&rep);

	if (rc)
		return rc;
	rc = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1
		     ? SHMKV_LOCK_NOT_OWNER
		     : 0;
	freeReplyObject(rep);
	if (rc || !holding(h))
		return rc ? rc : SHMKV_LOCK_NOT_HELD;
	av[0] = "HGET", al[0] = 4, av[1] = k->ctr, al[1] = k->ctr_len;
	av[2] = "t", al[2] = 1;
	rc = shmkv__rl_call(redis_of(h), k->ctr, k->ctr_len, 3, av, al, &rep);
	if (rc)
		return rc;
	if (rep->type == REDIS_REPLY_STRING &&
	    (!shmkv__string2ll(rep->str, rep->len, &t) || t < 0))
		rc = -EBADMSG; /* as the scripts' BADCOUNTER */
	freeReplyObject(rep);
	if (rc)
		return rc;
	return (uint64_t)t > h->token ? SHMKV_LOCK_NOT_OWNER
				      : SHMKV_LOCK_NOT_HELD;
}

/* Release by Valkey's DELIFEQ on our exact record. */
static int release_native(struct shmkv__lock *h, const struct shmkv__rl_keys *k)
{
	const char *av[3] = { "DELIFEQ", k->rec, h->rec };
	size_t al[3] = { 7, k->rec_len, h->rec_len };
	redisReply *rep;
	int rc;

	if (!holding(h))
		return classify(h, k);
	rc = shmkv__rl_call(redis_of(h), k->rec, k->rec_len, 3, av, al, &rep);
	if (rc)
		return rc;
	if (rep->type == REDIS_REPLY_ERROR)
		rc = shmkv__rl_err(rep);
	else if (rep->type != REDIS_REPLY_INTEGER)
		rc = -EPROTO;
	else
		rc = rep->integer == 1 ? 0 : 1;
	freeReplyObject(rep);
	return rc == 1 ? classify(h, k) : rc;
}

int shmkv__redis_lock_release(struct shmkv_lock *lk)
{
	struct shmkv__lock *h = shmkv__lock_of(lk);
	struct shmkv__rl_keys k;
	const char *av[2];
	size_t al[2];
	char tok[24];
	redisReply *rep;
	int rc = handle_keys(h, &k, true);

	if (rc)
		return rc;
	rc = native_delifeq(h, &k);
	if (rc < 0)
		return rc; /* nothing was released: still holding */
	if (rc) {
		rc = release_native(h, &k);
		if (rc == 0 || rc == SHMKV_LOCK_NOT_OWNER ||
		    rc == SHMKV_LOCK_NOT_HELD)
			h->flags &= ~SHMKV__LOCK_HOLDING;
		return rc;
	}
	mine_args(h, av, al, tok, sizeof(tok));
	rc = shmkv__rl_eval(redis_of(h), SHMKV__RL_RELEASE, &k, 2, av, al,
			    &rep);
	if (rc)
		return rc; /* nothing known changed: still holding */
	if (rep->type != REDIS_REPLY_INTEGER)
		rc = -EPROTO;
	else
		rc = rep->integer == 0 ? 0 : not_mine(rep->integer);
	freeReplyObject(rep);
	if (rc != -EPROTO)
		h->flags &= ~SHMKV__LOCK_HOLDING;
	return rc;
}

/* EXTEND's reply: {0, new PTTL}, {1|2} NOT_MINE, {3} too long. */
static int extended(struct shmkv__lock *h, const redisReply *rep, int64_t sent)
{
	long long code;

	if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 ||
	    rep->element[0]->type != REDIS_REPLY_INTEGER)
		return -EPROTO;
	code = rep->element[0]->integer;
	if (code == 3)
		return -EINVAL;
	if (code != 0)
		return not_mine(code);
	if (rep->elements != 2 || rep->element[1]->type != REDIS_REPLY_INTEGER)
		return -EPROTO;
	/* The server's new PTTL, counted from when we sent it. */
	h->deadline_ms = sent + rep->element[1]->integer;
	return 0;
}

int shmkv__redis_lock_extend(struct shmkv_lock *lk, unsigned mode, int64_t ms)
{
	struct shmkv__lock *h = shmkv__lock_of(lk);
	struct shmkv__rl_keys k;
	char tok[24], mss[24], max[24];
	const char *av[5] = { NULL, NULL,
			      mode == SHMKV_LOCK_EXTEND_ADD ? "a" : "r", mss,
			      max };
	size_t al[5];
	redisReply *rep;
	int64_t sent;
	int rc = handle_keys(h, &k, true);

	if (rc)
		return rc;
	if (ms < 1 || ms > SHMKV_LOCK_LEASE_MAX ||
	    (mode != SHMKV_LOCK_EXTEND_ADD &&
	     mode != SHMKV_LOCK_EXTEND_REPLACE))
		return -EINVAL;
	mine_args(h, av, al, tok, sizeof(tok));
	al[2] = 1;
	al[3] = (size_t)snprintf(mss, sizeof(mss), "%lld", (long long)ms);
	al[4] = (size_t)snprintf(max, sizeof(max), "%lld",
				 (long long)SHMKV_LOCK_LEASE_MAX);
	sent = shmkv__mono_ms();
	rc = shmkv__rl_eval(redis_of(h), SHMKV__RL_EXTEND, &k, 5, av, al, &rep);
	if (rc)
		return rc;
	rc = extended(h, rep, sent);
	freeReplyObject(rep);
	return rc;
}

int shmkv__redis_lock_held(struct shmkv_lock *lk)
{
	struct shmkv__lock *h = shmkv__lock_of(lk);
	struct shmkv__rl_keys k;
	const char *av[2];
	size_t al[2];
	redisReply *rep;
	int held;

	if (!holding(h) || handle_keys(h, &k, false) != 0)
		return 0;
	/* One round trip: the record is still ours (not taken, not lost
	 * with a restarted server), and our conservative lease end. */
	av[0] = "GET";
	al[0] = 3;
	av[1] = k.rec;
	al[1] = k.rec_len;
	if (shmkv__rl_call(redis_of(h), k.rec, k.rec_len, 2, av, al, &rep))
		return 0;
	held = rep->type == REDIS_REPLY_STRING && rep->len == h->rec_len &&
	       memcmp(rep->str, h->rec, rep->len) == 0;
	freeReplyObject(rep);
	return held && shmkv__mono_ms() < h->deadline_ms;
}
