/*
 * test_reclaim.c - each leftover a dead process can leave is reclaimed by
 * ordinary work, with nobody running shmkv_recover: lock users coming and
 * going (each process's first lock cell through a handle, and each
 * thread's first value block in a store, runs a reclamation step,
 * src/owned.c) bring the store back to what the live keys need, within
 * the bound the README gives (one turn of the cursor; published blocks
 * nothing names: SHMKV_REAP_ORPHAN_TURNS turns).
 *
 * Suite "reclaim" makes each leftover by hand, exactly as the half-done
 * step leaves it, beside a process that is really dead. Suite
 * "crashpoint_reap" (a build with crash points, make FAULT=1) has a real
 * process die at that step: killed between the two CASes of a free, by a
 * pause point; between a replace and its free, and after its insert went
 * INSERTING, by crash_worker's crash points.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/crash_value.h"
#include "helpers/mp_census.h"
#include "helpers/slot_of.h"
#include "helpers/testutil.h"
#include "atomic.h"
#include "fault.h"
#include "internal.h"
#include "owned.h"
#include "shmkv_lock.h"

TestSuite(reclaim, .init = tu_setup, .fini = tu_teardown);
TestSuite(crashpoint_reap, .init = tu_setup, .fini = tu_teardown);

#ifdef SHMKV_FAULT_INJECTION
#define NEED_CRASH_POINTS() ((void)0)
#else
#define NEED_CRASH_POINTS()                                                    \
	cr_skip_test("no crash points in this build: make FAULT=1, then "      \
		     "build-fault/tests/unit --filter 'crashpoint_reap/*'")
#endif

#define LEASE	  60000
#define BLOCK_VAL TU_BLOCK_TEXT

static int reap(pid_t pid)
{
	int st;

	cr_assert_eq(waitpid(pid, &st, 0), pid, "waitpid %d", (int)pid);
	return st;
}

static void count_leftover(const char *line, void *arg)
{
	*(int *)arg += strncmp(line, "leftover: ", 10) == 0;
}

/* What shmkv_check describes as left by dead processes; asserts that it
 * finds no problem. */
static int leftovers(void)
{
	int n = 0;

	tu_assert_rc(shmkv_check(tu_kv, count_leftover, &n), 0);
	return n;
}

/* Reclamation steps that take the cursor once around value memory. */
static int steps_per_turn(void)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(tu_kv, &st));
	return (int)((uint64_t)st.pages * (st.page_size / SHMKV_BLOCK_MIN) /
			     SHMKV_REAP_STEP_UNITS +
		     1);
}

/* One lock user comes and goes: a new handle, a grant, a release, close
 * (its first lock cell runs one reclamation step). */
static void lock_user(void)
{
	shmkv_t *kv = tu_open(tu_name, 0);
	struct shmkv_lock lk;

	tu_assert_ok(shmkv_lock_init(kv, &lk, "user"));
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LEASE), SHMKV_LOCK_ACQUIRED);
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	shmkv_close(kv);
}

/* Lock users come and go until check describes no leftover, at most
 * @most of them. Return: how many it took. */
static int settle(int most)
{
	for (int n = 0; n <= most; n++) {
		if (leftovers() == 0)
			return n;
		lock_user();
	}
	cr_assert_fail("leftovers remain after %d lock users came and went",
		       most);
	return -1;
}

static uint64_t blocks_used(void)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(tu_kv, &st));
	return mp_blocks_used(&st);
}

/* Runs tests/@prog with @args (NULL-terminated, at most 6) to its end,
 * armed to die at crash point @crash_at if not NULL. Return: its pid
 * (reaped); *@st its wait status. */
static pid_t run_program(const char *prog, const char *const *args,
			 const char *crash_at, int *st)
{
	char path[4096];
	char *argv[8] = { path };
	pid_t pid;

	snprintf(path, sizeof(path), "%s/tests/%s", SHMKV_BUILD_DIR, prog);
	for (int i = 0; i < 6 && args[i] != NULL; i++)
		argv[i + 1] = (char *)args[i];
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork");
	if (pid == 0) {
		if (crash_at != NULL) {
			setenv("SHMKV_CRASH_AT", crash_at, 1);
			setenv("SHMKV_CRASH_AFTER", "1", 1);
		}
		execv(path, argv);
		_exit(127);
	}
	*st = reap(pid);
	return pid;
}

