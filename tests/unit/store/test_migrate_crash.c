/*
 * test_migrate_crash.c - a process killed at each crash point of the
 * table's online growth (src/migrate.c, tests/model/migration-design.md
 * §3-§7) leaves a store that another process carries on with, losing
 * nothing and keeping no memory for the dead.
 *
 * Each test makes a store of 16 slots that must grow several times, and
 * arms crash_worker to die at one point (SHMKV_CRASH_AT, on pass
 * SHMKV_CRASH_AFTER) while it SETs its keys, recording each SET it saw
 * acknowledged. After its death this process checks what the point
 * left (a growth under way, a table allocated or not yet given back),
 * then writes keys of its own until the table has grown twice more, runs
 * shmkv_maintain, and checks: every key the worker had acknowledged reads
 * back (the one it died in may or may not), no key it never wrote exists,
 * every key written here reads back, shmkv_check finds nothing (and no
 * block that is the value of no key: a copy hands its block over, so a
 * death in a growth leaks none), no growth
 * is left under way, and the file has exactly stats.memory_bytes
 * allocated (a slack of 0: nothing the dead allocated or failed to give
 * back stays).
 *
 * Crash points exist only in a build with -DSHMKV_FAULT_INJECTION (make
 * FAULT=1, into build-fault/); elsewhere every test here is skipped.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/crash_value.h"
#include "helpers/testutil.h"
#include "internal.h"

TestSuite(crashpoint_migrate, .fini = tu_teardown);

#ifdef SHMKV_FAULT_INJECTION
#define NEED_CRASH_POINTS() ((void)0)
#else
#define NEED_CRASH_POINTS()                                                    \
	cr_skip_test("no crash points in this build: make FAULT=1, then "      \
		     "build-fault/tests/unit --filter 'crashpoint_migrate/*'")
#endif

#define SLOTS	    SHMKV_SLOTS_MIN /* 16: the store grows from the start */
#define CLASSES	    7u		    /* value_max 1024: one page per class */
#define WORKER_KEYS 600u	    /* 16 -> 1024 slots: about 6 growths */
#define TEST_KEYS   8192u	    /* at most, to grow twice more */
#define RUNS	    3		    /* deaths per point: one per value kind */

/* Which pass through each point the worker dies on, run by run: the
 * first growth's, and later (larger) ones'. */
struct point {
	const char *name;
	unsigned after[RUNS];
};

/* What the store looks like just after the death. */
enum left {
	LEFT_ALLOCATED, /* T(e + 1) allocated, life still even */
	LEFT_GROWING,	/* a growth under way */
	LEFT_UNPUNCHED, /* the growth ended, the old table not given back */
	LEFT_DONE,	/* the growth ended and gave the old table back */
};

static struct shmkv_stats stats_of(shmkv_t *kv)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(kv, &st));
	return st;
}

static uint64_t life_of(shmkv_t *kv)
{
	/* Relaxed: the store is quiet. */
	return shmkv__load_relaxed(
		&((struct shmkv_header_shm *)kv->base)->life);
}

/* The bytes table T(@e) holds beyond the header's allocation unit. */
static uint64_t table_memory(shmkv_t *kv, uint32_t e)
{
	uint64_t start = shmkv__table_start(&kv->geo, e);

	start = (start + 4095) & ~(uint64_t)4095;
	return shmkv__table_end(&kv->geo, e) - start;
}

/* Starts crash_worker SETting @kind values w<i>, i in [0, WORKER_KEYS),
 * armed to die on pass @after through @point, its acknowledged SETs
 * counted in @acks. Return: its pid. */
