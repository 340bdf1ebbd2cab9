/*
 * area.h - short values in the slot itself (VAL_INLINE, layout.h).
 *
 * A slot's bytes past its key hold short strings, so that a GET of one
 * touches one cache line. A published value is never rewritten in place:
 * a writer puts the new value in a region that no value word names now
 * (two values of up to half the room alternate ends; when only one fits,
 * every other write goes to a value block) and publishes it with the CAS
 * of the value word, as for a block.
 *
 * Who writes which bytes is decided by the slot's area word, a claim: only
 * its holder writes past the fixed part (an inline value, or an inserter's
 * key, table.c) and only it publishes an INLINE word. Hence, while a
 * writer holds the claim:
 *  - the slot's key cannot change (an inserter needs the claim to write
 *    one), so the room left by the writer's key is known;
 *  - the value word cannot become INLINE but by the writer's own CAS, so a
 *    region that the word did not name after the claim stays unnamed.
 * Readers copy the named bytes and accept them if the value word is
 * unchanged after the copy: the bytes are written only while no word names
 * them, and a slot's INLINE words carry the area's publish number, unique
 * over the slot's life (2^42 inline writes; the word is never reset).
 *
 * Nobody waits for a claim: a writer that finds it held by a live thread
 * stores a block, an inserter takes another slot. A claim whose thread is
 * dead is taken over with the number bumped, since the dead holder may
 * have published the next number before it could release.
 */
#ifndef SHMKV_AREA_H
#define SHMKV_AREA_H

#include <errno.h>
#include <string.h>

#include "atomic.h"
#include "fault.h"
#include "internal.h"

/* The claim when the fast CAS fails (see shmkv__area_claim). */
uint64_t shmkv__area_claim_slow(struct shmkv_slot_shm *s, uint32_t tid,
				bool judge);
/* Copies @n bytes: up to 32 with fixed-size moves (overlapping where @n
 * is not a multiple), which the compiler inlines; a libc memcpy call
 * costs as much as the rest of a short string's SET. */
static inline void shmkv__copy_short(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *p = src;

	if (n > 32) {
		memcpy(d, p, n);
	} else if (n >= 16) {
		memcpy(d, p, 16);
		memcpy(d + n - 16, p + n - 16, 16);
	} else if (n >= 8) {
		memcpy(d, p, 8);
		memcpy(d + n - 8, p + n - 8, 8);
	} else if (n >= 4) {
		memcpy(d, p, 4);
		memcpy(d + n - 4, p + n - 4, 4);
	} else {
		for (size_t i = 0; i < n; i++)
			d[i] = p[i];
	}
}

/* Recovery's and reclamation's: frees the claim of a dead thread on slot
 * @s, number bumped as a takeover's. Return: 1 if one was freed. */
int shmkv__area_reclaim(struct shmkv_slot_shm *s);

/*
 * Claims slot @s's area for this thread. A claim held by another thread
 * is taken over if that thread is dead; whether it is costs a read of
 * /proc, so it is asked if @judge, or if this thread already found the
 * same claim on its previous failed try (a live claim lasts a few dozen
 * instructions: one seen twice is stuck). Return: the word we installed
 * (non-zero: it names us), or 0 (held: do without).
 */
static inline uint64_t shmkv__area_claim(struct shmkv_slot_shm *s, bool judge)
{
	uint32_t tid = shmkv__self_tid();
	/* Relaxed: the CAS below decides on it. */
	uint64_t a = shmkv__load_relaxed(&s->area);

	/* Full barrier: the claim is ours before we read the slot's state
	 * and value words and write its bytes. */
	if (SLOT_AREA_TID(a) == 0 && tid == SLOT_AREA_TID(tid) &&
	    shmkv__cas_full(&s->area, a, a | tid) == a)
		return a | tid;
	return shmkv__area_claim_slow(s, tid, judge);
}

/* Gives the claim @held back, with the number of the inline value we
 * published under it if @published. */
static inline void shmkv__area_release(struct shmkv_slot_shm *s, uint64_t held,
				       bool published)
{
	uint64_t num = SLOT_AREA_NUM(held) + (published ? 1 : 0);

	/* Release: the bytes we wrote precede the next claimer's (whose CAS
	 * reads this store). A plain store is enough: nobody else writes a
	 * claim whose holder is alive. */
	shmkv__store_release(&s->area, SLOT_AREA_WORD(num, 0));
}

/*
 * Where @len bytes go in a slot of @size bytes holding a key of @klen
 * (<= key_max) bytes whose value word is @v: an offset from the slot's end
 * such that the region misses what @v names, if @v is INLINE. Tried: the
 * end, then just before @v's region. Return: the offset, or -1 (no room).
 */
static inline int shmkv__area_place(uint32_t size, uint32_t klen, uint64_t v,
				    size_t len)
{
	uint32_t room = size - SHMKV_SLOT_FIXED - klen, off = 0;

	if (VAL_KIND(v) == VAL_INLINE && VAL_INLINE_LEN(v) > 0 &&
	    len > VAL_INLINE_OFF(v))
		off = VAL_INLINE_OFF(v) + VAL_INLINE_LEN(v);
	if (len > VAL_INLINE_MAX || off > VAL_INLINE_MAX || len > room ||
	    off + len > room)
		return -1;
	return (int)off;
}

