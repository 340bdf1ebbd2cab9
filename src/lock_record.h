/*
 * lock_record.h - the safe lock's owner record, process identity, and the
 * futex words blocked acquirers sleep on (lock.c, lock_wait.c,
 * lock_pattern.c). Not public API.
 */
#ifndef SHMKV_LOCK_RECORD_H
#define SHMKV_LOCK_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
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

/*
 * Inline lock values. Most of the time the value of "lock.<name>" is an
 * inline integer (the value word alone), so that acquire and release are
 * one CAS each and need no value storage:
 *   FREE: -token, for tokens 1..LOCK_INLINE_TOKEN_MAX;
 *   HELD: -(2^46 + unit * 2^16 + seq): the grant is described by a lock
 *         cell (below), the value block numbered @unit, in the claim whose
 *         sequence number ends in the 16 bits @seq.
 * Records (above) take over past LOCK_INLINE_TOKEN_MAX grants, and when no
 * cell can be had.
 */
#define LOCK_INLINE_HELD      ((int64_t)1 << 46)
#define LOCK_INLINE_TOKEN_MAX (LOCK_INLINE_HELD - 1)
#define LOCK_SEQ_MASK	      0xffffu

static inline int64_t lock_int_held(uint32_t unit, uint32_t seq)
{
	return -(LOCK_INLINE_HELD | ((int64_t)unit << 16) |
		 (int64_t)(seq & LOCK_SEQ_MASK));
}

/* Is @v a HELD inline value? Then *@unit and *@seq name its cell. */
static inline bool lock_int_cell(int64_t v, uint32_t *unit, uint32_t *seq)
{
	int64_t m;

	if (v >= 0 || v < -((LOCK_INLINE_HELD << 1) - 1))
		return false;
	m = -v;
	if (m < LOCK_INLINE_HELD)
		return false;
	m -= LOCK_INLINE_HELD;
	*unit = (uint32_t)(m >> 16);
	*seq = (uint32_t)(m & LOCK_SEQ_MASK);
	return true;
}

/*
 * A lock cell: one grant's owner, token and lease, in a value block that
 * the owning process allocated and never confirms, so the block's tag
 * names the owner's pid (and recovery frees it only once that process is
 * dead and no lock names it). A process keeps its cells in a pool (the
 * handle's cell_pool) and claims one per grant; only the claimer writes
 * it, between the claim and the CAS that publishes the grant (and the
 * lease, on extend, is written to a fresh cell). Readers copy it like a
 * seqlock: ctl, the fields, ctl again.
 */
struct shmkv_lock_cell_shm {
	uint64_t ctl;	     /* bits 32-63 claim sequence, bit 0 CLAIMED */
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
	uint32_t unit;
};

/*
 * Claims a cell of this process: @hint's first (a handle's last cell),
 * then the pool's, then a new one. Return: 0, -ENOMEM (the pool is full
 * or there is no value memory: use a record).
 */
int shmkv__cell_claim(struct shmkv *kv, struct lock_claim *c,
		      const struct lock_claim *hint);
/* Fills the claimed cell for a grant (before the CAS that publishes it). */
static inline void shmkv__cell_fill(const struct lock_claim *c, uint64_t start,
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
}
/* Gives the cell back to the pool; @c keeps it as a hint. */
void shmkv__cell_unclaim(const struct lock_claim *c);
/* The HELD inline value that publishes the claim. */
static inline int64_t shmkv__cell_value(const struct lock_claim *c)
{
	return lock_int_held(c->unit, LOCK_CELL_SEQ(c->ctl));
}
/*
 * Copies the grant a HELD inline value names into @rec.
 * Return: 0, -ESTALE (the cell no longer holds that claim: the value has
 * changed since it was read, or the segment is corrupt), -EBADMSG (@unit
 * names no block big enough for a cell).
 */
int shmkv__cell_read(const struct shmkv *kv, uint32_t unit, uint32_t seq,
		     struct shmkv_lock_rec *rec);
/*
 * The lock in key @key as a record, whatever its encoding (lock_list.c).
 * Return: 0, -ENOENT (no such key), -EEXIST (not a lock: including an
 * integer that names no lock cell's grant, as a plain SET could write),
 * or an error of GET.
 */
int shmkv__lock_read(shmkv_t *kv, const void *key, size_t klen,
		     struct shmkv_lock_rec *rec);
