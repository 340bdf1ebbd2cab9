/*
 * torture_worker - one of the processes tests/programs/torture.c SIGKILLs.
 *
 * usage: torture_worker NAME JOURNAL_FD SLOT SPAWN SEED READY_FD
 *
 * Runs random commands on the store NAME until the journal's stop word is
 * set: SET (plain, EX, PX, NX, XX, GET), SETNX, GETSET, GETDEL, DEL, INCR,
 * DELIFEQ, EXPIRE/PEXPIRE with NX/XX/GT/LT, PERSIST, GET, sweeps, and
 * critical sections under both lock kinds of shmkv_lock.h. Random keys
 * are "k000".."k159"; values are inline integers or self-checking blocks
 * naming this incarnation (SPAWN) and a sequence number (torture.h).
 *
 * A critical section increments "ctr.<lock>" with a GET and a SET, which
 * two overlapping holders would break (lost update), and records itself
 * in its slot SLOT of the journal mapped from JOURNAL_FD: "in"
 * once granted, "completed" only after the release returned 0. A safe
 * lock grant must also carry a fencing token above every earlier one.
 *
 * Once the store is open, one byte goes to READY_FD. Every reply is
 * checked against what the command may return and every value read must
 * be one some worker wrote; the first violation ends the worker with a
 * status of enum worker_exit and a line on stderr. The supervisor treats
 * any end but its SIGKILL, a crash point's SIGKILL or a requested stop as
 * a failure.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "shmkv.h"
#include "shmkv_lock.h"
#include "helpers/args.h"
#include "helpers/clock.h"
#include "helpers/journal.h"
#include "helpers/selfcheck.h"
#include "helpers/torture.h"
#include "helpers/worker_exit.h"

#define SHORT_TTL_MS 100 /* torture.c waits this out before its audit */
#define LONG_TTL_S   3600

struct worker {
	shmkv_t *kv;
	struct torture_journal *j;
	struct torture_slot *slot;
	struct shmkv_lock lk;
	uint32_t spawn, seq;
	uint64_t rng, cursor;
	const char *cmd;
	char key[16];
	size_t klen;
	char val[TORTURE_VALUE_CAP];
	size_t vlen;
	char old[TORTURE_VALUE_CAP];
	char last[TORTURE_VALUE_CAP]; /* a value read, for DELIFEQ */
	size_t last_len;
};

static unsigned below(struct worker *w, unsigned n)
{
	return (unsigned)(rng_next(&w->rng) % n);
}

static int fail(struct worker *w, int code, const char *what, long long got)
{
	fprintf(stderr, "torture_worker[%d] spawn %u: %s %s: %s (%lld: %s)\n",
		(int)getpid(), w->spawn, w->cmd, w->key, what, got,
		got < 0 && got > INT_MIN ? shmkv_strerror((int)got) : "");
	return code;
}

static int64_t unix_ms(void)
{
	return clock_ns(CLOCK_REALTIME) / 1000000;
}

/* A value read from a random key: an integer or a block we wrote. */
static int check_value(struct worker *w, const char *v, size_t len)
{
	uint32_t spawn, seq;

	if (sc_is_canonical_int(v, len) ||
	    torture_value_parse(v, len, &spawn, &seq))
		return 0;
	fprintf(stderr, "torture_worker spawn %u: %s %s read \"%.*s\" (%zu)\n",
		w->spawn, w->cmd, w->key, (int)(len > 80 ? 80 : len), v, len);
	return WORKER_VALUE;
}

/* Remembers a value read, so DELIFEQ has a plausible value to compare. */
static int seen(struct worker *w, size_t len)
{
	int rc = check_value(w, w->old, len);

	if (rc == 0) {
		memcpy(w->last, w->old, len);
		w->last_len = len;
	}
	return rc;
}

/* Picks a key and a value: an inline integer or a new block value. */
static void pick(struct worker *w)
{
	w->klen = (size_t)snprintf(w->key, sizeof(w->key), "k%03u",
				   below(w, TORTURE_KEYS));
	if (below(w, 2)) {
		w->vlen = (size_t)snprintf(w->val, sizeof(w->val), "%d",
					   (int)below(w, 200000) - 1000);
		return;
	}
	/* Published before the write, so a killed writer's seq is known. */
	atomic_store_explicit(&w->slot->seq, ++w->seq, memory_order_release);
	w->vlen = torture_value_make(w->val, w->spawn, w->seq);
}

