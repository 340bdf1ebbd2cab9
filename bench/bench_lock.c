/*
 * bench_lock.c - the shmkv locks beside the locks a single host offers.
 *
 * Kinds: the SETNX-page pattern lock, the safe lock, a process-shared
 * robust pthread mutex, flock(2) on a file, and Redis SET NX PX + a Lua
 * compare-and-delete over loopback (hiredis; a redis-server the bench
 * starts on 127.0.0.1 and a free port, and stops by pid; skipped with a
 * message if it cannot be started).
 *
 * Figures, each the median of --runs runs (min and max beside it):
 *   cycle      uncontended acquire + release, one process, ns per cycle;
 *   N procs    N processes (2, 4) each doing K acquire/++counter/release,
 *              ns per acquisition of the whole team; the shared counter
 *              must come out exactly N*K or the bench fails;
 *   handoff    a waiter blocked in acquire while the holder releases:
 *              ns from just before the release call to the waiter running
 *              (median over rounds; each round is a sample).
 * A Redis waiter cannot block: it retries SET NX back to back, as the
 * client libraries do (with a sleep, which would only make it slower).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "shmkv.h"
#include "shmkv_lock.h"

#define LEASE_MS   10000
#define MAXPROC	   4
#define ROUNDS_MAX 1000
#define SPIN_MAX   2000000000ul /* sched_yield rounds: only ends a hang */

enum kind { PATTERN, SAFE, ROBUST, FLOCK, REDIS, NKINDS };
static const char *const kind_name[NKINDS] = { "pattern lock", "safe lock",
					       "robust mutex", "flock",
					       "redis SET NX PX" };
static const char *const kind_tag[NKINDS] = { "pattern", "safe", "robust",
					      "flock", "redis" };

/* Shared by every process of the bench (MAP_SHARED, set up before fork). */
struct shared {
	pthread_mutex_t mutex;
	volatile uint64_t counter; /* only touched under the lock */
	atomic_int ready;
	atomic_int go;
	atomic_int phase;
	atomic_uint_least64_t t_release;
	uint64_t end_ns[MAXPROC];
	uint64_t lat_ns[ROUNDS_MAX];
};

static struct shared *sh;
static shmkv_t *kv;
static char store_name[64];
static char flock_path[64] = "";
static int redis_port;
static pid_t redis_pid;
static const char *redis_sha;
static char redis_sha_buf[64];

/* One process's handle on the lock of the kind under test. */
struct proc {
	enum kind kind;
	struct shmkv_lock lk;
	int64_t expiry;
	int fd;
	redisContext *rc;
	char token[32];
	uint64_t n;
};

static pid_t main_pid;

/* In a forked process, _exit: only the main process cleans up. */
static void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_lock[%d]: %s: %s\n", (int)getpid(), what, why);
	if (getpid() != main_pid)
		_exit(1);
	exit(1);
}

/*
 * The Redis lock: SET key token NX PX; release by a script that deletes
 * the key only if it still holds our token.
 */
static const char release_lua[] =
	"if redis.call('get', KEYS[1]) == ARGV[1] then "
	"return redis.call('del', KEYS[1]) else return 0 end";

static int redis_set_nx(struct proc *p)
{
	redisReply *r;
	int ok;

	snprintf(p->token, sizeof(p->token), "%d:%llu", (int)getpid(),
		 (unsigned long long)++p->n);
	r = redisCommand(p->rc, "SET lk %s NX PX %d", p->token, LEASE_MS);
	if (r == NULL)
		die("redis SET", p->rc->errstr);
	ok = r->type == REDIS_REPLY_STATUS;
	freeReplyObject(r);
	return ok;
}

static void redis_release(struct proc *p)
{
	redisReply *r = redisCommand(p->rc, "EVALSHA %s 1 lk %s", redis_sha,
				     p->token);

	if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer != 1)
		die("redis release", r ? "lock was not ours" : p->rc->errstr);
	freeReplyObject(r);
}

