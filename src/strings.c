/*
 * strings.c - SET and friends, GET, GETSET, GETDEL, DEL, EXISTS, DELIFEQ,
 * and the INCR family on a prepared key: each tries its straight-line path
 * (strings_fast.c), then the engine with a decide() callback. The plain
 * commands are in strings_plain.c.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "engine.h"
#include "expire.h"
#include "intconv.h"
#include "redis_typed.h"
#include "strings_fast.h"

/*
 * On a Redis handle (redis_typed.h) a prepared key is the key it keeps,
 * sent as the plain call sends it: the *_run functions below, the slow
 * paths every shmkv_key_* call of such a handle reaches (its reference
 * never names a slot), ask first, so that no fast path pays the test.
 */
#define REMOTE_REF(kv, ref, call)                                              \
	do {                                                                   \
		if (shmkv__is_remote(kv)) {                                    \
			const void *key;                                       \
			size_t klen;                                           \
			int e_ = shmkv__redis_ref_key(kv, ref, &key, &klen);   \
                                                                               \
			return e_ ? e_ : (call);                               \
		}                                                              \
	} while (0)

/* Points the op's copy buffer at the caller's value (or nowhere). */
static void want_value(struct shmkv_op *op, struct shmkv_value *v)
{
	op->want_bytes = v != NULL;
	op->buf = v ? v->buf : NULL;
	op->cap = v ? v->cap : 0;
}

/* Reports the current value to the caller: fails if it does not fit. */
static int give_value(struct shmkv_op *op, struct shmkv_value *v,
		      const struct shmkv_cur *cur)
{
	int err = shmkv__need_copy(op, cur);

	if (err == 0 && v != NULL)
		v->len = cur->exists ? cur->len : 0;
	else if (err != 0 && v != NULL)
		v->len = cur->len;
	return err;
}

/*
 * Runs @op, whose decide() reports the old value's length into @v: a
 * decide() that ran before a lost race, or before a store that failed
 * (-ENOMEM, -ENOSPC, -EAGAIN), must not leave its length behind, so @v's
 * len is put back on any error but -ENOBUFS (which reports the length the
 * value needs). The bytes of v->buf are scratch either way (shmkv.h).
 */
static int run_keeping_len(shmkv_t *kv, struct shmkv_keyref *ref,
			   struct shmkv_op *op, struct shmkv_value *v)
{
	size_t len = v != NULL ? v->len : 0;
	int rc = shmkv__run_ref(kv, ref, op);

	if (rc < 0 && rc != -ENOBUFS && v != NULL)
		v->len = len;
	return rc;
}

struct set_ctx {
	unsigned flags;
	int64_t deadline; /* 0: none; SHMKV__DEADLINE_PAST: already expired */
	struct shmkv_value *old;
};

static int set_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	struct set_ctx *c = op->ctx;
	/* cur->exists is false for an expired key: it counts as missing. */
	bool prevented = ((c->flags & SHMKV_SET_NX) && cur->exists) ||
			 ((c->flags & SHMKV_SET_XX) && !cur->exists);

	if (c->flags & SHMKV_SET_GET) {
		int err = give_value(op, c->old, cur);

		if (err)
			return err;
	}
	/* With GET the result is GET's (an old value or none), as Redis 7
	 * replies: whether the value was set then follows from it and the
	 * flags alone, since only NX and XX prevent a SET, and each exactly
	 * when the old value's existence says so. */
	op->result = (c->flags & SHMKV_SET_GET) ? cur->exists : !prevented;
	if (prevented)
		return SHMKV_ACT_KEEP;
	if (c->deadline == SHMKV__DEADLINE_PAST)
		return SHMKV_ACT_DELETE; /* set, and expired at once */
	op->new_deadline_ms = (c->flags & SHMKV_SET_KEEPTTL) && cur->exists
				      ? cur->deadline_ms
				      : c->deadline;
	return SHMKV_ACT_STORE;
}

#define SET_EXPIRY_FLAGS                                                       \
	(SHMKV_SET_EX | SHMKV_SET_PX | SHMKV_SET_EXAT | SHMKV_SET_PXAT |       \
	 SHMKV_SET_KEEPTTL)
#define SET_ALL_FLAGS                                                          \
	(SET_EXPIRY_FLAGS | SHMKV_SET_NX | SHMKV_SET_XX | SHMKV_SET_GET)

