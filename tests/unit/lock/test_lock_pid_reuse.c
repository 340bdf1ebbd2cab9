/*
 * test_lock_pid_reuse.c - a safe lock's dead holder whose pid is handed out
 * again within the clock tick of its start (so /proc shows the same pid and
 * the same start time) is still taken for dead: the next acquirer takes
 * the lock over at once with SHMKV_LOCK_OWNER_DEAD, not after the lease.
 * What tells them apart is the holder's mark in the store's file
 * (src/proc_mark.c): a live holder's is seen from a fork child that shares
 * its handle, and a handle's close gives its marks, and its locks, up.
 *
 * The pid is handed out again on purpose: the test runs in a pid namespace
 * of its own (with its own /proc), writes the dead holder's pid - 1 into
 * /proc/sys/kernel/ns_last_pid, and forks. Root only: otherwise skipped.
 * A round whose new process started in a later tick than the holder is
 * tried again under a new lock name.
 */
#include "helpers/testutil.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shmkv_lock.h"

TestSuite(lock_pid_reuse, .fini = tu_teardown, .timeout = 120);

/* Exit codes of the namespace's first process. */
enum {
	REUSE_TAKEN_OVER = 0, /* the acquirer got OWNER_DEAD */
	REUSE_WAITED = 1,     /* it said -EBUSY: the dead holder "alive" */
	REUSE_OTHER = 2,      /* it said something else */
	REUSE_SETUP = 3,      /* the scenario could not be set up */
	REUSE_NO_NS = 77,     /* no pid namespace, /proc or ns_last_pid */
	REUSE_NO_TICK = 78,   /* every round's new process was a tick late */
};

#define ROUNDS	 20
#define LEASE_MS 60000

/* Field 22 of /proc/@pid/stat: its start time in clock ticks; 0 if
 * unreadable. */
static unsigned long long start_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), f) != NULL &&
	    (p = strrchr(buf, ')')) != NULL) {
		for (int field = 2; field < 22 && p != NULL; field++)
			p = strchr(p + 1, ' ');
		if (p != NULL)
			start = strtoull(p + 1, NULL, 10);
	}
	fclose(f);
	return start;
}

static bool set_last_pid(pid_t pid)
{
	char buf[32];
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	int n = snprintf(buf, sizeof(buf), "%d", (int)pid);
	bool ok = fd >= 0 && write(fd, buf, (size_t)n) == n;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* A child that takes lock @name through the inherited @kv, says so on
 * @fd, and waits to be killed. */
static pid_t spawn_holder(shmkv_t *kv, const char *name, int fd)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct shmkv_lock lk;

		if (shmkv_lock_init(kv, &lk, name) != 0 ||
		    shmkv_lock_try_acquire(&lk, LEASE_MS) != 0)
			_exit(1);
		(void)!write(fd, "h", 1);
		for (;;)
			pause();
	}
	return pid;
}

/* A child that tries lock @name once through the inherited @kv (a fork
 * child's handle: it judges through a description of its own). */
static int acquirer_verdict(shmkv_t *kv, const char *name)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct shmkv_lock lk;
		int rc = shmkv_lock_init(kv, &lk, name);

		if (rc == 0)
			rc = shmkv_lock_try_acquire(&lk, LEASE_MS);
		_exit(rc == SHMKV_LOCK_OWNER_DEAD ? REUSE_TAKEN_OVER
		      : rc == -EBUSY		  ? REUSE_WAITED
						  : REUSE_OTHER);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return REUSE_SETUP;
	return WEXITSTATUS(st);
}

static void end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * One round: a holder takes lock @name and is killed; a sleeper gets its
 * pid. Return: a REUSE_* verdict, or -1 if the sleeper got another pid or
 * started in a later tick.
 */
static int round_of(shmkv_t *kv, const char *name)
{
	unsigned long long held_start;
	pid_t holder, sleeper;
	int p[2], verdict = -1;
	char c;

	if (pipe(p) != 0)
		return REUSE_SETUP;
	holder = spawn_holder(kv, name, p[1]);
	if (holder < 0 || read(p[0], &c, 1) != 1)
		return REUSE_SETUP;
	close(p[0]);
	close(p[1]);
	held_start = start_ticks(holder);
	end(holder);
	if (!set_last_pid(holder - 1))
		return REUSE_NO_NS;
	sleeper = fork();
	if (sleeper == 0) {
		for (;;)
			pause();
	}
	if (sleeper == holder && held_start != 0 &&
	    start_ticks(sleeper) == held_start)
		verdict = acquirer_verdict(kv, name);
	end(sleeper);
	return verdict;
}

