/*
 * block.c - value storage: fixed-size blocks in per-size-class regions.
 *
 * Every change of hands of a block is one CAS on its own tag word, so a
 * process killed anywhere leaves each block in a state someone else can
 * finish (ids: a value block's holder is a thread, README: Block tags):
 *
 *   FREE(g) --alloc CAS--> USED(g, tid) --published: unchanged-->
 *     --another writer or reclamation: settle CAS--> USED(g, 0)
 *     --free CAS--> FREE(g+1), or USED|CACHED(g+1, freeing tid)
 *   USED|CACHED(g, tid) --its thread takes it back: plain store--> USED(g, tid)
 *
 * There is no free list to corrupt and no counter to drift: allocation scans
 * for a FREE tag, first in the page this process last allocated from, then
 * in the class's other pages, then in a page it claims from the pool with
 * one CAS on the page table (0 -> class + 1). A page never changes class
 * once claimed, which is what lets a reader trust the class it reads for a
 * page (after a range check). Readers copy a published block without any
 * lock and then check that its generation did not move (a seqlock with the
 * generation as sequence): a published block is immutable until it is
 * freed, and freeing bumps the generation.
 */
#include <errno.h>
#include <string.h>

#include "atomic.h"
#include "evict.h"
#include "fault.h"
#include "internal.h"

/* The class word @c of a page, as a class. */
static inline uint32_t class_of_word(const struct shmkv *kv, uint32_t c)
{
	return c != 0 && c <= kv->geo.class_count ? c - 1 : SHMKV__NO_CLASS;
}

/*
 * The class of @page as this process knows the ready pages: none for a
 * page beyond its copy of them (grow.c), whose page-table word may lie in
 * the file's unallocated hole. No call on this path: a call, even on a
 * cold branch, makes every function it is inlined into save registers.
 * So a command that finds no block for a unit asks locate_grown (below),
 * out of line and in tail position, whether the store grew since.
 */
static inline uint32_t page_class(const struct shmkv *kv, uint32_t page)
{
	if (page >= shmkv__pages_ready(kv))
		return SHMKV__NO_CLASS;
	/* Relaxed: a page's class is written once (CAS from 0) and never
	 * changes; a block named by a value word we acquired was allocated
	 * after that CAS, so we see it. Out of range means corrupt or free. */
	return class_of_word(kv, shmkv__load32_relaxed(&kv->page_table[page]));
}

uint32_t shmkv__page_class(const struct shmkv *kv, uint32_t page)
{
	if (page >= shmkv__pages_ready(kv))
		(void)shmkv__pages_ready_refresh(kv);
	return page_class(kv, page);
}

/*
 * The block numbered @unit, and its class in *@cls. Unit numbers come from
 * value words in shared memory: they are checked here, once, so no caller
 * can form a pointer outside the page. No division: units_per_page is a
 * power of two (geometry.c), so the page is a shift and the index a mask;
 * the offsets of the page and of the block in it are multiplies.
 * Return: NULL if out of range.
 */
static inline struct shmkv_block_shm *block_locate(const struct shmkv *kv,
						   uint32_t unit, uint32_t *cls)
{
	uint32_t page = unit >> kv->geo.unit_shift;
	uint32_t idx = unit & (kv->geo.units_per_page - 1);
	uint32_t c = page_class(kv, page);

	if (c == SHMKV__NO_CLASS || idx >= kv->class_blocks[c])
		return NULL;
	*cls = c;
	return (struct shmkv_block_shm *)(kv->pages +
					  (size_t)page * kv->geo.page_size +
					  (size_t)idx * kv->geo.class_size[c]);
}

/* The block numbered @unit after block_locate found none: located again if
 * its page was beyond our copy of the ready pages and the shared count now
 * says it is ready (grown since we looked); NULL if the unit is corrupt. */
static __attribute__((noinline, cold)) struct shmkv_block_shm *
locate_grown(const struct shmkv *kv, uint32_t unit, uint32_t *cls)
{
	uint32_t page = unit >> kv->geo.unit_shift;

	if (page < shmkv__pages_ready(kv) ||
	    page >= shmkv__pages_ready_refresh(kv))
		return NULL;
	return block_locate(kv, unit, cls);
}

struct shmkv_block_shm *shmkv__block_at(const struct shmkv *kv, uint32_t unit,
					uint32_t *cls)
{
	struct shmkv_block_shm *b = block_locate(kv, unit, cls);

	return b != NULL ? b : locate_grown(kv, unit, cls);
}

struct shmkv_block_shm *shmkv__block(const struct shmkv *kv, uint64_t ref)
{
	uint32_t cls;

