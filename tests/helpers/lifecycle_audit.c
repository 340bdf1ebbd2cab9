/*
 * lifecycle_audit.c - the lifecycle soak's verdict on the store after a
 * round (see tests/programs/lifecycle_soak.c and tests/helpers/lifecycle.h): the locks,
 * the unexpected results the workers counted, the lock-protected
 * counters, and the steady state of value storage and slots. A helper
 * rather than part of lifecycle_soak.c only to keep files small.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/mp_census.h"
#include "helpers/selfcheck.h"
#include "helpers/verdict.h"
#include "helpers/lifecycle.h"
#include "owned.h"
#include "shmkv_lock.h"

#define LOCK_WAIT_MS  10000 /* the audit's take of a lock: hang guard */
#define SHOW_PROBLEMS 10    /* shmkv_check problems printed */

void lc_verdict(struct lc_audit *a, bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verdict_count(&a->passed, &a->failed, "lifecycle_soak", ok, fmt, ap);
	va_end(ap);
}

static const char *errno_name(unsigned e)
{
	const char *n = e ? strerrorname_np((int)e) : NULL;

	return n ? n : "other";
}

/*
 * The audit.
 */

/* Takes each lock three times on a handle of its own, then closes it
 * (closing frees the lock cell its thread parked). The first take finds
 * any holder that died in its section. */
static void clear_locks(struct lc_audit *a)
{
	struct shmkv_lock lk;
	shmkv_t *kv;
	int rc = shmkv_open(a->name, 0, &kv);

	if (rc) {
		lc_verdict(a, false, "audit: open %s: %s", a->name,
			   shmkv_strerror(rc));
		return;
	}
	for (unsigned l = 0; l < LC_LOCKS; l++) {
		struct lc_lock_tally *t = &a->j->lock[l];

		rc = shmkv_lock_init(kv, &lk, lc_lock_name[l]);
		lc_verdict(a, rc == 0, "audit: shmkv_lock_init %s: %s",
			   lc_lock_name[l], shmkv_strerror(rc));
		if (rc)
			break;
		for (int n = 0; n < 3; n++) {
			atomic_fetch_add(&t->begin, 1);
			rc = shmkv_lock_timed_acquire(&lk, LC_LEASE_MS,
						      LOCK_WAIT_MS);
			lc_verdict(
				a,
				rc == SHMKV_LOCK_ACQUIRED ||
					(n == 0 && rc == SHMKV_LOCK_OWNER_DEAD),
				"audit: take %d of lock %s with every worker "
				"gone: %d (%s)",
				n + 1, lc_lock_name[l], rc, shmkv_strerror(rc));
			if (rc < 0) {
				atomic_fetch_add(&t->end, 1);
				continue;
			}
			atomic_fetch_add(&t->grants, 1);
			if (rc == SHMKV_LOCK_OWNER_DEAD) {
				atomic_fetch_add(&t->owner_dead, 1);
				a->takeovers_here++;
			}
			rc = shmkv_lock_release(&lk);
			lc_verdict(a, rc == 0, "audit: release of lock %s: %s",
				   lc_lock_name[l], shmkv_strerror(rc));
			atomic_fetch_add(&t->end, 1);
		}
	}
	shmkv_close(kv);
}

struct lock_seen {
	uint32_t waiters[LC_LOCKS];
	int held[LC_LOCKS], found[LC_LOCKS];
};

static int lock_seen_fn(const struct shmkv_lock_info *info, void *arg)
{
	struct lock_seen *ls = arg;

	for (unsigned l = 0; l < LC_LOCKS; l++)
		if (info->name_len == strlen(lc_lock_name[l]) &&
		    !memcmp(info->name, lc_lock_name[l], info->name_len)) {
			ls->found[l]++;
			ls->held[l] = info->held;
			ls->waiters[l] = info->waiters;
		}
	return 0;
}