static pid_t spawn_worker(const char *name, const char *point, unsigned after,
			  enum crash_kind kind, int acks)
{
	static const char *const modes[] = { "int", "inline", "block" };
	char path[4096], a[16], fd[16], c[16];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/tests/crash_worker", SHMKV_BUILD_DIR);
	snprintf(a, sizeof(a), "%u", after);
	snprintf(fd, sizeof(fd), "%d", acks);
	snprintf(c, sizeof(c), "%u", WORKER_KEYS);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		setenv("SHMKV_CRASH_AT", point, 1);
		setenv("SHMKV_CRASH_AFTER", a, 1);
		setenv("CRASH_WORKER_ACKS", fd, 1);
		execl(path, path, name, modes[kind], "w", "0", c, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int set_key(shmkv_t *kv, enum crash_kind kind, const char *prefix,
		   unsigned i)
{
	char key[32], val[CRASH_VALUE_CAP];
	size_t kl = tu_fmt(key, sizeof(key), prefix, i);
	size_t vl = crash_value(val, kind, prefix, i);

	return shmkv_set(kv, key, kl, val, vl, 0, 0, NULL);
}

/* Key @prefix<i>: 1 holds its value, 0 missing, -1 anything else. */
static int key_state(shmkv_t *kv, enum crash_kind kind, const char *prefix,
		     unsigned i)
{
	char key[32], want[CRASH_VALUE_CAP], got[CRASH_VALUE_CAP];
	struct shmkv_value v = { got, sizeof(got), 0 };
	size_t kl = tu_fmt(key, sizeof(key), prefix, i);
	size_t wl = crash_value(want, kind, prefix, i);
	int rc = shmkv_get(kv, key, kl, &v);

	if (rc == 0)
		return 0;
	return rc == 1 && v.len == wl && memcmp(got, want, wl) == 0 ? 1 : -1;
}

/* What the death at @point left, as the store shows it. */
static void assert_left(shmkv_t *kv, const char *name, enum left left,
			const char *point, unsigned after)
{
	struct shmkv_stats st = stats_of(kv);
	uint64_t gen = SHMKV_LIFE_GEN(life_of(kv));
	uint64_t have = (uint64_t)tu_shm_allocated(name), want;

	cr_assert_eq(st.growing_from != 0, left == LEFT_GROWING,
		     "%s, pass %u: growing from %llu slots", point, after,
		     (unsigned long long)st.growing_from);
	cr_assert_eq(gen & 1, left == LEFT_GROWING);
	cr_assert(left == LEFT_ALLOCATED || gen >= 1,
		  "%s, pass %u: no growth began", point, after);
	want = st.memory_bytes;
	/* The dead grower's new table (allocated, not published). The old
	 * one its finish did not give back is counted by the store, as a
	 * table kept. */
	if (left == LEFT_ALLOCATED)
		want += table_memory(kv, (uint32_t)(gen >> 1) + 1);
	if (left == LEFT_UNPUNCHED)
		cr_assert_geq(st.tables_kept_bytes,
			      table_memory(kv, (uint32_t)(gen >> 1) - 1),
			      "%s, pass %u: the old table is not counted",
			      point, after);
	cr_assert_eq(have, want,
		     "%s, pass %u: %llu bytes allocated, expected %llu (the "
		     "store uses %llu)",
		     point, after, (unsigned long long)have,
		     (unsigned long long)want,
		     (unsigned long long)st.memory_bytes);
}

/* This process carries on: writes t<i> until the table has grown twice
 * more (so every growth the dead one touched ends here, and one more
 * starts and ends), then maintains. Return: the keys it wrote. */
static unsigned carry_on(shmkv_t *kv, enum crash_kind kind)
{
	uint64_t growths = stats_of(kv).growths;
	unsigned n = 0;

	while (stats_of(kv).growths < growths + 2) {
		cr_assert_lt(n, TEST_KEYS, "the table stopped growing");
		tu_assert_rc(set_key(kv, kind, "t", n), 1);
		n++;
	}
	tu_assert_ok(shmkv_maintain(kv));
	return n;
}

static void assert_keys(shmkv_t *kv, enum crash_kind kind, uint32_t acked,
			unsigned written, const char *point, unsigned after)
{
	int s;

	for (unsigned i = 0; i < WORKER_KEYS; i++) {
		s = key_state(kv, kind, "w", i);
		if (i < acked)
			cr_assert_eq(s, 1,
				     "%s, pass %u: w%u (acknowledged, %u were) "
				     "%s",
				     point, after, i, acked,
				     s == 0 ? "missing" : "has a wrong value");
		else if (i == acked)
			cr_assert_geq(s, 0,
				      "%s, pass %u: w%u has a wrong value",
				      point, after, i);
		else
			cr_assert_eq(s, 0, "%s, pass %u: w%u was never written",
				     point, after, i);
	}
	for (unsigned i = 0; i < written; i++)
		cr_assert_eq(key_state(kv, kind, "t", i), 1,
			     "%s, pass %u: t%u lost", point, after, i);
}

/* Set by the tests of a death between a copy and its slot's MOVED: the
 * store checks clean at once, the growth still under way (a handed-over
 * block may still point back at the old table). */
static bool check_at_death;

/* shmkv_check's report lines: counts those of a block that is used but
 * the value of no key (left by nothing in a growth). */
static void count_orphans(const char *line, void *arg)
{
	if (strstr(line, "the value of no key") != NULL)
		++*(unsigned *)arg;
}

static void crash_and_carry_on(const char *point, unsigned after,
			       enum crash_kind kind, enum left left)
{
	struct shmkv_config cfg = tu_config(SLOTS, TU_KEY_MAX, TU_VALUE_MAX,
					    (uint64_t)CLASSES * SHMKV_PAGE_MIN);
	char name[TU_NAME_CAP];
	FILE *acks = tmpfile();
	uint32_t acked = 0;
	struct shmkv_stats st;
	shmkv_t *kv;
	unsigned written, orphans;
	int status;
	pid_t pid;

	cr_assert_not_null(acks, "tmpfile: %s", strerror(errno));
	kv = tu_create_growing(&cfg, name);
	pid = spawn_worker(name, point, after, kind, fileno(acks));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "crash_worker armed at %s, pass %u, did not die there: %s %d "
		  "(0: the point was never reached)",
		  point, after, WIFSIGNALED(status) ? "signal" : "exit status",
		  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	if (pread(fileno(acks), &acked, sizeof(acked), 0) < 0)
		cr_assert_fail("read acks: %s", strerror(errno));
	fclose(acks);
	cr_assert_lt(acked, WORKER_KEYS);
	assert_left(kv, name, left, point, after);
	if (check_at_death)
		cr_assert_eq(shmkv_check(kv, NULL, NULL), 0,
			     "%s, pass %u: problems mid-growth", point, after);
	written = carry_on(kv, kind);
	assert_keys(kv, kind, acked, written, point, after);
	orphans = 0;
	tu_assert_rc(shmkv_check(kv, count_orphans, &orphans), 0);
	cr_assert_eq(orphans, 0,
		     "%s, pass %u: %u blocks are the value of no key", point,
		     after, orphans);
	st = stats_of(kv);
	cr_assert_eq(st.growing_from, 0, "%s, pass %u: the growth never ended",
		     point, after);
	cr_assert_eq((uint64_t)tu_shm_allocated(name), st.memory_bytes,
		     "%s, pass %u: %llu bytes allocated, the store uses %llu",
		     point, after, (unsigned long long)tu_shm_allocated(name),
		     (unsigned long long)st.memory_bytes);
	shmkv_close(kv);
	tu_assert_ok(shmkv_unlink(name));
	cr_log_info("%s, pass %u: %u acknowledged, %u written after", point,
		    after, acked, written);
}

/* Every run of @p: the value kinds in turn (integers re-tagged, strings
 * staged again in the new slot, blocks handed to the new slot). */
static void run_point(const struct point *p, enum left left)
{
	for (int r = 0; r < RUNS; r++)
		crash_and_carry_on(p->name, p->after[r], (enum crash_kind)r,
				   left);
}

/* §3: a grower dies with T(e + 1) allocated, life not yet flipped. The
 * next grower allocates the same table again (nothing more) and flips. */
Test(crashpoint_migrate, a_grower_killed_after_allocating_the_new_table)
{
	static const struct point p = { "grow_fallocated", { 1, 3, 5 } };

	NEED_CRASH_POINTS();
	run_point(&p, LEFT_ALLOCATED);
}

/* §3: a growth flipped on and nothing of it done. */
Test(crashpoint_migrate, a_grower_killed_after_the_flip)
{
	static const struct point p = { "grow_flipped", { 1, 3, 5 } };

	NEED_CRASH_POINTS();
	run_point(&p, LEFT_GROWING);
}

/* §4: an old slot with no key sealed MOVED. */
Test(crashpoint_migrate, a_mover_killed_after_sealing_an_empty_slot)
{
	static const struct point p = { "sealed", { 1, 20, 100 } };

	NEED_CRASH_POINTS();
	run_point(&p, LEFT_GROWING);
}

/* §4: a key's value word frozen, not yet copied. */
Test(crashpoint_migrate, a_mover_killed_after_freezing_a_value)
{
	static const struct point p = { "frozen", { 1, 30, 300 } };

	NEED_CRASH_POINTS();
	run_point(&p, LEFT_GROWING);
}

/* §4: the copy landed in the new table; a block's back-pointer still
 * names the old slot, which is not yet MOVED. The next mover finds the
 * copy there and moves the back-pointer. */
Test(crashpoint_migrate, a_mover_killed_after_copying_a_value)
{
	static const struct point p = { "copied", { 1, 30, 300 } };

	NEED_CRASH_POINTS();
	check_at_death = true;
	run_point(&p, LEFT_GROWING);
}

/* §4: MOVED, its waiters not woken (a block is not freed: its copy names
 * it). */
Test(crashpoint_migrate, a_mover_killed_after_sealing_a_copied_slot)
{
	static const struct point p = { "moved", { 1, 30, 300 } };

	NEED_CRASH_POINTS();
	run_point(&p, LEFT_GROWING);
}

/* §4: a block's back-pointer moved to the new slot, the old slot not yet
 * MOVED: the next mover finds the copy, its back-pointer's CAS fails (it
 * moved already), and seals the slot. Blocks only: no other value has a
 * back-pointer. */
Test(crashpoint_migrate, a_mover_killed_after_moving_a_blocks_back_pointer)
{
	static const unsigned after[] = { 1, 30, 300 };

	NEED_CRASH_POINTS();
	check_at_death = true;
	for (int r = 0; r < RUNS; r++)
		crash_and_carry_on("back_moved", after[r], CRASH_BLOCK,
				   LEFT_GROWING);
}

/* §6: the frontier moved past a chunk. */
Test(crashpoint_migrate, a_sweeper_killed_after_moving_the_frontier)
{
	static const struct point p = { "front", { 1, 4, 12 } };

	NEED_CRASH_POINTS();
	run_point(&p, LEFT_GROWING);
}

/* §6: life flipped even, the old table not given back: the next
 * growth's finish gives it back with its own. */
Test(crashpoint_migrate, a_finisher_killed_before_giving_back_the_old_table)
{
	static const struct point p = { "finished", { 1, 3, 5 } };

	NEED_CRASH_POINTS();
	run_point(&p, LEFT_UNPUNCHED);
}

/* §7: all done; the death leaves nothing. */
Test(crashpoint_migrate, a_finisher_killed_after_giving_back_the_old_table)
{
	static const struct point p = { "punched", { 1, 3, 5 } };

	NEED_CRASH_POINTS();
	run_point(&p, LEFT_DONE);
}
