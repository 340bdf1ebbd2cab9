/*
 * test_migrate.c - the table grows online (src/migrate.c), seen by real
 * processes: writers that push a 1024-slot table through many growths,
 * with and without SIGKILLs landing while it grows; every command during
 * a growth, from another process and from a read-only handle, started and
 * held half-done with the internal seams (shmkv__grow_start and
 * shmkv__migrate_step); prepared keys across growths; readers that loop
 * while writers grow the table; and a store that has no room to grow.
 *
 * Stores here have key_max 16, so slots are 64 bytes, and their values
 * are of three kinds: inline integers, strings short enough to live in
 * their slot, and strings kept in value blocks.
 *
 * Children never call cr_assert: they report through their exit status
 * (and a line on stderr saying why), or through words in a shared page.
 */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic.h"
#include "helpers/testutil.h"
#include "internal.h"
#include "lookup.h"
#include "migrate.h"
#include "tables.h"

TestSuite(migrate, .fini = tu_teardown);

#define KEY_MAX	  16u /* 36 + 16 -> 64-byte slots */
#define VAL_CAP	  64u
#define BLOCK_LEN 40u /* more than a 64-byte slot keeps: a value block */
#define WHY_CAP	  256u

/*
 * What the file may hold beyond memory_bytes after processes ran during
 * growths: a process stalled across a growth's end may fault a page of
 * the table just given back in again (§7 of the design: the next
 * growth's punch frees it). One page per process that ran, and one more.
 */
#define SLACK_PER_PROC 4096u

static struct shmkv_config small_config(uint32_t slots)
{
	struct shmkv_config cfg;

	shmkv_config_init(&cfg);
	cfg.slots = slots;
	cfg.key_max = KEY_MAX;
	return cfg;
}

static void *shared_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(p, MAP_FAILED, "mmap of %zu shared bytes", len);
	return p;
}

static int reap(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		cr_assert_eq(errno, EINTR, "waitpid: %s", strerror(errno));
	return st;
}

static void assert_exited_ok(pid_t pid, const char *who)
{
	int st = reap(pid);

	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "%s exited with %#x (its stderr says why)", who, st);
}

/* Runs @fn(@arg) in a child process; its return value is the status. */
static pid_t fork_child(int (*fn)(void *arg), void *arg)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0)
		_exit(fn(arg));
	return pid;
}

static uint64_t life_of(shmkv_t *kv)
{
	/* Relaxed: the test's look at the phase; nothing is read through
	 * it, and a stale answer only moves a kill or a count by a bit. */
	return shmkv__load_relaxed(
		&((struct shmkv_header_shm *)kv->base)->life);
}

static bool growing_now(shmkv_t *kv)
{
	return (SHMKV_LIFE_GEN(life_of(kv)) & 1) != 0;
}

static struct shmkv_stats stats_of(shmkv_t *kv)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(kv, &st));
	return st;
}

/* The file has at least what the store uses and at most @slack more. */
static void assert_memory(shmkv_t *kv, const char *name, uint64_t slack)
{
	struct shmkv_stats st = stats_of(kv);
	uint64_t alloc = (uint64_t)tu_shm_allocated(name);

	cr_assert_geq(alloc, st.memory_bytes, "allocated %llu < used %llu",
		      (unsigned long long)alloc,
		      (unsigned long long)st.memory_bytes);
	cr_assert_leq(alloc, st.memory_bytes + slack,
		      "allocated %llu, used %llu: more than %llu beyond",
		      (unsigned long long)alloc,
		      (unsigned long long)st.memory_bytes,
		      (unsigned long long)slack);
}

/*
 * Lanes: writer processes that SET <prefix><i> for i in order, the value
 * of lane_value().
 */

/* Key <prefix><i>'s value: by i % 3 an inline integer, a string short
 * enough to live in the slot, or one kept in a value block. */
static size_t lane_value(char *buf, const char *prefix, unsigned long i)
{
	int n;

	switch (i % 3) {
	case 0:
		return (size_t)snprintf(buf, VAL_CAP, "%lu", i);
	case 1:
		return (size_t)snprintf(buf, VAL_CAP, "s%lu", i);
	default:
		n = snprintf(buf, VAL_CAP, "blk-%s%lu-", prefix, i);
		memset(buf + n, 'x', BLOCK_LEN - (size_t)n);
		return BLOCK_LEN;
	}
}

static int lane_set(shmkv_t *kv, const char *prefix, unsigned long i)
{
	char key[32], val[VAL_CAP];
	size_t kl = (size_t)snprintf(key, sizeof(key), "%s%lu", prefix, i);

	return shmkv_set(kv, key, kl, val, lane_value(val, prefix, i), 0, 0,
			 NULL);
}

static bool lane_holds(shmkv_t *kv, const char *prefix, unsigned long i)
{
	char key[32], want[VAL_CAP], got[VAL_CAP];
	struct shmkv_value v = { got, sizeof(got), 0 };
	size_t kl = (size_t)snprintf(key, sizeof(key), "%s%lu", prefix, i);
	size_t wl = lane_value(want, prefix, i);

	return shmkv_get(kv, key, kl, &v) == 1 && v.len == wl &&
	       memcmp(got, want, wl) == 0;
}

static void lane_prefix(char prefix[8], unsigned lane)
{
	snprintf(prefix, 8, "w%u-", lane);
}

/* Lane @lane's keys [@from, @to) on a handle of its own; *@acked (if
 * any) counts the SETs that returned. Return: an exit status. */
static int lane_write(const char *name, unsigned lane, unsigned from,
		      unsigned to, atomic_uint *acked)
{
	char prefix[8];
	shmkv_t *kv;
	int rc = shmkv_open(name, 0, &kv);

	if (rc != 0) {
		fprintf(stderr, "lane %u: open: %s\n", lane,
			shmkv_strerror(rc));
		return 3;
	}
	lane_prefix(prefix, lane);
	for (unsigned i = from; i < to; i++) {
		rc = lane_set(kv, prefix, i);
		if (rc != 1) {
			fprintf(stderr, "lane %u: SET %s%u: %s\n", lane, prefix,
				i, shmkv_strerror(rc));
			return 4;
		}
		/* Relaxed: only the parent reads it, after this process
		 * died (waitpid orders it), to restart where it stopped. */
		if (acked != NULL)
			atomic_store_explicit(acked, i + 1,
					      memory_order_relaxed);
	}
	shmkv_close(kv);
	return 0;
}

