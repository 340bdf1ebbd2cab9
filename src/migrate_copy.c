/*
 * migrate_copy.c - the copy of one frozen old slot's value into the next
 * table, during an online growth (migrate.c; tests/model/migration-
 * design.md §4 "The copy", §10, §11, whose section numbers these are).
 *
 * A copy needs no memory, so that a store at its max_memory grows like
 * any other: an integer is re-tagged for its new slot; a value block is
 * handed over, the new slot's word naming the same block, whose
 * back-pointer is then moved from the old slot to the new one (as a lock
 * cell's is for a pin: tests/model/pinmove.pml checks both); a short
 * string is staged again in the new slot's area, in a block only if a
 * live thread holds that area's claim and a block is free, else the copy
 * looks again. The winner of the old slot's MOVED frees nothing.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "area.h"
#include "atomic.h"
#include "commit.h"
#include "fault.h"
#include "lookup.h"
#include "migrate.h"
#include "owned.h"

/*
 * After value @v of old slot @from_back has been copied into new slot
 * @to_back, by us or by someone before us: the block @v names (a BLOCK
 * word's value block, or the owned block of a lock cell's pin, owned.c),
 * which the copy hands over as it is, is made to point back at the new
 * slot. Reclamation keeps a block while the slot its back-pointer names
 * names it, so the back-pointer moves after the copy, never before: one
 * moved first names a slot that may be recycled before any copy lands
 * there (tests/model/pinmove.pml finds both orders' failures; this one it
 * passes, for a pin and for a value block alike). Before the old slot is
 * MOVED, so that once every slot is MOVED every block names the new
 * table. A failed CAS: someone moved it already (nobody moves one that
 * names the new table back), or @v names no block. Return: whether this
 * call moved it.
 */
static bool move_back(struct shmkv *kv, uint64_t v, uint32_t from_back,
		      uint32_t to_back)
{
	uint32_t unit, tag, cls;
	struct shmkv_block_shm *b;

	if (VAL_KIND(v) == VAL_BLOCK)
		unit = VAL_BLOCK_UNIT(v);
	else if (VAL_KIND(v) != VAL_INT ||
		 !val_pin_decode(VAL_INT_VALUE(v), &unit, &tag))
		return false;
	b = shmkv__block_at(kv, unit, &cls);
	/* Full barrier: after the copy's CAS, before the MOVED. */
	if (b == NULL ||
	    shmkv__cas32_full(&b->slot, from_back, to_back) != from_back)
		return false;
	SHMKV_CRASH_POINT("back_moved");
	return true;
}

/* A read of the inline bytes of old slot @s (MEMBER word @w) that failed:
 * 1 if
 * the slot has moved on (its table is given back at the growth's end: a
 * copier that stalled finds its source gone, and has nothing to copy),
 * else -EBADMSG (a frozen value and its bytes never change while the
 * state is @w). */
static int read_failed(const struct shmkv_slot_shm *s, uint64_t w)
{
	/* Acquire fence, then relaxed: the failed read is done before this
	 * load, so the MOVED (or the punch) that came before what it saw is
	 * seen here. */
	shmkv__fence_acquire();
	return shmkv__load_relaxed(&s->state) != w ? 1 : -EBADMSG;
}

/* copy_inline's answer when it can stage no bytes and have no block: look
 * again. */
#define COPY_AGAIN 2

/* A block for @len bytes of a copy, from this thread's cache or the free
 * lists only: no eviction, no pass over value memory (a copy that finds
 * none looks again, the cheap way out). Return: 0, -ENOMEM, -EBADMSG. */
static int copy_block(struct shmkv *kv, size_t len, uint64_t *nv,
		      struct shmkv_block_shm **b)
{
	int err = shmkv__value_alloc(kv, len, nv, b);

	/* A first block of this thread's cache: its reclamation step. */
	return err == SHMKV__CACHE_STARTED
		       ? shmkv__value_alloc_then(kv, len, nv, b, err)
		       : err;
}

/* INLINE value @v of old slot @s (state word @w) staged for new slot @n
 * (state @sn, value word @x): its bytes under @n's area claim (in *@held),
 * or, when a live thread holds that claim (another copier of the same
 * value, or @n's inserter), in a new block that names back @n_back.
 * Return: 0 and *@nv, 1 (@s moved on: nothing to copy), COPY_AGAIN
 * (neither: no block to be had; the claim's holder lands its copy or lets
 * go, so the caller looks again: a copy never fails for memory, which
 * would leave @s frozen and its key unwritable), -EBADMSG. */
