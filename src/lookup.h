/*
 * lookup.h - finding a key's slot, inline: the read side of table.c's
 * protocol (see the top of table.c), shared by the table's insert and
 * duplicate check and by the commands' straight-line paths, which call it
 * without a function call per probe.
 */
#ifndef SHMKV_LOOKUP_H
#define SHMKV_LOOKUP_H

#include <string.h>

#include "atomic.h"
#include "fault.h"
#include "hash.h"
#include "internal.h"

/* Re-reads of one slot whose state keeps changing under a compare. */
#define SHMKV__SLOT_READ_RETRIES 4096

#define SHMKV__IN_SET(state, mask) (((mask) >> (state)) & 1u)

static SHMKV__INLINE void shmkv__key_init(const struct shmkv *kv,
					  const struct shmkv_table *t,
					  struct shmkv_key *k, const void *key,
					  size_t len)
{
	uint64_t h = shmkv__hash(key, len, kv->hash_seed);

	k->bytes = key;
	k->t = t;
	k->len = (uint32_t)len;
	k->hash32 = (uint32_t)(h >> 32);
	k->home = (uint32_t)h & t->mask;
}

/* The probe bound kept in home slot @home_slot. */
static SHMKV__INLINE uint32_t shmkv__probe_bound_at(
	const struct shmkv *kv, const struct shmkv_slot_shm *home_slot)
{
	/* Relaxed: the bound publishes nothing. Its raise (a full-barrier CAS)
	 * precedes the INSERTING CAS, so a key present when we start is under
	 * the bound we read, and each slot scanned is validated by its own
	 * acquire of the state. Acquire here would only keep the scan after
	 * this load, which no argument uses (and costs a dmb on aarch64). */
	uint32_t b = shmkv__load16_relaxed(&home_slot->probe_bound);

	return b > kv->geo.probe_limit ? kv->geo.probe_limit : b;
}

static SHMKV__INLINE uint32_t shmkv__probe_bound(const struct shmkv *kv,
						 const struct shmkv_key *k)
{
	return shmkv__probe_bound_at(kv, shmkv__slot(k->t, k->home));
}

/* Word-wise compare: keys are short, and a libc memcmp call through the
 * PLT costs more than comparing them. As the hash reads a key: 4 to 16
 * bytes as two words from each side, which overlap for lengths that are
 * not a multiple (some bytes compared twice); a longer key 8 bytes at a
 * time until 16 or fewer are left, then those so. */
static SHMKV__INLINE bool shmkv__bytes_equal(const unsigned char *a,
					     const void *bv, size_t len)
{
	const unsigned char *b = bv;

	if (len >= 8) {
		for (; len > 16; a += 8, b += 8, len -= 8)
			if (shmkv__read64(a) != shmkv__read64(b))
				return false;
		return ((shmkv__read64(a) ^ shmkv__read64(b)) |
			(shmkv__read64(a + len - 8) ^
			 shmkv__read64(b + len - 8))) == 0;
	}
	if (len >= 4)
		return ((shmkv__read32(a) ^ shmkv__read32(b)) |
			(shmkv__read32(a + len - 4) ^
			 shmkv__read32(b + len - 4))) == 0;
	for (; len > 0; a++, b++, len--)
		if (*a != *b)
			return false;
	return true;
}

/* Compares a slot's key with @k; the caller validates the state around it. */
static SHMKV__INLINE bool shmkv__key_equal(const struct shmkv_slot_shm *s,
					   const struct shmkv_key *k)
{
	/* Relaxed: a racing rewrite is caught by the caller's state re-check.
	 * One load rejects all but 1/65536 of the other keys of the same
	 * length. */
	if (shmkv__load32_relaxed(&s->keymeta) !=
	    SLOT_KEYMETA(k->hash32, k->len))
		return false;
	/* k->len <= key_max, so this stays inside the slot. */
	return shmkv__bytes_equal(s->key, k->bytes, k->len);
}

