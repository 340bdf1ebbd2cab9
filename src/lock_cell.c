/*
 * lock_cell.c - lock cells: where an inline HELD lock value keeps its
 * owner, token and lease (see lock_record.h).
 *
 * Why cells: a grant must name its owner (pid, start time), its token and
 * its lease end, which do not fit a value word. Writing them to a fresh
 * value block per grant costs an allocation, a publication, a confirm and
 * a free (four CASes on shared words). A cell is an owned block (owned.h)
 * allocated once per process and reused: a grant claims it (a store on a
 * line this process alone writes), fills it and publishes it as a pin
 * with the CAS on the lock's value word; the release CASes the value word
 * back to FREE, and the cell is parked for the thread's next grant.
 *
 * The pin carries the low 16 bits of the claim's sequence; the cell keeps
 * all 32. A reader that judged a grant and means to replace it (a taker)
 * visits the cell (owned.h) and re-validates the full sequence before its
 * CAS; the owner, whenever a claim starts a new epoch of 2^16 sequence
 * numbers (the pin's bits about to repeat), looks for visits and, if one
 * names the cell, blocks it instead of claiming it. So a pin never comes
 * back to the same bits while a taker that read it can still CAS it: not
 * after 2^16 grants, not after 2^32, not after a free and a reuse.
 *
 * Lifetime: only the owner frees a cell while it lives (shmkv_close frees
 * the unpinned ones); once it is dead, reclamation frees those no pin
 * names and nobody visits. The pool of a handle, the per-thread parked
 * cells and their bookkeeping are all process-local.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "fault.h"
#include "lock_record.h"
#include "owned.h"

#define CELL_BLOCKED   2u /* a claim found a visit at an epoch start */
#define EPOCH_MASK     ((uint32_t)VAL_PIN_TAGS)
#define CTL(seq, bits) (((uint64_t)(seq) << 32) | (bits))

/* A handle's cells (its extension, see struct shmkv_ext). */
struct cell_pool {
	struct shmkv_ext ext;
	uint32_t pid;		      /* the process the entries belong to */
	uint64_t ref[SHMKV_CELL_POOL]; /* owned block words; 0: empty */
	struct cell_pool *next_open;
	struct shmkv *kv;
};

/* The cell in block @unit, if the block is one big enough for it (the
 * unit may come from the segment: checked here, once). */
static struct shmkv_lock_cell_shm *cell_at(const struct shmkv *kv,
					   uint32_t unit)
{
	uint32_t cls;
	struct shmkv_block_shm *b = shmkv__block_at(kv, unit, &cls);

	if (b == NULL || kv->geo.class_size[cls] - sizeof(*b) <
				 sizeof(struct shmkv_lock_cell_shm))
		return NULL;
	return (struct shmkv_lock_cell_shm *)b->data;
}

/* The cell in owned block @ref. */
static struct shmkv_lock_cell_shm *cell_of(const struct shmkv *kv,
					   uint64_t ref)
{
	return cell_at(kv, VAL_BLOCK_UNIT(ref));
}

/*
 * The claim @c has just written its new ctl. At the start of an epoch, or
 * on a cell a visit blocked before, a taker may still hold a pin of this
 * cell with the bits about to come back: look for visits (after a full
 * fence: the owner's half of the store-buffer pair with visit_begin).
 * Return: true if the claim may be used; false: the cell is left BLOCKED.
 */
static bool epoch_clear(struct shmkv *kv, const struct lock_claim *c,
			uint64_t old_ctl)
{
	if ((LOCK_CELL_SEQ(c->ctl) & EPOCH_MASK) != 0 &&
	    !(old_ctl & CELL_BLOCKED))
		return true;
	shmkv__fence_full();
	if (!shmkv__visited(kv, VAL_BLOCK_UNIT(c->ref)))
		return true;
	/* Release: our reads of the cell come before it reads unclaimed. */
	shmkv__store_release(&c->cell->ctl,
			     CTL(LOCK_CELL_SEQ(c->ctl), CELL_BLOCKED));
	return false;
}

/* Claims cell @ref if it is ours, whole, and unclaimed. */
static bool claim_ref(struct shmkv *kv, uint64_t ref, uint32_t pid,
		      struct lock_claim *c)
{
	struct shmkv_lock_cell_shm *cell = cell_of(kv, ref);
	uint64_t ctl, nctl;

