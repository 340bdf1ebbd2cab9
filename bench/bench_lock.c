/*
 * bench_lock.c - the shmkv locks beside the locks a single host offers
 * (kinds: lib/lockkinds.h).
 *
 * Figures, each the median of --runs runs (min and max beside it), the
 * runs taken in rounds over all kinds:
 *   cycle         uncontended acquire + release in one process, ns of its
 *                 CPU time each (Redis: wall time, the server works too);
 *   contendedN    N processes (2, 4, 8: more than the cores included)
 *                 share a fixed number of acquire/++counter/release
 *                 rounds; ns per acquisition for the whole team. The
 *                 shared counter must come out exact or the bench fails;
 *   handoff       a waiter blocked in acquire while the holder releases:
 *                 ns from just before the release call to the waiter
 *                 running (each round is a sample).
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/kv.h"
#include "lib/lockkinds.h"

#define MAXPROC	   8
#define ROUNDS_MAX 1000
#define SPIN_MAX   2000000000ul /* sched_yield rounds: only ends a hang */

/* Shared by every process of the bench (set up before fork). */
struct shared {
	volatile uint64_t counter; /* only touched under the lock */
	atomic_int ready;
	atomic_int go;
	atomic_int phase;
	atomic_uint_least64_t t_release;
	uint64_t end_ns[MAXPROC];
	uint64_t lat_ns[ROUNDS_MAX];
};

static struct shared *sh;
static struct lock_env env;

static void spin_until(atomic_int *v, int want)
{
	for (unsigned long i = 0; atomic_load(v) < want; i++) {
		if (i > SPIN_MAX)
			lock_die("wait", "a process never arrived");
		sched_yield();
	}
}

/* One process alone: its CPU time (bench_cpu_ns), except for Redis,
 * whose cycle is mostly another process's work: wall time. */
static double run_cycle(enum lock_kind k, uint64_t ops)
{
	uint64_t (*clock)(void) = k == LK_REDIS ? bench_now_ns : bench_cpu_ns;
	struct lock_proc p;
	uint64_t t0;

	lock_proc_open(&p, &env, k);
	t0 = clock();
	for (uint64_t i = 0; i < ops; i++) {
		lock_acquire(&p);
		lock_release(&p);
	}
	t0 = clock() - t0;
	lock_proc_close(&p);
	return (double)t0 / (double)ops;
}

static void contender(enum lock_kind k, int idx, uint64_t ops)
{
	struct lock_proc p;

	lock_proc_open(&p, &env, k);
	atomic_fetch_add(&sh->ready, 1);
	spin_until(&sh->go, 1);
	for (uint64_t i = 0; i < ops; i++) {
		lock_acquire(&p);
		sh->counter = sh->counter + 1;
		lock_release(&p);
	}
	sh->end_ns[idx] = bench_now_ns();
	lock_proc_close(&p);
	_exit(0);
}

static void reap_all(const pid_t *pid, int n)
{
	for (int i = 0; i < n; i++) {
		int st;

		if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			lock_die("contender", "a process failed");
	}
}

/* @n processes, @total acquisitions among them. */
static double run_contended(enum lock_kind k, int n, uint64_t total)
{
	uint64_t ops = total / (uint64_t)n, t0, end = 0;
	pid_t pid[MAXPROC];

	sh->counter = 0;
	atomic_store(&sh->ready, 0);
	atomic_store(&sh->go, 0);
	for (int i = 0; i < n; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			contender(k, i, ops);
		if (pid[i] < 0)
			lock_die("fork", strerror(errno));
	}
	spin_until(&sh->ready, n);
	t0 = bench_now_ns();
	atomic_store(&sh->go, 1);
	reap_all(pid, n);
	if (sh->counter != (uint64_t)n * ops)
		lock_die(lock_kind_name[k],
			 "counter is off: the lock let two in");
	for (int i = 0; i < n; i++)
		end = sh->end_ns[i] > end ? sh->end_ns[i] : end;
	return (double)(end - t0) / (double)(n * ops);
}

/*
 * Handoff: the waiter blocks, then the holder releases. Phases per round:
 * 1 holder has it; 2 waiter about to block; 3 waiter got it and released.
 */