	return shmkv__block_at(kv, VAL_BLOCK_UNIT(ref), &cls);
}

/* Data bytes a block of class @cls holds. */
static size_t class_room(const struct shmkv *kv, uint32_t cls)
{
	return kv->geo.class_size[cls] - sizeof(struct shmkv_block_shm);
}

struct shmkv_block_shm *shmkv__block_room(const struct shmkv *kv, uint64_t ref,
					  size_t *room)
{
	uint32_t cls;
	struct shmkv_block_shm *b = shmkv__block_at(kv, VAL_BLOCK_UNIT(ref),
						    &cls);

	*room = b != NULL ? class_room(kv, cls) : 0;
	return b;
}

size_t shmkv__block_capacity(const struct shmkv *kv, uint64_t ref)
{
	size_t room;

	shmkv__block_room(kv, ref, &room);
	return room;
}

/* Takes block @b, number @unit, whose tag we read as @tag, if that tag
 * is FREE. Return: whether it is ours now (*@ref its value word). */
static inline bool take_free(struct shmkv_block_shm *b, uint32_t unit,
			     uint64_t tag, uint32_t pid, uint64_t *ref)
{
	/* Full barrier: the block's previous content (written before the
	 * free that made it FREE) is behind us before we write. */
	if (BLK_USED(tag) ||
	    shmkv__cas_full(&b->tag, tag, BLK_TAG(BLK_GEN(tag), pid, 1)) != tag)
		return false;
	*ref = VAL_BLOCK_WORD(unit, BLK_GEN(tag));
	return true;
}

/* The block of class @cls this process last freed to the pool, if it is
 * still FREE: a free is usually followed by an allocation of the same
 * class (a value replaced by another of its size). The hint is used up. */
static bool alloc_freed(struct shmkv *kv, uint32_t cls, uint32_t pid,
			uint64_t *ref)
{
	/* Relaxed: a process-local hint (threads share the handle); two
	 * threads that read the same one race for it by the CAS. */
	uint32_t hint = shmkv__load32_relaxed(&kv->freed_unit[cls]), c;
	struct shmkv_block_shm *b;

	if (hint == 0)
		return false;
	shmkv__store32_relaxed(&kv->freed_unit[cls], 0);
	b = block_locate(kv, hint - 1, &c);
	/* Relaxed: only a filter; the CAS decides. */
	return b != NULL && c == cls &&
	       take_free(b, hint - 1, shmkv__load_relaxed(&b->tag), pid, ref);
}

/* Scans blocks [@from, @to) of page @page of class @cls for a FREE one
 * (@to at most the page's count). On success the sweep of the class
 * moves past it. Return: 0 and *@ref, or -ENOMEM. */
static int alloc_in_page(struct shmkv *kv, uint32_t page, uint32_t cls,
			 uint32_t pid, uint32_t from, uint32_t to,
			 uint64_t *ref)
{
	uint32_t size = kv->geo.class_size[cls];
	unsigned char *b = kv->pages + (size_t)page * kv->geo.page_size +
			   (size_t)from * size;

	for (uint32_t i = from; i < to; i++, b += size) {
		struct shmkv_block_shm *blk = (struct shmkv_block_shm *)b;

		/* Relaxed: only a filter; the CAS in take_free decides. */
		if (!take_free(blk, (page << kv->geo.unit_shift) | i,
			       shmkv__load_relaxed(&blk->tag), pid, ref))
			continue;
		/* Relaxed: process-local hints, maybe shared by threads; the
		 * block is ours by the CAS, the hints publish nothing. */
		shmkv__store32_relaxed(&kv->alloc_page[cls], page + 1);
		shmkv__store32_relaxed(&kv->alloc_index[cls], i + 1);
		return 0;
	}
	return -ENOMEM;
}

/*
 * May @cls take a free page? A class with no page yet always may; one that
 * has pages may only if free pages remain for every class still without
 * one. So the first values of any size always find room, whatever order
 * values arrive in (a store restored from a dump in another order must not
 * fail). Free pages: those of the @ready pages that no class has, and
 * those that growth may still add. Counted with one pass over the page
 * table: claims are rare (once per page of values).
 */
