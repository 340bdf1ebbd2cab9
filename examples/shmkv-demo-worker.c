/*
 * shmkv-demo-worker - one process of the shmkv demo.
 *
 * usage: shmkv-demo-worker NAME CYCLES TIMEOUT_MS
 *
 * Takes the lock "lock.counter" CYCLES times with the SETNX pattern that
 * the Redis documentation describes, and under it adds one to "counter"
 * by a GET then a SET: an update that is lost unless the lock really
 * excludes every other process.
 *
 *   acquire: SETNX lock.counter <now + timeout + 1>  (ms since the epoch)
 *            on 0: GET lock.counter; if that time has passed, GETSET a
 *            new one and hold the lock only if the old value had passed
 *            too (else another process broke the lock first); otherwise
 *            yield and start over.
 *   release: DEL lock.counter, unless our own expiry has passed (then
 *            another process may hold the lock by now).
 *
 * All workers start together, when the demo creates "demo.start", so the
 * lock is contended from the first cycle. At the end each adds to
 * "demo.waits" how often it found the lock taken, and to "demo.breaks"
 * how many expired locks it broke, for the demo to print.
 *
 * Exit status: 0 done, 1 usage, 2 open failed, 3 a command failed,
 * 4 gave up waiting (for the start or the lock), 5 "counter" or the lock
 * held a value that is not an integer. The cause goes to stderr.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shmkv.h"

enum worker_exit {
	EXIT_DONE = 0,
	EXIT_USAGE = 1,
	EXIT_OPEN = 2,
	EXIT_CMD = 3,
	EXIT_STARVED = 4,
	EXIT_GARBLED = 5,
};

/*
 * Attempts at the lock before giving up. A holder keeps it for a GET and a
 * SET, and a dead holder's lock is broken once its timeout (at most a
 * minute) passes, which takes far fewer tries of about a microsecond each;
 * the bound only keeps a broken store from spinning the demo forever.
 */
#define ACQUIRE_TRIES_MAX 500000000ul
/* Polls of "demo.start"; the demo sets it right after starting us all. */
#define START_TRIES_MAX 20000000ul

static const char LOCK[] = "lock.counter";
static const char COUNTER[] = "counter";

struct worker {
	shmkv_t *kv;
	int64_t timeout_ms;
	int64_t expiry; /* of the lock we hold */
	int64_t waits;	/* SETNX found the lock taken */
	int64_t breaks; /* expired locks taken over with GETSET */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "shmkv-demo-worker: %s: %s\n", what,
		shmkv_strerror(rc));
	return EXIT_CMD;
}

/* Parses a value read from the store as a decimal int64. */
static int parse_i64(const char *buf, size_t len, int64_t *out)
{
	char tmp[24], *end;

	if (len == 0 || len >= sizeof(tmp))
		return -1;
	memcpy(tmp, buf, len);
	tmp[len] = '\0';
	errno = 0;
	*out = strtoll(tmp, &end, 10);
	return errno || *end ? -1 : 0;
}

/* SETNX lock.counter <expiry>. Return: 1 held, 0 taken, or -errno. */
static int try_setnx(struct worker *w)
{
	char v[24];
	int n;

	w->expiry = now_ms() + w->timeout_ms + 1;
	n = sprintf(v, "%lld", (long long)w->expiry);
	return shmkv_setnx(w->kv, LOCK, sizeof(LOCK) - 1, v, (size_t)n);
}

/*
 * The lock is taken: break it if its holder's expiry has passed.
 * Return: 1 held, 0 not, or an exit status (> 1) on failure.
 */
static int try_break(struct worker *w)
{
	char buf[64], v[24];
	struct shmkv_value cur = { buf, sizeof(buf), 0 };
	int64_t stored, now = now_ms();
	int rc = shmkv_get(w->kv, LOCK, sizeof(LOCK) - 1, &cur);

	if (rc < 0)
		return fail("GET lock.counter", rc);
	if (rc == 0)
		return 0; /* released meanwhile: SETNX again */
	if (parse_i64(buf, cur.len, &stored))
		return EXIT_GARBLED;
	if (stored >= now)
		return 0; /* held and valid */
	w->expiry = now + w->timeout_ms + 1;
	rc = sprintf(v, "%lld", (long long)w->expiry);
	rc = shmkv_getset(w->kv, LOCK, sizeof(LOCK) - 1, v, (size_t)rc, &cur);
	if (rc < 0)
		return fail("GETSET lock.counter", rc);
	/* Nothing there, or still expired: no one else got it first. A
	 * fresh expiry means another process won; ours, a little later
	 * than theirs, does no harm (the documented caveat). */
	if (rc == 0)
		return 1;
	if (parse_i64(buf, cur.len, &stored))
		return EXIT_GARBLED;
	if (stored >= now_ms())
		return 0;
	w->breaks++;
	return 1;
}

