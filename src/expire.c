/*
 * expire.c - time to live: EXPIRE family, TTL/PTTL, PERSIST, GETEX.
 *
 * Deadlines are stored on CLOCK_BOOTTIME (see proc.c). Unix times given by
 * EXPIREAT/EXAT are converted once, at the call, by their distance from the
 * current Unix time; a wall-clock step after that does not move a deadline,
 * which is the point. Expired keys are deleted lazily by whoever touches
 * them and actively by shmkv_sweep() (maint.c).
 */
#include <errno.h>
#include <string.h>

#include "atomic.h"
#include "engine.h"
#include "expire.h"
#include "redis_typed.h"

/* A larger disagreement than this between the clocks' current offset and
 * the store's means the wall clock was stepped: re-sync. Below it (slew,
 * the gap between two clock reads) the store's offset is kept, so one
 * absolute time always maps to one deadline, in every process. */
#define CLOCK_RESYNC_MS 5

/*
 * Saturating int64 arithmetic. Every operand here comes from outside: the
 * clocks (a host without a real-time clock boots in 1970, so boot time may
 * be ahead of wall time), the caller's time (any int64 Redis accepts) and
 * the header's offset (any int64, if the segment is corrupted). A sum past
 * the int64 range is the farthest deadline there is, never a wrapped one.
 */
static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/*
 * The store's Unix-minus-boottime offset, never trusted blindly: the one
 * used is always within CLOCK_RESYNC_MS of what the clocks say now; a
 * header offset farther away (a stepped wall clock, or a corrupted one,
 * however extreme) is replaced.
 */
static int64_t clock_offset(struct shmkv *kv, int64_t unix_now,
			    int64_t boot_now)
{
	int64_t *shared =
		&((struct shmkv_header_shm *)kv->base)->clock_offset_ms;
	int64_t now_off = sat_sub(unix_now, boot_now);
	/* Relaxed: the offset is a self-contained value, published by the
	 * creator before the segment got its name. */
	int64_t off = (int64_t)shmkv__load_relaxed((uint64_t *)shared);
	int64_t drift = sat_sub(off, now_off);

	if (drift > CLOCK_RESYNC_MS || drift < -CLOCK_RESYNC_MS) {
		/* Full barrier, and one winner: all agree on the new offset. */
		if (!kv->readonly)
			shmkv__cas_full((uint64_t *)shared, (uint64_t)off,
					(uint64_t)now_off);
		off = now_off;
	}
	return off;
}

int shmkv__deadline(struct shmkv *kv, int64_t t, bool seconds, bool absolute,
		    enum shmkv__deadline_rule rule, int64_t *deadline)
{
	int64_t unix_now, boot_now, earliest, ms = t;

	/* The checks and their order are Redis 7's (t_string.c, expire.c). */
	if (kv == NULL)
		return -EINVAL;
	if (rule != SHMKV__RULE_EXPIRE && t <= 0)
		return -EINVAL;
	if (seconds) {
		if (t > INT64_MAX / 1000 || t < INT64_MIN / 1000)
			return -EINVAL;
		ms = t * 1000;
	}
	unix_now = shmkv__unix_ms();
	boot_now = shmkv__now_ms();
	if (!absolute) {
		/* Redis's bound: now + ms must fit, now on the wall clock. */
		if (ms > sat_sub(INT64_MAX, unix_now))
			return -EINVAL;
		/* now + ms <= now: only EXPIRE's rules let ms <= 0 through. */
		*deadline = ms <= 0 ? SHMKV__DEADLINE_PAST
				    : sat_add(boot_now, ms);
		return 0;
	}
	/* Past or not is decided on the wall clock, as Redis does. */
	if (ms < unix_now || (ms == unix_now && rule != SHMKV__RULE_SET)) {
		*deadline = SHMKV__DEADLINE_PAST;
		return 0;
	}
	/* Within the re-sync tolerance of now: due, but not yet past (a
	 * future Unix time stays at least 1 ms ahead, as on the wall). */
	earliest = sat_add(boot_now, ms > unix_now);
	*deadline = sat_sub(ms, clock_offset(kv, unix_now, boot_now));
	if (*deadline < earliest)
		*deadline = earliest;
	return 0;
}

/*
 * What every command that sets a key's deadline decides once it has decided
 * to: a deadline already past deletes the key (Redis deletes rather than
 * store what would be expired at once); any other one, 0 (none) included,
 * keeps the value and stores the new deadline.
 */
static int retime(struct shmkv_op *op, int64_t deadline)
{
	if (deadline == SHMKV__DEADLINE_PAST)
		return SHMKV_ACT_DELETE;
	op->new_from_old = true;
	op->new_deadline_ms = deadline;
	return SHMKV_ACT_STORE;
}

struct expire_ctx {
	unsigned flags;
	int64_t deadline;
};

/* NX/XX/GT/LT as Redis 7: a key without TTL has an infinite one. */
static bool expire_allowed(unsigned flags, const struct shmkv_cur *cur,
			   int64_t deadline)
{
	bool has_ttl = cur->deadline_ms != 0;

	if ((flags & SHMKV_EXPIRE_NX) && has_ttl)
		return false;
	if ((flags & SHMKV_EXPIRE_XX) && !has_ttl)
		return false;
	if ((flags & SHMKV_EXPIRE_GT) &&
	    (!has_ttl || deadline <= cur->deadline_ms))
		return false;
	if ((flags & SHMKV_EXPIRE_LT) && has_ttl &&
	    deadline >= cur->deadline_ms)
		return false;
	return true;
}

