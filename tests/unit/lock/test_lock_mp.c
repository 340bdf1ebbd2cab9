/*
 * test_lock_mp.c - locks across real processes: exclusion, holders killed
 * or stopped at random points, and the two races of the SETNX page.
 *
 * The processes are build/tests/lock_worker, fork+exec'd (see its header
 * for the modes and the keys it reports through). Children never assert:
 * the parent reads their exit status and reports, then asserts. Every wait
 * is bounded by a count of polls, so a hang fails instead of hanging; no
 * assertion depends on how long anything took (latencies are printed).
 */
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers/mp_census.h"
#include "helpers/rng.h"
#include "helpers/testutil.h"
#include "lock_record.h"
#include "shmkv_lock.h"

#define NPROC	 4
#define POLL_MAX 200000 /* 50 us apart: 10 s, only to end a hang */

static pid_t spawn(const char *mode, const char *a1, const char *a2,
		   const char *a3)
{
	char path[PATH_MAX];
	char *argv[] = { "lock_worker", (char *)mode, tu_name,	  "L",
			 (char *)a1,	(char *)a2,   (char *)a3, NULL };
	pid_t pid;

	snprintf(path, sizeof(path), "%s/tests/lock_worker", SHMKV_BUILD_DIR);
	pid = fork();
	if (pid == 0) {
		execv(path, argv);
		_exit(127);
	}
	cr_assert_gt(pid, 0, "fork failed");
	return pid;
}

/* Reaps @pid; returns its exit code, or 128 + signal. */
static int reap(pid_t pid)
{
	int st;

	cr_assert_eq(waitpid(pid, &st, 0), pid, "waitpid");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void reap_ok(pid_t pid, const char *what)
{
	int code = reap(pid);

	cr_assert_eq(code, 0, "%s worker %d exited with %d (see stderr)", what,
		     (int)pid, code);
}

static int64_t get_int(const char *key)
{
	char buf[32];
	struct shmkv_value v = { .buf = buf, .cap = sizeof(buf) - 1 };

	if (shmkv_get(tu_kv, key, strlen(key), &v) != 1)
		return INT64_MIN;
	buf[v.len] = '\0';
	return strtoll(buf, NULL, 10);
}

static void set_int(const char *key, int64_t v)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%lld", (long long)v);

	tu_assert_rc(
		shmkv_set(tu_kv, key, strlen(key), buf, (size_t)n, 0, 0, NULL),
		1);
}

static void pause_us(long us)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = us * 1000 };

	nanosleep(&ts, NULL);
}

/* Polls until @key holds at least @want; fails the test after POLL_MAX. */
static void wait_int(const char *key, int64_t want)
{
	for (int i = 0; i < POLL_MAX; i++) {
		int64_t v = get_int(key);

		if (v != INT64_MIN && v >= want)
			return;
		pause_us(50);
	}
	cr_assert_fail("%s never reached %lld", key, (long long)want);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void print_spread(const char *what, int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_i64);
	fprintf(stderr, "# %s over %d rounds: median %lld, max %lld\n", what, n,
		(long long)v[n / 2], (long long)v[n - 1]);
}

/* The lock "L"'s current grant, whatever its encoding. */
static struct shmkv_lock_rec get_rec(void)
{
	struct shmkv_lock_rec rec;

	tu_assert_ok(shmkv__lock_read(tu_kv, LIT("lock.L"), &rec));
	return rec;
}

/* shmkv_lock_list callback: the waiter count of lock "L". */
static int lock_waiters_of_L(const struct shmkv_lock_info *info, void *arg)
{
	if (info->name_len == 1 && info->name[0] == 'L')
		*(uint32_t *)arg = info->waiters;
	return 0;
}

TestSuite(lock_mp, .init = tu_setup, .fini = tu_teardown);

static struct shmkv_lock handle_L(void)
{
	struct shmkv_lock lk;

	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "L"));
	return lk;
}

static void run_mutex(const char *kind, int iters)
{
	char n[16];
	pid_t pid[NPROC];

	snprintf(n, sizeof(n), "%d", iters);
	for (int i = 0; i < NPROC; i++)
		pid[i] = spawn("mutex", kind, n, NULL);
	for (int i = 0; i < NPROC; i++)
		reap_ok(pid[i], kind);
	cr_assert_eq(get_int("cs.counter"), (int64_t)NPROC * iters,
		     "lost increments: the lock let two holders in");
	cr_assert_eq(get_int("cs.inside"), 0);
}

