/*
 * tables.c - which table a command works in: the slow path of
 * shmkv__table_now (internal.h), taken when the header's life word is not
 * the one this handle last resolved.
 */
#include <errno.h>

#include "atomic.h"
#include "internal.h"
#include "tables.h"

/* Fills @out from life word @life. Return: as shmkv__tables, but
 * without making the table this handle's. */
static int resolve(const struct shmkv *kv, uint64_t life,
		   struct shmkv_tables *out)
{
	uint64_t g = SHMKV_LIFE_GEN(life);
	uint64_t e = g >> 1;

	out->life = life;
	out->old = NULL;
	out->t = &kv->tables[0];
	/* T(e + 1) must exist too while T(e) migrates into it. */
	if (e + (g & 1) > kv->geo.epoch_max)
		return -EBADMSG;
	if (g & 1) {
		out->old = &kv->tables[e];
		out->t = &kv->tables[e + 1];
	} else {
		out->t = &kv->tables[e];
	}
	if (life & SHMKV_LIFE_REMOVED)
		return -ESTALE;
	return g & 1 ? SHMKV__GROWING : 0;
}

/*
 * Makes life word @life's tables this handle's (held and checked against
 * the file, giveback.c) unless they are already: a handle keeps what it
 * holds until shmkv_close, so a life word it checked once needs nothing
 * more. Return: as shmkv__tables_hold.
 */
static int adopt(const struct shmkv *kv, uint64_t life)
{
	int r;

	/* Relaxed: a process-local hint (struct shmkv); every value stored
	 * names tables this handle holds. */
	if (shmkv__load_relaxed(&kv->life_checked) == life)
		return 0;
	r = shmkv__tables_hold(kv, life);
	if (r == 0)
		shmkv__store_relaxed((uint64_t *)&kv->life_checked, life);
	return r;
}

/* Rounds of resolving: each one that fails means the life word moved on
 * (a growth's step, or a give-back that read a later one), so a handful
 * ends unless the word is corrupt. */
#define ADOPT_ROUNDS 64u

int shmkv__tables(const struct shmkv *kv, struct shmkv_tables *out)
{
	const struct shmkv_header_shm *h = (const struct shmkv_header_shm *)
						   kv->base;
	int r = -EAGAIN;

	/* A handle of another backend (redis.h) has no tables: its zeroed
	 * views (slots NULL) are what a caller that ignores the error
	 * would get, a fault rather than a read of memory it does not
	 * have. Nothing of the header is read. */
	if (kv->backend != NULL) {
		out->t = &kv->tables[0];
		out->old = NULL;
		out->life = 0;
		return SHMKV__REMOTE;
	}
	for (uint32_t round = 0; round < ADOPT_ROUNDS; round++) {
		/* Relaxed: as shmkv__table_now's load (the same word, read
		 * again); adopt() re-reads it after its locks. */
		uint64_t life = shmkv__load_relaxed(&h->life);
		int a;

		r = resolve(kv, life, out);
		if (r == -EBADMSG)
			break;
		a = adopt(kv, life);
		if (a == 1)
			continue;
		if (a < 0) {
			r = a;
			break;
		}
		/* Relaxed: a process-local hint (struct shmkv); every value
		 * stored names a table this handle holds, and a thread that
		 * stores an older one than another only sends commands back
		 * here. */
		if (r == 0)
			shmkv__store_relaxed((uint64_t *)&kv->life_cached,
					     out->life);
		return r;
	}
	/* A life word that is corrupt, or tables that could not be held:
	 * the tables last held and checked, so that a caller that goes on
	 * anyway touches only memory the file holds. Relaxed: as above. */
	(void)resolve(kv, shmkv__load_relaxed(&kv->life_checked), out);
	return r;
}

int shmkv__tables_attach(struct shmkv *kv)
{
	const struct shmkv_header_shm *h = (const struct shmkv_header_shm *)
						   kv->base;

	for (uint32_t round = 0; round < ADOPT_ROUNDS; round++) {
		/* Relaxed: shmkv__tables_hold reads it again after its
		 * locks. */
		uint64_t life = shmkv__load_relaxed(&h->life);
		int r = shmkv__tables_hold(kv, life);

		if (r == 1)
			continue;
		if (r < 0)
			return r;
		kv->life_checked = life;
		/* T(e), which the handle holds whether or not it grows: the
		 * fast path's hint names only a held table. */
		kv->life_cached = SHMKV_LIFE_OF_GEN(SHMKV_LIFE_GEN(life) &
						    ~1ull);
		return 0;
	}
	return -EAGAIN;
}

const struct shmkv_table *shmkv__table_slow(const struct shmkv *kv)
{
	struct shmkv_tables tabs;

	shmkv__tables(kv, &tabs);
	return tabs.t;
}

uint32_t shmkv__tables_walk(const struct shmkv *kv,
			    const struct shmkv_table *ts[2])
{
	struct shmkv_tables tabs;

	shmkv__tables(kv, &tabs);
	if (tabs.old == NULL) {
		ts[0] = tabs.t;
		return 1;
	}
	ts[0] = tabs.old;
	ts[1] = tabs.t;
	return 2;
}

int shmkv__life_error(const struct shmkv *kv)
{
	struct shmkv_tables tabs;

	return shmkv__tables(kv, &tabs);
}

struct shmkv_slot_shm *shmkv__back_slot(const struct shmkv *kv, uint32_t back,
					bool growing, uint64_t *life,
					bool *orphan)
{
	const struct shmkv_header_shm *h = (const struct shmkv_header_shm *)
						   kv->base;
	struct shmkv_tables tabs;
	uint32_t idx = BLK_BACK_INDEX(back);
	int r;

	*orphan = false;
	/* Acquire: the slot words read next are at least as new as the
	 * generation this says (the flip and the finish are full-barrier
	 * CASes made after what they publish). */
	*life = shmkv__load_acquire(&h->life);
	r = resolve(kv, *life, &tabs);
	if (r < 0 || (r == SHMKV__GROWING && !growing) || adopt(kv, *life) != 0)
		return NULL;
	/* Epochs mod 16: the two tables of a growth differ. */
	if (tabs.old != NULL && BLK_BACK_EPOCH(back) == (tabs.old->epoch & 15u))
		tabs.t = tabs.old;
	if (BLK_BACK_EPOCH(back) != (tabs.t->epoch & 15u) ||
	    idx > tabs.t->mask) {
		*orphan = true;
		return NULL;
	}
	return shmkv__slot(tabs.t, idx);
}

bool shmkv__life_same(const struct shmkv *kv, uint64_t life)
{
	const struct shmkv_header_shm *h = (const struct shmkv_header_shm *)
						   kv->base;

	/* Acquire fence, then relaxed: the judge's reads of the slot are done
	 * before this load (a growth that began meanwhile is seen). */
	shmkv__fence_acquire();
	return shmkv__load_relaxed(&h->life) == life;
}
