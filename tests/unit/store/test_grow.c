/*
 * test_grow.c - value memory that grows online (src/grow.c).
 *
 * A store made without max_memory reserves what /dev/shm allows and
 * allocates pages as values need them; one made with max_memory stops
 * there with -ENOMEM. Every test also checks the memory invariant: the
 * file has exactly the store's footprint allocated (nothing touched the
 * reserved hole), and shmkv_check finds nothing.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/crash_value.h"
#include "helpers/testutil.h"
#include "internal.h"

TestSuite(grow, .fini = tu_teardown);
TestSuite(crashpoint_grow, .fini = tu_teardown);

#define SLOTS	  4096u
#define BIG_SLOTS 8192u
#define CLASSES	  7u   /* value_max 1024: 32 ... 1024, and 1088 */
#define VALUE_LEN 200u /* a block of the 256-byte class */
#define PER_PAGE  256u /* of those in a 64 KiB page */
#define WRITERS	  4
#define EACH	  600u

/* The smallest store of SLOTS slots: one page per class. */
static struct shmkv_config small_config(void)
{
	struct shmkv_config cfg;

	shmkv_config_init(&cfg);
	cfg.slots = SLOTS;
	cfg.value_memory = (uint64_t)CLASSES * SHMKV_PAGE_MIN;
	return cfg;
}

static size_t value_of(char *buf, const char *prefix, unsigned i)
{
	int n = snprintf(buf, VALUE_LEN + 1, "%s%u:", prefix, i);

	memset(buf + n, 'a' + (char)(i % 26), VALUE_LEN - (size_t)n);
	return VALUE_LEN;
}

static int set_one(shmkv_t *kv, const char *prefix, unsigned i)
{
	char key[32], val[VALUE_LEN + 1];
	size_t kl = (size_t)snprintf(key, sizeof(key), "%s%u", prefix, i);

	return shmkv_set(kv, key, kl, val, value_of(val, prefix, i), 0, 0,
			 NULL);
}

/* Does key @prefix<i> hold its value? */
static bool holds(shmkv_t *kv, const char *prefix, unsigned i)
{
	char key[32], want[VALUE_LEN + 1], got[VALUE_LEN + 1];
	struct shmkv_value v = { got, sizeof(got), 0 };
	size_t kl = (size_t)snprintf(key, sizeof(key), "%s%u", prefix, i);

	return shmkv_get(kv, key, kl, &v) == 1 && v.len == VALUE_LEN &&
	       memcmp(got, want, value_of(want, prefix, i)) == 0;
}

static void set_all(shmkv_t *kv, const char *prefix, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		int rc = set_one(kv, prefix, i);

		cr_assert_eq(rc, 1, "SET %s%u: %s", prefix, i, tu_rcname(rc));
	}
}

static void assert_all(shmkv_t *kv, const char *prefix, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		cr_assert(holds(kv, prefix, i), "%s%u lost", prefix, i);
}

static struct shmkv_stats stats_of(shmkv_t *kv)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(kv, &st));
	return st;
}

/* The file holds exactly the footprint, and the store checks clean. */
static void assert_sound(shmkv_t *kv, const char *name)
{
	struct shmkv_stats st = stats_of(kv);

	uint64_t life = ((struct shmkv_header_shm *)kv->base)->life;

	cr_assert_eq(st.memory_bytes,
		     shmkv__footprint(&kv->geo, st.pages) +
			     shmkv__tables_extra(&kv->geo, life));
	cr_assert_eq((uint64_t)tu_shm_allocated(name), st.memory_bytes,
		     "file has %llu bytes allocated, the store uses %llu",
		     (unsigned long long)tu_shm_allocated(name),
		     (unsigned long long)st.memory_bytes);
	tu_assert_rc(shmkv_check(kv, NULL, NULL), 0);
}

static int reap(pid_t pid)
{
	int st;

	cr_assert_eq(waitpid(pid, &st, 0), pid, "waitpid %d", (int)pid);
	return st;
}

