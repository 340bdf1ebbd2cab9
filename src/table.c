/*
 * table.c - the lock-free open-addressed table: finding, inserting and
 * giving back slots. The value word of a slot is handled in engine.c.
 *
 * Probing is linear from the key's home slot. Each home slot keeps a probe
 * bound: every key homed there lives at an offset below it. The bound only
 * grows (up to probe_limit), and an inserter raises it before its key
 * becomes visible, so a lookup that reads the bound and scans below it
 * cannot miss a key that was present for its whole scan.
 *
 * Duplicate-free insertion follows Nielsen & Karlsson's two-phase scheme
 * (PPoPP'16): a new key is first written into a slot marked INSERTING, then
 * the whole probe window is scanned for the same key. A MEMBER copy wins
 * outright; among INSERTING copies the one earliest in the probe sequence
 * wins: a scanner that meets an earlier one gives up its own slot and helps
 * the earlier one, a scanner that meets a later one kills it (CAS to
 * COLLIDED). Every transition out of INSERTING is a CAS on a versioned state
 * word, so each slot's fate is decided exactly once. The README gives the
 * argument that two MEMBER slots for one key can never coexist.
 *
 * Slots are given back when they hold a deleted key (MEMBER with no value):
 * first the value word is CAS'd from NONE to DEAD, which makes every pending
 * write to that key fail its CAS, then the state goes to EMPTY with the
 * version bumped. Both steps can be finished by anyone who finds them half
 * done, so nothing waits on a process that died between them.
 */
#include <errno.h>
#include <string.h>

#include "area.h"
#include "atomic.h"
#include "evict.h"
#include "fault.h"
#include "internal.h"
#include "lookup.h"

/* Returned for "no word": state 7 never occurs, while 0 is EMPTY(v0). */
#define NO_WORD (~(uint64_t)0)

#define LIVE_KEY_STATES ((1u << SLOT_INSERTING) | (1u << SLOT_MEMBER))

static void raise_bound(const struct shmkv_table *t, uint32_t home,
			uint32_t nb)
{
	uint16_t *p = &shmkv__slot(t, home)->probe_bound;
	/* Relaxed: the CAS below re-checks it. */
	uint32_t cur = shmkv__load16_relaxed(p);

	/* Bounded: each failure means the bound grew, and it is capped. */
	while (cur < nb) {
		/* Full barrier: the raise is visible before our INSERTING. */
		uint32_t seen = shmkv__cas16_full(p, (uint16_t)cur,
						  (uint16_t)nb);

		if (seen == cur)
			break;
		cur = seen;
	}
}

int shmkv__lookup(struct shmkv *kv, const struct shmkv_key *k,
		  struct shmkv_slot_ref *ref)
{
	return shmkv__lookup_inline(kv, k, ref);
}

bool shmkv__slot_still(const struct shmkv_slot_ref *r)
{
	/* Acquire: a value word read before this check belongs to the
	 * incarnation named by r->state if the state is unchanged. */
	return shmkv__load_acquire(&shmkv__slot(r->t, r->index)->state) ==
	       r->state;
}

/* CAS a slot from @w to EMPTY with the version bumped; returns the new
 * word, or NO_WORD if the slot changed first. */
static uint64_t give_back(const struct shmkv_table *t, uint32_t idx,
			  uint64_t w)
{
	uint64_t empty = SLOT_WORD(SLOT_EMPTY, 0, SLOT_VERSION(w) + 1);

	/* Full barrier: everything done to the old incarnation is ordered
	 * before the slot can be claimed again. */
	if (shmkv__cas_full(&shmkv__slot(t, idx)->state, w, empty) != w)
		return NO_WORD;
	return empty;
}

/*
 * The duplicate check (see the top of the file): decides slot @i, seen as
 * INSERTING word @wi at probe offset @di of key @k, to MEMBER or COLLIDED.
 * Any process may run it for any INSERTING slot. Each hop to an earlier
 * slot lowers @di, so it ends after at most probe_limit scans.
 */
