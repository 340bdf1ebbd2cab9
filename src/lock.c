/*
 * lock.c - the safe lock (see shmkv_lock.h): every state change is one
 * engine op, i.e. one CAS on the value word of "lock.<name>", decided by a
 * callback that sees the whole current record.
 *
 * Encodings of the value (all parsed by read_rec; see lock_record.h):
 * - FREE: the inline integer -token, so a release needs no value storage,
 *   cannot fail for lack of it, and costs one CAS;
 * - HELD: the inline integer that names a lock cell of the holder's
 *   process, which keeps the owner, token and lease;
 * - a 48-byte owner record in a value block, HELD or FREE: only past
 *   LOCK_INLINE_TOKEN_MAX grants, or when no cell can be had.
 * A positive integer or any other bytes mean the key is not a safe lock.
 *
 * The uncontended acquire and release take a fast path on the prepared
 * key: one CAS to claim a cell, one to publish the grant, one to free the
 * lock, and the coarse clock. Everything else (first use, a busy lock,
 * takeovers, extend, records) is an engine op whose decide() sees the
 * whole current grant. Nothing on the uncontended path makes a system
 * call: liveness probes (kill, /proc) happen only when the lock is busy.
 */
#include <errno.h>
#include <string.h>

#include "area.h"
#include "atomic.h"
#include "engine.h"
#include "fault.h"
#include "intconv.h"
#include "lock_handle.h"
#include "lock_record.h"
#include "lookup.h"
#include "redis_lock.h"

#define LK_HOLDING SHMKV__LOCK_HOLDING /* lk->token: a grant not given back */
#define LK_CELL	   2u /* lk->cell is claimed (by process lk->pid) */
#define NO_VISIT   UINT32_MAX

/* One engine op on a lock and what its decide() callback found. */
struct lock_op {
	struct shmkv_op op;
	struct shmkv__lock *lk;
	struct shmkv_proc_id me;
	int64_t now;		 /* CLOCK_MONOTONIC ms, read before the op */
	int64_t ms;		 /* lease (acquire) or extension (extend) */
	unsigned mode;		 /* enum shmkv_lock_extend_mode */
	uint64_t dead_token;	 /* acquire: take over this grant; 0: none */
	bool found;		 /* the key held a lock value */
	bool used_claim;	 /* the STORE publishes @claim */
	struct lock_claim claim; /* a cell for a grant or extension */
	uint32_t visit;		 /* our visit entry, NO_VISIT: none */
	struct lock_cell_seen cell_seen; /* the cell of a HELD inline grant */
	struct shmkv_lock_rec seen;
	struct shmkv_lock_rec rec; /* what a STORE writes */
	unsigned char buf[sizeof(struct shmkv_lock_rec) + 16];
};

int shmkv__lock_rec_parse(const void *bytes, size_t len,
			  struct shmkv_lock_rec *rec)
{
	if (len != sizeof(*rec))
		return -EEXIST;
	memcpy(rec, bytes, sizeof(*rec));
	if (rec->magic != SHMKV_LOCK_MAGIC ||
	    rec->version != SHMKV_LOCK_REC_VERSION || rec->token == 0 ||
	    (rec->state != SHMKV_LOCK_FREE && rec->state != SHMKV_LOCK_HELD))
		return -EEXIST;
	return 0;
}

int shmkv__lock_rec_from_int(const struct shmkv *kv, const uint64_t *at,
			     uint64_t w, struct shmkv_lock_rec *rec,
			     struct lock_cell_seen *seen)
{
	int64_t v = VAL_INT_VALUE(w);
	uint32_t unit, seq;

	if (seen != NULL)
		seen->unit = UINT32_MAX;
	if (val_pin_decode(v, &unit, &seq)) {
		int err = shmkv__cell_read(kv, at, w, rec, seen);

		/* Naming no cell at all: an integer a plain SET wrote. */
		return err == -EBADMSG ? -EEXIST : err;
	}
	if (v >= 0 || v < -LOCK_INLINE_TOKEN_MAX)
		return -EEXIST;
	/* FREE: -token. */
	memset(rec, 0, sizeof(*rec));
	rec->magic = SHMKV_LOCK_MAGIC;
	rec->version = SHMKV_LOCK_REC_VERSION;
	rec->state = SHMKV_LOCK_FREE;
	rec->token = (uint64_t)-v;
	return 0;
}

