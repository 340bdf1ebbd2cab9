/*
 * strings_fast.h - the straight-line paths of the string commands.
 *
 * A command on a key whose slot is known and whose value word is an inline
 * integer, a string in the slot or NONE (or, for GET, a block without TTL)
 * needs nothing of the engine: one load of the value word checked against the slot's state
 * word, and for a write one CAS expecting that word, the same
 * linearization points as the engine's (engine.c). Every other case, and a
 * CAS lost SHMKV__FAST_TRIES times in a row, answers SHMKV__FAST_SLOW: the
 * caller then takes the engine, which decides afresh (a lost race is never
 * an error). The prepared-key commands (strings.c) and the plain ones
 * (strings_plain.c) both start here: GET, GET as a number, SET, SETNX,
 * GETSET, INCRBY, DEL and DELIFEQ of inline integers, GET, SET and DEL of
 * strings in the slot (area.h), and GET of a block without TTL.
 */
#ifndef SHMKV_STRINGS_FAST_H
#define SHMKV_STRINGS_FAST_H

#include <limits.h>

#include <errno.h>
#include <string.h>

#include "area.h"
#include "engine.h"
#include "fault.h"
#include "intconv.h"

#define SHMKV__FAST_SLOW INT_MIN /* not decided here: take the engine */

/* Is @val the canonical decimal form of an inline integer? */
static SHMKV__INLINE bool shmkv__inline_int_of(const shmkv_t *kv,
					       const void *val, size_t vlen,
					       int64_t *i)
{
	const char *s = val;

	/* Most strings are told from a number by their first byte, without
	 * parsing; nothing (NULL or empty) is no number. */
	if (s == NULL || vlen == 0 ||
	    (s[0] != '-' && (unsigned)(unsigned char)s[0] - '0' > 9))
		return false;
	return kv != NULL && vlen <= kv->geo.value_max &&
	       shmkv__string2ll(s, vlen, i) && *i >= VAL_INT_MIN &&
	       *i <= VAL_INT_MAX;
}

/*
 * The paths. Each returns the command's result, or SHMKV__FAST_SLOW; the
 * writes need a slot of a handle that may write. Inline: both the
 * prepared-key and the plain commands call them, and a call would cost a
 * fifth of a prepared GET.
 */

/* GET's reply for an inline integer @v into a buffer too short for some
 * integers: out of line, so that the common case carries one copy of the
 * formatter and no test of which buffer it wrote. */
static __attribute__((noinline, unused)) int
shmkv__give_int_short(struct shmkv_value *out, int64_t v)
{
	char digits[SHMKV_INT_STRLEN];
	size_t n = shmkv__ll2string(digits, v);

	/* As the engine: what fits is copied, len says what it needed (a
	 * libc copy: this path is the rare one). */
	if (out->cap > 0)
		memcpy(out->buf, digits, n < out->cap ? n : out->cap);
	out->len = n;
	return n > out->cap ? -ENOBUFS : 1;
}

/* GET's reply for an inline integer: its decimal form into @out. */
static SHMKV__INLINE int shmkv__give_int(struct shmkv_value *out, int64_t v)
{
	if (out == NULL)
		return 1;
	if (out->cap < SHMKV_INT_STRLEN)
		return shmkv__give_int_short(out, v);
	out->len = shmkv__ll2string(out->buf, v);
	return 1;
}

/*
 * GET's reply for a value block without a TTL: a consistent copy (the
 * block's generation checked after it, block.c) of what value word @w
 * named when it was loaded, which is the linearization point, as in the
 * engine. A TTL (it needs the clock), a block freed under us, or anything
 * corrupt is the general path's: it decides afresh, or reports it.
 */
static inline int shmkv__give_block(const shmkv_t *kv, uint64_t w,
				    struct shmkv_value *out)
{
	struct shmkv_block_view view;

	if (shmkv__block_read(kv, w, out != NULL ? out->buf : NULL,
			      out != NULL ? out->cap : 0, &view) != 0 ||
	    view.deadline_ms != 0)
		return SHMKV__FAST_SLOW;
	if (out == NULL)
		return 1;
	/* As the engine: what fits is copied, len says what it needed. */
	out->len = view.len;
	return view.len > out->cap ? -ENOBUFS : 1;
}

/* GET's reply for the inline string @w names in @f's slot: a copy that
 * the word still names after it (area.h). A string that moved, or a
 * corrupt word, is the engine's: it reads afresh, or reports it. */
static inline int shmkv__give_inline(const struct shmkv__fast *f, uint64_t w,
				     struct shmkv_value *out)
{
	size_t len = VAL_INLINE_LEN(w);

