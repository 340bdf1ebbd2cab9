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
#define SHMKV_LOCK_REC_VERSION 1u

enum shmkv_lock_state {
	SHMKV_LOCK_FREE = 1,
	SHMKV_LOCK_HELD = 2,
};

struct shmkv_lock_rec {
	uint32_t magic;
	uint16_t version;
	uint16_t state;	     /* enum shmkv_lock_state */
	uint32_t pid;	     /* holder, or last holder when FREE */
	uint32_t reserved;   /* 0 */
	uint64_t start;	     /* holder's start time (/proc stat field 22),
				0: unknown, judge by pid alone */
	uint64_t token;	     /* fencing token of the last grant, >= 1 */
	int64_t acquired_ms; /* CLOCK_BOOTTIME ms of the last grant */
	int64_t deadline_ms; /* CLOCK_BOOTTIME ms: end of its lease */
};
_Static_assert(sizeof(struct shmkv_lock_rec) == 48, "lock record layout");

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
