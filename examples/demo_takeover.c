/*
 * demo_takeover.c - the safe lock when its holder dies: a process holds
 * lock "demo" with a 60 s lease, another waits for it asleep, and the
 * holder is SIGKILLed in its critical section. The waiter must get the
 * lock told that the owner died (not that the lease ran out: 60 s have
 * not passed) with a fencing token larger than the dead holder's, so that
 * whatever the dead holder may still have in flight is fenced off. The
 * takeover time (kill to grant, both on CLOCK_MONOTONIC) is printed, not
 * judged.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "demo.h"
#include "shmkv_lock.h"

#define LOCK_NAME "demo"

/* shmkv_lock_list's view of lock "demo": whether a waiter sleeps on it. */
static int waiter_seen(const struct shmkv_lock_info *info, void *arg)
{
	int *seen = arg;

	if (info->name_len == strlen(LOCK_NAME) &&
	    memcmp(info->name, LOCK_NAME, info->name_len) == 0)
		*seen = info->held && info->waiters;
	return 0;
}

/* Polls until the waiter sleeps on the held lock: a kill before that would
 * only show a process finding a dead holder, not a waiter woken. */
static int wait_for_waiter(const struct demo *d)
{
	struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < DEMO_WAIT_MAX_MS; i++) {
		int seen = 0, rc = shmkv_lock_list(d->kv, waiter_seen, &seen);

		if (rc < 0) {
			fprintf(stderr, "shmkv-demo: lock list: %s\n",
				shmkv_strerror(rc));
			return -1;
		}
		if (seen)
			return 0;
		nanosleep(&ms, NULL);
	}
	fprintf(stderr, "shmkv-demo: the waiter never waited\n");
	return -1;
}

static pid_t start(const struct demo *d, char *mode)
{
	char path[PATH_MAX], lock[] = LOCK_NAME;
	char *argv[] = { path, mode, (char *)d->name, lock, NULL };

	if (demo_prog_path(d, "shmkv-demo-child", path, sizeof(path)))
		return -1;
	return demo_spawn(argv);
}

static const char *grant_said(int64_t grant)
{
	switch (grant) {
	case SHMKV_LOCK_OWNER_DEAD:
		return "told that the owner died";
	case SHMKV_LOCK_LEASE_EXPIRED:
		return "told that the lease ran out";
	default:
		return "finding it free";
	}
}

/* What the waiter wrote, and the verdict. */
static int report(const struct demo *d, pid_t holder, pid_t waiter,
		  int64_t held_token, int64_t killed_ns)
{
	int64_t token, grant, at_ns;
	char took[32];

	if (demo_get_i64(d->kv, "demo.wait.token", &token) ||
	    demo_get_i64(d->kv, "demo.wait.grant", &grant) ||
	    demo_get_i64(d->kv, "demo.wait.at_ns", &at_ns)) {
		printf("  FAILED: the waiter left no result\n");
		return 1;
	}
	demo_time(took, sizeof(took), (double)(at_ns - killed_ns));
	printf("2. Safe lock, holder killed: process %ld held lock \"%s\" "
	       "(fencing token %lld, lease 60 s) and was SIGKILLed inside its "
	       "critical section; process %ld, asleep waiting, took the lock "
	       "over %s after the kill, %s, with token %lld.\n",
	       (long)holder, LOCK_NAME, (long long)held_token, (long)waiter,
	       took, grant_said(grant), (long long)token);
	if (grant != SHMKV_LOCK_OWNER_DEAD) {
		printf("  FAILED: the grant was %lld, not OWNER_DEAD (%d)\n",
		       (long long)grant, SHMKV_LOCK_OWNER_DEAD);
		return 1;
	}
	if (token <= held_token) {
		printf("  FAILED: token %lld is not larger than the dead "
		       "holder's %lld\n",
		       (long long)token, (long long)held_token);
		return 1;
	}
	return 0;
}

/* Kills and reaps a child still running after a failure. */
static void stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

int demo_takeover(const struct demo *d)
{
	pid_t holder, waiter = -1;
	int64_t held_token = 0, killed_ns;

	holder = start(d, "hold");
	if (holder < 0)
		return 1;
	if (demo_wait_key(d, "demo.hold.token", holder) ||
	    demo_get_i64(d->kv, "demo.hold.token", &held_token))
		goto fail;
	waiter = start(d, "wait");
	if (waiter < 0 || wait_for_waiter(d))
		goto fail;
	killed_ns = demo_now_ns();
	kill(holder, SIGKILL);
	/* Reaped at once: a zombie is dead to the lock already, but the
	 * claim is about a process that is gone. */
	waitpid(holder, NULL, 0);
	if (demo_reap(waiter, "safe-lock waiter"))
		return 1;
	return report(d, holder, waiter, held_token, killed_ns);
fail:
	stop(holder);
	stop(waiter);
	return 1;
}
