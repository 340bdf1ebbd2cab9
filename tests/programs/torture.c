/*
 * torture - crash torture: SIGKILL workers at random moments, then audit.
 *
 * usage: torture [--seconds S] [--workers K] [--seed N] [--no-crash-points]
 *
 * Runs K torture_worker processes (random commands, both lock kinds; see
 * torture_worker.c) on a small store and, for S seconds, SIGKILLs a random
 * one after a random 0-3 ms and starts a new one in its place. In a build
 * with crash points (make FAULT=1) a third of the workers are also started
 * with SHMKV_CRASH_AT/SHMKV_CRASH_AFTER, so they die exactly between two
 * steps of a protocol. shmkv_recover runs beside the workers every 64
 * kills, and once a second the kills pause until every worker has made
 * progress (a store left unusable by a dead process would stall them).
 *
 * Then the workers are told to stop, and the audit checks: shmkv_recover
 * succeeds and a second run finds nothing; shmkv_check finds nothing;
 * value storage balances (blocks in use == live keys whose value is not
 * an inline integer or has a TTL; an integer without TTL is never kept in
 * a block, as the README says); every key's value is an integer or a
 * block value whose writer and sequence number the journal says existed;
 * each lock's counter lies in [completed, completed + killed inside], the
 * sections journalled (see torture.h); fencing tokens only grew.
 *
 * Prints a summary and "torture: N passed, M failed"; exits 1 on any
 * failure, keeping the store (its name is printed) for shmctl.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers/args.h"
#include "helpers/clock.h"
#include "helpers/journal.h"
#include "shmkv.h"
#include "shmkv_lock.h"
#include "helpers/torture.h"

#define RECOVER_EVERY  64    /* kills between recoveries beside workers */
#define PROGRESS_EVERY 1000  /* ms between progress checks */
#define PROGRESS_WAIT  10000 /* ms a worker may take for one command */
#define READY_WAIT     30000 /* ms a new worker may take to open the store */
#define STOP_WAIT      30000 /* ms workers may take to stop when asked */

/* The crash points, each with how many passes an armed worker makes
 * before it dies there: the rare ones on one of their first. */
static const struct {
	const char *name;
	unsigned after_max;
} points[] = {
	{ "slot_claimed", 300 },
	{ "key_written", 300 },
	{ "inserting", 300 },
	{ "yielded", 3 },
	{ "collided", 3 },
	{ "value_dead", 3 },
	{ "block_unpublished", 300 },
	{ "old_block_unfreed", 300 },
	{ "block_caching", 300 },
	{ "area_claimed", 300 },
	{ "area_written", 300 },
	{ "area_published", 300 },
	{ "swept_unfreed", 3 },
	{ "any", 300 },
};
#define NPOINTS (sizeof(points) / sizeof(points[0]))

/* A worker process, by the journal slot it writes. */
struct proc {
	pid_t pid; /* 0: the slot is free */
	uint32_t spawn;
	int lane;  /* the worker index it serves, -1 once we killed it */
	int armed; /* crash point index, or -1 */
};

struct sup {
	shmkv_t *kv;
	char name[64], worker[PATH_MAX];
	struct torture_journal *j;
	int jfd, nworkers;
	bool crash_points, stopping;
	uint64_t rng;
	struct proc proc[TORTURE_JOURNAL_SLOTS];
	int lane_slot[TORTURE_WORKERS_MAX]; /* its current process's slot */
	uint32_t seq_cap;
	struct torture_tally t; /* for the audit */
	/* Tallies. */
	uint64_t kills, crash_kills, ops, recovers, repairs;
	uint64_t point_hits[NPOINTS];
	uint64_t takeovers, full;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "torture: %s: %s\n", what, strerror(err));
	exit(1);
}

static int64_t now_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000000;
}

/*
 * Workers. A killed worker is reaped asynchronously: on a busy machine
 * its teardown waits for a CPU, and the next kill need not wait for it.
 * It keeps its journal slot until reaped, so nothing it wrote is lost.
 */

