/*
 * torture_audit.c - the crash torture's verdict on the stopped store (see
 * tests/programs/torture.c): recover, check, value storage, values, lock counters.
 * A helper rather than part of torture.c only to keep files small.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#include "atomic.h"
#include "internal.h"
#include "lock_record.h"
#include "shmkv_lock.h"
#include "helpers/clock.h"
#include "helpers/selfcheck.h"
#include "helpers/verdict.h"
#include "helpers/torture.h"
#include "helpers/value_blocks.h"

/* The longest short TTL a worker sets is 100 ms. */
#define SHORT_TTL_WAIT_MS 250

void torture_verdict(struct torture_tally *t, bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verdict_count(&t->passed, &t->failed, "torture", ok, fmt, ap);
	va_end(ap);
}

struct census {
	uint64_t live, bad;
	uint64_t strings; /* values that are no inline integer, or have a TTL */
	uint64_t pins;	  /* values that name a lock cell (a block) */
	long long ctr[TL_COUNT];
	char why[160]; /* the first bad key */
};

struct keys {
	uint32_t n;
	uint32_t len[TORTURE_SLOTS];
	char key[TORTURE_SLOTS][SHMKV_KEY_MAX_DEFAULT];
};

static int collect(const void *key, size_t klen, void *arg)
{
	struct keys *k = arg;

	if (k->n == TORTURE_SLOTS || klen > SHMKV_KEY_MAX_DEFAULT)
		return -E2BIG;
	memcpy(k->key[k->n], key, klen);
	k->len[k->n++] = (uint32_t)klen;
	return 0;
}

/* Whether a random key's value is one some worker wrote. */
static bool written(const struct torture_tally *t, const char *v, size_t len)
{
	uint32_t spawn, seq;

	if (sc_is_canonical_int(v, len))
		return true;
	return torture_value_parse(v, len, &spawn, &seq) && spawn < t->spawns &&
	       seq >= 1 && seq <= t->seq_final[spawn];
}

/* One key: its value is plausible for its name; counts what it needs. */
static void census_key(const struct torture_tally *t, struct census *c,
		       const char *key, size_t klen, const char *v, size_t len,
		       int64_t ttl)
{
	bool ok = false;

	uint32_t unit, seq;

	c->live++;
	c->strings += !mp_is_int48(v, len) || ttl != -1;
	/* A held safe lock's value names its lock cell, a block too. */
	c->pins += mp_is_int48(v, len) &&
		   val_pin_decode(strtoll(v, NULL, 10), &unit, &seq);
	if (klen == 4 && key[0] == 'k')
		ok = written(t, v, len);
	else if (klen == 8 && !memcmp(key, "lock.pat", 8))
		ok = sc_is_canonical_int(v, len);
	else if (klen == 9 && !memcmp(key, "lock.safe", 9))
		ok = true; /* an owner record: checked by lock_audit */
	for (int l = 0; l < TL_COUNT; l++)
		if (klen == strlen(torture_counter[l]) &&
		    !memcmp(key, torture_counter[l], klen)) {
			ok = sc_is_canonical_int(v, len) && ttl == -1;
			c->ctr[l] = ok ? strtoll(v, NULL, 10) : -1;
		}
	if (!ok && c->bad++ == 0)
		snprintf(c->why, sizeof(c->why), "%.*s = \"%.*s\" (%zu bytes)",
			 (int)klen, key, (int)(len > 60 ? 60 : len), v, len);
}

static int census_take(shmkv_t *kv, const struct torture_tally *t,
		       struct census *c)
{
	static struct keys k;
	char v[TORTURE_VALUE_CAP + 1];
	uint64_t cursor = 0;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	c->ctr[TL_SAFE] = c->ctr[TL_PATTERN] = 0;
	k.n = 0;
	do
		rc = shmkv_scan(kv, cursor, TORTURE_SLOTS, collect, &k,
				&cursor);
	while (rc == 0 && cursor != 0);
	for (uint32_t i = 0; rc == 0 && i < k.n; i++) {
		struct shmkv_value val = { v, sizeof(v) - 1, 0 };
		int64_t ttl;

		rc = shmkv_get(kv, k.key[i], k.len[i], &val);
		if (rc == 1)
			rc = shmkv_pttl(kv, k.key[i], k.len[i], &ttl);
		else if (rc == 0)
			rc = -ENOENT; /* scanned, yet missing: stopped store */
		if (rc == 0) {
			v[val.len] = '\0';
			census_key(t, c, k.key[i], k.len[i], v, val.len, ttl);
		}
	}
	return rc;
}

/*
 * Keys whose value is a block holding a canonical 48-bit integer and no
 * deadline, which the README says is kept inline (white box: walks the
 * slots). Counted apart, so that a failure tells that from lost storage.
 */
static uint64_t ints_in_blocks(shmkv_t *kv)
{
	char buf[24];
	uint64_t n = 0;

	for (uint32_t i = 0; i <= shmkv__table_cmd(kv)->mask; i++) {
		struct shmkv_slot_shm *s = shmkv__slot(shmkv__table_cmd(kv), i);
		/* Acquire, both: the store is quiet; pair with the last CAS. */
		uint64_t w = shmkv__load_acquire(&s->state);
		uint64_t v = shmkv__load_acquire(&s->value);
		struct shmkv_block_view view;

		if (SLOT_STATE(w) == SLOT_MEMBER && VAL_KIND(v) == VAL_BLOCK &&
		    shmkv__block_read(kv, v, buf, sizeof(buf), &view) == 0)
			n += view.deadline_ms == 0 && view.len < sizeof(buf) &&
			     mp_is_int48(buf, view.len);
	}
	return n;
}

