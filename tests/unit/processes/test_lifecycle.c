/*
 * test_lifecycle.c - what processes that come and go leave in a store:
 * the lock cells of processes that exit without shmkv_close, slots of a
 * first store that failed, the count of a waiter killed while blocked,
 * and the results of lock calls under contention. The long form of all
 * this is tests/programs/lifecycle_soak.c.
 *
 * Real processes: fork, and fork + exec of tests/lifecycle_worker. Nobody
 * calls shmkv_recover. Children never assert: they report through their
 * exit status and a shared area, and the parent asserts once they are
 * reaped. Every wait is bounded (a hang guard); none is an assertion.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/mp.h"
#include "helpers/mp_census.h"
#include "helpers/lifecycle.h"
#include "shmkv_lock.h"

#define LEASE	 60000 /* ms: only a release or a death ends a grant */
#define POLL_MAX 10000 /* polls 1 ms apart: 10 s, only to end a hang */

TestSuite(lifecycle, .init = tu_setup, .fini = tu_teardown);

/* Reaps @pid; returns its wait status. */
static int reap(pid_t pid)
{
	int st;

	cr_assert_eq(waitpid(pid, &st, 0), pid, "waitpid %d", (int)pid);
	return st;
}

static const char *describe(int st, char *buf, size_t cap)
{
	if (WIFSIGNALED(st))
		snprintf(buf, cap, "died of signal %d", WTERMSIG(st));
	else
		snprintf(buf, cap, "exited %d", WEXITSTATUS(st));
	return buf;
}

static uint64_t blocks_used(shmkv_t *kv)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(kv, &st));
	return mp_blocks_used(&st);
}

/* Slots that hold something: all but the empty ones. */
static uint64_t slots_in_use(shmkv_t *kv)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(kv, &st));
	return st.live_keys + st.tombstones + st.expired + st.pending +
	       st.corrupt;
}

/* shmkv_lock_list callback: the waiter count of lock "L" (UINT32_MAX if
 * the lock is not listed). */
static int waiters_of_L(const struct shmkv_lock_info *info, void *arg)
{
	if (info->name_len == 1 && info->name[0] == 'L')
		*(uint32_t *)arg = info->waiters;
	return 0;
}

static uint32_t waiters(shmkv_t *kv)
{
	uint32_t w = UINT32_MAX;

	cr_assert_geq(shmkv_lock_list(kv, waiters_of_L, &w), 1);
	return w;
}

/* Polls until "L" shows a waiter (its futex word is marked: someone may
 * sleep on it; the mark says nothing about how many). */
static void wait_for_waiter(shmkv_t *kv)
{
	for (int i = 0; i < POLL_MAX; i++) {
		uint32_t w = waiters(kv);

		if (w != UINT32_MAX && w >= 1)
			return;
		tu_sleep_ms(1);
	}
	cr_assert_fail("never saw a process blocked on lock L");
}

/* Polls until process @pid sleeps (state S in /proc: between its tries,
 * a blocked acquirer is asleep on the futex word). */
static void wait_asleep(pid_t pid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < POLL_MAX; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = '\0';
		p = strrchr(buf, ')');
		if (p != NULL && p[1] == ' ' && p[2] == 'S')
			return;
		tu_sleep_ms(1);
	}
	cr_assert_fail("process %d never went to sleep", (int)pid);
}

static struct shmkv_lock lock_L(shmkv_t *kv)
{
	struct shmkv_lock lk;

	tu_assert_ok(shmkv_lock_init(kv, &lk, "L"));
	return lk;
}

/*
 * a. Lock cells of processes that exit without shmkv_close.
 */

#define SHORT_LIVED 2500
/* Value blocks the short-lived processes may leave in use: a library may
 * reclaim a dead process's lock cell lazily, but never keep one per
 * process that ever ran. */
#define LEAK_BOUND 16

/* exit() and return from main run the test's atexit hooks, which unlink
 * its stores: those two ways out need a program of their own. */
static pid_t exec_once(const char *name, const char *how)
{
	char path[PATH_MAX];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/tests/lifecycle_worker",
		 SHMKV_BUILD_DIR);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		execl(path, path, "once", name, "L", how, (char *)NULL);
		_exit(127);
	}
	cr_assert_gt(pid, 0, "fork");
	return pid;
}

