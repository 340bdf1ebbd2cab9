/*
 * strings_plain.c - the plain string commands (shmkv_get(kv, key, ...)):
 * each checks, hashes and looks up its key inline, once, and tries the
 * straight-line path (strings_fast.c) on the slot it matched; only what
 * that path leaves goes to the prepared-key command (strings.c), with a
 * throw-away reference that already remembers the slot, so the engine
 * does not probe again.
 */
#include <errno.h>
#include <stdint.h>

#include "redis_typed.h"
#include "strings_fast.h"

/* What a plain command's lookup found. */
enum found {
	KEY_ABSENT = 0, /* no slot held the key during the scan */
	KEY_FOUND = 1,	/* p->f names its slot */
	KEY_UNSURE = 2, /* take the engine: a slot kept changing under the
			 * scan, or a write on a read-only handle (which the
			 * engine refuses) */
};

/* A plain command's key and what its lookup found. Its address is never
 * taken but by the inline helpers below, so that it lives in registers:
 * the engine's way gets copies (plain_ref). */
struct plain {
	struct shmkv_key k; /* hashed unless found through the memo */
	struct shmkv__fast f;
	int found;
	bool hashed;
};

/*
 * Where this thread last found a key through a plain command: a worker
 * that runs several commands on one key in a row (the SETNX page's lock:
 * SETNX, GET, GETSET, DEL; a counter's INCRs) finds it again without
 * hashing or probing, as through a prepared key. Only the slot is kept,
 * not the key, and nothing kept is trusted: a command whose key is at the
 * address the last one's was (a worker's key buffer, a literal) compares
 * it with the key in that slot, read as the lookup reads a slot (the state
 * word before and after the compare: shmkv__slot_still_holds); it is the key's slot if
 * that state word is still the one the key was found in (a key's bytes
 * never change during an incarnation, and each incarnation has a new
 * version) and the bytes are equal. The fast paths check that word again
 * around each load, as for a prepared key. A key elsewhere is a miss at
 * once, so that a command on another key pays two compares and four
 * stores; a slot that moved on is a miss too. The serial (a closed
 * handle's memory may come back as another's) is one more filter.
 */
struct plain_memo {
	uint64_t serial; /* the handle's; 0: nothing kept */
	const void *key; /* where the caller's key was */
	uint64_t state;	 /* the slot's state word when the key was found */
	uint32_t idx;	 /* the slot */
};

static __thread struct plain_memo memo
	__attribute__((tls_model("initial-exec")));

/* Is @key (@klen, checked) in the slot this thread last found a key in
 * through @kv, in the same incarnation? Then p->f says so (p->k is
 * hashed only if the engine's way needs it: plain_ref). */
static SHMKV__INLINE bool plain_memo_hit(shmkv_t *kv,
					 const struct shmkv_table *t,
					 const void *key, size_t klen,
					 struct plain *p)
{
	struct shmkv_slot_shm *s;

	if (memo.key != key || memo.serial != kv->serial)
		return false;
	/* In the table commands use now: a slot found in another one has a
	 * state word that names that table (SLOT_MEMBER_WORD), no match. */
	s = shmkv__slot(t, memo.idx);
	if (!shmkv__slot_still_holds(s, memo.state, key, klen))
		return false;
	SHMKV_PAUSE_POINT("memo_matched");
	p->k = (struct shmkv_key){ .bytes = key, .len = (uint32_t)klen };
	p->hashed = false;
	p->f.slot = s;
	/* Within t: the state word matched names t's epoch. */
	p->f.idx = memo.idx;
	p->f.state = memo.state;
	p->found = KEY_FOUND;
	shmkv__touch(kv, s); /* a use of the key, for eviction */
	return true;
}

/* Keeps where the key p->k was just found through @kv. */
static SHMKV__INLINE void plain_memo_keep(const shmkv_t *kv,
					  const struct plain *p)
{
	memo.serial = kv->serial;
	memo.key = p->k.bytes;
	memo.state = p->f.state;
	memo.idx = p->f.idx;
}

/* Checks, hashes and looks up @key (unless it is this thread's last).
 * Return: 0 and p->found, or shmkv__key_args's error (before anything
 * else, as shmkv_key_prepare). */
