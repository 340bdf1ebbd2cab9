/*
 * test_mp_races.c - many real processes racing on the same keys.
 *
 * NPROC forked children hammer one store at the same time, then the parent
 * checks what only holds if every command was one atomic step: one SETNX
 * winner per key, and no GETSET value lost or returned twice.
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
 * SETNX races: every round, NPROC children SETNX the same keys at once and
 * exactly one may win each. Between rounds the parent checks the winner's
 * value is the one stored, then deletes the keys (or moves to fresh ones).
 */

#define RACE_ROUNDS_MAX 30000
#define RACE_KEYS_MAX	32

struct race_cfg {
	unsigned rounds, keys;
	uint32_t slots;
	bool fresh;	  /* new keys every round instead of DEL */
	bool check_round; /* census after every round */
};

struct race_area {
	struct rounds rs;
	struct race_cfg cfg;
	uint64_t seed;
	atomic_uint wins[RACE_ROUNDS_MAX * RACE_KEYS_MAX];
	atomic_int winner[RACE_ROUNDS_MAX * RACE_KEYS_MAX];
};

static size_t race_key(char *buf, const struct race_cfg *cfg, unsigned r,
		       unsigned k)
{
	if (cfg->fresh)
		return (size_t)sprintf(buf, "r%u-k%u", r, k);
	return (size_t)sprintf(buf, "k%u", k);
}

/* Half the values are inline integers, half need a block. */
static size_t race_value(char *buf, int idx, unsigned r, unsigned k)
{
	if ((r + k) % 2 == 0)
		return (size_t)sprintf(buf, "%u",
				       (idx + 1) * 1000000u +
					       r * RACE_KEYS_MAX + k);
	return mp_pad_x(buf, sprintf(buf, "c%d-r%u-k%u-", idx, r, k), 40);
}

/* Even rounds: all children take the keys in one order, so they collide
 * on each key; odd rounds: each its own order, so inserts of different
 * keys compete for the same free slots. */
static int race_round(shmkv_t *kv, void *area, int idx, unsigned r,
		      uint64_t *own_rng)
{
	struct race_area *a = area;
	unsigned order[RACE_KEYS_MAX], n = a->cfg.keys;
	uint64_t shared_rng = a->seed ^ r, *rng = r % 2 ? own_rng : &shared_rng;
	char key[32], val[64];

	for (unsigned k = 0; k < n; k++)
		order[k] = k;
	for (unsigned k = n; k > 1; k--) {
		unsigned j = (unsigned)rng_below(rng, k), tmp = order[k - 1];

		order[k - 1] = order[j];
		order[j] = tmp;
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned k = order[i], slot = r * RACE_KEYS_MAX + k;
		size_t kl = race_key(key, &a->cfg, r, k);
		size_t vl = race_value(val, idx, r, k);
		int rc = shmkv_setnx(kv, key, kl, val, vl);

		if (rc == 1) {
			atomic_fetch_add(&a->wins[slot], 1);
			atomic_store(&a->winner[slot], idx);
		} else if (rc != 0) {
			return mp_child_fail(&a->rs.rep[idx], CHILD_CMD, rc, r,
					     "SETNX %s", key);
		}
	}
	return 0;
}

static int race_child(int idx, void *arg)
{
	struct race_area *a = arg;

	return mp_rounds_child(&a->rs, a->cfg.rounds, race_round, a, idx,
			       a->seed + (uint64_t)idx * 7919);
}

/* Parent's check of one round; returns 0 or -1 with @why filled. */
static int race_check_round(shmkv_t *kv, struct race_area *a, unsigned r,
			    char *why, size_t cap)
{
	char key[32], want[64], got[SHMKV_VALUE_MAX_DEFAULT];
	size_t wl, gl;

	for (unsigned k = 0; k < a->cfg.keys; k++) {
		unsigned slot = r * RACE_KEYS_MAX + k, wins;
		int rc;

		race_key(key, &a->cfg, r, k);
		wins = atomic_load(&a->wins[slot]);
		if (wins != 1) {
			snprintf(why, cap, "round %u key %s: %u SETNX winners",
				 r, key, wins);
			return -1;
		}
		wl = race_value(want, atomic_load(&a->winner[slot]), r, k);
		rc = mp_get_str(kv, key, got, sizeof(got), &gl);
		if (rc != 1 || gl != wl || memcmp(got, want, wl)) {
			snprintf(why, cap,
				 "round %u key %s: GET %s \"%.*s\", winner "
				 "wrote \"%.*s\"",
				 r, key, tu_rcname(rc), (int)(rc == 1 ? gl : 0),
				 got, (int)wl, want);
			return -1;
		}
	}
	return 0;
}

