/*
 * owned.h - owned blocks, visits, and the reclamation of what dead
 * processes leave behind. The core's generic kind of pinned memory: the
 * core knows nothing of what an owned block holds (lock_cell.c keeps lock
 * grants in them), only who owns it, which slot may pin it, and who is
 * visiting it. Not public API.
 *
 * An OWNED block is a value block its process allocates for its own
 * bookkeeping and never confirms, so its tag keeps the owner's pid for
 * life. A value word names it with a pin integer (layout.h); its header's
 * `slot` says which slot may hold that pin. While its owner lives, only
 * the owner frees it. Once the owner is dead, anyone frees it as soon as
 * no pin names it and nobody visits it.
 *
 * A VISIT protects a reader that is about to CAS a value word holding a
 * pin from the word coming back to the same bits with another meaning
 * (the pin's tag has 16 bits; the block may be reused or re-tagged). The
 * visitor announces (pid, unit) in the header, then re-validates what it
 * read; the owner, before each reuse that could repeat a tag, and any
 * freer, first write (a tag move or a DOOM bit), fence, and then look for
 * visits: a store-buffer pair in which one side always sees the other.
 */
#ifndef SHMKV_OWNED_H
#define SHMKV_OWNED_H

#include "internal.h"

/*
 * Allocates an owned block with room for @len bytes, tagged with our pid
 * and pinned to no slot. *@ref: its block word (unit and generation).
 * Return: 0, -ENOMEM.
 */
int shmkv__owned_alloc(struct shmkv *kv, size_t len, uint64_t *ref);
/* The owned block whose data starts at @data (a pointer the owner got
 * from shmkv__block() once): no division on the hot path. */
static inline struct shmkv_block_shm *shmkv__owned_of(void *data)
{
	return (struct shmkv_block_shm *)((unsigned char *)data -
					  offsetof(struct shmkv_block_shm,
						   data));
}

/* Pins of block @b will live in slot @slot: recovery looks there. Called
 * by the owner before the CAS that publishes a pin. */
static inline void shmkv__owned_pin(struct shmkv_block_shm *b, uint32_t slot)
{
	/* Relaxed: ordered before the pin by the CAS that publishes it;
	 * skipped when unchanged, so a hot lock does not dirty the word. */
	if (shmkv__load32_relaxed(&b->slot) != slot)
		shmkv__store32_relaxed(&b->slot, slot);
}

/* Is @b still owned block @ref, owned by @pid, not being freed? One
 * load: the owner's check before it writes into the block. */
static inline bool shmkv__owned_valid(const struct shmkv_block_shm *b,
				      uint64_t ref, uint32_t pid)
{
	/* Relaxed: only the owner and a freer write the tag; a freer acts
	 * only once the owner is dead (or, for DOOM, on a block the owner
	 * no longer uses), so this guards against corruption and a wrong
	 * liveness judgement; it synchronises nothing. */
	return shmkv__load_relaxed(&b->tag) ==
	       BLK_TAG(VAL_BLOCK_GEN(ref), pid, 1);
}
/* Does the slot @ref's header names hold a pin of @ref? */
bool shmkv__owned_pinned(const struct shmkv *kv, uint64_t ref);
/*
 * Frees owned block @ref, unless a visit names it or it is no longer that
 * block. Return: 0 (freed, or already gone), -EBUSY (visited: left for a
 * later reclamation, once the visit ends).
 */
int shmkv__owned_free(struct shmkv *kv, uint64_t ref);

/*
 * Visits. Begin: announces this process on @unit (full barrier); the
 * caller then re-validates what it read of the block, and ends the visit
 * after its CAS. Return: 0 and *@entry, -EAGAIN (every entry is held by a
 * live visitor: SHMKV_VISITS takeovers in flight; retry).
 */
int shmkv__visit_begin(struct shmkv *kv, uint32_t unit, uint32_t *entry);
void shmkv__visit_end(struct shmkv *kv, uint32_t entry);
/*
 * Does a live process visit @unit? The caller has written what a visitor
 * re-validates (the block's tag, or the owner's data) and fenced. Entries
 * of dead visitors are cleared on the way.
 */
bool shmkv__visited(struct shmkv *kv, uint32_t unit);

/* One amortised reclamation step (see shmkv__reap_step): value units and
 * slots. A step reads block tags and slot states in order, and checks a
 * published block against its slot (a random read, a page fault in a
 * fresh mapping) only if that slot lies in the turn's region: one
 * SHMKV_REAP_ORPHAN_TURNS-th of the table, a new one each turn. */
#define SHMKV_REAP_STEP_UNITS	2048u
#define SHMKV_REAP_STEP_SLOTS	512u
#define SHMKV_REAP_ORPHAN_TURNS 32u

/* What one reclamation pass did (maint.c's recover reports it). */
struct shmkv_reclaimed {
	uint64_t blocks;    /* freed: orphaned, or owned by the dead */
	uint64_t confirmed; /* published blocks of the dead, settled */
};

/*
 * Reclaims the leftovers of dead processes in @units value units and
 * @slots slots, from where the last step stopped (the header's cursors),
 * so that the processes that use a store share the work: blocks of dead
 * owners (never published, owned, or half freed) and the slots of
 * shmkv__slot_reclaim, pending inserts of dead inserters included, on
 * every pass of the cursor; published blocks nothing names (a process
 * killed between a replace and its free) on one pass of the cursor in
 * SHMKV_REAP_ORPHAN_TURNS. @report may be NULL.
 */
void shmkv__reap_step(struct shmkv *kv, uint32_t units, uint32_t slots,
		      struct shmkv_reclaimed *report);
/*
 * Reclaims every block of the store that a dead process left and nothing
 * names (and every published block no slot names). Bounded by the size of
 * value memory. Return: blocks freed.
 */
uint64_t shmkv__reap_blocks(struct shmkv *kv, struct shmkv_reclaimed *report);
/*
 * shmkv__block_alloc, but before answering -ENOMEM reclaims what dead
 * processes left (shmkv__reap_blocks) and, if that freed anything, tries
 * once more. What every caller above block.c allocates with; it lives
 * here so that block.c never calls up into reclamation.
 */
int shmkv__block_alloc_reaping(struct shmkv *kv, size_t len, uint64_t *ref);
/* What shmkv__value_alloc_reaping does after shmkv__value_alloc answered
 * @err (not 0). */
int shmkv__value_alloc_then(struct shmkv *kv, size_t len, uint64_t *ref,
			    struct shmkv_block_shm **hdr, int err);
/* The same for a value block (shmkv__value_alloc: this thread's); an
 * allocation that starts this thread's block cache of the store runs
 * shmkv__reap_first_step too. Inline: a block from this thread's cache,
 * the common case, costs two calls less. */
static inline int shmkv__value_alloc_reaping(struct shmkv *kv, size_t len,
					     uint64_t *ref,
					     struct shmkv_block_shm **hdr)
{
	int err = shmkv__value_alloc(kv, len, ref, hdr);

	return err == 0 ? 0 : shmkv__value_alloc_then(kv, len, ref, hdr, err);
}
/* The step that whoever starts owning blocks runs first (a process's
 * first lock cell through a handle, a thread's first block cache of a
 * store): what keeps a store used by short-lived processes and threads at
 * its steady state. */
void shmkv__reap_first_step(struct shmkv *kv);

#endif /* SHMKV_OWNED_H */
