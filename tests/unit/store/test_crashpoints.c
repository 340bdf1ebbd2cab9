/*
 * test_crashpoints.c - a process killed at each crash point (src/fault.h)
 * leaves the store usable by every other process at once, and
 * shmkv_recover repairs exactly what it left.
 *
 * Each test arms crash_worker with SHMKV_CRASH_AT=<point> and
 * SHMKV_CRASH_AFTER=1, 2 and 3 (a fresh store each time), lets it run
 * commands that pass the point, and checks, in order:
 *  - it died of SIGKILL, and left exactly the debris the point implies
 *    (slots claimed, pending, lost or half recycled; blocks leaked or
 *    unconfirmed), counted by walking the segment;
 *  - the commands it completed are visible, the one it died in is either
 *    fully visible or not at all (its CAS is the linearization point);
 *  - this process can at once GET, SET, SETNX and DEL the same keys and
 *    new ones, inline and block values, with exact replies (no -EAGAIN);
 *  - shmkv_recover reports exactly the debris still there (others may
 *    have finished some of it: that is counted as helped), leaves none,
 *    shmkv_check finds nothing, value storage balances (blocks in use ==
 *    live keys whose value is not an inline 48-bit integer or has a TTL)
 *    and a second recover has nothing to do.
 *
 * Crash points exist only in a build with -DSHMKV_FAULT_INJECTION (make
 * FAULT=1, into build-fault/); elsewhere every test here is skipped.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/crash_value.h"
#include "helpers/mp_census.h"
#include "helpers/testutil.h"
#include "atomic.h"
#include "internal.h"

TestSuite(crashpoint, .fini = tu_teardown);

#ifdef SHMKV_FAULT_INJECTION
#define NEED_CRASH_POINTS() ((void)0)
#else
#define NEED_CRASH_POINTS()                                                    \
	cr_skip_test("no crash points in this build: make FAULT=1, then "      \
		     "build-fault/tests/unit --filter 'crashpoint/*'")
#endif

#define AFTER_MAX   3 /* SHMKV_CRASH_AFTER runs 1..AFTER_MAX */
#define BIG_TABLE   1024u
#define TINY_TABLE  16u /* SHMKV_SLOTS_MIN: one probe window */
#define SWEEP_KEYS  6	/* expired keys a sweep meets */
#define FRESH_KEYS  8	/* new keys the usability check writes */
#define SCAN_KEYS   BIG_TABLE
#define USE_BLOCK   TU_BLOCK_TEXT "-x"
#define USE_BLOCK_2 TU_BLOCK_TEXT "-y"

/* What killed processes left, as the segment shows it. */
struct debris {
	unsigned busy_dead;   /* slots claimed by a dead process */
	unsigned area_dead;   /* slots' inline areas claimed by a dead thread */
	unsigned inserting;   /* inserts left pending */
	unsigned collided;    /* lost duplicates not given back */
	unsigned dead_member; /* deleted keys' slots half recycled */
	unsigned unref;	      /* used blocks no key references */
	unsigned unconfirmed; /* referenced blocks naming a dead thread */
};

struct scenario {
	const char *point;
	uint32_t slots;
	const char *mode;   /* crash_worker's: int, block or sweep */
	const char *prefix; /* of the keys it sets */
	bool visible;	    /* the SET it died in took effect */
	struct debris left; /* exactly what the crash leaves */
	/* And what each pass before the fatal one leaves (its published
	 * blocks name the dead worker until settled). */
	struct debris per_pass;
	/* Keys prepare() made that must read as missing afterwards. */
	const char *gone_prefix;
	unsigned gone;
	void (*prepare)(shmkv_t *kv, const char *name, unsigned after);
};

