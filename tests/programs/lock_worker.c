/*
 * lock_worker - a process for test_lock_mp to run, stop and kill.
 *
 * usage: lock_worker MODE STORE LOCK [ARG...]
 *
 *   mutex KIND ITERS       ITERS acquisitions of LOCK (KIND safe or
 *                          pattern), each a checked critical section
 *   churn LEASE_MS SPIN_US checked critical sections until killed
 *   hold LEASE_MS          acquire, report, wait for the key "hold.go",
 *                          then report held() and release's result
 *   take LEASE_MS WAIT_MS  one timed acquire; report its result
 *   step ALGO ID           one attempt on an expired pattern lock that
 *                          stops before its GETSET (ALGO "getset") or its
 *                          DEL (ALGO "naive", the broken variant) until
 *                          the key "step.go.<ID>" appears
 *   race ALGO ROUNDS       ROUNDS attempts, each when "race.round" says
 *
 * A checked critical section (keys of STORE, all under the lock):
 * "cs.inside" INCR must give 1 and DECR 0 (no other holder overlaps), a
 * safe lock's token must exceed "cs.token" (the last holder's; a pattern
 * lock has none), and "cs.counter" is incremented by a non-atomic GET +
 * SET that a second holder would break.
 * A grant reporting SHMKV_LOCK_OWNER_DEAD first repairs "cs.inside" (the
 * dead holder may have left it at 1) and counts itself in "cs.dead".
 *
 * The worker never asserts: its exit status says what went wrong, the
 * details go to stderr.
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lock_record.h"
#include "shmkv.h"
#include "shmkv_lock.h"
#include "helpers/clock.h"
#include "helpers/worker_exit.h"

/* Beyond enum worker_exit (a lock call's failure is WORKER_LOCK, a
 * plain command's WORKER_REPLY). */
enum lock_worker_exit {
	LKW_OVERLAP = WORKER_OWN, /* two holders in the critical section */
	LKW_TOKEN,		  /* a token did not exceed the previous one */
	LKW_STUCK,		  /* the parent's signal never came */
};

/* Polls of a coordination key, 1 ms apart: 60 s, only to end a hang. */
#define POLL_MAX   60000
#define LEASE_LONG 60000 /* ms: only a death or a release ends it */
/* A pattern lock's section: it has no fencing token (a safe lock's grants
 * carry tokens from 1 up). */
#define NO_TOKEN 0

/* Which grants a section accepts: after a holder was killed, OWNER_DEAD
 * is a clean grant too. */
enum grants { GRANT_CLEAN, GRANT_CLEAN_OR_DEAD };

static shmkv_t *kv;
static const char *lock_name;
static const char *step_id;

static int fail(int code, const char *what, long long got)
{
	fprintf(stderr, "lock_worker[%d] %s: %s (%lld)\n", (int)getpid(),
		lock_name, what, got);
	return code;
}

static void spin_us(long us)
{
	int64_t end = clock_ns(CLOCK_MONOTONIC) + (int64_t)us * 1000;

	while (clock_ns(CLOCK_MONOTONIC) < end)
		;
}

/* GET @key as an integer. Return: 1 and *v, 0 missing, -errno. */
static int get_int(const char *key, int64_t *v)
{
	char buf[32];
	struct shmkv_value val = { .buf = buf, .cap = sizeof(buf) - 1 };
	int r = shmkv_get(kv, key, strlen(key), &val);

	if (r != 1)
		return r;
	buf[val.len] = '\0';
	*v = strtoll(buf, NULL, 10);
	return 1;
}

static int set_int(const char *key, int64_t v)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%lld", (long long)v);

	return shmkv_set(kv, key, strlen(key), buf, (size_t)n, 0, 0, NULL) == 1
		       ? 0
		       : -1;
}

static int incr(const char *key, int64_t delta, int64_t *out)
{
	int64_t dummy;

	return shmkv_incrby(kv, key, strlen(key), delta, out ? out : &dummy);
}

/* Waits until @key exists. Return: 0, or LKW_STUCK. */
static int wait_key(const char *key)
{
	for (int i = 0; i < POLL_MAX; i++) {
		if (shmkv_exists(kv, key, strlen(key)) == 1)
			return 0;
		sleep_ns(1000000);
	}
	return fail(LKW_STUCK, "no signal from the parent", 0);
}