static int assist_key(const struct shmkv *kv, const struct shmkv_key *k,
		      uint32_t i, uint64_t wi, uint32_t di)
{
	const struct shmkv_table *t = k->t;
	uint64_t *state_i;
again:
	state_i = &shmkv__slot(t, i)->state;
	for (uint32_t d = 0, retries = 0; d < shmkv__probe_bound(kv, k); d++) {
		uint32_t j = (k->home + d) & t->mask;
		uint64_t wj, collided_i, seen;
		int r;

		if (j == i)
			continue;
		r = shmkv__slot_holds(j, k, LIVE_KEY_STATES, &wj);
		/* Full-barrier CASes throughout: each decides a slot once. */
		collided_i = SLOT_WORD(SLOT_COLLIDED, 0, SLOT_VERSION(wi));
		if (r == SHMKV__SLOT_MOVED) {
			/* The table migrates: the key may be in the next one
			 * already (its window is moved from its home on), so
			 * no insert here may become a MEMBER. Ours looks again
			 * from the life word (tests/model/migration-design.md
			 * §4). A MOVED slot in a table no growth has left is
			 * corruption: looking again would meet it again. */
			if (!shmkv__table_left(kv, t))
				return -EBADMSG;
			shmkv__cas_full(state_i, wi, collided_i);
			return 0;
		}
		if (r <= 0) {
			if (r < 0)
				return r;
			continue;
		}
		if (SLOT_STATE(wj) == SLOT_MEMBER) {
			shmkv__cas_full(state_i, wi, collided_i);
			return 0;
		}
		if (d < di) { /* an earlier insert of the key wins: help it */
			shmkv__cas_full(state_i, wi, collided_i);
			SHMKV_CRASH_POINT("yielded");
			i = j, wi = wj, di = d;
			goto again;
		}
		seen = shmkv__cas_full(
			&shmkv__slot(t, j)->state, wj,
			SLOT_WORD(SLOT_COLLIDED, 0, SLOT_VERSION(wj)));
		if (seen != wj) {
			/* It changed (perhaps to MEMBER): look again. Never
			 * move past it undecided: that could promote a second
			 * copy of the key. Our slot stays INSERTING for the
			 * next helper. */
			if (++retries >= SHMKV__SLOT_READ_RETRIES)
				return -EAGAIN;
			d--;
		}
	}
	shmkv__cas_full(state_i, wi,
			SLOT_MEMBER_WORD(SLOT_VERSION(wi), t->epoch));
	return 0;
}

/* Runs the duplicate check for an INSERTING slot found in passing, e.g.
 * one a killed process left behind: its key is read from the slot. */
void shmkv__assist(struct shmkv *kv, const struct shmkv_table *t,
		   uint32_t idx, uint64_t w)
{
	struct shmkv_slot_shm *s = shmkv__slot(t, idx);
	unsigned char key[SHMKV_KEY_MAX_LIMIT];
	struct shmkv_key k;
	/* Relaxed: after the caller's acquire of @w; the state re-check
	 * after the copy validates it. */
	uint32_t len = SLOT_KEYMETA_LEN(shmkv__load32_relaxed(&s->keymeta));

	if (len > kv->geo.key_max)
		return; /* corrupt: recovery reports it, nobody can match it */
	memcpy(key, s->key, len);
	shmkv__fence_acquire();
	if (shmkv__load_relaxed(&s->state) != w)
		return; /* decided meanwhile */
	shmkv__key_init(kv, t, &k, key, len);
	assist_key(kv, &k, idx, w, (idx - k.home) & t->mask);
}

/*
 * Gives back a MEMBER slot whose key has no value (deleted, or half given
 * back by someone else). First the value word goes NONE -> DEAD: from then
 * on every CAS expecting this incarnation's NONE fails, so no write can land
 * in a slot that is being recycled. Then the state goes to EMPTY(v+1).
 * Return: the EMPTY word, or NO_WORD if the slot holds a value or changed.
 */
static uint64_t reclaim_member(const struct shmkv_table *t, uint32_t idx,
			       uint64_t w, bool thorough)
{
	struct shmkv_slot_shm *s = shmkv__slot(t, idx);
	uint32_t ver = SLOT_VERSION(w);
	/* Acquire: pairs with the CAS that stored the value. */
	uint64_t v = shmkv__load_acquire(&s->value);
	uint64_t dead = VAL_NONE_WORD(ver, 1);

	/* A just-inserted key's slot is recycled only on the thorough pass
	 * and only if its inserter is dead: two live inserters must not
	 * recycle each other's fresh slot forever (found by the model). */
	/* A frozen NONE is being copied (migrate.c): never recycled here. */
	if (VAL_KIND_LIVE(v) != VAL_LIVE(VAL_NONE) ||
	    VAL_NONE_VERSION(v) != ver ||
	    (VAL_IS_FRESH(v) &&
	     (!thorough || shmkv__pid_alive(VAL_FRESH_PID(v)))))
		return NO_WORD;
	/* Full barrier: a writer's CAS on NONE either precedes this and we
	 * fail, or follows it and fails itself. */
	if (v != dead && shmkv__cas_full(&s->value, v, dead) != v)
		return NO_WORD;
	SHMKV_CRASH_POINT("value_dead");
	return give_back(t, idx, w);
}

