/*
 * lock_record.h - the safe lock's owner record and lock cells (lock.c,
 * lock_cell.c, lock_list.c, lock_pattern.c). Not public API.
 */
#ifndef SHMKV_LOCK_RECORD_H
#define SHMKV_LOCK_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "owned.h"
#include "wait.h"
#include "shmkv_lock.h"

/*
 * The owner record: the whole value of "lock.<name>", stored as value bytes
 * (a value block) with no key TTL. Written only whole, by one engine CAS,
 * so no reader sees a torn record; copied out before it is interpreted.
 * Host byte order: a segment is only shared by processes of one host.
 */
#define SHMKV_LOCK_MAGIC       0x4b4c4b53u /* "SKLK" */
#define SHMKV_LOCK_REC_VERSION 2u	   /* 2: times on CLOCK_MONOTONIC */

enum shmkv_lock_state {
	SHMKV_LOCK_FREE = 1,
	SHMKV_LOCK_HELD = 2,
};

struct shmkv_lock_rec {
	uint32_t magic;
	uint16_t version;
	uint16_t state;	     /* enum shmkv_lock_state */
	uint32_t pid;	     /* holder; FREE: 0 inline, a record's last */
	uint32_t reserved;   /* 0 */
	uint64_t start;	     /* holder's start time (/proc stat field 22),
				0: unknown, judge by pid alone */
	uint64_t token;	     /* fencing token of the last grant, >= 1 */
	int64_t acquired_ms; /* CLOCK_MONOTONIC ms of the last grant */
	int64_t deadline_ms; /* CLOCK_MONOTONIC ms: end of its lease */
};
_Static_assert(sizeof(struct shmkv_lock_rec) == 48, "lock record layout");

/* Most lock cells one process keeps per handle (held or extending grants
 * beyond this use records). */
#define SHMKV_CELL_POOL 128u

/*
 * Inline lock values. Most of the time the value of "lock.<name>" is an
 * inline integer (the value word alone), so that acquire and release are
 * one CAS each and need no value storage:
 *   FREE: -token, for tokens 1..LOCK_INLINE_TOKEN_MAX;
 *   HELD: a pin (layout.h) of the lock cell (below) that describes the
 *         grant, tagged with the low 16 bits of the cell's claim sequence.
 * Records (above) take over past LOCK_INLINE_TOKEN_MAX grants, and when no
 * cell can be had.
 */
#define LOCK_INLINE_TOKEN_MAX (VAL_PIN_BASE - 1)

/*
 * A lock cell: one grant's owner, token and lease, in an owned block
 * (owned.h) of the owning process. A process keeps its cells in a pool
 * (per handle) and claims one per grant; only the claimer writes it,
 * between the claim and the CAS that publishes the grant (and the lease,
 * on extend, is written to a fresh cell). Readers copy it like a seqlock:
 * ctl, the fields, ctl again.
 */
struct shmkv_lock_cell_shm {
	uint64_t ctl; /* bits 32-63 claim sequence, bit 1 BLOCKED (lock_cell.c),
			 bit 0 CLAIMED */
	uint64_t start;	     /* owner's start time, 0: judge by pid */
	uint64_t token;	     /* the grant's fencing token, >= 1 */
	int64_t acquired_ms; /* CLOCK_MONOTONIC */
	int64_t deadline_ms; /* CLOCK_MONOTONIC: lease end */
};
_Static_assert(sizeof(struct shmkv_lock_cell_shm) == 40, "lock cell layout");
#define LOCK_CELL_CLAIMED  1u
#define LOCK_CELL_SEQ(ctl) ((uint32_t)((ctl) >> 32))

/* A cell this process has claimed (process-local). */
struct lock_claim {
	struct shmkv_lock_cell_shm *cell; /* NULL: none */
	uint64_t ctl;			  /* its ctl while claimed */
	uint64_t ref;			  /* its owned block's word */
};

/* What a reader saw of a cell: what a taker re-validates. */
struct lock_cell_seen {
	uint64_t tag; /* the block's tag */
	uint64_t ctl; /* the claim, full width */
	uint32_t unit;
};

/*
 * Claims a cell of this process: @hint's first (a handle's last cell),
 * then the pool's, then a new one. Return: 0, -ENOMEM (the pool is full
 * or there is no value memory: use a record).
 */
int shmkv__cell_claim(struct shmkv *kv, struct lock_claim *c,
		      const struct lock_claim *hint);
/* Fills the claimed cell for a grant (before the CAS that publishes it),
 * and pins it to slot @slot. */