static pid_t spawn_lane(unsigned lane, unsigned from, unsigned to,
			atomic_uint *acked)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0)
		_exit(lane_write(tu_name, lane, from, to, acked));
	return pid;
}

static void assert_lanes(shmkv_t *kv, unsigned lanes, unsigned each)
{
	char prefix[8];

	for (unsigned l = 0; l < lanes; l++) {
		lane_prefix(prefix, l);
		for (unsigned i = 0; i < each; i++)
			cr_assert(lane_holds(kv, prefix, i), "%s%u lost",
				  prefix, i);
	}
}

/* The store after writers ended: clean, and once shmkv_maintain has
 * finished any growth left under way, the table is 2^growths times the
 * first and the file holds what the store uses (plus @slack). */
static struct shmkv_stats assert_finished(shmkv_t *kv, const char *name,
					  uint32_t slots0, uint64_t slack)
{
	struct shmkv_stats st;

	tu_assert_rc(shmkv_check(kv, NULL, NULL), 0);
	assert_memory(kv, name, slack);
	tu_assert_ok(shmkv_maintain(kv));
	st = stats_of(kv);
	cr_assert_eq(st.growing_from, 0);
	cr_assert(!growing_now(kv), "life %#llx is odd after maintain",
		  (unsigned long long)life_of(kv));
	cr_assert_eq(st.slots, (uint64_t)slots0 << st.growths);
	tu_assert_rc(shmkv_check(kv, NULL, NULL), 0);
	assert_memory(kv, name, slack);
	return st;
}

#define BIG_LANES 4u
#define BIG_EACH  250000u /* 1,000,000 keys */

Test(migrate, four_writers_put_a_million_keys_into_a_1024_slot_store,
     .timeout = 120)
{
	struct shmkv_config cfg = small_config(1024);
	struct shmkv_stats st;
	pid_t pid[BIG_LANES];

	tu_kv = tu_create_growing(&cfg, tu_name);
	cr_assert_eq(tu_kv->geo.slot_size, 64);
	for (unsigned l = 0; l < BIG_LANES; l++)
		pid[l] = spawn_lane(l, 0, BIG_EACH, NULL);
	for (unsigned l = 0; l < BIG_LANES; l++)
		assert_exited_ok(pid[l], "a writer");
	assert_lanes(tu_kv, BIG_LANES, BIG_EACH);
	st = stats_of(tu_kv);
	cr_assert_eq(st.live_keys, (uint64_t)BIG_LANES * BIG_EACH);
	cr_assert_geq(st.growths, 10);
	cr_assert_gt(st.inline_values, 0);
	cr_assert_gt(st.block_values, 0);
	st = assert_finished(tu_kv, tu_name, 1024,
			     SLACK_PER_PROC * (BIG_LANES + 1));
	assert_lanes(tu_kv, BIG_LANES, BIG_EACH);
	cr_log_info("%llu growths to %llu slots, %llu bytes used, %llu "
		    "allocated",
		    (unsigned long long)st.growths,
		    (unsigned long long)st.slots,
		    (unsigned long long)st.memory_bytes,
		    (unsigned long long)tu_shm_allocated(tu_name));
}

/*
 * Writers SIGKILLed while the table grows: each kill is sent only while
 * the life word says a growth runs, and the lane's writer restarts at the
 * first key it had not been told was stored.
 */
#define KILL_LANES 4u
#define KILL_EACH  250000u /* 1,000,000 keys: ten growths from 1024 */
#define KILL_MAX   80u

struct kill_ctx {
	atomic_uint *acked; /* per lane: SETs that returned 1 */
};

static pid_t restart_lane(unsigned lane, unsigned n, void *ctx)
{
	struct kill_ctx *c = ctx;

	(void)n;
	/* Relaxed: the writer that stored it is dead and reaped. */
	return spawn_lane(
		lane,
		atomic_load_explicit(&c->acked[lane], memory_order_relaxed),
		KILL_EACH, &c->acked[lane]);
}

static bool kill_while_growing(void *ctx)
{
	(void)ctx;
	return growing_now(tu_kv);
}

Test(migrate, writers_killed_while_it_grows_lose_nothing_acknowledged,
     .timeout = 120)
{
	struct shmkv_config cfg = small_config(1024);
	struct kill_ctx ctx = { 0 };
	struct shmkv_stats st;
	unsigned deaths;

	tu_kv = tu_create_growing(&cfg, tu_name);
	ctx.acked = shared_map(KILL_LANES * sizeof(*ctx.acked));
	deaths = tu_kill_lanes_when(KILL_LANES, KILL_MAX, 2000, restart_lane,
				    kill_while_growing, &ctx);
	/* Every lane ran to its end: every key was acknowledged. */
	for (unsigned l = 0; l < KILL_LANES; l++)
		cr_assert_eq(atomic_load(&ctx.acked[l]), KILL_EACH);
	assert_lanes(tu_kv, KILL_LANES, KILL_EACH);
	cr_assert_gt(deaths, 0, "no kill landed during a growth");
	st = assert_finished(tu_kv, tu_name, 1024,
			     SLACK_PER_PROC * (KILL_LANES + deaths + 1));
	cr_assert_geq(st.growths, 8);
	cr_assert_eq(st.live_keys, (uint64_t)KILL_LANES * KILL_EACH);
	assert_lanes(tu_kv, KILL_LANES, KILL_EACH);
	cr_log_info("%u writers killed during growths, %llu growths", deaths,
		    (unsigned long long)st.growths);
	munmap(ctx.acked, KILL_LANES * sizeof(*ctx.acked));
}

/*
 * A model of keys: what each must read as, for checks that children run
 * as well as the parent (they return a reason, never assert).
 */
enum mttl { TTL_NONE, TTL_HOUR, TTL_TWO_HOURS };

struct mkey {
	char val[VAL_CAP];
	uint8_t len;
	uint8_t present;
	uint8_t ttl; /* enum mttl */
};

#define HOUR_MS 3600000
#define TTL_TOL 600000 /* a TTL read back may be this much below its set */

static void mkey_put(struct mkey *m, enum mttl ttl, const char *fmt,
		     unsigned long n)
{
	m->len = (uint8_t)snprintf(m->val, sizeof(m->val), fmt, n);
	m->present = 1;
	m->ttl = (uint8_t)ttl;
}

