/*
 * test_lock_cells.c - where a safe lock's grants live: inline values that
 * name lock cells, records past the inline token range, and the cells'
 * lifetime (per-thread parking, shmkv_close, thread exit, fork, a dead
 * holder and recovery). See src/lock_cell.c.
 *
 * Forked children never assert: they _exit() with a code the parent
 * checks.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/mp_census.h"
#include "helpers/testutil.h"
#include "intconv.h"
#include "lock_record.h"
#include "shmkv_lock.h"

#define LONG_LEASE 60000

TestSuite(lock_cells, .init = tu_setup, .fini = tu_teardown);

static struct shmkv_lock handle_on(shmkv_t *kv, const char *name)
{
	struct shmkv_lock lk;

	tu_assert_ok(shmkv_lock_init(kv, &lk, name));
	return lk;
}

/* Blocks allocated in the whole store (cells are blocks). */
static uint64_t blocks_used(void)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(tu_kv, &st));
	return mp_blocks_used(&st);
}

/* The raw value of @key: 1 and an integer in *@v, or 0 (not an integer). */
static int value_int(const char *key, int64_t *v)
{
	char buf[64];
	struct shmkv_value val = { .buf = buf, .cap = sizeof(buf) };

	tu_assert_rc(shmkv_get(tu_kv, key, strlen(key), &val), 1);
	return val.len <= sizeof(buf) && shmkv__string2ll(buf, val.len, v);
}

static struct shmkv_lock_rec grant_of(const char *key)
{
	struct shmkv_lock_rec rec;

	tu_assert_ok(shmkv__lock_read(tu_kv, key, strlen(key), &rec));
	return rec;
}

Test(lock_cells, a_held_lock_is_an_inline_value_naming_a_cell_and_checks_clean)
{
	struct shmkv_lock lk = handle_on(tu_kv, "c");
	uint32_t unit, seq;
	int64_t v;

	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE),
		     SHMKV_LOCK_ACQUIRED);
	cr_assert(value_int("lock.c", &v));
	cr_assert(val_pin_decode(v, &unit, &seq), "value %lld", (long long)v);
	cr_assert_eq(grant_of("lock.c").pid, (uint32_t)getpid());
	cr_assert_eq(grant_of("lock.c").token, 1);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	cr_assert(value_int("lock.c", &v));
	cr_assert_eq(v, -1);
}

Test(lock_cells, tokens_past_the_inline_range_go_to_records_and_keep_rising)
{
	struct shmkv_lock lk = handle_on(tu_kv, "t");
	char start[32];
	int64_t v;
	int n = snprintf(start, sizeof(start), "%lld",
			 (long long)-(LOCK_INLINE_TOKEN_MAX - 1));

	tu_assert_rc(
		shmkv_set(tu_kv, LIT("lock.t"), start, (size_t)n, 0, 0, NULL),
		1);
	/* The last inline token: a cell, then FREE inline. */
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE),
		     SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_token(&lk), (uint64_t)LOCK_INLINE_TOKEN_MAX);
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	cr_assert(value_int("lock.t", &v));
	cr_assert_eq(v, -LOCK_INLINE_TOKEN_MAX);
	/* Past it: a HELD record, then a FREE record. */
	for (uint64_t t = LOCK_INLINE_TOKEN_MAX + 1;
	     t < LOCK_INLINE_TOKEN_MAX + 4; t++) {
		tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE),
			     SHMKV_LOCK_ACQUIRED);
		cr_assert_eq(shmkv_lock_token(&lk), t);
		cr_assert_not(value_int("lock.t", &v));
		cr_assert_eq(grant_of("lock.t").state, SHMKV_LOCK_HELD);
		cr_assert_eq(shmkv_lock_held(&lk), 1);
		tu_assert_rc(shmkv_lock_release(&lk), 0);
		cr_assert_eq(grant_of("lock.t").state, SHMKV_LOCK_FREE);
		cr_assert_eq(grant_of("lock.t").token, t);
	}
}

Test(lock_cells, extend_moves_the_grant_to_a_fresh_cell_with_the_same_token)
{
	struct shmkv_lock lk = handle_on(tu_kv, "e");
	int64_t before, after, end;

	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE),
		     SHMKV_LOCK_ACQUIRED);
	cr_assert(value_int("lock.e", &before));
	end = grant_of("lock.e").deadline_ms;
	tu_assert_ok(shmkv_lock_extend(&lk, SHMKV_LOCK_EXTEND_ADD, 1000));
	cr_assert(value_int("lock.e", &after));
	cr_assert_neq(after, before);
	cr_assert_eq(grant_of("lock.e").deadline_ms, end + 1000);
	cr_assert_eq(grant_of("lock.e").token, 1);
	cr_assert_eq(shmkv_lock_held(&lk), 1);
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

