/*
 * lifecycle_worker - a short- or long-lived process of the lifecycle soak
 * (tests/programs/lifecycle_soak.c), and the "once" process of test_lifecycle.c.
 *
 * usage: lifecycle_worker soak NAME JOURNAL_FD SLOT KIND SEED
 *        lifecycle_worker once NAME LOCK KIND
 *
 * soak: opens the store NAME, works, and leaves the way KIND says (see
 * enum lc_kind in lifecycle.h): never calling shmkv_close, except a "long"
 * worker once the journal's stop word is set. Work is a random mix of
 * critical sections and data commands:
 * - a section takes one of the locks "a", "b", "c" with
 *   shmkv_lock_acquire (lease LC_LEASE_MS), increments "ctr.<lock>" by a
 *   GET and a SET and records the increment (lifecycle.h), sometimes
 *   sleeps a little while holding, and releases. A grant that reports
 *   SHMKV_LOCK_OWNER_DEAD needs no repair: the protected state is one SET,
 *   so the counter is whole whether or not the dead holder's SET landed,
 *   and the recording scheme counts either case exactly;
 * - a data command is a SET, SETNX, DEL or GET of a key "d00".."d47"
 *   with a self-checking value (helpers/selfcheck.h) or a small integer.
 * Every result is checked; an unexpected one is counted in the journal
 * (the first also described there) and the worker goes on, so the soak
 * can report how often each failure happened.
 *
 * once: opens NAME, takes the lock LOCK with shmkv_lock_acquire (which
 * must find it free: SHMKV_LOCK_ACQUIRED), releases it, and leaves by KIND
 * (return, exit, _exit or abort) without shmkv_close. Exit status WORKER_OPEN
 * or WORKER_LOCK if a call failed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Steps a short-lived worker (or its forked child) takes: a few. */
#define STEPS_MIN  3
#define STEPS_MORE 6
/* Longest sleep while holding a lock, in microseconds. */
#define HOLD_US_MAX 300

struct worker {
	const char *name;
	shmkv_t *kv;
	struct lc_journal *j;
	struct lc_slot *slot;
	struct shmkv_lock lk[LC_LOCKS];
	shmkv_t *inherited; /* a fork child's parent's handle, kept
			       reachable (no leak report at exit) */
	uint64_t rng;
	pid_t parent; /* the soak: gone means stop */
	enum lc_kind kind;
};

/* A forked child's slot: nobody kills it, so its flags go nowhere. */
static struct lc_slot no_slot;

static unsigned below(struct worker *w, unsigned n)
{
	return (unsigned)(rng_next(&w->rng) % n);
}

/* Counts an unexpected result @rc of @e; the first one is described. */
static void note(struct worker *w, enum lc_err e, int rc, const char *fmt, ...)
{
	unsigned idx = rc < 0 && rc > -(int)LC_ERRNO_CAP ? (unsigned)-rc : 0;
	char what[96];
	va_list ap;

	atomic_fetch_add(&w->j->err[e][idx], 1);
	if (atomic_exchange(&w->j->note_taken[e], 1))
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(w->j->note[e], sizeof(w->j->note[e]),
		 "pid %d (%s): %s: %d (%s)", (int)getpid(),
		 lc_kind_name[w->kind], what, rc,
		 rc < 0 ? shmkv_strerror(rc) : "not a valid result");
}

/* The kill handshake (lifecycle.h): a data command starts only if no
 * kill is pending; a pending one finds us parked outside the command. */
static void cmd_enter(struct worker *w)
{
	/* Seq_cst store then load: the worker's half of the Dekker pair
	 * with the soak's store of kill_req and load of in_cmd. */
	atomic_store(&w->slot->in_cmd, 1);
	if (!atomic_load(&w->slot->kill_req))
		return;
	atomic_store(&w->slot->in_cmd, 0);
	for (;;) {
		sleep_ns(1000000);
		if (getppid() != w->parent)
			_exit(LW_ORPHAN);
	}
}

static void cmd_leave(struct worker *w)
{
	/* Seq_cst: the command's stores come first (it was called). */
	atomic_store(&w->slot->in_cmd, 0);
	atomic_fetch_add_explicit(&w->j->commands, 1, memory_order_relaxed);
}

/* Parses a counter value "<n>:<pid>". Return: 0, or -1. */
static int counter_parse(const char *v, size_t len, uint64_t *n)
{
	char buf[48], *end;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, v, len);
	buf[len] = '\0';
	errno = 0;
	*n = strtoull(buf, &end, 10);
	return errno || end == buf || *end != ':' ? -1 : 0;
}

/* Records bit @v of @map; returns whether it was already set. */
static bool mark(_Atomic uint64_t *map, uint64_t v)
{
	uint64_t bit = 1ull << (v % 64);

	return atomic_fetch_or(&map[v / 64], bit) & bit;
}

