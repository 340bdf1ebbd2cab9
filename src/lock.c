/*
 * lock.c - the safe lock (see shmkv_lock.h): every state change is one
 * engine op, i.e. one CAS on the value word of "lock.<name>", decided by a
 * callback that sees the whole current record.
 *
 * Two encodings of the value (both parsed by read_rec):
 * - HELD: a 48-byte owner record (lock_record.h) in a value block;
 * - FREE: the inline integer -token (no value block), so a release needs
 *   no value storage and cannot fail for lack of it, and costs one CAS.
 *   Tokens past the inline range (2^47 grants) use a FREE record instead.
 * A positive integer or any other bytes mean the key is not a safe lock.
 *
 * Nothing on the uncontended path makes a system call besides the vDSO
 * clock: liveness probes (kill, /proc) happen only when the lock is busy.
 */
#include <errno.h>
#include <string.h>

#include "atomic.h"
#include "engine.h"
#include "intconv.h"
#include "lock_record.h"

#define LK_HOLDING 1u /* lk->token is a grant we have not given back */

/* One engine op on a lock and what its decide() callback found. */
struct lock_op {
	struct shmkv_op op;
	struct shmkv_lock *lk;
	struct shmkv_proc_id me;
	int64_t now;	     /* CLOCK_BOOTTIME ms, read before the op */
	int64_t ms;	     /* lease (acquire) or extension (extend) */
	unsigned mode;	     /* enum shmkv_lock_extend_mode */
	uint64_t dead_token; /* acquire: take over this grant; 0: none */
	bool found;	     /* the key held a lock value */
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

/* A FREE lock stored as the integer -token. */
static int rec_from_int(int64_t v, struct shmkv_lock_rec *rec)
{
	if (v >= 0)
		return -EEXIST;
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
	if (n > SHMKV_LOCK_NAME_MAX || SHMKV_LOCK_PREFIX_LEN + n > kv->key_max)
		return -ENAMETOOLONG;
	memcpy(key, SHMKV_LOCK_PREFIX, SHMKV_LOCK_PREFIX_LEN + 1);
	memcpy(key + SHMKV_LOCK_PREFIX_LEN, name, n + 1);
	*klen = (uint32_t)(SHMKV_LOCK_PREFIX_LEN + n);
	return 0;
}

/* Decodes the key's current value into lo->seen. Return: 0, -EEXIST. */
static int read_rec(struct lock_op *lo, const struct shmkv_cur *cur)
{
	lo->found = cur->exists;
	if (!cur->exists)
		return 0;
	if (cur->is_int)
		return rec_from_int(cur->ival, &lo->seen);
	if (cur->len > lo->op.cap)
		return -EEXIST;
	return shmkv__lock_rec_parse(cur->bytes, cur->len, &lo->seen);
}

/* The record found is the grant lo->lk holds, made by this process. */
static bool is_mine(const struct lock_op *lo)
{
	const struct shmkv_lock_rec *r = &lo->seen;
	const struct shmkv_lock *lk = lo->lk;

	return lo->found && (lk->flags & LK_HOLDING) &&
	       r->state == SHMKV_LOCK_HELD && r->token == lk->token &&
	       r->pid == lo->me.pid && r->start == lo->me.start;
}

static bool lease_running(const struct lock_op *lo)
{
	return lo->found && lo->seen.state == SHMKV_LOCK_HELD &&
	       lo->seen.deadline_ms > lo->now;
}

/* Stores a HELD record for us with the next token; reports @kind. */
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
	lo->op.new_bytes = r;
	lo->op.new_len = sizeof(*r);
	lo->op.new_is_int = false;
	lo->op.new_deadline_ms = 0; /* the lease is in the record */
	lo->op.result = (int)kind;
	return SHMKV_ACT_STORE;
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
		return grant(lo, SHMKV_LOCK_OWNER_DEAD);
	if (!lease_running(lo))
		return grant(lo, SHMKV_LOCK_LEASE_EXPIRED);
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
	const struct shmkv_lock *lk = lo->lk;

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
	op->result = owner_status(lo);
	if (op->result != 0)
		return SHMKV_ACT_KEEP;
	op->new_deadline_ms = 0;
	if (lo->seen.token <= (uint64_t)-VAL_INT_MIN) {
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
	end = (lo->mode == SHMKV_LOCK_EXTEND_ADD ? lo->seen.deadline_ms
						 : lo->now) +
	      lo->ms;
	if (end - lo->now > SHMKV_LOCK_LEASE_MAX)
		return -EINVAL;
	lo->rec = lo->seen;
	lo->rec.deadline_ms = end;
	op->new_bytes = &lo->rec;
	op->new_len = sizeof(lo->rec);
	op->new_deadline_ms = 0;
	return SHMKV_ACT_STORE;
}

/* Runs one op on @lk's key with a fresh clock and identity. */
static int run(struct lock_op *lo,
	       int (*decide)(struct shmkv_op *, const struct shmkv_cur *))
{
	memset(&lo->op, 0, sizeof(lo->op));
	lo->op.decide = decide;
	lo->op.ctx = lo;
	lo->op.want_bytes = true;
	lo->op.buf = lo->buf;
	lo->op.cap = sizeof(lo->buf);
	shmkv__proc_self(&lo->me);
	lo->now = shmkv__now_ms();
	/* The handle may have been copied since it was prepared. */
	lo->lk->ref.key = lo->lk->key;
	return shmkv__run_ref(lo->lk->kv, &lo->lk->ref, &lo->op);
}

static int check_handle(const struct shmkv_lock *lk)
{
	if (lk == NULL || lk->kv == NULL ||
	    lk->key_len <= SHMKV_LOCK_PREFIX_LEN)
		return -EINVAL;
	/* Before any write to the header's wait words: it is mapped
	 * read-only and a store would fault. */
	return lk->kv->readonly ? -EROFS : 0;
}

static int check_ms(int64_t ms)
{
	return ms >= 1 && ms <= SHMKV_LOCK_LEASE_MAX ? 0 : -EINVAL;
}

int shmkv_lock_init(shmkv_t *kv, struct shmkv_lock *lk, const char *name)
{
	int err;

	if (kv == NULL || lk == NULL)
		return -EINVAL;
	memset(lk, 0, sizeof(*lk));
	err = shmkv__lock_key(kv, name, lk->key, &lk->key_len);
	if (err)
		return err;
	if (kv->value_max < sizeof(struct shmkv_lock_rec)) {
		lk->key_len = 0;
		return -E2BIG;
	}
	err = shmkv_key_prepare(kv, &lk->ref, lk->key, lk->key_len);
	if (err) {
		lk->key_len = 0;
		return err;
	}
	lk->kv = kv;
	lk->wait_index = shmkv__lock_wait_index(kv, lk->key, lk->key_len);
	return 0;
}

/* The holder found busy is gone (never true for this very process). */
static bool holder_dead(const struct lock_op *lo)
{
	if (lo->seen.pid == lo->me.pid && lo->seen.start == lo->me.start)
		return false;
	return shmkv__proc_dead(lo->seen.pid, lo->seen.start);
}

/*
 * One acquire, and with @probe, a takeover if the holder is dead: a second
 * op that grants only if the record is still the dead holder's grant (its
 * token), so of several acquirers that found it dead exactly one wins.
 * *@seen receives the record found when busy.
 */
static int attempt(struct shmkv_lock *lk, int64_t lease, bool probe,
		   struct shmkv_lock_rec *seen)
{
	struct lock_op lo = { .lk = lk, .ms = lease };
	int rc = run(&lo, acquire_decide);