static void handoff_waiter(enum lock_kind k, unsigned rounds)
{
	struct lock_proc p;

	lock_proc_open(&p, &env, k);
	for (unsigned r = 0; r < rounds; r++) {
		spin_until(&sh->phase, 3 * (int)r + 1);
		atomic_store(&sh->phase, 3 * (int)r + 2);
		lock_acquire(&p);
		sh->lat_ns[r] = bench_now_ns() - atomic_load(&sh->t_release);
		lock_release(&p);
		atomic_store(&sh->phase, 3 * (int)r + 3);
	}
	lock_proc_close(&p);
	_exit(0);
}

static void run_handoff(enum lock_kind k, unsigned rounds,
			struct bench_stats *st)
{
	struct timespec settle = { .tv_nsec = 1000000 };
	double lat[ROUNDS_MAX];
	struct lock_proc p;
	pid_t pid;

	atomic_store(&sh->phase, 0);
	pid = fork();
	if (pid == 0)
		handoff_waiter(k, rounds);
	if (pid < 0)
		lock_die("fork", strerror(errno));
	lock_proc_open(&p, &env, k);
	for (unsigned r = 0; r < rounds; r++) {
		lock_acquire(&p);
		atomic_store(&sh->phase, 3 * (int)r + 1);
		spin_until(&sh->phase, 3 * (int)r + 2);
		nanosleep(&settle, NULL); /* the waiter is blocked by now */
		atomic_store(&sh->t_release, bench_now_ns());
		lock_release(&p);
		spin_until(&sh->phase, 3 * (int)r + 3);
		lat[r] = (double)sh->lat_ns[r];
	}
	lock_proc_close(&p);
	reap_all(&pid, 1);
	bench_stats_compute(lat, rounds, 1, st);
}

/*
 * Measuring and printing.
 */
enum fig { CYCLE, PROCS2, PROCS4, PROCS8, HANDOFF, NFIGS };
static const char *const fig_name[NFIGS] = { "cycle", "2 procs", "4 procs",
					     "8 procs", "handoff" };
static const char *const fig_tag[NFIGS] = { "cycle", "contended2", "contended4",
					    "contended8", "handoff" };
static const int fig_procs[NFIGS] = { 1, 2, 4, 8, 2 };
static struct bench_stats res[LK_N][NFIGS];
static int have[LK_N];

struct plan {
	unsigned runs, rounds;
	uint64_t cycle_ops[LK_N];
	uint64_t cont_total[LK_N];
};

static void measure(const struct plan *pl)
{
	static double s[LK_N][PROCS8 + 1][BENCH_RUNS_MAX];

	for (unsigned r = 0; r < pl->runs; r++) {
		for (int k = 0; k < LK_N; k++) {
			if (!have[k])
				continue;
			s[k][CYCLE][r] = run_cycle(k, pl->cycle_ops[k]);
			for (int f = PROCS2; f <= PROCS8; f++)
				s[k][f][r] = run_contended(k, fig_procs[f],
							   pl->cont_total[k]);
		}
		bench_progress(r + 1, pl->runs);
	}
	for (int k = 0; k < LK_N; k++) {
		if (!have[k])
			continue;
		bench_stats_compute(s[k][CYCLE], pl->runs, pl->cycle_ops[k],
				    &res[k][CYCLE]);
		for (int f = PROCS2; f <= PROCS8; f++)
			bench_stats_compute(s[k][f], pl->runs,
					    pl->cont_total[k], &res[k][f]);
		run_handoff(k, pl->rounds, &res[k][HANDOFF]);
	}
}

static void print_table(void)
{
	printf("\n%-20s", "ns (median [min-max])");
	for (int f = 0; f < NFIGS; f++)
		printf(" %20s", fig_name[f]);
	printf("\n");
	for (int k = 0; k < LK_N; k++) {
		printf("%-20s", lock_kind_name[k]);
		for (int f = 0; f < NFIGS && have[k]; f++) {
			char cell[64];

			snprintf(cell, sizeof(cell), "%.0f [%.0f-%.0f]",
				 res[k][f].median, res[k][f].min,
				 res[k][f].max);
			printf(" %20s", cell);
		}
		printf("%s\n", have[k] ? "" : "  (skipped)");
	}
}

