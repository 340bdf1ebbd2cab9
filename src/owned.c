/*
 * owned.c - owned blocks, visits, and the reclamation of dead processes'
 * leftovers (see owned.h).
 *
 * Freeing an owned block, by its owner or by anyone once the owner is
 * dead, is three CASes on its tag: T -> T|DOOM, then either T|DOOM -> FREE
 * (gen+1) if no visit names the block, or back to T. A visitor announces
 * itself and then checks the tag has no DOOM: of a visitor and a freer
 * racing, one sees the other (both write, fence, then read the other's
 * word), so a block is never freed under a visit that re-validated it. A
 * freer that dies between its CASes leaves T|DOOM; once the owner is dead
 * too, reclamation finishes the free the same way (re-asserting DOOM with
 * a full-barrier CAS before it reads the visits).
 *
 * Reclamation is amortised: whoever starts owning blocks (a process's
 * first lock cell through a handle, a thread's first block cache of a
 * store: what short-lived processes and threads leave) runs one step over
 * the next SHMKV_REAP_STEP_UNITS units and SHMKV_REAP_STEP_SLOTS slots
 * (cursors in the header), and an allocation about to answer -ENOMEM
 * first runs a pass over all of value memory. A store used by short-lived
 * processes that never close it thus stays at its steady state without
 * anyone running recover.
 */
#include <errno.h>
#include <string.h>

#include "area.h"
#include "atomic.h"
#include "evict.h"
#include "fault.h"
#include "owned.h"
#include "tables.h"

static struct shmkv_header_shm *header(const struct shmkv *kv)
{
	return (struct shmkv_header_shm *)kv->base;
}

int shmkv__owned_alloc(struct shmkv *kv, size_t len, uint64_t *ref)
{
	struct shmkv_block_shm *b;
	int err;

	/* A process that starts owning blocks through this handle (lock
	 * cells: what a process that dies without closing leaves behind)
	 * first reclaims a step's worth of what dead processes left: each
	 * such process frees more than it can leak. A fork child's pid
	 * differs from its parent's: it runs one too. Process-local word; a
	 * race only runs two steps. Relaxed: it guards no data, only
	 * whether a step has run. */
	if (shmkv__load32_relaxed(&kv->reaped_pid) != shmkv__self_pid()) {
		shmkv__store32_relaxed(&kv->reaped_pid, shmkv__self_pid());
		shmkv__reap_first_step(kv);
	}
	err = shmkv__block_alloc_reaping(kv, len, ref);

	if (err)
		return err;
	b = shmkv__block(kv, *ref);
	/* Relaxed: nobody reads an owned block before a pin names it, and
	 * the CAS that publishes the pin orders these stores before it. */
	shmkv__store32_relaxed(&b->len, (uint32_t)len);
	shmkv__store32_relaxed(&b->slot, UINT32_MAX);
	shmkv__store_relaxed((uint64_t *)&b->deadline_ms, 0);
	return 0;
}

/*
 * The second half of a free: block @b (unit @unit) has tag @doomed, DOOM
 * set by a full-barrier CAS of ours (or re-asserted by one, for a freer
 * that died here), so a visitor that announced itself after it sees DOOM
 * and gives up. Return: 0 (freed, or someone else finished), -EBUSY
 * (visited: DOOM taken back, left for a later reclamation).
 */
static int free_doomed(struct shmkv *kv, struct shmkv_block_shm *b,
		       uint32_t unit, uint64_t doomed)
{
	SHMKV_PAUSE_POINT("owned_doomed");
	if (shmkv__visited(kv, unit)) {
		/* Full barrier: the block is whole again for its visitor. */
		shmkv__cas_full(&b->tag, doomed, doomed & ~BLK_DOOM);
		return -EBUSY;
	}
	/* Full barrier: readers re-check the generation after their copy. */
	shmkv__cas_full(&b->tag, doomed, BLK_TAG(BLK_GEN(doomed) + 1, 0, 0));
	return 0;
}