Test(grow, a_store_without_a_limit_grows_past_its_initial_pages)
{
	struct shmkv_config cfg = small_config();
	unsigned n = 3000;
	struct shmkv_stats st;

	tu_kv = tu_create_growing(&cfg, tu_name);
	st = stats_of(tu_kv);
	cr_assert_eq(st.pages, CLASSES);
	cr_assert_geq(st.max_memory, st.memory_bytes);
	cr_assert_eq(tu_get_config(tu_kv).max_memory, st.max_memory);
	assert_sound(tu_kv, tu_name);
	set_all(tu_kv, "k", n);
	st = stats_of(tu_kv);
	cr_assert_gt(st.pages, CLASSES, "%u pages", st.pages);
	/* Growth by a quarter at a time: the pages the values need, one for
	 * each other class, and at most a quarter (and a page) more. */
	cr_assert_geq(st.cls[3].pages, n / PER_PAGE);
	cr_assert_leq(st.pages, (n / PER_PAGE + CLASSES) * 5 / 4 + 1);
	cr_assert_eq(st.pages_free, st.pages - st.cls[3].pages);
	assert_all(tu_kv, "k", n);
	assert_sound(tu_kv, tu_name);
}

#define LIMIT_PAGES (CLASSES + 9)

Test(grow, a_limit_stops_growth_with_enomem_and_the_failed_set_changes_nothing)
{
	struct shmkv_config cfg = small_config();
	struct shmkv_stats st;
	char key[32];
	unsigned i;
	int rc = 1;

	cfg.max_memory = tu_footprint(&cfg, LIMIT_PAGES);
	tu_kv = tu_create_growing(&cfg, tu_name);
	for (i = 0; rc == 1 && i < SLOTS; i++)
		rc = set_one(tu_kv, "k", i);
	cr_assert_eq(rc, -ENOMEM, "SET k%u: %s", i - 1, tu_rcname(rc));
	st = stats_of(tu_kv);
	cr_assert_gt(st.pages, CLASSES, "it grew");
	cr_assert_leq(st.pages, LIMIT_PAGES);
	cr_assert_eq(st.pages_max, LIMIT_PAGES);
	cr_assert_leq(st.memory_bytes, cfg.max_memory);
	cr_assert_eq(st.max_memory, cfg.max_memory);
	snprintf(key, sizeof(key), "k%u", i - 1);
	tu_assert_rc(shmkv_exists(tu_kv, key, strlen(key)), 0);
	/* An existing key keeps its value when a bigger one finds no room. */
	tu_assert_rc(shmkv_set(tu_kv, LIT("k0"), TU_BLOCK_TEXT,
			       sizeof(TU_BLOCK_TEXT) - 1, 0, 0, NULL),
		     -ENOMEM);
	cr_assert(holds(tu_kv, "k", 0));
	/* Values of a class with room still land: short ones in the slot. */
	tu_assert_rc(shmkv_set(tu_kv, LIT("short"), LIT("v"), 0, 0, NULL), 1);
	assert_sound(tu_kv, tu_name);
}

Test(grow, a_limit_below_the_initial_size_is_refused_and_equal_is_fixed)
{
	struct shmkv_config cfg = small_config();
	shmkv_t *kv = NULL;
	unsigned i;
	int rc = 1;

	cfg.max_memory = tu_initial_footprint(&cfg) - 1;
	tu_make_name(tu_name, NULL);
	tu_assert_rc(shmkv_create(tu_name, &cfg, &kv), -EINVAL);
	cr_assert_null(kv);
	tu_assert_rc(shmkv_open(tu_name, 0, &kv), -ENOENT);
	cfg.max_memory++;
	tu_kv = tu_create_growing(&cfg, tu_name);
	for (i = 0; rc == 1 && i < SLOTS; i++)
		rc = set_one(tu_kv, "k", i);
	tu_assert_rc(rc, -ENOMEM);
	cr_assert_eq(stats_of(tu_kv).pages, CLASSES, "the initial pages only");
	cr_assert_eq((uint64_t)tu_shm_allocated(tu_name), cfg.max_memory);
	assert_sound(tu_kv, tu_name);
}

