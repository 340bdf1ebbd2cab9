/*
 * test_lock_growth.c - a safe lock held while the table grows online
 * (migrate.c): the grant is copied into the new table with its lock cell
 * (a pin whose block is made to point back at the new slot once the copy
 * lands), stays
 * exclusive, is still ours (shmkv_lock_held), is released as usual, and
 * its cell is neither freed under it by reclamation nor leaked after it.
 * Other processes are real ones (fork).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/testutil.h"
#include "migrate.h"
#include "shmkv_lock.h"

TestSuite(lock_growth, .fini = tu_teardown);

/* A store that grows: 64 slots, room for the table to double often. */
static void create_growing(void)
{
	struct shmkv_config cfg = tu_config(64, 32, 256, 0);

	tu_kv = tu_create_growing(&cfg, tu_name);
}

static uint64_t life_of(shmkv_t *kv)
{
	return ((struct shmkv_header_shm *)kv->base)->life;
}

/* Starts a growth of the table and leaves it under way. */
static void start_growth(void)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv__grow_start(tu_kv, life_of(tu_kv)));
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_gt(st.growing_from, 0, "no growth under way");
}

/* In a child process: one try to take lock @name. Return: its result. */
static int try_in_child(const char *name)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		shmkv_t *kv = NULL;
		struct shmkv_lock lk;
		int r;

		if (shmkv_open(tu_name, 0, &kv) != 0 ||
		    shmkv_lock_init(kv, &lk, name) != 0)
			_exit(100);
		r = shmkv_lock_try_acquire(&lk, 60000);
		_exit(r == -EBUSY ? 1 : r >= 0 ? 0 : 2);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "child died: %#x", status);
	return WEXITSTATUS(status);
}

Test(lock_growth, a_lock_held_across_a_growth_stays_held_and_exclusive)
{
	struct shmkv_lock lk;
	struct shmkv_stats st;
	uint64_t token;

	create_growing();
	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "job"));
	cr_assert_geq(shmkv_lock_try_acquire(&lk, 60000), 0);
	token = shmkv_lock_token(&lk);
	start_growth();
	/* Mid-growth: ours, and nobody else's. */
	cr_assert_eq(shmkv_lock_held(&lk), 1, "not held mid-growth");
	cr_assert_eq(try_in_child("job"), 1, "taken from us mid-growth");
	tu_assert_ok(shmkv_maintain(tu_kv));
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.growing_from, 0);
	cr_assert_eq(st.growths, 1);
	/* Reclamation after the growth must not take the cell away. */
	cr_assert_geq(shmkv_recover(tu_kv, NULL), 0);
	cr_assert_eq(shmkv_lock_held(&lk), 1, "not held after the growth");
	cr_assert_eq(shmkv_lock_token(&lk), token);
	cr_assert_eq(try_in_child("job"), 1, "taken from us after it");
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	cr_assert_eq(shmkv_lock_held(&lk), 0);
	cr_assert_eq(try_in_child("job"), 0, "free, yet not taken");
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

/* Many locks held while keys written by another process make the table
 * grow several times: every lock stays held and exclusive, then every
 * release works and the store checks clean. */
Test(lock_growth, locks_held_while_the_table_grows_several_times)
{
	enum { LOCKS = 40, KEYS = 6000 };
	struct shmkv_lock lk[LOCKS];
	struct shmkv_stats st;
	char name[32];
	int status;
	pid_t pid;

	create_growing();
	for (int i = 0; i < LOCKS; i++) {
		snprintf(name, sizeof(name), "l%d", i);
		tu_assert_ok(shmkv_lock_init(tu_kv, &lk[i], name));
		cr_assert_geq(shmkv_lock_try_acquire(&lk[i], 60000), 0);
	}
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		shmkv_t *kv = NULL;
		char k[32];

		if (shmkv_open(tu_name, 0, &kv) != 0)
			_exit(100);
		for (int i = 0; i < KEYS; i++) {
			int n = snprintf(k, sizeof(k), "k%d", i);

			if (shmkv_set(kv, k, (size_t)n, "v", 1, 0, 0, NULL) !=
			    1)
				_exit(1);
		}
		_exit(shmkv_maintain(kv) == 0 ? 0 : 2);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer: %#x",
		  status);
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_geq(st.growths, 3, "%llu growths",
		      (unsigned long long)st.growths);
	for (int i = 0; i < LOCKS; i++) {
		snprintf(name, sizeof(name), "l%d", i);
		cr_assert_eq(shmkv_lock_held(&lk[i]), 1, "%s not held", name);
		cr_assert_eq(try_in_child(name), 1, "%s taken from us", name);
		tu_assert_rc(shmkv_lock_release(&lk[i]), 0);
	}
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

/* A holder killed with the lock held, then a growth: its lock cell (an
 * owned block kept for as long as a slot pins it) is pinned by the new
 * slot now, so reclamation keeps it, and the next taker finds the dead
 * holder's grant in it (OWNER_DEAD), as without a growth. */
Test(lock_growth, a_dead_holders_cell_survives_a_growth_and_reclamation)
{
	struct shmkv_lock lk;
	int status;
	pid_t pid;

	create_growing();
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		shmkv_t *kv = NULL;
		struct shmkv_lock mine;

		if (shmkv_open(tu_name, 0, &kv) != 0 ||
		    shmkv_lock_init(kv, &mine, "job") != 0 ||
		    shmkv_lock_try_acquire(&mine, 60000) < 0)
			_exit(1);
		raise(SIGKILL);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "holder did not die: %#x", status);
	start_growth();
	cr_assert_geq(shmkv_recover(tu_kv, NULL), 0);
	tu_assert_ok(shmkv_maintain(tu_kv));
	cr_assert_geq(shmkv_recover(tu_kv, NULL), 0);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "job"));
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 60000), SHMKV_LOCK_OWNER_DEAD);
	cr_assert_eq(shmkv_lock_token(&lk), 2);
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}
