/*
 * lock_cell.c - lock cells: where an inline HELD lock value keeps its
 * owner, token and lease (see lock_record.h).
 *
 * Why cells: a grant must name its owner (pid, start time), its token and
 * its lease end, which do not fit a value word. Writing them to a fresh
 * value block per grant costs an allocation, a publication, a confirm and
 * a free (four CASes on shared words). A cell is allocated once per
 * process and reused: a grant claims it (one CAS on a line this process
 * alone writes, so it stays in our cache), fills it and publishes it with
 * the CAS on the lock's value word; the release CASes the value word back
 * to FREE and unclaims with a plain store.
 *
 * Lifetime: a cell is a value block allocated by this process and never
 * confirmed, so its tag keeps our pid. Only shmkv_close() frees an
 * unclaimed one; after our death, recovery frees those no lock value
 * names. So a cell named by a value is never freed while the value could
 * still be read as that grant, except through corruption, which readers
 * see as a changed sequence or tag (-ESTALE) and never as a crash.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "atomic.h"
#include "lock_record.h"

#define POOL_ENTRY(pid, unit) (((uint64_t)(pid) << 32) | ((uint64_t)(unit) + 1))
#define POOL_PID(e)	      ((uint32_t)((e) >> 32))
#define POOL_UNIT(e)	      ((uint32_t)(e)-1)

/* The cell in block @unit, if the block is big enough for one. */
static struct shmkv_lock_cell_shm *
cell_at(const struct shmkv *kv, uint32_t unit, struct shmkv_block_shm **blk)
{
	uint32_t cls;
	struct shmkv_block_shm *b = shmkv__block_at(kv, unit, &cls);

	if (b == NULL || kv->class_size[cls] - sizeof(*b) <
				 sizeof(struct shmkv_lock_cell_shm))
		return NULL;
	*blk = b;
	return (struct shmkv_lock_cell_shm *)b->data;
}

/* Claims @cell (in block @b, unit @unit) if it is ours and unclaimed. */
static bool claim_at(struct shmkv_block_shm *b,
		     struct shmkv_lock_cell_shm *cell, uint32_t unit,
		     uint32_t pid, struct lock_claim *c)
{
	uint64_t tag, ctl, nctl;

	/* Relaxed: only we write our cells' tags; another pid or a freed
	 * block means the pool entry is stale (corruption) or our parent's. */
	tag = shmkv__load_relaxed(&b->tag);
	if (!BLK_USED(tag) || BLK_PID(tag) != pid)
		return false;
	ctl = shmkv__load_relaxed(&cell->ctl);
	if (ctl & LOCK_CELL_CLAIMED)
		return false;
	nctl = ((uint64_t)(LOCK_CELL_SEQ(ctl) + 1) << 32) | LOCK_CELL_CLAIMED;
	/* Full barrier: the new sequence is visible before any field we
	 * write next, so a reader that copies one of them sees it move. */
	if (shmkv__cas_full(&cell->ctl, ctl, nctl) != ctl)
		return false;
	c->cell = cell;
	c->ctl = nctl;
	c->unit = unit;
	return true;
}

/* Claims the cell in @unit if it is ours and unclaimed. */
static bool try_claim(const struct shmkv *kv, uint32_t unit, uint32_t pid,
		      struct lock_claim *c)
{
	struct shmkv_block_shm *b;
	struct shmkv_lock_cell_shm *cell = cell_at(kv, unit, &b);

	return cell != NULL && claim_at(b, cell, unit, pid, c);
}

/* A new cell, claimed, in pool entry @i (empty when we looked). */
static int add_cell(struct shmkv *kv, uint32_t i, uint32_t pid,
		    struct lock_claim *c)
{
	struct shmkv_lock_cell_shm *cell;
	struct shmkv_block_shm *b;
	uint64_t ref;
	int err = shmkv__block_alloc(kv, sizeof(*cell), &ref);

