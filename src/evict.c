/*
 * evict.c - eviction: making room for a write that found none, by the
 * store's policy (Redis's maxmemory-policy), lock-free.
 *
 * Two kinds of room run out. A value's size class is full and value
 * memory may not grow (-ENOMEM): only evicting a key whose value block is
 * of that class gives room, so candidates are drawn from that class's
 * blocks, each naming its key through its back-pointer (the block's
 * slot). Or every slot of a new key's probe window is taken (-ENOSPC):
 * candidates are drawn from that window. Either way SHMKV_EVICT_SAMPLES
 * candidates are sampled, as Redis samples maxmemory-samples keys, and
 * the best by the policy is evicted.
 *
 * An eviction is a DEL that expects the value word it judged: one CAS of
 * that word to NONE (commit.h, as any write), so a key written since is
 * not evicted for its old value, and a lost race is only another sample.
 * Keys of the lock namespace (SHMKV_LOCK_PREFIX) are never candidates:
 * evicting a held lock would grant it twice.
 *
 * The access clock ticks, on average, once per 256th of the room evicted
 * from (value memory, or the table's slots) in evictions, and
 * once per 256th of the table in new keys (so that keys written before the
 * first eviction differ too): a 16-bit LRU stamp then tells ages apart up
 * to 256 turns of that room, whatever its size, and a stamp older than
 * that reads as younger than it is (the clock wrapped), which only makes
 * that key less likely to go.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "commit.h"
#include "evict.h"
#include "lookup.h"
#include "shmkv_lock.h"
#include "tables.h"

/* Random page draws before a class's pages are searched in order. */
#define PAGE_DRAWS 64u
/* Sampling rounds per eviction before giving up (each of
 * SHMKV_EVICT_SAMPLES draws that may find no usable candidate). */
#define SAMPLE_ROUNDS 8u

static const char *const policy_names[] = {
	[SHMKV_EVICT_NOEVICTION] = "noeviction",
	[SHMKV_EVICT_ALLKEYS_LRU] = "allkeys-lru",
	[SHMKV_EVICT_ALLKEYS_LFU] = "allkeys-lfu",
	[SHMKV_EVICT_ALLKEYS_RANDOM] = "allkeys-random",
	[SHMKV_EVICT_VOLATILE_LRU] = "volatile-lru",
	[SHMKV_EVICT_VOLATILE_LFU] = "volatile-lfu",
	[SHMKV_EVICT_VOLATILE_RANDOM] = "volatile-random",
	[SHMKV_EVICT_VOLATILE_TTL] = "volatile-ttl",
};
#define POLICIES (sizeof(policy_names) / sizeof(policy_names[0]))

const char *shmkv_evict_policy_name(int policy)
{
	return policy >= 0 && (size_t)policy < POLICIES ? policy_names[policy]
							: NULL;
}

int shmkv_evict_policy_parse(const char *name)
{
	if (name == NULL)
		return -EINVAL;
	for (size_t p = 0; p < POLICIES; p++)
		if (strcasecmp(name, policy_names[p]) == 0)
			return (int)p;
	return -EINVAL;
}

/* The header word for @policy: the policy and what it tracks. */
static uint32_t policy_word(int policy)
{
	switch (policy) {
	case SHMKV_EVICT_ALLKEYS_LRU:
	case SHMKV_EVICT_VOLATILE_LRU:
		return (uint32_t)policy | SHMKV__TRACK_LRU;
	case SHMKV_EVICT_ALLKEYS_LFU:
	case SHMKV_EVICT_VOLATILE_LFU:
		return (uint32_t)policy | SHMKV__TRACK_LFU;
	default:
		return (uint32_t)policy;
	}
}

bool shmkv__evict_policy_word_valid(uint32_t word)
{
	uint32_t p = word & SHMKV__POLICY_MASK;

	return p < POLICIES && policy_word((int)p) == word;
}

int shmkv__evict_policy_store(struct shmkv_header_shm *h, int policy)
{
	if (shmkv_evict_policy_name(policy) == NULL)
		return -EINVAL;
	/* Relaxed: a setting (see shmkv__policy_word); nothing is published
	 * with it. */
	shmkv__store32_relaxed(&h->evict_policy, policy_word(policy));
	return 0;
}

int shmkv_set_evict_policy(shmkv_t *kv, int policy)
{
	int err = shmkv_evict_policy_name(policy) == NULL ? -EINVAL
							   : shmkv__settable(kv);

	if (err)
		return err;
	return shmkv__evict_policy_store((struct shmkv_header_shm *)kv->base,
					 policy);
}