static void do_lock(struct proc *p)
{
	int rc;

	switch (p->kind) {
	case PATTERN:
		rc = shmkv_pattern_lock(kv, "bench", LEASE_MS,
					SHMKV_LOCK_FOREVER, &p->expiry);
		if (rc)
			die("pattern lock", shmkv_strerror(rc));
		break;
	case SAFE:
		rc = shmkv_lock_acquire(&p->lk, LEASE_MS);
		if (rc)
			die("safe lock", shmkv_strerror(rc));
		break;
	case ROBUST:
		if (pthread_mutex_lock(&sh->mutex) == EOWNERDEAD)
			pthread_mutex_consistent(&sh->mutex);
		break;
	case FLOCK:
		if (flock(p->fd, LOCK_EX))
			die("flock", strerror(errno));
		break;
	default:
		while (!redis_set_nx(p))
			;
	}
}

static void do_unlock(struct proc *p)
{
	int rc = 0;

	switch (p->kind) {
	case PATTERN:
		rc = shmkv_pattern_unlock(kv, "bench", p->expiry);
		break;
	case SAFE:
		rc = shmkv_lock_release(&p->lk);
		break;
	case ROBUST:
		pthread_mutex_unlock(&sh->mutex);
		break;
	case FLOCK:
		flock(p->fd, LOCK_UN);
		break;
	default:
		redis_release(p);
	}
	if (rc)
		die("unlock", shmkv_strerror(rc));
}

/* Per process: flock needs its own open file, Redis its own socket. */
static void proc_open(struct proc *p, enum kind k)
{
	int rc;

	memset(p, 0, sizeof(*p));
	p->kind = k;
	p->fd = -1;
	if (k == SAFE && (rc = shmkv_lock_init(kv, &p->lk, "bench")))
		die("lock init", shmkv_strerror(rc));
	if (k == FLOCK && (p->fd = open(flock_path, O_RDWR | O_CLOEXEC)) < 0)
		die(flock_path, strerror(errno));
	if (k == REDIS) {
		p->rc = redisConnect("127.0.0.1", redis_port);
		if (p->rc == NULL || p->rc->err)
			die("redis connect", p->rc ? p->rc->errstr : "?");
	}
}

static void proc_close(struct proc *p)
{
	if (p->fd >= 0)
		close(p->fd);
	if (p->rc)
		redisFree(p->rc);
}

static void spin_until(atomic_int *v, int want)
{
	for (unsigned long i = 0; atomic_load(v) < want; i++) {
		if (i > SPIN_MAX)
			die("wait", "a process never arrived");
		sched_yield();
	}
}

/*
 * Uncontended cycle.
 */
static double run_cycle(enum kind k, uint64_t ops)
{
	struct proc p;
	uint64_t t0;

	proc_open(&p, k);
	t0 = bench_now_ns();
	for (uint64_t i = 0; i < ops; i++) {
		do_lock(&p);
		do_unlock(&p);
	}
	t0 = bench_now_ns() - t0;
	proc_close(&p);
	return (double)t0 / (double)ops;
}

/*
 * N processes contending.
 */
static void contender(enum kind k, int idx, uint64_t ops)
{
	struct proc p;

	proc_open(&p, k);
	atomic_fetch_add(&sh->ready, 1);
	spin_until(&sh->go, 1);
	for (uint64_t i = 0; i < ops; i++) {
		do_lock(&p);
		sh->counter = sh->counter + 1;
		do_unlock(&p);
	}
	sh->end_ns[idx] = bench_now_ns();
	proc_close(&p);
	_exit(0);
}

static void reap_all(const pid_t *pid, int n)
{
	for (int i = 0; i < n; i++) {
		int st;

		if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			die("contender", "a process failed");
	}
}

