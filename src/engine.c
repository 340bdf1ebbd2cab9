/*
 * engine.c - the generic command worker (see engine.h).
 *
 * The linearization point of every command that changes a key is the CAS on
 * the key's value word; of every command that only reads, the load of that
 * word (validated by re-reading the slot's state word, which proves the
 * value belonged to the key we matched). A value word is only ever CAS'd,
 * never blindly exchanged: a slot can be recycled for another key between
 * our lookup and our write, and only a CAS that expects this incarnation's
 * exact word (each encoding carries the slot version or a block generation)
 * is guaranteed to miss a recycled slot.
 */
#include <errno.h>
#include <string.h>

#include "area.h"
#include "atomic.h"
#include "commit.h"
#include "engine.h"
#include "evict.h"
#include "expire.h"
#include "fault.h"
#include "intconv.h"
#include "lookup.h"
#include "migrate.h"
#include "owned.h"
#include "redis_typed.h"
#include "tables.h"

#define RELOOKUP 2 /* the slot was recycled: find the key again */

struct run {
	struct shmkv *kv;
	struct shmkv_op *op;
	struct shmkv_slot_ref ref;
	uint64_t block; /* allocated by us, not yet published; 0: none */
	struct shmkv_block_shm *blk; /* r->block's header, resolved once */
	uint32_t old_owner;	     /* the id the current block's tag named */
	size_t blk_room;	     /* and the data bytes it holds */
	struct shmkv_slot_ref inserted; /* a slot we inserted; state 0: none */
	uint32_t klen;	    /* the key's length: what it leaves of the slot */
	uint64_t area_held; /* our claim of the slot's area (area.h); 0: none */
	uint32_t stale_still; /* SHMKV_ACT_STALE in a row on an unmoved word */
	int64_t now;	      /* CLOCK_BOOTTIME ms, read at most once */
	/* Is op->new_bytes a canonical 48-bit integer? Decided on first
	 * store only: a SETNX that finds the key set never pays for it. */
	enum { INLINE_UNKNOWN, INLINE_NO, INLINE_YES } new_inline;
	int64_t new_inline_val;
	/* The life word whose growth this command has moved its key's old
	 * window for (migrate.c), so that a retry does not again; 0: none. */
	uint64_t moved_life;
};

static int64_t run_now(struct run *r)
{
	if (r->now == 0)
		r->now = shmkv__now_ms();
	return r->now;
}

static void read_int(struct run *r, int64_t v, struct shmkv_cur *cur)
{
	const struct shmkv_op *op = r->op;
	char digits[SHMKV_INT_STRLEN];
	size_t n;

	cur->exists = true;
	cur->is_int = true;
	cur->ival = v;
	/* Formatting costs more than the rest of a DEL: only when asked. */
	if (!op->want_bytes && !op->cmp)
		return;
	n = shmkv__ll2string(digits, v);
	cur->len = n;
	if (op->want_bytes) {
		if (op->cap > 0)
			memcpy(op->buf, digits, n < op->cap ? n : op->cap);
		cur->bytes = op->buf;
	}
	if (op->cmp)
		cur->equal = op->cmp_len == n &&
			     memcmp(op->cmp, digits, n) == 0;
}

/* Return: 0, SHMKV__STALE, -EBADMSG. */
static int read_block(struct run *r, uint64_t v, struct shmkv_cur *cur)
{
	const struct shmkv_op *op = r->op;
	struct shmkv_block_view view;
	int err;

	/* Copy and compare in one pass over the block. */
	err = shmkv__block_read_cmp(r->kv, v, op->want_bytes ? op->buf : NULL,
				    op->want_bytes ? op->cap : 0, op->cmp,
				    op->cmp_len, &view);
	if (err)
		return err;
	r->old_owner = view.owner;
	if (view.deadline_ms != 0) {
		cur->now_ms = run_now(r);
		if (shmkv__expired(view.deadline_ms, cur->now_ms))
			return 0; /* expired: as good as absent */
	}
	cur->exists = true;
	cur->equal = view.equal;
	cur->deadline_ms = view.deadline_ms;
	cur->len = view.len;
	cur->bytes = op->want_bytes ? op->buf : NULL;
	return 0;
}

