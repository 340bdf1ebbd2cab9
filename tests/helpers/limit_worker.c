/*
 * limit_worker.c - the workers of the "store at its limit" soak (see
 * limit.h and tests/programs/limit_soak.c). Each is a forked process that
 * opens the store itself and does its role's commands until told to stop
 * or killed; every result a call may not give is recorded in the result
 * area (ls_fail), never asserted.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/clock.h"
#include "helpers/limit.h"
#include "helpers/rng.h"
#include "helpers/selfcheck.h"
#include "shmkv_lock.h"

#define ACQUIRE_WAIT_MS 500 /* then try again (and look at stop) */
#define SHORT_MAX	16u /* strings this long live in their slot */
#define BLOCK_MIN	32u /* strings this long need a value block */
#define INT_MAX_WRITTEN 1000000u

struct wk {
	shmkv_t *kv;
	struct ls_area *a;
	struct ls_lane *ln;
	struct shmkv_lock locks[LS_LOCKS];
	uint64_t rng;
	unsigned keys;
};

/* Counts a failure of @kind. Return: whether it is the first, whose
 * words the caller keeps. */
static bool count_fail(struct ls_area *a, enum ls_fail kind)
{
	uint32_t none = 0;

	atomic_fetch_add(&a->fails[kind], 1);
	/* Seq_cst: one writer of the note, whoever takes it first. */
	return atomic_compare_exchange_strong(&a->noted[kind], &none, 1);
}

void ls_fail(struct ls_area *a, enum ls_fail kind, const char *fmt, ...)
{
	va_list ap;

	if (!count_fail(a, kind))
		return;
	va_start(ap, fmt);
	vsnprintf(a->note[kind], sizeof(a->note[kind]), fmt, ap);
	va_end(ap);
}

unsigned ls_key(char *buf, unsigned i)
{
	return (unsigned)snprintf(buf, 16, "k%05u", i);
}

unsigned ls_value(char *buf, unsigned len, int64_t n)
{
	if (n >= 0)
		return (unsigned)snprintf(buf, 24, "%lld", (long long)n);
	buf[0] = 'V';
	for (unsigned i = 1; i < len; i++)
		buf[i] = (char)('a' + (len * 7 + i) % 26);
	return len;
}

bool ls_value_ok(const char *v, size_t len)
{
	if (sc_is_canonical_int(v, len))
		return true;
	if (len == 0 || len > LS_VALUE_MAX || v[0] != 'V')
		return false;
	for (size_t i = 1; i < len; i++)
		if (v[i] != (char)('a' + (len * 7 + i) % 26))
			return false;
	return true;
}

static const char *err_name(int rc)
{
	const char *n = rc < 0 ? strerrorname_np(-rc) : NULL;

	return n ? n : "?";
}

static unsigned random_key(struct wk *w, char *key)
{
	return ls_key(key, (unsigned)rng_below(&w->rng, w->keys));
}

/* SET of a random key: an integer, a short string or a block's worth.
 * Refusals for want of room (-ENOMEM, -ENOSPC) are the point of a full
 * store, not failures. */
static void writer_step(struct wk *w)
{
	char key[16], val[LS_VALUE_MAX + 1];
	unsigned klen = random_key(w, key), len;
	uint64_t pick = rng_below(&w->rng, 8);
	int rc;

	if (pick == 0)
		len = ls_value(val, 0,
			       (int64_t)rng_below(&w->rng, INT_MAX_WRITTEN));
	else if (pick == 1)
		len = ls_value(val, 1 + (unsigned)rng_below(&w->rng, SHORT_MAX),
			       -1);
	else if (pick < 4)
		len = ls_value(val,
			       BLOCK_MIN + (unsigned)rng_below(
						   &w->rng, LS_VALUE_MAX / 4 -
								    BLOCK_MIN),
			       -1);
	else
		len = ls_value(
			val,
			LS_VALUE_MAX / 2 + 1 +
				(unsigned)rng_below(&w->rng, LS_VALUE_MAX / 2),
			-1);
	rc = shmkv_set(w->kv, key, klen, val, len, 0, 0, NULL);
	if (rc == 1)
		atomic_fetch_add(&w->a->done[LS_WRITER], 1);
	else if (rc == -ENOMEM)
		atomic_fetch_add(&w->a->enomem, 1);
	else if (rc == -ENOSPC)
		atomic_fetch_add(&w->a->enospc, 1);
	else
		ls_fail(w->a, LF_SET,
			"SET %.*s (%u bytes) returned %d (%s: %s)", (int)klen,
			key, len, rc, err_name(rc), shmkv_strerror(rc));
}

