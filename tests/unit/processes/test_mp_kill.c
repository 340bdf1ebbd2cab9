/*
 * test_mp_kill.c - processes SIGKILLed mid-command: exec'd mp_worker
 * processes are killed at random moments and replaced, and the store must
 * stay usable before shmkv_recover() and be whole after it: every key
 * readable, no key twice, no pending slot, and no value block leaked.
 *
 * SHMKV_MP_WORKER overrides the path of the mp_worker program; SHMKV_SEED
 * replays the random choices of a run (not the scheduler's). Every wait
 * is bounded, so a hung worker fails the test instead of hanging it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers/clock.h"
#include "helpers/mp.h"
#include "helpers/mp_census.h"
#include "helpers/selfcheck.h"
#include "helpers/testutil.h"

/*
 * SIGKILL: exec'd mp_worker processes run random commands on a small
 * table and are killed at random moments, mid-command as often as not,
 * then replaced. Afterwards shmkv_recover() must leave a store with every
 * key readable, no key twice, no pending slot, and exactly as many value
 * blocks in use as live keys need.
 */

#define KILL_WORKERS 4
#define KILL_SLOTS   256
#define KILL_KEYS    48
#define KILL_ROUNDS  200
/* Ample: each kill leaks at most a block or two until recovery. */
#define KILL_VALUE_MEMORY (4u << 20)
/* The worker's loop bound; it is always killed long before. */
#define KILL_WORKER_ITERS "1000000000"

/* How long a new worker may take to open the store, in 100 ms polls: a
 * guard against a hang, never reached by a healthy run. */
#define READY_POLLS 600

struct fleet {
	char path[PATH_MAX];
	const char *name;
	uint64_t rng;
	pid_t pid[KILL_WORKERS];
	unsigned spawned;
	unsigned never_ready; /* workers that did not report ready */
};

/* build/tests/mp_worker: beside this binary, or SHMKV_MP_WORKER. */
static void worker_path(char *buf, size_t cap)
{
	static const char prog[] = "/mp_worker";
	const char *env = getenv("SHMKV_MP_WORKER");
	ssize_t n;

	if (env && *env) {
		cr_assert_lt(strlen(env), cap, "SHMKV_MP_WORKER too long");
		strcpy(buf, env);
	} else {
		n = readlink("/proc/self/exe", buf, cap - sizeof(prog));
		cr_assert_gt(n, 0, "readlink /proc/self/exe: %s",
			     strerror(errno));
		cr_assert_lt((size_t)n, cap - sizeof(prog), "path too long");
		buf[n] = '\0';
		strcpy(strrchr(buf, '/'), prog);
	}
	cr_assert_eq(access(buf, X_OK), 0, "no worker program %s: %s", buf,
		     strerror(errno));
}

/* Waits until the worker has the store open (a byte on @fd) or is dead
 * (end of file). Return: whether it said ready. */
static bool worker_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	for (int i = 0; i < READY_POLLS; i++) {
		int n = poll(&p, 1, 100);

		if (n > 0)
			return read(fd, &c, 1) == 1;
		if (n < 0 && errno != EINTR)
			return false;
	}
	return false;
}

/* Starts worker @w (even: every command; odd: inserts and deletes only)
 * and returns once it runs commands, so a kill's delay is spent in them. */
static pid_t worker_spawn(struct fleet *f, int w)
{
	char seed[32], keys[16], fd[16];
	const char *mode = w % 2 ? "inserts" : "mixed";
	int fds[2];
	pid_t pid;

	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0, "pipe: %s", strerror(errno));
	snprintf(seed, sizeof(seed), "%llu",
		 (unsigned long long)rng_next(&f->rng));
	snprintf(keys, sizeof(keys), "%d", KILL_KEYS);
	snprintf(fd, sizeof(fd), "%d", fds[1]);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		fcntl(fds[1], F_SETFD, 0);
		execl(f->path, f->path, f->name, seed, KILL_WORKER_ITERS, keys,
		      fd, mode, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", f->path, strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	if (pid > 0 && !worker_ready(fds[0]))
		f->never_ready++;
	close(fds[0]);
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	f->spawned++;
	return pid;
}

/* SIGKILLs and reaps a worker. Return: 0 if it died of our SIGKILL (or
 * finished cleanly), else its wait status. */
static int worker_kill(pid_t pid)
{
	int st = 0;

	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if ((WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) || mp_status_ok(st))
		return 0;
	return st ? st : -1;
}