	SHMKV_PAUSE_POINT("fast_loaded");
	if (shmkv__inline_read(f->slot, f->kv->geo.slot_size, w,
			       out != NULL ? out->buf : NULL,
			       out != NULL ? out->cap : 0, NULL, 0, NULL) != 0)
		return SHMKV__FAST_SLOW;
	if (out == NULL)
		return 1;
	/* As the engine: what fits is copied, len says what it needed. */
	out->len = len;
	return len > out->cap ? -ENOBUFS : 1;
}

/* GET and EXISTS of an inline integer or string, a block without TTL, or
 * nothing. */
static SHMKV__INLINE int shmkv__fast_get(const struct shmkv__fast *f,
					 struct shmkv_value *out)
{
	uint64_t w;
	uint32_t ver;

	SHMKV_PAUSE_POINT("fast_found");
	if ((out != NULL && out->buf == NULL && out->cap > 0) ||
	    !shmkv__fast_word(f, &w))
		return SHMKV__FAST_SLOW;
	ver = shmkv__fast_ver(f);
	if (shmkv__word_is_int(w, ver))
		return shmkv__give_int(out, VAL_INT_VALUE(w));
	if (VAL_KIND(w) == VAL_INLINE)
		return shmkv__give_inline(f, w, out);
	if (VAL_KIND(w) == VAL_BLOCK) {
		SHMKV_PAUSE_POINT("fast_loaded");
		return shmkv__give_block(f->kv, w, out);
	}
	if (!shmkv__word_is_none(w, ver))
		return SHMKV__FAST_SLOW;
	if (out != NULL)
		out->len = 0;
	return 0;
}

/* Swaps inline integer @i in for an inline integer or NONE (or, if
 * @over_inline, an inline string: SET, which need not read it): SET and
 * GETSET. Return: true and the word replaced in *@old, or false (take the
 * engine). */
static SHMKV__INLINE bool shmkv__fast_swap_int(const struct shmkv__fast *f,
					       int64_t i, bool over_inline,
					       uint64_t *old)
{
	uint32_t ver = shmkv__fast_ver(f);

	for (int n = 0; n < SHMKV__FAST_TRIES; n++) {
		if (!shmkv__fast_word(f, old) ||
		    !(over_inline ? shmkv__word_owns_nothing(*old, ver)
				  : shmkv__word_is_int(*old, ver) ||
					    shmkv__word_is_none(*old, ver)))
			return false;
		SHMKV_PAUSE_POINT("fast_loaded");
		if (shmkv__fast_swap(f, *old, VAL_INT_WORD(ver, i)))
			return true;
	}
	return false;
}

/* SET of inline integer @i. Return: 1, or SHMKV__FAST_SLOW. */
static SHMKV__INLINE int shmkv__fast_set_int(const struct shmkv__fast *f,
					     int64_t i)
{
	uint64_t old;

	return shmkv__fast_swap_int(f, i, true, &old) ? 1 : SHMKV__FAST_SLOW;
}

/* Puts the string @val (@vlen) into @f's slot (area.h) over value word
 * @old, which names no value storage to free. Return: 1, or
 * SHMKV__FAST_SLOW (no room, a claim held, a lost CAS). */
static SHMKV__INLINE int shmkv__fast_put_inline(const struct shmkv__fast *f,
						uint64_t old, const void *val,
						size_t vlen)
{
	uint64_t held, nv = shmkv__area_stage(f->kv, f->slot, f->state, f->klen,
					      old, val, vlen, &held);

	if (nv == 0)
		return SHMKV__FAST_SLOW;
	SHMKV_PAUSE_POINT("fast_loaded");
	return shmkv__area_publish(f->slot, old, nv, held) ? 1
							   : SHMKV__FAST_SLOW;
}

/* SET of a string into the slot over a word that names no value storage
 * to free: NONE, an inline integer or an inline string. Return: 1, or
 * SHMKV__FAST_SLOW (no room, a claim held, a lost CAS, a block). */
static inline int shmkv__fast_set_inline(const struct shmkv__fast *f,
					 const void *val, size_t vlen)
{
	uint32_t ver = shmkv__fast_ver(f);
	uint64_t old;

	if (!shmkv__fast_word(f, &old) || !shmkv__word_owns_nothing(old, ver))
		return SHMKV__FAST_SLOW;
	return shmkv__fast_put_inline(f, old, val, vlen);
}

/* SETNX of the string @val (@vlen), no inline integer's: an inline
 * integer or string is a value (neither has a TTL), so the answer is 0;
 * over NONE, the string goes into the slot. A block (it may have
 * expired), no room, or a lost race: the engine's. */