	if (cell == NULL || !shmkv__owned_valid(shmkv__owned_of(cell), ref, pid))
		return false;
	/* Relaxed: the CAS below decides. */
	ctl = shmkv__load_relaxed(&cell->ctl);
	if (ctl & LOCK_CELL_CLAIMED)
		return false;
	nctl = CTL(LOCK_CELL_SEQ(ctl) + 1, LOCK_CELL_CLAIMED);
	/* Full barrier: the new sequence is visible before any field we
	 * write next, so a reader that copies one of them sees it move. */
	if (shmkv__cas_full(&cell->ctl, ctl, nctl) != ctl)
		return false;
	c->cell = cell;
	c->ctl = nctl;
	c->ref = ref;
	return epoch_clear(kv, c, ctl);
}

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cell_pool *open_list; /* pools of open handles */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool exit_key_ok;

/*
 * Per-thread parking. The cache names its handle by serial, not pointer
 * (a closed handle's memory may come back as a new one), and is only
 * touched by its thread, except at thread exit, where the destructor
 * gives the cell back if the handle is still open: under open_lock, which
 * close also takes, so the mapping cannot go away meanwhile.
 */
struct cell_cache {
	uint64_t serial; /* handle of the parked cell */
	uint32_t pid;	 /* process that parked it (a child's copy is not) */
	bool keyed;	 /* the exit destructor is armed for this thread */
	struct lock_claim c;
};

static __thread struct cell_cache parked
	__attribute__((tls_model("initial-exec")));

static struct cell_pool *pool_open(uint64_t serial)
{
	for (struct cell_pool *p = open_list; p != NULL; p = p->next_open)
		if (p->kv->serial == serial)
			return p;
	return NULL;
}

static void unclaim(struct shmkv_lock_cell_shm *cell, uint64_t ctl)
{
	/* Release: our reads and writes of the cell come before the next
	 * claimer's (another thread of ours) CAS can see it unclaimed. */
	shmkv__store_release(&cell->ctl, ctl & ~(uint64_t)LOCK_CELL_CLAIMED);
}

void shmkv__cell_unclaim(const struct lock_claim *c)
{
	unclaim(c->cell, c->ctl);
}

static void thread_exit(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&open_lock);
	if (parked.c.cell != NULL && parked.pid == shmkv__self_pid() &&
	    pool_open(parked.serial) != NULL)
		shmkv__cell_unclaim(&parked.c);
	parked.c.cell = NULL;
	pthread_mutex_unlock(&open_lock);
}

/* fork(): the child owns none of its parent's cells (they carry the
 * parent's pid) and must find open_lock unlocked, whoever held it. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&open_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&open_lock);
}

static void fork_child(void)
{
	pthread_mutex_init(&open_lock, NULL);
	for (struct cell_pool *p = open_list; p != NULL; p = p->next_open) {
		memset(p->ref, 0, sizeof(p->ref));
		p->pid = 0;
	}
	parked.c.cell = NULL;
}

static void init_once(void)
{
	/* Without a key, exiting threads leak their parked cell until the
	 * process is dead: a leak, not an error. */
	exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Frees the unpinned cells of @p's handle, claimed or not: closing a
 * handle ends its use by every thread, so a claimed cell that no pin names
 * is parked (by some thread) and nothing more. */
static void pool_drain(struct shmkv *kv, struct cell_pool *p)
{
	for (uint32_t i = 0; i < SHMKV_CELL_POOL; i++) {
		/* Relaxed: the handle is being closed; no thread uses it. */
		uint64_t ref = shmkv__load_relaxed(&p->ref[i]);

		struct shmkv_lock_cell_shm *cell =
			ref != 0 ? cell_of(kv, ref) : NULL;

		if (cell != NULL && p->pid == shmkv__self_pid() &&
		    shmkv__owned_valid(shmkv__owned_of(cell), ref, p->pid) &&
		    !shmkv__owned_pinned(kv, ref))
			shmkv__owned_free(kv, ref);
	}
}

static void pool_close(struct shmkv *kv, struct shmkv_ext *ext)
{
	struct cell_pool *p = (struct cell_pool *)ext;

	pthread_mutex_lock(&open_lock);
	for (struct cell_pool **pp = &open_list; *pp != NULL;
	     pp = &(*pp)->next_open)
		if (*pp == p) {
			*pp = p->next_open;
			break;
		}
	if (parked.c.cell != NULL && parked.serial == kv->serial)
		parked.c.cell = NULL;
	pthread_mutex_unlock(&open_lock);
	pool_drain(kv, p);
	free(p);
}

/* The handle's pool, made on first use. NULL: no memory (use records). */
static struct cell_pool *pool_get(struct shmkv *kv)
{
	/* Acquire: pairs with the CAS that attached it (process-local), so
	 * the pool's fields are seen as its maker wrote them. */
	struct cell_pool *p = (struct cell_pool *)shmkv__load_ptr_acquire(
		&kv->ext);
	struct shmkv_ext *seen;