/* Is @m's value an integer as INCR takes it (the model's are canonical)? */
static bool mkey_int(const struct mkey *m, int64_t *out)
{
	char *end;

	if (!m->present || m->len == 0 ||
	    !(m->val[0] == '-' || (m->val[0] >= '0' && m->val[0] <= '9')))
		return false;
	*out = strtoll(m->val, &end, 10);
	return end == m->val + m->len;
}

/* Key i's first value: by i % 6 an integer, an inline string, a block,
 * then the same three with an hour's TTL. */
static void mkey_first(struct mkey *m, const char *prefix, unsigned i)
{
	enum mttl ttl = i % 6 >= 3 ? TTL_HOUR : TTL_NONE;
	int n;

	switch (i % 3) {
	case 0:
		mkey_put(m, ttl, "%lu", 7ul * i + 3);
		break;
	case 1:
		mkey_put(m, ttl, "s%lu", i);
		break;
	default:
		n = snprintf(m->val, sizeof(m->val), "blk-%s%u-", prefix, i);
		memset(m->val + n, 'x', BLOCK_LEN - (size_t)n);
		m->len = BLOCK_LEN;
		m->present = 1;
		m->ttl = (uint8_t)ttl;
	}
}

static int mkey_store(shmkv_t *kv, const char *key, const struct mkey *m)
{
	return shmkv_set(kv, key, strlen(key), m->val, m->len,
			 m->ttl == TTL_HOUR ? SHMKV_SET_PX : 0, HOUR_MS, NULL);
}

#define WHY(why, ...) (snprintf((why), WHY_CAP, __VA_ARGS__), -1)

static int pttl_check(shmkv_t *kv, const char *key, const struct mkey *m,
		      char *why)
{
	int64_t lo = -1, hi = -1, ms = 0;
	int rc = shmkv_pttl(kv, key, strlen(key), &ms);

	if (!m->present) {
		lo = hi = -2;
	} else if (m->ttl != TTL_NONE) {
		hi = m->ttl == TTL_HOUR ? HOUR_MS : 2 * HOUR_MS;
		lo = hi - TTL_TOL;
	}
	if (rc != 0 || ms < lo || ms > hi)
		return WHY(why, "%s: PTTL %s %lld, expected in [%lld, %lld]",
			   key, tu_rcname(rc), (long long)ms, (long long)lo,
			   (long long)hi);
	return 0;
}

/* 0 if @key reads as @m says (GET, EXISTS, PTTL, and GET as an integer
 * for integers); else -1 and the reason in @why. */
static int mkey_check(shmkv_t *kv, const char *key, const struct mkey *m,
		      char *why)
{
	char got[VAL_CAP];
	struct shmkv_value v = { got, sizeof(got), 0 };
	size_t kl = strlen(key);
	int rc = shmkv_get(kv, key, kl, &v), ex = shmkv_exists(kv, key, kl);
	int64_t want, n = 0;

	if (!m->present) {
		if (rc != 0 || ex != 0)
			return WHY(why, "%s: deleted, but GET %s EXISTS %s",
				   key, tu_rcname(rc), tu_rcname(ex));
		return pttl_check(kv, key, m, why);
	}
	if (rc != 1 || v.len != m->len || memcmp(got, m->val, m->len) != 0)
		return WHY(why, "%s: GET %s \"%.*s\", expected \"%.*s\"", key,
			   tu_rcname(rc), rc == 1 ? (int)v.len : 0, got,
			   (int)m->len, m->val);
	if (ex != 1)
		return WHY(why, "%s: EXISTS %s", key, tu_rcname(ex));
	if (mkey_int(m, &want) &&
	    ((rc = shmkv_get_int(kv, key, kl, &n)) != 1 || n != want))
		return WHY(why, "%s: GET as integer %s %lld, expected %lld",
			   key, tu_rcname(rc), (long long)n, (long long)want);
	return pttl_check(kv, key, m, why);
}

/*
 * A store held in the middle of a growth (the seams): MID_KEYS keys "m<i>"
 * in a table of MID_SLOTS slots, whose growth is started and advanced
 * MID_STEPS steps; each step moves two chunks, so the old slots [0, 64 x
 * MID_STEPS) are moved, and keys homed from MID_U_FLOOR on are not. Every
 * write during the growth advances it a step more (a chunk at the
 * frontier): MID_U_FLOOR leaves room for many more than the tests make.
 */
#define MID_SLOTS   65536u
#define MID_KEYS    12000u
#define MID_EXTRA   128u /* keys SETNX creates during the growth */
#define MID_STEPS   200u
#define MID_U_FLOOR (MID_SLOTS / 4 * 3)
#define MID_PICK    160u

struct mid {
	struct mkey model[MID_KEYS + MID_EXTRA];
	unsigned extra; /* of the MID_EXTRA keys, how many are used */
	unsigned moved[MID_PICK], n_moved;
	unsigned unmoved[MID_PICK], n_unmoved;
};

static void mid_key(char key[32], unsigned i)
{
	if (i < MID_KEYS)
		snprintf(key, 32, "m%u", i);
	else
		snprintf(key, 32, "n%u", i - MID_KEYS);
}

/* Every key of @md, and a few never written, read as the model says. */
static int mid_check(shmkv_t *kv, const struct mid *md, char *why)
{
	struct mkey none = { .present = 0 };
	char key[32];

	for (unsigned i = 0; i < MID_KEYS + MID_EXTRA; i++) {
		mid_key(key, i);
		if (mkey_check(kv, key, &md->model[i], why) != 0)
			return -1;
	}
	for (unsigned i = 0; i < 64; i++) {
		snprintf(key, sizeof(key), "none%u", i);
		if (mkey_check(kv, key, &none, why) != 0)
			return -1;
	}
	return 0;
}