/* The namespace's first process: its own /proc, then the rounds. */
static int reuse_in_namespace(const char *store)
{
	struct shmkv_config cfg = tu_config(256, 0, 0, 0);
	shmkv_t *kv = NULL;
	int verdict = REUSE_NO_TICK;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("proc", "/proc", "proc", 0, NULL) != 0)
		return REUSE_NO_NS;
	/* Made here, so that its writers' pid namespace is this one. */
	if (shmkv_create(store, &cfg, &kv) != 0)
		return REUSE_SETUP;
	for (int r = 0; r < ROUNDS && verdict == REUSE_NO_TICK; r++) {
		char name[32];
		int v;

		snprintf(name, sizeof(name), "reuse%d", r);
		v = round_of(kv, name);
		if (v >= 0)
			verdict = v;
	}
	shmkv_close(kv);
	return verdict;
}

Test(lock_pid_reuse,
     a_dead_holder_whose_pid_is_reused_in_its_start_tick_is_taken_over)
{
	pid_t pid;
	int st;

	tu_make_name(tu_name, NULL);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pid_t init;

		if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0)
			_exit(REUSE_NO_NS);
		init = fork();
		if (init == 0)
			_exit(reuse_in_namespace(tu_name));
		if (init < 0 || waitpid(init, &st, 0) != init || !WIFEXITED(st))
			_exit(REUSE_SETUP);
		_exit(WEXITSTATUS(st));
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "status %d", st);
	if (WEXITSTATUS(st) == REUSE_NO_NS)
		cr_skip_test("no private pid namespace, /proc or ns_last_pid "
			     "(needs root): pid reuse not tested");
	if (WEXITSTATUS(st) == REUSE_NO_TICK)
		cr_skip_test("the reused pid started a tick later in each of "
			     "%d rounds: not tested",
			     ROUNDS);
	cr_assert_eq(WEXITSTATUS(st), REUSE_TAKEN_OVER,
		     "1: the acquirer waited for the dead holder (-EBUSY), "
		     "2: another answer, 3: no setup (got %d)",
		     WEXITSTATUS(st));
}

/* A child of ours that tries lock @name through our (inherited) handle:
 * its try_acquire's answer, or -1000 if it could not run it. */
static int child_try(shmkv_t *kv, const char *name)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct shmkv_lock lk;
		int rc = shmkv_lock_init(kv, &lk, name);

		if (rc == 0)
			rc = shmkv_lock_try_acquire(&lk, LEASE_MS);
		_exit(rc == SHMKV_LOCK_OWNER_DEAD ? 1 : rc == -EBUSY ? 2 : 3);
	}
	cr_assert_geq(pid, 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	return WEXITSTATUS(st) == 1   ? SHMKV_LOCK_OWNER_DEAD
	       : WEXITSTATUS(st) == 2 ? -EBUSY
				      : -1000;
}

Test(lock_pid_reuse, a_fork_child_sharing_the_holders_handle_finds_it_alive)
{
	struct shmkv_config cfg = tu_config(256, 0, 0, 0);
	struct shmkv_lock lk;

	tu_kv = tu_create(&cfg, tu_name);
	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "held"));
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LEASE_MS),
		     SHMKV_LOCK_ACQUIRED);
	/* The child's copy of the handle is the holder's own description:
	 * it must judge through one of its own, or it would not see the
	 * holder's mark. */
	cr_assert_eq(child_try(tu_kv, "held"), -EBUSY);
	tu_assert_ok(shmkv_lock_release(&lk));
}

Test(lock_pid_reuse, closing_the_handle_gives_up_the_locks_taken_through_it)
{
	struct shmkv_config cfg = tu_config(256, 0, 0, 0);
	shmkv_t *other;
	struct shmkv_lock lk;

	tu_kv = tu_create(&cfg, tu_name);
	other = tu_open(tu_name, 0);
	tu_assert_ok(shmkv_lock_init(other, &lk, "held"));
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LEASE_MS),
		     SHMKV_LOCK_ACQUIRED);
	shmkv_close(other);
	/* A process alive, whose handle (and mark) is gone: nobody can
	 * release its lock any more. */
	cr_assert_eq(child_try(tu_kv, "held"), SHMKV_LOCK_OWNER_DEAD);
}