int shmkv__evict_policy(const struct shmkv *kv)
{
	uint32_t p = shmkv__policy_word(kv) & SHMKV__POLICY_MASK;

	return shmkv_evict_policy_name((int)p) != NULL ? (int)p
							: SHMKV_EVICT_NOEVICTION;
}

__thread uint32_t shmkv__rng_state __attribute__((tls_model("initial-exec")));

uint32_t shmkv__rng(void)
{
	/* Seeded by the thread's id, not by an address (evict.h's seed):
	 * the samples of two threads then differ. */
	if (shmkv__rng_state == 0)
		shmkv__rng_state = shmkv__self_tid() * 2654435761u | 1u;
	return shmkv__rng_next();
}

#define rng shmkv__rng

static uint32_t access_clock(const struct shmkv *kv)
{
	/* Relaxed: a stamp, approximate by design; it orders nothing. */
	return shmkv__load32_relaxed(
		&((const struct shmkv_header_shm *)kv->base)->access_clock);
}

int shmkv__touch_ret(const struct shmkv *kv, struct shmkv_slot_shm *s,
		     uint32_t word, int r)
{
	shmkv__touch_word(kv, s, word);
	return r;
}

/* Ticks the access clock with odds 256 / @room: one tick per 256th of
 * the room turned over, with no shared count to divide. */
static void clock_maybe_tick(const struct shmkv *kv, uint64_t room)
{
	struct shmkv_header_shm *h = (struct shmkv_header_shm *)kv->base;

	if (room <= 256 || rng() % (room >> 8) == 0)
		/* Full barrier, though only atomicity is needed: liburcu has
		 * no weaker fetch-and-add (atomic.h). */
		shmkv__add32_full(&h->access_clock, 1);
}

uint16_t shmkv__access_new(const struct shmkv *kv,
			   const struct shmkv_table *t)
{
	uint32_t word = shmkv__policy_word(kv);

	/* New keys move the clock too (by the table's room), so that keys
	 * written before the first eviction are told apart by it. */
	if (word & SHMKV__TRACK_MASK)
		clock_maybe_tick(kv, t->mask + 1ull);
	if (word & SHMKV__TRACK_LFU)
		return shmkv__lfu_word(SHMKV__LFU_INIT, access_clock(kv));
	return (uint16_t)access_clock(kv);
}

/* A candidate: a key that holds @value in slot @slot (state @state). */
struct candidate {
	struct shmkv_slot_shm *slot;
	uint64_t state;
	uint64_t value;
	uint32_t owner;	   /* the holder its block names, for commit */
	uint64_t priority; /* higher goes first */
};

/* Is the key of slot @s (state @state) one eviction must leave alone: a
 * lock's (or unreadable)? */
static bool key_protected(const struct shmkv_slot_shm *s, uint64_t state)
{
	/* Relaxed: validated by the state re-read below. */
	uint32_t len = SLOT_KEYMETA_LEN(shmkv__load32_relaxed(&s->keymeta));
	/* Plain reads of bytes that may be rewritten meanwhile: a
	 * seqlock-style read, validated by the state's re-read below
	 * (tests/tsan.supp). */
	bool lock = len >= SHMKV_LOCK_PREFIX_LEN &&
		    memcmp(s->key, SHMKV_LOCK_PREFIX, SHMKV_LOCK_PREFIX_LEN) ==
			    0;

	/* Acquire fence: the compare completes before the re-read. */
	shmkv__fence_acquire();
	return lock || shmkv__load_relaxed(&s->state) != state;
}

/*
 * Judges slot @s as a candidate under @policy, whose value word must be
 * @want if not 0 (a block's back-pointer names the slot it was published
 * to). Return: whether it is one, filled in @c.
 */
static bool judge(const struct shmkv *kv, int policy,
		  struct shmkv_slot_shm *s, uint64_t want, uint32_t clock,
		  struct candidate *c)
{
	/* Acquire: the key bytes and value word read next are this state's,
	 * as in a lookup (validated by the re-read in key_protected). */
	uint64_t state = shmkv__load_acquire(&s->state);
	/* Acquire: pairs with the CAS that stored the value, so a block it
	 * names is this value's. */
	uint64_t v = shmkv__load_acquire(&s->value);
	uint32_t ver = SLOT_VERSION(state), owner = 0;
	int64_t deadline = 0;
	bool vol = policy >= SHMKV_EVICT_VOLATILE_LRU;

