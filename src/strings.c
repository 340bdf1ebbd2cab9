/*
 * strings.c - SET and friends, GET, GETSET, GETDEL, DEL, EXISTS, DELIFEQ,
 * and the INCR family: each a decide() callback for the engine.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "engine.h"
#include "expire.h"
#include "fault.h"
#include "intconv.h"

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
 * The straight-line paths. A command on a prepared key whose slot is known
 * and whose value word is an inline integer or NONE (no block, no TTL, no
 * insert) needs nothing of the engine: one load of the value word checked
 * against the slot's state, and for a write one CAS expecting that word,
 * the same linearization points as the engine's (engine.c). Every other
 * case, and a CAS lost FAST_TRIES times in a row, takes the general path,
 * which decides afresh: a lost race is never an error.
 */
#define FAST_SLOW  INT_MIN /* not decided here: take the general path */
#define FAST_TRIES 4

/* GET's reply for an inline integer: its decimal form into @out. */
/* Copies @n <= SHMKV_INT_STRLEN bytes with fixed-size moves (overlapping
 * where @n is not a multiple), which the compiler inlines: a libc memcpy
 * call would cost as much as printing the integer. */
static inline void copy_digits(void *dst, const char *src, size_t n)
{
	unsigned char *d = dst;

	if (n >= 8) {
		memcpy(d, src, 8);
		if (n > 16)
			memcpy(d + 8, src + 8, 8);
		memcpy(d + n - 8, src + n - 8, 8);
	} else if (n >= 4) {
		memcpy(d, src, 4);
		memcpy(d + n - 4, src + n - 4, 4);
	} else {
		for (size_t i = 0; i < n; i++)
			d[i] = (unsigned char)src[i];
	}
}

static int give_int(struct shmkv_value *out, int64_t v)
{
	char digits[SHMKV_INT_STRLEN];
	size_t n;

	if (out == NULL)
		return 1;
	if (out->cap >= SHMKV_INT_STRLEN) {
		out->len = shmkv__ll2string(out->buf, v);
		return 1;
	}
	/* As the engine: what fits is copied, len says what it needed. */
	n = shmkv__ll2string(digits, v);
	copy_digits(out->buf, digits, n < out->cap ? n : out->cap);
	out->len = n;
	return n > out->cap ? -ENOBUFS : 1;
}

/*
 * GET's reply for a value block without a TTL: a consistent copy (the
 * block's generation checked after it, block.c) of what value word @w
 * named when it was loaded, which is the linearization point, as in the
 * engine. A TTL (it needs the clock), a block freed under us, or anything
 * corrupt is the general path's: it decides afresh, or reports it.
 */
static int give_block(const shmkv_t *kv, uint64_t w, struct shmkv_value *out)
{
	struct shmkv_block_view view;

	if (shmkv__block_read(kv, w, out != NULL ? out->buf : NULL,
			      out != NULL ? out->cap : 0, &view) != 0 ||
	    view.deadline_ms != 0)
		return FAST_SLOW;
	if (out == NULL)
		return 1;
	/* As the engine: what fits is copied, len says what it needed. */
	out->len = view.len;
	return view.len > out->cap ? -ENOBUFS : 1;
}

/* GET and EXISTS of an inline integer, a block without TTL, or nothing. */
static int get_fast(shmkv_t *kv, struct shmkv_keyref *ref,
		    struct shmkv_value *out)
{
	uint64_t w;
	uint32_t ver;

	SHMKV_PAUSE_POINT("fast_found");
	if ((out != NULL && out->buf == NULL && out->cap > 0) ||
	    !shmkv__fast_load(kv, ref, &w, false))
		return FAST_SLOW;
	ver = SLOT_VERSION(shmkv__kref(ref)->state);
	if (shmkv__word_is_int(w, ver))
		return give_int(out, VAL_INT_VALUE(w));
	if (VAL_KIND(w) == VAL_BLOCK) {
		SHMKV_PAUSE_POINT("fast_loaded");
		return give_block(kv, w, out);
	}
	if (!shmkv__word_is_none(w, ver))
		return FAST_SLOW;
	if (out != NULL)
		out->len = 0;
	return 0;
}