/* The bytes INLINE word @v names in slot @s of a store with slots of
 * @size bytes, or NULL if they do not fit in the slot (a corrupt word). */
static inline const unsigned char *
shmkv__inline_bytes(const struct shmkv_slot_shm *s, uint32_t size, uint64_t v)
{
	uint32_t off = VAL_INLINE_OFF(v), len = VAL_INLINE_LEN(v);

	if (VAL_INLINE_RESERVED(v) != 0 || off + len > size - SHMKV_SLOT_FIXED)
		return NULL;
	return (const unsigned char *)s + size - off - len;
}

/*
 * Reads the string INLINE word @v names in slot @s of a store with slots
 * of @size bytes: copies up to @cap bytes of it into @dst (if not NULL)
 * and compares it with @cmp (if not NULL: *@equal), then checks that @v
 * still names those bytes, so that what was read is the value @v
 * published. Return: 0, SHMKV__STALE (it moved: load the word again), or
 * -EBADMSG (the word names bytes outside the slot).
 */
static inline int shmkv__inline_read(const struct shmkv_slot_shm *s,
				     uint32_t size, uint64_t v, void *dst,
				     size_t cap, const void *cmp,
				     size_t cmp_len, bool *equal)
{
	const unsigned char *src = shmkv__inline_bytes(s, size, v);
	size_t len = VAL_INLINE_LEN(v);

	if (src == NULL)
		return -EBADMSG;
	if (dst != NULL && cap > 0)
		shmkv__copy_short(dst, src, len < cap ? len : cap);
	if (cmp != NULL)
		*equal = cmp_len == len && memcmp(cmp, src, len) == 0;
	/* Acquire fence: the reads of the bytes complete before the re-read
	 * of the word. Unchanged, no writer can have touched them: they are
	 * written only while no word names them, and the word's number never
	 * comes back. */
	shmkv__fence_acquire();
	return shmkv__load_relaxed(&s->value) == v ? 0 : SHMKV__STALE;
}

/*
 * Stages @len bytes in the area of slot @s of @kv, matched in state
 * word @state for a key of @klen bytes, for a CAS of its value word from
 * @old: claims the area, checks that the slot still holds the key and the
 * word is still @old, and copies the bytes into a region that @old does
 * not name. Return: the INLINE word to CAS in, with the claim in *@held
 * (shmkv__area_release() it whatever the CAS does), or 0 with nothing held
 * (no room, a live claimer, or the slot moved: store a block instead).
 * Inline: out of line, its call cost a SET into the slot ~35 instructions
 * (saving and passing eight arguments).
 */
static SHMKV__INLINE uint64_t shmkv__area_stage(const struct shmkv *kv,
						struct shmkv_slot_shm *s,
						uint64_t state, uint32_t klen,
						uint64_t old,
						const void *bytes, size_t len,
						uint64_t *held)
{
	int off;

	*held = 0;
	if (klen > kv->geo.key_max)
		return 0;
	off = shmkv__area_place(kv->geo.slot_size, klen, old, len);
	if (off < 0)
		return 0;
	*held = shmkv__area_claim(s, false);
	if (*held == 0)
		return 0;
	SHMKV_CRASH_POINT("area_claimed");
	/* Acquire, acquire: after our claim (a full barrier), and before our
	 * stores to the bytes. With the claim held the key cannot change, and
	 * the word can only move to one that names no area bytes. */
	if (shmkv__load_acquire(&s->state) != state ||
	    shmkv__load_acquire(&s->value) != old) {
		shmkv__area_release(s, *held, false);
		*held = 0;
		return 0;
	}
	/* Release fence, as a seqlock writer's: a reader whose copy sees any
	 * byte we write next also sees, at its re-read, the word that moved
	 * off these bytes (which our acquire load above observed). Free on
	 * x86 and ARMv8, where the acquire load already orders the stores. */
	shmkv__fence_release();
	shmkv__copy_short((unsigned char *)s + kv->geo.slot_size -
				  (uint32_t)off - len,
			  bytes, len);
	return VAL_INLINE_WORD(SLOT_AREA_NUM(*held) + 1, len, (uint32_t)off);
}

/*
 * Publishes INLINE word @nv, staged by shmkv__area_stage() under claim
 * @held, over @old in slot @s: the CAS (the command's linearization
 * point), then the claim's release. Return: whether the CAS won.
 */
static inline bool shmkv__area_publish(struct shmkv_slot_shm *s, uint64_t old,
				       uint64_t nv, uint64_t held)
{
	bool done;

	SHMKV_CRASH_POINT("area_written");
	/* Full barrier: publishes the bytes with the word (readers' acquire
	 * load of it pairs with this). */
	done = shmkv__cas_full(&s->value, old, nv) == old;
	if (done)
		SHMKV_CRASH_POINT("area_published");
	shmkv__area_release(s, held, done);
	return done;
}

#endif /* SHMKV_AREA_H */