/* An inline value: copied and compared, then accepted if the word still
 * names it. Return: 0, SHMKV__STALE (it moved), -EBADMSG. */
static int read_inline(struct run *r, uint64_t v, struct shmkv_cur *cur)
{
	const struct shmkv_op *op = r->op;
	int err = shmkv__inline_read(
		shmkv__slot(r->ref.t, r->ref.index), r->kv->geo.slot_size, v,
		op->want_bytes ? op->buf : NULL, op->want_bytes ? op->cap : 0,
		op->cmp, op->cmp_len, &cur->equal);

	if (err)
		return err;
	cur->exists = true;
	cur->len = VAL_INLINE_LEN(v);
	cur->bytes = op->want_bytes ? op->buf : NULL;
	return 0;
}

/* Decodes value word @v of the slot in r->ref.
 * Return: 0, SHMKV__STALE, RELOOKUP, -EBADMSG. */
static int read_current(struct run *r, uint64_t v, struct shmkv_cur *cur)
{
	uint32_t ver = SLOT_VERSION(r->ref.state);

	memset(cur, 0, sizeof(*cur));
	cur->word = v;
	cur->word_at = &shmkv__slot(r->ref.t, r->ref.index)->value;
	switch (VAL_KIND(v)) {
	case VAL_NONE:
		/* The state word was unchanged after we read v, so v is this
		 * incarnation's: another version can only be corruption. */
		if (VAL_NONE_VERSION(v) != ver)
			return -EBADMSG;
		/* DEAD: the key is gone and the slot half given back. A
		 * read-only handle cannot finish that: absent is the answer. */
		return VAL_IS_DEAD(v) && !r->kv->readonly ? RELOOKUP : 0;
	case VAL_INT:
		if (VAL_INT_TAG(v) != VAL_INT_TAG_OF(ver))
			return -EBADMSG;
		read_int(r, VAL_INT_VALUE(v), cur);
		return 0;
	case VAL_BLOCK:
		return read_block(r, v, cur);
	default:
		return read_inline(r, v, cur);
	}
}

/* Makes r->block a block of at least @len bytes that we own, and r->blk
 * its header (resolved once: the unit of a block we hold cannot move). */
static int ensure_block(struct run *r, size_t len)
{
	int err;

	if (r->block != 0 && r->blk_room >= len)
		return 0;
	if (r->block != 0)
		shmkv__value_free(r->kv, r->block);
	r->block = 0;
	err = shmkv__value_alloc_reaping(r->kv, len, &r->block, &r->blk);
	if (err)
		return err;
	r->blk_room = shmkv__block_capacity(r->kv, r->block);
	return r->blk_room >= len ? 0 : -EBADMSG;
}

static int block_with_bytes(struct run *r, const void *bytes, size_t len,
			    int64_t deadline, uint64_t *nv)
{
	int err = ensure_block(r, len);

	if (err)
		return err;
	if (len > 0)
		memcpy(r->blk->data, bytes, len);
	shmkv__block_seal(r->blk, len, deadline,
			  BLK_BACK_OF(r->ref.index, r->ref.state));
	*nv = r->block;
	return 0;
}

/* The INLINE word of @len bytes staged in the slot's area for a CAS from
 * @old, the claim held in r->area_held; 0: store a block instead. */
static uint64_t stage_inline(struct run *r, uint64_t old, const void *bytes,
			     size_t len)
{
	return shmkv__area_stage(r->kv, shmkv__slot(r->ref.t, r->ref.index),
				 r->ref.state, r->klen,
				 old, bytes, len, &r->area_held);
}

static int store_int(struct run *r, int64_t v, int64_t deadline, uint64_t *nv)
{
	char digits[SHMKV_INT_STRLEN];

	if (deadline == 0 && v >= VAL_INT_MIN && v <= VAL_INT_MAX) {
		*nv = VAL_INT_WORD(SLOT_VERSION(r->ref.state), v);
		return 0;
	}
	return block_with_bytes(r, digits, shmkv__ll2string(digits, v),
				deadline, nv);
}

/* Copies the string value @old names (a block, or inline) into @dst
 * (@cap bytes). Return: 0 and *@len, SHMKV__STALE, -EBADMSG. */
