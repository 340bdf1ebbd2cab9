/*
 * migrate.h - online growth of the table: T(e) migrates into T(e + 1),
 * twice its size, while every command keeps running (migrate.c; the
 * protocol and its proof are tests/model/migration-design.md).
 */
#ifndef SHMKV_MIGRATE_H
#define SHMKV_MIGRATE_H

#include <stdint.h>

#include "internal.h"
#include "tables.h"

/* Old slots a sweep step moves (from the claim hint, and at the
 * frontier). */
#define SHMKV__MIGRATE_CHUNK 64u

/* Is table @t seven eighths full (about: a sample of its slots)? Asked
 * after an insert that landed far from its key's home. */
bool shmkv__table_crowded(const struct shmkv_table *t);

/*
 * An insert found its key's window in table @t full: grows the table if
 * @t is the one commands write in now, after ending the growth into @t if
 * one is still under way. Return: 0 (look again: a growth ran, runs or
 * has started), -ENOSPC (cannot grow), or a growth's error.
 */
int shmkv__grow_for(struct shmkv *kv, const struct shmkv_table *t);

/*
 * Starts a growth of the table named by even life word @life (§3), unless
 * one has started since. Return: 0 (a growth runs now, or ran: look
 * again), -ENOSPC (the table is as large as the segment allows, the
 * growth would pass max_memory, or the system has no memory for it:
 * nothing changed), -ESTALE (removed).
 */
int shmkv__grow_start(struct shmkv *kv, uint64_t life);

/*
 * One bounded step of the migration that @tabs describes (§6): a chunk
 * from the claim hint and a chunk at the frontier, and the finish when
 * the frontier has passed every old slot. Return: 0, or the error of a
 * copy: -ENOSPC (its key's window in the new table is full), -EAGAIN
 * (SHMKV_RETRY_MAX races lost over the step's slots), -EBADMSG (words
 * that no process writes: a MOVED slot in the new table, a cursor of an
 * older growth). Never -ENOMEM: a copy allocates nothing it cannot do
 * without.
 */
int shmkv__migrate_step(struct shmkv *kv, const struct shmkv_tables *tabs);

/*
 * Moves the old window of key @k (hashed for @tabs->old, §5): its home
 * slot, then the slots below the home's probe bound read after that.
 * Return: 0 (every slot of the window is MOVED: the key is in the new
 * table if anywhere), or a copy's -ENOSPC, -EAGAIN (SHMKV_RETRY_MAX
 * races lost over the window's slots), -EBADMSG.
 */
int shmkv__migrate_window(struct shmkv *kv, const struct shmkv_tables *tabs,
			  const struct shmkv_key *k);

/*
 * Copies frozen value @v of old slot @s (index @idx of @tabs->old, MEMBER
 * word @w) into the new table (§4, "The copy"; migrate_copy.c): finds or
 * inserts its key there and CASes the value, re-encoded, over the FRESH
 * word it finds, unless @s is MOVED meanwhile (then someone else copied
 * it); a block @v names then points back at the new slot. Needs no value
 * memory. Return: 0 (copied, now or before, or nothing to copy: the
 * caller may seal @s MOVED), or -ENOSPC (the key's window in the new table
 * is full: the slot stays frozen, its key readable but not writable),
 * -EAGAIN (a race lost, or an area claim held: migrate_slot, whose
 * passes are counted, tries again), -EBADMSG.
 */
int shmkv__migrate_copy(struct shmkv *kv, const struct shmkv_tables *tabs,
			struct shmkv_slot_shm *s, uint32_t idx, uint64_t w,
			uint64_t v);

/*
 * A reader's look at the old table while it migrates (§5): key @k (hashed
 * for the old table) in a MEMBER slot not yet MOVED, whose value (frozen
 * or not) is the key's current one. Return: 1 and *@ref, 0 (not there:
 * look in the new table), -EAGAIN (a slot kept changing).
 */
int shmkv__migrate_lookup_old(struct shmkv *kv, const struct shmkv_key *k,
			      struct shmkv_slot_ref *ref);

/* shmkv_stats' growth fields. */
void shmkv__growth_stats(const struct shmkv *kv, struct shmkv_stats *st);

#endif /* SHMKV_MIGRATE_H */