static int copy_inline(struct shmkv *kv, struct shmkv_slot_shm *s, uint64_t w,
		       uint64_t v, struct shmkv_slot_shm *n, uint64_t sn,
		       uint64_t x, uint32_t n_back, uint32_t klen, uint64_t *nv,
		       uint64_t *held)
{
	unsigned char bytes[VAL_INLINE_MAX];
	struct shmkv_block_shm *b;
	size_t len = VAL_INLINE_LEN(v);
	int err;

	/* Frozen, the word names its bytes until the old table is given
	 * back: no writer touches a named region, and a state still @w after
	 * the copy proves the memory was not. */
	if (shmkv__inline_read(s, kv->geo.slot_size, v, bytes, sizeof(bytes),
			       NULL, 0, NULL) != 0)
		return read_failed(s, w);
	shmkv__fence_acquire();
	if (shmkv__load_relaxed(&s->state) != w)
		return 1; /* moved by someone: nothing to copy */
	*nv = shmkv__area_stage(kv, n, sn, klen, x, bytes, len, held);
	if (*nv != 0)
		return 0;
	err = copy_block(kv, len, nv, &b);
	if (err)
		return err == -ENOMEM ? COPY_AGAIN : err;
	memcpy(b->data, bytes, len);
	shmkv__block_seal(b, len, 0, n_back);
	return 0;
}

/* Gives back what copy_inline made for a copy that did not land: the
 * claim, or the block it allocated (never a block handed over). */
static void copy_undo(struct shmkv *kv, struct shmkv_slot_shm *n, uint64_t v,
		      uint64_t nv, uint64_t held)
{
	if (held != 0)
		shmkv__area_release(n, held, false);
	else if (VAL_KIND(v) == VAL_INLINE && VAL_KIND(nv) == VAL_BLOCK)
		shmkv__value_free(kv, nv);
}

/*
 * The new table's slot of key @k, found or inserted, in *@ref; a slot we
 * inserted first in *@mine. Return: 1, 0 (look again), or -ENOSPC (the
 * key's window in the new table is full), -EROFS.
 */
static int copy_target(struct shmkv *kv, const struct shmkv_key *k,
		       struct shmkv_slot_ref *ref, struct shmkv_slot_ref *mine)
{
	int r = shmkv__lookup(kv, k, ref);

	if (r != 0)
		return r == -EAGAIN ? 0 : r;
	r = shmkv__insert(kv, k, ref);
	if (r == 1 && mine->state == 0)
		*mine = *ref;
	return r == -EAGAIN ? 0 : r;
}

/* Old slot @s (index @idx, MEMBER word @w) whose frozen value @v a copy
 * carries, and its key, hashed for the new table. */
struct copy_src {
	struct shmkv_slot_shm *s;
	uint32_t idx, klen;
	uint64_t w, v;
	uint64_t life; /* the growth's life word */
	struct shmkv_key k;
};

/* Value @c->v re-encoded for new slot @ref (@n, value word @x), in *@nv
 * with an area claim in *@held: an INT re-tagged for its new slot, a
 * BLOCK word the same block (handed over: its back-pointer moves once
 * the copy lands, move_back), INLINE bytes staged again. Only the last
 * ever allocates, and only when it can. Return: 0, 1 (nothing to copy:
 * moved meanwhile), COPY_AGAIN, -EBADMSG. */
static int copy_encode(struct shmkv *kv, const struct copy_src *c,
		       const struct shmkv_slot_ref *ref,
		       struct shmkv_slot_shm *n, uint64_t x, uint64_t *nv,
		       uint64_t *held)
{
	*held = 0;
	if (VAL_KIND(c->v) == VAL_INT) {
		*nv = VAL_INT_WORD(SLOT_VERSION(ref->state),
				   VAL_INT_VALUE(c->v));
		return 0;
	}
	if (VAL_KIND(c->v) == VAL_BLOCK) {
		/* Expired or not: a key copied expired reads as absent
		 * there, and is given back as any expired key is. */
		*nv = c->v & ~VAL_FROZEN_BIT;
		return 0;
	}
	return copy_inline(kv, c->s, c->w, c->v, n, ref->state, x,
			   BLK_BACK_OF(ref->index, ref->state), c->klen, nv,
			   held);
}

/* The copy of @c has landed in new slot @ref, by us or by a copier before
 * us that may have died after its CAS: the block it hands over (if any)
 * is made to name @ref. */
static void copy_landed(struct shmkv *kv, const struct copy_src *c,
			const struct shmkv_slot_ref *ref)
{
	(void)move_back(kv, c->v, BLK_BACK_OF(c->idx, c->w),
			BLK_BACK_OF(ref->index, ref->state));
}

/* One try of the copy of @c into its key's new slot @ref. Return: 0
 * (done: copied, now or before, or nothing to copy), 1 (look again),
 * -EBADMSG. */
