/*
 * tsan_stress - the multi-process stress (tests/programs/mp_worker.c), run by threads
 * of one process so that ThreadSanitizer can watch it (Criterion cannot
 * run under TSan: Snaipe/Criterion#274). Also run plain and under ASan.
 *
 * usage: tsan_stress [--threads N] [--ops N] [--seed N] [--own-handles 0|1]
 *
 * N worker threads run --ops random commands each on a few shared keys:
 * SET (plain, NX, XX, GET, PX of a few ms, EX), SETNX, GETSET, GETDEL, DEL,
 * INCR, PEXPIRE of a few ms, DELIFEQ and GET, inline integers and block
 * values of many sizes, and a safe lock. Worker i uses the main thread's
 * handle (i even, or all with --own-handles 0) or its own (i odd), and the
 * plain commands (i % 4 < 2) or its own shmkv_keyref for each key. A
 * maintenance thread on the main handle runs sweep, recover, stats, scan,
 * check and lock_list meanwhile. Then threads fill a second store that
 * starts small, so that they grow it together (see grow_phase).
 *
 * TSan tracks memory by virtual address and each handle maps the segment
 * at its own address, so it sees races, and the ordering CASes give, only
 * among threads of one handle: a block freed through another mapping and
 * reused looks like two unordered writers. So `make tsan` runs with
 * --own-handles 0, and the plain counter that TSan checks the lock with is
 * only touched by threads of the main handle.
 *
 * Checks (exit 1 if one fails, 2 on bad usage): every reply is one the
 * command may give; every value read is one some worker wrote (a canonical
 * integer or a self-describing string, which a torn or recycled block
 * fails); each worker's own key reads back exactly what it last wrote; the
 * counter key equals the INCRs that succeeded; counters changed under the
 * lock by a load and a store (an overlap loses an increment) equal the
 * critical sections; after deleting every key, check finds nothing, no
 * value block is allocated and recover repairs nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/args.h"
#include "helpers/rng.h"
#include "helpers/selfcheck.h"
#include "helpers/value_blocks.h"
#include "shmkv.h"
#include "shmkv_lock.h"

#define THREADS_MAX 64
/* Shared keys k0..k5: few, so that commands on one key collide. */
#define KEYS 6
/* Keys c0..c159 come and go; with at most 64 own keys, the table of 512
 * slots stays under half full, so no insert meets a full probe window. */
#define CHURN_KEYS 160
#define SLOTS	   512
#define WALK	   16 /* slots per sweep or scan call */
#define VALUE_MAX  512
/* After the shared keys: the counter, the worker's own key, and a slot for
 * the churn key of the moment. */
#define KEY_CTR	      KEYS
#define KEY_OWN	      (KEYS + 1)
#define KEY_CHURN     (KEYS + 2)
#define LOCK_LEASE_MS 600000 /* never runs out, even 50x slowed down */

struct options {
	unsigned threads;
	unsigned long ops;
	uint64_t seed;
	bool own_handles; /* odd workers open their own handle */
};

struct worker {
	shmkv_t *kv;
	bool own_handle;
	bool prepared;
	unsigned id;
	uint64_t rng;
	unsigned long iter;
	unsigned long ops;
	char name[KEY_CHURN + 1][16];
	size_t nlen[KEY_CHURN + 1];
	struct shmkv_keyref ref[KEY_CHURN + 1];
	struct shmkv_lock lock;
	char val[VALUE_MAX];
	size_t vlen;
	char old[VALUE_MAX];
	/* The own key: what it holds (own_len SIZE_MAX: missing). */
	char own[VALUE_MAX];
	size_t own_len;
	unsigned long incrs;	    /* successful INCRs of the counter */
	unsigned long locked;	    /* critical sections entered */
	unsigned long locked_plain; /* of them, on the main handle */
	char fail[256];
};

static const char *store_name;
static atomic_bool stop;	 /* a check failed: everyone stops */
static atomic_uint workers_left; /* the maintenance thread runs until 0 */
/* Changed under the lock only: by the threads of the main handle (plain, so
 * TSan checks that the lock orders them), and by every worker (an atomic
 * load and store, not an add: an overlap loses an increment). */