static void audit_lock_states(struct lc_audit *a)
{
	struct lock_seen ls = { 0 };
	int rc = shmkv_lock_list(a->kv, lock_seen_fn, &ls);

	lc_verdict(a, rc >= 0, "shmkv_lock_list: %s", shmkv_strerror(rc));
	for (unsigned l = 0; l < LC_LOCKS; l++)
		lc_verdict(
			a, ls.found[l] == 1 && !ls.held[l] && !ls.waiters[l],
			"lock %s, with every worker gone and three takes "
			"since: listed %d times, held %d, %u waiters counted",
			lc_lock_name[l], ls.found[l], ls.held[l],
			ls.waiters[l]);
}

static bool bit(const _Atomic uint64_t *map, uint64_t v)
{
	/* Relaxed: every writer has been reaped. */
	uint64_t w = atomic_load_explicit(&map[v / 64], memory_order_relaxed);

	return (w >> (v % 64)) & 1;
}

static uint64_t counter_value(struct lc_audit *a, unsigned l)
{
	char buf[48];
	struct shmkv_value v = { buf, sizeof(buf) - 1, 0 };
	int rc = shmkv_get(a->kv, lc_counter[l], strlen(lc_counter[l]), &v);

	lc_verdict(a, rc == 1, "GET %s: %d", lc_counter[l], rc);
	buf[rc == 1 ? v.len : 0] = '\0';
	return strtoull(buf, NULL, 10);
}

/* The counter of lock @l is exact (lifecycle.h). Return: its value. */
static uint64_t audit_counter(struct lc_audit *a, unsigned l)
{
	struct lc_lock_tally *t = &a->j->lock[l];
	uint64_t c = counter_value(a, l), acked = 0, landed = 0, missing = 0;
	uint64_t over = 0, first_missing = 0, dead = t->begin - t->end;

	for (uint64_t v = 1; v < LC_COUNT_MAX; v++) {
		bool ack = bit(a->j->acked[l], v);

		if (v > c) {
			over += ack;
		} else if (ack) {
			acked++;
		} else if (bit(a->j->intent[l], v)) {
			landed++;
		} else if (missing++ == 0) {
			first_missing = v;
		}
	}
	lc_verdict(a,
		   t->dup == 0 && missing == 0 && over == 0 && landed <= dead &&
			   c == acked + landed,
		   "counter %s = %llu: %llu increments acked, %llu landed by "
		   "holders that died (at most %llu died in a section), %llu "
		   "values written twice (lost updates), %llu never written "
		   "(first %llu), %llu acked past the counter",
		   lc_counter[l], (unsigned long long)c,
		   (unsigned long long)acked, (unsigned long long)landed,
		   (unsigned long long)dead, (unsigned long long)t->dup,
		   (unsigned long long)missing,
		   (unsigned long long)first_missing, (unsigned long long)over);
	lc_verdict(
		a, t->owner_dead <= dead,
		"lock %s: %llu grants reported SHMKV_LOCK_OWNER_DEAD, but at "
		"most %llu holders died in their section: a live holder was "
		"taken for dead",
		lc_lock_name[l], (unsigned long long)t->owner_dead,
		(unsigned long long)dead);
	lc_verdict(a, t->expired == 0,
		   "lock %s: %llu grants reported SHMKV_LOCK_LEASE_EXPIRED of "
		   "a %d ms lease",
		   lc_lock_name[l], (unsigned long long)t->expired,
		   LC_LEASE_MS);
	return c;
}

/* No call gave a result it may not give; the counts by errno. */
static void audit_errors(struct lc_audit *a)
{
	for (int e = 0; e < LE_KINDS; e++) {
		char what[512];
		size_t at = 0;
		uint64_t all = 0;

		what[0] = '\0';
		for (unsigned i = 0; i < LC_ERRNO_CAP; i++) {
			uint64_t n = atomic_load(&a->j->err[e][i]);

			all += n;
			if (n && at < sizeof(what) - 40)
				at += (size_t)snprintf(
					what + at, sizeof(what) - at,
					" %s%s x %llu", i ? "-" : "",
					errno_name(i), (unsigned long long)n);
		}
		lc_verdict(a, all == 0,
			   "%s gave results it may not give %llu times:%s "
			   "(the first: %s)",
			   lc_err_name[e], (unsigned long long)all, what,
			   a->j->note[e]);
	}
	lc_verdict(a, a->j->capped == 0,
		   "%llu sections skipped: a counter passed LC_COUNT_MAX",
		   (unsigned long long)a->j->capped);
}

