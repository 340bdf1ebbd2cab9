/*
 * migrate.c - online growth of the table (issue 13): table T(e) migrates
 * into T(e + 1), twice its size, while every command keeps running. The
 * protocol, why it is linearizable and crash-safe, and the spin model
 * that checks it are in tests/model/migration-design.md; the section
 * numbers below are that file's.
 *
 * In short: a grower allocates T(e + 1) and flips the life word from even
 * 2e to odd 2e + 1 (§3). From then on every old slot is moved exactly
 * once, by whoever comes first: its value word is frozen (no CAS may
 * replace it any more), copied into T(e + 1), and its state word sealed
 * MOVED, which is terminal (§4). Writers move their key's old window
 * before they write in T(e + 1) (§5); everyone sweeps a bounded chunk per
 * command, behind a frontier that passes only slots it has seen MOVED
 * (§6). The helper that moves the frontier past the last old slot flips
 * the life word to 2e + 2 and gives the old tables' memory back (§7).
 * Every step is one CAS that anyone can redo, so a process killed
 * anywhere leaves a state that the next one finishes.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "area.h"
#include "atomic.h"
#include "commit.h"
#include "evict.h"
#include "expire.h"
#include "fault.h"
#include "lookup.h"
#include "migrate.h"
#include "owned.h"
#include "wait.h"

/* A cursor word: (generation << 32) | old slot index. */
#define CURSOR(gen, idx) (((uint64_t)(gen) << 32) | (uint32_t)(idx))
#define CURSOR_GEN(c)	 ((c) >> 32)
#define CURSOR_IDX(c)	 ((uint32_t)(c))

static struct shmkv_header_shm *header(const struct shmkv *kv)
{
	return (struct shmkv_header_shm *)kv->base;
}

/* Slots a look at the table's load samples, and the load (in 256ths) at
 * which a crowded insert starts a growth: seven eighths, so that a table
 * sized for its keys at three quarters (64-byte slots: 85 bytes a key)
 * does not grow, and a grown one is between 44% and 88% full. */
#define LOAD_SAMPLES 128u
#define LOAD_CONFIRM 2048u
#define LOAD_GROW    224u

/* Does a sample of @n random slots of @t say it is LOAD_GROW full? */
static bool sample_full(const struct shmkv_table *t, uint32_t n)
{
	uint32_t taken = 0;

	for (uint32_t i = 0; i < n; i++) {
		/* Relaxed: an estimate; nothing is read through it. */
		uint64_t w = shmkv__load_relaxed(
			&shmkv__slot(t, shmkv__rng())->state);

		taken += SLOT_STATE(w) != SLOT_EMPTY &&
			 SLOT_STATE(w) != SLOT_COLLIDED;
	}
	return taken * 256u >= LOAD_GROW * n;
}

bool shmkv__table_crowded(const struct shmkv_table *t)
{
	/* A small sample, then a large one to confirm it: every crowded
	 * insert of a table three quarters full asks, and one small sample
	 * in thousands overshoots by 3 standard deviations (a table sized
	 * for its keys would double for nothing). The large one (its
	 * deviation 0.7%) runs only after a small one said yes. */
	return sample_full(t, LOAD_SAMPLES) && sample_full(t, LOAD_CONFIRM);
}