static unsigned long guarded_plain;
static atomic_ulong guarded_all;

/* What the workers did, summed after they are joined. */
struct totals {
	unsigned long incrs;
	unsigned long locked;
	unsigned long locked_plain;
};

/* Records why the worker failed and stops every thread. Return: -1. */
__attribute__((format(printf, 2, 3))) static int fail(struct worker *w,
						      const char *fmt, ...)
{
	int n = snprintf(w->fail, sizeof(w->fail), "worker %u, op %lu: ", w->id,
			 w->iter);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->fail + n, sizeof(w->fail) - (size_t)n, fmt, ap);
	va_end(ap);
	atomic_store(&stop, true);
	return -1;
}

static int failf(struct worker *w, const char *what, unsigned k, int rc)
{
	return fail(w, "%s %s gave %d (%s)", what, w->name[k], rc,
		    rc < 0 ? shmkv_strerror(rc) : "unexpected");
}

static int check_old(struct worker *w, const char *what, unsigned k,
		     const struct shmkv_value *o)
{
	if (o->len <= sizeof(w->old) && sc_value_ok(w->old, o->len))
		return 0;
	return fail(w,
		    "%s %s read \"%.*s\" (%zu bytes), which no worker "
		    "wrote",
		    what, w->name[k], (int)(o->len > 60 ? 60 : o->len), w->old,
		    o->len);
}

/* Command @cmd on key @k: shmkv_<cmd>(kv, key, len, ...), or with the
 * worker's prepared key shmkv_key_<cmd>(kv, ref, ...). */
#define CMD(w, cmd, k, ...)                                                    \
	((w)->prepared ? shmkv_key_##cmd((w)->kv, &(w)->ref[k], __VA_ARGS__)   \
		       : shmkv_##cmd((w)->kv, (w)->name[k], (w)->nlen[k],      \
				     __VA_ARGS__))
/* DEL has no argument besides the key. */
#define CMD_DEL(w, k)                                                          \
	((w)->prepared ? shmkv_key_del((w)->kv, &(w)->ref[k])                  \
		       : shmkv_del((w)->kv, (w)->name[k], (w)->nlen[k]))

/*
 * Steps on the shared keys: any reply in range, any value read valid.
 */
static int shared_set(struct worker *w, unsigned k, uint64_t r)
{
	struct shmkv_value o = { w->old, sizeof(w->old), 0 };
	static const unsigned flag[] = { 0,
					 SHMKV_SET_NX,
					 SHMKV_SET_XX,
					 SHMKV_SET_GET,
					 SHMKV_SET_PX,
					 SHMKV_SET_EX };
	unsigned f = flag[r % 6];
	int64_t ex = f == SHMKV_SET_PX ? (int64_t)(1 + (r >> 8) % 20) : 3600;
	int rc = CMD(w, set, k, w->val, w->vlen, f, ex,
		     f == SHMKV_SET_GET ? &o : NULL);

	/* With GET the result is GET's reply: 1 is an old value, 0 none. */
	if (f == SHMKV_SET_GET && rc == 1)
		return check_old(w, "SET GET", k, &o);
	if (rc == 1 ||
	    (rc == 0 && (f & (SHMKV_SET_NX | SHMKV_SET_XX | SHMKV_SET_GET))))
		return 0;
	return failf(w, "SET", k, rc);
}

static int shared_read(struct worker *w, unsigned k, unsigned op)
{
	struct shmkv_value o = { w->old, sizeof(w->old), 0 };
	const char *what = op == 0 ? "GET" : op == 1 ? "GETSET" : "GETDEL";
	int rc = op == 0   ? CMD(w, get, k, &o)
		 : op == 1 ? CMD(w, getset, k, w->val, w->vlen, &o)
			   : CMD(w, getdel, k, &o);

	if (rc == 1)
		return check_old(w, what, k, &o);
	return rc == 0 ? 0 : failf(w, what, k, rc);
}