/* Fills the store and the model, starts a growth and advances it. */
static void mid_setup(struct mid *md)
{
	struct shmkv_config cfg = small_config(MID_SLOTS);
	struct shmkv_tables tabs;
	struct shmkv_stats st;
	char key[32];

	tu_kv = tu_create_growing(&cfg, tu_name);
	for (unsigned i = 0; i < MID_KEYS; i++) {
		mid_key(key, i);
		mkey_first(&md->model[i], "m", i);
		tu_assert_rc(mkey_store(tu_kv, key, &md->model[i]), 1);
	}
	cr_assert_eq(stats_of(tu_kv).growths, 0);
	tu_assert_ok(shmkv__grow_start(tu_kv, life_of(tu_kv)));
	for (unsigned s = 0; s < MID_STEPS; s++) {
		cr_assert_eq(shmkv__tables(tu_kv, &tabs), SHMKV__GROWING);
		tu_assert_ok(shmkv__migrate_step(tu_kv, &tabs));
	}
	st = stats_of(tu_kv);
	cr_assert_eq(st.growing_from, MID_SLOTS);
	cr_assert_eq(st.growing_moved, MID_STEPS * SHMKV__MIGRATE_CHUNK);
	cr_assert_eq(st.slots, 2 * MID_SLOTS);
	cr_assert_eq(st.live_keys, MID_KEYS);
	cr_assert_gt(st.inline_values, 0);
	cr_assert_gt(st.block_values, 0);
}

/* Sorts the keys into moved (the old table no longer has them) and
 * unmoved far from the frontier; asserts there are enough of both. */
static void mid_pick(struct mid *md)
{
	struct shmkv_tables tabs;
	struct shmkv_slot_ref ref;
	struct shmkv_key k;
	char key[32];

	cr_assert_eq(shmkv__tables(tu_kv, &tabs), SHMKV__GROWING);
	for (unsigned i = 0; i < MID_KEYS; i++) {
		int r;

		mid_key(key, i);
		shmkv__key_init(tu_kv, tabs.old, &k, key, strlen(key));
		r = shmkv__migrate_lookup_old(tu_kv, &k, &ref);
		cr_assert(r == 0 || r == 1, "%s: old lookup %s", key,
			  tu_rcname(r));
		if (r == 0 && md->n_moved < MID_PICK)
			md->moved[md->n_moved++] = i;
		else if (r == 1 && k.home >= MID_U_FLOOR &&
			 k.home < MID_SLOTS - 1024 && md->n_unmoved < MID_PICK)
			md->unmoved[md->n_unmoved++] = i;
	}
	cr_assert_eq(md->n_moved, MID_PICK);
	cr_assert_eq(md->n_unmoved, MID_PICK);
}

/* The child of a read check: a handle of its own (@ro: read-only). */
struct mid_reader {
	const struct mid *md;
	bool ro;
};

static int mid_read_child(void *arg)
{
	struct mid_reader *r = arg;
	char why[WHY_CAP];
	shmkv_t *kv;
	int rc = shmkv_open(tu_name, r->ro ? SHMKV_OPEN_READONLY : 0, &kv);

	if (rc != 0) {
		fprintf(stderr, "reader: open: %s\n", shmkv_strerror(rc));
		return 3;
	}
	if (mid_check(kv, r->md, why) != 0) {
		fprintf(stderr, "reader (%s): %s\n", r->ro ? "ro" : "rw", why);
		return 1;
	}
	shmkv_close(kv);
	return 0;
}

/*
 * The writes: each op runs on keys of the moved and of the unmoved part,
 * checks Redis's answer against the model and updates the model.
 */
struct plan {
	shmkv_t *kv;
	struct mid *md;
	char why[WHY_CAP];
};

typedef int (*mid_op)(struct plan *p, unsigned i, const char *key);

#define KL(key) (key), strlen(key)

static int expect_rc(struct plan *p, const char *what, const char *key, int rc,
		     int want)
{
	return rc == want ? 0
			  : WHY(p->why, "%s %s: %s, Redis says %s", what, key,
				tu_rcname(rc), tu_rcname(want));
}

static int expect_old(struct plan *p, const char *what, const char *key,
		      const struct shmkv_value *old, const struct mkey *m)
{
	if (old->len != m->len || memcmp(old->buf, m->val, m->len) != 0)
		return WHY(p->why, "%s %s: old value \"%.*s\", had \"%.*s\"",
			   what, key, (int)old->len, (const char *)old->buf,
			   (int)m->len, m->val);
	return 0;
}

static int op_set(struct plan *p, unsigned i, const char *key)
{
	struct mkey *m = &p->md->model[i];
	struct mkey nv;

	mkey_put(&nv, TTL_NONE, "set-%lu", i);
	if (expect_rc(p, "SET", key,
		      shmkv_set(p->kv, KL(key), nv.val, nv.len, 0, 0, NULL), 1))
		return -1;
	*m = nv;
	return 0;
}

static int op_setnx(struct plan *p, unsigned i, const char *key)
{
	struct mkey *m = &p->md->model[i];
	unsigned j = MID_KEYS + p->md->extra++;
	char nkey[32];

	if (expect_rc(p, "SETNX", key, shmkv_setnx(p->kv, KL(key), LIT("nx")),
		      m->present ? 0 : 1))
		return -1;
	if (!m->present)
		mkey_put(m, TTL_NONE, "nx", 0);
	/* A key new during the growth: it goes to the new table. */
	mid_key(nkey, j);
	if (expect_rc(p, "SETNX", nkey,
		      shmkv_setnx(p->kv, KL(nkey), LIT("fresh")), 1))
		return -1;
	mkey_put(&p->md->model[j], TTL_NONE, "fresh", 0);
	return 0;
}

static int op_getset(struct plan *p, unsigned i, const char *key)
{
	struct mkey *m = &p->md->model[i];
	char buf[VAL_CAP];
	struct shmkv_value old = { buf, sizeof(buf), 0 };
	struct mkey nv;

	mkey_put(&nv, TTL_NONE, "gs-%lu", i);
	if (expect_rc(p, "GETSET", key,
		      shmkv_getset(p->kv, KL(key), nv.val, nv.len, &old),
		      m->present) ||
	    (m->present && expect_old(p, "GETSET", key, &old, m)))
		return -1;
	*m = nv;
	return 0;
}

static int op_del(struct plan *p, unsigned i, const char *key)
{
	struct mkey *m = &p->md->model[i];

	if (expect_rc(p, "DEL", key, shmkv_del(p->kv, KL(key)), m->present) ||
	    expect_rc(p, "DEL (again)", key, shmkv_del(p->kv, KL(key)), 0))
		return -1;
	m->present = 0;
	return 0;
}