Test(lock_mp, safe_lock_lets_one_of_four_processes_in_at_a_time)
{
	run_mutex("safe", 500);
	/* One grant per acquisition, each with the next token. */
	cr_assert_eq(get_rec().token, (uint64_t)NPROC * 500);
	cr_assert_eq(get_int("cs.token"), (int64_t)NPROC * 500);
}

Test(lock_mp, pattern_lock_lets_one_of_four_processes_in_at_a_time)
{
	run_mutex("pattern", 300);
	tu_assert_rc(shmkv_exists(tu_kv, LIT("lock.L")), 0);
}

/* Repairs what a holder killed mid-section left, as the grant asks. */
static void after_takeover(int rc, int64_t *dead)
{
	cr_assert(rc == SHMKV_LOCK_ACQUIRED || rc == SHMKV_LOCK_OWNER_DEAD,
		  "takeover gave %s", tu_rcname(rc));
	if (rc == SHMKV_LOCK_OWNER_DEAD) {
		set_int("cs.inside", 0);
		(*dead)++;
	} else {
		/* A clean grant: the last holder left the section. */
		cr_assert_eq(get_int("cs.inside"), 0);
	}
}

/* Kills a churning victim at a random point of its loop; with @zombie,
 * waits until it has exited (unreaped) before taking over. */
static int64_t kill_and_take(struct shmkv_lock *lk, uint64_t *rng, bool zombie,
			     int64_t *dead)
{
	int64_t base = get_int("churn.progress");
	pid_t victim = spawn("churn", "60000", "200", NULL);
	struct timespec t0, t1;
	siginfo_t si;
	int rc;

	wait_int("churn.progress", (base == INT64_MIN ? 0 : base) + 1);
	pause_us((long)rng_below(rng, 400));
	kill(victim, SIGKILL);
	if (zombie)
		cr_assert_eq(
			waitid(P_PID, (id_t)victim, &si, WEXITED | WNOWAIT), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = shmkv_lock_timed_acquire(lk, 60000, 10000);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	after_takeover(rc, dead);
	cr_assert_eq(reap(victim), 128 + SIGKILL);
	return (t1.tv_sec - t0.tv_sec) * 1000000 +
	       (t1.tv_nsec - t0.tv_nsec) / 1000;
}

Test(lock_mp, killed_holder_is_replaced_by_dead_owner_detection)
{
	enum { ROUNDS = 200 };
	static int64_t lat_us[2][ROUNDS / 2];
	struct shmkv_lock lk = handle_L();
	uint64_t rng = (uint64_t)getpid();
	uint64_t last = 0;
	int64_t dead = 0;

	for (int r = 0; r < ROUNDS; r++) {
		lat_us[r % 2][r / 2] = kill_and_take(&lk, &rng, r % 2, &dead);
		cr_assert_gt(shmkv_lock_token(&lk), last,
			     "token did not increase");
		last = shmkv_lock_token(&lk);
		set_int("cs.token", (int64_t)last);
		tu_assert_ok(shmkv_lock_release(&lk));
	}
	fprintf(stderr, "# %lld of %d kills hit the holder (OWNER_DEAD)\n",
		(long long)dead, ROUNDS);
	/* Right after kill() the victim may still be exiting: the first
	 * probe finds it alive and the next comes after a nap. */
	print_spread("takeover right after kill(), us", lat_us[0], ROUNDS / 2);
	print_spread("takeover once the victim is a zombie, us", lat_us[1],
		     ROUNDS / 2);
	cr_assert_gt(dead, 0, "no kill landed inside the critical section");
}

Test(lock_mp, sleeping_waiter_takes_over_within_its_nap_when_holder_dies)
{
	enum { ROUNDS = 20 };
	int64_t lat_ms[ROUNDS];

	for (int r = 0; r < ROUNDS; r++) {
		pid_t holder, taker;
		int64_t killed_at;

		shmkv_del(tu_kv, LIT("hold.ready"));
		shmkv_del(tu_kv, LIT("take.rc"));
		holder = spawn("hold", "60000", NULL, NULL);
		wait_int("hold.ready", 1);
		taker = spawn("take", "60000", "20000", NULL);
		/* Kill only once the taker sleeps on the futex word. */
		for (int i = 0; i < POLL_MAX; i++) {
			uint32_t w = 0;

			cr_assert_eq(
				shmkv_lock_list(tu_kv, lock_waiters_of_L, &w),
				1);
			if (w > 0)
				break;
			pause_us(50);
		}
		killed_at = shmkv__mono_ms();
		kill(holder, SIGKILL);
		reap_ok(taker, "take");
		cr_assert_eq(get_int("take.rc"), SHMKV_LOCK_OWNER_DEAD);
		cr_assert_eq(get_int("take.token"), get_int("hold.token") + 1);
		lat_ms[r] = get_int("take.at") - killed_at;
		cr_assert_eq(reap(holder), 128 + SIGKILL);
	}
	print_spread("kill to sleeping waiter's takeover, ms", lat_ms, ROUNDS);
}

Test(lock_mp, forked_child_does_not_own_its_parents_grant)
{
	struct shmkv_lock lk = handle_L();
	pid_t pid;

	tu_assert_rc(shmkv_lock_try_acquire(&lk, 60000), 0);
	pid = fork();
	if (pid == 0) {
		int held = shmkv_lock_held(&lk);
		int rel = shmkv_lock_release(&lk);
		int again = shmkv_lock_try_acquire(&lk, 10);

		_exit(held == 0 && rel == SHMKV_LOCK_NOT_OWNER &&
				      again == -EBUSY
			      ? 0
			      : 1);
	}
	cr_assert_eq(reap(pid), 0,
		     "child saw the parent's lock "
		     "as its own");
	cr_assert_eq(shmkv_lock_held(&lk), 1);
}

Test(lock_mp, owner_that_exited_without_release_is_taken_over_as_owner_dead)
{
	struct shmkv_lock lk = handle_L();
	pid_t pid = fork();

	if (pid == 0)
		_exit(shmkv_lock_try_acquire(&lk, 60000) == 0 ? 0 : 1);
	cr_assert_eq(reap(pid), 0);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 60000), SHMKV_LOCK_OWNER_DEAD);
	cr_assert_eq(shmkv_lock_token(&lk), 2);
}

