/*
 * limit_soak - a store pinned at its max_memory while its table grows:
 * writers, deleters, lock users and INCRs, SIGKILLs included. Every DEL
 * and every release succeeds, and the store never wedges.
 *
 * usage: limit_soak [--seconds S] [--rounds R] [--workers N] [--keys K]
 *                   [--kill-ms M] [--stall T] [--policy P]
 *                   [--max-memory B] [--del-pause-us D] [--seed N]
 *
 * Each of R rounds (default 2) runs S/R seconds (S: 10) on a fresh store
 * of LS_SLOTS slots. Its max_memory (B; default: its size at creation,
 * one value page per size class, and room for a table of TABLE_ROOM
 * slots beside its half, less than a page so value memory cannot take
 * it) leaves value memory no room to grow: the class of the largest
 * values is full after a few dozen keys, and the table then grows several
 * times (16 to 512 slots) with it full, so that a growth's copies of
 * those values find no free block. N forked workers (default 4) run the
 * roles of limit.h by lane: writers SET random keys of K (default 4096)
 * with integers, short strings and block values, half of them large,
 * until -ENOMEM or -ENOSPC (expected); deleters DEL and GETDEL random
 * keys, pausing D us (100) after each so the writers keep the store
 * full, and must never fail; lock users take the safe locks (an acquire
 * may find no value memory for its grant's cell: -ENOMEM, counted) and
 * bump a counter under them (an integer in its slot: that SET must not
 * fail), and every release must succeed; INCRs bump counters, which must
 * never fail. Every M ms on average (default 50; 0: never) a random
 * worker is SIGKILLed, anywhere,
 * and a new one takes its lane; nobody runs shmkv_recover. The soak calls
 * shmkv_maintain every MAINTAIN_MS, which must answer 0, and then
 * shmkv_stats, whose memory_bytes must be within max_memory.
 *
 * The store never wedges: if for T seconds (default 3) no DEL deletes a
 * key while keys exist, or no lock section or counter INCR completes,
 * the round fails at once, saying which. After each round, every worker
 * reaped, the audit (limit_audit.c): no call gave a result it may not
 * give; the growth finishes; each lock is taken and released; counters
 * exact (limit.h); shmkv_check clean; a DEL of every key; then new values
 * of every size fit again. The round must also have done what it is for:
 * SETs refused with -ENOMEM, and growths of the table.
 *
 * Prints a line per round and "limit_soak: N passed, M failed"; exits 1
 * on any failure, keeping that round's store (its name printed). The
 * seed replays the random choices (keys, sizes, kill times), not the
 * scheduler's.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/args.h"
#include "helpers/clock.h"
#include "helpers/limit.h"
#include "helpers/rng.h"
#include "shmkv_lock.h"

#define TICK_NS	    1000000 /* the supervision loop's period */
#define MAINTAIN_MS 200	    /* between the soak's shmkv_maintain calls */
#define STOP_WAIT   30000   /* ms workers may take to stop when asked */
/* max_memory's default: the store at creation, then room for a table of
 * TABLE_ROOM 64-byte slots beside its half (LS_KEY_MAX makes 64-byte
 * slots): 48 KiB, less than a page, so value memory cannot take it. */
#define TABLE_ROOM 512u
#define SLOT_BYTES 64u

struct lane_proc {
	pid_t pid; /* 0: none */
	bool killed;
};

struct soak {
	char name[64];
	shmkv_t *kv;
	struct ls_area *a;
	struct ls_tally t;
	uint64_t rng, max_memory, spawns, kills, maintains;
	double seconds;
	int rounds, workers, kill_ms, stall_s, policy, del_pause_us;
	unsigned keys;
	bool stopping;
	struct lane_proc ln[LS_LANES_MAX];
};

static void die(const char *what, int err)
{
	fprintf(stderr, "limit_soak: %s: %s\n", what, strerror(err));
	exit(1);
}

static int64_t now_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000000;
}

/*
 * Workers.
 */

static void spawn(struct soak *s, unsigned lane)
{
	struct ls_worker w = {
		s->name, s->a, lane, s->keys, s->del_pause_us, rng_next(&s->rng)
	};
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		ls_worker_run(&w);
	}
	s->ln[lane] = (struct lane_proc){ pid, false };
	s->spawns++;
}

