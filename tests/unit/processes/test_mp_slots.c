/*
 * test_mp_slots.c - many real processes creating, updating and deleting
 * keys at once.
 *
 * NPROC forked children hammer one store at the same time, then the parent
 * checks what only holds if every command was one atomic step: no key in
 * two slots, no increment lost, and no slot leaked over millions of SETs
 * and DELs. The 10,000,000-command churn runs only with SHMKV_LONG=1 (it
 * shows as skipped otherwise).
 *
 * Children never assert: they report through their exit status and a
 * report slot in shared memory, and the parent asserts once every child
 * has been reaped (helpers/mp.h). Every loop is bounded by a count, so a
 * lost wake-up or a hung child fails the test instead of hanging it; no
 * assertion depends on how long anything took. SHMKV_SEED replays the
 * random choices of a run.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers/mp.h"
#include "helpers/mp_census.h"
#include "helpers/testutil.h"

/*
 * Same-key inserts: NPROC children walk the same 24 keys of a 64-slot
 * table in the same order, each doing its own random SET/SETNX/INCR/DEL,
 * so inserts of one new key collide while deletes free slots for reuse.
 * After each phase the parent checks no key got two slots, then empties
 * the store, which must leave no block or slot behind.
 */

#define INS_KEYS   24
#define INS_SLOTS  64
#define INS_PHASES 2000
#define INS_PASSES 4

struct ins_area {
	struct rounds rs;
	uint64_t seed;
};

static size_t ins_key(char *buf, unsigned k)
{
	return (size_t)sprintf(buf, "n%02u", k);
}

/* One random command on @key; -EDOM is INCR on a string, not a fault. */
static int ins_op(shmkv_t *kv, const char *key, size_t kl, uint64_t *rng,
		  int idx)
{
	unsigned op = (unsigned)rng_below(rng, 100);
	char val[64];
	size_t vl;
	int64_t n;
	int rc;

	if (rng_below(rng, 2))
		vl = (size_t)sprintf(val, "%u",
				     (unsigned)rng_below(rng, 100000));
	else
		vl = mp_pad_x(val, sprintf(val, "s%d-", idx), 12 + idx);
	if (op < 30) {
		rc = shmkv_set(kv, key, kl, val, vl, 0, 0, NULL);
		return rc == 1 ? 0 : rc < 0 ? rc : -EPROTO;
	}
	if (op < 50) {
		rc = shmkv_setnx(kv, key, kl, val, vl);
		return rc == 0 || rc == 1 ? 0 : rc < 0 ? rc : -EPROTO;
	}
	if (op < 75) {
		rc = shmkv_incr(kv, key, kl, &n);
		return rc == 0 || rc == -EDOM ? 0 : rc < 0 ? rc : -EPROTO;
	}
	rc = shmkv_del(kv, key, kl);
	return rc == 0 || rc == 1 ? 0 : rc < 0 ? rc : -EPROTO;
}

static int ins_phase(shmkv_t *kv, void *area, int idx, unsigned ph,
		     uint64_t *rng)
{
	struct ins_area *a = area;
	/* The key order comes from the phase alone: all children meet on
	 * the same key at about the same time. */
	uint64_t order_rng = a->seed ^ ((uint64_t)ph << 32);
	char key[16];

	for (unsigned i = 0; i < INS_PASSES * INS_KEYS; i++) {
		unsigned k = (unsigned)rng_below(&order_rng, INS_KEYS);
		size_t kl = ins_key(key, k);
		int rc = ins_op(kv, key, kl, rng, idx);

		if (rc)
			return mp_child_fail(&a->rs.rep[idx], CHILD_CMD, rc, ph,
					     "command on %s", key);
	}
	return 0;
}

static int ins_child(int idx, void *arg)
{
	struct ins_area *a = arg;

	return mp_rounds_child(&a->rs, INS_PHASES, ins_phase, a, idx,
			       a->seed * 31 + (uint64_t)idx);
}

/* Every key EXISTS finds must have been visited by the scan, once. */
static int ins_check(shmkv_t *kv, unsigned ph, char *why, size_t cap)
{
	struct census c;
	char key[16], msg[200];
	size_t found = 0;
	int rc = mp_census_take(kv, INS_SLOTS, &c, NULL);

	if (rc) {
		snprintf(why, cap, "phase %u: census: %s", ph, tu_rcname(rc));
		goto out;
	}
	rc = mp_census_check(&c, -1, msg, sizeof(msg));
	if (rc) {
		snprintf(why, cap, "phase %u: %s", ph, msg);
		goto out;
	}
	for (unsigned k = 0; k < INS_KEYS; k++) {
		size_t kl = ins_key(key, k);

		found += shmkv_exists(kv, key, kl) == 1;
	}
	if (found != c.live) {
		snprintf(why, cap, "phase %u: %zu keys exist, scan found %zu",
			 ph, found, c.live);
		rc = -1;
	}
out:
	free(c.keys.k);
	return rc;
}