	if (err)
		return err;
	cell = cell_at(kv, VAL_BLOCK_UNIT(ref), &b);
	if (cell == NULL) { /* a class too small: no lock cell here */
		shmkv__block_free(kv, ref);
		return -ENOMEM;
	}
	/* Relaxed: nobody reads the block before a lock value names it,
	 * which the publishing CAS orders after these stores. */
	uatomic_set(&b->len, (uint32_t)sizeof(*cell));
	uatomic_set(&b->slot, UINT32_MAX);
	shmkv__store_relaxed((uint64_t *)&b->deadline_ms, 0);
	/* The block generation seeds the sequence, so a reused block does
	 * not repeat its previous life's sequence numbers. */
	c->ctl = ((uint64_t)VAL_BLOCK_GEN(ref) << 32) | LOCK_CELL_CLAIMED;
	shmkv__store_relaxed(&cell->ctl, c->ctl);
	c->cell = cell;
	c->unit = VAL_BLOCK_UNIT(ref);
	/* Full barrier (CAS on process-local memory): another thread of ours
	 * may take the entry first; then this cell goes to a later one. */
	if (uatomic_cmpxchg(&kv->cell_pool[i], 0, POOL_ENTRY(pid, c->unit)) ==
	    0)
		return 0;
	for (uint32_t j = i + 1; j < SHMKV_CELL_POOL; j++)
		if (uatomic_cmpxchg(&kv->cell_pool[j], 0,
				    POOL_ENTRY(pid, c->unit)) == 0)
			return 0;
	shmkv__block_free(kv, ref);
	c->cell = NULL;
	return -ENOMEM;
}

int shmkv__cell_claim(struct shmkv *kv, struct lock_claim *c,
		      const struct lock_claim *hint)
{
	uint32_t pid = shmkv__self_pid();

	/* The hint's pointer came from cell_at() on this handle: no need
	 * to check the unit again. */
	if (hint != NULL && hint->cell != NULL &&
	    claim_at((struct shmkv_block_shm *)((unsigned char *)hint->cell -
						offsetof(struct shmkv_block_shm,
							 data)),
		     hint->cell, hint->unit, pid, c))
		return 0;
	for (uint32_t i = 0; i < SHMKV_CELL_POOL; i++) {
		/* Acquire: pairs with the CAS that added the entry, so the
		 * cell's initialisation (and the block's past lives before
		 * its allocation) happen before our reads of it. */
		uint64_t e = shmkv__load_acquire(&kv->cell_pool[i]);

		if (e == 0)
			return add_cell(kv, i, pid, c);
		if (POOL_PID(e) == pid && try_claim(kv, POOL_UNIT(e), pid, c))
			return 0;
	}
	return -ENOMEM;
}

/* Unclaims @cell, claimed with @ctl. */
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

int shmkv__cell_read(const struct shmkv *kv, uint32_t unit, uint32_t seq,
		     struct shmkv_lock_rec *rec)
{
	struct shmkv_block_shm *b;
	const struct shmkv_lock_cell_shm *cell = cell_at(kv, unit, &b);
	uint64_t tag, ctl;

	if (cell == NULL)
		return -EBADMSG;
	/* Acquire, acquire: the caller loaded the lock value with acquire,
	 * so these see the claim that value publishes, or a later one. */
	tag = shmkv__load_acquire(&b->tag);
	ctl = shmkv__load_acquire(&cell->ctl);
	if (!BLK_USED(tag) || BLK_PID(tag) == 0 || !(ctl & LOCK_CELL_CLAIMED) ||
	    (LOCK_CELL_SEQ(ctl) & LOCK_SEQ_MASK) != seq)
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
	return 0;
}

/*
 * Per-thread parking. The cache names its store by serial, not pointer (a
 * closed handle's memory may come back as a new one), and is only touched
 * by its thread, except at thread exit, where the destructor gives the
 * cell back if the store is still open: under open_lock, which close also
 * takes, so the mapping cannot go away meanwhile.
 */
struct cell_cache {
	uint64_t serial; /* store of the parked cell */
	uint32_t pid;	 /* process that parked it (a child's copy is not) */
	bool keyed;	 /* the exit destructor is armed for this thread */
	struct lock_claim c;
};

static __thread struct cell_cache parked
	__attribute__((tls_model("initial-exec")));
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shmkv *open_list; /* read-write handles, by next_open */
static uint64_t last_serial;	/* under open_lock */
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static bool serial_open(uint64_t serial)
{
	for (struct shmkv *kv = open_list; kv != NULL; kv = kv->next_open)
		if (kv->serial == serial)
			return true;
	return false;
}

