/*
 * demo_pattern.c - separate processes share one counter under a SETNX
 * lock. W shmkv-demo-worker processes each take the lock "lock.counter"
 * K times with the Redis SETNX locking pattern and add one to "counter"
 * by a GET and a SET under it. The final counter is W*K only if the lock
 * excluded every other process each time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "demo.h"

static pid_t spawn(const char *path, const struct demo *d,
		   const struct demo_pattern_opts *o)
{
	char cycles[24], timeout[24];
	char *argv[] = { (char *)path, (char *)d->name, cycles, timeout, NULL };

	snprintf(cycles, sizeof(cycles), "%lu", o->cycles);
	snprintf(timeout, sizeof(timeout), "%lu", o->timeout_ms);
	return demo_spawn(argv);
}

/*
 * Starts the workers, lets them all go at once, and waits for all of them;
 * returns how many failed (one that could not be started counts). *@t0
 * is set to the moment they were let go.
 */
static unsigned long run_workers(const struct demo *d, const char *path,
				 const struct demo_pattern_opts *o, int64_t *t0)
{
	pid_t *pids = calloc(o->workers, sizeof(*pids));
	unsigned long failed = 0;
	int rc;

	*t0 = demo_now_ns();
	if (pids == NULL)
		return o->workers;
	for (unsigned long i = 0; i < o->workers; i++)
		pids[i] = spawn(path, d, o);
	*t0 = demo_now_ns();
	rc = shmkv_set(d->kv, "demo.start", 10, "1", 1, 0, 0, NULL);
	if (rc != 1)
		fprintf(stderr, "shmkv-demo: SET demo.start: %s\n",
			shmkv_strerror(rc));
	for (unsigned long i = 0; i < o->workers; i++) {
		char what[32];

		snprintf(what, sizeof(what), "worker %lu", i);
		if (pids[i] < 0 || demo_reap(pids[i], what) != 0)
			failed++;
	}
	free(pids);
	return failed;
}

static int64_t get_or(shmkv_t *kv, const char *key, int64_t dflt)
{
	int64_t v;

	return demo_get_i64(kv, key, &v) == 0 ? v : dflt;
}

int demo_pattern(const struct demo *d, const struct demo_pattern_opts *o)
{
	unsigned long long want = (unsigned long long)o->workers * o->cycles;
	char path[PATH_MAX], rate[32];
	unsigned long failed;
	int64_t t0 = 0, counter;
	double secs;

	if (demo_prog_path(d, "shmkv-demo-worker", path, sizeof(path)))
		return 1;
	failed = run_workers(d, path, o, &t0);
	secs = (double)(demo_now_ns() - t0) / 1e9;
	counter = get_or(d->kv, "counter", -1);
	if (failed) {
		printf("  FAILED: %lu of %lu workers failed (see above)\n",
		       failed, o->workers);
		return 1;
	}
	if (counter < 0 || (unsigned long long)counter != want) {
		printf("  FAILED: pattern lock: counter = %lld, expected %llu: "
		       "updates were lost, so the lock let two processes in "
		       "at once\n",
		       (long long)counter, want);
		return 1;
	}
	printf("1. Pattern lock across processes: %lu exec'd processes took "
	       "the SETNX lock of Redis's SETNX page %lu times each and "
	       "added one to a counter under it by a GET and a SET: counter "
	       "= %lld, expected %llu, so no update was lost (%s lock "
	       "cycles/s; the lock was found taken %lld times, %lld expired "
	       "locks were broken).\n",
	       o->workers, o->cycles, (long long)counter, want,
	       demo_count(rate, sizeof(rate),
			  secs > 0 ? (uint64_t)((double)want / secs) : 0),
	       (long long)get_or(d->kv, "demo.waits", 0),
	       (long long)get_or(d->kv, "demo.breaks", 0));
	return 0;
}