Test(lock_cells, close_frees_every_cell_its_handle_made)
{
	uint64_t base = blocks_used();
	shmkv_t *kv = tu_open(tu_name, 0);
	struct shmkv_lock a = handle_on(kv, "a"), b = handle_on(kv, "b");

	tu_assert_rc(shmkv_lock_try_acquire(&a, LONG_LEASE),
		     SHMKV_LOCK_ACQUIRED);
	tu_assert_rc(shmkv_lock_try_acquire(&b, LONG_LEASE),
		     SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(blocks_used(), base + 2);
	tu_assert_rc(shmkv_lock_release(&a), 0);
	tu_assert_rc(shmkv_lock_release(&b), 0);
	/* One parked for this thread, one back in the pool: both kept. */
	cr_assert_eq(blocks_used(), base + 2);
	shmkv_close(kv);
	cr_assert_eq(blocks_used(), base);
}

struct thread_arg {
	shmkv_t *kv;
	int rc;
};

static void *lock_once(void *p)
{
	struct thread_arg *t = p;
	struct shmkv_lock lk;

	t->rc = shmkv_lock_init(t->kv, &lk, "thr");
	if (t->rc == 0)
		t->rc = shmkv_lock_try_acquire(&lk, LONG_LEASE);
	if (t->rc == 0)
		t->rc = shmkv_lock_release(&lk);
	return NULL;
}

Test(lock_cells, a_thread_that_exits_gives_back_its_parked_cell)
{
	uint64_t base = blocks_used();
	struct thread_arg t = { .kv = tu_open(tu_name, 0), .rc = -1 };
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, lock_once, &t), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	tu_assert_ok(t.rc);
	cr_assert_eq(blocks_used(), base + 1);
	/* Only an unclaimed cell is freed at close: the exiting thread's
	 * destructor must have unclaimed the one it parked. */
	shmkv_close(t.kv);
	cr_assert_eq(blocks_used(), base);
}

/* A thread that parks a cell of one handle, waits while the main thread
 * closes that handle, then locks through another handle of the store. */
struct parked_arg {
	shmkv_t *first, *second;
	int go[2];   /* main -> thread: the first handle is closed */
	int done[2]; /* thread -> main: parked; then: finished */
	int rc;
};

static int lock_cycles(shmkv_t *kv, int n)
{
	struct shmkv_lock lk;
	int rc = shmkv_lock_init(kv, &lk, "park");

	for (int i = 0; rc == 0 && i < n; i++) {
		rc = shmkv_lock_try_acquire(&lk, LONG_LEASE);
		if (rc == 0)
			rc = shmkv_lock_release(&lk);
	}
	return rc;
}

static void *park_then_switch(void *p)
{
	struct parked_arg *t = p;
	char b = 'x';

	t->rc = lock_cycles(t->first, 1);
	if (write(t->done[1], &b, 1) != 1 || read(t->go[0], &b, 1) != 1)
		t->rc = -EIO;
	if (t->rc == 0)
		t->rc = lock_cycles(t->second, 100);
	return NULL;
}

