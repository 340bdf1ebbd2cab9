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
 * MOVED, which is terminal (§4; the copy is migrate_copy.c's). Writers
 * move their key's old window before they write in T(e + 1) (§5); everyone sweeps a bounded chunk per
 * command, behind a frontier that passes only slots it has seen MOVED
 * (§6). The helper that moves the frontier past the last old slot flips
 * the life word to 2e + 2 and gives the old tables' memory back (§7).
 * Every step is one CAS that anyone can redo, so a process killed
 * anywhere leaves a state that the next one finishes.
 */
#include <errno.h>

#include "atomic.h"
#include "evict.h"
#include "fault.h"
#include "lookup.h"
#include "migrate.h"
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
	/* Old tables whose holders have gone go back first, and those still
	 * held count (giveback.c). */
	shmkv__tables_give_back(kv);
	/* The value pages every process has made, not this handle's copy
	 * of their count (stale in a process that allocates no values). */
	if (e + 1 > kv->geo.epoch_max ||
	    shmkv__footprint(&kv->geo, shmkv__pages_ready_refresh(kv)) +
			    shmkv__tables_extra(&kv->geo, grown) +
			    shmkv__tables_kept(kv) >
		    max)
		return -ENOSPC;
	/* The table is zero when allocated, and zero is a fresh slot: EMPTY
	 * at version 0, bound 0, area free. Nothing writes it before the
	 * flip, and no table is ever used twice. */
	err = shmkv__table_allocate(kv, (uint32_t)e + 1);
	/* A failed allocation gives nothing back by hand: tmpfs undoes
	 * what the failed call allocated (under the file's lock, so never
	 * a page a concurrent grower's call allocated), and a punch here
	 * could take the table of a grower that succeeded and flipped
	 * meanwhile. */
	if (err)
		return -ENOSPC;
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

/* After the MOVED CAS: the waiters of the old slot (safe locks) wake and
 * find the key again through the life word. */
static void wake_moved(struct shmkv_slot_shm *s)
{
	if (shmkv__wait_marked(&s->wait))
		shmkv__wake(&s->wait);
}

/*
 * Passes a call of migrate_window or migrate_step may make again over
 * old slots, all its slots together (each pass one look at a slot, and
 * at most one copy attempt): a budget that the loops share, so that their
 * bounds add instead of multiplying. A pass is made again only when
 * another process won a CAS on one of the call's slots (old, or its
 * key's in the new table) in between: SHMKV_RETRY_MAX of them is what
 * -EAGAIN means everywhere, and a call moves at most
 * 2 * SHMKV__MIGRATE_CHUNK slots (a window: at most probe_limit), so each
 * slot may lose hundreds of races before the call gives up, more than
 * processes that write its key exist.
 */
#define MIGRATE_PASSES SHMKV_RETRY_MAX

/*
 * Moves old slot @idx (§4): seals a slot that holds no value, freezes and
 * copies one that does, then seals it MOVED. Each step is one CAS that
 * anyone may redo; each look again (a CAS lost, or copy()'s -EAGAIN)
 * spends one of *@passes. Return: 0 (MOVED), -EAGAIN (the passes ran
 * out), or copy()'s error.
 */
static int migrate_slot(struct shmkv *kv, const struct shmkv_tables *tabs,
			uint32_t idx, uint32_t *passes)
{
	struct shmkv_slot_shm *s = shmkv__slot(tabs->old, idx);

	for (; *passes > 0; --*passes) {
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
			int err = shmkv__migrate_copy(kv, tabs, s, idx, w, v);

			if (err == -EAGAIN)
				continue; /* a race lost: look again */
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
	uint32_t bound, passes = MIGRATE_PASSES;
	int err = migrate_slot(kv, tabs, k->home, &passes);

	if (err)
		return err;
	/* Read after the home is MOVED: an insert in the old table that
	 * completes later finds MOVED in its duplicate check and collides,
	 * and one that raised the bound before is under it (§4). */
	bound = shmkv__probe_bound(kv, k);
	for (uint32_t d = 1; d < bound && err == 0; d++)
		err = migrate_slot(kv, tabs, (k->home + d) & tabs->old->mask,
				   &passes);
	return err;
}

/* Moves old slots [@from, @from + CHUNK), spending *@passes. Return: 0,
 * or an error. */
static int migrate_chunk(struct shmkv *kv, const struct shmkv_tables *tabs,
			 uint32_t from, uint32_t *passes)
{
	uint64_t n_old = tabs->old->mask + 1ull;

	for (uint64_t i = from; i < from + SHMKV__MIGRATE_CHUNK && i < n_old;
	     i++) {
		int err = migrate_slot(kv, tabs, (uint32_t)i, passes);

		if (err)
			return err;
		/* A mover that died between its MOVED and its wake. */
		wake_moved(shmkv__slot(tabs->old, (uint32_t)i));
	}
	return 0;
}

/* Every old slot is MOVED: the new table is the table (§6), and the old
 * ones' memory goes back (§7) as soon as no process can be in them. */
static void finish(struct shmkv *kv, const struct shmkv_tables *tabs)
{
	uint64_t gen = SHMKV_LIFE_GEN(tabs->life);

	/* Full barrier: after every MOVED this helper saw; before any
	 * give-back, which reads the new generation before its write lock
	 * (giveback.c), so that a process refused its read lock reads it
	 * too. */
	if (shmkv__cas_full(&header(kv)->life, tabs->life,
			    SHMKV_LIFE_OF_GEN(gen + 1)) != tabs->life)
		return;
	SHMKV_CRASH_POINT("finished");
	/* Every table below the new one that no process holds: this handle
	 * holds T(e) until it closes (a thread of ours may be in it), so
	 * this gives back older ones whose holders have gone. The last
	 * holder of T(e) gives it back as it closes (or whoever comes next
	 * after it died). */
	shmkv__tables_give_back(kv);
	SHMKV_CRASH_POINT("punched");
}

int shmkv__migrate_step(struct shmkv *kv, const struct shmkv_tables *tabs)
{
	struct shmkv_header_shm *h = header(kv);
	uint64_t gen = SHMKV_LIFE_GEN(tabs->life), f, c;
	uint64_t n_old = tabs->old->mask + 1ull;
	uint32_t passes = MIGRATE_PASSES;
	int err;

	/* Full barrier (fetch-and-add; only atomicity is needed): a hint
	 * that spreads helpers over the table. Progress never depends on
	 * it. The barrier also orders the caller's load of the life word
	 * before the frontier's load below. */
	c = shmkv__add_full(&h->grow_claim, SHMKV__MIGRATE_CHUNK);
	if (CURSOR_GEN(c) == gen && CURSOR_IDX(c) < n_old) {
		err = migrate_chunk(kv, tabs, CURSOR_IDX(c), &passes);
		if (err)
			return err;
	}
	/* Acquire: pairs with the frontier's CAS, so the chunks behind it
	 * are seen MOVED. */
	f = shmkv__load_acquire(&h->grow_front);
	/* The grower set the cursors to this growth's generation before its
	 * flip (full barriers both), and the life word we read was at least
	 * that flip: an older generation is corruption. A later one is a
	 * later growth's: ours has ended. */
	if (CURSOR_GEN(f) < gen)
		return -EBADMSG;
	if (CURSOR_GEN(f) != gen)
		return 0;
	if (CURSOR_IDX(f) < n_old) {
		err = migrate_chunk(kv, tabs, CURSOR_IDX(f), &passes);
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
 * a step's error, or -EBADMSG (the frontier never reaches the end). */
static int finish_growth(struct shmkv *kv, struct shmkv_tables *tabs)
{
	uint64_t life = 0, steps = 0;
	int err;

	/* Bounded per growth (and growths by epoch_max): a step that ends
	 * without an error moves the frontier a chunk, or finds it moved a
	 * chunk or more since its last look (only a CAS of +CHUNK moves it),
	 * or finishes, or finds a later growth's cursor. So one growth takes
	 * at most n_old / CHUNK + 1 steps, however many helpers race: more
	 * means cursors or a life word that no process wrote. */
	while ((err = shmkv__tables(kv, tabs)) == SHMKV__GROWING) {
		if (tabs->life != life) {
			life = tabs->life;
			steps = 0;
		}
		if (++steps >
		    (tabs->old->mask + 1ull) / SHMKV__MIGRATE_CHUNK + 2)
			return -EBADMSG;
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

	if (err == 0)
		err = finish_growth(kv, &tabs);
	/* Old tables whose holders have all closed or died. */
	if (err == 0)
		shmkv__tables_give_back(kv);
	return err;
}

/* The most slots the table that commands write in (epoch @e, @slots) may
 * reach by doubling, by grow_start's rule with the value pages allocated
 * now. */
static uint64_t slots_reachable(const struct shmkv *kv, uint64_t e,
				uint64_t slots)
{
	/* Relaxed: a setting, read as grow_start reads it. */
	uint64_t max = shmkv__load_relaxed(&header(kv)->max_memory);
	uint64_t used = shmkv__footprint(&kv->geo,
					 shmkv__pages_ready_refresh(kv)) +
			shmkv__tables_kept(kv);

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
