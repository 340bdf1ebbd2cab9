/*
 * test_removed.c - a removed store is never written silently (issue 13,
 * part 3): shmkv_unlink marks it, every handle to it says -ESTALE from
 * then on (in this process and in others, lock waiters included), a store
 * created under the name since is another one, and a remover killed
 * between marking and unlinking leaves a name that reads as gone and that
 * a create takes over. shmctl destroy's report is in test_shmctl_destroy.c.
 */
#include "helpers/paused_child.h"
#include "helpers/testutil.h"
#include "layout.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shmkv_exec.h"
#include "shmkv_lock.h"

TestSuite(removed, .init = tu_setup, .fini = tu_teardown);

/* What a dead remover leaves: the life word marked, the name still there. */
static void mark_removed_by_hand(const char *name)
{
	uint64_t life = SHMKV_LIFE_REMOVED;

	tu_shm_pwrite(name, &life, sizeof(life),
		      offsetof(struct shmkv_header_shm, life));
}

Test(removed, every_command_on_a_removed_store_is_estale)
{
	struct shmkv_value v = tu_value(64);
	struct shmkv_keyref ref;
	struct shmkv_stats st;
	struct shmkv_reply reply;
	struct shmkv_lock lk;
	struct shmkv_pattern pl;
	const char *argv[] = { "SET", "k", "changed" };
	size_t argvlen[] = { 3, 1, 7 };
	int64_t n = 0, exp = 0;

	tu_populate(tu_kv, 12);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("n"), LIT("7"), 0, 0, NULL), 1);
	tu_assert_ok(shmkv_key_prepare(tu_kv, &ref, LIT("k")));
	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "jobs"));
	tu_assert_ok(shmkv_pattern_init(tu_kv, &pl, "jobs"));

	tu_assert_ok(shmkv_unlink(tu_name));

	/* Plain commands, writes and reads. */
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("w"), 0, 0, NULL), -ESTALE);
	tu_assert_rc(shmkv_set(tu_kv, LIT("new"), LIT("w"), 0, 0, NULL),
		     -ESTALE);
	tu_assert_rc(shmkv_setnx(tu_kv, LIT("new"), LIT("w")), -ESTALE);
	tu_assert_rc(shmkv_get(tu_kv, LIT("k"), &v), -ESTALE);
	tu_assert_rc(shmkv_exists(tu_kv, LIT("k")), -ESTALE);
	tu_assert_rc(shmkv_getset(tu_kv, LIT("k"), LIT("w"), &v), -ESTALE);
	tu_assert_rc(shmkv_getdel(tu_kv, LIT("k"), &v), -ESTALE);
	tu_assert_rc(shmkv_del(tu_kv, LIT("k")), -ESTALE);
	tu_assert_rc(shmkv_delifeq(tu_kv, LIT("k"), LIT("v")), -ESTALE);
	tu_assert_rc(shmkv_incr(tu_kv, LIT("n"), &n), -ESTALE);
	tu_assert_rc(shmkv_get_int(tu_kv, LIT("n"), &n), -ESTALE);
	tu_assert_rc(shmkv_expire(tu_kv, LIT("k"), SHMKV_EXPIRE_SEC, 0, 100),
		     -ESTALE);
	tu_assert_rc(shmkv_pttl(tu_kv, LIT("k"), &exp), -ESTALE);
	tu_assert_rc(shmkv_persist(tu_kv, LIT("k")), -ESTALE);
	/* A prepared key: its fast path and the engine's. */
	tu_assert_rc(shmkv_key_get(tu_kv, &ref, &v), -ESTALE);
	tu_assert_rc(shmkv_key_set(tu_kv, &ref, LIT("w"), 0, 0, NULL), -ESTALE);
	tu_assert_rc(
		shmkv_key_set(tu_kv, &ref, LIT("w"), SHMKV_SET_XX, 0, NULL),
		-ESTALE);
	tu_assert_rc(shmkv_key_del(tu_kv, &ref), -ESTALE);
	tu_assert_rc(shmkv_key_prepare(tu_kv, &ref, LIT("other")), -ESTALE);
	/* Redis's form, the keyspace, and both kinds of lock. */
	tu_assert_rc(shmkv_exec(tu_kv, 3, argv, argvlen, &reply), -ESTALE);
	cr_assert_eq(reply.type, SHMKV_REPLY_ERROR);
	shmkv_reply_free(&reply);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 1000), -ESTALE);
	tu_assert_rc(shmkv_pattern_acquire(&pl, 1000, 0, &exp), -ESTALE);

	/* Nothing changed: the old segment, read through the handle. */
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.live_keys, 12 + 2);
}

static int count_key(const void *key, size_t len, void *arg)
{
	(void)key;
	(void)len;
	++*(int *)arg;
	return 0;
}