static void thread_exit(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&open_lock);
	if (parked.c.cell != NULL && parked.pid == shmkv__self_pid() &&
	    serial_open(parked.serial))
		shmkv__cell_unclaim(&parked.c);
	parked.c.cell = NULL;
	pthread_mutex_unlock(&open_lock);
}

static void exit_key_init(void)
{
	/* Without a key, exiting threads leak their parked cell until the
	 * process is dead: a leak, not an error. */
	if (pthread_key_create(&exit_key, thread_exit) != 0)
		exit_key = (pthread_key_t)-1;
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
	c->ctl = ((uint64_t)(LOCK_CELL_SEQ(parked.c.ctl) + 1) << 32) |
		 LOCK_CELL_CLAIMED;
	c->unit = parked.c.unit;
	parked.c.cell = NULL;
	/* Relaxed store, then a release fence: a seqlock writer's step. The
	 * cell is ours (claimed), so no CAS; a reader that sees a field we
	 * write next sees the new sequence too. */
	shmkv__store_relaxed(&c->cell->ctl, c->ctl);
	shmkv__fence_release();
	return true;
}

void shmkv__cell_put(const struct shmkv *kv, uint32_t pid,
		     struct shmkv_lock_cell_shm *cell, uint64_t ctl,
		     uint32_t unit)
{
	if (parked.c.cell != NULL && parked.pid != pid)
		parked.c.cell = NULL; /* our parent's, copied by fork */
	if (parked.c.cell != NULL) {
		unclaim(cell, ctl);
		return;
	}
	if (!parked.keyed) {
		pthread_once(&exit_once, exit_key_init);
		parked.keyed = exit_key != (pthread_key_t)-1 &&
			       pthread_setspecific(exit_key, &parked) == 0;
	}
	parked.serial = kv->serial;
	parked.pid = pid;
	parked.c.cell = cell;
	parked.c.ctl = ctl;
	parked.c.unit = unit;
}

void shmkv__cells_open(struct shmkv *kv)
{
	pthread_mutex_lock(&open_lock);
	kv->serial = ++last_serial;
	kv->next_open = open_list;
	open_list = kv;
	pthread_mutex_unlock(&open_lock);
}

/* Frees this process's unclaimed cells of @kv. */
static void pool_drain(struct shmkv *kv)
{
	uint32_t pid = shmkv__self_pid();

	for (uint32_t i = 0; i < SHMKV_CELL_POOL; i++) {
		/* Relaxed: the handle is being closed; no thread uses it. */
		uint64_t e = uatomic_read(&kv->cell_pool[i]);
		struct lock_claim c;
		uint32_t cls;
		struct shmkv_block_shm *b;

		if (e == 0 || POOL_PID(e) != pid ||
		    !try_claim(kv, POOL_UNIT(e), pid, &c))
			continue;
		/* Claimed by us now, named by no lock value: free it. A cell
		 * still claimed (a grant never released, or parked by
		 * another thread) stays for recovery, once we are dead. */
		b = shmkv__block_at(kv, c.unit, &cls);
		shmkv__block_free(
			kv,
			VAL_BLOCK_WORD(c.unit,
				       BLK_GEN(shmkv__load_relaxed(&b->tag))));
	}
}

void shmkv__cells_close(struct shmkv *kv)
{
	pthread_mutex_lock(&open_lock);
	for (struct shmkv **p = &open_list; *p != NULL; p = &(*p)->next_open)
		if (*p == kv) {
			*p = kv->next_open;
			break;
		}
	if (parked.c.cell != NULL && parked.serial == kv->serial &&
	    parked.pid == shmkv__self_pid()) {
		shmkv__cell_unclaim(&parked.c);
		parked.c.cell = NULL;
	}
	pthread_mutex_unlock(&open_lock);
	pool_drain(kv);
}

bool shmkv__cell_mark(const struct shmkv *kv, uint64_t w, unsigned char *bits)
{
	uint32_t unit, seq, cls;

	if (VAL_KIND(w) != VAL_INT ||
	    !lock_int_cell(VAL_INT_VALUE(w), &unit, &seq) ||
	    shmkv__block_at(kv, unit, &cls) == NULL)
		return false;
	bits[unit / 8] |= (unsigned char)(1u << (unit % 8));
	return true;
}