/* Adds what lane @i's worker, now reaped, did to the tally; clears it. */
static void harvest(struct soak *s, unsigned i)
{
	struct ls_lane *ln = &s->a->lane[i];

	for (unsigned l = 0; l < LS_LOCKS; l++) {
		uint64_t w = atomic_load(&ln->section[l]);

		s->t.sections[l] += w >> 2;
		s->t.landed[l] += (w & 3) == LS_LANDED;
		s->t.in_flight[l] += (w & 3) == LS_GRANTED;
		atomic_store(&ln->section[l], 0);
	}
	for (unsigned c = 0; c < LS_COUNTERS; c++) {
		uint64_t w = atomic_load(&ln->incr[c]);

		s->t.incrs[c] += w >> 1;
		s->t.incr_in[c] += w & 1;
		atomic_store(&ln->incr[c], 0);
	}
}

static void reaped(struct soak *s, pid_t pid, int st)
{
	for (unsigned i = 0; i < (unsigned)s->workers; i++) {
		struct lane_proc *p = &s->ln[i];
		bool ok = (p->killed && WIFSIGNALED(st) &&
			   WTERMSIG(st) == SIGKILL) ||
			  (s->stopping && WIFEXITED(st) &&
			   WEXITSTATUS(st) == 0);

		if (p->pid != pid)
			continue;
		if (!ok)
			ls_verdict(&s->t, false,
				   "worker %u (%s, pid %d) %s %d unasked (exit "
				   "3: it "
				   "could not open the store)",
				   i, ls_role_name[i % LS_ROLES], (int)pid,
				   WIFSIGNALED(st) ? "died of signal"
						   : "exited",
				   WIFSIGNALED(st) ? WTERMSIG(st)
						   : WEXITSTATUS(st));
		harvest(s, i);
		p->pid = 0;
		if (!s->stopping)
			spawn(s, i);
		return;
	}
}

/* Reaps whatever has ended. Return: whether a worker is left. */
static bool reap(struct soak *s)
{
	int st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		reaped(s, pid, st);
	for (int i = 0; i < s->workers; i++)
		if (s->ln[i].pid)
			return true;
	return false;
}

static void kill_one(struct soak *s)
{
	struct lane_proc *p = &s->ln[rng_below(&s->rng, (uint64_t)s->workers)];

	if (p->pid == 0 || p->killed)
		return;
	kill(p->pid, SIGKILL);
	p->killed = true;
	s->kills++;
}

/* shmkv_maintain must answer 0, and the store's footprint (header,
 * tables, pages) stay within max_memory. */
static void maintain(struct soak *s)
{
	struct shmkv_stats st;
	int rc = shmkv_maintain(s->kv);

	s->maintains++;
	if (rc != 0)
		ls_fail(s->a, LF_MAINTAIN, "shmkv_maintain: %d (%s)", rc,
			shmkv_strerror(rc));
	if (shmkv_stats(s->kv, &st) == 0 && st.memory_bytes > st.max_memory)
		ls_fail(s->a, LF_MEMORY,
			"the store uses %llu bytes, past its max_memory %llu "
			"(%llu slots, growing from %llu; %u value pages)",
			(unsigned long long)st.memory_bytes,
			(unsigned long long)st.max_memory,
			(unsigned long long)st.slots,
			(unsigned long long)st.growing_from, st.pages);
}

/*
 * Progress.
 */

/* What must progress: DELs that delete (while keys exist), the sections
 * of each lock, the INCRs of each counter. */
#define WATCHES (1 + LS_LOCKS + LS_COUNTERS)

struct progress {
	uint64_t done[WATCHES], calls[WATCHES];
	int64_t since[WATCHES]; /* when done[] last moved */
};