/* In the child: arm a crash point, then become torture_worker. */
static void exec_worker(struct sup *s, const struct proc *p, int ready,
			uint64_t seed)
{
	char fd[16], idx[16], spawn[16], sd[32], rfd[16];

	if (p->armed >= 0) {
		snprintf(sd, sizeof(sd), "%u",
			 1 + (unsigned)(seed % points[p->armed].after_max));
		setenv("SHMKV_CRASH_AT", points[p->armed].name, 1);
		setenv("SHMKV_CRASH_AFTER", sd, 1);
	}
	fcntl(ready, F_SETFD, 0);
	snprintf(fd, sizeof(fd), "%d", s->jfd);
	snprintf(idx, sizeof(idx), "%d", (int)(p - s->proc));
	snprintf(spawn, sizeof(spawn), "%u", p->spawn);
	snprintf(sd, sizeof(sd), "%llu", (unsigned long long)seed);
	snprintf(rfd, sizeof(rfd), "%d", ready);
	execl(s->worker, s->worker, s->name, fd, idx, spawn, sd, rfd,
	      (char *)NULL);
	fprintf(stderr, "torture: exec %s: %s\n", s->worker, strerror(errno));
	_exit(127);
}

/* Waits for the worker's ready byte; false if it died or hung first. */
static bool await_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;
	int n;

	do
		n = poll(&p, 1, READY_WAIT);
	while (n < 0 && errno == EINTR);
	return n > 0 && read(fd, &c, 1) == 1;
}

/* Moves a dead worker's journal slot into the tallies and clears it. */
static void harvest(struct sup *s, struct proc *p)
{
	struct torture_slot *sl = &s->j->w[p - s->proc];

	/* Acquire loads: the worker is reaped, its stores are all in. */
	s->ops += atomic_load_explicit(&sl->ops, memory_order_acquire);
	s->t.seq_final[p->spawn] = (uint32_t)atomic_load_explicit(
		&sl->seq, memory_order_acquire);
	for (int l = 0; l < TL_COUNT; l++) {
		uint64_t sec = atomic_load_explicit(&sl->section[l],
						    memory_order_acquire);

		s->t.done[l] += sec >> 1;
		s->t.killed_in[l] += sec & 1;
		s->t.late[l] += atomic_load(&sl->late[l]);
	}
	s->takeovers += atomic_load(&sl->takeovers);
	s->full += atomic_load(&sl->full);
	memset(sl, 0, sizeof(*sl));
}

static void spawn(struct sup *s, int lane);

/* Judges how a worker ended, frees its slot, restarts its lane if it
 * died by itself. */