static bool may_claim(struct shmkv *kv, uint32_t cls, uint32_t ready)
{
	uint32_t has[SHMKV_CLASSES_MAX] = { 0 }, free_pages = 0;
	uint32_t max = shmkv__pages_max(kv);
	uint64_t at = ((uint64_t)ready << 32 | max) + 1;
	bool may;

	/* A no stays a no while the ready pages and the limit stay: a claim
	 * only takes free pages, from needy classes or not, which never makes
	 * room. So a full store's every write does not pay the pass below.
	 * Relaxed: a process-local hint (threads share the handle). */
	if (shmkv__load_relaxed(&kv->claim_refused[cls]) == at)
		return false;
	if (max > ready)
		free_pages = max - ready;
	for (uint32_t page = 0; page < ready; page++) {
		uint32_t c = shmkv__page_class(kv, page);

		if (c == SHMKV__NO_CLASS)
			free_pages++;
		else
			has[c] = 1;
	}
	if (!has[cls]) {
		may = free_pages > 0;
	} else {
		uint32_t needy = 0;

		for (uint32_t c = 0; c < kv->geo.class_count; c++)
			needy += !has[c];
		may = free_pages > needy;
	}
	if (!may)
		/* Relaxed: the hint above. */
		shmkv__store_relaxed(&kv->claim_refused[cls], at);
	return may;
}

/* Claims a free page of the @ready pages for @cls. Return: the page,
 * UINT32_MAX (none free), or UINT32_MAX - 1 (none it may take). */
static uint32_t claim_ready_page(struct shmkv *kv, uint32_t cls, uint32_t ready)
{
	/* Relaxed: a process-local hint, as above. */
	uint32_t start = shmkv__load32_relaxed(&kv->claim_hint);

	if (!may_claim(kv, cls, ready))
		return UINT32_MAX - 1;
	for (uint32_t n = 0; n < ready; n++) {
		uint32_t page = (start + n) % ready;

		/* Relaxed filter; full-barrier CAS decides the owner class
		 * before any block of the page is allocated. */
		if (shmkv__load32_relaxed(&kv->page_table[page]) != 0 ||
		    shmkv__cas32_full(&kv->page_table[page], 0, cls + 1) != 0)
			continue;
		/* Relaxed: a hint; the CAS above made the page ours. */
		shmkv__store32_relaxed(&kv->claim_hint, page + 1);
		return page;
	}
	return UINT32_MAX;
}

/* Claims a free page for @cls, growing the store while none is free and
 * it may. Each round finds more pages ready than the last (a growth is
 * ours or another's), or ends: it terminates. Return: 0 and *@page, or
 * -ENOMEM (max_memory reached, or the system out of memory), -EROFS,
 * -EBADMSG. */
static int claim_page(struct shmkv *kv, uint32_t cls, uint32_t *page)
{
	for (;;) {
		uint32_t ready = shmkv__pages_ready_refresh(kv);
		int err;

		*page = claim_ready_page(kv, cls, ready);
		if (*page < UINT32_MAX - 1)
			return 0;
		if (*page == UINT32_MAX - 1)
			return -ENOMEM;
		err = shmkv__pages_grow(kv, ready);
		if (err)
			return err;
	}
}

/*
 * Pages of its class an allocation looks through for a free block before
 * it takes a new page. A whole round over every page of the class, as
 * each full page once took, makes filling a store quadratic: at a million
 * values of one class, each page's fill read every tag of every page
 * before it (18 us a SET, and growing with the store). A bounded look from
 * a hand that goes round all the class's pages in turn still finds the
 * blocks others freed, a few pages at each page's fill.
 */
#define LOOK_PAGES 8u
/* In a store that evicts, allocations of a full class that evict without
 * looking first, between two that look (alloc_in_class). At most this
 * many keys per process are evicted while a freed block waits unseen. */
#define FULL_SKIPS 63u

/*
 * Looks for a FREE block of class @cls in up to @limit of its pages (of
 * @pages ready ones), from this process's hand for the class, which moves
 * on past them (or stays at a page where one was found: it may have more).
 * Return: 0 and *@ref, or -ENOMEM.
 */
static int look(struct shmkv *kv, uint32_t cls, uint32_t pid, uint32_t pages,
		uint32_t limit, uint64_t *ref)
{
	uint32_t count = kv->class_blocks[cls], seen = 0, n, hand;

	if (pages == 0) /* never at attach (every class has a page's room) */
		return -ENOMEM;
	/* Relaxed: a process-local hint (threads share the handle); a stale
	 * or corrupt one only starts the look elsewhere. */
	hand = shmkv__load32_relaxed(&kv->look_page[cls]) % pages;

	for (n = 0; n < pages && seen < limit; n++) {
		uint32_t page = hand + n < pages ? hand + n : hand + n - pages;

		if (shmkv__page_class(kv, page) != cls)
			continue;
		seen++;
		if (alloc_in_page(kv, page, cls, pid, 0, count, ref) == 0) {
			shmkv__store32_relaxed(&kv->look_page[cls], page);
			return 0;
		}
	}
	shmkv__store32_relaxed(&kv->look_page[cls], hand + n);
	return -ENOMEM;
}