static int op_incr(struct plan *p, unsigned i, const char *key)
{
	struct mkey *m = &p->md->model[i];
	int64_t v = 0, r = 0;
	bool is_int = mkey_int(m, &v);
	int rc = shmkv_incr(p->kv, KL(key), &r);

	if (m->present && !is_int)
		return expect_rc(p, "INCR", key, rc, -EDOM);
	if (expect_rc(p, "INCR", key, rc, 0))
		return -1;
	if (r != v + 1)
		return WHY(p->why, "INCR %s: %lld, expected %lld", key,
			   (long long)r, (long long)v + 1);
	/* INCR keeps the TTL; a missing key starts at 0 without one. */
	mkey_put(m, m->present ? (enum mttl)m->ttl : TTL_NONE, "%lu",
		 (unsigned long)r);
	return 0;
}

static int op_expire(struct plan *p, unsigned i, const char *key)
{
	struct mkey *m = &p->md->model[i];

	if (expect_rc(p, "EXPIRE", key,
		      shmkv_expire(p->kv, KL(key), SHMKV_EXPIRE_SEC, 0, 7200),
		      m->present) ||
	    expect_rc(p, "EXPIRE", "none0",
		      shmkv_expire(p->kv, LIT("none0"), SHMKV_EXPIRE_SEC, 0,
				   7200),
		      0))
		return -1;
	m->ttl = TTL_TWO_HOURS;
	return 0;
}

static int op_persist(struct plan *p, unsigned i, const char *key)
{
	struct mkey *m = &p->md->model[i];

	if (expect_rc(p, "PERSIST", key, shmkv_persist(p->kv, KL(key)),
		      m->present && m->ttl != TTL_NONE))
		return -1;
	m->ttl = TTL_NONE;
	return 0;
}

static int op_getdel(struct plan *p, unsigned i, const char *key)
{
	struct mkey *m = &p->md->model[i];
	char buf[VAL_CAP];
	struct shmkv_value old = { buf, sizeof(buf), 0 };

	if (expect_rc(p, "GETDEL", key, shmkv_getdel(p->kv, KL(key), &old),
		      m->present) ||
	    (m->present && expect_old(p, "GETDEL", key, &old, m)))
		return -1;
	m->present = 0;
	return 0;
}

static int op_delifeq(struct plan *p, unsigned i, const char *key)
{
	struct mkey *m = &p->md->model[i];

	if (expect_rc(p, "DELIFEQ (other value)", key,
		      shmkv_delifeq(p->kv, KL(key), LIT("nope")), 0) ||
	    expect_rc(p, "DELIFEQ", key,
		      shmkv_delifeq(p->kv, KL(key), m->val, m->len),
		      m->present))
		return -1;
	m->present = 0;
	return 0;
}

static const struct {
	const char *name;
	mid_op fn;
} mid_ops[] = {
	{ "SET", op_set },	   { "SETNX", op_setnx },
	{ "GETSET", op_getset },   { "DEL", op_del },
	{ "INCR", op_incr },	   { "EXPIRE", op_expire },
	{ "PERSIST", op_persist }, { "GETDEL", op_getdel },
	{ "DELIFEQ", op_delifeq },
};
#define MID_OPS	   (sizeof(mid_ops) / sizeof(mid_ops[0]))
#define MID_PER_OP 6u /* keys per op and part: every kind of value */

/* Runs every op on MID_PER_OP keys of each part, then reads back all. */
static int mid_write_child(void *arg)
{
	struct plan p = { .md = arg };
	int rc = shmkv_open(tu_name, 0, &p.kv);

	if (rc != 0) {
		fprintf(stderr, "writer: open: %s\n", shmkv_strerror(rc));
		return 3;
	}
	for (unsigned o = 0; o < MID_OPS; o++)
		for (unsigned n = 0; n < 2 * MID_PER_OP; n++) {
			const unsigned *part = n % 2 ? p.md->unmoved
						     : p.md->moved;
			unsigned i = part[o * MID_PER_OP + n / 2];
			char key[32];

			mid_key(key, i);
			if (mid_ops[o].fn(&p, i, key) != 0 ||
			    mkey_check(p.kv, key, &p.md->model[i], p.why)) {
				fprintf(stderr, "writer (%s part): %s\n",
					n % 2 ? "unmoved" : "moved", p.why);
				return 1;
			}
		}
	if (mid_check(p.kv, p.md, p.why) != 0) {
		fprintf(stderr, "writer, after: %s\n", p.why);
		return 1;
	}
	shmkv_close(p.kv);
	return 0;
}

static void assert_mid(shmkv_t *kv, const struct mid *md)
{
	char why[WHY_CAP];

	cr_assert_eq(mid_check(kv, md, why), 0, "%s", why);
}