static int count_lock(const struct shmkv_lock_info *info, void *arg)
{
	(void)info;
	++*(int *)arg;
	return 0;
}

Test(removed, scan_and_lock_list_are_estale)
{
	uint64_t cursor = 0;
	int seen = 0;

	struct shmkv_lock lk;

	tu_populate(tu_kv, 4);
	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "jobs"));
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 60000), SHMKV_LOCK_ACQUIRED);
	tu_assert_ok(shmkv_unlink(tu_name));
	tu_assert_rc(shmkv_scan(tu_kv, 0, 100, count_key, &seen, &cursor),
		     -ESTALE);
	tu_assert_rc(shmkv_lock_list(tu_kv, count_lock, &seen), -ESTALE);
	cr_assert_eq(seen, 0);
	tu_assert_rc(shmkv_lock_release(&lk), -ESTALE);
}

Test(removed, a_store_created_under_the_name_since_is_another)
{
	shmkv_t *fresh = NULL;

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("old"), 0, 0, NULL), 1);
	tu_assert_ok(shmkv_unlink(tu_name));
	tu_assert_ok(shmkv_create(tu_name, NULL, &fresh));
	/* The old handle does not reach the new store, nor the other way. */
	tu_assert_rc(shmkv_set(tu_kv, LIT("k2"), LIT("lost?"), 0, 0, NULL),
		     -ESTALE);
	tu_assert_missing_str(fresh, "k");
	tu_assert_missing_str(fresh, "k2");
	tu_assert_rc(shmkv_set(fresh, LIT("k"), LIT("new"), 0, 0, NULL), 1);
	tu_assert_get_str(fresh, "k", "new");
	shmkv_close(fresh);
}

/* Child exit statuses of the multi-process tests. */
enum { SAW_ESTALE = 0, NO_OPEN = 10, WRONG_RC = 11, NO_PIPE = 12 };

static void wait_byte(int fd)
{
	char c;

	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
}

static void send_byte(int fd)
{
	while (write(fd, "x", 1) < 0 && errno == EINTR)
		;
}

/* Reaps @pid, waiting at most ~20 s (a hang fails the test, and the
 * child is killed), and returns its exit status. */
static int reap(pid_t pid)
{
	int status = 0;

	for (int i = 0; i < 20000; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid) {
			cr_assert(WIFEXITED(status), "child died of signal %d",
				  WTERMSIG(status));
			cr_log_info("child %d exited %d", (int)pid,
				    WEXITSTATUS(status));
			return WEXITSTATUS(status);
		}
		tu_sleep_ms(1);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	cr_assert_fail("child %d never finished", (int)pid);
	return -1;
}

Test(removed, another_process_learns_it_on_its_next_command)
{
	int ready[2], go[2];
	pid_t pid;

	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(go), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		shmkv_t *kv;
		int rc;

		if (shmkv_open(tu_name, 0, &kv) != 0)
			_exit(NO_OPEN);
		if (shmkv_set(kv, LIT("k"), LIT("before"), 0, 0, NULL) != 1)
			_exit(WRONG_RC);
		send_byte(ready[1]);
		wait_byte(go[0]);
		rc = shmkv_set(kv, LIT("k"), LIT("after"), 0, 0, NULL);
		if (rc != -ESTALE)
			_exit(WRONG_RC);
		rc = shmkv_get(kv, LIT("k"), NULL);
		_exit(rc == -ESTALE ? SAW_ESTALE : WRONG_RC);
	}
	wait_byte(ready[0]);
	tu_assert_get_str(tu_kv, "k", "before");
	tu_assert_ok(shmkv_unlink(tu_name));
	send_byte(go[1]);
	cr_assert_eq(reap(pid), SAW_ESTALE);
	/* What it was told is true: the name is free. */
	tu_assert_rc(shmkv_open(tu_name, 0, &(shmkv_t *){ NULL }), -ENOENT);
}

/* In a child: takes lock "jobs" of @kv (a safe lock, or the pattern lock if
 * @pattern), at once or waiting without a limit (@wait). Return: what the
 * acquire said. */
static int take_jobs_lock(shmkv_t *kv, bool pattern, bool wait)
{
	struct shmkv_pattern pl;
	struct shmkv_lock lk;
	int64_t exp;
	int rc;

	if (pattern) {
		rc = shmkv_pattern_init(kv, &pl, "jobs");
		return rc ? rc
			  : shmkv_pattern_acquire(&pl, 600000,
						  wait ? SHMKV_LOCK_FOREVER : 0,
						  &exp);
	}
	rc = shmkv_lock_init(kv, &lk, "jobs");
	return rc     ? rc
	       : wait ? shmkv_lock_acquire(&lk, 600000)
		      : shmkv_lock_try_acquire(&lk, 600000);
}

