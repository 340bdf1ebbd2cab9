/*
 * limit_audit.c - the "store at its limit" soak's verdict on a round's
 * store once every worker is reaped (see limit.h): nothing the workers
 * did gave a result it may not give, the growth finishes, the locks and
 * counters are whole, shmkv_check is clean, every key deletes, and with
 * the keys gone new values fit again.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "helpers/limit.h"
#include "helpers/verdict.h"
#include "shmkv_lock.h"

#define LOCK_WAIT_MS  10000  /* the audit's take of a lock: hang guard */
#define SHOW_PROBLEMS 10     /* shmkv_check problems printed */
#define FILL_MAX      10000u /* an evicting store never fills */

void ls_verdict(struct ls_tally *t, bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verdict_count(&t->passed, &t->failed, "limit_soak", ok, fmt, ap);
	va_end(ap);
}

/* Every call of the workers and the soak gave a result it may give. */
static void audit_fails(struct ls_area *a, struct ls_tally *t)
{
	for (int k = 0; k < LF_KINDS; k++) {
		uint64_t n = atomic_load(&a->fails[k]);

		ls_verdict(t, n == 0,
			   "%llu %s calls gave a result they may "
			   "not give; the first: %s",
			   (unsigned long long)n, ls_fail_name[k], a->note[k]);
	}
}

/* The growth under way finishes, and none is left waiting; the store
 * is within its max_memory. */
static void audit_growth(shmkv_t *kv, struct ls_tally *t,
			 struct shmkv_stats *st)
{
	int rc = shmkv_maintain(kv);

	ls_verdict(t, rc == 0,
		   "audit: shmkv_maintain with every worker gone: %d (%s)", rc,
		   shmkv_strerror(rc));
	rc = shmkv_stats(kv, st);
	ls_verdict(t, rc == 0 && st->growing_from == 0,
		   "audit: a growth from %llu slots still under way after "
		   "shmkv_maintain (stats: %d)",
		   (unsigned long long)st->growing_from, rc);
	ls_verdict(t, st->memory_bytes <= st->max_memory,
		   "audit: the store uses %llu bytes, past its max_memory %llu",
		   (unsigned long long)st->memory_bytes,
		   (unsigned long long)st->max_memory);
}

/* Takes each lock once (a holder killed in its section left it held:
 * OWNER_DEAD) and releases it. */
static void audit_locks(shmkv_t *kv, struct ls_tally *t)
{
	struct shmkv_lock lk;

	for (unsigned l = 0; l < LS_LOCKS; l++) {
		int rc = shmkv_lock_init(kv, &lk, ls_lock_name[l]);

		if (rc == 0)
			rc = shmkv_lock_timed_acquire(&lk, LS_LEASE_MS,
						      LOCK_WAIT_MS);
		ls_verdict(t,
			   rc == SHMKV_LOCK_ACQUIRED ||
				   rc == SHMKV_LOCK_OWNER_DEAD,
			   "audit: take of lock %s with every worker gone: "
			   "%d (%s)",
			   ls_lock_name[l], rc, shmkv_strerror(rc));
		if (rc < 0)
			continue;
		rc = shmkv_lock_release(&lk);
		ls_verdict(t, rc == 0, "audit: release of lock %s: %d (%s)",
			   ls_lock_name[l], rc, shmkv_strerror(rc));
	}
}

/* Counter @key lies in [@lo, @hi] (only <= @hi where a policy may have
 * evicted it). */
static void audit_counter(shmkv_t *kv, struct ls_tally *t, const char *key,
			  uint64_t lo, uint64_t hi, const char *what)
{
	int64_t c = 0;
	int rc = shmkv_get_int(kv, key, strlen(key), &c);
	bool ok = rc == 1 ? (uint64_t)c <= hi &&
				    (t->evicting || (uint64_t)c >= lo)
			  : rc == 0 && t->evicting;

	ls_verdict(t, ok,
		   "counter %s = %lld (GET_int %d), but %s give [%llu, %llu]%s",
		   key, (long long)c, rc, what, (unsigned long long)lo,
		   (unsigned long long)hi,
		   (uint64_t)c < lo ? ": a lost update" : "");
}