/* A process that takes and releases lock "L" and leaves without closing
 * (lifecycle_worker's "once"): its lock cell, owned and named by nothing,
 * is what it leaves. Return: its pid. */
static pid_t cell_left_by_dead_process(void)
{
	const char *args[] = { "once", tu_name, "L", "_exit", NULL };
	int st;
	pid_t pid = run_program("lifecycle_worker", args, NULL, &st);

	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "the cell's owner did not exit 0");
	return pid;
}

/* The unit of the one used block tagged with @pid. */
static uint32_t unit_of(uint32_t pid)
{
	uint32_t found = UINT32_MAX, n = 0;

	for (uint32_t p = 0; p < tu_kv->geo.page_count; p++) {
		uint32_t c = shmkv__page_class(tu_kv, p);

		for (uint32_t i = 0;
		     c != SHMKV__NO_CLASS && i < tu_kv->class_blocks[c]; i++) {
			uint32_t unit = p * tu_kv->geo.units_per_page + i, cls;
			uint64_t tag = shmkv__block_at(tu_kv, unit, &cls)->tag;

			if (BLK_USED(tag) && BLK_PID(tag) == pid)
				found = unit, n++;
		}
	}
	cr_assert_eq(n, 1, "%u blocks of process %u", n, pid);
	return found;
}

static uint64_t *tag_of(uint32_t unit)
{
	uint32_t cls;

	return &shmkv__block_at(tu_kv, unit, &cls)->tag;
}

/* The next step starts at @unit: what every step would reach in turn. */
static void next_step_at(uint32_t unit)
{
	((struct shmkv_header_shm *)tu_kv->base)->reap_unit = unit;
}

/*
 * Made by hand.
 */

Test(reclaim, a_dead_owners_cell_whose_freer_died_half_way_is_reclaimed)
{
	uint32_t unit = unit_of((uint32_t)cell_left_by_dead_process());
	uint64_t *tag = tag_of(unit);

	/* A freer (a taker, a reclaimer) that died after its first CAS. */
	*tag |= BLK_DOOM;
	cr_assert_eq(leftovers(), 1);
	next_step_at(unit);
	cr_assert_eq(settle(1), 1, "one step over it frees it");
	cr_assert_eq(BLK_USED(*tag), 0);
	cr_assert_eq(blocks_used(), 0);
}

/* "k" set to a value in a block: its slot in *@s, the block returned. */
static struct shmkv_block_shm *published_block(struct shmkv_slot_shm **s)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT(BLOCK_VAL), 0, 0, NULL), 1);
	*s = tu_slot_of(tu_kv, "k");
	return shmkv__block(tu_kv, (*s)->value);
}

Test(reclaim, a_published_block_nothing_names_is_reclaimed_by_ordinary_work)
{
	struct shmkv_slot_shm *s;
	struct shmkv_block_shm *b = published_block(&s);

	/* A replace's CAS, by a thread that died before its free, of a
	 * block another thread published: the replacer settled it first. */
	b->tag = BLK_TAG(BLK_GEN(b->tag), 0, 1);
	s->value = VAL_INT_WORD(SLOT_VERSION(s->state), 7);
	cr_assert_eq(leftovers(), 1);
	settle(steps_per_turn() * (int)(SHMKV_REAP_ORPHAN_TURNS + 1));
	cr_assert_eq(blocks_used(), 0);
}

static uint32_t dead_pid(void);

/* The same replace of a block the dead replacer had published itself: the
 * block still names it, so a single turn frees it. */
Test(reclaim, a_dead_replacers_own_block_is_reclaimed_within_a_turn)
{
	struct shmkv_slot_shm *s;
	struct shmkv_block_shm *b = published_block(&s);

	cr_assert_eq(BLK_PID(b->tag), shmkv__self_tid(),
		     "a published block keeps its publisher's tid");
	b->tag = BLK_TAG(BLK_GEN(b->tag), dead_pid(), 1);
	s->value = VAL_INT_WORD(SLOT_VERSION(s->state), 7);
	cr_assert_eq(leftovers(), 1);
	settle(steps_per_turn());
	cr_assert_eq(blocks_used(), 0);
}

/* A pid that is certainly dead: a child we made and reaped. */
static uint32_t dead_pid(void)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	reap(pid);
	return (uint32_t)pid;
}