/* GET, then DELIFEQ with what was read (1 or 0: it may have changed). */
static int shared_delifeq(struct worker *w, unsigned k)
{
	struct shmkv_value o = { w->old, sizeof(w->old), 0 };
	int rc = CMD(w, get, k, &o);

	if (rc == 1 && check_old(w, "GET", k, &o))
		return -1;
	if (rc != 0 && rc != 1)
		return failf(w, "GET", k, rc);
	rc = CMD(w, delifeq, k, rc == 1 ? w->old : w->val,
		 rc == 1 ? o.len : w->vlen);
	return rc == 0 || rc == 1 ? 0 : failf(w, "DELIFEQ", k, rc);
}

static int shared_step(struct worker *w, unsigned op, unsigned k, uint64_t r)
{
	int64_t n;
	int rc;

	if (op < 20)
		return shared_set(w, k, r);
	if (op < 28) {
		rc = CMD(w, setnx, k, w->val, w->vlen);
		return rc == 0 || rc == 1 ? 0 : failf(w, "SETNX", k, rc);
	}
	if (op < 45)
		return shared_read(w, k, op % 3);
	if (op < 55) {
		rc = CMD_DEL(w, k);
		return rc == 0 || rc == 1 ? 0 : failf(w, "DEL", k, rc);
	}
	if (op < 63) {
		/* -EDOM: the key holds a string. */
		rc = CMD(w, incrby, k, 1, &n);
		return rc == 0 || rc == -EDOM ? 0 : failf(w, "INCR", k, rc);
	}
	if (op < 68) {
		rc = shmkv_expire(w->kv, w->name[k], w->nlen[k],
				  SHMKV_EXPIRE_MSEC, 0, (int64_t)(1 + r % 30));
		return rc == 0 || rc == 1 ? 0 : failf(w, "PEXPIRE", k, rc);
	}
	return shared_delifeq(w, k);
}

/*
 * Steps with exact expectations: the worker's own key, the counter, the
 * lock-guarded plain counter.
 */
static int own_check(struct worker *w, unsigned k)
{
	struct shmkv_value o = { w->old, sizeof(w->old), 0 };
	int rc = CMD(w, get, k, &o);

	if (w->own_len == SIZE_MAX ? rc == 0
				   : rc == 1 && o.len == w->own_len &&
					     !memcmp(w->old, w->own, o.len))
		return 0;
	if (rc < 0)
		return failf(w, "GET", k, rc);
	return fail(w, "GET %s gave %d \"%.*s\", expected \"%.*s\"", w->name[k],
		    rc, (int)(rc ? o.len % 61 : 0), w->old,
		    (int)(w->own_len == SIZE_MAX ? 0 : w->own_len % 61),
		    w->own);
}

static int own_step(struct worker *w, unsigned op, uint64_t r)
{
	unsigned k = KEY_OWN;
	int rc;

	if (op % 4 == 0 && w->own_len != SIZE_MAX) {
		rc = op % 8 ? CMD_DEL(w, k)
			    : CMD(w, delifeq, k, w->own, w->own_len);
		if (rc != 1)
			return failf(w, "DEL own", k, rc);
		w->own_len = SIZE_MAX;
	} else {
		/* EX 3600: a block with a deadline that never passes here. */
		rc = CMD(w, set, k, w->val, w->vlen, r & 1 ? SHMKV_SET_EX : 0,
			 3600, NULL);
		if (rc != 1)
			return failf(w, "SET own", k, rc);
		memcpy(w->own, w->val, w->vlen);
		w->own_len = w->vlen;
	}
	return own_check(w, k);
}

static int lock_step(struct worker *w)
{
	int rc = shmkv_lock_acquire(&w->lock, LOCK_LEASE_MS);

	if (rc != SHMKV_LOCK_ACQUIRED)
		return failf(w, "lock_acquire", KEY_CTR, rc);
	atomic_store_explicit(
		&guarded_all,
		atomic_load_explicit(&guarded_all, memory_order_relaxed) + 1,
		memory_order_relaxed);
	if (!w->own_handle) {
		guarded_plain++; /* a data race unless the lock orders it */
		w->locked_plain++;
	}
	w->locked++;
	rc = shmkv_lock_release(&w->lock);
	return rc == 0 ? 0 : failf(w, "lock_release", KEY_CTR, rc);
}