static int reply_01(struct worker *w, int rc)
{
	return rc == 0 || rc == 1 ? 0 : fail(w, WORKER_REPLY, "returned", rc);
}

/* A command that may insert the key: a full table is an answer too. */
static int full_ok(struct worker *w, int rc)
{
	if (rc != -ENOSPC)
		return rc;
	atomic_fetch_add_explicit(&w->slot->full, 1, memory_order_relaxed);
	return 0;
}

static int do_set(struct worker *w)
{
	static const unsigned cond[] = { 0, 0, SHMKV_SET_NX, SHMKV_SET_XX };
	struct shmkv_value o = { w->old, sizeof(w->old), 0 };
	unsigned flags = cond[below(w, 4)] | (below(w, 3) ? 0 : SHMKV_SET_GET);
	int64_t t = 0;
	int rc;

	switch (below(w, 4)) {
	case 0:
		flags |= SHMKV_SET_PX, t = 1 + below(w, SHORT_TTL_MS);
		break;
	case 1:
		flags |= SHMKV_SET_EX, t = LONG_TTL_S;
		break;
	default:
		break;
	}
	w->cmd = "SET";
	rc = shmkv_set(w->kv, w->key, w->klen, w->val, w->vlen, flags, t, &o);
	if (!(flags & SHMKV_SET_XX))
		rc = full_ok(w, rc);
	if (rc < 0 || rc > 1)
		return fail(w, WORKER_REPLY, "returned", rc);
	/* With GET, 1 is GET's reply: there was an old value. */
	return (flags & SHMKV_SET_GET) && rc == 1 ? seen(w, o.len) : 0;
}

static int do_getset(struct worker *w)
{
	struct shmkv_value o = { w->old, sizeof(w->old), 0 };
	int rc = full_ok(
		w, shmkv_getset(w->kv, w->key, w->klen, w->val, w->vlen, &o));

	w->cmd = "GETSET";
	return rc == 1 ? seen(w, o.len) : reply_01(w, rc);
}

static int do_getdel(struct worker *w)
{
	struct shmkv_value o = { w->old, sizeof(w->old), 0 };
	int rc = shmkv_getdel(w->kv, w->key, w->klen, &o);

	w->cmd = "GETDEL";
	return rc == 1 ? seen(w, o.len) : reply_01(w, rc);
}

static int do_get(struct worker *w)
{
	struct shmkv_value o = { w->old, sizeof(w->old), 0 };
	int rc = shmkv_get(w->kv, w->key, w->klen, &o);

	w->cmd = "GET";
	return rc == 1 ? seen(w, o.len) : reply_01(w, rc);
}

static int do_incr(struct worker *w)
{
	int64_t n;
	int rc = full_ok(w, shmkv_incr(w->kv, w->key, w->klen, &n));

	/* -EDOM: the key holds a block value; integers stay far from
	 * overflowing. */
	w->cmd = "INCR";
	return rc == 0 || rc == -EDOM ? 0
				      : fail(w, WORKER_REPLY, "returned", rc);
}

static int do_expire(struct worker *w)
{
	static const unsigned cond[] = { 0,
					 0,
					 SHMKV_EXPIRE_NX,
					 SHMKV_EXPIRE_XX,
					 SHMKV_EXPIRE_GT,
					 SHMKV_EXPIRE_LT };
	unsigned flags = cond[below(w, 6)];
	int rc;

	w->cmd = "EXPIRE";
	if (below(w, 2))
		rc = shmkv_expire(w->kv, w->key, w->klen, SHMKV_EXPIRE_MSEC,
				  flags, 1 + below(w, SHORT_TTL_MS));
	else
		rc = shmkv_expire(w->kv, w->key, w->klen, SHMKV_EXPIRE_SEC,
				  flags, LONG_TTL_S);
	return reply_01(w, rc);
}

static int do_sweep(struct worker *w)
{
	int rc = shmkv_sweep(w->kv, &w->cursor, 32);

	w->cmd = "SWEEP";
	return rc >= 0 ? 0 : fail(w, WORKER_REPLY, "returned", rc);
}

