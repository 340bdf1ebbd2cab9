/*
 * test_giveback.c - when a growth's old table goes back
 * (tests/model/migration-design.md §7, src/giveback.c): never while a
 * process may still be in it, whatever the file system has left.
 *
 *  - A reader stopped in the middle of its lookup in the old table while
 *    a whole growth runs, on a /dev/shm then full to the last page: it
 *    finishes its GET with the right value and no SIGBUS (its table was
 *    kept for it, and counted), and the table goes back once it is done
 *    (its handle closed), or once it is killed: a dead holder never keeps
 *    it.
 *  - A handle keeps the tables it used, and the last one to close gives
 *    them back; a fork child that shares the parent's keeps them too.
 *
 * The stopped reader needs pause points (a FAULT=1 build) and a private
 * tmpfs on /dev/shm (root); elsewhere those tests are skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault.h"
#include "helpers/paused_child.h"
#include "helpers/slot_of.h"
#include "helpers/testutil.h"
#include "migrate.h"
#include "tables.h"

TestSuite(giveback, .fini = tu_teardown);
/* The tests that pause a process (FAULT=1 builds, where make test runs
 * the pausepoint suites). */
TestSuite(pausepoint_giveback, .fini = tu_teardown);

#define SLOTS	64u /* T(0) is one page of 64-byte slots */
#define CLASSES 7u  /* value_max 1024: one page per class */
#define VALUE_A "a" TU_BLOCK_TEXT

/* What the namespace's process found wrong (its exit status). */
enum step {
	ST_OK,
	ST_CREATE = 10,
	ST_SETUP,
	ST_FORK,
	ST_NOT_PAUSED,
	ST_GROW,
	ST_NOT_KEPT,
	ST_FILL,
	ST_READER_SIGNAL,
	ST_READER_WRONG,
	ST_NOT_GIVEN_BACK,
	ST_STORE,
};

static struct shmkv_config store_config(void)
{
	struct shmkv_config cfg = tu_config(SLOTS, 28, TU_VALUE_MAX,
					    (uint64_t)CLASSES * SHMKV_PAGE_MIN);

	return cfg;
}

/* The reader's pause: it tells its parent and waits for a byte. */
static int to_parent = -1, from_parent = -1;

#ifdef SHMKV_FAULT_INJECTION
static void pause_once(const char *name)
{
	char b = 'p';

	if (strcmp(name, "lookup_probed") != 0)
		return;
	shmkv__pause_hook = NULL;
	if (write(to_parent, &b, 1) != 1 || read(from_parent, &b, 1) != 1)
		_exit(101);
}
#endif

/* The reader: GET "a" on a handle of its own, stopping after the first
 * slot of its window (a neighbour's) in the table it started in. Exit: 0
 * for the right value, 1 for anything else. */
static int reader(const char *name)
{
	char buf[TU_VALUE_MAX];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	shmkv_t *kv;
	int rc;

	if (shmkv_open(name, 0, &kv) != 0)
		return 1;
#ifdef SHMKV_FAULT_INJECTION
	shmkv__pause_hook = pause_once;
#endif
	rc = shmkv_get(kv, LIT("a"), &v);
	shmkv_close(kv);
	return rc == 1 && v.len == sizeof(VALUE_A) - 1 &&
			       memcmp(buf, VALUE_A, v.len) == 0
		       ? 0
		       : 1;
}

/* Forks the reader and waits until it is stopped in its lookup. */
static int reader_start(const char *name, pid_t *pid, int *go)
{
	int p2c[2], c2p[2];
	char b;

	if (pipe(p2c) != 0 || pipe(c2p) != 0)
		return ST_FORK;
	fflush(NULL);
	*pid = fork();
	if (*pid < 0)
		return ST_FORK;
	if (*pid == 0) {
		close(p2c[1]);
		close(c2p[0]);
		to_parent = c2p[1];
		from_parent = p2c[0];
		_exit(reader(name));
	}
	close(p2c[0]);
	close(c2p[1]);
	*go = p2c[1];
	return read(c2p[0], &b, 1) == 1 ? ST_OK : ST_NOT_PAUSED;
}