/* Deletes the round's keys, each of which must exist. */
static int race_clear(shmkv_t *kv, struct race_area *a, unsigned r, char *why,
		      size_t cap)
{
	char key[32];

	for (unsigned k = 0; k < a->cfg.keys; k++) {
		size_t kl = race_key(key, &a->cfg, r, k);
		int rc = shmkv_del(kv, key, kl);

		if (rc != 1) {
			snprintf(why, cap, "round %u: DEL %s gave %s", r, key,
				 tu_rcname(rc));
			return -1;
		}
	}
	return 0;
}

/* Census after a round: the keys are there once each, or all gone. */
static int race_census(shmkv_t *kv, struct race_area *a, long live, char *why,
		       size_t cap)
{
	struct census c;
	int rc = mp_census_take(kv, a->cfg.slots, &c, NULL);

	if (rc) {
		snprintf(why, cap, "census: %s", tu_rcname(rc));
	} else {
		rc = mp_census_check(&c, live, why, cap);
	}
	free(c.keys.k);
	return rc;
}

static int race_parent_round(shmkv_t *kv, struct team *t, struct race_area *a,
			     unsigned r, char *why, size_t cap)
{
	if (mp_rounds_open(&a->rs, t, r)) {
		snprintf(why, cap, "round %u: children did not arrive", r);
		return -1;
	}
	if (race_check_round(kv, a, r, why, cap))
		return -1;
	if (a->cfg.check_round && race_census(kv, a, a->cfg.keys, why, cap))
		return -1;
	if (a->cfg.fresh)
		return 0;
	if (race_clear(kv, a, r, why, cap))
		return -1;
	return a->cfg.check_round ? race_census(kv, a, 0, why, cap) : 0;
}

static void run_race(const struct race_cfg *cfg)
{
	struct race_area *a = mp_shared_map(sizeof(*a));
	shmkv_t *kv = mp_create_store(a->rs.name, cfg->slots, 0);
	struct team t;
	char why[256] = "";
	int failed = 0;

	a->cfg = *cfg;
	a->rs.parent = getpid();
	a->seed = mp_run_seed();
	mp_team_start(&t, NPROC, race_child, a);
	for (unsigned r = 0; r < cfg->rounds && !failed; r++)
		failed = race_parent_round(kv, &t, a, r, why, sizeof(why));
	mp_team_finish(&t, failed);
	mp_team_assert_ok(&t, a->rs.rep);
	cr_assert_eq(failed, 0, "%s", why);
	if (cfg->fresh)
		mp_assert_census(kv, cfg->slots, (long)cfg->rounds * cfg->keys,
				 NULL, "after all rounds");
	shmkv_close(kv);
	munmap(a, sizeof(*a));
}

TestSuite(mp_setnx, .fini = tu_teardown);

Test(mp_setnx, has_exactly_one_winner_per_round_on_a_deleted_key)
{
	struct race_cfg cfg = {
		.rounds = 30000, .keys = 1, .slots = 64, .check_round = true
	};

	run_race(&cfg);
}

Test(mp_setnx, has_exactly_one_winner_per_round_on_fresh_keys)
{
	struct race_cfg cfg = {
		.rounds = 5000, .keys = 1, .slots = 16384, .fresh = true
	};

	run_race(&cfg);
}

Test(mp_setnx, has_one_winner_per_key_when_neighbouring_keys_race)
{
	/* 32 keys in 64 slots: probe runs overlap, so racing inserts of
	 * different keys contend for the same free slots. */
	struct race_cfg cfg = {
		.rounds = 1000, .keys = 32, .slots = 64, .check_round = true
	};

	run_race(&cfg);
}

/*
 * GETSET chains: NPROC children GETSET one key with values unique to
 * (child, step). Each value written, and the initial one, must come back
 * exactly once: from some GETSET, or from the final GET.
 */

#define CHAIN_STEPS 50000

enum chain_mode { CHAIN_INLINE, CHAIN_BLOCK, CHAIN_MIXED };

struct chain_area {
	struct rounds rs;
	enum chain_mode mode;
	int64_t got[NPROC][CHAIN_STEPS]; /* value ids GETSET returned */
};

#define CHAIN_IDS ((int64_t)NPROC * CHAIN_STEPS + 1)

/* Value id 0 is the initial value; child p's step i writes p*STEPS+i+1. */
static size_t chain_value(char *buf, enum chain_mode mode, int64_t id)
{
	bool block = mode == CHAIN_BLOCK || (mode == CHAIN_MIXED && id % 2);
	int n;

	if (!block)
		return (size_t)sprintf(buf, "%lld", (long long)id);
	if (id == 0)
		n = sprintf(buf, "init-");
	else
		n = sprintf(buf, "p%lld-i%lld-",
			    (long long)(id - 1) / CHAIN_STEPS,
			    (long long)(id - 1) % CHAIN_STEPS);
	return mp_pad_x(buf, n, 40);
}