static SHMKV__INLINE int plain_find(shmkv_t *kv, const void *key, size_t klen,
				    bool write, struct plain *p)
{
	struct shmkv_slot_ref sr = { NULL, 0, 0 };
	const struct shmkv_table *t;
	int r = shmkv__key_args(kv, key, klen, &t);

	if (r < 0)
		return r;
	p->f = (struct shmkv__fast){ .kv = kv, .klen = (uint32_t)klen };
	/* A write on a read-only handle (which the engine refuses), or a
	 * growth under way (the engine's path knows both tables). */
	if (r != 0 || (write && kv->readonly)) {
		p->k = (struct shmkv_key){ .bytes = key,
					   .len = (uint32_t)klen };
		p->hashed = false;
		p->found = KEY_UNSURE;
		return 0;
	}
	if (plain_memo_hit(kv, t, key, klen, p))
		return 0;
	shmkv__key_init(kv, t, &p->k, key, klen);
	p->hashed = true;
	/* The slot (set only if found) says what was found: so that a
	 * reader of the code, or the analyzer, sees f.slot set. */
	r = shmkv__lookup_slot(kv, &p->k, &sr, &p->f.slot);
	p->found = r < 0		       ? KEY_UNSURE
		   : p->f.slot != NULL	       ? KEY_FOUND
		   : shmkv__miss_stands(kv, t) ? KEY_ABSENT
					       : KEY_UNSURE;
	p->f.idx = sr.index;
	p->f.state = sr.state; /* 0 unless found */
	if (p->found == KEY_FOUND) {
		plain_memo_keep(kv, p);
		shmkv__touch(kv, p->f.slot); /* a use, for eviction */
	}
	return 0;
}

/* The prepared key for the engine's way in *@ref, remembering the slot
 * found (if @found): from copies, and out of line, so that the fast
 * path's struct plain stays in registers. */
static __attribute__((noinline)) struct shmkv_keyref *
plain_ref(struct shmkv_key k, bool hashed, bool found, struct shmkv__fast f,
	  struct shmkv_keyref *ref)
{
	if (!hashed)
		shmkv__key_init(f.kv, shmkv__table_cmd(f.kv), &k, k.bytes,
				k.len);
	shmkv__keyref_fill(f.kv, ref, &k, found ? f.idx : 0,
			   found ? f.state : 0);
	return ref;
}

/*
 * For GET, GET as a number, EXISTS, DEL and GETDEL: a key absent during
 * the lookup's scan reads as absent (the scan is the linearization point,
 * as in the engine's lookup), without a second scan, unless the engine
 * would have refused the call first (a NULL buffer with a capacity): then
 * it does, as before.
 */
static bool answer_absent(int found, struct shmkv_value *out)
{
	if (found != KEY_ABSENT ||
	    (out != NULL && out->buf == NULL && out->cap > 0))
		return false;
	if (out != NULL)
		out->len = 0;
	return true;
}

/* A Redis handle's prepared key (redis_typed.h), out of line: the
 * prepared-key command then dispatches on its slow path (strings.c's
 * *_run), one place per command for both ways in. */
static __attribute__((noinline)) struct shmkv_keyref *
plain_remote_ref(shmkv_t *kv, const void *key, size_t klen,
		 struct shmkv_keyref *ref)
{
	shmkv__redis_key_prepare(kv, ref, key, klen);
	return ref;
}

/* Runs fast call @fast on the slot found, if any; else (or if it cannot
 * decide) prepared command @slow. @absent_ok: an absent key answers 0.
 * A handle of the Redis backend, which plain_find answers with
 * SHMKV__REMOTE, takes @slow too, tested on the error branch only (the
 * shared-memory store's straight line gains nothing), with the same call
 * shape as the slow path's. */
#define PLAIN(kv, key, klen, write, fast, absent_ok, out, slow)                \
	do {                                                                   \
		struct plain p_;                                               \
		struct shmkv_keyref kr_;                                       \
		struct shmkv_keyref *ref_;                                     \
		int r_ = plain_find(kv, key, klen, write, &p_);                \
		const struct shmkv__fast *f_ = &p_.f;                          \
                                                                               \
		(void)f_;                                                      \
		if (r_ != 0) {                                                 \
			if (r_ != SHMKV__REMOTE)                               \
				return r_;                                     \
			ref_ = plain_remote_ref(kv, key, klen, &kr_);          \
			goto slow_;                                            \
		}                                                              \
		if (p_.found == KEY_FOUND &&                                   \
		    (r_ = (fast)) != SHMKV__FAST_SLOW)                         \
			return r_;                                             \
		if ((absent_ok) && answer_absent(p_.found, out))               \
			return 0;                                              \
		ref_ = plain_ref(p_.k, p_.hashed, p_.found == KEY_FOUND, p_.f, \
				 &kr_);                                        \
slow_:                                                                         \
		return (slow);                                                 \
	} while (0)