/* A forked child: what "once" does, then _exit() or abort(). */
static pid_t fork_once(const char *name, bool do_abort)
{
	struct rlimit no_core = { 0, 0 };
	struct shmkv_lock lk;
	shmkv_t *kv;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork");
	if (pid > 0)
		return pid;
	if (shmkv_open(name, 0, &kv) || shmkv_lock_init(kv, &lk, "L"))
		_exit(WORKER_OPEN);
	if (shmkv_lock_acquire(&lk, LEASE) != SHMKV_LOCK_ACQUIRED ||
	    shmkv_lock_release(&lk) != 0)
		_exit(WORKER_LOCK);
	if (!do_abort)
		_exit(0);
	/* The default action, not the test's cleanup handler (which would
	 * unlink the store), and no core file. */
	signal(SIGABRT, SIG_DFL);
	setrlimit(RLIMIT_CORE, &no_core);
	abort();
}

/* Starts short-lived process @i of the rotation exit(), return, _exit(),
 * abort(); returns whether it ended as told. */
static bool short_lived(const char *name, int i, int *st)
{
	pid_t pid = i % 4 == 0	 ? exec_once(name, "exit")
		    : i % 4 == 1 ? exec_once(name, "return")
				 : fork_once(name, i % 4 == 3);

	*st = reap(pid);
	if (i % 4 == 3)
		return WIFSIGNALED(*st) && WTERMSIG(*st) == SIGABRT;
	return WIFEXITED(*st) && WEXITSTATUS(*st) == 0;
}

Test(lifecycle, lock_cells_do_not_leak_across_short_lived_processes)
{
	/* Classes of 32, 64 and 88 bytes, one 64 KiB page each: a lock
	 * cell takes a 64-byte block, so 1024 leaked cells fill its class. */
	struct shmkv_config cfg = tu_config(1024, 0, 64, 3 * 65536);
	char name[TU_NAME_CAP], why[32] = "";
	shmkv_t *kv = tu_create(&cfg, name);
	uint64_t before = blocks_used(kv), after;
	int failed = 0, first = 0, st;

	for (int i = 0; i < SHORT_LIVED; i++)
		if (!short_lived(name, i, &st) && failed++ == 0) {
			first = i + 1;
			describe(st, why, sizeof(why));
		}
	after = blocks_used(kv);
	cr_expect_eq(failed, 0,
		     "%d of %d processes did not end as told, the first "
		     "(process %d) %s (3: open failed, 6: a lock call failed)",
		     failed, SHORT_LIVED, first, why);
	cr_expect_leq(after - before, LEAK_BOUND,
		      "%d processes that took and released a lock and exited "
		      "without shmkv_close left %llu value blocks in use "
		      "(bound %d)",
		      SHORT_LIVED, (unsigned long long)(after - before),
		      LEAK_BOUND);
	/* Values in each class: 32, 64 (the lock cells') and 88 bytes. */
	tu_assert_rc(shmkv_set(kv, LIT("new.a"), LIT("eight.by"), 0, 0, NULL),
		     1);
	tu_assert_rc(
		shmkv_set(kv, LIT("new.b"), tu_fill(40, 'b'), 40, 0, 0, NULL),
		1);
	tu_assert_rc(
		shmkv_set(kv, LIT("new.c"), tu_fill(64, 'c'), 64, 0, 0, NULL),
		1);
	shmkv_close(kv);
}

/*
 * b. A first store that fails leaves no slot behind.
 */

#define FAILED_SETS 500
/* Keys another process must then insert into the 1024 slots (no probe
 * limit below the table size): 90% of them. */
#define REFILL (1024 * 9 / 10)

struct refill {
	int done; /* keys inserted */
	int rc;	  /* the first SET that did not return 1 */
};

static int refill_child(const char *name, struct refill *r)
{
	char key[16], val[16];
	shmkv_t *kv;

	if (shmkv_open(name, 0, &kv))
		return CHILD_OPEN;
	for (r->done = 0; r->done < REFILL; r->done++) {
		size_t kl = tu_fmt(key, sizeof(key), "n", (unsigned)r->done);
		int vl = snprintf(val, sizeof(val), "%d", r->done);

		r->rc = shmkv_set(kv, key, kl, val, (size_t)vl, 0, 0, NULL);
		if (r->rc != 1)
			return CHILD_CMD;
	}
	return 0;
}