/* GET and SET of "ctr.<lock>": a lost update if two holders overlap. */
static int counter_bump(struct worker *w, enum torture_lock l)
{
	const char *key = torture_counter[l];
	struct shmkv_value o = { w->old, sizeof(w->old) - 1, 0 };
	char buf[24];
	long long n = 0;
	int rc = shmkv_get(w->kv, key, strlen(key), &o);

	w->cmd = "counter";
	snprintf(w->key, sizeof(w->key), "%s", key);
	if (rc == 1) {
		w->old[o.len] = '\0';
		if (!sc_is_canonical_int(w->old, o.len))
			return fail(w, WORKER_VALUE, w->old, (long long)o.len);
		n = strtoll(w->old, NULL, 10);
	} else if (rc != 0) {
		return fail(w, WORKER_REPLY, "GET returned", rc);
	}
	rc = snprintf(buf, sizeof(buf), "%lld", n + 1);
	rc = shmkv_set(w->kv, key, strlen(key), buf, (size_t)rc, 0, 0, NULL);
	return rc == 1 ? 0 : fail(w, WORKER_REPLY, "SET returned", rc);
}

static void section_enter(struct worker *w, enum torture_lock l)
{
	uint64_t s = atomic_load_explicit(&w->slot->section[l],
					  memory_order_relaxed);

	/* Release: "in" is recorded before the increment can land. */
	atomic_store_explicit(&w->slot->section[l], s | 1,
			      memory_order_release);
}

/* Ends the section: counted completed, or late (see pattern_section). */
static void section_leave(struct worker *w, enum torture_lock l, bool done)
{
	uint64_t s = atomic_load_explicit(&w->slot->section[l],
					  memory_order_relaxed);

	if (!done)
		atomic_fetch_add_explicit(&w->slot->late[l], 1,
					  memory_order_release);
	/* Release: one store moves "in" to "completed" (or clears it). */
	atomic_store_explicit(&w->slot->section[l],
			      ((s >> 1) + (done ? 1 : 0)) << 1,
			      memory_order_release);
}

/* The fencing token of a new grant exceeds every earlier grant's. */
static int token_check(struct worker *w)
{
	uint64_t t = shmkv_lock_token(&w->lk);
	uint64_t last = atomic_load_explicit(&w->j->token[TL_SAFE],
					     memory_order_acquire);

	if (t <= last)
		return fail(w, WORKER_LOCK, "token not above the last grant's",
			    (long long)t);
	atomic_store_explicit(&w->j->token[TL_SAFE], t, memory_order_release);
	return 0;
}

static int safe_section(struct worker *w)
{
	int rc = shmkv_lock_timed_acquire(&w->lk, TORTURE_LEASE_MS,
					  below(w, 20));

	w->cmd = "lock";
	snprintf(w->key, sizeof(w->key), "lock.%s", torture_lock_name[TL_SAFE]);
	if (rc == -ETIMEDOUT || rc == -EBUSY) /* -EBUSY: a wait of 0 */
		return 0;
	if (rc < 0)
		return fail(w, WORKER_LOCK, "lock_timed returned", rc);
	if (rc == SHMKV_LOCK_OWNER_DEAD)
		atomic_fetch_add_explicit(&w->slot->takeovers, 1,
					  memory_order_relaxed);
	if (token_check(w))
		return WORKER_LOCK;
	if (shmkv_lock_held(&w->lk) != 1)
		return fail(w, WORKER_LOCK, "held() after a grant", 0);
	section_enter(w, TL_SAFE);
	if ((rc = counter_bump(w, TL_SAFE)))
		return rc;
	rc = shmkv_lock_release(&w->lk);
	w->cmd = "release";
	snprintf(w->key, sizeof(w->key), "lock.%s", torture_lock_name[TL_SAFE]);
	if (rc != 0 && rc != SHMKV_LOCK_NOT_OWNER && rc != SHMKV_LOCK_NOT_HELD)
		return fail(w, WORKER_LOCK, "returned", rc);
	section_leave(w, TL_SAFE, rc == 0);
	return 0;
}

/*
 * The pattern lock cannot tell a slow holder from a dead one: a section
 * that ends near its timeout may have overlapped the next holder (the
 * SETNX page's documented weakness). Such sections are counted late, not
 * completed, and torture.c then checks only the counter's upper bound.
 */