Test(migrate, every_command_answers_right_in_the_middle_of_a_growth,
     .timeout = 60)
{
	struct mid *md = shared_map(sizeof(*md));
	struct mid_reader rw = { md, false }, ro = { md, true };
	struct shmkv_stats st, done;
	shmkv_t *rokv;
	uint64_t alloc, t0;

	cr_assert_leq(MID_OPS * MID_PER_OP, MID_PICK);
	mid_setup(md);
	mid_pick(md);
	rokv = tu_open(tu_name, SHMKV_OPEN_READONLY);
	/* Reads, from another process and from a read-only handle: every
	 * key, and readers move nothing. */
	assert_exited_ok(fork_child(mid_read_child, &rw), "a reader");
	assert_exited_ok(fork_child(mid_read_child, &ro), "a ro reader");
	assert_mid(rokv, md);
	cr_assert_eq(stats_of(tu_kv).growing_moved,
		     MID_STEPS * SHMKV__MIGRATE_CHUNK, "a reader moved slots");
	/* Writes from another process, checked there as they go. */
	assert_exited_ok(fork_child(mid_write_child, md), "the writer");
	st = stats_of(tu_kv);
	cr_assert_eq(st.growing_from, MID_SLOTS, "the growth ended early");
	cr_assert_lt(st.growing_moved, MID_U_FLOOR,
		     "the sweep reached the unmoved part during the writes");
	assert_mid(rokv, md);
	assert_mid(tu_kv, md);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
	/* The end: a read-only handle may not finish it; another may. */
	tu_assert_rc(shmkv_maintain(rokv), -EROFS);
	cr_assert_eq(stats_of(tu_kv).growing_moved, st.growing_moved);
	alloc = (uint64_t)tu_shm_allocated(tu_name);
	cr_assert_eq(alloc, st.memory_bytes);
	tu_assert_ok(shmkv_maintain(tu_kv));
	done = stats_of(tu_kv);
	cr_assert_eq(done.growing_from, 0);
	cr_assert_eq(done.growths, 1);
	cr_assert_eq(done.slots, 2 * MID_SLOTS);
	/* The old table is kept, and counted, while a handle that may be in
	 * it is open (both of ours); it goes back when the last one closes.
	 * Pages for the copies' blocks may have come. */
	t0 = shmkv__table_end(&tu_kv->geo, 0) -
	     shmkv__table_start(&tu_kv->geo, 0);
	cr_assert_eq(done.tables_kept_bytes, t0);
	cr_assert_eq((uint64_t)tu_shm_allocated(tu_name), done.memory_bytes);
	cr_assert_eq(done.memory_bytes,
		     alloc + (uint64_t)(done.pages - st.pages) * done.page_size,
		     "allocated %llu, was %llu: the old table (%llu) is not "
		     "counted",
		     (unsigned long long)done.memory_bytes,
		     (unsigned long long)alloc, (unsigned long long)t0);
	shmkv_close(rokv);
	cr_assert_eq(stats_of(tu_kv).tables_kept_bytes, t0);
	shmkv_close(tu_kv);
	tu_kv = tu_open(tu_name, 0);
	rokv = tu_open(tu_name, SHMKV_OPEN_READONLY);
	done = stats_of(tu_kv);
	cr_assert_eq(done.tables_kept_bytes, 0,
		     "the old table is not given back by its last holder");
	cr_assert_eq((uint64_t)tu_shm_allocated(tu_name), done.memory_bytes);
	cr_assert_eq(done.memory_bytes + t0,
		     alloc + (uint64_t)(done.pages - st.pages) *
				     done.page_size);
	/* Deleted keys stay deleted, TTLs are kept. */
	assert_mid(tu_kv, md);
	assert_mid(rokv, md);
	assert_exited_ok(fork_child(mid_read_child, &ro), "a ro reader");
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
	shmkv_close(rokv);
	munmap(md, sizeof(*md));
}

/*
 * Prepared keys across growths: references made before a growth, used
 * during it (theirs remember slots of the old table) and after it, on a
 * read-write and on a read-only handle.
 */
#define PREP_KEYS 48u

struct prep {
	char key[16];
	struct shmkv_keyref ref, roref;
	struct mkey m;
};

/* Through the reference, then through the plain commands. */
static void prep_assert(shmkv_t *kv, struct prep *p, bool ro)
{
	char got[VAL_CAP], why[WHY_CAP];
	struct shmkv_value v = { got, sizeof(got), 0 };
	struct shmkv_keyref *ref = ro ? &p->roref : &p->ref;
	int64_t want, n = 0;
	int rc = shmkv_key_get(kv, ref, &v);

	cr_assert_eq(rc, p->m.present, "%s: prepared GET %s (%s handle)",
		     p->key, tu_rcname(rc), ro ? "ro" : "rw");
	if (p->m.present)
		tu_assert_value(v, p->m.val, p->m.len);
	if (mkey_int(&p->m, &want)) {
		tu_assert_rc(shmkv_key_get_int(kv, ref, &n), 1);
		cr_assert_eq(n, want, "%s: prepared GET as integer", p->key);
	}
	cr_assert_eq(mkey_check(kv, p->key, &p->m, why), 0, "%s", why);
}

static void prep_assert_all(shmkv_t *kv, shmkv_t *ro, struct prep *ps)
{
	for (unsigned i = 0; i < PREP_KEYS; i++) {
		prep_assert(kv, &ps[i], false);
		prep_assert(ro, &ps[i], true);
	}
}

/* One write through key @p's reference, by (@i + @round) % 8. */
static void prep_write(shmkv_t *kv, struct prep *p, unsigned i, unsigned round)
{
	char buf[VAL_CAP];
	struct shmkv_value old = { buf, sizeof(buf), 0 };
	struct mkey *m = &p->m, nv;
	int64_t v = 0, r = 0;

	mkey_put(&nv, TTL_NONE, "r%lu", round * 100ul + i);
	switch ((i + round) % 8) {
	case 0:
		tu_assert_rc(
			shmkv_key_set(kv, &p->ref, nv.val, nv.len, 0, 0, NULL),
			1);
		*m = nv;
		break;
	case 1:
		tu_assert_rc(shmkv_key_setnx(kv, &p->ref, nv.val, nv.len),
			     !m->present);
		if (!m->present)
			*m = nv;
		break;
	case 2:
		tu_assert_rc(
			shmkv_key_getset(kv, &p->ref, nv.val, nv.len, &old),
			m->present);
		if (m->present)
			tu_assert_value(old, m->val, m->len);
		*m = nv;
		break;
	case 3:
		if (m->present && !mkey_int(m, &v)) {
			tu_assert_rc(shmkv_key_incrby(kv, &p->ref, 5, &r),
				     -EDOM);
			break;
		}
		tu_assert_rc(shmkv_key_incrby(kv, &p->ref, 5, &r), 0);
		cr_assert_eq(r, v + 5, "%s: INCRBY", p->key);
		mkey_put(m, m->present ? (enum mttl)m->ttl : TTL_NONE, "%lu",
			 (unsigned long)r);
		break;
	case 4: /* deleted and written again, in the same phase */
		tu_assert_rc(shmkv_key_del(kv, &p->ref), m->present);
		tu_assert_rc(shmkv_key_setnx(kv, &p->ref, nv.val, nv.len), 1);
		*m = nv;
		break;
	case 5:
		tu_assert_rc(shmkv_key_getdel(kv, &p->ref, &old), m->present);
		if (m->present)
			tu_assert_value(old, m->val, m->len);
		m->present = 0;
		break;
	case 6:
		tu_assert_rc(shmkv_key_delifeq(kv, &p->ref, LIT("nope")), 0);
		tu_assert_rc(shmkv_key_delifeq(kv, &p->ref, m->val, m->len),
			     m->present);
		m->present = 0;
		break;
	default: /* read only */
		break;
	}
}

static void prep_round(shmkv_t *kv, shmkv_t *ro, struct prep *ps,
		       unsigned round)
{
	for (unsigned i = 0; i < PREP_KEYS; i++) {
		prep_write(kv, &ps[i], i, round);
		prep_assert(kv, &ps[i], false);
	}
	prep_assert_all(kv, ro, ps);
}