/* SET's option rules, as Redis's parseExtendedStringArgumentsOrReply. */
static int set_deadline(struct shmkv *kv, unsigned flags, int64_t expire,
			int64_t *deadline)
{
	unsigned ex = flags & SET_EXPIRY_FLAGS;

	*deadline = 0;
	if ((flags & ~SET_ALL_FLAGS) || (ex & (ex - 1)) ||
	    ((flags & SHMKV_SET_NX) && (flags & SHMKV_SET_XX)))
		return -EINVAL;
	if (ex == 0 || ex == SHMKV_SET_KEEPTTL)
		return 0;
	return shmkv__deadline(kv, expire,
			       ex == SHMKV_SET_EX || ex == SHMKV_SET_EXAT,
			       ex == SHMKV_SET_EXAT || ex == SHMKV_SET_PXAT,
			       SHMKV__RULE_SET, deadline);
}

/*
 * The engine's way, for what the straight-line path leaves. Here and below
 * such functions are kept apart (noinline), so that a command the fast path
 * answers does not pay for building the op.
 */
static __attribute__((noinline)) int
set_run(shmkv_t *kv, struct shmkv_keyref *ref, const void *val, size_t vlen,
	unsigned flags, int64_t expire, struct shmkv_value *old)
{
	struct set_ctx c = { .flags = flags, .old = old };
	struct shmkv_op op = { .decide = set_decide, .ctx = &c };
	int err;

	REMOTE_REF(
		kv, ref,
		shmkv__redis_set(kv, key, klen, val, vlen, flags, expire, old));
	err = set_deadline(kv, flags, expire, &c.deadline);
	if (err)
		return err;
	if ((flags & SHMKV_SET_GET) && old == NULL)
		return -EINVAL;
	if (flags & SHMKV_SET_GET)
		want_value(&op, old);
	op.new_bytes = val;
	op.new_len = vlen;
	return run_keeping_len(kv, ref, &op, old);
}

int shmkv_key_set(shmkv_t *kv, struct shmkv_keyref *ref, const void *val,
		  size_t vlen, unsigned flags, int64_t expire,
		  struct shmkv_value *old)
{
	struct shmkv__fast f;
	int r;

	if (flags == 0 && shmkv__fast_of_ref(kv, ref, true, &f) &&
	    (r = shmkv__fast_set(&f, val, vlen)) != SHMKV__FAST_SLOW)
		return shmkv__fast_done(&f, r);
	return set_run(kv, ref, val, vlen, flags, expire, old);
}

int shmkv__key_setnx_int(shmkv_t *kv, struct shmkv_keyref *ref, int64_t i)
{
	struct shmkv__fast f;
	int r;

	if (i < VAL_INT_MIN || i > VAL_INT_MAX ||
	    !shmkv__fast_of_ref(kv, ref, true, &f))
		return -EAGAIN;
	r = shmkv__fast_setnx_int(&f, i);
	return r != SHMKV__FAST_SLOW ? shmkv__fast_done(&f, r) : -EAGAIN;
}

int shmkv_key_setnx(shmkv_t *kv, struct shmkv_keyref *ref, const void *val,
		    size_t vlen)
{
	struct shmkv__fast f;
	int64_t i;
	int r;

	/* Fast paths: a value that is an integer's decimal form is stored as
	 * that inline integer; a string, in the slot. */
	if (shmkv__inline_int_of(kv, val, vlen, &i)) {
		if ((r = shmkv__key_setnx_int(kv, ref, i)) != -EAGAIN)
			return r;
	} else if (shmkv__fast_of_ref(kv, ref, true, &f) &&
		   (r = shmkv__fast_setnx_bytes(&f, val, vlen)) !=
			   SHMKV__FAST_SLOW) {
		return shmkv__fast_done(&f, r);
	}
	return shmkv_key_set(kv, ref, val, vlen, SHMKV_SET_NX, 0, NULL);
}

int shmkv_key_getset(shmkv_t *kv, struct shmkv_keyref *ref, const void *val,
		     size_t vlen, struct shmkv_value *old)
{
	struct shmkv__fast f;
	int64_t i;
	int r;

	if (shmkv__inline_int_of(kv, val, vlen, &i) &&
	    shmkv__fast_of_ref(kv, ref, true, &f) &&
	    (r = shmkv__fast_getset_int(&f, i, old)) != SHMKV__FAST_SLOW)
		return shmkv__fast_done(&f, r);
	return shmkv_key_set(kv, ref, val, vlen, SHMKV_SET_GET, 0, old);
}