static int acquire(struct worker *w)
{
	for (unsigned long i = 0; i < ACQUIRE_TRIES_MAX; i++) {
		int rc = try_setnx(w);

		if (rc < 0)
			return fail("SETNX lock.counter", rc);
		if (rc == 0) {
			w->waits++;
			rc = try_break(w);
		}
		if (rc == 1)
			return EXIT_DONE;
		if (rc > 1)
			return rc;
		sched_yield();
	}
	fprintf(stderr, "shmkv-demo-worker: no lock after %lu tries\n",
		ACQUIRE_TRIES_MAX);
	return EXIT_STARVED;
}

/* Only safe under the lock: a GET and a SET, not one atomic INCR. */
static int bump_counter(struct worker *w)
{
	char buf[32];
	struct shmkv_value cur = { buf, sizeof(buf), 0 };
	int64_t n = 0;
	int rc = shmkv_get(w->kv, COUNTER, sizeof(COUNTER) - 1, &cur);

	if (rc < 0)
		return fail("GET counter", rc);
	if (rc == 1 && parse_i64(buf, cur.len, &n))
		return EXIT_GARBLED;
	rc = snprintf(buf, sizeof(buf), "%" PRId64, n + 1);
	rc = shmkv_set(w->kv, COUNTER, sizeof(COUNTER) - 1, buf, (size_t)rc, 0,
		       0, NULL);
	return rc == 1 ? EXIT_DONE : fail("SET counter", rc);
}

static int release(struct worker *w)
{
	int rc;

	/* Past our expiry another process may have broken the lock and
	 * hold it now: deleting it would release theirs. */
	if (now_ms() >= w->expiry)
		return EXIT_DONE;
	rc = shmkv_del(w->kv, LOCK, sizeof(LOCK) - 1);
	return rc >= 0 ? EXIT_DONE : fail("DEL lock.counter", rc);
}

static int wait_for_start(struct worker *w)
{
	for (unsigned long i = 0; i < START_TRIES_MAX; i++) {
		int rc = shmkv_exists(w->kv, "demo.start", 10);

		if (rc < 0)
			return fail("EXISTS demo.start", rc);
		if (rc == 1)
			return EXIT_DONE;
		sched_yield();
	}
	fprintf(stderr, "shmkv-demo-worker: the demo never said start\n");
	return EXIT_STARVED;
}

/* Adds our contention counts to the totals the demo prints. */
static int add_counts(struct worker *w)
{
	int64_t total;
	int rc = shmkv_incrby(w->kv, "demo.waits", 10, w->waits, &total);

	if (rc == 0)
		rc = shmkv_incrby(w->kv, "demo.breaks", 11, w->breaks, &total);
	return rc ? fail("INCRBY demo.waits/breaks", rc) : EXIT_DONE;
}

static int parse_num(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || end == s || *end || *out == 0 || *out > max ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct worker w = { 0 };
	unsigned long cycles, timeout;
	int rc;

	if (argc != 4 || parse_num(argv[2], ULONG_MAX, &cycles) ||
	    parse_num(argv[3], 60000, &timeout)) {
		fprintf(stderr, "usage: shmkv-demo-worker NAME CYCLES "
				"TIMEOUT_MS\n  (run by shmkv-demo)\n");
		return EXIT_USAGE;
	}
	rc = shmkv_open(argv[1], 0, &w.kv);
	if (rc) {
		fprintf(stderr, "shmkv-demo-worker: %s: %s\n", argv[1],
			shmkv_strerror(rc));
		return EXIT_OPEN;
	}
	w.timeout_ms = (int64_t)timeout;
	rc = wait_for_start(&w);
	for (unsigned long i = 0; i < cycles && rc == EXIT_DONE; i++) {
		rc = acquire(&w);
		if (rc == EXIT_DONE)
			rc = bump_counter(&w);
		if (rc == EXIT_DONE)
			rc = release(&w);
	}
	if (rc == EXIT_DONE)
		rc = add_counts(&w);
	shmkv_close(w.kv);
	return rc;
}
