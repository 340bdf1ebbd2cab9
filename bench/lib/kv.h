/*
 * kv.h - the string commands the benchmarks time, behind one interface, so
 * shmkv and each baseline run the very same workload loop:
 *
 *   shmkv            the public API (key bytes in every call)
 *   shmkv prepared   the shmkv_key_* API (key hashed once, slot cached)
 *   mutex map        a simple open-addressed hash map in shared memory, a
 *                    process-shared robust pthread mutex around each
 *                    command: what most C code would do
 *   rculfhash        liburcu's lock-free hash table, one process, nodes
 *                    from malloc, freed after a grace period
 *   redis            redis-server over loopback through hiredis, one
 *                    command per round trip, or pipelined in batches
 *
 * Every implementation holds the same key set (ids 0..n-1, see bench.h)
 * and answers as shmkv does: GET/SETNX/GETSET/DEL/DELIFEQ 1 or 0, SET 1,
 * INCR 0 with the result in incr_result; a negative errno on failure.
 */
#ifndef SHMKV_BENCH_KV_H
#define SHMKV_BENCH_KV_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"

enum bench_cmd {
	BCMD_GET,
	BCMD_SET,
	BCMD_SETNX,
	BCMD_GETSET,
	BCMD_DEL,
	BCMD_DELIFEQ,
	BCMD_INCR,
	BCMD_N
};
extern const char *const bench_cmd_name[BCMD_N];

struct bench_kv;

/* One command on key @id; @val/@vlen is the value argument, if any. */
typedef int (*bench_kv_fn)(struct bench_kv *kv, uint32_t id, const void *val,
			   size_t vlen);

struct bench_kv_ops {
	const char *name; /* for tables */
	const char *tag;  /* for CSV */
	bench_kv_fn fn[BCMD_N];
	/* Optional: @n commands of one kind in one go (pipelining); reply i
	 * goes to @replies[i]. Return: 0 or a negative errno. */
	int (*batch)(struct bench_kv *kv, enum bench_cmd cmd,
		     const uint32_t *ids, const void *const *vals,
		     const size_t *vlens, unsigned n, int *replies);
	/* NULL when impl is not the kv's (the plain shmkv store stays the
	 * caller's). Otherwise releases what impl holds, and bench_kv_close
	 * then frees impl itself (malloc'd); called only with impl set. */
	void (*close)(struct bench_kv *kv);
};

/*
 * Defines @fname, the bench_kv_fn of command @cmd, as a call of @generic
 * (kv, cmd, id, val, vlen): for implementations that run several commands
 * through one function.
 */
#define BENCH_KV_FN(fname, generic, cmd)                                       \
	static int fname(struct bench_kv *kv, uint32_t id, const void *val,    \
			 size_t vlen)                                          \
	{                                                                      \
		return generic(kv, cmd, id, val, vlen);                        \
	}

struct bench_kv {
	const struct bench_kv_ops *ops;
	const char *keys; /* bench_keys_make(n) */
	uint32_t n;
	struct shmkv_value out; /* GET/GETSET land here; cap = value_max */
	int64_t incr_result;
	void *impl;
};

/* Every constructor: @keys and @n as above, @value_max the longest value.
 * Return: 0 or a negative errno (the kv is then unusable). */

/* Over an open store; the store stays the caller's. */
int bench_kv_shmkv(struct bench_kv *kv, shmkv_t *store, const char *keys,
		   uint32_t n, uint32_t value_max);
/* The same with every key prepared (shmkv_key_prepare) up front. */
int bench_kv_shmkv_prepared(struct bench_kv *kv, shmkv_t *store,
			    const char *keys, uint32_t n, uint32_t value_max);

/* A mutex map of @slots (a power of two) in bench_shm_alloc memory, so
 * forked children share it. */
int bench_kv_mutex_map(struct bench_kv *kv, uint32_t slots, const char *keys,
		       uint32_t n, uint32_t value_max);

/* An rculfhash table presized for @n keys; registers this thread with
 * RCU (call from the thread that runs the commands). */
int bench_kv_rculfhash(struct bench_kv *kv, const char *keys, uint32_t n,
		       uint32_t value_max);

/* A connection to 127.0.0.1:@port, database @db (SELECT), with the
 * DELIFEQ script loaded; @pipelined: commands go through ops->batch. */
int bench_kv_redis(struct bench_kv *kv, int port, int db, int pipelined,
		   const char *keys, uint32_t n, uint32_t value_max);

void bench_kv_close(struct bench_kv *kv);

/* For the constructors: a zeroed kv with these fields. */
void bench_kv_init(struct bench_kv *kv, const struct bench_kv_ops *ops,
		   const char *keys, uint32_t n, void *impl);

/* Output buffer helper for the implementations. */
int bench_kv_out_init(struct bench_kv *kv, uint32_t value_max);

/* Copies @len bytes to kv->out. Return: 1, or -ENOBUFS. */
int bench_kv_give(struct bench_kv *kv, const void *val, size_t len);

/*
 * Redis server: started on a free 127.0.0.1 port with no persistence,
 * stopped by pid (and at exit, via bench_cleanup_pid).
 */
struct bench_redis {
	pid_t pid;
	int port;
};

/* Return: 0, or -1 with a reason on stderr (not installed, no start). */
int bench_redis_start(struct bench_redis *r);
/* The same, listening on the unix socket @sock too (removed at exit if
 * the server has not removed it). */
int bench_redis_start_unix(struct bench_redis *r, const char *sock);
void bench_redis_stop(struct bench_redis *r);

/* The DELIFEQ script (a Lua compare-and-delete), loaded on connect. */
extern const char bench_redis_delifeq_lua[];

#endif /* SHMKV_BENCH_KV_H */
