/*
 * tables.h - the tables a command works in, resolved from the header's
 * life word (tables.c): the slow path behind shmkv__table_now.
 */
#ifndef SHMKV_TABLES_H
#define SHMKV_TABLES_H

#include <stdint.h>

#include "internal.h"

struct shmkv_tables {
	/* Where commands run: T(e), or T(e + 1) while T(e) migrates. */
	const struct shmkv_table *t;
	const struct shmkv_table *old; /* T(e) while it migrates; else NULL */
	uint64_t life;		       /* the life word they come from */
};

/*
 * Resolves the life word now in @kv's header into @out, and makes an even
 * generation this handle's (shmkv__table_now then gives its table).
 * Return: 0, SHMKV__GROWING (out->old migrates into out->t), -ESTALE (the
 * store was removed), -EBADMSG (a generation beyond the reserved tables),
 * SHMKV__REMOTE (a handle of another backend: nothing was read).
 */
int shmkv__tables(const struct shmkv *kv, struct shmkv_tables *out);

/*
 * The tables a walk of the whole store visits (check, stats, scan,
 * reclamation): the one the life word names, or T(e) then T(e + 1) while
 * T(e) migrates; for a removed store its last ones, and T(0) for a corrupt
 * word. Return: how many, in @ts[0..].
 */
uint32_t shmkv__tables_walk(const struct shmkv *kv,
			    const struct shmkv_table *ts[2]);

/*
 * The slot that block back-pointer @back names (BLK_BACK_WORD), for a
 * judgement of the block by what that slot's value word holds: in the
 * live table of the back-pointer's epoch. NULL if none can be judged: in a
 * removed or corrupt store, or while a growth runs unless @growing (a
 * judge that may free the block must wait: a copy hands a pin's block or
 * a value block to the new table, and its back-pointer moves after the
 * copy lands; one that only picks a key to evict may judge either table).
 * *@orphan: whether it names no live table (then nothing names the
 * block). The judge re-checks with shmkv__life_same(@life) after its
 * reads.
 */
struct shmkv_slot_shm *shmkv__back_slot(const struct shmkv *kv, uint32_t back,
					bool growing, uint64_t *life,
					bool *orphan);
/* Is the life word still @life (a judgement through shmkv__back_slot made
 * in one table)? */
bool shmkv__life_same(const struct shmkv *kv, uint64_t life);

#endif /* SHMKV_TABLES_H */