int shmkv__lock_key(const struct shmkv *kv, const char *name, char *key,
		    uint32_t *klen)
{
	size_t n;

	if (name == NULL)
		return -EINVAL;
	n = strnlen(name, SHMKV_LOCK_NAME_MAX + 1);
	if (n == 0)
		return -EINVAL;
	if (n > SHMKV_LOCK_NAME_MAX ||
	    SHMKV_LOCK_PREFIX_LEN + n > kv->geo.key_max)
		return -ENAMETOOLONG;
	memcpy(key, SHMKV_LOCK_PREFIX, SHMKV_LOCK_PREFIX_LEN + 1);
	memcpy(key + SHMKV_LOCK_PREFIX_LEN, name, n + 1);
	*klen = (uint32_t)(SHMKV_LOCK_PREFIX_LEN + n);
	return 0;
}

/* Decodes the key's current value into lo->seen.
 * Return: 0, -EEXIST, SHMKV_ACT_STALE (a cell changed: the engine decides
 * again if the value moved, or fails with -ESTALE if it did not). */
/* The back-pointer of the slot @ref last found its key in (a lock
 * cell's pin: shmkv__cell_fill). */
static uint32_t kref_back(const struct shmkv_keyref *ref)
{
	const struct shmkv__keyref *kr = shmkv__kref_const(ref);

	return BLK_BACK_OF(kr->slot, kr->state);
}

/* The slot that published @lk's grant (lk->word != 0), in its table (an
 * epoch from a state word, bounded: the segment may be corrupt). */
static struct shmkv_slot_shm *lock_slot(const struct shmkv__lock *lk)
{
	const struct shmkv *kv = lk->kv;

	return shmkv__slot(&kv->tables[lk->epoch <= kv->geo.epoch_max
						? lk->epoch
						: 0],
			   lk->slot);
}

static int read_rec(struct lock_op *lo, const struct shmkv_cur *cur)
{
	lo->used_claim = false;
	lo->found = cur->exists;
	lo->cell_seen.unit = UINT32_MAX;
	if (!cur->exists)
		return 0;
	if (cur->is_int) {
		int err;

		SHMKV_PAUSE_POINT("lock_read_cell");
		err = shmkv__lock_rec_from_int(lo->lk->kv, cur->word_at,
					       cur->word, &lo->seen,
					       &lo->cell_seen);

		return err == -ESTALE ? SHMKV_ACT_STALE : err;
	}
	if (cur->len > lo->op.cap)
		return -EEXIST;
	return shmkv__lock_rec_parse(cur->bytes, cur->len, &lo->seen);
}

/* The record found is the grant lo->lk holds, made by this process. */
static bool is_mine(const struct lock_op *lo)
{
	const struct shmkv_lock_rec *r = &lo->seen;
	const struct shmkv__lock *lk = lo->lk;

	return lo->found && (lk->flags & LK_HOLDING) &&
	       r->state == SHMKV_LOCK_HELD && r->token == lk->token &&
	       r->pid == lo->me.pid && r->start == lo->me.start;
}

static bool lease_running(const struct lock_op *lo)
{
	return lo->found && lo->seen.state == SHMKV_LOCK_HELD &&
	       lo->seen.deadline_ms > lo->now;
}

/* Stores a HELD grant for us with the next token, in our claimed cell if
 * we have one and the token fits the inline range; reports @kind. */
static int grant(struct lock_op *lo, enum shmkv_lock_grant kind)
{
	struct shmkv_lock_rec *r = &lo->rec;

	memset(r, 0, sizeof(*r));
	r->magic = SHMKV_LOCK_MAGIC;
	r->version = SHMKV_LOCK_REC_VERSION;
	r->state = SHMKV_LOCK_HELD;
	r->pid = lo->me.pid;
	r->start = lo->me.start;
	r->token = lo->found ? lo->seen.token + 1 : 1;
	r->acquired_ms = lo->now;
	r->deadline_ms = lo->now + lo->ms;
	lo->op.new_deadline_ms = 0; /* the lease is in the grant */
	lo->op.result = (int)kind;
	if (lo->claim.cell != NULL && r->token <= LOCK_INLINE_TOKEN_MAX) {
		shmkv__cell_fill(&lo->claim, kref_back(&lo->lk->ref),
				 r->start, r->token, r->acquired_ms,
				 r->deadline_ms);
		lo->used_claim = true;
		lo->op.new_is_int = true;
		lo->op.new_int = shmkv__cell_value(&lo->claim);
		return SHMKV_ACT_STORE;
	}
	lo->op.new_bytes = r;
	lo->op.new_len = sizeof(*r);
	lo->op.new_is_int = false;
	return SHMKV_ACT_STORE;
}

static void end_visit(struct lock_op *lo)
{
	if (lo->visit != NO_VISIT)
		shmkv__visit_end(lo->lk->kv, lo->visit);
	lo->visit = NO_VISIT;
}