	if (p != NULL)
		return p;
	pthread_once(&once, init_once);
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->ext.close = pool_close;
	p->pid = shmkv__self_pid();
	p->kv = kv;
	/* Full barrier (process-local CAS): releases our pool's fields, or
	 * acquires those of the one another thread attached first. */
	seen = shmkv__cas_ptr_full(&kv->ext, NULL, &p->ext);
	if (seen != NULL) {
		free(p);
		return (struct cell_pool *)seen;
	}
	pthread_mutex_lock(&open_lock);
	SHMKV_PAUSE_POINT("lock_pools_locked");
	p->next_open = open_list;
	open_list = p;
	pthread_mutex_unlock(&open_lock);
	return p;
}

/* A new cell, claimed, in an empty pool entry. */
static int add_cell(struct shmkv *kv, struct cell_pool *p,
		    struct lock_claim *c)
{
	uint64_t ref;
	int err = shmkv__owned_alloc(kv, sizeof(*c->cell), &ref);

	if (err)
		return err;
	c->cell = cell_of(kv, ref);
	if (c->cell == NULL) { /* a class too small: no lock cell here */
		shmkv__owned_free(kv, ref);
		return -ENOMEM;
	}
	/* The generation seeds the sequence: a reused block does not start
	 * where its last life did. Relaxed: nobody reads the cell before a
	 * pin names it, which the publishing CAS orders after this. */
	c->ctl = CTL(VAL_BLOCK_GEN(ref), LOCK_CELL_CLAIMED);
	c->ref = ref;
	shmkv__store_relaxed(&c->cell->ctl, c->ctl);
	for (uint32_t i = 0; i < SHMKV_CELL_POOL; i++)
		/* Full barrier (process-local CAS): threads share the pool;
		 * it publishes the cell's ctl (pairs with pool_claim()). */
		if (shmkv__cas_full(&p->ref[i], 0, ref) == 0)
			return epoch_clear(kv, c, 0) ? 0 : -EAGAIN;
	shmkv__owned_free(kv, ref);
	c->cell = NULL;
	return -ENOMEM;
}

static int pool_claim(struct shmkv *kv, struct lock_claim *c,
		      const struct lock_claim *hint)
{
	uint32_t pid = shmkv__self_pid();
	struct cell_pool *p = pool_get(kv);
	bool empty = false;

	if (p == NULL)
		return -ENOMEM;
	if (hint != NULL && hint->cell != NULL &&
	    claim_ref(kv, hint->ref, pid, c))
		return 0;
	for (uint32_t i = 0; i < SHMKV_CELL_POOL; i++) {
		/* Acquire: pairs with the CAS that added the entry, so the
		 * cell's initialisation (and the block's past lives before
		 * its allocation) happen before our reads of it. */
		uint64_t ref = shmkv__load_acquire(&p->ref[i]);

		if (ref == 0)
			empty = true;
		else if (claim_ref(kv, ref, pid, c))
			return 0;
	}
	/* A blocked new cell stays in the pool; try once more for one. */
	for (int n = 0; n < 2 && empty; n++) {
		int err = add_cell(kv, p, c);

		if (err != -EAGAIN)
			return err;
	}
	return -ENOMEM;
}

int shmkv__cell_claim(struct shmkv *kv, struct lock_claim *c,
		      const struct lock_claim *hint)
{
	int err = pool_claim(kv, c, hint);

	/* A failed claim leaves no pointer behind: a caller that tried
	 * several cells must never take the last one tried for its own. */
	if (err)
		c->cell = NULL;
	return err;
}

int shmkv__cell_read(const struct shmkv *kv, const uint64_t *at, uint64_t w,
		     struct shmkv_lock_rec *rec, struct lock_cell_seen *seen)
{
	uint32_t unit = 0, seq = 0;
	const struct shmkv_lock_cell_shm *cell = NULL;
	const struct shmkv_block_shm *b;
	uint64_t tag, ctl;