static inline void shmkv__cell_fill(const struct lock_claim *c, uint32_t slot, uint64_t start,
				    uint64_t token, int64_t acquired_ms,
				    int64_t deadline_ms)
{
	struct shmkv_lock_cell_shm *cell = c->cell;

	/* Relaxed: the CAS that publishes the grant is a full barrier. */
	shmkv__store_relaxed(&cell->start, start);
	shmkv__store_relaxed(&cell->token, token);
	shmkv__store_relaxed((uint64_t *)&cell->acquired_ms,
			     (uint64_t)acquired_ms);
	shmkv__store_relaxed((uint64_t *)&cell->deadline_ms,
			     (uint64_t)deadline_ms);
	shmkv__owned_pin(shmkv__owned_of(cell), slot);
}
/* Gives the cell back to the pool. */
void shmkv__cell_unclaim(const struct lock_claim *c);
/* The HELD inline value that publishes the claim. */
static inline int64_t shmkv__cell_value(const struct lock_claim *c)
{
	return VAL_PIN_INT(VAL_BLOCK_UNIT(c->ref), LOCK_CELL_SEQ(c->ctl));
}
/*
 * Copies the grant that value word @w (a pin, read from *@at) names into
 * @rec, and what a taker must re-validate into @seen (may be NULL). The
 * fields are the claim's that published @w: the word is read again after
 * the cell's claim word, and a cell's claim can only move after the word
 * that names it has (a claim stores its sequence before its fields, so
 * without that re-read a cell can show a new claim over the last one's
 * fields, under a pin that came back to the same bits).
 * Return: 0, -ESTALE (the cell no longer holds that claim: the value has
 * changed since it was read, or the segment is corrupt), -EBADMSG (@unit
 * names no block big enough for a cell).
 */
int shmkv__cell_read(const struct shmkv *kv, const uint64_t *at, uint64_t w,
		     struct shmkv_lock_rec *rec, struct lock_cell_seen *seen);
/*
 * A taker about to replace the grant it read (@seen): visits the cell
 * (owned.h) and re-validates it. On 0 the caller's CAS of the value word
 * can only succeed against that very grant; it ends the visit after.
 * Return: 0 and *@entry, -ESTALE (the grant has changed: read again),
 * -EAGAIN (no visit entry free: retry).
 */
int shmkv__cell_visit(struct shmkv *kv, const struct lock_cell_seen *seen,
		      uint32_t *entry);
/*
 * Each thread keeps one claimed cell of its last handle parked for its
 * next grant, so the uncontended acquire claims nothing (a plain store
 * moves the cell's sequence on). Take: the parked cell, claimed, sequence
 * moved on; false if there is none for @kv. Put: a cell whose grant ended
 * is parked, or given back to the pool if a cell is parked already. (The
 * claim is copied field by field: a whole-struct copy through memory
 * stalls on store forwarding, a measurable part of a 30 ns cycle.)
 */
bool shmkv__cell_take(const struct shmkv *kv, uint32_t pid,
		      struct lock_claim *c);
void shmkv__cell_put(const struct shmkv *kv, uint32_t pid,
		     const struct lock_claim *c);

/*
 * Decodes a lock key's inline integer value word @w, read from *@at (FREE
 * -token, or a HELD value naming a lock cell) into @rec, and for HELD what a taker
 * re-validates into @seen (may be NULL; seen->unit is UINT32_MAX for FREE).
 * Return: 0, -EEXIST (not a lock value: a positive integer, or one naming
 * no cell, as a plain SET could write), -ESTALE (the cell does not hold
 * that claim: if the value word has moved since @v was read, read it
 * again; if not, @v is an integer a plain SET wrote, not a lock).
 */
int shmkv__lock_rec_from_int(const struct shmkv *kv, const uint64_t *at,
			     uint64_t w, struct shmkv_lock_rec *rec,
			     struct lock_cell_seen *seen);

/*
 * The lock in key @key as a record, whatever its encoding (lock_list.c).
 * Works on a read-only handle. Return: 0, -ENOENT (no such key), -EEXIST
 * (not a lock), or an error of the store.
 */
int shmkv__lock_read(shmkv_t *kv, const void *key, size_t klen,
		     struct shmkv_lock_rec *rec);

/*
 * Parses a value read from a lock key.
 * Return: 0 (a record), -EEXIST (the value is something else).
 */
int shmkv__lock_rec_parse(const void *bytes, size_t len,
			  struct shmkv_lock_rec *rec);

/*
 * Lock keys: "lock." + @name into @key (capacity SHMKV_LOCK_PREFIX_LEN +
 * SHMKV_LOCK_NAME_MAX + 1, NUL-terminated).
 * Return: 0 and *@klen, -EINVAL (NULL or empty name), -ENAMETOOLONG.
 */
int shmkv__lock_key(const struct shmkv *kv, const char *name, char *key,
		    uint32_t *klen);

/*
 * Test seam of the pattern lock: if set, called at the named points of the
 * algorithm so a test can force the interleavings of the SETNX page.
 */
enum shmkv__pattern_step {
	SHMKV__PATTERN_SAW_EXPIRED, /* GET found an expired time */
	SHMKV__PATTERN_GETSET_LOST, /* GETSET's old value was not expired */
};
extern void (*shmkv__pattern_hook)(enum shmkv__pattern_step step);

#endif /* SHMKV_LOCK_RECORD_H */