int shmkv__owned_free(struct shmkv *kv, uint64_t ref)
{
	struct shmkv_block_shm *b = shmkv__block(kv, ref);
	uint64_t tag;

	if (b == NULL)
		return 0;
	/* Relaxed: the CAS below decides. */
	tag = shmkv__load_relaxed(&b->tag);
	if (!BLK_USED(tag) || (tag & BLK_DOOM) ||
	    BLK_GEN(tag) != VAL_BLOCK_GEN(ref))
		return 0;
	/* Full barrier: the DOOM bit is visible before we read the visits
	 * (the freer's half of the store-buffer pair with a visitor). */
	if (shmkv__cas_full(&b->tag, tag, tag | BLK_DOOM) != tag)
		return 0;
	return free_doomed(kv, b, VAL_BLOCK_UNIT(ref), tag | BLK_DOOM);
}

#define VISIT_WORD(pid, unit) (((uint64_t)(pid) << 32) | ((uint64_t)(unit) + 1))
#define VISIT_PID(e)	      ((uint32_t)((e) >> 32))
#define VISIT_UNIT(e)	      ((uint32_t)(e)-1)

/* Takes entry @i if it is free or a dead visitor's. */
static bool visit_take(struct shmkv *kv, uint32_t i, uint64_t mine)
{
	uint64_t *e = &header(kv)->visits[i];
	/* Relaxed: a filter; the CAS decides. */
	uint64_t old = shmkv__load_relaxed(e);

	if (old != 0 && shmkv__pid_alive(VISIT_PID(old)))
		return false;
	/* Full barrier: the announcement is visible before the visitor's
	 * next reads (its re-validation of the block). */
	return shmkv__cas_full(e, old, mine) == old;
}

int shmkv__visit_begin(struct shmkv *kv, uint32_t unit, uint32_t *entry)
{
	uint32_t pid = shmkv__self_pid();
	uint64_t mine = VISIT_WORD(pid, unit);
	/* Start where this process's entries tend to be: spreads visitors. */
	uint32_t start = pid % SHMKV_VISITS;

	/* First free entries only; then those of dead visitors, which costs
	 * a liveness probe each. */
	for (uint32_t n = 0; n < SHMKV_VISITS; n++) {
		uint32_t i = (start + n) % SHMKV_VISITS;
		uint64_t *e = &header(kv)->visits[i];

		/* Relaxed filter; full-barrier CAS as in visit_take(). */
		if (shmkv__load_relaxed(e) == 0 &&
		    shmkv__cas_full(e, 0, mine) == 0) {
			*entry = i;
			return 0;
		}
	}
	for (uint32_t i = 0; i < SHMKV_VISITS; i++)
		if (visit_take(kv, i, mine)) {
			*entry = i;
			return 0;
		}
	return -EAGAIN;
}

void shmkv__visit_end(struct shmkv *kv, uint32_t entry)
{
	/* Release: our CAS on the value word happens before the entry is
	 * seen free, so a freer that reads it free finds the pin gone. */
	shmkv__store_release(&header(kv)->visits[entry % SHMKV_VISITS], 0);
}

bool shmkv__visited(struct shmkv *kv, uint32_t unit)
{
	bool found = false;

	for (uint32_t i = 0; i < SHMKV_VISITS; i++) {
		uint64_t *e = &header(kv)->visits[i];
		/* Relaxed: the caller's full barrier came before this scan. */
		uint64_t v = shmkv__load_relaxed(e);

		if (v == 0 || VISIT_UNIT(v) != unit)
			continue;
		if (shmkv__pid_alive(VISIT_PID(v))) {
			found = true;
			continue;
		}
		/* Full barrier (CAS): a dead visitor's entry, cleared once. */
		shmkv__cas_full(e, v, 0);
	}
	return found;
}

/*
 * Liveness answers of one reclamation pass: a dead process usually left
 * many blocks, each probe reads /proc, and every published block names
 * the live thread that wrote it (README: Block tags), so a step meets the
 * same few ids over and over. Direct-mapped by id.
 */