static bool value_ok(const char *v, size_t len)
{
	size_t i = 0;

	if (sc_value_ok(v, len))
		return true;
	while (i < len && v[i] >= '0' && v[i] <= '9')
		i++;
	if (i == 0 || i == len || v[i] != ':')
		return false;
	return sc_is_canonical_int(v + i + 1, len - i - 1);
}

static void show_problem(const char *problem, void *arg)
{
	long *n = arg;

	if ((*n)++ < SHOW_PROBLEMS)
		fprintf(stderr, "lifecycle_soak: check: %s\n", problem);
}

/* A new key with a value of each size class still fits: 32 ... 512
 * bytes and the top class (block header 24 bytes). */
static void audit_room(struct lc_audit *a)
{
	static const size_t lens[] = { 8, 40, 104, 232, 488, LC_VALUE_MAX };
	static char val[LC_VALUE_MAX];

	memset(val, 'v', sizeof(val));
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		int rc = shmkv_set(a->kv, "probe", 5, val, lens[i], 0, 0, NULL);

		lc_verdict(
			a, rc == 1,
			"SET of a new key with %zu bytes after the round: %s",
			lens[i], shmkv_strerror(rc));
		shmkv_del(a->kv, "probe", 5);
	}
}

/* Published blocks nothing names wait for their region's turn (owned.h):
 * check's line for them says so. */
#define ORPHAN_LINE "used but the value of no key"

struct leftover_count {
	bool orphans; /* count those too */
	long n;
};

static void count_leftover(const char *problem, void *arg)
{
	struct leftover_count *lc = arg;

	lc->n += strncmp(problem, "leftover: ", 10) == 0 &&
		 (lc->orphans || strstr(problem, ORPHAN_LINE) == NULL);
}

static void show_leftover(const char *problem, void *arg)
{
	long *n = arg;

	if (strncmp(problem, "leftover: ", 10) == 0 && (*n)++ < SHOW_PROBLEMS)
		fprintf(stderr, "lifecycle_soak: check: %s\n", problem);
}

/* Leftovers of dead processes shmkv_check describes (not problems);
 * with @orphans, published blocks nothing names too. */
static long leftovers(shmkv_t *kv, bool orphans)
{
	struct leftover_count lc = { orphans, 0 };

	shmkv_check(kv, count_leftover, &lc);
	return lc.n;
}

/* Reclamation steps that take the cursor once around value memory. */
static int steps_per_turn(shmkv_t *kv)
{
	struct shmkv_stats st;
	uint64_t units = shmkv_stats(kv, &st) == 0
				 ? (uint64_t)st.pages *
					   (st.page_size / SHMKV_BLOCK_MIN)
				 : 0;

	return (int)(units / SHMKV_REAP_STEP_UNITS + 1);
}

/*
 * What ordinary work does to the leftovers: lock users come and go (each
 * new handle that starts owning blocks runs a reclamation step) until
 * shmkv_check describes none (with @orphans: published blocks nothing
 * names included), at most @turns turns of the cursor. Return: how many
 * came and went, or -1.
 */
static int settle(struct lc_audit *a, bool orphans, int turns)
{
	int most = turns * steps_per_turn(a->kv);

	for (int n = 0; n <= most; n++) {
		struct shmkv_lock lk;
		shmkv_t *kv;

		if (leftovers(a->kv, orphans) == 0)
			return n;
		if (shmkv_open(a->name, 0, &kv) != 0)
			return -1;
		if (shmkv_lock_init(kv, &lk, lc_lock_name[0]) == 0 &&
		    shmkv_lock_try_acquire(&lk, 60000) >= 0)
			shmkv_lock_release(&lk);
		shmkv_close(kv);
	}
	return -1;
}

