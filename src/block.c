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
#include "fault.h"
#include "internal.h"

uint32_t shmkv__page_class(const struct shmkv *kv, uint32_t page)
{
	/* Relaxed: a page's class is written once (CAS from 0) and never
	 * changes; a block named by a value word we acquired was allocated
	 * after that CAS, so we see it. Out of range means corrupt or free. */
	uint32_t c = page < kv->geo.page_count
			     ? shmkv__load32_relaxed(&kv->page_table[page])
			     : 0;

	return c != 0 && c <= kv->geo.class_count ? c - 1 : SHMKV__NO_CLASS;
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
	uint32_t c = shmkv__page_class(kv, page);

	if (c == SHMKV__NO_CLASS || idx >= kv->class_blocks[c])
		return NULL;
	*cls = c;
	return (struct shmkv_block_shm *)(kv->pages +
					  (size_t)page * kv->geo.page_size +
					  (size_t)idx * kv->geo.class_size[c]);
}

struct shmkv_block_shm *shmkv__block_at(const struct shmkv *kv, uint32_t unit,
					uint32_t *cls)
{
	return block_locate(kv, unit, cls);
}

struct shmkv_block_shm *shmkv__block(const struct shmkv *kv, uint64_t ref)
{
	uint32_t cls;

	return block_locate(kv, VAL_BLOCK_UNIT(ref), &cls);
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
	struct shmkv_block_shm *b = block_locate(kv, VAL_BLOCK_UNIT(ref), &cls);

	*room = b != NULL ? class_room(kv, cls) : 0;
	return b;
}

size_t shmkv__block_capacity(const struct shmkv *kv, uint64_t ref)
{
	size_t room;

	shmkv__block_room(kv, ref, &room);
	return room;
}

/* Scans page @page of class @cls for a FREE block; at most one page of
 * tags is read. Return: 0 and *@ref, or -ENOMEM. */
static int alloc_in_page(struct shmkv *kv, uint32_t page, uint32_t cls,
			 uint32_t pid, uint64_t *ref)
{
	unsigned char *base = kv->pages + (size_t)page * kv->geo.page_size;
	uint32_t count = kv->class_blocks[cls];
	/* Start where this process last allocated or freed in this page: a
	 * class runs nearly full, and a scan from block 0 would walk past
	 * every used block to find the one just freed. Relaxed: process-local
	 * hints (threads share the handle); any value only moves the scan. */
	uint32_t i = shmkv__load32_relaxed(&kv->alloc_page[cls]) == page + 1
			     ? shmkv__load32_relaxed(&kv->alloc_index[cls])
			     : 0;

	/* A wrap by compare, not `% count`: count (blocks of a class in a
	 * page) is no power of two, and this runs on every allocation. */
	for (uint32_t n = 0; n < count; n++, i++) {
		struct shmkv_block_shm *b;
		uint64_t tag;

		if (i >= count)
			i = 0;
		b = (struct shmkv_block_shm *)(base +
					       (size_t)i *
						       kv->geo.class_size[cls]);
		/* Relaxed: only a filter; the CAS below decides. */
		tag = shmkv__load_relaxed(&b->tag);
		if (BLK_USED(tag))
			continue;
		/* Full barrier: the block's previous content (written before
		 * the free that made it FREE) is behind us before we write. */
		if (shmkv__cas_full(&b->tag, tag,
				    BLK_TAG(BLK_GEN(tag), pid, 1)) != tag)
			continue;
		/* Relaxed: process-local hints, maybe shared by threads; the
		 * block is ours by the CAS, the hints publish nothing. */
		shmkv__store32_relaxed(&kv->alloc_page[cls], page + 1);
		shmkv__store32_relaxed(&kv->alloc_index[cls], i + 1);
		*ref = VAL_BLOCK_WORD((page << kv->geo.unit_shift) | i,
				      BLK_GEN(tag));
		return 0;
	}
	return -ENOMEM;
}