/* Stores inline integer @i over an inline integer or NONE (plain SET).
 * Return: 1, or FAST_SLOW. */
static int set_int_fast(shmkv_t *kv, struct shmkv_keyref *ref, int64_t i)
{
	for (int n = 0; n < FAST_TRIES; n++) {
		uint64_t w;
		uint32_t ver;

		if (!shmkv__fast_load(kv, ref, &w, true))
			return FAST_SLOW;
		ver = SLOT_VERSION(shmkv__kref(ref)->state);
		if (!shmkv__word_is_int(w, ver) && !shmkv__word_is_none(w, ver))
			return FAST_SLOW;
		SHMKV_PAUSE_POINT("fast_loaded");
		if (shmkv__fast_cas(kv, ref, w, VAL_INT_WORD(ver, i)))
			return 1;
	}
	return FAST_SLOW;
}

/*
 * GETSET of inline integer @i over an inline integer or NONE: the old one
 * is printed after the CAS, so only into a buffer that takes any integer
 * (a short one may refuse the old value, and then nothing may change).
 * Return: 1 (had a value), 0 (had none), or FAST_SLOW.
 */
static int getset_int_fast(shmkv_t *kv, struct shmkv_keyref *ref, int64_t i,
			   struct shmkv_value *old)
{
	if (old == NULL || old->buf == NULL || old->cap < SHMKV_INT_STRLEN)
		return FAST_SLOW;
	for (int n = 0; n < FAST_TRIES; n++) {
		uint64_t w;
		uint32_t ver;

		if (!shmkv__fast_load(kv, ref, &w, true))
			return FAST_SLOW;
		ver = SLOT_VERSION(shmkv__kref(ref)->state);
		if (!shmkv__word_is_int(w, ver) && !shmkv__word_is_none(w, ver))
			return FAST_SLOW;
		SHMKV_PAUSE_POINT("fast_loaded");
		if (!shmkv__fast_cas(kv, ref, w, VAL_INT_WORD(ver, i)))
			continue;
		if (shmkv__word_is_int(w, ver))
			return give_int(old, VAL_INT_VALUE(w));
		old->len = 0;
		return 0;
	}
	return FAST_SLOW;
}

/* Is @val the canonical decimal form of an inline integer? */
static bool inline_int_of(const shmkv_t *kv, const void *val, size_t vlen,
			  int64_t *i)
{
	return kv != NULL && (val != NULL || vlen == 0) &&
	       vlen <= kv->geo.value_max && shmkv__string2ll(val, vlen, i) &&
	       *i >= VAL_INT_MIN && *i <= VAL_INT_MAX;
}

/* INCRBY of an inline integer or of nothing, staying inline. */
static int incr_fast(shmkv_t *kv, struct shmkv_keyref *ref, int64_t delta,
		     int64_t *result)
{
	for (int n = 0; n < FAST_TRIES; n++) {
		uint64_t w;
		uint32_t ver;
		int64_t v = 0;

		if (!shmkv__fast_load(kv, ref, &w, true))
			return FAST_SLOW;
		ver = SLOT_VERSION(shmkv__kref(ref)->state);
		if (shmkv__word_is_int(w, ver))
			v = VAL_INT_VALUE(w);
		else if (!shmkv__word_is_none(w, ver))
			return FAST_SLOW;
		/* Leaving the inline range (or int64's) is the engine's. */
		if (__builtin_add_overflow(v, delta, &v) || v < VAL_INT_MIN ||
		    v > VAL_INT_MAX)
			return FAST_SLOW;
		SHMKV_PAUSE_POINT("fast_loaded");
		if (shmkv__fast_cas(kv, ref, w, VAL_INT_WORD(ver, v))) {
			if (result)
				*result = v;
			return 0;
		}
	}
	return FAST_SLOW;
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
	int err = set_deadline(kv, flags, expire, &c.deadline);

	if (err)
		return err;
	if ((flags & SHMKV_SET_GET) && old == NULL)
		return -EINVAL;
	if (flags & SHMKV_SET_GET)
		want_value(&op, old);
	op.new_bytes = val;
	op.new_len = vlen;
	return shmkv__run_ref(kv, ref, &op);
}