/* shmkv__slot_holds_at: the slot is MOVED (migrate.c: its table is being
 * given up for the next one, where the key may be now). */
#define SHMKV__SLOT_MOVED 2

/*
 * Does slot @s hold @k in one of the states of @states? The key bytes are
 * stable for as long as the state word is unchanged (a slot's key is only
 * rewritten after a version bump), so the state is read before and after
 * the compare.
 * Return: 1 (yes, *@w is the state), 0 (no), SHMKV__SLOT_MOVED (not in
 * @states, MOVED), -EAGAIN (kept changing).
 */
static SHMKV__INLINE int shmkv__slot_holds_at(struct shmkv_slot_shm *s,
					      const struct shmkv_key *k,
					      unsigned states, uint64_t *w)
{
	for (int n = 0; n < SHMKV__SLOT_READ_RETRIES; n++) {
		/* Acquire: the key bytes read next are the ones published by
		 * the CAS that made this state (BUSY -> INSERTING). */
		uint64_t w1 = shmkv__load_acquire(&s->state);
		bool eq;

		if (!SHMKV__IN_SET(SLOT_STATE(w1), states))
			return SLOT_STATE(w1) == SLOT_MOVED ? SHMKV__SLOT_MOVED
							    : 0;
		eq = shmkv__key_equal(s, k);
		/* Acquire fence: the compare completes before the re-read. */
		shmkv__fence_acquire();
		if (shmkv__load_relaxed(&s->state) == w1) {
			*w = w1;
			return eq;
		}
	}
	return -EAGAIN;
}

/*
 * Does slot @s, in state word @state, hold @key (@klen <= key_max) by its
 * bytes? For a caller that knows where the key was but has not hashed it
 * (the plain commands' memo, strings_plain.c): the read of
 * shmkv__slot_holds_at (state, compare, fence, state again) in one pass,
 * with the key's length where the fingerprint would be; any change is a
 * no.
 */
static SHMKV__INLINE bool
shmkv__slot_still_holds(const struct shmkv_slot_shm *s, uint64_t state,
			const void *key, size_t klen)
{
	bool eq;

	/* Acquire: the key bytes read next are this state's. */
	if (shmkv__load_acquire(&s->state) != state)
		return false;
	/* Relaxed: the length is stable while the state is, which the
	 * re-read checks; klen <= key_max, so the compare stays inside the
	 * slot. */
	eq = SLOT_KEYMETA_LEN(shmkv__load32_relaxed(&s->keymeta)) == klen &&
	     shmkv__bytes_equal(s->key, key, klen);
	/* Acquire fence: the compare completes before the re-read. */
	shmkv__fence_acquire();
	return eq && shmkv__load_relaxed(&s->state) == state;
}

/* The same for slot @idx of @k's table. */
static SHMKV__INLINE int shmkv__slot_holds(uint32_t idx,
					   const struct shmkv_key *k,
					   unsigned states, uint64_t *w)
{
	return shmkv__slot_holds_at(shmkv__slot(k->t, idx), k, states, w);
}

/*
 * Has a growth out of table @t begun (the generation is at least 2e + 1)?
 * Only then may @t hold a MOVED state or a FROZEN value word: both are
 * written after the flip to 2e + 1, by a migrator that read it. For a
 * caller that has just loaded such a word: the acquire fence orders that
 * load before the relaxed load of the life word, which therefore sees the
 * flip (or a later word), unless the word is corruption. Slow paths only.
 */
static SHMKV__INLINE bool shmkv__table_left(const struct shmkv *kv,
					    const struct shmkv_table *t)
{
	const struct shmkv_header_shm *h = (const struct shmkv_header_shm *)
						   kv->base;

	shmkv__fence_acquire();
	return SHMKV_LIFE_GEN(shmkv__load_relaxed(&h->life)) >=
	       2u * (uint64_t)t->epoch + 1u;
}