/* crash_worker, beside this binary. */
static void worker_path(char *buf, size_t cap)
{
	static const char prog[] = "/crash_worker";
	ssize_t n = readlink("/proc/self/exe", buf, cap - sizeof(prog));

	cr_assert_gt(n, 0, "readlink /proc/self/exe: %s", strerror(errno));
	buf[n] = '\0';
	strcpy(strrchr(buf, '/'), prog);
	cr_assert_eq(access(buf, X_OK), 0, "no program %s: %s", buf,
		     strerror(errno));
}

/* The last crash_worker started: its debris is named by it. */
static pid_t worker_pid;

/* What an armed worker does at its crash point. */
enum crash_how { CRASH_KILL, CRASH_STOP };

/* Starts crash_worker (bounded: COUNT commands); @point NULL runs it
 * unarmed. Return: its pid. */
static pid_t spawn_worker(const char *name, const char *point, unsigned after,
			  const char *mode, const char *prefix, unsigned start,
			  unsigned count, enum crash_how how)
{
	char path[PATH_MAX], a[16], s[16], c[16];
	pid_t pid;

	worker_path(path, sizeof(path));
	snprintf(a, sizeof(a), "%u", after);
	snprintf(s, sizeof(s), "%u", start);
	snprintf(c, sizeof(c), "%u", count);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		if (point) {
			setenv("SHMKV_CRASH_AT", point, 1);
			setenv("SHMKV_CRASH_AFTER", a, 1);
		}
		if (how == CRASH_STOP)
			setenv("SHMKV_CRASH_SIGNAL", "STOP", 1);
		execl(path, path, name, mode, prefix, s, c, (char *)NULL);
		_exit(127);
	}
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	worker_pid = pid;
	return pid;
}

/* Runs crash_worker to its end, as spawn_worker() starts it, killed at
 * its crash point. Return: its wait status. */