Test(lifecycle, a_failed_first_store_leaves_no_pinned_slot)
{
	/* value_max 1024: seven classes of one 64 KiB page each, so the top
	 * class (1048-byte blocks) holds 62 values. */
	struct shmkv_config cfg = tu_config(1024, 0, 0, 7 * 65536);
	struct refill *r = mp_shared_map(sizeof(*r));
	char name[TU_NAME_CAP], key[16], why[32];
	shmkv_t *kv = tu_create(&cfg, name);
	const char *big = tu_fill(1024, 'v');
	int nbig = 0, wrong = 0, grew = 0, present = 0, first_wrong = 0;
	uint64_t in_use, most = 0;
	pid_t pid;
	int st;

	for (;; nbig++) {
		size_t kl = tu_fmt(key, sizeof(key), "big", (unsigned)nbig);
		int rc = shmkv_set(kv, key, kl, big, 1024, 0, 0, NULL);

		if (rc == -ENOMEM)
			break;
		tu_assert_rc(rc, 1);
		cr_assert_lt(nbig, 1024, "value storage never ran out");
	}
	in_use = slots_in_use(kv);
	for (int i = 0; i < FAILED_SETS; i++) {
		size_t kl = tu_fmt(key, sizeof(key), "new", (unsigned)i);
		int rc = shmkv_set(kv, key, kl, big, 1024, 0, 0, NULL);
		uint64_t now = slots_in_use(kv);

		if (rc != -ENOMEM && wrong++ == 0)
			first_wrong = rc;
		grew += now != in_use;
		most = now > most ? now : most;
		present += shmkv_exists(kv, key, kl) != 0;
	}
	cr_expect_eq(wrong, 0,
		     "%d of %d SETs of a new key gave %s, not -ENOMEM", wrong,
		     FAILED_SETS, tu_rcname(first_wrong));
	cr_expect_eq(
		grew, 0,
		"after %d of %d failed SETs of new keys more slots were in "
		"use than the %llu before (up to %llu): a failed command "
		"must leave the store unchanged",
		grew, FAILED_SETS, (unsigned long long)in_use,
		(unsigned long long)most);
	cr_expect_eq(present, 0, "%d keys exist after their SET failed",
		     present);
	for (int i = 0; i < nbig; i++) {
		size_t kl = tu_fmt(key, sizeof(key), "big", (unsigned)i);

		tu_assert_rc(shmkv_del(kv, key, kl), 1);
	}
	pid = fork();
	cr_assert_geq(pid, 0, "fork");
	if (pid == 0)
		_exit(refill_child(name, r));
	st = reap(pid);
	cr_assert(mp_status_ok(st),
		  "another process could insert only %d of %d keys into the "
		  "emptied %u-slot table: SET gave %s (child %s)",
		  r->done, REFILL, cfg.slots, tu_rcname(r->rc),
		  describe(st, why, sizeof(why)));
	shmkv_close(kv);
}

/*
 * c. A waiter killed while blocked.
 */

/* A child blocked in shmkv_lock_acquire(L) until killed. */
static pid_t blocked_waiter(void)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork");
	if (pid == 0) {
		struct shmkv_lock lk;
		shmkv_t *kv;

		if (shmkv_open(tu_name, 0, &kv) ||
		    shmkv_lock_init(kv, &lk, "L"))
			_exit(CHILD_OPEN);
		_exit(shmkv_lock_acquire(&lk, LEASE) == 0 ? 0 : CHILD_CMD);
	}
	return pid;
}

static void kill_and_reap(pid_t pid)
{
	char why[32];
	int st;

	kill(pid, SIGKILL);
	st = reap(pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		  "the waiter %s before it was killed",
		  describe(st, why, sizeof(why)));
}