static void pick_value(struct worker *w, uint64_t r)
{
	if (r & 1)
		w->vlen = (size_t)snprintf(w->val, sizeof(w->val), "%d",
					   (int)((r >> 1) % 200000) - 1000);
	else
		w->vlen = sc_make_string(w->val, (uint32_t)(r >> 1));
}

/* A key of a larger set, set or deleted: slots are claimed, given back
 * and recycled for other keys (the shared ones too) all the time. */
static int churn_step(struct worker *w, uint64_t r)
{
	unsigned k = KEY_CHURN;
	bool del = (r >> 16) % 2;
	int rc;

	w->nlen[k] = (size_t)snprintf(w->name[k], sizeof(w->name[k]), "c%u",
				      (unsigned)(r % CHURN_KEYS));
	rc = shmkv_key_prepare(w->kv, &w->ref[k], w->name[k], w->nlen[k]);
	if (rc == 0)
		rc = del ? CMD_DEL(w, k)
			 : CMD(w, set, k, w->val, w->vlen, 0, 0, NULL);
	return rc == 1 || (rc == 0 && del)
		       ? 0
		       : failf(w, del ? "DEL" : "SET", k, rc);
}

static int step(struct worker *w)
{
	uint64_t r = rng_next(&w->rng);
	unsigned op = (unsigned)(r % 100);
	unsigned k = (unsigned)((r >> 8) % KEYS);
	int64_t n;
	int rc;

	pick_value(w, r >> 16);
	r = rng_next(&w->rng);
	if (op < 66)
		return shared_step(w, op * 100 / 66, k, r);
	if (op < 80)
		return churn_step(w, r);
	if (op < 88)
		return own_step(w, op, r);
	if (op < 98) {
		rc = CMD(w, incrby, KEY_CTR, 1, &n);
		if (rc != 0 || n <= 0)
			return failf(w, "INCR", KEY_CTR, rc);
		w->incrs++;
		return 0;
	}
	return lock_step(w);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (; w->iter < w->ops && !atomic_load(&stop); w->iter++)
		if (step(w))
			break;
	atomic_fetch_sub(&workers_left, 1);
	return NULL;
}

/*
 * The maintenance thread: whole-store walks racing the workers.
 */
struct maint {
	shmkv_t *kv;
	unsigned threads;
	unsigned long rounds;
	char fail[256];
};

/* Is @key one the stress writes? Anything else is a corrupt slot. */
static bool known_key(const char *key, size_t len, unsigned threads)
{
	char name[32];
	unsigned n;

	if (len >= sizeof(name))
		return false;
	memcpy(name, key, len);
	name[len] = '\0';
	if (!strcmp(name, "ctr") || !strcmp(name, "lock.stress"))
		return true;
	if (sscanf(name, "k%u", &n) == 1)
		return n < KEYS;
	if (sscanf(name, "c%u", &n) == 1)
		return n < CHURN_KEYS;
	return sscanf(name, "own%u", &n) == 1 && n < threads;
}

static int scan_key(const void *key, size_t klen, void *arg)
{
	struct maint *m = arg;

	if (known_key(key, klen, m->threads))
		return 0;
	snprintf(m->fail, sizeof(m->fail), "scan met unknown key \"%.*s\"",
		 (int)(klen > 60 ? 60 : klen), (const char *)key);
	return 1;
}

static int count_lock(const struct shmkv_lock_info *info, void *arg)
{
	(void)info;
	(void)arg;
	return 0;
}

