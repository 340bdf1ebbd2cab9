/*
 * commit.h - a write's last steps: sealing the block that carries a new
 * value, and the CAS of the value word that publishes it with what must
 * come just before it (settling the block it replaces) and just after it
 * (releasing the area claim, freeing the replaced block).
 *
 * The engine (engine.c) and the straight-line SET of a string
 * (strings_block.c) both end here, so that a value is published the same
 * way, with the same crash points, whichever path wrote it.
 */
#ifndef SHMKV_COMMIT_H
#define SHMKV_COMMIT_H

#include "area.h"
#include "atomic.h"
#include "fault.h"
#include "internal.h"

/* Fills the header of our unpublished block @b, whose data is written:
 * @len bytes, expiring at @deadline (0: never), for the slot of
 * back-pointer @slot (BLK_BACK_WORD). */
static inline void shmkv__block_seal(struct shmkv_block_shm *b, size_t len,
				     int64_t deadline, uint32_t slot)
{
	/* Relaxed stores: published by the full-barrier CAS of the value
	 * word (paired with readers' acquire load of it), and nobody reads
	 * an unpublished block, so release would order nothing more. */
	shmkv__store32_relaxed(&b->len, (uint32_t)len);
	shmkv__store_relaxed((uint64_t *)&b->deadline_ms, (uint64_t)deadline);
	shmkv__store32_relaxed(&b->slot, slot);
}

/*
 * Publishes @nv over @old in slot @s of @kv: the CAS that is the command's
 * linearization point. @held is our claim of the slot's area when @nv is
 * an INLINE word staged under it (released here, whatever the CAS does),
 * else 0. If @old names a block, @old_owner is the id its tag named when
 * read: a block that names another live thread is settled to 0 before the
 * CAS (shmkv__value_settle), and on success the block is freed into this
 * thread's cache. A block we publish keeps our tid: it needs no
 * confirming, since a block that names a live thread and no slot can only
 * be in that thread's hands (README: Crashes).
 * Return: whether the CAS won (if not, nothing changed).
 */
static inline bool shmkv__commit_word(struct shmkv *kv,
				      struct shmkv_slot_shm *s, uint64_t old,
				      uint64_t nv, uint64_t held,
				      uint32_t old_owner)
{
	bool done;

	/* A frozen word is being copied to the next table (migrate.c): no
	 * CAS may replace it. The caller finds the key again, there. */
	if (VAL_IS_FROZEN(old)) {
		if (held != 0)
			shmkv__area_release(s, held, false);
		return false;
	}
	if (VAL_KIND(old) == VAL_BLOCK && old_owner != 0 &&
	    old_owner != shmkv__self_tid())
		shmkv__value_settle(kv, old, old_owner);
	if (held != 0) {
		done = shmkv__area_publish(s, old, nv, held);
	} else {
		if (VAL_KIND(nv) == VAL_BLOCK)
			SHMKV_CRASH_POINT("block_unpublished");
		/* Full barrier: publishes the new block's content with the
		 * word, and is the command's linearization point. */
		done = shmkv__cas_full(&s->value, old, nv) == old;
	}
	if (done && VAL_KIND(old) == VAL_BLOCK) {
		SHMKV_CRASH_POINT("old_block_unfreed");
		shmkv__value_free(kv, old);
	}
	return done;
}

#endif /* SHMKV_COMMIT_H */