/* GET, +1, SET of the counter of lock @l, which we hold. */
static void counter_bump(struct worker *w, unsigned l)
{
	const char *key = lc_counter[l];
	char buf[48];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	uint64_t n = 0;
	int rc, len;

	cmd_enter(w);
	rc = shmkv_get(w->kv, key, strlen(key), &v);
	cmd_leave(w);
	if (rc < 0 || rc > 1) {
		note(w, LE_COMMAND, rc, "GET %s", key);
		return;
	}
	if (rc == 1 && counter_parse(buf, v.len, &n)) {
		note(w, LE_VALUE, 0, "GET %s gave \"%.*s\"", key,
		     (int)(v.len > 40 ? 40 : v.len), buf);
		return;
	}
	if (n + 1 >= LC_COUNT_MAX) {
		atomic_fetch_add(&w->j->capped, 1);
		return;
	}
	mark(w->j->intent[l], n + 1);
	if (below(w, 2))
		sleep_ns((int64_t)below(w, HOLD_US_MAX) * 1000);
	len = snprintf(buf, sizeof(buf), "%llu:%d", (unsigned long long)n + 1,
		       (int)getpid());
	cmd_enter(w);
	rc = shmkv_set(w->kv, key, strlen(key), buf, (size_t)len, 0, 0, NULL);
	cmd_leave(w);
	if (rc != 1) {
		note(w, LE_COMMAND, rc, "SET %s", key);
		return;
	}
	if (mark(w->j->acked[l], n + 1))
		atomic_fetch_add(&w->j->lock[l].dup, 1);
}

static void section(struct worker *w, unsigned l)
{
	struct lc_lock_tally *t = &w->j->lock[l];
	int rc;

	atomic_fetch_add(&t->begin, 1);
	rc = shmkv_lock_acquire(&w->lk[l], LC_LEASE_MS);
	if (rc < 0 || rc > SHMKV_LOCK_LEASE_EXPIRED) {
		note(w, LE_ACQUIRE, rc, "lock %s", lc_lock_name[l]);
		atomic_fetch_add(&t->end, 1);
		return;
	}
	atomic_fetch_add(&t->grants, 1);
	if (rc == SHMKV_LOCK_OWNER_DEAD)
		atomic_fetch_add(&t->owner_dead, 1);
	if (rc == SHMKV_LOCK_LEASE_EXPIRED)
		atomic_fetch_add(&t->expired, 1);
	atomic_store(&w->slot->holding, 1);
	counter_bump(w, l);
	rc = shmkv_lock_release(&w->lk[l]);
	atomic_store(&w->slot->holding, 0);
	if (rc != 0)
		note(w, LE_RELEASE, rc, "release %s", lc_lock_name[l]);
	atomic_fetch_add(&t->end, 1);
	atomic_fetch_add(&w->j->sections, 1);
}

static void check_get(struct worker *w, const char *key, int rc, const char *v,
		      size_t len)
{
	if (rc < 0 || rc > 1)
		note(w, LE_COMMAND, rc, "GET %s", key);
	else if (rc == 1 && !sc_value_ok(v, len))
		note(w, LE_VALUE, 0, "GET %s gave \"%.*s\"", key,
		     (int)(len > 40 ? 40 : len), v);
}

static void data_command(struct worker *w)
{
	char key[8], val[SC_STRING_MAX], got[LC_VALUE_MAX];
	struct shmkv_value v = { got, sizeof(got), 0 };
	unsigned op = below(w, 100);
	size_t klen, vlen;
	int rc;

	klen = (size_t)snprintf(key, sizeof(key), "d%02u",
				below(w, LC_DATA_KEYS));
	if (below(w, 4))
		vlen = sc_make_string(val, (uint32_t)rng_next(&w->rng));
	else
		vlen = (size_t)snprintf(val, sizeof(val), "%u",
					below(w, 100000));
	cmd_enter(w);
	if (op < 35)
		rc = shmkv_set(w->kv, key, klen, val, vlen, 0, 0, NULL);
	else if (op < 50)
		rc = shmkv_setnx(w->kv, key, klen, val, vlen);
	else if (op < 70)
		rc = shmkv_del(w->kv, key, klen);
	else
		rc = shmkv_get(w->kv, key, klen, &v);
	cmd_leave(w);
	if (op >= 70)
		check_get(w, key, rc, got, v.len);
	else if (rc < 0 || rc > 1 || (op < 35 && rc != 1))
		note(w, LE_COMMAND, rc, "%s %s",
		     op < 35   ? "SET"
		     : op < 50 ? "SETNX"
			       : "DEL",
		     key);
}

static void step(struct worker *w)
{
	if (below(w, 2))
		section(w, below(w, LC_LOCKS));
	else
		data_command(w);
}

static void steps(struct worker *w, unsigned n)
{
	while (n--)
		step(w);
}

static unsigned a_few(struct worker *w)
{
	return STEPS_MIN + below(w, STEPS_MORE);
}

static int bind_locks(struct worker *w)
{
	for (unsigned l = 0; l < LC_LOCKS; l++) {
		int rc = shmkv_lock_init(w->kv, &w->lk[l], lc_lock_name[l]);

		if (rc)
			return rc;
	}
	return 0;
}