static double run_contended(enum kind k, int n, uint64_t ops)
{
	pid_t pid[MAXPROC];
	uint64_t t0, end = 0;

	sh->counter = 0;
	atomic_store(&sh->ready, 0);
	atomic_store(&sh->go, 0);
	for (int i = 0; i < n; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			contender(k, i, ops);
		if (pid[i] < 0)
			die("fork", strerror(errno));
	}
	spin_until(&sh->ready, n);
	t0 = bench_now_ns();
	atomic_store(&sh->go, 1);
	reap_all(pid, n);
	if (sh->counter != (uint64_t)n * ops)
		die(kind_name[k], "counter is off: the lock let two in");
	for (int i = 0; i < n; i++)
		end = sh->end_ns[i] > end ? sh->end_ns[i] : end;
	return (double)(end - t0) / (double)(n * ops);
}

/*
 * Handoff: the waiter blocks, then the holder releases (see the top).
 * Phases per round: 1 holder has it; 2 waiter about to block; 3 waiter
 * got it and released.
 */
static void handoff_waiter(enum kind k, unsigned rounds)
{
	struct proc p;

	proc_open(&p, k);
	for (unsigned r = 0; r < rounds; r++) {
		spin_until(&sh->phase, 3 * (int)r + 1);
		atomic_store(&sh->phase, 3 * (int)r + 2);
		do_lock(&p);
		sh->lat_ns[r] = bench_now_ns() - atomic_load(&sh->t_release);
		do_unlock(&p);
		atomic_store(&sh->phase, 3 * (int)r + 3);
	}
	proc_close(&p);
	_exit(0);
}

static void run_handoff(enum kind k, unsigned rounds, struct bench_stats *st)
{
	struct proc p;
	struct timespec settle = { .tv_nsec = 1000000 };
	double lat[ROUNDS_MAX];
	pid_t pid;

	atomic_store(&sh->phase, 0);
	pid = fork();
	if (pid == 0)
		handoff_waiter(k, rounds);
	proc_open(&p, k);
	for (unsigned r = 0; r < rounds; r++) {
		do_lock(&p);
		atomic_store(&sh->phase, 3 * (int)r + 1);
		spin_until(&sh->phase, 3 * (int)r + 2);
		nanosleep(&settle, NULL); /* the waiter is blocked by now */
		atomic_store(&sh->t_release, bench_now_ns());
		do_unlock(&p);
		spin_until(&sh->phase, 3 * (int)r + 3);
		lat[r] = (double)sh->lat_ns[r];
	}
	proc_close(&p);
	reap_all(&pid, 1);
	bench_stats_compute(lat, rounds, 1, st);
}

/*
 * Setup and teardown of what the kinds need.
 */
static void setup_shared(void)
{
	pthread_mutexattr_t a;
	int fd, rc;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap", strerror(errno));
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&sh->mutex, &a);
	snprintf(store_name, sizeof(store_name), "/shmkv-bench-lock-%d",
		 (int)getpid());
	rc = shmkv_create(store_name, NULL, &kv);
	if (rc)
		die(store_name, shmkv_strerror(rc));
	snprintf(flock_path, sizeof(flock_path),
		 "/tmp/shmkv-bench-flock-XXXXXX");
	fd = mkstemp(flock_path);
	if (fd < 0)
		die("mkstemp", strerror(errno));
	close(fd);
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(s, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (s >= 0)
		close(s);
	return port;
}

static void spawn_redis(void)
{
	char port[16];
	int null = open("/dev/null", O_WRONLY);

	snprintf(port, sizeof(port), "%d", redis_port);
	redis_pid = fork();
	if (redis_pid == 0) {
		dup2(null, 1);
		dup2(null, 2);
		execlp("redis-server", "redis-server", "--port", port, "--bind",
		       "127.0.0.1", "--save", "", "--appendonly", "no",
		       (char *)NULL);
		_exit(127);
	}
	close(null);
}