static int run_worker(const char *name, const char *point, unsigned after,
		      const char *mode, const char *prefix, unsigned start,
		      unsigned count)
{
	pid_t pid = spawn_worker(name, point, after, mode, prefix, start, count,
				 CRASH_KILL);
	int st = 0;

	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

static void assert_died_at(int st, const char *point, unsigned after)
{
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		  "crash_worker armed at %s, pass %u, did not die there: %s %d "
		  "(0: the point was never reached)",
		  point, after, WIFSIGNALED(st) ? "signal" : "exit status",
		  WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

/*
 * Debris, counted by walking the segment (white box). The store is quiet:
 * nothing changes while we look.
 */

static void debris_slots(shmkv_t *kv, struct debris *d, unsigned char *ref,
			 uint64_t units)
{
	for (uint32_t i = 0; i <= shmkv__table_cmd(kv)->mask; i++) {
		struct shmkv_slot_shm *s = shmkv__slot(shmkv__table_cmd(kv), i);
		/* Acquire: pairs with the last CAS on each word. */
		uint64_t w = shmkv__load_acquire(&s->state);
		uint64_t v = shmkv__load_acquire(&s->value);

		/* Relaxed: the store is quiet. */
		uint64_t a = shmkv__load_relaxed(&s->area);

		d->area_dead += SLOT_AREA_TID(a) != 0 &&
				!shmkv__pid_alive(SLOT_AREA_TID(a));
		if (SLOT_STATE(w) == SLOT_BUSY)
			d->busy_dead += !shmkv__pid_alive(SLOT_PID(w));
		else if (SLOT_STATE(w) == SLOT_INSERTING)
			d->inserting++;
		else if (SLOT_STATE(w) == SLOT_COLLIDED)
			d->collided++;
		else if (SLOT_STATE(w) == SLOT_MEMBER && VAL_IS_DEAD(v))
			d->dead_member++;
		else if (SLOT_STATE(w) == SLOT_MEMBER &&
			 VAL_KIND(v) == VAL_BLOCK && VAL_BLOCK_UNIT(v) < units)
			ref[VAL_BLOCK_UNIT(v)] = 1;
	}
}

static void debris_take(shmkv_t *kv, struct debris *d)
{
	uint64_t units = (uint64_t)kv->geo.page_count * kv->geo.units_per_page;
	unsigned char *ref = calloc(units, 1);

	cr_assert_not_null(ref);
	memset(d, 0, sizeof(*d));
	debris_slots(kv, d, ref, units);
	for (uint32_t page = 0; page < kv->geo.page_count; page++) {
		uint32_t cls = shmkv__page_class(kv, page);

		for (uint32_t i = 0;
		     cls != SHMKV__NO_CLASS && i < kv->class_blocks[cls]; i++) {
			uint32_t unit = page * kv->geo.units_per_page + i, c;
			struct shmkv_block_shm *b = shmkv__block_at(kv, unit,
								    &c);
			/* Acquire: pairs with the block's last tag CAS. */
			uint64_t tag = shmkv__load_acquire(&b->tag);

			/* A live thread's (this test's own): not debris. */
			if (BLK_PID(tag) != 0 && shmkv__pid_alive(BLK_PID(tag)))
				continue;
			if (BLK_USED(tag) && !ref[unit])
				d->unref++;
			else if (BLK_USED(tag) && BLK_PID(tag) != 0)
				d->unconfirmed++;
		}
	}
	free(ref);
}

static void assert_debris(const struct debris *d, const struct debris *want,
			  const char *when)
{
	cr_assert(!memcmp(d, want, sizeof(*d)),
		  "%s: %u dead claims, %u dead area claims, %u pending "
		  "inserts, %u lost duplicates, %u half-recycled slots, %u "
		  "leaked blocks, %u unconfirmed blocks; expected %u, %u, %u, "
		  "%u, %u, %u, %u",
		  when, d->busy_dead, d->area_dead, d->inserting, d->collided,
		  d->dead_member, d->unref, d->unconfirmed, want->busy_dead,
		  want->area_dead, want->inserting, want->collided,
		  want->dead_member, want->unref, want->unconfirmed);
}

/*
 * What the worker's commands left visible.
 */

static void assert_key_missing(shmkv_t *kv, const char *prefix, unsigned i)
{
	char key[32];
	size_t kl = tu_fmt(key, sizeof(key), prefix, i);

	tu_assert_missing(kv, key, kl);
}

/* Keys [0, after - 1) hold the worker's values; key after - 1, the SET
 * it died in, holds its value or nothing, as the point implies. */
static void assert_worker_keys(shmkv_t *kv, const struct scenario *sc,
			       unsigned after)
{
	char key[32], val[CRASH_VALUE_CAP];

	for (unsigned i = 0; strcmp(sc->mode, "sweep") && i < after; i++) {
		size_t kl = tu_fmt(key, sizeof(key), sc->prefix, i);
		size_t vl = crash_value(val, crash_kind_of(sc->mode),
					sc->prefix, i);

		if (i + 1 < after || sc->visible)
			tu_assert_get(kv, key, kl, val, vl);
		else
			tu_assert_missing(kv, key, kl);
	}
	for (unsigned i = 0; i < sc->gone; i++)
		assert_key_missing(kv, sc->gone_prefix, i);
}

/* One key, by another process right after the crash: every command
 * answers exactly. Ends with the key holding a block (@keep) or deleted
 * (a tiny table has no room to keep them all). */
static void use_key(shmkv_t *kv, const char *key, bool keep)
{
	size_t kl = strlen(key);

	tu_assert_rc(shmkv_set(kv, key, kl, LIT(USE_BLOCK), 0, 0, NULL), 1);
	tu_assert_get(kv, key, kl, LIT(USE_BLOCK));
	/* Strings for the slot (or, while a dead thread's claim of it is
	 * being noticed, a block). */
	tu_assert_rc(shmkv_set(kv, key, kl, LIT("usable-inline"), 0, 0, NULL),
		     1);
	tu_assert_get(kv, key, kl, LIT("usable-inline"));
	tu_assert_rc(shmkv_set(kv, key, kl, LIT("usable-inline-2"), 0, 0, NULL),
		     1);
	tu_assert_get(kv, key, kl, LIT("usable-inline-2"));
	tu_assert_rc(shmkv_setnx(kv, key, kl, LIT("1")), 0);
	tu_assert_rc(shmkv_set(kv, key, kl, LIT("4242"), 0, 0, NULL), 1);
	tu_assert_get(kv, key, kl, LIT("4242"));
	tu_assert_rc(shmkv_del(kv, key, kl), 1);
	tu_assert_missing(kv, key, kl);
	tu_assert_rc(shmkv_setnx(kv, key, kl, LIT(USE_BLOCK_2)), 1);
	tu_assert_get(kv, key, kl, LIT(USE_BLOCK_2));
	if (!keep)
		tu_assert_rc(shmkv_del(kv, key, kl), 1);
}

static void use_store(shmkv_t *kv, const struct scenario *sc, unsigned after)
{
	bool keep = sc->slots >= BIG_TABLE;
	char key[32];

	for (unsigned i = 0; strcmp(sc->mode, "sweep") && i < after; i++) {
		tu_fmt(key, sizeof(key), sc->prefix, i);
		use_key(kv, key, keep);
	}
	for (unsigned i = 0; i < sc->gone; i++) {
		tu_fmt(key, sizeof(key), sc->gone_prefix, i);
		use_key(kv, key, keep);
	}
	for (unsigned i = 0; i < FRESH_KEYS; i++) {
		tu_fmt(key, sizeof(key), "fresh", i);
		use_key(kv, key, keep);
	}
}

/*
 * After recovery.
 */

static void check_problem(const char *problem, void *arg)
{
	(void)arg;
	cr_log_error("check: %s", problem);
}

/* Recover reports exactly the debris still there, and leaves none. */
static void assert_recovers(shmkv_t *kv, const struct scenario *sc,
			    unsigned after)
{
	static const struct debris none;
	struct shmkv_recover_report r;
	struct debris d, after_rec;
	uint64_t cursor = 0;

	debris_take(kv, &d);
	cr_log_info("%s, pass %u: the commands since finished %s of what "
		    "it left",
		    sc->point, after,
		    !memcmp(&d, &none, sizeof(d))	? "all"
		    : !memcmp(&d, &sc->left, sizeof(d)) ? "none"
							: "part");
	tu_assert_rc(shmkv_recover(kv, &r),
		     (int)(d.busy_dead + d.area_dead + d.inserting +
			   d.collided + d.dead_member + d.unref));
	cr_assert(r.stale_claims == d.busy_dead + d.area_dead &&
			  r.stuck_inserts == d.inserting &&
			  r.collided == d.collided &&
			  r.dead_slots == d.dead_member &&
			  r.leaked_blocks == d.unref,
		  "recover reported %llu stale claims, %llu stuck inserts, "
		  "%llu collided, %llu dead slots, %llu leaked blocks",
		  (unsigned long long)r.stale_claims,
		  (unsigned long long)r.stuck_inserts,
		  (unsigned long long)r.collided,
		  (unsigned long long)r.dead_slots,
		  (unsigned long long)r.leaked_blocks);
	debris_take(kv, &after_rec);
	assert_debris(&after_rec, &none, "after recover");
	tu_assert_rc(shmkv_check(kv, check_problem, NULL), 0);
	/* Expired keys hold their blocks until deleted: delete them. */
	do
		cr_assert_geq(shmkv_sweep(kv, &cursor, BIG_TABLE), 0);
	while (cursor != 0);
	mp_assert_census(kv, BIG_TABLE, -1, NULL, "after recovery");
	tu_assert_rc(shmkv_recover(kv, NULL), 0);
}

static void run_once(const struct scenario *sc, unsigned after)
{
	struct shmkv_config cfg = tu_config(sc->slots, 0, 0, 0);
	char name[TU_NAME_CAP];
	shmkv_t *kv = tu_create(&cfg, name);
	struct debris d, want = sc->left;

	want.unconfirmed += (after - 1) * sc->per_pass.unconfirmed;
	want.unref += (after - 1) * sc->per_pass.unref;
	if (sc->prepare)
		sc->prepare(kv, name, after);
	assert_died_at(run_worker(name, sc->point, after, sc->mode, sc->prefix,
				  0, after),
		       sc->point, after);
	debris_take(kv, &d);
	assert_debris(&d, &want, "right after the crash");
	assert_worker_keys(kv, sc, after);
	use_store(kv, sc, after);
	assert_recovers(kv, sc, after);
	shmkv_close(kv);
}

static void run_scenario(const struct scenario *sc)
{
	for (unsigned after = 1; after <= AFTER_MAX; after++)
		run_once(sc, after);
}

/*
 * Preparations.
 */

/* Stuck inserts of y0..y<after-1>, each left by a worker killed at
 * "inserting": the armed worker's SETs of the same keys meet them first
 * in the probe sequence, so they yield to them and help them. */
static void prepare_stuck(shmkv_t *kv, const char *name, unsigned after)
{
	(void)kv;
	for (unsigned i = 0; i < after; i++)
		assert_died_at(
			run_worker(name, "inserting", 1, "int", "y", i, 1),
			"inserting", 1);
}

/* A full table of tombstones: every insert must recycle one. */
static void prepare_tombstones(shmkv_t *kv, const char *name, unsigned after)
{
	char key[32];

	(void)name, (void)after;
	for (unsigned i = 0; i < TINY_TABLE; i++) {
		size_t kl = tu_fmt(key, sizeof(key), "t", i);

		tu_assert_rc(shmkv_set(kv, key, kl, LIT("7"), 0, 0, NULL), 1);
	}
	for (unsigned i = 0; i < TINY_TABLE; i++) {
		size_t kl = tu_fmt(key, sizeof(key), "t", i);

		tu_assert_rc(shmkv_del(kv, key, kl), 1);
	}
}

/* Blocks for the worker's SETs to replace. */
static void prepare_blocks(shmkv_t *kv, const char *name, unsigned after)
{
	char key[32];

	(void)name;
	for (unsigned i = 0; i < after; i++) {
		size_t kl = tu_fmt(key, sizeof(key), "b", i);

		tu_assert_rc(shmkv_set(kv, key, kl, LIT(USE_BLOCK), 0, 0, NULL),
			     1);
	}
}

/* Keys with a block value that expired before the sweep. */
static void prepare_expired(shmkv_t *kv, const char *name, unsigned after)
{
	char key[32];

	(void)name, (void)after;
	for (unsigned i = 0; i < SWEEP_KEYS; i++) {
		size_t kl = tu_fmt(key, sizeof(key), "e", i);

		tu_assert_rc(shmkv_set(kv, key, kl, LIT(USE_BLOCK),
				       SHMKV_SET_PX, 1, NULL),
			     1);
	}
	tu_sleep_ms(20);
}

#define SLOTS_SCENARIO(pt, left_)                                              \
	(struct scenario)                                                      \
	{                                                                      \
		.point = (pt), .slots = BIG_TABLE, .mode = "int",              \
		.prefix = "c", .left = left_,                                  \
	}

Test(crashpoint, slot_claimed_leaves_a_dead_claim_that_recover_gives_back)
{
	NEED_CRASH_POINTS();
	run_scenario(&SLOTS_SCENARIO("slot_claimed",
				     ((struct debris){ .busy_dead = 1 })));
}

Test(crashpoint, key_written_leaves_a_dead_claim_that_recover_gives_back)
{
	NEED_CRASH_POINTS();
	run_scenario(&SLOTS_SCENARIO("key_written",
				     ((struct debris){ .busy_dead = 1 })));
}

Test(crashpoint, inserting_leaves_an_insert_the_next_inserter_decides)
{
	NEED_CRASH_POINTS();
	run_scenario(&SLOTS_SCENARIO("inserting",
				     ((struct debris){ .inserting = 1 })));
}

Test(crashpoint, yielded_leaves_a_lost_duplicate_and_the_insert_it_met)
{
	NEED_CRASH_POINTS();
	run_scenario(&(struct scenario){
		.point = "yielded",
		.slots = BIG_TABLE,
		.mode = "int",
		.prefix = "y",
		.prepare = prepare_stuck,
		.left = { .inserting = 1, .collided = 1 } });
}

Test(crashpoint, collided_leaves_a_lost_duplicate_that_recover_gives_back)
{
	NEED_CRASH_POINTS();
	run_scenario(&(struct scenario){ .point = "collided",
					 .slots = BIG_TABLE,
					 .mode = "int",
					 .prefix = "y",
					 .prepare = prepare_stuck,
					 .left = { .collided = 1 } });
}

Test(crashpoint, value_dead_leaves_a_half_recycled_slot_others_finish)
{
	NEED_CRASH_POINTS();
	run_scenario(&(struct scenario){ .point = "value_dead",
					 .slots = TINY_TABLE,
					 .mode = "int",
					 .prefix = "n",
					 .prepare = prepare_tombstones,
					 .gone_prefix = "t",
					 .gone = TINY_TABLE,
					 .left = { .dead_member = 1 } });
}

Test(crashpoint, block_unpublished_leaks_a_block_that_recover_frees)
{
	NEED_CRASH_POINTS();
	run_scenario(&(struct scenario){ .point = "block_unpublished",
					 .slots = BIG_TABLE,
					 .mode = "block",
					 .prefix = "b",
					 .left = { .unref = 1 },
					 .per_pass = { .unconfirmed = 1 } });
}

/* A worker killed between replacing one of prepare_blocks()'s blocks and
 * freeing it: the replaced block, unnamed, and its own, naming it. */
#define REPLACE_SCENARIO(pt)                                                   \
	(struct scenario)                                                      \
	{                                                                      \
		.point = (pt), .slots = BIG_TABLE, .mode = "block",            \
		.prefix = "b", .visible = true, .prepare = prepare_blocks,     \
		.left = { .unref = 1, .unconfirmed = 1 },                      \
		.per_pass = { .unconfirmed = 1 },                              \
	}

Test(crashpoint, old_block_unfreed_leaks_the_replaced_block_until_recover)
{
	NEED_CRASH_POINTS();
	run_scenario(&REPLACE_SCENARIO("old_block_unfreed"));
}

/* Killed freeing the replaced block into its cache: the same leftovers as
 * before the free (the previous pass's cached block was taken since). */
Test(crashpoint, block_caching_leaves_the_replaced_block_until_recover)
{
	NEED_CRASH_POINTS();
	run_scenario(&REPLACE_SCENARIO("block_caching"));
}

/* Killed holding the claim of a slot's area (area.h), before or after its
 * bytes, or after publishing them: the claim names a dead thread until
 * the next writer (on its second meeting with it), insert or reclamation
 * step takes it over. Nothing else is left: the bytes are the slot's. */
#define AREA_SCENARIO(pt, visible_)                                            \
	(struct scenario)                                                      \
	{                                                                      \
		.point = (pt), .slots = BIG_TABLE, .mode = "inline",           \
		.prefix = "a", .visible = (visible_),                          \
		.left = { .area_dead = 1 },                                    \
	}

Test(crashpoint, area_claimed_leaves_a_dead_claim_others_take_over)
{
	NEED_CRASH_POINTS();
	run_scenario(&AREA_SCENARIO("area_claimed", false));
}

Test(crashpoint, area_written_leaves_a_dead_claim_and_no_value)
{
	NEED_CRASH_POINTS();
	run_scenario(&AREA_SCENARIO("area_written", false));
}

Test(crashpoint, area_published_leaves_the_value_and_a_dead_claim)
{
	NEED_CRASH_POINTS();
	run_scenario(&AREA_SCENARIO("area_published", true));
}

Test(crashpoint, swept_unfreed_leaks_the_expired_block_until_recover)
{
	NEED_CRASH_POINTS();
	run_scenario(&(struct scenario){ .point = "swept_unfreed",
					 .slots = BIG_TABLE,
					 .mode = "sweep",
					 .prefix = "e",
					 .prepare = prepare_expired,
					 .gone_prefix = "e",
					 .gone = SWEEP_KEYS,
					 .left = { .unref = 1 } });
}

/* A creator killed with the segment built but unnamed: it leaves no file
 * at all, and the name stays free for the next creator. */
Test(crashpoint, create_built_leaves_no_file_and_the_name_free)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv = NULL;
	unsigned left;
	int st;

	NEED_CRASH_POINTS();
	tu_make_name(name, NULL);
	st = run_worker(name, "create_built", 1, "create", "-", 0, 0);
	assert_died_at(st, "create_built", 1);
	left = tu_count_new_files(worker_pid);
	cr_assert_eq(left, 0,
		     "the killed creator left %u /dev/shm/.shmkv-new-"
		     "%d-* files",
		     left, (int)worker_pid);
	tu_assert_rc(shmkv_open(name, 0, &kv), -ENOENT);
	tu_assert_ok(shmkv_create(name, NULL, &kv));
	tu_assert_rc(shmkv_check(kv, NULL, NULL), 0);
	shmkv_close(kv);
}

/* A remover killed between marking the store and unlinking its name:
 * every handle is told at once, the name reads as gone, and the next
 * create under it takes it over, without any repair. */
Test(crashpoint, remove_marked_leaves_a_removed_store_a_create_takes_over)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv = NULL, *before;
	int st;

	NEED_CRASH_POINTS();
	tu_make_name(name, NULL);
	tu_assert_ok(shmkv_create(name, NULL, &before));
	tu_assert_rc(shmkv_set(before, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	st = run_worker(name, "remove_marked", 1, "remove", "-", 0, 0);
	assert_died_at(st, "remove_marked", 1);
	cr_assert_gt(tu_shm_size(name), 0, "the name went too");
	tu_assert_rc(shmkv_set(before, LIT("k"), LIT("w"), 0, 0, NULL),
		     -ESTALE);
	tu_assert_rc(shmkv_open(name, 0, &kv), -ENOENT);
	tu_assert_ok(shmkv_create(name, NULL, &kv));
	tu_assert_missing_str(kv, "k");
	tu_assert_rc(shmkv_set(kv, LIT("k"), LIT("new"), 0, 0, NULL), 1);
	shmkv_close(kv);
	tu_assert_rc(shmkv_get(before, LIT("k"), NULL), -ESTALE);
	shmkv_close(before);
}

/* The same kill where O_TMPFILE is missing leaves the named working file;
 * the next create removes it, since its creator is dead. The worker is
 * stopped at the point first: alive, its file is safe from the creates of
 * tests running beside this one, so it can be counted. */
Test(crashpoint,
     create_built_on_the_named_fallback_leaves_a_file_the_next_create_removes)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv = NULL;
	int st = 0;
	pid_t pid;

	NEED_CRASH_POINTS();
	tu_make_name(name, NULL);
	pid = spawn_worker(name, "create_built", 1, "create-named", "-", 0, 0,
			   CRASH_STOP);
	cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
	cr_assert(WIFSTOPPED(st), "crash_worker did not stop at create_built");
	cr_assert_eq(tu_count_new_files(pid), 1,
		     "the named fallback was not taken");
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	assert_died_at(st, "create_built", 1);
	tu_assert_rc(shmkv_open(name, 0, &kv), -ENOENT);
	tu_assert_ok(shmkv_create(name, NULL, &kv));
	cr_assert_eq(tu_count_new_files(worker_pid), 0,
		     "create left the dead creator's working file");
	tu_assert_rc(shmkv_check(kv, NULL, NULL), 0);
	shmkv_close(kv);
}
