/*
 * lock_wait.c - what a blocked lock acquirer needs: futex words to sleep
 * on. (Whether the process it waits for still exists: proc.c.)
 *
 * The futex words live in the segment's header (lock_wait[]), mapped
 * MAP_SHARED by every process, so they are shared futexes (no
 * FUTEX_PRIVATE_FLAG): the kernel keys them by file and offset, not by
 * address, and a wake in one process reaches a sleeper in another.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "lock_record.h"

static struct shmkv_header_shm *header(const struct shmkv *kv)
{
	return (struct shmkv_header_shm *)kv->base;
}

uint32_t shmkv__lock_wait_index(const struct shmkv *kv, const void *key,
				size_t klen)
{
	/* Bits 24-31: neither the slot's home (low bits) nor its filter
	 * (high half), so keys sharing a slot neighbourhood spread here. */
	return (uint32_t)(shmkv__hash(key, klen, kv->hash_seed) >> 24) %
	       SHMKV_LOCK_WAIT_WORDS;
}

void shmkv__lock_wait_enter(struct shmkv *kv, uint32_t idx)
{
	/* Full barrier: the waiter's half of the Dekker pair; the count is
	 * visible before our next load of the word and of the lock. */
	shmkv__add32_full(
		&header(kv)->lock_waiters[idx % SHMKV_LOCK_WAIT_WORDS], 1);
}

void shmkv__lock_wait_leave(struct shmkv *kv, uint32_t idx)
{
	/* Full barrier (CAS): not needed for correctness, a waker that
	 * still counts us only makes a wasted FUTEX_WAKE. */
	shmkv__add32_full(
		&header(kv)->lock_waiters[idx % SHMKV_LOCK_WAIT_WORDS],
		UINT32_MAX);
}

uint32_t shmkv__lock_wait_seq(const struct shmkv *kv, uint32_t idx)
{
	/* Acquire: pairs with the waker's full-barrier increment; our try
	 * of the lock, which follows, sees the change made before it. */
	return shmkv__load32_acquire(
		&header(kv)->lock_wait[idx % SHMKV_LOCK_WAIT_WORDS]);
}

uint32_t shmkv__lock_waiters(const struct shmkv *kv, uint32_t idx)
{
	/* Relaxed: a statistic for inspection. */
	return shmkv__load32_relaxed(
		&header(kv)->lock_waiters[idx % SHMKV_LOCK_WAIT_WORDS]);
}

static long futex(uint32_t *word, int op, uint32_t val,
		  const struct timespec *rel)
{
	return syscall(SYS_futex, word, op, val, rel, NULL, 0);
}

int shmkv__lock_wait_sleep(struct shmkv *kv, uint32_t idx, uint32_t seq,
			   int64_t ms)
{
	uint32_t *word = &header(kv)->lock_wait[idx % SHMKV_LOCK_WAIT_WORDS];
	struct timespec rel = { .tv_sec = ms / 1000,
				.tv_nsec = (ms % 1000) * 1000000 };

	/* The kernel compares *word with seq and queues us atomically with
	 * respect to FUTEX_WAKE: a wake after our load of seq is not lost. */
	if (futex(word, FUTEX_WAIT, seq, &rel) == 0)
		return 0;
	/* EAGAIN: the word moved (a release); EINTR: a signal. Both mean
	 * "try again now", as a wake-up does. */
	return errno == ETIMEDOUT ? -ETIMEDOUT : 0;
}

void shmkv__lock_wake(struct shmkv *kv, uint32_t idx)
{
	struct shmkv_header_shm *h = header(kv);

	idx %= SHMKV_LOCK_WAIT_WORDS;
	if (!shmkv__lock_has_waiters(kv, idx))
		return;
	/* Full barrier: the lock change is visible before the word moves,
	 * so a waiter that loads the new word and then tries sees it. */
	shmkv__add32_full(&h->lock_wait[idx], 1);
	/* One waiter: the others would only find the lock taken again. */
	futex(&h->lock_wait[idx], FUTEX_WAKE, 1, NULL);
}