Test(migrate, prepared_keys_answer_right_before_during_and_after_growths,
     .timeout = 60)
{
	struct shmkv_config cfg = small_config(MID_SLOTS);
	struct prep *ps = calloc(PREP_KEYS, sizeof(*ps));
	struct shmkv_tables tabs;
	shmkv_t *ro;
	unsigned i;

	cr_assert_not_null(ps);
	tu_kv = tu_create_growing(&cfg, tu_name);
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	for (i = 0; i < 2000; i++)
		tu_assert_rc(lane_set(tu_kv, "bg", i), 1);
	for (i = 0; i < PREP_KEYS; i++) {
		struct prep *p = &ps[i];

		snprintf(p->key, sizeof(p->key), "p%u", i);
		tu_assert_ok(shmkv_key_prepare(tu_kv, &p->ref, KL(p->key)));
		tu_assert_ok(shmkv_key_prepare(ro, &p->roref, KL(p->key)));
		mkey_first(&p->m, "p", i);
		tu_assert_rc(mkey_store(tu_kv, p->key, &p->m), 1);
	}
	/* Before: the references learn their slots in T(0). */
	prep_assert_all(tu_kv, ro, ps);
	prep_round(tu_kv, ro, ps, 0);
	/* During: a growth started and held half-done. */
	tu_assert_ok(shmkv__grow_start(tu_kv, life_of(tu_kv)));
	for (unsigned s = 0; s < MID_STEPS; s++) {
		cr_assert_eq(shmkv__tables(tu_kv, &tabs), SHMKV__GROWING);
		tu_assert_ok(shmkv__migrate_step(tu_kv, &tabs));
	}
	prep_assert_all(tu_kv, ro, ps);
	for (unsigned round = 1; round <= 3; round++)
		prep_round(tu_kv, ro, ps, round);
	cr_assert_eq(stats_of(tu_kv).growing_from, MID_SLOTS,
		     "the growth ended during the test");
	/* After it: the references re-home in T(1). */
	tu_assert_ok(shmkv_maintain(tu_kv));
	cr_assert_eq(stats_of(tu_kv).growing_from, 0);
	prep_assert_all(tu_kv, ro, ps);
	prep_round(tu_kv, ro, ps, 4);
	/* A growth the inserts start themselves, and its end. */
	for (i = 0; stats_of(tu_kv).growths < 2; i += 4096)
		for (unsigned j = i; j < i + 4096; j++)
			tu_assert_rc(lane_set(tu_kv, "more", j), 1);
	prep_round(tu_kv, ro, ps, 5);
	tu_assert_ok(shmkv_maintain(tu_kv));
	prep_assert_all(tu_kv, ro, ps);
	prep_round(tu_kv, ro, ps, 6);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
	shmkv_close(ro);
	free(ps);
}

/*
 * Readers looping GETs of keys nobody deletes while writers make the
 * table grow several times: no read misses or sees a wrong value.
 */
#define RD_KEYS	   600u
#define RD_READERS 2u /* one read-write handle, one read-only */
#define RD_WRITERS 3u
#define RD_EACH	   50000u /* 150,000 keys: from 1024 slots, 8 growths */

struct rd_report {
	atomic_bool stop;
	atomic_ulong reads[RD_READERS];
	atomic_ulong mid[RD_READERS]; /* reads started during a growth */
	atomic_ulong bad[RD_READERS];
	char why[RD_READERS][WHY_CAP];
};

struct rd_arg {
	struct rd_report *rep;
	unsigned id;
};

static int rd_loop(shmkv_t *kv, struct rd_report *rep, unsigned id)
{
	char prefix[8] = "st-";

	/* Relaxed: a flag the parent sets after the writers ended; a late
	 * look costs a round more. */
	while (!atomic_load_explicit(&rep->stop, memory_order_relaxed))
		for (unsigned i = 0; i < RD_KEYS; i++) {
			bool mid = growing_now(kv);

			/* Relaxed: counts read by the parent after this
			 * process ended (waitpid orders them). */
			if (mid)
				atomic_fetch_add_explicit(&rep->mid[id], 1,
							  memory_order_relaxed);
			atomic_fetch_add_explicit(&rep->reads[id], 1,
						  memory_order_relaxed);
			if (lane_holds(kv, prefix, i))
				continue;
			if (atomic_fetch_add_explicit(&rep->bad[id], 1,
						      memory_order_relaxed) ==
			    0)
				snprintf(rep->why[id], WHY_CAP,
					 "%s%u wrong or missing%s", prefix, i,
					 mid ? " during a growth" : "");
		}
	return 0;
}

static int rd_child(void *arg)
{
	struct rd_arg *a = arg;
	shmkv_t *kv;
	int rc = shmkv_open(tu_name, a->id == 1 ? SHMKV_OPEN_READONLY : 0, &kv);

	if (rc != 0) {
		fprintf(stderr, "reader: open: %s\n", shmkv_strerror(rc));
		return 3;
	}
	rc = rd_loop(kv, a->rep, a->id);
	shmkv_close(kv);
	return rc;
}

