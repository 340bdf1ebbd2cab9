/*
 * lifecycle_soak - thousands of short-lived processes on one store, each
 * leaving a different way; then the store must be as if they never were.
 *
 * usage: lifecycle_soak [--seconds S] [--procs P] [--rounds R] [--jobs J]
 *                       [--long K] [--seed N] [--kinds LIST]
 *
 * Each of R rounds (default 2) runs for at least S/R seconds and until at
 * least P/R short-lived workers have started (defaults: S 10, P 1000). J
 * short-lived workers (default 6) run at once, each doing a few critical
 * sections and data commands (tests/programs/lifecycle_worker.c), and leave in
 * rotation by: return from main, exit(), _exit(), abort(), a SIGKILL from
 * here at a random moment (in a lock call, holding a lock, waiting for
 * one, between commands; never inside a data command, see lifecycle.h),
 * the main thread's pthread_exit() while another thread finishes, and
 * fork (the child works on and leaves one of the first four ways). None
 * calls shmkv_close. --kinds narrows the rotation (e.g. "thread" or
 * "kill,abort") to tell which way of leaving breaks something. K
 * long-lived workers (default 2) work the whole round and close their
 * handle at its end. Nobody runs shmkv_recover.
 *
 * After each round, with every process reaped (this program is their
 * subreaper, so orphaned fork children come back here), it takes each
 * lock once (a holder killed in its section left it HELD: the take-over
 * reports SHMKV_LOCK_OWNER_DEAD), then twice more, and checks:
 * - every worker ended the way it was told to, and no call gave a result
 *   it may not give (acquire: a grant; release: 0; commands: theirs);
 * - each lock: no waiter counted, not held; SHMKV_LOCK_OWNER_DEAD no more
 *   often than holders died in their section; its counter exact
 *   (lifecycle.h: every increment acked or landed by a holder that died);
 * - the steady state: used value blocks <= the blocks the live keys need
 *   + SLACK, where SLACK = 4 x (the most processes alive at once in the
 *   round + the reclamation steps it takes to cover the store once): a
 *   process holds at most two lock cells and two blocks not yet
 *   published, and the ones whose blocks the cursor may not have reached
 *   yet were alive within its last turn (lifecycle_audit.c): never a
 *   function of how many processes ran. Then ordinary work, lock
 *   users coming and going (no recover), must leave no leftover within
 *   two turns of the reclamation cursor (published blocks nothing names:
 *   SHMKV_REAP_ORPHAN_TURNS more), and exactly the blocks the live keys
 *   need, but for blocks whose dead owner's pid a live process reused
 *   since (counted and printed: reclaimed once that one dies too).
 *   Slots: live + tombstones <= LC_KEYSPACE (the keys anyone can name),
 *   nothing pending or corrupt. shmkv_check finds no problem. A new key
 *   with a value of each size class still fits.
 *
 * Prints one line per round, a summary, and "lifecycle_soak: N passed, M
 * failed"; exits 1 on any failure, keeping the store (its name printed).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers/args.h"
#include "helpers/clock.h"
#include "helpers/journal.h"
#include "helpers/rng.h"
#include "helpers/selfcheck.h"
#include "helpers/lifecycle.h"
#include "shmkv.h"
#include "shmkv_lock.h"

#define TICK_US	       100   /* the supervision loop's period */
#define KILL_WINDOW_US 6000  /* a kill comes this long after the spawn */
#define ROUND_END_WAIT 60000 /* ms every worker may take to end a round */

/* A direct child, by its journal slot. */
struct child {
	pid_t pid; /* 0: slot free */
	enum lc_kind kind;
	int64_t kill_after_us; /* LC_KILL: how long after its start */
	int64_t kill_at_us;    /* when; 0: once it has opened the store */
	bool killed;	       /* the SIGKILL was sent */
};

struct soak {
	shmkv_t *kv;
	char name[64], worker[PATH_MAX];
	struct lc_journal *j;
	int jfd;
	uint64_t rng;
	double seconds;
	long procs;
	int rounds, jobs, nlong;
	enum lc_kind kinds[LC_SHORT_KINDS]; /* the rotation */
	int nkinds;
	struct child ch[LC_PROC_SLOTS];
	int running_short, running;
	struct lc_audit a;
	/* Tallies over all rounds. */
	/* grandchildren: fork children reaped here (all are: see reaped()) */
	uint64_t started[LC_KINDS], killed_holding, grandchildren;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "lifecycle_soak: %s: %s\n", what, strerror(err));
	exit(1);
}

static int64_t now_us(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000;
}

/*
 * Workers.
 */