	if (rc == -EBUSY && probe && holder_dead(&lo)) {
		lo.dead_token = lo.seen.token;
		rc = run(&lo, acquire_decide);
	}
	*seen = lo.seen;
	if (rc < 0)
		return rc;
	lk->token = lo.rec.token;
	lk->deadline_ms = lo.rec.deadline_ms;
	lk->pid = lo.me.pid;
	lk->flags |= LK_HOLDING;
	lk->word = 0;
	return rc;
}

/* How long to sleep: the nap, cut to just past the holder's lease end and
 * to our own deadline (@end; -1 none). */
static int64_t nap_ms(const struct shmkv_lock_rec *seen, int64_t now,
		      int64_t end)
{
	int64_t nap = SHMKV_LOCK_NAP_MS;

	if (seen->deadline_ms - now + 1 < nap)
		nap = seen->deadline_ms - now + 1;
	if (end >= 0 && end - now < nap)
		nap = end - now;
	return nap;
}

/*
 * The blocking part of shmkv_lock_timed(). The holder is probed for
 * liveness when the same grant has blocked us for a whole nap (not after
 * each wake-up: a woken waiter that lost the race to a new holder knows
 * that one is alive).
 */
static int wait_for(struct shmkv_lock *lk, int64_t lease, int64_t end,
		    struct shmkv_lock_rec *seen)
{
	struct shmkv *kv = lk->kv;
	uint64_t token = seen->token;
	int64_t now = shmkv__now_ms(), next_probe = now + SHMKV_LOCK_NAP_MS;
	int rc;