int shmkv_key_set(shmkv_t *kv, struct shmkv_keyref *ref, const void *val,
		  size_t vlen, unsigned flags, int64_t expire,
		  struct shmkv_value *old)
{
	int64_t i;
	int r;

	if (flags == 0 && inline_int_of(kv, val, vlen, &i) &&
	    (r = set_int_fast(kv, ref, i)) != FAST_SLOW)
		return r;
	return set_run(kv, ref, val, vlen, flags, expire, old);
}

int shmkv__key_setnx_int(shmkv_t *kv, struct shmkv_keyref *ref, int64_t i)
{
	uint64_t w;
	uint32_t ver;

	/* An inline integer (never with a TTL) exists; a NONE takes an
	 * inline integer in one CAS. */
	if (i < VAL_INT_MIN || i > VAL_INT_MAX ||
	    !shmkv__fast_load(kv, ref, &w, true))
		return -EAGAIN;
	ver = SLOT_VERSION(shmkv__kref(ref)->state);
	if (shmkv__word_is_int(w, ver))
		return 0;
	SHMKV_PAUSE_POINT("fast_loaded");
	if (shmkv__word_is_none(w, ver) &&
	    shmkv__fast_cas(kv, ref, w, VAL_INT_WORD(ver, i)))
		return 1;
	return -EAGAIN;
}

int shmkv_key_setnx(shmkv_t *kv, struct shmkv_keyref *ref, const void *val,
		    size_t vlen)
{
	int64_t i;
	int r;

	/* Fast path: a value that is an integer's decimal form is stored as
	 * that inline integer. */
	if (inline_int_of(kv, val, vlen, &i) &&
	    (r = shmkv__key_setnx_int(kv, ref, i)) != -EAGAIN)
		return r;
	return shmkv_key_set(kv, ref, val, vlen, SHMKV_SET_NX, 0, NULL);
}

int shmkv_key_getset(shmkv_t *kv, struct shmkv_keyref *ref, const void *val,
		     size_t vlen, struct shmkv_value *old)
{
	int64_t i;
	int r;

	if (inline_int_of(kv, val, vlen, &i) &&
	    (r = getset_int_fast(kv, ref, i, old)) != FAST_SLOW)
		return r;
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

	want_value(&op, out);
	return shmkv__run_ref(kv, ref, &op);
}

int shmkv_key_get(shmkv_t *kv, struct shmkv_keyref *ref,
		  struct shmkv_value *out)
{
	int r = get_fast(kv, ref, out);

	return r != FAST_SLOW ? r : get_run(kv, ref, out);
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

	return shmkv__run_ref(kv, ref, &op);
}

int shmkv_key_get_int(shmkv_t *kv, struct shmkv_keyref *ref, int64_t *out)
{
	uint64_t w;

	if (out == NULL)
		return -EINVAL;
	/* Fast path: an inline integer is the answer in its value word, and
	 * NONE is a missing key (neither ever has a TTL). A read: a read-only
	 * handle takes it too. */
	if (shmkv__fast_load(kv, ref, &w, false)) {
		uint32_t ver = SLOT_VERSION(shmkv__kref(ref)->state);

		if (shmkv__word_is_int(w, ver)) {
			*out = VAL_INT_VALUE(w);
			return 1;
		}
		if (shmkv__word_is_none(w, ver))
			return 0;
	}
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

int shmkv_key_getdel(shmkv_t *kv, struct shmkv_keyref *ref,
		     struct shmkv_value *old)
{
	struct shmkv_op op = { .decide = del_decide, .ctx = old };

	want_value(&op, old);
	return shmkv__run_ref(kv, ref, &op);
}

int shmkv_key_del(shmkv_t *kv, struct shmkv_keyref *ref)
{
	uint64_t w;

	/* Fast path: NONE is nothing to delete; an inline integer goes in
	 * one CAS (it holds no value storage to free). */
	if (shmkv__fast_load(kv, ref, &w, true)) {
		uint32_t ver = SLOT_VERSION(shmkv__kref(ref)->state);

		if (shmkv__word_is_none(w, ver))
			return 0;
		if (shmkv__word_is_int(w, ver) &&
		    shmkv__fast_cas(kv, ref, w, VAL_NONE_WORD(ver, 0)))
			return 1;
	}
	return shmkv_key_getdel(kv, ref, NULL);
}

static int delifeq_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	op->result = cur->exists && cur->equal;
	return op->result ? SHMKV_ACT_DELETE : SHMKV_ACT_KEEP;
}