/*
 * The block we last freed; then the rest of the page this process last
 * allocated from (the blocks behind its cursor are the ones it took);
 * then a bounded look at other pages of the class (LOOK_PAGES); then a
 * new page (growing the store if it may). Only when no page can be had
 * does a whole round look at every block of the class, so that -ENOMEM is
 * said only when the class is full.
 */
static int alloc_in_class(struct shmkv *kv, uint32_t cls, uint32_t pid,
			  uint64_t *ref)
{
	uint32_t count = kv->class_blocks[cls], pages = shmkv__pages_ready(kv);
	int err;
	/* Relaxed: process-local hints, as in look(). */
	uint32_t start = shmkv__load32_relaxed(&kv->alloc_page[cls]);
	uint32_t at = shmkv__load32_relaxed(&kv->alloc_index[cls]), page;
	uint32_t skips = shmkv__load32_relaxed(&kv->full_skips[cls]);

	if (alloc_freed(kv, cls, pid, ref))
		return 0;
	/* A store that evicts, whose class this process found full: the next
	 * FULL_SKIPS allocations make room by eviction at once, without the
	 * looks below (thousands of tags a write otherwise, once full); one
	 * in FULL_SKIPS + 1 looks again, which finds blocks that DELs freed
	 * and pages a raised max_memory allows. Relaxed: the hint above. */
	if (skips > 0 && shmkv__evicts(kv)) {
		shmkv__store32_relaxed(&kv->full_skips[cls], skips - 1);
		return -ENOMEM;
	}
	if (start > 0 && start <= pages && at <= count &&
	    shmkv__page_class(kv, start - 1) == cls &&
	    alloc_in_page(kv, start - 1, cls, pid, at, count, ref) == 0)
		return 0;
	if (look(kv, cls, pid, pages, LOOK_PAGES, ref) == 0)
		return 0;
	err = claim_page(kv, cls, &page);
	if (err == 0)
		return alloc_in_page(kv, page, cls, pid, 0, count, ref);
	if (err != -ENOMEM)
		return err;
	/* A store that evicts makes room for this write by its policy
	 * (evict.c) rather than by a look at every block of the class on
	 * each write once it is full: a freed block the bounded looks did
	 * not reach is found by a later one, as their hand goes round. */
	if (shmkv__evicts(kv)) {
		/* Relaxed: the hint above. */
		shmkv__store32_relaxed(&kv->full_skips[cls], FULL_SKIPS);
		return -ENOMEM;
	}
	return look(kv, cls, pid, shmkv__pages_ready(kv), UINT32_MAX, ref);
}

/*
 * Allocates a block for @len bytes, held by @id (a tid or a pid). When
 * neither the class nor the pool has room, a larger class is tried.
 * Reclaiming what dead processes left is the caller's next step
 * (owned.c): block.c never calls up into reclamation.
 * Return: 0 and *@ref, or -ENOMEM.
 */
static int alloc_as(struct shmkv *kv, size_t len, uint32_t id, uint64_t *ref)
{
	/* The smallest class that fits, growing the store if it must; a
	 * bigger class's free block if that class has no room left. In a
	 * store that evicts, only while the classes tried have no page:
	 * eviction makes room in the first class that has (evict.c), so
	 * values of one size never spread into bigger classes, where no
	 * eviction for their size would look. */
	for (uint32_t c = 0; c < kv->geo.class_count; c++) {
		int err;

		if (class_room(kv, c) < len)
			continue;
		err = alloc_in_class(kv, c, id, ref);
		if (err != -ENOMEM ||
		    (shmkv__evicts(kv) && shmkv__class_has_page(kv, c)))
			return err;
	}
	return -ENOMEM;
}

bool shmkv__class_has_page(const struct shmkv *kv, uint32_t cls)
{
	uint32_t ready = shmkv__pages_ready(kv);

	for (uint32_t p = 0; p < ready; p++)
		if (page_class(kv, p) == cls)
			return true;
	return false;
}

int shmkv__block_alloc(struct shmkv *kv, size_t len, uint64_t *ref)
{
	return alloc_as(kv, len, shmkv__self_pid(), ref);
}

