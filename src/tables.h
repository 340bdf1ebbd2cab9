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
 * Before it returns them, the handle holds those tables (giveback.c: they
 * are not given back while it is open) and has checked them against the
 * file, once per life word.
 * Return: 0, SHMKV__GROWING (out->old migrates into out->t), -ESTALE (the
 * store was removed), -EBADMSG (a generation beyond the reserved tables,
 * or one whose tables the file does not hold), -EAGAIN (the word kept
 * moving), SHMKV__REMOTE (a handle of another backend: nothing was read).
 * On an error but -ESTALE, @out holds the tables last held and checked.
 */
int shmkv__tables(const struct shmkv *kv, struct shmkv_tables *out);

/*
 * At attach (and create): holds the tables the life word names now and
 * checks them against the file (giveback.c), and makes them the handle's
 * first. Return: 0, -EBADMSG (corrupt), -EAGAIN, or a system call's
 * error.
 */
int shmkv__tables_attach(struct shmkv *kv);

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

/*
 * giveback.c: the tables a handle may touch, and giving old ones back.
 *
 * Holds (read-locks, once per handle) every table life word @life names,
 * then checks that the life word is still @life and that the file holds
 * those tables (no hole). Return: 0 (they are @kv's to use until
 * shmkv_close), 1 (the life word moved on: resolve again), -EBADMSG (a
 * generation beyond the reservation, or a table the file does not hold:
 * corrupt), or a system call's error.
 */
int shmkv__tables_hold(const struct shmkv *kv, uint64_t life);
/* The file check alone: 0, or -EBADMSG (as above). */
int shmkv__tables_verify(const struct shmkv *kv, uint64_t life);
/* Gives back every table below the live ones that no process holds and
 * the file still has memory in (a writable handle; tables this handle
 * holds are kept). */
void shmkv__tables_give_back(const struct shmkv *kv);
/* Closes @kv's table locks (shmkv_close, a failed attach). */
void shmkv__tables_release(struct shmkv *kv);
/* Memory of tables below the live ones that the file still holds (some
 * handle has them, or nobody has given them back yet). */
uint64_t shmkv__tables_kept(const struct shmkv *kv);
/* Does the file hold [@from, @to) of @kv's segment without a hole? */
bool shmkv__file_holds(const struct shmkv *kv, uint64_t from, uint64_t to);

#endif /* SHMKV_TABLES_H */