Test(lock_mp, zombie_owner_counts_as_dead)
{
	struct shmkv_lock lk = handle_L();
	int pipefd[2];
	pid_t pid;
	char c;

	cr_assert_eq(pipe(pipefd), 0);
	pid = fork();
	if (pid == 0) {
		int rc = shmkv_lock_try_acquire(&lk, 60000);

		c = rc == 0 ? 'y' : 'n';
		_exit(write(pipefd[1], &c, 1) == 1 ? 0 : 1);
	}
	cr_assert_eq(read(pipefd[0], &c, 1), 1);
	cr_assert_eq(c, 'y');
	/* Until the child is gone /proc shows it alive or a zombie; never
	 * reaped here, so it ends as a zombie. Bounded: 10 s. */
	for (int i = 0; i < 10000; i++) {
		int rc = shmkv_lock_try_acquire(&lk, 60000);

		if (rc != -EBUSY) {
			tu_assert_rc(rc, SHMKV_LOCK_OWNER_DEAD);
			break;
		}
		tu_sleep_ms(1);
	}
	cr_assert_eq(shmkv_lock_token(&lk), 2);
	cr_assert_eq(reap(pid), 0);
}

/* The second thread of a child whose main thread has exited: holds "L"
 * (and has a released cell of "M" parked, a block only its process owns),
 * reports 'y', waits for a byte, then releases and re-acquires "L". */
struct orphan_ctx {
	shmkv_t *kv;
	int report, go;
};

static void *orphan_thread(void *arg)
{
	struct orphan_ctx *c = arg;
	struct shmkv_lock l, m;
	char ch = 'y';

	if (shmkv_lock_init(c->kv, &l, "L") || shmkv_lock_init(c->kv, &m, "M"))
		_exit(2);
	if (shmkv_lock_acquire(&l, 60000) != 0 ||
	    shmkv_lock_acquire(&m, 60000) != 0 || shmkv_lock_release(&m) != 0)
		_exit(3);
	if (write(c->report, &ch, 1) != 1 || read(c->go, &ch, 1) != 1)
		_exit(4);
	if (shmkv_lock_release(&l) != 0)
		_exit(5);
	if (shmkv_lock_try_acquire(&l, 60000) != SHMKV_LOCK_ACQUIRED ||
	    shmkv_lock_release(&l) != 0)
		_exit(6);
	shmkv_close(c->kv);
	_exit(0);
}