static int copy_value(struct run *r, uint64_t old, void *dst, size_t cap,
		      size_t *len)
{
	struct shmkv_block_view view;
	int err;

	if (VAL_KIND(old) != VAL_BLOCK) {
		*len = VAL_INLINE_LEN(old);
		return shmkv__inline_read(shmkv__slot(r->ref.t, r->ref.index),
					  r->kv->geo.slot_size, old, dst, cap,
					  NULL, 0, NULL);
	}
	err = shmkv__block_read(r->kv, old, dst, cap, &view);
	*len = view.len;
	return err;
}

/* The current value with a new deadline: copied into a new block (or
 * area), since a published value is immutable. Return: 0, SHMKV__STALE,
 * -errno. */
static int store_from_old(struct run *r, uint64_t old,
			  const struct shmkv_cur *cur, uint64_t *nv)
{
	struct shmkv_block_shm *b;
	size_t len;
	int64_t iv;
	int err;

	if (cur->is_int)
		return store_int(r, cur->ival, r->op->new_deadline_ms, nv);
	err = ensure_block(r, cur->len);
	if (err)
		return err;
	b = r->blk;
	err = copy_value(r, old, b->data, r->blk_room, &len);
	if (err)
		return err;
	if (len > r->blk_room)
		return SHMKV__STALE; /* another value now: decide again */
	/* Without a TTL, an integer goes back inline, as SET would store it
	 * (PERSIST of "123" must not keep a block), and a short string into
	 * the slot. Our block is unpublished: its bytes are stable, and run's
	 * end frees it. */
	if (r->op->new_deadline_ms == 0) {
		if (shmkv__string2ll((const char *)b->data, len, &iv) &&
		    iv >= VAL_INT_MIN && iv <= VAL_INT_MAX)
			return store_int(r, iv, 0, nv);
		*nv = stage_inline(r, old, b->data, len);
		if (*nv != 0)
			return 0;
	}
	shmkv__block_seal(b, len, r->op->new_deadline_ms,
			  BLK_BACK_OF(r->ref.index, r->ref.state));
	*nv = r->block;
	return 0;
}

static bool new_is_inline(struct run *r)
{
	const struct shmkv_op *op = r->op;

	if (r->new_inline == INLINE_UNKNOWN)
		r->new_inline = shmkv__string2ll(op->new_bytes, op->new_len,
						 &r->new_inline_val) &&
						r->new_inline_val >=
							VAL_INT_MIN &&
						r->new_inline_val <= VAL_INT_MAX
					? INLINE_YES
					: INLINE_NO;
	return r->new_inline == INLINE_YES;
}

static int build_new(struct run *r, uint64_t old, const struct shmkv_cur *cur,
		     int act, uint64_t *nv)
{
	const struct shmkv_op *op = r->op;

	if (act == SHMKV_ACT_DELETE) {
		*nv = VAL_NONE_WORD(SLOT_VERSION(r->ref.state), 0);
		return 0;
	}
	if (op->new_from_old)
		return store_from_old(r, old, cur, nv);
	if (op->new_is_int)
		return store_int(r, op->new_int, op->new_deadline_ms, nv);
	if (op->new_deadline_ms == 0 && new_is_inline(r))
		return store_int(r, r->new_inline_val, 0, nv);
	if (op->new_deadline_ms == 0) {
		*nv = stage_inline(r, old, op->new_bytes, op->new_len);
		if (*nv != 0)
			return 0;
	}
	return block_with_bytes(r, op->new_bytes, op->new_len,
				op->new_deadline_ms, nv);
}

/* The CAS (commit.h). On success, the block we published is no longer
 * ours to free. */
static bool commit(struct run *r, uint64_t old, uint64_t nv)
{
	uint64_t held = r->area_held;
	uint32_t owner = r->old_owner;

	r->area_held = 0;
	r->old_owner = 0;
	if (!shmkv__commit_word(r->kv, shmkv__slot(r->ref.t, r->ref.index), old,
				nv, held, owner))
		return false;
	if (VAL_KIND(nv) == VAL_BLOCK)
		r->block = 0;
	return true;
}

/* An expired value seen by a command that changes nothing: delete it now
 * (Redis's lazy expiry). Losing the race is fine: someone else did. */
static void expire_lazily(struct run *r, uint64_t old)
{
	if (!r->kv->readonly)
		commit(r, old, VAL_NONE_WORD(SLOT_VERSION(r->ref.state), 0));
}