/* DEL or GETDEL of a random key: never an error, whatever the memory. */
static void deleter_step(struct wk *w)
{
	char key[16], buf[LS_VALUE_MAX];
	struct shmkv_value old = { buf, sizeof(buf), 0 };
	unsigned klen = random_key(w, key);
	bool getdel = rng_below(&w->rng, 2);
	int rc = getdel ? shmkv_getdel(w->kv, key, klen, &old)
			: shmkv_del(w->kv, key, klen);

	if (rc < 0)
		ls_fail(w->a, getdel ? LF_GETDEL : LF_DEL,
			"%s %.*s returned %d (%s: %s)",
			getdel ? "GETDEL" : "DEL", (int)klen, key, rc,
			err_name(rc), shmkv_strerror(rc));
	else if (rc == 1 && getdel && !ls_value_ok(buf, old.len))
		ls_fail(w->a, LF_GETDEL,
			"GETDEL %.*s returned a value nobody wrote (%zu "
			"bytes: \"%.*s\")",
			(int)klen, key, old.len,
			(int)(old.len < 40 ? old.len : 40), buf);
	if (rc == 1)
		atomic_fetch_add(&w->a->done[LS_DELETER], 1);
}

/* GET n, SET n + 1 of lock @l's counter, which we hold. Return: whether
 * the SET landed. */
static bool section_body(struct wk *w, unsigned l)
{
	const char *key = ls_lock_counter[l];
	char val[24];
	int64_t n = 0;
	int rc = shmkv_get_int(w->kv, key, strlen(key), &n);

	/* 0 (missing) only where a policy may evict it: the audit says. */
	if (rc < 0) {
		ls_fail(w->a, LF_SECTION, "GET %s under its lock: %d (%s)", key,
			rc, err_name(rc));
		return false;
	}
	rc = shmkv_set(w->kv, key, strlen(key), val,
		       ls_value(val, 0, rc == 1 ? n + 1 : 1), 0, 0, NULL);
	if (rc != 1)
		ls_fail(w->a, LF_SECTION,
			"SET %s (an integer, in its slot) under its lock: "
			"%d (%s: %s)",
			key, rc, err_name(rc), shmkv_strerror(rc));
	return rc == 1;
}

/* One section: take a lock, bump its counter, release; the lane's word
 * says how far it got (limit.h). */
static void locker_step(struct wk *w)
{
	unsigned l = (unsigned)rng_below(&w->rng, LS_LOCKS);
	_Atomic uint64_t *word = &w->ln->section[l];
	uint64_t done = atomic_load(word) >> 2;
	int rc = shmkv_lock_timed_acquire(&w->locks[l], LS_LEASE_MS,
					  ACQUIRE_WAIT_MS);

	if (rc == -ETIMEDOUT)
		return;
	/* A grant is published in a lock cell of this process, or without
	 * one in an owner record: both value memory, which a full store
	 * may not have (only progress is asked: limit_soak.c). */
	if (rc == -ENOMEM) {
		atomic_fetch_add(&w->a->acquire_enomem, 1);
		return;
	}
	if (rc < 0 || rc == SHMKV_LOCK_LEASE_EXPIRED) {
		ls_fail(w->a, LF_ACQUIRE, "acquire of lock %s: %d (%s: %s)",
			ls_lock_name[l], rc, err_name(rc), shmkv_strerror(rc));
		if (rc < 0)
			return;
	}
	/* Seq_cst stores: a kill between two leaves one of them whole. */
	atomic_store(word, LS_SECTION(done, LS_GRANTED));
	if (section_body(w, l))
		atomic_store(word, LS_SECTION(done, LS_LANDED));
	else
		atomic_store(word, LS_SECTION(done, LS_IDLE));
	rc = shmkv_lock_release(&w->locks[l]);
	if (rc != 0)
		ls_fail(w->a, LF_RELEASE, "release of lock %s: %d (%s: %s)",
			ls_lock_name[l], rc, err_name(rc), shmkv_strerror(rc));
	if ((atomic_load(word) & 3) == LS_LANDED) {
		atomic_store(word, LS_SECTION(done + 1, LS_IDLE));
		if (rc == 0) {
			atomic_fetch_add(&w->a->done[LS_LOCKER], 1);
			atomic_fetch_add(&w->a->lock_done[l], 1);
		}
	}
}

