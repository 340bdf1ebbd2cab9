/*
 * block.c - value storage: fixed-size blocks in per-size-class regions.
 *
 * Every transition of a block is one CAS on its own tag word, so a process
 * killed anywhere leaves each block in a state someone else can finish:
 *
 *   FREE(g) --alloc--> USED(g, pid) --confirm--> USED(g, 0) --free--> FREE(g+1)
 *
 * There is no free list to corrupt and no counter to drift: allocation scans
 * the class from a process-local hint for a FREE tag. Readers copy a
 * published block without any lock and then check that its generation did
 * not move (a seqlock with the generation as sequence): a published block is
 * immutable until it is freed, and freeing bumps the generation.
 */
#include <errno.h>
#include <string.h>

#include "atomic.h"
#include "internal.h"

struct shmkv_block_shm *shmkv__block(const struct shmkv *kv, uint32_t cls,
				     uint32_t idx)
{
	/* Indices come from value words in shared memory: check them here,
	 * once, so no caller can form a pointer outside the class region. */
	if (cls >= kv->class_count || idx >= kv->cls[cls].block_count)
		return NULL;
	return (struct shmkv_block_shm *)(kv->cls[cls].base +
					  (size_t)idx * kv->cls[cls].block_size);
}

size_t shmkv__block_capacity(const struct shmkv *kv, uint64_t ref)
{
	uint32_t cls = VAL_BLOCK_CLASS(ref);

	if (cls >= kv->class_count)
		return 0;
	return kv->cls[cls].block_size - sizeof(struct shmkv_block_shm);
}

/* Scans one class for a FREE block; at most block_count tags are read. */
static int alloc_in_class(struct shmkv *kv, uint32_t cls, uint32_t pid,
			  uint64_t *ref)
{
	uint32_t count = kv->cls[cls].block_count;
	/* Relaxed: a hint only; a stale value merely starts the scan elsewhere. */
	uint32_t start = uatomic_read(&kv->alloc_hint[cls]);

	for (uint32_t n = 0; n < count; n++) {
		uint32_t idx = (start + n) % count;
		struct shmkv_block_shm *b = shmkv__block(kv, cls, idx);
		/* Relaxed: only a filter; the CAS below decides. */
		uint64_t tag = shmkv__load_relaxed(&b->tag);

		if (BLK_USED(tag))
			continue;
		/* Full barrier: the block's previous content (written before
		 * the free that made it FREE) is behind us before we write. */
		if (shmkv__cas_full(&b->tag, tag,
				    BLK_TAG(BLK_GEN(tag), pid, 1)) != tag)
			continue;
		uatomic_set(&kv->alloc_hint[cls], idx + 1);
		*ref = VAL_BLOCK_WORD(cls, idx, BLK_GEN(tag));
		return 0;
	}
	return -ENOMEM;
}

/*
 * Allocates a block for @len bytes, owned by this process until published
 * and confirmed. A full class spills into the next larger one.
 * Return: 0 and *@ref, or -ENOMEM.
 */
int shmkv__block_alloc(struct shmkv *kv, size_t len, uint64_t *ref)
{
	uint32_t pid = shmkv__self_pid();

	for (uint32_t c = 0; c < kv->class_count; c++) {
		if (kv->cls[c].block_size - sizeof(struct shmkv_block_shm) < len)
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
	struct shmkv_block_shm *b = shmkv__block(kv, VAL_BLOCK_CLASS(ref),
						 VAL_BLOCK_INDEX(ref));
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
		if (seen == tag)
			return;
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
	struct shmkv_block_shm *b = shmkv__block(kv, VAL_BLOCK_CLASS(ref),
						 VAL_BLOCK_INDEX(ref));
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
 * Copies the block named by @ref into @dst (at most @cap bytes) and
 * describes it in @view. The copy may race with a free and reuse; it is
 * only returned if the generation is unchanged after it.
 * Return: 0 (consistent; view->len may exceed @cap: then only the length is
 * meaningful), SHMKV__STALE (the block was freed: reload the value word),
 * -EBADMSG (the reference or the length is out of bounds).
 */
int shmkv__block_read(const struct shmkv *kv, uint64_t ref, void *dst,
		      size_t cap, struct shmkv_block_view *view)
{
	struct shmkv_block_shm *b = shmkv__block(kv, VAL_BLOCK_CLASS(ref),
						 VAL_BLOCK_INDEX(ref));
	uint32_t gen = VAL_BLOCK_GEN(ref);
	size_t room, n;

	if (b == NULL)
		return -EBADMSG;
	if (!tag_matches(b, gen))
		return SHMKV__STALE;
	room = shmkv__block_capacity(kv, ref);
	view->deadline_ms = (int64_t)uatomic_read((uint64_t *)&b->deadline_ms);
	view->len = uatomic_read(&b->len);
	n = view->len < cap ? view->len : cap;
	if (n > room)
		n = room; /* a torn or corrupt length never reads past the block */
	if (n > 0)
		memcpy(dst, b->data, n);
	/* Acquire fence: the copy above completes before the re-check. */
	shmkv__fence_acquire();
	if (!tag_matches(b, gen))
		return SHMKV__STALE;
	/* Consistent now, so a length beyond the block is corruption. */
	return view->len > room ? -EBADMSG : 0;
}

/* Compares a block with @val under the same protocol as shmkv__block_read. */
int shmkv__block_equals(const struct shmkv *kv, uint64_t ref,
			const void *val, size_t vlen, bool *equal)
{
	struct shmkv_block_shm *b = shmkv__block(kv, VAL_BLOCK_CLASS(ref),
						 VAL_BLOCK_INDEX(ref));
	uint32_t gen = VAL_BLOCK_GEN(ref);
	size_t room = shmkv__block_capacity(kv, ref);
	uint32_t len;

	if (b == NULL)
		return -EBADMSG;
	if (!tag_matches(b, gen))
		return SHMKV__STALE;
	len = uatomic_read(&b->len);
	*equal = len == vlen && len <= room &&
		 (vlen == 0 || memcmp(b->data, val, vlen) == 0);
	shmkv__fence_acquire();
	if (!tag_matches(b, gen))
		return SHMKV__STALE;
	return len > room ? -EBADMSG : 0;
}