static int copy_into(struct shmkv *kv, const struct copy_src *c,
		     const struct shmkv_slot_ref *ref)
{
	struct shmkv_slot_shm *n = shmkv__slot(ref->t, ref->index);
	/* Acquire, then the state: as attempt() reads a value. */
	uint64_t x = shmkv__load_acquire(&n->value), nv, held;
	int r;

	if (!shmkv__slot_still(ref))
		return 1;
	if (VAL_IS_DEAD(x))
		/* Half given back: finished, and look again. One that cannot
		 * be given back (another version's, or frozen) in a slot that
		 * stays as it was, while the growth runs, no process wrote. */
		return shmkv__slot_reclaim(kv, ref->t, ref->index, ref->state,
					   false) ||
				       !shmkv__slot_still(ref) ||
				       !shmkv__life_same(kv, c->life)
			       ? 1
			       : -EBADMSG;
	if (!VAL_IS_FRESH(x) || VAL_IS_FROZEN(x)) {
		/* Copied already (s is not MOVED: nobody writes the key in
		 * the new table before), by a copier that may have died
		 * before moving a block's back-pointer. */
		copy_landed(kv, c, ref);
		return 0;
	}
	r = copy_encode(kv, c, ref, n, x, &nv, &held);
	if (r == COPY_AGAIN)
		sched_yield(); /* a claim's holder: let it run */
	if (r != 0)
		return r == COPY_AGAIN ? 1 : r == 1 ? 0 : r;
	if (held != 0)
		SHMKV_PAUSE_POINT("copy_staged"); /* holding n's claim */
	/* Acquire: a slot MOVED since is someone else's copy, which a late
	 * CAS of ours must not overwrite (a deleted key would come back). */
	if (shmkv__load_acquire(&c->s->state) != c->w) {
		copy_undo(kv, n, c->v, nv, held);
		return 0;
	}
	/* Full barrier: publishes the copy (bytes first); ordered before
	 * the back-pointer's CAS and the MOVED CAS that follow. The claim
	 * is released whatever it does. */
	if (!shmkv__commit_word(kv, n, x, nv, held, 0)) {
		copy_undo(kv, n, c->v, nv, 0);
		return 1;
	}
	SHMKV_CRASH_POINT("copied");
	copy_landed(kv, c, ref);
	return 0;
}

int shmkv__migrate_copy(struct shmkv *kv, const struct shmkv_tables *tabs,
			struct shmkv_slot_shm *s, uint32_t idx, uint64_t w,
			uint64_t v)
{
	unsigned char key[SHMKV_KEY_MAX_LIMIT];
	/* Relaxed: the key bytes are stable while the state is @w, which
	 * the acquire fence and re-read below check. */
	struct copy_src c = {
		.s = s,
		.idx = idx,
		.klen = SLOT_KEYMETA_LEN(shmkv__load32_relaxed(&s->keymeta)),
		.w = w,
		.v = v,
		.life = tabs->life,
	};
	struct shmkv_slot_ref ref, mine = { NULL, 0, 0 };
	int err = -EAGAIN;

	if (c.klen > kv->geo.key_max)
		return -EBADMSG;
	memcpy(key, s->key, c.klen);
	shmkv__fence_acquire();
	if (shmkv__load_relaxed(&s->state) != w)
		return 0;
	shmkv__key_init(kv, tabs->t, &c.k, key, c.klen);
	/* One pass: a race lost returns -EAGAIN, and migrate_slot's loop,
	 * whose passes share one budget per call, tries again. */
	for (uint32_t pass = 0; pass < 1; pass++) {
		int r;

		/* Acquire: pairs with the MOVED CAS of whoever finished. */
		if (shmkv__load_acquire(&s->state) != w) {
			err = 0;
			break;
		}
		SHMKV_PAUSE_POINT("copy_checked");
		r = copy_target(kv, &c.k, &ref, &mine);
		/* No room in a new table that this growth no longer writes
		 * in: a copier stalled past the growth's end (every old slot
		 * MOVED since) met slots the next growth sealed, or zeros of
		 * a table given back, whose claims it abandons (§7 rule 2).
		 * The state check above ends the copy. */
		if (r == -ENOSPC && !shmkv__life_same(kv, tabs->life))
			r = 0;
		if (r == 1)
			r = copy_into(kv, &c, &ref);
		else if (r == 0)
			r = 1;
		if (r != 1) {
			err = r;
			break;
		}
	}
	/* A slot we inserted that no copy landed in: given back. */
	if (mine.state != 0)
		shmkv__insert_undo(&mine);
	return err;
}