static inline int shmkv__fast_setnx_bytes(const struct shmkv__fast *f,
					  const void *val, size_t vlen)
{
	uint32_t ver = shmkv__fast_ver(f);
	uint64_t w;

	if ((val == NULL && vlen > 0) || vlen > f->kv->geo.value_max ||
	    !shmkv__fast_word(f, &w))
		return SHMKV__FAST_SLOW;
	if (shmkv__word_is_int(w, ver) || VAL_KIND(w) == VAL_INLINE)
		return 0;
	if (!shmkv__word_is_none(w, ver))
		return SHMKV__FAST_SLOW;
	return shmkv__fast_put_inline(f, w, val, vlen);
}

/* SET of the bytes @val (@vlen), which are no inline integer's, when the
 * engine would take them without a word of doubt: into the slot, else
 * into a block. */
static inline int shmkv__fast_set_bytes(const struct shmkv__fast *f,
					const void *val, size_t vlen)
{
	int r;
	struct shmkv__fast copy = *f; /* so that *f's address never escapes */

	if ((val == NULL && vlen > 0) || vlen > f->kv->geo.value_max)
		return SHMKV__FAST_SLOW;
	r = shmkv__fast_set_inline(f, val, vlen);
	if (r != SHMKV__FAST_SLOW)
		return r;
	return shmkv__set_bytes_fast(&copy, val, vlen) ? 1 : SHMKV__FAST_SLOW;
}

/* SET without options: an inline integer, or the bytes. */
static SHMKV__INLINE int shmkv__fast_set(const struct shmkv__fast *f,
					 const void *val, size_t vlen)
{
	int64_t i;

	if (shmkv__inline_int_of(f->kv, val, vlen, &i))
		return shmkv__fast_set_int(f, i);
	return shmkv__fast_set_bytes(f, val, vlen);
}

/*
 * GETSET of inline integer @i: the old one is printed after the CAS, so
 * only into a buffer that takes any integer (a short one may refuse the
 * old value, and then nothing may change).
 * Return: 1 (had a value), 0 (had none), or SHMKV__FAST_SLOW.
 */
static SHMKV__INLINE int shmkv__fast_getset_int(const struct shmkv__fast *f,
						int64_t i,
						struct shmkv_value *old)
{
	uint64_t w;

	if (old == NULL || old->buf == NULL || old->cap < SHMKV_INT_STRLEN ||
	    !shmkv__fast_swap_int(f, i, false, &w))
		return SHMKV__FAST_SLOW;
	if (VAL_KIND(w) == VAL_INT)
		return shmkv__give_int(old, VAL_INT_VALUE(w));
	old->len = 0;
	return 0;
}

/* INCRBY of an inline integer or of nothing, staying inline. */
static SHMKV__INLINE int shmkv__fast_incr(const struct shmkv__fast *f,
					  int64_t delta, int64_t *result)
{
	for (int n = 0; n < SHMKV__FAST_TRIES; n++) {
		uint64_t w;
		uint32_t ver;
		int64_t v = 0;

		if (!shmkv__fast_word(f, &w))
			return SHMKV__FAST_SLOW;
		ver = shmkv__fast_ver(f);
		if (shmkv__word_is_int(w, ver))
			v = VAL_INT_VALUE(w);
		else if (!shmkv__word_is_none(w, ver))
			return SHMKV__FAST_SLOW;
		/* Leaving the inline range (or int64's) is the engine's. */
		if (__builtin_add_overflow(v, delta, &v) || v < VAL_INT_MIN ||
		    v > VAL_INT_MAX)
			return SHMKV__FAST_SLOW;
		SHMKV_PAUSE_POINT("fast_loaded");
		if (shmkv__fast_swap(f, w, VAL_INT_WORD(ver, v))) {
			if (result)
				*result = v;
			return 0;
		}
	}
	return SHMKV__FAST_SLOW;
}

/* SETNX of inline integer @i over an inline integer (which exists: an
 * inline integer never has a TTL) or NONE. Return: 1 set, 0 exists, or
 * SHMKV__FAST_SLOW. */
static SHMKV__INLINE int shmkv__fast_setnx_int(const struct shmkv__fast *f,
					       int64_t i)
{
	uint64_t w;
	uint32_t ver = shmkv__fast_ver(f);

	if (!shmkv__fast_word(f, &w))
		return SHMKV__FAST_SLOW;
	if (shmkv__word_is_int(w, ver))
		return 0;
	SHMKV_PAUSE_POINT("fast_loaded");
	if (shmkv__word_is_none(w, ver) &&
	    shmkv__fast_swap(f, w, VAL_INT_WORD(ver, i)))
		return 1;
	return SHMKV__FAST_SLOW;
}