/* The checked critical section (see the top of the file). */
static int section(int grant, uint64_t token, long spin)
{
	int64_t v = 0, last = 0;

	if (grant == SHMKV_LOCK_OWNER_DEAD &&
	    (set_int("cs.inside", 0) || incr("cs.dead", 1, NULL)))
		return fail(WORKER_REPLY, "repair", 0);
	if (incr("cs.inside", 1, &v) || v != 1)
		return fail(LKW_OVERLAP, "cs.inside on entry", v);
	if (token != NO_TOKEN &&
	    (get_int("cs.token", &last) < 0 || (uint64_t)last >= token))
		return fail(LKW_TOKEN, "token not above the last", last);
	if (token != NO_TOKEN && set_int("cs.token", (int64_t)token))
		return fail(WORKER_REPLY, "set cs.token", 0);
	v = 0;
	if (get_int("cs.counter", &v) < 0)
		return fail(WORKER_REPLY, "get cs.counter", 0);
	if (spin > 0)
		spin_us(spin);
	else
		sched_yield(); /* widen the window a second holder would use */
	if (set_int("cs.counter", v + 1))
		return fail(WORKER_REPLY, "set cs.counter", 0);
	if (incr("cs.inside", -1, &v) || v != 0)
		return fail(LKW_OVERLAP, "cs.inside on exit", v);
	return 0;
}

static int init_lock(struct shmkv_lock *lk)
{
	int rc = shmkv_lock_init(kv, lk, lock_name);

	return rc ? fail(WORKER_LOCK, "init", rc) : 0;
}

/* Acquire @lk, run the checked section, release. Return: 0, or EXIT_*. */
static int safe_section(struct shmkv_lock *lk, int64_t lease, long spin,
			enum grants ok)
{
	int grant = shmkv_lock_acquire(lk, lease);
	int rc;

	if (grant != SHMKV_LOCK_ACQUIRED &&
	    (ok != GRANT_CLEAN_OR_DEAD || grant != SHMKV_LOCK_OWNER_DEAD))
		return fail(WORKER_LOCK, "acquire", grant);
	rc = section(grant, shmkv_lock_token(lk), spin);
	if (rc)
		return rc;
	rc = shmkv_lock_release(lk);
	return rc ? fail(WORKER_LOCK, "release", rc) : 0;
}

static int mutex_safe(long iters)
{
	struct shmkv_lock lk;
	int rc = init_lock(&lk);

	for (long i = 0; rc == 0 && i < iters; i++)
		rc = safe_section(&lk, LEASE_LONG, 0, GRANT_CLEAN);
	return rc;
}

static int mutex_pattern(long iters)
{
	struct shmkv_pattern pl;
	int rc = shmkv_pattern_init(kv, &pl, lock_name);

	if (rc)
		return fail(WORKER_LOCK, "pattern init", rc);
	for (long i = 0; i < iters; i++) {
		int64_t expiry;

		rc = shmkv_pattern_acquire(&pl, LEASE_LONG, SHMKV_LOCK_FOREVER,
					   &expiry);
		if (rc)
			return fail(WORKER_LOCK, "pattern lock", rc);
		rc = section(SHMKV_LOCK_ACQUIRED, NO_TOKEN, 0);
		if (rc)
			return rc;
		rc = shmkv_pattern_release(&pl, expiry);
		if (rc)
			return fail(WORKER_LOCK, "pattern unlock", rc);
	}
	return WORKER_DONE;
}

/* Until killed: grants may be clean or (after a kill) OWNER_DEAD. */
static int churn(int64_t lease, long spin)
{
	struct shmkv_lock lk;
	int rc = init_lock(&lk);

	while (rc == 0) {
		rc = safe_section(&lk, lease, spin, GRANT_CLEAN_OR_DEAD);
		if (rc == 0 && incr("churn.progress", 1, NULL))
			rc = fail(WORKER_REPLY, "progress", 0);
	}
	return rc;
}

static int hold(int64_t lease)
{
	struct shmkv_lock lk;
	int rc = init_lock(&lk);

	if (rc)
		return rc;
	rc = shmkv_lock_timed_acquire(&lk, lease, 10000);
	if (rc < 0)
		return fail(WORKER_LOCK, "acquire", rc);
	if (set_int("hold.token", (int64_t)shmkv_lock_token(&lk)) ||
	    set_int("hold.held0", shmkv_lock_held(&lk)) ||
	    set_int("hold.ready", 1))
		return fail(WORKER_REPLY, "report", 0);
	rc = wait_key("hold.go");
	if (rc)
		return rc;
	/* Order matters: held() first, then the release that ends it. */
	if (set_int("hold.held", shmkv_lock_held(&lk)) ||
	    set_int("hold.release", shmkv_lock_release(&lk)))
		return fail(WORKER_REPLY, "report", 0);
	return WORKER_DONE;
}

static int take(int64_t lease, int64_t wait)
{
	struct shmkv_lock lk;
	int rc = init_lock(&lk);

	if (rc)
		return rc;
	rc = shmkv_lock_timed_acquire(&lk, lease, wait);
	if (set_int("take.at", shmkv__mono_ms()) || set_int("take.rc", rc) ||
	    set_int("take.token", (int64_t)shmkv_lock_token(&lk)))
		return fail(WORKER_REPLY, "report", 0);
	if (rc >= 0 && shmkv_lock_release(&lk) != 0)
		return fail(WORKER_LOCK, "release", 0);
	return WORKER_DONE;
}

/*
 * The page's races, step by step. The hook stops this process where the
 * parent schedules the next step: before GETSET (the algorithm) or before
 * DEL (the broken variant below).
 */