/* Return: 0 when the server answers and holds our script, else -1. */
static int start_redis(void)
{
	struct timespec pause = { .tv_nsec = 20000000 };
	redisContext *c = NULL;
	redisReply *r;

	redis_port = free_port();
	if (redis_port < 0)
		return -1;
	spawn_redis();
	for (int i = 0; i < 250 && redis_pid > 0; i++) {
		if (waitpid(redis_pid, NULL, WNOHANG) == redis_pid) {
			redis_pid = 0; /* exited: not installed or failed */
			break;
		}
		c = redisConnect("127.0.0.1", redis_port);
		if (c && !c->err)
			break;
		redisFree(c);
		c = NULL;
		nanosleep(&pause, NULL);
	}
	if (c == NULL)
		return -1;
	r = redisCommand(c, "SCRIPT LOAD %s", release_lua);
	if (r && r->type == REDIS_REPLY_STRING) {
		snprintf(redis_sha_buf, sizeof(redis_sha_buf), "%s", r->str);
		redis_sha = redis_sha_buf;
	}
	freeReplyObject(r);
	redisFree(c);
	return redis_sha ? 0 : -1;
}

static void cleanup(void)
{
	if (getpid() != main_pid)
		return;
	if (redis_pid > 0) {
		kill(redis_pid, SIGTERM);
		waitpid(redis_pid, NULL, 0);
		redis_pid = 0;
	}
	if (kv) {
		shmkv_close(kv);
		shmkv_unlink(store_name);
		kv = NULL;
	}
	if (flock_path[0] && flock_path[0] == '/')
		unlink(flock_path);
	flock_path[0] = '\0';
}