int shmkv__grow_start(struct shmkv *kv, uint64_t life)
{
	struct shmkv_header_shm *h = header(kv);
	uint64_t gen = SHMKV_LIFE_GEN(life), e = gen >> 1, c;
	uint64_t grown = SHMKV_LIFE_OF_GEN(gen + 1);
	/* Relaxed: a setting, read as growth decides (as pages_grow's). */
	uint64_t max = shmkv__load_relaxed(&h->max_memory);
	int err;

	if (life & SHMKV_LIFE_REMOVED)
		return -ESTALE;
	if (gen & 1)
		return 0; /* a growth runs already */
	if (kv->readonly)
		return -EROFS;
	/* Relaxed: a filter (the flip's CAS decides): a grower that saw an
	 * older table allocates nothing. */
	if (shmkv__load_relaxed(&h->life) != life)
		return 0;
	if (e + 1 > kv->geo.epoch_max ||
	    shmkv__footprint(&kv->geo, shmkv__pages_ready(kv)) +
			    shmkv__tables_extra(&kv->geo, grown) >
		    max)
		return -ENOSPC;
	/* The table is zero when allocated, and zero is a fresh slot: EMPTY
	 * at version 0, bound 0, area free. Nothing writes it before the
	 * flip, and no table is ever used twice. */
	err = shmkv__table_allocate(kv, (uint32_t)e + 1);
	if (err) {
		shmkv__table_punch(kv, (uint32_t)e + 1);
		return -ENOSPC;
	}
	SHMKV_CRASH_POINT("grow_fallocated");
	/* The cursors from whatever an earlier growth left (a grower that
	 * dies here leaves them to the next one). Relaxed load: the CAS
	 * checks it. Full-barrier CASes: ordered before the flip, so that
	 * whoever reads the odd life word reads these cursors. */
	for (uint64_t *cur = &h->grow_front; cur <= &h->grow_claim; cur++)
		/* Never back to an older generation: a stale grower must
		 * not reset the cursors of a growth already under way. */
		for (c = shmkv__load_relaxed(cur);
		     CURSOR_GEN(c) < gen + 1 &&
		     shmkv__cas_full(cur, c, CURSOR(gen + 1, 0)) != c;
		     c = shmkv__load_relaxed(cur))
			;
	/* Full barrier: the flip publishes the table and the cursors. A
	 * loser (another grower, or a removal) looks again. */
	if (shmkv__cas_full(&h->life, life, grown) == life)
		SHMKV_CRASH_POINT("grow_flipped");
	return 0;
}

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

/* A read of the value of old slot @s (MEMBER word @w) that failed: 1 if
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
	if (copy_block(kv, len, nv, &b) != 0)
		return COPY_AGAIN;
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
	if (VAL_IS_DEAD(x)) {
		shmkv__slot_reclaim(kv, ref->t, ref->index, ref->state, false);
		return 1;
	}
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

/*
 * Copies frozen value @v of old slot @s (index @idx, MEMBER word @w) into
 * the new table (§4, "The copy"): finds or inserts its key there and CASes
 * the value, re-encoded, over the FRESH word it finds, unless @s is MOVED
 * meanwhile (then someone else copied it). Needs no memory: a block is
 * handed over, inline bytes staged in the new slot. Return: 0, or
 * -ENOSPC (the key's window in the new table is full: the slot stays
 * frozen, its key readable but not writable), -EAGAIN (SHMKV_RETRY_MAX
 * tries lost to others), -EBADMSG.
 */