Test(reclaim, a_pending_insert_of_a_dead_process_is_decided_and_given_back)
{
	struct shmkv_value v = tu_value_for(tu_kv);
	struct shmkv_slot_shm *s;
	uint32_t ver;

	tu_assert_rc(shmkv_set(tu_kv, LIT("p"), LIT("1"), 0, 0, NULL), 1);
	s = tu_slot_of(tu_kv, "p");
	ver = SLOT_VERSION(s->state);
	/* What publish() leaves when its process dies after the CAS to
	 * INSERTING: the key, a FRESH value naming it. */
	s->value = VAL_FRESH_WORD(ver, dead_pid());
	s->state = SLOT_WORD(SLOT_INSERTING, 0, ver);
	cr_assert_eq(leftovers(), 1);
	settle(steps_per_turn());
	cr_assert_eq(SLOT_STATE(s->state), SLOT_EMPTY);
	tu_assert_rc(shmkv_get(tu_kv, LIT("p"), &v), 0);
}

Test(reclaim, a_pending_insert_of_a_live_process_is_left_to_it)
{
	struct shmkv_slot_shm *s;
	uint32_t ver;

	tu_assert_rc(shmkv_set(tu_kv, LIT("p"), LIT("1"), 0, 0, NULL), 1);
	s = tu_slot_of(tu_kv, "p");
	ver = SLOT_VERSION(s->state);
	s->value = VAL_FRESH_WORD(ver, (uint32_t)getpid());
	s->state = SLOT_WORD(SLOT_INSERTING, 0, ver);
	for (int n = 0; n < steps_per_turn(); n++)
		lock_user();
	cr_assert_eq(s->state, SLOT_WORD(SLOT_INSERTING, 0, ver));
}

/*
 * Real deaths (make FAULT=1).
 */

#ifdef SHMKV_FAULT_INJECTION
static void die_when_doomed(const char *name)
{
	if (strcmp(name, "owned_doomed") == 0)
		raise(SIGKILL);
}
#endif

Test(crashpoint_reap,
     a_reclaimer_killed_between_doom_and_free_leaves_work_for_the_next)
{
	NEED_CRASH_POINTS();
	uint32_t unit = unit_of((uint32_t)cell_left_by_dead_process());
	struct shmkv_lock lk;
	shmkv_t *kv;
	pid_t pid;
	int st;

	next_step_at(unit);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork");
	if (pid == 0) {
#ifdef SHMKV_FAULT_INJECTION
		shmkv__pause_hook = die_when_doomed;
#endif
		/* Its first cell runs the step that frees the dead cell. */
		if (shmkv_open(tu_name, 0, &kv) == 0 &&
		    shmkv_lock_init(kv, &lk, "M") == 0)
			shmkv_lock_try_acquire(&lk, LEASE);
		_exit(0);
	}
	st = reap(pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		  "the reclaimer was not killed half way");
	cr_assert_eq(*tag_of(unit) & (BLK_DOOM | 1u), BLK_DOOM | 1u);
	cr_assert_eq(leftovers(), 1);
	next_step_at(unit);
	cr_assert_eq(settle(1), 1, "one step over it frees it");
	cr_assert_eq(blocks_used(), 0);
}

/* crash_worker SETs PREFIX0 and dies at crash point @point. */
static void crash_worker_dies_at(const char *point, const char *mode,
				 const char *prefix)
{
	const char *args[] = { tu_name, mode, prefix, "0", "1", NULL };
	int st;

	run_program("crash_worker", args, point, &st);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		  "crash_worker did not die at %s", point);
}

Test(crashpoint_reap,
     a_block_a_killed_writer_replaced_is_reclaimed_by_ordinary_work)
{
	NEED_CRASH_POINTS();
	char val[CRASH_VALUE_CAP];
	struct shmkv_value v = { val, sizeof(val), 0 };

	tu_assert_rc(shmkv_set(tu_kv, LIT("o0"), LIT(BLOCK_VAL), 0, 0, NULL),
		     1);
	crash_worker_dies_at("old_block_unfreed", "block", "o");
	cr_assert_eq(leftovers(), 1, "the old block, published by nothing");
	settle(steps_per_turn() * (int)(SHMKV_REAP_ORPHAN_TURNS + 1));
	tu_assert_rc(shmkv_get(tu_kv, LIT("o0"), &v), 1);
	cr_assert_eq(blocks_used(), 1, "the new value's block only");
}

