/*
 * strings_block.c - the straight-line SET of a string that leaves or
 * enters a value block (engine.h: shmkv__set_bytes_fast), DEL of a
 * block's value (shmkv__del_block_fast), and DELIFEQ of a string
 * (shmkv__delifeq_bytes_fast): a token-based lock's release.
 *
 * In a slot whose area holds one value of the size being set (a one-line
 * slot with a 16-byte value), writes alternate between the slot and a
 * block: a value is never rewritten in place (area.h), so the write after
 * an inline one goes to a block, and the next one back into the slot. So
 * this path is half of such a store's SETs, and it does what the engine
 * would do, without its op, decide() or retry machinery: the same value
 * word checks, the same block (this thread's cache first), the same
 * commit (commit.h). Any doubt is the engine's: a word of another kind or
 * incarnation, a block freed under us, an allocation that failed, lost
 * CASes.
 */
#include "area.h"
#include "commit.h"
#include "engine.h"
#include "fault.h"
#include "owned.h"
#include "strings_fast.h"

/* Our unpublished block holding @len bytes of @bytes for the slot of
 * back-pointer @back. Return: its value word, or 0 (no room: the engine's,
 * which reports it). */
static uint64_t block_of_bytes(struct shmkv *kv, uint32_t back,
			       const void *bytes, size_t len)
{
	struct shmkv_block_shm *b;
	uint64_t ref = 0;

	if (shmkv__value_alloc_reaping(kv, len, &ref, &b) != 0) {
		if (ref != 0) /* taken, but not located: corrupt */
			shmkv__value_free(kv, ref);
		return 0;
	}
	shmkv__copy_short(b->data, bytes, len);
	shmkv__block_seal(b, len, 0, back);
	return ref;
}

bool shmkv__set_bytes_fast(const struct shmkv__fast *f, const void *bytes,
			   size_t len)
{
	struct shmkv *kv = f->kv;
	uint32_t ver = shmkv__fast_ver(f);
	uint64_t mine = 0; /* our block holding the bytes, unpublished */
	bool done = false;

	for (int n = 0; n < SHMKV__FAST_TRIES && !done; n++) {
		uint64_t old, nv = 0, held = 0;
		uint32_t owner = 0;

		if (!shmkv__fast_word(f, &old))
			break;
		if (VAL_KIND(old) == VAL_BLOCK) {
			/* Its holder, to settle before the CAS (commit.h);
			 * then the slot, which it leaves free. */
			if (!shmkv__block_owner(kv, old, &owner, NULL))
				break;
			nv = shmkv__area_stage(kv, f->slot, f->state, f->klen,
					       old, bytes, len, &held);
		} else if (!shmkv__word_owns_nothing(old, ver)) {
			break;
		}
		/* Over anything else, the slot was tried already
		 * (shmkv__fast_set_inline): once a SET is enough to find a
		 * claim held. */
		if (nv == 0) {
			if (mine == 0)
				mine = block_of_bytes(
					kv, BLK_BACK_OF(f->idx, f->state),
					bytes, len);
			if (mine == 0)
				break;
			nv = mine;
		}
		SHMKV_PAUSE_POINT("fast_loaded");
		done = shmkv__commit_word(kv, f->slot, old, nv, held, owner);
		if (done && nv == mine)
			mine = 0;
	}
	if (mine != 0)
		shmkv__value_free(kv, mine);
	return done;
}

/* What string_equals found. */
enum string_cmp {
	CMP_ENGINE = -1, /* the engine's: a deadline, a corrupt word */
	CMP_DIFFERS = 0,
	CMP_EQUAL = 1,
	CMP_MOVED = 2, /* the value changed under the read: load it again */
};

/* Does the value of word @w (a string in the slot or in a block) equal
 * @val (@vlen)? If so, the block's holder is in *@owner (0 in the slot). */
static enum string_cmp string_equals(const struct shmkv__fast *f, uint64_t w,
				     const void *val, size_t vlen,
				     uint32_t *owner)
{
	struct shmkv_block_view view;
	bool equal = false;
	int r;

	*owner = 0;
	if (VAL_KIND(w) == VAL_INLINE)
		r = shmkv__inline_read(f->slot, f->kv->geo.slot_size, w, NULL,
				       0, val, vlen, &equal);
	else
		r = shmkv__block_read_cmp(f->kv, w, NULL, 0, val, vlen, &view);
	if (r == SHMKV__STALE)
		return CMP_MOVED;
	if (r != 0)
		return CMP_ENGINE;
	if (VAL_KIND(w) == VAL_INLINE)
		return equal ? CMP_EQUAL : CMP_DIFFERS;
	/* A deadline (passed or not: an expired key equals nothing) is the
	 * engine's. */
	if (view.deadline_ms != 0)
		return CMP_ENGINE;
	*owner = view.owner;
	return view.equal ? CMP_EQUAL : CMP_DIFFERS;
}

int shmkv__delifeq_bytes_fast(const struct shmkv__fast *f, const void *val,
			      size_t vlen)
{
	uint32_t ver = shmkv__fast_ver(f);

	for (int n = 0; n < SHMKV__FAST_TRIES; n++) {
		enum string_cmp cmp;
		uint32_t owner;
		uint64_t w;

		if (!shmkv__fast_word(f, &w))
			return SHMKV__FAST_SLOW;
		/* An integer's form is not @val's (the caller's check). */
		if (shmkv__word_is_none(w, ver) || shmkv__word_is_int(w, ver))
			return 0;
		if (VAL_KIND(w) != VAL_INLINE && VAL_KIND(w) != VAL_BLOCK)
			return SHMKV__FAST_SLOW;
		cmp = string_equals(f, w, val, vlen, &owner);
		if (cmp == CMP_MOVED)
			continue;
		if (cmp != CMP_EQUAL)
			return cmp == CMP_DIFFERS ? 0 : SHMKV__FAST_SLOW;
		SHMKV_PAUSE_POINT("fast_loaded");
		if (shmkv__commit_word(f->kv, f->slot, w, VAL_NONE_WORD(ver, 0),
				       0, owner))
			return 1;
	}
	return SHMKV__FAST_SLOW;
}

int shmkv__del_block_fast(struct shmkv *kv, struct shmkv_slot_shm *slot,
			  uint64_t state, uint64_t w)
{
	uint32_t owner;
	int64_t deadline;

	/* The header's line is the one the free touches anyway. A deadline
	 * (expired or not: DEL's answer depends on it) is the engine's. */
	if (!shmkv__block_owner(kv, w, &owner, &deadline) || deadline != 0)
		return SHMKV__FAST_SLOW;
	SHMKV_PAUSE_POINT("fast_loaded");
	return shmkv__commit_word(kv, slot, w,
				  VAL_NONE_WORD(SLOT_VERSION(state), 0), 0,
				  owner)
		       ? 1
		       : SHMKV__FAST_SLOW;
}