Test(lock_cells, closing_a_handle_frees_the_cells_other_threads_parked_for_it)
{
	uint64_t base = blocks_used();
	struct parked_arg t = { .first = tu_open(tu_name, 0),
				.second = tu_open(tu_name, 0) };
	pthread_t th;
	char b = 'g';

	cr_assert(pipe(t.go) == 0 && pipe(t.done) == 0);
	cr_assert_eq(pthread_create(&th, NULL, park_then_switch, &t), 0);
	cr_assert_eq(read(t.done[0], &b, 1), 1);
	cr_assert_eq(blocks_used(), base + 1, "the thread parked no cell");
	/* Its cell is claimed (parked), named by no lock: freed at close. */
	shmkv_close(t.first);
	cr_assert_eq(blocks_used(), base);
	cr_assert_eq(write(t.go[1], &b, 1), 1);
	cr_assert_eq(pthread_join(th, NULL), 0);
	tu_assert_ok(t.rc);
	/* The stale parked cell did not stop it parking for the new
	 * handle: 100 grants used one cell, parked between them. */
	cr_assert_eq(blocks_used(), base + 1);
	shmkv_close(t.second);
	cr_assert_eq(blocks_used(), base);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

Test(lock_cells, a_forked_child_neither_releases_nor_reuses_the_parents_cells)
{
	struct shmkv_lock lk = handle_on(tu_kv, "f"), other;
	struct shmkv_lock_rec mine;
	pid_t pid;
	int status;

	/* Park a cell in this thread, then hold the lock with another. */
	other = handle_on(tu_kv, "o");
	tu_assert_rc(shmkv_lock_try_acquire(&other, LONG_LEASE),
		     SHMKV_LOCK_ACQUIRED);
	tu_assert_rc(shmkv_lock_release(&other), 0);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE),
		     SHMKV_LOCK_ACQUIRED);
	mine = grant_of("lock.f");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct shmkv_lock_rec r;

		if (shmkv_lock_held(&lk) != 0)
			_exit(10);
		if (shmkv_lock_release(&lk) != SHMKV_LOCK_NOT_OWNER)
			_exit(11);
		/* A grant of its own: a cell of its own, not the parked one. */
		if (shmkv_lock_try_acquire(&other, LONG_LEASE) !=
			    SHMKV_LOCK_ACQUIRED ||
		    shmkv__lock_read(tu_kv, LIT("lock.o"), &r) != 0 ||
		    r.pid != (uint32_t)getpid())
			_exit(12);
		if (shmkv_lock_release(&other) != 0)
			_exit(13);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d",
		  WEXITSTATUS(status));
	cr_assert_eq(shmkv_lock_held(&lk), 1);
	cr_assert_eq(grant_of("lock.f").token, mine.token);
	cr_assert_eq(grant_of("lock.f").pid, mine.pid);
	/* Our parked cell is still ours and still works. */
	tu_assert_rc(shmkv_lock_try_acquire(&other, LONG_LEASE),
		     SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(grant_of("lock.o").pid, (uint32_t)getpid());
	tu_assert_rc(shmkv_lock_release(&other), 0);
	tu_assert_rc(shmkv_lock_release(&lk), 0);
}

Test(lock_cells, a_dead_holders_cell_is_kept_until_its_taker_frees_it)
{
	struct shmkv_lock lk = handle_on(tu_kv, "d");
	struct shmkv_recover_report rep;
	uint64_t base = blocks_used();
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0)
		/* Dies holding the lock (token 1), never releasing. */
		_exit(shmkv_lock_try_acquire(&lk, LONG_LEASE) ==
				      SHMKV_LOCK_ACQUIRED
			      ? 0
			      : 20);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert_eq(grant_of("lock.d").pid, (uint32_t)pid);
	/* The lock still names the dead child's cell: not freed. */
	cr_assert_geq(shmkv_recover(tu_kv, &rep), 0);
	cr_assert_eq(rep.leaked_blocks, 0);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
	cr_assert_eq(blocks_used(), base + 1);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE),
		     SHMKV_LOCK_OWNER_DEAD);
	cr_assert_eq(shmkv_lock_token(&lk), 2);
	/* Nothing names it now: the taker freed it (and its own cell is the
	 * one block in use), so recovery has nothing left to do. */
	cr_assert_eq(blocks_used(), base + 1);
	cr_assert_geq(shmkv_recover(tu_kv, &rep), 0);
	cr_assert_eq(rep.leaked_blocks, 0);
	cr_assert_eq(shmkv_lock_held(&lk), 1);
	tu_assert_rc(shmkv_lock_release(&lk), 0);
}

Test(lock_cells, an_integer_naming_no_cell_is_not_a_lock_and_is_left_alone)
{
	struct shmkv_lock lk = handle_on(tu_kv, "u");
	struct shmkv_lock_rec rec;
	struct tu_snap *snap;
	char v[32];
	int n = snprintf(v, sizeof(v), "%lld",
			 (long long)VAL_PIN_INT(12345, 7));

	/* What a plain SET may write: in the HELD range, naming no cell. */
	tu_assert_rc(shmkv_set(tu_kv, LIT("lock.u"), v, (size_t)n, 0, 0, NULL),
		     1);
	snap = tu_snap_take(tu_kv);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE), -EEXIST);
	tu_assert_rc(shmkv_lock_release(&lk), -EEXIST);
	tu_assert_rc(shmkv__lock_read(tu_kv, LIT("lock.u"), &rec), -EEXIST);
	tu_assert_unchanged(tu_kv, snap);
}