/* One round: a full sweep, recover, stats, scan, check and lock list. */
static int maint_round(struct maint *m)
{
	struct shmkv_stats st;
	uint64_t cursor = 0, next = 0;
	int rc = 0;

	for (unsigned n = 0; n <= SLOTS / WALK && rc >= 0; n++) {
		rc = shmkv_sweep(m->kv, &cursor, WALK);
		if (cursor == 0)
			break;
	}
	if (rc < 0 || (rc = shmkv_recover(m->kv, NULL)) < 0 ||
	    (rc = shmkv_stats(m->kv, &st)) < 0)
		goto fail;
	if (st.live_keys + st.tombstones + st.expired + st.pending > st.slots ||
	    st.corrupt != 0) {
		snprintf(m->fail, sizeof(m->fail),
			 "stats: %" PRIu64 " corrupt slots", st.corrupt);
		return -1;
	}
	for (unsigned n = 0; n <= SLOTS / WALK; n++) {
		rc = shmkv_scan(m->kv, next, WALK, scan_key, m, &next);
		if (rc != 0 || next == 0)
			break;
	}
	if (rc != 0)
		return -1; /* scan_key said why */
	/* Racing writers may make check report transient problems. */
	if ((rc = shmkv_check(m->kv, NULL, NULL)) < 0 ||
	    (rc = shmkv_lock_list(m->kv, count_lock, NULL)) < 0)
		goto fail;
	return 0;
fail:
	snprintf(m->fail, sizeof(m->fail), "maintenance: %s",
		 shmkv_strerror(rc));
	return -1;
}

static void *maint_main(void *arg)
{
	struct maint *m = arg;

	/* Bounded by the workers' op counts, and by a round count. */
	for (unsigned long n = 0; n < 1000000 && !atomic_load(&stop); n++) {
		if (atomic_load(&workers_left) == 0)
			break;
		if (maint_round(m)) {
			atomic_store(&stop, true);
			break;
		}
		m->rounds++;
	}
	return NULL;
}

/*
 * Setup and the final checks.
 */
static int worker_init(struct worker *w, shmkv_t *shared,
		       const struct options *o, unsigned id)
{
	int rc = 0;

	w->id = id;
	w->ops = o->ops;
	w->rng = o->seed * 1000003u + id;
	w->own_len = SIZE_MAX;
	w->own_handle = o->own_handles && id % 2 == 1;
	w->prepared = id % 4 >= 2;
	if (w->own_handle)
		rc = shmkv_open(store_name, 0, &w->kv);
	else
		w->kv = shared;
	for (unsigned k = 0; rc == 0 && k <= KEY_OWN; k++) {
		if (k == KEY_CTR)
			strcpy(w->name[k], "ctr");
		else
			snprintf(w->name[k], sizeof(w->name[k]), "%s%u",
				 k < KEYS ? "k" : "own", k < KEYS ? k : id);
		w->nlen[k] = strlen(w->name[k]);
		rc = shmkv_key_prepare(w->kv, &w->ref[k], w->name[k],
				       w->nlen[k]);
	}
	if (rc == 0)
		rc = shmkv_lock_init(w->kv, &w->lock, "stress");
	if (rc)
		fprintf(stderr, "tsan_stress: worker %u: %s\n", id,
			shmkv_strerror(rc));
	return rc;
}

static int del_key(const void *key, size_t klen, void *arg)
{
	return shmkv_del(arg, key, klen) == 1 ? 0 : 1;
}

static void print_problem(const char *problem, void *arg)
{
	(void)arg;
	fprintf(stderr, "tsan_stress: check: %s\n", problem);
}