/* One attempt on the value word. Return: 0 done, 1 retry the word,
 * RELOOKUP, or -errno. */
static int attempt(struct run *r)
{
	uint64_t *word = &shmkv__slot(r->ref.t, r->ref.index)->value;
	/* Acquire: pairs with the CAS that stored it, so a block it names is
	 * read with the content written before that CAS. */
	uint64_t old = shmkv__load_acquire(word), nv;
	struct shmkv_cur cur;
	int act, err;

	if (!shmkv__slot_still(&r->ref))
		return RELOOKUP;
	/* A use of the key, for eviction (once per attempt: a retry counts
	 * again, as rare as it is), unless this command inserted it: a new
	 * key starts as used once (shmkv__access_new), as Redis's does. */
	if (r->inserted.state == 0)
		shmkv__touch(r->kv, shmkv__slot(r->ref.t, r->ref.index));
	err = read_current(r, old, &cur);
	if (err == RELOOKUP) {
		/* Finish the give-back for whoever started it: it may be
		 * descheduled or dead, and nobody may wait for it. */
		shmkv__slot_reclaim(r->kv, r->ref.t, r->ref.index,
				    r->ref.state, false);
		return RELOOKUP;
	}
	if (err == SHMKV__STALE) {
		/* Relaxed: only asks whether the word moved. */
		if (shmkv__load_relaxed(word) != old)
			return 1;
		/* A frozen word stays as it is when its slot is MOVED, and
		 * whoever moved it frees its block (migrate.c): look again. A
		 * stale block under an unchanged word in an unchanged slot is
		 * corruption, not a race. */
		return shmkv__slot_still(&r->ref) ? -EBADMSG : RELOOKUP;
	}
	if (err)
		return err;
	act = r->op->decide(r->op, &cur);
	if (act < 0)
		return act;
	if (act == SHMKV_ACT_RETRY)
		return 1;
	if (act == SHMKV_ACT_STALE) {
		/* Relaxed: only asks whether the word moved. */
		if (shmkv__load_relaxed(word) != old)
			r->stale_still = 0;
		return ++r->stale_still < SHMKV__STALE_STILL ? 1 : -EEXIST;
	}
	r->stale_still = 0;
	if (act == SHMKV_ACT_KEEP || (act == SHMKV_ACT_DELETE && !cur.exists &&
				      VAL_KIND(old) != VAL_BLOCK)) {
		if (VAL_KIND(old) == VAL_BLOCK && !cur.exists)
			expire_lazily(r, old);
		return 0;
	}
	if (r->kv->readonly)
		return -EROFS;
	/* Being copied to the next table of a growth (migrate.c): the key
	 * is written there, found again through the life word. A frozen
	 * word in a table no growth has left is corruption (lookup.h). */
	if (VAL_IS_FROZEN(old))
		return shmkv__table_left(r->kv, r->ref.t) ? RELOOKUP : -EBADMSG;
	err = build_new(r, old, &cur, act, &nv);
	if (err == SHMKV__STALE)
		return 1;
	if (err)
		return err;
	SHMKV_PAUSE_POINT("engine_built");
	return commit(r, old, nv) ? 0 : 1;
}

/* An insert found no room in @k's window: the table grows, if it may.
 * Return: 0 (look again), -ENOSPC, or another growth's error. */
static int grow(struct run *r, const struct shmkv_key *k)
{
	return shmkv__grow_for(r->kv, k->t);
}

/* An insert that landed this far from its key's home looks at the
 * table's load, and starts a growth at seven eighths (migrate.c), so
 * that probe windows stay short and seldom fill. */
#define SHMKV__GROW_DISTANCE 16u

static void grow_if_crowded(struct run *r, const struct shmkv_key *k)
{
	uint32_t d = (r->ref.index - k->home) & k->t->mask;

	if (d >= SHMKV__GROW_DISTANCE && shmkv__table_now(r->kv) == k->t &&
	    shmkv__table_crowded(k->t))
		(void)grow(r, k);
}

/* Missing key: ask decide(); if it stores, insert a slot for the key.
 * Return: 1 (r->ref is the key's slot), 0 (nothing to do), RELOOKUP (an
 * insert of the same key raced ours: find it), or -errno. */