static void step_hook(enum shmkv__pattern_step s)
{
	char key[64];

	if (s == SHMKV__PATTERN_GETSET_LOST) {
		snprintf(key, sizeof(key), "step.lost.%s", step_id);
		set_int(key, 1);
		incr("race.lost", 1, NULL);
		return;
	}
	if (step_id == NULL) {
		/* Free-running race: no stop, but give the others a chance
		 * to reach their GET before our GETSET. */
		sched_yield();
		return;
	}
	incr("step.at", 1, NULL);
	snprintf(key, sizeof(key), "step.go.%s", step_id);
	if (wait_key(key))
		exit(LKW_STUCK);
}

/* The broken variant of the page: "DEL lock.foo", then "SETNX lock.foo".
 * Return: 0 acquired, -EBUSY. */
static int naive_lock(const char *key)
{
	char v[24];
	int64_t now = shmkv__unix_ms(), old;
	int n = snprintf(v, sizeof(v), "%lld",
			 (long long)(now + LEASE_LONG + 1));

	if (shmkv_setnx(kv, key, strlen(key), v, (size_t)n) == 1)
		return 0;
	if (get_int(key, &old) != 1 || old > shmkv__unix_ms())
		return -EBUSY;
	step_hook(SHMKV__PATTERN_SAW_EXPIRED);
	shmkv_del(kv, key, strlen(key));
	return shmkv_setnx(kv, key, strlen(key), v, (size_t)n) == 1 ? 0
								    : -EBUSY;
}

static int attempt(bool naive)
{
	char key[300];
	struct shmkv_pattern pl;
	int64_t expiry;
	int rc;

	snprintf(key, sizeof(key), "lock.%s", lock_name);
	if (naive)
		return naive_lock(key);
	rc = shmkv_pattern_init(kv, &pl, lock_name);
	return rc ? rc : shmkv_pattern_acquire(&pl, LEASE_LONG, 0, &expiry);
}

static int step(bool naive, const char *id)
{
	char key[64];
	int rc;

	step_id = id;
	shmkv__pattern_hook = step_hook;
	rc = attempt(naive);
	if (rc == 0 && incr("step.holders", 1, NULL))
		return fail(WORKER_REPLY, "holders", 0);
	snprintf(key, sizeof(key), "step.rc.%s", id);
	if (set_int(key, rc) || incr("step.done", 1, NULL))
		return fail(WORKER_REPLY, "report", 0);
	return rc == 0 || rc == -EBUSY ? WORKER_DONE
				       : fail(WORKER_LOCK, "attempt", rc);
}

static int race(bool naive, long rounds)
{
	char key[64];

	shmkv__pattern_hook = step_hook;
	for (long r = 1; r <= rounds; r++) {
		int64_t cur = 0;
		int rc, i;

		for (i = 0; i < POLL_MAX * 100 &&
			    (get_int("race.round", &cur) != 1 || cur < r);
		     i++)
			sched_yield();
		if (cur < r)
			return fail(LKW_STUCK, "round never started", r);
		rc = attempt(naive);
		if (rc != 0 && rc != -EBUSY)
			return fail(WORKER_LOCK, "attempt", rc);
		snprintf(key, sizeof(key), "race.win.%ld", r);
		if ((rc == 0 && incr(key, 1, NULL)) ||
		    incr("race.done", 1, NULL))
			return fail(WORKER_REPLY, "report", 0);
	}
	return WORKER_DONE;
}

static int dispatch(int argc, char **argv)
{
	const char *mode = argv[1];

	if (!strcmp(mode, "mutex") && argc == 6)
		return !strcmp(argv[4], "pattern")
			       ? mutex_pattern(atol(argv[5]))
			       : mutex_safe(atol(argv[5]));
	if (!strcmp(mode, "churn") && argc == 6)
		return churn(atol(argv[4]), atol(argv[5]));
	if (!strcmp(mode, "hold") && argc == 5)
		return hold(atol(argv[4]));
	if (!strcmp(mode, "take") && argc == 6)
		return take(atol(argv[4]), atol(argv[5]));
	if (!strcmp(mode, "step") && argc == 6)
		return step(!strcmp(argv[4], "naive"), argv[5]);
	if (!strcmp(mode, "race") && argc == 6)
		return race(!strcmp(argv[4], "naive"), atol(argv[5]));
	fprintf(stderr, "lock_worker: bad mode or arguments: %s\n", mode);
	return WORKER_USAGE;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc < 4) {
		fprintf(stderr,
			"usage: lock_worker MODE STORE LOCK [ARG...]\n");
		return WORKER_USAGE;
	}
	lock_name = argv[3];
	rc = shmkv_open(argv[2], 0, &kv);
	if (rc)
		return fail(WORKER_OPEN, shmkv_strerror(rc), rc);
	rc = dispatch(argc, argv);
	shmkv_close(kv);
	return rc;
}