Test(lifecycle, a_killed_waiter_is_no_longer_counted_after_two_cycles)
{
	struct shmkv_lock lk = lock_L(tu_kv);
	pid_t pid;

	tu_assert_rc(shmkv_lock_try_acquire(&lk, LEASE), SHMKV_LOCK_ACQUIRED);
	pid = blocked_waiter();
	wait_for_waiter(tu_kv);
	kill_and_reap(pid);
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	/* A stale mark may cost a wake-up nobody takes; then it is gone. */
	for (int i = 0; i < 2; i++) {
		tu_assert_rc(shmkv_lock_timed_acquire(&lk, LEASE, 10000),
			     SHMKV_LOCK_ACQUIRED);
		tu_assert_rc(shmkv_lock_release(&lk), 0);
	}
	cr_assert_eq(waiters(tu_kv), 0,
		     "lock L is idle, its only waiter was SIGKILLed and two "
		     "acquire/release cycles followed, yet shmkv_lock_list "
		     "counts %u waiters",
		     waiters(tu_kv));
}

Test(lifecycle, a_waiter_still_gets_the_lock_after_another_waiter_is_killed)
{
	struct shmkv_lock lk = lock_L(tu_kv);
	char why[32];
	pid_t doomed, survivor;
	int st;

	tu_assert_rc(shmkv_lock_try_acquire(&lk, LEASE), SHMKV_LOCK_ACQUIRED);
	doomed = blocked_waiter();
	wait_for_waiter(tu_kv);
	fflush(NULL);
	survivor = fork();
	cr_assert_geq(survivor, 0, "fork");
	if (survivor == 0) {
		struct shmkv_lock mine;
		shmkv_t *kv;

		if (shmkv_open(tu_name, 0, &kv) ||
		    shmkv_lock_init(kv, &mine, "L"))
			_exit(CHILD_OPEN);
		/* A generous limit: only a guard against a hang. */
		if (shmkv_lock_timed_acquire(&mine, LEASE, 30000) !=
		    SHMKV_LOCK_ACQUIRED)
			_exit(CHILD_CMD);
		_exit(shmkv_lock_release(&mine) == 0 ? 0 : CHILD_VALUE);
	}
	wait_for_waiter(tu_kv);
	wait_asleep(survivor);
	kill_and_reap(doomed);
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	st = reap(survivor);
	cr_assert(mp_status_ok(st),
		  "the surviving waiter %s (11: its acquire gave up after "
		  "30 s, 12: release failed)",
		  describe(st, why, sizeof(why)));
}

/*
 * d. Lock calls under contention.
 */

#define TRIERS	   3 /* children 0..2: shmkv_lock_try_acquire / release */
#define WAITERS	   3 /* children 3..5: shmkv_lock_acquire / release */
#define CYCLERS	   (TRIERS + WAITERS)
#define LISTER	   CYCLERS /* child 6: shmkv_lock_list */
#define CONTEND_MS 2000

struct cycler {
	uint64_t grants, busy;
	uint64_t bad, bad_release; /* results it may not give */
	int first_bad, first_bad_release;
};

struct contend {
	struct report rep[MAXPROC];
	char name[TU_NAME_CAP];
	pid_t parent;
	atomic_uint ready, stop, done;
	_Atomic uint64_t counter; /* incremented in every section */
	struct cycler c[CYCLERS];
	uint64_t listings, missed, list_bad;
	int first_list_bad;
};

static void count(uint64_t *n, int *first, int rc)
{
	if ((*n)++ == 0)
		*first = rc;
}

/* A waiter may only be granted the lock: it is never held by a dead
 * process, nor past its lease. A trier may also find it busy. */
static void cycle(struct shmkv_lock *lk, struct cycler *c,
		  _Atomic uint64_t *counter, bool trier)
{
	int rc = trier ? shmkv_lock_try_acquire(lk, LEASE)
		       : shmkv_lock_acquire(lk, LEASE);

	if (rc == -EBUSY && trier) {
		c->busy++;
		return;
	}
	if (rc != SHMKV_LOCK_ACQUIRED) {
		count(&c->bad, &c->first_bad, rc);
		return;
	}
	/* A section of a few nanoseconds: a holder that releases and takes
	 * the lock again at once is the hardest case for a reader of its
	 * grant. Load and store, not an atomic add: right only if the
	 * lock's barriers order the holders one after another. */
	atomic_store_explicit(
		counter,
		atomic_load_explicit(counter, memory_order_relaxed) + 1,
		memory_order_relaxed);
	c->grants++;
	rc = shmkv_lock_release(lk);
	if (rc != 0)
		count(&c->bad_release, &c->first_bad_release, rc);
}

