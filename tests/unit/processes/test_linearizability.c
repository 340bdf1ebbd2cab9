/*
 * test_linearizability.c - histories of real processes on a real store,
 * checked for linearizability.
 *
 * Each round fork+execs LIN_PROCS lin_worker processes that hammer
 * LIN_KEYS fresh keys with SET SETNX GETSET GET DEL DELIFEQ INCR GETDEL,
 * each logging every operation with its invoke and return times (a memfd
 * the test maps; see tests/programs/lin_worker.c). The test then checks the
 * combined history with tests/helpers/lincheck.c (Wing & Gong search per
 * key, with Lowe's memoisation). test_lincheck.c tests the checker itself.
 *
 * Sizes: a round is LIN_PROCS * LIN_OPS = 16000 operations, about 5300
 * per key; LIN_ROUNDS rounds, 1.6 million operations, take about 1.5 s
 * on two idle cores, the checking a fifth of it. At most LIN_PROCS ops of a
 * key are open at once (one per process), so the search stays near one
 * memoised configuration per operation (the figures printed show it), each
 * n/8 bytes: a few MB per key. The search is still bounded
 * (LIN_STEPS_DEFAULT steps and LIN_MEMO_DEFAULT configurations per key);
 * hitting a bound fails the test rather than passing it.
 *
 * The broken variant (lin_worker's "broken": SETNX and GETSET each a GET,
 * a sched_yield and a SET) must be caught within BROKEN_ROUNDS_MAX rounds.
 *
 * SHMKV_SEED replays a run's random choices (not its scheduling);
 * SHMKV_LONG=1 runs the long form (otherwise shown as skipped).
 * Workers never assert: they report through their log and exit status.
 */
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers/lincheck.h"
#include "helpers/mp.h"
#include "helpers/rng.h"
#include "helpers/testutil.h"

#define LIN_PROCS 4
#define LIN_OPS	  4000
#define LIN_KEYS  3
/* A sanitized worker spends ~50 ms in LeakSanitizer's exit check, most of
 * a round: fewer rounds keep that build's run short. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LIN_ROUNDS 10
#else
#define LIN_ROUNDS 100
#endif
#define LIN_ROUNDS_LONG	  2000
#define BROKEN_ROUNDS_MAX 20
/* Messages show this many ops of the blamed key around the blamed op. */
#define WINDOW_BEFORE 10
#define WINDOW_AFTER  4

struct round {
	shmkv_t *kv;
	const char *name; /* the store */
	char prefix[32];  /* of this round's keys */
	uint64_t seed;
	bool broken;
	struct lin_op *ops; /* all workers' logs, concatenated */
	size_t n;
};

struct totals {
	size_t rounds, ops, histories, overlapping, memo;
	uint64_t steps;
};

/* build/tests/lin_worker: the Makefile names the build directory; else
 * the worker is beside this binary. */
static void worker_path(char *buf, size_t cap)
{
#ifdef SHMKV_BUILD_DIR
	int n = snprintf(buf, cap, "%s/tests/lin_worker", SHMKV_BUILD_DIR);
#else
	char exe[512];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int n = -1;

	if (len > 0) {
		exe[len] = '\0';
		n = snprintf(buf, cap, "%s/lin_worker", dirname(exe));
	}
#endif
	cr_assert(n > 0 && (size_t)n < cap, "path of lin_worker too long");
	cr_assert_eq(access(buf, X_OK), 0, "no program %s: %s", buf,
		     strerror(errno));
}

/* Starts worker @slot; it blocks reading @go until the test closes it. */
static pid_t spawn(const struct round *r, const char *path, int log_fd, int go,
		   unsigned slot)
{
	char fd_s[16], slot_s[16], go_s[16], seed_s[32], ops_s[16], keys_s[16];
	pid_t pid;

	snprintf(fd_s, sizeof(fd_s), "%d", log_fd);
	snprintf(slot_s, sizeof(slot_s), "%u", slot);
	snprintf(go_s, sizeof(go_s), "%d", go);
	snprintf(seed_s, sizeof(seed_s), "%llu",
		 (unsigned long long)(r->seed + slot * 0x1000193ull));
	snprintf(ops_s, sizeof(ops_s), "%d", LIN_OPS);
	snprintf(keys_s, sizeof(keys_s), "%d", LIN_KEYS);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		/* Only these two descriptors cross exec. */
		fcntl(log_fd, F_SETFD, 0);
		fcntl(go, F_SETFD, 0);
		execl(path, path, r->name, fd_s, slot_s, go_s, seed_s, ops_s,
		      keys_s, r->prefix, r->broken ? "broken" : (char *)NULL,
		      (char *)NULL);
		_exit(127);
	}
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	return pid;
}

