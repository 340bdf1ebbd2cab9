/*
 * area.c - the slow half of claiming a slot's area (area.h): a claim held
 * by someone else, which is taken over if its thread is dead.
 */
#include "area.h"

/* CASes lost in a row before we do without the area (each loss means the
 * word moved: someone claimed or released it meanwhile). */
#define CLAIM_TRIES 4

/* The claim this thread last found held and left alone: found again, it
 * is judged (area.h). Process-local. */
static __thread struct {
	const struct shmkv_slot_shm *slot;
	uint64_t word;
} last_held;

/* May we take over claim @a of slot @s? */
static bool holder_dead(const struct shmkv_slot_shm *s, uint64_t a,
			uint32_t tid, bool judge)
{
	uint32_t holder = SLOT_AREA_TID(a);

	/* Our own thread's (a signal handler inside our own write): live. */
	if (holder == tid)
		return false;
	if (!judge && (last_held.slot != s || last_held.word != a)) {
		last_held.slot = s;
		last_held.word = a;
		return false;
	}
	last_held.slot = NULL;
	return !shmkv__pid_alive(holder);
}

uint64_t shmkv__area_claim_slow(struct shmkv_slot_shm *s, uint32_t tid,
				bool judge)
{
	if (tid != SLOT_AREA_TID(tid))
		return 0; /* a tid beyond Linux's limit: never claim */
	for (int n = 0; n < CLAIM_TRIES; n++) {
		/* Relaxed: the CAS below decides on it. */
		uint64_t a = shmkv__load_relaxed(&s->area), want;

		if (SLOT_AREA_TID(a) == 0)
			want = a | tid;
		else if (holder_dead(s, a, tid, judge))
			/* It may have published number + 1 before it died:
			 * ours will be number + 2. */
			want = SLOT_AREA_WORD(SLOT_AREA_NUM(a) + 1, tid);
		else
			return 0;
		/* Full barrier, as in shmkv__area_claim(). */
		if (shmkv__cas_full(&s->area, a, want) == a)
			return want;
	}
	return 0;
}

/* Recovery's and reclamation's: frees the claim of a dead thread on slot
 * @s. Return: 1 if one was freed. */
int shmkv__area_reclaim(struct shmkv_slot_shm *s)
{
	/* Relaxed: the CAS below decides on it. */
	uint64_t a = shmkv__load_relaxed(&s->area);
	uint32_t holder = SLOT_AREA_TID(a);

	if (holder == 0 || holder == shmkv__self_tid() ||
	    shmkv__pid_alive(holder))
		return 0;
	/* Full barrier: as a takeover, with the number bumped for the same
	 * reason, and released at once. */
	return shmkv__cas_full(&s->area, a,
			       SLOT_AREA_WORD(SLOT_AREA_NUM(a) + 1, 0)) == a;
}