/*
 * Replaces a running or expired grant that is not ours: a HELD inline
 * grant's pin has only 16 bits of its cell's claim, so visit the cell and
 * re-validate the claim judged (lock_cell.c) before the engine's CAS.
 */
static int take_over(struct lock_op *lo, enum shmkv_lock_grant kind)
{
	end_visit(lo);
	if (lo->cell_seen.unit != UINT32_MAX) {
		int err;

		SHMKV_PAUSE_POINT("lock_takeover_judged");
		err = shmkv__cell_visit(lo->lk->kv, &lo->cell_seen, &lo->visit);
		/* The claim judged is gone: whatever the value's bits now,
		 * they may name another grant (the pin's ABA): read again. */
		if (err == -ESTALE)
			return SHMKV_ACT_RETRY;
		if (err) /* -EAGAIN: every visit entry busy: busy, retried */
			return err;
		SHMKV_PAUSE_POINT("lock_takeover_visiting");
	}
	return grant(lo, kind);
}

static int acquire_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	struct lock_op *lo = op->ctx;
	int err = read_rec(lo, cur);

	if (err)
		return err;
	if (!lo->found || lo->seen.state == SHMKV_LOCK_FREE)
		return grant(lo, SHMKV_LOCK_ACQUIRED);
	if (lo->dead_token != 0 && lo->seen.token == lo->dead_token)
		return take_over(lo, SHMKV_LOCK_OWNER_DEAD);
	if (!lease_running(lo))
		return take_over(lo, SHMKV_LOCK_LEASE_EXPIRED);
	if (is_mine(lo))
		return -EDEADLK;
	op->result = -EBUSY;
	return SHMKV_ACT_KEEP;
}

/*
 * Whose is the lock, for release and extend? 0: the running grant of
 * lo->lk. NOT_OWNER: a grant other than ours is running, or was made after
 * ours. NOT_HELD: no grant is running (free, missing, or ours ran out).
 */
static int owner_status(const struct lock_op *lo)
{
	const struct shmkv__lock *lk = lo->lk;

	if (is_mine(lo))
		return lease_running(lo) ? 0 : SHMKV_LOCK_NOT_HELD;
	if (lease_running(lo))
		return SHMKV_LOCK_NOT_OWNER;
	if (lo->found && (lk->flags & LK_HOLDING) &&
	    lo->seen.token != lk->token)
		return SHMKV_LOCK_NOT_OWNER;
	return SHMKV_LOCK_NOT_HELD;
}

static int release_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	struct lock_op *lo = op->ctx;
	int err = read_rec(lo, cur);

	if (err)
		return err;
	/* Compare-and-delete on the grant, as DELIFEQ on the owner record:
	 * our grant still there means nobody overlapped us, even if our
	 * lease ran out meanwhile, so it is released, and no clock is
	 * needed (the fast path reads none). */
	op->result = is_mine(lo) ? 0 : owner_status(lo);
	if (op->result != 0)
		return SHMKV_ACT_KEEP;
	op->new_deadline_ms = 0;
	if (lo->seen.token <= (uint64_t)LOCK_INLINE_TOKEN_MAX) {
		op->new_is_int = true;
		op->new_int = -(int64_t)lo->seen.token;
		return SHMKV_ACT_STORE;
	}
	lo->rec = lo->seen;
	lo->rec.state = SHMKV_LOCK_FREE;
	lo->rec.deadline_ms = lo->now;
	op->new_is_int = false;
	op->new_bytes = &lo->rec;
	op->new_len = sizeof(lo->rec);
	return SHMKV_ACT_STORE;
}

static int extend_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	struct lock_op *lo = op->ctx;
	int64_t end;
	int err = read_rec(lo, cur);

	if (err)
		return err;
	op->result = owner_status(lo);
	if (op->result != 0)
		return SHMKV_ACT_KEEP;
	/* Checked: a lease end read from the segment may be anything. */
	if (__builtin_add_overflow(lo->mode == SHMKV_LOCK_EXTEND_ADD
					   ? lo->seen.deadline_ms
					   : lo->now,
				   lo->ms, &end) ||
	    end - lo->now > SHMKV_LOCK_LEASE_MAX)
		return -EINVAL;
	op->new_deadline_ms = 0;
	/* An inline grant moves to a fresh cell: a taker that judged the old
	 * lease over then fails its CAS instead of overwriting the new one. */
	if (cur->is_int && lo->claim.cell != NULL) {
		shmkv__cell_fill(&lo->claim, kref_back(&lo->lk->ref),
				 lo->seen.start, lo->seen.token,
				 lo->seen.acquired_ms, end);
		lo->used_claim = true;
		lo->rec = lo->seen;
		lo->rec.deadline_ms = end;
		op->new_is_int = true;
		op->new_int = shmkv__cell_value(&lo->claim);
		return SHMKV_ACT_STORE;
	}
	lo->rec = lo->seen;
	lo->rec.deadline_ms = end;
	op->new_is_int = false;
	op->new_bytes = &lo->rec;
	op->new_len = sizeof(lo->rec);
	return SHMKV_ACT_STORE;
}