static int pattern_section(struct worker *w)
{
	int64_t expiry, wait = below(w, 2) ? 0 : below(w, 10);
	struct shmkv_pattern pl;
	int rc = shmkv_pattern_init(w->kv, &pl, torture_lock_name[TL_PATTERN]);

	if (rc == 0)
		rc = shmkv_pattern_acquire(&pl, TORTURE_PATTERN_MS, wait,
					   &expiry);
	w->cmd = "pattern_acquire";
	snprintf(w->key, sizeof(w->key), "lock.%s",
		 torture_lock_name[TL_PATTERN]);
	/* Its key is deleted on unlock, so its slot may be recycled. */
	if (rc == -EBUSY || rc == -ETIMEDOUT || rc == -ENOSPC)
		return full_ok(w, rc == -ENOSPC ? rc : 0);
	if (rc < 0)
		return fail(w, WORKER_LOCK, "returned", rc);
	section_enter(w, TL_PATTERN);
	if ((rc = counter_bump(w, TL_PATTERN)))
		return rc;
	rc = shmkv_pattern_release(&pl, expiry);
	w->cmd = "pattern_release";
	snprintf(w->key, sizeof(w->key), "lock.%s",
		 torture_lock_name[TL_PATTERN]);
	if (rc != 0 && rc != -ETIMEDOUT && rc != -ENOLCK)
		return fail(w, WORKER_LOCK, "returned", rc);
	section_leave(w, TL_PATTERN,
		      rc == 0 && unix_ms() < expiry - TORTURE_PATTERN_MS / 2);
	return 0;
}

static int do_setnx(struct worker *w)
{
	w->cmd = "SETNX";
	return reply_01(w, full_ok(w, shmkv_setnx(w->kv, w->key, w->klen,
						  w->val, w->vlen)));
}

static int do_del(struct worker *w)
{
	w->cmd = "DEL";
	return reply_01(w, shmkv_del(w->kv, w->key, w->klen));
}

static int do_delifeq(struct worker *w)
{
	w->cmd = "DELIFEQ";
	return reply_01(
		w, shmkv_delifeq(w->kv, w->key, w->klen, w->last, w->last_len));
}

static int do_persist(struct worker *w)
{
	w->cmd = "PERSIST";
	return reply_01(w, shmkv_persist(w->kv, w->key, w->klen));
}

/* One random command on a random key (pick), by the mix below. */
static int step(struct worker *w)
{
	/* The mix, in percent: each entry runs below its bound. */
	static const struct {
		unsigned below;
		int (*run)(struct worker *w);
	} mix[] = {
		{ 14, do_set },		  { 22, do_setnx },
		{ 30, do_getset },	  { 36, do_getdel },
		{ 46, do_del },		  { 54, do_incr },
		{ 58, do_delifeq },	  { 64, do_expire },
		{ 66, do_persist },	  { 80, do_get },
		{ 82, do_sweep },	  { 91, safe_section },
		{ 100, pattern_section },
	};
	unsigned op = below(w, 100);
	size_t i = 0;

	pick(w);
	while (op >= mix[i].below)
		i++;
	return mix[i].run(w);
}

static int setup(struct worker *w, int argc, char **argv, int *ready)
{
	uint64_t idx, spawn, seed, rfd;

	if (argc != 7 || arg_u64(argv[3], TORTURE_JOURNAL_SLOTS - 1, &idx) ||
	    arg_u64(argv[4], UINT32_MAX, &spawn) || arg_seed(argv[5], &seed) ||
	    arg_u64(argv[6], INT_MAX, &rfd)) {
		fprintf(stderr, "usage: torture_worker NAME JOURNAL_FD SLOT "
				"SPAWN SEED READY_FD\n");
		return WORKER_USAGE;
	}
	w->j = journal_attach(argv[2], sizeof(*w->j));
	if (w->j == NULL) {
		perror("torture_worker: journal");
		return WORKER_USAGE;
	}
	w->slot = &w->j->w[idx];
	w->spawn = (uint32_t)spawn;
	w->rng = seed;
	*ready = (int)rfd;
	return 0;
}

int main(int argc, char **argv)
{
	static struct worker w;
	int rc, ready;

	if ((rc = setup(&w, argc, argv, &ready)))
		return rc;
	rc = shmkv_open(argv[1], 0, &w.kv);
	if (rc == 0)
		rc = shmkv_lock_init(w.kv, &w.lk, torture_lock_name[TL_SAFE]);
	if (rc) {
		fprintf(stderr, "torture_worker: open %s: %s\n", argv[1],
			shmkv_strerror(rc));
		return WORKER_OPEN;
	}
	/* A supervisor that stopped listening needs nothing more. */
	if (write(ready, "r", 1) != 1)
		return WORKER_USAGE;
	close(ready);
	/* Acquire: pairs with the supervisor's release of the stop word. */
	while (!atomic_load_explicit(&w.j->stop, memory_order_acquire)) {
		if ((rc = step(&w)))
			return rc;
		atomic_fetch_add_explicit(&w.slot->ops, 1,
					  memory_order_relaxed);
	}
	shmkv_close(w.kv);
	return 0;
}
