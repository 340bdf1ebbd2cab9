/*
 * wait.c - futex words for processes waiting on a key (see wait.h).
 *
 * The words live in the segment (in slots, and in the header), mapped
 * MAP_SHARED by every process, so they are shared futexes (no
 * FUTEX_PRIVATE_FLAG): the kernel keys them by file and offset, not by
 * address, and a wake in one process reaches a sleeper in another.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "hash.h"
#include "wait.h"

uint32_t shmkv__wait_index(const struct shmkv *kv, const void *key,
			   size_t klen)
{
	/* Bits 24-31: neither the slot's home (low bits) nor its filter
	 * (high half), so keys sharing a slot neighbourhood spread here. */
	return (uint32_t)(shmkv__hash(key, klen, kv->hash_seed) >> 24) %
	       SHMKV_LOCK_WAIT_WORDS;
}

uint32_t shmkv__wait_mark(uint32_t *word)
{
	/* Relaxed: the CAS below re-reads it. */
	uint32_t w = shmkv__load32_relaxed(word);

	/* Always a successful RMW, even when already marked: that is the
	 * waiter's full barrier of the store-buffer pair (wait.h). Each
	 * failure means a waker moved the word on: bounded by their count. */
	for (;;) {
		uint32_t seen = shmkv__cas32_full(word, w, w | SHMKV_WAIT_MARKED);

		if (seen == w)
			return w | SHMKV_WAIT_MARKED;
		w = seen;
	}
}

static long futex(uint32_t *word, int op, uint32_t val,
		  const struct timespec *rel)
{
	return syscall(SYS_futex, word, op, val, rel, NULL, 0);
}

int shmkv__wait_sleep(uint32_t *word, uint32_t seen, int64_t ms)
{
	struct timespec rel = { .tv_sec = ms / 1000,
				.tv_nsec = (ms % 1000) * 1000000 };

	/* The kernel compares *word with @seen and queues us atomically with
	 * respect to FUTEX_WAKE: a wake after our load of @seen is not lost. */
	if (futex(word, FUTEX_WAIT, seen, &rel) == 0)
		return 0;
	/* EAGAIN: the word moved (a wake-up); EINTR: a signal. Both mean
	 * "try again now", as a wake-up does. */
	return errno == ETIMEDOUT ? -ETIMEDOUT : 0;
}

void shmkv__wake(uint32_t *word)
{
	/* Relaxed: see shmkv__wait_marked(); the CAS re-reads it. */
	uint32_t w = shmkv__load32_relaxed(word);

	if (!(w & SHMKV_WAIT_MARKED))
		return;
	/* Full barrier: the value's change is visible before the word
	 * moves, so a sleeper that sees the new word and tries sees it.
	 * Clearing the mark is what heals a killed waiter's: a live one
	 * marks again when it wakes. A failed CAS means another waker moved
	 * the word (and woke someone) or a waiter re-marked it: wake anyway,
	 * one needless wake-up at worst. */
	shmkv__cas32_full(word, w, (w + 2) & ~SHMKV_WAIT_MARKED);
	/* One sleeper: the others would only find the value taken again. */
	futex(word, FUTEX_WAKE, 1, NULL);
}