/*
 * Runs one op on @lk's key with a fresh clock and identity. Return: the
 * op's result, -EEXIST (the value names a cell that does not hold such a
 * grant, and did not move: an integer a plain SET wrote, not a lock),
 * -EAGAIN (SHMKV_RETRY_MAX lost races in a row: others kept changing the
 * lock), or an error of the store.
 */
static int run(struct lock_op *lo,
	       int (*decide)(struct shmkv_op *, const struct shmkv_cur *))
{
	int rc;

	shmkv__proc_self(&lo->me);
	/* The handle may have been copied since it was prepared. */
	shmkv__kref(&lo->lk->ref)->key = lo->lk->key;
	lo->visit = NO_VISIT;
	memset(&lo->op, 0, sizeof(lo->op));
	lo->op.decide = decide;
	lo->op.ctx = lo;
	lo->op.want_bytes = true;
	lo->op.buf = lo->buf;
	lo->op.cap = sizeof(lo->buf);
	lo->now = shmkv__mono_ms();
	rc = shmkv__run_ref(lo->lk->kv, &lo->lk->ref, &lo->op);
	/* After the CAS (or its failure): the pin we replaced may now be
	 * reused, and the cell of a dead holder freed. */
	end_visit(lo);
	return rc;
}

/* Claims a cell from the pool for a grant of @lk, trying the handle's
 * last cell first unless it is still claimed (by a grant it holds).
 * Return: 0, -ENOMEM (no cell: use a record). */
static int lk_claim_cell(struct shmkv__lock *lk, struct lock_claim *c)
{
	struct lock_claim hint = { .cell = lk->cell,
				   .ctl = lk->cell_ctl,
				   .ref = lk->cell_ref };

	return shmkv__cell_claim(lk->kv, c,
				 (lk->flags & LK_CELL) ? NULL : &hint);
}

static void lk_set_claim(struct shmkv__lock *lk, const struct lock_claim *c)
{
	lk->cell = c->cell;
	lk->cell_ctl = c->ctl;
	lk->cell_ref = c->ref;
	lk->flags |= LK_CELL;
}

/* Ends the handle's claim of its cell (parked for this thread's next
 * grant, or back to the pool), if this process claimed it: a child after
 * fork must not touch its parent's cell. The pointer stays as a hint. */
static void lk_drop_claim(struct shmkv__lock *lk)
{
	if ((lk->flags & LK_CELL) && lk->pid == shmkv__self_pid()) {
		struct lock_claim c = { .cell = lk->cell,
					.ctl = lk->cell_ctl,
					.ref = lk->cell_ref };

		shmkv__cell_put(lk->kv, lk->pid, &c);
	}
	lk->flags &= ~LK_CELL;
}

static inline int check_handle(const struct shmkv__lock *lk)
{
	if (lk == NULL || lk->kv == NULL ||
	    lk->key_len <= SHMKV_LOCK_PREFIX_LEN)
		return -EINVAL;
	/* Before any write to the header's wait words: it is mapped
	 * read-only and a store would fault. */
	return lk->kv->readonly ? -EROFS : shmkv__live(lk->kv);
}

static int check_ms(int64_t ms)
{
	return ms >= 1 && ms <= SHMKV_LOCK_LEASE_MAX ? 0 : -EINVAL;
}

int shmkv_lock_init(shmkv_t *kv, struct shmkv_lock *lk, const char *name)
{
	struct shmkv__lock *h = shmkv__lock_of(lk);
	int err;

	if (kv == NULL || h == NULL)
		return -EINVAL;
	if (shmkv__lock_remote(kv))
		return shmkv__redis_lock_init(kv, lk, name);
	memset(lk, 0, sizeof(*lk));
	err = shmkv__lock_key(kv, name, h->key, &h->key_len);
	if (err)
		return err;
	if (kv->geo.value_max < sizeof(struct shmkv_lock_rec)) {
		h->key_len = 0;
		return -E2BIG;
	}
	err = shmkv_key_prepare(kv, &h->ref, h->key, h->key_len);
	if (err) {
		h->key_len = 0;
		return err;
	}
	h->kv = kv;
	return 0;
}

