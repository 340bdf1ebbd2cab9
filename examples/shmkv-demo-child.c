/*
 * shmkv-demo-child - the processes shmkv-demo starts for its safe-lock
 * and killed-writer parts (the pattern lock has shmkv-demo-worker).
 *
 * usage: shmkv-demo-child hold NAME LOCK
 *        shmkv-demo-child wait NAME LOCK
 *        shmkv-demo-child write NAME ID
 *
 *   hold   takes the safe lock LOCK with a 60 s lease, writes its fencing
 *          token to "demo.hold.token", then sits in its critical section
 *          until killed (the demo SIGKILLs it there).
 *   wait   waits for LOCK (asleep on its futex word), and once it has it
 *          writes what it got to "demo.wait.grant", "demo.wait.token" and
 *          the CLOCK_MONOTONIC time in ns it got it to "demo.wait.at_ns";
 *          then releases it and exits.
 *   write  writes until killed: SET (values of 1 to 900 bytes, some with
 *          a TTL), GETSET, INCR, DEL and EXPIRE on 256 keys of its own,
 *          "w.ID.<n>", and every 64 commands its count to "demo.w.ID".
 *
 * Exit status: 0 done, 1 usage, 2 open or lock init failed, 3 a command
 * failed (the cause goes to stderr).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shmkv.h"
#include "shmkv_lock.h"

#define HOLD_LEASE_MS 60000
#define WAIT_LEASE_MS 10000
#define WAIT_MAX_MS   60000 /* a hang guard: the demo kills the holder */
#define WRITE_KEYS    256u
#define WRITE_VAL_MAX 900u

static int fail(const char *what, int rc)
{
	fprintf(stderr, "shmkv-demo-child: %s: %s\n", what, shmkv_strerror(rc));
	return 3;
}

static int set_i64(shmkv_t *kv, const char *key, int64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%lld", (long long)v);
	int rc = shmkv_set(kv, key, strlen(key), buf, (size_t)n, 0, 0, NULL);

	return rc == 1 ? 0 : fail(key, rc);
}

static int lock_open(shmkv_t *kv, struct shmkv_lock *lk, const char *name)
{
	int rc = shmkv_lock_init(kv, lk, name);

	if (rc)
		fprintf(stderr, "shmkv-demo-child: lock %s: %s\n", name,
			shmkv_strerror(rc));
	return rc ? 2 : 0;
}

static int hold(shmkv_t *kv, const char *name)
{
	struct shmkv_lock lk;
	int rc = lock_open(kv, &lk, name);

	if (rc)
		return rc;
	rc = shmkv_lock_try_acquire(&lk, HOLD_LEASE_MS);
	if (rc < 0)
		return fail("acquire", rc);
	if (set_i64(kv, "demo.hold.token", (int64_t)shmkv_lock_token(&lk)))
		return 3;
	/* The critical section: the demo SIGKILLs us here. */
	for (;;)
		pause();
}

static int wait_for(shmkv_t *kv, const char *name)
{
	struct shmkv_lock lk;
	int64_t at_ns;
	struct timespec ts;
	int grant, rc = lock_open(kv, &lk, name);

	if (rc)
		return rc;
	grant = shmkv_lock_timed_acquire(&lk, WAIT_LEASE_MS, WAIT_MAX_MS);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	at_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (grant < 0)
		return fail("acquire", grant);
	if (set_i64(kv, "demo.wait.token", (int64_t)shmkv_lock_token(&lk)) ||
	    set_i64(kv, "demo.wait.at_ns", at_ns) ||
	    set_i64(kv, "demo.wait.grant", grant))
		return 3;
	rc = shmkv_lock_release(&lk);
	return rc ? fail("release", rc) : 0;
}

/* One command of a writer, on key "w.<id>.<n>". */
static int write_one(shmkv_t *kv, const char *id, uint64_t *rng, char *val)
{
	static char old_buf[SHMKV_VALUE_MAX_LIMIT];
	struct shmkv_value old = { old_buf, sizeof(old_buf), 0 };
	char key[48];
	uint64_t r;
	size_t klen, vlen;
	int64_t n;
	int rc;

	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	r = *rng >> 33;
	klen = (size_t)snprintf(key, sizeof(key), "w.%s.%u", id,
				(unsigned)(r % WRITE_KEYS));
	vlen = 1 + (size_t)((r >> 8) % WRITE_VAL_MAX);
	memset(val, 'a' + (int)(r % 26), vlen);
	switch ((r >> 20) % 6) {
	case 0:
		rc = shmkv_set(kv, key, klen, val, vlen, 0, 0, NULL);
		break;
	case 1:
		rc = shmkv_getset(kv, key, klen, val, vlen, &old);
		break;
	case 2:
		rc = shmkv_set(kv, key, klen, val, vlen, SHMKV_SET_PX, 50,
			       NULL);
		break;
	case 3:
		rc = shmkv_incr(kv, key, klen, &n);
		rc = rc == -EDOM ? 0 : rc; /* a string there: fine */
		break;
	case 4:
		rc = shmkv_del(kv, key, klen);
		break;
	default:
		rc = shmkv_expire(kv, key, klen, SHMKV_EXPIRE_MSEC, 0, 100);
	}
	/* A full store is no failure of the claim: keep writing. */
	return rc < 0 && rc != -ENOMEM && rc != -ENOSPC ? fail(key, rc) : 0;
}

static int write_forever(shmkv_t *kv, const char *id)
{
	static char val[WRITE_VAL_MAX];
	char progress[48];
	uint64_t rng = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;

	snprintf(progress, sizeof(progress), "demo.w.%s", id);
	for (int64_t done = 1;; done++) {
		int rc = write_one(kv, id, &rng, val);

		if (rc)
			return rc;
		if (done % 64 == 0 && set_i64(kv, progress, done))
			return 3;
	}
}

int main(int argc, char **argv)
{
	shmkv_t *kv;
	int rc;

	if (argc != 4 || (strcmp(argv[1], "hold") && strcmp(argv[1], "wait") &&
			  strcmp(argv[1], "write"))) {
		fprintf(stderr, "usage: shmkv-demo-child hold|wait|write NAME "
				"LOCK|ID\n  (run by shmkv-demo)\n");
		return 1;
	}
	rc = shmkv_open(argv[2], 0, &kv);
	if (rc) {
		fprintf(stderr, "shmkv-demo-child: %s: %s\n", argv[2],
			shmkv_strerror(rc));
		return 2;
	}
	if (strcmp(argv[1], "hold") == 0)
		rc = hold(kv, argv[3]);
	else if (strcmp(argv[1], "wait") == 0)
		rc = wait_for(kv, argv[3]);
	else
		rc = write_forever(kv, argv[3]);
	shmkv_close(kv);
	return rc;
}