	shmkv__lock_wait_enter(kv, lk->wait_index);
	for (;;) {
		uint32_t seq = shmkv__lock_wait_seq(kv, lk->wait_index);
		bool probe = now >= next_probe;
		int64_t nap;

		rc = attempt(lk, lease, probe, seen);
		if (rc != -EBUSY)
			break;
		now = shmkv__now_ms();
		if (end >= 0 && now >= end) {
			rc = -ETIMEDOUT;
			break;
		}
		if (probe || seen->token != token)
			next_probe = now + SHMKV_LOCK_NAP_MS;
		token = seen->token;
		nap = nap_ms(seen, now, end);
		if (nap > 0)
			shmkv__lock_wait_sleep(kv, lk->wait_index, seq, nap);
		now = shmkv__now_ms();
	}
	shmkv__lock_wait_leave(kv, lk->wait_index);
	/* We may have taken a wake-up meant for a waiter who can use it. */
	if (rc == -ETIMEDOUT)
		shmkv__lock_wake(kv, lk->wait_index);
	return rc;
}

int shmkv_lock_timed(struct shmkv_lock *lk, int64_t lease_ms,
		     int64_t timeout_ms)
{
	struct shmkv_lock_rec seen;
	int64_t start, end;
	int rc = check_handle(lk);

	if (rc)
		return rc;
	if (check_ms(lease_ms) || timeout_ms < SHMKV_LOCK_FOREVER)
		return -EINVAL;
	/* The clock is read for the deadline only once we must wait: the
	 * uncontended path reads it once, in the op. */
	start = timeout_ms > 0 ? shmkv__now_ms() : 0;
	rc = attempt(lk, lease_ms, true, &seen);
	if (rc != -EBUSY || timeout_ms == 0)
		return rc;
	end = timeout_ms < 0 ? -1 : start + timeout_ms;
	return wait_for(lk, lease_ms, end, &seen);
}

int shmkv_lock_try(struct shmkv_lock *lk, int64_t lease_ms)
{
	return shmkv_lock_timed(lk, lease_ms, 0);
}

int shmkv_lock_acquire(struct shmkv_lock *lk, int64_t lease_ms)
{
	return shmkv_lock_timed(lk, lease_ms, SHMKV_LOCK_FOREVER);
}

int shmkv_lock_release(struct shmkv_lock *lk)
{
	struct lock_op lo = { .lk = lk };
	int rc = check_handle(lk);

	if (rc)
		return rc;
	rc = run(&lo, release_decide);
	if (rc == 0 || rc == SHMKV_LOCK_NOT_OWNER || rc == SHMKV_LOCK_NOT_HELD)
		lk->flags &= ~LK_HOLDING;
	if (rc == 0)
		shmkv__lock_wake(lk->kv, lk->wait_index);
	return rc;
}

int shmkv_lock_extend(struct shmkv_lock *lk, int64_t ms,
		      enum shmkv_lock_extend_mode mode)
{
	struct lock_op lo = { .lk = lk, .ms = ms, .mode = mode };
	int rc = check_handle(lk);