/* The holder found busy is gone (never true for this very process): by
 * pid and start time, and, where they say alive, by its mark (a pid
 * handed out again within the tick of the holder's start). */
static bool holder_dead(const struct lock_op *lo)
{
	if (lo->seen.pid == lo->me.pid && lo->seen.start == lo->me.start)
		return false;
	return shmkv__proc_dead(lo->seen.pid, lo->seen.start) ||
	       shmkv__proc_unmarked(lo->lk->kv, lo->seen.pid);
}

/*
 * The uncontended acquire, on the prepared key alone: the lock is FREE
 * inline, so claim a cell (@c, kept on failure), fill it, and CAS the
 * value word to name it. The lease is timed from the coarse clock's upper
 * bound, so it lasts at least @lease. Return: true if granted.
 */
static bool fast_acquire(struct shmkv__lock *lk, int64_t lease,
			 struct lock_claim *c)
{
	struct shmkv *kv = lk->kv;
	uint32_t ver = SLOT_VERSION(shmkv__kref(&lk->ref)->state);
	struct shmkv_proc_id me;
	struct shmkv__fast f;
	uint64_t w, nw, token;
	int64_t v, now;

	shmkv__kref(&lk->ref)->key =
		lk->key; /* the handle may have been copied */
	if (!shmkv__fast_of_ref(kv, &lk->ref, true, &f) ||
	    !shmkv__fast_word(&f, &w) || !shmkv__word_is_int(w, ver))
		return false;
	v = VAL_INT_VALUE(w);
	if (v >= 0 || v <= -LOCK_INLINE_TOKEN_MAX)
		return false; /* held, not a lock, or the token outgrows it */
	shmkv__proc_self(&me);
	if (!shmkv__cell_take(kv, me.pid, c) && lk_claim_cell(lk, c))
		return false;
	token = (uint64_t)-v + 1;
	now = shmkv__mono_upper_ms();
	shmkv__cell_fill(c, kref_back(&lk->ref), me.start, token, now,
			 now + lease);
	nw = VAL_INT_WORD(ver, shmkv__cell_value(c));
	if (!shmkv__fast_swap(&f, w, nw))
		return false;
	lk->token = token;
	lk->deadline_ms = now + lease;
	lk->word = nw;
	lk->slot = shmkv__kref(&lk->ref)->slot;
	lk->epoch = SLOT_EPOCH(shmkv__kref(&lk->ref)->state);
	return true;
}

/* @lk got a grant, published in cell @c (or a record: c->cell NULL);
 * whatever it held before is superseded. */
static void lk_granted(struct shmkv__lock *lk, const struct lock_claim *c)
{
	lk_drop_claim(lk);
	lk->pid = shmkv__self_pid();
	if (c->cell != NULL)
		lk_set_claim(lk, c);
	lk->flags |= LK_HOLDING;
}

/* attempt() past the fast path, with the cell it may have claimed. */
static int slow_attempt(struct shmkv__lock *lk, int64_t lease, bool probe,
			struct shmkv_lock_rec *seen, const struct lock_claim *c)
{
	struct lock_op lo = { .lk = lk, .ms = lease, .claim = *c };
	int rc;

	/* No cell: the grant goes to a record. */
	if (lo.claim.cell == NULL && lk_claim_cell(lk, &lo.claim))
		lo.claim.cell = NULL;
	rc = run(&lo, acquire_decide);
	if (rc == -EBUSY && probe && holder_dead(&lo)) {
		lo.dead_token = lo.seen.token;
		rc = run(&lo, acquire_decide);
	}
	*seen = lo.seen;
	if ((rc < 0 || !lo.used_claim) && lo.claim.cell != NULL) {
		shmkv__cell_put(lk->kv, shmkv__self_pid(), &lo.claim);
		lo.claim.cell = NULL;
	}
	if (rc < 0)
		return rc;
	/* The dead holder's cell is named by nothing now: free it here (its
	 * pid may already belong to a new process, which reclamation would
	 * take for the owner); a visit of another taker defers it. */
	if (rc == SHMKV_LOCK_OWNER_DEAD && lo.cell_seen.unit != UINT32_MAX)
		shmkv__owned_free(lk->kv,
				  VAL_BLOCK_WORD(lo.cell_seen.unit,
						 BLK_GEN(lo.cell_seen.tag)));
	lk_granted(lk, &lo.claim);
	lk->token = lo.rec.token;
	lk->deadline_ms = lo.rec.deadline_ms;
	lk->word = 0;
	return rc;
}