/*
 * The per-thread cache of free blocks: per size class, a short stack of
 * blocks that this thread freed into its own hands (tag CACHED, its tid,
 * the generation already bumped), so that its next allocations of that
 * class take them without a CAS, and a run of allocations or of frees (a
 * random walk, when keys are replaced by values of another kind) rarely
 * finds the stack empty or full and goes to the pool, whose scan for a
 * FREE tag costs far more. Nobody else writes the tag of a block a live
 * thread holds: readers never write, frees expect a generation no value
 * word names, and reclamation frees only the blocks of the dead. So
 * taking one back is a plain store. The stack is linked through the
 * blocks' own first data bytes (ours while cached), each link checked as
 * it is taken like any reference read from the segment: a bad one drops
 * the rest of the stack, whose blocks then wait for this thread's exit
 * as leftovers. Up to CACHE_DEPTH blocks per class, and no more than
 * CACHE_BYTES of a class (always one). Blocks are named by unit, so a
 * cache serves one store (by its hash seed, checked again against the
 * tag on take), kept across handles of that store; a thread keeps caches
 * for CACHE_STORES stores, and one that moves on to more drops the
 * oldest: those blocks, tagged with its tid, are reclaimed once it exits.
 */
#define CACHE_STORES 4u
#define CACHE_DEPTH  SHMKV__CACHE_DEPTH
#define CACHE_BYTES  SHMKV__CACHE_BYTES
_Static_assert(SHMKV_BLOCK_MIN - sizeof(struct shmkv_block_shm) >=
		       sizeof(uint64_t),
	       "every block's data holds a cache link");
struct block_cache {
	uint64_t store; /* hash seed of the store the entries are in */
	uint32_t tid;	/* thread that filled it (a fork child's copy is not) */
	uint8_t count[SHMKV_CLASSES_MAX]; /* blocks in each stack */
	uint64_t ref[SHMKV_CLASSES_MAX];  /* each stack's top; 0: none */
};

static __thread struct block_cache caches[CACHE_STORES]
	__attribute__((tls_model("initial-exec")));
static __thread uint32_t cache_next /* the one to drop next */
	__attribute__((tls_model("initial-exec")));

/* This store's cache, this thread's, if it has one (in a fork child,
 * whose copies name its parent's thread, none). */
static inline struct block_cache *cache_find(const struct shmkv *kv,
					     uint32_t tid)
{
	if (caches[0].store == kv->hash_seed && caches[0].tid == tid)
		return &caches[0];
	for (uint32_t i = 1; i < CACHE_STORES; i++)
		if (caches[i].store == kv->hash_seed && caches[i].tid == tid)
			return &caches[i];
	return NULL;
}

/* Starts this thread's (empty) cache of this store. Only an allocation
 * starts one, so that the owner of every cache has been through
 * shmkv__value_alloc_reaping. */
static void cache_start(const struct shmkv *kv, uint32_t tid)
{
	struct block_cache *c = &caches[cache_next++ % CACHE_STORES];

	memset(c, 0, sizeof(*c));
	c->store = kv->hash_seed;
	c->tid = tid;
}

/* May class @cls's stack take one more block? */
static inline bool cache_has_room(const struct shmkv *kv,
				  const struct block_cache *cache, uint32_t cls)
{
	uint32_t n = cache->count[cls];

	return n == 0 || (n < CACHE_DEPTH &&
			  (n + 1) * kv->geo.class_size[cls] <= CACHE_BYTES);
}

/* Takes the top of class @cls's stack, if it still is ours. Return: its
 * header (*@ref its value word), or NULL. */
static struct shmkv_block_shm *cache_take(struct shmkv *kv,
					  struct block_cache *cache,
					  uint32_t cls, uint32_t tid,
					  uint64_t *ref)
{
	uint64_t r = cache->ref[cls], tag, next;
	struct shmkv_block_shm *b;
	uint32_t c;

	if (r == 0)
		return NULL;
	b = block_locate(kv, VAL_BLOCK_UNIT(r), &c);
	tag = BLK_TAG(VAL_BLOCK_GEN(r), tid, 1);
	/* Relaxed: only this thread writes the tag of a block it holds
	 * (see above); a tag that differs is not ours any more. */
	if (b == NULL || c != cls ||
	    shmkv__load_relaxed(&b->tag) != (tag | BLK_CACHED)) {
		cache->ref[cls] = 0; /* the rest waits for our exit */
		cache->count[cls] = 0;
		return NULL;
	}
	/* Our link, written when we cached the block: a plain read of bytes
	 * nobody else writes while we hold it; checked as it is taken. */
	memcpy(&next, b->data, sizeof(next));
	cache->ref[cls] = cache->count[cls] > 1 ? next : 0;
	cache->count[cls]--;
	/* Relaxed: ours alone; the CAS that publishes the block orders it
	 * before the block is seen (and reclamation skips a live holder's
	 * blocks, CACHED or not). */
	shmkv__store_relaxed(&b->tag, tag);
	*ref = r;
	return b;
}