/*
 * Tries to make slot @idx ours (BUSY with our pid). On the thorough pass it
 * also recycles claims of dead processes and decides stuck inserts.
 * Return: the BUSY word we installed, 0, or NO_WORD (the table was given
 * back by a growth: look again from the life word).
 */
static uint64_t try_claim(struct shmkv *kv, const struct shmkv_table *t,
			  uint32_t idx, uint32_t pid, bool thorough,
			  bool *helped)
{
	uint64_t *state = &shmkv__slot(t, idx)->state;
	/* Acquire: pairs with the CAS that set the state we act on. */
	uint64_t w = shmkv__load_acquire(state);

	switch (SLOT_STATE(w)) {
	case SLOT_EMPTY:
		break;
	case SLOT_COLLIDED:
		w = give_back(t, idx, w);
		break;
	case SLOT_MEMBER:
		w = reclaim_member(t, idx, w, thorough);
		break;
	case SLOT_BUSY:
		w = thorough && !shmkv__pid_alive(SLOT_PID(w))
			    ? give_back(t, idx, w)
			    : NO_WORD;
		break;
	case SLOT_INSERTING:
		/* Helped: only if the check decided the slot (a slot that no
		 * check can decide, its key corrupt, must not send the insert
		 * to look again forever). Acquire: pairs with the decision's
		 * CAS. */
		if (thorough) {
			shmkv__assist(kv, t, idx, w);
			*helped |= shmkv__load_acquire(state) != w;
		}
		return 0;
	default:
		return 0; /* corrupt state: never claimed, reported by check */
	}
	if (w == NO_WORD)
		return 0;
	/* Full barrier: the claim is ours before we write the key. */
	uint64_t busy = SLOT_WORD(SLOT_BUSY, pid, SLOT_VERSION(w));
	if (shmkv__cas_full(state, w, busy) != w)
		return 0;
	/* A zero word is a slot's first use, or memory a growth gave back
	 * (punched: it reads as zeros). The claim was of live memory iff
	 * the table is still live after it (the CAS orders this load after
	 * it): otherwise abandon it, writing nothing more
	 * (tests/model/migration-design.md §7 rule 2). */
	if (w == 0 && !shmkv__table_live(kv, t))
		return NO_WORD;
	return busy;
}

/* publish(): the slot's area is held by a writer of an earlier key there. */
#define SKIPPED 2

/* Writes @k into the claimed slot and runs the duplicate check.
 * Return: as shmkv__insert, or SKIPPED (the slot was given back). */
static int publish(struct shmkv *kv, const struct shmkv_key *k, uint32_t idx,
		   uint32_t d, uint64_t busy, bool thorough,
		   struct shmkv_slot_ref *ref)
{
	const struct shmkv_table *t = k->t;
	struct shmkv_slot_shm *s = shmkv__slot(t, idx);
	uint32_t ver = SLOT_VERSION(busy);
	uint64_t inserting = SLOT_WORD(SLOT_INSERTING, 0, ver);
	uint64_t w, held;

	SHMKV_CRASH_POINT("slot_claimed");
	SHMKV_PAUSE_POINT("slot_claimed");
	/* The key bytes are the area's too (area.h): a writer that matched
	 * the slot's last key may still be writing a value over them. Its
	 * claim makes the slot taken, as a live process's BUSY one is. */
	held = shmkv__area_claim(s, thorough);
	if (held == 0) {
		give_back(t, idx, busy);
		return SKIPPED;
	}
	/* Relaxed stores: published by the full-barrier CAS to INSERTING. */
	shmkv__store32_relaxed(&s->keymeta, SLOT_KEYMETA(k->hash32, k->len));
	if (k->len > 0)
		memcpy(s->key, k->bytes, k->len);
	shmkv__area_release(s, held, false);
	shmkv__store_relaxed(&s->value, VAL_FRESH_WORD(ver, SLOT_PID(busy)));
	shmkv__store16_relaxed(&s->access, shmkv__access_new(kv, t));
	raise_bound(t, k->home, d + 1);
	SHMKV_CRASH_POINT("key_written");
	if (shmkv__cas_full(&s->state, busy, inserting) != busy)
		return 0; /* our claim was recycled (pid confusion): retry */
	SHMKV_CRASH_POINT("inserting");
	int err = assist_key(kv, k, idx, inserting, d);
	if (err)
		return err;
	/* Acquire: the decision made by whoever ran the check. */
	w = shmkv__load_acquire(&s->state);
	if (w == SLOT_MEMBER_WORD(ver, t->epoch)) {
		ref->t = t;
		ref->index = idx;
		ref->state = w;
		return 1;
	}
	if (SLOT_STATE(w) == SLOT_COLLIDED && SLOT_VERSION(w) == ver) {
		SHMKV_CRASH_POINT("collided");
		give_back(t, idx, w);
	}
	return 0;
}

