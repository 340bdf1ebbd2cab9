/*
 * test_lock_races.c - the safe lock's dangerous interleavings, forced with
 * pause points (src/fault.h) instead of hoped for in a stress run.
 *
 * A child process (the taker, or a reader) runs one lock call with a pause
 * hook: at the named step it tells the parent and waits; the parent (the
 * holder, another process) then does exactly the grants and releases that
 * make the interleaving dangerous, and lets the child go on. The child
 * never asserts: it sends its result back through a pipe.
 *
 *  - Pin ABA: a pin carries 16 bits of its cell's claim sequence, so 2^16
 *    grants bring a value word back to the same bits. A taker that judged
 *    an expired grant and is paused before (or while visiting, after) its
 *    re-validation must not take the holder's new, running grant.
 *  - Lost races are not errors: a reader whose every cell read loses to a
 *    release and re-acquire answers "busy" (try), keeps waiting
 *    (acquire), or still lists the lock (lock_list); never -EEXIST.
 *
 * Pause points exist only in a build with -DSHMKV_FAULT_INJECTION (make
 * FAULT=1, into build-fault/); elsewhere every test here is skipped.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/paused_child.h"
#include "helpers/testutil.h"
#include "fault.h"
#include "keyref.h"
#include "internal.h"
#include "shmkv_lock.h"

TestSuite(pausepoint_lock, .init = tu_setup, .fini = tu_teardown);

#define LONG_LEASE 60000
#define EPOCH	   65536 /* grants after which a pin's bits come back */

enum call { CALL_TRY, CALL_ACQUIRE, CALL_LIST };

static int count_lock(const struct shmkv_lock_info *info, void *arg)
{
	(void)info;
	++*(int *)arg;
	return 0;
}

/* In the child: one call (an enum call) on lock "r" of a fresh handle;
 * its result. */
static int child_call(void *arg)
{
	enum call call = *(const enum call *)arg;
	shmkv_t *kv;
	struct shmkv_lock lk;
	int rc, listed = 0;

	if (shmkv_open(tu_name, 0, &kv) != 0 ||
	    shmkv_lock_init(kv, &lk, "r") != 0)
		return -1000;
	if (call == CALL_LIST) {
		rc = shmkv_lock_list(kv, count_lock, &listed);
		rc = rc < 0 ? rc : listed;
	} else {
		rc = call == CALL_TRY ? shmkv_lock_try_acquire(&lk, LONG_LEASE)
				      : shmkv_lock_acquire(&lk, LONG_LEASE);
		if (rc >= 0 && shmkv_lock_release(&lk) != 0)
			rc = -1001;
	}
	return rc;
}

static const enum call calls[] = { CALL_TRY, CALL_ACQUIRE, CALL_LIST };

static struct tu_child start_child(enum call call, const char *at, int pauses)
{
	return tu_child_start(child_call, (void *)&calls[call], at, pauses);
}

static uint64_t lock_word(void)
{
	struct shmkv_value v = tu_value_for(tu_kv);
	struct shmkv_keyref ref;

	/* A GET through a prepared key leaves its slot in the reference. */
	tu_assert_ok(shmkv_key_prepare(tu_kv, &ref, LIT("lock.r")));
	tu_assert_rc(shmkv_key_get(tu_kv, &ref, &v), 1);
	return shmkv__load_acquire(
		&shmkv__slot(shmkv__table_cmd(tu_kv), shmkv__kref(&ref)->slot)->value);
}

/* The holder's grant has run out (lease 1 ms, plus the coarse clock's
 * margin of at most a few ticks). */
static void hold_expired(struct shmkv_lock *h)
{
	tu_assert_rc(shmkv_lock_try_acquire(h, 1), SHMKV_LOCK_ACQUIRED);
	tu_sleep_ms(40);
	cr_assert_eq(shmkv_lock_held(h), 0, "the lease did not run out");
}

/* Release, then @n grants of long leases, released but the last. */
static void cycle(struct shmkv_lock *h, int n)
{
	tu_assert_ok(shmkv_lock_release(h));
	for (int i = 0; i < n; i++) {
		tu_assert_rc(shmkv_lock_try_acquire(h, LONG_LEASE),
			     SHMKV_LOCK_ACQUIRED);
		if (i + 1 < n)
			cr_assert_eq(shmkv_lock_release(h), 0, "grant %d", i);
	}
}

/* After the race: the holder still holds, alone, and gives it back. */
static void assert_holder_kept(struct shmkv_lock *h, uint64_t token)
{
	cr_assert_eq(shmkv_lock_held(h), 1, "the holder lost its grant");
	cr_assert_eq(shmkv_lock_token(h), token);
	tu_assert_ok(shmkv_lock_release(h));
}

/*
 * A taker judges the holder's expired grant and stops at @at; the holder
 * meanwhile gives it back and takes 2^16 grants on its parked cell, which
 * brings a pin's bits back, now for a running lease. Return: whether the
 * value word was the judged one again.
 */
static bool aba_against_paused_taker(struct shmkv_lock *h, const char *at)
{
	struct tu_child c;
	uint64_t judged;
	bool same;

	tu_assert_ok(shmkv_lock_init(tu_kv, h, "r"));
	hold_expired(h);
	judged = lock_word();
	c = start_child(CALL_TRY, at, 1);
	tu_child_await(&c);
	cycle(h, EPOCH);
	same = lock_word() == judged;
	tu_child_let_go(&c);
	/* Either way the taker must find the lock busy, not take it. */
	tu_assert_rc(tu_child_finish(&c), -EBUSY);
	assert_holder_kept(h, 1 + EPOCH);
	return same;
}