/* "a" one slot behind a neighbour homed where it is, so that a GET of it
 * reads a second slot of T(0) after the first. */
static int setup(const char *name, shmkv_t **kv)
{
	struct shmkv_config cfg = store_config();
	struct shmkv_key k;
	char other[32];

	if (shmkv_create(name, &cfg, kv) != 0)
		return ST_CREATE;
	shmkv__key_init(*kv, shmkv__table_cmd(*kv), &k, "a", 1);
	tu_key_homed_at(*kv, k.home, 0, other);
	if (shmkv_set(*kv, other, strlen(other), LIT("x"), 0, 0, NULL) != 1 ||
	    shmkv_set(*kv, LIT("a"), LIT(VALUE_A), 0, 0, NULL) != 1)
		return ST_SETUP;
	return ST_OK;
}

/* A whole growth, from its start to its end. */
static int grow_whole(shmkv_t *kv)
{
	struct shmkv_tables tabs;

	if (shmkv__tables(kv, &tabs) != 0 ||
	    shmkv__grow_start(kv, tabs.life) != 0 || shmkv_maintain(kv) != 0 ||
	    shmkv__tables(kv, &tabs) != 0 || tabs.t->epoch != 1)
		return ST_GROW;
	return ST_OK;
}

/* Takes every page /dev/shm has left. */
static int fill_shm(void)
{
	return tu_shm_fill() ? ST_OK : ST_FILL;
}

/* Does the file still hold T(0)'s memory (any of it)? Asked of the file
 * itself, not of the store's counts. */
static bool t0_held(const shmkv_t *kv)
{
	off_t from = (off_t)shmkv__table_start(&kv->geo, 0);
	off_t to = (off_t)shmkv__table_end(&kv->geo, 0);
	off_t at = lseek(kv->fd, from, SEEK_DATA);

	return at >= 0 && at < to;
}

/* Does the store count what the file holds? */
static bool counted(shmkv_t *kv)
{
	struct shmkv_stats st;

	return shmkv_stats(kv, &st) == 0 &&
	       st.memory_bytes == (uint64_t)tu_shm_allocated(kv->name);
}

/* The store after it all: "a" reads right, check is clean. */
static int store_sound(shmkv_t *kv)
{
	char buf[TU_VALUE_MAX];
	struct shmkv_value v = { buf, sizeof(buf), 0 };

	if (shmkv_get(kv, LIT("a"), &v) != 1 || v.len != sizeof(VALUE_A) - 1 ||
	    shmkv_check(kv, NULL, NULL) != 0)
		return ST_STORE;
	return ST_OK;
}

/*
 * In a private /dev/shm: the reader stops in T(0); a whole growth runs on
 * another handle, which then closes; T(0) is kept for the reader (and
 * counted); /dev/shm is filled to its last page; the reader goes on (or,
 * with @kill, is killed). Then T(0) has gone back.
 */
static int stopped_reader(const char *name, bool kill_it)
{
	shmkv_t *kv, *late;
	int go, err, status;
	bool kept_for_it;
	pid_t pid;

	/* The reader is forked with no handle open here: a fork child
	 * shares its parent's locks, and would keep T(0) for its life. */
	err = setup(name, &kv);
	shmkv_close(kv);
	if (err == ST_OK)
		err = reader_start(name, &pid, &go);
	if (err != ST_OK)
		return err;
	if (shmkv_open(name, 0, &kv) != 0)
		return ST_GROW;
	err = grow_whole(kv);
	shmkv_close(kv); /* T(0) is the reader's alone now */
	if (err != ST_OK || shmkv_open(name, 0, &late) != 0)
		return ST_GROW;
	/* Judged after the reader's end: how the reader fares is the point. */
	kept_for_it = t0_held(late) && counted(late);
	if (fill_shm() != ST_OK)
		return ST_FILL;
	if (kill_it)
		kill(pid, SIGKILL);
	else if (write(go, "g", 1) != 1)
		return ST_FORK;
	if (waitpid(pid, &status, 0) != pid)
		return ST_FORK;
	if (!kill_it && !WIFEXITED(status)) {
		fprintf(stderr, "the reader was killed by signal %d\n",
			WTERMSIG(status));
		return ST_READER_SIGNAL;
	}
	if (!kill_it && WEXITSTATUS(status) != 0)
		return ST_READER_WRONG;
	if (!kept_for_it)
		return ST_NOT_KEPT;
	/* Gone back by the reader's close, or by the next one who looks
	 * after the killed reader's locks went with it. */
	if (kill_it)
		(void)shmkv_maintain(late);
	if (t0_held(late) || !counted(late))
		return ST_NOT_GIVEN_BACK;
	err = store_sound(late);
	shmkv_close(late);
	return err;
}