	/* A frozen value is being copied (migrate.c): not evicted here. */
	if (SLOT_STATE(state) != SLOT_MEMBER || (want != 0 && v != want) ||
	    VAL_KIND(v) == VAL_NONE || VAL_IS_FROZEN(v) ||
	    (VAL_KIND(v) == VAL_INT && VAL_INT_TAG(v) != VAL_INT_TAG_OF(ver)))
		return false;
	if (VAL_KIND(v) == VAL_BLOCK &&
	    !shmkv__block_owner(kv, v, &owner, &deadline))
		return false;
	if ((vol && deadline == 0) || key_protected(s, state))
		return false;
	c->slot = s;
	c->state = state;
	c->value = v;
	c->owner = owner;
	switch (policy) {
	case SHMKV_EVICT_ALLKEYS_LRU:
	case SHMKV_EVICT_VOLATILE_LRU:
		/* Relaxed: a stamp (see shmkv__touch, evict.h). */
		c->priority = (clock - shmkv__load16_relaxed(&s->access)) &
			      0xffffu;
		break;
	case SHMKV_EVICT_ALLKEYS_LFU:
	case SHMKV_EVICT_VOLATILE_LFU:
		c->priority = 255 - shmkv__lfu_decayed(
					    shmkv__load16_relaxed(&s->access),
					    clock);
		break;
	case SHMKV_EVICT_VOLATILE_TTL:
		c->priority = UINT64_MAX - (uint64_t)deadline;
		break;
	default:
		c->priority = 0;
	}
	return true;
}

/* Evicts candidate @c, drawn from room for @room keys: a DEL of exactly
 * the value judged. Return: 1 if it went, 0 if the key changed first. */
static int evict(struct shmkv *kv, const struct candidate *c, uint64_t room)
{
	struct shmkv_header_shm *h = (struct shmkv_header_shm *)kv->base;
	struct shmkv_slot_shm *s = c->slot;

	if (shmkv__load_acquire(&s->state) != c->state ||
	    !shmkv__commit_word(kv, s, c->value,
				VAL_NONE_WORD(SLOT_VERSION(c->state), 0), 0,
				c->owner))
		return 0;
	SHMKV_CRASH_POINT("evicted");
	/* Full barrier, though only atomicity is needed: liburcu has no
	 * weaker fetch-and-add that returns the value (atomic.h). */
	shmkv__add_full(&h->evicted, 1);
	/* Each room's evictions move the clock at their own rate. */
	clock_maybe_tick(kv, room);
	return 1;
}

/* Keeps the better of @best (if @have) and @c. */
static void consider(struct candidate *best, bool *have,
		     const struct candidate *c)
{
	if (!*have || c->priority > best->priority) {
		*best = *c;
		*have = true;
	}
}

/* A page of class @cls among @ready: drawn at random, then (a class with
 * few pages) searched from a random one. UINT32_MAX: none. */
static uint32_t draw_page(const struct shmkv *kv, uint32_t cls,
			  uint32_t ready)
{
	uint32_t start = rng() % ready;

	for (uint32_t n = 0; n < PAGE_DRAWS; n++) {
		uint32_t p = rng() % ready;

		if (shmkv__page_class(kv, p) == cls)
			return p;
	}
	for (uint32_t n = 0; n < ready; n++) {
		uint32_t p = start + n < ready ? start + n : start + n - ready;

		if (shmkv__page_class(kv, p) == cls)
			return p;
	}
	return UINT32_MAX;
}

/* The smallest class that holds @len bytes. */
static uint32_t class_fitting(const struct shmkv *kv, size_t len)
{
	for (uint32_t c = 0; c < kv->geo.class_count; c++)
		if (kv->geo.class_size[c] - sizeof(struct shmkv_block_shm) >=
		    len)
			return c;
	return SHMKV__NO_CLASS;
}

/* A candidate from block @index of page @page of class @cls. */
static bool sample_block(const struct shmkv *kv, int policy, uint32_t cls,
			 uint32_t page, uint32_t index, uint32_t clock,
			 struct candidate *c)
{
	uint32_t unit = (page << kv->geo.unit_shift) | index, found;
	struct shmkv_block_shm *b = shmkv__block_at(kv, unit, &found);
	struct shmkv_slot_shm *s;
	uint64_t tag, life;
	bool orphan;

	if (b == NULL || found != cls)
		return false;
	/* Acquire, then the back-pointer: checked by judge(), which wants
	 * the slot's value word to name exactly this block and generation. */
	tag = shmkv__load_acquire(&b->tag);
	if (!BLK_USED(tag) || (tag & (BLK_CACHED | BLK_DOOM)))
		return false;
	/* Relaxed: a back-pointer from the segment, bounds-checked by
	 * shmkv__back_slot. */
	s = shmkv__back_slot(kv, shmkv__load32_relaxed(&b->slot), true, &life,
			     &orphan);
	return s != NULL &&
	       judge(kv, policy, s, VAL_BLOCK_WORD(unit, BLK_GEN(tag)), clock,
		     c) &&
	       shmkv__life_same(kv, life);
}