static void reaped(struct sup *s, struct proc *p, int st)
{
	bool killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
	int lane = p->lane;

	harvest(s, p);
	p->pid = 0;
	if (killed && lane < 0) {
		s->kills++;
	} else if (killed && p->armed >= 0) {
		s->crash_kills++;
		s->point_hits[p->armed]++;
	} else if (!(s->stopping && WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
		torture_verdict(
			&s->t, false,
			"worker spawn %u %s %d (exit 4: bad reply, 5: bad "
			"value, 6: lock; see its message above)",
			p->spawn, WIFSIGNALED(st) ? "died of signal" : "exited",
			WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	}
	if (lane >= 0 && !s->stopping)
		spawn(s, lane);
}

/* Reaps one worker: any that died (@block: wait for one). Return: 1 if
 * one was reaped, else 0. */
static int reap_one(struct sup *s, bool block)
{
	int st = 0;
	pid_t pid;

	do
		pid = waitpid(-1, &st, block ? 0 : WNOHANG);
	while (pid < 0 && errno == EINTR);
	if (pid <= 0)
		return 0;
	for (size_t i = 0; i < TORTURE_JOURNAL_SLOTS; i++)
		if (s->proc[i].pid == pid) {
			reaped(s, &s->proc[i], st);
			return 1;
		}
	return 1; /* not a worker of ours */
}

static void reap_all_dead(struct sup *s)
{
	while (reap_one(s, false))
		;
}

static struct proc *free_slot(struct sup *s)
{
	for (;;) {
		for (size_t i = 0; i < TORTURE_JOURNAL_SLOTS; i++)
			if (s->proc[i].pid == 0)
				return &s->proc[i];
		if (!reap_one(s, true))
			die("waitpid", ECHILD);
	}
}

static void spawn(struct sup *s, int lane)
{
	uint64_t seed = rng_next(&s->rng);
	struct proc *p = free_slot(s);
	int fds[2];

	if (s->t.spawns == s->seq_cap) {
		s->seq_cap = s->seq_cap ? 2 * s->seq_cap : 4096;
		s->t.seq_final = realloc(s->t.seq_final,
					 s->seq_cap * sizeof(*s->t.seq_final));
		if (s->t.seq_final == NULL)
			die("realloc", ENOMEM);
	}
	p->spawn = s->t.spawns++;
	s->t.seq_final[p->spawn] = 0;
	p->lane = lane;
	p->armed = s->crash_points && seed % 3 == 0
			   ? (int)((seed >> 8) % NPOINTS)
			   : -1;
	s->lane_slot[lane] = (int)(p - s->proc);
	if (pipe2(fds, O_CLOEXEC))
		die("pipe", errno);
	fflush(NULL);
	p->pid = fork();
	if (p->pid < 0)
		die("fork", errno);
	if (p->pid == 0)
		exec_worker(s, p, fds[1], seed >> 16);
	close(fds[1]);
	if (!await_ready(fds[0]))
		torture_verdict(&s->t, false,
				"worker spawn %u never opened the store",
				p->spawn);
	close(fds[0]);
}

static struct proc *lane_proc(struct sup *s, int lane)
{
	return &s->proc[s->lane_slot[lane]];
}

/* SIGKILLs lane @lane's worker (reaped later) and starts another. */
static void kill_lane(struct sup *s, int lane)
{
	struct proc *p = lane_proc(s, lane);

	kill(p->pid, SIGKILL);
	p->lane = -1;
	spawn(s, lane);
}

/* Every worker completes a command (or dies at a crash point) within
 * PROGRESS_WAIT ms while nobody kills them. */
static void progress_check(struct sup *s)
{
	uint64_t ops[TORTURE_WORKERS_MAX];
	uint32_t spawn_was[TORTURE_WORKERS_MAX];
	int64_t end = now_ms() + PROGRESS_WAIT;
	int pending = s->nworkers;

	for (int w = 0; w < s->nworkers; w++) {
		ops[w] = atomic_load(&s->j->w[s->lane_slot[w]].ops);
		spawn_was[w] = lane_proc(s, w)->spawn;
	}
	while (pending > 0 && now_ms() < end) {
		sleep_ns(200000);
		reap_all_dead(s);
		pending = 0;
		for (int w = 0; w < s->nworkers; w++)
			pending += spawn_was[w] == lane_proc(s, w)->spawn &&
				   atomic_load(&s->j->w[s->lane_slot[w]].ops) ==
					   ops[w];
	}
	torture_verdict(
		&s->t, pending == 0,
		"%d workers completed no command in %d ms: stuck on what a "
		"killed process left?",
		pending, PROGRESS_WAIT);
}

static void recover_beside(struct sup *s)
{
	int rc = shmkv_recover(s->kv, NULL);

	torture_verdict(&s->t, rc >= 0, "shmkv_recover beside the workers: %s",
			shmkv_strerror(rc));
	s->recovers++;
	s->repairs += rc > 0 ? (uint64_t)rc : 0;
}

static void torture(struct sup *s, double seconds)
{
	int64_t start = now_ms(), end = start + (int64_t)(seconds * 1000);
	int64_t next_progress = start + PROGRESS_EVERY;

	for (int w = 0; w < s->nworkers; w++)
		spawn(s, w);
	while (now_ms() < end && s->t.failed == 0) {
		sleep_ns((long)(rng_next(&s->rng) % 3000001));
		reap_all_dead(s);
		kill_lane(s, (int)(rng_next(&s->rng) % s->nworkers));
		if (s->kills % RECOVER_EVERY == 0)
			recover_beside(s);
		if (now_ms() >= next_progress) {
			progress_check(s);
			next_progress = now_ms() + PROGRESS_EVERY;
		}
	}
	progress_check(s);
}

/* Asks every worker to stop and waits; one that does not is hung. */
static void stop_all(struct sup *s)
{
	int64_t end = now_ms() + STOP_WAIT;
	int left = 1;

	s->stopping = true;
	/* Release: pairs with the workers' acquire of the stop word. */
	atomic_store_explicit(&s->j->stop, 1, memory_order_release);
	while (left > 0 && now_ms() < end) {
		sleep_ns(1000000);
		reap_all_dead(s);
		left = 0;
		for (size_t i = 0; i < TORTURE_JOURNAL_SLOTS; i++)
			left += s->proc[i].pid != 0;
	}
	torture_verdict(&s->t, left == 0,
			"%d workers did not stop within %d ms (hung)", left,
			STOP_WAIT);
	for (size_t i = 0; i < TORTURE_JOURNAL_SLOTS; i++)
		if (s->proc[i].pid != 0)
			kill(s->proc[i].pid, SIGKILL);
	while (reap_one(s, true))
		;
}

static void summary(const struct sup *s, double secs)
{
	uint64_t all = s->kills + s->crash_kills;

	printf("torture: %.1f s, %d workers: %llu kills survived (%.0f/s; "
	       "%llu SIGKILLs at random, %llu at crash points), %llu ops "
	       "(%.0f/s), %llu recoveries beside the workers (%llu repairs)\n",
	       secs, s->nworkers, (unsigned long long)all, all / secs,
	       (unsigned long long)s->kills, (unsigned long long)s->crash_kills,
	       (unsigned long long)s->ops, s->ops / secs,
	       (unsigned long long)s->recovers, (unsigned long long)s->repairs);
	if (s->crash_points) {
		printf("torture: crash points hit:");
		for (size_t p = 0; p < NPOINTS; p++)
			printf(" %s %llu", points[p].name,
			       (unsigned long long)s->point_hits[p]);
		printf("\n");
	}
	for (int l = 0; l < TL_COUNT; l++)
		printf("torture: %s lock: %llu sections completed, %llu "
		       "holders killed inside, %llu late%s\n",
		       torture_lock_name[l], (unsigned long long)s->t.done[l],
		       (unsigned long long)s->t.killed_in[l],
		       (unsigned long long)s->t.late[l],
		       l == TL_SAFE ? "" : " (ended near the timeout)");
	printf("torture: %llu safe-lock takeovers from dead holders, %llu "
	       "inserts refused by a full table\n",
	       (unsigned long long)s->takeovers, (unsigned long long)s->full);
	printf("torture: %d passed, %d failed\n", s->t.passed, s->t.failed);
}

/* The counters and the safe lock's key, made before the workers can
 * fill the table: a full table then never refuses them. On a handle of
 * their own, closed after: closing frees the lock cell this thread
 * parked, which the audit's storage balance would otherwise count. */
static int make_lock_keys(const char *name)
{
	struct shmkv_lock lk;
	shmkv_t *kv;
	int rc = shmkv_open(name, 0, &kv);

	if (rc)
		return rc;

	for (int l = 0; l < TL_COUNT && rc >= 0; l++)
		rc = shmkv_set(kv, torture_counter[l],
			       strlen(torture_counter[l]), "0", 1, 0, 0, NULL);
	if (rc >= 0)
		rc = shmkv_lock_init(kv, &lk, torture_lock_name[TL_SAFE]);
	if (rc >= 0)
		rc = shmkv_lock_try_acquire(&lk, TORTURE_LEASE_MS);
	if (rc >= 0)
		rc = shmkv_lock_release(&lk);
	shmkv_close(kv);
	return rc;
}

static void setup(struct sup *s)
{
	struct shmkv_config cfg;
	char *slash;
	ssize_t n;
	int rc;

	n = readlink("/proc/self/exe", s->worker, sizeof(s->worker) - 16);
	if (n <= 0)
		die("readlink /proc/self/exe", errno);
	s->worker[n] = '\0';
	slash = strrchr(s->worker, '/');
	strcpy(slash + 1, "torture_worker");
	if (access(s->worker, X_OK))
		die(s->worker, errno);
	snprintf(s->name, sizeof(s->name), "/shmkv-torture-%d", (int)getpid());
	shmkv_config_init(&cfg);
	cfg.slots = TORTURE_SLOTS;
	cfg.value_max = TORTURE_VALUE_MAX;
	cfg.value_memory = TORTURE_VALUE_MEMORY;
	rc = shmkv_create(s->name, &cfg, &s->kv);
	if (rc == 0)
		rc = make_lock_keys(s->name);
	if (rc)
		die(s->name, -rc);
	s->j = journal_map("torture-journal", sizeof(*s->j), &s->jfd);
	if (s->j == NULL)
		die("journal", errno);
}

static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: torture [--seconds S] [--workers K] [--seed N] "
		"[--no-crash-points]\n"
		"  SIGKILLs K (default 4, at most %u) workers at random "
		"for S seconds (default 60), then audits the store.\n",
		TORTURE_WORKERS_MAX);
	exit(code);
}