/*
 * Each thread keeps one claimed cell of its last store parked for its next
 * grant, so the uncontended acquire claims nothing (a plain store moves
 * the cell's sequence on). Take: the parked cell, claimed, sequence moved
 * on; false if there is none for @kv. Put: a cell whose grant ended is
 * parked, or given back to the pool if a cell is parked already. (The
 * claim comes as scalars: copying a just-built struct through memory
 * stalls on store forwarding, a measurable part of a 30 ns cycle.)
 */
bool shmkv__cell_take(const struct shmkv *kv, uint32_t pid,
		      struct lock_claim *c);
void shmkv__cell_put(const struct shmkv *kv, uint32_t pid,
		     struct shmkv_lock_cell_shm *cell, uint64_t ctl,
		     uint32_t unit);
/* A read-write handle opens (handle_init) and closes (shmkv_close): the
 * calling thread's parked cell of it and the unclaimed pool cells are
 * freed; other threads' parked cells of it stay claimed (64 bytes each)
 * until the process is dead and recovery frees them. */
void shmkv__cells_open(struct shmkv *kv);
void shmkv__cells_close(struct shmkv *kv);
/*
 * Recovery and check: marks in @bits (one bit per unit) every cell named
 * by a HELD inline value word @w. Return: true if @w named one.
 */
bool shmkv__cell_mark(const struct shmkv *kv, uint64_t w, unsigned char *bits);

/*
 * Decodes a lock key's inline integer value @v (FREE -token, or a HELD
 * value naming a lock cell) into @rec. Return: 0, -EEXIST (not a lock
 * value: a positive integer, or one naming no cell, as a plain SET could
 * write), -ESTALE (the cell changed since @v was read: read @v again).
 */
int shmkv__lock_rec_from_int(const struct shmkv *kv, int64_t v,
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
 * Futex words (lock_wait.c). Each lock key hashes to one of the header's
 * SHMKV_LOCK_WAIT_WORDS words; names that collide share a word, which
 * costs them spurious wake-ups or a missed one, bounded by the nap.
 *
 * Protocol, with no lost wake-up:
 *   waiter: enter (waiters++, full barrier); loop { seq = load word;
 *           try the lock; sleep while word == seq }; leave (waiters--).
 *   waker:  change the lock (a full-barrier CAS); if waiters > 0:
 *           word++ (full barrier) and FUTEX_WAKE 1.
 * Either the waker's load of waiters sees the waiter's increment, and the
 * word moves after the waiter's next load of it (so its FUTEX_WAIT returns
 * at once) or before it (so its try sees the change); or the waiter's
 * increment came later, and so did its try, which then sees the change.
 *
 * A waiter killed while counted leaves the count one too high for good:
 * releases on that word then make a FUTEX_WAKE nobody needs (a syscall of
 * cost, no error). shmkv_lock_list() shows the count.
 */
uint32_t shmkv__lock_wait_index(const struct shmkv *kv, const void *key,
				size_t klen);
void shmkv__lock_wait_enter(struct shmkv *kv, uint32_t idx);
void shmkv__lock_wait_leave(struct shmkv *kv, uint32_t idx);
uint32_t shmkv__lock_wait_seq(const struct shmkv *kv, uint32_t idx);
/* Sleeps while the word is @seq, at most @ms (> 0).
 * Return: 0 (woken, or the word had moved), -ETIMEDOUT. */
int shmkv__lock_wait_sleep(struct shmkv *kv, uint32_t idx, uint32_t seq,
			   int64_t ms);
/* Wakes one waiter of word @idx if there is any. */
void shmkv__lock_wake(struct shmkv *kv, uint32_t idx);

/* Does word @idx have a waiter? (The release path's inline test.) */
static inline bool shmkv__lock_has_waiters(const struct shmkv *kv, uint32_t idx)
{
	const struct shmkv_header_shm *h = (const struct shmkv_header_shm *)
						   kv->base;

	/* Relaxed: the waker's half of the Dekker pair; the full-barrier
	 * CAS that changed the lock just before orders this load after it. */
	return shmkv__load32_relaxed(
		       &h->lock_waiters[idx % SHMKV_LOCK_WAIT_WORDS]) != 0;
}
uint32_t shmkv__lock_waiters(const struct shmkv *kv, uint32_t idx);

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