Test(crashpoint_reap,
     a_pending_insert_of_a_killed_process_is_decided_by_ordinary_work)
{
	NEED_CRASH_POINTS();
	struct shmkv_value v = tu_value_for(tu_kv);
	struct shmkv_stats st;

	crash_worker_dies_at("inserting", "int", "i");
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.pending, 1, "the insert left INSERTING");
	cr_assert_eq(leftovers(), 1);
	settle(steps_per_turn());
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	/* Only the lock users' key is left. */
	cr_assert_eq(st.pending + st.tombstones, 0);
	cr_assert_eq(st.live_keys, 1);
	tu_assert_rc(shmkv_get(tu_kv, LIT("i0"), &v), 0);
}

/*
 * Per-thread caches of free blocks (block.c): a replaced block goes into
 * its replacer's hands, tagged CACHED with its tid, and comes back out
 * without a CAS; nobody else touches it while that thread lives; once the
 * thread is gone, it is a leftover that a reclamation step frees.
 */

/* The block of key @key's value. */
static uint64_t value_of(const char *key)
{
	return shmkv__load_acquire(&tu_slot_of(tu_kv, key)->value);
}

static uint64_t block_tag(uint64_t ref)
{
	return shmkv__load_acquire(&shmkv__block(tu_kv, ref)->tag);
}

/* SETs @key to a block value twice: the first block is then in this
 * thread's cache. Return: that block, at its cached generation. */
static uint64_t cache_one(const char *key)
{
	uint64_t first;

	tu_assert_rc(
		shmkv_set(tu_kv, key, strlen(key), LIT(BLOCK_VAL), 0, 0, NULL),
		1);
	first = value_of(key);
	tu_assert_rc(
		shmkv_set(tu_kv, key, strlen(key), LIT(BLOCK_VAL), 0, 0, NULL),
		1);
	cr_assert_neq(value_of(key), first);
	return VAL_BLOCK_WORD(VAL_BLOCK_UNIT(first), VAL_BLOCK_GEN(first) + 1);
}

Test(reclaim, a_replaced_block_waits_in_its_replacers_cache_for_the_next_set)
{
	uint64_t cached = cache_one("k"), second = value_of("k");

	cr_assert_eq(block_tag(cached),
		     BLK_TAG(VAL_BLOCK_GEN(cached), shmkv__self_tid(), 1) |
			     BLK_CACHED);
	cr_assert_eq(blocks_used(), 1, "a cached block counts as free");
	cr_assert_eq(leftovers(), 0, "a live thread's cache is no leftover");
	/* A full pass leaves it alone: its holder lives. */
	tu_assert_rc(shmkv_recover(tu_kv, NULL), 0);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT(BLOCK_VAL), 0, 0, NULL), 1);
	cr_assert_eq(value_of("k"), cached, "the cached block, taken back");
	cr_assert_eq(block_tag(cached),
		     BLK_TAG(VAL_BLOCK_GEN(cached), shmkv__self_tid(), 1),
		     "published, it keeps its publisher's tid");
	cr_assert_eq(BLK_GEN(block_tag(second)), VAL_BLOCK_GEN(second) + 1,
		     "and the block it replaced is cached in turn");
}

static void *thread_caches(void *arg)
{
	*(uint64_t *)arg = cache_one("t");
	return NULL;
}

Test(reclaim, a_gone_threads_cache_is_reclaimed_by_a_step)
{
	pthread_t th;
	uint64_t cached;

	cr_assert_eq(pthread_create(&th, NULL, thread_caches, &cached), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert(block_tag(cached) & BLK_CACHED);
	cr_assert_eq(blocks_used(), 1);
	cr_assert_eq(leftovers(), 1, "the exited thread's cached block");
	/* Within a turn of the cursor: a step over it frees it. */
	cr_assert_geq(settle(steps_per_turn()), 1);
	cr_assert_eq(BLK_USED(block_tag(cached)), 0);
	/* And the value that thread published lives on, settled. */
	tu_assert_rc(shmkv_recover(tu_kv, NULL), 0);
	tu_assert_get_str(tu_kv, "t", BLOCK_VAL);
	cr_assert_eq(BLK_PID(block_tag(value_of("t"))), 0);
}

Test(reclaim, a_fork_child_never_takes_its_parents_cached_block)
{
	uint64_t cached = cache_one("k");
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* Its copy of the cache names the parent's thread. */
		int ok = shmkv_set(tu_kv, LIT("c"), LIT(BLOCK_VAL), 0, 0,
				   NULL) == 1 &&
			 value_of("c") != cached;
		_exit(ok ? 0 : 1);
	}
	cr_assert_eq(reap(pid), 0);
	cr_assert_eq(block_tag(cached),
		     BLK_TAG(VAL_BLOCK_GEN(cached), shmkv__self_tid(), 1) |
			     BLK_CACHED);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT(BLOCK_VAL), 0, 0, NULL), 1);
	cr_assert_eq(value_of("k"), cached);
}