static int stopped_reader_goes_on(const char *name)
{
	return stopped_reader(name, false);
}

static int stopped_reader_killed(const char *name)
{
	return stopped_reader(name, true);
}

Test(pausepoint_giveback,
     a_reader_stopped_across_a_growths_end_finishes_on_a_full_tmpfs)
{
	int st;

	NEED_PAUSE_POINTS();
	tu_make_name(tu_name, NULL);
	st = tu_in_private_shm("size=8m", stopped_reader_goes_on, tu_name,
			       "a stopped reader on a full tmpfs");
	cr_assert_eq(st, ST_OK, "failed at step %d", st);
}

Test(pausepoint_giveback, a_killed_holder_never_keeps_the_old_table)
{
	int st;

	NEED_PAUSE_POINTS();
	tu_make_name(tu_name, NULL);
	st = tu_in_private_shm("size=8m", stopped_reader_killed, tu_name,
			       "a killed holder of an old table");
	cr_assert_eq(st, ST_OK, "failed at step %d", st);
}

/*
 * Without pause points: a handle keeps every table it may be in until it
 * closes, and the last holder gives them back; a fork child shares its
 * parent's holds.
 */

/* T(0) held by the file, and the store's count of its memory right. */
static bool t0_kept(shmkv_t *kv)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(kv, &st));
	cr_assert_eq((uint64_t)tu_shm_allocated(tu_name), st.memory_bytes,
		     "the store's count is not what the file holds");
	return t0_held(kv);
}

Test(giveback, the_last_handle_that_used_an_old_table_gives_it_back)
{
	struct shmkv_config cfg = store_config();
	shmkv_t *other;

	tu_kv = tu_create_growing(&cfg, tu_name);
	other = tu_open(tu_name, 0);
	cr_assert_eq(grow_whole(tu_kv), ST_OK);
	cr_assert(t0_kept(tu_kv), "T(0) went back while held");
	shmkv_close(tu_kv);
	tu_kv = tu_open(tu_name, 0);
	cr_assert(t0_kept(tu_kv), "T(0) went back while held");
	shmkv_close(other);
	cr_assert(!t0_kept(tu_kv), "its last holder kept T(0)");
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

Test(giveback, a_fork_child_keeps_its_parents_tables_until_it_ends)
{
	struct shmkv_config cfg = store_config();
	int p2c[2], c2p[2], status;
	char b;
	pid_t pid;

	tu_kv = tu_create_growing(&cfg, tu_name);
	cr_assert(pipe(p2c) == 0 && pipe(c2p) == 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* Has the parent's handle (and its locks) until told, or until
		 * the parent is gone. */
		close(p2c[1]);
		close(c2p[0]);
		_exit(write(c2p[1], "r", 1) == 1 && read(p2c[0], &b, 1) == 1
			      ? 0
			      : 1);
	}
	cr_assert_eq(read(c2p[0], &b, 1), 1);
	cr_assert_eq(grow_whole(tu_kv), ST_OK);
	/* Our close leaves the child's copies of the descriptors. */
	shmkv_close(tu_kv);
	tu_kv = tu_open(tu_name, 0);
	cr_assert(t0_kept(tu_kv), "T(0) went back under the child");
	cr_assert_eq(write(p2c[1], "g", 1), 1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	tu_assert_ok(shmkv_maintain(tu_kv));
	cr_assert(!t0_kept(tu_kv), "T(0) kept after the child ended");
}