/*
 * May @cls take a free page? A class with no page yet always may; one that
 * has pages may only if free pages remain for every class still without
 * one. So the first values of any size always find room, whatever order
 * values arrive in (a store restored from a dump in another order must not
 * fail). Counted with one pass over the page table: claims are rare (once
 * per page of values).
 */
static bool may_claim(const struct shmkv *kv, uint32_t cls)
{
	uint32_t has[SHMKV_CLASSES_MAX] = { 0 }, free_pages = 0, needy = 0;

	for (uint32_t page = 0; page < kv->geo.page_count; page++) {
		uint32_t c = shmkv__page_class(kv, page);

		if (c == SHMKV__NO_CLASS)
			free_pages++;
		else
			has[c] = 1;
	}
	if (!has[cls])
		return free_pages > 0;
	for (uint32_t c = 0; c < kv->geo.class_count; c++)
		needy += !has[c];
	return free_pages > needy;
}

/* Claims a free page for @cls. Return: the page, or UINT32_MAX. */
static uint32_t claim_page(struct shmkv *kv, uint32_t cls)
{
	/* Relaxed: a process-local hint, as above. */
	uint32_t start = shmkv__load32_relaxed(&kv->claim_hint);

	if (!may_claim(kv, cls))
		return UINT32_MAX;
	for (uint32_t n = 0; n < kv->geo.page_count; n++) {
		uint32_t page = (start + n) % kv->geo.page_count;

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

/* The last page we used, the class's other pages, then a new page. */
static int alloc_in_class(struct shmkv *kv, uint32_t cls, uint32_t pid,
			  uint64_t *ref)
{
	/* Relaxed: a hint; a stale one only starts the search elsewhere. */
	uint32_t hint = shmkv__load32_relaxed(&kv->alloc_page[cls]), page;

	if (hint != 0 && shmkv__page_class(kv, hint - 1) == cls &&
	    alloc_in_page(kv, hint - 1, cls, pid, ref) == 0)
		return 0;
	for (uint32_t n = 0; n < kv->geo.page_count; n++) {
		page = (hint + n) % kv->geo.page_count;
		if (shmkv__page_class(kv, page) == cls &&
		    alloc_in_page(kv, page, cls, pid, ref) == 0)
			return 0;
	}
	page = claim_page(kv, cls);
	if (page == UINT32_MAX)
		return -ENOMEM;
	return alloc_in_page(kv, page, cls, pid, ref);
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
	for (uint32_t c = 0; c < kv->geo.class_count; c++) {
		if (class_room(kv, c) < len)
			continue;
		if (alloc_in_class(kv, c, id, ref) == 0)
			return 0;
	}
	return -ENOMEM;
}

int shmkv__block_alloc(struct shmkv *kv, size_t len, uint64_t *ref)
{
	return alloc_as(kv, len, shmkv__self_pid(), ref);
}

/*
 * The per-thread cache of free blocks: one block per size class that this
 * thread freed into its own hands (tag CACHED, its tid, the generation
 * already bumped), so that its next allocation of that class takes it
 * without a CAS. Nobody else writes the tag of a block a live thread
 * holds: readers never write, frees expect a generation no value word
 * names, and reclamation frees only the blocks of the dead. So taking it
 * back is a plain store. Blocks are named by unit, so a cache serves one
 * store (by its hash seed, checked again against the tag on take), kept
 * across handles of that store; a thread keeps caches for CACHE_STORES
 * stores, and one that moves on to more drops the oldest: those blocks,
 * tagged with its tid, are reclaimed once it exits.
 */
#define CACHE_STORES 4u
struct block_cache {
	uint64_t store; /* hash seed of the store the entries are in */
	uint32_t tid;	/* thread that filled it (a fork child's copy is not) */
	uint64_t ref[SHMKV_CLASSES_MAX]; /* 0: none */
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

/* The cached block of class @cls, if it still is ours. */
static bool cache_take(struct shmkv *kv, struct block_cache *cache,
		       uint32_t cls, uint32_t tid, uint64_t *ref)
{
	uint64_t r = cache->ref[cls], tag;
	struct shmkv_block_shm *b;
	uint32_t c;

	if (r == 0)
		return false;
	cache->ref[cls] = 0;
	b = block_locate(kv, VAL_BLOCK_UNIT(r), &c);
	if (b == NULL || c != cls)
		return false;
	tag = BLK_TAG(VAL_BLOCK_GEN(r), tid, 1);
	/* Relaxed: only this thread writes the tag of a block it holds
	 * (see above); a tag that differs is not ours any more. */
	if (shmkv__load_relaxed(&b->tag) != (tag | BLK_CACHED))
		return false;
	/* Relaxed: ours alone; the CAS that publishes the block orders it
	 * before the block is seen (and reclamation skips a live holder's
	 * blocks, CACHED or not). */
	shmkv__store_relaxed(&b->tag, tag);
	*ref = r;
	return true;
}

int shmkv__value_alloc(struct shmkv *kv, size_t len, uint64_t *ref)
{
	uint32_t tid = shmkv__self_tid();
	struct block_cache *cache = cache_find(kv, tid);

	if (cache == NULL) { /* empty: the pool's */
		int err;

		cache_start(kv, tid);
		err = alloc_as(kv, len, tid, ref);
		return err ? err : SHMKV__CACHE_STARTED;
	}
	for (uint32_t c = 0; c < kv->geo.class_count; c++)
		if (class_room(kv, c) >= len) {
			if (cache_take(kv, cache, c, tid, ref))
				return 0;
			break;
		}
	return alloc_as(kv, len, tid, ref);
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

void shmkv__block_free(struct shmkv *kv, uint64_t ref)
{
	uint32_t unit = VAL_BLOCK_UNIT(ref), cls;
	struct shmkv_block_shm *b = block_locate(kv, unit, &cls);

	if (b != NULL && free_block(b, ref, 0)) {
		/* Relaxed hints: our next allocation of this class starts
		 * at the block we just freed. */
		shmkv__store32_relaxed(&kv->alloc_page[cls],
				       (unit >> kv->geo.unit_shift) + 1);
		shmkv__store32_relaxed(&kv->alloc_index[cls],
				       unit & (kv->geo.units_per_page - 1));
	}
}

void shmkv__value_free(struct shmkv *kv, uint64_t ref)
{
	uint32_t tid = shmkv__self_tid(), cls = 0; /* set if b != NULL */
	struct shmkv_block_shm *b = block_locate(kv, VAL_BLOCK_UNIT(ref), &cls);
	struct block_cache *cache = cache_find(kv, tid);

	if (b == NULL || cache == NULL || cache->ref[cls] != 0) {
		shmkv__block_free(kv, ref);
		return;
	}
	SHMKV_CRASH_POINT("block_caching");
	/* USED, CACHED, our tid: in our hands, and known free. */
	if (free_block(b, ref, BLK_TAG(0, tid, 1) | BLK_CACHED))
		cache->ref[cls] = VAL_BLOCK_WORD(VAL_BLOCK_UNIT(ref),
						 VAL_BLOCK_GEN(ref) + 1);
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

/* Is the tag still the USED block of generation @gen? */
static bool tag_matches(const struct shmkv_block_shm *b, uint32_t gen)
{
	/* Acquire: orders the copy made before this check (see callers). */
	uint64_t tag = shmkv__load_acquire(&b->tag);

	return BLK_USED(tag) && BLK_GEN(tag) == gen;
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
	uint32_t gen = VAL_BLOCK_GEN(ref);
	size_t room, n;
	uint64_t tag;

	if (b == NULL)
		return -EBADMSG;
	/* Acquire: orders the copy below after this check. */
	tag = shmkv__load_acquire(&b->tag);
	if (!BLK_USED(tag) || BLK_GEN(tag) != gen)
		return SHMKV__STALE;
	room = class_room(kv, cls);
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
