/*
 * wait.h - futex words for processes waiting on a key's value to change
 * (locks). Not public API.
 *
 * A word is bit 0 MARKED (some waiter may sleep on it) and bits 1-31 a
 * wake-up sequence. It is the three-state futex design (Drepper, "Futexes
 * Are Tricky") spread over two words, the value word and this one:
 *
 *   waiter: w = mark(word) (an RMW, full barrier); try the value; if it
 *           must wait: sleep while word == w; after any wake-up, mark
 *           again before trying (other sleepers may remain).
 *   waker:  change the value (a full-barrier CAS); if the word is marked:
 *           clear the mark and move the sequence on (one CAS), then
 *           FUTEX_WAKE one sleeper.
 *
 * No lost wake-up: waiter and waker each write their word, fence, and read
 * the other's (a store-buffer pair), so either the waker sees the mark, or
 * the waiter's try sees the changed value. A woken waiter that takes the
 * value leaves the word marked, so the next change wakes the next sleeper.
 *
 * Self-healing: a waiter killed while asleep leaves the word marked; the
 * next change pays one needless FUTEX_WAKE and clears it, and the changes
 * after that pay nothing. Nothing counts waiters, so nothing can drift.
 */
#ifndef SHMKV_WAIT_H
#define SHMKV_WAIT_H

#include "internal.h"

#define SHMKV_WAIT_MARKED 1u

/* The futex word of the key in slot @slot (kept with the slot) of the
 * table commands use now: a key left in another table (a growth ran since
 * the slot was found) costs its waiter at most a nap, as a recycled slot
 * does. */
static inline uint32_t *shmkv__wait_slot(const struct shmkv *kv, uint32_t slot)
{
	return &shmkv__slot(shmkv__table_cmd(kv), slot)->wait;
}

/* Which of the header's futex words serves a key that comes and goes (its
 * slot changes): keys hashed alike share one. */
uint32_t shmkv__wait_index(const struct shmkv *kv, const void *key,
			   size_t klen);

static inline uint32_t *shmkv__wait_header(const struct shmkv *kv,
					   uint32_t idx)
{
	return &((struct shmkv_header_shm *)kv->base)
			->lock_wait[idx % SHMKV_LOCK_WAIT_WORDS];
}

/* Marks @word (full barrier). Return: the word to sleep on. */
uint32_t shmkv__wait_mark(uint32_t *word);

/* Sleeps while *@word == @seen, at most @ms (> 0).
 * Return: 0 (woken, the word moved, or a signal), -ETIMEDOUT. */
int shmkv__wait_sleep(uint32_t *word, uint32_t seen, int64_t ms);

/* After a change of the value: wakes one sleeper if the word is marked. */
void shmkv__wake(uint32_t *word);

/* Is @word marked? (A release's inline test before shmkv__wake.) */
static inline bool shmkv__wait_marked(const uint32_t *word)
{
	/* Relaxed: the waker's half of the store-buffer pair; the
	 * full-barrier CAS that changed the value orders this load after it. */
	return (shmkv__load32_relaxed(word) & SHMKV_WAIT_MARKED) != 0;
}

#endif /* SHMKV_WAIT_H */
