/*
 * demo_crash.c - a store left by killed writers is clean as it is: rounds
 * of writer processes (shmkv-demo-child write) are SIGKILLed wherever they
 * happen to be, then shmkv_check() verifies the whole store without any
 * recovery step having run (no shmkv_recover, no reopen). Its verdict must
 * be 0 problems; what the dead left behind (a claimed slot, an unpublished
 * block) is reported as "leftover", which the store reclaims by itself.
 * Each round is killed once every writer has done enough commands (a
 * count, not a time), so the kills land mid-write on any machine.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "demo.h"

#define ROUNDS	      3
#define WRITERS	      4
#define OPS_PER_ROUND 2000 /* each writer's commands before the kill */

struct verdict {
	unsigned long problems, leftovers;
};

static void on_problem(const char *problem, void *arg)
{
	struct verdict *v = arg;

	if (strncmp(problem, "leftover: ", 10) == 0) {
		v->leftovers++;
		return;
	}
	if (v->problems++ < 5)
		printf("  problem: %s\n", problem);
}

/* Waits until every writer of the round has reported @ops commands. Return:
 * their total, or -1 (a writer died or never got there: said on stderr). */
static int64_t wait_progress(const struct demo *d, int round,
			     const pid_t pid[WRITERS])
{
	struct timespec ms = { 0, 1000000 };
	char key[32];
	int64_t total = 0, n;

	for (int w = 0; w < WRITERS; w++) {
		snprintf(key, sizeof(key), "demo.w.r%dw%d", round, w);
		n = 0;
		if (demo_wait_key(d, key, pid[w]))
			return -1;
		for (int i = 0; i < DEMO_WAIT_MAX_MS; i++) {
			if (demo_get_i64(d->kv, key, &n) == 0 &&
			    n >= OPS_PER_ROUND)
				break;
			nanosleep(&ms, NULL);
		}
		if (n < OPS_PER_ROUND) {
			fprintf(stderr, "shmkv-demo: writer %s is stuck\n",
				key);
			return -1;
		}
	}
	/* Read again: they kept writing while we looked at the others. */
	for (int w = 0; w < WRITERS; w++) {
		snprintf(key, sizeof(key), "demo.w.r%dw%d", round, w);
		total += demo_get_i64(d->kv, key, &n) == 0 ? n : 0;
	}
	return total;
}

/* Kills every writer of the round and checks that SIGKILL is what ended
 * each (a writer that exited by itself had failed). */
static int kill_all(const pid_t pid[WRITERS])
{
	int bad = 0;

	for (int w = 0; w < WRITERS; w++)
		if (pid[w] > 0)
			kill(pid[w], SIGKILL);
	for (int w = 0; w < WRITERS; w++) {
		int st = 0;

		if (pid[w] <= 0) {
			bad = 1;
			continue;
		}
		waitpid(pid[w], &st, 0);
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) {
			fprintf(stderr,
				"shmkv-demo: writer %d ended by "
				"itself before the kill\n",
				w);
			bad = 1;
		}
	}
	return bad ? -1 : 0;
}

static int64_t run_round(const struct demo *d, int round)
{
	char path[PATH_MAX], id[16], mode[] = "write";
	char *argv[] = { path, mode, (char *)d->name, id, NULL };
	pid_t pid[WRITERS];
	int64_t done;

	if (demo_prog_path(d, "shmkv-demo-child", path, sizeof(path)))
		return -1;
	done = 0;
	for (int w = 0; w < WRITERS; w++) {
		snprintf(id, sizeof(id), "r%dw%d", round, w);
		pid[w] = demo_spawn(argv);
		done = pid[w] < 0 ? -1 : done;
	}
	if (done == 0)
		done = wait_progress(d, round, pid);
	if (kill_all(pid))
		return -1;
	return done;
}

/* After the verdict: the store still takes a write and reads it back. */
static int still_usable(const struct demo *d)
{
	char buf[16];
	struct shmkv_value v = { buf, sizeof(buf), 0 };

	if (shmkv_set(d->kv, "demo.after", 10, "works", 5, 0, 0, NULL) != 1)
		return -1;
	if (shmkv_get(d->kv, "demo.after", 10, &v) != 1)
		return -1;
	return v.len == 5 && memcmp(buf, "works", 5) == 0 ? 0 : -1;
}

int demo_crash(const struct demo *d)
{
	struct verdict v = { 0, 0 };
	struct shmkv_stats st;
	char ops[32], keys[32];
	int64_t total = 0;
	int found;

	for (int round = 0; round < ROUNDS; round++) {
		int64_t done = run_round(d, round);

		if (done < 0)
			return 1;
		total += done;
	}
	/* The store exactly as the dead left it: no shmkv_recover(). */
	found = shmkv_check(d->kv, on_problem, &v);
	if (shmkv_stats(d->kv, &st) != 0)
		st.live_keys = 0;
	printf("3. Killed writers: %d processes (%d rounds of %d) doing SET, "
	       "GETSET, INCR, DEL and EXPIRE were SIGKILLed mid-write after "
	       "%s commands; shmkv_check() on the store as they left it, "
	       "with no repair step run, found %d problems in %s live keys "
	       "(it also listed %lu leftovers of the dead, such as free "
	       "blocks in their caches, which the store reclaims by itself "
	       "as it goes).\n",
	       ROUNDS * WRITERS, ROUNDS, WRITERS,
	       demo_count(ops, sizeof(ops), (uint64_t)total), found,
	       demo_count(keys, sizeof(keys), st.live_keys), v.leftovers);
	if (found != 0) {
		printf("  FAILED: shmkv_check: %s\n",
		       found < 0 ? shmkv_strerror(found) : "problems above");
		return 1;
	}
	if (still_usable(d)) {
		printf("  FAILED: SET and GET after the check\n");
		return 1;
	}
	return 0;
}