Test(pausepoint_lock,
     a_taker_paused_before_its_visit_never_takes_a_grant_whose_pin_came_back)
{
	struct shmkv_lock h;

	NEED_PAUSE_POINTS();
	/* Not visiting yet: nothing stops the bits from coming back; the
	 * taker's re-validation of the full claim must catch it. */
	cr_assert(aba_against_paused_taker(&h, "lock_takeover_judged"),
		  "the pin's bits did not come back");
}

Test(pausepoint_lock,
     a_taker_paused_while_visiting_blocks_the_cell_from_repeating_its_pin)
{
	struct shmkv_lock h;

	NEED_PAUSE_POINTS();
	/* At the epoch's start the holder sees the visit and moves to
	 * another cell: the bits do not come back while it visits. */
	cr_assert(!aba_against_paused_taker(&h, "lock_takeover_visiting"),
		  "a visited cell repeated its pin");
	/* The blocked cell comes back to use once the visit has ended. */
	tu_assert_rc(shmkv_lock_try_acquire(&h, LONG_LEASE),
		     SHMKV_LOCK_ACQUIRED);
	cycle(&h, EPOCH + 1);
	tu_assert_ok(shmkv_lock_release(&h));
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

/* The child's call meets a release and a re-acquire between its read of
 * the value and its read of the cell, @rounds times in a row. */
static int lose_every_cell_read(enum call call, int rounds)
{
	struct shmkv_lock h;
	struct tu_child c;

	tu_assert_ok(shmkv_lock_init(tu_kv, &h, "r"));
	tu_assert_rc(shmkv_lock_try_acquire(&h, LONG_LEASE),
		     SHMKV_LOCK_ACQUIRED);
	c = start_child(call, "lock_read_cell", rounds);
	for (int i = 0; i < rounds && tu_child_paused(&c); i++) {
		cycle(&h, 1);
		tu_child_let_go(&c);
	}
	/* A blocked acquirer gets the lock once it is given back. */
	if (call == CALL_ACQUIRE)
		tu_assert_ok(shmkv_lock_release(&h));
	return tu_child_finish(&c);
}

Test(pausepoint_lock, a_try_that_loses_every_cell_read_is_busy_not_an_error)
{
	NEED_PAUSE_POINTS();
	tu_assert_rc(lose_every_cell_read(CALL_TRY, 200), -EBUSY);
}

Test(pausepoint_lock, an_acquire_that_loses_every_cell_read_keeps_waiting)
{
	NEED_PAUSE_POINTS();
	tu_assert_rc(lose_every_cell_read(CALL_ACQUIRE, 200),
		     SHMKV_LOCK_ACQUIRED);
}

Test(pausepoint_lock, lock_list_shows_a_lock_whose_every_cell_read_loses)
{
	NEED_PAUSE_POINTS();
	tu_assert_rc(lose_every_cell_read(CALL_LIST, 200), 1);
}

/*
 * fork() while another thread holds the lock layer's process-local mutex
 * (it guards the list of open handles' cell pools): the child must not
 * inherit it locked. The holder pauses inside it; a helper thread lets it
 * go 100 ms later; meanwhile the main thread forks, and the child opens
 * the store and locks. Without atfork handlers the child would wait
 * forever for a mutex no thread of it will ever release.
 */
static pthread_t pool_holder;
static int holder_in[2], holder_go[2];

#ifdef SHMKV_FAULT_INJECTION
static void hold_pools(const char *name)
{
	char b = 'h';

	if (strcmp(name, "lock_pools_locked") != 0 ||
	    !pthread_equal(pthread_self(), pool_holder))
		return;
	if (write(holder_in[1], &b, 1) != 1 || read(holder_go[0], &b, 1) != 1)
		abort();
}
#endif

static void *lock_on_new_handle(void *arg)
{
	shmkv_t *kv;
	struct shmkv_lock lk;
	int *rc = arg;

	*rc = shmkv_open(tu_name, 0, &kv);
	if (*rc == 0) {
		*rc = shmkv_lock_init(kv, &lk, "f");
		if (*rc == 0)
			*rc = shmkv_lock_try_acquire(&lk, LONG_LEASE);
		if (*rc == 0)
			*rc = shmkv_lock_release(&lk);
		shmkv_close(kv);
	}
	return NULL;
}

static void *release_later(void *arg)
{
	char b = 'g';

	(void)arg;
	tu_sleep_ms(100);
	if (write(holder_go[1], &b, 1) != 1)
		abort();
	return NULL;
}

Test(pausepoint_lock,
     a_fork_while_a_thread_holds_the_pool_list_gives_a_usable_child)
{
	pthread_t releaser;
	int rc = -1, status = 0;
	char b;
	pid_t pid;

	NEED_PAUSE_POINTS();
	cr_assert(pipe(holder_in) == 0 && pipe(holder_go) == 0);
#ifdef SHMKV_FAULT_INJECTION
	shmkv__pause_hook = hold_pools;
#endif
	cr_assert_eq(
		pthread_create(&pool_holder, NULL, lock_on_new_handle, &rc), 0);
	cr_assert_eq(read(holder_in[0], &b, 1), 1, "the holder never paused");
	cr_assert_eq(pthread_create(&releaser, NULL, release_later, NULL), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int crc;

		lock_on_new_handle(&crc);
		_exit(crc == 0 ? 0 : 1);
	}
	for (int i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) == 0; i++)
		tu_sleep_ms(10);
	if (kill(pid, 0) == 0 && waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		cr_assert_fail("the child deadlocked (10 s)");
	}
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "child status %d", status);
	cr_assert_eq(pthread_join(pool_holder, NULL), 0);
	cr_assert_eq(pthread_join(releaser, NULL), 0);
	tu_assert_ok(rc);
}