/* The id of a value read back, or -1 if no one wrote it. */
static int64_t chain_parse(const char *v, size_t len, enum chain_mode mode)
{
	char want[64], str[64];
	long long p = -1, i = -1, id = -1;

	/* sscanf needs a terminated string; no value written is this long. */
	if (len >= sizeof(str))
		return -1;
	memcpy(str, v, len);
	str[len] = '\0';
	if (len >= 5 && !memcmp(v, "init-", 5))
		id = 0;
	else if (v[0] == 'p' && sscanf(str, "p%lld-i%lld-", &p, &i) == 2)
		id = p * CHAIN_STEPS + i + 1;
	else if (mp_is_int48(v, len))
		id = strtoll(str, NULL, 10);
	if (id < 0 || id >= CHAIN_IDS)
		return -1;
	if (chain_value(want, mode, id) != len || memcmp(want, v, len))
		return -1;
	return id;
}

static int chain_child(int idx, void *arg)
{
	struct chain_area *a = arg;
	char val[64], old[SHMKV_VALUE_MAX_DEFAULT];
	shmkv_t *kv = NULL;
	int rc = mp_child_start(&a->rs, idx, &kv);

	if (rc)
		return rc;
	for (int i = 0; i < CHAIN_STEPS; i++) {
		struct shmkv_value ov = { old, sizeof(old), 0 };
		size_t vl = chain_value(val, a->mode,
					(int64_t)idx * CHAIN_STEPS + i + 1);

		rc = shmkv_getset(kv, "chain", 5, val, vl, &ov);
		if (rc != 1)
			return mp_child_fail(&a->rs.rep[idx], CHILD_CMD, rc, i,
					     "GETSET chain");
		a->got[idx][i] = chain_parse(old, ov.len, a->mode);
	}
	shmkv_close(kv);
	return 0;
}

/* Counts how often each id came back; returns 0 or -1 with @why filled. */
static int chain_tally(struct chain_area *a, int64_t last, char *why,
		       size_t cap)
{
	unsigned char *seen = calloc(CHAIN_IDS, 1);
	int rc = 0;

	cr_assert_not_null(seen);
	seen[last]++;
	for (int p = 0; p < NPROC && !rc; p++) {
		for (int i = 0; i < CHAIN_STEPS && !rc; i++) {
			if (a->got[p][i] < 0) {
				snprintf(why, cap, "child %d step %d: %s", p, i,
					 "GETSET returned a value never "
					 "written");
				rc = -1;
			} else if (seen[a->got[p][i]]++) {
				snprintf(why, cap,
					 "value id %lld returned twice",
					 (long long)a->got[p][i]);
				rc = -1;
			}
		}
	}
	for (int64_t id = 0; id < CHAIN_IDS && !rc; id++) {
		if (seen[id] != 1) {
			snprintf(why, cap, "value id %lld returned %u times",
				 (long long)id, seen[id]);
			rc = -1;
		}
	}
	free(seen);
	return rc;
}

static void run_chain(enum chain_mode mode)
{
	struct chain_area *a = mp_shared_map(sizeof(*a));
	shmkv_t *kv = mp_create_store(a->rs.name, 1024, 0);
	char val[64], why[256];
	size_t vl = chain_value(val, mode, 0), gl;
	struct team t;
	int64_t last;

	a->mode = mode;
	a->rs.parent = getpid();
	tu_assert_rc(shmkv_set(kv, "chain", 5, val, vl, 0, 0, NULL), 1);
	mp_team_start(&t, NPROC, chain_child, a);
	mp_team_finish(&t, false);
	mp_team_assert_ok(&t, a->rs.rep);

	tu_assert_rc(mp_get_str(kv, "chain", val, sizeof(val), &gl), 1);
	last = chain_parse(val, gl, mode);
	cr_assert_geq(last, 0, "final GET returned a value never written");
	cr_assert_eq(chain_tally(a, last, why, sizeof(why)), 0, "%s", why);
	mp_assert_census(kv, 1024, 1, NULL, "after the chain");
	shmkv_close(kv);
	munmap(a, sizeof(*a));
}

TestSuite(mp_getset, .fini = tu_teardown);

Test(mp_getset, returns_every_inline_value_exactly_once)
{
	run_chain(CHAIN_INLINE);
}

Test(mp_getset, returns_every_block_value_exactly_once)
{
	run_chain(CHAIN_BLOCK);
}

Test(mp_getset, returns_every_value_once_when_inline_and_block_alternate)
{
	run_chain(CHAIN_MIXED);
}