/* Watch @i's progress word, its role's calls, and its name in @what. */
static _Atomic uint64_t *watch(struct ls_area *a, unsigned i,
			       _Atomic uint64_t **calls, char *what,
			       size_t size)
{
	if (i == 0) {
		*calls = &a->calls[LS_DELETER];
		snprintf(what, size, "DEL deleted a key");
		return &a->done[LS_DELETER];
	}
	if (i <= LS_LOCKS) {
		*calls = &a->calls[LS_LOCKER];
		snprintf(what, size, "section of lock %s completed",
			 ls_lock_name[i - 1]);
		return &a->lock_done[i - 1];
	}
	*calls = &a->calls[LS_INCR];
	snprintf(what, size, "INCR of counter %s returned",
		 ls_counter[i - 1 - LS_LOCKS]);
	return &a->incr_done[i - 1 - LS_LOCKS];
}

/* Keys the workers may delete that exist now (the locks' and counters'
 * keys are never deleted). */
static uint64_t data_keys(struct soak *s)
{
	struct shmkv_stats st;
	uint64_t fixed = 2 * LS_LOCKS + LS_COUNTERS;

	if (shmkv_stats(s->kv, &st) != 0)
		return 0;
	return st.live_keys > fixed ? st.live_keys - fixed : 0;
}

/* Whether something that must progress has not for --stall seconds (a
 * DEL only while there are keys to delete): then the round fails. */
static bool wedged(struct soak *s, struct progress *p, int64_t now)
{
	for (unsigned i = 0; i < WATCHES; i++) {
		_Atomic uint64_t *calls;
		char what[64];
		uint64_t done = atomic_load(
				 watch(s->a, i, &calls, what, sizeof(what))),
			 keys = 0;

		if (done != p->done[i] || p->since[i] == 0) {
			p->done[i] = done;
			p->calls[i] = atomic_load(calls);
			p->since[i] = now;
			continue;
		}
		if (now - p->since[i] < (int64_t)s->stall_s * 1000)
			continue;
		if (i == 0 && (keys = data_keys(s)) == 0) {
			p->since[i] = now;
			continue;
		}
		ls_verdict(
			&s->t, false,
			"the store is wedged: no %s for %d s (%llu %s calls "
			"meanwhile; %llu keys exist)",
			what, s->stall_s,
			(unsigned long long)(atomic_load(calls) - p->calls[i]),
			ls_role_name[i == 0	     ? LS_DELETER
				     : i <= LS_LOCKS ? LS_LOCKER
						     : LS_INCR],
			(unsigned long long)(keys ? keys : data_keys(s)));
		return true;
	}
	return false;
}

static void run_round(struct soak *s)
{
	int64_t now = now_ms(),
		end = now + (int64_t)(s->seconds / s->rounds * 1000);
	int64_t next_kill = now, next_maint = now + MAINTAIN_MS;
	struct progress p = { 0 };
	s->stopping = false;
	for (unsigned i = 0; i < (unsigned)s->workers; i++)
		spawn(s, i);
	while ((now = now_ms()) < end && !wedged(s, &p, now)) {
		reap(s);
		if (s->kill_ms && now >= next_kill) {
			kill_one(s);
			next_kill = now + (int64_t)rng_below(
						  &s->rng,
						  2 * (uint64_t)s->kill_ms + 1);
		}
		if (now >= next_maint) {
			maintain(s);
			next_maint = now + MAINTAIN_MS;
		}
		sleep_ns(TICK_NS);
	}
}

/* Tells the workers to stop and reaps them all (killing the hung). */
static void end_round(struct soak *s)
{
	int64_t end = now_ms() + STOP_WAIT;
	bool left = true;

	s->stopping = true;
	atomic_store(&s->a->stop, 1);
	while ((left = reap(s)) && now_ms() < end)
		sleep_ns(TICK_NS);
	ls_verdict(&s->t, !left,
		   "workers still running %d ms after being told to stop: "
		   "hung in a command",
		   STOP_WAIT);
	for (int i = 0; left && i < s->workers; i++)
		if (s->ln[i].pid) {
			kill(s->ln[i].pid, SIGKILL);
			s->ln[i].killed = true;
		}
	while (left && reap(s))
		sleep_ns(TICK_NS);
}

/*
 * Setup and report.
 */