/* Quiet store: exact counters, then nothing left behind. */
static int final_checks(shmkv_t *kv, const struct totals *t)
{
	char buf[32], want[32];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	struct shmkv_stats st;
	uint64_t cursor = 0;
	uint64_t used;
	int rc = shmkv_get(kv, "ctr", 3, &v);

	snprintf(want, sizeof(want), "%lu", t->incrs);
	if (rc != 1 || v.len != strlen(want) || memcmp(buf, want, v.len)) {
		fprintf(stderr, "tsan_stress: ctr is %.*s, %lu INCRs done\n",
			rc == 1 ? (int)v.len : 0, buf, t->incrs);
		return -1;
	}
	if (guarded_plain != t->locked_plain ||
	    atomic_load(&guarded_all) != t->locked) {
		fprintf(stderr,
			"tsan_stress: lock-guarded counters %lu and %lu after "
			"%lu and %lu critical sections\n",
			guarded_plain, atomic_load(&guarded_all),
			t->locked_plain, t->locked);
		return -1;
	}
	for (unsigned n = 0; n <= SLOTS / WALK && (n == 0 || cursor != 0); n++)
		if (shmkv_scan(kv, cursor, WALK, del_key, kv, &cursor) != 0) {
			fprintf(stderr, "tsan_stress: final DEL failed\n");
			return -1;
		}
	if (shmkv_sweep(kv, &cursor, UINT32_MAX) < 0 ||
	    shmkv_check(kv, print_problem, NULL) != 0 ||
	    shmkv_stats(kv, &st) != 0) {
		fprintf(stderr, "tsan_stress: final check failed\n");
		return -1;
	}
	used = mp_blocks_used(&st);
	/* What recover may still find: the workers' per-thread caches of
	 * free blocks (one per size class), left when they exited, for the
	 * next reclamation step; nothing else, and nothing after. */
	rc = shmkv_recover(kv, NULL);
	if (used != 0 || st.live_keys != 0 || rc < 0 ||
	    rc > (int)(THREADS_MAX * st.classes) ||
	    shmkv_recover(kv, NULL) != 0) {
		fprintf(stderr,
			"tsan_stress: after deleting every key: %" PRIu64
			" blocks used, %" PRIu64 " keys live, recover %d\n",
			used, st.live_keys, rc);
		return -1;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: tsan_stress [--threads 4..%d] [--ops N] [--seed N] "
		"[--own-handles 0|1]\n",
		THREADS_MAX);
	return 2;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	*o = (struct options){
		.threads = 8, .ops = 20000, .seed = 1, .own_handles = true
	};
	for (int i = 1; i < argc; i += 2) {
		uint64_t v;

		if (i + 1 >= argc || arg_u64(argv[i + 1], UINT64_MAX, &v))
			return -1;
		if (!strcmp(argv[i], "--threads"))
			o->threads = v > THREADS_MAX ? 0 : (unsigned)v;
		else if (!strcmp(argv[i], "--ops"))
			o->ops = (unsigned long)v;
		else if (!strcmp(argv[i], "--seed"))
			o->seed = v;
		else if (!strcmp(argv[i], "--own-handles") && v <= 1)
			o->own_handles = v == 1;
		else
			return -1;
	}
	return o->threads >= 4 ? 0 : -1;
}

/* Runs the workers and the maintenance thread; sums their counts. */
static int run(shmkv_t *kv, const struct options *o, struct worker *w,
	       struct totals *t)
{
	struct maint m = { .kv = kv, .threads = o->threads };
	pthread_t tid[THREADS_MAX], mtid;
	int rc = 0;

	atomic_store(&workers_left, o->threads);
	for (unsigned i = 0; i < o->threads; i++)
		if (pthread_create(&tid[i], NULL, worker_main, &w[i]))
			abort(); /* nothing sensible to undo */
	if (pthread_create(&mtid, NULL, maint_main, &m))
		abort();
	for (unsigned i = 0; i < o->threads; i++) {
		pthread_join(tid[i], NULL);
		if (w[i].fail[0] != '\0') {
			fprintf(stderr, "tsan_stress: %s\n", w[i].fail);
			rc = -1;
		}
		t->incrs += w[i].incrs;
		t->locked += w[i].locked;
		t->locked_plain += w[i].locked_plain;
	}
	pthread_join(mtid, NULL);
	if (m.fail[0] != '\0') {
		fprintf(stderr, "tsan_stress: %s\n", m.fail);
		rc = -1;
	}
	printf("tsan_stress: %u workers x %lu ops, %lu maintenance rounds, "
	       "%lu INCRs, %lu lock sections\n",
	       o->threads, o->ops, m.rounds, t->incrs, t->locked);
	return rc;
}

/*
 * Growth: threads of one handle fill a store that starts with one page per
 * size class, so that they claim pages, grow it and read each other's
 * values in pages grown after their last look (grow.c), then every value
 * reads back.
 */