/* Is block @b, unit @unit with tag @tag, the value its slot holds? */
static bool block_named(const shmkv_t *kv, const struct shmkv_block_shm *b,
			uint32_t unit, uint64_t tag)
{
	/* Relaxed: a quiet store. */
	uint32_t slot = shmkv__load32_relaxed(&b->slot);

	return slot <= shmkv__table_cmd(kv)->mask &&
	       shmkv__load_relaxed(&shmkv__slot(shmkv__table_cmd(kv), slot)->value) ==
		       VAL_BLOCK_WORD(unit, BLK_GEN(tag));
}

/* Used blocks, counted as used, that no slot names and that are tagged
 * with a live pid or tid. With every worker reaped and the audit's lock
 * handles closed, only a dead worker's id that an unrelated process or
 * thread took since can do that: the README's one delay (reclaiming waits
 * until that one dies too). A published block keeps its publisher's tid,
 * live or not: a value, not a leftover. */
static uint64_t blocks_of_live_pids(const shmkv_t *kv)
{
	uint64_t n = 0;

	for (uint32_t p = 0; p < kv->geo.page_count; p++) {
		uint32_t c = shmkv__page_class(kv, p);

		for (uint32_t i = 0;
		     c != SHMKV__NO_CLASS && i < kv->class_blocks[c]; i++) {
			uint32_t cls, unit = p * kv->geo.units_per_page + i;
			struct shmkv_block_shm *b = shmkv__block_at(kv, unit,
								    &cls);
			/* Relaxed: a quiet store; a count. */
			uint64_t tag = shmkv__load_relaxed(&b->tag);

			n += BLK_USED(tag) && !(tag & BLK_CACHED) &&
			     BLK_PID(tag) != 0 &&
			     shmkv__pid_alive(BLK_PID(tag)) &&
			     !block_named(kv, b, unit, tag);
		}
	}
	return n;
}