/* GET, EXISTS: read only. */
static int get_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	int err = give_value(op, op->ctx, cur);

	if (err)
		return err;
	op->result = cur->exists;
	return SHMKV_ACT_KEEP;
}

static __attribute__((noinline)) int
get_run(shmkv_t *kv, struct shmkv_keyref *ref, struct shmkv_value *out)
{
	struct shmkv_op op = { .decide = get_decide,
			       .ctx = out,
			       .read_only = true };

	REMOTE_REF(kv, ref, shmkv__redis_get(kv, key, klen, out));
	want_value(&op, out);
	return shmkv__run_ref(kv, ref, &op);
}

int shmkv_key_get(shmkv_t *kv, struct shmkv_keyref *ref,
		  struct shmkv_value *out)
{
	struct shmkv__fast f;
	int r;

	/* A read: a read-only handle takes the fast path too. */
	if (shmkv__fast_of_ref(kv, ref, false, &f) &&
	    (r = shmkv__fast_get(&f, out)) != SHMKV__FAST_SLOW)
		return shmkv__fast_done(&f, r);
	return get_run(kv, ref, out);
}

/* GET as an integer (shmkv_key_get_int): read only. */
struct get_int_ctx {
	int64_t *out;
	unsigned char digits[SHMKV_INT_STRLEN];
};

/*
 * The value as INCR would take it. The first read asks for no bytes, so an
 * inline integer is never formatted; a block short enough to be an integer
 * sends the engine back for its bytes (SHMKV_ACT_RETRY reads the value
 * again, whatever it has become meanwhile).
 */
static int get_int_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	struct get_int_ctx *c = op->ctx;
	int64_t v = 0;

	op->result = 0;
	if (!cur->exists)
		return SHMKV_ACT_KEEP;
	if (!cur->is_int && cur->len > sizeof(c->digits))
		return -EDOM;
	if (!cur->is_int && !op->want_bytes) {
		op->want_bytes = true;
		op->buf = c->digits;
		op->cap = sizeof(c->digits);
		return SHMKV_ACT_RETRY;
	}
	if (cur->is_int)
		v = cur->ival;
	else if (!shmkv__string2ll((const char *)cur->bytes, cur->len, &v))
		return -EDOM;
	*c->out = v;
	op->result = 1;
	return SHMKV_ACT_KEEP;
}

/* The engine's way, for what the fast path does not answer. */
static __attribute__((noinline)) int
get_int_run(shmkv_t *kv, struct shmkv_keyref *ref, int64_t *out)
{
	struct get_int_ctx c = { .out = out };
	struct shmkv_op op = { .decide = get_int_decide,
			       .ctx = &c,
			       .read_only = true };

	REMOTE_REF(kv, ref, shmkv__redis_get_int(kv, key, klen, out));
	return shmkv__run_ref(kv, ref, &op);
}

int shmkv_key_get_int(shmkv_t *kv, struct shmkv_keyref *ref, int64_t *out)
{
	struct shmkv__fast f;
	int r;

	if (out == NULL)
		return -EINVAL;
	if (shmkv__fast_of_ref(kv, ref, false, &f) &&
	    (r = shmkv__fast_get_int(&f, out)) != SHMKV__FAST_SLOW)
		return shmkv__fast_done(&f, r);
	return get_int_run(kv, ref, out);
}

/* GETDEL, DEL: delete what is there. */
static int del_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	int err = give_value(op, op->ctx, cur);

	if (err)
		return err;
	op->result = cur->exists;
	return cur->exists ? SHMKV_ACT_DELETE : SHMKV_ACT_KEEP;
}

/* The engine's way for GETDEL, and for the DELs the fast path leaves
 * (kept apart, so that a DEL it answers builds no op). */
static __attribute__((noinline)) int
getdel_run(shmkv_t *kv, struct shmkv_keyref *ref, struct shmkv_value *old)
{
	struct shmkv_op op = { .decide = del_decide, .ctx = old };

	/* DEL when no value is wanted: GETDEL refuses a key of another type,
	 * which DEL deletes. */
	REMOTE_REF(kv, ref,
		   old != NULL ? shmkv__redis_getdel(kv, key, klen, old)
			       : shmkv__redis_del(kv, key, klen));
	want_value(&op, old);
	return run_keeping_len(kv, ref, &op, old);
}