/* GET as a number: an inline integer is the answer in its value word, and
 * NONE is a missing key (neither ever has a TTL); nothing is printed. */
static SHMKV__INLINE int shmkv__fast_get_int(const struct shmkv__fast *f,
					     int64_t *out)
{
	uint64_t w;
	uint32_t ver = shmkv__fast_ver(f);

	if (!shmkv__fast_word(f, &w))
		return SHMKV__FAST_SLOW;
	if (shmkv__word_is_int(w, ver)) {
		*out = VAL_INT_VALUE(w);
		return 1;
	}
	return shmkv__word_is_none(w, ver) ? 0 : SHMKV__FAST_SLOW;
}

/*
 * DEL of the key in @slot of @kv, matched in state word @state, whose
 * value word @w (checked against @state) names a block: if the block has
 * no deadline, unpublished and freed as the engine would (commit.h),
 * without an op (strings_block.c). Return: 1
 * (deleted), or SHMKV__FAST_SLOW (a deadline, a block freed under us, a
 * lost CAS): nothing changed. An int, so that fast_del's call of it is a
 * tail call (no registers saved on the other paths).
 */
int shmkv__del_block_fast(struct shmkv *kv, struct shmkv_slot_shm *slot,
			  uint64_t state, uint64_t w);

/* DEL of NONE (nothing to delete), of an inline integer or string (one
 * CAS, no value storage to free), or of a block (shmkv__del_block_fast). */
static SHMKV__INLINE int shmkv__fast_del(const struct shmkv__fast *f)
{
	uint64_t w;
	uint32_t ver = shmkv__fast_ver(f);

	if (!shmkv__fast_word(f, &w))
		return SHMKV__FAST_SLOW;
	if (shmkv__word_is_none(w, ver))
		return 0;
	if (shmkv__word_owns_nothing(w, ver) &&
	    shmkv__fast_swap(f, w, VAL_NONE_WORD(ver, 0)))
		return 1;
	/* Its fields, not *f: a copy of it would cost every DEL. */
	if (VAL_KIND(w) == VAL_BLOCK)
		return shmkv__del_block_fast(f->kv, f->slot, f->state, w);
	return SHMKV__FAST_SLOW;
}

/* DELIFEQ of inline integer @i against an inline integer or NONE (the
 * safe release of a lock whose value is a number). Return: 1 deleted, 0 not
 * equal or absent, or SHMKV__FAST_SLOW. */
static SHMKV__INLINE int shmkv__fast_delifeq_int(const struct shmkv__fast *f,
						 int64_t i)
{
	for (int n = 0; n < SHMKV__FAST_TRIES; n++) {
		uint64_t w;
		uint32_t ver;

		if (!shmkv__fast_word(f, &w))
			return SHMKV__FAST_SLOW;
		ver = shmkv__fast_ver(f);
		if (shmkv__word_is_none(w, ver) ||
		    (shmkv__word_is_int(w, ver) && VAL_INT_VALUE(w) != i))
			return 0;
		if (!shmkv__word_is_int(w, ver))
			return SHMKV__FAST_SLOW;
		SHMKV_PAUSE_POINT("fast_loaded");
		if (shmkv__fast_swap(f, w, VAL_NONE_WORD(ver, 0)))
			return 1;
	}
	return SHMKV__FAST_SLOW;
}

/*
 * DELIFEQ of the string @val (@vlen <= value_max, not an inline integer's
 * form) on the key of @f, of a handle that may write: compared with the
 * value in the slot or in a block (one without a deadline), deleted as the
 * engine would (strings_block.c). Return: 1 (deleted), 0 (absent or
 * different), or SHMKV__FAST_SLOW (a deadline, a corrupt word, lost CASes):
 * nothing changed.
 */
int shmkv__delifeq_bytes_fast(const struct shmkv__fast *f, const void *val,
			      size_t vlen);

/* DELIFEQ of the string @val (@vlen), no inline integer's form: compared
 * with a string in the slot or in a block (strings_block.c). Return: 1,
 * 0, or SHMKV__FAST_SLOW. */
static inline int shmkv__fast_delifeq_bytes(const struct shmkv__fast *f,
					    const void *val, size_t vlen)
{
	struct shmkv__fast copy = *f; /* so that *f's address never escapes */

	if ((val == NULL && vlen > 0) || vlen > f->kv->geo.value_max)
		return SHMKV__FAST_SLOW;
	/* Compared even when empty: a NULL @val is "" (as the engine's). */
	return shmkv__delifeq_bytes_fast(&copy, val != NULL ? val : "", vlen);
}

#endif /* SHMKV_STRINGS_FAST_H */
