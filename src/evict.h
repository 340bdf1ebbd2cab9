/*
 * evict.h - eviction (Redis's maxmemory-policy): what every command
 * records in the slot of the key it uses (inline, on every path), and the
 * calls of evict.c that make room for a write that found none.
 *
 * A slot's access word (layout.h) holds, under an LRU policy, the store's
 * access clock when the key was last used; under an LFU policy, Redis's
 * logarithmic frequency counter in bits 8-15 and, in bits 0-7, the decay
 * period (the clock >> SHMKV__LFU_PERIOD_SHIFT) it was last brought to.
 * The clock is logical (evict.c): evictions and new keys tick it, so ages
 * are counted in evictions.
 */
#ifndef SHMKV_EVICT_H
#define SHMKV_EVICT_H

#include "atomic.h"
#include "internal.h"

/* The header's evict_policy word: the policy, and what commands track. */
#define SHMKV__POLICY_MASK 0xffu
#define SHMKV__TRACK_LRU   (1u << 8)
#define SHMKV__TRACK_LFU   (2u << 8)
#define SHMKV__TRACK_MASK  (3u << 8)
/* Redis's LFU: a new key's counter (so that it is not the first to go),
 * and lfu-log-factor (the counter reaches 255 after about a million
 * uses). A counter loses one per 2^SHMKV__LFU_PERIOD_SHIFT clock ticks
 * without a use: Redis's lfu-decay-time (a minute) counted in evictions,
 * a quarter of the room they are drawn from (evict.c). */
#define SHMKV__LFU_INIT		5u
#define SHMKV__LFU_LOG_FACTOR	10u
#define SHMKV__LFU_PERIOD_SHIFT 6u

static inline uint32_t shmkv__policy_word(const struct shmkv *kv)
{
	/* Relaxed: a setting; a command that races its change follows
	 * either policy, and the word publishes nothing. */
	return shmkv__load32_relaxed(
		&((const struct shmkv_header_shm *)kv->base)->evict_policy);
}

/* Does the store evict (a policy other than noeviction, of this library)? */
static inline bool shmkv__evicts(const struct shmkv *kv)
{
	uint32_t p = shmkv__policy_word(kv) & SHMKV__POLICY_MASK;

	return p != 0 && p <= SHMKV_EVICT_VOLATILE_TTL;
}

/* The policy in force: a word this library does not know evicts nothing. */
int shmkv__evict_policy(const struct shmkv *kv);
/* Is @word one shmkv_set_evict_policy could have written? */
bool shmkv__evict_policy_word_valid(uint32_t word);
/* Writes @policy (checked: -EINVAL) into header @h (creation, CONFIG SET). */
int shmkv__evict_policy_store(struct shmkv_header_shm *h, int policy);

/* Evictions a write that needs a block tries before it fails. */
#define SHMKV__EVICT_TRIES 8u

/* Records a use of the key in slot @s under policy word @word. */
void shmkv__touch_slow(const struct shmkv *kv, struct shmkv_slot_shm *s,
		       uint32_t word);

/* Every command, on the slot of the key it found: one load and a branch
 * unless the policy tracks access. */
static SHMKV__INLINE void shmkv__touch(const struct shmkv *kv,
				       struct shmkv_slot_shm *s)
{
	uint32_t word = shmkv__policy_word(kv);

	if (__builtin_expect((word & SHMKV__TRACK_MASK) != 0, 0))
		shmkv__touch_slow(kv, s, word);
}

/* The access word of a key being inserted now: used once, just now (LRU),
 * or used as a new key (LFU). */
uint16_t shmkv__access_new(const struct shmkv *kv);

/*
 * Evicts one key whose value block frees room for a value of @len bytes
 * (in the smallest class that fits it, or failing that the next class with
 * pages), chosen by the policy among SHMKV_EVICT_SAMPLES sampled blocks.
 * Return: 1 (evicted: its block is in this thread's cache), 0 (the policy
 * evicts nothing, or found no candidate: the write fails as it would).
 */
int shmkv__evict_for_value(struct shmkv *kv, size_t len);
/* The same for a key that found every slot of its probe window taken:
 * one of the keys in that window. */
int shmkv__evict_in_window(struct shmkv *kv, const struct shmkv_key *k);

#endif /* SHMKV_EVICT_H */