/* INCR of a random key, which may hold a string (-EDOM) or be new in a
 * full table (-ENOSPC); it never needs value memory (no TTL, and
 * integers this small live in their slot). */
static void incr_random_key(struct wk *w)
{
	char key[16];
	unsigned klen = random_key(w, key);
	int64_t n;
	int rc = shmkv_incr(w->kv, key, klen, &n);

	if (rc < 0 && rc != -EDOM && rc != -ENOSPC)
		ls_fail(w->a, LF_INCR, "INCR %.*s: %d (%s: %s)", (int)klen, key,
			rc, err_name(rc), shmkv_strerror(rc));
}

/* INCR of counter @c: never an error (it holds an integer in its slot);
 * the lane's word says whether one was running (limit.h). */
static void incr_counter(struct wk *w, unsigned c)
{
	uint64_t done = atomic_load(&w->ln->incr[c]) >> 1;
	int64_t n;
	int rc;

	/* Seq_cst stores: a kill between two leaves one of them whole. */
	atomic_store(&w->ln->incr[c], LS_INCR(done, 1));
	rc = shmkv_incr(w->kv, ls_counter[c], strlen(ls_counter[c]), &n);
	if (rc != 0) {
		ls_fail(w->a, LF_INCR, "INCR %s (a counter): %d (%s: %s)",
			ls_counter[c], rc, err_name(rc), shmkv_strerror(rc));
		atomic_store(&w->ln->incr[c], LS_INCR(done, 0));
		return;
	}
	atomic_store(&w->ln->incr[c], LS_INCR(done + 1, 0));
	atomic_fetch_add(&w->a->done[LS_INCR], 1);
	atomic_fetch_add(&w->a->incr_done[c], 1);
}

/* A counter's INCR, or one time in two a random key's. */
static void incr_step(struct wk *w)
{
	unsigned c = (unsigned)rng_below(&w->rng, 2 * (uint64_t)LS_COUNTERS);

	if (c < LS_COUNTERS)
		incr_counter(w, c);
	else
		incr_random_key(w);
}

static void worker_open(struct wk *w, const struct ls_worker *o)
{
	int rc = shmkv_open(o->name, 0, &w->kv);

	for (unsigned l = 0; rc == 0 && l < LS_LOCKS; l++)
		rc = shmkv_lock_init(w->kv, &w->locks[l], ls_lock_name[l]);
	if (rc) {
		ls_fail(o->area, LF_OPEN, "worker %u: open %s: %s", o->lane,
			o->name, shmkv_strerror(rc));
		_exit(WORKER_OPEN);
	}
}

void ls_worker_run(const struct ls_worker *o)
{
	struct wk w = { .a = o->area,
			.ln = &o->area->lane[o->lane],
			.rng = o->seed,
			.keys = o->keys };
	enum ls_role role = (enum ls_role)(o->lane % LS_ROLES);

	worker_open(&w, o);
	while (!atomic_load(&w.a->stop)) {
		atomic_fetch_add(&w.a->calls[role], 1);
		switch (role) {
		case LS_WRITER:
			writer_step(&w);
			break;
		case LS_DELETER:
			deleter_step(&w);
			sleep_ns(o->del_pause_us * 1000);
			break;
		case LS_LOCKER:
			locker_step(&w);
			break;
		default:
			incr_step(&w);
			break;
		}
	}
	shmkv_close(w.kv);
	_exit(WORKER_DONE);
}