int shmkv__value_alloc(struct shmkv *kv, size_t len, uint64_t *ref,
		       struct shmkv_block_shm **hdr)
{
	uint32_t tid = shmkv__self_tid();
	struct block_cache *cache = cache_find(kv, tid);
	int err;

	if (cache == NULL) { /* empty: the pool's */
		cache_start(kv, tid);
		err = alloc_as(kv, len, tid, ref);
		if (err == 0)
			err = SHMKV__CACHE_STARTED;
	} else {
		for (uint32_t c = 0; c < kv->geo.class_count; c++)
			if (class_room(kv, c) >= len) {
				*hdr = cache_take(kv, cache, c, tid, ref);
				if (*hdr != NULL)
					return 0;
				break;
			}
		err = alloc_as(kv, len, tid, ref);
	}
	if (err < 0)
		return err;
	/* Only a page table corrupted under us fails to locate a block we
	 * just took: a reference from the segment, checked like any. */
	*hdr = shmkv__block(kv, *ref);
	return *hdr != NULL ? err : -EBADMSG;
}

/* Frees block @b (@ref) with one CAS to @next's tag at generation + 1:
 * FREE, or CACHED in our hands. Return: whether we freed it. */
static bool free_block(struct shmkv_block_shm *b, uint64_t ref, uint64_t next)
{
	uint32_t gen = VAL_BLOCK_GEN(ref);
	/* Relaxed first read: the CAS re-checks it. */
	uint64_t tag = shmkv__load_relaxed(&b->tag);

	next |= BLK_TAG(gen + 1, 0, 0);
	/* Loops only while a settle races us (id -> 0); bounded by that
	 * one transition. */
	while (BLK_USED(tag) && BLK_GEN(tag) == gen) {
		/* Full barrier: every reader's copy that raced this free
		 * re-checks the generation after its copy and sees gen+1;
		 * and a cached block's next content, written after this,
		 * is only seen by a copy whose re-check sees gen+1. */
		uint64_t seen = shmkv__cas_full(&b->tag, tag, next);

		if (seen == tag)
			return true;
		tag = seen;
	}
	return false;
}

/* Frees block @b of class @cls, unit @unit, that @ref names. */
static SHMKV__INLINE void free_located(struct shmkv *kv,
				       struct shmkv_block_shm *b, uint32_t unit,
				       uint32_t cls, uint64_t ref)
{
	/* Relaxed hint: our next allocation of this class tries the block
	 * we just freed first; the sweep stays where it was. */
	if (free_block(b, ref, 0))
		shmkv__store32_relaxed(&kv->freed_unit[cls], unit + 1);
}

/* A block beyond our copy of the ready pages: located again if the store
 * grew (each hot function below has such a twin, called in tail position:
 * see page_class). */
static __attribute__((noinline, cold)) void block_free_beyond(struct shmkv *kv,
							      uint64_t ref)
{
	uint32_t unit = VAL_BLOCK_UNIT(ref), cls;
	struct shmkv_block_shm *b = locate_grown(kv, unit, &cls);

	if (b != NULL)
		free_located(kv, b, unit, cls, ref);
}

void shmkv__block_free(struct shmkv *kv, uint64_t ref)
{
	uint32_t unit = VAL_BLOCK_UNIT(ref), cls;
	struct shmkv_block_shm *b = block_locate(kv, unit, &cls);

	if (b == NULL) {
		block_free_beyond(kv, ref);
		return;
	}
	free_located(kv, b, unit, cls, ref);
}

void shmkv__value_free(struct shmkv *kv, uint64_t ref)
{
	uint32_t tid = shmkv__self_tid(), cls = 0; /* set if b != NULL */
	struct shmkv_block_shm *b = block_locate(kv, VAL_BLOCK_UNIT(ref), &cls);
	struct block_cache *cache = cache_find(kv, tid);

	if (b == NULL || cache == NULL || !cache_has_room(kv, cache, cls)) {
		shmkv__block_free(kv, ref);
		return;
	}
	SHMKV_CRASH_POINT("block_caching");
	/* USED, CACHED, our tid: in our hands, and known free. */
	if (!free_block(b, ref, BLK_TAG(0, tid, 1) | BLK_CACHED))
		return;
	/* The link to the block below, in bytes that are ours now (a
	 * reader's copy that races this write fails its generation check:
	 * free_block bumped it). */
	memcpy(b->data, &cache->ref[cls], sizeof(cache->ref[cls]));
	cache->ref[cls] = VAL_BLOCK_WORD(VAL_BLOCK_UNIT(ref),
					 VAL_BLOCK_GEN(ref) + 1);
	cache->count[cls]++;
}

