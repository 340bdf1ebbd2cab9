/*
 * lock_handle.h - the fields of the lock handles (struct shmkv_lock, struct
 * shmkv_pattern). shmkv_lock.h gives callers fixed opaque storage
 * (SHMKV_LOCK_SIZE, SHMKV_PATTERN_SIZE), so these can change without
 * changing the ABI; the assertions keep them inside it.
 */
#ifndef SHMKV_LOCK_HANDLE_H
#define SHMKV_LOCK_HANDLE_H

#include <stdint.h>

#include "keyref.h"
#include "shmkv_lock.h"

#define SHMKV__LOCK_KEY_CAP (SHMKV_LOCK_PREFIX_LEN + SHMKV_LOCK_NAME_MAX + 1)
/* flags: the handle holds a grant it has not given back (lock.c's
 * LK_HOLDING; redis_lock.c sets it too, shmkv_lock_held tests it). */
#define SHMKV__LOCK_HOLDING 1u
/* Longest owner record of a lock on a Redis store (redis_lock.c). */
#define SHMKV__LOCK_REC_CAP 196

/* may_alias: as keyref.h's, the caller's storage is declared as the
 * public struct. */
struct __attribute__((may_alias)) shmkv__lock {
	shmkv_t *kv;
	uint64_t token;	     /* of the last grant; 0 before the first */
	int64_t deadline_ms; /* lease end of that grant, CLOCK_MONOTONIC */
	uint64_t word;	     /* value word that published it; 0: unknown */
	void *cell;	     /* its lock cell, or the last one (a hint) */
	uint64_t cell_ctl;   /* the cell's claim */
	uint64_t cell_ref;   /* the cell's block */
	uint32_t slot;	     /* its slot, valid when word != 0 */
	uint32_t epoch;	     /* and the table it is in (SLOT_EPOCH) */
	uint32_t pid;	     /* process that got the grant and the cell */
	uint32_t flags;	     /* private state bits */
	uint32_t key_len;
	char key[SHMKV__LOCK_KEY_CAP];
	struct shmkv_keyref ref; /* key's slot, cached between operations */
	/* A handle on a Redis store (redis_lock.h): key_len stays 0, the
	 * name is key[0, remote_name_len), rec the exact owner record of
	 * the last grant. */
	uint32_t remote; /* redis_lock.c's bits; 0: the shm store */
	uint16_t remote_name_len;
	uint16_t rec_len;
	char rec[SHMKV__LOCK_REC_CAP];
};

struct __attribute__((may_alias)) shmkv__pattern {
	shmkv_t *kv;
	uint32_t wait_index;
	uint32_t key_len;
	char key[SHMKV__LOCK_KEY_CAP];
	struct shmkv_keyref ref;
	/* A handle on a Redis store: key_len stays 0, the name is
	 * key[0, remote_name_len) (redis_lock_pattern.c). */
	uint32_t remote_name_len;
};

_Static_assert(sizeof(struct shmkv__lock) <= SHMKV_LOCK_SIZE &&
		       sizeof(struct shmkv_lock) == SHMKV_LOCK_SIZE,
	       "lock handle fields outgrew SHMKV_LOCK_SIZE");
_Static_assert(_Alignof(struct shmkv__lock) <= _Alignof(struct shmkv_lock),
	       "lock handle fields need more alignment than the public struct");
_Static_assert(sizeof(struct shmkv__pattern) <= SHMKV_PATTERN_SIZE &&
		       sizeof(struct shmkv_pattern) == SHMKV_PATTERN_SIZE,
	       "pattern handle fields outgrew SHMKV_PATTERN_SIZE");
_Static_assert(_Alignof(struct shmkv__pattern) <=
		       _Alignof(struct shmkv_pattern),
	       "pattern handle fields need more alignment than the public one");

/* The fields of a handle (NULL stays NULL). */
static inline struct shmkv__lock *shmkv__lock_of(struct shmkv_lock *lk)
{
	return (struct shmkv__lock *)(void *)lk;
}

static inline const struct shmkv__lock *
shmkv__lock_of_const(const struct shmkv_lock *lk)
{
	return (const struct shmkv__lock *)(const void *)lk;
}

static inline struct shmkv__pattern *shmkv__pattern_of(struct shmkv_pattern *pl)
{
	return (struct shmkv__pattern *)(void *)pl;
}

#endif /* SHMKV_LOCK_HANDLE_H */