static int expire_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	struct expire_ctx *c = op->ctx;

	op->result = cur->exists && expire_allowed(c->flags, cur, c->deadline);
	if (!op->result)
		return SHMKV_ACT_KEEP;
	return retime(op, c->deadline);
}

int shmkv_expire(shmkv_t *kv, const void *key, size_t klen,
		 enum shmkv_expire_unit unit, unsigned flags, int64_t t)
{
	struct expire_ctx c = { .flags = flags };
	struct shmkv_op op = { .decide = expire_decide, .ctx = &c };
	unsigned cmp = flags &
		       (SHMKV_EXPIRE_XX | SHMKV_EXPIRE_GT | SHMKV_EXPIRE_LT);
	int err;

	/* A Redis handle's call (before the deadline, which is the server's
	 * to compute); no fast path here pays the test. */
	if (shmkv__is_remote(kv))
		return shmkv__redis_expire(kv, key, klen, unit, flags, t);
	if ((unsigned)unit > SHMKV_EXPIRE_AT_MSEC || (flags & ~0xfu) ||
	    ((flags & SHMKV_EXPIRE_NX) && cmp) ||
	    ((flags & SHMKV_EXPIRE_GT) && (flags & SHMKV_EXPIRE_LT)))
		return -EINVAL;
	err = shmkv__deadline(
		kv, t, unit == SHMKV_EXPIRE_SEC || unit == SHMKV_EXPIRE_AT_SEC,
		unit >= SHMKV_EXPIRE_AT_SEC, SHMKV__RULE_EXPIRE, &c.deadline);
	if (err)
		return err;
	return shmkv__run(kv, key, klen, &op);
}

static int pttl_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	int64_t *ms = op->ctx;

	if (!cur->exists)
		*ms = -2;
	else if (cur->deadline_ms == 0)
		*ms = -1;
	else
		*ms = cur->deadline_ms > cur->now_ms
			      ? sat_sub(cur->deadline_ms, cur->now_ms)
			      : 0;
	op->result = 0;
	return SHMKV_ACT_KEEP;
}

int shmkv_pttl(shmkv_t *kv, const void *key, size_t klen, int64_t *ms)
{
	struct shmkv_op op = { .decide = pttl_decide,
			       .ctx = ms,
			       .read_only = true };

	if (shmkv__is_remote(kv))
		return shmkv__redis_pttl(kv, key, klen, ms);
	if (ms == NULL)
		return -EINVAL;
	return shmkv__run(kv, key, klen, &op);
}

int shmkv_ttl(shmkv_t *kv, const void *key, size_t klen, int64_t *sec)
{
	int64_t ms;
	int err;

	if (sec == NULL)
		return -EINVAL;
	err = shmkv_pttl(kv, key, klen, &ms);
	if (err)
		return err;
	/* Redis rounds to the nearest second: (ms + 500) / 1000, which
	 * would overflow near INT64_MAX. */
	*sec = ms < 0 ? ms : ms / 1000 + (ms % 1000 >= 500);
	return 0;
}

static int persist_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	op->result = cur->exists && cur->deadline_ms != 0;
	if (!op->result)
		return SHMKV_ACT_KEEP;
	return retime(op, 0);
}

int shmkv_persist(shmkv_t *kv, const void *key, size_t klen)
{
	struct shmkv_op op = { .decide = persist_decide };

	if (shmkv__is_remote(kv))
		return shmkv__redis_persist(kv, key, klen);
	return shmkv__run(kv, key, klen, &op);
}

struct getex_ctx {
	enum shmkv_getex_mode mode;
	int64_t deadline;
	struct shmkv_value *out;
};

static int getex_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	struct getex_ctx *c = op->ctx;
	int err = shmkv__need_copy(op, cur);

	if (c->out != NULL)
		c->out->len = cur->exists ? cur->len : 0;
	if (err)
		return err;
	op->result = cur->exists;
	if (!cur->exists || c->mode == SHMKV_GETEX_KEEP ||
	    (c->mode == SHMKV_GETEX_PERSIST && cur->deadline_ms == 0))
		return SHMKV_ACT_KEEP;
	return retime(op, c->deadline);
}

int shmkv_getex(shmkv_t *kv, const void *key, size_t klen,
		enum shmkv_getex_mode mode, int64_t t, struct shmkv_value *out)
{
	struct getex_ctx c = { .mode = mode, .out = out };
	struct shmkv_op op = { .decide = getex_decide, .ctx = &c };
	size_t len;
	int err = 0;

	if (shmkv__is_remote(kv))
		return shmkv__redis_getex(kv, key, klen, mode, t, out);
	if ((unsigned)mode > SHMKV_GETEX_PERSIST)
		return -EINVAL;
	if (mode >= SHMKV_GETEX_EX && mode <= SHMKV_GETEX_PXAT)
		err = shmkv__deadline(kv, t,
				      mode == SHMKV_GETEX_EX ||
					      mode == SHMKV_GETEX_EXAT,
				      mode >= SHMKV_GETEX_EXAT,
				      SHMKV__RULE_GETEX, &c.deadline);
	if (err)
		return err;
	op.read_only = mode == SHMKV_GETEX_KEEP;
	op.want_bytes = out != NULL;
	op.buf = out ? out->buf : NULL;
	op.cap = out ? out->cap : 0;
	len = out ? out->len : 0;
	err = shmkv__run(kv, key, klen, &op);
	/* A decide() before a lost race or a failed store reported a
	 * length: put back on any error but -ENOBUFS's (shmkv.h). */
	if (err < 0 && err != -ENOBUFS && out != NULL)
		out->len = len;
	return err;
}