/*
 * Before unpublishing @ref, whose tag named thread @id when it was read:
 * a block that names another live thread would, if we died between the
 * unpublishing CAS and the free, look like a block that thread is about
 * to publish. So it is settled to 0 first (one CAS; a failure means it
 * was settled or freed meanwhile: either is fine). A block that names 0
 * or us needs nothing: if we die, it is an orphan of 0 or of the dead.
 */
void shmkv__value_settle(struct shmkv *kv, uint64_t ref, uint32_t id)
{
	struct shmkv_block_shm *b;
	uint32_t gen = VAL_BLOCK_GEN(ref);

	if (id == 0 || id == shmkv__self_tid() ||
	    (b = shmkv__block(kv, ref)) == NULL)
		return;
	/* Full barrier: settled before the CAS that unpublishes it. */
	shmkv__cas_full(&b->tag, BLK_TAG(gen, id, 1), BLK_TAG(gen, 0, 1));
}

/* shmkv__block_owner of block @b, located from @ref. */
static SHMKV__INLINE bool owner_located(const struct shmkv_block_shm *b,
					uint64_t ref, uint32_t *id,
					int64_t *deadline)
{
	/* Acquire: as a reader's first look at the tag (block_read_cmp). */
	uint64_t tag = shmkv__load_acquire(&b->tag);

	*id = BLK_PID(tag);
	if (!BLK_USED(tag) || BLK_GEN(tag) != VAL_BLOCK_GEN(ref))
		return false;
	if (deadline == NULL)
		return true;
	/* Relaxed, then the tag again after an acquire fence, as a reader
	 * copies a block (block_read_cmp): the deadline is this generation's
	 * if the tag did not move (a free bumps it). */
	*deadline = (int64_t)shmkv__load_relaxed(
		(const uint64_t *)&b->deadline_ms);
	shmkv__fence_acquire();
	return shmkv__load_relaxed(&b->tag) == tag;
}

static __attribute__((noinline, cold)) bool
block_owner_beyond(const struct shmkv *kv, uint64_t ref, uint32_t *id,
		   int64_t *deadline)
{
	uint32_t cls;
	const struct shmkv_block_shm *b = locate_grown(kv, VAL_BLOCK_UNIT(ref),
						       &cls);

	*id = 0;
	return b != NULL && owner_located(b, ref, id, deadline);
}

/*
 * Who holds the block @ref names (its publisher, or 0 once settled),
 * without reading its data: what a writer about to replace it needs
 * (shmkv__value_settle); and, if @deadline is not NULL, its deadline (0:
 * none), which a DEL needs. Return: true and *@id (and *@deadline), or
 * false (freed meanwhile, or out of bounds: the caller decides afresh).
 */
bool shmkv__block_owner(const struct shmkv *kv, uint64_t ref, uint32_t *id,
			int64_t *deadline)
{
	uint32_t cls;
	const struct shmkv_block_shm *b = block_locate(kv, VAL_BLOCK_UNIT(ref),
						       &cls);

	if (b == NULL)
		return block_owner_beyond(kv, ref, id, deadline);
	return owner_located(b, ref, id, deadline);
}

/*
 * How much of a block a read prefetches. The copy's length is in the
 * block's header, and a copy cannot start before its length is known: left
 * alone, the block's other lines are asked for only once the header's miss
 * is over, two memory latencies in a row. Prefetched with the header, they
 * arrive with it. At most 4 KiB, so that a large value does not flood the
 * first-level cache ahead of its copy (a bound, not tuned beyond 4 KiB
 * values; on a uniform 4 KiB GET the first 1 KiB alone gained two thirds
 * of what the whole value did).
 */
#define READ_PREFETCH_MAX 4096u

/* Prefetches the lines of block @b after its first (which the tag's load
 * fetches) that the first @want of its @room data bytes lie in. The block
 * was resolved from a checked unit and @room is its class's: no line
 * outside the block is touched, whatever its bytes say. Always inlined:
 * GCC takes a function of prefetches alone for one without effects, and
 * drops a call of it that it has not inlined. */