static void describe_status(int st, char *why, size_t cap)
{
	if (WIFSIGNALED(st))
		snprintf(why, cap, "a worker died of signal %d", WTERMSIG(st));
	else if (WEXITSTATUS(st) == 127)
		snprintf(why, cap, "a worker could not be exec'd");
	else
		snprintf(why, cap, "a worker exited %d (%s)", WEXITSTATUS(st),
			 "4: bad reply, 5: bad value; see its stderr");
}

static void fleet_start(struct fleet *f, const char *name, uint64_t seed)
{
	memset(f, 0, sizeof(*f));
	worker_path(f->path, sizeof(f->path));
	f->name = name;
	f->rng = seed;
	for (int w = 0; w < KILL_WORKERS; w++)
		f->pid[w] = worker_spawn(f, w);
}

/* Kills and reaps every worker; returns the first bad status or 0. */
static int fleet_stop(struct fleet *f)
{
	int bad = 0;

	for (int w = 0; w < KILL_WORKERS; w++) {
		int st = worker_kill(f->pid[w]);

		bad = bad ? bad : st;
	}
	return bad;
}

static void sleep_upto_3ms(uint64_t *rng)
{
	sleep_ns((int64_t)(rng_next(rng) % 3000001));
}

/*
 * Kills a random worker after a random 0-3 ms, @kills times, restarting
 * each; with @recover_every, runs shmkv_recover() alongside the workers
 * that often. Stops them all at the end. Asserts nothing went wrong.
 */
static void fleet_kill_loop(struct fleet *f, shmkv_t *kv, unsigned kills,
			    unsigned recover_every)
{
	char why[128] = "";
	int bad = 0, rrc = 0, stop;

	for (unsigned k = 0; k < kills && !bad && rrc >= 0 && !f->never_ready;
	     k++) {
		unsigned w = (unsigned)rng_below(&f->rng, KILL_WORKERS);

		sleep_upto_3ms(&f->rng);
		bad = worker_kill(f->pid[w]);
		f->pid[w] = worker_spawn(f, (int)w);
		if (recover_every && k % recover_every == recover_every - 1)
			rrc = shmkv_recover(kv, NULL);
	}
	stop = fleet_stop(f);
	bad = bad ? bad : stop;
	if (bad)
		describe_status(bad, why, sizeof(why));
	cr_assert_eq(bad, 0, "%s", why);
	cr_assert_eq(f->never_ready, 0, "a worker never opened the store");
	cr_assert_geq(rrc, 0, "shmkv_recover beside live workers: %s",
		      tu_rcname(rrc));
}

static bool kill_value_ok(const char *v, size_t len)
{
	/* The workers' values, and assert_usable's. */
	return sc_value_ok(v, len) || (len == 30 && v[0] == 'v');
}

/* Every one of the workers' keys is readable, with a value some worker
 * wrote; returns how many exist. */
static size_t assert_keys_readable(shmkv_t *kv)
{
	char key[16], val[SHMKV_VALUE_MAX_DEFAULT];
	size_t live = 0, vl;

	for (int k = 0; k < KILL_KEYS; k++) {
		int rc;

		sprintf(key, "w%03d", k);
		rc = mp_get_str(kv, key, val, sizeof(val), &vl);
		cr_assert(rc == 0 || rc == 1, "GET %s: %s", key, tu_rcname(rc));
		cr_assert(rc == 0 || kill_value_ok(val, vl),
			  "GET %s: \"%.*s\" was never written", key, (int)vl,
			  val);
		live += rc;
	}
	return live;
}

/* A value the tests write beside the workers': odd @i need a block. */
static size_t usable_value(char *buf, int i)
{
	if (i % 2)
		return mp_pad_x(buf, sprintf(buf, "v%d-", i), 30);
	return (size_t)sprintf(buf, "%d", i * 7);
}

/* Fresh keys can be written, read and deleted, inline and in blocks. */
static void assert_usable(shmkv_t *kv, const char *prefix, int n, bool keep)
{
	char key[32], val[64];

	for (int i = 0; i < n; i++) {
		size_t kl = (size_t)sprintf(key, "%s%d", prefix, i);
		size_t vl = usable_value(val, i);

		tu_assert_rc(shmkv_set(kv, key, kl, val, vl, 0, 0, NULL), 1);
		tu_assert_get(kv, key, kl, val, vl);
		if (!keep)
			tu_assert_rc(shmkv_del(kv, key, kl), 1);
	}
}