int shmkv_get(shmkv_t *kv, const void *key, size_t klen,
	      struct shmkv_value *out)
{
	PLAIN(kv, key, klen, false, shmkv__fast_get(f_, out), true, out,
	      shmkv_key_get(kv, ref_, out));
}

int shmkv_exists(shmkv_t *kv, const void *key, size_t klen)
{
	PLAIN(kv, key, klen, false, shmkv__fast_get(f_, NULL), true,
	      (struct shmkv_value *)NULL, shmkv_key_get(kv, ref_, NULL));
}

int shmkv_get_int(shmkv_t *kv, const void *key, size_t klen, int64_t *out)
{
	/* A NULL @out is -EINVAL even for an absent key: the engine says so. */
	PLAIN(kv, key, klen, false,
	      out != NULL ? shmkv__fast_get_int(f_, out) : SHMKV__FAST_SLOW,
	      out != NULL, (struct shmkv_value *)NULL,
	      shmkv_key_get_int(kv, ref_, out));
}

int shmkv_set(shmkv_t *kv, const void *key, size_t klen, const void *val,
	      size_t vlen, unsigned flags, int64_t expire,
	      struct shmkv_value *old)
{
	PLAIN(kv, key, klen, true,
	      flags == 0 ? shmkv__fast_set(f_, val, vlen) : SHMKV__FAST_SLOW,
	      false, (struct shmkv_value *)NULL,
	      shmkv_key_set(kv, ref_, val, vlen, flags, expire, old));
}

/* SETNX's straight-line path for a string, out of line: its code would
 * cost the integer's path (a lock's) registers and instructions. */
static __attribute__((noinline)) int
plain_setnx_bytes(struct shmkv__fast f, const void *val, size_t vlen)
{
	return shmkv__fast_setnx_bytes(&f, val, vlen);
}

int shmkv_setnx(shmkv_t *kv, const void *key, size_t klen, const void *val,
		size_t vlen)
{
	int64_t i;

	PLAIN(kv, key, klen, true,
	      shmkv__inline_int_of(kv, val, vlen, &i)
		      ? shmkv__fast_setnx_int(f_, i)
		      : plain_setnx_bytes(*f_, val, vlen),
	      false, (struct shmkv_value *)NULL,
	      shmkv_key_setnx(kv, ref_, val, vlen));
}

int shmkv_getset(shmkv_t *kv, const void *key, size_t klen, const void *val,
		 size_t vlen, struct shmkv_value *old)
{
	int64_t i;

	PLAIN(kv, key, klen, true,
	      shmkv__inline_int_of(kv, val, vlen, &i)
		      ? shmkv__fast_getset_int(f_, i, old)
		      : SHMKV__FAST_SLOW,
	      false, (struct shmkv_value *)NULL,
	      shmkv_key_getset(kv, ref_, val, vlen, old));
}

int shmkv_getdel(shmkv_t *kv, const void *key, size_t klen,
		 struct shmkv_value *old)
{
	PLAIN(kv, key, klen, true, SHMKV__FAST_SLOW, true, old,
	      shmkv_key_getdel(kv, ref_, old));
}

int shmkv_del(shmkv_t *kv, const void *key, size_t klen)
{
	PLAIN(kv, key, klen, true, shmkv__fast_del(f_), true,
	      (struct shmkv_value *)NULL, shmkv_key_del(kv, ref_));
}

/* DELIFEQ's straight-line path for a string, out of line: as SETNX's. */
static __attribute__((noinline)) int
plain_delifeq_bytes(struct shmkv__fast f, const void *val, size_t vlen)
{
	return shmkv__fast_delifeq_bytes(&f, val, vlen);
}

int shmkv_delifeq(shmkv_t *kv, const void *key, size_t klen, const void *val,
		  size_t vlen)
{
	int64_t i;

	PLAIN(kv, key, klen, true,
	      shmkv__inline_int_of(kv, val, vlen, &i)
		      ? shmkv__fast_delifeq_int(f_, i)
		      : plain_delifeq_bytes(*f_, val, vlen),
	      false, (struct shmkv_value *)NULL,
	      shmkv_key_delifeq(kv, ref_, val, vlen));
}

int shmkv_incrby(shmkv_t *kv, const void *key, size_t klen, int64_t delta,
		 int64_t *result)
{
	PLAIN(kv, key, klen, true, shmkv__fast_incr(f_, delta, result), false,
	      (struct shmkv_value *)NULL,
	      shmkv_key_incrby(kv, ref_, delta, result));
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