/* A lookup in table @t met a MOVED slot: -EAGAIN (the table is being
 * given up for the next one: look again from the life word), or -EBADMSG
 * (no growth out of @t has begun: the word is corruption, and looking
 * again would meet it again). */
static SHMKV__INLINE int shmkv__moved_met(const struct shmkv *kv,
					  const struct shmkv_table *t)
{
	return shmkv__table_left(kv, t) ? -EAGAIN : -EBADMSG;
}

/* Finds @k's MEMBER slot. Return: 1 and *@ref (and the slot in *@slot),
 * 0 (absent: no MEMBER slot held it during the scan), -EAGAIN (a slot kept
 * changing under us, or a MOVED slot was met: the table is migrating, and
 * the key may be in the next one; look again from the life word),
 * -EBADMSG (a MOVED slot in a table no growth has left). */
static SHMKV__INLINE int shmkv__lookup_slot(const struct shmkv *kv,
					    const struct shmkv_key *k,
					    struct shmkv_slot_ref *ref,
					    struct shmkv_slot_shm **slot)
{
	/* The home slot, found once: its bound, then its key. */
	const struct shmkv_table *t = k->t;
	struct shmkv_slot_shm *s = shmkv__slot(t, k->home);
	uint32_t bound = shmkv__probe_bound_at(kv, s);

	/* A slot of two lines keeps its strings at the end: fetch that line
	 * while the first one is compared, not after the value word is read
	 * (a read for the string's bytes would start only then). */
	if (kv->geo.slot_size > SHMKV_CACHE_LINE)
		__builtin_prefetch((const char *)s + SHMKV_CACHE_LINE);
	for (uint32_t d = 0; d < bound; d++, s = shmkv__slot(t, k->home + d)) {
		uint32_t idx = (k->home + d) & t->mask;
		uint64_t w;
		int r = shmkv__slot_holds_at(s, k, 1u << SLOT_MEMBER, &w);

		if (__builtin_expect(r < 0 || r == SHMKV__SLOT_MOVED, 0))
			return r < 0 ? r : shmkv__moved_met(kv, t);
		if (r) {
			ref->t = t;
			ref->index = idx;
			ref->state = w;
			*slot = s;
			return 1;
		}
		SHMKV_PAUSE_POINT("lookup_probed");
	}
	return 0;
}

/* Is table @t still live (not yet given back: the generation is below
 * 2e + 2, the end of the growth out of it)? After a full barrier or an
 * acquire fence, a relaxed load of the life word. */
static SHMKV__INLINE bool shmkv__table_live(const struct shmkv *kv,
					    const struct shmkv_table *t)
{
	const struct shmkv_header_shm *h = (const struct shmkv_header_shm *)
						   kv->base;

	return shmkv__load_relaxed(&h->life) <
	       SHMKV_LIFE_OF_GEN(2u * t->epoch + 2u);
}

/*
 * May a command that found no slot of its key in table @t (the last table
 * it scanned) answer from that miss? Yes while @t is still live: T(x) is
 * given back (punched: it reads as zeros, a miss) only once the
 * generation reaches 2x + 2, the end of the growth out of it. Otherwise
 * the command must start again (tests/model/migration-design.md, §7 rule
 * 3).
 */
static SHMKV__INLINE bool shmkv__miss_stands(const struct shmkv *kv,
					     const struct shmkv_table *t)
{
	/* Acquire fence, then relaxed: the scan's loads of the table are
	 * done before this load, so a finish (and its punch) that they may
	 * have seen is seen here. */
	shmkv__fence_acquire();
	return shmkv__table_live(kv, t);
}

/* The same, without the slot. */
static SHMKV__INLINE int shmkv__lookup_inline(const struct shmkv *kv,
					      const struct shmkv_key *k,
					      struct shmkv_slot_ref *ref)
{
	struct shmkv_slot_shm *slot;

	return shmkv__lookup_slot(kv, k, ref, &slot);
}

#endif /* SHMKV_LOOKUP_H */