static int on_missing(struct run *r, const struct shmkv_key *k)
{
	struct shmkv_cur cur;
	int act, err;

	memset(&cur, 0, sizeof(cur));
	act = r->op->decide(r->op, &cur);
	/* An answer drawn from a miss stands only if the table probed was
	 * not given back meanwhile (lookup.h). */
	if (act != SHMKV_ACT_STORE && !shmkv__miss_stands(r->kv, k->t))
		return RELOOKUP;
	if (act != SHMKV_ACT_STORE)
		return act < 0 ? act : 0;
	if (r->kv->readonly)
		return -EROFS;
	err = shmkv__insert(r->kv, k, &r->ref);
	if (err == 1) {
		r->inserted = r->ref;
		grow_if_crowded(r, k);
	}
	/* No slot in the key's window: the table grows (and the command
	 * looks again, in the new one), or else a store that evicts frees
	 * one there (bounded by the command's retries). */
	if (err == -ENOSPC) {
		int grown = grow(r, k);

		/* A growth's -EBADMSG is the command's: the store is
		 * corrupt, and no eviction makes room in it. */
		err = grown == 0 ? 0 : grown == -EBADMSG ? grown : err;
	}
	if (err == -ENOSPC && shmkv__evict_in_window(r->kv, k))
		err = 0;
	return err == 0 || err == -EAGAIN ? RELOOKUP : err;
}

int shmkv_key_prepare(shmkv_t *kv, struct shmkv_keyref *ref, const void *key,
		      size_t klen)
{
	struct shmkv_key k;
	int err;

	if (ref == NULL)
		return -EINVAL;
	err = shmkv__key_check(kv, key, klen, &k);
	if (err == 0)
		shmkv__keyref_fill(kv, ref, &k, 0, 0);
	else if (err == SHMKV__REMOTE) /* a Redis handle: keeps the key */
		err = shmkv__redis_key_prepare(kv, ref, key, klen);
	return err;
}

static int check_args(const struct shmkv *kv, const struct shmkv__keyref *ref,
		      const struct shmkv_op *op)
{
	if (kv == NULL || ref == NULL || ref->owner != kv)
		return -EINVAL;
	if (op->new_bytes == NULL && op->new_len > 0)
		return -EINVAL;
	if (op->new_len > kv->geo.value_max || op->cmp_len > kv->geo.value_max)
		return -E2BIG;
	if (op->want_bytes && op->buf == NULL && op->cap > 0)
		return -EINVAL;
	if (kv->readonly && !op->read_only)
		return -EROFS;
	return shmkv__live(kv);
}

/*
 * Finds the key's slot: the one the reference remembers if it is still
 * that slot's incarnation (attempt() re-checks the state word after
 * reading the value, so a recycled slot is caught there), else by probing.
 */
static int find(struct run *r, struct shmkv__keyref *ref,
		const struct shmkv_key *k)
{
	int found;

	if (SLOT_STATE(ref->state) == SLOT_MEMBER && ref->slot <= k->t->mask) {
		r->ref.t = k->t;
		r->ref.index = ref->slot;
		r->ref.state = ref->state;
		return 1;
	}
	found = shmkv__lookup(r->kv, k, &r->ref);
	if (found == -EAGAIN) /* a MOVED slot: look again from life */
		return RELOOKUP;
	if (found == 0)
		found = on_missing(r, k);
	if (found == 1) {
		ref->slot = r->ref.index;
		ref->state = r->ref.state;
	}
	return found;
}

/*
 * The key of @kr hashed into @k for the table commands write in now,
 * which the reference remembers for next time (with no slot: one found in
 * another table is not where the key is now), and the tables in *@tabs.
 * Return: 0, SHMKV__GROWING (tabs->old migrates into tabs->t), or the
 * removed or corrupt store's error.
 */
static int key_in_table(struct shmkv *kv, struct shmkv__keyref *kr,
			struct shmkv_key *k, struct shmkv_tables *tabs)
{
	const struct shmkv_table *t = shmkv__table_now(kv);
	int err = 0;