static void exec_worker(struct soak *s, int slot, enum lc_kind kind,
			uint64_t seed)
{
	char fd[16], sl[16], sd[32];

	snprintf(fd, sizeof(fd), "%d", s->jfd);
	snprintf(sl, sizeof(sl), "%d", slot);
	snprintf(sd, sizeof(sd), "%llu", (unsigned long long)seed);
	execl(s->worker, s->worker, "soak", s->name, fd, sl, lc_kind_name[kind],
	      sd, (char *)NULL);
	fprintf(stderr, "lifecycle_soak: exec %s: %s\n", s->worker,
		strerror(errno));
	_exit(127);
}

static void spawn(struct soak *s, enum lc_kind kind)
{
	uint64_t seed = rng_next(&s->rng);
	struct child *c = NULL;
	int slot;

	for (slot = 0; slot < (int)LC_PROC_SLOTS; slot++)
		if (s->ch[slot].pid == 0) {
			c = &s->ch[slot];
			break;
		}
	if (c == NULL)
		die("spawn", EAGAIN); /* options keep this from happening */
	atomic_store(&s->j->slot[slot].kill_req, 0);
	atomic_store(&s->j->slot[slot].in_cmd, 0);
	atomic_store(&s->j->slot[slot].holding, 0);
	atomic_store(&s->j->slot[slot].opened, 0);
	fflush(NULL);
	c->pid = fork();
	if (c->pid < 0)
		die("fork", errno);
	if (c->pid == 0)
		exec_worker(s, slot, kind, seed);
	c->kind = kind;
	c->killed = false;
	/* One kill in four timed from the spawn, so some land in exec or
	 * shmkv_open; the others from the moment the store is open, so
	 * they land in the work on a slow (sanitized) build too. */
	c->kill_after_us = (int64_t)(seed % KILL_WINDOW_US);
	c->kill_at_us = (seed >> 32) % 4 ? 0 : now_us() + c->kill_after_us;
	s->started[kind]++;
	s->running++;
	s->running_short += kind != LC_LONG;
}

/* Whether a direct child of @kind ended as it was told to. */
static bool ended_as_told(const struct child *c, int st)
{
	switch (c->kind) {
	case LC_ABORT:
		return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
	case LC_KILL:
		return c->killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
	default:
		return WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
}

static void judge_exit(struct soak *s, pid_t pid, const char *who, int st,
		       bool ok)
{
	lc_verdict(&s->a, ok,
		   "%s %d %s %d (worker exit 3: open, 4: orphaned, 5: fork or "
		   "thread; see stderr)",
		   who, (int)pid, WIFSIGNALED(st) ? "died of signal" : "exited",
		   WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static void reaped(struct soak *s, pid_t pid, int st)
{
	for (int i = 0; i < (int)LC_PROC_SLOTS; i++) {
		struct child *c = &s->ch[i];

		if (c->pid != pid)
			continue;
		if (c->kind == LC_KILL && atomic_load(&s->j->slot[i].holding))
			s->killed_holding++;
		if (!ended_as_told(c, st))
			judge_exit(s, pid, lc_kind_name[c->kind], st, false);
		c->pid = 0;
		s->running--;
		s->running_short -= c->kind != LC_LONG;
		return;
	}
	/* A fork child, orphaned to us: one of the four plain ways out. */
	s->grandchildren++;
	if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) &&
	    !(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT))
		judge_exit(s, pid, "fork child", st, false);
}

/* Processes alive or not yet reaped: direct children and fork children
 * (counted by their parent before fork(), reaped here). Only reaping
 * lowers it, so taken before each reaping it sees every peak. */
static void note_alive(struct soak *s)
{
	int64_t alive = s->running +
			(int64_t)(atomic_load(&s->j->forks) - s->grandchildren);

	if (alive > s->a.most_alive)
		s->a.most_alive = alive;
}

/* Reaps whatever has ended. Return: false once no child is left. */
static bool reap_dead(struct soak *s)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);

		if (pid == 0)
			return true;
		if (pid < 0)
			return errno == EINTR ? true : false;
		reaped(s, pid, st);
	}
}

/* Sends due kills, by the handshake of lifecycle.h. */
static void kill_due(struct soak *s, bool all)
{
	int64_t now = now_us();

	for (int i = 0; i < (int)LC_PROC_SLOTS; i++) {
		struct child *c = &s->ch[i];
		struct lc_slot *sl = &s->j->slot[i];

		if (c->pid == 0 || c->kind != LC_KILL || c->killed)
			continue;
		if (c->kill_at_us == 0 && atomic_load(&sl->opened))
			c->kill_at_us = now + c->kill_after_us;
		if (!all && (c->kill_at_us == 0 || now < c->kill_at_us))
			continue;
		/* Seq_cst store then load: our half of the Dekker pair with
		 * the worker's store of in_cmd and load of kill_req. */
		atomic_store(&sl->kill_req, 1);
		if (atomic_load(&sl->in_cmd))
			continue; /* inside a command: next tick */
		kill(c->pid, SIGKILL);
		c->killed = true;
	}
}