#define GROW_KEYS  400 /* per thread: together, several growths */
#define GROW_VALUE 300 /* bytes: a block of the 512-byte class */

struct grower {
	shmkv_t *kv;
	unsigned id, threads;
	int failed;
};

static size_t grow_value(char *buf, unsigned id, unsigned i)
{
	int n = snprintf(buf, GROW_VALUE + 1, "g%u-%u:", id, i);

	memset(buf + n, 'a' + (int)((id + i) % 26), GROW_VALUE - (size_t)n);
	return GROW_VALUE;
}

/* Key g<id>-<i>. Return: 1 it holds its value, 0 absent, -1 a wrong one. */
static int grow_read(shmkv_t *kv, unsigned id, unsigned i)
{
	char key[32], want[GROW_VALUE + 1], got[GROW_VALUE + 1];
	struct shmkv_value v = { got, sizeof(got), 0 };
	size_t kl = (size_t)snprintf(key, sizeof(key), "g%u-%u", id, i);
	int rc = shmkv_get(kv, key, kl, &v);

	if (rc == 0)
		return 0;
	return rc == 1 && v.len == GROW_VALUE &&
			       memcmp(got, want, grow_value(want, id, i)) == 0
		       ? 1
		       : -1;
}

static void *grower_main(void *arg)
{
	struct grower *g = arg;
	char key[32], val[GROW_VALUE + 1];

	for (unsigned i = 0; i < GROW_KEYS && !g->failed; i++) {
		size_t kl = (size_t)snprintf(key, sizeof(key), "g%u-%u", g->id,
					     i);
		int rc = shmkv_set(g->kv, key, kl, val,
				   grow_value(val, g->id, i), 0, 0, NULL);

		if (rc != 1) {
			fprintf(stderr, "tsan_stress: grow: SET %s: %s\n", key,
				shmkv_strerror(rc));
			g->failed = 1;
		}
		/* Another thread's value, maybe in a page it just grew: not
		 * written yet is fine, a wrong one is not. */
		if (grow_read(g->kv, (g->id + 1) % g->threads, i) < 0) {
			fprintf(stderr, "tsan_stress: grow: g%u-%u is wrong\n",
				(g->id + 1) % g->threads, i);
			g->failed = 1;
		}
	}
	return NULL;
}

/* Creates store @name of one page per class, and a table that grows
 * several times under the growers (migrate.c). Return: it, or NULL. */
static shmkv_t *grow_store(const char *name)
{
	struct shmkv_config cfg;
	shmkv_t *kv;
	int rc;

	shmkv_config_init(&cfg);
	cfg.slots = 64;
	cfg.value_max = VALUE_MAX;
	cfg.value_memory = 6 * 65536; /* one page per class */
	rc = shmkv_create(name, &cfg, &kv);
	if (rc) {
		fprintf(stderr, "tsan_stress: create %s: %s\n", name,
			shmkv_strerror(rc));
		return NULL;
	}
	return kv;
}

/* Runs @threads growers on @kv, then reads every key: each must hold its
 * value, or (if @may_lose: the store evicts) be absent. Return: failed. */
static int run_growers(shmkv_t *kv, unsigned threads, bool may_lose)
{
	struct grower g[THREADS_MAX];
	pthread_t tid[THREADS_MAX];
	int failed = 0;

	for (unsigned i = 0; i < threads; i++) {
		g[i] = (struct grower){ kv, i, threads, 0 };
		if (pthread_create(&tid[i], NULL, grower_main, &g[i]))
			abort();
	}
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		failed |= g[i].failed;
	}
	for (unsigned id = 0; id < threads && !failed; id++)
		for (unsigned i = 0; i < GROW_KEYS && !failed; i++) {
			int r = grow_read(kv, id, i);

			if (r < 0 || (r == 0 && !may_lose)) {
				fprintf(stderr,
					"tsan_stress: g%u-%u %s\n", id, i,
					r < 0 ? "is wrong" : "lost");
				failed = 1;
			}
		}
	return failed;
}

