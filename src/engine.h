/*
 * engine.h - the one generic read-modify-CAS worker behind every command,
 * as Redis's setGenericCommand is behind SET, SETNX and SETEX.
 *
 * A command describes itself as a decide() callback: given what the key
 * holds now, it says whether to leave it, store a new value or delete it,
 * and sets its reply. The engine does everything else: hashing, lookup,
 * insertion, reading the current value consistently, lazy expiry, value
 * storage, the CAS that makes the change, and retrying when it loses a race
 * (decide() is then called again with the fresh value, so it must depend on
 * its argument only).
 */
#ifndef SHMKV_ENGINE_H
#define SHMKV_ENGINE_H

#include <errno.h>

#include "evict.h"
#include "internal.h"
#include "keyref.h"
#include "lookup.h"

/* The key's current value, as decide() sees it. */
struct shmkv_cur {
	bool exists; /* holds a value that has not expired */
	bool is_int; /* the value is an inline integer: ival */
	bool equal;  /* value == op->cmp (when op->cmp is set) */
	int64_t ival;
	int64_t deadline_ms; /* CLOCK_BOOTTIME ms; 0: no TTL */
	int64_t now_ms;	     /* CLOCK_BOOTTIME ms when the value was read */
	size_t len;	     /* the value's length in bytes */
	const unsigned char *bytes; /* op->buf, when op->want_bytes */
	/* The value word this was decoded from, and where it lives: for a
	 * decide() that reads what the word names and must know the word
	 * still names it (a lock cell's fields). */
	uint64_t word;
	const uint64_t *word_at;
};

enum shmkv_act {
	SHMKV_ACT_KEEP = 0, /* leave the key as it is */
	SHMKV_ACT_STORE,    /* store op->new_* */
	SHMKV_ACT_DELETE,   /* remove the value */
	/* What decide() read beside the value (a lock cell the value names)
	 * did not match it: if the value word has moved since, decide again
	 * on the new one (a lost race, never an error). If it has not, read
	 * again too, but after SHMKV__STALE_STILL such reads in a row fail
	 * with -EEXIST: the value names something it does not hold (to the
	 * lock layer: it is no lock). Not -ESTALE, which is the removed
	 * store's (shmkv__live). */
	SHMKV_ACT_STALE,
	/* What decide() relied on changed (a re-validation failed): decide
	 * again on a fresh read of the value, whatever its bits. */
	SHMKV_ACT_RETRY,
};

/* Reads in a row of an unmoved value that keep naming something else:
 * more than a reader can lose to one holder (each loss needs the value's
 * bits to come back, i.e. 2^16 grants between two of our loads). */
#define SHMKV__STALE_STILL 4

struct shmkv_op {
	/* Returns an enum shmkv_act, or a negative errno to fail the command
	 * with nothing changed. Sets op->result. */
	int (*decide)(struct shmkv_op *op, const struct shmkv_cur *cur);
	void *ctx;
	/* The command never writes (GET, EXISTS, TTL): allowed on a
	 * read-only handle. Every other command gets -EROFS there. */
	bool read_only;
	/* Copy the current value into buf (cap bytes): decide() sees it in
	 * cur->bytes; if it is longer than cap, only cur->len is valid. */
	bool want_bytes;
	unsigned char *buf;
	size_t cap;
	/* Compare the current value with cmp/cmp_len into cur->equal. */
	const void *cmp;
	size_t cmp_len;
	/* The value to store on SHMKV_ACT_STORE: the bytes, an integer
	 * (new_is_int), or the current value itself (new_from_old, for TTL
	 * changes); with new_deadline_ms (0: none). */
	const void *new_bytes;
	size_t new_len;
	bool new_is_int;
	bool new_from_old;
	int64_t new_int;
	int64_t new_deadline_ms;
	int result;
};

/* Runs @op on @key. Return: op->result, or a negative errno. */
int shmkv__run(struct shmkv *kv, const void *key, size_t klen,
	       struct shmkv_op *op);
/* The same on a prepared key, whose cached slot it uses and updates. */
int shmkv__run_ref(struct shmkv *kv, struct shmkv_keyref *ref,
		   struct shmkv_op *op);