static void run_round(struct soak *s, int r)
{
	int64_t end = now_us() + (int64_t)(s->seconds / s->rounds * 1e6);
	long target = (s->procs + s->rounds - 1) / s->rounds, started = 0;

	s->a.most_alive = 0;
	for (int i = 0; i < s->nlong; i++)
		spawn(s, LC_LONG);
	while (now_us() < end || started < target) {
		note_alive(s);
		reap_dead(s);
		kill_due(s, false);
		while (s->running_short < s->jobs) {
			spawn(s, s->kinds[(started + r) % s->nkinds]);
			started++;
		}
		sleep_ns(TICK_US * 1000);
	}
}

/* Ends the round: kills the killable, stops the long-lived, reaps all,
 * fork children included. */
static void end_round(struct soak *s)
{
	int64_t end = now_us() + (int64_t)ROUND_END_WAIT * 1000;
	bool left = true;

	atomic_store(&s->j->stop, 1);
	while (left && now_us() < end) {
		kill_due(s, true);
		left = reap_dead(s);
		if (left)
			sleep_ns(TICK_US * 1000);
	}
	lc_verdict(&s->a, !left,
		   "processes still running %d ms after the round ended: hung "
		   "(%d workers, or fork children)",
		   ROUND_END_WAIT, s->running);
	if (left) {
		for (int i = 0; i < (int)LC_PROC_SLOTS; i++)
			if (s->ch[i].pid)
				kill(s->ch[i].pid, SIGKILL);
		fprintf(stderr, "lifecycle_soak: store %s kept\n", s->name);
		exit(1);
	}
	atomic_store(&s->j->stop, 0);
}

/*
 * Setup and report.
 */

/* The counters and lock keys, made before any worker runs, on a handle
 * of their own (closed: its parked lock cell is freed). */
static int make_keys(const char *name)
{
	struct shmkv_lock lk;
	shmkv_t *kv;
	int rc = shmkv_open(name, 0, &kv);

	for (unsigned l = 0; rc >= 0 && l < LC_LOCKS; l++) {
		rc = shmkv_set(kv, lc_counter[l], strlen(lc_counter[l]), "0:0",
			       3, 0, 0, NULL);
		if (rc >= 0)
			rc = shmkv_lock_init(kv, &lk, lc_lock_name[l]);
		if (rc >= 0)
			rc = shmkv_lock_try_acquire(&lk, LC_LEASE_MS);
		if (rc >= 0)
			rc = shmkv_lock_release(&lk);
	}
	shmkv_close(kv);
	return rc < 0 ? rc : 0;
}