static double parse_args(struct sup *s, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "workers", required_argument, NULL, 'w' },
		{ "seed", required_argument, NULL, 'r' },
		{ "no-crash-points", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double seconds = 60;
	int c, bad = 0;

	s->nworkers = 4;
	s->rng = rng_clock_seed();
#ifdef SHMKV_FAULT_INJECTION
	s->crash_points = true;
#endif
	while ((c = getopt_long(argc, argv, "s:w:r:nh", opts, NULL)) != -1) {
		if (c == 's')
			bad = arg_seconds(optarg, &seconds);
		else if (c == 'w')
			bad = arg_int(optarg, 1, (int)TORTURE_WORKERS_MAX,
				      &s->nworkers);
		else if (c == 'r')
			bad = arg_seed(optarg, &s->rng);
		else if (c == 'n')
			s->crash_points = false;
		else
			usage(c == 'h' ? 0 : 2);
		if (bad)
			usage(2);
	}
	if (optind != argc || !(seconds > 0))
		usage(2);
	return seconds;
}

int main(int argc, char **argv)
{
	static struct sup s;
	double seconds = parse_args(&s, argc, argv);
	uint64_t seed = s.rng;
	int64_t t0;

	/* Only the workers we arm may die at a crash point. */
	unsetenv("SHMKV_CRASH_AT");
	unsetenv("SHMKV_CRASH_AFTER");
	setup(&s);
	printf("torture: store %s, %d workers, %.0f s, seed %llu, crash "
	       "points %s\n",
	       s.name, s.nworkers, seconds, (unsigned long long)seed,
	       s.crash_points ? "on" : "off (build with make FAULT=1)");
	fflush(stdout);
	t0 = now_ms();
	torture(&s, seconds);
	stop_all(&s);
	torture_audit(s.kv, &s.t, s.j->token[TL_SAFE]);
	summary(&s, (double)(now_ms() - t0) / 1000);
	shmkv_close(s.kv);
	if (s.t.failed == 0)
		shmkv_unlink(s.name);
	else
		fprintf(stderr, "torture: store %s kept for inspection\n",
			s.name);
	return s.t.failed ? 1 : 0;
}