static int ins_empty(shmkv_t *kv, unsigned ph, char *why, size_t cap)
{
	char key[16], msg[200];
	struct census c;
	int rc = 0;

	for (unsigned k = 0; k < INS_KEYS && rc >= 0; k++) {
		size_t kl = ins_key(key, k);

		rc = shmkv_del(kv, key, kl);
	}
	if (rc < 0) {
		snprintf(why, cap, "phase %u: DEL %s: %s", ph, key,
			 tu_rcname(rc));
		return -1;
	}
	rc = mp_census_take(kv, INS_SLOTS, &c, NULL);
	if (rc) {
		snprintf(why, cap, "phase %u: census: %s", ph, tu_rcname(rc));
	} else if (mp_census_check(&c, 0, msg, sizeof(msg))) {
		snprintf(why, cap, "phase %u, emptied: %s", ph, msg);
		rc = -1;
	}
	free(c.keys.k);
	return rc;
}

TestSuite(mp_insert, .fini = tu_teardown);

Test(mp_insert, never_gives_one_key_two_slots)
{
	struct ins_area *a = mp_shared_map(sizeof(*a));
	shmkv_t *kv = mp_create_store(a->rs.name, INS_SLOTS, 0);
	char why[256] = "";
	struct team t;
	int failed = 0;

	a->rs.parent = getpid();
	a->seed = mp_run_seed();
	mp_team_start(&t, NPROC, ins_child, a);
	for (unsigned ph = 0; ph < INS_PHASES && !failed; ph++) {
		if (mp_rounds_open(&a->rs, &t, ph)) {
			snprintf(why, sizeof(why),
				 "phase %u: children did not arrive", ph);
			failed = 1;
			break;
		}
		failed = ins_check(kv, ph, why, sizeof(why)) ||
			 ins_empty(kv, ph, why, sizeof(why));
	}
	mp_team_finish(&t, failed);
	mp_team_assert_ok(&t, a->rs.rep);
	cr_assert_eq(failed, 0, "%s", why);
	shmkv_close(kv);
	munmap(a, sizeof(*a));
}

/*
 * INCR: NPROC children increment 8 neighbouring keys (created by the first
 * INCR) M times each. Every result 1..N*M must be returned exactly once
 * per key, and the final value is N*M.
 */

#define INCR_KEYS  8
#define INCR_STEPS 20000
#define INCR_TOTAL (NPROC * INCR_STEPS)

struct incr_area {
	struct rounds rs;
	int64_t got[NPROC][INCR_KEYS][INCR_STEPS];
};

static int incr_child(int idx, void *arg)
{
	struct incr_area *a = arg;
	char key[16];
	shmkv_t *kv = NULL;
	int rc = mp_child_start(&a->rs, idx, &kv);

	if (rc)
		return rc;
	for (int i = 0; i < INCR_STEPS; i++) {
		for (int k = 0; k < INCR_KEYS; k++) {
			size_t kl = (size_t)sprintf(key, "ctr%d", k);

			rc = shmkv_incr(kv, key, kl, &a->got[idx][k][i]);
			if (rc)
				return mp_child_fail(&a->rs.rep[idx], CHILD_CMD,
						     rc, i, "INCR %s", key);
		}
	}
	shmkv_close(kv);
	return 0;
}

/* Each result 1..TOTAL once for key @k; returns 0 or the first bad one. */
static int64_t incr_tally(const struct incr_area *a, int k)
{
	static unsigned char seen[INCR_TOTAL + 1];

	memset(seen, 0, sizeof(seen));
	for (int p = 0; p < NPROC; p++) {
		for (int i = 0; i < INCR_STEPS; i++) {
			int64_t v = a->got[p][k][i];

			if (v < 1 || v > INCR_TOTAL || seen[v]++)
				return v == 0 ? -1 : v;
		}
	}
	return 0;
}

TestSuite(mp_incr, .fini = tu_teardown);

Test(mp_incr, counts_every_increment_from_every_process)
{
	struct incr_area *a = mp_shared_map(sizeof(*a));
	shmkv_t *kv = mp_create_store(a->rs.name, 64, 0);
	char key[16], val[32], want[32];
	size_t vl, want_len = (size_t)sprintf(want, "%d", INCR_TOTAL);
	struct team t;

	a->rs.parent = getpid();
	mp_team_start(&t, NPROC, incr_child, a);
	mp_team_finish(&t, false);
	mp_team_assert_ok(&t, a->rs.rep);
	for (int k = 0; k < INCR_KEYS; k++) {
		int64_t bad = incr_tally(a, k);

		sprintf(key, "ctr%d", k);
		cr_assert_eq(bad, 0,
			     "%s: INCR result %lld twice or out of range", key,
			     (long long)bad);
		tu_assert_rc(mp_get_str(kv, key, val, sizeof(val), &vl), 1);
		cr_assert(vl == want_len && !memcmp(val, want, vl),
			  "%s holds %.*s, expected %s", key, (int)vl, val,
			  want);
	}
	mp_assert_census(kv, 64, INCR_KEYS, NULL, "after the increments");
	shmkv_close(kv);
	munmap(a, sizeof(*a));
}