/* Fills @pub for hashed key @k of @kv, remembering @slot and @state
 * (state 0: nothing remembered, the engine probes). */
static SHMKV__INLINE void shmkv__keyref_fill(const struct shmkv *kv,
					     struct shmkv_keyref *pub,
					     const struct shmkv_key *k,
					     uint32_t slot, uint64_t state)
{
	struct shmkv__keyref *kr = shmkv__kref(pub);

	kr->key = k->bytes;
	kr->len = k->len;
	kr->owner = kv;
	kr->hash32 = k->hash32;
	kr->home = k->home;
	kr->epoch = k->t->epoch;
	kr->slot = slot;
	kr->state = state;
}

/* The checks of a command's handle and key, as shmkv_key_prepare() makes
 * them (the one copy), with the table of shmkv__table_now in *@t. Return:
 * 0, SHMKV__GROWING (no table in *@t: a growth runs, or the life word was
 * resolved just now: the engine's path), -EINVAL, -ENAMETOOLONG, or the
 * removed store's -ESTALE (-EBADMSG: a corrupt life word). */
static SHMKV__INLINE int shmkv__key_args(const struct shmkv *kv,
					 const void *key, size_t klen,
					 const struct shmkv_table **t)
{
	int r;

	if (kv == NULL || (key == NULL && klen > 0))
		return -EINVAL;
	if (klen > kv->geo.key_max)
		return -ENAMETOOLONG;
	*t = shmkv__table_now(kv);
	if (*t != NULL)
		return 0;
	r = shmkv__live(kv);
	return r < 0 ? r : SHMKV__GROWING;
}

/* shmkv__key_args, then @key hashed into @k (for the table commands
 * write in). Return: 0, or a negative errno. */
static SHMKV__INLINE int shmkv__key_check(const struct shmkv *kv,
					  const void *key, size_t klen,
					  struct shmkv_key *k)
{
	const struct shmkv_table *t;
	int r = shmkv__key_args(kv, key, klen, &t);

	if (r == SHMKV__GROWING)
		t = shmkv__table_slow(kv);
	else if (r < 0)
		return r;
	shmkv__key_init(kv, t, k, key, klen);
	return 0;
}

/*
 * The fast path's handle on a key: a MEMBER slot and its state word when
 * the key was matched (from a prepared key, shmkv__fast_of_ref, or a plain
 * command's lookup). Its value word is loaded and checked against the
 * state (shmkv__fast_word) and changed with one CAS (shmkv__fast_swap).
 */
/* CASes a fast path may lose in a row before it leaves the key to the
 * engine (which decides afresh: a lost race is never an error). */
#define SHMKV__FAST_TRIES 4

struct shmkv__fast {
	struct shmkv *kv;
	struct shmkv_slot_shm *slot; /* shmkv__slot(kv, idx), computed once */
	uint32_t idx;
	uint32_t klen; /* the key's length: what it leaves of the slot */
	uint64_t state;
};

/*
 * The slot a prepared key remembers, if it may serve a command that
 * decides from the value word alone (inline integers and NONE; anything
 * else goes through shmkv__run_ref()). @write: the command may change the
 * key (then a read-only handle takes the general path, which refuses it);
 * a read also serves a read-only handle.
 */
static SHMKV__INLINE bool shmkv__fast_of_ref(shmkv_t *kv,
					     const struct shmkv_keyref *pub,
					     bool write, struct shmkv__fast *f)
{
	const struct shmkv__keyref *ref = shmkv__kref_const(pub);
	const struct shmkv_table *t;

	/* The slot is used only while no growth runs (shmkv__table_now),
	 * and only in the incarnation and table its state word names. */
	if (kv == NULL || ref == NULL || ref->owner != kv ||
	    (write && kv->readonly) || SLOT_STATE(ref->state) != SLOT_MEMBER ||
	    (t = shmkv__table_now(kv)) == NULL || ref->slot > t->mask)
		return false;
	f->kv = kv;
	f->slot = shmkv__slot(t, ref->slot);
	f->idx = ref->slot;
	f->klen = (uint32_t)ref->len;
	f->state = ref->state;
	return true;
}