/* Reaps the workers; returns a message for the first that failed. */
static bool reap(const pid_t *pid, const struct lin_log *logs, char *why,
		 size_t cap)
{
	bool ok = true;

	for (unsigned w = 0; w < LIN_PROCS; w++) {
		int st = 0;

		while (waitpid(pid[w], &st, 0) < 0 && errno == EINTR)
			;
		if (!ok || (WIFEXITED(st) && WEXITSTATUS(st) == 0))
			continue;
		ok = false;
		snprintf(why, cap, "worker %u: %s %d: %s", w,
			 WIFEXITED(st) ? "exit" : "signal",
			 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
			 logs[w].magic == LIN_LOG_MAGIC ? logs[w].why
							: "(no log)");
	}
	return ok;
}

/* Concatenates the workers' logs into r->ops. */
static void collect(struct round *r, const struct lin_log *logs)
{
	r->n = 0;
	for (unsigned w = 0; w < LIN_PROCS; w++) {
		cr_assert_eq(logs[w].magic, LIN_LOG_MAGIC, "worker %u", w);
		cr_assert_eq(logs[w].count, LIN_OPS, "worker %u logged %u", w,
			     logs[w].count);
		memcpy(r->ops + r->n, logs[w].ops,
		       logs[w].count * sizeof(*r->ops));
		r->n += logs[w].count;
	}
}

/* Deletes the round's keys, so that rounds without end never fill the
 * table: each round starts on keys that are missing. */
static void forget_keys(const struct round *r)
{
	char key[64];

	for (unsigned k = 0; k < LIN_KEYS; k++) {
		int n = snprintf(key, sizeof(key), "%s%u", r->prefix, k);
		int rc = shmkv_del(r->kv, key, (size_t)n);

		cr_assert(rc == 0 || rc == 1, "DEL %s: %s", key, tu_rcname(rc));
	}
}

/* Runs one round of workers and fills r->ops with their history. */
static void run_round(struct round *r, const char *path)
{
	size_t len = LIN_PROCS * sizeof(struct lin_log);
	int log_fd = memfd_create("shmkv-lin-log", MFD_CLOEXEC);
	int go[2];
	pid_t pid[LIN_PROCS];
	struct lin_log *logs;
	char why[256] = "";

	cr_assert_geq(log_fd, 0, "memfd_create: %s", strerror(errno));
	cr_assert_eq(ftruncate(log_fd, (off_t)len), 0, "ftruncate");
	logs = mmap(NULL, len, PROT_READ, MAP_SHARED, log_fd, 0);
	cr_assert_neq(logs, MAP_FAILED, "mmap: %s", strerror(errno));
	cr_assert_eq(pipe2(go, O_CLOEXEC), 0, "pipe: %s", strerror(errno));
	for (unsigned w = 0; w < LIN_PROCS; w++)
		pid[w] = spawn(r, path, log_fd, go[0], w);
	/* End of file on the pipe starts every worker at once. */
	close(go[0]);
	close(go[1]);
	close(log_fd);
	cr_assert(reap(pid, logs, why, sizeof(why)), "round %s: %s", r->prefix,
		  why);
	collect(r, logs);
	munmap(logs, len);
	forget_keys(r);
}

static int by_call(const void *a, const void *b)
{
	const struct lin_op *x = *(const struct lin_op *const *)a;
	const struct lin_op *y = *(const struct lin_op *const *)b;

	return (x->call > y->call) - (x->call < y->call);
}

/*
 * The blamed key's ops around the blamed one, in invoke order, into @buf:
 * enough to see by hand why no linearization exists.
 */
static void describe(const struct round *r, const struct lin_report *rep,
		     char *buf, size_t cap)
{
	const struct lin_op **k = calloc(r->n, sizeof(*k));
	size_t m = 0, at = 0, used = 0;

	cr_assert_not_null(k);
	for (size_t i = 0; i < r->n; i++)
		if (r->ops[i].key == rep->key)
			k[m++] = &r->ops[i];
	qsort(k, m, sizeof(*k), by_call);
	while (at < m && k[at] != &r->ops[rep->stuck])
		at++;
	buf[0] = '\0';
	for (size_t i = at > WINDOW_BEFORE ? at - WINDOW_BEFORE : 0;
	     i < m && i <= at + WINDOW_AFTER && used + 1 < cap; i++) {
		char line[160];

		lin_op_describe(k[i], r->ops[rep->stuck].call, line,
				sizeof(line));
		used += (size_t)snprintf(buf + used, cap - used, "\n  %s %s",
					 i == at ? "=>" : "  ", line);
	}
	free(k);
}

static struct lin_report check_round(const struct round *r, struct totals *t)
{
	struct lin_report rep;
	int rc = lin_check(r->ops, r->n, NULL, &rep);