/* The limit changes on a live store, for every process that uses it. */
Test(grow, set_max_memory_changes_the_limit_for_every_process)
{
	struct shmkv_config cfg = small_config();
	uint64_t initial = tu_initial_footprint(&cfg);
	shmkv_t *other, *ro;
	unsigned i;
	int rc = 1, st;
	pid_t pid;

	cfg.max_memory = tu_footprint(&cfg, LIMIT_PAGES);
	tu_kv = tu_create_growing(&cfg, tu_name);
	other = tu_open(tu_name, 0);
	/* Lowered to the initial size by another handle: no growth. */
	tu_assert_ok(shmkv_set_max_memory(other, initial));
	cr_assert_eq(tu_get_config(tu_kv).max_memory, initial);
	for (i = 0; rc == 1 && i < SLOTS; i++)
		rc = set_one(tu_kv, "k", i);
	tu_assert_rc(rc, -ENOMEM);
	cr_assert_eq(stats_of(tu_kv).pages, CLASSES);
	/* Raised by another process: the next SET grows the store. */
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		shmkv_t *kv;

		_exit(shmkv_open(tu_name, 0, &kv) == 0 &&
				      shmkv_set_max_memory(kv, 0) == 0
			      ? 0
			      : 1);
	}
	st = reap(pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %#x", st);
	cr_assert_eq(tu_get_config(tu_kv).max_memory, cfg.max_memory,
		     "0 is the reservation: what the store was made with");
	tu_assert_rc(set_one(tu_kv, "k", i - 1), 1);
	for (unsigned j = 0; stats_of(tu_kv).pages == CLASSES; j++) {
		cr_assert_lt(j, SLOTS / 2, "it never grew");
		tu_assert_rc(set_one(tu_kv, "m", j), 1);
	}
	/* Out of range, or through a handle that may not: nothing changes. */
	tu_assert_rc(shmkv_set_max_memory(tu_kv, cfg.max_memory + 1), -EINVAL);
	tu_assert_rc(shmkv_set_max_memory(tu_kv, initial - 1), -EINVAL);
	tu_assert_rc(shmkv_set_max_memory(NULL, 0), -EINVAL);
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	tu_assert_rc(shmkv_set_max_memory(ro, initial), -EROFS);
	cr_assert_eq(tu_get_config(tu_kv).max_memory, cfg.max_memory);
	shmkv_close(ro);
	tu_assert_ok(shmkv_unlink(tu_name));
	tu_assert_rc(shmkv_set_max_memory(other, initial), -ESTALE);
	shmkv_close(other);
}

/* A process that opened the store before it grew reads values in the new
 * pages, and grows it further itself. */