/* The lock keys and the counters, before any worker runs. */
static int make_keys(shmkv_t *kv)
{
	struct shmkv_lock lk;
	int rc = 0;

	for (unsigned l = 0; rc >= 0 && l < LS_LOCKS; l++) {
		rc = shmkv_set(kv, ls_lock_counter[l],
			       strlen(ls_lock_counter[l]), "0", 1, 0, 0, NULL);
		if (rc >= 0)
			rc = shmkv_lock_init(kv, &lk, ls_lock_name[l]);
		if (rc >= 0)
			rc = shmkv_lock_try_acquire(&lk, LS_LEASE_MS);
		if (rc >= 0)
			rc = shmkv_lock_release(&lk);
	}
	for (unsigned c = 0; rc >= 0 && c < LS_COUNTERS; c++)
		rc = shmkv_set(kv, ls_counter[c], strlen(ls_counter[c]), "0", 1,
			       0, 0, NULL);
	return rc < 0 ? rc : 0;
}

static void create_store(struct soak *s, int r)
{
	struct shmkv_config cfg;
	struct shmkv_plan plan;
	int rc;

	snprintf(s->name, sizeof(s->name), "/shmkv-limit-%d-%d", (int)getpid(),
		 r);
	shmkv_config_init(&cfg);
	cfg.slots = LS_SLOTS;
	cfg.key_max = LS_KEY_MAX;
	cfg.value_max = LS_VALUE_MAX;
	cfg.evict_policy = (uint32_t)s->policy;
	rc = shmkv_config_plan(&cfg, &plan);
	cfg.value_memory = plan.value_memory_min;
	if (rc == 0)
		rc = shmkv_config_plan(&cfg, &plan);
	cfg.max_memory = s->max_memory;
	if (cfg.max_memory == 0)
		cfg.max_memory = plan.memory_bytes +
				 (uint64_t)TABLE_ROOM * SLOT_BYTES * 3 / 2;
	if (rc == 0)
		rc = shmkv_create(s->name, &cfg, &s->kv);
	if (rc == 0)
		rc = make_keys(s->kv);
	if (rc)
		die(s->name, -rc);
	printf("limit_soak: round %d: store %s, %u slots, max_memory %llu "
	       "(%llu at creation, pages of %u)\n",
	       r, s->name, LS_SLOTS, (unsigned long long)cfg.max_memory,
	       (unsigned long long)plan.memory_bytes, plan.page_size);
}

/* What the round did, and whether it did what it is for. */
static void round_report(struct soak *s, int r)
{
	struct shmkv_stats st;
	struct ls_area *a = s->a;
	uint64_t secs = 0, incrs = 0;

	for (unsigned l = 0; l < LS_LOCKS; l++)
		secs += s->t.sections[l];
	for (unsigned c = 0; c < LS_COUNTERS; c++)
		incrs += s->t.incrs[c];
	memset(&st, 0, sizeof(st));
	shmkv_stats(s->kv, &st);
	printf("limit_soak:   round %d: %llu workers started, %llu killed; "
	       "SET %llu stored, %llu -ENOMEM, %llu -ENOSPC; %llu DEL/GETDEL "
	       "(%llu deleted); %llu sections (%llu acquires -ENOMEM); %llu "
	       "counter INCRs; %llu "
	       "maintains; %llu growths\n",
	       r, (unsigned long long)s->spawns, (unsigned long long)s->kills,
	       (unsigned long long)a->done[LS_WRITER],
	       (unsigned long long)a->enomem, (unsigned long long)a->enospc,
	       (unsigned long long)a->calls[LS_DELETER],
	       (unsigned long long)a->done[LS_DELETER],
	       (unsigned long long)secs, (unsigned long long)a->acquire_enomem,
	       (unsigned long long)incrs, (unsigned long long)s->maintains,
	       (unsigned long long)st.growths);
	ls_verdict(&s->t, a->enomem > 0,
		   "the round never reached max_memory: no SET was refused "
		   "with -ENOMEM, so it proved nothing");
	ls_verdict(&s->t, st.growths > 0 || st.growing_from > 0,
		   "the table never grew: the round proved nothing");
}