/*
 * One acquire, and with @probe, a takeover if the holder is dead: a second
 * op that grants only if the value is still the dead holder's grant (its
 * token), so of several acquirers that found it dead exactly one wins.
 * *@seen receives the grant found when busy.
 */
static int attempt(struct shmkv__lock *lk, int64_t lease, bool probe,
		   struct shmkv_lock_rec *seen)
{
	struct lock_claim c = { 0 };
	int rc;

	if (fast_acquire(lk, lease, &c)) {
		lk_granted(lk, &c);
		return SHMKV_LOCK_ACQUIRED;
	}
	rc = slow_attempt(lk, lease, probe, seen, &c);
	if (rc != -EAGAIN)
		return rc;
	/* Lost every race of a long run: others kept taking and giving
	 * the lock back. That is "busy", never an error. */
	memset(seen, 0, sizeof(*seen));
	seen->deadline_ms = INT64_MAX;
	return -EBUSY;
}

/* How long to sleep: the nap, cut to just past the holder's lease end and
 * to our own deadline (@end; -1 none). */
static int64_t nap_ms(const struct shmkv_lock_rec *seen, int64_t now,
		      int64_t end)
{
	int64_t nap = SHMKV_LOCK_NAP_MS;

	/* Compared before subtracting: a lease end read from the segment
	 * may be anything, and must not overflow. */
	if (seen->deadline_ms < now)
		nap = 1;
	else if (seen->deadline_ms - now + 1 < nap)
		nap = seen->deadline_ms - now + 1;
	if (end >= 0 && end - now < nap)
		nap = end - now;
	return nap;
}

/* The futex word of @lk's key: its slot's (lock keys stay in their slot
 * while they are locks; a recycled slot costs at most a nap). */
static uint32_t *wait_word(const struct shmkv__lock *lk)
{
	return shmkv__wait_slot(lk->kv, shmkv__kref_const(&lk->ref)->slot);
}

/*
 * The blocking part of shmkv_lock_timed_acquire() (wait.h's waiter). The holder is
 * probed for liveness when the same grant has blocked us for a whole nap
 * (not after each wake-up: a woken waiter that lost the race to a new
 * holder knows that one is alive).
 */
static int wait_for(struct shmkv__lock *lk, int64_t lease, int64_t end,
		    struct shmkv_lock_rec *seen)
{
	uint64_t token = seen->token;
	int64_t now = shmkv__mono_ms(), next_probe = now + SHMKV_LOCK_NAP_MS;
	int rc;

	for (;;) {
		/* Marked before each try, so a release after it wakes us;
		 * the word is read again each round: a try may find the key
		 * in another slot. */
		uint32_t *word = wait_word(lk);
		uint32_t seq = shmkv__wait_mark(word);
		bool probe = now >= next_probe;
		int64_t nap;

		rc = attempt(lk, lease, probe, seen);
		if (rc != -EBUSY)
			break;
		now = shmkv__mono_ms();
		if (end >= 0 && now >= end) {
			rc = -ETIMEDOUT;
			break;
		}
		if (probe || seen->token != token)
			next_probe = now + SHMKV_LOCK_NAP_MS;
		token = seen->token;
		nap = nap_ms(seen, now, end);
		if (nap > 0)
			shmkv__wait_sleep(word, seq, nap);
		now = shmkv__mono_ms();
	}
	/* We may have taken a wake-up meant for a waiter who can use it. A
	 * winner leaves the word marked: other sleepers may remain. */
	if (rc == -ETIMEDOUT)
		shmkv__wake(wait_word(lk));
	return rc;
}

int shmkv_lock_timed_acquire(struct shmkv_lock *lk, int64_t lease_ms,
			     int64_t timeout_ms)
{
	struct shmkv__lock *h = shmkv__lock_of(lk);
	struct shmkv_lock_rec seen;
	int64_t start, end;
	int rc = check_handle(h);

	if (rc) /* A Redis handle is "not initialised" here (redis_lock.h). */
		return shmkv__lock_h_remote(h)
			       ? shmkv__redis_lock_timed_acquire(lk, lease_ms,
								 timeout_ms)
			       : rc;
	if (check_ms(lease_ms) || timeout_ms < SHMKV_LOCK_FOREVER)
		return -EINVAL;
	/* Before our pid can be recorded as the holder: one load after the
	 * first time. */
	rc = shmkv__proc_mark(h->kv);
	if (rc)
		return rc;
	/* The clock is read for the deadline only once we must wait: the
	 * uncontended path reads it once, in the op. */
	start = timeout_ms > 0 ? shmkv__mono_ms() : 0;
	rc = attempt(h, lease_ms, true, &seen);
	if (rc != -EBUSY || timeout_ms == 0)
		return rc;
	/* A limit past the end of time is no limit (and no overflow). */
	end = timeout_ms < 0 || timeout_ms > INT64_MAX - start
		      ? -1
		      : start + timeout_ms;
	return wait_for(h, lease_ms, end, &seen);
}