#define MEMO_SIZE 256u
struct pid_memo {
	uint32_t pid[MEMO_SIZE]; /* 0: empty (0 is never asked) */
	bool alive[MEMO_SIZE];
};

static bool memo_alive(struct pid_memo *m, uint32_t pid)
{
	uint32_t i = pid % MEMO_SIZE;

	if (m->pid[i] != pid) {
		m->pid[i] = pid;
		m->alive[i] = shmkv__pid_alive(pid);
	}
	return m->alive[i];
}

/* What the slot block @b points back at holds, as far as @b is concerned:
 * 2 its block word (published), 1 a pin of it (or perhaps: while the
 * table grows, a judge must keep the block and change nothing), 0
 * neither. */
static int named_by_slot(const struct shmkv *kv,
			 const struct shmkv_block_shm *b, uint64_t ref)
{
	/* Relaxed: the back-pointer and the value are compared once; a race
	 * with a replace only means the replacer frees the block itself. */
	uint32_t back = shmkv__load32_relaxed(&b->slot), unit, tag;
	struct shmkv_slot_shm *s;
	uint64_t life, v;
	bool orphan;
	int named;

	s = shmkv__back_slot(kv, back, false, &life, &orphan);
	if (s == NULL)
		return orphan ? 0 : 1; /* a growth runs: judged later */
	/* Relaxed: the compare's only question; see above. */
	v = shmkv__load_relaxed(&s->value);
	named = v == ref ? 2
		: VAL_KIND(v) == VAL_INT &&
				val_pin_decode(VAL_INT_VALUE(v), &unit, &tag) &&
				unit == VAL_BLOCK_UNIT(ref)
			? 1
			: 0;
	/* Judged in one table: if a growth began meanwhile, the value may
	 * have been copied and the block's pin moved (judged later). */
	return named != 0 || shmkv__life_same(kv, life) ? named : 1;
}

bool shmkv__owned_pinned(const struct shmkv *kv, uint64_t ref)
{
	struct shmkv_block_shm *b = shmkv__block(kv, ref);

	return b != NULL && named_by_slot(kv, b, ref) == 1;
}

/* Which published blocks (pid 0) a reclamation of one unit checks against
 * their slot, a slot read each: those whose slot lies in one region of
 * the table (step_region), or all of them (a full pass). */
#define ALL_REGIONS UINT32_MAX

/* The region of the table that slot @slot lies in: the table cut in
 * SHMKV_REAP_ORPHAN_TURNS contiguous ranges. */
static uint32_t slot_region(const struct shmkv *kv, uint32_t slot)
{
	uint32_t mask = shmkv__table_cmd(kv)->mask;

	return (uint32_t)((uint64_t)(BLK_BACK_INDEX(slot) & mask) *
			  SHMKV_REAP_ORPHAN_TURNS / ((uint64_t)mask + 1));
}

/* A dead owner's block that a freer DOOMed and died before finishing
 * (owned_free): finish the free for it, unless a pin still names it. */
static int reclaim_doomed(struct shmkv *kv, struct shmkv_block_shm *b,
			  uint32_t unit, uint64_t tag)
{
	uint64_t ref = VAL_BLOCK_WORD(unit, BLK_GEN(tag));

	if (BLK_PID(tag) == 0 || named_by_slot(kv, b, ref) != 0)
		return 0;
	/* Full barrier: re-asserts DOOM before we read the visits, as the
	 * dead freer's CAS did (our half of the pair with a visitor). */
	if (shmkv__cas_full(&b->tag, tag, tag) != tag)
		return 0;
	return free_doomed(kv, b, unit, tag) == 0;
}

/* Reclaims block @unit if a dead process left it, or if it is published,
 * its slot lies in region @region, and nothing names it. Return: 1 freed,
 * 2 settled (a dead publisher's block), 0 nothing to do. */