static SHMKV__INLINE void prefetch_data(const struct shmkv_block_shm *b,
					size_t room, size_t want)
{
	const char *line = (const char *)b + SHMKV_CACHE_LINE;
	const char *end;

	/* A block of one line (the smallest classes) has no other. */
	if (sizeof(*b) + room <= SHMKV_CACHE_LINE)
		return;
	if (want > room)
		want = room;
	if (want > READ_PREFETCH_MAX)
		want = READ_PREFETCH_MAX;
	end = (const char *)b->data + want;
	/* Unrolled: a 4 KiB value is 64 lines, and the loop's own compare
	 * and branch would cost more than its prefetches. */
#pragma GCC unroll 8
	for (; line < end; line += SHMKV_CACHE_LINE)
		__builtin_prefetch(line);
}

/* Is the tag still the USED block of generation @gen? */
static bool tag_matches(const struct shmkv_block_shm *b, uint32_t gen)
{
	/* Acquire: orders the copy made before this check (see callers). */
	uint64_t tag = shmkv__load_acquire(&b->tag);

	return BLK_USED(tag) && BLK_GEN(tag) == gen;
}

/* shmkv__block_read_cmp of block @b, of class @cls, located from @ref. */
static SHMKV__INLINE int
read_cmp_located(const struct shmkv *kv, struct shmkv_block_shm *b,
		 uint32_t cls, uint64_t ref, void *dst, size_t cap,
		 const void *cmp, size_t cmp_len, struct shmkv_block_view *view)
{
	uint32_t gen = VAL_BLOCK_GEN(ref);
	size_t room = class_room(kv, cls), n;
	uint64_t tag;

	/* What the copy and the compare may read, fetched with the header
	 * (a hint: it reads nothing this function trusts). */
	prefetch_data(b, room, cap > cmp_len ? cap : cmp_len);
	/* Acquire: orders the copy below after this check. */
	tag = shmkv__load_acquire(&b->tag);
	if (!BLK_USED(tag) || BLK_GEN(tag) != gen)
		return SHMKV__STALE;
	/* Who holds it (a published block: its publisher, or 0): it can
	 * only move to 0 meanwhile (shmkv__value_settle). */
	view->owner = BLK_PID(tag);
	/* Relaxed: ordered after the tag's acquire (which pairs with the
	 * value word's CAS); a torn read is caught by the re-check. */
	view->deadline_ms = (int64_t)shmkv__load_relaxed(
		(uint64_t *)&b->deadline_ms);
	view->len = shmkv__load32_relaxed(&b->len);
	/* A torn or corrupt length never reads past the block. */
	n = view->len < cap ? view->len : cap;
	if (n > room)
		n = room;
	if (n > 0)
		memcpy(dst, b->data, n);
	view->equal = cmp != NULL && view->len == cmp_len && cmp_len <= room &&
		      (cmp_len == 0 || memcmp(b->data, cmp, cmp_len) == 0);
	/* Acquire fence: the copy and compare complete before the re-check. */
	shmkv__fence_acquire();
	if (!tag_matches(b, gen))
		return SHMKV__STALE;
	/* Consistent now, so a length beyond the block is corruption. */
	return view->len > room ? -EBADMSG : 0;
}

static __attribute__((noinline, cold)) int
read_cmp_beyond(const struct shmkv *kv, uint64_t ref, void *dst, size_t cap,
		const void *cmp, size_t cmp_len, struct shmkv_block_view *view)
{
	uint32_t cls;
	struct shmkv_block_shm *b = locate_grown(kv, VAL_BLOCK_UNIT(ref), &cls);

	return b == NULL ? -EBADMSG
			 : read_cmp_located(kv, b, cls, ref, dst, cap, cmp,
					    cmp_len, view);
}

/*
 * Copies the block named by @ref into @dst (at most @cap bytes), compares
 * it with @cmp (@cmp_len bytes) if @cmp is not NULL, and describes it in
 * @view: one resolution of the unit and one seqlock-style pass for both.
 * The copy and the compare may race with a free and reuse; they are only
 * returned if the generation is unchanged after them.
 * Return: 0 (consistent; view->len may exceed @cap: then only the length is
 * meaningful), SHMKV__STALE (the block was freed: reload the value word),
 * -EBADMSG (the reference or the length is out of bounds).
 */
int shmkv__block_read_cmp(const struct shmkv *kv, uint64_t ref, void *dst,
			  size_t cap, const void *cmp, size_t cmp_len,
			  struct shmkv_block_view *view)
{
	uint32_t cls;
	struct shmkv_block_shm *b = block_locate(kv, VAL_BLOCK_UNIT(ref), &cls);

	if (b == NULL)
		return read_cmp_beyond(kv, ref, dst, cap, cmp, cmp_len, view);
	return read_cmp_located(kv, b, cls, ref, dst, cap, cmp, cmp_len, view);
}