static void audit_storage(struct lc_audit *a, int r)
{
	/* Blocks used beyond the live keys' need are held by a process: its
	 * lock cells (one per thread or handle, as a worker's sections take
	 * one lock at a time: two at most) and the blocks its threads
	 * allocated and had not yet published (two at most); a cached block
	 * counts as free. Those of the dead wait for the cursor: a process
	 * that was dead when the cursor last passed its blocks has none
	 * left, so the ones that still hold some were alive within the last
	 * turn: those alive at its start, and at most one per step of the
	 * turn, as every process runs a step when it starts owning blocks
	 * (owned.c). Never a function of how many processes ran. */
	int64_t slack = 4 * (a->most_alive + steps_per_turn(a->kv));
	int64_t extra, waiting;
	long problems = 0;
	uint64_t reused;
	struct census c;
	int rc = mp_census_take(a->kv, LC_SLOTS, &c, value_ok);
	const struct shmkv_stats *st = &c.st;
	int settled, orphans;

	lc_verdict(a, rc == 0, "census: %s", shmkv_strerror(rc));
	lc_verdict(a, !c.dups && !c.bad_values && c.live == st->live_keys,
		   "census: %zu keys scanned twice, %zu values never written, "
		   "%zu live keys read, %llu counted",
		   c.dups, c.bad_values, c.live,
		   (unsigned long long)st->live_keys);
	extra = (int64_t)mp_blocks_used(st) - (int64_t)c.need_block;
	lc_verdict(
		a, extra >= 0 && extra <= slack,
		"round %d: %llu value blocks used, the %zu live keys need %zu: "
		"%lld more than a bound of %lld (what the holders alive within "
		"a turn of reclamation may hold)",
		r + 1, (unsigned long long)mp_blocks_used(st), c.live,
		c.need_block, (long long)extra, (long long)slack);
	waiting = extra;
	/* The steady state: ordinary work (lock users coming and going, no
	 * recover) leaves exactly what the live keys need: the leftovers of
	 * the dead within two turns of the cursor, published blocks nothing
	 * names (a writer killed between a replace and its free) within
	 * SHMKV_REAP_ORPHAN_TURNS more (owned.h, README). */
	settled = settle(a, false, 2);
	lc_verdict(a, settled >= 0,
		   "round %d: leftovers of dead processes remain after lock "
		   "users came and went for two turns of reclamation",
		   r + 1);
	orphans = settled < 0
			  ? -1
			  : settle(a, true, (int)SHMKV_REAP_ORPHAN_TURNS + 1);
	lc_verdict(a, settled < 0 || orphans >= 0,
		   "round %d: published blocks nothing names remain after lock "
		   "users came and went for %u turns of reclamation",
		   r + 1, SHMKV_REAP_ORPHAN_TURNS + 1);
	if (orphans < 0)
		shmkv_check(a->kv, show_leftover, &problems);
	problems = 0;
	settled = orphans < 0 ? -1 : settled + orphans;
	free(c.keys.k);
	rc = mp_census_take(a->kv, LC_SLOTS, &c, value_ok);
	lc_verdict(a, rc == 0, "census after settling: %s", shmkv_strerror(rc));
	extra = (int64_t)mp_blocks_used(st) - (int64_t)c.need_block;
	reused = blocks_of_live_pids(a->kv);
	lc_verdict(a, extra == (int64_t)reused,
		   "round %d: %lld blocks beyond the live keys' need after %d "
		   "lock users came and went (%llu tagged with a dead "
		   "worker's pid now reused): not a steady state",
		   r + 1, (long long)extra, settled,
		   (unsigned long long)reused);
	if (reused > 0)
		printf("lifecycle_soak: round %d: %llu blocks wait for a "
		       "process that reused a dead worker's pid\n",
		       r + 1, (unsigned long long)reused);
	lc_verdict(a,
		   st->live_keys + st->tombstones + st->expired <=
				   LC_KEYSPACE &&
			   st->pending == 0 && st->corrupt == 0,
		   "round %d: slots %llu live, %llu tombstones, %llu expired, "
		   "%llu pending, %llu corrupt; the workers name %u keys",
		   r + 1, (unsigned long long)st->live_keys,
		   (unsigned long long)st->tombstones,
		   (unsigned long long)st->expired,
		   (unsigned long long)st->pending,
		   (unsigned long long)st->corrupt, LC_KEYSPACE);
	rc = shmkv_check(a->kv, show_problem, &problems);
	lc_verdict(a, rc == 0, "round %d: shmkv_check found %d problems", r + 1,
		   rc);
	a->used_final = mp_blocks_used(st);
	a->need_final = c.need_block;
	a->problems_final = rc;
	printf("lifecycle_soak: round %d: %lld blocks waited for reclamation "
	       "at its end (bound %lld: 4 x (%lld processes alive at once + "
	       "%d steps a turn)); after lock users came and went, %llu "
	       "value blocks used (live keys need %zu), slots %llu live + "
	       "%llu tombstones + %llu pending, check %d problems\n",
	       r + 1, (long long)waiting, (long long)slack,
	       (long long)a->most_alive, steps_per_turn(a->kv),
	       (unsigned long long)mp_blocks_used(st), c.need_block,
	       (unsigned long long)st->live_keys,
	       (unsigned long long)st->tombstones,
	       (unsigned long long)st->pending, rc);
	free(c.keys.k);
	audit_room(a);
}

void lc_audit_round(struct lc_audit *a, int r)
{
	uint64_t c[LC_LOCKS];

	clear_locks(a);
	audit_lock_states(a);
	audit_errors(a);
	for (unsigned l = 0; l < LC_LOCKS; l++)
		c[l] = audit_counter(a, l);
	printf("lifecycle_soak: round %d: counters %s %llu, %s %llu, %s %llu\n",
	       r + 1, lc_counter[0], (unsigned long long)c[0], lc_counter[1],
	       (unsigned long long)c[1], lc_counter[2],
	       (unsigned long long)c[2]);
	audit_storage(a, r);
	fflush(stdout);
}
