/*
 * demo_timing.c - one lock cycle (acquire, then release; one process, no
 * contention) timed here for shmkv's safe and pattern locks, a robust
 * process-shared pthread mutex, and Redis's own lock recipe (SET NX PX,
 * then a compare-and-delete script) on a redis-server the demo starts.
 * Every call's answer is checked; the times are printed, never judged
 * (bench/ has the careful measurements: README, Performance).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "demo.h"
#include "shmkv_lock.h"

#define SHMKV_CYCLES 200000
#define MUTEX_CYCLES 1000000
#define REDIS_CYCLES 2000
#define LEASE_MS     10000

/* Redis's documented release: delete the key only if it still holds our
 * token (https://redis.io/docs/manual/patterns/distributed-locks/). */
#define REDIS_UNLOCK                                                           \
	"if redis.call('get',KEYS[1]) == ARGV[1] then "                        \
	"return redis.call('del',KEYS[1]) else return 0 end"

/* Mean ns per cycle of the safe lock. Return: < 0 on a wrong answer. */
static double time_safe(const struct demo *d)
{
	struct shmkv_lock lk;
	int64_t t0;

	if (shmkv_lock_init(d->kv, &lk, "demo.cycle") != 0)
		return -1;
	t0 = demo_now_ns();
	for (int i = 0; i < SHMKV_CYCLES; i++)
		if (shmkv_lock_try_acquire(&lk, LEASE_MS) < 0 ||
		    shmkv_lock_release(&lk) != 0)
			return -1;
	return (double)(demo_now_ns() - t0) / SHMKV_CYCLES;
}

static double time_pattern(const struct demo *d)
{
	struct shmkv_pattern pl;
	int64_t t0, expiry;

	if (shmkv_pattern_init(d->kv, &pl, "demo.pattern-cycle") != 0)
		return -1;
	t0 = demo_now_ns();
	for (int i = 0; i < SHMKV_CYCLES; i++)
		if (shmkv_pattern_acquire(&pl, LEASE_MS, 0, &expiry) != 0 ||
		    shmkv_pattern_release(&pl, expiry) != 0)
			return -1;
	return (double)(demo_now_ns() - t0) / SHMKV_CYCLES;
}

/* A mutex as processes share one: in shared memory, robust (a dead
 * owner's next locker gets EOWNERDEAD). */
static double time_mutex(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t *m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double ns = -1;
	int64_t t0;

	if (m == MAP_FAILED)
		return -1;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (pthread_mutex_init(m, &a) != 0)
		goto out;
	t0 = demo_now_ns();
	for (int i = 0; i < MUTEX_CYCLES; i++)
		if (pthread_mutex_lock(m) != 0 || pthread_mutex_unlock(m) != 0)
			goto out;
	ns = (double)(demo_now_ns() - t0) / MUTEX_CYCLES;
	pthread_mutex_destroy(m);
out:
	pthread_mutexattr_destroy(&a);
	munmap(m, sizeof(*m));
	return ns;
}

/* Redis's lock cycle on @r. Return: ns per cycle, or < 0 on a wrong
 * reply (said on stderr). */
static double time_redis(struct demo_redis *r)
{
	char token[32], reply[64];
	const char *set[] = { "SET", "demo:lock", token, "NX", "PX", "10000" };
	const char *del[] = { "EVAL", REDIS_UNLOCK, "1", "demo:lock", token };
	int64_t t0 = demo_now_ns();

	for (int i = 0; i < REDIS_CYCLES; i++) {
		snprintf(token, sizeof(token), "demo-%d", i);
		if (demo_redis_cmd(r, 6, set, reply, sizeof(reply)) ||
		    strcmp(reply, "+OK") != 0)
			goto bad;
		if (demo_redis_cmd(r, 5, del, reply, sizeof(reply)) ||
		    strcmp(reply, ":1") != 0)
			goto bad;
	}
	return (double)(demo_now_ns() - t0) / REDIS_CYCLES;
bad:
	fprintf(stderr, "shmkv-demo: redis-server replied \"%s\"\n", reply);
	return -1;
}

/* The Redis clause of the sentence into @buf. Return: 0, or 1 if Redis
 * answered wrong. */
static int redis_clause(char *buf, size_t cap, double safe_ns)
{
	struct demo_redis r;
	char why[160], t[32];
	double ns;
	int rc = demo_redis_start(&r, why, sizeof(why));

	if (rc != 0) {
		/* Redis is the comparison, not the claim: its absence is
		 * said, and is no failure of shmkv. */
		snprintf(buf, cap, "Redis skipped: %s", why);
		return 0;
	}
	ns = time_redis(&r);
	demo_redis_stop(&r);
	if (ns < 0)
		return 1;
	snprintf(buf, cap,
		 "Redis %s (SET NX PX, then a compare-and-delete script, "
		 "over loopback to a redis-server started for this: %.0fx "
		 "the safe lock)",
		 demo_time(t, sizeof(t), ns), ns / safe_ns);
	return 0;
}

int demo_timing(const struct demo *d)
{
	double safe = time_safe(d), pattern = time_pattern(d);
	double mutex = time_mutex();
	char redis[400], ts[32], tp[32], tm[32];

	if (safe <= 0 || pattern <= 0 || mutex <= 0) {
		printf("  FAILED: a lock call answered wrong (safe %s, "
		       "pattern %s, mutex %s)\n",
		       safe <= 0 ? "wrong" : "ok",
		       pattern <= 0 ? "wrong" : "ok",
		       mutex <= 0 ? "wrong" : "ok");
		return 1;
	}
	if (redis_clause(redis, sizeof(redis), safe)) {
		printf("  FAILED: Redis's lock cycle answered wrong\n");
		return 1;
	}
	printf("4. One lock cycle (acquire + release, one process, no "
	       "contention; times on this machine now, not a benchmark): "
	       "shmkv safe lock %s (a lease, a fencing token, a dead holder "
	       "taken over), shmkv pattern lock %s, robust pthread mutex in "
	       "shared memory %s (no lease, no token), %s.\n",
	       demo_time(ts, sizeof(ts), safe),
	       demo_time(tp, sizeof(tp), pattern),
	       demo_time(tm, sizeof(tm), mutex), redis);
	return 0;
}