Test(grow, a_process_opened_before_growth_reads_and_grows_the_new_pages)
{
	struct shmkv_config cfg = small_config();
	/* More than the initial pages hold (7 x 256): the last third of
	 * the values lands in pages grown after the child opened. */
	unsigned n = 2500;
	int opened[2], grown[2], st;
	pid_t pid;
	char b;

	cfg.slots = BIG_SLOTS;
	tu_kv = tu_create_growing(&cfg, tu_name);
	cr_assert_eq(pipe(opened), 0);
	cr_assert_eq(pipe(grown), 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		shmkv_t *kv;
		bool ok;

		if (shmkv_open(tu_name, 0, &kv) != 0 ||
		    write(opened[1], "o", 1) != 1 || read(grown[0], &b, 1) != 1)
			_exit(2);
		/* First with its copy of the ready pages stale: DELs of the
		 * last values (in grown pages) free their blocks. */
		ok = true;
		for (unsigned i = n / 2; ok && i < n; i++) {
			char key[32];
			size_t kl = (size_t)snprintf(key, sizeof(key), "p%u",
						     i);

			ok = shmkv_del(kv, key, kl) == 1;
		}
		for (unsigned i = 0; ok && i < n / 2; i++)
			ok = holds(kv, "p", i);
		for (unsigned i = 0; ok && i < n; i++)
			ok = set_one(kv, "c", i) == 1;
		_exit(ok ? 0 : 1);
	}
	cr_assert_eq(read(opened[0], &b, 1), 1);
	set_all(tu_kv, "p", n);
	cr_assert_eq(write(grown[1], "g", 1), 1);
	st = reap(pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %#x", st);
	assert_all(tu_kv, "c", n);
	assert_all(tu_kv, "p", n / 2);
	for (unsigned i = n / 2; i < n; i++)
		cr_assert(!holds(tu_kv, "p", i), "p%u was deleted", i);
	/* Every DEL freed its block: nothing is left for reclamation. */
	cr_assert_eq(stats_of(tu_kv).cls[3].used, n + n / 2);
	assert_sound(tu_kv, tu_name);
}

/* Writers that all need room at once: every growth is published once, no
 * page is claimed twice, every value reads back. */
Test(grow, concurrent_writer_processes_grow_it_together)
{
	struct shmkv_config cfg = small_config();
	pid_t pids[WRITERS];
	char prefix[8];

	tu_kv = tu_create_growing(&cfg, tu_name);
	fflush(NULL);
	for (int w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		cr_assert_geq(pids[w], 0);
		if (pids[w] == 0) {
			shmkv_t *kv;
			bool ok;

			snprintf(prefix, sizeof(prefix), "w%d-", w);
			ok = shmkv_open(tu_name, 0, &kv) == 0;
			for (unsigned i = 0; ok && i < EACH; i++)
				ok = set_one(kv, prefix, i) == 1;
			_exit(ok ? 0 : 1);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int st = reap(pids[w]);

		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "writer %d: %#x", w, st);
	}
	for (int w = 0; w < WRITERS; w++) {
		snprintf(prefix, sizeof(prefix), "w%d-", w);
		assert_all(tu_kv, prefix, EACH);
	}
	cr_assert_geq(stats_of(tu_kv).cls[3].used, WRITERS * EACH);
	assert_sound(tu_kv, tu_name);
}

static uint32_t *ready_word(shmkv_t *kv)
{
	return &((struct shmkv_header_shm *)kv->base)->pages_ready;
}

/* The segment reserves the tables the table may grow into (each twice the
 * last, up to the largest the limit holds), sparse: only T(0) is
 * allocated, and the page table comes after the last one. */
Test(grow, the_segment_reserves_the_larger_tables_unallocated)
{
	struct shmkv_config cfg = small_config();
	struct shmkv_header_shm h;
	uint64_t t0 = (uint64_t)SLOTS * 128; /* key_max 64: 128-byte slots */

	cfg.max_memory = 64u << 20;
	tu_kv = tu_create_growing(&cfg, tu_name);
	tu_shm_pread(tu_name, &h, sizeof(h), 0);
	/* 512 KiB << 7 = 64 MiB: the largest table within the limit. */
	cr_assert_eq(h.epoch_max, 7);
	cr_assert_eq(tu_kv->geo.epoch_max, 7);
	cr_assert_eq(shmkv__table_offset(&tu_kv->geo, 1), 4096 + t0);
	cr_assert_eq(shmkv__table_offset(&tu_kv->geo, 7),
		     4096 + t0 * ((1u << 7) - 1));
	cr_assert_geq(h.page_table_offset, 4096 + t0 * ((1u << 8) - 1));
	cr_assert_eq((uint64_t)tu_shm_allocated(tu_name),
		     shmkv__footprint(&tu_kv->geo, CLASSES),
		     "only the header, T(0), the page table's words and the "
		     "pages are allocated");
	cr_assert_eq(shmkv__footprint(&tu_kv->geo, CLASSES),
		     4096 + t0 + 4096 + (uint64_t)CLASSES * SHMKV_PAGE_MIN);
	set_all(tu_kv, "k", PER_PAGE);
	assert_sound(tu_kv, tu_name);
}

/* A ready word beyond what the file has allocated is not believed: no
 * access goes into the hole, growth says -EBADMSG, check reports it. */
Test(grow, a_corrupt_ready_word_gives_errors_not_faults_in_the_hole)
{
	struct shmkv_config cfg = small_config();
	unsigned i;
	int rc = 1;

	tu_kv = tu_create_growing(&cfg, tu_name);
	set_all(tu_kv, "k", PER_PAGE);
	*ready_word(tu_kv) = tu_kv->geo.page_count;
	cr_assert_eq(shmkv_check(tu_kv, NULL, NULL), 1);
	/* The ready pages fill up, then the growth that follows allocates
	 * its run and cannot publish it over the corrupt word. */
	for (i = 0; rc == 1 && i < SLOTS; i++)
		rc = set_one(tu_kv, "n", i);
	cr_assert_eq(rc, -EBADMSG, "SET n%u: %s", i - 1, tu_rcname(rc));
	cr_assert_eq(stats_of(tu_kv).pages, CLASSES);
	assert_all(tu_kv, "k", PER_PAGE);
	cr_assert_eq((uint64_t)tu_shm_allocated(tu_name),
		     shmkv__footprint(&tu_kv->geo, CLASSES + 1),
		     "only the run of the growth is allocated: the hole was "
		     "touched");
	/* Below the initial pages: those stay usable, growth cannot go on. */
	*ready_word(tu_kv) = 1;
	assert_all(tu_kv, "k", PER_PAGE);
	tu_assert_rc(set_one(tu_kv, "n", i), -EBADMSG);
	*ready_word(tu_kv) = CLASSES;
	tu_assert_rc(set_one(tu_kv, "n", i), 1);
}

/*
 * A full /dev/shm: a private tmpfs of 4 MiB in a mount namespace (root):
 * the store starts at about 1.5 MiB and must stop short of its limit. Its
 * table (FULL_SLOTS one-line slots) could take twice the values the file
 * system has room for, so memory always runs out first: tmpfs's limit was
 * seen to let a store of 4096 slots in 1.5 MiB fill its table first.
 */
#define FULL_SLOTS 16384u
enum full_step {
	FS_OK,
	FS_CREATE = 10,
	FS_FIRST_SET,
	FS_NOT_ENOMEM,
	FS_LOST,
};

static int full_child(const char *name)
{
	struct shmkv_config cfg = small_config();
	shmkv_t *kv;
	unsigned i;
	int rc = 1;

	/* A limit the file system cannot hold: growth meets its end. */
	cfg.max_memory = 64u << 20;
	cfg.slots = FULL_SLOTS;
	cfg.key_max = 28;
	if (shmkv_create(name, &cfg, &kv) != 0)
		return FS_CREATE;
	if (set_one(kv, "k", 0) != 1)
		return FS_FIRST_SET;
	for (i = 1; rc == 1 && i < FULL_SLOTS; i++)
		rc = set_one(kv, "k", i);
	if (rc != -ENOMEM) {
		struct shmkv_stats st = { 0 };

		(void)shmkv_stats(kv, &st);
		fprintf(stderr,
			"full tmpfs: SET k%u: %s (%u pages, %llu bytes, %llu "
			"keys)\n",
			i - 1, shmkv_strerror(rc), st.pages,
			(unsigned long long)st.memory_bytes,
			(unsigned long long)st.live_keys);
		return FS_NOT_ENOMEM;
	}
	for (unsigned j = 0; j + 1 < i; j++)
		if (!holds(kv, "k", j))
			return FS_LOST;
	return FS_OK;
}

Test(grow, a_full_tmpfs_gives_enomem_not_sigbus)
{
	int st;

	tu_make_name(tu_name, NULL);
	st = tu_in_private_shm("size=4m", full_child, tu_name,
			       "a full tmpfs");
	cr_assert_eq(st, FS_OK, "child failed at step %d", st);
}

/*
 * A grower killed between allocating and publishing (FAULT=1 builds).
 */
#ifdef SHMKV_FAULT_INJECTION
#define NEED_CRASH_POINTS() ((void)0)
#else
#define NEED_CRASH_POINTS()                                                    \
	cr_skip_test("no crash points in this build: make FAULT=1, then "      \
		     "build-fault/tests/unit --filter 'crashpoint_grow/*'")
#endif

/* Starts crash_worker SETting block values <prefix><i> for i in [@from,
 * @to), armed to die at the growth's crash point if @armed. Return: its
 * pid. */
static pid_t spawn_writer(const char *prefix, unsigned from, unsigned to,
			  bool armed)
{
	char path[4096], s[16], c[16];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/tests/crash_worker", SHMKV_BUILD_DIR);
	snprintf(s, sizeof(s), "%u", from);
	snprintf(c, sizeof(c), "%u", to - from);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (armed) {
			setenv("SHMKV_CRASH_AT", "grow_allocated", 1);
			setenv("SHMKV_CRASH_AFTER", "1", 1);
		}
		execl(path, path, tu_name, "block", prefix, s, c, (char *)NULL);
		_exit(127);
	}
	return pid;
}