/* Leaves the process the way @kind says; returns only for LC_RETURN,
 * whose caller returns from main. */
static int leave(enum lc_kind kind)
{
	switch (kind) {
	case LC_EXIT:
		exit(0);
	case LC__EXIT:
		_exit(0);
	case LC_ABORT:
		abort();
	default:
		return 0;
	}
}

static void *thread_main(void *arg)
{
	struct worker *w = arg;

	steps(w, a_few(w));
	return NULL; /* the last thread: the process exits 0 */
}

/* The forked child: the inherited handle, or half the time one of its
 * own as well; then one of the four plain ways out. */
static int fork_child(struct worker *w)
{
	shmkv_t *own;

	w->slot = &no_slot;
	w->rng ^= (uint64_t)getpid() << 32;
	if (below(w, 2) && shmkv_open(w->name, 0, &own) == 0) {
		w->inherited = w->kv;
		w->kv = own;
		if (bind_locks(w))
			return WORKER_OPEN;
	}
	steps(w, a_few(w));
	return leave((enum lc_kind)below(w, LC_ABORT + 1));
}

/* Work as @w->kind says. Return: the exit status for main to return
 * (LC_RETURN and the "long" and "fork" parents), else never. */
static int run(struct worker *w)
{
	pthread_t th;
	pid_t pid;

	switch (w->kind) {
	case LC_KILL:
		for (;;) {
			step(w);
			if (getppid() != w->parent)
				return LW_ORPHAN;
		}
	case LC_LONG:
		while (!atomic_load(&w->j->stop)) {
			step(w);
			if (getppid() != w->parent)
				return LW_ORPHAN;
		}
		shmkv_close(w->kv);
		return 0;
	case LC_THREAD:
		if (pthread_create(&th, NULL, thread_main, w))
			return LW_SYSTEM;
		pthread_exit(NULL);
	case LC_FORK:
		steps(w, a_few(w));
		fflush(NULL);
		/* Counted before the child exists: the soak's count of
		 * processes alive at once may only be high. */
		atomic_fetch_add(&w->j->forks, 1);
		pid = fork();
		if (pid < 0)
			return LW_SYSTEM;
		if (pid == 0)
			return fork_child(w);
		steps(w, a_few(w));
		return 0;
	default:
		steps(w, a_few(w));
		return leave(w->kind);
	}
}

static int parse_kind(const char *s, enum lc_kind *kind)
{
	for (int k = 0; k < LC_KINDS; k++)
		if (!strcmp(s, lc_kind_name[k])) {
			*kind = (enum lc_kind)k;
			return 0;
		}
	return -1;
}

static int usage(void)
{
	fprintf(stderr, "usage: lifecycle_worker soak NAME JOURNAL_FD SLOT "
			"KIND SEED\n"
			"       lifecycle_worker once NAME LOCK KIND\n");
	return WORKER_USAGE;
}

static int soak_setup(struct worker *w, char **argv)
{
	uint64_t slot, seed;

	if (arg_u64(argv[4], LC_PROC_SLOTS - 1, &slot) ||
	    parse_kind(argv[5], &w->kind) || arg_seed(argv[6], &seed))
		return usage();
	w->j = journal_attach(argv[3], sizeof(*w->j));
	if (w->j == NULL) {
		perror("lifecycle_worker: journal");
		return WORKER_USAGE;
	}
	w->slot = &w->j->slot[slot];
	w->rng = seed;
	w->name = argv[2];
	w->parent = getppid();
	return 0;
}

static int once(const char *name, const char *lock, const char *how)
{
	/* Static: the handle left open stays reachable (no leak report
	 * from a sanitizer build at exit). */
	static shmkv_t *kv;
	struct shmkv_lock lk;
	enum lc_kind kind;
	int rc;

	if (parse_kind(how, &kind) || kind > LC_ABORT)
		return usage();
	if (shmkv_open(name, 0, &kv) || shmkv_lock_init(kv, &lk, lock))
		return WORKER_OPEN;
	/* One process at a time, each releasing: the lock is always free. */
	rc = shmkv_lock_acquire(&lk, LC_LEASE_MS);
	if (rc != SHMKV_LOCK_ACQUIRED)
		return WORKER_LOCK;
	if (shmkv_lock_release(&lk) != 0)
		return WORKER_LOCK;
	return leave(kind);
}

int main(int argc, char **argv)
{
	static struct worker w;
	int rc;

	if (argc == 5 && !strcmp(argv[1], "once"))
		return once(argv[2], argv[3], argv[4]);
	if (argc != 7 || strcmp(argv[1], "soak"))
		return usage();
	if ((rc = soak_setup(&w, argv)))
		return rc;
	rc = shmkv_open(w.name, 0, &w.kv);
	if (rc == 0)
		rc = bind_locks(&w);
	if (rc) {
		fprintf(stderr, "lifecycle_worker: open %s: %s\n", w.name,
			shmkv_strerror(rc));
		return WORKER_OPEN;
	}
	atomic_store(&w.slot->opened, 1);
	return run(&w);
}