static int reclaim_unit(struct shmkv *kv, uint32_t unit, struct pid_memo *m,
			uint32_t region)
{
	uint32_t cls;
	struct shmkv_block_shm *b = shmkv__block_at(kv, unit, &cls);
	/* Acquire: pairs with the CAS that allocated, settled or cached it. */
	uint64_t tag = b ? shmkv__load_acquire(&b->tag) : 0;
	uint64_t ref = VAL_BLOCK_WORD(unit, BLK_GEN(tag));
	uint32_t pid = BLK_PID(tag);
	int named;

	if (!BLK_USED(tag) || (pid != 0 && memo_alive(m, pid)))
		return 0;
	/* Relaxed: only a filter. The back-pointer of a published block
	 * moves only while a growth hands it to the new table, when
	 * named_by_slot keeps every block anyway. */
	if (pid == 0 && region != ALL_REGIONS &&
	    slot_region(kv, shmkv__load32_relaxed(&b->slot)) != region)
		return 0;
	if (tag & BLK_DOOM)
		return reclaim_doomed(kv, b, unit, tag);
	named = named_by_slot(kv, b, ref);
	if (named == 2 && pid != 0) {
		/* Published by a thread now dead: settled (README: a
		 * published block keeps its publisher's id until then). */
		shmkv__cas_full(&b->tag, tag, BLK_TAG(BLK_GEN(tag), 0, 1));
		return 2;
	}
	if (named != 0)
		return 0; /* a live value, or a dead owner's block still pinned */
	if (pid == 0) {
		/* Unpublished by a process that died before freeing it. */
		shmkv__block_free(kv, ref);
		return 1;
	}
	return shmkv__owned_free(kv, ref) == 0 ? 1 : 0;
}

static void count(struct shmkv_reclaimed *r, int what)
{
	if (r != NULL && what == 1)
		r->blocks++;
	else if (r != NULL && what == 2)
		r->confirmed++;
}

uint64_t shmkv__reap_blocks(struct shmkv *kv, struct shmkv_reclaimed *report)
{
	struct pid_memo m = { 0 };
	uint64_t freed = 0;

	uint32_t pages = shmkv__pages_ready_refresh(kv);

	for (uint32_t page = 0; page < pages; page++) {
		uint32_t c = shmkv__page_class(kv, page);

		if (c == SHMKV__NO_CLASS)
			continue;
		for (uint32_t i = 0; i < kv->class_blocks[c]; i++) {
			int what = reclaim_unit(
				kv, page * kv->geo.units_per_page + i, &m,
				ALL_REGIONS);

			freed += what == 1;
			count(report, what);
		}
	}
	return freed;
}

void shmkv__reap_first_step(struct shmkv *kv)
{
	shmkv__reap_step(kv, SHMKV_REAP_STEP_UNITS, SHMKV_REAP_STEP_SLOTS,
			 NULL);
}

int shmkv__value_alloc_then(struct shmkv *kv, size_t len, uint64_t *ref,
			    struct shmkv_block_shm **hdr, int err)
{
	/* A store that evicts makes room by its policy, without the full
	 * pass below on every write that needs room; the block an eviction
	 * frees goes to this thread's cache, where the next try takes it.
	 * Bounded: another thread may take each block first. */
	for (uint32_t n = 0; err == -ENOMEM && n < SHMKV__EVICT_TRIES &&
			     shmkv__evict_for_value(kv, len);
	     n++)
		err = shmkv__value_alloc(kv, len, ref, hdr);
	/* As below. */
	if (err == -ENOMEM && shmkv__reap_blocks(kv, NULL) > 0)
		err = shmkv__value_alloc(kv, len, ref, hdr);
	/* A thread that starts caching this store's blocks (what a thread
	 * that exits leaves behind, tagged with its tid) reclaims a step's
	 * worth of what the dead left, as a new lock user does: each such
	 * thread frees more than it can leak. (Started by a failed try, it
	 * was just covered by the full pass.) */
	if (err == SHMKV__CACHE_STARTED) {
		shmkv__reap_first_step(kv);
		err = 0;
	}
	return err;
}