static void on_signal(int sig)
{
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * Measuring and printing.
 */
enum fig { CYCLE, PROCS2, PROCS4, HANDOFF, NFIGS };
static const char *const fig_name[NFIGS] = { "cycle", "2 procs", "4 procs",
					     "handoff" };
static const char *const fig_tag[NFIGS] = { "cycle", "contended2", "contended4",
					    "handoff" };
static struct bench_stats res[NKINDS][NFIGS];
static int have[NKINDS];

struct plan {
	unsigned runs;
	uint64_t cycle_ops[NKINDS];
	uint64_t cont_ops[NKINDS];
	unsigned rounds;
};

static void measure(enum kind k, const struct plan *pl)
{
	double s[3][1000];

	for (unsigned r = 0; r < pl->runs; r++) {
		s[0][r] = run_cycle(k, pl->cycle_ops[k]);
		s[1][r] = run_contended(k, 2, pl->cont_ops[k]);
		s[2][r] = run_contended(k, 4, pl->cont_ops[k]);
	}
	bench_stats_compute(s[0], pl->runs, pl->cycle_ops[k], &res[k][CYCLE]);
	bench_stats_compute(s[1], pl->runs, 2 * pl->cont_ops[k],
			    &res[k][PROCS2]);
	bench_stats_compute(s[2], pl->runs, 4 * pl->cont_ops[k],
			    &res[k][PROCS4]);
	run_handoff(k, pl->rounds, &res[k][HANDOFF]);
	have[k] = 1;
}

static void print_table(void)
{
	printf("\n%-16s", "ns (median)");
	for (int f = 0; f < NFIGS; f++)
		printf(" %22s", fig_name[f]);
	printf("\n");
	for (int k = 0; k < NKINDS; k++) {
		printf("%-16s", kind_name[k]);
		for (int f = 0; f < NFIGS && have[k]; f++) {
			char cell[64];

			snprintf(cell, sizeof(cell), "%.0f [%.0f-%.0f]",
				 res[k][f].median, res[k][f].min,
				 res[k][f].max);
			printf(" %22s", cell);
		}
		printf("%s\n", have[k] ? "" : "  (skipped)");
	}
}

static void ratio(const char *what, enum kind a, enum kind b, enum fig f)
{
	if (have[a] && have[b])
		printf("  %-44s %10.2fx\n", what,
		       res[a][f].median / res[b][f].median);
}

static void print_ratios(void)
{
	printf("\nratios of medians\n");
	ratio("safe lock cycle / robust mutex cycle", SAFE, ROBUST, CYCLE);
	ratio("pattern lock cycle / robust mutex cycle", PATTERN, ROBUST,
	      CYCLE);
	ratio("safe lock handoff / robust mutex handoff", SAFE, ROBUST,
	      HANDOFF);
	ratio("pattern lock handoff / robust mutex handoff", PATTERN, ROBUST,
	      HANDOFF);
	ratio("redis lock cycle / safe lock cycle", REDIS, SAFE, CYCLE);
	ratio("redis lock cycle / pattern lock cycle", REDIS, PATTERN, CYCLE);
	ratio("safe lock 4 procs / robust mutex 4 procs", SAFE, ROBUST, PROCS4);
	ratio("flock cycle / safe lock cycle", FLOCK, SAFE, CYCLE);
}

static int write_csv(const char *path)
{
	struct bench_csv csv;
	char name[64];
	int err = bench_csv_open(&csv, path);

	for (int k = 0; k < NKINDS && !err; k++)
		for (int f = 0; f < NFIGS && !err && have[k]; f++) {
			snprintf(name, sizeof(name), "lock_%s_%s", kind_tag[k],
				 fig_tag[f]);
			err = bench_csv_row(&csv, name, &res[k][f]);
		}
	if (err) {
		bench_csv_abort(&csv);
		return err;
	}
	return bench_csv_close(&csv);
}

static void make_plan(int quick, unsigned runs, struct plan *pl)
{
	uint64_t fast = quick ? 20000 : 400000, cont = quick ? 2000 : 50000;

	pl->runs = runs;
	for (int k = 0; k < NKINDS; k++) {
		pl->cycle_ops[k] = k == REDIS ? fast / 200 : fast;
		pl->cont_ops[k] = k == REDIS ? cont / 100 : cont;
	}
	pl->rounds = quick ? 20 : 300;
}

static unsigned parse_args(int argc, char **argv, int *quick, const char **csv)
{
	static const struct option longopts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "runs", required_argument, NULL, 'r' },
		{ "csv", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long runs = 0;
	int opt;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (opt == 'q')
			*quick = 1;
		else if (opt == 'c')
			*csv = optarg;
		else if (opt == 'r' &&
			 (runs = strtoul(optarg, NULL, 10)) >= 1 &&
			 runs <= 1000)
			continue;
		else {
			fprintf(opt == 'h' ? stdout : stderr,
				"usage: %s [--quick] [--runs N (1..1000)] "
				"[--csv PATH]\n",
				argv[0]);
			exit(opt == 'h' ? 0 : 2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0],
			argv[optind]);
		exit(2);
	}
	return runs ? (unsigned)runs : *quick ? 3 : 11;
}

int main(int argc, char **argv)
{
	struct bench_machine m;
	const char *csv = NULL;
	int quick = 0;
	unsigned runs = parse_args(argc, argv, &quick, &csv);
	struct plan pl;

	make_plan(quick, runs, &pl);
	main_pid = getpid();
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	setup_shared();
	bench_machine_describe(&m);
	printf("# shmkv %s lock benchmarks%s\n", SHMKV_VERSION_STRING,
	       quick ? " (QUICK: smoke run, figures not meaningful)" : "");
	bench_machine_print(stdout, &m);
	printf("# median [min-max] of %u runs; handoff: of %u rounds\n", runs,
	       pl.rounds);
	for (int k = 0; k < NKINDS; k++) {
		if (k == REDIS && start_redis() != 0) {
			printf("# redis: skipped (redis-server could not be "
			       "started on 127.0.0.1)\n");
			continue;
		}
		measure((enum kind)k, &pl);
	}
	print_table();
	print_ratios();
	if (csv && write_csv(csv))
		die(csv, "cannot write the CSV");
	return 0;
}