	if (val_pin_decode(VAL_INT_VALUE(w), &unit, &seq))
		cell = cell_at(kv, unit);
	if (cell == NULL)
		return -EBADMSG;
	b = shmkv__owned_of((void *)cell);
	/* Acquire, acquire: the caller loaded the lock value with acquire,
	 * so these see the claim that value publishes, or a later one. */
	tag = shmkv__load_acquire(&b->tag);
	ctl = shmkv__load_acquire(&cell->ctl);
	/* Free, a value block, or another claim: the value has moved on
	 * since it was read (the cell was released, taken over and freed,
	 * or reused), or it is an integer that was never a lock. */
	if (!BLK_USED(tag) || BLK_PID(tag) == 0 || (tag & BLK_DOOM) ||
	    !(ctl & LOCK_CELL_CLAIMED) ||
	    (LOCK_CELL_SEQ(ctl) & EPOCH_MASK) != seq)
		return -ESTALE;
	/* Acquire: the word again, after the claim word. Still @w: the claim
	 * we loaded is the one that published it (a claim moves only after
	 * its word has), so the fields copied next are that claim's, filled
	 * before the word was published. (Found by the spin model.) */
	if (shmkv__load_acquire(at) != w)
		return -ESTALE;
	memset(rec, 0, sizeof(*rec));
	rec->magic = SHMKV_LOCK_MAGIC;
	rec->version = SHMKV_LOCK_REC_VERSION;
	rec->state = SHMKV_LOCK_HELD;
	rec->pid = BLK_PID(tag);
	/* Relaxed copies, validated below as a seqlock read. */
	rec->start = shmkv__load_relaxed(&cell->start);
	rec->token = shmkv__load_relaxed(&cell->token);
	rec->acquired_ms = (int64_t)shmkv__load_relaxed(
		(const uint64_t *)&cell->acquired_ms);
	rec->deadline_ms = (int64_t)shmkv__load_relaxed(
		(const uint64_t *)&cell->deadline_ms);
	/* Acquire fence: the copies complete before the re-checks. */
	shmkv__fence_acquire();
	if (shmkv__load_relaxed(&cell->ctl) != ctl ||
	    shmkv__load_relaxed(&b->tag) != tag || rec->token == 0)
		return -ESTALE;
	if (seen != NULL) {
		seen->tag = tag;
		seen->ctl = ctl;
		seen->unit = unit;
	}
	return 0;
}

int shmkv__cell_visit(struct shmkv *kv, const struct lock_cell_seen *seen,
		      uint32_t *entry)
{
	struct shmkv_lock_cell_shm *cell = cell_at(kv, seen->unit);
	int err;

	if (cell == NULL)
		return -ESTALE;
	err = shmkv__visit_begin(kv, seen->unit, entry);
	if (err)
		return err;
	/* Relaxed: visit_begin's full barrier came first (the visitor's half
	 * of the pair). The same tag (no DOOM, same generation) and the same
	 * full claim sequence: the grant judged is the one the pin names,
	 * and neither a free nor an epoch can pass while we visit. */
	if (shmkv__load_relaxed(&shmkv__owned_of(cell)->tag) == seen->tag &&
	    shmkv__load_relaxed(&cell->ctl) == seen->ctl)
		return 0;
	shmkv__visit_end(kv, *entry);
	return -ESTALE;
}

bool shmkv__cell_take(const struct shmkv *kv, uint32_t pid,
		      struct lock_claim *c)
{
	if (parked.c.cell == NULL || parked.serial != kv->serial ||
	    parked.pid != pid)
		return false;
	/* Field by field, each load the size of the store that put() made:
	 * a whole-struct copy would be one wide load, which stalls on store
	 * forwarding when the cell was parked a few ns ago. */
	c->cell = parked.c.cell;
	c->ctl = CTL(LOCK_CELL_SEQ(parked.c.ctl) + 1, LOCK_CELL_CLAIMED);
	c->ref = parked.c.ref;
	parked.c.cell = NULL;
	/* Before writing into it: still our block (a wrong liveness judgement
	 * elsewhere must not make us write into someone's value). */
	if (!shmkv__owned_valid(shmkv__owned_of(c->cell), c->ref, pid)) {
		c->cell = NULL;
		return false;
	}
	/* Relaxed store, then a release fence: a seqlock writer's step. The
	 * cell is ours (claimed), so no CAS; a reader that sees a field we
	 * write next sees the new sequence too. */
	shmkv__store_relaxed(&c->cell->ctl, c->ctl);
	shmkv__fence_release();
	if ((LOCK_CELL_SEQ(c->ctl) & EPOCH_MASK) != 0 ||
	    epoch_clear((struct shmkv *)kv, c, 0))
		return true;
	c->cell = NULL; /* left BLOCKED in the pool */
	return false;
}

void shmkv__cell_put(const struct shmkv *kv, uint32_t pid,
		     const struct lock_claim *c)
{
	if (parked.c.cell != NULL &&
	    (parked.pid != pid || parked.serial != kv->serial))
		/* Our parent's (copied by fork), or of a handle closed since
		 * (close freed it) or of another handle: forget it; another
		 * open handle's cell stays claimed until that one closes. */
		parked.c.cell = NULL;
	if (parked.c.cell != NULL) {
		shmkv__cell_unclaim(c);
		return;
	}
	if (!parked.keyed) {
		pthread_once(&once, init_once);
		parked.keyed = exit_key_ok &&
			       pthread_setspecific(exit_key, &parked) == 0;
	}
	parked.serial = kv->serial;
	parked.pid = pid;
	parked.c.cell = c->cell;
	parked.c.ctl = c->ctl;
	parked.c.ref = c->ref;
}