/* After recovery: a second pass finds nothing, and the census holds. */
static void assert_recovered(shmkv_t *kv)
{
	struct shmkv_recover_report rep;
	int rc;

	memset(&rep, 0, sizeof(rep));
	rc = shmkv_recover(kv, &rep);
	cr_assert_geq(rc, 0, "shmkv_recover: %s", tu_rcname(rc));
	cr_log_info("recover: %d repairs: %llu stale claims, %llu stuck "
		    "inserts, %llu collided, %llu dead slots, %llu leaked "
		    "blocks",
		    rc, (unsigned long long)rep.stale_claims,
		    (unsigned long long)rep.stuck_inserts,
		    (unsigned long long)rep.collided,
		    (unsigned long long)rep.dead_slots,
		    (unsigned long long)rep.leaked_blocks);
	assert_keys_readable(kv);
	mp_assert_census(kv, KILL_SLOTS, -1, kill_value_ok, "after recovery");
	tu_assert_rc(shmkv_recover(kv, NULL), 0);
}

static shmkv_t *kill_store(char name[TU_NAME_CAP])
{
	return mp_create_store(name, KILL_SLOTS, KILL_VALUE_MEMORY);
}

TestSuite(mp_kill, .fini = tu_teardown);

Test(mp_kill, leaves_a_consistent_store_after_recover)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv = kill_store(name);
	struct fleet f;

	fleet_start(&f, name, mp_run_seed());
	fleet_kill_loop(&f, kv, KILL_ROUNDS, 0);
	assert_recovered(kv);
	assert_usable(kv, "after-", 32, false);
	shmkv_close(kv);
}

Test(mp_kill, leaves_a_consistent_store_when_recover_runs_beside_workers)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv = kill_store(name);
	struct fleet f;

	fleet_start(&f, name, mp_run_seed());
	fleet_kill_loop(&f, kv, KILL_ROUNDS, 10);
	assert_recovered(kv);
	shmkv_close(kv);
}

/* Whether killed workers left something for recovery to repair: a pending
 * slot, or value blocks that no live key accounts for. */
static bool has_leftovers(shmkv_t *kv, char *what, size_t cap)
{
	struct census c;
	bool left;
	int rc = mp_census_take(kv, KILL_SLOTS, &c, NULL);

	cr_assert_eq(rc, 0, "census before recovery: %s", tu_rcname(rc));
	left = c.st.pending || mp_blocks_used(&c.st) != c.need_block;
	snprintf(what, cap,
		 "%llu pending slots, %llu blocks used where %zu "
		 "live keys need %zu",
		 (unsigned long long)c.st.pending,
		 (unsigned long long)mp_blocks_used(&c.st), c.live,
		 c.need_block);
	free(c.keys.k);
	return left;
}

#define KILL_BATCHES 5

Test(mp_kill, leaves_the_store_usable_before_recover)
{
	char name[TU_NAME_CAP], key[16], val[64], what[160];
	shmkv_t *kv = kill_store(name);
	uint64_t seed = mp_run_seed();
	bool left = false;
	unsigned batch;
	struct fleet f;

	/* Kill until some leftover is seen (usually the first batch), so
	 * that the commands below meet a dead process's debris. */
	for (batch = 0; batch < KILL_BATCHES && !left; batch++) {
		fleet_start(&f, name, seed + batch);
		fleet_kill_loop(&f, kv, KILL_ROUNDS, 0);
		left = has_leftovers(kv, what, sizeof(what));
	}
	cr_log_info("before recover, after %u x %d kills: %s%s", batch,
		    KILL_ROUNDS, what, left ? "" : " (no leftovers seen)");
	assert_keys_readable(kv);
	/* New keys, and the killed workers' own keys, whose slots may be
	 * the ones a dead process left half-claimed. */
	assert_usable(kv, "fresh-", 48, true);
	for (int k = 0; k < KILL_KEYS; k++) {
		size_t kl = (size_t)sprintf(key, "w%03d", k);
		size_t vl = usable_value(val, k);

		tu_assert_rc(shmkv_set(kv, key, kl, val, vl, 0, 0, NULL), 1);
		tu_assert_get(kv, key, kl, val, vl);
		if (k % 2)
			tu_assert_rc(shmkv_del(kv, key, kl), 1);
		else
			tu_assert_rc(shmkv_setnx(kv, key, kl, "1", 1), 0);
	}
	assert_recovered(kv);
	shmkv_close(kv);
}