/*
 * When sampling found nothing (few keys qualify: a volatile policy where
 * few keys have a TTL), the walk that Redis's sampling of its expires
 * table needs no walk for: class @cls's blocks from a random page, the
 * best of the first SHMKV_EVICT_SAMPLES candidates met. Bounded by the
 * class's size, as the allocator's last look is; a store where no key
 * qualifies pays it on each write that needs room, then fails as
 * noeviction does.
 */
static int evict_walking_class(struct shmkv *kv, int policy, uint32_t cls,
			       uint32_t ready, uint64_t room)
{
	uint32_t start = rng() % ready, clock = access_clock(kv), met = 0;
	struct candidate best = { 0 }, c = { 0 };
	bool have = false;

	for (uint32_t n = 0; n < ready && met < SHMKV_EVICT_SAMPLES; n++) {
		uint32_t p = start + n < ready ? start + n : start + n - ready;

		if (shmkv__page_class(kv, p) != cls)
			continue;
		for (uint32_t i = 0; i < kv->class_blocks[cls] &&
				     met < SHMKV_EVICT_SAMPLES;
		     i++)
			if (sample_block(kv, policy, cls, p, i, clock, &c)) {
				consider(&best, &have, &c);
				met++;
			}
	}
	return have && evict(kv, &best, room);
}

int shmkv__evict_for_value(struct shmkv *kv, size_t len)
{
	int policy = shmkv__evict_policy(kv);
	uint32_t ready = shmkv__pages_ready(kv), cls;
	uint64_t room = 0;

	if (policy == SHMKV_EVICT_NOEVICTION || kv->readonly || ready == 0)
		return 0;
	/* The smallest class that fits: its freed block is what the write's
	 * allocation takes first, from this thread's cache. A write finds no
	 * room only in a class that has a page (every class can get one:
	 * geometry.c keeps a page for each), so the next class with pages is
	 * only for a page table that says otherwise (corrupt): its block is
	 * one the allocation may take (block.c's alloc_as). */
	for (cls = class_fitting(kv, len); cls < kv->geo.class_count; cls++)
		if (shmkv__class_has_page(kv, cls))
			break;
	if (cls >= kv->geo.class_count)
		return 0;
	/* The room the clock measures: all the value pages, counted in this
	 * class's blocks (one tick per 256th of value memory turned over).
	 * Not the class's own blocks: counting those is a pass over the page
	 * table per eviction; and with several classes evicting, each
	 * ticking by its share, the clock moves at the same rate. */
	room = (uint64_t)ready * kv->class_blocks[cls];
	for (uint32_t round = 0; round < SAMPLE_ROUNDS; round++) {
		uint32_t clock = access_clock(kv);
		struct candidate best = { 0 }, c = { 0 };
		bool have = false;

		for (uint32_t n = 0; n < SHMKV_EVICT_SAMPLES; n++) {
			uint32_t page = draw_page(kv, cls, ready);

			if (page != UINT32_MAX &&
			    sample_block(kv, policy, cls, page,
					 rng() % kv->class_blocks[cls], clock,
					 &c))
				consider(&best, &have, &c);
		}
		if (have && evict(kv, &best, room))
			return 1;
	}
	return evict_walking_class(kv, policy, cls, ready, room);
}

/* Candidates in @k's probe window: @draws random offsets, or (@draws 0)
 * the whole window from a random one until SHMKV_EVICT_SAMPLES met. */
static int evict_from_window(struct shmkv *kv, int policy,
			     const struct shmkv_key *k, uint32_t draws)
{
	uint32_t limit = kv->geo.probe_limit, start = rng() % limit;
	uint32_t clock = access_clock(kv), met = 0;
	struct candidate best = { 0 }, c = { 0 };
	bool have = false;

	for (uint32_t n = 0; n < (draws ? draws : limit) &&
			     met < SHMKV_EVICT_SAMPLES;
	     n++) {
		uint32_t d = draws ? rng() % limit
				   : (start + n < limit ? start + n
							: start + n - limit);

		if (judge(kv, policy, shmkv__slot(k->t, k->home + d), 0, clock,
			  &c)) {
			consider(&best, &have, &c);
			met++;
		}
	}
	return have && evict(kv, &best, k->t->mask + 1ull);
}

int shmkv__evict_in_window(struct shmkv *kv, const struct shmkv_key *k)
{
	int policy = shmkv__evict_policy(kv);

	if (policy == SHMKV_EVICT_NOEVICTION || kv->readonly)
		return 0;
	for (uint32_t round = 0; round < SAMPLE_ROUNDS; round++)
		if (evict_from_window(kv, policy, k, SHMKV_EVICT_SAMPLES))
			return 1;
	return evict_from_window(kv, policy, k, 0);
}
