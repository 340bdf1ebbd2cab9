/*
 * block.c - value storage: fixed-size blocks in per-size-class regions.
 *
 * Every transition of a block is one CAS on its own tag word, so a process
 * killed anywhere leaves each block in a state someone else can finish:
 *
 *   FREE(g) --alloc--> USED(g, pid) --confirm--> USED(g, 0) --free--> FREE(g+1)
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
	 * every used block to find the one just freed. Relaxed: hints. */
	uint32_t i = uatomic_read(&kv->alloc_page[cls]) == page + 1
			     ? uatomic_read(&kv->alloc_index[cls])
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
		/* Relaxed: process-local hints, maybe shared by threads. */
		uatomic_set(&kv->alloc_page[cls], page + 1);
		uatomic_set(&kv->alloc_index[cls], i + 1);
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
	/* Relaxed: a hint, as above. */
	uint32_t start = uatomic_read(&kv->claim_hint);

	if (!may_claim(kv, cls))
		return UINT32_MAX;
	for (uint32_t n = 0; n < kv->geo.page_count; n++) {
		uint32_t page = (start + n) % kv->geo.page_count;

		/* Relaxed filter; full-barrier CAS decides the owner class
		 * before any block of the page is allocated. */
		if (shmkv__load32_relaxed(&kv->page_table[page]) != 0 ||
		    shmkv__cas32_full(&kv->page_table[page], 0, cls + 1) != 0)
			continue;
		uatomic_set(&kv->claim_hint, page + 1);
		return page;
	}
	return UINT32_MAX;
}

/* The last page we used, the class's other pages, then a new page. */
static int alloc_in_class(struct shmkv *kv, uint32_t cls, uint32_t pid,
			  uint64_t *ref)
{
	/* Relaxed: a hint; a stale one only starts the search elsewhere. */
	uint32_t hint = uatomic_read(&kv->alloc_page[cls]), page;

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
 * Allocates a block for @len bytes, owned by this process until published
 * and confirmed. When neither the class nor the pool has room, a larger
 * class is tried. Reclaiming what dead processes left is the caller's
 * next step (owned.c): block.c never calls up into reclamation.
 * Return: 0 and *@ref, or -ENOMEM.
 */
int shmkv__block_alloc(struct shmkv *kv, size_t len, uint64_t *ref)
{
	uint32_t pid = shmkv__self_pid();

	for (uint32_t c = 0; c < kv->geo.class_count; c++) {
		if (kv->geo.class_size[c] - sizeof(struct shmkv_block_shm) <
		    len)
			continue;
		if (alloc_in_class(kv, c, pid, ref) == 0)
			return 0;
	}
	return -ENOMEM;
}

/*
 * Frees the block named by @ref if it still is that block. Anyone may free
 * a block that is no longer referenced (its unpublisher, or recovery for a
 * dead one); the CAS on the generation makes a second free a no-op.
 */
void shmkv__block_free(struct shmkv *kv, uint64_t ref)
{
	uint32_t unit = VAL_BLOCK_UNIT(ref), cls;
	struct shmkv_block_shm *b = block_locate(kv, unit, &cls);
	uint32_t gen = VAL_BLOCK_GEN(ref);
	uint64_t tag;

	if (b == NULL)
		return;
	/* Relaxed first read: the CAS re-checks it. */
	tag = shmkv__load_relaxed(&b->tag);
	/* Loops only while the owner's confirm races us (pid -> 0); bounded
	 * by that one transition. */
	while (BLK_USED(tag) && BLK_GEN(tag) == gen) {
		/* Full barrier: every reader's copy that raced this free
		 * re-checks the generation after its copy and sees gen+1. */
		uint64_t seen = shmkv__cas_full(&b->tag, tag,
						BLK_TAG(gen + 1, 0, 0));
		if (seen == tag) {
			/* Relaxed hints: our next allocation of this class
			 * starts at the block we just freed. */
			uatomic_set(&kv->alloc_page[cls],
				    (unit >> kv->geo.unit_shift) + 1);
			uatomic_set(&kv->alloc_index[cls],
				    unit & (kv->geo.units_per_page - 1));
			return;
		}
		tag = seen;
	}
}

/*
 * After publishing @ref, the allocator hands it to the table (pid 0), so
 * recovery can tell "published, then orphaned by a killed unpublisher"
 * from "allocated by a live process that is about to publish it".
 */
void shmkv__block_confirm(struct shmkv *kv, uint64_t ref)
{
	struct shmkv_block_shm *b = shmkv__block(kv, ref);
	uint32_t gen = VAL_BLOCK_GEN(ref);
	uint64_t tag;

	if (b == NULL)
		return;
	tag = BLK_TAG(gen, shmkv__self_pid(), 1);
	/* Full barrier (CAS). Fails only if someone already freed it: fine. */
	shmkv__cas_full(&b->tag, tag, BLK_TAG(gen, 0, 1));
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

	if (b == NULL)
		return -EBADMSG;
	if (!tag_matches(b, gen))
		return SHMKV__STALE;
	room = class_room(kv, cls);
	view->deadline_ms = (int64_t)uatomic_read((uint64_t *)&b->deadline_ms);
	view->len = uatomic_read(&b->len);
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