int shmkv_lock_try_acquire(struct shmkv_lock *lk, int64_t lease_ms)
{
	return shmkv_lock_timed_acquire(lk, lease_ms, 0);
}

int shmkv_lock_acquire(struct shmkv_lock *lk, int64_t lease_ms)
{
	return shmkv_lock_timed_acquire(lk, lease_ms, SHMKV_LOCK_FOREVER);
}

/*
 * The uncontended release of an inline grant: CAS the word that published
 * it back to FREE (compare-and-delete: see release_decide). Return: true
 * if done.
 */
static bool fast_release(struct shmkv__lock *lk)
{
	uint64_t nw;

	if ((lk->flags & (LK_HOLDING | LK_CELL)) != (LK_HOLDING | LK_CELL) ||
	    lk->word == 0 || lk->pid != shmkv__self_pid())
		return false;
	nw = (lk->word & ~VAL_INT_PAYLOAD) |
	     ((uint64_t) - (int64_t)lk->token & VAL_INT_PAYLOAD);
	/* Full barrier: the release; our critical section happens before
	 * whatever the next holder does after its CAS sees FREE. */
	return shmkv__cas_full(&lock_slot(lk)->value, lk->word, nw) ==
	       lk->word;
}

static int slow_release(struct shmkv__lock *lk)
{
	struct lock_op lo = { .lk = lk };
	int rc = run(&lo, release_decide);

	if (rc == 0 || rc == SHMKV_LOCK_NOT_OWNER ||
	    rc == SHMKV_LOCK_NOT_HELD) {
		lk->flags &= ~LK_HOLDING;
		lk_drop_claim(lk);
	}
	if (rc == 0)
		shmkv__wake(wait_word(lk));
	return rc;
}

int shmkv_lock_release(struct shmkv_lock *lk)
{
	struct shmkv__lock *h = shmkv__lock_of(lk);
	int rc = check_handle(h);

	if (rc)
		return shmkv__lock_h_remote(h) ? shmkv__redis_lock_release(lk)
					       : rc;
	if (!fast_release(h))
		return slow_release(h);
	h->flags &= ~LK_HOLDING;
	lk_drop_claim(h);
	if (shmkv__wait_marked(&lock_slot(h)->wait))
		shmkv__wake(&lock_slot(h)->wait);
	return 0;
}

int shmkv_lock_extend(struct shmkv_lock *lk, enum shmkv_lock_extend_mode mode,
		      int64_t ms)
{
	struct shmkv__lock *h = shmkv__lock_of(lk);
	struct lock_op lo = { .lk = h, .ms = ms, .mode = mode };
	int rc = check_handle(h);

	if (rc)
		return shmkv__lock_h_remote(h)
			       ? shmkv__redis_lock_extend(lk, mode, ms)
			       : rc;
	if (check_ms(ms) || (mode != SHMKV_LOCK_EXTEND_ADD &&
			     mode != SHMKV_LOCK_EXTEND_REPLACE))
		return -EINVAL;
	/* A fresh cell for the new lease (without one, a record). */
	if (shmkv__cell_claim(h->kv, &lo.claim, NULL))
		lo.claim.cell = NULL;
	rc = run(&lo, extend_decide);
	if (rc != 0 || !lo.used_claim) {
		if (lo.claim.cell != NULL)
			shmkv__cell_put(h->kv, shmkv__self_pid(), &lo.claim);
		if (rc != 0)
			return rc;
	}
	/* The grant's old cell (if any) is no longer named by the value. */
	lk_drop_claim(h);
	if (lo.used_claim)
		lk_set_claim(h, &lo.claim);
	h->deadline_ms = lo.rec.deadline_ms;
	h->word = 0;
	return 0;
}

/* The owner record that INLINE word @w names in slot @idx, copied and
 * validated (area.h). Return: 0, -ENOLCK (not a record, or it moved). */
static int inline_record(const struct shmkv *kv,
			 const struct shmkv_slot_ref *ref, uint64_t w,
			 struct shmkv_lock_rec *rec)
{
	size_t len = VAL_INLINE_LEN(w);

	if (len > sizeof(*rec) ||
	    shmkv__inline_read(shmkv__slot(ref->t, ref->index),
			       kv->geo.slot_size, w, rec,
			       len, NULL, 0, NULL) != 0)
		return -ENOLCK;
	return shmkv__lock_rec_parse(rec, len, rec) == 0 ? 0 : -ENOLCK;
}