	cr_assert_eq(rc, 0, "lin_check: %s", tu_rcname(rc));
	t->rounds++;
	t->ops += rep.ops;
	t->histories += rep.histories;
	t->overlapping += rep.overlapping;
	t->steps += rep.steps;
	t->memo += rep.memo;
	return rep;
}

static void round_init(struct round *r, shmkv_t *kv, const char *name,
		       uint64_t *rng, unsigned i, bool broken)
{
	r->kv = kv;
	r->name = name;
	r->seed = rng_next(rng);
	r->broken = broken;
	snprintf(r->prefix, sizeof(r->prefix), "%s%u.", broken ? "b" : "r", i);
	if (!r->ops)
		r->ops = calloc(LIN_PROCS * LIN_OPS, sizeof(*r->ops));
	cr_assert_not_null(r->ops);
}

static void print_totals(const char *what, const struct totals *t)
{
	/* stderr, so that the figure shows in every run (cr_log_info
	 * needs --verbose). */
	fprintf(stderr,
		"lincheck: %zu ops checked in %zu histories (%s: %zu rounds, "
		"%zu ops concurrent with another on their key, %llu search "
		"steps, %zu configurations)\n",
		t->ops, t->histories, what, t->rounds, t->overlapping,
		(unsigned long long)t->steps, t->memo);
}

/* Rounds on the real store: every history must be linearizable. */
static void run_store(unsigned rounds)
{
	struct shmkv_config cfg = tu_config(1024, 64, 1024, 0);
	char name[TU_NAME_CAP], path[512], msg[4096] = "";
	shmkv_t *kv = tu_create(&cfg, name);
	uint64_t seed = mp_run_seed(), rng = seed;
	struct round r = { .ops = NULL };
	struct totals t = { .rounds = 0 };

	worker_path(path, sizeof(path));
	for (unsigned i = 0; i < rounds; i++) {
		struct lin_report rep;

		round_init(&r, kv, name, &rng, i, false);
		run_round(&r, path);
		rep = check_round(&r, &t);
		if (rep.verdict != LIN_LINEARIZABLE)
			describe(&r, &rep, msg, sizeof(msg));
		cr_assert_eq(
			rep.verdict, LIN_LINEARIZABLE,
			"round %u (SHMKV_SEED=%llu): %s on key %u after %zu "
			"ops linearized:%s",
			i, (unsigned long long)seed,
			rep.verdict == LIN_UNKNOWN ? "search bound hit"
						   : "not linearizable",
			rep.key, rep.depth, msg);
	}
	/* A history with no concurrency would prove nothing. */
	cr_assert_gt(t.overlapping, t.ops / 1000,
		     "only %zu of %zu ops overlapped another", t.overlapping,
		     t.ops);
	print_totals("real store", &t);
	free(r.ops);
	shmkv_close(kv);
}

TestSuite(lin_store, .fini = tu_teardown);

Test(lin_store, records_linearizable_histories_from_four_processes)
{
	run_store(LIN_ROUNDS);
}

Test(lin_store, records_linearizable_histories_over_a_long_run)
{
	const char *env = getenv("SHMKV_LONG");

	if (!env || strcmp(env, "1"))
		cr_skip_test("%d rounds run only with SHMKV_LONG=1",
			     LIN_ROUNDS_LONG);
	run_store(LIN_ROUNDS_LONG);
}

Test(lin_store, rejects_setnx_and_getset_built_from_get_then_set)
{
	struct shmkv_config cfg = tu_config(1024, 64, 1024, 0);
	char name[TU_NAME_CAP], path[512], msg[4096] = "";
	shmkv_t *kv = tu_create(&cfg, name);
	uint64_t rng = mp_run_seed();
	struct round r = { .ops = NULL };
	struct totals t = { .rounds = 0 };
	struct lin_report rep = { .verdict = LIN_LINEARIZABLE };

	worker_path(path, sizeof(path));
	for (unsigned i = 0; i < BROKEN_ROUNDS_MAX; i++) {
		round_init(&r, kv, name, &rng, i, true);
		run_round(&r, path);
		rep = check_round(&r, &t);
		if (rep.verdict == LIN_NOT_LINEARIZABLE)
			break;
	}
	cr_assert_eq(rep.verdict, LIN_NOT_LINEARIZABLE,
		     "the broken SETNX/GETSET passed %zu rounds (%zu ops)",
		     t.rounds, t.ops);
	describe(&r, &rep, msg, sizeof(msg));
	cr_log_info("broken variant caught in round %zu, on key %u after "
		    "%zu ops linearized:%s",
		    t.rounds, rep.key, rep.depth, msg);
	print_totals("broken variant", &t);
	free(r.ops);
	shmkv_close(kv);
}