/* A straight-line path's answer @r on @f's key: the use recorded, for
 * eviction (evict.h). */
static SHMKV__INLINE int shmkv__fast_done(const struct shmkv__fast *f, int r)
{
	return shmkv__touched(f->kv, f->slot, r);
}

/* The value word, if the slot still holds the key (state unchanged). */
static SHMKV__INLINE bool shmkv__fast_word(const struct shmkv__fast *f,
					   uint64_t *w)
{
	struct shmkv_slot_shm *s = f->slot;

	/* Acquire, then acquire: the value is this incarnation's if the state
	 * word is unchanged after it (see shmkv__slot_still). */
	*w = shmkv__load_acquire(&s->value);
	return shmkv__load_acquire(&s->state) == f->state;
}

static SHMKV__INLINE bool shmkv__fast_swap(const struct shmkv__fast *f,
					   uint64_t old, uint64_t nv)
{
	/* Full barrier: the command's linearization point, as in commit(). */
	return shmkv__cas_full(&f->slot->value, old, nv) == old;
}

static SHMKV__INLINE uint32_t shmkv__fast_ver(const struct shmkv__fast *f)
{
	return SLOT_VERSION(f->state);
}

/*
 * SETNX of the decimal form of @i on a prepared key, on the fast path
 * only (strings.c): what shmkv_key_setnx() does for such a value, without
 * printing and parsing it. Return: 1 (set), 0 (exists), -EAGAIN (take
 * shmkv_key_setnx() with the string instead).
 */
int shmkv__key_setnx_int(shmkv_t *kv, struct shmkv_keyref *ref, int64_t i);

/*
 * SET of @len bytes (which are not an inline integer's, and at most
 * value_max) with no option, on the slot of @f, of a handle that may
 * write: stored in a value block (or, over a block, in the slot's area:
 * shmkv__fast_set_inline tried it over anything else) and published as
 * the engine would, without an op. Return: true if stored; false if the engine
 * must decide (the word is not an inline integer, NONE, an inline string
 * or a block of this incarnation, or it kept moving, or storage ran out):
 * nothing changed.
 */
bool shmkv__set_bytes_fast(const struct shmkv__fast *f, const void *bytes,
			   size_t len);

/* The value word's kind for the fast path, in the slot version @ver, and
 * not frozen (a frozen word is being copied to the next table: no fast
 * path CASes it, and the engine answers from it): one compare of the top
 * 16 bits (kind, FROZEN, tag). */
static SHMKV__INLINE bool shmkv__word_is_int(uint64_t w, uint32_t ver)
{
	return (uint32_t)(w >> 48) ==
	       ((VAL_LIVE(VAL_INT) << 13) | VAL_INT_TAG_OF(ver));
}

/* NONE of version @ver, not DEAD, not frozen (FRESH or not): one masked
 * compare of kind, FROZEN, version and DEAD. */
#define SHMKV__NONE_LIVE_MASK (((uint64_t)7 << 61) | 0x1ffffffffull)
static SHMKV__INLINE bool shmkv__word_is_none(uint64_t w, uint32_t ver)
{
	return (w & SHMKV__NONE_LIVE_MASK) == (uint64_t)ver << 1;
}

/* Does the word name no value storage (NONE, an inline integer or a string
 * in the slot, of this incarnation, not frozen), so that replacing it
 * frees nothing? */
static inline bool shmkv__word_owns_nothing(uint64_t w, uint32_t ver)
{
	return shmkv__word_is_int(w, ver) || shmkv__word_is_none(w, ver) ||
	       VAL_KIND_LIVE(w) == VAL_LIVE(VAL_INLINE);
}

/* Fails with -ENOBUFS when the current value does not fit op->buf. */
static inline int shmkv__need_copy(const struct shmkv_op *op,
				   const struct shmkv_cur *cur)
{
	return op->want_bytes && cur->exists && cur->len > op->cap ? -ENOBUFS
								   : 0;
}

#endif /* SHMKV_ENGINE_H */