	if (t == NULL) {
		err = shmkv__tables(kv, tabs);
		if (err < 0)
			return err;
		t = tabs->t;
	}
	k->bytes = kr->key;
	k->len = (uint32_t)kr->len;
	if (kr->epoch != t->epoch) {
		shmkv__key_init(kv, t, k, kr->key, kr->len);
		kr->home = k->home;
		kr->epoch = t->epoch;
		kr->state = 0;
		return err;
	}
	k->t = t;
	k->hash32 = kr->hash32;
	k->home = kr->home & t->mask;
	return err;
}

/*
 * A growth runs (@tabs, §5 of tests/model/migration-design.md). A command
 * that may write helps it a bounded step, and moves its key's old window
 * (once per growth), then works in the new table with @k. One that only
 * reads answers from its key's old slot if that slot has not moved yet,
 * else from the new table. Return: 0 (go on in the new table), 1 (the
 * key's old slot is in r->ref: read it there), RELOOKUP, or an error.
 */
static int growing(struct run *r, const struct shmkv_tables *tabs,
		   const struct shmkv_key *k)
{
	struct shmkv_key old = *k;
	int err;

	old.t = tabs->old;
	old.home = k->home & tabs->old->mask;
	if (r->op->read_only || r->kv->readonly) {
		err = shmkv__migrate_lookup_old(r->kv, &old, &r->ref);
		return err == -EAGAIN ? RELOOKUP : err;
	}
	/* Once a growth: the window, then a step (the step may end the
	 * growth, after which the old table reads as zeros: a look at it
	 * would fault memory back). Each spends a budget of SHMKV_RETRY_MAX
	 * passes of its own (migrate.c), so the window's -EAGAIN is this
	 * command's: looking again would multiply the bounds. A command
	 * that loops because its key's new window is full ends the growth
	 * through grow() instead. Another key's copy that finds no room
	 * stalls the growth, not this command: only its own window's errors
	 * are its. */
	if (r->moved_life != tabs->life) {
		err = shmkv__migrate_window(r->kv, tabs, &old);
		if (err < 0)
			return err;
		r->moved_life = tabs->life;
		(void)shmkv__migrate_step(r->kv, tabs);
	}
	return 0;
}

/*
 * The fast path of a prepared key: the value word of the slot it
 * remembers, if that slot still holds the key (state word unchanged after
 * the value was loaded, as in attempt()). Only for a handle that may
 * write: a read-only handle takes the general path and its checks.
 */
int shmkv__run_ref(struct shmkv *kv, struct shmkv_keyref *ref,
		   struct shmkv_op *op)
{
	struct shmkv__keyref *kr = shmkv__kref(ref);
	struct run r = { .kv = kv, .op = op };
	struct shmkv_key k;
	int err = check_args(kv, kr, op);

	if (err)
		return err;
	r.klen = (uint32_t)kr->len;
	err = -EAGAIN;
	for (uint32_t n = 0; n < SHMKV_RETRY_MAX; n++) {
		struct shmkv_tables tabs;
		int found = key_in_table(kv, kr, &k, &tabs);

		/* growing(): 1 is the key's slot in the old table. */
		if (found == SHMKV__GROWING)
			found = growing(&r, &tabs, &k);
		else if (found > 0)
			found = -EBADMSG; /* key_in_table has no other */
		if (found == 0)
			found = find(&r, kr, &k);

		if (found == RELOOKUP)
			continue;
		if (found <= 0) {
			err = found;
			break;
		}
		do
			err = attempt(&r);
		while (err == 1 && ++n < SHMKV_RETRY_MAX);
		if (err != RELOOKUP && err != 1)
			break;
		kr->state = 0; /* the slot was recycled: probe again */
		err = -EAGAIN;
	}
	if (r.block != 0)
		shmkv__value_free(kv, r.block);
	/* A key we inserted and never gave a value (the store failed, or
	 * the command changed its mind): give its slot back, so that on any
	 * error the store is unchanged and no slot stays pinned to us. */
	if (r.inserted.state != 0)
		shmkv__insert_undo(&r.inserted);
	return err < 0 ? err : op->result;
}

int shmkv__run(struct shmkv *kv, const void *key, size_t klen,
	       struct shmkv_op *op)
{
	struct shmkv_keyref ref;
	int err = shmkv_key_prepare(kv, &ref, key, klen);

	return err ? err : shmkv__run_ref(kv, &ref, op);
}