/* The ratios of medians the table is followed by: @what is a / b in @f. */
static const struct ratio {
	const char *what;
	enum lock_kind a, b;
	enum fig f;
} ratios[] = {
	{ "SETNX+DEL cycle / robust mutex cycle", LK_SETNX, LK_ROBUST, CYCLE },
	{ "SETNX+DEL prepared cycle / robust mutex cycle", LK_SETNX_PREP,
	  LK_ROBUST, CYCLE },
	{ "safe lock cycle / robust mutex cycle", LK_SAFE, LK_ROBUST, CYCLE },
	{ "safe lock, waiter killed / safe lock cycle", LK_SAFE_SCARRED,
	  LK_SAFE, CYCLE },
	{ "pattern lock cycle / robust mutex cycle", LK_PATTERN, LK_ROBUST,
	  CYCLE },
	{ "flock cycle / SETNX+DEL prepared cycle", LK_FLOCK, LK_SETNX_PREP,
	  CYCLE },
	{ "OFD fcntl cycle / SETNX+DEL prepared cycle", LK_OFD, LK_SETNX_PREP,
	  CYCLE },
	{ "redis cycle / SETNX+DEL prepared cycle", LK_REDIS, LK_SETNX_PREP,
	  CYCLE },
	{ "safe lock 8 procs / robust mutex 8 procs", LK_SAFE, LK_ROBUST,
	  PROCS8 },
	{ "safe lock handoff / robust mutex handoff", LK_SAFE, LK_ROBUST,
	  HANDOFF },
};

static void print_ratios(void)
{
	printf("\nratios of medians\n");
	for (size_t i = 0; i < sizeof(ratios) / sizeof(ratios[0]); i++) {
		const struct ratio *r = &ratios[i];

		if (have[r->a] && have[r->b])
			printf("  %-46s %8.2fx\n", r->what,
			       res[r->a][r->f].median / res[r->b][r->f].median);
	}
}

static int write_csv(const char *path)
{
	struct bench_csv csv;
	int err = bench_csv_open(&csv, path,
				 "kind,fig,median_ns,min_ns,max_ns,runs,"
				 "ops_per_run");

	for (int k = 0; k < LK_N && !err; k++)
		for (int f = 0; f < NFIGS && !err && have[k]; f++)
			err = bench_csv_row(
				&csv, "%s,%s,%.2f,%.2f,%.2f,%u,%llu",
				lock_kind_tag[k], fig_tag[f], res[k][f].median,
				res[k][f].min, res[k][f].max, res[k][f].runs,
				(unsigned long long)res[k][f].ops_per_run);
	if (err) {
		bench_csv_abort(&csv);
		return err;
	}
	return bench_csv_close(&csv);
}

static void make_plan(int quick, unsigned runs, struct plan *pl)
{
	uint64_t fast = quick ? 5000 : 200000, cont = quick ? 1600 : 80000;

	pl->runs = runs;
	for (int k = 0; k < LK_N; k++) {
		pl->cycle_ops[k] = k == LK_REDIS ? fast / 200 : fast;
		pl->cont_total[k] = k == LK_REDIS ? cont / 100 : cont;
	}
	pl->rounds = quick ? 20 : 300;
}

int main(int argc, char **argv)
{
	struct bench_redis redis = { 0 };
	struct bench_opts o;
	struct plan pl;
	int err;

	bench_opts_parse(argc, argv,
			 "The shmkv locks beside pthread, flock, OFD fcntl and "
			 "Redis locks.",
			 NULL, 0, &o);
	bench_begin(&o, 2, 7);
	make_plan(o.quick, o.runs, &pl);
	sh = bench_shm_alloc(sizeof(*sh));
	if (!sh || (err = lock_env_init(&env)))
		lock_die("setup", sh ? shmkv_strerror(err) : "out of memory");
	for (int k = 0; k < LK_N; k++)
		have[k] = k != LK_REDIS;
	if (bench_redis_start(&redis) == 0 &&
	    lock_env_redis(&env, redis.port) == 0)
		have[LK_REDIS] = 1;
	bench_title("lock benchmarks", o.quick);
	printf("# median [min-max] of %u runs in rounds; handoff: of %u "
	       "rounds\n",
	       pl.runs, pl.rounds);
	if (!have[LK_REDIS])
		printf("# redis: skipped (redis-server could not be started "
		       "on 127.0.0.1)\n");
	fflush(stdout);
	measure(&pl);
	bench_redis_stop(&redis);
	print_table();
	print_ratios();
	printf("# load average at the end: %.2f\n", bench_loadavg());
	if (o.csv && write_csv(o.csv))
		lock_die(o.csv, "cannot write the CSV");
	return 0;
}