/* Forks a child that opens the store (exiting NO_OPEN if it cannot).
 * Return: in the parent the child's pid; in the child 0, *@kv its handle. */
static pid_t fork_with_store(shmkv_t **kv)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0 && shmkv_open(tu_name, 0, kv) != 0)
		_exit(NO_OPEN);
	return pid;
}

/* A child that holds lock "jobs" until the parent writes to @go[1] or
 * closes it. */
static pid_t start_holder(bool pattern, int ready, const int go[2])
{
	shmkv_t *kv;
	pid_t pid = fork_with_store(&kv);

	if (pid == 0) {
		if (take_jobs_lock(kv, pattern, false) != SHMKV_LOCK_ACQUIRED)
			_exit(WRONG_RC);
		send_byte(ready);
		/* Ours closed: a parent that fails ends the wait too. */
		close(go[1]);
		wait_byte(go[0]);
		_exit(0);
	}
	return pid;
}

/* A child that waits for lock "jobs" without a time limit, once it has
 * told @ready that it opened the store; its exit status says whether the
 * wait ended with -ESTALE. */
static pid_t start_waiter(bool pattern, int ready)
{
	shmkv_t *kv;
	pid_t pid = fork_with_store(&kv);

	if (pid == 0) {
		send_byte(ready);
		_exit(take_jobs_lock(kv, pattern, true) == -ESTALE ? SAW_ESTALE
								   : WRONG_RC);
	}
	return pid;
}

static void lock_waiter_is_told(bool pattern)
{
	int ready[2], go[2];
	pid_t holder, waiter;

	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(go), 0);
	holder = start_holder(pattern, ready[1], go);
	wait_byte(ready[0]);
	waiter = start_waiter(pattern, ready[1]);
	wait_byte(ready[0]);
	/* Asleep in its wait: the removal must reach it there. */
	tu_wait_proc_state(waiter, 'S');
	tu_assert_ok(shmkv_unlink(tu_name));
	cr_assert_eq(reap(waiter), SAW_ESTALE);
	send_byte(go[1]);
	cr_assert_eq(reap(holder), 0);
}

Test(removed, a_safe_lock_waiter_is_told)
{
	lock_waiter_is_told(false);
}

Test(removed, a_pattern_lock_waiter_is_told)
{
	lock_waiter_is_told(true);
}

Test(removed, a_store_whose_remover_died_reads_as_gone)
{
	shmkv_t *kv = NULL;

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	mark_removed_by_hand(tu_name);
	tu_assert_rc(shmkv_get(tu_kv, LIT("k"), NULL), -ESTALE);
	tu_assert_rc(shmkv_open(tu_name, 0, &kv), -ENOENT);
	tu_assert_rc(shmkv_open(tu_name, SHMKV_OPEN_READONLY, &kv), -ENOENT);
	cr_assert_null(kv);
	/* Removing it again finishes the job. */
	tu_assert_ok(shmkv_unlink(tu_name));
	tu_assert_rc(shmkv_unlink(tu_name), -ENOENT);
}

Test(removed, create_takes_over_the_name_of_a_store_whose_remover_died)
{
	shmkv_t *fresh = NULL, *other = NULL;

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	mark_removed_by_hand(tu_name);
	tu_assert_ok(shmkv_create(tu_name, NULL, &fresh));
	tu_assert_missing_str(fresh, "k");
	/* A live store under the name is no one's to take. */
	tu_assert_rc(shmkv_create(tu_name, NULL, &other), -EEXIST);
	tu_assert_rc(shmkv_set(fresh, LIT("k"), LIT("new"), 0, 0, NULL), 1);
	shmkv_close(fresh);
	/* And open_or_create, over another such leftover. */
	fresh = tu_open(tu_name, 0);
	shmkv_close(fresh);
	mark_removed_by_hand(tu_name);
	tu_assert_ok(shmkv_open_or_create(tu_name, NULL, &fresh));
	tu_assert_missing_str(fresh, "k");
	shmkv_close(fresh);
}

Test(removed, a_life_word_beyond_the_reserved_tables_is_corruption_not_removal)
{
	/* A generation whose table the segment does not reserve (epoch_max
	 * is below 32). */
	uint64_t life = SHMKV_LIFE_OF_GEN(2ull * 32);
	shmkv_t *kv = NULL;

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	tu_shm_pwrite(tu_name, &life, sizeof(life),
		      offsetof(struct shmkv_header_shm, life));
	tu_assert_rc(shmkv_get(tu_kv, LIT("k"), NULL), -EBADMSG);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("w"), 0, 0, NULL),
		     -EBADMSG);
	tu_assert_rc(shmkv_open(tu_name, 0, &kv), -EBADMSG);
	cr_assert_null(kv);
	/* Put back, the store is as it was. */
	life = 0;
	tu_shm_pwrite(tu_name, &life, sizeof(life),
		      offsetof(struct shmkv_header_shm, life));
	tu_assert_get_str(tu_kv, "k", "v");
}