Test(crashpoint_grow, a_grower_killed_before_publishing_leaves_pages_to_reuse)
{
	NEED_CRASH_POINTS();
	struct shmkv_config cfg = small_config();
	unsigned n = CLASSES * PER_PAGE * 2;
	struct shmkv_stats st;
	int status;

	tu_kv = tu_create_growing(&cfg, tu_name);
	status = reap(spawn_writer("g", 0, n, true));
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "crash_worker did not die at grow_allocated: %#x", status);
	/* Allocated, not published: the store is as before, the file has
	 * the run nobody names yet. */
	st = stats_of(tu_kv);
	cr_assert_eq(st.pages, CLASSES);
	cr_assert_eq(*ready_word(tu_kv), CLASSES);
	cr_assert_gt((uint64_t)tu_shm_allocated(tu_name), st.memory_bytes);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
	/* The next grower allocates the same run (a no-op) and publishes it:
	 * nothing leaks, nothing was lost. */
	set_all(tu_kv, "g", n);
	assert_all(tu_kv, "g", n);
	cr_assert_gt(stats_of(tu_kv).pages, CLASSES);
	assert_sound(tu_kv, tu_name);
}

/*
 * Writers killed at random while the store grows: crash_worker processes
 * write lanes of keys; the parent SIGKILLs them at random moments (and, in
 * a build with crash points, arms some to die between a growth's
 * allocation and its publication) and restarts each lane where its keys
 * stop. At the end every lane's every key holds its value, the store
 * checks clean, and the file holds no more than the store uses plus what
 * killed growers allocated and nobody published yet (one run).
 */