static int run_rounds(struct soak *s)
{
	int passed = 0, failed = 0;

	for (int r = 0; r < s->rounds; r++) {
		memset(s->a, 0, sizeof(*s->a));
		memset(&s->t, 0, sizeof(s->t));
		s->t.evicting = s->policy != SHMKV_EVICT_NOEVICTION;
		s->spawns = s->kills = s->maintains = 0;
		create_store(s, r);
		run_round(s);
		end_round(s);
		round_report(s, r);
		ls_audit(s->kv, s->a, &s->t, s->keys);
		shmkv_close(s->kv);
		if (s->t.failed == 0)
			shmkv_unlink(s->name);
		else
			fprintf(stderr, "limit_soak: store %s kept\n", s->name);
		passed += s->t.passed;
		failed += s->t.failed;
	}
	printf("limit_soak: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: limit_soak [--seconds S] [--rounds R] [--workers N] "
		"[--keys K] [--kill-ms M]\n"
		"                  [--stall T] [--policy P] [--max-memory B] "
		"[--del-pause-us D] [--seed N]\n"
		"  R rounds (2) of S/R s (S: 10), each on a fresh store at its "
		"max_memory (B: its size\n"
		"  at creation and room for the table to grow): N (4) workers "
		"(writer, deleter, locker,\n"
		"  incr by turn) on K (4096) keys, one SIGKILLed every M ms "
		"(50) on average; a DEL,\n"
		"  section or INCR without progress for T s (3) is a wedge. P: "
		"an eviction policy\n"
		"  (noeviction); D: a deleter's pause after each call (100 "
		"us).\n");
	exit(code);
}

/* One option's argument into @s. Return: 0, or -1 if it is not valid
 * (or not an option: 'h' and '?' come here too). */
static int soak_option(struct soak *s, int c, const char *arg)
{
	int keys;

	switch (c) {
	case 's':
		return arg_seconds(arg, &s->seconds);
	case 'r':
		return arg_int(arg, 1, 1000, &s->rounds);
	case 'w':
		return arg_int(arg, LS_ROLES, LS_LANES_MAX, &s->workers);
	case 'k':
		if (arg_int(arg, 1, LS_KEYS_MAX, &keys))
			return -1;
		s->keys = (unsigned)keys;
		return 0;
	case 'm':
		return arg_int(arg, 0, 60000, &s->kill_ms);
	case 't':
		return arg_int(arg, 1, 3600, &s->stall_s);
	case 'p':
		s->policy = shmkv_evict_policy_parse(arg);
		return s->policy < 0 ? -1 : 0;
	case 'b':
		return arg_u64(arg, UINT64_MAX, &s->max_memory);
	case 'x':
		return arg_seed(arg, &s->rng);
	case 'd':
		return arg_int(arg, 0, 1000000, &s->del_pause_us);
	default:
		return -1;
	}
}

static void parse_args(struct soak *s, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "workers", required_argument, NULL, 'w' },
		{ "keys", required_argument, NULL, 'k' },
		{ "kill-ms", required_argument, NULL, 'm' },
		{ "stall", required_argument, NULL, 't' },
		{ "policy", required_argument, NULL, 'p' },
		{ "max-memory", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 'x' },
		{ "del-pause-us", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	s->seconds = 10;
	s->rounds = 2;
	s->workers = LS_ROLES;
	s->keys = 4096;
	s->kill_ms = 50;
	s->stall_s = 3;
	s->del_pause_us = 100;
	s->rng = rng_clock_seed();
	while ((c = getopt_long(argc, argv, "s:r:w:k:m:t:p:b:x:d:h", opts,
				NULL)) != -1)
		if (soak_option(s, c, optarg))
			usage(c == 'h' ? 0 : 2);
	if (optind != argc)
		usage(2);
}

int main(int argc, char **argv)
{
	static struct soak s;

	parse_args(&s, argc, argv);
	printf("limit_soak: %d rounds, %.0f s, %d workers, %u keys, a kill "
	       "every %d ms, wedge after %d s, %s, seed %llu\n",
	       s.rounds, s.seconds, s.workers, s.keys, s.kill_ms, s.stall_s,
	       shmkv_evict_policy_name(s.policy), (unsigned long long)s.rng);
	s.a = mmap(NULL, sizeof(*s.a), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s.a == MAP_FAILED)
		die("mmap", errno);
	return run_rounds(&s);
}