	if (rc)
		return rc;
	if (check_ms(ms) || (mode != SHMKV_LOCK_EXTEND_ADD &&
			     mode != SHMKV_LOCK_EXTEND_REPLACE))
		return -EINVAL;
	rc = run(&lo, extend_decide);
	if (rc == 0) {
		lk->deadline_ms = lo.rec.deadline_ms;
		lk->word = 0;
	}
	return rc;
}

/* Finds the value word that published @lk's grant, for held().
 * Return: 0, or -ENOLCK if the key's value is not that grant. */
static int find_word(struct shmkv_lock *lk)
{
	struct shmkv *kv = lk->kv;
	struct shmkv_lock_rec rec;
	struct shmkv_block_view view;
	struct shmkv_slot_ref ref;
	struct shmkv_key k;
	uint64_t w;

	/* The slot our last op used, if it is still that incarnation. */
	ref.index = lk->ref.slot;
	ref.state = lk->ref.state;
	if (SLOT_STATE(ref.state) != SLOT_MEMBER || ref.index > kv->mask ||
	    !shmkv__slot_still(kv, &ref)) {
		shmkv__key_init(kv, &k, lk->key, lk->key_len);
		if (shmkv__lookup(kv, &k, &ref) != 1)
			return -ENOLCK;
	}
	/* Acquire: pairs with the CAS that published the block. */
	w = shmkv__load_acquire(&shmkv__slot(kv, ref.index)->value);
	if (VAL_KIND(w) != VAL_BLOCK ||
	    shmkv__block_read(kv, w, &rec, sizeof(rec), &view) != 0 ||
	    shmkv__lock_rec_parse(&rec, view.len, &rec) != 0 ||
	    !shmkv__slot_still(kv, &ref))
		return -ENOLCK;
	if (rec.state != SHMKV_LOCK_HELD || rec.token != lk->token ||
	    rec.pid != lk->pid || rec.deadline_ms != lk->deadline_ms)
		return -ENOLCK;
	lk->slot = ref.index;
	lk->word = w;
	return 0;
}

int shmkv_lock_held(struct shmkv_lock *lk)
{
	if (lk == NULL || lk->kv == NULL || !(lk->flags & LK_HOLDING) ||
	    lk->pid != shmkv__self_pid())
		return 0;
	if (lk->word == 0 && find_word(lk) != 0)
		return 0;
	/*
	 * Acquire: pairs with the full-barrier CAS of whoever replaced our
	 * record. A block word names one allocation (its generation moves
	 * on every free), so an equal word is still our grant.
	 */
	if (shmkv__load_acquire(&shmkv__slot(lk->kv, lk->slot)->value) !=
	    lk->word)
		return 0;
	return shmkv__now_ms() < lk->deadline_ms;
}

uint64_t shmkv_lock_token(const struct shmkv_lock *lk)
{
	return lk ? lk->token : 0;
}

/*
 * Listing.
 */

struct list_ctx {
	struct shmkv *kv;
	shmkv_lock_list_fn fn;
	void *arg;
	int64_t now;
	int count;
};

/* A value read with GET as a lock: "-<token>" or an owner record. */
static int parse_value(const unsigned char *buf, size_t len,
		       struct shmkv_lock_rec *rec)
{
	int64_t v;

	if (shmkv__string2ll((const char *)buf, len, &v))
		return rec_from_int(v, rec);
	return shmkv__lock_rec_parse(buf, len, rec);
}

static void fill_info(const struct list_ctx *c, const struct shmkv_lock_rec *r,
		      struct shmkv_lock_info *info)
{
	bool held = r->state == SHMKV_LOCK_HELD;

	info->held = held && r->deadline_ms > c->now;
	info->alive = held ? !shmkv__proc_dead(r->pid, r->start) : -1;
	info->pid = r->pid;
	info->token = r->token;
	info->held_for_ms = held ? c->now - r->acquired_ms : 0;
	info->lease_left_ms = held ? r->deadline_ms - c->now : 0;
}

static int list_visit(const void *key, size_t klen, void *arg)
{
	struct list_ctx *c = arg;
	unsigned char buf[sizeof(struct shmkv_lock_rec) + 16];
	struct shmkv_value v = { .buf = buf, .cap = sizeof(buf) };
	struct shmkv_lock_info info = { 0 };
	struct shmkv_lock_rec rec;

	if (klen <= SHMKV_LOCK_PREFIX_LEN ||
	    memcmp(key, SHMKV_LOCK_PREFIX, SHMKV_LOCK_PREFIX_LEN) != 0)
		return 0;
	/* Gone since the scan saw it, too long, or not a lock: skip. */
	if (shmkv_get(c->kv, key, klen, &v) != 1 ||
	    parse_value(buf, v.len, &rec) != 0)
		return 0;
	info.name = (const char *)key + SHMKV_LOCK_PREFIX_LEN;
	info.name_len = klen - SHMKV_LOCK_PREFIX_LEN;
	fill_info(c, &rec, &info);
	info.waiters = shmkv__lock_waiters(
		c->kv, shmkv__lock_wait_index(c->kv, key, klen));
	c->count++;
	return c->fn(&info, c->arg) ? 1 : 0;
}

int shmkv_lock_list(shmkv_t *kv, shmkv_lock_list_fn fn, void *arg)
{
	struct list_ctx c = { .kv = kv, .fn = fn, .arg = arg };
	uint64_t cursor = 0;

	if (kv == NULL || fn == NULL)
		return -EINVAL;
	c.now = shmkv__now_ms();
	do {
		int rc = shmkv_scan(kv, cursor, 1024, list_visit, &c, &cursor);

		if (rc < 0)
			return rc;
		if (rc > 0)
			break;
	} while (cursor != 0);
	return c.count;
}