#define LANES	  4
#define LANE_KEYS 1500u
#define KILLS_MAX 120

static bool lane_holds(shmkv_t *kv, unsigned lane, unsigned i)
{
	char prefix[8], key[32], want[CRASH_VALUE_CAP], got[CRASH_VALUE_CAP];
	struct shmkv_value v = { got, sizeof(got), 0 };
	size_t kl, wl;

	snprintf(prefix, sizeof(prefix), "L%u-", lane);
	kl = (size_t)snprintf(key, sizeof(key), "%s%u", prefix, i);
	wl = crash_value(want, CRASH_BLOCK, prefix, i);
	return shmkv_get(kv, key, kl, &v) == 1 && v.len == wl &&
	       memcmp(got, want, wl) == 0;
}

/* Where lane @lane's keys stop: they are written in order, so the first
 * missing one (the one a killed writer was on may or may not be there). */
static unsigned lane_next(shmkv_t *kv, unsigned lane)
{
	unsigned i = 0;

	while (i < LANE_KEYS && lane_holds(kv, lane, i))
		i++;
	return i;
}

static pid_t spawn_lane(unsigned lane, unsigned from, bool armed)
{
	char prefix[8];

	snprintf(prefix, sizeof(prefix), "L%u-", lane);
	return spawn_writer(prefix, from, LANE_KEYS, armed);
}

/* Lane @lane's writer from where its keys stop, armed (where crash
 * points exist) on every other restart. */
static pid_t restart_lane(unsigned lane, unsigned n, void *ctx)
{
	(void)ctx;
	return spawn_lane(lane, n == 0 ? 0 : lane_next(tu_kv, lane),
			  n % 2 == 1);
}