static int count_L(const struct shmkv_lock_info *info, void *arg)
{
	*(int *)arg += info->name_len == 1 && info->name[0] == 'L';
	return 0;
}

static void list_once(shmkv_t *kv, struct contend *a)
{
	int seen = 0, rc = shmkv_lock_list(kv, count_L, &seen);

	a->listings++;
	if (rc < 0)
		count(&a->list_bad, &a->first_list_bad, rc);
	else if (seen != 1)
		a->missed++;
}

static int contend_child(int idx, void *arg)
{
	struct contend *a = arg;
	struct shmkv_lock lk;
	shmkv_t *kv;
	int rc = mp_child_open(a->name, &kv, &a->rep[idx]);

	if (rc)
		return rc;
	if (shmkv_lock_init(kv, &lk, "L"))
		return CHILD_OPEN;
	if (mp_child_gather(&a->ready, CYCLERS + 1, a->parent))
		return CHILD_STUCK;
	while (!atomic_load(&a->stop)) {
		if (idx == LISTER)
			list_once(kv, a);
		else
			cycle(&lk, &a->c[idx], &a->counter, idx < TRIERS);
	}
	atomic_fetch_add(&a->done, 1);
	return 0;
}

static void assert_cyclers(const struct contend *a)
{
	for (int i = 0; i < CYCLERS; i++) {
		const struct cycler *c = &a->c[i];
		const char *how = i < TRIERS ? "shmkv_lock_try_acquire"
					     : "shmkv_lock_acquire";

		cr_expect_eq(c->bad, 0,
			     "process %d: %s gave %llu results other than "
			     "SHMKV_LOCK_ACQUIRED%s (the first: %s), beside "
			     "%llu grants and %llu -EBUSY",
			     i, how, (unsigned long long)c->bad,
			     i < TRIERS ? " or -EBUSY" : "",
			     tu_rcname(c->first_bad),
			     (unsigned long long)c->grants,
			     (unsigned long long)c->busy);
		cr_expect_eq(c->bad_release, 0,
			     "process %d: %llu releases failed (the first: %s)",
			     i, (unsigned long long)c->bad_release,
			     tu_rcname(c->first_bad_release));
	}
}

Test(lifecycle, lock_calls_never_report_a_false_error_under_contention)
{
	struct contend *a = mp_shared_map(sizeof(*a));
	struct shmkv_lock lk = lock_L(tu_kv);
	uint64_t grants = 0;
	struct team t;
	int rc;

	/* The lock exists before anyone lists it. */
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LEASE), SHMKV_LOCK_ACQUIRED);
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	memcpy(a->name, tu_name, sizeof(a->name));
	a->parent = getpid();
	mp_team_start(&t, CYCLERS + 1, contend_child, a);
	tu_assert_ok(mp_parent_wait(&t, &a->ready, CYCLERS + 1));
	tu_sleep_ms(CONTEND_MS);
	atomic_store(&a->stop, 1);
	/* A hang guard: a process stuck in a lock call is killed. */
	rc = mp_parent_wait(&t, &a->done, CYCLERS + 1);
	mp_team_finish(&t, rc != 0);
	tu_assert_ok(rc);
	mp_team_assert_ok(&t, a->rep);
	assert_cyclers(a);
	cr_expect_eq(
		a->list_bad + a->missed, 0,
		"shmkv_lock_list failed %llu times (the first: %s) and "
		"did not list the lock %llu times, of %llu listings",
		(unsigned long long)a->list_bad, tu_rcname(a->first_list_bad),
		(unsigned long long)a->missed, (unsigned long long)a->listings);
	for (int i = 0; i < CYCLERS; i++)
		grants += a->c[i].grants;
	cr_assert_eq(atomic_load(&a->counter), grants,
		     "the counter is %llu after %llu sections under the lock",
		     (unsigned long long)atomic_load(&a->counter),
		     (unsigned long long)grants);
}