static void audit_counters(shmkv_t *kv, struct ls_tally *t)
{
	for (unsigned l = 0; l < LS_LOCKS; l++) {
		uint64_t lo = t->sections[l] + t->landed[l];

		audit_counter(kv, t, ls_lock_counter[l], lo,
			      lo + t->in_flight[l],
			      "the sections completed or killed after their "
			      "SET, and those killed with one in flight,");
	}
	for (unsigned c = 0; c < LS_COUNTERS; c++)
		audit_counter(kv, t, ls_counter[c], t->incrs[c],
			      t->incrs[c] + t->incr_in[c],
			      "the INCRs that returned and those killed in "
			      "one");
}

static void show_problem(const char *problem, void *arg)
{
	int *shown = arg;

	if (strncmp(problem, "leftover: ", 10) != 0 &&
	    (*shown)++ < SHOW_PROBLEMS)
		fprintf(stderr, "limit_soak: shmkv_check: %s\n", problem);
}

static void audit_check(shmkv_t *kv, struct ls_tally *t, const char *when)
{
	int shown = 0, rc = shmkv_check(kv, show_problem, &shown);

	ls_verdict(t, rc == 0, "audit: shmkv_check %s: %d problems", when, rc);
}

/* DEL of every key of the keyspace: never an error. Return: deleted. */
static unsigned delete_all(shmkv_t *kv, struct ls_tally *t, unsigned keys)
{
	unsigned deleted = 0, failed = 0;
	int first = 0;
	char key[16];

	for (unsigned i = 0; i < keys; i++) {
		int rc = shmkv_del(kv, key, ls_key(key, i));

		deleted += rc == 1;
		if (rc < 0 && failed++ == 0)
			first = rc;
	}
	ls_verdict(t, failed == 0,
		   "audit: DEL of every key, alone on the store: %u failed, "
		   "the first with %d (%s)",
		   failed, first, shmkv_strerror(first));
	return deleted;
}

/* With the keys gone: a new key of each size fits, then new keys until
 * the store is full. Return: how many of the latter fit. */
static unsigned fill_again(shmkv_t *kv, struct ls_tally *t)
{
	static const unsigned sizes[] = { 1,   16,  32,	 64,
					  128, 256, 512, LS_VALUE_MAX };
	char key[16], val[LS_VALUE_MAX];
	unsigned fit = 0;
	int rc = 1;

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned klen = (unsigned)snprintf(key, sizeof(key), "z%u",
						   sizes[i]);

		rc = shmkv_set(kv, key, klen, val, ls_value(val, sizes[i], -1),
			       0, 0, NULL);
		ls_verdict(t, rc == 1,
			   "audit: SET of a new %u-byte value with every key "
			   "deleted: %d (%s)",
			   sizes[i], rc, shmkv_strerror(rc));
	}
	for (rc = 1; rc == 1 && fit < FILL_MAX; fit += rc == 1) {
		unsigned klen = (unsigned)snprintf(key, sizeof(key), "f%u",
						   fit);

		rc = shmkv_set(kv, key, klen, val,
			       ls_value(val, LS_VALUE_MAX / 2, -1), 0, 0, NULL);
	}
	ls_verdict(t, fit > 0 && (rc == -ENOMEM || rc == -ENOSPC || rc == 1),
		   "audit: filling the emptied store with new %u-byte values: "
		   "%u fit, then %d (%s)",
		   LS_VALUE_MAX / 2, fit, rc, shmkv_strerror(rc));
	return fit;
}

void ls_audit(shmkv_t *kv, struct ls_area *a, struct ls_tally *t, unsigned keys)
{
	struct shmkv_stats st, empty;
	unsigned deleted, fit;

	audit_fails(a, t);
	audit_growth(kv, t, &st);
	audit_locks(kv, t);
	audit_counters(kv, t);
	audit_check(kv, t, "after the round");
	deleted = delete_all(kv, t, keys);
	memset(&empty, 0, sizeof(empty));
	shmkv_stats(kv, &empty);
	ls_verdict(t, empty.block_values == 0,
		   "audit: %llu keys still hold a value block after every key "
		   "was deleted",
		   (unsigned long long)empty.block_values);
	fit = fill_again(kv, t);
	audit_check(kv, t, "after the refill");
	printf("limit_soak:   end: %llu slots after %llu growths, %llu of "
	       "%llu bytes used, %llu live keys (%llu in blocks); %u deleted "
	       "by the audit, then %u new %u-byte values fit\n",
	       (unsigned long long)st.slots, (unsigned long long)st.growths,
	       (unsigned long long)st.memory_bytes,
	       (unsigned long long)st.max_memory,
	       (unsigned long long)st.live_keys,
	       (unsigned long long)st.block_values, deleted, fit,
	       LS_VALUE_MAX / 2);
}