int shmkv_key_getdel(shmkv_t *kv, struct shmkv_keyref *ref,
		     struct shmkv_value *old)
{
	return getdel_run(kv, ref, old);
}

int shmkv_key_del(shmkv_t *kv, struct shmkv_keyref *ref)
{
	struct shmkv__fast f;
	int r;

	if (shmkv__fast_of_ref(kv, ref, true, &f) &&
	    (r = shmkv__fast_del(&f)) != SHMKV__FAST_SLOW)
		return shmkv__fast_done(&f, r);
	return getdel_run(kv, ref, NULL);
}

static int delifeq_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	op->result = cur->exists && cur->equal;
	return op->result ? SHMKV_ACT_DELETE : SHMKV_ACT_KEEP;
}

static __attribute__((noinline)) int
delifeq_run(shmkv_t *kv, struct shmkv_keyref *ref, const void *val, size_t vlen)
{
	/* cmp must be non-NULL to be compared, even for an empty value. */
	struct shmkv_op op = { .decide = delifeq_decide,
			       .cmp = val ? val : "",
			       .cmp_len = vlen };

	REMOTE_REF(kv, ref, shmkv__redis_delifeq(kv, key, klen, val, vlen));
	return shmkv__run_ref(kv, ref, &op);
}

int shmkv_key_delifeq(shmkv_t *kv, struct shmkv_keyref *ref, const void *val,
		      size_t vlen)
{
	struct shmkv__fast f;
	int64_t i;
	int r;

	if (val == NULL && vlen > 0)
		return -EINVAL;
	if (shmkv__fast_of_ref(kv, ref, true, &f) &&
	    (r = shmkv__inline_int_of(kv, val, vlen, &i)
			 ? shmkv__fast_delifeq_int(&f, i)
			 : shmkv__fast_delifeq_bytes(&f, val, vlen)) !=
		    SHMKV__FAST_SLOW)
		return shmkv__fast_done(&f, r);
	return delifeq_run(kv, ref, val, vlen);
}

struct incr_ctx {
	int64_t delta;
};

static int incr_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	struct incr_ctx *c = op->ctx;
	int64_t base = 0;

	if (cur->exists && cur->is_int)
		base = cur->ival;
	else if (cur->exists &&
		 (cur->len > op->cap ||
		  !shmkv__string2ll((const char *)cur->bytes, cur->len, &base)))
		return -EDOM;
	if (__builtin_add_overflow(base, c->delta, &op->new_int))
		return -EOVERFLOW;
	op->new_is_int = true;
	/* INCR keeps the TTL (Redis replaces the value in place). */
	op->new_deadline_ms = cur->exists ? cur->deadline_ms : 0;
	op->result = 0;
	return SHMKV_ACT_STORE;
}

static __attribute__((noinline)) int incrby_run(shmkv_t *kv,
						struct shmkv_keyref *ref,
						int64_t delta, int64_t *result)
{
	unsigned char digits[SHMKV_INT_STRLEN];
	struct incr_ctx c = { .delta = delta };
	struct shmkv_op op = { .decide = incr_decide,
			       .ctx = &c,
			       .want_bytes = true,
			       .buf = digits,
			       .cap = sizeof(digits) };
	int rc;

	REMOTE_REF(kv, ref, shmkv__redis_incrby(kv, key, klen, delta, result));
	rc = shmkv__run_ref(kv, ref, &op);
	/* Only now: a decide() before a lost race computed a sum that its
	 * retry may refuse (-EOVERFLOW, -EDOM), and *@result must then be
	 * as the caller left it. op.new_int is the stored value's. */
	if (rc == 0 && result != NULL)
		*result = op.new_int;
	return rc;
}

int shmkv_key_incrby(shmkv_t *kv, struct shmkv_keyref *ref, int64_t delta,
		     int64_t *result)
{
	struct shmkv__fast f;
	int r;

	if (shmkv__fast_of_ref(kv, ref, true, &f) &&
	    (r = shmkv__fast_incr(&f, delta, result)) != SHMKV__FAST_SLOW)
		return shmkv__fast_done(&f, r);
	return incrby_run(kv, ref, delta, result);
}