static void setup(struct soak *s)
{
	struct rlimit no_core = { 0, 0 };
	struct shmkv_config cfg;
	char *slash;
	ssize_t n;
	int rc;

	n = readlink("/proc/self/exe", s->worker, sizeof(s->worker) - 32);
	if (n <= 0)
		die("readlink /proc/self/exe", errno);
	s->worker[n] = '\0';
	slash = strrchr(s->worker, '/');
	strcpy(slash + 1, "lifecycle_worker");
	if (access(s->worker, X_OK))
		die(s->worker, errno);
	/* Orphaned fork children are reparented here, to be reaped and
	 * judged; aborting workers leave no core files. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) ||
	    setrlimit(RLIMIT_CORE, &no_core))
		die("prctl/setrlimit", errno);
	snprintf(s->name, sizeof(s->name), "/shmkv-lifecycle-%d",
		 (int)getpid());
	shmkv_config_init(&cfg);
	cfg.slots = LC_SLOTS;
	cfg.value_max = LC_VALUE_MAX;
	cfg.value_memory = LC_VALUE_MEMORY;
	rc = shmkv_create(s->name, &cfg, &s->kv);
	if (rc == 0)
		rc = make_keys(s->name);
	if (rc)
		die(s->name, -rc);
	s->j = journal_map("lifecycle-journal", sizeof(*s->j), &s->jfd);
	if (s->j == NULL)
		die("journal", errno);
	s->a.kv = s->kv;
	s->a.name = s->name;
	s->a.j = s->j;
}

static void summary(const struct soak *s, double secs)
{
	uint64_t all = s->grandchildren, sections = 0, dead = 0;

	for (int k = 0; k < LC_KINDS; k++)
		all += s->started[k];
	for (unsigned l = 0; l < LC_LOCKS; l++) {
		sections += s->j->lock[l].grants;
		dead += s->j->lock[l].owner_dead;
	}
	printf("lifecycle_soak: %d rounds, %.1f s, %llu processes:", s->rounds,
	       secs, (unsigned long long)all);
	for (int k = 0; k < LC_KINDS; k++) {
		printf(" %s %llu", lc_kind_name[k],
		       (unsigned long long)s->started[k]);
		if (k == LC_KILL)
			printf(" (%llu holding a lock)",
			       (unsigned long long)s->killed_holding);
		if (k == LC_FORK)
			printf(" (+%llu children)",
			       (unsigned long long)s->grandchildren);
		printf(k + 1 < LC_KINDS ? "," : ";");
	}
	printf(" %llu sections (%llu OWNER_DEAD takeovers, %llu of them by "
	       "the audit), %llu commands; at the end %llu value blocks used "
	       "(live keys need %llu), check %ld problems\n",
	       (unsigned long long)sections, (unsigned long long)dead,
	       (unsigned long long)s->a.takeovers_here,
	       (unsigned long long)s->j->commands,
	       (unsigned long long)s->a.used_final,
	       (unsigned long long)s->a.need_final, s->a.problems_final);
}

static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: lifecycle_soak [--seconds S] [--procs P] [--rounds R] "
		"[--jobs J] [--long K] [--seed N]\n"
		"                      [--kinds return,exit,_exit,abort,kill,"
		"thread,fork]\n"
		"  R rounds (2) of at least S/R seconds (S: 10) and P/R "
		"short-lived processes (P: 1000),\n"
		"  J (6) at once beside K (2) long-lived, leaving in rotation "
		"the ways --kinds\n"
		"  lists (all); then an audit of the store after each "
		"round.\n");
	exit(code);
}

/* Parses a comma-separated list of short-lived kinds. Return: 0, -1. */
static int parse_kinds(struct soak *s, char *list)
{
	char *save = NULL;

	s->nkinds = 0;
	for (char *w = strtok_r(list, ",", &save); w != NULL;
	     w = strtok_r(NULL, ",", &save)) {
		int k = 0;

		while (k < LC_SHORT_KINDS && strcmp(w, lc_kind_name[k]))
			k++;
		if (k == LC_SHORT_KINDS || s->nkinds == LC_SHORT_KINDS)
			return -1;
		s->kinds[s->nkinds++] = (enum lc_kind)k;
	}
	return s->nkinds ? 0 : -1;
}

/* One option's argument into @s. Return: 0, or -1 if it is not valid
 * (or not an option: 'h' and '?' come here too). */
static int soak_option(struct soak *s, int c, char *arg)
{
	int procs, rc;

	switch (c) {
	case 's':
		return arg_seconds(arg, &s->seconds);
	case 'p':
		rc = arg_int(arg, 0, INT_MAX, &procs);
		s->procs = procs;
		return rc;
	case 'r':
		return arg_int(arg, 1, INT_MAX, &s->rounds);
	case 'j':
		return arg_int(arg, 1, 32, &s->jobs);
	case 'l':
		return arg_int(arg, 0, 8, &s->nlong);
	case 'x':
		return arg_seed(arg, &s->rng);
	case 'k':
		return parse_kinds(s, arg);
	default:
		return -1;
	}
}

static void parse_args(struct soak *s, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "procs", required_argument, NULL, 'p' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "long", required_argument, NULL, 'l' },
		{ "seed", required_argument, NULL, 'x' },
		{ "kinds", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	s->seconds = 10;
	s->procs = 1000;
	s->rounds = 2;
	s->jobs = 6;
	s->nlong = 2;
	for (int k = 0; k < LC_SHORT_KINDS; k++)
		s->kinds[k] = (enum lc_kind)k;
	s->nkinds = LC_SHORT_KINDS;
	s->rng = rng_clock_seed();
	while ((c = getopt_long(argc, argv, "s:p:r:j:l:x:k:h", opts, NULL)) !=
	       -1) {
		if (soak_option(s, c, optarg))
			usage(c == 'h' ? 0 : 2);
	}
	if (optind != argc)
		usage(2);
}

int main(int argc, char **argv)
{
	static struct soak s;
	uint64_t seed;
	int64_t t0;

	parse_args(&s, argc, argv);
	seed = s.rng;
	setup(&s);
	printf("lifecycle_soak: store %s, %d rounds, >= %.0f s and >= %ld "
	       "processes, %d at once + %d long-lived, seed %llu\n",
	       s.name, s.rounds, s.seconds, s.procs, s.jobs, s.nlong,
	       (unsigned long long)seed);
	fflush(stdout);
	t0 = now_us();
	for (int r = 0; r < s.rounds; r++) {
		run_round(&s, r);
		end_round(&s);
		lc_audit_round(&s.a, r);
	}
	summary(&s, (double)(now_us() - t0) / 1e6);
	printf("lifecycle_soak: %d passed, %d failed\n", s.a.passed,
	       s.a.failed);
	shmkv_close(s.kv);
	if (s.a.failed == 0)
		shmkv_unlink(s.name);
	else
		fprintf(stderr,
			"lifecycle_soak: store %s kept for "
			"inspection\n",
			s.name);
	return s.a.failed ? 1 : 0;
}