Test(removed, a_store_of_a_newer_layout_is_left_alone_an_older_one_goes)
{
	uint32_t newer = SHMKV_LAYOUT_VERSION + 1, older = 5;

	/* A newer library may keep its life word elsewhere: marking ours
	 * would tell its users nothing, so the store stays. */
	tu_shm_pwrite(tu_name, &newer, sizeof(newer),
		      offsetof(struct shmkv_header_shm, layout_version));
	tu_assert_rc(shmkv_unlink(tu_name), -EPROTONOSUPPORT);
	cr_assert_gt(tu_shm_size(tu_name), 0);
	/* An older one has no life word (its users' library would not look
	 * at one): its name goes, unmarked, as before. */
	tu_shm_pwrite(tu_name, &older, sizeof(older),
		      offsetof(struct shmkv_header_shm, layout_version));
	tu_assert_ok(shmkv_unlink(tu_name));
	tu_assert_rc(shmkv_unlink(tu_name), -ENOENT);
}

/*
 * Pause points (FAULT=1 builds)
 */

TestSuite(pausepoint_remove, .init = tu_setup, .fini = tu_teardown);

/* A create that finds a dead remover's store under the name: it removes
 * it, creates its own and marks it as its own, "owner" = @arg's name.
 * Return: 0 (created), or what shmkv_create said. */
static int create_and_own(const char *name, const char *owner)
{
	shmkv_t *kv;
	int rc = shmkv_create(name, NULL, &kv);

	if (rc)
		return rc;
	rc = shmkv_set(kv, LIT("owner"), owner, strlen(owner), 0, 0, NULL);
	shmkv_close(kv);
	return rc == 1 ? 0 : -EPROTO;
}

static int first_creates(void *arg)
{
	return create_and_own(arg, "first");
}

/* Polls /proc/locks (1 ms apart, at most 10 s) until @pid waits for a
 * flock: a line "N: -> FLOCK  ADVISORY  WRITE <pid> ...". */
static void wait_blocked_on_flock(pid_t pid)
{
	for (int i = 0; i < 10000; i++) {
		char line[256];
		FILE *f = fopen("/proc/locks", "re");
		bool found = false;

		cr_assert_not_null(f, "no /proc/locks");
		while (!found && fgets(line, sizeof(line), f) != NULL) {
			const char *w = strstr(line, "-> FLOCK");
			int who = 0;

			found = w != NULL &&
				sscanf(w, "-> FLOCK %*s %*s %d", &who) == 1 &&
				who == (int)pid;
		}
		fclose(f);
		if (found)
			return;
		tu_sleep_ms(1);
	}
	cr_assert_fail("process %d never waited for the file's lock", (int)pid);
}

/*
 * Two creates meet a dead remover's store. The first, about to unlink it
 * (past its check that the name still names it), pauses; the second
 * blocks behind it on the file's lock. Once the first has unlinked the
 * old store, the two race to create under the free name: exactly one
 * wins, the other says -EEXIST, and the winner's store is the one under
 * the name. Were the check of the name made before taking the lock, the
 * second would unlink whatever the first had created by then, and both
 * would succeed, one of them with a store nobody can open.
 */
Test(pausepoint_remove, a_second_remover_never_takes_the_store_made_since)
{
	struct tu_child first;
	int status, rc_first, rc_second;
	pid_t second;

	NEED_PAUSE_POINTS();
	shmkv_close(tu_kv);
	tu_kv = NULL;
	mark_removed_by_hand(tu_name);
	first = tu_child_start(first_creates, tu_name, "remove_checked", 1);
	tu_child_await(&first);
	second = fork();
	cr_assert_geq(second, 0);
	if (second == 0) {
		int rc = create_and_own(tu_name, "second");

		_exit(rc == 0 ? 0 : rc == -EEXIST ? 1 : 2);
	}
	/* Asleep on the lock the first holds. */
	wait_blocked_on_flock(second);
	tu_child_let_go(&first);
	rc_first = tu_child_finish(&first);
	cr_assert_eq(waitpid(second, &status, 0), second);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) < 2,
		  "the second create failed: status %#x", status);
	rc_second = WEXITSTATUS(status) == 0 ? 0 : -EEXIST;
	cr_assert((rc_first == 0) != (rc_second == 0),
		  "creates: first %s, second %s: exactly one must win",
		  tu_rcname(rc_first), tu_rcname(rc_second));
	cr_assert(rc_first == 0 || rc_first == -EEXIST, "first: %s",
		  tu_rcname(rc_first));
	tu_kv = tu_open(tu_name, 0);
	tu_assert_get_str(tu_kv, "owner", rc_first == 0 ? "first" : "second");
}