static int copy(struct shmkv *kv, const struct shmkv_tables *tabs,
		struct shmkv_slot_shm *s, uint32_t idx, uint64_t w, uint64_t v)
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
	for (uint32_t tries = 0; tries < SHMKV_RETRY_MAX; tries++) {
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

/* After the MOVED CAS: the waiters of the old slot (safe locks) wake and
 * find the key again through the life word. */
static void wake_moved(struct shmkv_slot_shm *s)
{
	if (shmkv__wait_marked(&s->wait))
		shmkv__wake(&s->wait);
}

/*
 * Moves old slot @idx (§4): seals a slot that holds no value, freezes and
 * copies one that does, then seals it MOVED. Each step is one CAS that
 * anyone may redo. Return: 0 (MOVED), or copy()'s error.
 */
static int migrate_slot(struct shmkv *kv, const struct shmkv_tables *tabs,
			uint32_t idx)
{
	struct shmkv_slot_shm *s = shmkv__slot(tabs->old, idx);

	for (uint32_t tries = 0; tries < SHMKV_RETRY_MAX; tries++) {
		/* Acquire: pairs with the CAS that made the state. */
		uint64_t w = shmkv__load_acquire(&s->state), v;
		uint64_t moved = SLOT_WORD(SLOT_MOVED, 0, SLOT_VERSION(w));

		if (SLOT_STATE(w) == SLOT_MOVED)
			return 0;
		if (SLOT_STATE(w) != SLOT_MEMBER) {
			/* No key with a value: sealed, whoever holds the
			 * claim or the insert, live or dead (their next CAS
			 * expects the old word). Full barrier: MOVED is seen
			 * only after everything before it. */
			if (shmkv__cas_full(&s->state, w, moved) == w) {
				SHMKV_CRASH_POINT("sealed");
				return 0;
			}
			continue;
		}
		/* Acquire, acquire: the value is this incarnation's if the
		 * state is unchanged after it. */
		v = shmkv__load_acquire(&s->value);
		if (shmkv__load_acquire(&s->state) != w)
			continue;
		if (VAL_IS_DEAD(v) && !VAL_IS_FROZEN(v)) {
			/* Half given back: its key has no value. */
			if (shmkv__cas_full(&s->state, w, moved) == w)
				return 0;
			continue;
		}
		if (!VAL_IS_FROZEN(v)) {
			/* Full barrier: no CAS replaces the word after this;
			 * one before it is carried by the copy. */
			if (shmkv__cas_full(&s->value, v, v | VAL_FROZEN_BIT) !=
			    v)
				continue;
			SHMKV_CRASH_POINT("frozen");
			v |= VAL_FROZEN_BIT;
		}
		if (VAL_KIND(v) != VAL_NONE) {
			int err = copy(kv, tabs, s, idx, w, v);

			if (err)
				return err; /* the slot stays frozen */
		}
		/* Full barrier: a reader that sees MOVED sees the copy. */
		if (shmkv__cas_full(&s->state, w, moved) != w)
			continue;
		SHMKV_CRASH_POINT("moved");
		/* A value's block is not freed: its copy names it now (§10). */
		wake_moved(s);
		return 0;
	}
	return -EAGAIN;
}

int shmkv__migrate_window(struct shmkv *kv, const struct shmkv_tables *tabs,
			  const struct shmkv_key *k)
{
	uint32_t bound;
	int err = migrate_slot(kv, tabs, k->home);

	if (err)
		return err;
	/* Read after the home is MOVED: an insert in the old table that
	 * completes later finds MOVED in its duplicate check and collides,
	 * and one that raised the bound before is under it (§4). */
	bound = shmkv__probe_bound(kv, k);
	for (uint32_t d = 1; d < bound && err == 0; d++)
		err = migrate_slot(kv, tabs, (k->home + d) & tabs->old->mask);
	return err;
}

/* Moves old slots [@from, @from + CHUNK). Return: 0, or an error. */
static int migrate_chunk(struct shmkv *kv, const struct shmkv_tables *tabs,
			 uint32_t from)
{
	uint64_t n_old = tabs->old->mask + 1ull;

	for (uint64_t i = from; i < from + SHMKV__MIGRATE_CHUNK && i < n_old;
	     i++) {
		int err = migrate_slot(kv, tabs, (uint32_t)i);

		if (err)
			return err;
		/* A mover that died between its MOVED and its wake. */
		wake_moved(shmkv__slot(tabs->old, (uint32_t)i));
	}
	return 0;
}

/* Every old slot is MOVED: the new table is the table (§6), and the old
 * ones' memory goes back (§7). */
static void finish(struct shmkv *kv, const struct shmkv_tables *tabs)
{
	uint64_t gen = SHMKV_LIFE_GEN(tabs->life);

	/* Full barrier: after every MOVED this helper saw; before the punch,
	 * which a stalled process notices by re-reading life (§7). */
	if (shmkv__cas_full(&header(kv)->life, tabs->life,
			    SHMKV_LIFE_OF_GEN(gen + 1)) != tabs->life)
		return;
	SHMKV_CRASH_POINT("finished");
	/* Every table below the new one: the old one, and any page of an
	 * older one that a stalled process faulted back in. */
	for (uint32_t e = 0; e <= tabs->old->epoch; e++)
		shmkv__table_punch(kv, e);
	SHMKV_CRASH_POINT("punched");
}

int shmkv__migrate_step(struct shmkv *kv, const struct shmkv_tables *tabs)
{
	struct shmkv_header_shm *h = header(kv);
	uint64_t gen = SHMKV_LIFE_GEN(tabs->life), f, c;
	uint64_t n_old = tabs->old->mask + 1ull;
	int err;

	/* Full barrier (fetch-and-add; only atomicity is needed): a hint
	 * that spreads helpers over the table. Progress never depends on
	 * it. */
	c = shmkv__add_full(&h->grow_claim, SHMKV__MIGRATE_CHUNK);
	if (CURSOR_GEN(c) == gen && CURSOR_IDX(c) < n_old) {
		err = migrate_chunk(kv, tabs, CURSOR_IDX(c));
		if (err)
			return err;
	}
	/* Acquire: pairs with the frontier's CAS, so the chunks behind it
	 * are seen MOVED. */
	f = shmkv__load_acquire(&h->grow_front);
	if (CURSOR_GEN(f) != gen)
		return 0; /* a later growth's, or not yet this one's */
	if (CURSOR_IDX(f) < n_old) {
		err = migrate_chunk(kv, tabs, CURSOR_IDX(f));
		if (err)
			return err;
		/* Full barrier: whoever reads the new frontier sees the
		 * chunk's MOVED words. Failing: someone else moved it. */
		if (shmkv__cas_full(&h->grow_front, f,
				    f + SHMKV__MIGRATE_CHUNK) == f)
			SHMKV_CRASH_POINT("front");
		f = shmkv__load_acquire(&h->grow_front);
	}
	if (CURSOR_GEN(f) == gen && CURSOR_IDX(f) >= n_old)
		finish(kv, tabs);
	return 0;
}

int shmkv__migrate_lookup_old(struct shmkv *kv, const struct shmkv_key *k,
			      struct shmkv_slot_ref *ref)
{
	const struct shmkv_table *t = k->t;
	uint32_t bound = shmkv__probe_bound(kv, k);

	for (uint32_t d = 0; d < bound; d++) {
		uint32_t idx = (k->home + d) & t->mask;
		uint64_t w;
		int r = shmkv__slot_holds(idx, k, 1u << SLOT_MEMBER, &w);

		if (r < 0)
			return r;
		if (r == 1) {
			ref->t = t;
			ref->index = idx;
			ref->state = w;
			return 1;
		}
		SHMKV_PAUSE_POINT("lookup_probed");
	}
	return 0;
}

/* Runs steps of the growth that @tabs describes until it ends. Return: 0,
 * or a step's error. */
static int finish_growth(struct shmkv *kv, struct shmkv_tables *tabs)
{
	int err;

	/* Each step moves two chunks, or ends the growth: bounded by the
	 * old table's chunks, and by later growths (none start here). */
	while ((err = shmkv__tables(kv, tabs)) == SHMKV__GROWING) {
		err = shmkv__migrate_step(kv, tabs);
		if (err)
			return err;
	}
	return err;
}

int shmkv__grow_for(struct shmkv *kv, const struct shmkv_table *t)
{
	struct shmkv_tables tabs;
	int r = shmkv__tables(kv, &tabs);

	if (r < 0)
		return r;
	if (tabs.t != t)
		return 0; /* @t is not the table commands write in now */
	if (r == SHMKV__GROWING)
		/* @t is the new table of a growth: it can grow once that
		 * ends, which this insert makes happen now (a window full in
		 * a table twice the last is rare, and the writer that meets
		 * it pays). */
		return finish_growth(kv, &tabs);
	return shmkv__grow_start(kv, tabs.life);
}

int shmkv_maintain(shmkv_t *kv)
{
	struct shmkv_tables tabs;
	/* As a store-wide setting's checks: a writable handle of a live
	 * shared-memory store. */
	int err = shmkv__settable(kv);

	return err ? err : finish_growth(kv, &tabs);
}

/* The most slots the table that commands write in (epoch @e, @slots) may
 * reach by doubling, by grow_start's rule with the value pages allocated
 * now. */
static uint64_t slots_reachable(const struct shmkv *kv, uint64_t e,
				uint64_t slots)
{
	/* Relaxed: a setting, read as grow_start reads it. */
	uint64_t max = shmkv__load_relaxed(&header(kv)->max_memory);
	uint64_t used = shmkv__footprint(&kv->geo, shmkv__pages_ready(kv));

	while (e + 1 <= kv->geo.epoch_max &&
	       used + shmkv__tables_extra(&kv->geo,
					  SHMKV_LIFE_OF_GEN(2 * e + 1)) <=
		       max) {
		e++;
		slots *= 2;
	}
	return slots;
}

void shmkv__growth_stats(const struct shmkv *kv, struct shmkv_stats *st)
{
	const struct shmkv_header_shm *h = header(kv);
	struct shmkv_tables tabs;
	/* Relaxed: counts, read as they are now. */
	uint64_t life = shmkv__load_relaxed(&h->life);
	uint64_t f = shmkv__load_relaxed(&h->grow_front);
	uint64_t gen = SHMKV_LIFE_GEN(life);

	/* The table commands write in: T(e), or T(e+1) while one grows. */
	st->slots_max = slots_reachable(kv, (gen + 1) / 2, st->slots);

	st->growths = gen / 2;
	if ((shmkv__tables(kv, &tabs) == SHMKV__GROWING)) {
		st->growing_from = tabs.old->mask + 1ull;
		st->growing_moved = CURSOR_GEN(f) == SHMKV_LIFE_GEN(tabs.life)
					    ? (CURSOR_IDX(f) < st->growing_from
						       ? CURSOR_IDX(f)
						       : st->growing_from)
					    : 0;
	}
}