/* Finds the value word that published @lk's grant, for held().
 * Return: 0, or -ENOLCK if the key's value is not that grant. */
static int find_word(struct shmkv__lock *lk)
{
	struct shmkv *kv = lk->kv;
	struct shmkv_lock_rec rec;
	struct shmkv_block_view view;
	struct shmkv_slot_ref ref;
	struct shmkv_key k;
	uint64_t w;
	int err;

	/* The slot our last op used, if it is still that incarnation, in
	 * the table commands use now (a state word names its table). */
	ref.t = shmkv__table_now(kv);
	ref.index = shmkv__kref(&lk->ref)->slot;
	ref.state = shmkv__kref(&lk->ref)->state;
	if (ref.t == NULL)
		return -ENOLCK; /* a growth runs: the slow path answers */
	if (SLOT_STATE(ref.state) != SLOT_MEMBER || ref.index > ref.t->mask ||
	    !shmkv__slot_still(&ref)) {
		shmkv__key_init(kv, ref.t, &k, lk->key, lk->key_len);
		if (shmkv__lookup(kv, &k, &ref) != 1)
			return -ENOLCK;
	}
	/* Acquire: pairs with the CAS that published the grant. */
	w = shmkv__load_acquire(&shmkv__slot(ref.t, ref.index)->value);
	if (VAL_KIND(w) == VAL_INT)
		err = shmkv__lock_rec_from_int(
			kv, &shmkv__slot(ref.t, ref.index)->value, w, &rec,
			NULL);
	else if (VAL_KIND(w) == VAL_BLOCK &&
		 shmkv__block_read(kv, w, &rec, sizeof(rec), &view) == 0)
		err = shmkv__lock_rec_parse(&rec, view.len, &rec);
	else if (VAL_KIND(w) == VAL_INLINE)
		err = inline_record(kv, &ref, w, &rec);
	else
		err = -ENOLCK;
	if (err || !shmkv__slot_still(&ref))
		return -ENOLCK;
	if (rec.state != SHMKV_LOCK_HELD || rec.token != lk->token ||
	    rec.pid != lk->pid || rec.deadline_ms != lk->deadline_ms)
		return -ENOLCK;
	lk->slot = ref.index;
	lk->epoch = ref.t->epoch;
	lk->word = w;
	return 0;
}

/* Is @h's grant still the word it cached? Asked only of a live table: a
 * growth of the table copies the grant into the next one, re-tagged for
 * its new slot, and then gives the old table back. */
static bool word_still(const struct shmkv__lock *h)
{
	const struct shmkv *kv = h->kv;

	if (h->word == 0 || h->epoch > kv->geo.epoch_max ||
	    !shmkv__table_live(kv, &kv->tables[h->epoch]))
		return false;
	/*
	 * Acquire: pairs with the full-barrier CAS of whoever replaced our
	 * grant. A block word names one allocation (its generation moves on
	 * every free) and an inline one a cell's claim, so an equal word is
	 * still our grant.
	 */
	return shmkv__load_acquire(&lock_slot(h)->value) == h->word;
}

/* Is the key's record still @h's grant? Read by the engine, right during a
 * growth too. */
static bool record_still(struct shmkv__lock *h)
{
	struct shmkv_lock_rec rec;

	return shmkv__lock_read(h->kv, h->key, h->key_len, &rec) == 0 &&
	       rec.state == SHMKV_LOCK_HELD && rec.token == h->token &&
	       rec.pid == h->pid && rec.deadline_ms == h->deadline_ms;
}

int shmkv_lock_held(struct shmkv_lock *lk)
{
	struct shmkv__lock *h = shmkv__lock_of(lk);

	if (h == NULL || h->kv == NULL || !(h->flags & LK_HOLDING) ||
	    h->pid != shmkv__self_pid())
		return 0;
	if (!word_still(h)) {
		if (shmkv__lock_h_remote(h))
			return shmkv__redis_lock_held(lk);
		/* Unknown, or moved by a growth: the record says. */
		if (!record_still(h))
			return 0;
		/* The word where the key is now, for the next call (none
		 * while a growth runs). */
		h->word = 0;
		(void)find_word(h);
	}
	/* The precise clock, as takers use: "still mine" must never outlast
	 * the instant a taker may judge the lease over. */
	return shmkv__mono_ms() < h->deadline_ms;
}

uint64_t shmkv_lock_token(const struct shmkv_lock *lk)
{
	const struct shmkv__lock *h = shmkv__lock_of_const(lk);

	return h ? h->token : 0;
}
