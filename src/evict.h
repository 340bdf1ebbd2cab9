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
 * a whole turn of the room they are drawn from (evict.c): a key must be
 * used about once per turn of the cache to keep its count. (A quarter
 * turn lost bench_evict's LFU 3 points of hit rate.) */
#define SHMKV__LFU_INIT		5u
#define SHMKV__LFU_LOG_FACTOR	10u
#define SHMKV__LFU_PERIOD_SHIFT 8u

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

/* A per-thread xorshift: LFU's chances and the samples' draws need no
 * more, and a shared generator would be a shared hot word. evict.c seeds
 * it by thread; a use recorded first seeds it from the clock. */
extern __thread uint32_t shmkv__rng_state
	__attribute__((tls_model("initial-exec")));

/* A random number for sampling, from this thread's generator (seeded by
 * its id on first use). */
uint32_t shmkv__rng(void);
static SHMKV__INLINE uint32_t shmkv__rng_next(void)
{
	uint32_t x = shmkv__rng_state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	shmkv__rng_state = x;
	return x;
}

/* The LFU counter of access word @a, decayed to clock @clock. */
static SHMKV__INLINE uint32_t shmkv__lfu_decayed(uint16_t a, uint32_t clock)
{
	uint32_t period = (clock >> SHMKV__LFU_PERIOD_SHIFT) & 0xffu;
	uint32_t passed = (period - (a & 0xffu)) & 0xffu, c = a >> 8u;

	return passed >= c ? 0 : c - passed;
}

static SHMKV__INLINE uint16_t shmkv__lfu_word(uint32_t c, uint32_t clock)
{
	return (uint16_t)(c << 8 | ((clock >> SHMKV__LFU_PERIOD_SHIFT) & 0xffu));
}

/* The access word after a use, under policy word @word: the clock (LRU);
 * or the counter decayed, then raised with Redis's LFULogIncr odds, 1 /
 * ((counter - init) * factor + 1) (LFU). */
static SHMKV__INLINE uint16_t shmkv__access_used(uint16_t a, uint32_t clock,
						 uint32_t word)
{
	uint32_t c, base;

	if (word & SHMKV__TRACK_LRU)
		return (uint16_t)clock;
	c = shmkv__lfu_decayed(a, clock);
	base = c > SHMKV__LFU_INIT ? c - SHMKV__LFU_INIT : 0;
	if (shmkv__rng_state == 0)
		shmkv__rng_state = clock * 2654435761u | 1u;
	if (c < 255 && (uint64_t)shmkv__rng_next() *
				       (base * SHMKV__LFU_LOG_FACTOR + 1) <
			       (1ull << 32))
		c++;
	return shmkv__lfu_word(c, clock);
}

/* Records a use of the key in slot @s under policy word @word, which
 * tracks use (a branch the caller took). */
static SHMKV__INLINE void shmkv__touch_word(const struct shmkv *kv,
					    struct shmkv_slot_shm *s,
					    uint32_t word)
{
	const struct shmkv_header_shm *h =
		(const struct shmkv_header_shm *)kv->base;
	uint32_t clock;
	uint16_t a, n;

	/* A read-only mapping cannot record (a store would fault): its uses
	 * are not counted. */
	if (kv->readonly)
		return;
	/* Relaxed loads and store: a plain record of a use, approximate by
	 * design. Racing uses may lose one of their records (an LFU count),
	 * as Redis's approximation allows; the stamp's bytes are nobody
	 * else's (layout.h). Stored only when it changes, so that a hot key's
	 * line is not written on every use. */
	clock = shmkv__load32_relaxed(&h->access_clock);
	a = shmkv__load16_relaxed(&s->access);
	n = shmkv__access_used(a, clock, word);
	if (n != a)
		shmkv__store16_relaxed(&s->access, n);
}

/*
 * Every command, on the slot of the key it found: one load and a branch
 * unless the policy tracks access. Inline to the end, with no call: a
 * call, even on a branch never taken, makes every straight-line path it is
 * inlined into save registers (8 to 12 instructions a command).
 */
static SHMKV__INLINE void shmkv__touch(const struct shmkv *kv,
				       struct shmkv_slot_shm *s)
{
	uint32_t word = shmkv__policy_word(kv);

	if (__builtin_expect((word & SHMKV__TRACK_MASK) != 0, 0))
		shmkv__touch_word(kv, s, word);
}

/* Records a use of the key in slot @s under policy word @word, then
 * returns @r: out of line, reached by a tail call (shmkv__touched). */
__attribute__((cold, noinline)) int
shmkv__touch_ret(const struct shmkv *kv, struct shmkv_slot_shm *s,
		 uint32_t word, int r);

/*
 * A straight-line path's answer @r, once it has used the key in slot @s:
 * the use is recorded after the answer, by a tail call on a branch that a
 * store without an LRU or LFU policy never takes. Recorded inline before
 * the answer instead, its code made short paths save registers (12
 * instructions on a prepared integer GET); a tail call keeps nothing live.
 */
static SHMKV__INLINE int shmkv__touched(const struct shmkv *kv,
					struct shmkv_slot_shm *s, int r)
{
	uint32_t word = shmkv__policy_word(kv);

	if (__builtin_expect((word & SHMKV__TRACK_MASK) != 0, 0))
		return shmkv__touch_ret(kv, s, word, r);
	return r;
}

/* The access word of a key being inserted now: used once, just now (LRU),
 * or used as a new key (LFU). */
uint16_t shmkv__access_new(const struct shmkv *kv,
			   const struct shmkv_table *t);

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