/*
 * Inserts @k with no value. The first pass takes free or recyclable slots;
 * the second also recycles slots of dead claimants and decides stuck
 * inserts, which costs a kill(2) per claimed slot met.
 * Return: 1 and a MEMBER @ref (ours or an equal key's, found by the
 * duplicate check: the caller must look up again on 0), 0 (lost a race,
 * or the table was given back by a growth: look up again), -ENOSPC (no
 * slot in the probe window), -EROFS, -EAGAIN (a slot of the window kept
 * changing under the duplicate check), -EBADMSG (a MOVED slot in a table
 * no growth has left).
 */
int shmkv__insert(struct shmkv *kv, const struct shmkv_key *k,
		  struct shmkv_slot_ref *ref)
{
	uint32_t pid = shmkv__self_pid();

	if (kv->readonly)
		return -EROFS;
	bool helped = false;

	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t d = 0; d < kv->geo.probe_limit; d++) {
			uint32_t idx = (k->home + d) & k->t->mask;
			uint64_t busy = try_claim(kv, k->t, idx, pid,
						  pass == 1, &helped);

			if (busy == NO_WORD)
				return 0; /* a table given back: look again */
			int r = busy != 0 ? publish(kv, k, idx, d, busy,
						    pass == 1, ref)
					  : SKIPPED;

			if (r != SKIPPED)
				return r;
		}
	}
	/* A stuck insert we decided may have been our own key's, now a
	 * MEMBER: look again before calling the table full (model). */
	return helped ? 0 : -ENOSPC;
}

void shmkv__insert_undo(const struct shmkv_slot_ref *ref)
{
	struct shmkv_slot_shm *s = shmkv__slot(ref->t, ref->index);
	uint32_t ver = SLOT_VERSION(ref->state);
	uint64_t fresh = VAL_FRESH_WORD(ver, shmkv__self_pid());

	/* Relaxed filter: after a successful command the value has landed. */
	if (shmkv__load_relaxed(&s->value) != fresh)
		return;
	/* Full barrier, as in reclaim_member(): a writer that found the key
	 * and stores its first value either precedes this CAS (which then
	 * fails: the key is theirs now) or fails its own. */
	if (shmkv__cas_full(&s->value, fresh, VAL_NONE_WORD(ver, 1)) != fresh)
		return;
	SHMKV_CRASH_POINT("value_dead");
	give_back(ref->t, ref->index, ref->state);
}

/*
 * Recovery's and reclamation's entry: gives back slot @idx seen in state
 * @w if it is something a dead or finished process left behind.
 * Return: 1 if the slot was given back or decided, 0 if not.
 */
int shmkv__slot_reclaim(struct shmkv *kv, const struct shmkv_table *t,
			uint32_t idx, uint64_t w, bool check_pid)
{
	uint64_t v;

	switch (SLOT_STATE(w)) {
	case SLOT_BUSY:
		if (check_pid && shmkv__pid_alive(SLOT_PID(w)))
			return 0;
		return give_back(t, idx, w) != NO_WORD;
	case SLOT_INSERTING:
		shmkv__assist(kv, t, idx, w);
		return shmkv__load_acquire(&shmkv__slot(t, idx)->state) != w;
	case SLOT_COLLIDED:
		return give_back(t, idx, w) != NO_WORD;
	case SLOT_MEMBER:
		/* One half given back, or (checking pids) a dead inserter's
		 * key that never got its first value. (A deleted key's slot
		 * is no leftover: inserts recycle it as they pass.) Acquire:
		 * pairs with the CAS that stored the value. */
		v = shmkv__load_acquire(&shmkv__slot(t, idx)->value);
		if (!VAL_IS_DEAD(v) && !(check_pid && VAL_IS_FRESH(v)))
			return 0;
		return reclaim_member(t, idx, w, check_pid) != NO_WORD;
	default:
		return 0;
	}
}