/* A thread that works on another store in between keeps its cache here. */
Test(reclaim, a_threads_cache_outlives_its_visits_to_other_stores)
{
	uint64_t cached = cache_one("k");
	char other_name[TU_NAME_CAP];
	shmkv_t *other = tu_create(NULL, other_name);

	tu_assert_rc(shmkv_set(other, LIT("x"), LIT(BLOCK_VAL), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_set(other, LIT("x"), LIT(BLOCK_VAL), 0, 0, NULL), 1);
	shmkv_close(other);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT(BLOCK_VAL), 0, 0, NULL), 1);
	cr_assert_eq(value_of("k"), cached);
}

/*
 * Who runs a step: whoever starts owning blocks, so that every thread or
 * process that can leave some has paid for reclaiming a step's worth.
 */

static void *set_block(void *key)
{
	return (void *)(intptr_t)shmkv_set(tu_kv, key, strlen(key),
					   LIT(BLOCK_VAL), 0, 0, NULL);
}

static void *del_key(void *key)
{
	return (void *)(intptr_t)shmkv_del(tu_kv, key, strlen(key));
}

/* Runs @fn(@key) in a new thread (one with no block cache) to its end.
 * Return: what it returned. */
static intptr_t in_new_thread(void *(*fn)(void *), const char *key)
{
	pthread_t th;
	void *ret;

	cr_assert_eq(pthread_create(&th, NULL, fn, (void *)key), 0);
	cr_assert_eq(pthread_join(th, &ret), 0);
	return (intptr_t)ret;
}

Test(reclaim, a_thread_that_starts_caching_blocks_runs_a_step)
{
	pthread_t th;
	uint64_t cached;

	cr_assert_eq(pthread_create(&th, NULL, thread_caches, &cached), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(leftovers(), 1, "the exited thread's cached block");
	next_step_at(VAL_BLOCK_UNIT(cached));
	/* No lock, no close: one SET of a block value, in a thread with no
	 * cache of this store yet. */
	cr_assert_eq(in_new_thread(set_block, "u"), 1);
	cr_assert_eq(BLK_USED(block_tag(cached)), 0,
		     "the step a new cache runs freed the gone thread's block");
	cr_assert_eq(leftovers(), 0, "the SETting thread published its block");
}

Test(reclaim, a_thread_that_only_frees_leaves_no_cache)
{
	uint64_t ref;

	tu_assert_rc(shmkv_set(tu_kv, LIT("d"), LIT(BLOCK_VAL), 0, 0, NULL), 1);
	ref = value_of("d");
	cr_assert_eq(in_new_thread(del_key, "d"), 1);
	cr_assert_eq(BLK_USED(block_tag(ref)), 0,
		     "freed to the pool, not cached by a thread that never "
		     "allocated (and so never ran a step)");
	cr_assert_eq(leftovers(), 0);
}

Test(reclaim, a_fork_child_that_starts_owning_through_its_parents_handle_steps)
{
	struct shmkv_lock lk;
	uint32_t unit, dead;
	uint64_t tag;
	pid_t pid;

	/* The parent's handle has run its step: its first lock cell. */
	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "parent"));
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LEASE), SHMKV_LOCK_ACQUIRED);
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	dead = (uint32_t)cell_left_by_dead_process();
	unit = unit_of(dead);
	next_step_at(unit);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* The inherited handle: its first lock cell in this process. */
		int ok = shmkv_lock_init(tu_kv, &lk, "child") == 0 &&
			 shmkv_lock_try_acquire(&lk, LEASE) ==
				 SHMKV_LOCK_ACQUIRED &&
			 shmkv_lock_release(&lk) == 0;
		_exit(ok ? 0 : 1);
	}
	cr_assert_eq(reap(pid), 0);
	tag = *tag_of(unit);
	/* Freed, and perhaps the child's own cell since. */
	cr_assert(!BLK_USED(tag) || BLK_PID(tag) != dead,
		  "the child's step freed the dead process's cell");
}