static void orphan_main(int report, int go)
{
	static struct orphan_ctx c;
	pthread_t t;

	c.report = report;
	c.go = go;
	if (shmkv_open(tu_name, 0, &c.kv) != 0)
		_exit(1);
	if (pthread_create(&t, NULL, orphan_thread, &c) != 0)
		_exit(7);
	pthread_exit(NULL);
}

/* Blocks allocated in the whole store (cells are blocks). */
static uint64_t used_blocks(void)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(tu_kv, &st));
	return mp_blocks_used(&st);
}

Test(lock_mp, holder_whose_main_thread_exited_while_its_thread_runs_is_alive)
{
	struct shmkv_lock lk = handle_L();
	struct shmkv_recover_report rep;
	int report[2], go[2], rc;
	uint64_t before;
	pid_t pid;
	char c;

	cr_assert_eq(pipe(report), 0);
	cr_assert_eq(pipe(go), 0);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		/* Without the parent's ends: its death ends our wait. */
		close(report[0]);
		close(go[1]);
		orphan_main(report[1], go[0]);
	}
	close(report[1]);
	close(go[0]);
	cr_assert_eq(read(report[0], &c, 1), 1, "the child's thread failed");
	/* Its leader now shows Z although the process runs. */
	tu_wait_proc_state(pid, 'Z');
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 60000), -EBUSY);
	before = used_blocks();
	rc = shmkv_recover(tu_kv, &rep);
	cr_assert_eq(rc, 0,
		     "recover repaired %d things of a live process "
		     "(%llu blocks)",
		     rc, (unsigned long long)rep.leaked_blocks);
	cr_assert_eq(used_blocks(), before, "recover freed a live block");
	cr_assert_eq(write(go[1], "r", 1), 1);
	rc = reap(pid);
	cr_assert_eq(rc, 0, "the child's thread failed at step %d", rc);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 60000), SHMKV_LOCK_ACQUIRED);
}

Test(lock_mp, release_wakes_a_blocked_acquirer_in_another_process)
{
	struct shmkv_lock lk = handle_L();
	uint32_t waiters = 0;
	pid_t pid;

	tu_assert_rc(shmkv_lock_try_acquire(&lk, 60000), 0);
	pid = fork();
	if (pid == 0) {
		int rc = shmkv_lock_acquire(&lk, 60000);

		_exit(rc == 0 && shmkv_lock_token(&lk) == 2 ? 0 : 1);
	}
	for (int i = 0; i < 10000 && waiters == 0; i++) {
		tu_sleep_ms(1);
		tu_assert_rc(
			shmkv_lock_list(tu_kv, lock_waiters_of_L, &waiters), 1);
	}
	cr_assert_eq(waiters, 1, "the child never blocked");
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	cr_assert_eq(reap(pid), 0);
}

Test(lock_mp, pattern_unlock_wakes_a_waiter_in_another_process)
{
	struct shmkv_pattern pl;
	int64_t expiry;
	pid_t pid;

	tu_assert_ok(shmkv_pattern_init(tu_kv, &pl, "L"));
	tu_assert_ok(shmkv_pattern_acquire(&pl, 60000, 0, &expiry));
	pid = fork();
	if (pid == 0) {
		int64_t e;
		int rc = shmkv_pattern_acquire(&pl, 60000, SHMKV_LOCK_FOREVER,
					       &e);

		_exit(rc == 0 ? 0 : 1);
	}
	tu_sleep_ms(20);
	tu_assert_ok(shmkv_pattern_release(&pl, expiry));
	cr_assert_eq(reap(pid), 0);
	/* Deleted by our unlock, so the time there is the child's. */
	cr_assert_geq(get_int("lock.L"), expiry);
}

