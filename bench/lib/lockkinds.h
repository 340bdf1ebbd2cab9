/*
 * lockkinds.h - the locks bench_lock compares, behind one acquire/release
 * interface, each usable from any number of forked processes:
 *
 *   setnx+del           SETNX lock 1 / DEL lock: the plain commands; a
 *                       waiter retries SETNX, yielding the CPU in between
 *   setnx+del prepared  the same through shmkv_key_setnx / shmkv_key_del
 *   pattern lock        shmkv_pattern_acquire (the SETNX page's lock)
 *   safe lock           shmkv_lock_acquire / release (futex waits)
 *   safe lock, waiter   the same on a lock one of whose waiters was
 *     killed            killed while asleep (before the runs): what the
 *                       mark it left costs the releases that follow
 *   robust mutex        a process-shared robust pthread mutex
 *   flock               flock(2) on a file, one open file per process
 *   OFD fcntl           F_OFD_SETLKW on byte 0 of that file
 *   redis               SET lk <token> NX PX + Lua compare-and-delete, over
 *                       loopback; a waiter retries SET NX back to back
 */
#ifndef SHMKV_BENCH_LOCKKINDS_H
#define SHMKV_BENCH_LOCKKINDS_H

#include <hiredis/hiredis.h>
#include <stdint.h>

#include "bench.h"
#include "shmkv_lock.h"

enum lock_kind {
	LK_SETNX,
	LK_SETNX_PREP,
	LK_PATTERN,
	LK_SAFE,
	LK_SAFE_SCARRED,
	LK_ROBUST,
	LK_FLOCK,
	LK_OFD,
	LK_REDIS,
	LK_N
};
extern const char *const lock_kind_name[LK_N];
extern const char *const lock_kind_tag[LK_N];

/* What every process of the bench shares (set up before any fork). */
struct lock_env {
	shmkv_t *kv;		/* the store the shmkv locks live in */
	pthread_mutex_t *mutex; /* in shared memory */
	char file[64];		/* for flock and OFD locks */
	int redis_port;		/* 0: no redis */
	char redis_sha[48];	/* the release script */
};

/* One process's handle on the lock of one kind. */
struct lock_proc {
	enum lock_kind kind;
	const struct lock_env *env;
	struct shmkv_lock lk;
	struct shmkv_pattern pl;
	struct shmkv_keyref ref;
	int64_t expiry;
	int fd;
	redisContext *rc;
	char token[32];
	uint64_t n;
};

/* Sets up @env: store, mutex, file. Return: 0 or a negative errno. */
int lock_env_init(struct lock_env *env);
/* Adds the redis-server on @port: loads the release script once for all.
 * Return: 0 or a negative errno. */
int lock_env_redis(struct lock_env *env, int port);

/* Opens @p for @kind in this process. Failures end the process. */
void lock_proc_open(struct lock_proc *p, const struct lock_env *env,
		    enum lock_kind kind);
void lock_proc_close(struct lock_proc *p);

/* Blocks until acquired; releases. Failures end the process. */
void lock_acquire(struct lock_proc *p);
void lock_release(struct lock_proc *p);

/* Prints the failure and ends the process (_exit in a child). */
void lock_die(const char *what, const char *why) __attribute__((noreturn));

#endif /* SHMKV_BENCH_LOCKKINDS_H */