static void check_problem(const char *problem, void *arg)
{
	(void)arg;
	fprintf(stderr, "torture: check: %s\n", problem);
}

static int lock_seen(const struct shmkv_lock_info *info, void *arg)
{
	*(uint64_t *)arg = info->token;
	return 0;
}

/* Counter within [completed, completed + killed inside (+ late)]. */
static void counter_audit(struct torture_tally *t, const struct census *c,
			  int l)
{
	uint64_t lo = t->done[l], hi = lo + t->killed_in[l] + t->late[l];
	long long v = c->ctr[l];

	if (t->late[l] > 0)
		lo = 0; /* a late section may have overwritten others' */
	torture_verdict(
		t, v >= 0 && (uint64_t)v >= lo && (uint64_t)v <= hi,
		"%s = %lld, expected within [%llu, %llu]: %llu sections "
		"completed, %llu holders killed inside, %llu late",
		torture_counter[l], v, (unsigned long long)lo,
		(unsigned long long)hi, (unsigned long long)t->done[l],
		(unsigned long long)t->killed_in[l],
		(unsigned long long)t->late[l]);
}

/* Short TTLs run out and are swept; recovery repairs what the killed
 * workers left; then check finds nothing. */
static void audit_repair(shmkv_t *kv, struct torture_tally *t)
{
	struct shmkv_recover_report r;
	uint64_t cursor = 0;
	int rc, n = 0;

	sleep_ns(SHORT_TTL_WAIT_MS * 1000000L);
	do
		rc = shmkv_sweep(kv, &cursor, TORTURE_SLOTS);
	while (rc >= 0 && cursor != 0 && ++n < 4);
	torture_verdict(t, rc >= 0, "sweep: %s", shmkv_strerror(rc));
	rc = shmkv_recover(kv, &r);
	torture_verdict(t, rc >= 0, "recover: %s", shmkv_strerror(rc));
	printf("torture: final recover: %d repairs: %llu stale claims, %llu "
	       "stuck inserts, %llu collided, %llu dead slots, %llu leaked "
	       "blocks\n",
	       rc, (unsigned long long)r.stale_claims,
	       (unsigned long long)r.stuck_inserts,
	       (unsigned long long)r.collided, (unsigned long long)r.dead_slots,
	       (unsigned long long)r.leaked_blocks);
	rc = shmkv_check(kv, check_problem, NULL);
	torture_verdict(t, rc == 0, "shmkv_check after recover: %d problems",
			rc);
}

/* Every value is one somebody wrote; value storage balances. */
static void audit_content(shmkv_t *kv, struct torture_tally *t,
			  struct census *c)
{
	uint64_t ints = ints_in_blocks(kv);
	struct shmkv_stats st;
	int rc = census_take(kv, t, c);

	torture_verdict(t, rc == 0, "census: %s", shmkv_strerror(rc));
	torture_verdict(t, c->bad == 0,
			"%llu keys hold values nobody wrote, e.g. %s",
			(unsigned long long)c->bad, c->why);
	rc = shmkv_stats(kv, &st);
	torture_verdict(
		t,
		rc == 0 && st.pending == 0 && st.corrupt == 0 &&
			st.expired == 0 && st.live_keys == c->live,
		"stats: %llu pending, %llu corrupt, %llu expired, "
		"%llu live (census %llu)",
		(unsigned long long)st.pending, (unsigned long long)st.corrupt,
		(unsigned long long)st.expired,
		(unsigned long long)st.live_keys, (unsigned long long)c->live);
	torture_verdict(t,
			st.inline_values + st.block_values == c->strings + ints,
			"%llu string values (+%llu integers in blocks), stats "
			"count %llu inline and %llu in blocks",
			(unsigned long long)c->strings, (unsigned long long)ints,
			(unsigned long long)st.inline_values,
			(unsigned long long)st.block_values);
	torture_verdict(t, mp_blocks_used(&st) == st.block_values + c->pins,
			"value storage: %llu blocks used, keys name %llu and "
			"lock cells %llu",
			(unsigned long long)mp_blocks_used(&st),
			(unsigned long long)st.block_values,
			(unsigned long long)c->pins);
	torture_verdict(t, ints == 0,
			"%llu keys hold an integer without TTL in a value "
			"block, where the README keeps it inline (PERSIST or "
			"EXPIRE copies the block as is)",
			(unsigned long long)ints);
}

/* Counters exact for completed sections; tokens only grew. */
static void audit_locks(shmkv_t *kv, struct torture_tally *t,
			const struct census *c, uint64_t granted)
{
	uint64_t token = 0;
	int rc;

	for (int l = 0; l < TL_COUNT; l++)
		counter_audit(t, c, l);
	torture_verdict(t, t->late[TL_SAFE] == 0,
			"%llu safe-lock holders found their %d ms lease gone",
			(unsigned long long)t->late[TL_SAFE], TORTURE_LEASE_MS);
	rc = shmkv_lock_list(kv, lock_seen, &token);
	torture_verdict(t, rc == 1 && token >= granted,
			"lock list: %d locks, token %llu below a granted %llu",
			rc, (unsigned long long)token,
			(unsigned long long)granted);
}

void torture_audit(shmkv_t *kv, struct torture_tally *t, uint64_t granted)
{
	struct census c;
	int rc;

	audit_repair(kv, t);
	audit_content(kv, t, &c);
	audit_locks(kv, t, &c, granted);
	rc = shmkv_recover(kv, NULL);
	torture_verdict(t, rc == 0, "a second recover repaired %d things", rc);
}