/* DELIFEQ of inline integer @i against an inline integer or NONE (the
 * safe release of a lock whose value is a number). Return: 1 deleted, 0 not
 * equal or absent, or FAST_SLOW. */
static int delifeq_int_fast(shmkv_t *kv, struct shmkv_keyref *ref, int64_t i)
{
	for (int n = 0; n < FAST_TRIES; n++) {
		uint64_t w;
		uint32_t ver;

		if (!shmkv__fast_load(kv, ref, &w, true))
			return FAST_SLOW;
		ver = SLOT_VERSION(shmkv__kref(ref)->state);
		if (shmkv__word_is_none(w, ver) ||
		    (shmkv__word_is_int(w, ver) && VAL_INT_VALUE(w) != i))
			return 0;
		if (!shmkv__word_is_int(w, ver))
			return FAST_SLOW;
		SHMKV_PAUSE_POINT("fast_loaded");
		if (shmkv__fast_cas(kv, ref, w, VAL_NONE_WORD(ver, 0)))
			return 1;
	}
	return FAST_SLOW;
}

static __attribute__((noinline)) int
delifeq_run(shmkv_t *kv, struct shmkv_keyref *ref, const void *val, size_t vlen)
{
	/* cmp must be non-NULL to be compared, even for an empty value. */
	struct shmkv_op op = { .decide = delifeq_decide,
			       .cmp = val ? val : "",
			       .cmp_len = vlen };

	return shmkv__run_ref(kv, ref, &op);
}

int shmkv_key_delifeq(shmkv_t *kv, struct shmkv_keyref *ref, const void *val,
		      size_t vlen)
{
	int64_t i;
	int r;

	if (val == NULL && vlen > 0)
		return -EINVAL;
	if (inline_int_of(kv, val, vlen, &i) &&
	    (r = delifeq_int_fast(kv, ref, i)) != FAST_SLOW)
		return r;
	return delifeq_run(kv, ref, val, vlen);
}

struct incr_ctx {
	int64_t delta;
	int64_t *result;
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
	if (c->result)
		*c->result = op->new_int;
	op->result = 0;
	return SHMKV_ACT_STORE;
}

static __attribute__((noinline)) int incrby_run(shmkv_t *kv,
						struct shmkv_keyref *ref,
						int64_t delta, int64_t *result)
{
	unsigned char digits[SHMKV_INT_STRLEN];
	struct incr_ctx c = { .delta = delta, .result = result };
	struct shmkv_op op = { .decide = incr_decide,
			       .ctx = &c,
			       .want_bytes = true,
			       .buf = digits,
			       .cap = sizeof(digits) };

	return shmkv__run_ref(kv, ref, &op);
}

int shmkv_key_incrby(shmkv_t *kv, struct shmkv_keyref *ref, int64_t delta,
		     int64_t *result)
{
	int r = incr_fast(kv, ref, delta, result);

	return r != FAST_SLOW ? r : incrby_run(kv, ref, delta, result);
}

int shmkv_incr(shmkv_t *kv, const void *key, size_t klen, int64_t *result)
{
	return shmkv_incrby(kv, key, klen, 1, result);
}

int shmkv_decr(shmkv_t *kv, const void *key, size_t klen, int64_t *result)
{
	return shmkv_incrby(kv, key, klen, -1, result);
}

int shmkv_decrby(shmkv_t *kv, const void *key, size_t klen, int64_t delta,
		 int64_t *result)
{
	/* -INT64_MIN does not exist: Redis refuses it up front too. */
	if (delta == INT64_MIN)
		return -EOVERFLOW;
	return shmkv_incrby(kv, key, klen, -delta, result);
}