Test(grow, writers_killed_at_random_while_it_grows_lose_nothing)
{
	struct shmkv_config cfg = small_config();
	struct shmkv_stats st;
	unsigned deaths;

	cfg.slots = BIG_SLOTS;
	tu_kv = tu_create_growing(&cfg, tu_name);
	deaths = tu_kill_lanes(LANES, KILLS_MAX, 1000, restart_lane, NULL);
	for (unsigned l = 0; l < LANES; l++)
		for (unsigned i = 0; i < LANE_KEYS; i++)
			cr_assert(lane_holds(tu_kv, l, i), "L%u-%u lost", l, i);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
	st = stats_of(tu_kv);
	cr_assert_gt(st.pages, CLASSES);
	cr_assert_geq((uint64_t)tu_shm_allocated(tu_name), st.memory_bytes);
	/* One unpublished run of pages, and a page of a given-back table
	 * that a writer stalled across the growth's end faulted back in
	 * (each lane, at most: the next growth gives it back again). */
	cr_assert_leq(
		(uint64_t)tu_shm_allocated(tu_name),
		shmkv__footprint(&tu_kv->geo, st.pages + st.pages / 4 + 1) +
			shmkv__tables_extra(
				&tu_kv->geo,
				((struct shmkv_header_shm *)tu_kv->base)->life) +
			4096 * (LANES + 1),
		"more allocated than one unpublished run");
	cr_log_info("%u deaths, %u pages", deaths, st.pages);
}

/* Blocks freed all over the class are found again before the store
 * grows: a bounded look at each page's fill, from a hand that goes round
 * the class's pages (block.c), not a scan of every page. */
Test(grow, blocks_freed_across_the_class_are_reused_before_it_grows)
{
	struct shmkv_config cfg = small_config();
	unsigned n = 3000;
	uint32_t pages;

	cfg.slots = BIG_SLOTS;
	tu_kv = tu_create_growing(&cfg, tu_name);
	set_all(tu_kv, "k", n);
	pages = stats_of(tu_kv).pages;
	cr_assert_gt(pages, CLASSES);
	/* Every other value: each page of the class half free. */
	for (unsigned i = 0; i < n; i += 2) {
		char key[32];
		size_t kl = (size_t)snprintf(key, sizeof(key), "k%u", i);

		tu_assert_rc(shmkv_del(tu_kv, key, kl), 1);
	}
	set_all(tu_kv, "n", n / 2);
	cr_assert_eq(stats_of(tu_kv).pages, pages,
		     "it grew with %u free blocks", n / 2);
	cr_assert_eq(stats_of(tu_kv).cls[3].used, n);
	assert_all(tu_kv, "n", n / 2);
	assert_sound(tu_kv, tu_name);
}

/* VmSize of /proc/self/status, in bytes; 0 if unknown. */
static uint64_t vm_size(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	unsigned long long kb = 0;
	char line[128];

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmSize: %llu kB", &kb) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return (uint64_t)kb << 10;
}

/* A process whose address space is limited (ulimit -v) below a store's
 * reservation cannot map it, and says -ENOMEM; a store made with a
 * max_memory within the limit opens there. */
Test(grow, an_address_space_limit_below_the_reservation_is_enomem)
{
	struct shmkv_config cfg = small_config();
	char small[TU_NAME_CAP];
	int st;
	pid_t pid;

	cfg.max_memory = 8u << 20;
	shmkv_close(tu_create(&cfg, small));
	cfg.max_memory = 64ull << 30; /* sparse: no memory is taken */
	shmkv_close(tu_create_growing(&cfg, tu_name));
	/* Closed: a child would inherit the mappings, and count them. */
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* 1 GiB beyond what the process maps now (a sanitizer's
		 * shadow makes that a lot): room for the small store only. */
		uint64_t room = vm_size() + (1ull << 30);
		struct rlimit lim = { room, room };
		shmkv_t *a = NULL, *b = NULL;

		if (room == (1ull << 30) || setrlimit(RLIMIT_AS, &lim) != 0)
			_exit(2);
		if (shmkv_open(tu_name, 0, &a) != -ENOMEM || a != NULL)
			_exit(3);
		if (shmkv_open(small, 0, &b) != 0 || set_one(b, "k", 0) != 1)
			_exit(4);
		_exit(0);
	}
	st = reap(pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed at %d",
		  WEXITSTATUS(st));
	tu_kv = tu_open(tu_name, 0);
	tu_assert_rc(set_one(tu_kv, "k", 0), 1);
}