int shmkv__block_alloc_reaping(struct shmkv *kv, size_t len, uint64_t *ref)
{
	int err = shmkv__block_alloc(kv, len, ref);

	/* A full pass, bounded by the size of value memory: paid only when
	 * the store is out of room, where the alternative is failing. */
	if (err == -ENOMEM && shmkv__reap_blocks(kv, NULL) > 0)
		err = shmkv__block_alloc(kv, len, ref);
	return err;
}

/*
 * The region of the table whose published blocks the step checks at unit
 * position @pos (the cursor's, before the modulo by @total units).
 * Checking a published block against its slot reads a random slot (a page
 * fault in a fresh mapping), so a step checks only those whose slot lies
 * in one region, which moves on with each turn of the cursor: about
 * units/TURNS slot reads a step, all within 1/TURNS of the table (a few
 * pages), and every published block checked once in TURNS turns.
 */
static uint32_t step_region(uint64_t pos, uint64_t total)
{
	return (uint32_t)(pos / total % SHMKV_REAP_ORPHAN_TURNS);
}

/* Did the process that left INSERTING slot @idx die? Its pid is in the
 * FRESH value word it wrote before the state (table.c's publish). */
static bool inserter_dead(const struct shmkv_table *t, uint32_t idx)
{
	/* Acquire: pairs with the CAS to INSERTING that published it. A
	 * filter only: the duplicate check is safe for any caller. */
	uint64_t v = shmkv__load_acquire(&shmkv__slot(t, idx)->value);

	return VAL_IS_FRESH(v) && !shmkv__pid_alive(VAL_FRESH_PID(v));
}

/* Slot @idx: claims of the dead, lost duplicates, half-recycled and
 * never-valued keys, and inserts of the dead, decided as the next insert
 * there would (the duplicate check) and then given back if their key
 * never got a value. A live process's pending insert is its own. */
static void reap_slot(struct shmkv *kv, const struct shmkv_table *t,
		      uint32_t idx)
{
	uint64_t *state = &shmkv__slot(t, idx)->state;
	/* Acquire: pairs with the CAS that set the state. */
	uint64_t w = shmkv__load_acquire(state);

	shmkv__area_reclaim(shmkv__slot(t, idx));
	if (SLOT_STATE(w) == SLOT_EMPTY ||
	    (SLOT_STATE(w) == SLOT_INSERTING && !inserter_dead(t, idx)))
		return;
	if (!shmkv__slot_reclaim(kv, t, idx, w, true) ||
	    SLOT_STATE(w) != SLOT_INSERTING)
		return;
	/* Acquire: pairs with the CAS that decided it. */
	w = shmkv__load_acquire(state);
	if (SLOT_STATE(w) != SLOT_EMPTY)
		shmkv__slot_reclaim(kv, t, idx, w, true);
}

void shmkv__reap_step(struct shmkv *kv, uint32_t units, uint32_t slots,
		      struct shmkv_reclaimed *report)
{
	uint64_t total = (uint64_t)shmkv__pages_ready(kv) *
			 kv->geo.units_per_page;
	struct pid_memo m = { 0 };
	uint64_t at;

	if (kv->readonly)
		return;
	/* Full barrier (fetch-and-add): only spreads the work, so that
	 * processes opening at once take different ranges. Relaxed would
	 * do (it orders nothing), but liburcu 0.13's is full; once a step. */
	at = shmkv__add_full(&header(kv)->reap_unit, units) - units;
	for (uint32_t n = 0; n < units && total > 0; n++)
		count(report, reclaim_unit(kv, (uint32_t)((at + n) % total), &m,
					   step_region(at + n, total)));
	/* Full barrier, as above: only atomicity is needed. */
	at = shmkv__add_full(&header(kv)->reap_slot, slots) - slots;
	/* The table commands write in (the new one while T(e) migrates:
	 * the migration decides T(e)'s slots). */
	const struct shmkv_table *t = shmkv__table_cmd(kv);

	for (uint32_t n = 0; n < slots; n++)
		reap_slot(kv, t, (uint32_t)(at + n) & t->mask);
}