/*
 * The plain commands: each prepares a throw-away reference to its key and
 * looks the key up (shmkv__key_find), then runs the prepared-key command,
 * which starts at the slot found. Argument errors about the key (NULL,
 * too long) come first. A command that needs nothing of an absent key
 * answers at once (answer_absent).
 */
#define WITH_REF(kv, key, klen, call)                                          \
	do {                                                                   \
		struct shmkv_keyref ref_;                                      \
		int err_ = shmkv__key_find(kv, &ref_, key, klen);              \
		return err_ < 0 ? err_ : (call);                               \
	} while (0)

/*
 * For GET, GET_INT, EXISTS, DEL and GETDEL: a key absent during the lookup's scan
 * reads as absent (the scan is the linearization point, as in the engine's
 * lookup), without a second scan, unless the general path would have
 * refused the call first (a write on a read-only handle, a NULL buffer with
 * a capacity): then it does, as before.
 */
static bool answer_absent(int found, const shmkv_t *kv, struct shmkv_value *out,
			  bool write)
{
	if (found != SHMKV_KEY_ABSENT || (write && kv->readonly) ||
	    (out != NULL && out->buf == NULL && out->cap > 0))
		return false;
	if (out != NULL)
		out->len = 0;
	return true;
}

int shmkv_set(shmkv_t *kv, const void *key, size_t klen, const void *val,
	      size_t vlen, unsigned flags, int64_t expire,
	      struct shmkv_value *old)
{
	WITH_REF(kv, key, klen,
		 shmkv_key_set(kv, &ref_, val, vlen, flags, expire, old));
}

int shmkv_setnx(shmkv_t *kv, const void *key, size_t klen, const void *val,
		size_t vlen)
{
	WITH_REF(kv, key, klen, shmkv_key_setnx(kv, &ref_, val, vlen));
}

int shmkv_getset(shmkv_t *kv, const void *key, size_t klen, const void *val,
		 size_t vlen, struct shmkv_value *old)
{
	WITH_REF(kv, key, klen, shmkv_key_getset(kv, &ref_, val, vlen, old));
}

int shmkv_get(shmkv_t *kv, const void *key, size_t klen,
	      struct shmkv_value *out)
{
	WITH_REF(kv, key, klen,
		 answer_absent(err_, kv, out, false)
			 ? 0
			 : shmkv_key_get(kv, &ref_, out));
}

int shmkv_get_int(shmkv_t *kv, const void *key, size_t klen, int64_t *out)
{
	WITH_REF(kv, key, klen,
		 out != NULL && answer_absent(err_, kv, NULL, false)
			 ? 0
			 : shmkv_key_get_int(kv, &ref_, out));
}

int shmkv_exists(shmkv_t *kv, const void *key, size_t klen)
{
	WITH_REF(kv, key, klen,
		 answer_absent(err_, kv, NULL, false)
			 ? 0
			 : shmkv_key_get(kv, &ref_, NULL));
}

int shmkv_getdel(shmkv_t *kv, const void *key, size_t klen,
		 struct shmkv_value *old)
{
	WITH_REF(kv, key, klen,
		 answer_absent(err_, kv, old, true)
			 ? 0
			 : shmkv_key_getdel(kv, &ref_, old));
}

int shmkv_del(shmkv_t *kv, const void *key, size_t klen)
{
	WITH_REF(kv, key, klen,
		 answer_absent(err_, kv, NULL, true)
			 ? 0
			 : shmkv_key_del(kv, &ref_));
}

int shmkv_delifeq(shmkv_t *kv, const void *key, size_t klen, const void *val,
		  size_t vlen)
{
	WITH_REF(kv, key, klen, shmkv_key_delifeq(kv, &ref_, val, vlen));
}

int shmkv_incrby(shmkv_t *kv, const void *key, size_t klen, int64_t delta,
		 int64_t *result)
{
	WITH_REF(kv, key, klen, shmkv_key_incrby(kv, &ref_, delta, result));
}