static int grow_phase(unsigned threads)
{
	struct shmkv_stats st;
	char name[64];
	shmkv_t *kv;
	int failed;

	snprintf(name, sizeof(name), "/shmkv-tsan-grow-%d", (int)getpid());
	kv = grow_store(name);
	if (kv == NULL)
		return 1;
	failed = run_growers(kv, threads, false);
	if (!failed && (shmkv_stats(kv, &st) != 0 || st.pages <= 6 ||
			shmkv_check(kv, NULL, NULL) != 0)) {
		fprintf(stderr,
			"tsan_stress: grow: it did not grow (%u "
			"pages) or does not check clean\n",
			st.pages);
		failed = 1;
	}
	shmkv_close(kv);
	shmkv_unlink(name);
	return failed;
}

/* The same writes into a store that may not grow and evicts (allkeys-lru):
 * threads evict one another's keys while they write and read them. */
static int evict_phase(unsigned threads)
{
	struct shmkv_stats st;
	char name[64];
	shmkv_t *kv;
	int failed = 1;

	snprintf(name, sizeof(name), "/shmkv-tsan-evict-%d", (int)getpid());
	kv = grow_store(name);
	if (kv == NULL)
		return 1;
	if (shmkv_stats(kv, &st) == 0 &&
	    shmkv_set_max_memory(kv, st.memory_bytes) == 0 &&
	    shmkv_set_evict_policy(kv, SHMKV_EVICT_ALLKEYS_LRU) == 0)
		failed = run_growers(kv, threads, true);
	if (!failed &&
	    (shmkv_stats(kv, &st) != 0 || st.evicted == 0 ||
	     st.live_keys + st.evicted != (uint64_t)threads * GROW_KEYS ||
	     shmkv_check(kv, NULL, NULL) != 0)) {
		fprintf(stderr,
			"tsan_stress: evict: %llu evicted, %llu live of %u, "
			"or it does not check clean\n",
			(unsigned long long)st.evicted,
			(unsigned long long)st.live_keys,
			threads * GROW_KEYS);
		failed = 1;
	}
	shmkv_close(kv);
	shmkv_unlink(name);
	return failed;
}

int main(int argc, char **argv)
{
	struct shmkv_config cfg;
	struct totals t = { 0 };
	struct options o;
	struct worker *w;
	char name[64];
	shmkv_t *kv, *w_kv;
	unsigned i;
	int rc;

	if (parse_args(argc, argv, &o))
		return usage();
	snprintf(name, sizeof(name), "/shmkv-tsan-stress-%d", (int)getpid());
	store_name = name;
	shmkv_config_init(&cfg);
	cfg.slots = SLOTS;
	cfg.key_max = 32;
	cfg.value_max = VALUE_MAX;
	rc = shmkv_create(name, &cfg, &kv);
	if (rc) {
		fprintf(stderr, "tsan_stress: create %s: %s\n", name,
			shmkv_strerror(rc));
		return 1;
	}
	w = calloc(o.threads, sizeof(*w));
	for (i = 0; w != NULL && i < o.threads; i++)
		if (worker_init(&w[i], kv, &o, i))
			break;
	rc = w == NULL || i < o.threads || run(kv, &o, w, &t) ||
	     grow_phase(o.threads) || evict_phase(o.threads);
	for (i = 0; w != NULL && i < o.threads; i++)
		if (w[i].own_handle) /* NULL (a no-op) if it never opened */
			shmkv_close(w[i].kv);
	free(w);
	/* The final checks balance storage on a fresh handle: closing the
	 * workers' handles frees the lock cells they kept for reuse. */
	if (rc == 0 && shmkv_open(name, 0, &w_kv) == 0) {
		shmkv_close(kv);
		kv = w_kv;
		rc = final_checks(kv, &t);
	} else {
		rc = 1;
	}
	shmkv_close(kv);
	shmkv_unlink(name);
	printf("tsan_stress: %s\n", rc ? "FAILED" : "passed");
	return rc ? 1 : 0;
}