/*
 * Churn: NPROC children SET distinct keys through a 4096-slot table and
 * DEL each one once they hold more than CHURN_LIVE, so the table stays
 * under half full while every slot is reused many times over. A table
 * that leaks deleted slots runs out (-ENOSPC) long before the end.
 */

#define CHURN_SLOTS 4096
#define CHURN_LIVE  500
#define CHURN_RING  512

struct churn_result {
	uint64_t live;	  /* keys left at the end */
	uint64_t strings; /* of those, with a block value */
};

struct churn_area {
	struct report rep[MAXPROC];
	struct churn_result res[MAXPROC];
	char name[TU_NAME_CAP];
	uint64_t ops_per_child; /* SETs + DELs */
};

/* Every third value needs a block; the others are inline integers. */
static size_t churn_value(char *buf, uint64_t seq)
{
	if (seq % 3 == 0)
		return mp_pad_x(buf,
				sprintf(buf, "s%llu-", (unsigned long long)seq),
				24);
	return (size_t)sprintf(buf, "%llu", (unsigned long long)seq);
}

static size_t churn_key(char *buf, int idx, uint64_t seq)
{
	return (size_t)sprintf(buf, "c%d-%llu", idx, (unsigned long long)seq);
}

/* SETs key @seq, reading every 64th back. */
static int churn_set(shmkv_t *kv, struct report *rep, int idx, uint64_t seq)
{
	char key[32], val[32], got[64];
	size_t kl = churn_key(key, idx, seq), vl = churn_value(val, seq), gl;
	int rc = shmkv_set(kv, key, kl, val, vl, 0, 0, NULL);

	if (rc != 1)
		return mp_child_fail(rep, CHILD_CMD, rc, (long)seq, "SET %s",
				     key);
	if (seq % 64)
		return 0;
	rc = mp_get_str(kv, key, got, sizeof(got), &gl);
	if (rc != 1 || gl != vl || memcmp(got, val, vl))
		return mp_child_fail(rep, CHILD_VALUE, rc, (long)seq, "GET %s",
				     key);
	return 0;
}

static int churn_child(int idx, void *arg)
{
	struct churn_area *a = arg;
	uint64_t ring[CHURN_RING], head = 0, tail = 0, ops = 0, seq = 0;
	char key[32];
	shmkv_t *kv = NULL;
	int rc = mp_child_open(a->name, &kv, &a->rep[idx]);

	while (rc == 0 && ops < a->ops_per_child) {
		rc = churn_set(kv, &a->rep[idx], idx, seq);
		ring[head++ % CHURN_RING] = seq++;
		ops++;
		if (rc || head - tail <= CHURN_LIVE)
			continue;
		rc = shmkv_del(kv, key,
			       churn_key(key, idx, ring[tail++ % CHURN_RING]));
		ops++;
		rc = rc == 1 ? 0
			     : mp_child_fail(&a->rep[idx], CHILD_CMD, rc,
					     (long)seq, "DEL %s", key);
	}
	a->res[idx].live = head - tail;
	for (uint64_t i = tail; i < head; i++)
		a->res[idx].strings += ring[i % CHURN_RING] % 3 == 0;
	shmkv_close(kv);
	return rc;
}

static bool churn_value_ok(const char *v, size_t len)
{
	return mp_is_int48(v, len) || (len == 24 && v[0] == 's');
}

static void run_churn(uint64_t total_ops)
{
	struct churn_area *a = mp_shared_map(sizeof(*a));
	shmkv_t *kv = mp_create_store(a->name, CHURN_SLOTS, 0);
	uint64_t live = 0, strings = 0;
	struct census c;
	char why[256];
	struct team t;
	int rc;

	a->ops_per_child = total_ops / NPROC;
	mp_team_start(&t, NPROC, churn_child, a);
	mp_team_finish(&t, false);
	mp_team_assert_ok(&t, a->rep);
	for (int i = 0; i < NPROC; i++) {
		live += a->res[i].live;
		strings += a->res[i].strings;
	}
	rc = mp_census_take(kv, CHURN_SLOTS, &c, churn_value_ok);
	cr_assert_eq(rc, 0, "census: %s", tu_rcname(rc));
	cr_assert_eq(mp_census_check(&c, (long)live, why, sizeof(why)), 0, "%s",
		     why);
	cr_assert_eq(c.strings, strings, "%zu string values, expected %llu",
		     c.strings, (unsigned long long)strings);
	free(c.keys.k);
	shmkv_close(kv);
	munmap(a, sizeof(*a));
}

TestSuite(mp_churn, .fini = tu_teardown);

Test(mp_churn, never_runs_out_of_slots_over_a_million_set_and_del)
{
	run_churn(1000000);
}

Test(mp_churn, never_runs_out_of_slots_over_ten_million_set_and_del)
{
	const char *env = getenv("SHMKV_LONG");

	if (!env || strcmp(env, "1"))
		cr_skip_test("10M churn runs only with SHMKV_LONG=1");
	run_churn(10000000);
}