Test(migrate, readers_never_miss_a_key_while_writers_grow_the_table,
     .timeout = 60)
{
	struct shmkv_config cfg = small_config(1024);
	struct rd_report *rep = shared_map(sizeof(*rep));
	struct rd_arg args[RD_READERS];
	pid_t readers[RD_READERS], writers[RD_WRITERS];
	uint64_t growths;

	tu_kv = tu_create_growing(&cfg, tu_name);
	for (unsigned i = 0; i < RD_KEYS; i++)
		tu_assert_rc(lane_set(tu_kv, "st-", i), 1);
	growths = stats_of(tu_kv).growths;
	for (unsigned r = 0; r < RD_READERS; r++) {
		args[r] = (struct rd_arg){ rep, r };
		readers[r] = fork_child(rd_child, &args[r]);
	}
	/* The readers run before the writers start. */
	for (unsigned r = 0; r < RD_READERS; r++)
		for (unsigned n = 0; atomic_load(&rep->reads[r]) == 0; n++) {
			cr_assert_lt(n, 10000, "reader %u does not read", r);
			tu_sleep_ms(1);
		}
	for (unsigned w = 0; w < RD_WRITERS; w++)
		writers[w] = spawn_lane(w, 0, RD_EACH, NULL);
	for (unsigned w = 0; w < RD_WRITERS; w++)
		assert_exited_ok(writers[w], "a writer");
	atomic_store(&rep->stop, true);
	for (unsigned r = 0; r < RD_READERS; r++)
		assert_exited_ok(readers[r], "a reader");
	growths = stats_of(tu_kv).growths - growths;
	cr_assert_geq(growths, 3, "%llu growths during the reads",
		      (unsigned long long)growths);
	for (unsigned r = 0; r < RD_READERS; r++) {
		cr_assert_eq(atomic_load(&rep->bad[r]), 0,
			     "reader %u: %lu bad reads of %lu, first: %s", r,
			     atomic_load(&rep->bad[r]),
			     atomic_load(&rep->reads[r]), rep->why[r]);
		cr_assert_gt(atomic_load(&rep->mid[r]), 0,
			     "reader %u never read during a growth", r);
		cr_log_info("reader %u (%s): %lu reads, %lu during growths", r,
			    r == 1 ? "ro" : "rw", atomic_load(&rep->reads[r]),
			    atomic_load(&rep->mid[r]));
	}
	assert_lanes(tu_kv, RD_WRITERS, RD_EACH);
	assert_finished(tu_kv, tu_name, 1024,
			SLACK_PER_PROC * (RD_READERS + RD_WRITERS + 1));
	munmap(rep, sizeof(*rep));
}

/*
 * No room for a bigger table: inserts that find no slot fail with
 * -ENOSPC, and nothing changes.
 */

/* Fills @kv with integers "f<i>" until an insert fails; asserts it is
 * -ENOSPC, and that a failed insert and a failed growth change nothing. */
static void assert_full_table(shmkv_t *kv, const char *name)
{
	uint64_t life = life_of(kv);
	off_t alloc;
	struct tu_snap *snap;
	unsigned i;
	int rc = 1;

	for (i = 0; rc == 1 && i < 4096; i++)
		rc = lane_set(kv, "f", 3 * i);
	cr_assert_eq(rc, -ENOSPC, "SET f%u: %s", 3 * (i - 1), tu_rcname(rc));
	cr_assert_gt(i, 512);
	alloc = tu_shm_allocated(name);
	snap = tu_snap_take(kv);
	for (unsigned j = i; j < i + 64; j++)
		tu_assert_rc(lane_set(kv, "f", 3 * j), -ENOSPC);
	tu_assert_rc(shmkv__grow_start(kv, life), -ENOSPC);
	tu_assert_ok(shmkv_maintain(kv));
	tu_assert_unchanged(kv, snap);
	cr_assert_eq(life_of(kv), life);
	cr_assert_eq(tu_shm_allocated(name), alloc);
	cr_assert_eq(stats_of(kv).growths, 0);
	cr_assert_eq(stats_of(kv).growing_from, 0);
	/* What stats says of it: no doubling left. */
	cr_assert_eq(stats_of(kv).slots_max, stats_of(kv).slots);
	/* Keys already there are still written as before. */
	tu_assert_rc(lane_set(kv, "f", 0), 1);
	tu_assert_rc(shmkv_check(kv, NULL, NULL), 0);
}

Test(migrate, a_store_without_room_for_a_bigger_table_says_enospc)
{
	struct shmkv_config cfg = small_config(1024);
	shmkv_t *ro;

	/* max_memory at its initial size: the segment reserves T(1) (it
	 * is smaller than the value pages), but T(1) would pass the limit. */
	tu_kv = tu_create(&cfg, tu_name);
	assert_full_table(tu_kv, tu_name);
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	tu_assert_rc(shmkv_maintain(ro), -EROFS);
	shmkv_close(ro);
}

Test(migrate, a_max_memory_lowered_below_the_next_table_stops_growth)
{
	struct shmkv_config cfg = small_config(1024);

	cfg.max_memory = 64u << 20;
	tu_kv = tu_create_growing(&cfg, tu_name);
	cr_assert_gt(tu_kv->geo.epoch_max, 0);
	tu_assert_ok(shmkv_set_max_memory(tu_kv, stats_of(tu_kv).memory_bytes));
	assert_full_table(tu_kv, tu_name);
	/* Room again: the next insert grows the table. */
	tu_assert_ok(shmkv_set_max_memory(tu_kv, 64u << 20));
	cr_assert_gt(stats_of(tu_kv).slots_max, stats_of(tu_kv).slots);
	tu_assert_rc(lane_set(tu_kv, "g", 0), 1);
	cr_assert(stats_of(tu_kv).growths == 1 || growing_now(tu_kv),
		  "no growth with room for it");
}

/* shmkv_stats' slots_max is the size the table reaches: integers (no
 * value pages) fill it, doubling, until an insert finds no room, and
 * then it has exactly slots_max slots. */
Test(migrate, the_table_grows_to_the_slots_stats_says_and_no_further)
{
	struct shmkv_config cfg = small_config(1024);
	struct shmkv_stats st;
	unsigned i;
	int rc = 1;

	cfg.max_memory = 64u << 20;
	tu_kv = tu_create_growing(&cfg, tu_name);
	st = stats_of(tu_kv);
	/* Room for two doublings, not three (in T(0)'s sizes beyond
	 * memory_bytes, which counts T(0)): T(0) to T(1) needs T(1) beside
	 * T(0), 2 more; T(1) to T(2) needs T(1) and T(2), 5; T(2) to T(3)
	 * 11. */
	tu_assert_ok(shmkv_set_max_memory(
		tu_kv,
		st.memory_bytes + 8ull * st.slots * tu_kv->geo.slot_size));
	st = stats_of(tu_kv);
	cr_assert_eq(st.slots_max, 4 * st.slots);
	for (i = 0; rc == 1 && i < (1u << 22); i++)
		rc = lane_set(tu_kv, "f", i);
	cr_assert_eq(rc, -ENOSPC, "SET f%u: %s", i - 1, tu_rcname(rc));
	tu_assert_ok(shmkv_maintain(tu_kv));
	cr_assert_eq(stats_of(tu_kv).slots, st.slots_max,
		     "the table has %" PRIu64 " slots, stats said %" PRIu64,
		     stats_of(tu_kv).slots, st.slots_max);
	cr_assert_eq(stats_of(tu_kv).slots_max, st.slots_max);
}