Test(lock_mp, stopped_holder_keeps_its_lock_until_the_lease_ends)
{
	struct shmkv_lock lk;
	struct shmkv_lock_rec rec;
	pid_t holder = spawn("hold", "300", NULL, NULL);
	int rc;

	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "L"));
	wait_int("hold.ready", 1);
	kill(holder, SIGSTOP);
	rec = get_rec();
	/* Alive though stopped: no takeover while the lease runs. A grant
	 * here could only be the lease having run out already. */
	rc = shmkv_lock_try_acquire(&lk, 60000);
	cr_assert(rc == -EBUSY || rc == SHMKV_LOCK_LEASE_EXPIRED,
		  "try on a stopped holder gave %s", tu_rcname(rc));
	if (rc == -EBUSY)
		rc = shmkv_lock_timed_acquire(&lk, 60000, 20000);
	cr_assert_eq(rc, SHMKV_LOCK_LEASE_EXPIRED,
		     "a stopped holder's lock was taken as %s", tu_rcname(rc));
	cr_assert_geq(shmkv__mono_ms(), rec.deadline_ms);
	cr_assert_eq(shmkv_lock_token(&lk), rec.token + 1);
	/* Continued, the old holder must learn that it lost the lock. */
	kill(holder, SIGCONT);
	set_int("hold.go", 1);
	reap_ok(holder, "hold");
	cr_assert_eq(get_int("hold.held0"), 1, "held() false while held");
	cr_assert_eq(get_int("hold.held"), 0, "held() true after losing it");
	cr_assert_eq(get_int("hold.release"), SHMKV_LOCK_NOT_OWNER);
	cr_assert_eq(shmkv_lock_held(&lk), 1, "its release took ours");
	tu_assert_ok(shmkv_lock_release(&lk));
}

/*
 * The SETNX page's races, step by step: C3 crashed holding lock.L (an
 * expired time); A and B both GET it and find it expired; then A finishes
 * its takeover before B does its.
 */
static void run_steps(const char *algo)
{
	pid_t a, b;

	set_int("lock.L", 1); /* C3's lock: expired since 1970 */
	a = spawn("step", algo, "A", NULL);
	b = spawn("step", algo, "B", NULL);
	wait_int("step.at", 2);
	set_int("step.go.A", 1);
	wait_int("step.done", 1);
	set_int("step.go.B", 1);
	wait_int("step.done", 2);
	reap_ok(a, algo);
	reap_ok(b, algo);
}

TestSuite(pattern_race, .init = tu_setup, .fini = tu_teardown);

Test(pattern_race, del_then_setnx_lets_two_clients_hold_the_lock)
{
	run_steps("naive");
	/* The page's "ERROR": C2's DEL removed C1's fresh lock. */
	cr_assert_eq(get_int("step.holders"), 2);
}

Test(pattern_race, getset_lets_exactly_one_of_two_clients_win)
{
	run_steps("getset");
	cr_assert_eq(get_int("step.holders"), 1);
	cr_assert_eq(get_int("step.rc.A"), 0);
	cr_assert_eq(get_int("step.rc.B"), -EBUSY);
	/* B's GETSET returned A's valid time: the page's C5 case. */
	cr_assert_eq(get_int("step.lost.B"), 1);
}

/* ROUNDS rounds of NPROC free-running processes on an expired lock.
 * Return: how many rounds had more than one winner. */
static int run_race(const char *algo, int rounds, int64_t *lost)
{
	char n[16];
	pid_t pid[NPROC];
	int multi = 0;

	snprintf(n, sizeof(n), "%d", rounds);
	for (int i = 0; i < NPROC; i++)
		pid[i] = spawn("race", algo, n, NULL);
	for (int r = 1; r <= rounds; r++) {
		char key[32];

		set_int("lock.L", 1);
		set_int("race.round", r);
		wait_int("race.done", (int64_t)NPROC * r);
		snprintf(key, sizeof(key), "race.win.%d", r);
		multi += get_int(key) > 1;
		if (strcmp(algo, "getset") == 0)
			cr_assert_eq(get_int(key), 1, "round %d: %lld winners",
				     r, (long long)get_int(key));
	}
	for (int i = 0; i < NPROC; i++)
		reap_ok(pid[i], algo);
	*lost = get_int("race.lost");
	return multi;
}

Test(pattern_race, getset_has_one_winner_per_round_among_four_processes)
{
	int64_t lost;

	cr_assert_eq(run_race("getset", 200, &lost), 0);
	fprintf(stderr,
		"# getset race: %lld GETSETs lost to a faster client "
		"in 200 rounds\n",
		lost == INT64_MIN ? 0LL : (long long)lost);
}
