/*
 * floors.c - what any command on shared memory costs at least, timed the
 * way bench_core times a command: a bare CAS, a bare exchange, a robust
 * mutex lock+unlock, and one step of a dependent random load (see bench.h).
 */
#include "bench.h"

#include <errno.h>

#include <urcu/uatomic.h>

const char *const bench_floor_name[BENCH_FLOORS] = { "cas", "xchg",
						     "mutex_cycle",
						     "dependent_load" };

int bench_floors_init(struct bench_floors *f, size_t chase_bytes, size_t nodes)
{
	int err;

	/* The two words and the mutex share a page, a cache line each. */
	f->words = bench_shm_alloc(4096);
	if (!f->words)
		return -ENOMEM;
	f->mutex = (pthread_mutex_t *)(f->words + 16);
	err = bench_robust_mutex_init(f->mutex);
	return err ? err
		   : bench_chase_init(&f->chase, chase_bytes, nodes,
				      0x2545f4914f6cdd1dull);
}

static uint64_t floor_op(struct bench_floors *f, enum bench_floor which,
			 uint64_t *pos)
{
	uint64_t v;

	switch (which) {
	case BENCH_FLOOR_CAS:
		/* Full-barrier lock cmpxchg, as a command's linearization
		 * point; it always succeeds: nobody else writes the word. */
		v = uatomic_read(&f->words[0]);
		return uatomic_cmpxchg(&f->words[0], v, v + 1);
	case BENCH_FLOOR_XCHG:
		return uatomic_xchg(&f->words[8], *pos);
	case BENCH_FLOOR_MUTEX:
		v = (uint64_t)pthread_mutex_lock(f->mutex);
		pthread_mutex_unlock(f->mutex);
		return v;
	default:
		*pos = *(const uint64_t *)(f->chase.mem + *pos);
		return *pos;
	}
}

void bench_floor_run(struct bench_floors *f, enum bench_floor which,
		     uint64_t ops, uint64_t overhead, struct bench_hist *h)
{
	uint64_t acc = 0, pos = f->chase.pos;

	for (uint64_t i = 0; i < ops; i++) {
		uint64_t t0 = bench_tick_begin(), t;

		acc += floor_op(f, which, &pos);
		t = bench_tick_end() - t0;
		bench_hist_add(h, bench_sample(t, overhead, 1), 1);
	}
	f->chase.pos = pos;
	bench_keep(acc);
}
